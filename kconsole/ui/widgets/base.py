"""What every kconsole widget shares: the broker keys' actions (the state and actions a widget
may use are in kconsole.ui.context)."""

from __future__ import annotations

# Actions of the broker keys, wherever they are bound. Each key also has a hidden fallback
# binding to UNAVAILABLE, reached only while the action is disabled: it says why.
BROKER_ACTIONS = ("broker", "leader_actions", "controller_actions", "network")
UNAVAILABLE = "app.broker_actions_unavailable"
