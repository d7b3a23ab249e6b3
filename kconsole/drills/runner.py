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
from kconsole.cluster.control import BrokerAction, BrokerControl
from kconsole.config import Settings
from kconsole.drills.audit import PAGE_CACHE_NOTE, PAUSE_NOTE, check
from kconsole.drills.export import ClusterIdentity
from kconsole.drills.measure import measure
from kconsole.drills.spec import (
    FAULTS,
    RESTORE,
    Act,
    Confirm,
    DrillError,
    DrillReport,
    DrillSpec,
    Progress,
    resolve_target,
)
from kconsole.drills.verify import end_offsets, read_back
from kconsole.drills.workload import Workload
from kconsole.errors import NotConfirmed
from kconsole.impact import blast_radius
from kconsole.models import BrokerConfig, BrokerState, ClusterSnapshot
from kconsole.observer import ClusterObserver
from kconsole.timeline import Event, EventKind


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
        self.observer = ClusterObserver(settings, proc_states=control.states)
        self._latest: ClusterSnapshot | None = None
        self._changed = threading.Condition()
        self._acted_at: float | None = None  # the last action, on the workload's clock

    def _on_update(self, snap: ClusterSnapshot, _events: tuple[Event, ...]) -> None:
        with self._changed:
            self._latest = snap
            self._changed.notify_all()

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

    def _act(self, action: BrokerAction, broker: int, before: ClusterSnapshot) -> Event:
        text = f"{action.value} broker {broker}"
        # Both clocks at once: the timeline's (wall) and the workload's (monotonic), so the
        # audit counts from the same moment as the measurements.
        event = Event(time.time(), EventKind.ACTION, text, broker=broker, new=action.value)
        self._acted_at = time.monotonic()
        self.observer.record(event)
        self.say(f"{text}: " + self.act(action, broker))
        return event

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
            target = resolve_target(snap, spec.target)
            state = snap.broker(target)
            if state is None or state.state is not BrokerState.UP:
                raise DrillError(
                    f"broker {target} is not up ({state.state.value if state else '?'})"
                )
            try:
                cfg_raw = AdminReader(self.settings.kafka_config()).read_broker_config(target)
            except Exception:
                cfg_raw = {}
            config = BrokerConfig.from_configs(cfg_raw) if cfg_raw else BrokerConfig()
            # Asked before the workload writes its first record: nothing happens unconfirmed.
            preview = blast_radius(snap, FAULTS[spec.fault], target)
            prompt = "\n".join(
                [
                    f"drill: {spec.fault} broker {target} ({spec.target}) under a "
                    f"{spec.rate:g} msg/s acks={spec.acks} workload on {spec.topic}",
                    *(f"  {line}" for line in preview.lines(config.session_timeout_ms)),
                    "Type the broker id to confirm",
                ]
            )
            if not self.confirm(prompt, str(target)):
                raise NotConfirmed(f"drill on broker {target}: not confirmed")
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
            impact = blast_radius(before, FAULTS[spec.fault], target)
            for line in impact.lines(config.session_timeout_ms):
                self.say(f"  {line}")
            fault = self._act(FAULTS[spec.fault], target, before)
            fault_clock = self._acted_at
            time.sleep(spec.restore_after_s)  # the fault lasts this long, by design
            restore = self._act(RESTORE[spec.fault], target, before)
            self.say(
                "settling: broker registered, every ISR full"
                + (", preferred leaders back" if spec.wait_preferred else "")
            )

            def settled(s: ClusterSnapshot) -> bool:
                b = s.broker(target)
                parts = [p for p in s.partitions]
                full = all(set(p.isr) >= set(p.replicas) for p in parts)
                pref = all(p.on_preferred_leader for p in parts) if spec.wait_preferred else True
                return b is not None and b.state is BrokerState.UP and full and pref

            ok_settled = self._wait(settled, spec.settle_timeout_s)
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
                caveats=[PAUSE_NOTE if spec.fault == "pause" else PAGE_CACHE_NOTE],
            )
            events = self.observer.events_since(fault.ts - spec.warmup_s)
            measurements = measure(
                before, events, fault=fault, target=target, restore=restore, config=config
            )
            notes = list(result.notes)
            if not back.complete:
                notes.append("read-back did not reach every high watermark before its deadline")
            notes.append(
                "Durations are as kconsole observed them (ZooKeeper watches, Admin polls "
                f"every {self.settings.refresh_s:.1f} s): the cluster's reaction plus tens of ms."
            )
            return DrillReport(
                spec,
                target,
                before.controller.id == target,
                started,
                fault.ts,
                impact.lines(config.session_timeout_ms),
                measurements,
                audit,
                events,
                ok_settled,
                notes,
                asdict(config),
                ClusterIdentity(
                    self.settings.bootstrap, before.cluster_id, self.settings.zookeeper
                ),
            )
        finally:
            if workload is not None:
                workload.stop(flush_timeout_s=5)
            self.observer.stop()
