"""UI test set-up: UTC wall clock, a clock the tests move, snapshots from the recorded fixtures."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import pytest
from textual.pilot import Pilot

from kconsole.models import ClusterSnapshot
from kconsole.timeline import Event, diff
from kconsole.ui.app import KConsoleApp, make_app
from tests.ui.builders import FIXTURES, T0

os.environ["TZ"] = "UTC"
time.tzset()


class Clock:
    """A clock that stands still until a test moves it."""

    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


class FakeObserver:
    """Records what the app asked of it; `push` plays the observer thread."""

    def __init__(self) -> None:
        self.on_update: Callable[[ClusterSnapshot, tuple[Event, ...]], None] | None = None
        self.stopped = False
        self.refreshes = 0

    def start(self, on_update: Callable[[ClusterSnapshot, tuple[Event, ...]], None]) -> None:
        self.on_update = on_update

    def stop(self) -> None:
        self.stopped = True

    def refresh(self) -> None:
        self.refreshes += 1


def load(name: str) -> ClusterSnapshot:
    """A recorded snapshot from tests/fixtures/snapshots/<name>.json."""
    path: Path = FIXTURES / f"{name}.json"
    with path.open() as f:
        return ClusterSnapshot.from_dict(json.load(f))


def new_app(observer: FakeObserver | None = None, clock: Clock | None = None) -> KConsoleApp:
    """The console as the tests run it: fixed clock, no animation."""
    app = make_app(observer, clock=clock or Clock(), refresh_s=1.0, group_refresh_s=2.0)
    app.animation_level = "none"
    return app


def feed(app: KConsoleApp, *snapshots: ClusterSnapshot) -> None:
    """Apply snapshots in order, each with the events diff derives from its predecessor, and
    stop the clock at the last one's time."""
    previous = app.snapshot
    for snap in snapshots:
        if isinstance(app.clock, Clock):
            app.clock.t = snap.taken_at
        app.apply_snapshot(snap, diff(previous, snap))
        previous = snap


def feeding(*snapshots: ClusterSnapshot) -> Callable[[Pilot[None]], Awaitable[None]]:
    """A snap_compare run_before that feeds `snapshots`."""

    async def run_before(pilot: Pilot[None]) -> None:
        assert isinstance(pilot.app, KConsoleApp)
        feed(pilot.app, *snapshots)
        await pilot.pause()

    return run_before


def keys_then(
    snapshots: Sequence[ClusterSnapshot], *keys: str
) -> Callable[[Pilot[None]], Awaitable[None]]:
    """A run_before that feeds `snapshots`, then presses `keys`."""

    async def run_before(pilot: Pilot[None]) -> None:
        assert isinstance(pilot.app, KConsoleApp)
        feed(pilot.app, *snapshots)
        await pilot.pause()
        await pilot.press(*keys)
        await pilot.pause()

    return run_before


@pytest.fixture
def app() -> KConsoleApp:
    """A console with no observer."""
    return new_app()


def lag_series(snap: ClusterSnapshot, count: int = 40) -> list[ClusterSnapshot]:
    """`count` snapshots before `snap` in which every group's lag climbs, dips, then climbs
    to where `snap` has it: enough history for a lag trend."""
    out = []
    for i in range(count):
        # 0 -> 0.6 -> 0.3 -> 1.0 over the series, in whole steps so the picture is stable.
        x = i / max(count - 1, 1)
        f = 1.8 * x if x < 1 / 3 else (0.9 - 0.9 * x if x < 2 / 3 else 2.1 * x - 1.1)
        groups = tuple(
            dataclasses.replace(
                g,
                partitions=tuple(
                    dataclasses.replace(gp, committed=gp.log_end - round(gp.lag * f))
                    if gp.lag is not None and gp.log_end is not None
                    else gp
                    for gp in g.partitions
                ),
            )
            for g in snap.groups
        )
        taken_at = snap.taken_at - (count - i) * 2.0
        out.append(dataclasses.replace(snap, taken_at=taken_at, groups=groups))
    return out
