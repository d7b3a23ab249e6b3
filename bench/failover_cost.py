"""The console's own CPU for a failover's metadata change on a big KRaft cluster (no cluster
needed): 100 topics x 100 partitions at RF 2 on brokers 1-3 plus test-topic, then broker 3
fenced (every partition it led gets another leader, every ISR it was in shrinks: 6,670 of
10,004 partitions change), then back, four times each way.

    .venv/bin/python bench/failover_cost.py

Prints the median wall time, on this otherwise idle process, of each step the change takes
between the metadata answer and the screen: the observer's build of the snapshot (from the
metadata as the Admin poll hands it on), the diff that makes its events, and the app's apply
(the partitions and brokers tables' share of it on their own lines). The quorum and
registrations are the recorded ones of a real cluster (tests/fixtures/kraft_observer).
On a real cluster during a failover these run beside six JVMs on two cores: kraft_failover.py
with --topics 100 measures that, end to end.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import gc
import json
import statistics
import time
from pathlib import Path
from typing import Any

from kconsole.cluster.admin import AdminPartition, AdminState
from kconsole.cluster.kraft.quorum import quorum_of, registrations_of
from kconsole.models import ClusterMode, ClusterSnapshot, SourceName
from kconsole.observer.builder import SnapshotBuilder
from kconsole.timeline import diff
from kconsole.ui.app import KConsoleApp, make_app
from kconsole.ui.widgets import tables

FIXTURE = Path(__file__).resolve().parents[1] / "tests/fixtures/kraft_observer/healthy.json"
CHANGES = 8  # fenced, back, fenced, ... (each a change of 6,670 partitions)


def metadata(fenced3: bool, cluster_id: str) -> AdminState:
    """The metadata as a live broker answers it, with broker 3 fenced or not."""

    def part(p: int, replicas: tuple[int, ...]) -> AdminPartition:
        if not fenced3:
            return AdminPartition(p, replicas[0], replicas, replicas)
        isr = tuple(b for b in replicas if b != 3)
        return AdminPartition(p, isr[0], replicas, isr)

    topics = {
        f"bench-{t:02d}": tuple(part(p, ((p + t) % 3 + 1, (p + t + 1) % 3 + 1)) for p in range(100))
        for t in range(100)
    }
    topics["test-topic"] = tuple(
        part(p, tuple((p + i) % 3 + 1 for i in range(3))) for p in range(4)
    )
    nodes: dict[int, tuple[str, int, str | None]] = {
        b: ("127.0.0.1", 19091 + b, None) for b in (1, 2, 3) if not (fenced3 and b == 3)
    }
    return AdminState(0.0, cluster_id, 1, nodes, topics, {t: 1 for t in topics})


def snapshots() -> tuple[list[ClusterSnapshot], dict[str, list[float]]]:
    """The snapshots the observer publishes (the fencing from the quorum poll, then the
    metadata's change), and the build and diff times of each metadata change (ms)."""
    answer: dict[str, Any] = json.loads(FIXTURE.read_text())
    healthy = registrations_of(answer["describe_cluster"])
    fenced = {k: dataclasses.replace(v, fenced=k == 3) for k, v in healthy.items()}
    states = [metadata(False, answer["describe_cluster"]["cluster_id"])]
    states.append(metadata(True, answer["describe_cluster"]["cluster_id"]))
    now = 10.0
    b = SnapshotBuilder(use_zookeeper=False)
    b.set_mode(ClusterMode.KRAFT)
    b.quorum_read(quorum_of(answer["describe_metadata_quorum"], now), now)
    b.health[SourceName.ADMIN].success(now)
    b.admin, b.registrations = states[0], healthy
    snaps = [b.build(now)]
    times: dict[str, list[float]] = {"build": [], "diff": []}
    for i in range(1, CHANGES + 1):
        now += 1.0
        b.registrations = fenced if i % 2 else healthy
        snaps.append(b.build(now))  # the quorum poll's publish: fencing alone
        b.admin = states[i % 2]
        t0 = time.perf_counter()
        snap = b.build(now)
        t1 = time.perf_counter()
        events = diff(snaps[-1], snap)
        t2 = time.perf_counter()
        assert len(events) >= 6670, len(events)  # a leader change or an ISR change each
        times["build"].append((t1 - t0) * 1000)
        times["diff"].append((t2 - t1) * 1000)
        snaps.append(snap)
    return snaps, times


async def apply(snaps: list[ClusterSnapshot]) -> dict[str, list[float]]:
    """The app's apply_snapshot of each metadata change (ms), and the tables' share."""
    times: dict[str, list[float]] = {"apply": [], "partitions table": [], "brokers table": []}
    spans: list[tuple[str, float]] = []

    def timed(cls: type[Any], name: str, what: str) -> None:
        real = getattr(cls, name)

        @functools.wraps(real)
        def wrapper(self: Any, *a: Any, **kw: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return real(self, *a, **kw)
            finally:
                spans.append((what, (time.perf_counter() - t0) * 1000))

        setattr(cls, name, wrapper)

    timed(tables.PartitionsTable, "_rebuild", "partitions table")
    timed(tables.BrokersTable, "redraw", "brokers table")
    app: KConsoleApp = make_app(None)
    async with app.run_test(size=(160, 48)) as pilot:
        app.apply_snapshot(snaps[0])
        await pilot.pause()
        for j in range(1, len(snaps)):
            events = diff(snaps[j - 1], snaps[j])
            spans.clear()
            t0 = time.perf_counter()
            app.apply_snapshot(snaps[j], events)
            took = (time.perf_counter() - t0) * 1000
            await pilot.pause()
            if j % 2 == 0:  # the metadata's change (odd ones: the fencing alone)
                times["apply"].append(took)
                for what, ms in spans:
                    times[what].append(ms)
    return times


def main() -> None:
    gc.disable()  # as the console after its first frame (gc.freeze): no collection mid-step
    snaps, times = snapshots()
    times.update(asyncio.run(apply(snaps)))
    print("| step (10,004 partitions, 6,670 changed) | median (ms) | min-max (ms) |")
    print("|---|---:|---:|")
    for what, ms in times.items():
        print(f"| {what} | {statistics.median(ms):.0f} | {min(ms):.0f}-{max(ms):.0f} |")


if __name__ == "__main__":
    main()
