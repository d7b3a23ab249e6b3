"""`kconsole drill run`: a whole failover drill without the UI.

Workload on, fault, wait, restore, settle, workload off, read everything back, audit, measure,
report. The same observer, command layer, workload and audit serve the console.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kconsole import __version__
from kconsole.cluster.admin import AdminReader
from kconsole.cluster.control import BrokerAction, BrokerControl
from kconsole.cluster.errors import ClusterError
from kconsole.cluster.produce_request import check_topic_name
from kconsole.config import Settings
from kconsole.drills.audit import Acks, AuditResult, check
from kconsole.drills.export import timeline_document, timeline_markdown
from kconsole.drills.measure import Measurement, measure
from kconsole.drills.verify import end_offsets, read_back
from kconsole.drills.workload import Workload
from kconsole.errors import NotConfirmed
from kconsole.impact import blast_radius
from kconsole.models import BrokerConfig, BrokerState, ClusterSnapshot
from kconsole.observer import ClusterObserver
from kconsole.timeline import Event, EventKind

Progress = Callable[[str], None]
# How the runner changes the cluster: both come from the command layer (Commands.drill_run),
# which refused the drill already if it must not run. act(action, broker) -> outcome text;
# confirm(prompt, expected) -> whether the user typed `expected` (the target broker id).
Act = Callable[[BrokerAction, int], str]
Confirm = Callable[[str, str], bool]
FAULTS = {"stop": BrokerAction.STOP, "kill": BrokerAction.KILL, "pause": BrokerAction.PAUSE}
RESTORE = {"stop": BrokerAction.START, "kill": BrokerAction.START, "pause": BrokerAction.RESUME}


class DrillError(ClusterError):
    """The drill could not be run as asked (bad target, cluster not ready, ...)."""


@dataclass(frozen=True)
class DrillSpec:
    fault: str  # stop | kill | pause
    target: str  # controller | broker:ID | leader:TOPIC/PARTITION
    acks: Acks = "all"
    duration_s: float = 30.0  # the workload runs at least this long, and until settled
    restore_after_s: float = 10.0
    settle_timeout_s: float = 90.0
    wait_preferred: bool = True  # settle also waits for the preferred leaders to return
    rate: float = 200.0
    topic: str = "test-topic"
    warmup_s: float = 2.0

    def __post_init__(self) -> None:
        if self.fault not in FAULTS:
            raise DrillError(f"--fault must be one of {', '.join(FAULTS)}, not {self.fault!r}")
        if self.acks not in ("all", "1", "0"):
            raise DrillError(f"--acks must be all, 1 or 0, not {self.acks!r}")
        if not 0 < self.rate <= 100_000:  # NaN too
            raise DrillError("--rate must be between 0 and 100000 messages per second")
        if not (0 < self.duration_s < math.inf and 0 <= self.restore_after_s < math.inf):
            raise DrillError("--duration must be positive and --restore-after not negative")
        if not 0 <= self.settle_timeout_s < math.inf:
            raise DrillError("--settle-timeout must be a number of seconds, not negative")
        try:
            check_topic_name(self.topic)
        except ClusterError as exc:
            raise DrillError(f"--topic: {exc}") from None


_ID = re.compile(r"[0-9]{1,10}")  # a broker id or a partition: ASCII digits, 32 bits at most


def resolve_target(snap: ClusterSnapshot, target: str) -> int:
    """The broker id that `controller`, `broker:ID` or `leader:TOPIC/PARTITION` names now."""
    kind, _, rest = target.partition(":")
    if kind == "controller" and not rest:
        if snap.controller.id is None:
            raise DrillError("there is no active controller to target")
        return snap.controller.id
    if kind == "broker":
        if not _ID.fullmatch(rest.strip()):
            raise DrillError(f"broker:ID needs a number, not {rest!r}")
        bid = int(rest)
        if snap.broker(bid) is None:
            raise DrillError(
                f"broker {bid} is not in the cluster ({', '.join(str(b.id) for b in snap.brokers)})"
            )
        return bid
    if kind == "leader":
        topic, _, part = rest.rpartition("/")
        if not topic or not _ID.fullmatch(part):
            raise DrillError(f"leader:TOPIC/PARTITION expected, not {target!r}")
        p = snap.partition(topic, int(part))
        if p is None:
            raise DrillError(f"partition {topic}/{part} does not exist")
        if snap.is_offline(p):
            raise DrillError(f"partition {topic}/{part} has no leader right now")
        return p.leader
    raise DrillError(
        f"--target must be controller, broker:ID or leader:TOPIC/PARTITION, not {target!r}"
    )


@dataclass
class DrillReport:
    spec: DrillSpec
    target_broker: int
    was_controller: bool
    started: str
    fault_at: float
    impact: list[str]
    measurements: list[Measurement]
    audit: AuditResult
    events: list[Event]
    settled: bool
    notes: list[str] = field(default_factory=list)
    broker_config: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """No acknowledged message was lost."""
        return self.audit.ok

    def to_dict(self) -> dict[str, Any]:
        fault = next((e for e in self.events if e.kind is EventKind.ACTION), None)
        return {
            "kconsole": __version__,
            "drill": asdict(self.spec),
            "target_broker": self.target_broker,
            "was_controller": self.was_controller,
            "started": self.started,
            "settled": self.settled,
            "ok": self.ok,
            "blast_radius": self.impact,
            "broker_config": self.broker_config,
            "audit": self.audit.to_dict(),
            "timeline": timeline_document(self.events, self.measurements, fault),
            "notes": self.notes,
        }

    def markdown(self) -> str:
        fault = next((e for e in self.events if e.kind is EventKind.ACTION), None)
        s = self.spec
        verdict = "no acknowledged message was lost" if self.ok else "ACKNOWLEDGED MESSAGES LOST"
        lines = [
            f"# Drill: {s.fault} broker {self.target_broker} ({s.target}"
            + (", the controller" if self.was_controller and s.target != "controller" else "")
            + f") with acks={s.acks}",
            "",
            f"Started {self.started}; workload {s.rate:g} msg/s on {s.topic}; restore after "
            f"{s.restore_after_s:g} s; {'settled' if self.settled else 'did NOT settle'}.",
            "",
            f"**Verdict: {verdict}.**",
            "",
            "## Blast radius (predicted before the fault)",
            "",
            *[f"- {line}" for line in self.impact],
            "",
            "## Audit",
            "",
            self.audit.markdown(),
            "",
            timeline_markdown(self.events, self.measurements, fault),
        ]
        if self.notes:
            lines += ["## Notes", "", *[f"- {n}" for n in self.notes], ""]
        return "\n".join(lines)

    def write(self, path: Path) -> tuple[Path, Path]:
        """Write `path` (JSON) and the Markdown summary beside it (.md)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=2, default=str) + "\n")
        md = path.with_suffix(".md")
        md.write_text(self.markdown())
        return path, md


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
        event = Event(time.time(), EventKind.ACTION, text, broker=broker, new=action.value)
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
            )
        finally:
            if workload is not None:
                workload.stop(flush_timeout_s=5)
            self.observer.stop()
