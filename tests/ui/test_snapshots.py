"""What the console looks like, fed the recorded snapshots in tests/fixtures/snapshots."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot
from textual.widgets import Input

from kconsole.commands import Commands
from kconsole.models import ClusterSnapshot
from kconsole.ui.app import KConsoleApp
from kconsole.ui.screens.main import FilterInput
from kconsole.ui.widgets.table import KeyedTable
from tests.ui import builders as B
from tests.ui.conftest import (
    FakeControl,
    broker_down_whole,
    coordinator_moving,
    feed,
    feeding,
    keys_then,
    lag_series,
    load,
    new_app,
    run_fixture_drill,
    without_topic,
)
from tests.ui.pilots import SMALL, RunBefore, SnapCompare, confirm_dialog, console, controlled_app

WIDE = (160, 48)


def most_lagging(snap: ClusterSnapshot) -> str:
    return max(snap.groups, key=lambda g: g.lag or 0).group_id


def open_group(*snapshots: ClusterSnapshot) -> RunBefore:
    """Feed `snapshots`, then open the group lagging most in the last one."""

    async def run_before(pilot: Pilot[Any]) -> None:
        app = console(pilot)
        feed(app, *snapshots)
        await pilot.pause()
        groups = app.screen.query_one("#groups", KeyedTable)
        groups.focus()
        groups.move_cursor(row=groups.get_row_index(most_lagging(snapshots[-1])))
        await pilot.press("enter")
        await pilot.pause()

    return run_before


class TestClusterStates:
    """The main screen in each state a drill produces."""

    def test_healthy_wide(self, snap_compare: SnapCompare) -> None:
        """A healthy cluster on a wide terminal."""
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=feeding(load("healthy")))

    def test_healthy_80x24(self, snap_compare: SnapCompare) -> None:
        """A healthy cluster on an 80x24 terminal."""
        assert snap_compare(new_app(), terminal_size=SMALL, run_before=feeding(load("healthy")))

    def test_broker_down_wide(self, snap_compare: SnapCompare) -> None:
        """A broker went down: under-replicated partitions, a moved controller, the events."""
        snaps = without_topic(load("healthy"), "audit-log"), load("broker_down")
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=feeding(*snaps))

    def test_broker_down_80x24(self, snap_compare: SnapCompare) -> None:
        """A broker went down, on an 80x24 terminal."""
        snaps = without_topic(load("healthy"), "audit-log"), load("broker_down")
        assert snap_compare(new_app(), terminal_size=SMALL, run_before=feeding(*snaps))

    def test_offline_partition(self, snap_compare: SnapCompare) -> None:
        """A partition went offline (leader none), shown first with the unhealthy-only toggle."""
        snaps = load("healthy"), load("offline_partition")
        run = keys_then(snaps, "u")
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=run)

    def test_no_controller(self, snap_compare: SnapCompare) -> None:
        """No active controller: the controller pane turns red."""
        snaps = load("healthy"), broker_down_whole(), load("no_controller")
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=feeding(*snaps))

    def test_zookeeper_unreachable(self, snap_compare: SnapCompare) -> None:
        """ZooKeeper unreachable: its panes and the header say STALE with the error."""
        snaps = load("healthy"), load("zk_unreachable")
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=feeding(*snaps))

    def test_zookeeper_unreachable_80x24(self, snap_compare: SnapCompare) -> None:
        """ZooKeeper unreachable, on an 80x24 terminal."""
        snaps = load("healthy"), load("zk_unreachable")
        assert snap_compare(new_app(), terminal_size=SMALL, run_before=feeding(*snaps))


class TestPartitionViews:
    """Filters and toggles on the partitions pane."""

    def test_filter_with_internal_topics(self, snap_compare: SnapCompare) -> None:
        """Internal topics shown, then filtered to topics containing 'offsets'."""

        async def run_before(pilot: Pilot[Any]) -> None:
            assert isinstance(pilot.app, KConsoleApp)
            feed(pilot.app, load("healthy"))
            await pilot.pause()
            pilot.app.screen.query_one(FilterInput).cursor_blink = False
            await pilot.press("i", "slash", *"offsets", "enter")

        assert snap_compare(new_app(), terminal_size=(120, 36), run_before=run_before)


class TestConsumerGroups:
    """Consumer groups with lag, and the group screen."""

    def test_group_lag(self, snap_compare: SnapCompare) -> None:
        """Groups with lag on the main screen."""
        snaps = load("healthy"), load("group_lag")
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=feeding(*snaps))

    def test_group_lag_80x24(self, snap_compare: SnapCompare) -> None:
        """80x24 after a failover: every group's (elided) name, state and lag, and whole
        events, wrapped under the time."""
        snaps = B.healthy(), B.broker_down(), B.group_lag()
        assert snap_compare(new_app(), terminal_size=SMALL, run_before=feeding(*snaps))

    def test_brokers_pane_keys_80x24(self, snap_compare: SnapCompare) -> None:
        """80x24, brokers pane: its stop / kill / pause / start / drain keys whole, "? more"."""
        app = new_app(commands=Commands(FakeControl()))
        assert snap_compare(app, terminal_size=SMALL, run_before=keys_then([load("healthy")], "1"))

    def test_group_screen_wide(self, snap_compare: SnapCompare) -> None:
        """The group screen: offsets, lag and the lag trend of the last snapshots."""
        lagging = load("group_lag")
        run = open_group(*lag_series(lagging), lagging)
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=run)

    def test_group_screen_80x24(self, snap_compare: SnapCompare) -> None:
        """The group screen on an 80x24 terminal."""
        lagging = load("group_lag")
        run = open_group(*lag_series(lagging), lagging)
        assert snap_compare(new_app(), terminal_size=SMALL, run_before=run)

    def test_coordinator_moving(self, snap_compare: SnapCompare) -> None:
        """During an outage: carried figures with their age, unknown ones as "?", never 0, and
        the groups source "degraded" rather than stale."""
        lagging = load("group_lag")
        snaps = load("healthy"), lagging, coordinator_moving(lagging)
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=feeding(*snaps))

    def test_group_screen_coordinator_moving(self, snap_compare: SnapCompare) -> None:
        """The group screen during that outage: per partition, which figure is how old."""
        lagging = load("group_lag")
        run = open_group(*lag_series(lagging), lagging, coordinator_moving(lagging))
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=run)


class TestHelp:
    """The key reference."""

    def test_help_wide(self, snap_compare: SnapCompare) -> None:
        """Help on a wide terminal: every key, generated from the bindings."""
        run = keys_then([load("healthy")], "question_mark")
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=run)

    def test_help_80x24(self, snap_compare: SnapCompare) -> None:
        """Help on an 80x24 terminal (scrolls)."""
        run = keys_then([load("healthy")], "question_mark")
        assert snap_compare(new_app(), terminal_size=SMALL, run_before=run)


def drill_app() -> KConsoleApp:
    """The console with a (fake) broker control behind its command layer."""
    app, _ = controlled_app()
    return app


def confirm_stop(*typed: str) -> RunBefore:
    """Healthy cluster; s on broker 2 (the controller); then type `typed`."""

    async def run_before(pilot: Pilot[Any]) -> None:
        feed(console(pilot), load("healthy"))
        await pilot.pause()
        dialog = await confirm_dialog(pilot, 2, "s")
        dialog.query_one(Input).cursor_blink = False
        await pilot.press(*typed)
        await pilot.pause()

    return run_before


async def open_timeline(pilot: Pilot[Any]) -> None:
    """Run the recorded stop-and-start drill, then open the timeline."""
    await run_fixture_drill(pilot)
    await pilot.press("T")
    console(pilot).clear_notifications()
    await pilot.pause()


class TestDrills:
    """Broker actions: the confirmation with its blast radius, and the drill timeline."""

    def test_confirm_stop_80x24(self, snap_compare: SnapCompare) -> None:
        """Stopping the controller: the blast radius, and the id to type."""
        assert snap_compare(drill_app(), terminal_size=SMALL, run_before=confirm_stop())

    def test_confirm_wrong_id_wide(self, snap_compare: SnapCompare) -> None:
        """A wrong id keeps the confirmation open and says so."""
        run = confirm_stop("3", "enter")
        assert snap_compare(drill_app(), terminal_size=WIDE, run_before=run)

    def test_chooser_80x24(self, snap_compare: SnapCompare) -> None:
        """C: what to do to the controller."""
        run = keys_then([load("healthy")], "C")
        assert snap_compare(drill_app(), terminal_size=SMALL, run_before=run)

    def test_network_chooser_80x24(self, snap_compare: SnapCompare) -> None:
        """n on the brokers pane: the network faults of the broker under the cursor, the
        slow fault's rate moved on once with r."""
        run = keys_then([load("healthy")], "1", "n", "r")
        assert snap_compare(drill_app(), terminal_size=SMALL, run_before=run)

    def test_timeline_80x24(self, snap_compare: SnapCompare) -> None:
        """The timeline after stopping and starting the controller, on an 80x24 terminal."""
        assert snap_compare(drill_app(), terminal_size=SMALL, run_before=open_timeline)

    def test_timeline_wide(self, snap_compare: SnapCompare) -> None:
        """The timeline: chart, measurements next to predictions, and the events."""
        assert snap_compare(drill_app(), terminal_size=WIDE, run_before=open_timeline)
