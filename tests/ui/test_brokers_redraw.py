"""The brokers pane redraws when anything its rows show changes (it skips a snapshot that
changes none of them): its title and its rows never disagree."""

from __future__ import annotations

import dataclasses

from kconsole.models import ControllerStatus
from kconsole.ui.widgets.table import KeyedTable
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
