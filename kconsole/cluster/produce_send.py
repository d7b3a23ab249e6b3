"""Sending records and accounting for every one of them.

Outcomes come only from delivery reports, as in the drill workload: acked when librdkafka
reports success, failed with the error's name, and whatever still has no report when the bounded
flush ends is an unknown outcome, never counted as acked.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from kconsole.cluster import clients
from kconsole.cluster.produce_outcome import (
    Delivery,
    OnProgress,
    ProduceResult,
    Tally,
)
from kconsole.cluster.produce_request import ProduceError, Record
from kconsole.config import Settings


# -- sending ------------------------------------------------------------------------------------
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
