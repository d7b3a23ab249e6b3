"""What the console reads from: an observer that pushes snapshots (and the events that explain
them) to a callback. Textual-free, so the CLI, the drills and tests can implement it too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from kconsole.models import ClusterSnapshot
from kconsole.timeline import Event

OnUpdate = Callable[[ClusterSnapshot, tuple[Event, ...]], None]


class Observer(Protocol):
    """A live source of snapshots; `on_update` may be called from any thread."""

    def start(self, on_update: OnUpdate) -> None:
        """Begin observing; call `on_update(snapshot, events)` for every new snapshot."""

    def stop(self) -> None:
        """Stop observing and release connections; no `on_update` calls after it returns."""

    def refresh(self) -> None:
        """Ask for an immediate re-poll (returns at once; the result arrives via on_update)."""
