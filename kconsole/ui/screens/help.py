"""The key reference, generated from the BINDINGS themselves so it cannot drift from them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.dom import DOMNode
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Static

from kconsole.ui import format as fmt

if TYPE_CHECKING:
    from kconsole.ui.app import KConsoleApp

Section = tuple[str, list[tuple[str, str]]]  # (title, [(keys, description)])


def bindings_of(*owners: type[DOMNode]) -> list[Binding]:
    """The described, non-system bindings that `owners` declare themselves (not inherited)."""
    out: list[Binding] = []
    for owner in owners:
        declared: list[BindingType] = owner.__dict__.get("BINDINGS", [])
        out.extend(b for b in Binding.make_bindings(declared) if b.description and not b.system)
    return out


def key_sections(app: KConsoleApp) -> list[Section]:
    """Every key the console answers to, by where it works."""
    from kconsole.ui.screens.actions import BrokerChooser, ConfirmBrokerAction
    from kconsole.ui.screens.group import GroupScreen
    from kconsole.ui.screens.jobs import JobsScreen, StartJobDialog
    from kconsole.ui.screens.main import FilterInput, MainScreen
    from kconsole.ui.screens.produce import ProduceScreen
    from kconsole.ui.screens.tail import TailScreen
    from kconsole.ui.screens.timeline import TimelineScreen
    from kconsole.ui.widgets.tables import BrokersTable, GroupsTable, PartitionsTable

    palette = Binding(app.COMMAND_PALETTE_BINDING, "command_palette", "Command palette")
    confirm = [("type id, enter", "Confirm a stop, kill or pause")]
    return [
        ("Anywhere", _rows(app, [*bindings_of(type(app), App), palette])),
        ("Main screen", _rows(app, bindings_of(MainScreen))),
        ("Brokers pane", _rows(app, bindings_of(BrokersTable))),
        (
            "Partitions",
            [
                *_rows(app, bindings_of(PartitionsTable)),
                ("click header", "Sort by that column (again: reverse)"),
            ],
        ),
        ("Topic filter", _rows(app, bindings_of(FilterInput))),
        ("Consumer groups pane", _rows(app, bindings_of(GroupsTable))),
        ("Group screen", _rows(app, bindings_of(GroupScreen))),
        ("Broker action chooser (C, L)", _rows(app, bindings_of(BrokerChooser))),
        ("Confirmation", [*confirm, *_rows(app, bindings_of(ConfirmBrokerAction))]),
        ("Timeline", _rows(app, bindings_of(TimelineScreen))),
        ("Produce (P)", _rows(app, bindings_of(ProduceScreen))),
        ("Tail (F)", [*_rows(app, bindings_of(TailScreen)), ("enter", "Start the tail")]),
        ("Jobs (J)", [*_rows(app, bindings_of(JobsScreen)), ("enter", "Start the selected job")]),
        ("Start a job", _rows(app, bindings_of(StartJobDialog))),
        ("Any table", _rows(app, bindings_of(DataTable))),
        ("This help", _rows(app, bindings_of(HelpScreen))),
    ]


def _rows(app: KConsoleApp, bindings: Iterable[Binding]) -> list[tuple[str, str]]:
    # One line per action: keys bound to the same thing share it ("escape, ?").
    described: dict[str, str] = {}
    keys: dict[str, list[str]] = {}
    taken: set[str] = set()
    for b in bindings:
        if b.key in taken:  # declared again lower down (e.g. App's own): the first one wins
            continue
        taken.add(b.key)
        described.setdefault(b.action, b.tooltip or b.description)
        keys.setdefault(b.action, []).append(app.get_key_display(b))
    return [(", ".join(keys[action]), text) for action, text in described.items()]


def help_table(sections: list[Section]) -> Table:
    """The sections as one two-column table."""
    table = Table.grid(padding=(0, 2))
    table.add_column(justify="right", style="bold #f0b429", no_wrap=True)
    table.add_column()
    for i, (title, rows) in enumerate(sections):
        if not rows:
            continue
        if i:
            table.add_row("", "")
        table.add_row("", Text(title, "bold underline"))
        for keys, description in rows:
            table.add_row(keys, Text(description, fmt.PLAIN))
    return table


class HelpScreen(ModalScreen[None]):
    """Every key, generated from the bindings."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark", "close", "Close help", id="close-help"),
    ]

    def compose(self) -> ComposeResult:
        from kconsole.ui.widgets.base import console

        with VerticalScroll(id="help-dialog") as scroll:
            scroll.border_title = "Keys"
            scroll.border_subtitle = "escape closes"
            yield Static(help_table(key_sections(console(self))), id="help-keys")
        yield Footer()

    def action_close(self) -> None:
        """Back to where you were."""
        self.dismiss()
