"""Data on screen never goes back in time, the lag trend stays bounded, job reads never pile up."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

from kconsole.models import ClusterSnapshot, Group, SourceHealth, SourceName
from kconsole.timeline import Event, EventKind
from tests.ui import builders as B
from tests.ui.conftest import new_app

SIZE = (120, 40)


def polled(
    snap: ClusterSnapshot, at: float, groups: tuple[Group, ...], seq: int
) -> ClusterSnapshot:
    """`snap` as published after a group poll at `at`."""
    sources = tuple(
        SourceHealth(h.name, True, at) if h.name is SourceName.GROUPS else h for h in snap.sources
    )
    if not any(h.name is SourceName.GROUPS for h in sources):
        sources = (*sources, SourceHealth(SourceName.GROUPS, True, at))
    return dataclasses.replace(snap, taken_at=at, groups=groups, sources=sources, seq=seq)


async def test_an_older_snapshot_adds_its_events_but_not_its_data() -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        base = B.healthy()
        newer = dataclasses.replace(base, taken_at=base.taken_at + 2, seq=7)
        older = dataclasses.replace(
            base, controller=dataclasses.replace(base.controller, id=3), seq=6
        )
        app.apply_snapshot(newer)
        late = Event(base.taken_at + 1, EventKind.ACTION, "stop broker 2 (late delivery)")
        app.apply_snapshot(older, [late])
        await pilot.pause()
        assert app.snapshot is newer
        assert any(le.event is late for le in app.timeline)


async def test_lag_trend_one_point_per_group_poll_and_bounded() -> None:
    from kconsole.ui.app import LAG_HISTORY

    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        base = B.healthy()
        seq = 0
        for i in range(LAG_HISTORY + 25):
            seq += 1
            at = base.taken_at + 2 * i
            snap = polled(base, at, (B.group("billing", (i, 0)), B.group(f"short-{i}", (1,))), seq)
            app.apply_snapshot(snap)
            # Another source's update in between: same group poll, no new point.
            seq += 1
            app.apply_snapshot(dataclasses.replace(snap, taken_at=at + 1, seq=seq))
        await pilot.pause()
        history = app.lag_history["billing"]
        assert len(history) == LAG_HISTORY
        assert list(history)[-1] == LAG_HISTORY + 24
        # Groups that are gone lose their history: a day-long console stays the same size.
        assert set(app.lag_history) == {"billing", f"short-{LAG_HISTORY + 24}"}


async def test_a_partial_lag_adds_no_point_to_the_trend() -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        base = B.healthy()
        full = B.group("billing", (5, 5))
        app.apply_snapshot(polled(base, base.taken_at, (full,), 1))
        unknown = dataclasses.replace(
            full,
            partitions=(dataclasses.replace(full.partitions[0], log_end=None), full.partitions[1]),
            error="log end unknown",
        )
        app.apply_snapshot(polled(base, base.taken_at + 2, (unknown,), 2))
        await pilot.pause()
        assert list(app.lag_history["billing"]) == [10]


async def test_a_partition_with_nothing_committed_still_adds_points() -> None:
    """A partition never committed is left out of every poll's total alike (`+ ?`): the
    trend of the rest goes on."""
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        base = B.healthy()
        full = B.group("billing", (5, 5))
        idle = dataclasses.replace(full.partitions[1], committed=None)
        group = dataclasses.replace(full, partitions=(full.partitions[0], idle))
        assert group.lag_partial and group.lag_read_whole
        app.apply_snapshot(polled(base, base.taken_at, (group,), 1))
        app.apply_snapshot(polled(base, base.taken_at + 2, (group,), 2))
        await pilot.pause()
        assert list(app.lag_history["billing"]) == [5, 5]


class SlowJobs:
    """A job manager whose reads block until released (a Maven fetch holding the lock)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.reads = 0
        self.lock = threading.Lock()

    def runs(self) -> list[Any]:
        with self.lock:
            self.reads += 1
        self.release.wait(10)
        return []

    def available(self) -> list[Any]:
        return []

    def stop_attached(self) -> None:
        pass


async def test_job_reads_never_pile_up() -> None:
    jobs = SlowJobs()
    app = new_app(jobs=jobs)  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(5):
            app.poll_jobs()
            await pilot.pause()
        assert jobs.reads == 1, "a second read started while the first one was still going"
        jobs.release.set()
        await app.workers.wait_for_complete()
        app.poll_jobs()
        await app.workers.wait_for_complete()
        assert jobs.reads == 2
