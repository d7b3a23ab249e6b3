"""The kconsole app: receives snapshots from an Observer and keeps the state every pane shows.

One data path: observer thread -> SnapshotUpdated message -> apply_snapshot() on the app's loop
-> reactives (snapshot, events, now) -> each widget's watcher re-syncs its rows by key.

Actions go the other way, through the command layer: broker actions in broker_actions.py,
job runs in job_actions.py (the app is both). Screens and widgets see the app only through
kconsole.ui.context (the state they read, the actions they send).
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.notifications import SeverityLevel
from textual.reactive import reactive
from textual.screen import Screen

from kconsole import paths, secrets
from kconsole.commands import Commands
from kconsole.commands.views import JobsView, ReassignView
from kconsole.config import Settings
from kconsole.drills import throughput
from kconsole.drills.measure import Measurement
from kconsole.jobs.runs import JobRun
from kconsole.jobs.specs import JobSpec
from kconsole.models import BrokerConfig, ClusterSnapshot, SourceName
from kconsole.source import Observer, Prefers
from kconsole.timeline import Event
from kconsole.ui.broker_actions import ACTIONS_GROUP, BrokerActions
from kconsole.ui.context import ConsoleActions, ConsoleState
from kconsole.ui.drill import ActionRun, Drill, latest_drill
from kconsole.ui.election_actions import ElectionActions
from kconsole.ui.job_actions import JOB_ACTIONS_GROUP, JobActions
from kconsole.ui.messages import (
    EventsLogged,
    SnapshotUpdated,
)
from kconsole.ui.palette import ConsoleCommands
from kconsole.ui.rows import LoggedEvent
from kconsole.ui.screens.actions import BrokerChooser, ConfirmBrokerAction
from kconsole.ui.screens.ask import AskText
from kconsole.ui.screens.elect import ElectScope
from kconsole.ui.screens.group import GroupScreen
from kconsole.ui.screens.help import HelpScreen, KeyGroup
from kconsole.ui.screens.jobs import JobsScreen, StartJobDialog
from kconsole.ui.screens.main import FilterInput, MainScreen
from kconsole.ui.screens.produce import ProduceScreen
from kconsole.ui.screens.reassign import ReassignScreen
from kconsole.ui.screens.tail import TailScreen
from kconsole.ui.screens.timeline import TimelineScreen
from kconsole.ui.screens.topics import TopicsScreen
from kconsole.ui.widgets.tables import BrokersTable, GroupsTable, PartitionsTable

__all__ = ["ACTIONS_GROUP", "JOB_ACTIONS_GROUP", "KConsoleApp", "make_app"]

MAX_EVENTS = 500
LAG_HISTORY = 60
LANDED_HISTORY = 900  # readings of the cluster's throughput kept (30 min at 2 s)
# The timeline keeps more than the events pane: one broker leaving a big cluster is an event
# per partition, and a drill's measurements need all of them.
TIMELINE_EVENTS = 5000


class KConsoleApp(BrokerActions, JobActions, ElectionActions):
    """The console. Build it with make_app()."""

    CSS_PATH = "app.tcss"
    COMMANDS = App.COMMANDS | {ConsoleCommands}

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit", id="quit"),
        Binding("r", "refresh", "Refresh", id="refresh"),
        Binding("question_mark", "help", "Help", key_display="?", id="help"),
    ]

    # The app's reactives repaint nothing themselves (repaint=False): the widgets that watch
    # them refresh what changed. With the default every poll repainted the whole screen, most
    # of the console's idle cost (bench/results/idle.md).
    snapshot: reactive[ClusterSnapshot | None] = reactive(None, always_update=True, repaint=False)
    """The latest snapshot (None until the first one arrives)."""
    events: reactive[tuple[LoggedEvent, ...]] = reactive((), always_update=True, repaint=False)
    """Events seen so far, newest first, at most MAX_EVENTS."""
    job_runs: reactive[tuple[JobRun, ...]] = reactive((), always_update=True, repaint=False)
    """Every job run the manager knows, oldest first (polled every second)."""
    jobs_read = False
    """job_runs has been read at least once (before that, no runs means "not read yet")."""
    now: reactive[float] = reactive(0.0, repaint=False)
    """clock() at the last tick or snapshot: every age on screen is measured against it."""

    def __init__(
        self,
        observer: Observer | None,
        *,
        commands: Commands | None = None,
        clock: Callable[[], float] = time.time,
        refresh_s: float = 1.0,
        group_refresh_s: float = 2.0,
        title: str = "kconsole",
        broker_config: BrokerConfig | None = None,
        export_dir: Path | None = None,
        settings: Settings | None = None,
        freeze_gc: bool = False,
    ) -> None:
        super().__init__()
        self._freeze_gc = freeze_gc
        """Once the first cluster data is on screen, move every object there is then out of
        the collector's way (gc.freeze): the console process's own (the `kconsole` command
        sets it; tests, running many apps in one process, do not)."""
        self.jobs_view: JobsView | None = commands.jobs_view() if commands else None
        """The job runs, read-only (None: the jobs screen only says so); starting and
        stopping them is the command layer's."""
        self.job_logs: dict[str, tuple[str, ...]] = {}
        """The newest log lines of each run that is active or failed (while shown)."""
        self.show_job_logs = False
        self._jobs_polling = threading.Lock()  # held while one read of the jobs runs
        """Set while the jobs screen is mounted: only then are log tails read."""
        self._job_specs: list[JobSpec] | None = None
        self.settings = settings
        """How the console reaches the cluster (shown, and the jobs' default bootstrap)."""
        self.reassign_view: ReassignView | None = commands.reassign_view() if commands else None
        """Running reassignments, log sizes and throttles, read-only (None: the reassignment
        screen cannot reach the cluster); changes go through the command layer."""
        self.observer = observer
        self.commands = commands
        """The one door for every modifying action (None: the console only observes)."""
        if commands is not None:
            # The audit log names the cluster as the console sees it: no extra request.
            commands.cluster_id = self._cluster_id
            commands.origin = "console"
        self.clock = clock
        self.refresh_s = refresh_s
        self.group_refresh_s = group_refresh_s
        self.title = title
        self.broker_config = broker_config or BrokerConfig()
        self._export_dir = export_dir
        self.lag_history: dict[str, deque[int]] = {}
        # (when, records a second) landed in the whole cluster between two readings of the
        # log ends: a drill's cluster throughput through its fault (kconsole.drills.throughput).
        self.landed: deque[tuple[float, float]] = deque(maxlen=LANDED_HISTORY)
        self.timeline: deque[LoggedEvent] = deque(maxlen=TIMELINE_EVENTS)
        """Every event in arrival order (the events pane shows the newest MAX_EVENTS)."""
        self.actions: list[ActionRun] = []
        """Broker actions started from the console, oldest first."""
        self._event_seq = 0
        self._hinted = ""  # the start hint last shown as a notification

    @property
    def export_dir(self) -> Path:
        """Where timelines are exported (resolved late: KCONSOLE_STATE_DIR may change)."""
        return self._export_dir or paths.state_dir() / "timelines"

    def get_default_screen(self) -> Screen[None]:
        return MainScreen()

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every notification (screens' and widgets' come here too) with every secret kconsole
        has resolved scrubbed out: an error never shows a password on screen."""
        super().notify(
            secrets.scrub(message),
            title=secrets.scrub(title),
            severity=severity,
            timeout=timeout,
            markup=markup,
        )

    def on_mount(self) -> None:
        self.now = self.clock()
        # Ages on screen keep counting between snapshots (a stalled source must look stalled).
        self.set_interval(1.0, self._tick)
        if self.observer is not None:
            try:
                self.observer.start(self._from_observer)
            except Exception as exc:
                self.notify(f"could not start observing the cluster: {exc}", severity="error")
        if self.jobs_view is not None:
            self.poll_jobs()
            self.set_interval(1.0, self.poll_jobs)

    def on_unmount(self) -> None:
        if self.observer is not None:
            self.observer.stop()
        if self.commands is not None:
            # Jobs started from this console stop with it (graceful, then forced), unless they
            # were started detached: each stop through the door, so each is in the audit log.
            # After a quit they are already stopped and this finds none.
            with contextlib.suppress(Exception):
                self.commands.stop_attached_jobs()

    def _tick(self) -> None:
        self.now = self.clock()

    def _from_observer(self, snapshot: ClusterSnapshot, events: tuple[Event, ...]) -> None:
        # Called on the observer's thread: only post_message is safe here.
        with contextlib.suppress(RuntimeError):  # the loop closed while shutting down
            self.post_message(SnapshotUpdated(snapshot, tuple(events)))

    def on_snapshot_updated(self, message: SnapshotUpdated) -> None:
        self.apply_snapshot(message.snapshot, message.events)

    def apply_snapshot(self, snapshot: ClusterSnapshot, events: Iterable[Event] = ()) -> None:
        """Make `snapshot` the current state and log `events` (oldest first, as diff gives them).

        A snapshot older than the one shown (a lower `seq`) only adds its events: data on
        screen never goes back in time."""
        current = self.snapshot
        with self.batch_update():
            self._log_events(events)
            if current is not None and snapshot.seq < current.seq:
                return
            self._record_lag(current, snapshot)
            if current is not None:
                snapshot.count_from(current)  # the brokers pane's counts, from what changed
            self.now = self.clock()
            self.snapshot = snapshot
        if snapshot.start_hint and snapshot.start_hint != self._hinted:
            # A newcomer's first screen: nothing answers, and the local cluster is not running.
            self.notify(
                f"cannot reach the cluster: {snapshot.start_hint}",
                title="Nothing answers",
                severity="warning",
                timeout=30,
                markup=False,
            )
        self._hinted = snapshot.start_hint
        if self._freeze_gc and snapshot.partitions:
            # Python's full collections walk every object: with the screen, the cluster and
            # 200 groups that was 40-240 ms with every thread stopped, several times during
            # a failover on 2,000 partitions. What exists once the first data is shown
            # (modules, widgets, styles, the first snapshot) lives as long as the console.
            self._freeze_gc = False
            self.call_after_refresh(gc.freeze)

    def on_partitions_table_in_view(self, message: PartitionsTable.InView) -> None:
        if isinstance(self.observer, Prefers):
            self.observer.prefer(message.partitions)

    def on_events_logged(self, message: EventsLogged) -> None:
        self._log_events(message.events)

    def _log_events(self, events: Iterable[Event]) -> None:
        new = list(events)
        if not new:
            return
        # Newest batch on top; within a batch keep diff's cause-then-effect order.
        logged = []
        for event in new:
            self._event_seq += 1
            logged.append(LoggedEvent(self._event_seq, event))
        self.timeline.extend(logged)
        ordered = sorted(logged, key=lambda le: -le.event.ts)
        self.events = (*ordered, *self.events)[:MAX_EVENTS]

    def _record_lag(self, before: ClusterSnapshot | None, snapshot: ClusterSnapshot) -> None:
        """One point per group poll, for groups whose whole lag was read in it; groups that are
        gone lose their history (a console left open for days stays the same size)."""
        health = snapshot.source(SourceName.GROUPS)
        old = before.source(SourceName.GROUPS) if before is not None else None
        if health is None or health.updated_at is None:
            return
        if old is not None and old.updated_at == health.updated_at:
            return  # another source's update: no new group poll
        present = {g.group_id for g in snapshot.groups}
        for gone in set(self.lag_history) - present:
            del self.lag_history[gone]
        for group in snapshot.groups:
            lag = group.lag
            if lag is not None and group.lag_read_whole:
                history = self.lag_history.setdefault(group.group_id, deque(maxlen=LAG_HISTORY))
                history.append(lag)
        recent = snapshot.rates.recent if snapshot.rates is not None else None
        if (
            recent is not None
            and recent.per_s is not None
            and recent.as_of is not None
            and (not self.landed or self.landed[-1][0] != recent.as_of)
        ):
            self.landed.append((recent.as_of, recent.per_s))

    @property
    def predictions_config(self) -> BrokerConfig:
        """The brokers' real settings once read, else the ones given (or assumed)."""
        snap = self.snapshot
        if snap is not None and snap.broker_config is not None:
            return snap.broker_config
        return self.broker_config

    # -- drills -------------------------------------------------------------------------------
    def latest_drill(self) -> Drill | None:
        """The latest stop / kill / pause from the console, with its restore if any."""
        return latest_drill(self.actions)

    def timeline_events(self) -> list[Event]:
        """Every event kept, in arrival order."""
        return [le.event for le in self.timeline]

    def drill_measurements(self, drill: Drill | None = None) -> list[Measurement]:
        """measure() over the latest drill (none without one)."""
        drill = drill or self.latest_drill()
        if drill is None:
            return []
        measured = drill.measurements(self.timeline_events(), self.predictions_config)
        # The console runs no workload: the cluster's throughput only (every producer's).
        landed = [(t - drill.fault.ts, v) for t, v in self.landed]
        return [*measured, throughput.measurements([], landed)[1]]

    # -- actions ------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "broker_actions_unavailable":
            return self.check_broker_action(action)
        if action == "refresh":
            return True if self.observer is not None else None  # shown, but dimmed
        return True

    async def action_quit(self) -> None:
        """Quit; jobs started from this console (not detached) are stopped first, on a thread,
        with the screen saying so."""
        attached = [r for r in self.job_runs if r.active and not r.detached]
        if self.commands is None or not attached:
            self.exit()
            return
        self.notify(
            f"stopping {len(attached)} job run(s) started here (graceful, then forced) …",
            timeout=30,
        )
        self._stop_jobs_then_exit()

    @work(thread=True, exclusive=True, group="quit", exit_on_error=False)
    def _stop_jobs_then_exit(self) -> None:
        # The door stops what is really attached now (the screen's list may be a second old),
        # each as its own job.stop in the audit log.
        try:
            if self.commands is not None:
                with contextlib.suppress(Exception):
                    self.commands.stop_attached_jobs()
        finally:
            self.call_from_thread(self.exit)

    def open_reassign(
        self,
        topics: list[str] | None = None,
        partition: tuple[str, int] | None = None,
        drain: int | None = None,
    ) -> None:
        """The reassignment screen on `topics` (cursor on `partition`) or draining `drain`
        (widgets ask for it here: they sit below the screens)."""
        self.push_screen(ReassignScreen(topics=topics, partition=partition, drain=drain))

    def refresh_observer(self) -> None:
        """Ask the observer for an immediate re-poll (after something changed the cluster)."""
        if self.observer is not None:
            self.observer.refresh()

    def action_refresh(self) -> None:
        """Ask the observer for an immediate re-poll."""
        if self.observer is not None:
            self.observer.refresh()
            self.notify("refreshing…", timeout=1.5)

    def action_help(self) -> None:
        """Show every key."""
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def key_groups(self) -> list[KeyGroup]:
        """What the help lists, by where it works (besides the app's own keys and the tables')."""
        return [
            KeyGroup("Main screen", (MainScreen,)),
            KeyGroup("Brokers pane", (BrokersTable,)),
            KeyGroup(
                "Partitions",
                (PartitionsTable,),
                after=(("click header", "Sort by that column (again: reverse)"),),
            ),
            KeyGroup("Topic filter", (FilterInput,)),
            KeyGroup("Consumer groups pane", (GroupsTable,)),
            KeyGroup("Group screen", (GroupScreen,)),
            KeyGroup("Topics (v)", (TopicsScreen,)),
            KeyGroup("Broker action chooser (C, L)", (BrokerChooser,)),
            KeyGroup(
                "Confirmation",
                (ConfirmBrokerAction,),
                before=(("type id, enter", "Confirm a stop, kill or pause"),),
            ),
            KeyGroup("Timeline", (TimelineScreen,)),
            KeyGroup("Produce (P)", (ProduceScreen,)),
            KeyGroup("Tail (F)", (TailScreen,), after=(("enter", "Start the tail"),)),
            KeyGroup("Jobs (J)", (JobsScreen,), after=(("enter", "Start the selected job"),)),
            KeyGroup("Start a job", (StartJobDialog,)),
            KeyGroup(
                "Reassign (R on a partition, D on a broker)",
                (ReassignScreen,),
                after=(("enter", "In the bar: propose from the topics, brokers and RF"),),
            ),
            KeyGroup("Preferred leader election (E on a partition)", (ElectScope,)),
            KeyGroup(
                "Reassign dialogs",
                (AskText,),
                before=(("type, enter", "Confirm (the word shown) or set the replicas"),),
            ),
        ]

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """Textual's own commands, plus one per kconsole binding active on `screen` (on the
        main screen ConsoleCommands lists every action, each saying what it acts on)."""
        titles = set()
        for command in super().get_system_commands(screen):
            titles.add(command.title)
            yield command
        if isinstance(screen, MainScreen):
            return
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
    commands: Commands | None = None,
    clock: Callable[[], float] = time.time,
    refresh_s: float = 1.0,
    group_refresh_s: float = 2.0,
    title: str = "kconsole",
    broker_config: BrokerConfig | None = None,
    export_dir: Path | None = None,
    settings: Settings | None = None,
    freeze_gc: bool = False,
) -> KConsoleApp:
    """The console app, reading from `observer` (None: wait for SnapshotUpdated messages).

    `commands` is the command layer with its backends: every key that changes the cluster,
    and the read-only views of jobs and reassignments, come from it (None: the console only
    observes). `broker_config` is what drill measurements are predicted from (default: the
    local cluster's settings); timelines are exported to `export_dir` (default: <state
    dir>/timelines); `settings` are how the console reaches the cluster. `freeze_gc`: see
    KConsoleApp.
    """
    return KConsoleApp(
        observer,
        commands=commands,
        clock=clock,
        refresh_s=refresh_s,
        group_refresh_s=group_refresh_s,
        title=title,
        broker_config=broker_config,
        export_dir=export_dir,
        settings=settings,
        freeze_gc=freeze_gc,
    )


if TYPE_CHECKING:
    # mypy holds the app to the two contracts screens and widgets see it through
    # (kconsole.ui.context casts to them): a missing or mistyped member fails the type check.
    def _holds_the_contracts(app: KConsoleApp) -> tuple[ConsoleState, ConsoleActions]:
        return app, app
