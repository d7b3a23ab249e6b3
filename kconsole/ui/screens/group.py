"""One consumer group up close: its partitions' offsets and lag, and a lag trend. Live."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.markup import escape
from textual.screen import ModalScreen
from textual.widgets import Sparkline, Static

from kconsole.models import Group, GroupRate
from kconsole.rates import duration_text, rate_text, trend_text
from kconsole.ui import format as fmt
from kconsole.ui.context import state, subscribe
from kconsole.ui.rows import group_lag, status_cell
from kconsole.ui.widgets.footer import KeyBar
from kconsole.ui.widgets.panes import GROUP_SOURCES, Pane, set_border
from kconsole.ui.widgets.tables import GroupPartitionsTable

GROUP_KINDS = {"share": "Share group", "streams": "Streams group"}
"""The screen's title for the group types that are not consumer groups (KIP-932, KIP-1071)."""


class GroupScreen(ModalScreen[None]):
    """A consumer group's per-partition offsets, lag and lag trend, updated with every snapshot."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="close-group"),
    ]

    def __init__(self, group_id: str) -> None:
        super().__init__()
        self.group_id = group_id
        self._seen = False

    def compose(self) -> ComposeResult:
        title = f"Consumer group [b]{escape(self.group_id)}[/]"
        with Pane(title=title, sources=GROUP_SOURCES, id="group-dialog"):
            yield Static(id="group-summary")
            yield Static(id="group-status")
            with Horizontal(id="group-trend-row"):
                yield Static("lag trend ", id="group-trend-label")
                yield Sparkline([], id="group-trend")
                yield Static(id="group-trend-range")
            yield GroupPartitionsTable(id="group-partitions")
        yield KeyBar()

    def on_mount(self) -> None:
        subscribe(self, "snapshot", self.redraw, init=True)
        self.query_one(GroupPartitionsTable).focus()

    def action_close(self) -> None:
        """Back to the main screen."""
        self.dismiss()

    def redraw(self) -> None:
        """Re-render from the latest snapshot and the app's lag history."""
        view = state(self)
        snap = view.snapshot
        group = (
            next((g for g in snap.groups if g.group_id == self.group_id), None) if snap else None
        )
        rate = snap.rates.group(self.group_id) if snap and snap.rates else None
        if group is not None:
            self._seen = True
            self.query_one(GroupPartitionsTable).show(
                group,
                snap.taken_at if snap else None,
                rate,
                snap.rates is not None if snap else False,
            )
            kind = GROUP_KINDS.get(group.group_type, "Consumer group")
            set_border(
                self.query_one("#group-dialog"), title=f"{kind} [b]{escape(self.group_id)}[/]"
            )
        # A group that vanished keeps its last rows, marked as gone, rather than going blank.
        now = snap.taken_at if snap else None
        self.query_one("#group-summary", Static).update(group_summary(group, self._seen, now))
        self.query_one("#group-status", Static).update(
            group_status(rate, now, measured=bool(snap and snap.rates))
        )
        history = list(view.lag_history.get(self.group_id, ()))
        over = f"last {len(history)} polls"
        if rate is not None and rate.history:
            # The observer's own readings of the total lag (with their times), kept since it
            # started: longer than this screen's, and what the trend is judged on.
            history = [v for _, v in rate.history]
            seconds = rate.history[-1][0] - rate.history[0][0]
            over = f"last {len(history)} readings, {duration_text(seconds)}"
        trend = self.query_one(Sparkline)
        trend.data = [float(v) for v in history]
        # One bar per snapshot seen, so a short history is not stretched into a misleading shape.
        trend.styles.width = max(1, len(history))
        span = (
            Text.assemble(
                (f" now {fmt.count(history[-1])}", "bold"),
                (f"  max {fmt.count(max(history))}  {over}", fmt.DIM),
            )
            if history
            else Text(" no lag data yet", fmt.DIM)
        )
        self.query_one("#group-trend-range", Static).update(span)


def group_summary(group: Group | None, seen: bool, now: float | None = None) -> Text:
    """'Stable · 2 members · range · coordinator 2 · lag 1,204'."""
    if group is None:
        why = "no longer reported by the cluster" if seen else "not reported (yet)"
        return Text(f"group {why}", fmt.WARN)
    lag = group.lag
    return Text.assemble(
        (group.state, fmt.group_state_style(group.state)),
        (" · ", fmt.DIM),
        f"{group.members} member{'s' if group.members != 1 else ''}",
        (" · ", fmt.DIM),
        ("assignor ", fmt.DIM),
        group.assignor or fmt.NONE,
        (" · ", fmt.DIM),
        ("coordinator ", fmt.DIM),
        fmt.NONE if group.coordinator is None else str(group.coordinator),
        (" · ", fmt.DIM),
        ("lag ", fmt.DIM),
        group_lag(group, now) if now is not None else fmt.cell(fmt.count(lag)),
        *((("  ", ""), (group.lag_note, fmt.WARN)) if group.lag_note else ()),
        *((("  ", ""), (group.error, fmt.WARN)) if group.error else ()),
        *((("  ", ""), (group.lag_na, fmt.DIM)) if group.lag_na else ()),
    )


def group_status(rate: GroupRate | None, now: float | None, *, measured: bool = True) -> Text:
    """'WARNING · consumed 500/s of 2,000/s produced · lag growing +1,500/s · reason'."""
    if not measured:
        return Text("rates: not measured", fmt.DIM)
    if rate is None:
        return Text("status: judged once its offsets are read", fmt.DIM)
    at = now if now is not None else 0.0
    trend = trend_text(rate)
    return Text.assemble(
        status_cell(rate),
        (" · consumed ", fmt.DIM),
        rate_text(rate.consumed, at),
        (" of ", fmt.DIM),
        rate_text(rate.produced, at),
        (" produced", fmt.DIM),
        *(
            ((" · lag ", fmt.DIM), (trend, fmt.WARN if rate.trend == "growing" else ""))
            if trend
            else ()
        ),
        ("  ", ""),
        (rate.reason, fmt.DIM),
    )
