"""The console in a real terminal (tmux), on a real local cluster: start-up to the first complete
frame, idle CPU, and controller change -> screen.

    .venv/bin/python bench/terminal.py [--runs 5] [--idle 30] [--json out.json]

Starts its own throw-away 3-broker cluster (ZooKeeper 26181, brokers 26092-26094) in a
temporary dir and always takes it down again; needs tmux. The console runs as a user runs it
(`kconsole -b … -z … --backend none` in a 160x48 tmux window); the screen is read with
`tmux capture-pane` every 10 ms.

  - start-up: from launching the command to the screen showing the cluster id, the
    controller and every test-topic partition's leader;
  - idle: the console's process CPU (user + sys over wall, 100 % = one core) for `--idle`
    seconds with nothing changing;
  - controller change -> screen: the controller is stopped gracefully; from the new /controller
    znode's creation time (ZooKeeper's clock, the same machine) to the controller pane showing
    the new broker. The old controller is started again between runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kazoo.client import KazooClient

from kconsole.cluster.local import LocalCluster, LocalClusterSpec

ZK_PORT = 26181
BASE_PORT = 26092
SESSION = "kc-bench-terminal"


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True).stdout


def screen() -> str:
    return tmux("capture-pane", "-p", "-t", SESSION)


def wait_screen(pred: object, deadline_s: float, every: float = 0.01) -> float | None:
    """Seconds (monotonic) when `pred(screen)` first held, None at the deadline."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if pred(screen()):  # type: ignore[operator]
            return time.monotonic()
        time.sleep(every)
    return None


def complete(text: str) -> bool:
    """Cluster id shown, a controller, and all four test-topic rows with a leader."""
    rows = re.findall(r"test-topic\s+(\d)\s+(\d)\s", text)
    return "cluster " in text and "★ broker" in text and len({r[0] for r in rows}) == 4


def controller_on_screen(text: str) -> int | None:
    m = re.search(r"★ broker (\d+)", text)
    return int(m.group(1)) if m else None


def run(runs: int, idle_s: float) -> dict[str, list[float]]:
    if shutil.which("tmux") is None:
        raise SystemExit("bench/terminal.py needs tmux")
    out: dict[str, list[float]] = {"startup_s": [], "idle_cpu_pct": [], "controller_ms": []}
    kconsole = str(Path(sys.executable).with_name("kconsole"))
    with tempfile.TemporaryDirectory(prefix="kc-bench-term-") as tmp:
        spec = LocalClusterSpec(brokers=3, zk_port=ZK_PORT, base_port=BASE_PORT)
        cluster = LocalCluster(Path(tmp) / "cluster", spec)
        zk = KazooClient(hosts=spec.zk_connect)
        try:
            cluster.up(timeout=180)
            zk.start(timeout=30)
            cmd = [kconsole, "-b", spec.bootstrap, "-z", spec.zk_connect, "--backend", "none"]
            env = {
                **os.environ,
                "KCONSOLE_STATE_DIR": str(Path(tmp) / "state"),
                "TERM": "xterm-256color",
            }
            for _ in range(max(1, runs // 2)):  # start-up, a few times (each a new process)
                t0 = time.monotonic()
                subprocess.run(
                    ["tmux", "new-session", "-d", "-s", SESSION, "-x", "160", "-y", "48", *cmd],
                    env=env, check=True,
                )  # fmt: skip
                at = wait_screen(complete, 30)
                tmux("kill-session", "-t", SESSION)
                if at is None:
                    raise RuntimeError("the console never showed a complete frame in 30 s")
                out["startup_s"].append(at - t0)
                time.sleep(0.5)  # the old process exits
            pid = int(
                subprocess.run(
                    ["tmux", "new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", SESSION,
                     "-x", "160", "-y", "48", *cmd],
                    env=env, check=True, capture_output=True, text=True,
                ).stdout.strip()
            )  # fmt: skip
            # Keep the pane when the console exits, to show why (a crash must not be silent).
            tmux("set-option", "-t", SESSION, "remain-on-exit", "on")
            proc = psutil.Process(pid)
            if wait_screen(complete, 30) is None:
                raise RuntimeError("the console never showed a complete frame")
            time.sleep(5)  # first group poll, broker settings, widths settled
            for _ in range(3):
                c0, w0 = proc.cpu_times(), time.monotonic()
                time.sleep(idle_s / 3)
                c1, w1 = proc.cpu_times(), time.monotonic()
                used = (c1.user - c0.user) + (c1.system - c0.system)
                out["idle_cpu_pct"].append(100 * used / (w1 - w0))
            for _ in range(runs):
                if not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE:
                    raise RuntimeError("the console exited:\n" + screen())
                was = controller_on_screen(screen())
                if was is None:
                    raise RuntimeError("no controller on screen:\n" + screen())
                # On a thread: the controller moves during the controlled shutdown, before the
                # process exits, and the screen is read meanwhile.
                stopping = threading.Thread(target=cluster.stop_broker, args=(was,))
                stopping.start()

                def moved(text: str, was: int = was) -> bool:
                    now = controller_on_screen(text)
                    return now is not None and now != was

                at_mono = wait_screen(moved, 60, every=0.005)
                at_wall = time.time() - (time.monotonic() - at_mono) if at_mono else None
                stopping.join()
                _data, stat = zk.get("/controller")
                if at_wall is not None:
                    out["controller_ms"].append((at_wall - stat.ctime / 1000) * 1000)
                cluster.start_broker(was)
                time.sleep(3)  # the restarted broker settles before the next stop
        finally:
            subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)
            zk.stop()
            zk.close()
            cluster.down(timeout=30)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--idle", type=float, default=30.0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    out = run(args.runs, args.idle)
    if args.json:
        args.json.write_text(json.dumps(out))
    for key, vals in out.items():
        if vals:
            print(f"{key}: median {statistics.median(vals):.3f} "
                  f"({min(vals):.3f}-{max(vals):.3f}) n={len(vals)}")  # fmt: skip


if __name__ == "__main__":
    main()
