"""The console's broker actions: a key -> (the blast-radius confirmation, typed id) -> a thread
worker that records an ACTION event and calls the command layer -> BrokerActionDone -> a
notification. Read-only and a missing backend are refused by the command layer, which logs it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual import work
from textual.app import App

from kconsole.cluster.values import BrokerAction, NetLinks, ProcState
from kconsole.commands import Commands
from kconsole.drills import kraft
from kconsole.errors import ClusterError
from kconsole.faults import fault_of, primitive
from kconsole.impact import blast_radius, partition_lines
from kconsole.models import BrokerConfig, BrokerState, ClusterMode, ClusterSnapshot
from kconsole.source import EventRecorder, Observer
from kconsole.timeline import Event, EventKind
from kconsole.ui.drill import ActionRun
from kconsole.ui.messages import BrokerActionDone, EventsLogged
from kconsole.ui.screens.actions import (
    BrokerChooser,
    ConfirmBrokerAction,
    NetChoice,
    NetworkChooser,
    target_name,
)

ACTIONS_GROUP = "broker-actions"


class BrokerActions(App[None]):
    """The broker-action half of KConsoleApp."""

    if TYPE_CHECKING:
        commands: Commands | None
        observer: Observer | None
        snapshot: ClusterSnapshot | None
        clock: Callable[[], float]
        actions: list[ActionRun]

        @property
        def predictions_config(self) -> BrokerConfig: ...

    def check_broker_action(self, action: str) -> bool | None:
        """check_action for the broker keys wherever they are bound.

        Without a command layer they are hidden; while Commands says no (read-only, no
        backend) they are shown disabled, and the fallback binding on the same key says why.
        """
        if self.commands is None:
            return False
        available, _ = self.commands.broker_actions_available()
        if action == "broker_actions_unavailable":
            return not available  # never None: the fallback itself is never shown
        if action == "network" and self.commands.network_faults() is None:
            return None  # a backend without network faults (docker: not yet)
        return True if available else None

    def action_broker_actions_unavailable(self) -> None:
        """Say why the broker keys do nothing."""
        if self.commands is not None:
            _, reason = self.commands.broker_actions_available()
            self.notify(
                f"broker actions are unavailable: {reason}", severity="warning", markup=False
            )

    def _cluster_id(self) -> str | None:
        snap = self.snapshot
        return snap.cluster_id if snap is not None else None

    def refuse_broker_action(self, action: BrokerAction, broker_id: int) -> None:
        """Have the command layer refuse (and log) `action`, and say why."""
        if self.commands is None:
            return
        action = self.key_action(action, broker_id)
        try:
            self.commands.refuse(f"broker.{action.value}", f"broker {broker_id}")
        except ClusterError as exc:
            self.notify(
                f"{action.value} broker {broker_id}: {exc.message}",
                title="refused",
                severity="warning",
                markup=False,
            )

    def key_action(self, action: BrokerAction, broker_id: int) -> BrokerAction:
        """What a fault's key does to `broker_id` now: its heal where the fault repeats as
        its heal and the node is left so (p on a paused node resumes it), else `action`."""
        kind = fault_of(action)
        return action if kind is None else kind.action_for(self.node_state(broker_id))

    def node_state(self, broker_id: int) -> ProcState | None:
        """PAUSED for a broker the snapshot shows paused (a KRaft controller: its process is
        paused); None when not paused or not known (its key then applies its fault, which
        says itself if it cannot)."""
        broker = self.snapshot.broker(broker_id) if self.snapshot else None
        if broker is None and self._controller_only(broker_id) and self.commands is not None:
            states = self.commands.node_states()
            try:
                state = states().get(broker_id) if states is not None else None
            except Exception:  # no state to read
                return None
            return ProcState.PAUSED if state is ProcState.PAUSED else None
        paused = broker is not None and broker.state is BrokerState.PAUSED
        return ProcState.PAUSED if paused else None

    def _controller_only(self, node_id: int) -> bool:
        """A KRaft controller that is no broker (a row of the brokers pane below the brokers)."""
        snap = self.snapshot
        return (
            snap is not None
            and snap.mode is ClusterMode.KRAFT
            and snap.broker(node_id) is None
            and snap.quorum is not None
            and node_id in (*snap.quorum.voter_ids, snap.controller.id)
        )

    def _role(self, broker_id: int) -> str:
        snap = self.snapshot
        if snap is not None and self._controller_only(broker_id):
            return "quorum leader" if snap.controller.id == broker_id else "voter"
        return "controller" if snap is not None and snap.controller.id == broker_id else ""

    def _impact_lines(
        self, action: BrokerAction, broker_id: int, links: NetLinks | None = None
    ) -> list[str]:
        """The blast radius in words: on KRaft a controller's from the quorum's timers, a
        broker's with fencing instead of a ZooKeeper session; a partition's by what it cuts."""
        snap = self.snapshot
        assert snap is not None
        cfg = self.predictions_config
        if links is not None and not self._controller_only(broker_id):
            ctl = snap.controller.id
            reaches = (
                "quorum" not in links.sides
                if snap.mode is ClusterMode.KRAFT
                else ctl in (None, broker_id)
                or not ({"brokers", str(ctl), f"broker:{ctl}"} & set(links.sides))
            )
            return partition_lines(
                blast_radius(snap, action, broker_id),
                links.sides,
                kraft=snap.mode is ClusterMode.KRAFT,
                session_timeout_ms=cfg.session_timeout_ms,
                replica_lag_ms=cfg.replica_lag_time_max_ms,
                reaches_controller=reaches,
                rate=links.rate,
            )
        if snap.mode is ClusterMode.KRAFT and self._controller_only(broker_id):
            return kraft.prediction_lines(snap, action.value, (broker_id,), cfg)
        impact = blast_radius(snap, action, broker_id)
        if snap.mode is ClusterMode.KRAFT:
            lines = impact.lines(None)
            fault = fault_of(action)
            if fault is not None and not fault.graceful:
                lines.append(kraft.broker_fencing_line(action.value, broker_id, cfg))
            return lines
        return impact.lines(cfg.session_timeout_ms)

    def choose_broker_action(self, broker_id: int, role: str) -> None:
        """Ask what to do to `broker_id` (picked by `role`), then do it."""
        node = self.node_state(broker_id)

        def chosen(action: BrokerAction | None) -> None:
            if action is not None:
                self.request_broker_action(action, broker_id, role)

        self.push_screen(BrokerChooser(broker_id, role, node), chosen)

    def choose_network_fault(self, broker_id: int) -> None:
        """Ask which network fault to put on `broker_id` (or heal the one in force), then
        confirm it with its blast radius and do it."""
        snap = self.snapshot
        kraft = snap is not None and snap.mode is ClusterMode.KRAFT
        in_force = snap.net_fault(broker_id) if snap is not None else None
        role = self._role(broker_id)

        def chosen(choice: NetChoice | None) -> None:
            if choice is not None:
                action, links = choice
                self.request_broker_action(action, broker_id, role, links=links)

        self.push_screen(NetworkChooser(broker_id, role, kraft=kraft, in_force=in_force), chosen)

    def request_broker_action(
        self,
        action: BrokerAction,
        broker_id: int,
        role: str | None = None,
        links: NetLinks | None = None,
    ) -> None:
        """Run `action` on `broker_id`; a destructive one only after its confirmation
        (`links`: what a partition cuts it from)."""
        if self.commands is None:
            return
        available, _ = self.commands.broker_actions_available()
        if not available:
            self.refuse_broker_action(action, broker_id)
            return
        role = self._role(broker_id) if role is None else role
        if not primitive(action).destructive:
            self._start(action, broker_id, confirmed=False)
            return
        if self.snapshot is None:
            self.notify("no snapshot of the cluster yet: nothing to confirm against")
            return
        lines = self._impact_lines(action, broker_id, links)

        def confirmed(ok: bool | None) -> None:
            if ok:
                self._start(action, broker_id, confirmed=True, links=links)

        self.push_screen(ConfirmBrokerAction(action, broker_id, lines, role, links), confirmed)

    def _start(
        self,
        action: BrokerAction,
        broker_id: int,
        *,
        confirmed: bool,
        links: NetLinks | None = None,
    ) -> None:
        name = target_name(broker_id, self._role(broker_id)).split(" (")[0]
        text = f"{action.value} {name}" + (f" {links.words}" if links is not None else "")
        event = Event(self.clock(), EventKind.ACTION, text, broker=broker_id, new=action.value)
        # The snapshot just before the fault is what the drill's measurements replay over.
        run = ActionRun(action, broker_id, event, self.snapshot, links=links)
        self.actions.append(run)
        self.notify(f"{text}…", timeout=3, markup=False)
        self._run_action(run, confirmed, links)

    @work(thread=True, exit_on_error=False, group=ACTIONS_GROUP)
    def _run_action(self, run: ActionRun, confirmed: bool, links: NetLinks | None = None) -> None:
        # A worker thread: no widgets, no reactives, only post_message.
        commands = self.commands
        assert commands is not None
        self._record(run.event)

        def confirm(_prompt: str, expected: str) -> bool:
            # The user typed the id in ConfirmBrokerAction, which only returns True on a match.
            return confirmed and expected == str(run.broker_id)

        def progress(message: str) -> None:
            # A long wait inside the action (a start after a kill waits for the killed
            # process's ZooKeeper session): said while it lasts, not only at the end.
            with contextlib.suppress(RuntimeError):
                self.call_from_thread(self.notify, message, timeout=6, markup=False)

        try:
            outcome = commands.broker(
                run.action, run.broker_id, confirm, progress=progress, links=links
            )
        except ClusterError as exc:
            self.post_message(BrokerActionDone(run, False, exc.message))
        except Exception as exc:  # a backend bug must not take the console down
            self.post_message(BrokerActionDone(run, False, f"{type(exc).__name__}: {exc}"))
        else:
            self.post_message(BrokerActionDone(run, True, outcome))

    def _record(self, event: Event) -> None:
        """Put `event` on the timeline: through the observer when it records (so it is in
        order with the cluster's events), else straight into the app. Any thread."""
        if isinstance(self.observer, EventRecorder) and self.snapshot is not None:
            try:
                self.observer.record(event)
                return
            except Exception:
                pass  # fall through: the event must not be lost
        with contextlib.suppress(RuntimeError):
            self.post_message(EventsLogged((event,)))

    def on_broker_action_done(self, message: BrokerActionDone) -> None:
        run = message.run
        run.ok, run.outcome = message.ok, message.text
        if message.ok:
            hint = " · T shows the timeline" if primitive(run.action).destructive else ""
            self.notify(message.text + hint, title=run.event.text, markup=False)
        else:
            self.notify(
                message.text,
                title=f"{run.event.text} failed",
                severity="error",
                timeout=10,
                markup=False,
            )
            first = message.text.splitlines()[0] if message.text else "failed"
            self._record(
                Event(
                    self.clock(),
                    EventKind.ACTION,
                    f"{run.event.text} failed: {first}",
                    broker=run.broker_id,
                    old=run.action.value,
                )
            )
        if self.observer is not None:
            self.observer.refresh()
