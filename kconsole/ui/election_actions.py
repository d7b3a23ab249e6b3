"""The console's leader elections: a scope, the typed confirmation the command layer asks for
(loud for an unclean one), a thread worker that calls it, and a notification per outcome."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import work
from textual.app import App
from textual.message import Message

from kconsole.commands import Commands
from kconsole.commands.reassign import election_confirmation
from kconsole.errors import ClusterError
from kconsole.models import ClusterSnapshot
from kconsole.ui.screens.ask import AskText, typed_word
from kconsole.ui.screens.elect import ElectScope

if TYPE_CHECKING:
    from kconsole.cluster.reassign.client import ElectResult

ELECTIONS_GROUP = "elections"


class ElectionDone(Message):
    def __init__(self, kind: str, results: tuple[ElectResult, ...], error: str = "") -> None:
        super().__init__()
        self.kind, self.results, self.error = kind, results, error


class ElectionActions(App[None]):
    """The elections half of KConsoleApp."""

    if TYPE_CHECKING:
        commands: Commands | None
        snapshot: ClusterSnapshot | None

        def refresh_observer(self) -> None: ...

    def choose_election(self, topic: str, partition: int) -> None:
        """Ask what a preferred election should cover, then ask for its confirmation."""
        snap = self.snapshot
        off = [
            (p.topic, p.partition)
            for p in (snap.partitions if snap else ())
            if not p.on_preferred_leader and p.leader >= 0
        ]
        parts = {
            "partition": [(topic, partition)],
            "topic": [
                (p.topic, p.partition)
                for p in (snap.partitions if snap else ())
                if p.topic == topic
            ],
            "not-preferred": off,
        }

        def chosen(scope: str | None) -> None:
            if scope is None:
                return
            if not parts[scope]:
                self.notify("every partition is led by its preferred replica: nothing to elect")
                return
            self.request_election("preferred", parts[scope])

        self.push_screen(ElectScope(f"{topic}/{partition}", topic, len(off)), chosen)

    def request_election(self, kind: str, partitions: list[tuple[str, int]]) -> None:
        """Confirm (the command layer's word) and run an election for `partitions`."""
        commands = self.commands
        if commands is None:
            self.notify("leader election needs a cluster connection", severity="warning")
            return
        target = ", ".join(f"{t}/{p}" for t, p in partitions[:4]) + (
            f" and {len(partitions) - 4} more" if len(partitions) > 4 else ""
        )
        try:  # refused (and logged) before anyone is asked to confirm
            commands.refuse(f"elect.{kind}", target)
        except ClusterError as exc:
            self.notify(exc.message, title="refused", severity="warning", markup=False)
            return
        word, prompt = election_confirmation(kind, partitions)
        *lines, _question = prompt.split("\n")
        title = "UNCLEAN leader election" if kind == "unclean" else "Preferred leader election"
        lines = [*(lines or [prompt.rsplit("?", 1)[0] + "?"]), "", f"Type {word} and press Enter."]

        def confirmed(typed: str | None) -> None:
            if typed is not None:
                self._elect(kind, tuple(partitions), typed)

        ask = AskText(title, lines, typed_word(word), placeholder=f"type {word}",
                      danger=kind == "unclean")  # fmt: skip
        self.push_screen(ask, confirmed)

    @work(thread=True, exit_on_error=False, group=ELECTIONS_GROUP)
    def _elect(self, kind: str, partitions: tuple[tuple[str, int], ...], typed: str) -> None:
        # A worker thread: the command layer checks the typed word; only post_message here.
        commands = self.commands
        assert commands is not None
        try:
            results = commands.elect(
                kind, list(partitions), confirm=lambda _p, expected: typed == expected
            )
        except ClusterError as exc:
            self.post_message(ElectionDone(kind, (), exc.message))
        except Exception as exc:  # a client bug must not take the console down
            self.post_message(ElectionDone(kind, (), f"{type(exc).__name__}: {exc}"))
        else:
            self.post_message(ElectionDone(kind, tuple(results)))

    def on_election_done(self, message: ElectionDone) -> None:
        if message.error:
            self.notify(message.error, title=f"{message.kind} election failed",
                        severity="error", timeout=10, markup=False)  # fmt: skip
            return
        counts = {o: [r for r in message.results if r.outcome == o]
                  for o in ("elected", "not needed", "not possible")}  # fmt: skip
        text = ", ".join(f"{len(v)} {k}" for k, v in counts.items())
        why = [f"{r.topic}/{r.partition}: {r.reason}" for r in counts["not possible"][:5]]
        self.notify("\n".join([text, *why]), title=f"{message.kind} leader election",
                    severity="warning" if why else "information", markup=False)  # fmt: skip
        self.refresh_observer()
