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

from kconsole.cluster.values import BrokerAction, NetLinks, ProcState
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


NetChoice = tuple[BrokerAction, NetLinks | None]


# The rates `r` cycles through for a slow fault (bytes per second each way): 64 KiB/s, the
# lowest that holds (values.MIN_RATE), then 1 MiB/s and 10 MiB/s. A follower falls behind only
# where what it must fetch exceeds the rate.
SLOW_RATES = (65_536, 1_048_576, 10_485_760)


class NetworkChooser(ModalScreen[NetChoice | None]):
    """Which network fault to put on one node: isolate it, partition it from ZooKeeper (the
    quorum on KRaft), the other brokers or its clients (o: one way), or slow its links to the
    other brokers (r: the rate); h heals the one in force. A fault is confirmed next, with its
    blast radius."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("i", "choose('isolate')", "Isolate", id="net-isolate"),
        Binding("z", "choose('zookeeper')", "From ZooKeeper", id="net-zookeeper"),
        Binding("q", "choose('quorum')", "From the quorum", id="net-quorum"),
        Binding("b", "choose('brokers')", "From brokers", id="net-brokers"),
        Binding("c", "choose('clients')", "From clients", id="net-clients"),
        Binding("o", "one_way", "One way", id="net-one-way"),
        Binding("s", "choose('slow')", "Slow", id="net-slow"),
        Binding("r", "rate", "Rate", id="net-rate"),
        Binding("h", "choose('heal')", "Heal", id="net-heal"),
        Binding("escape", "cancel", "Cancel", id="net-cancel"),
    ]

    def __init__(self, broker_id: int, role: str, *, kraft: bool, in_force: str | None) -> None:
        super().__init__()
        self.broker_id = broker_id
        self.role = role
        self.kraft = kraft
        self.in_force = in_force  # the fault in force on it, in words (None: none)
        self.one_way = False
        self.rate = SLOW_RATES[0]  # a slow fault's, bytes per second each way

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        side = str(parameters[0]) if parameters else ""
        if action == "choose" and side == "heal":
            return self.in_force is not None
        if action in ("choose", "one_way", "rate") and self.in_force is not None:
            return False  # one fault per node: heal it first
        if action == "choose" and side in ("zookeeper", "quorum"):
            return side == ("quorum" if self.kraft else "zookeeper")
        return True

    def compose(self) -> ComposeResult:
        with Vertical(id="chooser-dialog") as dialog:
            dialog.border_title = "network fault on " + target_name(self.broker_id, self.role)
            dialog.border_subtitle = "escape cancels"
            yield Static(self._choices(), id="chooser-choices")
        yield KeyBar()

    def _choices(self) -> Group:
        if self.in_force is not None:
            return Group(
                Text.assemble(("in force: ", fmt.BAD), self.in_force),
                Text.assemble(("h", "bold #f0b429"), ("  heal: remove its rules", "")),
            )
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold #f0b429", no_wrap=True)
        table.add_column(style="bold", no_wrap=True)
        table.add_column(style=fmt.DIM)
        table.add_row("i", "isolate", "nothing it sends arrives, nothing reaches its ports")
        if self.kraft:
            table.add_row("q", "from the quorum", "cut from the controllers: fenced, a zombie")
        else:
            table.add_row("z", "from ZooKeeper", "its session expires: a zombie until healed")
        table.add_row("b", "from the brokers", "cut from the other brokers, clients still reach it")
        table.add_row("c", "from clients", "producers and consumers lose it, the cluster does not")
        way = "on: only what it sends is dropped" if self.one_way else "off: both directions"
        table.add_row("o", "one way", way)
        table.add_row(
            "s", "slow", f"links to the brokers at {self.rate:,} B/s: behind if it must fetch more"
        )
        later = SLOW_RATES[(SLOW_RATES.index(self.rate) + 1) % len(SLOW_RATES)]
        table.add_row("r", "rate", f"{self.rate:,} B/s (r: {later:,})")
        return Group(table)

    def action_rate(self) -> None:
        """The next rate a slow fault caps the links at."""
        self.rate = SLOW_RATES[(SLOW_RATES.index(self.rate) + 1) % len(SLOW_RATES)]
        self.query_one("#chooser-choices", Static).update(self._choices())

    def action_one_way(self) -> None:
        """Cut only what the node sends (a partition), or both directions."""
        self.one_way = not self.one_way
        self.query_one("#chooser-choices", Static).update(self._choices())

    def action_choose(self, what: str) -> None:
        """Isolate, a partition from one side, or heal."""
        if what == "isolate":
            self.dismiss((BrokerAction.ISOLATE, None))
        elif what == "heal":
            self.dismiss((BrokerAction.HEAL, None))
        elif what == "slow":
            self.dismiss((BrokerAction.SLOW, NetLinks(("brokers",), False, self.rate)))
        else:
            self.dismiss((BrokerAction.PARTITION, NetLinks((what,), self.one_way)))

    def action_cancel(self) -> None:
        """Do nothing."""
        self.dismiss(None)


class ConfirmBrokerAction(ModalScreen[bool]):
    """The blast radius of a destructive action; typing the broker's id confirms it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="confirm-cancel"),
    ]

    def __init__(
        self,
        action: BrokerAction,
        broker_id: int,
        impact: list[str],
        role: str = "",
        links: NetLinks | None = None,
    ) -> None:
        super().__init__()
        self.action = action
        self.broker_id = broker_id
        self.impact = impact
        self.role = role
        self.links = links  # a partition's sides

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog") as dialog:
            cut = f" {self.links.words}" if self.links is not None else ""
            dialog.border_title = (
                f"{self.action.value} {target_name(self.broker_id, self.role)}{cut}?"
            )
            dialog.border_subtitle = "escape cancels"
            yield Static(
                Text.assemble(
                    (f"{self.action.value} ", "bold"),
                    (target_name(self.broker_id, self.role).split(" (")[0], "bold"),
                    (f" {self.links.words}" if self.links is not None else "", "bold"),
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
