"""A failover drill driven from the keyboard against the real cluster: stop the controller from
the brokers pane (confirming by id), see a new controller elected, start it again, and read the
drill's measurements on the timeline."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
from kazoo.client import KazooClient
from textual.pilot import Pilot

from kconsole.cluster.local.cluster import LocalCluster
from kconsole.cluster.local.control import LocalBrokerControl
from kconsole.commands import Commands
from kconsole.observer import ClusterObserver
from kconsole.ui.app import KConsoleApp, make_app
from kconsole.ui.screens.actions import ConfirmBrokerAction
from kconsole.ui.screens.timeline import TimelineScreen
from kconsole.ui.widgets.table import KeyedTable
from tests import tables
from tests.integration.conftest import controller, restore
from tests.integration.test_observer import settings_for

pytestmark = pytest.mark.integration


async def until(cond: Callable[[], bool], timeout: float, what: str) -> None:
    """Wait for `cond` (checked on the app's loop) with a deadline."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what} on screen")
        await asyncio.sleep(0.05)


def cell(app: KConsoleApp, table: str, row: str, column: str) -> str:
    return tables.table(app.screen, table).get_cell(row, column).plain


def event_texts(app: KConsoleApp) -> list[str]:
    events = tables.table(app.screen, "events")
    return [events.get_cell(k, "text").plain for k in events.row_keys]


def starred(app: KConsoleApp) -> str | None:
    """The broker the brokers pane marks as controller."""
    brokers = app.screen.query_one("#brokers", KeyedTable)
    return next((k for k in brokers.row_keys if "★" in cell(app, "brokers", k, "id")), None)


async def select(pilot: Pilot[None], app: KConsoleApp, broker: int) -> None:
    await pilot.press("1")
    brokers = app.screen.query_one("#brokers", KeyedTable)
    brokers.move_cursor(row=brokers.get_row_index(str(broker)))
    await pilot.pause()


async def test_stop_and_start_the_controller_from_the_keyboard(
    healthy: LocalCluster, zk: KazooClient
) -> None:
    """s on the controller's row, its id typed, Enter: a new controller, the events, then t
    brings it back; the timeline measures the drill."""
    control = LocalBrokerControl(healthy)
    observer = ClusterObserver(settings_for(healthy), proc_states=control.states)
    app = make_app(observer, commands=Commands(control))
    app.animation_level = "none"
    victim = controller(zk)
    assert victim is not None
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            await until(lambda: starred(app) == str(victim), 30, f"broker {victim} as controller")
            await select(pilot, app, victim)
            await pilot.press("s")
            assert isinstance(app.screen, ConfirmBrokerAction)
            await pilot.press(*str(victim), "enter")
            assert not isinstance(app.screen, ConfirmBrokerAction)

            await until(
                lambda: starred(app) not in (None, str(victim)), 60, "a different controller"
            )
            await until(
                lambda: f"broker {victim} left the cluster" in event_texts(app),
                30,
                f"'broker {victim} left the cluster'",
            )
            await until(
                lambda: any(t.startswith("controller is broker") for t in event_texts(app)),
                30,
                "a 'controller is broker' event",
            )
            assert f"stop broker {victim}" in event_texts(app)
            await until(lambda: cell(app, "brokers", str(victim), "state") == "down", 30, "down")

            await select(pilot, app, victim)
            await pilot.press("t")
            await until(
                lambda: cell(app, "brokers", str(victim), "state") == "up", 120, "it back up"
            )
            await until(lambda: f"broker {victim} joined" in event_texts(app), 30, "'joined' event")

            await pilot.press("T")
            assert isinstance(app.screen, TimelineScreen)
            measured = {m.name: m.seconds for m in app.drill_measurements()}
            assert measured["fault -> new controller"] is not None
            assert measured["fault -> broker gone from ZooKeeper"] is not None
            assert measured["restore -> broker registered again"] is not None
    finally:
        restore(healthy, zk)
