"""The key reference, generated from the BINDINGS themselves so it cannot drift from them.

This module imports neither the app nor the screens it describes: the running app says which
classes to list (its `key_groups()`, see KeyReference), and the help reads their BINDINGS.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.dom import DOMNode
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from kconsole.ui import format as fmt
from kconsole.ui.widgets.footer import KeyBar

Row = tuple[str, str]  # (keys, description)
Section = tuple[str, list[Row]]  # (title, [(keys, description)])


@dataclass(frozen=True)
class KeyGroup:
    """One section of the help: the keys `owners` declare, between rows no binding describes."""

    title: str
    owners: tuple[type[DOMNode], ...]
    before: tuple[Row, ...] = ()
    after: tuple[Row, ...] = ()


@runtime_checkable
class KeyReference(Protocol):
    """An app that says which screens and widgets the help lists (between "Anywhere" and the
    tables and the help itself, which every app has)."""

    def key_groups(self) -> Sequence[KeyGroup]:
        """The sections, in order."""
        ...


def bindings_of(*owners: type[DOMNode]) -> list[Binding]:
    """The described, non-system bindings that `owners` declare themselves (not inherited)."""
    out: list[Binding] = []
    for owner in owners:
        declared: list[BindingType] = owner.__dict__.get("BINDINGS", [])
        out.extend(b for b in Binding.make_bindings(declared) if b.description and not b.system)
    return out


def key_sections(app: App[object]) -> list[Section]:
    """Every key the console answers to, by where it works."""
    palette = Binding(app.COMMAND_PALETTE_BINDING, "command_palette", "Command palette")
    groups = app.key_groups() if isinstance(app, KeyReference) else ()
    return [
        ("Anywhere", _rows(app, [*bindings_of(type(app), App), palette])),
        *((g.title, [*g.before, *_rows(app, bindings_of(*g.owners)), *g.after]) for g in groups),
        ("Any table", _rows(app, bindings_of(DataTable))),
        ("This help", _rows(app, bindings_of(HelpScreen))),
    ]


def _rows(app: App[object], bindings: Iterable[Binding]) -> list[Row]:
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
        with VerticalScroll(id="help-dialog") as scroll:
            scroll.border_title = "Keys"
            scroll.border_subtitle = "escape closes"
            yield Static(help_table(key_sections(self.app)), id="help-keys")
        yield KeyBar()

    def action_close(self) -> None:
        """Back to where you were."""
        self.dismiss()
