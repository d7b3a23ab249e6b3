"""Screens: main, consumer group, help."""
