"""The cluster reaper waits for the process it watches, then takes the local cluster down and
exits (here an empty state dir: nothing to stop, nothing left behind)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kconsole.cluster.reaper import start_reaper


def test_it_waits_for_the_process_then_stops_the_cluster(tmp_path: Path) -> None:
    watched = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                               stdin=subprocess.PIPE)  # fmt: skip
    reaper = start_reaper(tmp_path, pid=watched.pid)
    try:
        try:
            reaper.wait(1.0)
            raise AssertionError("the reaper ended while the process it watches ran")
        except subprocess.TimeoutExpired:
            pass
        assert watched.stdin is not None
        watched.stdin.close()  # the watched process ends
        watched.wait(10)
        assert reaper.wait(30) == 0
    finally:
        for p in (watched, reaper):
            if p.poll() is None:
                p.kill()
                p.wait(10)
