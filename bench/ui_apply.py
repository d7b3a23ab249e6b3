"""The console's cost of applying big snapshots (no cluster needed): 1,984 partitions on 3
brokers, like bench/refresh_cost.py's cluster, then 1/3 of the leaders moved, then broker 3 gone.

    .venv/bin/python bench/ui_apply.py

Prints the main-thread CPU time from apply_snapshot() until the app is idle again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import statistics
import time

from kconsole.models import Broker, BrokerState, ClusterSnapshot, Controller, Partition, Topic
from kconsole.timeline import diff
from kconsole.ui.app import make_app


def base() -> ClusterSnapshot:
    parts = []
    for t in range(20):
        for p in range(99 if t else 104):
            r = tuple((p + i + t) % 3 + 1 for i in range(3))
            parts.append(Partition(f"topic-{t:02d}", p, r[0], r, r))
    brokers = tuple(Broker(i, "127.0.0.1", 19091 + i) for i in (1, 2, 3))
    topics = tuple(Topic(f"topic-{t:02d}", False, 2) for t in range(20))
    return ClusterSnapshot(1.0, "bench", brokers, Controller(1, 1), tuple(parts), topics)


def moved(s: ClusterSnapshot) -> ClusterSnapshot:
    parts = tuple(
        dataclasses.replace(p, leader=p.replicas[1]) if i % 3 == 0 else p
        for i, p in enumerate(s.partitions)
    )
    return dataclasses.replace(s, taken_at=2.0, partitions=parts)


def broker3_gone(s: ClusterSnapshot) -> ClusterSnapshot:
    parts = tuple(
        dataclasses.replace(
            p,
            leader=next(b for b in p.replicas if b != 3) if p.leader == 3 else p.leader,
            isr=tuple(b for b in p.isr if b != 3),
        )
        for p in s.partitions
    )
    brokers = tuple(
        dataclasses.replace(b, state=BrokerState.DOWN, registered=False) if b.id == 3 else b
        for b in s.brokers
    )
    return dataclasses.replace(s, taken_at=3.0, partitions=parts, brokers=brokers)


async def main() -> None:
    app = make_app(None)
    rows = []
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("i")
        s0 = base()
        steps = [
            ("first snapshot, 1984 rows", s0),
            ("unchanged (the next poll)", dataclasses.replace(s0, taken_at=1.5)),
            ("1/3 of leaders moved", moved(s0)),
            ("back", s0),
            ("broker 3 gone", broker3_gone(s0)),
            ("back", s0),
        ]
        prev = None
        for name, snap in steps:
            t0 = time.thread_time()
            app.apply_snapshot(snap, diff(prev, snap))
            await pilot.pause()
            await app.wait_for_refresh() if hasattr(app, "wait_for_refresh") else None
            rows.append((name, (time.thread_time() - t0) * 1000, len(diff(prev, snap))))
            prev = snap
    print("| step | main-thread CPU until idle (ms) | events |")
    print("|---|---:|---:|")
    for name, ms, n in rows:
        print(f"| {name} | {ms:.0f} | {n} |")
    print(f"\nmedian of the change steps: {statistics.median(r[1] for r in rows[2:]):.0f} ms")


asyncio.run(main())
