"""The outcome of a send, record by record, and its live tally: data only, so screens show
sends without importing the producer (kconsole.cluster.produce_send, the command layer's)."""

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
