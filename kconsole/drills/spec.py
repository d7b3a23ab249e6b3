"""What a drill is (DrillSpec, the faults and their restores, the target), and what it found
(DrillReport): data only, so the CLI and the console describe drills without importing the
runner that acts (kconsole.drills.runner, reached through the command layer)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kconsole import __version__
from kconsole.cluster.errors import ClusterError
from kconsole.cluster.produce.request import check_topic_name
from kconsole.cluster.values import SIDES, BrokerAction, NetLinks
from kconsole.drills.audit import Acks, AuditResult
from kconsole.drills.export import ClusterIdentity, iso, timeline_document, timeline_markdown
from kconsole.drills.measure import Measurement
from kconsole.faults import FAULT_KINDS, fault_kind, fault_names
from kconsole.models import ClusterMode, ClusterSnapshot, Quorum
from kconsole.timeline import Event, EventKind

Progress = Callable[[str], None]
# How the runner changes the cluster: both come from the command layer (Commands.drill_run),
# which refused the drill already if it must not run. act(action, broker) -> outcome text;
# confirm(prompt, expected) -> whether the user typed `expected` (the target broker id).
Act = Callable[[BrokerAction, int], str]
Confirm = Callable[[str, str], bool]


class DrillError(ClusterError):
    """The drill could not be run as asked (bad target, cluster not ready, ...)."""


MAX_MESSAGE_BYTES = 900_000  # a drill's padded value: under Kafka's default 1 MiB record batch


@dataclass(frozen=True)
class DrillSpec:
    fault: str  # the name of one of kconsole.faults.FAULT_KINDS
    target: str  # see TARGETS
    acks: Acks = "all"
    duration_s: float = 30.0  # the workload runs at least this long, and until settled
    restore_after_s: float = 10.0
    settle_timeout_s: float = 90.0
    wait_preferred: bool = True  # settle also waits for the preferred leaders to return
    rate: float = 200.0
    # Each message's value padded to this many bytes (0: as it comes, about 80 B): a load in
    # bytes, for a link that falls behind on bytes, not on messages (a slow fault).
    message_bytes: int = 0
    topic: str = "test-topic"
    warmup_s: float = 2.0
    links: NetLinks | None = None  # a partition's: what it cuts the target from (--from)

    def __post_init__(self) -> None:
        if self.fault not in fault_names():
            raise DrillError(
                f"--fault must be one of {', '.join(fault_names())}, not {self.fault!r}"
            )
        if fault_kind(self.fault).needs_links and self.links is None:
            raise DrillError(
                f"--fault {self.fault} cuts only some links: say which with --from "
                f"({', '.join(SIDES)} or nodes, comma-separated)"
            )
        if self.links is not None and (self.links.rate is not None) is not (self.fault == "slow"):
            raise DrillError("--slow-rate is --fault slow's, and --fault slow needs it")
        if self.links is not None and not fault_kind(self.fault).needs_links:
            raise DrillError(
                f"--from and --one-way are a partition's; --fault {self.fault} takes neither"
            )
        if self.acks not in ("all", "1", "0"):
            raise DrillError(f"--acks must be all, 1 or 0, not {self.acks!r}")
        if not 0 < self.rate <= 100_000:  # NaN too
            raise DrillError("--rate must be between 0 and 100000 messages per second")
        if not 0 <= self.message_bytes <= MAX_MESSAGE_BYTES:
            raise DrillError(
                f"--message-bytes must be between 0 and {MAX_MESSAGE_BYTES:,} (under the "
                f"brokers' default message.max.bytes), not {self.message_bytes:,}"
            )
        if not (0 < self.duration_s < math.inf and 0 <= self.restore_after_s < math.inf):
            raise DrillError("--duration must be positive and --restore-after not negative")
        if self.warmup_s + self.restore_after_s >= self.duration_s:
            # The duration counts from the workload's start, the fault comes after the warm-up:
            # the workload would end before the restore, and the drill would not be the one
            # asked for. Said before anything starts, rather than stretched in silence.
            raise DrillError(
                f"--restore-after {self.restore_after_s:g} s does not fit in --duration "
                f"{self.duration_s:g} s: the fault comes {self.warmup_s:g} s after the workload "
                f"starts, so the workload would end before the restore. Give --duration more "
                f"than {self.warmup_s + self.restore_after_s:g} s (the workload then runs until "
                "the cluster settled), or a shorter --restore-after."
            )
        if not 0 <= self.settle_timeout_s < math.inf:
            raise DrillError("--settle-timeout must be a number of seconds, not negative")
        try:
            check_topic_name(self.topic)
        except ClusterError as exc:
            raise DrillError(f"--topic: {exc}") from None


_ID = re.compile(r"[0-9]{1,10}")  # a broker id or a partition: ASCII digits, 32 bits at most


# Every --target form some fault takes, in the order the faults list them.
TARGETS = " | ".join(dict.fromkeys(t for kind in FAULT_KINDS for t in kind.targets))


def resolve_target(snap: ClusterSnapshot, target: str) -> int:
    """The node id that a single-node target names now (see resolve_targets)."""
    return resolve_targets(snap, target)[0]


def _quorum(snap: ClusterSnapshot, target: str) -> Quorum:
    q = snap.quorum
    if snap.mode is not ClusterMode.KRAFT or q is None:
        raise DrillError(f"--target {target} needs a KRaft cluster (this one is not, or unread)")
    if q.stale:
        raise DrillError(f"--target {target}: the metadata quorum cannot be read ({q.error})")
    if q.leader_id is None:
        raise DrillError(f"--target {target}: the metadata quorum has no leader right now")
    return q


def resolve_targets(snap: ClusterSnapshot, target: str) -> tuple[int, ...]:
    """The node ids a target names now: one, or on `quorum-majority` the quorum leader and
    enough other voters to make a majority (the leader first, then by id).

    `controller` and `active-controller` are the active controller (on KRaft the quorum leader,
    a controller id); `controller:ID` a voter of the metadata quorum (KRaft only)."""
    kind, _, rest = target.partition(":")
    if target in ("controller", "active-controller"):
        if snap.mode is ClusterMode.KRAFT:
            leader = _quorum(snap, target).leader_id
            assert leader is not None  # _quorum refused a quorum without one
            return (leader,)
        if snap.controller.id is None:
            raise DrillError("there is no active controller to target")
        return (snap.controller.id,)
    if kind == "controller":
        if not _ID.fullmatch(rest.strip()):
            raise DrillError(f"controller:ID needs a number, not {rest!r}")
        q = _quorum(snap, target)
        if int(rest) not in q.voter_ids:
            raise DrillError(
                f"controller {int(rest)} is not a voter of the metadata quorum "
                f"({', '.join(str(v) for v in q.voter_ids)})"
            )
        return (int(rest),)
    if target == "quorum-majority":
        q = _quorum(snap, target)
        need = len(q.voter_ids) // 2 + 1
        leader = q.leader_id
        assert leader is not None  # _quorum refused a quorum without one
        others = sorted(v for v in q.voter_ids if v != leader)
        return (leader, *others)[:need]
    if kind == "broker":
        if not _ID.fullmatch(rest.strip()):
            raise DrillError(f"broker:ID needs a number, not {rest!r}")
        bid = int(rest)
        if snap.broker(bid) is None:
            raise DrillError(
                f"broker {bid} is not in the cluster ({', '.join(str(b.id) for b in snap.brokers)})"
            )
        return (bid,)
    if kind == "leader":
        topic, _, part = rest.rpartition("/")
        if not topic or not _ID.fullmatch(part):
            raise DrillError(f"leader:TOPIC/PARTITION expected, not {target!r}")
        p = snap.partition(topic, int(part))
        if p is None:
            raise DrillError(f"partition {topic}/{part} does not exist")
        if snap.is_offline(p):
            raise DrillError(f"partition {topic}/{part} has no leader right now")
        return (p.leader,)
    raise DrillError(f"--target must be one of {TARGETS}, not {target!r}")


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
    cluster: ClusterIdentity | None = None
    targets: list[int] = field(default_factory=list)  # every node the fault hit
    target_label: str = ""  # 'controller 1001, controller 1002'; '' : broker N
    # Per node the restore left down: what happened and what to run (empty: all restored)
    not_restored: list[str] = field(default_factory=list)
    restore_at: float | None = None  # when the restore was applied (None: not yet known)
    # Why each partition that lost acknowledged records lost them (kconsole.drills.losses)
    explained: list[str] = field(default_factory=list)

    @property
    def restored_after_s(self) -> float | None:
        """Seconds from the fault to the restore, as they happened (--restore-after asked)."""
        return None if self.restore_at is None else self.restore_at - self.fault_at

    @property
    def restored(self) -> bool:
        """Every node the fault hit was restored."""
        return not self.not_restored

    @property
    def what(self) -> str:
        """The nodes the fault hit, in words."""
        return self.target_label or f"broker {self.target_broker}"

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
            "targets": self.targets or [self.target_broker],
            "target_label": self.what,
            "was_controller": self.was_controller,
            "started": self.started,
            "settled": self.settled,
            "restored": self.restored,
            "not_restored": self.not_restored,
            "restored_after_s": (
                None if self.restored_after_s is None else round(self.restored_after_s, 3)
            ),
            "ok": self.ok,
            "cluster": None if self.cluster is None else self.cluster.to_dict(),
            "blast_radius": self.impact,
            "broker_config": self.broker_config,
            "audit": self.audit.to_dict(),
            "timeline": timeline_document(
                self.events, self.measurements, fault, lead_s=self.spec.warmup_s
            ),
            "notes": self.notes,
            "losses_explained": self.explained,
        }

    def markdown(self) -> str:
        fault = next((e for e in self.events if e.kind is EventKind.ACTION), None)
        s = self.spec
        verdict = "no acknowledged message was lost" if self.ok else "ACKNOWLEDGED MESSAGES LOST"
        lines = [
            f"# Drill: {s.fault} {self.what} ({s.target}"
            + (
                ", the controller"
                if self.was_controller and s.target not in ("controller", "active-controller")
                else ""
            )
            + f") with acks={s.acks}",
            "",
            f"Started {self.started}; workload {s.rate:g} msg/s"
            + (f" of {s.message_bytes:,} B" if s.message_bytes else "")
            + f" on {s.topic}; restore asked "
            f"after {s.restore_after_s:g} s"
            + (
                ""
                if self.restored_after_s is None
                else f", applied {self.restored_after_s:.2f} s after the fault"
            )
            + "; "
            + ("" if self.restored else "restore FAILED; ")
            + f"{'settled' if self.settled else 'did NOT settle'}.",
            "",
            *([self.cluster.line(), ""] if self.cluster is not None else []),
            f"Times are counted from the fault ({iso(self.fault_at)}), with a sign: -1.00 s is "
            "a second before it. Measurements named 'restore -> ...' count from the restore.",
            "",
            f"**Verdict: {verdict}.**",
            "",
            *(
                [
                    "## RESTORE FAILED: the cluster was left degraded",
                    "",
                    *[f"- {line}" for line in self.not_restored],
                    "",
                ]
                if self.not_restored
                else []
            ),
            "## Blast radius (predicted before the fault)",
            "",
            *[f"- {line}" for line in self.impact],
            "",
            self.audit.markdown(),
            "",
            *(
                ["## Why they were lost", "", *[f"- {line}" for line in self.explained], ""]
                if self.explained
                else []
            ),
            timeline_markdown(self.events, self.measurements, fault, lead_s=s.warmup_s),
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
