"""Which partitions a preferred leader election covers: this one, its topic, or every partition
whose leader is not its preferred replica."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from kconsole.ui import format as fmt
from kconsole.ui.widgets.footer import KeyBar

SCOPES = ("partition", "topic", "not-preferred")


class ElectScope(ModalScreen[str | None]):
    """Preferred leader election: for what."""

    DEFAULT_CSS = """
    ElectScope { align: center middle; }
    #elect-dialog { width: 72; height: auto; border: round $accent; background: $surface;
        padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "choose('partition')", "This partition", id="elect-partition"),
        Binding("t", "choose('topic')", "Its topic", id="elect-topic"),
        Binding("a", "choose('not-preferred')", "Every one off its preferred", id="elect-all"),
        Binding("escape", "cancel", "Cancel", id="elect-cancel"),
    ]

    def __init__(self, partition: str, topic: str, off_preferred: int) -> None:
        super().__init__()
        self.partition, self.topic, self.off_preferred = partition, topic, off_preferred

    def compose(self) -> ComposeResult:
        with Vertical(id="elect-dialog") as dialog:
            dialog.border_title = "Preferred leader election"
            dialog.border_subtitle = "escape cancels"
            table = Table.grid(padding=(0, 2))
            table.add_column(style="bold #f0b429", no_wrap=True)
            table.add_column(style="bold", no_wrap=True)
            table.add_column(style=fmt.DIM)
            table.add_row("p", self.partition, "this partition")
            table.add_row("t", self.topic, "every partition of the topic")
            table.add_row(
                "a", f"{self.off_preferred} partition(s)", "every one not led by its preferred"
            )
            yield Static(table)
        yield KeyBar()

    def action_choose(self, scope: str) -> None:
        """Elect for `scope` (one of SCOPES)."""
        self.dismiss(scope)

    def action_cancel(self) -> None:
        """Do nothing."""
        self.dismiss(None)
