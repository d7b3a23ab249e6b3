"""`kconsole drill run`: a whole failover drill without the UI.

Workload on, fault, wait, restore, settle, workload off, read everything back, audit, measure,
report. The same observer, command layer, workload and audit serve the console.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from datetime import UTC, datetime

from kconsole.cluster.admin import AdminReader
from kconsole.cluster.control import BrokerControl
from kconsole.cluster.values import BrokerAction, ProcState
from kconsole.config import Settings
from kconsole.drills import kraft
from kconsole.drills.audit import check
from kconsole.drills.export import ClusterIdentity
from kconsole.drills.measure import Measurement
from kconsole.drills.spec import (
    Act,
    Confirm,
    DrillError,
    DrillReport,
    DrillSpec,
    Progress,
    resolve_targets,
)
from kconsole.drills.verify import end_offsets, read_back
from kconsole.drills.workload import Workload
from kconsole.errors import NotConfirmed
from kconsole.faults import fault_kind
from kconsole.impact import blast_radius
from kconsole.models import BrokerConfig, BrokerState, ClusterMode, ClusterSnapshot
from kconsole.observer import ClusterObserver
from kconsole.timeline import Event, EventKind

# A restore that fails (a `docker start` refused, a broker that did not register) is tried
# again: up to RESTORE_ATTEMPTS times, a short backoff between them (doubling), and no new
# attempt once RESTORE_DEADLINE_S have passed since the first. One that still fails does not end
# the drill: the workload is stopped and audited as usual, and the report says which node was
# not restored, why, and what to run.
RESTORE_ATTEMPTS = 3
RESTORE_BACKOFF_S = 1.0
RESTORE_DEADLINE_S = 60.0


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
        self.observer = ClusterObserver(
            settings,
            proc_states=control.states,
            controller_states=states if callable(states) else None,
        )
        self._latest: ClusterSnapshot | None = None
        self._changed = threading.Condition()
        self._acted_at: float | None = None  # the last action, on the workload's clock
        # KRaft: when no quorum leader answered, and when one did again (not the observer's
        # events: said by the drill, which knows it took the quorum's majority away)
        self._frozen: list[Event] = []

    def _on_update(self, snap: ClusterSnapshot, _events: tuple[Event, ...]) -> None:
        with self._changed:
            if (e := kraft.frozen_event(self._latest, snap)) is not None:
                self._frozen.append(e)
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
        fault = self._act(fault_kind(spec.fault).apply.action, targets)
        applied = self._acted_at
        assert applied is not None  # _act set it
        # From the fault, not from its command's return: a kill waits for the process to go and
        # a stop for the controlled shutdown (2-4 s), which would otherwise lengthen the fault.
        took = time.monotonic() - applied
        if spec.restore_after_s - took > 0:
            time.sleep(spec.restore_after_s - took)  # the fault lasts this long, by design
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
            if self._state(node) is ProcState.RUNNING:  # every heal leaves its node so
                break  # its process runs: another start would only be refused
            time.sleep(backoff)  # a short backoff before the next attempt
            backoff *= 2
        return (
            f"{label} was NOT restored ({action.value} failed {len(errors)} time"
            f"{'s' if len(errors) > 1 else ''}: {'; '.join(errors)}); it is "
            f"{self._state_text(node)}. Run `{self._command(action, node)}`"
        )

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
        spec = self.spec
        started = datetime.now(tz=UTC).isoformat(timespec="seconds")
        self.observer.start(self._on_update)
        workload: Workload | None = None
        try:
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
            targets = resolve_targets(snap, spec.target)
            target = targets[0]
            self._check_up(snap, targets)
            is_kraft = snap.mode is ClusterMode.KRAFT
            on_brokers = all(snap.broker(t) is not None for t in targets)
            # A combined node is both: a broker's blast radius and the quorum's.
            voters = snap.quorum.voter_ids if is_kraft and snap.quorum is not None else ()
            on_quorum = any(t in voters for t in targets)
            # The settings are read from a broker (on KRaft the quorum timers are the
            # controllers' too when, as here, one configuration serves every node); a broker
            # target is asked itself, a controller target a running broker.
            asked = (
                [target]
                if on_brokers
                else [b.id for b in snap.brokers if b.state is BrokerState.UP]
            )
            cfg_raw: dict[str, str] = {}
            for bid in asked:
                try:
                    cfg_raw = AdminReader(self.settings.kafka_config()).read_broker_config(bid)
                    break
                except Exception:
                    continue
            config = (
                BrokerConfig.from_configs(cfg_raw, asked[0] if asked else None)
                if cfg_raw
                else BrokerConfig()
            )
            what = ", ".join(self._label(t) for t in targets)
            expected = ",".join(str(t) for t in targets)

            def lines(at: ClusterSnapshot) -> list[str]:
                out = kraft.prediction_lines(at, spec.fault, targets, config) if on_quorum else []
                if not on_brokers:
                    return out
                impact = blast_radius(at, fault_kind(spec.fault).apply.action, target)
                if not is_kraft:
                    return impact.lines(config.session_timeout_ms)
                return [
                    *out,
                    *impact.lines(None),
                    kraft.broker_fencing_line(spec.fault, target, config),
                ]

            # Asked before the workload writes its first record: nothing happens unconfirmed.
            prompt = "\n".join(
                [
                    f"drill: {spec.fault} {what} ({spec.target}) under a "
                    f"{spec.rate:g} msg/s acks={spec.acks} workload on {spec.topic}",
                    *(f"  {line}" for line in lines(snap)),
                    f"Type {expected} to confirm",
                ]
            )
            if not self.confirm(prompt, expected):
                raise NotConfirmed(f"drill on {what}: not confirmed")
            starts = end_offsets(self.settings, spec.topic)
            self.say(f"workload: {spec.rate:g} msg/s, acks={spec.acks}, on {spec.topic}")
            workload = Workload(
                self.settings,
                spec.topic,
                acks=spec.acks,
                rate=spec.rate,
            ).start()
            t_work = time.monotonic()
            time.sleep(spec.warmup_s)  # steady traffic before the fault (drill timing, not a wait)
            before = self._latest or snap
            impact_lines = lines(before)
            for line in impact_lines:
                self.say(f"  {line}")
            fault, fault_clock, restore, not_restored, held = self._hold_fault(targets)
            for line in not_restored:
                self.say(line)
            self.say(
                ("settling: a quorum leader, every voter caught up, " if is_kraft else "settling: ")
                + ("broker registered, " if on_brokers else "")
                + "every ISR full"
                + (", preferred leaders back" if spec.wait_preferred else "")
            )

            def settled(s: ClusterSnapshot) -> bool:
                parts = [p for p in s.partitions]
                full = all(set(p.isr) >= set(p.replicas) for p in parts)
                pref = all(p.on_preferred_leader for p in parts) if spec.wait_preferred else True
                if is_kraft:
                    q = s.quorum
                    if q is None or q.stale or q.leader_id is None or q.lagging_voters():
                        return False
                for t in targets if on_brokers else ():
                    b = s.broker(t)
                    if b is None or b.state is not BrokerState.UP or b.fenced:
                        return False
                return full and pref

            # Nothing to wait for with a node left down: it cannot settle.
            ok_settled = not not_restored and self._wait(settled, spec.settle_timeout_s)
            left = spec.duration_s - (time.monotonic() - t_work)
            if left > 0:
                time.sleep(left)  # the workload runs for the requested duration
            result = workload.stop()
            workload = None
            self.say(
                f"workload stopped: {len(result.acked)} acked, "
                f"{sum(result.failed_by_code.values())} failed, {len(result.unknown)} unknown"
            )
            until = {(a.key, a.seq) for a in result.acked}
            back = read_back(
                self.settings,
                spec.topic,
                result.run_id,
                start_offsets=starts,
                timeout_s=60,
                until=until,
            )
            audit = check(
                result.acked,
                result.failed,
                back.records,
                send_times=result.send_times,
                unknown=result.unknown,
                acks=spec.acks,
                origin=fault_clock,
                origin_name="the fault",
                caveats=[fault_kind(spec.fault).caveat],
            )
            with self._changed:
                frozen = [e for e in self._frozen if e.ts >= fault.ts - spec.warmup_s]
            events = sorted(
                [*self.observer.events_since(fault.ts - spec.warmup_s), *frozen],
                key=lambda e: e.ts,
            )
            notes = list(result.notes)
            measurements, more = kraft.measure_drill(
                before, events, fault=fault, targets=targets, restore=restore, cfg=config
            )
            measurements = [held, *measurements]
            notes += more
            if not back.complete:
                notes.append("read-back did not reach every high watermark before its deadline")
            notes.append(
                "Durations are as kconsole observed them ("
                + ("metadata quorum polls" if is_kraft else "ZooKeeper watches")
                + f", Admin polls every {self.settings.refresh_s:.1f} s): the cluster's "
                "reaction plus kconsole's polling delay."
            )
            return DrillReport(
                spec,
                target,
                before.controller.id == target,
                started,
                fault.ts,
                impact_lines,
                measurements,
                audit,
                events,
                ok_settled,
                notes,
                asdict(config),
                ClusterIdentity(
                    self.settings.bootstrap, before.cluster_id, self.settings.zookeeper
                ),
                list(targets),
                what,
                not_restored,
                restore.ts,
            )
        finally:
            if workload is not None:
                workload.stop(flush_timeout_s=5)
            self.observer.stop()
