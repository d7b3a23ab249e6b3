"""The console's tables. Each follows one piece of app state and re-syncs its rows by key."""

from __future__ import annotations

from dataclasses import dataclass, replace

from rich.cells import cell_len
from rich.text import Text
from textual.binding import Binding
from textual.dom import DOMNode
from textual.events import Resize
from textual.message import Message
from textual.reactive import reactive

from kconsole.cluster.values import BrokerAction
from kconsole.faults import keyed, keyed_words
from kconsole.models import ClusterSnapshot, Group, GroupRate, Partition, Rates
from kconsole.ui import rows
from kconsole.ui.context import actions, state, subscribe
from kconsole.ui.rows import LoggedEvent, PartitionView
from kconsole.ui.widgets.base import BROKER_ACTIONS, UNAVAILABLE
from kconsole.ui.widgets.table import KeyedTable
from kconsole.ui.widgets.virtual_table import VirtualTable


def broker_check(node: DOMNode, action: str) -> bool | None:
    """check_action for the broker-action keys: hidden, disabled or enabled by Commands."""
    if action in BROKER_ACTIONS:
        return state(node).check_broker_action(action)
    if action == "refused":  # the fallback of a disabled key
        return state(node).check_broker_action("broker_actions_unavailable")
    return True


class BrokersTable(KeyedTable):
    """Brokers by id; s / k / p / t act on the one under the cursor."""

    COLUMNS = rows.BROKER_COLUMNS
    BINDINGS = [
        # One key per fault and per keyed heal (kconsole.faults): s, k, p, t.
        *(
            Binding(p.key, f"broker('{p.name}')", p.label, tooltip=p.tooltip, id=f"broker-{p.name}")
            for p in keyed()
        ),
        Binding(
            "D",
            "drain",
            "Drain",
            tooltip="Move every replica off the selected broker (propose, check, execute)",
            id="broker-drain",
        ),
        Binding(
            "n",
            "network",
            "Network",
            tooltip="Network faults on the selected node: isolate it, or cut it from ZooKeeper "
            "(the quorum), the other brokers or its clients; heal",
            id="broker-network",
        ),
        # Reached only while the keys above are disabled: the command layer refuses (and logs)
        # that action and says why, instead of the key doing nothing.
        *(Binding(p.key, f"refused('{p.name}')", show=False) for p in keyed()),
    ]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return broker_check(self, action)

    def action_broker(self, action: str) -> None:
        """Act on the broker under the cursor (pause resumes a paused one)."""
        key = self.cursor_key
        if key is None:
            self.notify("no broker selected")
            return
        broker_id = int(key)
        chosen = state(self).key_action(BrokerAction(action), broker_id)
        actions(self).request_broker_action(chosen, broker_id)

    def action_network(self) -> None:
        """Choose a network fault for the node under the cursor (or heal the one in force)."""
        key = self.cursor_key
        if key is None:
            self.notify("no broker selected")
            return
        actions(self).choose_network_fault(int(key))

    def action_drain(self) -> None:
        """Open the reassignment screen on draining the broker under the cursor."""
        key = self.cursor_key
        if key is None:
            self.notify("no broker selected")
            return
        actions(self).open_reassign(drain=int(key))

    def action_refused(self, action: str) -> None:
        """A disabled broker key: the command layer refuses (and logs) it and says why."""
        key = self.cursor_key
        if key is None:
            actions(self).action_broker_actions_unavailable()
            return
        actions(self).refuse_broker_action(BrokerAction(action), int(key))

    def connect(self) -> None:
        subscribe(self, "snapshot", self.redraw, init=True)

    _synced: object = None

    def redraw(self) -> None:
        """Re-sync from the latest snapshot (skipped when nothing the rows show changed: the
        partition counts are a pass over every partition)."""
        snap = state(self).snapshot
        size = self.size
        inputs = None
        if snap is not None:
            # Everything broker_rows reads: a field left out here leaves its cells as they
            # were (the controllers' states were, while the title beside them changed).
            inputs = (
                snap.brokers,
                snap.controller.id,
                snap.partitions,
                snap.mode,
                snap.quorum,
                snap.controllers,
                snap.never_answered,
                snap.net_faults,
                snap.rates,
                size,
            )
        if inputs is not None and inputs == self._synced:
            return
        self._synced = inputs
        at = self.cursor_key
        cells = rows.broker_rows(snap)
        # What the table has room for (less the vertical scrollbar when the rows need it): in a
        # narrow pane lower-value columns give way.
        scrolls = len(cells) + 1 > size.height
        width = size.width - (self.styles.scrollbar_size_vertical if scrolls else 0)
        columns, cells = rows.fit_broker_table(
            rows.broker_columns(snap), cells, width if size.width else None
        )
        self.set_columns(columns)
        self.sync(cells)
        if at is not None and at in self.rows and self.cursor_key != at:
            self.move_cursor(row=self.get_row_index(at))

    def on_resize(self, _event: Resize) -> None:
        self.redraw()


class PartitionsTable(VirtualTable[Partition]):
    """Partitions keyed topic/partition, filtered and ordered by `view`; L acts on the leader
    of the one under the cursor."""

    COLUMNS = rows.PARTITION_COLUMNS
    BINDINGS = [
        Binding(
            "L",
            "leader_actions",
            "Leader",
            tooltip=f"{keyed_words().capitalize()} this partition's leader",
            id="partition-leader",
        ),
        Binding("L", UNAVAILABLE, show=False),
        Binding(
            "E",
            "elect('preferred')",
            "Elect",
            tooltip="Preferred leader election: this partition, its topic, or all off-preferred",
            id="partition-elect",
        ),
        Binding(
            "U",
            "elect('unclean')",
            "Unclean",
            tooltip="Unclean leader election for the selected OFFLINE partition (can lose data)",
            id="partition-unclean",
        ),
        Binding(
            "R",
            "reassign",
            "Reassign",
            tooltip="Reassign the selected partition's topic (propose, check, execute, follow)",
            id="partition-reassign",
        ),
    ]

    view: reactive[PartitionView] = reactive(PartitionView, init=False)

    class InView(Message):
        """Other partitions are in view now: in a burst of changes the observer reads
        their state first (the app passes this on; a widget never talks to a source)."""

        def __init__(self, partitions: frozenset[tuple[str, int]]) -> None:
            super().__init__()
            self.partitions = partitions

    _snap: ClusterSnapshot | None = None  # what the rows are drawn against
    _in_view: list[str] = []  # the keys of the rows last reported in view

    def on_mount(self) -> None:
        subscribe(self, "snapshot", self.redraw, init=True)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._report_in_view()

    def on_resize(self, _event: Resize) -> None:
        self._report_in_view()

    def _report_in_view(self) -> None:
        top = round(self.scroll_offset.y)
        keys = self._order[top : top + max(self.size.height - 1, 0)]  # less the header
        if keys != self._in_view:
            self._in_view = keys
            items = (self._items[k] for k in keys)
            self.post_message(self.InView(frozenset((p.topic, p.partition) for p in items)))

    _elr = False  # the ELR columns are shown (the snapshot reports ELR)
    _rated = False  # the rate column is shown (the snapshot carries rates)

    def _order_in_view(self) -> list[str]:
        """The keys of the rows on screen."""
        top = round(self.scroll_offset.y)
        return [
            k for k in self._order[top : top + max(self.size.height - 1, 0)] if k in self._items
        ]

    def render_cells(self, key: str, item: Partition) -> list[Text]:
        assert self._snap is not None
        return rows.partition_cells(self._snap, item, self._elr)

    def cell_widths(self, key: str, item: Partition) -> tuple[int, ...]:
        assert self._snap is not None
        return rows.partition_widths(self._snap, item, elr=self._elr)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return broker_check(self, action)

    def action_elect(self, kind: str) -> None:
        """Leader election for the selected partition (preferred: choose the scope first)."""
        key = self.cursor_key
        topic, _, part = (key or "").rpartition("/")
        if not topic or not part.isdigit():
            self.notify("no partition selected")
            return
        if kind == "preferred":
            actions(self).choose_election(topic, int(part))
            return
        snap = state(self).snapshot
        p = snap.partition(topic, int(part)) if snap else None
        if p is None or not snap or not snap.is_offline(p):
            self.notify(
                f"{key} has a leader: an unclean election is only for an offline partition",
                severity="warning",
            )
            return
        actions(self).request_election("unclean", [(topic, int(part))])

    def action_reassign(self) -> None:
        """Open the reassignment screen on the selected partition's topic."""
        key = self.cursor_key
        topic, _, part = (key or "").rpartition("/")
        if not topic or not part.isdigit():
            self.notify("no partition selected")
            return
        actions(self).open_reassign(topics=[topic], partition=(topic, int(part)))

    def action_leader_actions(self) -> None:
        """Choose an action for the selected partition's leader."""
        key = self.cursor_key
        partition = self.item(key) if key else None
        if partition is None:
            self.notify("no partition selected")
        elif partition.leader < 0:
            self.notify(f"{partition.key} has no leader", severity="warning", markup=False)
        else:
            actions(self).choose_broker_action(partition.leader, f"leader of {partition.key}")

    def watch_view(self) -> None:
        self.redraw()

    counts: reactive[rows.PartitionCounts] = reactive(
        rows.PartitionCounts, init=False, repaint=False
    )
    """What the pane title counts, kept with the rows (a pass over every partition is what
    a refresh on a big cluster must not cost)."""

    _built_context: object = None  # what every row depends on besides its own partition
    _built_from: ClusterSnapshot | None = None  # the snapshot the rows were built from
    _built_shown: set[str] = set()
    _health: dict[str, tuple[int, int]] = {}  # (offline, unhealthy) of every partition, by key

    def redraw(self) -> None:
        self._rebuild()
        self._report_in_view()

    def _rebuild(self) -> None:
        """Show the latest snapshot through the current view, touching only what changed.

        Every poll brings a new snapshot, usually with the very same partitions (the observer
        hands on the same tuple): nothing to do. When some partitions changed, only their rows
        are measured again (and drawn again if on screen), and the order is recomputed only
        when the change can move a row. A change to the brokers, topics or view rebuilds
        every row (as data: rows are drawn only when on screen).
        """
        snap = state(self).snapshot
        if snap is None:
            self._built_context, self._built_from, self._built_shown = None, None, set()
            self._health = {}
            self.replace_rows({})
            self.counts = rows.PartitionCounts()
            return
        elr = rows.has_elr(snap)
        rated = snap.rates is not None
        context = (
            snap.topics,
            tuple((b.id, b.state, b.registered) for b in snap.brokers),
            self.view,
            elr,
            rated,
        )
        built = self._built_from
        if context != self._built_context or built is None:
            self._snap = snap
            if (elr, rated) != (self._elr, self._rated):
                self._elr, self._rated = elr, rated
                self.columns = rows.partition_columns(elr, rated)
                self._labels = [Text.from_markup(label) for _, label in self.columns]
            all_flags = {p.key: snap.flags(p) for p in snap.partitions}  # one pass: what costs
            shown = rows.visible_partitions(snap, self.view)
            self.replace_rows(
                {p.key: p for p in shown},
                {p.key: rows.partition_widths(snap, p, all_flags[p.key], elr) for p in shown},
            )
            self._built_context, self._built_from = context, snap
            self._built_shown = set(self._items)
            self._health = {
                p.key: rows.partition_health(snap, p, all_flags[p.key]) for p in snap.partitions
            }
            self.counts = rows.PartitionCounts(
                len(snap.partitions),
                len(self._built_shown),
                sum(o for o, _ in self._health.values()),
                sum(u for _, u in self._health.values()),
            )
            return
        new_rates = rated and snap.rates is not built.rates
        if snap.partitions is built.partitions and not new_rates:
            self._built_from = snap  # the next snapshot's changes are counted from this one
            return
        self._snap = snap
        if snap.partitions is built.partitions:
            # New rates only: the rows in view are drawn again (the rate column's width is
            # fixed: nothing is measured again); sorted by rate, the order is worked out again.
            self._built_from = snap
            order = None
            if self.view.sort == "rate":
                order = [p.key for p in rows.visible_partitions(snap, self.view)]
            self.patch({k: self._items[k] for k in self._order_in_view()}, (), order)
            return
        # Same brokers, topics and view: a row depends on its own partition only, and so do
        # its flags (what the counts add up).
        shown_keys = set(self._built_shown)
        c = self.counts
        offline, unhealthy = c.offline, c.unhealthy
        changed: dict[str, Partition] = {}
        widths: dict[str, tuple[int, ...]] = {}
        removed: list[str] = []
        added = False
        health = self._health
        view = self.view  # a reactive: read once, not for each of a failover's thousands
        for before, after in rows.snapshot_changes(built, snap):
            if before is not None:
                o, u = health.pop(before.key, (0, 0))
                offline, unhealthy = offline - o, unhealthy - u
            if after is None:
                key = before.key  # type: ignore[union-attr]
            else:
                key = after.key
                flags = snap.flags(after)
                o, u = health[key] = rows.partition_health(snap, after, flags)
                offline, unhealthy = offline + o, unhealthy + u
            if after is None or not view.shows(snap, after):
                if key in shown_keys:
                    shown_keys.discard(key)
                    removed.append(key)
                continue
            added = added or key not in shown_keys
            shown_keys.add(key)
            changed[key] = after
            widths[key] = rows.partition_widths(snap, after, flags, elr)
        # Topic and partition never change: under those sorts only a new row moves rows.
        moves = added or (bool(changed) and self.view.sort not in ("topic", "partition"))
        order = [p.key for p in rows.visible_partitions(snap, self.view)] if moves else None
        self.patch(changed, removed, order, widths)
        self._built_from, self._built_shown = snap, shown_keys
        self.counts = rows.PartitionCounts(
            len(snap.partitions), len(shown_keys), offline, unhealthy
        )

    def sort_by(self, column: str) -> None:
        """Sort by `column`; choosing the current sort column again reverses it."""
        if column not in rows.PARTITION_SORTS:
            return
        same = column == self.view.sort
        self.view = replace(
            self.view, sort=column, reverse=not self.view.reverse if same else False
        )

    def cycle_sort(self) -> None:
        """Sort by the next column (topic → partition → leader → … → flags → topic)."""
        order = [key for key, _ in self.COLUMNS]
        nxt = order[(order.index(self.view.sort) + 1) % len(order)]
        self.view = replace(self.view, sort=nxt, reverse=False)

    def on_virtual_table_header_selected(self, event: VirtualTable.HeaderSelected) -> None:
        event.stop()
        self.sort_by(event.column_key)


class GroupsTable(KeyedTable):
    """Consumer groups by id; Enter opens the group."""

    COLUMNS = rows.GROUP_COLUMNS
    BINDINGS = [
        Binding("enter", "select_cursor", "Open group", id="open-group"),
    ]

    def connect(self) -> None:
        subscribe(self, "snapshot", self.redraw, init=True)

    _shown: tuple[Group, ...] = ()
    _rates: Rates | None = None
    _aged: frozenset[str] = frozenset()  # groups with carried figures: their age keeps counting
    _name_width: int | None = None  # the ids' width when elided to fit (a narrow pane)

    def on_resize(self, _event: Resize) -> None:
        self.redraw()

    def _fit_names(self, groups: tuple[Group, ...], now: float) -> int | None:
        """The width group ids are elided to, so that the state and the lag stay in view; None
        when every column fits (the columns after the lag may still need a scroll)."""
        width = self.size.width - self.styles.scrollbar_size_vertical
        if width <= 0 or not groups:
            return None
        ids = max(cell_len(g.group_id) for g in groups)
        lags = max(max(rows.group_lag(g, now).cell_len for g in groups), 3)
        states = max(max(cell_len(g.state) for g in groups), 5)
        if ids + states + lags + 6 <= width:
            return None
        short = max(
            max(cell_len(rows.SHORT_GROUP_STATES.get(rows.state_key(g.state), g.state))
                for g in groups),
            5,
        )  # fmt: skip
        return max(width - short - lags - 6, 6)

    def redraw(self) -> None:
        """Follow the latest snapshot's groups. The observer hands on an unchanged group as the
        same object (and unchanged groups as the same tuple): a snapshot from another source
        costs nothing here, and a group poll costs the groups whose figures changed (plus
        those showing an age). In a pane too narrow for them all, ids are elided (every row
        again when that width changes)."""
        snap = state(self).snapshot
        groups = snap.groups if snap is not None else ()
        if not self.columns:
            return
        now = snap.taken_at if snap is not None else 0.0
        rates = snap.rates if snap is not None else None
        columns = rows.group_columns(groups, rates is not None)
        every = columns != self.shown_columns
        if every:
            self.set_columns(columns)  # every row goes: all are built again below
        typed = rows.has_group_types(groups)
        name_width = self._fit_names(groups, now)
        # New rates: every group's status and trend may have changed (a few rows at most).
        every = every or name_width != self._name_width or rates is not self._rates
        self._rates = rates
        if groups is self._shown and not self._aged and not every:
            return
        self._name_width = name_width
        before = {g.group_id: g for g in self._shown}
        changed: dict[str, list[Text]] = {}
        aged = set()
        for g in groups:
            if g.oldest is not None:
                aged.add(g.group_id)
            elif before.get(g.group_id) is g and not every:
                continue
            changed[g.group_id] = rows.group_row(
                g,
                now,
                name_width,
                typed=typed,
                rates=rates is not None,
                rate=rates.group(g.group_id) if rates is not None else None,
            )
        order = sorted(g.group_id for g in groups)
        present = set(order)
        self.patch(changed, [k for k in self.row_keys if k not in present], order)
        self._shown, self._aged = groups, frozenset(aged)


@dataclass(frozen=True)
class EventLine:
    """One line of the events pane: a whole event, or in a narrow pane line `line` of it."""

    event: LoggedEvent
    line: int = 0
    text: str = ""


class EventsTable(VirtualTable[EventLine]):
    """Events, newest first; with the cursor on the newest row it keeps following the newest.
    A burst of events (a third of 10,000 leaders moving) costs only the rows on screen.

    An event shows whole: its text wrapped onto lines below it, never cut off at the pane's
    edge. Narrower than WRAP_BELOW cells (80 columns: 44) without the kind column, and the
    time to the second."""

    COLUMNS = rows.EVENT_COLUMNS
    WRAP_BELOW = 72
    follow_top = True

    _shown: tuple[LoggedEvent, ...] | None = None
    _wrap: int | None = None  # the text's width (None: not laid out yet, nothing wrapped)
    _narrow = False  # without the kind column
    _lines: dict[int, dict[str, EventLine]] = {}  # each event's rows by seq, when wrapping

    def on_mount(self) -> None:
        subscribe(self, "events", self.redraw, init=True)

    def on_resize(self, _event: Resize) -> None:
        width = self.size.width
        narrow = width < self.WRAP_BELOW
        # Each column is padded 1 + 1; the vertical scrollbar's column is kept: it comes and
        # goes with the rows.
        used = rows.SHORT_CLOCK_WIDTH + 4 if narrow else rows.CLOCK_WIDTH + rows.KIND_WIDTH + 6
        wrap = max(width - used - self.styles.scrollbar_size_vertical, 8)
        if (wrap, narrow) != (self._wrap, self._narrow):
            self._wrap, self._narrow = wrap, narrow
            self._shown, self._lines = None, {}
            columns = rows.NARROW_EVENT_COLUMNS if narrow else rows.EVENT_COLUMNS
            self.set_columns(columns, {})
            self.redraw()

    def render_cells(self, key: str, item: EventLine) -> list[Text]:
        if self._wrap is None:
            return rows.event_cells(item.event)
        if self._narrow:
            return rows.narrow_event_cells(item.event, item.line, item.text)
        return rows.wrapped_event_cells(item.event, item.line, item.text)

    def cell_widths(self, key: str, item: EventLine) -> tuple[int, ...]:
        if self._wrap is None:
            return rows.event_widths(item.event)
        if self._narrow:
            clock = rows.SHORT_CLOCK_WIDTH if item.line == 0 else 0
            return (clock, cell_len(item.text))
        first = item.line == 0
        kind = cell_len(item.event.event.kind.value) if first else 0
        return (rows.CLOCK_WIDTH if first else 0, kind, cell_len(item.text))

    def _event_lines(self, le: LoggedEvent) -> dict[str, EventLine]:
        """A wrapped event's rows: its seq, then seq.1, seq.2 … for the lines below."""
        lines = self._lines.get(le.seq)
        if lines is None:
            assert self._wrap is not None
            lines = self._lines[le.seq] = {
                (f"{le.seq}.{i}" if i else str(le.seq)): EventLine(le, i, text)
                for i, text in enumerate(rows.event_lines(le, self._wrap))
            }
        return lines

    def redraw(self) -> None:
        """Follow the app's event log: new events come in, the oldest drop out (an event
        itself never changes)."""
        events = state(self).events
        if events is self._shown:
            return
        self._shown = events
        if self._wrap is None:
            keys = [str(le.seq) for le in events]
            new = {
                key: EventLine(le)
                for key, le in zip(keys, events, strict=True)
                if self.item(key) is None
            }
        else:
            keys, new = [], {}
            for le in events:
                lines = self._event_lines(le)
                keys.extend(lines)
                if self.item(str(le.seq)) is None:
                    new.update(lines)
            if len(self._lines) > len(events):  # forget the lines of events dropped out
                shown = {le.seq for le in events}
                self._lines = {seq: v for seq, v in self._lines.items() if seq in shown}
        wanted = set(keys)
        self.patch(new, [key for key in self.row_keys if key not in wanted], keys)


class GroupPartitionsTable(KeyedTable):
    """One consumer group's partitions: committed offset, log end, lag, owner."""

    COLUMNS = rows.GROUP_PARTITION_COLUMNS

    def show(
        self,
        group: Group | None,
        now: float | None = None,
        rate: GroupRate | None = None,
        rated: bool = False,
    ) -> None:
        """Show `group`'s partitions (carried figures aged at `now`; with `rated`, each one's
        consumption, production and status from `rate`)."""
        self.set_columns(rows.group_partition_columns(group, rated))
        self.sync(rows.group_partition_rows(group, now, rate if rated else None, rated))
