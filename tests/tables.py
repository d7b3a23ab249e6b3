"""Reading the console's tables in tests: DataTable-based ones (KeyedTable) and the Line-API
ones (VirtualTable: partitions, events) answer the same questions by row key."""

from __future__ import annotations

from typing import Any

from textual.dom import DOMNode

from kconsole.ui.widgets.table import KeyedTable
from kconsole.ui.widgets.virtual_table import VirtualTable

Table = KeyedTable | VirtualTable[Any]


def table(node: DOMNode, table_id: str) -> Table:
    """The table `#table_id` under `node` (a screen)."""
    widget = node.query_one(f"#{table_id}")
    assert isinstance(widget, KeyedTable | VirtualTable), f"#{table_id} is {widget!r}"
    return widget
