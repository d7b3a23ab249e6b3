"""A DataTable whose auto-width columns are redrawn at their new width once it has measured
the rows that widened them."""

from __future__ import annotations

from typing import Any

from textual.geometry import Size
from textual.widgets import DataTable


class AutoWidthTable(DataTable[Any]):
    """DataTable measures added rows later, on its own idle. A frame drawn in between (any
    widget's layout can repaint the screen first) renders the new cells at the old widths,
    and its render caches do not key on widths: without this, the cells stay cut off at the
    column labels' width until a resize or another row, i.e. forever on a quiet tail."""

    def watch_virtual_size(self, old: Size, new: Size) -> None:
        # Measuring sets the scrollable width to the columns' widths: a change means a column
        # changed width (a fixed-size table gets no Resize, which would clear the caches).
        if new.width != old.width:
            self.notify_style_update()  # DataTable's way to drop every render cache and repaint
