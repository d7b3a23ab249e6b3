"""`kconsole drill run`: a whole failover drill without the UI.

Workload on, fault, wait, restore, settle, workload off, read everything back, audit, measure,
report. The same observer, command layer, workload and audit serve the console.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import NamedTuple

from kconsole.cluster.admin import AdminReader
from kconsole.cluster.control import BrokerControl
from kconsole.cluster.values import BrokerAction, ProcState
from kconsole.config import Settings
from kconsole.drills import kraft, throughput
from kconsole.drills.audit import AuditResult, check
from kconsole.drills.export import ClusterIdentity
from kconsole.drills.losses import explain_losses
from kconsole.drills.measure import Measurement, zombie_measurements
from kconsole.drills.spec import (
    Act,
    Confirm,
    DrillError,
    DrillReport,
    DrillSpec,
    Progress,
    resolve_targets,
)
from kconsole.drills.verify import ReadBack, end_offsets, read_back
from kconsole.drills.workload import Workload, WorkloadResult
from kconsole.errors import NotConfirmed
from kconsole.faults import fault_kind
from kconsole.impact import blast_radius, partition_lines
from kconsole.models import BrokerConfig, BrokerState, ClusterMode, ClusterSnapshot
from kconsole.observer import ClusterObserver
from kconsole.timeline import Event, EventKind, resigned_event

# A restore that fails (a `docker start` refused, a broker that did not register) is tried
# again: up to RESTORE_ATTEMPTS times, a short backoff between them (doubling), and no new
# attempt once RESTORE_DEADLINE_S have passed since the first. One that still fails does not end
# the drill: the workload is stopped and audited as usual, and the report says which node was
# not restored, why, and what to run.
RESTORE_ATTEMPTS = 3
RESTORE_BACKOFF_S = 1.0
RESTORE_DEADLINE_S = 60.0


@dataclass(frozen=True)
class _Plan:
    """What a drill acts on, resolved from its first healthy view before anything acted, and
    the settings its impact is predicted from."""

    snap: ClusterSnapshot  # the first healthy view
    targets: tuple[int, ...]
    is_kraft: bool
    on_brokers: bool  # every target is a broker
    on_quorum: bool  # a target is a voter of the metadata quorum (a combined node is both)
    config: BrokerConfig  # read from a broker; Kafka's defaults when none answered
    what: str  # the targets, named as the user reads them

    @property
    def target(self) -> int:
        """The first target: the one the report and a broker's blast radius are about."""
        return self.targets[0]

    @property
    def expected(self) -> str:
        """What the user types to confirm: the targets' ids."""
        return ",".join(str(t) for t in self.targets)


DRILL_OFFSETS_S = 1.0  # how often a drill's observer reads the log ends, at most
# Past the warm-up, the longest the fault waits for the cluster's first throughput reading.
WARMUP_READING_S = 10.0


class _Fault(NamedTuple):
    """The fault held and restored (DrillRunner._hold_fault)."""

    event: Event  # the fault's ACTION event
    clock: float  # its moment on the workload's clock
    restore: Event  # the restore's ACTION event
    not_restored: list[str]  # per node not restored: what happened and what to run
    held: Measurement  # fault -> restore, as measured


class DrillRunner:
    """Runs one drill; see the module docstring. Build it through Commands.drill_run."""

    def __init__(
        self,
        settings: Settings,
        control: BrokerControl,
        spec: DrillSpec,
        *,
        act: Act,
        confirm: Confirm,
        progress: Progress | None = None,
    ):
        self.settings = settings
        self.control = control
        self.spec = spec
        self.say = progress or (lambda _m: None)
        self.act = act
        self.confirm = confirm
        # KRaft controllers' process states too: a killed one is "down" on the timeline at once
        states = getattr(control, "controller_states", None)
        faults = getattr(control, "network_faults", None)
        self.observer = ClusterObserver(
            # The log ends read every second at most: the cluster's throughput through the
            # fault needs readings before it (the warm-up is 2 s by default).
            replace(settings, group_refresh_s=min(settings.group_refresh_s, DRILL_OFFSETS_S)),
            proc_states=control.states,
            controller_states=states if callable(states) else None,
            net_faults=faults if callable(faults) else None,
        )
        self._latest: ClusterSnapshot | None = None
        self._changed = threading.Condition()
        self._acted_at: float | None = None  # the last action, on the workload's clock
        # KRaft: when no quorum leader answered, and when one did again (not the observer's
        # events: said by the drill, which knows it took the quorum's majority away)
        self._frozen: list[Event] = []
        # (wall time, records a second) landed in the whole cluster between two readings of
        # the log ends: the cluster's throughput through the fault.
        self._landed: list[tuple[float, float, bool]] = []  # and: some partition not read

    def _on_update(self, snap: ClusterSnapshot, _events: tuple[Event, ...]) -> None:
        with self._changed:
            if (e := kraft.frozen_event(self._latest, snap)) is not None:
                self._frozen.append(e)
            r = snap.rates
            recent = r.recent if r is not None else None
            if (
                r is not None
                and recent is not None
                and recent.per_s is not None
                and (not self._landed or self._landed[-1][0] != r.taken_at)
            ):
                self._landed.append((r.taken_at, recent.per_s, recent.partial))
            self._latest = snap
            self._changed.notify_all()

    def _label(self, node: int) -> str:
        label = getattr(self.control, "label", None)
        try:
            return str(label(node)) if label is not None else f"broker {node}"
        except Exception:
            return f"broker {node}"

    def _check_up(self, snap: ClusterSnapshot, targets: tuple[int, ...]) -> None:
        """Every target is running (a controller: its process; a broker: as observed)."""
        nodes = getattr(self.control, "node_states", None)
        procs = nodes() if nodes is not None else {}
        for t in targets:
            b = snap.broker(t)
            if b is not None:
                if b.state is not BrokerState.UP:
                    raise DrillError(f"broker {t} is not up ({b.state.value})")
            elif procs.get(t) is not ProcState.RUNNING:
                raise DrillError(
                    f"{self._label(t)} is not running here ({procs.get(t, 'not a node of it')}): "
                    "the drill needs a node this console controls"
                )

    def _wait(self, cond: Callable[[ClusterSnapshot], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                if self._latest is not None and cond(self._latest):
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(min(left, 0.5))

    def _act(self, action: BrokerAction, nodes: tuple[int, ...]) -> Event:
        text = f"{action.value} " + ", ".join(self._label(n) for n in nodes)
        # Both clocks at once: the timeline's (wall) and the workload's (monotonic), so the
        # audit counts from the same moment as the measurements.
        event = Event(time.time(), EventKind.ACTION, text, broker=nodes[0], new=action.value)
        self._acted_at = time.monotonic()
        self.observer.record(event)
        if len(nodes) == 1:
            self.say(f"{text}: " + self.act(action, nodes[0]))
            return event
        # Several nodes (a quorum majority): at once, each through the door; a start waits
        # for its node, and one controller alone cannot come back without the other.
        said: dict[int, str] = {}

        def one(n: int) -> None:
            try:
                said[n] = self.act(action, n)
            except Exception as exc:
                said[n] = f"FAILED: {exc}"

        threads = [threading.Thread(target=one, args=(n,)) for n in nodes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for n in nodes:
            self.say(f"{action.value} {self._label(n)}: {said[n]}")
        failed = [n for n in nodes if said[n].startswith("FAILED")]
        if failed:
            raise DrillError(
                f"{action.value} of {', '.join(self._label(n) for n in failed)} failed: "
                + "; ".join(said[n] for n in failed)
            )
        return event

    def _hold_fault(
        self, targets: tuple[int, ...]
    ) -> tuple[Event, float, Event, list[str], Measurement]:
        """The fault, held --restore-after seconds counted from the moment it was applied, then
        the restore: (fault event, its moment on the workload's clock, restore event, the nodes
        not restored, the fault -> restore time as measured)."""
        spec = self.spec
        # A network fault outlives nothing: if this process ends before the restore (even
        # by SIGKILL), a watchdog heals it.
        guard = getattr(self.control, "guard_network_faults", None)
        if callable(guard):
            guard(os.getpid())
        fault = self._act(fault_kind(spec.fault).apply.action, targets)
        applied = self._acted_at
        assert applied is not None  # _act set it
        # From the fault, not from its command's return: a kill waits for the process to go and
        # a stop for the controlled shutdown (2-4 s), which would otherwise lengthen the fault.
        took = time.monotonic() - applied
        try:
            if spec.restore_after_s - took > 0:
                time.sleep(spec.restore_after_s - took)  # the fault lasts this long, by design
        except BaseException:
            # Interrupted (Ctrl-C): a network fault outlives nothing, it is healed on the way
            # out. A process fault stays, as the user's own key would leave it.
            if not self._stops_process():
                with contextlib.suppress(Exception):
                    self._restore(fault_kind(spec.fault).heal.action, targets)
            raise
        restore, not_restored = self._restore(fault_kind(spec.fault).heal.action, targets)
        held = restore.ts - fault.ts
        late = took > spec.restore_after_s
        measured = Measurement(
            "fault -> restore",
            held,
            f"{spec.restore_after_s:g} s (--restore-after, counted from the fault)",
            f"the {spec.fault} command itself took {took:.2f} s: restored as soon as it returned"
            if late
            else f"the {spec.fault} command took {took:.2f} s of it",
        )
        asked = f"--restore-after {spec.restore_after_s:g}"
        self.say(f"restore applied {held:.2f} s after the fault ({asked})")
        return fault, applied, restore, not_restored, measured

    def _restore(self, action: BrokerAction, nodes: tuple[int, ...]) -> tuple[Event, list[str]]:
        """Restore every node (at once when several), each retried (RESTORE_ATTEMPTS); the
        ACTION event and, per node not restored, what happened and what to run."""
        text = f"{action.value} " + ", ".join(self._label(n) for n in nodes)
        event = Event(time.time(), EventKind.ACTION, text, broker=nodes[0], new=action.value)
        self._acted_at = time.monotonic()
        self.observer.record(event)
        failed: dict[int, str] = {}

        def one(n: int) -> None:
            why = self._restore_one(action, n)
            if why:
                failed[n] = why

        if len(nodes) == 1:
            one(nodes[0])
        else:
            threads = [threading.Thread(target=one, args=(n,)) for n in nodes]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        return event, [failed[n] for n in nodes if n in failed]

    def _restore_one(self, action: BrokerAction, node: int) -> str:
        """'' once `node` is restored; else why not, and what the user must run."""
        label = self._label(node)
        deadline = time.monotonic() + RESTORE_DEADLINE_S
        backoff = RESTORE_BACKOFF_S
        errors: list[str] = []
        for attempt in range(1, RESTORE_ATTEMPTS + 1):
            try:
                said = self.act(action, node)
            except Exception as exc:  # every failure is said, and retried
                errors.append(f"attempt {attempt}: {exc}")
                self.say(f"{action.value} {label} failed (attempt {attempt}): {exc}")
            else:
                again = f" (attempt {attempt})" if attempt > 1 else ""
                self.say(f"{action.value} {label}{again}: {said}")
                return ""
            if attempt == RESTORE_ATTEMPTS or time.monotonic() + backoff > deadline:
                break
            # A heal that leaves its node's process running (a start, a resume) is not tried
            # again once it runs: another start would only be refused. A network fault's
            # node runs all along: its heal is tried again.
            if self._state(node) is ProcState.RUNNING and self._stops_process():
                break
            time.sleep(backoff)  # a short backoff before the next attempt
            backoff *= 2
        return (
            f"{label} was NOT restored ({action.value} failed {len(errors)} time"
            f"{'s' if len(errors) > 1 else ''}: {'; '.join(errors)}); it is "
            f"{self._state_text(node)}. Run `{self._command(action, node)}`"
        )

    def _stops_process(self) -> bool:
        """Whether the drill's fault leaves its node's process other than running."""
        return fault_kind(self.spec.fault).leaves is not ProcState.RUNNING

    def _state(self, node: int) -> ProcState | None:
        try:
            nodes = getattr(self.control, "node_states", None)
            states = nodes() if nodes is not None else self.control.states()
        except Exception:  # only a hint
            return None
        return states.get(node)

    def _state_text(self, node: int) -> str:
        state = self._state(node)
        return state.value if state is not None else "in an unknown state"

    def _command(self, action: BrokerAction, node: int) -> str:
        """The command line that restores `node` on this backend."""
        snap = self._latest
        name = str(node) if snap is None or snap.broker(node) is not None else f"controller:{node}"
        backend = "docker" if self.control.name == "docker" else "local"
        return f"kconsole --backend {backend} cluster {action.value} {name}"

    def run(self) -> DrillReport:
        """The drill, step by step (see the module docstring). On every path, a failure's too,
        the workload and the observer are stopped; a node not restored is said and reported."""
        started = datetime.now(tz=UTC).isoformat(timespec="seconds")
        self.observer.start(self._on_update)
        workload: Workload | None = None
        try:
            plan = self._resolve(self._healthy_view())
            self._ask(plan)  # before the workload writes its first record: nothing unconfirmed
            starts = end_offsets(self.settings, self.spec.topic)
            workload, t_work = self._start_workload()
            before = self._warm_up(plan)
            impact_lines = self._predict(plan, before)
            fault = _Fault(*self._hold_fault(plan.targets))
            for line in fault.not_restored:
                self.say(line)
            settled = self._settle(plan, fault.not_restored)
            self._run_out(t_work)
            result = workload.stop()
            workload = None
            back, audit = self._audit(result, starts, fault.clock, settled)
            return self._report(
                plan, started, before, impact_lines, fault, settled, result, back, audit
            )
        finally:
            if workload is not None:
                workload.stop(flush_timeout_s=5)
            self.observer.stop()

    def _healthy_view(self) -> ClusterSnapshot:
        """The first view with every source answering (groups aside) and the topic there."""
        spec = self.spec
        self.say("waiting for a healthy view of the cluster")
        if not self._wait(
            lambda s: (
                all(h.ok for h in s.sources if h.name.value != "groups")
                and s.partition(spec.topic, 0) is not None
            ),
            30,
        ):
            raise DrillError(
                "the cluster is not reachable (or the topic is missing): "
                + "; ".join(h.error for h in self._latest.sources if not h.ok)
                if self._latest
                else "no data from the cluster"
            )
        snap = self._latest
        assert snap is not None
        return snap

    def _resolve(self, snap: ClusterSnapshot) -> _Plan:
        """The nodes the target names, checked up, and the settings that bound the fault."""
        targets = resolve_targets(snap, self.spec.target)
        self._check_up(snap, targets)
        is_kraft = snap.mode is ClusterMode.KRAFT
        on_brokers = all(snap.broker(t) is not None for t in targets)
        # A combined node is both: a broker's blast radius and the quorum's.
        voters = snap.quorum.voter_ids if is_kraft and snap.quorum is not None else ()
        on_quorum = any(t in voters for t in targets)
        config = self._broker_config(snap, targets[0] if on_brokers else None)
        what = ", ".join(self._label(t) for t in targets)
        return _Plan(snap, targets, is_kraft, on_brokers, on_quorum, config, what)

    def _broker_config(self, snap: ClusterSnapshot, target: int | None) -> BrokerConfig:
        """The settings, read from the broker `target` (None: the first running broker that
        answers); Kafka's defaults when none answered."""
        # On KRaft the quorum timers are the controllers' too when, as here, one configuration
        # serves every node; a broker target is asked itself, a controller target a running
        # broker.
        asked = (
            [target]
            if target is not None
            else [b.id for b in snap.brokers if b.state is BrokerState.UP]
        )
        cfg_raw: dict[str, str] = {}
        for bid in asked:
            try:
                cfg_raw = AdminReader(self.settings.kafka_config()).read_broker_config(bid)
                break
            except Exception:
                continue
        return (
            BrokerConfig.from_configs(cfg_raw, asked[0] if asked else None)
            if cfg_raw
            else BrokerConfig()
        )

    def _impact(self, plan: _Plan, at: ClusterSnapshot) -> list[str]:
        """What the fault is predicted to do, on the cluster as it is at `at`."""
        spec = self.spec
        out = (
            kraft.prediction_lines(at, spec.fault, plan.targets, plan.config)
            if plan.on_quorum
            else []
        )
        if not plan.on_brokers:
            return out
        impact = blast_radius(at, fault_kind(spec.fault).apply.action, plan.target)
        if spec.links is not None:
            return [
                *out,
                *partition_lines(
                    impact,
                    spec.links.sides,
                    kraft=plan.is_kraft,
                    session_timeout_ms=plan.config.session_timeout_ms,
                    replica_lag_ms=plan.config.replica_lag_time_max_ms,
                    reaches_controller=self._reaches_controller(at, plan.target),
                    rate=spec.links.rate,
                ),
            ]
        if not plan.is_kraft:
            return impact.lines(plan.config.session_timeout_ms)
        return [
            *out,
            *impact.lines(None),
            kraft.broker_fencing_line(spec.fault, plan.target, plan.config),
        ]

    def _reaches_controller(self, at: ClusterSnapshot, target: int) -> bool:
        """Whether a partitioned `target` still reaches the controller that commits its ISR
        changes: it is the controller, or (KRaft) the quorum is not cut, or (ZooKeeper mode)
        the controller is not on a side it is cut from."""
        links = self.spec.links
        if links is None:
            return True
        if at.mode is ClusterMode.KRAFT:
            return "quorum" not in links.sides
        ctl = at.controller.id
        if ctl is None or ctl == target:
            return True
        return not ({"brokers", str(ctl), f"broker:{ctl}"} & set(links.sides))

    def _ask(self, plan: _Plan) -> None:
        """The user confirms the drill, its predicted impact in front of them, by typing the
        targets' ids."""
        spec = self.spec
        prompt = "\n".join(
            [
                f"drill: {spec.fault} {plan.what} ({spec.target}) under a "
                f"{spec.rate:g} msg/s"
                + (f" of {spec.message_bytes:,} B" if spec.message_bytes else "")
                + f" acks={spec.acks} workload on {spec.topic}",
                *(f"  {line}" for line in self._impact(plan, plan.snap)),
                f"Type {plan.expected} to confirm",
            ]
        )
        if not self.confirm(prompt, plan.expected):
            raise NotConfirmed(f"drill on {plan.what}: not confirmed")

    def _start_workload(self) -> tuple[Workload, float]:
        """The workload, started, and when (on the monotonic clock)."""
        spec = self.spec
        size = f" of {spec.message_bytes:,} B" if spec.message_bytes else ""
        self.say(f"workload: {spec.rate:g} msg/s{size}, acks={spec.acks}, on {spec.topic}")
        workload = Workload(
            self.settings,
            spec.topic,
            acks=spec.acks,
            rate=spec.rate,
            value_bytes=spec.message_bytes,
        ).start()
        return workload, time.monotonic()

    def _warm_up(self, plan: _Plan) -> ClusterSnapshot:
        """Steady traffic before the fault; the cluster as it is then. Past the warm-up, the
        fault waits (at most WARMUP_READING_S more) for the cluster's first throughput
        reading: without one before the fault there is no dip to measure, and on a busy
        machine the observer's first two log-end readings could take longer than 2 s."""
        time.sleep(self.spec.warmup_s)  # drill timing, not a wait
        deadline = time.monotonic() + WARMUP_READING_S
        with self._changed:
            while not self._landed and (left := deadline - time.monotonic()) > 0:
                self._changed.wait(left)
        return self._latest or plan.snap

    def _predict(self, plan: _Plan, before: ClusterSnapshot) -> list[str]:
        """The impact predicted just before the fault: said, and kept for the report."""
        impact_lines = self._impact(plan, before)
        for line in impact_lines:
            self.say(f"  {line}")
        return impact_lines

    def _settle(self, plan: _Plan, not_restored: list[str]) -> bool:
        """Wait until the cluster is whole again (settle_timeout_s at most); whether it was."""
        spec = self.spec
        self.say(
            (
                "settling: a quorum leader, every voter caught up, "
                if plan.is_kraft
                else "settling: "
            )
            + ("broker registered, " if plan.on_brokers else "")
            + "every ISR full"
            + (", preferred leaders back" if spec.wait_preferred else "")
        )

        def settled(s: ClusterSnapshot) -> bool:
            parts = [p for p in s.partitions]
            full = all(set(p.isr) >= set(p.replicas) for p in parts)
            pref = all(p.on_preferred_leader for p in parts) if spec.wait_preferred else True
            if plan.is_kraft:
                q = s.quorum
                if q is None or q.stale or q.leader_id is None or q.lagging_voters():
                    return False
            for t in plan.targets if plan.on_brokers else ():
                b = s.broker(t)
                if b is None or b.state is not BrokerState.UP or b.fenced:
                    return False
            return full and pref

        # Nothing to wait for with a node left down: it cannot settle.
        return not not_restored and self._wait(settled, spec.settle_timeout_s)

    def _run_out(self, t_work: float) -> None:
        """The workload runs for the requested duration, counted from its start at `t_work`."""
        left = self.spec.duration_s - (time.monotonic() - t_work)
        if left > 0:
            time.sleep(left)  # the drill's length, by design

    def _audit(
        self, result: WorkloadResult, starts: dict[int, int], origin: float, settled: bool
    ) -> tuple[ReadBack, AuditResult]:
        """Read the run's records back from where the topic ended before the workload, and
        check every acknowledged message against them (times counted from the fault).

        Settled (every ISR full), a high watermark that stands still for 5 s has caught up
        with its leader's log, so what lies beyond it was truncated. Not settled, an ISR may
        still hold a replica that is gone, and the watermark waits for its removal
        (replica.lag.time.max.ms): then only the deadline ends the wait."""
        spec = self.spec
        self.say(
            f"workload stopped: {len(result.acked)} acked, "
            f"{sum(result.failed_by_code.values())} failed, {len(result.unknown)} unknown"
        )
        back = read_back(
            self.settings,
            spec.topic,
            result.run_id,
            start_offsets=starts,
            timeout_s=60,
            until=result.acked,
            still_s=5.0 if settled else 60.0,
        )
        audit = check(
            result.acked,
            result.failed,
            back.records,
            send_times=result.send_times,
            unknown=result.unknown,
            acks=spec.acks,
            origin=origin,
            origin_name="the fault",
            caveats=[fault_kind(spec.fault).caveat],
        )
        return back, audit

    def _timeline(self, fault: Event) -> list[Event]:
        """The events from the warm-up before the fault on, the quorum's frozen spans too."""
        since = fault.ts - self.spec.warmup_s
        with self._changed:
            frozen = [e for e in self._frozen if e.ts >= since]
        return sorted([*self.observer.events_since(since), *frozen], key=lambda e: e.ts)

    def _resignations(self, plan: _Plan, fault: _Fault) -> list[Event]:
        """ZooKeeper mode, a network fault: the controllers that resigned since the fault, as
        their own logs say (a zombie controller learns of its successor only when it reaches
        ZooKeeper again, after the heal). Read once the cluster settled: by then it has."""
        read = getattr(self.control, "controller_resignations", None)
        if plan.is_kraft or self._stops_process() or not callable(read):
            return []
        try:
            found = read(fault.event.ts)
        except Exception as exc:  # a hint only: the report says it could not be read
            self.say(f"could not read the brokers' logs for resignations: {exc}")
            return []
        return [resigned_event(ts, n) for ts, n in found]

    def _explain(
        self,
        audit: AuditResult,
        result: WorkloadResult,
        before: ClusterSnapshot,
        events: list[Event],
        fault: _Fault,
    ) -> list[str]:
        """Why each partition lost what it lost (nothing when nothing was lost)."""
        if not audit.lost:
            return []
        read = getattr(self.control, "truncations", None)
        truncated = []
        if callable(read):
            try:
                truncated = read(fault.event.ts)
            except Exception as exc:  # the lines then say the truncation was not found
                self.say(f"could not read the brokers' logs for truncations: {exc}")
        return explain_losses(
            self.spec.topic,
            self.spec.acks,
            audit.lost,
            result.acked,
            before,
            events,
            truncated,
            fault_ts=fault.event.ts,
            origin=fault.clock,
        )

    def _report(
        self,
        plan: _Plan,
        started: str,
        before: ClusterSnapshot,
        impact_lines: list[str],
        fault: _Fault,
        settled: bool,
        result: WorkloadResult,
        back: ReadBack,
        audit: AuditResult,
    ) -> DrillReport:
        """The drill's report: the prediction, the measurements, the audit and the events."""
        events = self._timeline(fault.event)
        resigned = self._resignations(plan, fault)
        events = sorted([*events, *resigned], key=lambda e: e.ts)
        notes = list(result.notes)
        measurements, more = kraft.measure_drill(
            before,
            events,
            fault=fault.event,
            targets=plan.targets,
            restore=fault.restore,
            cfg=plan.config,
            stays=self.spec.links is not None
            and not self.spec.links.cuts_membership(plan.is_kraft),
        )
        zombie = zombie_measurements(events, fault.restore, resigned)
        explained = self._explain(audit, result, before, events, fault)
        with self._changed:
            landed = [(t - fault.event.ts, v) for t, v, _ in self._landed]
            partial = sum(1 for _, _, p in self._landed if p)
        flow = throughput.measurements(
            throughput.acked_rates([a.acked_at for a in result.acked], fault.clock,
                                   result.send_times[1]),
            landed,
            partial,
        )  # fmt: skip
        measurements = [fault.held, *measurements, *zombie, *flow]
        notes += more
        if back.unfinished:
            notes.append(
                "read-back did not reach the high watermark of partition(s) "
                + ", ".join(map(str, back.unfinished))
                + f" before its deadline ({back.elapsed_s:.0f} s)"
            )
        elif back.missing_until:
            notes.append(
                f"read-back: {back.missing_until} acknowledged record(s) were neither read nor "
                f"read past before its deadline ({back.elapsed_s:.0f} s)"
            )
        notes.append(
            "Durations are as kconsole observed them ("
            + ("metadata quorum polls" if plan.is_kraft else "ZooKeeper watches")
            + f", Admin polls every {self.settings.refresh_s:.1f} s): the cluster's "
            "reaction plus kconsole's polling delay."
        )
        return DrillReport(
            self.spec,
            plan.target,
            before.controller.id == plan.target,
            started,
            fault.event.ts,
            impact_lines,
            measurements,
            audit,
            events,
            settled,
            notes,
            asdict(plan.config),
            ClusterIdentity(self.settings.bootstrap, before.cluster_id, self.settings.zookeeper),
            list(plan.targets),
            plan.what,
            fault.not_restored,
            fault.restore.ts,
            explained,
        )
