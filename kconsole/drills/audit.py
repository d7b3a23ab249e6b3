"""The acked-message-loss audit: what the producer was promised against what a consumer reads.

Pure functions over plain records, so the checker is unit-tested on hand-made timelines and
the same code judges real drills. The record types live here (not in the Kafka-facing
modules) because they are the audit's vocabulary.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import pairwise
from typing import Any, Literal, Protocol

Acks = Literal["all", "1", "0"]
ACKS_VALUES: tuple[str, ...] = ("all", "1", "0")

ACKS0_NOTE = (
    "acks=0: sends are not acknowledged. The broker never confirms a write, so 'acked' here "
    "only means 'sent' (librdkafka reports offset -1) and no message was promised; messages "
    "that were sent but not read back are listed as unconfirmed, not as lost."
)


# --------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Acked:
    """A send the delivery report called successful (with acks=0: only 'sent')."""

    key: str
    seq: int
    partition: int
    offset: int  # -1 with acks=0: the broker never said where it went
    sent_at: float
    acked_at: float


@dataclass(frozen=True)
class Failed:
    """A send the delivery report (or produce() itself) called failed, with the error's name."""

    key: str
    seq: int
    code: str  # KafkaError name: NOT_ENOUGH_REPLICAS, _MSG_TIMED_OUT, REQUEST_TIMED_OUT, ...
    partition: int | None
    sent_at: float
    failed_at: float
    reason: str = ""


@dataclass(frozen=True)
class Pending:
    """A send with no outcome (still in flight, or unknown when the workload stopped)."""

    key: str
    seq: int
    sent_at: float


@dataclass(frozen=True)
class Consumed:
    """A record of this run that the verifying consumer read."""

    key: str
    seq: int
    partition: int
    offset: int


class _Keyed(Protocol):
    @property
    def key(self) -> str: ...
    @property
    def seq(self) -> int: ...


# --------------------------------------------------------------------------------------------
# Findings
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lost:
    """Acknowledged, never read back (acks=0: sent and not read back)."""

    key: str
    seq: int
    partition: int
    offset: int


@dataclass(frozen=True)
class Duplicate:
    """One (key, seq) stored at more than one (partition, offset)."""

    key: str
    seq: int
    positions: tuple[tuple[int, int], ...]  # (partition, offset), in log order


@dataclass(frozen=True)
class OrderViolation:
    """Within its partition, `seq` (at `offset`) came after the higher `after_seq`."""

    key: str
    partition: int
    offset: int
    seq: int
    after_seq: int
    after_offset: int


@dataclass(frozen=True)
class Moved:
    """Acked at one position but read back only elsewhere: the acked write was truncated and
    a retried copy survived (not a loss, but a sign the ack's position did not hold)."""

    key: str
    seq: int
    acked_at: tuple[int, int]
    read_at: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Window:
    """The longest stretch in which no send succeeded (clock of the workload)."""

    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class AuditResult:
    """Everything `check` found; `ok` means no acknowledged message was lost."""

    acks: Acks
    acked: int
    read_back: int  # distinct acked (key, seq) read at least once
    consumed: int  # records of this run read, duplicates included
    lost: tuple[Lost, ...]
    unconfirmed_missing: tuple[Lost, ...]  # acks=0 only
    duplicates: tuple[Duplicate, ...]
    order_violations: tuple[OrderViolation, ...]
    moved: tuple[Moved, ...]
    failed_by_code: dict[str, int]
    failed_read_back: int  # reported failed, yet in the log (a timeout is not a 'no')
    unknown: int
    unknown_read_back: int
    unaccounted: int  # read, but the producer never recorded sending it
    started_at: float
    stopped_at: float
    longest_no_success: Window | None
    notes: tuple[str, ...] = field(default=())
    # Where the report's relative times count from, on the workload's clock, and its name:
    # the fault in a drill (every other figure of the report counts from it too).
    origin: float | None = None
    origin_name: str = "the start of sending"
    # Per partition, the longest a send waited for its acknowledgement (sent -> acked): where
    # acks=all stalls (a leader without its followers) rather than failing, this shows it.
    longest_wait: dict[int, float] = field(default_factory=dict)

    @property
    def zero(self) -> float:
        """The origin of relative times (the start of sending unless one was given)."""
        return self.started_at if self.origin is None else self.origin

    @property
    def acknowledged(self) -> bool:
        """False with acks=0: nothing was ever confirmed by a broker."""
        return self.acks != "0"

    @property
    def ok(self) -> bool:
        return not self.lost

    @property
    def failed(self) -> int:
        return sum(self.failed_by_code.values())

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable data (tuples become lists)."""
        data = asdict(self)
        data["ok"] = self.ok
        data["acknowledged"] = self.acknowledged
        data["failed"] = self.failed
        w = self.longest_no_success
        data["longest_no_success"] = (
            None
            if w is None
            else {
                "start": w.start,
                "end": w.end,
                "seconds": w.seconds,
                "from_origin_s": w.start - self.zero,
                "to_origin_s": w.end - self.zero,
            }
        )
        del data["origin_name"]
        data["origin"] = {"name": self.origin_name, "at": self.zero}
        return data

    def _waits(self) -> str:
        """'14.20 s (partition 0); 0.05 s elsewhere': the worst partition, and the others'."""
        if not self.longest_wait:
            return "—"
        worst = max(self.longest_wait, key=lambda p: self.longest_wait[p])
        rest = [w for p, w in self.longest_wait.items() if p != worst]
        out = f"{self.longest_wait[worst]:.2f} s (partition {worst})"
        return out + (f"; at most {max(rest):.2f} s on the others" if rest else "")

    def markdown(self, *, max_listed: int = 20) -> str:
        """A human summary: numbers, verdict, the first findings of each kind and the caveats."""
        sent_word = "acknowledged by the broker" if self.acknowledged else "sent (not acknowledged)"
        codes = ", ".join(f"{c} {n}" for c, n in sorted(self.failed_by_code.items()))
        w = self.longest_no_success
        window = (
            "—"
            if w is None
            else f"{w.seconds:.2f} s ({w.start - self.zero:+.2f} s to "
            f"{w.end - self.zero:+.2f} s from {self.origin_name})"
        )
        rows = [
            (sent_word, str(self.acked)),
            ("of those read back", str(self.read_back)),
            (
                "**lost (acked, never read back)**"
                if self.acknowledged
                else "sent, not read back (no guarantee)",
                str(len(self.lost) if self.acknowledged else len(self.unconfirmed_missing)),
            ),
            ("duplicates (same key+seq at two offsets)", str(len(self.duplicates))),
            ("per-key order violations", str(len(self.order_violations))),
            ("acked at one offset, read only at another", str(len(self.moved))),
            ("failed sends", f"{self.failed}" + (f" ({codes})" if codes else "")),
            ("of those in the log anyway", str(self.failed_read_back)),
            ("unknown outcome (in flight at stop)", str(self.unknown)),
            ("of those in the log", str(self.unknown_read_back)),
            ("read but never recorded as sent", str(self.unaccounted)),
            ("longest window with no successful send", window),
            ("longest wait for an acknowledgement", self._waits()),
        ]
        out = [f"## Acked-message audit (acks={self.acks})", "", "| | |", "|---|---|"]
        out += [f"| {k} | {v} |" for k, v in rows]
        out.append("")
        if not self.acknowledged:
            out.append(
                f"**No verdict on loss:** with acks=0 nothing is acknowledged; "
                f"{len(self.unconfirmed_missing)} of {self.acked} sent messages were not read back."
            )
        elif self.ok:
            out.append(f"**OK:** all {self.acked} acknowledged messages were read back.")
        else:
            out.append(
                f"**LOSS:** {len(self.lost)} of {self.acked} acknowledged messages were never "
                "read back."
            )
        out += _listing("Lost (key, seq, partition, offset)", self.lost, max_listed)
        out += _listing("Duplicates", self.duplicates, max_listed)
        out += _listing("Order violations", self.order_violations, max_listed)
        out += _listing("Acked position did not hold", self.moved, max_listed)
        if self.notes:
            out += ["", "Notes:"]
            out += [f"- {n}" for n in self.notes]
        return "\n".join(out) + "\n"


def _listing(title: str, items: Sequence[Any], limit: int) -> list[str]:
    if not items:
        return []
    lines = ["", f"{title}:"]
    lines += [f"- {_brief(i)}" for i in items[:limit]]
    if len(items) > limit:
        lines.append(f"- … and {len(items) - limit} more")
    return lines


def _brief(item: Any) -> str:
    return ", ".join(f"{k}={v}" for k, v in asdict(item).items())


# --------------------------------------------------------------------------------------------
# The checker
# --------------------------------------------------------------------------------------------


def check(
    acked: Iterable[Acked],
    failed: Iterable[Failed],
    consumed: Iterable[Consumed],
    *,
    send_times: Sequence[float],
    unknown: Iterable[_Keyed] = (),
    acks: Acks = "all",
    origin: float | None = None,
    origin_name: str = "the start of sending",
    caveats: Sequence[str] = (),
) -> AuditResult:
    """Compare what the producer was told with what was read back.

    `send_times`: when sending started and stopped (any sequence of send times works; its
    minimum and maximum are the edges of the no-success window). `unknown`: sends without an
    outcome when the workload stopped. `origin` (on the clock of `send_times`) and its name:
    where the report's relative times count from (a drill's fault). `caveats`: notes on what
    the run can show (its fault's caveat: kconsole.faults.FaultKind.caveat).
    """
    if acks not in ACKS_VALUES:
        raise ValueError(f"acks must be one of {ACKS_VALUES}, not {acks!r}")
    if not send_times:
        raise ValueError("send_times must hold at least the start of sending")
    started_at, stopped_at = min(send_times), max(send_times)
    acked_by_id: dict[tuple[str, int], Acked] = {}
    for a in acked:
        acked_by_id.setdefault((a.key, a.seq), a)
    failed_list = list(failed)
    unknown_ids = {(u.key, u.seq) for u in unknown}

    # A record read twice at the same position is the reader overlapping, not the log.
    positions: dict[tuple[str, int], set[tuple[int, int]]] = defaultdict(set)
    by_position: dict[tuple[int, int], Consumed] = {}
    for c in consumed:
        positions[(c.key, c.seq)].add((c.partition, c.offset))
        by_position[(c.partition, c.offset)] = c

    missing = [
        Lost(a.key, a.seq, a.partition, a.offset)
        for ident, a in sorted(acked_by_id.items())
        if ident not in positions
    ]
    duplicates = tuple(
        Duplicate(key, seq, tuple(sorted(pos)))
        for (key, seq), pos in sorted(positions.items())
        if len(pos) > 1
    )
    moved = tuple(
        Moved(a.key, a.seq, (a.partition, a.offset), tuple(sorted(positions[ident])))
        for ident, a in sorted(acked_by_id.items())
        if a.offset >= 0 and ident in positions and (a.partition, a.offset) not in positions[ident]
    )
    failed_ids = {(f.key, f.seq) for f in failed_list}
    known = acked_by_id.keys() | failed_ids | unknown_ids
    notes = [ACKS0_NOTE] if acks == "0" else []
    if unknown_ids:
        notes.append(
            f"{len(unknown_ids)} sends had no outcome when the workload stopped; they are "
            "counted as unknown, never as acknowledged."
        )
    return AuditResult(
        acks=acks,
        acked=len(acked_by_id),
        read_back=sum(1 for ident in acked_by_id if ident in positions),
        consumed=len(by_position),
        lost=tuple(missing) if acks != "0" else (),
        unconfirmed_missing=tuple(missing) if acks == "0" else (),
        duplicates=duplicates,
        order_violations=_order_violations(by_position.values()),
        moved=moved,
        failed_by_code=dict(sorted(Counter(f.code for f in failed_list).items())),
        failed_read_back=sum(1 for ident in failed_ids if ident in positions),
        unknown=len(unknown_ids),
        unknown_read_back=sum(1 for ident in unknown_ids if ident in positions),
        unaccounted=sum(1 for ident in positions if ident not in known),
        started_at=started_at,
        stopped_at=stopped_at,
        longest_no_success=longest_gap((a.acked_at for a in acked_by_id.values()), send_times),
        notes=(*notes, *caveats),
        origin=origin,
        origin_name=origin_name,
        longest_wait=_longest_waits(acked_by_id.values()) if acks != "0" else {},
    )


def _longest_waits(acked: Iterable[Acked]) -> dict[int, float]:
    """Per partition, the longest sent -> acknowledged of its sends."""
    out: dict[int, float] = {}
    for a in acked:
        out[a.partition] = max(out.get(a.partition, 0.0), a.acked_at - a.sent_at)
    return dict(sorted(out.items()))


def _order_violations(records: Iterable[Consumed]) -> tuple[OrderViolation, ...]:
    """Per key and partition, in offset order: a seq lower than one already read."""
    streams: dict[tuple[str, int], list[Consumed]] = defaultdict(list)
    for c in records:
        streams[(c.key, c.partition)].append(c)
    out = []
    for (key, partition), recs in sorted(streams.items()):
        top: Consumed | None = None
        for c in sorted(recs, key=lambda r: r.offset):
            if top is not None and c.seq < top.seq:
                out.append(OrderViolation(key, partition, c.offset, c.seq, top.seq, top.offset))
            if top is None or c.seq > top.seq:
                top = c
    return tuple(out)


def longest_gap(success_times: Iterable[float], send_times: Sequence[float]) -> Window | None:
    """The largest gap between consecutive successes, the edges of sending included."""
    start, stop = min(send_times), max(send_times)
    points = sorted({start, stop, *(t for t in success_times if t >= start)})
    if len(points) < 2:
        return None
    a, b = max(pairwise(points), key=lambda ab: ab[1] - ab[0])
    return Window(a, b)
