"""The console's tables. Each follows one piece of app state and re-syncs its rows by key."""

from __future__ import annotations

from dataclasses import replace

from textual.binding import Binding
from textual.reactive import reactive
from textual.widgets import DataTable

from kconsole.models import Group
from kconsole.ui import rows
from kconsole.ui.rows import PartitionView
from kconsole.ui.widgets.base import console
from kconsole.ui.widgets.table import KeyedTable


class BrokersTable(KeyedTable):
    """Brokers by id. Broker actions (stop / kill / pause / start) will bind keys here."""

    COLUMNS = rows.BROKER_COLUMNS

    def connect(self) -> None:
        self.watch(console(self), "snapshot", self.redraw, init=True)

    def redraw(self) -> None:
        """Re-sync from the latest snapshot."""
        self.sync(rows.broker_rows(console(self).snapshot))


class PartitionsTable(KeyedTable):
    """Partitions keyed topic/partition, filtered and ordered by `view`."""

    COLUMNS = rows.PARTITION_COLUMNS

    view: reactive[PartitionView] = reactive(PartitionView, init=False)

    def connect(self) -> None:
        self.watch(console(self), "snapshot", self.redraw, init=True)

    def watch_view(self) -> None:
        self.redraw()

    def redraw(self) -> None:
        """Re-sync from the latest snapshot and the current view."""
        self.sync(rows.partition_rows(console(self).snapshot, self.view))

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

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        self.sort_by(str(event.column_key.value))


class GroupsTable(KeyedTable):
    """Consumer groups by id; Enter opens the group."""

    COLUMNS = rows.GROUP_COLUMNS
    BINDINGS = [
        Binding("enter", "select_cursor", "Open group", id="open-group"),
    ]

    def connect(self) -> None:
        self.watch(console(self), "snapshot", self.redraw, init=True)

    def redraw(self) -> None:
        """Re-sync from the latest snapshot."""
        self.sync(rows.group_rows(console(self).snapshot))


class EventsTable(KeyedTable):
    """Events, newest first; with the cursor on the newest row it keeps following the newest."""

    COLUMNS = rows.EVENT_COLUMNS
    follow_top = True

    def connect(self) -> None:
        self.watch(console(self), "events", self.redraw, init=True)

    def redraw(self) -> None:
        """Re-sync from the app's event log."""
        self.sync(rows.event_rows(console(self).events))


class GroupPartitionsTable(KeyedTable):
    """One consumer group's partitions: committed offset, log end, lag, owner."""

    COLUMNS = rows.GROUP_PARTITION_COLUMNS

    def show(self, group: Group | None) -> None:
        """Show `group`'s partitions."""
        self.sync(rows.group_partition_rows(group))
