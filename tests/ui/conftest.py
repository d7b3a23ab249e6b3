"""UI test set-up: UTC wall clock, a clock the tests move, snapshots from the recorded fixtures."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from textual.geometry import Size
from textual.pilot import Pilot
from textual.widgets import DataTable

from kconsole.cluster.errors import ClusterError
from kconsole.cluster.groups.reader import carry_forward
from kconsole.cluster.produce import api as pr
from kconsole.cluster.tail import TailFactory
from kconsole.cluster.values import BrokerAction, ProcState
from kconsole.commands import Commands
from kconsole.config import Settings
from kconsole.jobs.manager import JobManager
from kconsole.models import ClusterSnapshot, GroupPartition, SourceHealth, SourceName
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


class RecordingObserver(FakeObserver):
    """A FakeObserver that can also record events (kconsole.source.EventRecorder), publishing
    them with `snapshot` as ClusterObserver does."""

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        super().__init__()
        self.snapshot = snapshot
        self.recorded: list[Event] = []

    def record(self, event: Event) -> None:
        self.recorded.append(event)
        if self.on_update is not None:
            self.on_update(self.snapshot, (event,))


class FakeControl:
    """A BrokerControl that records every act() call (from the worker thread)."""

    name = "fake"

    def __init__(self, error: str = "") -> None:
        self.calls: list[tuple[BrokerAction, int]] = []
        self.links: list[object] = []  # each partition's sides, as the door passed them
        self.error = error

    def states(self) -> dict[int, ProcState]:
        return {}

    def network_faults(self) -> dict[int, str]:
        return {}  # it has network faults (none in force): the console's n key is enabled

    def act(
        self, action: BrokerAction, broker_id: int, progress: object = None, links: object = None
    ) -> str:
        self.calls.append((action, broker_id))
        if links is not None:
            self.links.append(links)
        if self.error:
            raise ClusterError(self.error)
        return f"broker {broker_id}: {action.value} done (fake)"


def load(name: str) -> ClusterSnapshot:
    """A recorded snapshot from tests/fixtures/snapshots/<name>.json."""
    path: Path = FIXTURES / f"{name}.json"
    with path.open() as f:
        return ClusterSnapshot.from_dict(json.load(f))


def new_app(
    observer: FakeObserver | None = None,
    clock: Clock | None = None,
    *,
    commands: Commands | None = None,
    export_dir: Path | None = None,
    settings: Settings | None = None,
    tailer: TailFactory | None = None,
    jobs: JobManager | None = None,
) -> KConsoleApp:
    """The console as the tests run it: fixed clock, no animation. `tailer` and `jobs` are
    backends: they go to the command layer (made here, without an audit log, when not given),
    as the kconsole command wires them."""
    if tailer is not None or jobs is not None:
        commands = commands or Commands(None, audit=None)
        commands.tailer = tailer or commands.tailer
        commands.jobs = jobs or commands.jobs
    if commands is not None and commands.settings is None:
        commands.settings = settings
    app = make_app(
        observer,
        commands=commands,
        clock=clock or Clock(),
        refresh_s=1.0,
        group_refresh_s=2.0,
        export_dir=export_dir,
        settings=settings,
    )
    app.animation_level = "none"
    return app


async def wait_for_actions(pilot: Pilot[None]) -> None:
    """Wait for the broker actions the app started (only those workers), then for the
    messages they posted."""
    from kconsole.ui.app import ACTIONS_GROUP

    for worker in list(pilot.app.workers):
        if worker.group == ACTIONS_GROUP:
            await worker.wait()
    await pilot.pause()
    await pilot.pause()


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


async def select_broker(pilot: Pilot[None], broker_id: int) -> None:
    """Focus the brokers pane and put the cursor on `broker_id`."""
    from kconsole.ui.widgets.table import KeyedTable

    app = pilot.app
    await pilot.press("1")
    brokers = app.screen.query_one("#brokers", KeyedTable)
    brokers.move_cursor(row=brokers.get_row_index(str(broker_id)))
    await pilot.pause()


def table_settled(table: DataTable[Any]) -> bool:
    """`table` has measured every row it holds: its scrollable size is its columns' widths by
    its rows' heights (DataTable measures added rows later, on its own idle)."""
    width = sum(column.get_render_width(table) for column in table.columns.values())
    height = sum(row.height for row in table.rows.values())
    header = table.header_height if table.show_header else 0
    return table.virtual_size == Size(width, height + header)


async def settle(pilot: Pilot[Any], timeout: float = 10.0) -> None:
    """Wait until the screen has applied its data: every table on it measured, then no
    message pending and no animation scheduled. A snapshot taken after this is the app at
    rest, not whatever the last repaint happened to catch."""
    deadline = time.monotonic() + timeout
    await pilot.pause()
    while not all(table_settled(t) for t in pilot.app.screen.query(DataTable)):
        if time.monotonic() > deadline:
            raise AssertionError("the tables did not settle within the deadline")
        await pilot.pause(0.02)
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()


def then_settle(
    run_before: Callable[[Pilot[Any]], Awaitable[None]] | None,
) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """`run_before`, then settle(): for snap_compare."""

    async def settled(pilot: Pilot[Any]) -> None:
        if run_before is not None:
            await run_before(pilot)
        await settle(pilot)

    return settled


def without_topic(snap: ClusterSnapshot, topic: str) -> ClusterSnapshot:
    """`snap` without `topic`, as the recording of broker_down leaves audit-log out (to keep
    the main screen's picture about the controller): a snapshot fed before broker_down must
    leave it out too, or the console rightly says the topic was deleted."""
    return dataclasses.replace(
        snap,
        partitions=tuple(p for p in snap.partitions if p.topic != topic),
        topics=tuple(t for t in snap.topics if t.name != topic),
    )


def broker_down_whole() -> ClusterSnapshot:
    """The recorded broker_down with the audit-log topic its recording leaves out, from
    offline_partition (recorded in the same state a moment later): for a story that goes on
    to snapshots that have the topic (the drill, no controller)."""
    down, later = load("broker_down"), load("offline_partition")
    extra = tuple(p for p in later.partitions if p.topic == "audit-log")
    return dataclasses.replace(
        down,
        partitions=tuple(sorted((*down.partitions, *extra), key=lambda p: (p.topic, p.partition))),
        topics=tuple(
            sorted(
                (*down.topics, *(t for t in later.topics if t.name == "audit-log")),
                key=lambda t: t.name,
            )
        ),
    )


def fixture_drill() -> tuple[ClusterSnapshot, ClusterSnapshot, ClusterSnapshot]:
    """The recorded healthy -> broker_down (controller 2 stopped) -> back, 7.3 s and 25 s
    after the healthy snapshot."""
    healthy = load("healthy")
    t = healthy.taken_at
    down = dataclasses.replace(broker_down_whole(), taken_at=t + 7.3)
    back = dataclasses.replace(healthy, taken_at=t + 25.0, controller=down.controller)
    return healthy, down, back


async def run_fixture_drill(pilot: Pilot[None], restore: bool = True) -> None:
    """Stop broker 2 (the controller) one second after the recorded healthy snapshot, see it
    go 6.3 s later, start it 19 s after the fault and see it back 5 s after that."""
    app = pilot.app
    assert isinstance(app, KConsoleApp) and isinstance(app.clock, Clock)
    healthy, down, back = fixture_drill()
    feed(app, healthy)
    await pilot.pause()
    app.clock.t = healthy.taken_at + 1.0
    await select_broker(pilot, 2)
    await pilot.press("s", "2", "enter")
    await wait_for_actions(pilot)
    feed(app, down)
    if restore:
        app.clock.t = healthy.taken_at + 20.0
        await pilot.press("t")
        await wait_for_actions(pilot)
        feed(app, back)
        app.clock.t = healthy.taken_at + 30.0
        app.now = app.clock()
    await pilot.pause()


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
        # Each one a group poll of its own (the trend takes one point per poll).
        sources = tuple(
            dataclasses.replace(h, updated_at=taken_at) if h.name is SourceName.GROUPS else h
            for h in snap.sources
        )
        out.append(dataclasses.replace(snap, taken_at=taken_at, groups=groups, sources=sources))
    return out


@pytest.fixture(autouse=True)
def no_real_producers(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """The produce dialog's session makes FakeWarm producers (tests/ui/warm_fakes.py), never a
    real one: a screen test connects to no cluster. Yields the list of those made."""
    from kconsole.cluster.produce import send as produce_send
    from tests.ui.warm_fakes import FakeWarm

    monkeypatch.setattr(produce_send, "WarmProducer", FakeWarm)
    FakeWarm.made = []
    yield FakeWarm.made


@pytest.fixture
def recorded_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """read_topic_limits answers what the real cluster answered for test-topic."""

    def limits(settings: Settings, topic: str, timeout_s: float = 10.0) -> pr.TopicLimits:
        if topic != "test-topic":
            return pr.TopicLimits(topic, False)
        return recorded_topic_limits()

    # The command layer reads them from produce_request (the screen no longer reads anything).
    from kconsole.cluster.produce import request as produce_request

    monkeypatch.setattr(produce_request, "read_topic_limits", limits)


def recorded_topic_limits() -> pr.TopicLimits:
    """What the real cluster answered for test-topic (4 partitions, the default size limit)."""
    return pr.TopicLimits("test-topic", True, 4, pr.DEFAULT_MAX_MESSAGE_BYTES, "topic")


@pytest.fixture
def snap_compare(snap_compare: Callable[..., bool]) -> Callable[..., bool]:
    """The plugin's snap_compare, taking the picture only once the app has applied its data
    and is idle (settle), not whenever run_before happens to return."""

    def compare(
        app: KConsoleApp,
        *,
        run_before: Callable[[Pilot[Any]], Awaitable[None]] | None = None,
        **kw: Any,
    ) -> bool:
        return snap_compare(app, run_before=then_settle(run_before), **kw)

    return compare


def coordinator_moving(snap: ClusterSnapshot, after_s: float = 12.0) -> ClusterSnapshot:
    """`snap` one group poll `after_s` later, during an outage: every group's committed offsets
    could not be read (its coordinator is moving) and partition 3's leader did not answer. Built
    by the observer's own carry_forward, so the figures carried are the ones it would carry."""
    now = snap.taken_at + after_s
    fresh = []
    for g in snap.groups:
        parts = tuple(
            GroupPartition(
                gp.topic,
                gp.partition,
                None,
                None if gp.partition == 3 or gp.log_end is None else gp.log_end + 40,
                gp.owner,
                committed_known=False,
            )
            for gp in g.partitions
        )
        error = (
            f"coordinator moving (coordinator {g.coordinator}): committed offsets not readable "
            "yet (NotCoordinatorError); log end unknown for 1 partition(s): leader 3: "
            "KafkaConnectionError"
        )
        fresh.append(dataclasses.replace(g, partitions=parts, error=error))
    groups = carry_forward(snap.groups, snap.taken_at, fresh)
    note = f"{len(groups)} of {len(groups)} groups partly unread"
    sources = tuple(
        SourceHealth(h.name, True, now, note) if h.name is SourceName.GROUPS else h
        for h in snap.sources
    )
    return dataclasses.replace(snap, taken_at=now, groups=groups, sources=sources)
