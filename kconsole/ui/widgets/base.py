"""What every kconsole widget shares: typed access to the app's state."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.dom import DOMNode

# Actions of the broker keys, wherever they are bound. Each key also has a hidden fallback
# binding to UNAVAILABLE, reached only while the action is disabled: it says why.
BROKER_ACTIONS = ("broker", "leader_actions", "controller_actions")
UNAVAILABLE = "app.broker_actions_unavailable"

if TYPE_CHECKING:
    from kconsole.ui.app import KConsoleApp


def console(node: DOMNode) -> KConsoleApp:
    """The running KConsoleApp (widgets read its snapshot, events, clock; they fetch nothing)."""
    return cast("KConsoleApp", node.app)
