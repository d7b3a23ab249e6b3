"""A one-line question: the typed word that confirms an action, or a value to edit."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from kconsole.errors import ClusterError
from kconsole.ui import format as fmt


class AskText(ModalScreen[str | None]):
    """One line of text, checked before it is accepted: the typed word that confirms an action,
    or a partition's replica list. `check` raises ClusterError to refuse the text and say why."""

    DEFAULT_CSS = """
    AskText { align: center middle; }
    #ask-dialog { width: 90; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; background: $surface; padding: 0 1; }
    #ask-dialog.-danger { border: round $error; border-title-color: $error; }
    #ask-what { margin-bottom: 1; }
    #ask-error { height: auto; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="ask-cancel")]

    def __init__(
        self, title: str, lines: list[str], check: Callable[[str], object], *, value: str = "",
        placeholder: str = "", danger: bool = False,
    ) -> None:  # fmt: skip
        super().__init__()
        self.title_text, self.lines, self.check = title, lines, check
        self.value, self.placeholder, self.danger = value, placeholder, danger

    def compose(self) -> ComposeResult:
        with Vertical(id="ask-dialog", classes="-danger" if self.danger else "") as dialog:
            dialog.border_title = self.title_text
            dialog.border_subtitle = "enter accepts · escape cancels"
            yield Static(Text("\n".join(self.lines)), id="ask-what")
            yield Input(self.value, placeholder=self.placeholder, compact=True, id="ask-input")
            yield Static(id="ask-error")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Changed)
    def _typing(self) -> None:
        # The last refusal was about what enter was pressed on, not what is typed now.
        self.query_one("#ask-error", Static).update("")

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        try:
            self.check(event.value)
        except ClusterError as exc:
            self.query_one("#ask-error", Static).update(Text(exc.message, fmt.BAD))
            return
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        """Leave without acting."""
        self.dismiss(None)


def typed_word(word: str) -> Callable[[str], None]:
    """A check that accepts exactly `word`."""

    def check(typed: str) -> None:
        if typed.strip() != word:
            said = f"{typed.strip()!r} is not {word!r}" if typed.strip() else "nothing typed"
            raise ClusterError(f"{said}: type {word} to confirm, or escape to cancel")

    return check
