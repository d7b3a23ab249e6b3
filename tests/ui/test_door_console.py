"""Read-only in the console: every mutating key reaches the command layer, which refuses it
before anything happens and logs the refusal (the CLI side is tests/unit/test_door.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input

from kconsole.commands import AuditLog, Commands
from kconsole.config import Settings
from kconsole.ui.app import KConsoleApp
from tests.ui import builders as B
from tests.ui.conftest import FakeControl, new_app, select_broker, wait_for_actions
from tests.ui.pilots import driving, open_produce, open_tail, send, tail_app, text_of, wait_for
from tests.ui.produce_fakes import ReplayCommands, deliveries

SIZE = (120, 36)

# read_topic_limits answers what the real cluster answered for test-topic.
pytestmark = pytest.mark.usefixtures("recorded_limits")


def refusals(log: AuditLog) -> list[tuple[str, str, str]]:
    return [(e["command"], e["target"], e["outcome"]) for e in log.entries()]


async def test_broker_keys_are_refused_and_logged(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    control = FakeControl()
    door = Commands(control, read_only=True, read_only_reason="--read-only", audit=log)
    app = new_app(commands=door)
    async with driving(app, B.healthy(), size=SIZE) as pilot:
        await select_broker(pilot, 2)
        assert " READ-ONLY " in text_of(app, "#header")  # compact or not, it is there
        await pilot.press("s", "k", "p", "t")
        await wait_for_actions(pilot)
        await pilot.pause()
        assert control.calls == []
        assert refusals(log) == [
            ("broker.stop", "broker 2", "refused"),
            ("broker.kill", "broker 2", "refused"),
            ("broker.pause", "broker 2", "refused"),
            ("broker.start", "broker 2", "refused"),
        ]
        said = [str(n.message) for n in app._notifications]
        assert any("read-only mode (--read-only): refusing to kill broker 2" in m for m in said)
        # The audit log names the cluster the console shows.
        assert {e["cluster_id"] for e in log.entries()} == {B.healthy().cluster_id}
        assert {e["origin"] for e in log.entries()} == {"console"}


async def test_produce_is_refused_before_the_form_is_read(tmp_path: Path) -> None:
    commands = ReplayCommands(*deliveries("small_send"), read_only=True)
    commands.audit = AuditLog(tmp_path / "audit.jsonl")
    app = new_app(commands=commands, settings=Settings())
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_produce(pilot)
        # The count is never even parsed.
        status = await send(pilot, screen, key="k", value="v", count="not a number")
        assert commands.calls == []
        assert "refusing to produce to test-topic" in status
        assert refusals(commands.audit) == [("produce", "test-topic", "refused")]


async def test_tail_with_a_group_never_joins(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    door = Commands(None, read_only=True, audit=log)
    app, made = tail_app(commands=door)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_tail(pilot)
        await wait_for(pilot, lambda: len(made) == 1)  # no group: reading is not refused
        screen.query_one("#tail-group", Input).value = "payments"
        screen.action_restart()
        await wait_for(pilot, lambda: bool(refusals(log)))
        await wait_for(pilot, lambda: "read-only mode" in text_of(app, "#tail-status"))
        assert len(made) == 1 and made[0].group is None  # nothing was made for the group
        assert refusals(log) == [("tail.group", "test-topic as group payments", "refused")]


async def test_job_start_is_refused_and_logged(tmp_path: Path) -> None:
    from kconsole.jobs.manager import JobManager

    log = AuditLog(tmp_path / "audit.jsonl")
    manager = JobManager(tmp_path / "state", Settings())
    app: KConsoleApp = new_app(
        commands=Commands(None, read_only=True, audit=log), settings=Settings(), jobs=manager
    )
    async with app.run_test(size=SIZE) as pilot:
        app.request_job_start("keyed_counts", {}, False)
        await wait_for(pilot, lambda: bool(refusals(log)))
        assert manager.runs() == []
        assert refusals(log) == [("job.start", "keyed_counts", "refused")]
