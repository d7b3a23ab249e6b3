"""What every kconsole widget shares: typed access to the app's state."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.dom import DOMNode

if TYPE_CHECKING:
    from kconsole.ui.app import KConsoleApp


def console(node: DOMNode) -> KConsoleApp:
    """The running KConsoleApp (widgets read its snapshot, events, clock; they fetch nothing)."""
    return cast("KConsoleApp", node.app)
