"""The kconsole app: receives snapshots from an Observer and keeps the state every pane shows.

One data path: observer thread -> SnapshotUpdated message -> apply_snapshot() on the app's loop
-> reactives (snapshot, events, now) -> each widget's watcher re-syncs its rows by key.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable, Iterable
from functools import partial
from typing import ClassVar

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.reactive import reactive
from textual.screen import Screen

from kconsole.models import ClusterSnapshot
from kconsole.source import Observer
from kconsole.timeline import Event
from kconsole.ui.messages import SnapshotUpdated
from kconsole.ui.rows import LoggedEvent
from kconsole.ui.screens.help import HelpScreen
from kconsole.ui.screens.main import MainScreen

MAX_EVENTS = 500
LAG_HISTORY = 60


class KConsoleApp(App[None]):
    """The console. Build it with make_app()."""

    CSS_PATH = "app.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit", id="quit"),
        Binding("r", "refresh", "Refresh", id="refresh"),
        Binding("question_mark", "help", "Help", key_display="?", id="help"),
    ]

    snapshot: reactive[ClusterSnapshot | None] = reactive(None, always_update=True)
    """The latest snapshot (None until the first one arrives)."""
    events: reactive[tuple[LoggedEvent, ...]] = reactive((), always_update=True)
    """Events seen so far, newest first, at most MAX_EVENTS."""
    now: reactive[float] = reactive(0.0)
    """clock() at the last tick or snapshot: every age on screen is measured against it."""

    def __init__(
        self,
        observer: Observer | None,
        *,
        commands: object | None = None,
        clock: Callable[[], float] = time.time,
        refresh_s: float = 1.0,
        group_refresh_s: float = 2.0,
        title: str = "kconsole",
    ) -> None:
        super().__init__()
        self.observer = observer
        self.commands = commands
        self.clock = clock
        self.refresh_s = refresh_s
        self.group_refresh_s = group_refresh_s
        self.title = title
        self.lag_history: dict[str, deque[int]] = {}
        self._event_seq = 0

    def get_default_screen(self) -> Screen[None]:
        return MainScreen()

    def on_mount(self) -> None:
        self.now = self.clock()
        # Ages on screen keep counting between snapshots (a stalled source must look stalled).
        self.set_interval(1.0, self._tick)
        if self.observer is not None:
            try:
                self.observer.start(self._from_observer)
            except Exception as exc:
                self.notify(f"could not start observing the cluster: {exc}", severity="error")

    def on_unmount(self) -> None:
        if self.observer is not None:
            self.observer.stop()

    def _tick(self) -> None:
        self.now = self.clock()

    def _from_observer(self, snapshot: ClusterSnapshot, events: tuple[Event, ...]) -> None:
        # Called on the observer's thread: only post_message is safe here.
        with contextlib.suppress(RuntimeError):  # the loop closed while shutting down
            self.post_message(SnapshotUpdated(snapshot, tuple(events)))

    def on_snapshot_updated(self, message: SnapshotUpdated) -> None:
        self.apply_snapshot(message.snapshot, message.events)

    def apply_snapshot(self, snapshot: ClusterSnapshot, events: Iterable[Event] = ()) -> None:
        """Make `snapshot` the current state and log `events` (oldest first, as diff gives them)."""
        with self.batch_update():
            self._record_lag(snapshot)
            new = list(events)
            if new:
                # Newest batch on top; within a batch keep diff's cause-then-effect order.
                logged = []
                for event in new:
                    self._event_seq += 1
                    logged.append(LoggedEvent(self._event_seq, event))
                ordered = sorted(logged, key=lambda le: -le.event.ts)
                self.events = (*ordered, *self.events)[:MAX_EVENTS]
            self.now = self.clock()
            self.snapshot = snapshot

    def _record_lag(self, snapshot: ClusterSnapshot) -> None:
        for group in snapshot.groups:
            lag = group.lag
            if lag is not None:
                history = self.lag_history.setdefault(group.group_id, deque(maxlen=LAG_HISTORY))
                history.append(lag)

    # -- actions ------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "refresh":
            return True if self.observer is not None else None  # shown, but dimmed
        return True

    def action_refresh(self) -> None:
        """Ask the observer for an immediate re-poll."""
        if self.observer is not None:
            self.observer.refresh()
            self.notify("refreshing…", timeout=1.5)

    def action_help(self) -> None:
        """Show every key."""
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """Textual's own commands, plus one per kconsole binding active on `screen`."""
        titles = set()
        for command in super().get_system_commands(screen):
            titles.add(command.title)
            yield command
        for active in screen.active_bindings.values():
            binding = active.binding
            if not (active.enabled and binding.id and binding.description):
                continue
            if binding.description in titles:
                continue
            titles.add(binding.description)
            yield SystemCommand(
                binding.description,
                f"{binding.tooltip or binding.description} (key: {self.get_key_display(binding)})",
                partial(self.run_action, binding.action, active.node),
            )


def make_app(
    observer: Observer | None,
    *,
    commands: object | None = None,
    clock: Callable[[], float] = time.time,
    refresh_s: float = 1.0,
    group_refresh_s: float = 2.0,
    title: str = "kconsole",
) -> KConsoleApp:
    """The console app, reading from `observer` (None: wait for SnapshotUpdated messages)."""
    return KConsoleApp(
        observer,
        commands=commands,
        clock=clock,
        refresh_s=refresh_s,
        group_refresh_s=group_refresh_s,
        title=title,
    )
