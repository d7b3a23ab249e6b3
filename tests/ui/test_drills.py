"""Broker actions and drills from the keyboard: confirmation with the blast radius, the command
layer's guards, who C and L target, the worker's outcome, the timeline and its export."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from textual.widgets import Input, Static

from kconsole.cluster.values import BrokerAction, NetLinks
from kconsole.commands import Commands
from kconsole.impact import blast_radius
from kconsole.models import BrokerState
from kconsole.timeline import EventKind
from kconsole.ui.app import KConsoleApp
from kconsole.ui.screens.actions import BrokerChooser, ConfirmBrokerAction, NetworkChooser
from kconsole.ui.screens.main import MainScreen
from kconsole.ui.screens.timeline import TimelineScreen
from kconsole.ui.widgets.table import KeyedTable
from kconsole.ui.widgets.tables import PartitionsTable
from tests.ui import builders as B
from tests.ui.conftest import (
    FakeControl,
    FakeObserver,
    RecordingObserver,
    new_app,
    run_fixture_drill,
    select_broker,
    wait_for_actions,
)
from tests.ui.pilots import (
    confirm_dialog,
    controlled_app,
    driving,
    impact,
    notices,
    rendered,
    screen_after,
    wait_for_screen,
)

SIZE = (120, 40)


def action_events(app: KConsoleApp) -> list[str]:
    """The actions on the timeline, oldest first."""
    return [le.event.text for le in app.timeline if le.event.kind is EventKind.ACTION]


class TestConfirmation:
    """s / k / p ask for the broker id, showing the blast radius; only the right id acts."""

    async def test_stop_shows_blast_radius(self) -> None:
        app, control = controlled_app()
        async with driving(app, B.healthy(), size=SIZE) as pilot:
            shown = impact(await confirm_dialog(pilot, 2, "s"))
            for line in blast_radius(B.healthy(), BrokerAction.STOP, 2).lines():
                assert f"• {line}" in shown
            assert isinstance(app.focused, Input)
            assert control.calls == []

    async def test_wrong_id_keeps_it_open(self) -> None:
        app, control = controlled_app()
        async with driving(app, B.healthy(), size=SIZE) as pilot:
            await select_broker(pilot, 2)
            await pilot.press("s", "3", "enter")
            assert isinstance(app.screen, ConfirmBrokerAction)
            error = str(app.screen.query_one("#confirm-error", Static).render())
            assert "'3' is not 2" in error
            assert app.screen.query_one(Input).value == ""
            await pilot.press("enter")  # nothing typed is no confirmation either
            assert isinstance(app.screen, ConfirmBrokerAction)
            await wait_for_actions(pilot)
            assert control.calls == []
            assert action_events(app) == []

    async def test_right_id_acts_once_and_notifies(self) -> None:
        observer = FakeObserver()
        app, control = controlled_app(observer=observer)
        async with driving(app, B.healthy(), size=SIZE) as pilot:
            await select_broker(pilot, 2)
            await pilot.press("s", "3", "enter", "2", "enter")
            await wait_for_actions(pilot)
            assert isinstance(app.screen, MainScreen)
            assert control.calls == [(BrokerAction.STOP, 2)]
            assert any("broker 2: stop done (fake)" in n for n in notices(app))
            assert action_events(app) == ["stop broker 2"]
            # Without observer.record the app logs the action itself, for the events pane too.
            event = app.events[0].event
            assert (event.kind, event.broker, event.new) == (EventKind.ACTION, 2, "stop")
            assert app.actions[0].before == B.healthy()
            assert app.actions[0].ok is True
            assert observer.refreshes == 1

    async def test_escape_cancels(self) -> None:
        app, control = controlled_app()
        async with driving(app, B.healthy(), size=SIZE) as pilot:
            await select_broker(pilot, 3)
            await pilot.press("k", "3", "escape")
            assert isinstance(app.screen, MainScreen)
            await wait_for_actions(pilot)
            assert control.calls == []
            assert action_events(app) == [] and app.actions == []

    async def test_kill_and_pause_are_confirmed(self) -> None:
        app, control = controlled_app()
        async with driving(app, B.healthy(), size=SIZE) as pilot:
            await select_broker(pilot, 3)
            for key, action in (("k", BrokerAction.KILL), ("p", BrokerAction.PAUSE)):
                dialog = await screen_after(pilot, ConfirmBrokerAction, key)
                assert dialog.action is action
                await pilot.press("3", "enter")
                await wait_for_actions(pilot)
            assert control.calls == [(BrokerAction.KILL, 3), (BrokerAction.PAUSE, 3)]


class TestNoConfirmationNeeded:
    """start and resume take nothing away: they run at once."""

    async def test_start(self) -> None:
        app, control = controlled_app()
        async with driving(app, B.broker_down(), size=SIZE) as pilot:
            await select_broker(pilot, 1)
            await pilot.press("t")
            assert isinstance(app.screen, MainScreen)
            await wait_for_actions(pilot)
            assert control.calls == [(BrokerAction.START, 1)]

    async def test_p_resumes_a_paused_broker(self) -> None:
        paused = dataclasses.replace(B.healthy(), brokers=B.brokers(b3=BrokerState.PAUSED))
        app, control = controlled_app()
        async with driving(app, paused, size=SIZE) as pilot:
            await select_broker(pilot, 3)
            await pilot.press("p")
            assert isinstance(app.screen, MainScreen)
            await wait_for_actions(pilot)
            assert control.calls == [(BrokerAction.RESUME, 3)]


class TestUnavailable:
    """Read-only, no backend, no command layer: no modal, no call, and a reason."""

    async def test_read_only_disables_the_keys(self) -> None:
        app, control = controlled_app(read_only=True)
        async with driving(app, B.healthy(), size=SIZE) as pilot:
            await select_broker(pilot, 2)
            for key in ("s", "k", "p", "t"):
                assert app.screen.active_bindings[key].enabled is False
            await pilot.press("s", "k", "C")
            assert isinstance(app.screen, MainScreen)
            await wait_for_actions(pilot)
            assert control.calls == []
            assert any("read-only mode" in n for n in notices(app))

    async def test_no_backend_says_why(self) -> None:
        commands = Commands(None, control_reason="kconsole did not start this cluster")
        app = new_app(commands=commands)
        async with driving(app, B.healthy(), size=SIZE) as pilot:
            await select_broker(pilot, 2)
            await pilot.press("s")
            assert isinstance(app.screen, MainScreen)
            await pilot.press("2", "L")  # the partitions pane's leader key says so too
            assert isinstance(app.screen, MainScreen)
            said = [n for n in notices(app) if "kconsole did not start this cluster" in n]
            assert len(said) == 2

    async def test_without_commands_the_keys_are_hidden(self) -> None:
        app = new_app()
        async with driving(app, B.healthy(), size=SIZE) as pilot:
            await select_broker(pilot, 2)
            assert not {"s", "k", "p", "t", "C"} & set(app.screen.active_bindings)
            await pilot.press("s", "C")
            assert isinstance(app.screen, MainScreen)
            assert notices(app) == []


class TestTargets:
    """C acts on the controller, L on the selected partition's leader."""

    async def test_controller(self) -> None:
        app, control = controlled_app()
        # The controller moved to broker 2.
        async with driving(app, B.broker_down(), size=SIZE) as pilot:
            chooser = await screen_after(pilot, BrokerChooser, "C")
            assert (chooser.broker_id, chooser.role) == (2, "controller")
            dialog = await screen_after(pilot, ConfirmBrokerAction, "s")
            assert dialog.broker_id == 2
            await pilot.press("2", "enter")
            await wait_for_actions(pilot)
            assert control.calls == [(BrokerAction.STOP, 2)]

    async def test_chooser_escape_does_nothing(self) -> None:
        app, control = controlled_app()
        async with driving(app, B.healthy(), size=SIZE) as pilot:
            await pilot.press("C", "escape")
            assert isinstance(app.screen, MainScreen)
            assert control.calls == []

    async def test_partition_leader(self) -> None:
        app, control = controlled_app()
        async with driving(app, B.healthy(), size=SIZE) as pilot:
            await pilot.pause()
            partitions = app.screen.query_one("#partitions", PartitionsTable)
            partitions.focus()
            partitions.move_cursor(row=partitions.get_row_index("test-topic/1"))
            leader = B.replicas(1)[0]
            chooser = await screen_after(pilot, BrokerChooser, "L")
            assert chooser.broker_id == leader
            assert chooser.role == "leader of test-topic/1"
            await screen_after(pilot, ConfirmBrokerAction, "k")
            await pilot.press(*str(leader), "enter")
            await wait_for_actions(pilot)
            assert control.calls == [(BrokerAction.KILL, leader)]


class TestOutcome:
    """The action goes on the timeline through the observer; failures are told and logged."""

    async def test_recorded_through_the_observer(self) -> None:
        observer = RecordingObserver(B.healthy())
        app, _ = controlled_app(observer=observer)
        async with driving(app, B.healthy(), size=SIZE) as pilot:
            await select_broker(pilot, 1)
            await pilot.press("t")
            await wait_for_actions(pilot)
            assert [e.text for e in observer.recorded] == ["start broker 1"]
            assert action_events(app) == ["start broker 1"]

    async def test_failure_is_notified_and_logged(self) -> None:
        app, _ = controlled_app(FakeControl(error="broker 2 is already stopped"))
        async with driving(app, B.healthy(), size=SIZE) as pilot:
            await select_broker(pilot, 2)
            await pilot.press("s", "2", "enter")
            await wait_for_actions(pilot)
            assert any(
                n.startswith("stop broker 2 failed") and "already stopped" in n
                for n in notices(app)
            )
            assert action_events(app) == [
                "stop broker 2",
                "stop broker 2 failed: broker 2 is already stopped",
            ]
            assert app.actions[0].ok is False
            assert app.latest_drill() is None


class TestTimeline:
    """T: the events with the action highlighted, the chart, the measurements; e exports."""

    async def test_lists_the_action_and_measurements(self) -> None:
        app, _ = controlled_app()
        async with app.run_test(size=SIZE) as pilot:
            await run_fixture_drill(pilot)
            await pilot.press("T")
            assert isinstance(app.screen, TimelineScreen)
            await pilot.pause()
            table = app.screen.query_one("#timeline-events", KeyedTable)
            texts = [table.get_cell(k, "text").plain for k in table.row_keys]
            assert texts[0] == "stop broker 2"  # oldest first: the fault opens the list
            assert "start broker 2" in texts and "broker 2 left the cluster" in texts
            fault_row = table.row_keys[0]
            assert table.get_cell(fault_row, "kind").plain == "action"
            assert table.get_cell(fault_row, "rel").plain == "+0.0 s"
            assert table.cursor_key == fault_row
            measured = {m.name: m.seconds for m in app.drill_measurements()}
            assert round(measured["fault -> broker gone from ZooKeeper"] or 0, 1) == 6.3
            assert round(measured["fault -> new controller"] or 0, 1) == 6.3
            assert measured["restore -> broker registered again"] == 5.0
            shown = rendered(app.screen.query_one("#timeline-measurements"))
            assert "fault -> new controller" in shown and "6.3 s" in shown
            chart = str(app.screen.query_one("#timeline-chart").render())
            assert "▼ stop 2" in chart and "▼ start 2" in chart
            await pilot.press("escape")
            assert isinstance(app.screen, MainScreen)

    async def test_without_a_drill(self) -> None:
        app, _ = controlled_app()
        async with driving(app, B.healthy(), B.broker_down(), size=SIZE) as pilot:
            await pilot.press("T")
            assert isinstance(app.screen, TimelineScreen)
            assert "No drill yet" in str(app.screen.query_one("#timeline-chart").render())
            assert not app.screen.query_one("#timeline-measurements").display
            table = app.screen.query_one("#timeline-events", KeyedTable)
            assert table.row_count == len(app.timeline) > 0

    async def test_export(self, tmp_path: Path) -> None:
        app, _ = controlled_app(export_dir=tmp_path / "timelines")
        async with app.run_test(size=SIZE) as pilot:
            await run_fixture_drill(pilot)
            await pilot.press("T", "e")
            await pilot.pause()
            files = sorted((tmp_path / "timelines").iterdir())
            assert [f.suffix for f in files] == [".json", ".md"]
            assert files[0].stem == "drill-20270115T080001Z-stop-broker-2"
            doc = json.loads(files[0].read_text())
            assert doc["fault"]["text"] == "stop broker 2"
            assert doc["fault"]["time"] == "2027-01-15T08:00:01.000+00:00"
            left = next(e for e in doc["events"] if e["text"] == "broker 2 left the cluster")
            assert left["since_fault_s"] == 6.3
            assert left["time"] == "2027-01-15T08:00:07.300+00:00"
            names = {m["name"]: m["seconds"] for m in doc["measurements"]}
            assert names["restore -> broker registered again"] == 5.0
            assert app.snapshot is not None and app.snapshot.cluster_id
            assert doc["cluster"]["cluster_id"] == app.snapshot.cluster_id
            md = files[1].read_text()
            assert md.startswith("# Drill timeline: stop broker 2\n")
            assert f"\nCluster id {app.snapshot.cluster_id}, bootstrap " in md
            assert "From 10 s before the fault (2027-01-15T07:59:51.000+00:00)" in md
            assert "| fault -> new controller | 6.30 |" in md
            assert "| 2027-01-15T08:00:07.300+00:00 | +6.300 | broker-left |" in md
            assert any(str(files[0]) in n and str(files[1]) in n for n in notices(app))


class TestNetworkFaultKey:
    """Issue 37: n on the brokers pane opens the network faults of the node under the cursor;
    a partition is confirmed with its blast radius by side (the typed id), then goes through
    the command layer with the sides chosen."""

    async def test_n_z_partitions_from_zookeeper_after_the_typed_id(self) -> None:
        app, control = controlled_app()
        async with driving(app, B.healthy(), size=SIZE) as pilot:
            await select_broker(pilot, 2)
            await pilot.press("n")
            await wait_for_screen(pilot, NetworkChooser)
            await pilot.press("o", "o", "z")  # one way on, then off again: both ways
            await wait_for_screen(pilot, ConfirmBrokerAction)
            dialog = app.screen
            assert isinstance(dialog, ConfirmBrokerAction)
            assert "from zookeeper" in str(dialog.query_one("#confirm-dialog").border_title)
            shown = impact(dialog)
            assert "ZooKeeper expires its session (zookeeper.session.timeout.ms" in shown
            assert control.calls == []
            await pilot.press("2", "enter")
            await wait_for_actions(pilot)
            assert control.calls == [(BrokerAction.PARTITION, 2)]
            assert control.links == [NetLinks(("zookeeper",), one_way=False)]
            assert action_events(app) == ["partition broker 2 from zookeeper"]

    async def test_one_way_from_the_brokers_and_escape_cancels(self) -> None:
        app, control = controlled_app()
        async with driving(app, B.healthy(), size=SIZE) as pilot:
            await select_broker(pilot, 3)
            await pilot.press("n", "escape")
            await wait_for_screen(pilot, MainScreen)
            await pilot.press("n", "o", "b")
            await wait_for_screen(pilot, ConfirmBrokerAction)
            await pilot.press("3", "enter")
            await wait_for_actions(pilot)
            assert control.links == [NetLinks(("brokers",), one_way=True)]
            assert action_events(app) == ["partition broker 3 from brokers, one way"]

    async def test_s_slows_its_links_to_the_brokers_at_the_rate_r_chose(self) -> None:
        app, control = controlled_app()
        async with driving(app, B.healthy(), size=SIZE) as pilot:
            await select_broker(pilot, 3)
            await pilot.press("n")
            await wait_for_screen(pilot, NetworkChooser)
            chooser = app.screen
            assert isinstance(chooser, NetworkChooser)
            choices = rendered(chooser.query_one("#chooser-choices"))
            assert "65,536 B/s (r: 1,048,576)" in choices
            await pilot.press("r", "s")  # 1,048,576 B/s
            await wait_for_screen(pilot, ConfirmBrokerAction)
            dialog = app.screen
            assert isinstance(dialog, ConfirmBrokerAction)
            title = str(dialog.query_one("#confirm-dialog").border_title)
            assert title == "slow broker 3 from brokers at 1,048,576 B/s?", title
            assert "replica.lag.time.max.ms" in impact(dialog)
            await pilot.press("3", "enter")
            await wait_for_actions(pilot)
            assert control.calls == [(BrokerAction.SLOW, 3)]
            assert control.links == [NetLinks(("brokers",), one_way=False, rate=1_048_576)]
            assert action_events(app) == ["slow broker 3 from brokers at 1,048,576 B/s"]

    async def test_a_node_with_a_fault_in_force_offers_only_its_heal(self) -> None:
        cut = dataclasses.replace(
            B.healthy(), net_faults=((2, "isolate since 10:47:03 (4 rules)"),)
        )
        app, control = controlled_app()
        async with driving(app, cut, size=SIZE) as pilot:
            await select_broker(pilot, 2)
            await pilot.press("n")
            await wait_for_screen(pilot, NetworkChooser)
            await pilot.press("z", "i")  # refused: one fault per node
            assert isinstance(app.screen, NetworkChooser)
            await pilot.press("h")  # a heal takes nothing away: no confirmation
            await wait_for_actions(pilot)
            assert control.calls == [(BrokerAction.HEAL, 2)]
