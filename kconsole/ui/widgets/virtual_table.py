"""A table on Textual's Line API: rows are kept as data and drawn only while on screen.

DataTable keeps every row as rendered cells, and every cell change clears its line, row and
offset caches. On 10,000 partitions that made the first frame cost 1.2 s and a third of the
leaders moving 0.4 s of UI time (bench/RESULTS.md). Here a row is a key and an item (a
Partition); its cells are built when the row is first drawn and again only when its item
changes, column widths come from a cheap per-row measure kept as counts, and a change costs
what changed plus the rows on screen.

It draws exactly what DataTable draws with cursor_type="row" (the same component classes and
padding), so the console looks the same and its snapshot tests hold it to that. The header line
carries DataTable's row/column meta; a body line only its column: the mouse finds its row from
its position, so a drawn line is reused wherever its row moves (new events push every row down).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import ClassVar, Generic, TypeVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size, Spacing
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from kconsole.ui.rows import Columns

Item = TypeVar("Item")

PADDING = 1  # spaces on each side of a cell, as DataTable's default cell_padding


class VirtualTable(ScrollView, Generic[Item], can_focus=True):
    """Rows by key, in a given order; subclasses say how an item becomes cells."""

    COLUMNS: ClassVar[Columns] = ()
    # Keep the cursor on the first row when it was there (a log that should keep showing the
    # newest entry) instead of on the same key.
    follow_top: ClassVar[bool] = False

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "datatable--cursor",
        "datatable--hover",
        "datatable--header",
        "datatable--header-hover",
    }

    # DataTable's own rules for what this table uses, so both kinds of table look alike.
    DEFAULT_CSS = """
    VirtualTable {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;
        &:focus {
            background-tint: $foreground 5%;
            & > .datatable--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .datatable--header {
                background-tint: $foreground 5%;
            }
        }
        & > .datatable--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .datatable--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }
        & > .datatable--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        & > .datatable--header-hover {
            background: $accent 30%;
        }
        & > .datatable--hover {
            background: $block-hover-background;
        }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor_up", "Cursor up", show=False),
        Binding("down", "cursor_down", "Cursor down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("ctrl+home", "scroll_top", "Top", show=False),
        Binding("ctrl+end", "scroll_bottom", "Bottom", show=False),
        Binding("home", "scroll_top", "Top", show=False),
        Binding("end", "scroll_bottom", "Bottom", show=False),
        Binding("left", "scroll_left", "Scroll left", show=False),
        Binding("right", "scroll_right", "Scroll right", show=False),
    ]

    cursor_row: reactive[int] = reactive(0, repaint=False, always_update=True)
    """The index, in display order, of the row under the cursor."""

    class HeaderSelected(Message):
        """A column's header was clicked."""

        def __init__(self, table: VirtualTable[object], column_key: str) -> None:
            super().__init__()
            self.table = table
            self.column_key = column_key

        @property
        def control(self) -> VirtualTable[object]:
            return self.table

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._items: dict[str, Item] = {}
        self._order: list[str] = []
        self._index: dict[str, int] = {}
        self._cells: dict[str, Sequence[Text]] = {}  # built on first draw, dropped on change
        # Drawn lines by row key (None: the header), dropped when the row changes.
        self._strips: dict[str | None, dict[tuple[object, ...], Strip]] = {}
        self._row_widths: dict[str, tuple[int, ...]] = {}
        self.columns: Columns = self.COLUMNS
        """The columns shown (COLUMNS, unless set_columns chose others)."""
        self._labels = [Text.from_markup(label) for _, label in self.columns]
        self._counts: list[Counter[int]] = [Counter() for _ in self.columns]
        self._widths = [label.cell_len for label in self._labels]
        self._hover: int | None = None  # the row under the mouse (-1: the header)

    # -- what a subclass says ------------------------------------------------------------
    def render_cells(self, key: str, item: Item) -> Sequence[Text]:
        """The cells of one row, one per column."""
        raise NotImplementedError

    def cell_widths(self, key: str, item: Item) -> tuple[int, ...]:
        """The width of each of the row's cells, without drawing them where it can (what
        every row is measured by: a subclass should make this cheap)."""
        return tuple(cell.cell_len for cell in self.render_cells(key, item))

    # -- reading -------------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        return len(self._order)

    @property
    def row_keys(self) -> list[str]:
        """Row keys in display order."""
        return list(self._order)

    @property
    def cursor_key(self) -> str | None:
        """The key of the row under the cursor, if any."""
        return self._order[self.cursor_row] if self.is_valid_row_index(self.cursor_row) else None

    def is_valid_row_index(self, index: int) -> bool:
        return 0 <= index < len(self._order)

    def item(self, key: str) -> Item | None:
        """The item shown as row `key`, if it is shown."""
        return self._items.get(key)

    def get_row_index(self, key: str) -> int:
        return self._index[key]

    def get_row(self, key: str) -> list[Text]:
        """The cells of the row `key` (drawn now if they were not yet)."""
        return list(self._row_cells(key))

    def get_cell(self, key: str, column: str) -> Text:
        return self._row_cells(key)[[k for k, _ in self.columns].index(column)]

    @property
    def column_widths(self) -> list[int]:
        """Each column's content width (its widest cell or its label)."""
        return list(self._widths)

    # -- changing ------------------------------------------------------------------------
    def set_columns(self, columns: Columns, items: Mapping[str, Item]) -> None:
        """Show `columns` from now on, with rows `items` (render_cells must give those)."""
        self.columns = columns
        self._labels = [Text.from_markup(label) for _, label in columns]
        self.replace_rows(items)

    def replace_rows(
        self, items: Mapping[str, Item], widths: Mapping[str, tuple[int, ...]] | None = None
    ) -> None:
        """Show exactly `items`, in their order (every row is measured again, unless
        `widths` gives its cell widths)."""
        at = self._cursor_anchor()
        self._items = dict(items)
        self._order = list(items)
        self._index = {key: i for i, key in enumerate(self._order)}
        self._cells.clear()
        self._strips.clear()
        self._row_widths = {}
        self._counts = [Counter() for _ in self.columns]
        for key, item in self._items.items():
            self._measure(key, item, widths)
        self._settle(at, everything=True)

    def patch(
        self,
        changed: Mapping[str, Item],
        removed: Iterable[str] = (),
        order: list[str] | None = None,
        widths: Mapping[str, tuple[int, ...]] | None = None,
    ) -> None:
        """Apply a change: `changed` rows are new or different, `removed` are gone, and
        `order` (needed when a row is new or the order changed) is the whole display order;
        `widths` may give changed rows' cell widths already measured. The cost grows with
        the change, not with the table."""
        at = self._cursor_anchor()
        gone = [key for key in removed if key in self._items]
        for key in gone:
            del self._items[key]
            self._forget(key)
        for key, item in changed.items():
            self._items[key] = item
            self._remeasure(key, item, widths)
        if order is not None and order != self._order:
            assert len(order) == len(self._items), "order must name every row"
            self._order = list(order)
            self._index = {key: i for i, key in enumerate(self._order)}
            self._settle(at, everything=True)
            return
        if gone:
            self._order = [key for key in self._order if key in self._items]
            self._index = {key: i for i, key in enumerate(self._order)}
            self._settle(at, everything=True)
            return
        assert all(key in self._index for key in changed), "a new row needs the order"
        if not self._settle(at, everything=False):
            self._refresh_rows(changed)

    def _refresh_rows(self, keys: Iterable[str]) -> None:
        """Mark the lines of rows `keys` for redrawing: only those in view (a row scrolled
        out of view is drawn when it comes into view; marking it costs as much as drawing a
        line, 3,000 times over when a third of 10,000 leaders move)."""
        top = self.scroll_offset.y
        height = self.size.height
        lines = [y for key in keys if top <= (y := self._index[key] + 1) <= top + height]
        if len(lines) > height // 2:
            self.refresh()
            return
        for y in lines:
            self.refresh_line(y)

    def _measure(self, key: str, item: Item, widths: Mapping[str, tuple[int, ...]] | None) -> None:
        """Count the row's cell widths in (given in `widths`, or measured now)."""
        row_widths = widths.get(key) if widths else None
        if row_widths is None:
            row_widths = self.cell_widths(key, item)
        self._row_widths[key] = row_widths
        for counts, w in zip(self._counts, row_widths, strict=True):
            counts[w] += 1

    def _remeasure(
        self, key: str, item: Item, widths: Mapping[str, tuple[int, ...]] | None
    ) -> None:
        """_forget then _measure for a row that stays, counting only the widths that moved
        (a failover on 10,000 partitions changes thousands of rows, each in a column or two)."""
        self._cells.pop(key, None)
        self._strips.pop(key, None)
        old = self._row_widths.get(key)
        new = widths.get(key) if widths else None
        if new is None:
            new = self.cell_widths(key, item)
        self._row_widths[key] = new
        if old is None:
            for counts, w in zip(self._counts, new, strict=True):
                counts[w] += 1
            return
        if old == new:
            return
        for counts, was, w in zip(self._counts, old, new, strict=True):
            if was != w:
                counts[w] += 1
                counts[was] -= 1
                if not counts[was]:
                    del counts[was]

    def _cursor_anchor(self) -> str | None:
        """The row the cursor should stay on through a change (None: its place)."""
        return None if self.follow_top and self.cursor_row == 0 else self.cursor_key

    def _forget(self, key: str) -> None:
        self._cells.pop(key, None)
        old = self._row_widths.pop(key, None)
        if old is not None:
            for counts, w in zip(self._counts, old, strict=True):
                counts[w] -= 1
                if not counts[w]:
                    del counts[w]
        self._strips.pop(key, None)

    def _settle(self, at: str | None, *, everything: bool) -> bool:
        """After a change: widths, size and cursor. True when the whole table was marked
        for redrawing (a width changed, or `everything`)."""
        widths = [
            max(label.cell_len, max(counts) if counts else 0)
            for label, counts in zip(self._labels, self._counts, strict=True)
        ]
        if widths != self._widths:
            self._widths = widths
            everything = True
            self._strips.clear()
        size = Size(sum(w + 2 * PADDING for w in widths), len(self._order) + 1)
        if size != self.virtual_size:
            self._resize(size)
        if at is not None and at in self._index:
            if self._index[at] != self.cursor_row:
                self.move_cursor(row=self._index[at])
        elif self._order and self.cursor_row >= len(self._order):
            self.move_cursor(row=len(self._order) - 1)
        if everything:
            self.refresh()
        return everything

    def _resize(self, size: Size) -> None:
        """A new virtual size. Setting `virtual_size` asks for a layout of the whole screen
        (then every widget on it draws every line again: 50 ms on a 160x48 console, for each
        burst of new events during a failover). The table's own size does not change with its
        rows, so only its scrollbars are updated, unless one of them comes or goes (that
        changes the region the rows are drawn in: then it is a layout)."""
        bars = (self.show_vertical_scrollbar, self.show_horizontal_scrollbar)
        self.set_reactive(VirtualTable.virtual_size, size)
        self._refresh_scrollbars()
        if (self.show_vertical_scrollbar, self.show_horizontal_scrollbar) != bars:
            self.refresh(layout=True)
        else:
            self._scroll_update(size)
            self.refresh()

    # -- the cursor ------------------------------------------------------------------------
    def validate_cursor_row(self, row: int) -> int:
        return max(0, min(row, len(self._order) - 1))

    def watch_cursor_row(self, old: int, new: int) -> None:
        if self._hover is not None and self._hover >= 0:  # the keys moved: no row hover
            self.refresh_line(self._hover + 1)
            self._hover = None
        if old != new:
            self.refresh_line(old + 1)
        self.refresh_line(new + 1)

    def move_cursor(self, *, row: int, scroll: bool = True) -> None:
        """Put the cursor on row `row` (and, by default, bring it into view)."""
        self.cursor_row = row
        if scroll:
            self.scroll_to_row(self.cursor_row)

    def scroll_to_row(self, row: int, animate: bool = False) -> None:
        """Scroll so that row `row` is on screen, below the header."""
        self.scroll_to_region(
            Region(int(self.scroll_x), row + 1, 1, 1),
            spacing=Spacing(top=1),
            animate=animate,
            force=True,
            x_axis=False,
        )

    def action_cursor_up(self) -> None:
        self.move_cursor(row=self.cursor_row - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(row=self.cursor_row + 1)

    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def action_page_up(self) -> None:
        self.scroll_relative(y=-self._page(), animate=False, force=True)
        self.move_cursor(row=self.cursor_row - self._page(), scroll=False)

    def action_page_down(self) -> None:
        self.scroll_relative(y=self._page(), animate=False, force=True)
        self.move_cursor(row=self.cursor_row + self._page(), scroll=False)

    def action_scroll_top(self) -> None:
        self.move_cursor(row=0)

    def action_scroll_bottom(self) -> None:
        self.move_cursor(row=len(self._order) - 1)

    # -- the mouse -------------------------------------------------------------------------
    def _row_at(self, event: events.MouseEvent) -> int | None:
        """The row under the mouse (-1: the header line, which stays at the top)."""
        offset = event.get_content_offset(self)
        if offset is None:
            return None
        row = -1 if offset.y == 0 else self.scroll_offset.y + offset.y - 1
        return row if row < len(self._order) else None

    def _on_mouse_move(self, event: events.MouseMove) -> None:
        row = self._row_at(event)
        if row is not None and row != self._hover:
            for r in (self._hover, row):
                if r is not None:
                    self.refresh_line(r + 1 if r >= 0 else self.scroll_offset.y)
            self._hover = row

    def _on_leave(self, _: events.Leave) -> None:
        if self._hover is not None:
            hover, self._hover = self._hover, None
            self.refresh_line(hover + 1 if hover >= 0 else self.scroll_offset.y)

    async def _on_click(self, event: events.Click) -> None:
        row, column = self._row_at(event), event.style.meta.get("column")
        if row is None or not isinstance(column, int):
            return
        if row == -1:
            self.post_message(self.HeaderSelected(self, self.columns[column][0]))  # type: ignore[arg-type]
        else:
            self.move_cursor(row=row)
        event.stop()

    # -- drawing ---------------------------------------------------------------------------
    def notify_style_update(self) -> None:
        self._strips.clear()
        super().notify_style_update()

    def _row_cells(self, key: str) -> Sequence[Text]:
        cells = self._cells.get(key)
        if cells is None:
            cells = self._cells[key] = self.render_cells(key, self._items[key])
        return cells

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        base = self.rich_style
        row = -1 if y == 0 else scroll_y + y - 1
        if row >= len(self._order):
            return Strip.blank(width, base)
        key = None if row < 0 else self._order[row]
        # A row's line does not depend on where it is (the mouse finds its row from the
        # position, not from the line's meta): when new events push every row down, each
        # row already drawn is drawn from the cache.
        cache_key = (row == self.cursor_row, row == self._hover, width, base, scroll_x)
        drawn = self._strips.get(key)
        strip = drawn.get(cache_key) if drawn else None
        if strip is None:
            strip = (
                self._draw(row, key, width, base)
                .crop(scroll_x, scroll_x + width)
                .adjust_cell_length(width, base)
                .simplify()
            )
            if len(self._strips) > 4 * max(self.size.height, 1):  # keep what is on screen
                self._strips.clear()
            self._strips.setdefault(key, {})[cache_key] = strip
        return strip

    def _draw(self, row: int, key: str | None, width: int, base: Style) -> Strip:
        """Row `row` (-1: the header) as DataTable draws it: each cell padded and styled
        over the row's style, then the rest of the line in the row's style."""
        header = key is None
        cursor = not header and row == self.cursor_row
        hover = row == self._hover
        component = Style()
        if hover:
            component += self.get_component_rich_style("datatable--hover")
            if header:
                component += self.get_component_rich_style("datatable--header-hover")
        if cursor:
            component += self.get_component_rich_style("datatable--cursor")
        row_style = self.get_component_styles("datatable--header").rich_style if header else base
        post = Style.from_color(color=component.color)
        cells: Sequence[Text] = self._labels if key is None else self._row_cells(key)
        get_style = self.app.console.get_style
        segments: list[Segment] = []
        # What DataTable gets from rendering Styled(Padding(cell, (0, 1)), pre, post) one
        # line high, put together directly: a console render per cell made a screenful of
        # changed rows cost tens of milliseconds.
        for column, (cell, w) in enumerate(zip(cells, self._widths, strict=True)):
            meta = {"row": row, "column": column} if header else {"column": column}
            pre = row_style + Style.from_meta(meta) + component
            pad = pre + post
            segments.append(Segment(" " * PADDING, pad))
            if cell._spans:
                for seg in cell.render(self.app.console):
                    segments.append(Segment(seg.text, pre + seg.style + post))
            elif cell.plain:
                style = get_style(cell.style) if cell.style else None
                segments.append(Segment(cell.plain, pre + style + post))
            segments.append(Segment(" " * (w - cell.cell_len + PADDING), pad))
        remaining = max(0, width - sum(w + 2 * PADDING for w in self._widths))
        extend = row_style + component + Style.from_meta({"column": 0, "out_of_bounds": True})
        segments.append(Segment(" " * remaining, extend))
        return Strip(segments)
