"""Messages into the app. Sources post them from their own threads (post_message is
thread-safe); the app applies them on its own loop."""

from __future__ import annotations

from textual.message import Message

from kconsole.jobs import JobRun
from kconsole.models import ClusterSnapshot
from kconsole.timeline import Event
from kconsole.ui.drill import ActionRun


class SnapshotUpdated(Message):
    """A new snapshot and the events that led to it (events since the previous message)."""

    def __init__(self, snapshot: ClusterSnapshot, events: tuple[Event, ...] = ()) -> None:
        super().__init__()
        self.snapshot = snapshot
        self.events = events

    def can_replace(self, message: Message) -> bool:
        """Let a newer snapshot waiting in the queue supersede this one.

        A busy loop then renders only the latest state; this message's events are handed on
        to the newer one so the events pane loses nothing.
        """
        if isinstance(message, SnapshotUpdated):
            message.events = self.events + message.events
            return True
        return False


class EventsLogged(Message):
    """Events of our own (a user action) for an app whose observer cannot record them."""

    def __init__(self, events: tuple[Event, ...]) -> None:
        super().__init__()
        self.events = events


class BrokerActionDone(Message):
    """A broker action's outcome: the backend's description, or the error."""

    def __init__(self, run: ActionRun, ok: bool, text: str) -> None:
        super().__init__()
        self.run = run
        self.ok = ok
        self.text = text


class LogNote(str):
    """A line in a run's log tail that the console wrote, not the job ("job.log is gone")."""


class JobsUpdated(Message):
    """Every job run as last observed, with the newest log lines of the interesting ones."""

    def __init__(
        self, runs: tuple[JobRun, ...], logs: dict[str, tuple[str, ...]], error: str = ""
    ) -> None:
        super().__init__()
        self.runs = runs
        self.logs = logs
        self.error = error

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, JobsUpdated)


class JobActionDone(Message):
    """A job start or stop finished (ok) or failed (the text says why)."""

    def __init__(self, ok: bool, text: str) -> None:
        super().__init__()
        self.ok = ok
        self.text = text
