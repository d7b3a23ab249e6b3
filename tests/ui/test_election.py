"""Leader elections from the keyboard: E (preferred: this partition, its topic, or every one off
its preferred leader) and U (unclean, offline partitions only, loudly confirmed), through the
command layer, over recorded snapshots and a recording client."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from kconsole.cluster.reassign.client import ElectResult
from kconsole.commands import AuditLog, Commands
from kconsole.commands.reassign import ClientFactory
from kconsole.ui.app import KConsoleApp
from kconsole.ui.election_actions import ELECTIONS_GROUP
from kconsole.ui.screens.ask import AskText
from kconsole.ui.screens.elect import ElectScope
from tests.ui.conftest import load, new_app
from tests.ui.pilots import answer, notices, on_partition, press, wait_group
from tests.ui.test_reassign_screen import FakeReassign

SIZE = (140, 40)


class Electing(FakeReassign):
    def elect(self, kind: str, partitions: Any) -> list[ElectResult]:
        super().elect(kind, partitions)
        return [ElectResult(t, p, "elected", "") for t, p in partitions]


def election_app(tmp_path: Path, read_only: bool = False) -> tuple[KConsoleApp, Electing]:
    """The console electing through a recording client (also returned), auditing to
    tmp_path/audit.jsonl."""
    fake = Electing()
    door = Commands(None, read_only=read_only, read_only_reason="--read-only",
                    audit=AuditLog(tmp_path / "audit.jsonl"),
                    reassigner=cast(ClientFactory, fake))  # fmt: skip
    return new_app(commands=door), fake


async def test_preferred_election_of_one_partition(tmp_path: Path) -> None:
    app, fake = election_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await on_partition(pilot, "healthy", "test-topic/2", focus=True)
        await press(pilot, "E")
        assert isinstance(app.screen, ElectScope)
        await press(pilot, "p")
        assert isinstance(app.screen, AskText)
        await answer(pilot, "wrong")
        assert isinstance(app.screen, AskText)  # refused by the dialog: nothing sent
        assert fake.called("elect") == []
        await answer(pilot, "test-topic")
        await wait_group(pilot, ELECTIONS_GROUP)
        assert fake.called("elect") == [("preferred", [("test-topic", 2)])]
        assert any("1 elected, 0 not needed, 0 not possible" in s for s in notices(app))


async def test_every_partition_off_its_preferred_leader(tmp_path: Path) -> None:
    app, fake = election_app(tmp_path)
    snap = load("broker_down")
    off = sorted((p.topic, p.partition) for p in snap.partitions
                 if not p.on_preferred_leader and p.leader >= 0)  # fmt: skip
    assert off  # the recorded outage left leaders off their preferred replica
    async with app.run_test(size=SIZE) as pilot:
        await on_partition(pilot, "broker_down", "test-topic/0", focus=True)
        await press(pilot, "E", "a")
        await answer(pilot, "elect" if len({t for t, _ in off}) > 1 else off[0][0])
        await wait_group(pilot, ELECTIONS_GROUP)
        ((kind, parts),) = fake.called("elect")
        assert kind == "preferred" and sorted(parts) == off


async def test_unclean_only_for_an_offline_partition(tmp_path: Path) -> None:
    app, fake = election_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await on_partition(pilot, "offline_partition", "test-topic/0", focus=True)
        await press(pilot, "U")
        assert not isinstance(app.screen, AskText)
        assert any("only for an offline partition" in s for s in notices(app))
        await on_partition(pilot, "offline_partition", "audit-log/1", focus=True)
        await press(pilot, "U")
        assert isinstance(app.screen, AskText) and app.screen.danger
        await answer(pilot, "audit-log")
        assert fake.called("elect") == []
        await answer(pilot, "unclean")
        await wait_group(pilot, ELECTIONS_GROUP)
        assert fake.called("elect") == [("unclean", [("audit-log", 1)])]


async def test_read_only_refuses_before_asking(tmp_path: Path) -> None:
    app, fake = election_app(tmp_path, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await on_partition(pilot, "healthy", "test-topic/2", focus=True)
        await press(pilot, "E", "t")
        assert not isinstance(app.screen, AskText)
        assert fake.calls == []
        assert any("read-only mode (--read-only): refusing to elect" in s for s in notices(app))
        (entry,) = AuditLog(tmp_path / "audit.jsonl").entries()
        assert (entry["command"], entry["outcome"]) == ("elect.preferred", "refused")
