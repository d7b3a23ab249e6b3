"""Broker keys on KRaft (snapshots built from a real cluster's answers, tests/ui/kraft_fakes.py):
a controller row of the brokers pane acts on that controller through the command layer, with
the quorum's prediction; C is the quorum leader, and refuses while the leader is not known."""

from __future__ import annotations

from textual.widgets import Input

from kconsole.cluster.values import BrokerAction, ProcState
from kconsole.commands import Commands
from kconsole.ui.app import KConsoleApp
from kconsole.ui.screens.actions import BrokerChooser, ConfirmBrokerAction
from kconsole.ui.screens.main import MainScreen
from tests.ui import kraft_fakes as K
from tests.ui.conftest import FakeControl, new_app, select_broker, wait_for_actions
from tests.ui.pilots import confirm_dialog, driving, impact, notices, rendered, screen_after

SIZE = (120, 40)


class FakeNodeControl(FakeControl):
    """FakeControl with KRaftNodeControl's node states (controllers included)."""

    def __init__(self, nodes: dict[int, ProcState] | None = None) -> None:
        super().__init__()
        self.nodes = nodes or {}

    def node_states(self) -> dict[int, ProcState]:
        return dict(self.nodes)

    def label(self, node_id: int) -> str:
        return f"controller {node_id}" if node_id > 1000 else f"broker {node_id}"


def kraft_app(control: FakeNodeControl | None = None) -> tuple[KConsoleApp, FakeNodeControl]:
    control = control or FakeNodeControl()
    return new_app(commands=Commands(control)), control


class TestControllerRows:
    async def test_stop_a_voter_row_acts_on_that_controller(self) -> None:
        """s on controller 1001's row: its name and the quorum's prediction, then 1001 only."""
        app, control = kraft_app()
        async with driving(app, K.healthy(), size=SIZE) as pilot:
            dialog = await confirm_dialog(pilot, 1001, "s")
            what = rendered(dialog.query_one("#confirm-what"))
            assert "controller 1001" in what and "broker" not in what
            typed = dialog.query_one("#confirm-input", Input)
            assert typed.placeholder == "controller id"
            shown = impact(dialog)
            assert "not the quorum leader (controller 1003): no election" in shown
            assert "ZooKeeper" not in shown
            await pilot.press(*"1001", "enter")
            await wait_for_actions(pilot)
            assert control.calls == [(BrokerAction.STOP, 1001)]
            assert any("stop controller 1001" in n for n in notices(app))

    async def test_p_resumes_a_paused_controller(self) -> None:
        """A paused controller is known by its process: p resumes it, no confirmation."""
        app, control = kraft_app(FakeNodeControl({1001: ProcState.PAUSED}))
        async with driving(app, K.lagging_voter(), size=SIZE) as pilot:
            await select_broker(pilot, 1001)
            await pilot.press("p")
            await wait_for_actions(pilot)
            assert isinstance(app.screen, MainScreen)
            assert control.calls == [(BrokerAction.RESUME, 1001)]

    async def test_a_broker_on_kraft_is_fenced_not_expired(self) -> None:
        app, control = kraft_app()
        async with driving(app, K.healthy(), size=SIZE) as pilot:
            dialog = await confirm_dialog(pilot, 2, "k")
            shown = impact(dialog)
            assert "fences broker 2 after broker.session.timeout.ms" in shown
            typed = dialog.query_one("#confirm-input", Input)
            assert typed.placeholder == "broker id"
            assert "ZooKeeper" not in shown
            await pilot.press("escape")
            await wait_for_actions(pilot)
            assert control.calls == []


class TestControllerKey:
    async def test_c_is_the_quorum_leader(self) -> None:
        app, control = kraft_app()
        async with driving(app, K.healthy(), size=SIZE) as pilot:
            chooser = await screen_after(pilot, BrokerChooser, "C")
            assert (chooser.broker_id, chooser.role) == (1003, "quorum leader")
            dialog = await screen_after(pilot, ConfirmBrokerAction, "k")
            assert "controller 1003 is the QUORUM LEADER" in impact(dialog)
            await pilot.press(*"1003", "enter")
            await wait_for_actions(pilot)
            assert control.calls == [(BrokerAction.KILL, 1003)]

    async def test_c_refuses_while_no_leader_is_known(self) -> None:
        """The majority lost (recorded): no action on the last leader read, and why."""
        app, control = kraft_app()
        async with driving(app, K.stale_quorum(), size=SIZE) as pilot:
            await pilot.press("C")
            assert isinstance(app.screen, MainScreen)
            await wait_for_actions(pilot)
            assert control.calls == []
            assert any("the quorum leader is not known now" in n for n in notices(app))


def test_a_controllers_stop_is_not_described_as_a_brokers() -> None:
    """A KRaft controller has no partitions to move: its stop is a plain SIGTERM, and the
    dialogs must not promise a broker's controlled shutdown."""
    from kconsole.cluster.values import BrokerAction
    from kconsole.ui.screens.actions import what

    assert "leadership moves away" in what(BrokerAction.STOP, "controller")
    for role in ("quorum leader", "voter"):
        assert "leadership" not in what(BrokerAction.STOP, role)
        assert "controller" in what(BrokerAction.START, role)
