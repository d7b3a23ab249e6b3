"""Every topic on one screen: its partitions, how fast records and bytes come in, how unevenly
(the busiest partition against the mean: the hot ones), and its under-replicated and offline
partitions. Live; the busiest topic first."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import Static

from kconsole.models import ClusterSnapshot
from kconsole.ui import format as fmt
from kconsole.ui.context import state, subscribe
from kconsole.ui.rows import topic_columns, topic_rows
from kconsole.ui.widgets.footer import KeyBar
from kconsole.ui.widgets.panes import GROUP_SOURCES, Pane
from kconsole.ui.widgets.table import KeyedTable


class TopicsTable(KeyedTable):
    """One row per topic, the busiest first."""

    COLUMNS = topic_columns(True)


class TopicsScreen(ModalScreen[None]):
    """The topics view (v on the main screen)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="close-topics"),
    ]

    def compose(self) -> ComposeResult:
        # The rates come from the offsets the groups poll reads: its health is theirs.
        with Pane(title="Topics", sources=GROUP_SOURCES, id="topics-dialog"):
            yield Static(id="topics-summary")
            yield TopicsTable(id="topics-table")
        yield KeyBar()

    def on_mount(self) -> None:
        subscribe(self, "snapshot", self.redraw, init=True)
        self.query_one(TopicsTable).focus()

    def action_close(self) -> None:
        """Back to the main screen."""
        self.dismiss()

    def redraw(self) -> None:
        snap = state(self).snapshot
        table = self.query_one(TopicsTable)
        sized = snap is not None and snap.rates is not None and not snap.rates.bytes_note
        table.set_columns(topic_columns(sized))
        table.sync(topic_rows(snap))
        self.query_one("#topics-summary", Static).update(topics_summary(snap))


def topics_summary(snap: ClusterSnapshot | None) -> Text:
    """How the figures are measured, and what is not known."""
    if snap is None:
        return Text("no snapshot yet", fmt.DIM)
    r = snap.rates
    if r is None:
        return Text("rates: not measured", fmt.WARN)
    parts = [
        (f"records and bytes in per second over the last {r.window_s:.0f} s", fmt.DIM),
        ("  skew: the busiest partition against the mean; HOT from 2x", fmt.DIM),
    ]
    if r.bytes_note:
        parts.append((f"  bytes/s not shown: {r.bytes_note}", fmt.WARN))
    return Text.assemble(*parts)
