"""A process's log, read: the last whole lines of a text file. Apart from kconsole.cluster.procs
(which sends signals), so the command line that prints a log imports nothing that acts."""

from __future__ import annotations

import os
from pathlib import Path


def tail_lines(path: Path, lines: int) -> list[str]:
    """The last `lines` whole lines of a text file, read from the end.

    Only whole lines: a JVM writing its log flushes a buffer at a time, so the end of the file
    can hold the first half of a line (shown whole by the next read), and a read that starts
    inside the file starts inside a line."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            block = min(size, max(8192, lines * 400))
            fh.seek(size - block)
            data = fh.read(block)
    except OSError:
        return []
    end = data.rfind(b"\n")
    if end < 0:
        return []
    start = data.find(b"\n") + 1 if block < size else 0
    return data[start : end + 1].decode("utf-8", "replace").splitlines()[-lines:]
