"""Widgets: keyed tables, panes, header, controller."""
