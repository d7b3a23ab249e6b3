"""Sending records and accounting for every one of them.

Outcomes come only from delivery reports, as in the drill workload: acked when librdkafka
reports success, failed with the error's name, and whatever still has no report when the bounded
flush ends is an unknown outcome, never counted as acked.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from kconsole.cluster import clients
from kconsole.cluster.produce_request import ProduceError, Record
from kconsole.config import Settings


# -- sending ------------------------------------------------------------------------------------
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


def producer_config(
    settings: Settings,
    *,
    acks: str,
    compression: str | None = None,
    message_timeout_ms: int = 30000,
    max_message_bytes: int | None = None,
    retries: int = 5,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The produce command's producer (kconsole.cluster.clients.producer_config): an explicit
    codec ("none" by default) and a few retries, so a record that keeps failing reports the
    broker's error rather than a generic timeout."""
    return clients.producer_config(
        settings,
        acks=acks,
        message_timeout_ms=message_timeout_ms,
        compression=compression or "none",
        retries=retries,
        max_message_bytes=max_message_bytes,
        extra=extra,
    )


def produce_records(
    settings: Settings,
    topic: str,
    records: Iterable[Record],
    *,
    acks: str,
    rate: float | None = None,
    compression: str | None = None,
    partition: int | None = None,
    on_progress: OnProgress | None = None,
    tally: Tally | None = None,
    on_tick: Callable[[], None] | None = None,
    tick_s: float = 0.1,
    message_timeout_ms: int = 30000,
    flush_timeout_s: float | None = None,
    max_message_bytes: int | None = None,
    extra: dict[str, Any] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> ProduceResult:
    """Send `records` (key, value, headers) to `topic` and account for every one.

    `rate` paces sends (messages/s, absolute schedule); `partition` overrides the partitioner.
    The flush is bounded (`flush_timeout_s`, by default the message timeout + 5 s): what is
    still in flight then is purged and reported as unknown.

    With `on_progress` the send is detailed: each record's outcome (its index, key, partition,
    offset, latency) is handed to it and kept in the result. Without it the send is bulk: per
    record only the client's produce() call and a delivery callback that appends the latency
    (as lean as a plain confluent-kafka loop's counting callback); failed and unknown records
    still get their Delivery. A `tally` counts as reports arrive, and `on_tick` is called at
    most every `tick_s` while sending and flushing.
    """
    conf = producer_config(
        settings,
        acks=acks,
        compression=compression,
        message_timeout_ms=message_timeout_ms,
        max_message_bytes=max_message_bytes,
        extra=extra,
    )
    try:
        producer = Producer(conf)
    except KafkaException as exc:
        raise ProduceError(f"cannot create the producer: {exc}") from exc
    tally = tally if tally is not None else Tally(0, clock)
    detailed = on_progress is not None
    # Detailed: lists indexed by send order. Bulk: the acked records' latencies (in the
    # tally: their count is the acked count) and a Delivery for every other outcome.
    outcomes: list[Delivery | None] = []
    keys: list[bytes | None] = []
    problems: list[Delivery] = []
    acked = tally.latencies.append

    def report(d: Delivery) -> None:
        if detailed:
            outcomes[d.index] = d
        else:
            problems.append(d)
        tally.add(d)
        if on_progress is not None:
            on_progress(d)

    def on_record(i: int, err: KafkaError | None, msg: Message) -> None:  # detailed
        if outcomes[i] is not None:
            return
        part = msg.partition()
        part = part if part is not None and part >= 0 else None
        # librdkafka's own produce() -> report time: no Python scheduling in it (None only
        # when it has no timestamp: then since the send began).
        lat = msg.latency()
        if lat is None:
            lat = clock() - start
        if err is None:
            off = msg.offset()
            off = off if off is not None and off >= 0 else None  # acks=0: no offset
            report(Delivery(i, keys[i], part, off, lat))
        else:
            report(_failure(i, keys[i], part, lat, err))

    def on_bulk(err: KafkaError | None, msg: Message) -> None:
        if err is None:
            acked(msg.latency())
        else:
            part = msg.partition()
            part = part if part is not None and part >= 0 else None
            report(_failure(-1, msg.key(), part, msg.latency(), err))

    start = clock()
    next_tick = start + tick_s
    n = 0
    period = 1.0 / rate if rate else 0.0
    produce, poll = producer.produce, producer.poll
    fixed: dict[str, Any] = {} if partition is None else {"partition": partition}
    cb: Callable[..., None] = on_bulk
    for key, value, headers in records:
        if period:
            while (wait := start + n * period - clock()) > 0:
                poll(min(wait, 0.1))
        if detailed:
            keys.append(key)
            outcomes.append(None)
            cb = partial(on_record, n)
        while True:
            try:
                if headers:
                    produce(topic, value, key, on_delivery=cb, headers=list(headers), **fixed)
                else:
                    produce(topic, value, key, on_delivery=cb, **fixed)
            except BufferError:
                poll(0.05)  # local queue full: serve reports, then send it again
                continue
            except KafkaException as exc:
                err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
                name = err.name() if err else type(exc).__name__
                report(
                    Delivery(n if detailed else -1, key, None, None, None, name,
                             err.str() if err else str(exc))
                )  # fmt: skip
            break
        n += 1
        # Reports are served in bulk: one poll per 64 records (the queue-full path above polls
        # whenever librdkafka's buffer is full) and always while pacing.
        if period or not n & 63:
            poll(0)
            if on_tick is not None and (now := clock()) >= next_tick:
                next_tick = now + tick_s
                on_tick()
    sent_done = clock()
    notes = []
    deadline = sent_done + (
        flush_timeout_s if flush_timeout_s is not None else message_timeout_ms / 1000 + 5
    )
    while producer.flush(tick_s if on_tick is not None else max(0.0, deadline - clock())) > 0:
        if on_tick is not None:
            on_tick()
        if clock() >= deadline:
            break
    if len(producer) > 0:
        producer.purge(in_queue=True, in_flight=True, blocking=True)
        producer.flush(1.0)
    elapsed = max(sent_done, clock()) - start
    unreported = 0
    if detailed:
        for i in range(n):
            if outcomes[i] is None:
                report(Delivery(i, keys[i], None, None, None, "UNKNOWN", "no delivery report"))
        done = tuple(d for d in outcomes if d is not None)
        unknown = sum(1 for d in done if d.error == "UNKNOWN")
    else:
        unreported = max(0, n - len(tally.latencies) - len(problems))
        tally.unknown += unreported
        done = tuple(problems)
        unknown = unreported + sum(1 for d in done if d.error == "UNKNOWN")
    if unknown:
        notes.append(
            f"{unknown} records had no delivery report within the flush timeout: unknown "
            "outcome (they may or may not be in the log)"
        )
    if acks == "0":
        notes.append("acks=0: a delivery report only means the record was sent, not stored")
    return ProduceResult(
        topic=topic,
        acks=acks,
        sent=n,
        deliveries=done,
        elapsed_s=elapsed,
        notes=tuple(notes),
        acked_count=None if detailed else len(tally.latencies),
        latencies_s=() if detailed else tuple(x for x in tally.latencies if x is not None),
        unreported=unreported,
    )


def _failure(
    index: int, key: bytes | None, part: int | None, lat: float | None, err: KafkaError
) -> Delivery:
    """A record that was not acked: purged (unknown outcome) or failed with the broker's error."""
    if err.code() in clients.PURGED:
        return Delivery(index, key, part, None, None, "UNKNOWN", err.str())
    return Delivery(index, key, part, None, lat, err.name(), err.str())


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
