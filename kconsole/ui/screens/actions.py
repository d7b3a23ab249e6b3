"""Dialogs for broker actions: choose what to do to a broker picked by role (the controller,
a partition's leader), and confirm a destructive action by typing the broker's id."""

from __future__ import annotations

from typing import ClassVar

from rich.console import Group
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from kconsole.cluster.values import BrokerAction, ProcState
from kconsole.faults import fault_of, keyed, primitive
from kconsole.ui import format as fmt
from kconsole.ui.widgets.footer import KeyBar

# The roles of a KRaft node that is a controller only (no broker): named as a controller.
CONTROLLER_ROLES = ("quorum leader", "voter")


def what(action: BrokerAction, role: str = "") -> str:
    """What the action does to the node. A KRaft controller has no partitions to move away:
    its stop is a plain SIGTERM (a leader's followers elect another)."""
    p = primitive(action)
    return p.controller_what if role in CONTROLLER_ROLES and p.controller_what else p.what


def target_name(broker_id: int, role: str = "") -> str:
    """'broker 2', 'broker 2 (controller)', or on KRaft 'controller 1001 (quorum leader)'."""
    what = "controller" if role in CONTROLLER_ROLES else "broker"
    return f"{what} {broker_id}" + (f" ({role})" if role else "")


def impact_style(line: str) -> Style:
    """Unavailability in red, a controller election in amber, the rest plain."""
    if "OFFLINE" in line or "min ISR" in line:
        return fmt.BAD
    if "CONTROLLER" in line:
        return fmt.WARN
    return fmt.PLAIN


class BrokerChooser(ModalScreen[BrokerAction | None]):
    """What to do to one broker; a destructive choice is confirmed next."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # One key per fault and per keyed heal (kconsole.faults): s, k, p, t.
        *(Binding(p.key, f"choose('{p.name}')", p.label, id=f"choose-{p.name}") for p in keyed()),
        Binding("escape", "cancel", "Cancel", id="choose-cancel"),
    ]

    def __init__(self, broker_id: int, role: str, state: ProcState | None) -> None:
        super().__init__()
        self.broker_id = broker_id
        self.role = role
        self.state = state  # PAUSED: p resumes it (see FaultKind.action_for)

    def _now(self, action: BrokerAction) -> BrokerAction:
        """What the key of `action` does to this node now (p on a paused one: resume)."""
        kind = fault_of(action)
        return action if kind is None else kind.action_for(self.state)

    def compose(self) -> ComposeResult:
        with Vertical(id="chooser-dialog") as dialog:
            dialog.border_title = target_name(self.broker_id, self.role)
            dialog.border_subtitle = "escape cancels"
            yield Static(self._choices(), id="chooser-choices")
        yield KeyBar()

    def _choices(self) -> Table:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold #f0b429", no_wrap=True)
        table.add_column(style="bold", no_wrap=True)
        table.add_column(style=fmt.DIM)
        for p in keyed():
            action = self._now(p.action)
            table.add_row(p.key, action.value, what(action, self.role))
        return table

    def action_choose(self, action: str) -> None:
        """Act on the broker (pause means resume when it is paused)."""
        self.dismiss(self._now(BrokerAction(action)))

    def action_cancel(self) -> None:
        """Do nothing."""
        self.dismiss(None)


class ConfirmBrokerAction(ModalScreen[bool]):
    """The blast radius of a destructive action; typing the broker's id confirms it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="confirm-cancel"),
    ]

    def __init__(
        self, action: BrokerAction, broker_id: int, impact: list[str], role: str = ""
    ) -> None:
        super().__init__()
        self.action = action
        self.broker_id = broker_id
        self.impact = impact
        self.role = role

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog") as dialog:
            dialog.border_title = f"{self.action.value} {target_name(self.broker_id, self.role)}?"
            dialog.border_subtitle = "escape cancels"
            yield Static(
                Text.assemble(
                    (f"{self.action.value} ", "bold"),
                    (target_name(self.broker_id, self.role).split(" (")[0], "bold"),
                    (f": {what(self.action, self.role)}", fmt.DIM),
                ),
                id="confirm-what",
            )
            yield Static(self._impact(), id="confirm-impact")
            yield Static(
                Text.assemble(
                    "Type ",
                    (str(self.broker_id), "bold #f0b429"),
                    f" and press Enter to {self.action.value} it.",
                ),
                id="confirm-prompt",
            )
            node = "controller" if self.role in CONTROLLER_ROLES else "broker"
            yield Input(
                placeholder=f"{node} id", restrict=r"[0-9]*", compact=True, id="confirm-input"
            )
            yield Static(id="confirm-error")
        yield KeyBar()

    def _impact(self) -> Group:
        # Bullets in a grid, so a long line wraps under its own text.
        table = Table.grid()
        table.add_column(width=2, no_wrap=True)
        table.add_column()
        for line in self.impact:
            table.add_row(Text("•", fmt.WARN), Text(line, impact_style(line)))
        return Group(Text("What it does to the cluster now:", fmt.DIM), table)

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted, "#confirm-input")
    def _submitted(self, event: Input.Submitted) -> None:
        typed = event.value.strip()
        if typed == str(self.broker_id):
            self.dismiss(True)
            return
        event.input.value = ""
        said = f"{typed!r} is not {self.broker_id}" if typed else "nothing typed"
        self.query_one("#confirm-error", Static).update(
            Text(f"{said}: type {self.broker_id} to confirm, or escape to cancel", fmt.BAD)
        )

    def action_cancel(self) -> None:
        """Leave without acting."""
        self.dismiss(False)
