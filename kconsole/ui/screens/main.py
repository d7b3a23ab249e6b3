"""The main screen: header, brokers, controller, partitions, consumer groups and events."""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Horizontal
from textual.events import DescendantBlur
from textual.markup import escape
from textual.message import Message
from textual.reactive import Reactive
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import DataTable, Input

from kconsole.faults import keyed_words
from kconsole.models import BrokerState, ClusterMode, ClusterSnapshot, SourceName
from kconsole.ui import rows
from kconsole.ui.context import actions, state, subscribe
from kconsole.ui.quorum import quorum_lines
from kconsole.ui.screens.group import GroupScreen
from kconsole.ui.screens.timeline import TimelineScreen
from kconsole.ui.screens.topics import TopicsScreen
from kconsole.ui.widgets.base import UNAVAILABLE
from kconsole.ui.widgets.footer import KeyBar
from kconsole.ui.widgets.panes import (
    CLUSTER_SOURCES,
    GROUP_SOURCES,
    ControllerView,
    HeaderLine,
    Pane,
    set_border,
)
from kconsole.ui.widgets.tables import (
    BrokersTable,
    EventsTable,
    GroupsTable,
    PartitionsTable,
    broker_check,
)

PANES = {
    "brokers": "#brokers",
    "partitions": "#partitions",
    "groups": "#groups",
    "events": "#events",
}


class FilterInput(Input):
    """The topic filter: narrows the partitions table as you type."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "clear", "Clear the filter", id="filter-clear"),
    ]

    class Done(Message):
        """The user left the filter (Enter keeps it, Escape cleared it)."""

    def action_clear(self) -> None:
        self.value = ""
        self.post_message(self.Done())


class MainScreen(Screen[None]):
    """Everything at once, dense enough for an incident."""

    # Textual's Screen repaints the whole screen whenever the focus moves. The widgets whose
    # look depends on the focus are restyled (and so repainted) by the focus change itself, so
    # a tab repaints only those: 48 lines of 160 columns less per key on this screen.
    focused: Reactive[Widget | None] = Reactive(None, repaint=False)

    HORIZONTAL_BREAKPOINTS = [
        (0, "-narrow"),
        (140, "-wide"),
    ]

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("tab", "app.focus_next", "Next pane", show=False, id="next-pane"),
        Binding("shift+tab", "app.focus_previous", "Previous pane", show=False, id="prev-pane"),
        Binding("1", "focus_pane('brokers')", "Brokers pane", show=False, id="pane-brokers"),
        Binding(
            "2", "focus_pane('partitions')", "Partitions pane", show=False, id="pane-partitions"
        ),
        Binding("3", "focus_pane('groups')", "Groups pane", show=False, id="pane-groups"),
        Binding("4", "focus_pane('events')", "Events pane", show=False, id="pane-events"),
        Binding(
            "slash",
            "filter",
            "Filter",
            key_display="/",
            tooltip="Filter partitions by topic (substring, as you type)",
            id="filter-topics",
        ),
        Binding(
            "escape",
            "clear_filter",
            "Clear filter",
            tooltip="Clear the topic filter",
            id="clear-filter",
        ),
        Binding(
            "u",
            "toggle_unhealthy",
            "Unhealthy",
            tooltip="Show only unhealthy partitions (or all again)",
            id="unhealthy-only",
        ),
        Binding(
            "C",
            "controller_actions",
            "Controller",
            tooltip=f"{keyed_words().capitalize()} the controller",
            id="controller-actions",
        ),
        Binding("C", UNAVAILABLE, show=False),
        Binding(
            "P",
            "produce",
            "Produce",
            tooltip="Produce keyed messages to the selected topic, with a partition trace",
            id="produce",
        ),
        Binding(
            "F",
            "tail",
            "Tail",
            tooltip="Follow (tail) the selected topic's records, without a consumer group",
            id="tail",
        ),
        Binding(
            "J",
            "jobs",
            "Jobs",
            tooltip="PySpark streaming jobs: start, watch progress, stop",
            id="jobs",
        ),
        Binding(
            "T",
            "timeline",
            "Timeline",
            tooltip="Drill timeline: chart, measurements, events",
            id="timeline",
        ),
        Binding(
            "v",
            "topics",
            "Topics",
            tooltip="Topics: records and bytes in per second, skew (hot partitions), URP",
            id="topics",
        ),
        Binding(
            "i",
            "toggle_internal",
            "Internal",
            tooltip="Show or hide internal topics (__consumer_offsets, …)",
            id="internal-topics",
        ),
        Binding(
            "o",
            "cycle_sort",
            "Sort",
            tooltip="Sort partitions by the next column",
            id="sort-partitions",
        ),
        Binding(
            "O",
            "reverse_sort",
            "Reverse",
            tooltip="Reverse the partitions' sort order",
            id="reverse-sort",
        ),
    ]

    def compose(self) -> ComposeResult:
        yield HeaderLine(id="header")
        with Horizontal(id="top"):
            with Pane(title="Brokers", sources=CLUSTER_SOURCES, id="brokers-pane", note=_cut_line):
                yield BrokersTable(id="brokers")
            with Pane(
                title="Controller",
                sources=CLUSTER_SOURCES,
                kraft_sources=(SourceName.QUORUM,),
                id="controller-pane",
            ):
                yield ControllerView(id="controller")
        with Container(id="body"):
            with Pane(title="Partitions", sources=CLUSTER_SOURCES, id="partitions-pane"):
                yield FilterInput(placeholder="topic contains…", compact=True, id="filter")
                yield PartitionsTable(id="partitions")
            with Container(id="side"):
                with Pane(title="Consumer groups", sources=GROUP_SOURCES, id="groups-pane"):
                    yield GroupsTable(id="groups")
                with Pane(title="Events", id="events-pane"):
                    yield EventsTable(id="events")
        yield KeyBar()

    def on_mount(self) -> None:
        subscribe(self, "snapshot", self._retitle, init=True)
        subscribe(self, "events", self._retitle, init=False)
        self.watch(self.partitions, "view", self._retitle, init=False)
        self.watch(self.partitions, "counts", self._retitle, init=False)
        self.partitions.focus()

    @property
    def partitions(self) -> PartitionsTable:
        """The partitions table."""
        return self.query_one(PartitionsTable)

    @property
    def filter_input(self) -> FilterInput:
        """The topic filter input."""
        return self.query_one(FilterInput)

    # -- pane titles --------------------------------------------------------------------------
    def _retitle(self) -> None:
        # Cheap: the partition counts are kept by the table, and set_border repaints a pane
        # only when its title changed.
        st = state(self)
        snap = st.snapshot
        view = self.partitions.view
        counts = self.partitions.counts
        set_border(self.query_one("#brokers-pane"), title=_brokers_title(snap))
        set_border(self.query_one("#partitions-pane"), title=_partitions_title(snap, view, counts))
        groups = len(snap.groups) if snap else 0
        set_border(self.query_one("#groups-pane"), title=f"Consumer groups [dim]{groups}[/]")
        set_border(self.query_one("#events-pane"), title=f"Events [dim]{len(st.events)}[/]")
        # The top row is as tall as the broker list (within reason); the controller matches it.
        # On KRaft the brokers pane lists the controllers too, and the quorum pane is wider.
        kraft = snap is not None and snap.mode is ClusterMode.KRAFT
        self.set_class(kraft, "-kraft")
        if snap is not None and kraft:
            # As tall as the brokers and controllers with their header, or the quorum pane's
            # lines, whichever is taller (within reason: the stylesheet caps it too).
            lines = max(len(rows.broker_rows(snap)) + 1, quorum_lines(snap, st.now))
            self.query_one("#top").styles.height = min(max(lines, 4), 14) + 2
            return
        brokers = len(snap.brokers) if snap else 0
        self.query_one("#top").styles.height = min(max(brokers, 3), 9) + 3

    # -- actions ------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "clear_filter":
            return bool(self.partitions.view.text)
        return broker_check(self, action)

    def action_controller_actions(self) -> None:
        """Choose an action for the current controller."""
        snap = state(self).snapshot
        if snap is None or snap.controller.id is None:
            self.notify("there is no active controller", severity="warning")
            return
        q = snap.quorum if snap.mode is ClusterMode.KRAFT else None
        if q is not None and (q.stale or q.leader_id is None):
            # The last leader read is no longer known to lead: acting on it could hit a node
            # that is not the controller any more.
            self.notify(
                f"the quorum leader is not known now ({q.error or 'no leader'}): "
                "choose a controller in the brokers pane",
                severity="warning",
                markup=False,
            )
            return
        role = "quorum leader" if q is not None and snap.broker(snap.controller.id) is None else ""
        actions(self).choose_broker_action(snap.controller.id, role or "controller")

    def _selected_topic(self) -> tuple[str, int | None]:
        """The topic (and partition) under the partitions table's cursor."""
        table = self.partitions
        snap = state(self).snapshot
        key = table.cursor_key
        if snap is None or key is None:
            return "", None
        topic, _, part = (key or "").rpartition("/")
        return (topic, int(part)) if part.isdigit() else ("", None)

    def action_produce(self) -> None:
        """Open the produce dialog on the selected topic."""
        from kconsole.ui.screens.produce import ProduceScreen

        topic, _ = self._selected_topic()
        self.app.push_screen(ProduceScreen(topic=topic))

    def action_tail(self) -> None:
        """Tail the selected topic."""
        from kconsole.ui.screens.tail import TailScreen

        topic, _ = self._selected_topic()
        self.app.push_screen(TailScreen(topic=topic))

    def action_jobs(self) -> None:
        """Open the jobs screen."""
        from kconsole.ui.screens.jobs import JobsScreen

        self.app.push_screen(JobsScreen())

    def action_timeline(self) -> None:
        """Open the drill timeline."""
        self.app.push_screen(TimelineScreen())

    def action_topics(self) -> None:
        """Open the topics view."""
        self.app.push_screen(TopicsScreen())

    def action_focus_pane(self, pane: str) -> None:
        """Focus one pane's table."""
        self.query_one(PANES[pane]).focus()

    def action_filter(self) -> None:
        """Open the topic filter."""
        self.query_one("#partitions-pane").add_class("-filtering")
        self.filter_input.focus()

    def action_clear_filter(self) -> None:
        """Clear the topic filter."""
        self.filter_input.value = ""
        self._leave_filter()

    def action_toggle_unhealthy(self) -> None:
        """Show only partitions with a health flag, or all again."""
        view = self.partitions.view
        self.partitions.view = replace(view, unhealthy_only=not view.unhealthy_only)

    def action_toggle_internal(self) -> None:
        """Show or hide internal topics (__consumer_offsets, …)."""
        view = self.partitions.view
        self.partitions.view = replace(view, show_internal=not view.show_internal)

    def action_cycle_sort(self) -> None:
        """Sort partitions by the next column."""
        self.partitions.cycle_sort()

    def action_reverse_sort(self) -> None:
        """Reverse the partitions' order."""
        self.partitions.sort_by(self.partitions.view.sort)

    # -- the filter ---------------------------------------------------------------------------
    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.partitions.view = replace(self.partitions.view, text=event.value.strip())
        self.refresh_bindings()

    @on(Input.Submitted, "#filter")
    @on(FilterInput.Done)
    def _leave_filter(self) -> None:
        if not self.filter_input.value:
            self.query_one("#partitions-pane").remove_class("-filtering")
        self.partitions.focus()

    def on_descendant_blur(self, event: DescendantBlur) -> None:
        # An empty filter folds away once the user moves on.
        if event.widget is self.filter_input and not self.filter_input.value:
            self.query_one("#partitions-pane").remove_class("-filtering")

    # -- groups -------------------------------------------------------------------------------
    @on(DataTable.RowSelected, "#groups")
    def _open_group(self, event: DataTable.RowSelected) -> None:
        group_id = event.row_key.value
        if group_id is not None:
            self.app.push_screen(GroupScreen(group_id))


def _brokers_title(snap: ClusterSnapshot | None) -> str:
    if snap is None:
        return "Brokers"
    parts = []
    for bstate in BrokerState:
        n = sum(1 for b in snap.brokers if b.state is bstate)
        if n:
            colour = {BrokerState.UP: "$success", BrokerState.UNKNOWN: "$warning"}.get(
                bstate, "$error"
            )
            parts.append(f"[{colour}]{n} {bstate.value}[/]")
    if snap.unreached:  # why they are unknown (or as last read): nothing was asked
        asked = "cannot reach the cluster"
        if snap.refused:
            tls = snap.refused.startswith("TLS handshake")
            asked = "not asked: " + ("TLS handshake refused" if tls else "login refused")
        parts.append(f"[$warning]{asked}[/]")
    if snap.mode is ClusterMode.KRAFT:
        fenced = sum(1 for b in snap.brokers if b.fenced)
        if fenced:
            parts.append(f"[$error]{fenced} fenced[/]")
        ids = rows.controller_ids(snap)
        if ids:
            controllers = f"[dim]{len(ids)} controllers[/]"
            # those not up (down, paused, unreachable; unknown while the quorum is unread)
            off: dict[str, int] = {}
            for cid in ids:
                c = snap.controller_status(cid)
                if c is not None and not c.up:
                    name = c.state.value if c.state is not None else "unknown"
                    off[name] = off.get(name, 0) + 1
            for name, n in off.items():
                colour = "$warning" if name == "unknown" else "$error"
                controllers += f"[dim],[/] [{colour}]{n} {name}[/]"
            parts.append(controllers)
    if snap.net_faults:
        parts.append(f"[$error]{len(snap.net_faults)} cut[/]")
    return "Brokers " + " · ".join(parts) if parts else "Brokers [dim]none[/]"


def _cut_line(snap: ClusterSnapshot | None) -> str | None:
    """While a network fault is in force: which node, what is cut, since when, and how it
    ends; None (no subtitle) when none is."""
    if snap is None or not snap.net_faults:
        return None
    said = "; ".join(f"node {nid}: {escape(what)}" for nid, what in snap.net_faults)
    return f"[$error]NETWORK FAULT[/] {said} · n, h heals (or kconsole cluster heal)"


def _partitions_title(
    snap: ClusterSnapshot | None, view: rows.PartitionView, counts: rows.PartitionCounts
) -> str:
    title = "Partitions"
    if snap is None:
        return title
    title += f" [dim]{counts.shown}/{counts.total}[/]"
    offline, unhealthy = counts.offline, counts.unhealthy
    if offline:
        title += f" · [$error]{offline} offline[/]"
    if unhealthy:
        title += f" · [$warning]{unhealthy} unhealthy[/]"
    described = view.describe()
    if described:
        title += f" · [$accent]{escape(described)}[/]"
    return title
