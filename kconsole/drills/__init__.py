"""Failover drills: a keyed workload producer, a verifying consumer and the acked-loss audit.

Headless: nothing here imports Textual, so the TUI, the CLI and the tests share it.
"""
