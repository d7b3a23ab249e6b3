"""The outcome of a send, record by record, and its live tally: data only, so screens show
sends without importing the producer (kconsole.cluster.produce.send, the command layer's)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple


class Delivery(NamedTuple):
    """The outcome of one record: acked (error None), failed, or unknown (no report).

    A NamedTuple, not a dataclass: a bulk send makes one per record, on the hot path.
    """

    index: int  # type: ignore[assignment]  # (shadows tuple.index, deliberately)
    key: bytes | None
    partition: int | None
    offset: int | None
    latency_s: float | None
    error: str | None = None  # KafkaError name, or "UNKNOWN" when no report came
    reason: str = ""

    @property
    def acked(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class ProducerTiming:
    """How a send through a producer kept open stood to that producer's start."""

    idempotent: bool  # acks=all: the producer needed a producer id before its first record
    made_before_s: float  # the producer was made this long before the send began
    ready_after_s: float | None  # its id came (or a broker was up) this long after it was made
    waited_s: float | None  # the send's records waited this long for it (None: unknown)
    producer_id: int | None = None

    @property
    def was_warm(self) -> bool:
        """The producer was ready before the send began."""
        return self.waited_s == 0.0


@dataclass(frozen=True)
class ProducerClosed:
    """A kept producer's end. Every send flushes its own records, so only a send still running
    can have records in flight: `waited_for_send` says one was (its result and audit line count
    them), `purged` that its records still in flight were purged when the wait ran out (their
    outcome unknown, as that send reports), `closed` that the producer was destroyed."""

    waited_for_send: bool = False
    purged: bool = False
    closed: bool = True

    def describe(self) -> str:
        if self.purged:
            return (
                "producer closed: the send in progress still had records in flight; they were "
                "purged (unknown outcome: they may or may not be in the log)"
            )
        if not self.closed:
            return "producer not closed: a send is still running"
        if self.waited_for_send:
            return "producer closed after the send in progress ended"
        return "producer closed: nothing was in flight"


class StopSending:
    """Asks a send to stop before its next record (set from a signal handler: a plain attribute,
    no lock). What it sent is still flushed and accounted for, and the result says why it
    stopped."""

    def __init__(self) -> None:
        self.reason = ""

    def set(self, reason: str) -> None:
        """Stop the send, saying why ('SIGTERM')."""
        self.reason = reason


@dataclass(frozen=True)
class ProduceResult:
    """Every record of a send accounted for: acked, failed (with the broker's error) or unknown.

    A detailed send (one with `on_progress`) keeps every record's Delivery, in send order. A
    bulk send keeps no object per acked record: `acked_count` and their latencies, and only the
    failed and unknown records as Deliveries (index -1: not tracked), plus `unreported`, the
    records that had no report at all."""

    topic: str
    acks: str
    sent: int
    deliveries: tuple[Delivery, ...]  # detailed: every record, in send order; bulk: the others
    elapsed_s: float
    notes: tuple[str, ...] = field(default=())
    acked_count: int | None = None  # bulk sends (None: count `deliveries`)
    latencies_s: tuple[float, ...] = ()  # bulk sends: the acked records' latencies
    unreported: int = 0  # bulk sends: records with no delivery report (unknown outcome)
    producer: ProducerTiming | None = None  # sent through a producer kept open
    stopped: str = ""  # what stopped the send before its last record ("SIGTERM"; "": none)

    @property
    def acked(self) -> tuple[Delivery, ...]:
        """The acked records' Deliveries (a bulk send keeps none: see `acked_n`)."""
        return tuple(d for d in self.deliveries if d.error is None)

    @property
    def failed(self) -> tuple[Delivery, ...]:
        return tuple(d for d in self.deliveries if d.error not in (None, "UNKNOWN"))

    @property
    def unknown(self) -> tuple[Delivery, ...]:
        """Records reported as purged (a bulk send's `unreported` ones are counted apart)."""
        return tuple(d for d in self.deliveries if d.error == "UNKNOWN")

    @property
    def acked_n(self) -> int:
        return len(self.acked) if self.acked_count is None else self.acked_count

    @property
    def failed_n(self) -> int:
        return len(self.failed)

    @property
    def unknown_n(self) -> int:
        return len(self.unknown) + self.unreported

    @property
    def failed_by_code(self) -> dict[str, int]:
        return dict(sorted(Counter(d.error for d in self.failed if d.error).items()))

    @property
    def ok(self) -> bool:
        return self.acked_n == self.sent

    @property
    def rate(self) -> float:
        return self.sent / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def latency(self) -> dict[str, float]:
        """p50 / p99 / max of acked records' latencies, in milliseconds ({} if none)."""
        if self.acked_count is not None:
            return latency_summary(self.latencies_s)
        return latency_summary(d.latency_s for d in self.acked if d.latency_s is not None)


def latency_summary(latencies_s: Iterable[float]) -> dict[str, float]:
    """p50 / p99 / max of latencies in seconds, in milliseconds ({} if none)."""
    lat = sorted(latencies_s)
    if not lat:
        return {}
    pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1000  # noqa: E731
    return {"p50": pick(0.50), "p99": pick(0.99), "max": lat[-1] * 1000}


OnProgress = Callable[[Delivery], None]


# -- live accounting of a send -------------------------------------------------------------------
@dataclass(frozen=True)
class TallyView:
    """A consistent picture of a send in progress (or done)."""

    total: int
    acked: int
    failed: dict[str, int]
    unknown: int
    elapsed_s: float
    latency_ms: dict[str, float]

    @property
    def done(self) -> int:
        return self.acked + sum(self.failed.values()) + self.unknown

    @property
    def rate(self) -> float:
        return self.done / self.elapsed_s if self.elapsed_s > 0 else 0.0


class Tally:
    """Counts outcomes as delivery reports arrive (on the producing thread). An acked record
    is one entry in `latencies` (None when librdkafka had no timestamp for it): a bulk send's
    delivery callback only appends there."""

    def __init__(self, total: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.total = total
        self.clock = clock
        self.started = clock()
        self.unknown = 0
        self.failed: Counter[str] = Counter()
        self.latencies: list[float | None] = []

    @property
    def acked(self) -> int:
        return len(self.latencies)

    def add(self, d: Delivery) -> None:
        if d.error is None:
            self.latencies.append(d.latency_s)
        elif d.error == "UNKNOWN":
            self.unknown += 1
        else:
            self.failed[d.error] += 1

    def view(self, latency: bool = False) -> TallyView:
        """The counts now; the latency summary (a sort of every latency) only when asked."""
        return TallyView(
            self.total,
            self.acked,
            dict(sorted(self.failed.items())),
            self.unknown,
            self.clock() - self.started,
            latency_summary(x for x in self.latencies if x is not None) if latency else {},
        )
