"""What every benchmark records beside its numbers: the code it measured and the load."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def code_revision(paths: tuple[str, ...] = ("kconsole",)) -> str:
    """The code this run measured: HEAD, plus any uncommitted changes under `paths`."""
    root = str(Path(__file__).resolve().parents[1])
    try:
        git = ["git", "-C", root]
        sha = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            [*git, "status", "--porcelain", "--", *paths],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    dirty = [line[3:] for line in status.splitlines() if line.strip()]
    return f"git {sha}" + (f" + uncommitted changes in {', '.join(dirty)}" if dirty else "")


def load() -> str:
    """The 1-minute load average: the machine is shared, and the brokers run on it too."""
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "?"
