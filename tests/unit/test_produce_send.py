"""The send loop and its accounting (kconsole.cluster.produce.send), over a fake producer that
serves delivery reports the way librdkafka does: only inside poll() and flush(), on the calling
thread, with BufferError when its local queue is full and a report for every purged record."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from kconsole.cluster.produce.outcome import Delivery, ProduceResult, ProducerTiming, Tally
from kconsole.cluster.produce.request import Record
from kconsole.cluster.produce.send import WarmProducer, _send, produce_records
from kconsole.config import Settings

UNKNOWN_NOTE = (
    "1 records had no delivery report within the flush timeout: unknown outcome (they may or "
    "may not be in the log)"
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Msg:
    """What a delivery callback is handed (confluent_kafka.Message's accessors)."""

    def __init__(self, key: bytes | None, partition: int, offset: int, latency: float | None):
        self._key, self._partition, self._offset, self._latency = key, partition, offset, latency

    def key(self) -> bytes | None:
        return self._key

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def latency(self) -> float | None:
        return self._latency


# What the broker does with record i: ("ack", partition, offset, latency), an error, or
# None (no answer: the record stays in flight until purged).
Outcome = tuple[str, int, int, float | None] | KafkaError | None


class FakeProducer:
    def __init__(
        self,
        clock: Clock,
        outcome: Callable[[int], Outcome],
        *,
        capacity: int = 100_000,
        refuse: dict[int, KafkaError] | None = None,
        purge_reports: bool = True,
    ) -> None:
        self.clock = clock
        self.outcome = outcome
        self.capacity = capacity
        self.refuse = refuse or {}
        self.purge_reports = purge_reports
        self.pending: list[tuple[int, bytes | None, Callable[..., None], Outcome]] = []
        self.produced: list[tuple[int, float, dict[str, Any]]] = []  # (index, when, kwargs)
        self.attempts = 0
        self.buffer_full = 0
        self.purges = 0
        self.flushes: list[float] = []

    def produce(
        self, topic: str, value: bytes | None, key: bytes | None, *, on_delivery: Any, **kw: Any
    ) -> None:
        i, at = self.attempts, self.clock()
        self.clock.now += 0.01  # a produce() call takes a moment
        if i in self.refuse:  # refused by the client at once (e.g. too large)
            self.attempts += 1
            raise KafkaException(self.refuse[i])
        if len(self.pending) >= self.capacity:
            self.buffer_full += 1
            raise BufferError("Local: Queue full")
        self.attempts += 1
        self.produced.append((i, at, kw))
        self.pending.append((i, key, on_delivery, self.outcome(i)))

    def _serve(self) -> int:
        served, still = 0, []
        for i, key, cb, out in self.pending:
            if out is None:
                still.append((i, key, cb, out))
                continue
            served += 1
            if isinstance(out, KafkaError):
                cb(out, Msg(key, 0, -1, 0.5))
            else:
                cb(None, Msg(key, out[1], out[2], out[3]))
        self.pending = still
        return served

    def poll(self, timeout: float) -> int:
        served = self._serve()
        if not served:
            self.clock.now += timeout  # nothing due: poll waits its timeout
        return served

    def flush(self, timeout: float) -> int:
        self.flushes.append(timeout)
        self._serve()
        if self.pending:
            self.clock.now += timeout
        return len(self.pending)

    def purge(self, *, in_queue: bool, in_flight: bool, blocking: bool) -> None:
        self.purges += 1
        purged = KafkaError(KafkaError._PURGE_INFLIGHT, "Local: Purged in flight")
        if self.purge_reports:
            self.pending = [(i, k, cb, purged) for i, k, cb, _ in self.pending]
        else:  # their reports did not come before the send gave up on them
            self.pending = []


def send(
    producer: FakeProducer,
    records: Sequence[Record],
    clock: Clock,
    *,
    acks: str = "1",
    rate: float | None = None,
    on_progress: Callable[[Delivery], None] | None = None,
    tally: Tally | None = None,
    on_tick: Callable[[], None] | None = None,
    flush_timeout_s: float | None = 1.0,
    partition: int | None = None,
) -> ProduceResult:
    return _send(producer, None, "t", records, acks, rate, partition, on_progress, tally,  # type: ignore[arg-type]
                 on_tick, 0.1, 30000, flush_timeout_s, clock)  # fmt: skip


def keyed(n: int) -> list[Record]:
    return [(b"k%d" % i, b"v", ()) for i in range(n)]


def test_a_bulk_send_accounts_for_every_record() -> None:
    """200 records through a queue of 50: one refused by the client, one failed by the broker,
    one never answered (purged at the flush deadline: unknown), the rest acked."""
    clock = Clock()
    few = KafkaError(KafkaError.NOT_ENOUGH_REPLICAS, "Broker: Not enough in-sync replicas")

    def outcome(i: int) -> Outcome:
        return few if i == 5 else None if i == 7 else ("ack", 0, i, 0.001 * i)

    too_large = KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "Broker: Message size too large")
    producer = FakeProducer(clock, outcome, capacity=50, refuse={9: too_large})
    tally = Tally(200, clock)
    ticks: list[float] = []
    result = send(producer, keyed(200), clock, tally=tally, on_tick=lambda: ticks.append(clock()))
    assert result.sent == 200 and result.acked_count == 197
    assert result.deliveries == (
        Delivery(-1, b"k9", None, None, None, "MSG_SIZE_TOO_LARGE",
                 "Broker: Message size too large"),
        Delivery(-1, b"k5", 0, None, 0.5, "NOT_ENOUGH_REPLICAS",
                 "Broker: Not enough in-sync replicas"),
        Delivery(-1, b"k7", 0, None, None, "UNKNOWN", "Local: Purged in flight"),
    )  # fmt: skip
    assert result.unreported == 0 and result.notes == (UNKNOWN_NOTE,)
    assert len(result.latencies_s) == 197 and result.latencies_s[:2] == (0.0, 0.001)
    # the queue filled 3 times (the send polls only every 64 records, and while it is full)
    assert producer.buffer_full == 3 and producer.purges == 1
    # The bounded flush: tick_s at a time (each tick reported) until the 1 s deadline, then
    # the purge and one last flush for the purged records' reports.
    assert producer.flushes == [0.1] * 10 + [1.0]
    # 3 ticks while sending (2.03 s of produce() calls, ticks due every 0.1 s but looked at
    # only every 64 records), 10 while flushing; elapsed up to the end of the last flush
    assert len(ticks) == 13 and result.elapsed_s == pytest.approx(3.03)
    view = tally.view()
    assert (view.acked, view.failed, view.unknown) == (
        197,
        {"MSG_SIZE_TOO_LARGE": 1, "NOT_ENOUGH_REPLICAS": 1},
        1,
    )


def test_records_with_no_report_at_all_are_unreported_not_acked() -> None:
    """The purged records' reports never came: a bulk send counts them as unreported."""
    clock = Clock()
    producer = FakeProducer(clock, lambda i: None if i >= 3 else ("ack", 1, i, 0.01),
                            purge_reports=False)  # fmt: skip
    tally = Tally(5, clock)
    result = send(producer, keyed(5), clock, tally=tally, flush_timeout_s=2.0)
    assert result.acked_count == 3 and result.unreported == 2 and result.deliveries == ()
    assert result.notes == (UNKNOWN_NOTE.replace("1 records", "2 records"),)
    assert tally.unknown == 2 and tally.acked == 3
    assert producer.flushes == [2.0, 1.0]  # no on_tick: one flush until the deadline


def test_a_detailed_send_keeps_every_record_in_send_order() -> None:
    clock = Clock()
    refused = KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "Broker: Message size too large")
    not_leader = KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION, "Broker: Not leader")
    outcomes: dict[int, Outcome] = {
        0: ("ack", 2, 10, 0.02),
        1: ("ack", 1, 11, None),  # no timestamp: latency since the send began
        2: not_leader,
        # 3: refused by produce() at once
        4: None,  # never answered, and its purge report never comes
    }
    producer = FakeProducer(clock, outcomes.__getitem__, refuse={3: refused},
                            purge_reports=False)  # fmt: skip
    records: list[Record] = [
        (b"a", b"1", ()),
        (b"b", b"2", [("h", b"x")]),
        (None, b"3", ()),
        (b"d", b"4", ()),
        (b"e", b"5", ()),
    ]
    seen: list[Delivery] = []
    result = send(producer, records, clock, on_progress=seen.append, partition=1)
    assert result.acked_count is None and result.latencies_s == () and result.unreported == 0
    assert [d.index for d in result.deliveries] == [0, 1, 2, 3, 4]
    first, second, failed, refused_d, unknown = result.deliveries
    assert first == Delivery(0, b"a", 2, 10, 0.02)
    # served by the flush after the 5 produce() calls
    assert second == Delivery(1, b"b", 1, 11, pytest.approx(0.05))
    assert failed == Delivery(
        2, None, 0, None, 0.5, "NOT_LEADER_FOR_PARTITION", "Broker: Not leader"
    )
    assert refused_d == Delivery(3, b"d", None, None, None, "MSG_SIZE_TOO_LARGE",
                                 "Broker: Message size too large")  # fmt: skip
    assert unknown == Delivery(4, b"e", None, None, None, "UNKNOWN", "no delivery report")
    # on_progress heard each outcome as it came: the refusal at once, the others when served.
    assert [d.index for d in seen] == [3, 0, 1, 2, 4]
    assert result.notes == (UNKNOWN_NOTE,)
    # every produce() got the partition; the headers only where the record has some
    assert [kw for _, _, kw in producer.produced] == [
        {"partition": 1},
        {"partition": 1, "headers": [("h", b"x")]},
        {"partition": 1},
        {"partition": 1},
    ]


def test_a_paced_send_keeps_its_schedule_and_acks_0_says_what_a_report_means() -> None:
    clock = Clock()
    producer = FakeProducer(clock, lambda i: ("ack", 0, -1, 0.001))
    result = send(producer, keyed(4), clock, acks="0", rate=5.0)
    start = 1000.0
    assert [round(t - start, 6) for _, t, _ in producer.produced] == [0.0, 0.2, 0.4, 0.6]
    assert result.acked_count == 4 and result.deliveries == ()
    assert result.notes == ("acks=0: a delivery report only means the record was sent, not stored",)
    detailed = send(FakeProducer(clock, lambda i: ("ack", 0, -1, 0.001)), keyed(1), clock,
                    acks="0", on_progress=lambda d: None)  # fmt: skip
    assert detailed.deliveries[0].offset is None  # acks=0: no offset


def _warm(clock: Clock, producer: FakeProducer) -> WarmProducer:
    warm = WarmProducer(Settings(), acks="all", clock=clock)
    warm.producer = producer  # type: ignore[assignment]
    warm.created_at = clock() - 3.0
    warm.ready_at = clock() - 2.0
    warm.producer_id = 42
    return warm


def test_a_send_through_the_kept_producer_says_how_it_stood_and_spends_it_when_it_must() -> None:
    clock = Clock()
    ok = FakeProducer(clock, lambda i: ("ack", 0, i, 0.003))
    warm = _warm(clock, ok)
    result = produce_records(Settings(), "t", keyed(3), acks="all", warm=warm, clock=clock)
    assert result.acked_count == 3 and warm.spent == "" and ok.purges == 0
    assert result.producer == ProducerTiming(True, 3.0, 1.0, 0.0, 42)
    # A record left without an outcome: the next send gets a new producer.
    lost = FakeProducer(clock, lambda i: None if i == 1 else ("ack", 0, i, 0.003))
    warm = _warm(clock, lost)
    result = produce_records(Settings(), "t", keyed(3), acks="all", warm=warm, clock=clock,
                             flush_timeout_s=0.5)  # fmt: skip
    assert result.unreported == 0 and result.deliveries[0].error == "UNKNOWN"
    assert warm.spent == "a send left 1 records without an outcome"
    # A local error (a lost connection): spent too, and said which.
    transport = KafkaError(KafkaError._TRANSPORT, "Local: Broker transport failure")
    cut = FakeProducer(clock, lambda i: transport if i == 0 else ("ack", 0, i, 0.003))
    warm = _warm(clock, cut)
    result = produce_records(Settings(), "t", keyed(2), acks="all", warm=warm, clock=clock)
    assert [d.error for d in result.deliveries] == ["_TRANSPORT"]
    assert warm.spent == "a send left _TRANSPORT"
