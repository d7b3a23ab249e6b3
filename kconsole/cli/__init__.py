"""The `kconsole` command line: the group and global options in main.py, one module per
subcommand family. Every modifying subcommand goes through kconsole.commands."""

from kconsole.cli import audit, cluster, drill, jobs, produce, reassign  # noqa: F401  (registers)
from kconsole.cli.main import main

__all__ = ["main"]
