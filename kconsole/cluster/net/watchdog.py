"""The watchdog of a network fault held by a process (a drill): once that process has ended,
however it ended (SIGKILL included), the fault is healed, unless it was healed before (then the
heal stopped this watchdog) or another fault has replaced it.

`start(guard, state_dir, node)` runs `python -m kconsole.cluster.net.watchdog GUARD STATE_DIR
NODE` in a session of its own, so a signal to the drill's process group does not reach it;
kconsole.cluster.docker.netfaults runs its own the same way (`spawn`)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

MODULE = "kconsole.cluster.net.watchdog"


def start(guard: int, state_dir: Path, node: str) -> int:
    """The watchdog's pid: it heals `node` once process `guard` has ended."""
    return spawn(MODULE, [str(guard), str(state_dir), node], node)


def spawn(module: str, args: list[str], node: str) -> int:
    """Run `python -m module *args` in a session of its own; its pid."""
    popen = subprocess.Popen(
        [sys.executable, "-m", module, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    # Reaped the moment it exits (stopped by the heal, or done), never left <defunct>.
    threading.Thread(target=popen.wait, name=f"reap-watchdog-{node}", daemon=True).start()
    return popen.pid


def stop(pid: int, module: str = MODULE) -> None:
    """Stop the watchdog `pid`: only if it is one (a pid recycled by another process is left)."""
    try:
        proc = psutil.Process(pid)
        if module in " ".join(proc.cmdline()):
            proc.terminate()
    except psutil.Error:
        pass


def wait_for_exit(pid: int) -> None:
    """Return once process `pid` has ended (or is a zombie: ended, not yet reaped)."""
    try:
        proc = psutil.Process(pid)
        while proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
            time.sleep(0.2)
    except psutil.Error:
        pass


def main(argv: list[str]) -> int:
    guard, state_dir, node = int(argv[0]), Path(argv[1]), argv[2]
    wait_for_exit(guard)
    from kconsole.cluster.net.faults import NetFaults

    net = NetFaults(state_dir)
    fault = net.in_force().get(node)
    if fault is not None and fault.guard == guard:  # still the fault that process held
        net.heal(node, node)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
