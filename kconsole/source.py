"""What the console reads from: an observer that pushes snapshots (and the events that explain
them) to a callback. Textual-free, so the CLI, the drills and tests can implement it too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

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


@runtime_checkable
class EventRecorder(Protocol):
    """An optional Observer capability: put an event of our own (a user action) on the
    observer's timeline, delivered through `on_update` in order with the cluster's events."""

    def record(self, event: Event) -> None:
        """Record `event` and publish it with the current snapshot."""


@runtime_checkable
class Prefers(Protocol):
    """An optional Observer capability: told which partitions are on screen, it reads their
    state before the others' when many change at once (a failover on 2,000 partitions)."""

    def prefer(self, partitions: frozenset[tuple[str, int]]) -> None:
        """The (topic, partition) of every row in view; replaces what it was told before."""
