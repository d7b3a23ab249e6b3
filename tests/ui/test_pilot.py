"""The console driven by keys, with hand-built snapshots (tests/ui/builders.py)."""

from __future__ import annotations

import dataclasses
import threading
import time

from textual.command import CommandList, CommandPalette
from textual.dom import DOMNode
from textual.pilot import Pilot

from kconsole.commands import Commands
from kconsole.models import ClusterSnapshot, Controller, Group, GroupPartition, Partition, Topic
from kconsole.timeline import Event, EventKind
from kconsole.ui.app import MAX_EVENTS, KConsoleApp
from kconsole.ui.messages import SnapshotUpdated
from kconsole.ui.palette import ConsoleCommands
from kconsole.ui.screens.actions import BrokerChooser, ConfirmBrokerAction
from kconsole.ui.screens.group import GroupScreen
from kconsole.ui.screens.help import HelpScreen, bindings_of, key_sections
from kconsole.ui.screens.main import FilterInput, MainScreen
from kconsole.ui.screens.timeline import TimelineScreen
from kconsole.ui.widgets.panes import Pane
from kconsole.ui.widgets.table import KeyedTable
from kconsole.ui.widgets.tables import BrokersTable, GroupsTable, PartitionsTable
from tests import tables
from tests.ui import builders as B
from tests.ui.conftest import Clock, FakeControl, FakeObserver, feed, new_app
from tests.ui.pilots import wait_for_screen

SIZE = (120, 40)

# What a user types into the palette: each finds at least one command on the partitions pane.
WORDS = (
    "stop", "kill", "pause", "start", "restart", "drain", "elect", "unclean", "reassign",
    "produce", "tail", "jobs", "drill", "timeline", "controller", "leader", "filter",
    "unhealthy", "internal", "sort", "refresh", "help", "lag", "netsplit", "heal",
)  # fmt: skip


async def palette_titles(pilot: Pilot[None], query: str, timeout: float = 10.0) -> list[str]:
    """Open the command palette, type `query`, and return the titles it lists, best first."""
    await pilot.press("ctrl+p")
    await wait_for_screen(pilot, CommandPalette)
    await pilot.press(*query)
    deadline = time.monotonic() + timeout
    while True:
        await pilot.pause(0.05)
        options = pilot.app.screen.query_one(CommandList).options
        if options or time.monotonic() > deadline:
            break
    return [str(o.prompt).split("\n")[0] for o in options]


def table(app: KConsoleApp, table_id: str) -> tables.Table:
    return tables.table(app.screen, table_id)


def visible_topics(app: KConsoleApp) -> set[str]:
    return {key.split("/")[0] for key in table(app, "partitions").row_keys}


def with_topic(snap: ClusterSnapshot, name: str, count: int) -> ClusterSnapshot:
    extra = tuple(Partition(name, p, 2, (2, 3, 1), (2, 3, 1), 0) for p in range(count))
    return dataclasses.replace(
        snap,
        partitions=snap.partitions + extra,
        topics=(*snap.topics, Topic(name, min_isr=2)),
    )


class TestObserver:
    """The app starts, refreshes and stops its observer, and takes snapshots from its thread."""

    async def test_start_update_refresh_stop(self) -> None:
        observer = FakeObserver()
        app = new_app(observer)
        async with app.run_test(size=SIZE) as pilot:
            assert observer.on_update is not None
            callback = observer.on_update
            worker = threading.Thread(target=lambda: callback(B.healthy(), ()))
            worker.start()
            worker.join()
            await pilot.pause()
            assert app.snapshot == B.healthy()
            assert table(app, "brokers").row_count == 3
            await pilot.press("r")
            assert observer.refreshes == 1
        assert observer.stopped

    async def test_refresh_disabled_without_observer(self, app: KConsoleApp) -> None:
        async with app.run_test(size=SIZE):
            assert app.check_action("refresh", ()) is None

    async def test_queued_snapshots_keep_every_event(self) -> None:
        e1 = Event(B.T0, EventKind.BROKER_LEFT, "broker 1 left the cluster", 1)
        e2 = Event(B.T0 + 1, EventKind.BROKER_JOINED, "broker 1 joined", 1)
        older, newer = SnapshotUpdated(B.healthy(), (e1,)), SnapshotUpdated(B.healthy(), (e2,))
        assert older.can_replace(newer)
        assert newer.events == (e1, e2)


class TestPartitionFilters:
    """/ filter, u unhealthy-only and i internal toggles change which partitions show."""

    async def test_filter_narrows_and_escape_restores(self, app: KConsoleApp) -> None:
        async with app.run_test(size=SIZE) as pilot:
            feed(app, with_topic(B.healthy(), "orders", 3))
            await pilot.pause()
            assert table(app, "partitions").row_count == 7
            await pilot.press("slash")
            assert isinstance(app.focused, FilterInput)
            await pilot.press("o", "r", "d")
            assert visible_topics(app) == {"orders"}
            assert table(app, "partitions").row_count == 3
            await pilot.press("escape")
            assert table(app, "partitions").row_count == 7
            assert app.focused is table(app, "partitions")
            assert not app.screen.query_one(FilterInput).display

    async def test_enter_keeps_filter_and_escape_on_table_clears_it(self, app: KConsoleApp) -> None:
        async with app.run_test(size=SIZE) as pilot:
            feed(app, with_topic(B.healthy(), "orders", 3))
            await pilot.pause()
            await pilot.press("slash", "t", "e", "s", "t", "enter")
            assert app.focused is table(app, "partitions")
            assert visible_topics(app) == {"test-topic"}
            await pilot.press("escape")
            assert table(app, "partitions").row_count == 7

    async def test_unhealthy_only(self, app: KConsoleApp) -> None:
        snap = B.offline_partition()
        async with app.run_test(size=SIZE) as pilot:
            feed(app, snap)
            await pilot.pause()
            shown = [p for p in snap.partitions if not snap.is_internal(p.topic)]
            unhealthy = [p for p in shown if snap.unhealthy(p)]
            assert 0 < len(unhealthy) < len(shown)
            assert table(app, "partitions").row_count == len(shown)
            await pilot.press("u")
            assert table(app, "partitions").row_count == len(unhealthy)
            await pilot.press("u")
            assert table(app, "partitions").row_count == len(shown)

    async def test_internal_topics_toggle(self, app: KConsoleApp) -> None:
        async with app.run_test(size=SIZE) as pilot:
            feed(app, B.healthy())
            await pilot.pause()
            assert "__consumer_offsets" not in visible_topics(app)
            await pilot.press("i")
            assert "__consumer_offsets" in visible_topics(app)
            assert table(app, "partitions").row_count == 14
            await pilot.press("i")
            assert table(app, "partitions").row_count == 4

    async def test_sort_cycles_and_reverses(self, app: KConsoleApp) -> None:
        async with app.run_test(size=SIZE) as pilot:
            feed(app, B.healthy())
            await pilot.pause()
            parts = app.screen.query_one(PartitionsTable)
            by_topic = parts.row_keys
            assert by_topic == [f"test-topic/{p}" for p in range(4)]
            await pilot.press("o")  # topic -> partition: same order for one topic
            await pilot.press("o")  # -> leader
            assert parts.view.sort == "leader"
            assert parts.row_keys == sorted(by_topic, key=by_leader)
            await pilot.press("O")
            assert parts.row_keys == sorted(by_topic, key=by_leader, reverse=True)

    async def test_header_click_sorts(self, app: KConsoleApp) -> None:
        async with app.run_test(size=SIZE) as pilot:
            feed(app, B.healthy())
            await pilot.pause()
            parts = app.screen.query_one(PartitionsTable)
            # "topic" is 10 wide plus 2 padding: x=13 on the header row is the "part" header.
            assert await pilot.click(PartitionsTable, offset=(13, 0))
            await pilot.pause()
            assert parts.view.sort == "partition" and not parts.view.reverse
            assert await pilot.click(PartitionsTable, offset=(13, 0))
            await pilot.pause()
            assert parts.view.reverse
            assert parts.row_keys[0] == "test-topic/3"


def by_leader(key: str) -> tuple[int, str]:
    p = B.healthy().partition(key.split("/")[0], int(key.split("/")[1]))
    assert p is not None
    return (p.leader, key)


class TestInPlaceUpdates:
    """Rows change by key: the cursor stays on its row, vanished rows go."""

    async def test_cursor_stays_on_its_key(self, app: KConsoleApp) -> None:
        async with app.run_test(size=SIZE) as pilot:
            feed(app, B.healthy())
            await pilot.pause()
            parts = table(app, "partitions")
            parts.move_cursor(row=2)
            assert parts.cursor_key == "test-topic/2"
            # A new topic sorts above it and the rows around it change.
            feed(app, with_topic(B.broker_down(), "aardvark", 3))
            await pilot.pause()
            assert parts.cursor_key == "test-topic/2"
            assert parts.cursor_row == 5
            assert parts.get_cell("test-topic/0", "leader").plain == "2"

    async def test_vanished_partition_is_removed(self, app: KConsoleApp) -> None:
        async with app.run_test(size=SIZE) as pilot:
            feed(app, with_topic(B.healthy(), "orders", 3))
            await pilot.pause()
            assert "orders/2" in table(app, "partitions").row_keys
            feed(app, with_topic(B.healthy(), "orders", 2))
            await pilot.pause()
            assert "orders/2" not in table(app, "partitions").row_keys
            assert table(app, "partitions").row_count == 6

    async def test_events_newest_first_and_capped(self, app: KConsoleApp) -> None:
        async with app.run_test(size=SIZE) as pilot:
            for i in range(MAX_EVENTS + 20):
                event = Event(B.T0 + i, EventKind.ACTION, f"action {i}")
                app.apply_snapshot(B.healthy(B.T0 + i), (event,))
            await pilot.pause()
            events = table(app, "events")
            assert events.row_count == MAX_EVENTS
            first = events.get_cell(events.row_keys[0], "text").plain
            assert first == f"action {MAX_EVENTS + 19}"
            assert events.cursor_row == 0


class TestNavigation:
    """Tab walks the panes; digits jump to one."""

    async def test_tab_cycles_panes(self, app: KConsoleApp) -> None:
        async with app.run_test(size=SIZE) as pilot:
            feed(app, B.group_lag())
            await pilot.pause()
            seen = [app.focused.id if app.focused else None]
            for _ in range(4):
                await pilot.press("tab")
                seen.append(app.focused.id if app.focused else None)
            assert seen == ["partitions", "groups", "events", "brokers", "partitions"]
            await pilot.press("shift+tab")
            assert app.focused is not None and app.focused.id == "brokers"

    async def test_digits_focus_panes(self, app: KConsoleApp) -> None:
        async with app.run_test(size=SIZE) as pilot:
            for key, pane in (("1", "brokers"), ("3", "groups"), ("4", "events")):
                await pilot.press(key)
                assert app.focused is not None and app.focused.id == pane


class TestGroupScreen:
    """Enter on a group opens its screen, which follows new snapshots; Escape closes it."""

    async def test_open_update_close(self, app: KConsoleApp) -> None:
        async with app.run_test(size=SIZE) as pilot:
            feed(app, B.group_lag(scale=0.5))
            await pilot.pause()
            await pilot.press("3")
            groups = table(app, "groups")
            groups.move_cursor(row=groups.get_row_index("orders-verifier"))
            await pilot.press("enter")
            assert isinstance(app.screen, GroupScreen)
            rows = app.screen.query_one("#group-partitions", KeyedTable)
            assert rows.get_cell("test-topic/0", "lag").plain == "620"
            feed(app, B.group_lag(B.T0 + 200, scale=1.0))
            await pilot.pause()
            assert rows.get_cell("test-topic/0", "lag").plain == "1,240"
            assert list(app.lag_history["orders-verifier"]) == [860, 1722]
            await pilot.press("escape")
            assert isinstance(app.screen, MainScreen)

    async def test_vanished_group_keeps_last_rows(self, app: KConsoleApp) -> None:
        async with app.run_test(size=SIZE) as pilot:
            feed(app, B.group_lag())
            await pilot.pause()
            app.push_screen(GroupScreen("orders-verifier"))
            await pilot.pause()
            feed(app, dataclasses.replace(B.group_lag(), groups=()))
            await pilot.pause()
            screen = app.screen
            assert screen.query_one("#group-partitions", KeyedTable).row_count == 4
            summary = screen.query_one("#group-summary").render()
            assert "no longer reported" in str(summary)


def all_cluster_sources_down() -> ClusterSnapshot:
    snap = B.zk_unreachable()
    sources = tuple(
        dataclasses.replace(s, ok=False, error="timed out") if s.name.value == "admin" else s
        for s in snap.sources
    )
    return dataclasses.replace(snap, sources=sources)


class TestStaleMarkers:
    """A failed source marks its panes stale until it recovers."""

    async def test_marked_then_cleared(self, app: KConsoleApp) -> None:
        """ZooKeeper and the Admin API both failing: the cluster panes are STALE."""
        async with app.run_test(size=SIZE) as pilot:
            feed(app, all_cluster_sources_down())
            await pilot.pause()
            for pane_id in ("brokers-pane", "controller-pane", "partitions-pane"):
                pane = app.screen.query_one(f"#{pane_id}", Pane)
                assert pane.has_class("-stale")
                assert pane.border_subtitle is not None
                assert pane.border_subtitle.startswith("STALE 12s: ConnectionLoss")
            assert not app.screen.query_one("#groups-pane", Pane).has_class("-stale")
            feed(app, B.healthy(B.T0 + 130))
            await pilot.pause()
            for pane in app.screen.query(Pane):
                assert not pane.has_class("-stale")
                assert not pane.border_subtitle

    async def test_zookeeper_down_is_served_by_admin(self, app: KConsoleApp) -> None:
        """ZooKeeper down, Admin API fine: the panes say where the data comes from, no alarm."""
        async with app.run_test(size=SIZE) as pilot:
            feed(app, B.zk_unreachable())
            await pilot.pause()
            pane = app.screen.query_one("#partitions-pane", Pane)
            assert not pane.has_class("-stale")
            assert pane.border_subtitle is not None
            assert pane.border_subtitle.startswith("via Admin API · ZooKeeper down: ConnectionLoss")

    async def test_no_group_and_a_broker_down_is_degraded_not_stale(self, app: KConsoleApp) -> None:
        """A broker down and no group: the groups source answered from the live brokers, so
        the pane says degraded with the reason and its fresh age, never STALE (issue 35, 9)."""
        snap = B.broker_down()
        note = "broker 1 not asked for its groups (not up)"
        sources = tuple(
            dataclasses.replace(s, error=note) if s.name.value == "groups" else s
            for s in snap.sources
        )
        async with app.run_test(size=SIZE) as pilot:
            feed(app, dataclasses.replace(snap, groups=(), sources=sources))
            await pilot.pause()
            pane = app.screen.query_one("#groups-pane", Pane)
            assert not pane.has_class("-stale")
            assert pane.border_subtitle == f"degraded: {note}"

    async def test_admin_stands_in_for_missing_zookeeper(self, app: KConsoleApp) -> None:
        snap = B.healthy()
        admin_down = tuple(
            dataclasses.replace(s, ok=False, error="timed out")
            for s in snap.sources
            if s.name.value == "admin"
        )
        async with app.run_test(size=SIZE) as pilot:
            feed(app, dataclasses.replace(snap, sources=admin_down))
            await pilot.pause()
            assert app.screen.query_one("#brokers-pane", Pane).has_class("-stale")
            assert not app.screen.query_one("#groups-pane", Pane).has_class("-stale")

    async def test_age_grows_with_the_clock(self) -> None:
        clock = Clock()
        app = new_app(clock=clock)
        async with app.run_test(size=SIZE) as pilot:
            feed(app, all_cluster_sources_down())
            clock.t += 30
            app.now = clock()
            await pilot.pause()
            subtitle = app.screen.query_one("#partitions-pane", Pane).border_subtitle
            assert subtitle is not None and subtitle.startswith("STALE 42s")


class TestOddData:
    """Empty, partial and broken snapshots render without errors."""

    async def test_nothing_yet(self, app: KConsoleApp) -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("u", "i", "o", "tab", "enter")
            assert table(app, "partitions").row_count == 0

    async def test_empty_snapshot(self, app: KConsoleApp) -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            feed(app, ClusterSnapshot(taken_at=B.T0))
            await pilot.pause()
            await pilot.press("3", "enter", "question_mark")
            assert isinstance(app.screen, HelpScreen)
            assert all(t.row_count == 0 for t in app.query(KeyedTable))
            assert app.query_one(PartitionsTable).row_count == 0

    async def test_broken_cluster(self, app: KConsoleApp) -> None:
        snap = ClusterSnapshot(
            taken_at=B.T0,
            controller=Controller(None),
            partitions=(
                Partition("t", 0, -1, (), ()),
                Partition("t", 1, 7, (7,), (), 3, adding=(8,)),
            ),
            groups=(
                Group("g[1]", "Dead", 0),
                Group("g2", "Stable", 1, partitions=(GroupPartition("t", 0, None, None),)),
            ),
        )
        async with app.run_test(size=(80, 24)) as pilot:
            feed(app, snap)
            await pilot.pause()
            assert table(app, "partitions").get_cell("t/0", "leader").plain == "none"
            assert table(app, "groups").get_cell("g[1]", "lag").plain == "—"
            assert app.screen.query_one("#controller").has_class("-alert")
            await pilot.press("3", "enter")
            assert isinstance(app.screen, GroupScreen)


class TestKeysAreListed:
    """Help and the command palette list every binding."""

    async def test_help_lists_every_binding(self, app: KConsoleApp) -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("question_mark")
            assert isinstance(app.screen, HelpScreen)
            sections = dict(key_sections(app))
            owners: dict[str, type[DOMNode]] = {
                "Anywhere": KConsoleApp,
                "Main screen": MainScreen,
                "Brokers pane": BrokersTable,
                "Partitions": PartitionsTable,
                "Topic filter": FilterInput,
                "Consumer groups pane": GroupsTable,
                "Group screen": GroupScreen,
                "Broker action chooser (C, L)": BrokerChooser,
                "Confirmation": ConfirmBrokerAction,
                "Timeline": TimelineScreen,
                "This help": HelpScreen,
            }
            for section, owner in owners.items():
                listed = {k for keys, _ in sections[section] for k in keys.split(", ")}
                for b in bindings_of(owner):
                    assert app.get_key_display(b) in listed, (section, b.key)
            await pilot.press("escape")
            assert isinstance(app.screen, MainScreen)

    async def test_palette_finds_every_action_from_the_partitions_pane(self) -> None:
        """On the partitions pane the palette finds, by the words a user types, every action
        of the console (those of the other panes too), each saying what it acts on."""
        app = new_app(FakeObserver(), commands=Commands(FakeControl()))
        async with app.run_test(size=SIZE) as pilot:
            feed(app, B.group_lag())
            await pilot.pause()
            assert app.focused is not None and app.focused.id == "partitions"
            provider = ConsoleCommands(app.screen)
            found: dict[str, list[str]] = {}
            for word in WORDS:
                found[word] = [str(h.text) async for h in provider.search(word)]
                assert found[word], word
            # test-topic/0 is under the cursor, led by broker 2; broker 1 is the controller.
            assert {
                "Stop broker 2",
                "Stop broker 1 (the controller)",
                "Stop the controller (broker 1)",
                "Stop the leader of test-topic/0 (broker 2)",
            } <= set(found["stop"]), found["stop"]
            assert "Kill broker 3" in found["kill"]
            assert "Start broker 2" in found["restart"]  # by its words, not its title
            assert "Drain broker 2" in found["drain"]
            # The network fault has no key yet: the palette reaches it and its heal (issue 37).
            assert "Isolate broker 2" in found["netsplit"]  # by its words
            assert "Heal broker 2" in found["heal"]
            assert "Drill timeline" in found["drill"]
            assert "Open consumer group orders-verifier" in found["lag"]

    async def test_palette_puts_what_the_state_allows_first(self) -> None:
        """Broker 3 is down: "restart" and "start" list starting it before starting the up
        brokers 1 and 2 (listed first otherwise)."""
        app = new_app(FakeObserver(), commands=Commands(FakeControl()))
        async with app.run_test(size=SIZE) as pilot:
            feed(app, B.healthy(), B.offline_partition())
            await pilot.pause()
            provider = ConsoleCommands(app.screen)
            for query in ("restart", "start broker"):
                hits = [h async for h in provider.search(query)]
                ranked = [str(h.text) for h in sorted(hits, key=lambda h: -h.score)]
                assert ranked[0] == "Start broker 3", (query, ranked)

    async def test_palette_stop_goes_through_the_confirmation(self) -> None:
        """ctrl+p, "stop broker 2", enter: the same confirmation as the key (the command
        layer's typed id); nothing is stopped before it."""
        control = FakeControl()
        app = new_app(FakeObserver(), commands=Commands(control))
        async with app.run_test(size=SIZE) as pilot:
            feed(app, B.healthy())
            await pilot.pause()
            titles = await palette_titles(pilot, "stop broker 2")
            assert titles[0] == "Stop broker 2", titles
            await pilot.press("enter")
            await wait_for_screen(pilot, ConfirmBrokerAction)
            assert isinstance(app.screen, ConfirmBrokerAction)
            assert (app.screen.action.value, app.screen.broker_id) == ("stop", 2)
            assert control.calls == []

    async def test_palette_kill_is_refused_read_only(self) -> None:
        """Read-only: the palette still offers "Kill broker 3"; choosing it is refused by the
        command layer, which says why, and nothing is killed."""
        control = FakeControl()
        door = Commands(control, read_only=True, read_only_reason="--read-only")
        app = new_app(FakeObserver(), commands=door)
        async with app.run_test(size=SIZE) as pilot:
            feed(app, B.healthy())
            await pilot.pause()
            titles = await palette_titles(pilot, "kill broker 3")
            assert titles[0] == "Kill broker 3", titles
            await pilot.press("enter")
            await wait_for_screen(pilot, MainScreen)
            await pilot.pause()
            messages = [n.message for n in app._notifications]
            assert any("kill broker 3" in m and "read-only" in m for m in messages), messages
            assert control.calls == []
