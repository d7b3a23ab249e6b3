"""The reassignment screen: propose (or import, or edit) where partitions' replicas go, see what
it moves and whether it fits the cluster now, execute it through the command layer, then follow
its progress and verify it.

The plan is re-checked against every snapshot. Reading the cluster (log sizes, the running
reassignments, the throttles) happens in thread workers through the read-only view the command
layer hands out (kconsole.commands.views.ReassignView); following a move's progress is the
headless kconsole.reassign.follow. Every change (execute, cancel, remove the throttles) goes
through the command layer, which refuses it in read-only mode and asks for its typed word.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Input, Label, Static
from textual.worker import get_current_worker

from kconsole import paths
from kconsole.cluster.reassign.throttles import throttles_of
from kconsole.commands import Commands
from kconsole.commands.reassign import confirmation_word
from kconsole.commands.views import ReassignView
from kconsole.errors import ClusterError
from kconsole.models import ClusterSnapshot
from kconsole.reassign import fields, placement
from kconsole.reassign import plan as rp
from kconsole.reassign.follow import broker_throttle, error_text, follow_progress
from kconsole.reassign.plan import Move, Plan, PlanError
from kconsole.reassign.progress import Progress, Sizes
from kconsole.ui import format as fmt
from kconsole.ui.context import actions, state, subscribe
from kconsole.ui.screens import reassign_rows as rr
from kconsole.ui.screens.ask import AskText, typed_word
from kconsole.ui.widgets.footer import KeyBar
from kconsole.ui.widgets.table import KeyedTable

Key = tuple[str, int]


class ReassignTable(KeyedTable):
    """The plan's partitions: current and proposed replicas, what moves, and its state."""

    COLUMNS = rr.COLUMNS


class ReassignScreen(Screen[None]):
    """Plan, check, execute and follow a partition reassignment."""

    DEFAULT_CSS = """
    ReassignScreen { layout: vertical; }
    #reassign-bar { height: auto; padding: 0 1 0 0; }
    #reassign-pane { height: 1fr; }
    #reassign-status, #reassign-message { height: auto; max-height: 12; padding: 0 1; }
    #reassign-status { background: $panel; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(key, action, description, tooltip=tooltip, id=f"reassign-{name}")
        for key, action, description, name, tooltip in (
            ("g", "generate", "Propose", "generate", "Propose a placement from the bar (or "
             "the drain of the broker)"),
            ("e", "edit", "Edit", "edit", "Edit the selected partition's proposed replicas"),
            ("ctrl+s", "execute", "Execute", "execute", "Start the reassignment (asks first)"),
            ("c", "cancel_reassignment", "Cancel it", "cancel", "Cancel the running "
             "reassignments shown, whoever started them (asks first)"),
            ("v", "verify", "Verify", "verify", "Check every move is in place and in sync, "
             "then remove the throttles"),
            ("x", "export", "Export", "export", "Write the plan and its rollback to the plan "
             "file"),
            ("i", "import_plan", "Import", "import", "Read the plan in the plan file"),
            ("escape", "back", "Back", "back", "Back (a running reassignment goes on)"),
        )
    ]  # fmt: skip

    poll_s: float = 2.0
    """Seconds between two progress readings (re-armed only after the previous one)."""

    class SizesRead(Message):
        def __init__(
            self, sizes: dict[tuple[str, int, int], int], error: str, throttle: int | None = None
        ) -> None:
            super().__init__()
            self.sizes, self.error, self.throttle = sizes, error, throttle

    class Progressed(Message):
        """A progress reading (or why there is none this time)."""

        def __init__(
            self, progress: Progress | None, sizes: dict[tuple[str, int, int], int], error: str
        ) -> None:
            super().__init__()
            self.progress, self.sizes, self.error = progress, sizes, error

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, ReassignScreen.Progressed)

    class Done(Message):
        """A command finished: its per-partition outcome, or the error that stopped it."""

        def __init__(self, kind: str, result: Any, error: str) -> None:
            super().__init__()
            self.kind, self.result, self.error = kind, result, error

    def __init__(
        self,
        topics: list[str] | None = None,
        partition: tuple[str, int] | None = None,
        drain: int | None = None,
    ) -> None:
        super().__init__()
        if topics is None and partition is not None:
            topics = [partition[0]]
        self.initial_topics = ", ".join(topics or [])
        self.initial_partition = partition
        self.drain = drain
        self.plan: Plan | None = None
        self.sizes: dict[tuple[str, int, int], int] = {}
        self.progress: Progress | None = None
        self.poll_error = ""
        self.busy = ""  # the command running now (execute, cancel, unthrottle), if any
        self.timer: Callable[[], float] = time.monotonic  # for the rate between two readings
        self._stop = threading.Event()
        self._prefilled = False
        self.following: frozenset[Key] = frozenset()  # the partitions whose progress is read

    # -- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Vertical(id="reassign-bar", classes="pane") as bar:
            bar.border_title = (
                "Reassign partitions" if self.drain is None else f"Drain broker {self.drain}"
            )
            bar.border_subtitle = "g proposes · e edits · ctrl+s executes · escape goes back"
            topics = "topic, topic/partition, …"
            if self.drain is not None:
                topics = f"every partition on broker {self.drain}"
            with Horizontal(classes="form-row"):
                for label, name, value, hint, width in (
                    ("Topics", "topics", self.initial_topics, topics, "1fr"),
                    ("Brokers", "brokers", "", "every up one", "20"),
                    ("RF", "rf", "", "keep", "6"),
                    ("Throttle B/s", "throttle", "", "none", "16"),
                ):
                    yield Label(label, classes="form-label")
                    field = Input(value, placeholder=hint, compact=True, id=f"reassign-{name}")
                    field.styles.width = width  # app.tcss makes every form input 1fr
                    yield field
            with Horizontal(classes="form-row"):
                yield Label("Plan file", classes="form-label")
                yield Input(
                    placeholder="for x (export) and i (import); default "
                    "<state dir>/plans/reassign-<time>.json",
                    compact=True,
                    id="reassign-file",
                )
        with Vertical(id="reassign-pane", classes="pane") as pane:
            pane.border_title = "Partitions"
            yield ReassignTable(id="reassign-table")
        yield Static(id="reassign-status")
        yield Static(id="reassign-message")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#reassign-topics").disabled = self.drain is not None
        subscribe(self, "snapshot", self.refresh_plan, init=True)
        self.table.focus()
        view = state(self).reassign_view
        if view is not None:
            self._read_sizes(view)
        if self.initial_partition is not None:
            key = "{}/{}".format(*self.initial_partition)
            if key in self.table.rows:
                self.table.move_cursor(row=self.table.get_row_index(key))

    @property
    def table(self) -> ReassignTable:
        return self.query_one(ReassignTable)

    def _text(self, name: str) -> str:
        return self.query_one(f"#reassign-{name}", Input).value

    def say(self, message: str | Text, style: Any = fmt.PLAIN) -> None:
        """Show the outcome of the last key (plain text: never parsed as markup)."""
        text = message if isinstance(message, Text) else Text(message, style)
        self.query_one("#reassign-message", Static).update(text)

    # -- the plan against the latest snapshot -------------------------------------------------
    def refresh_plan(self) -> None:
        """Re-diff and re-validate the plan (or show the current assignment without one)."""
        snap = state(self).snapshot
        status = self.query_one("#reassign-status", Static)
        if snap is None:
            status.update(Text("no snapshot of the cluster yet", fmt.DIM))
            return
        if not self._prefilled:  # the default targets, once, unless the user typed some
            self._prefilled = True
            brokers = self.query_one("#reassign-brokers", Input)
            if not brokers.value:
                brokers.value = ",".join(map(str, rr.up_brokers(snap, exclude=self.drain)))
            if self.drain is not None and self.plan is None:
                # D opens on the drain's proposal (or says why there is none)
                self.call_after_refresh(self.action_generate)
        shown = self.plan or self._current(snap)
        # A reassignment running on a partition shown is followed, whoever started it (this
        # screen, the CLI, Kafka's own tool; before a restart too).
        moving = {m.key for m in shown.moves} & {
            (p.topic, p.partition) for p in snap.partitions if p.reassigning
        }
        if not moving <= self.following:
            self._watch(sorted(moving | self.following))
        d = rp.diff(shown, snap, rr.sizes_by_partition(self.sizes))
        self.table.sync(rr.partition_rows(d, snap, self.progress, self.plan is not None))
        bad_throttle = ""
        try:
            throttle = fields.parse_throttle(self._text("throttle"))
        except PlanError as exc:  # said under the table at once, not when executing
            throttle, bad_throttle = None, exc.message
        status.update(
            rr.status(
                self.plan,
                snap,
                d,
                self.progress,
                self.poll_error,
                throttle,
                self._allow_rf(),
                bad_throttle,
            )
        )

    def _current(self, snap: ClusterSnapshot) -> Plan:
        try:
            targets = fields.parse_targets(self._text("topics"))
        except PlanError:
            targets = []
        return Plan.current(snap, rr.targeted(snap, targets, self.drain))

    def _allow_rf(self) -> bool:
        # Typing a replication factor is asking to change it.
        return bool(self._text("rf").strip())

    def _changed(self, snap: ClusterSnapshot) -> Plan | None:
        """The moves that change something (what executing sends)."""
        if self.plan is None:
            return None
        d = rp.diff(self.plan, snap)
        keep = {m.key for m in d.changed}
        return Plan(tuple(m for m in self.plan.moves if m.key in keep))

    def _set_plan(self, plan: Plan, said: str) -> None:
        self.plan = plan
        self.progress, self.poll_error = None, ""
        self.refresh_plan()
        self.say(said)

    @on(Input.Changed)
    def _bar_changed(self, event: Input.Changed) -> None:
        if event.input.id in ("reassign-topics", "reassign-rf", "reassign-throttle"):
            self.refresh_plan()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        # enter in any field of the bar proposes (the README says so)
        if event.input.id in (
            "reassign-topics",
            "reassign-brokers",
            "reassign-rf",
            "reassign-throttle",
        ):
            self.action_generate()
        self.table.focus()

    # -- keys: the plan -----------------------------------------------------------------------
    def action_generate(self) -> None:
        """Propose a placement for the bar's topics (or drain the broker)."""
        snap = state(self).snapshot
        if snap is None:
            self.say("no snapshot of the cluster yet: nothing to propose against", fmt.WARN)
            return
        try:
            brokers = fields.parse_ids(self._text("brokers")) or rr.up_brokers(snap, self.drain)
            if self.drain is not None:
                plan = placement.drain(snap, self.drain, brokers=list(brokers))
                what = f"drain of broker {self.drain}"
            else:
                targets = fields.parse_targets(self._text("topics"))
                if not targets:
                    raise PlanError("type the topics to reassign (topic, or topic/partition)")
                rf = fields.parse_rf(self._text("rf"))
                # A partition being reassigned lists its old and new replicas at once: no
                # proposal can start from that. It is left out, and said so.
                keys = rr.targeted(snap, targets, None)
                busy = [k for k in keys if (p := snap.partition(*k)) and p.reassigning]
                if busy and len(busy) == len(keys):
                    raise PlanError(
                        f"every partition named is being reassigned ({len(busy)}): c cancels, "
                        "or wait until it is done"
                    )
                free: list[str | Key] = [k for k in keys if k not in busy]
                plan = placement.generate(snap, free, list(brokers), replication_factor=rf)
                what = f"proposal over brokers {fmt.ids(brokers)}"
                if busy:
                    what += f" (left out {rr.n_of(len(busy), 'partition')} being reassigned)"
        except ClusterError as exc:
            self.say(exc.message, fmt.BAD)
            return
        self._set_plan(plan, f"{what}: {rr.n_of(len(plan.moves), 'partition')} (ctrl+s executes)")

    def action_edit(self) -> None:
        """Edit the proposed replicas of the partition under the cursor."""
        snap, key = state(self).snapshot, self.table.cursor_key
        if snap is None or key is None:
            self.say("no partition selected", fmt.WARN)
            return
        topic, _, part = key.rpartition("/")
        base = self.plan or self._current(snap)
        move = base.move(topic, int(part))
        now = snap.partition(topic, int(part))
        replicas = move.replicas if move else (now.replicas if now else ())

        known = {b.id for b in snap.brokers}

        def check(typed: str) -> tuple[int, ...]:
            return fields.parse_replicas(typed, known)

        def edited(typed: str | None) -> None:
            if typed is not None:
                new = check(typed)
                plan = rr.with_move(base, Move(topic, int(part), new))
                self._set_plan(plan, f"{key}: proposed {fmt.ids(replicas)} → {fmt.ids(new)}")

        lines = ["Broker ids, the preferred leader first:"]
        ask = AskText(f"Replicas of {key}", lines, check, value=fmt.ids(replicas))
        self.app.push_screen(ask, edited)

    def action_export(self) -> None:
        """Write the plan and its rollback (the assignment now) as kafka-reassign JSON."""
        snap = state(self).snapshot
        if self.plan is None or snap is None:
            self.say("nothing to export: propose (g), edit (e) or import (i) a plan", fmt.WARN)
            return
        typed = self._text("file").strip()
        path = Path(typed).expanduser() if typed else None
        path = path or rr.default_plan_path(paths.state_dir(), state(self).clock())
        try:
            back = rr.write_plan(self.plan, snap, path)
        except (OSError, ClusterError) as exc:
            self.say(f"could not write {path}: {error_text(exc)}", fmt.BAD)
            return
        self.query_one("#reassign-file", Input).value = str(path)
        self.say(f"wrote the plan to {path} and its rollback to {back}", fmt.GOOD)

    def action_import_plan(self) -> None:
        """Read the plan file named in the bar (kafka-reassign-partitions JSON)."""
        typed = self._text("file").strip()
        if not typed:
            self.say("type the path of a plan file in the bar (Plan file), then i", fmt.WARN)
            return
        path = Path(typed).expanduser()
        try:
            plan = Plan.from_json(path.read_text())
        except OSError as exc:
            self.say(f"could not read {path}: {exc.strerror or exc}", fmt.BAD)
            return
        except PlanError as exc:
            self.say(f"{path}: {exc.message}", fmt.BAD)
            return
        self._set_plan(plan, f"imported {rr.n_of(len(plan.moves), 'partition')} from {path}")
        snap = state(self).snapshot
        if snap is not None and any(
            p.reassigning and (p.topic, p.partition) in {m.key for m in plan.moves}
            for p in snap.partitions
        ):
            self._watch([m.key for m in plan.moves])

    # -- keys: commands -----------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("execute", "cancel_reassignment", "verify") and self.busy:
            return None
        return True

    def _door(self, command: str, target: str) -> Commands | None:
        """The command layer, after read-only (and a missing connection) had its say."""
        door = actions(self).commands
        if door is None:
            self.say("changing the cluster needs the command layer: this console observes", fmt.BAD)
            return None
        try:  # refused (and logged) before anything is asked or read
            door.refuse(command, target)
        except ClusterError as exc:
            self.say(exc.message, fmt.BAD)
            return None
        return door

    def action_execute(self) -> None:
        """Start the reassignment of what the plan changes, after the typed word."""
        snap = state(self).snapshot
        plan = self._changed(snap) if snap is not None else None
        got = self._door("reassign.execute", rr.n_of(len(plan.moves) if plan else 0, "partition"))
        if got is None or self.busy:
            return
        if snap is None or plan is None:
            self.say("nothing to execute: propose (g), edit (e) or import (i) a plan", fmt.WARN)
            return
        if not plan.moves:
            self.say("nothing would move: every proposed replica list is the current one")
            return
        try:
            throttle = fields.parse_throttle(self._text("throttle"))
        except PlanError as exc:
            self.say(exc.message, fmt.BAD)
            return
        door = got
        allow = self._allow_rf()
        lines = rr.preview_lines(rp.diff(plan, snap, rr.sizes_by_partition(self.sizes)), throttle)

        def run(typed: str | None) -> Callable[[], object]:
            return lambda: door.reassign_execute(
                plan, snap, confirm=lambda _p, expected: typed == expected,
                throttle_bps=throttle, allow_rf_change=allow, preview="\n".join(lines),
            )  # fmt: skip

        if rp.validate(plan, snap, allow_rf_change=allow):
            self._command("execute", run(None))  # the door refuses it, naming every problem
            return
        self._confirm("Start the reassignment?", lines, confirmation_word(plan), "execute", run)

    def action_cancel_reassignment(self) -> None:
        """Cancel the running reassignments of the partitions shown, whoever started them
        (typed 'cancel')."""
        snap = state(self).snapshot
        shown = self.plan or (self._current(snap) if snap is not None else None)
        moving = (
            {(p.topic, p.partition) for p in snap.partitions if p.reassigning} if snap else set()
        )
        running = (
            {(p.topic, p.partition) for p in self.progress.partitions if not p.done}
            if self.progress
            else set()
        )
        keys = sorted({m.key for m in shown.moves} & (moving | running)) if shown else []
        got = self._door("reassign.cancel", rr.n_of(len(keys), "partition"))
        if got is None or self.busy:
            return
        if not keys:
            self.say("nothing shown here is being reassigned: nothing to cancel", fmt.WARN)
            return
        door = got
        lines = [
            f"cancel the reassignment of {rr.n_of(len(keys), 'partition')}: "
            + ", ".join(f"{t}/{p}" for t, p in keys[:6])
            + (" …" if len(keys) > 6 else ""),
            "Kafka puts each one back on its original replicas (copied data is dropped);",
            "kconsole then restores the original order of those it started and removes the",
            "throttles these moves needed.",
        ]

        def run(typed: str | None) -> Callable[[], object]:
            return lambda: door.reassign_cancel(
                keys, confirm=lambda _p, expected: typed == expected
            )

        self._confirm("Cancel the reassignment?", lines, "cancel", "cancel", run)

    def _confirm(
        self, title: str, lines: list[str], word: str, kind: str,
        run: Callable[[str | None], Callable[[], object]],
    ) -> None:  # fmt: skip
        def confirmed(typed: str | None) -> None:
            if typed is not None:
                self._command(kind, run(typed))

        lines = [*lines, "", f"Type {word} and press Enter."]
        ask = AskText(title, lines, typed_word(word), placeholder=f"type {word}", danger=True)
        self.app.push_screen(ask, confirmed)

    def action_verify(self) -> None:
        """In place and in sync? Then remove the throttles (as --verify does)."""
        snap = state(self).snapshot
        if self.plan is None or snap is None:
            self.say("nothing to verify: propose (g) or import (i) a plan", fmt.WARN)
            return
        v = rr.verify(self.plan, snap)
        if not v.complete:
            head = f"not complete: {len(v.pending)} of {rr.n_of(v.moves, 'partition')}"
            self.say(Text("\n".join([head, *v.pending]), fmt.WARN))
            return
        door, view = actions(self).commands, state(self).reassign_view
        said = f"✓ complete: {rr.n_of(v.moves, 'partition')} in place and in sync"
        if door is None or view is None:
            self.say(f"{said}; the throttles were not checked (no cluster connection)", fmt.GOOD)
            return
        topics, brokers = sorted({m.topic for m in self.plan.moves}), [b.id for b in snap.brokers]

        def unthrottle() -> str:
            with view.open() as reader:
                left = reader.throttles()
            mine = throttles_of(left, topics)
            if not mine:
                return f"{said}; no throttle was set"
            try:  # read-only: refused here; done only once none is left
                removed = door.reassign_unthrottle(topics, brokers)
            except ClusterError as exc:
                raise ClusterError(f"{said}; the throttles stay: {exc.message}") from exc
            return f"{said}; removed the throttles of {', '.join(removed or mine)}"

        self._command("verify", unthrottle, f"{said}; checking the throttles …")

    def action_back(self) -> None:
        """Stop following the progress and go back (a running reassignment goes on)."""
        self.workers.cancel_group(self, "reassign-poll")
        self.dismiss()

    def on_unmount(self) -> None:
        self._stop.set()  # the poller leaves its wait at once, whenever the screen goes

    # -- workers (threads: post_message only, never a widget) ---------------------------------
    def _command(self, kind: str, call: Callable[[], object], said: str = "") -> None:
        self.busy = kind
        self.refresh_bindings()
        self.say(said or f"{kind} …", fmt.DIM)
        self._run_command(kind, call)

    @work(thread=True, group="reassign-command", exclusive=True, exit_on_error=False)
    def _run_command(self, kind: str, call: Callable[[], object]) -> None:
        try:
            result = call()
        except Exception as exc:  # refusals and failures alike: said, never raised
            self.post_message(self.Done(kind, None, error_text(exc)))
            return
        self.post_message(self.Done(kind, result, ""))

    @work(thread=True, group="reassign-sizes", exclusive=True, exit_on_error=False)
    def _read_sizes(self, view: ReassignView) -> None:
        try:
            with view.open() as reader:
                sizes = reader.log_sizes()
                # the throttle set on the brokers now (a move running, perhaps started elsewhere)
                throttle = broker_throttle(reader.throttles())
        except Exception as exc:  # sizes are a nicety: the plan works without them
            self.post_message(self.SizesRead({}, error_text(exc)))
            return
        self.post_message(self.SizesRead(sizes, "", throttle))

    def _watch(self, keys: list[Key]) -> None:
        view = state(self).reassign_view
        self.following = frozenset(keys)
        if view is not None:
            self.workers.cancel_group(self, "reassign-poll")
            self._stop.clear()
            try:  # the rate shown never exceeds what the throttle lets the brokers copy
                throttle = fields.parse_throttle(self._text("throttle"))
            except PlanError:
                throttle = None
            self._poll(view, tuple(sorted(set(keys))), throttle)

    @work(thread=True, group="reassign-poll", exclusive=True, exit_on_error=False)
    def _poll(self, view: ReassignView, keys: tuple[Key, ...], throttle: int | None) -> None:
        worker = get_current_worker()

        def emit(progress: Progress | None, sizes: Sizes, error: str) -> None:
            self.post_message(self.Progressed(progress, dict(sizes), error))

        follow_progress(
            view.open,
            keys,
            # The snapshot is an immutable value: reading it from this thread is safe.
            lambda: state(self).snapshot,
            emit,
            stop=self._stop,
            poll_s=self.poll_s,
            timer=self.timer,
            cancelled=lambda: worker.is_cancelled,
            throttle_bps=throttle,
        )

    # -- what the workers say -----------------------------------------------------------------
    def on_reassign_screen_sizes_read(self, message: SizesRead) -> None:
        self.sizes = message.sizes
        if message.error:
            self.say(f"log sizes unknown ({message.error}): bytes to copy show as ?", fmt.WARN)
        field = self.query_one("#reassign-throttle", Input)
        if message.throttle is not None and not field.value.strip():
            field.value = str(message.throttle)  # what is set, not "none"
            self.say(f"a replication throttle of {rr.throttle_text(message.throttle)} is set")
        self.refresh_plan()

    def on_reassign_screen_progressed(self, message: Progressed) -> None:
        self.poll_error = message.error
        if message.progress is not None:
            self.progress = message.progress
            self.sizes = message.sizes or self.sizes
            if message.progress.done:
                self.following = frozenset()
                actions(self).refresh_observer()
        self.refresh_plan()

    def on_reassign_screen_done(self, message: Done) -> None:
        kind, result = message.kind, message.result
        self.busy = ""
        self.refresh_bindings()
        if result is None:
            self.say(message.error if kind == "verify" else f"{kind}: {message.error}", fmt.BAD)
        elif kind == "verify":
            self.say(str(result), fmt.GOOD)
        else:
            self.say(rr.outcome_text(kind, result))
            actions(self).refresh_observer()
            errors = result if isinstance(result, dict) else result.errors
            ok = [k for k, err in errors.items() if err is None]
            if kind == "execute" and ok:
                self.progress = None
                self._watch(ok)
