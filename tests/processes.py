"""What the tests ask of this test process's own children."""

from __future__ import annotations

import contextlib

import psutil


def zombie_children() -> list[int]:
    """Pids of this test process's children that have exited and not been reaped."""
    out = []
    for child in psutil.Process().children():
        with contextlib.suppress(psutil.Error):
            if child.status() == psutil.STATUS_ZOMBIE:
                out.append(child.pid)
    return out
