"""A watchdog that stops a local cluster once a given process has ended.

`start_reaper(state_dir)` starts `python -m kconsole.cluster.reaper PID STATE_DIR` in a session
of its own: it waits for the process PID (by default the caller) to end, then stops the local
cluster in STATE_DIR, whichever its mode, by the pids the cluster recorded. A test run or a
benchmark that starts a cluster starts one, so a native crash or a SIGKILL that skips their
teardown leaves no JVM behind; after a normal teardown they terminate it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil


def start_reaper(state_dir: Path, pid: int | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "kconsole.cluster.reaper", str(pid or os.getpid()), str(state_dir)],
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # outlives a signal sent to the caller's process group
    )


def wait_for_exit(pid: int) -> None:
    """Return once process `pid` has ended (or is a zombie: ended, not yet reaped)."""
    try:
        parent = psutil.Process(pid)
        while parent.is_running() and parent.status() != psutil.STATUS_ZOMBIE:
            time.sleep(0.5)
    except psutil.Error:
        pass


def main(argv: list[str]) -> int:
    pid, state_dir = int(argv[0]), Path(argv[1])
    wait_for_exit(pid)
    from kconsole.cluster.backends import open_local

    open_local(state_dir).down(timeout=20)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
