"""The brokers pane redraws when anything its rows show changes (it skips a snapshot that
changes none of them): its title and its rows never disagree."""

from __future__ import annotations

import dataclasses

from kconsole.models import ControllerStatus
from kconsole.timeline import EventKind
from kconsole.ui.widgets.table import KeyedTable
from tests.ui import builders as B
from tests.ui import kraft_fakes as K
from tests.ui.conftest import feed, new_app, settle


def controller_cells(app: object) -> dict[str, str]:
    table = app.screen.query_one("#brokers", KeyedTable)  # type: ignore[attr-defined]
    out = {}
    for key in table.rows:
        row = table.get_row(key)
        node = str(row[0]).split()[0]
        if node.startswith("100"):
            out[node] = str(row[2])
    return out


async def test_controllers_that_become_unknown_are_redrawn() -> None:
    """A lost majority: 1001 and 1003 down (their processes stopped), then a reading where no
    controller's state is known (the quorum unread, no process states): the rows follow the
    title from `down` to unknown, not only the title."""
    down = K.no_leader()
    unknown = dataclasses.replace(
        down,
        controllers=tuple(
            ControllerStatus(c.id, None, "quorum not read") for c in down.controllers
        ),
        taken_at=down.taken_at + 1,
    )
    app = new_app()
    async with app.run_test(size=(160, 45)) as pilot:
        feed(app, down)
        await settle(pilot)
        title = str(app.screen.query_one("#brokers-pane").border_title)
        assert "2 down" in title and "1 unknown" in title
        assert controller_cells(app) == {"1001": "down", "1002": "voter?", "1003": "down"}
        feed(app, unknown)
        await settle(pilot)
        title = str(app.screen.query_one("#brokers-pane").border_title)
        assert "3 unknown" in title and "down" not in title
        assert controller_cells(app) == {"1001": "voter?", "1002": "voter?", "1003": "voter?"}


async def test_a_network_fault_is_said_plainly_until_healed() -> None:
    """Issue 37: while a network fault is in force the console says so (which node, what is
    cut, since when, how it ends): the broker's state, the pane's title and bottom line, and an
    event when it comes and when it is healed."""
    healthy = B.healthy()
    what = "partition from zookeeper since 13:34:06 (4 rules)"
    cut = dataclasses.replace(healthy, net_faults=((3, what),), taken_at=healthy.taken_at + 1)
    healed = dataclasses.replace(healthy, taken_at=healthy.taken_at + 2)
    app = new_app()
    async with app.run_test(size=(160, 45)) as pilot:
        feed(app, healthy, cut)
        await settle(pilot)
        pane = app.screen.query_one("#brokers-pane")
        assert "1 cut" in str(pane.border_title)
        line = str(pane.border_subtitle)
        assert "NETWORK FAULT" in line and f"node 3: {what}" in line and "heal" in line
        table = app.screen.query_one("#brokers", KeyedTable)
        assert [str(c) for c in table.get_row("3")][3] == "up · cut"
        assert [str(c) for c in table.get_row("2")][3] == "up"
        said = [e.event for e in app.events if e.event.kind is EventKind.NET_FAULT]
        assert [(e.broker, e.new) for e in said] == [(3, what)]
        feed(app, healed)
        await settle(pilot)
        assert "cut" not in str(pane.border_title) and "NETWORK FAULT" not in str(
            pane.border_subtitle
        )
        assert [str(c) for c in table.get_row("3")][3] == "up"
        healed_events = [e.event for e in app.events if e.event.kind is EventKind.NET_HEALED]
        assert [e.broker for e in healed_events] == [3]
