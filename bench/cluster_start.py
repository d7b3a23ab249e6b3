"""Time `kconsole cluster up` (cold: empty jar cache and Maven repo; warm: cached jars) and
`kconsole cluster down`, and check that down leaves no process behind.

    .venv/bin/python bench/cluster_start.py [--runs 3] [--cold]

Runs on free ports (bench/_cluster.py) in temporary dirs; prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from _cluster import free_ports

from kconsole.defaults import DEFAULT_BROKERS


def kconsole(state: Path, env: dict[str, str], *args: str) -> float:
    t0 = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "kconsole", "cluster", "--state-dir", str(state), *args],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    return time.monotonic() - t0


def leftovers(state: Path) -> list[int]:
    marker = f"@{state}"
    out = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        if any(marker in a for a in p.info["cmdline"] or []):
            out.append(p.info["pid"])
    return out


def one_run(env: dict[str, str]) -> tuple[float, float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "c"
        zk_port, base_port = free_ports(DEFAULT_BROKERS)
        try:
            up = kconsole(
                state, env, "up", "--zk-port", str(zk_port), "--base-port", str(base_port)
            )
        finally:  # a failed up may have left some of the processes running
            down = kconsole(state, env, "down")
        return up, down, len(leftovers(state))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cold", action="store_true", help="also time one cold start")
    args = ap.parse_args()
    rows = []
    if args.cold:
        with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as m2:
            env = dict(os.environ, KCONSOLE_CACHE_DIR=cache, MAVEN_OPTS=f"-Dmaven.repo.local={m2}")
            up, down, left = one_run(env)
            rows.append(("cold (empty jar cache and Maven repo)", up, down, left))
    env = dict(os.environ)
    subprocess.run(
        [sys.executable, "-m", "kconsole", "cluster", "fetch"],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    warm = [one_run(env) for _ in range(args.runs)]
    for i, (up, down, left) in enumerate(warm, 1):
        rows.append((f"warm run {i}", up, down, left))
    print(f"machine: {os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB")
    print("| run | up to ready (s) | down (s) | processes left |")
    print("|---|---|---|---|")
    for name, up, down, left in rows:
        print(f"| {name} | {up:.1f} | {down:.1f} | {left} |")
    print(
        f"| warm median | {statistics.median(r[0] for r in warm):.1f} | "
        f"{statistics.median(r[1] for r in warm):.1f} | |"
    )
    json.dump(
        [dict(zip(("run", "up_s", "down_s", "left"), r, strict=True)) for r in rows], sys.stderr
    )


if __name__ == "__main__":
    main()
