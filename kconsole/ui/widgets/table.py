"""A DataTable whose rows are kept in step with a {key: cells} mapping, in place."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import ClassVar

from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from kconsole.ui import format as fmt
from kconsole.ui.rows import Columns, KeyCell


class KeyedTable(DataTable[Text]):
    """Rows are updated by key (update_cell / add_row / remove_row), never cleared and
    refilled, so the cursor stays on the same row while the data under it changes."""

    COLUMNS: ClassVar[Columns] = ()
    # Keep the cursor on the first row when it was there (a log that should keep showing the
    # newest entry) instead of on the same key.
    follow_top: ClassVar[bool] = False

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=False)
        self.shown_columns: Columns = self.COLUMNS
        """The columns shown (COLUMNS, unless set_columns chose others)."""

    def on_mount(self) -> None:
        for key, label in self.shown_columns:
            self.add_column(label, key=key)
        self.connect()

    def set_columns(self, columns: Columns) -> None:
        """Show `columns` from now on: every row goes (the caller syncs them again), the
        cursor stays on the same key when that row comes back. A no-op when unchanged."""
        if columns == self.shown_columns:
            return
        self.shown_columns = columns
        if not self.columns:  # not mounted yet: on_mount adds them
            return
        self.clear(columns=True)
        for key, label in columns:
            self.add_column(label, key=key)

    def connect(self) -> None:
        """Start following the app state this table shows (called once the columns exist)."""

    @property
    def cursor_key(self) -> str | None:
        """The key of the row under the cursor, if any."""
        if not self.row_count or not self.is_valid_row_index(self.cursor_row):
            return None
        return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value

    @property
    def row_keys(self) -> list[str]:
        """Row keys in display order."""
        return [str(row.key.value) for row in self.ordered_rows]

    def sync(self, rows: Mapping[str, Sequence[Text]]) -> None:
        """Make the table show exactly `rows`, in their order, touching only what changed."""
        if not self.columns:  # not mounted yet; on_mount's watchers sync again
            return
        existing = set(self.row_keys)
        self.patch(rows, existing - rows.keys(), list(rows), existing=existing)

    def patch(
        self,
        rows: Mapping[str, Sequence[Text]],
        removed: Iterable[str] = (),
        order: list[str] | None = None,
        *,
        existing: set[str] | None = None,
        grow_only: bool = False,
    ) -> None:
        """Apply a change: `rows` are new or changed rows, `removed` are gone, and `order`
        (when given) is the whole display order. The cost grows with the change, not with
        the table (sync() is patch() with every row). With `grow_only` columns widen for
        wider cells but do not narrow until the next sync(): narrowing re-measures every
        cell of the column (DataTable), 0.7 s on 10,000 rows."""
        if not self.columns:
            return
        column_keys = [key for key, _ in self.shown_columns]
        at = None if self.follow_top and self.cursor_row == 0 else self.cursor_key
        if existing is None:
            existing = {k for k in rows if k in self.rows}
        for key in removed:
            self.remove_row(key)
        # Widths are settled once per column, not per cell: DataTable re-measures the whole
        # column for every narrower cell, which made a failover on 2,000 partitions cost tens
        # of seconds of UI time (bench/results/refresh_cost.md).
        widest: dict[str, tuple[int, str, Text]] = {}
        for key, cells in rows.items():
            if key not in existing:
                self.add_row(*cells, key=key)
                continue
            for column, new in zip(column_keys, cells, strict=False):
                if not fmt.same(self.get_cell(key, column), new):
                    self.update_cell(key, column, new)
                    if new.cell_len >= widest.get(column, (-1, "", new))[0]:
                        widest[column] = (new.cell_len, key, new)
        for column, (width, key, new) in widest.items():
            if grow_only and width <= self.columns[ColumnKey(column)].content_width:
                continue
            self.update_cell(key, column, new, update_width=True)
        if order is not None and self.row_keys != order:
            rank = {key: i for i, key in enumerate(order)}
            self.sort(column_keys[0], key=lambda first: rank[_row_key(first)])
        if at is not None and at in self.rows and self.cursor_key != at:
            self.move_cursor(row=self.get_row_index(at))


def _row_key(first_cell: Text) -> str:
    assert isinstance(first_cell, KeyCell), "first cell of a KeyedTable row must be a KeyCell"
    return first_cell.row_key
