"""The reassignment screen over recorded snapshots, with a fake ReassignClient: proposals and
their diff, validation, edits, export/import, execute and cancel through the command layer
(read-only refuses), progress and verification.

The fake is the command layer's reassignment client (Commands.reassigner), as the kconsole
command wires the real one."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from kconsole.cluster.reassign.client import ElectResult, Ongoing
from kconsole.cluster.reassign.outcome import CancelOutcome
from kconsole.cluster.reassign.throttles import throttles_of
from kconsole.commands import Commands
from kconsole.commands.reassign import ClientFactory
from kconsole.models import ClusterSnapshot
from kconsole.reassign import fields
from kconsole.reassign.plan import Move, Plan
from kconsole.reassign.progress import read_progress
from kconsole.ui.app import KConsoleApp
from kconsole.ui.screens import reassign_rows as rr
from kconsole.ui.screens.reassign import AskText, ReassignScreen
from tests.ui.conftest import feed, load, new_app
from tests.ui.pilots import answer, steady_cursors, text_of, wait_for, wait_group

WIDE = (140, 40)
MIB = 1024 * 1024
SnapCompare = Callable[..., bool]
RunBefore = Callable[[Pilot[Any]], Awaitable[None]]


class FakeReassign:
    """The ReassignClient methods, answering fixed data and recording every call.

    While `moving` is set, audit-log/0 is being moved from broker 1 to broker 2: each
    log_sizes() reading finds `step` more bytes on broker 2, up to the leader's 10 MiB. With
    `hold_after` n, the reading after the n-th one while moving waits until `go_on` is set:
    the screen shows the n-th reading for as long as a test looks at it, however slowly the
    machine lets the test run next to the poller."""

    def __init__(self, step: int = MIB, throttles: dict[str, dict[str, str]] | None = None):
        self.calls: list[tuple[str, Any]] = []
        self.moving = False
        self.step = step
        self.readings = 0
        self.moving_readings = 0
        self.hold_after: int | None = None
        self.go_on = threading.Event()
        self.throttle_configs = throttles or {}
        self.stuck: set[str] = set()  # throttles a removal does not take away (read back)
        self.last_throttle_plan: Any = None  # what ReassignClient.execute says it set
        self.cancel_kwargs: dict[str, Any] = {}

    def __call__(self) -> FakeReassign:  # the factory: the same recording client every time
        return self

    def __enter__(self) -> FakeReassign:
        return self

    def __exit__(self, *_exc: object) -> None:
        pass

    def close(self) -> None:
        pass

    def ongoing(self) -> list[Ongoing]:
        self.calls.append(("ongoing", None))
        return [Ongoing("audit-log", 0, (2, 1), (2,), (1,))] if self.moving else []

    def log_sizes(self) -> dict[tuple[str, int, int], int]:
        self.calls.append(("log_sizes", None))
        if self.moving:
            self.moving_readings += 1
            if self.hold_after is not None and self.moving_readings > self.hold_after:
                self.go_on.wait(10)
        self.readings += 1
        sizes = {("test-topic", p, b): (p + 1) * MIB for p in range(4) for b in (1, 2, 3)}
        sizes |= {("audit-log", p, p + 1): 10 * MIB for p in range(3)}
        if self.moving:
            sizes[("audit-log", 0, 2)] = min(self.step * self.readings, 10 * MIB)
        return sizes

    def throttles(self) -> dict[str, dict[str, str]]:
        self.calls.append(("throttles", None))
        return self.throttle_configs

    def execute(self, moves: Any, current: Any, throttle_bps: int | None = None) -> Any:
        self.calls.append(("execute", (list(moves), throttle_bps)))
        return {(t, p): None for t, p, _ in moves}

    def cancel(self, partitions: Any = None, **kwargs: Any) -> CancelOutcome:
        self.calls.append(("cancel", list(partitions or [])))
        self.cancel_kwargs = kwargs
        return CancelOutcome({k: None for k in partitions or []})

    def remove_throttles(self, topics: Any, brokers: Any) -> None:
        self.calls.append(("remove_throttles", (list(topics), list(brokers))))
        gone = {f"broker:{b}" for b in brokers} | {f"topic:{t}" for t in topics}
        self.throttle_configs = {
            k: v for k, v in self.throttle_configs.items() if k not in gone or k in self.stuck
        }

    def throttles_left(self, topics: Any) -> list[str]:
        """What the real client reads back after a removal (the stuck ones stay)."""
        return throttles_of(self.throttle_configs, topics)

    def elect(self, kind: str, partitions: Any) -> list[ElectResult]:
        self.calls.append(("elect", (kind, partitions)))
        return []

    def called(self, name: str) -> list[Any]:
        return [args for n, args in self.calls if n == name]


class Timer:
    """A monotonic clock that moves `step` seconds each time it is read."""

    def __init__(self, step: float = 2.0) -> None:
        self.t, self.step = 0.0, step

    def __call__(self) -> float:
        self.t += self.step
        return self.t


def reassign_app(fake: FakeReassign, *, read_only: bool = False) -> KConsoleApp:
    # The fake is the command layer's reassignment client: the screen reads through the read-only
    # view the door hands out, and changes through the door.
    return new_app(commands=Commands(None, read_only=read_only, read_only_reason="--read-only",
                                     audit=None, reassigner=cast(ClientFactory, fake)))  # fmt: skip


async def open_screen(pilot: Pilot[Any], snapshot: str = "healthy", **kw: Any) -> ReassignScreen:
    """Feed `snapshot`, open the screen (kw: its arguments) and wait for the log sizes."""
    app = pilot.app
    assert isinstance(app, KConsoleApp)
    feed(app, load(snapshot))
    await pilot.pause()
    app.push_screen(ReassignScreen(**kw))
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, ReassignScreen)
    steady_cursors(screen)
    await wait_group(pilot, "reassign-sizes")
    return screen


def fill(screen: ReassignScreen, **fields: str) -> None:
    for name, value in fields.items():
        screen.query_one(f"#reassign-{name}", Input).value = value


async def propose(pilot: Pilot[Any], topics: list[str], **fields: str) -> ReassignScreen:
    screen = await open_screen(pilot, topics=topics)
    fill(screen, **fields)
    await pilot.press("g")
    await pilot.pause()
    return screen


def bad_plan(path: Path) -> Path:
    """A plan with an unknown broker, a broker twice and the wrong replication factor."""
    parts = [
        {"topic": "test-topic", "partition": 0, "replicas": [1, 9, 2]},
        {"topic": "test-topic", "partition": 1, "replicas": [1, 1, 2]},
        {"topic": "test-topic", "partition": 2, "replicas": [1, 2]},
    ]
    path.write_text(json.dumps({"version": 1, "partitions": parts}))
    return path


def two_readings() -> ReassignScreen.Progressed:
    """audit-log/0 half-way from broker 1 to 2: 4 then 5 MiB of 10 copied, 2 s apart."""
    snap: ClusterSnapshot = load("healthy")
    ongoing = [Ongoing("audit-log", 0, (2, 1), (2,), (1,))]
    keys = [("audit-log", 0)]
    sizes = {("audit-log", 0, 1): 10 * MIB, ("audit-log", 0, 2): 4 * MIB}
    first = read_progress(ongoing, keys, snap, sizes, None, None)
    sizes = {**sizes, ("audit-log", 0, 2): 5 * MIB}
    return ReassignScreen.Progressed(read_progress(ongoing, keys, snap, sizes, first, 2.0),
                                     sizes, "")  # fmt: skip


# -- pictures -----------------------------------------------------------------------------------
class TestPictures:
    """What the screen shows, on 140x40."""

    def test_proposal_diff(self, snap_compare: SnapCompare) -> None:
        """test-topic onto brokers 1 and 2 with RF 2: removed replicas, leader changes, totals."""

        async def run_before(pilot: Pilot[Any]) -> None:
            await propose(pilot, ["test-topic"], brokers="1,2", rf="2", throttle="50M")

        assert snap_compare(reassign_app(FakeReassign()), terminal_size=WIDE,
                            run_before=run_before)  # fmt: skip

    def test_validation_errors(
        self, snap_compare: SnapCompare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An imported plan with an unknown broker, a broker twice and a wrong RF: all listed."""
        monkeypatch.chdir(tmp_path)
        bad_plan(tmp_path / "bad.json")

        async def run_before(pilot: Pilot[Any]) -> None:
            screen = await open_screen(pilot, topics=["test-topic"])
            fill(screen, file="bad.json")
            await pilot.press("i")

        assert snap_compare(reassign_app(FakeReassign()), terminal_size=WIDE,
                            run_before=run_before)  # fmt: skip

    def test_progress(self, snap_compare: SnapCompare) -> None:
        """A reassignment half-way: bytes left, rate and ETA in the row and the status."""

        async def run_before(pilot: Pilot[Any]) -> None:
            screen = await propose(pilot, ["audit-log"], brokers="2,3")
            screen.post_message(two_readings())
            await pilot.pause()

        assert snap_compare(reassign_app(FakeReassign()), terminal_size=WIDE,
                            run_before=run_before)  # fmt: skip

    def test_execute_confirmation(self, snap_compare: SnapCompare) -> None:
        """ctrl+s: what will move, the throttle, and the word to type."""

        async def run_before(pilot: Pilot[Any]) -> None:
            await propose(pilot, ["audit-log"], brokers="2,3", throttle="10M")
            await pilot.press("ctrl+s")
            await pilot.pause()
            steady_cursors(pilot.app.screen)

        assert snap_compare(reassign_app(FakeReassign()), terminal_size=WIDE,
                            run_before=run_before)  # fmt: skip


# -- behaviour ----------------------------------------------------------------------------------
async def test_proposal_rows() -> None:
    """g proposes from the bar; the rows say what moves; the totals count it."""
    app = reassign_app(FakeReassign())
    async with app.run_test(size=WIDE) as pilot:
        screen = await propose(pilot, ["test-topic"], brokers="1,2", rf="2")
        assert screen.plan is not None
        assert {m.replicas for m in screen.plan.moves} == {(1, 2), (2, 1)}
        table = screen.table
        assert table.row_keys == [f"test-topic/{p}" for p in range(4)]
        row = [str(c) for c in table.get_row("test-topic/0")]
        assert row[:6] == ["test-topic/0", "3,2,1", "2,1", "—", "-3", "3 → 2"]
        assert row[7] == "will move"
        status = text_of(app, "#reassign-status")
        assert "4 of 4 partitions move" in status and "0 replicas added, 4 removed" in status


async def test_validation_lists_every_problem(tmp_path: Path) -> None:
    """Each problem of an imported plan on its own line; re-checked on every snapshot."""
    app = reassign_app(FakeReassign())
    async with app.run_test(size=WIDE) as pilot:
        screen = await open_screen(pilot, topics=["test-topic"])
        fill(screen, file=str(bad_plan(tmp_path / "bad.json")))
        await pilot.press("i")
        await pilot.pause()
        lines = text_of(app, "#reassign-status").splitlines()
        assert lines == [
            "✗ test-topic/0: broker 9 does not exist (brokers: 1, 2, 3)",
            "✗ test-topic/1: broker 1 is listed 2 times in [1, 1, 2]",
            "✗ test-topic/2: 2 replicas, but test-topic has replication factor 3 (changing it "
            "was not allowed)",
        ]
        # Typing a replication factor allows changing it: that problem goes.
        fill(screen, rf="2")
        await pilot.pause()
        assert len(text_of(app, "#reassign-status").splitlines()) == 2


async def test_import_errors(tmp_path: Path) -> None:
    """A file that is not a plan, or no file: a clear message, the plan unchanged."""
    app = reassign_app(FakeReassign())
    async with app.run_test(size=WIDE) as pilot:
        screen = await open_screen(pilot, topics=["test-topic"])
        (tmp_path / "x.json").write_text('{"partitions": []}')
        fill(screen, file=str(tmp_path / "x.json"))
        await pilot.press("i")
        await pilot.pause()
        assert '"version" is missing' in text_of(app, "#reassign-message")
        fill(screen, file=str(tmp_path / "missing.json"))
        await pilot.press("i")
        await pilot.pause()
        assert "could not read" in text_of(app, "#reassign-message")
        assert screen.plan is None


async def test_progress_until_done() -> None:
    """After execute, the poller reads progress every poll: bytes left, rate, ETA; then done."""
    fake = FakeReassign()
    app = reassign_app(fake)
    async with app.run_test(size=WIDE) as pilot:
        screen = await propose(pilot, ["audit-log"], brokers="2,3")
        screen.timer, screen.poll_s = Timer(2.0), 0.05
        fake.moving, fake.hold_after = True, 2  # the second reading stays on screen
        await pilot.press("ctrl+s")
        await answer(pilot, "audit-log")
        await wait_for(pilot, lambda: "ETA" in text_of(app, "#reassign-status"))
        status = text_of(app, "#reassign-status")
        assert "reassigning 1 of 1 partition: 7.0 MiB left · 512.0 KiB/s · ETA" in status, (
            status  # 3 of 10 MiB copied after the two readings, 1 MiB more per 2 s reading
        )
        state = str(screen.table.get_row("audit-log/0")[7])
        assert state.startswith("reassigning: ") and "ETA" in state
        fake.moving = False
        fake.go_on.set()
        await wait_for(pilot, lambda: "done" in text_of(app, "#reassign-status"))
        await wait_group(pilot, "reassign-poll")
        polls = len(fake.called("ongoing"))
        await pilot.pause(0.2)
        assert len(fake.called("ongoing")) == polls  # it stopped once done


async def test_read_only_refuses_execute() -> None:
    """Read-only: ctrl+s says why, asks nothing, and the client is never called to execute."""
    fake = FakeReassign()
    app = reassign_app(fake, read_only=True)
    async with app.run_test(size=WIDE) as pilot:
        screen = await propose(pilot, ["audit-log"], brokers="2,3")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is screen
        said = text_of(app, "#reassign-message")
        assert said == "read-only mode (--read-only): refusing to reassign 1 partition"
        await pilot.press("c")
        await pilot.pause()
        assert app.screen is screen
        assert "refusing to cancel the reassignment of" in text_of(app, "#reassign-message")
        assert not fake.called("execute") and not fake.called("cancel")


async def test_execute_asks_for_the_word() -> None:
    """ctrl+s asks for the topic's name; a wrong word is refused, the right one executes what
    changes, with the throttle."""
    fake = FakeReassign()
    app = reassign_app(fake)
    async with app.run_test(size=WIDE) as pilot:
        await propose(pilot, ["audit-log"], brokers="2,3", throttle="10M")
        await pilot.press("ctrl+s")
        await pilot.pause()
        await answer(pilot, "audit")
        assert isinstance(app.screen, AskText)
        assert "'audit' is not 'audit-log'" in text_of(app, "#ask-error")
        assert not fake.called("execute")
        await answer(pilot, "audit-log")
        await wait_group(pilot, "reassign-command")
        assert fake.called("execute") == [([("audit-log", 0, (2,))], 10_000_000)]
        assert "started moving 1 of 1 partition" in text_of(app, "#reassign-message")


async def test_execute_refuses_an_invalid_plan() -> None:
    """A plan that does not fit is refused by the command layer with every problem; nothing
    is asked and nothing sent."""
    fake = FakeReassign()
    app = reassign_app(fake)
    async with app.run_test(size=WIDE) as pilot:
        await open_screen(pilot, topics=["test-topic"])
        await pilot.press("e")
        await answer(pilot, "1,2")  # the editor takes it; the plan does not fit the topic
        await pilot.press("ctrl+s")
        await wait_group(pilot, "reassign-command")
        said = text_of(app, "#reassign-message")
        assert "the plan was refused, nothing was sent" in said and "replication factor" in said
        assert not fake.called("execute")


def moving_snapshot() -> ClusterSnapshot:
    """healthy, with audit-log/0 being moved from broker 1 to broker 2 (as FakeReassign's
    `moving` lists it): ZooKeeper's replicas are both, adding 2, removing 1."""
    snap = load("healthy")
    parts = tuple(
        dataclasses.replace(p, replicas=(2, 1), adding=(2,), removing=(1,))
        if (p.topic, p.partition) == ("audit-log", 0)
        else p
        for p in snap.partitions
    )
    return dataclasses.replace(snap, partitions=parts)


async def open_on_a_running_move(pilot: Pilot[Any], fake: FakeReassign) -> ReassignScreen:
    """A reassignment of audit-log/0 that this screen did not start (the CLI, Kafka's tool, or
    this console before a restart) is running; the screen opens on audit-log."""
    fake.moving = True
    app = pilot.app
    assert isinstance(app, KConsoleApp)
    feed(app, moving_snapshot())
    await pilot.pause()
    app.push_screen(ReassignScreen(topics=["audit-log"]))
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, ReassignScreen)
    await wait_group(pilot, "reassign-sizes")
    return screen


async def test_a_running_move_is_followed_whoever_started_it() -> None:
    """No plan here: the screen still reads the move's progress (bytes left, rate, ETA), shows
    the throttle set on the brokers, and g leaves the moving partition out of a proposal."""
    fake = FakeReassign(throttles={"broker:2": {"follower.replication.throttled.rate": "2000000"}})
    app = reassign_app(fake)
    async with app.run_test(size=WIDE) as pilot:
        screen = await open_on_a_running_move(pilot, fake)
        assert screen.following == {("audit-log", 0)}
        await wait_for(
            pilot, lambda: screen.progress is not None and screen.progress.rate is not None
        )
        state = str(screen.table.get_row("audit-log/0")[-1])
        assert state.startswith("reassigning: ") and "left" in state and "/s" in state, state
        assert screen.query_one("#reassign-throttle", Input).value == "2000000"
        fill(screen, brokers="1,2,3")
        await pilot.press("g")
        await pilot.pause()
        said = text_of(app, "#reassign-message")
        assert "left out 1 partition being reassigned" in said, said
        assert screen.plan is not None and ("audit-log", 0) not in {
            m.key for m in screen.plan.moves
        }
        fake.go_on.set()


async def test_cancel_a_move_this_screen_did_not_start() -> None:
    """c asks for 'cancel', then cancels what is running here through the command layer, with
    no plan (the move was started elsewhere, or before the console restarted)."""
    fake = FakeReassign()
    app = reassign_app(fake)
    async with app.run_test(size=WIDE) as pilot:
        await open_on_a_running_move(pilot, fake)
        await pilot.press("c")
        await answer(pilot, "cancel")
        await wait_group(pilot, "reassign-command")
        assert fake.called("cancel") == [[("audit-log", 0)]]
        assert "cancelled the reassignment of 1 of 1 partition" in text_of(app, "#reassign-message")


async def test_cancel_with_nothing_running_says_so() -> None:
    fake = FakeReassign()
    app = reassign_app(fake)
    async with app.run_test(size=WIDE) as pilot:
        await propose(pilot, ["audit-log"], brokers="2,3")
        await pilot.press("c")
        await pilot.pause()
        assert "nothing shown here is being reassigned" in text_of(app, "#reassign-message")
        assert not fake.called("cancel")


async def test_edit_replicas() -> None:
    """e opens the selected partition's replicas; bad text says why and changes nothing."""
    app = reassign_app(FakeReassign())
    async with app.run_test(size=WIDE) as pilot:
        screen = await open_screen(pilot, topics=["test-topic"])
        screen.table.move_cursor(row=screen.table.get_row_index("test-topic/1"))
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, AskText)
        assert app.screen.query_one(Input).value == "1,3,2"
        await answer(pilot, "1,x")
        assert "not broker ids: 'x'" in text_of(app, "#ask-error")
        await pilot.press("backspace")  # typing again: the refusal was about the old text
        assert text_of(app, "#ask-error") == ""
        await answer(pilot, "9,9,x")  # every problem at once, the unknown broker too
        said = text_of(app, "#ask-error")
        assert "'x'" in said and "listed twice: 9" in said and "no such broker: 9" in said
        await answer(pilot, "2,2,1")
        assert "listed twice: 2" in text_of(app, "#ask-error")
        assert screen.plan is None
        await answer(pilot, "2,3,1")
        assert app.screen is screen and screen.plan is not None
        assert screen.plan.move("test-topic", 1) == Move("test-topic", 1, (2, 3, 1))
        assert len(screen.plan.moves) == 4  # the rest stay as they are
        assert [str(c) for c in screen.table.get_row("test-topic/1")][2:6] == [
            "2,3,1", "—", "—", "1 → 2",
        ]  # fmt: skip


async def test_export_writes_plan_and_rollback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """x writes the plan and its rollback (the assignment now) where the bar says, or under
    <state dir>/plans; Plan.from_json reads both back."""
    monkeypatch.setenv("KCONSOLE_STATE_DIR", str(tmp_path / "state"))
    app = reassign_app(FakeReassign())
    async with app.run_test(size=WIDE) as pilot:
        screen = await propose(pilot, ["test-topic"], brokers="1,2", rf="2")
        await pilot.press("x")
        await pilot.pause()
        plan_file = rr.default_plan_path(tmp_path / "state", load("healthy").taken_at)
        written = sorted(p.name for p in (tmp_path / "state" / "plans").iterdir())
        assert written == [plan_file.name, rr.rollback_path(plan_file).name]
        assert Plan.from_json(plan_file.read_text()) == screen.plan
        rollback = Plan.from_json(rr.rollback_path(plan_file).read_text())
        assert rollback == Plan.current(load("healthy"), [(m.topic, m.partition)
                                                          for m in screen.plan.moves])  # fmt: skip
        assert screen.query_one("#reassign-file", Input).value == str(plan_file)
        # Where the bar says, and read back by i.
        target = tmp_path / "mine" / "move.json"
        fill(screen, file=str(target))
        await pilot.press("x")
        await pilot.pause()
        assert Plan.from_json(target.read_text()) == screen.plan
        assert (tmp_path / "mine" / "move.rollback.json").exists()
        await pilot.press("i")
        await pilot.pause()
        assert "imported 4 partitions" in text_of(app, "#reassign-message")


async def verify_in_place(pilot: Pilot[Any]) -> ReassignScreen:
    """Open the screen, make test-topic/0's plan its current replicas (in place, in sync: the
    move is complete) and verify it; wait for the verification."""
    screen = await open_screen(pilot, topics=["test-topic"])
    screen.table.move_cursor(row=0)
    await pilot.press("e")
    await answer(pilot, "3,2,1")  # the current replicas: nothing to move, complete
    await pilot.press("v")
    await wait_group(pilot, "reassign-command")
    return screen


async def test_verify_removes_throttles() -> None:
    """v on a plan that is in place and in sync removes the throttles (through the door)."""
    fake = FakeReassign(throttles={"broker:1": {"leader.replication.throttled.rate": "100"}})
    app = reassign_app(fake)
    async with app.run_test(size=WIDE) as pilot:
        screen = await verify_in_place(pilot)
        assert fake.called("remove_throttles") == [(["test-topic"], [1, 2, 3])]
        assert "removed the throttles of broker:1" in text_of(app, "#reassign-message")
        # Not in place: says which, and removes nothing.
        screen.table.move_cursor(row=1)
        await pilot.press("e")
        await answer(pilot, "2,3,1")
        await pilot.press("v")
        await pilot.pause()
        assert "not complete: 1 of 4 partitions" in text_of(app, "#reassign-message")
        assert len(fake.called("remove_throttles")) == 1


async def test_verify_says_when_a_throttle_stays() -> None:
    """The door reads the throttles back after removing them: one that stays is said, not
    reported removed."""
    fake = FakeReassign(throttles={"broker:1": {"x": "1"}, "broker:2": {"x": "1"}})
    fake.stuck = {"broker:2"}
    app = reassign_app(fake)
    async with app.run_test(size=WIDE) as pilot:
        await verify_in_place(pilot)
        said = text_of(app, "#reassign-message")
        assert "the throttles stay: throttles remain on broker:2" in said, said
        assert "removed the throttles" not in said


async def test_verify_read_only_keeps_throttles() -> None:
    """Read-only: verify still reports, the throttles' removal is refused with the reason."""
    fake = FakeReassign(throttles={"topic:test-topic": {"x": "1"}})
    app = reassign_app(fake, read_only=True)
    async with app.run_test(size=WIDE) as pilot:
        await verify_in_place(pilot)
        said = text_of(app, "#reassign-message")
        assert "complete" in said and "read-only mode (--read-only)" in said
        assert not fake.called("remove_throttles")


async def test_drain() -> None:
    """Opened to drain a broker: g proposes moving every replica off it."""
    app = reassign_app(FakeReassign())
    async with app.run_test(size=WIDE) as pilot:
        screen = await open_screen(pilot, "healthy", drain=3)
        assert screen.query_one("#reassign-brokers", Input).value == "1,2"
        await pilot.pause()
        # D opens on the drain's proposal, here the reason there is none (no g pressed)
        assert "cannot drain broker 3" in text_of(app, "#reassign-message")
        await pilot.press("g")
        await pilot.pause()
        # Three brokers, RF 3: there is nowhere to go, and the screen says why.
        assert "cannot drain broker 3" in text_of(app, "#reassign-message")
        assert screen.plan is None


async def test_enter_in_the_throttle_field_proposes() -> None:
    """Every field of the bar proposes on enter (the throttle one did not)."""
    app = reassign_app(FakeReassign())
    async with app.run_test(size=WIDE) as pilot:
        screen = await open_screen(pilot, topics=["audit-log"])
        fill(screen, brokers="2,3", throttle="50M")
        screen.query_one("#reassign-throttle", Input).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert screen.plan is not None and screen.plan.moves
        assert "proposal over brokers 2,3" in text_of(app, "#reassign-message")


async def test_a_throttle_that_is_not_one_is_said_at_once() -> None:
    """'1,2,4' is not 124 B/s: the field says so under the table as it is typed."""
    app = reassign_app(FakeReassign())
    async with app.run_test(size=WIDE) as pilot:
        screen = await propose(pilot, ["audit-log"], brokers="2,3")
        fill(screen, throttle="1,2,4")
        await pilot.pause()
        said = text_of(app, "#reassign-status")
        assert "throttle must be one number of bytes/s" in said and "'1,2,4'" in said, said
        fill(screen, throttle="50,000,000")
        await pilot.pause()
        assert "throttle 50,000,000 B/s" in text_of(app, "#reassign-status")


def test_parsing() -> None:
    """The bar's fields, read strictly."""
    assert fields.parse_targets("a, b/2  c") == ["a", ("b", 2), "c"]
    assert fields.parse_throttle("") is None
    assert fields.parse_throttle("50M") == 50_000_000
    assert fields.parse_throttle("1.5 kB/s") == 1500
    assert fields.parse_rf(" ") is None and fields.parse_rf("2") == 2
    assert fields.parse_replicas("3, 1 2") == (3, 1, 2)
    for bad, fn in (("a/b", fields.parse_targets), ("fast", fields.parse_throttle),
                    ("0", fields.parse_rf), ("", fields.parse_replicas)):  # fmt: skip
        with pytest.raises(Exception, match=r"."):
            fn(bad)
