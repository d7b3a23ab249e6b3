"""Scale: synthetic clusters of N partitions (RF 3 on 3 brokers, 100 partitions a topic) through
the console's whole data path, without a cluster.

    .venv/bin/python bench/scale.py [--sizes 1000,10000,50000] [--runs 5]

For each size, measured `runs` times on a fresh app (headless, 160x48, internal topics shown):
  - build: SnapshotBuilder.build() from ZooKeeper-shaped data, the first time and again after
    one partition's state changed (a watch firing);
  - diff: timeline.diff() of consecutive snapshots, unchanged and with one leader moved;
  - apply: app.apply_snapshot() until the app is idle (main-thread CPU time), for the first
    snapshot, an unchanged poll, one leader moved, and 1/3 of the leaders moved;
  - longest frame: the longest the app's loop was busy while applying (a 5 ms ticker's
    lateness), for the same steps (garbage from earlier steps is collected before each);
  - a key: tab to the next pane with the table full, main-thread CPU until idle and the
    longest frame, median of 8 presses (every move changes the key bar: the brokers pane adds
    its keys, the groups pane one);
  - RSS of the process after the 1/3 step.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import itertools
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kconsole.cluster.zk import ZkDelta, ZkState
from kconsole.commands import Commands
from kconsole.models import ClusterSnapshot, SourceName
from kconsole.observer import SnapshotBuilder
from kconsole.timeline import diff
from kconsole.ui.app import make_app
from kconsole.ui.widgets.tables import PartitionsTable

SEQ = itertools.count(1)  # ZkState.seq, as a ZkReader numbers them
REG = {i: {"host": "127.0.0.1", "port": 19091 + i, "timestamp": "1000"} for i in (1, 2, 3)}


def zk_data(n: int) -> ZkState:
    topics: dict[str, dict[str, Any]] = {}
    states: dict[tuple[str, int], dict[str, Any]] = {}
    for t in range(max(1, n // 100)):
        name = f"topic-{t:04d}"
        assign = {}
        for p in range(min(100, n)):
            r = [(p + i + t) % 3 + 1 for i in range(3)]
            assign[str(p)] = r
            states[(name, p)] = {"leader": r[0], "isr": list(r), "leader_epoch": 0}
        topics[name] = {"partitions": assign}
    return ZkState(0.0, 1, 1, 0.0, dict(REG), topics, states, next(SEQ))


def moved(state: ZkState, every: int) -> ZkState:
    """Every `every`-th partition led by its second replica: the next ZkState as ZkWatcher
    gives it (the states it re-read are new dicts, and its delta names them)."""
    states = dict(state.states)
    re_read = []
    for i, (key, st) in enumerate(sorted(states.items())):
        if i % every == 0:
            replicas = state.topics[key[0]]["partitions"][str(key[1])]
            states[key] = {**st, "leader": replicas[1], "leader_epoch": 1}
            re_read.append(key)
    delta = ZkDelta(state.seq, frozenset(re_read), frozenset())
    return dataclasses.replace(state, states=states, seq=next(SEQ), delta=delta)


class Stalls:
    """The longest time the loop was busy: a 5 ms ticker's lateness."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            t = time.perf_counter()
            await asyncio.sleep(0.005)
            self.longest = max(self.longest, time.perf_counter() - t - 0.005)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    def reset(self) -> None:
        self.longest = 0.0

    def stop(self) -> None:
        if self._task:
            self._task.cancel()


def build(builder: SnapshotBuilder, state: ZkState, now: float) -> tuple[ClusterSnapshot, float]:
    builder.zk = state
    builder.health[SourceName.ZOOKEEPER].success(now)
    t0 = time.perf_counter()
    snap = builder.build(now)
    return snap, (time.perf_counter() - t0) * 1000


async def one_run(n: int) -> dict[str, float]:
    out: dict[str, float] = {}
    base = zk_data(n)
    b = SnapshotBuilder(use_zookeeper=True)
    s0, out["build first (ms)"] = build(b, base, 1.0)
    s1, _ = build(b, base, 2.0)  # an Admin poll: same ZooKeeper data
    one = moved(base, 10**9)  # only the first partition
    s2, out["build, one partition changed (ms)"] = build(b, one, 3.0)
    third = moved(one, 3)
    s3, _ = build(b, third, 4.0)
    t0 = time.perf_counter()
    diff(s0, s1)
    out["diff unchanged (ms)"] = (time.perf_counter() - t0) * 1000
    t0 = time.perf_counter()
    events = diff(s1, s2)
    out["diff one leader moved (ms)"] = (time.perf_counter() - t0) * 1000
    assert any(e.kind.name == "LEADER_CHANGED" for e in events), "diff missed the move"

    # With a command layer, as the console runs: the brokers pane shows its keys (disabled:
    # there is nothing to control here).
    app = make_app(None, commands=Commands(None, audit=None))
    stalls = Stalls()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("i")
        await pilot.pause()
        stalls.start()
        prev = None
        for name, snap in (
            ("first snapshot", s0),
            ("unchanged poll", s1),
            ("one leader moved", s2),
            ("1/3 of leaders moved", s3),
        ):
            events = diff(prev, snap)  # the observer's thread does this in the console
            await pilot.pause()
            # Each step pays for its own garbage, not for the four snapshots this script
            # built back to back before it (a full collection of those is ~45 ms at 10k).
            gc.collect()
            await pilot.pause()  # the ticker sees the collection before it is reset
            stalls.reset()
            t0 = time.thread_time()
            app.apply_snapshot(snap, events)
            await pilot.pause()
            await pilot.pause()
            out[f"apply: {name} (ms CPU)"] = (time.thread_time() - t0) * 1000
            out[f"longest frame: {name} (ms)"] = stalls.longest * 1000
            prev = snap
        tabs: list[tuple[float, float]] = []
        for _ in range(8):
            await pilot.pause()
            stalls.reset()
            t0 = time.thread_time()
            await pilot.press("tab")
            await pilot.pause()
            await pilot.pause()
            tabs.append(((time.thread_time() - t0) * 1000, stalls.longest * 1000))
        out["key: tab to the next pane (ms CPU)"] = statistics.median(c for c, _ in tabs)
        out["longest frame: tab (ms)"] = statistics.median(f for _, f in tabs)
        table = app.query_one("#partitions", PartitionsTable)
        assert table.row_count == n, f"table shows {table.row_count} rows of {n}"
        stalls.stop()
    gc.collect()
    out["RSS after (MiB)"] = psutil.Process(os.getpid()).memory_info().rss / 2**20
    return out


def run(sizes: list[int], runs: int) -> dict[int, list[dict[str, float]]]:
    return {n: [asyncio.run(one_run(n)) for _ in range(runs)] for n in sizes}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,50000")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    results = run([int(s) for s in args.sizes.split(",")], args.runs)
    for n, rs in results.items():
        print(f"\n{n:,} partitions ({len(rs)} runs): median (min-max)")
        for key in rs[0]:
            vals = [r[key] for r in rs]
            print(f"  {key}: {statistics.median(vals):.1f} ({min(vals):.1f}-{max(vals):.1f})")


if __name__ == "__main__":
    main()
