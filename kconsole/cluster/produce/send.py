"""Sending records and accounting for every one of them.

Outcomes come only from delivery reports, as in the drill workload: acked when librdkafka
reports success, failed with the error's name, and whatever still has no report when the bounded
flush ends is an unknown outcome, never counted as acked.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from kconsole.cluster.produce.outcome import (
    Delivery,
    OnProgress,
    ProducerClosed,
    ProduceResult,
    ProducerTiming,
    StopSending,
    Tally,
)
from kconsole.cluster.produce.request import ProduceError, Record
from kconsole.cluster.security import clients, denied
from kconsole.config import Settings
from kconsole.errors import AuthorizationDenied, ClusterError


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
    """The produce command's producer (kconsole.cluster.security.clients.producer_config): an
    explicit codec ("none" by default) and a few retries, so a record that keeps failing reports the
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


# -- a producer kept open across sends ----------------------------------------------------------
STATS_INTERVAL_MS = 50  # how soon the producer id's arrival is seen (the stats callback's period)
KEEP_POLL_S = 0.2  # between sends: serve the producer's statistics and errors this often


_ASSIGNED = '"idemp_state": "Assigned"'  # as librdkafka's statistics JSON writes it


class WarmProducer:
    """One producer kept open across sends (the produce dialog's, the CLI's started early).

    A new idempotent librdkafka producer asks a broker for its producer id on a 500 ms timer
    (rd_kafka_idemp_start at creation is not immediate, and retries every 500 ms until a broker
    connection is up), and holds every record until it has one: a producer made per send pays
    0.5-1 s on every send. This one is made once; its statistics (every STATS_INTERVAL_MS)
    say when the id arrived, so a send can say how long it waited for it. Between sends a
    keeper thread serves the statistics and errors; a send holds `lock`, so its delivery
    reports are served only by the send itself. A fatal error (librdkafka's error callback)
    or a send that left records without an outcome marks it `spent`: whoever holds it makes a
    new one for the next send.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        acks: str,
        compression: str | None = None,
        max_message_bytes: int | None = None,
        message_timeout_ms: int = 30000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.message_timeout_ms = message_timeout_ms
        self.acks = acks
        self.compression = compression
        self.max_message_bytes = max_message_bytes
        self.clock = clock
        self.lock = threading.Lock()  # held by a send, and by the keeper while it polls
        self.created_at: float | None = None
        self.ready_at: float | None = None  # when the producer id arrived (or a broker was up)
        self.producer_id: int | None = None
        self.fatal = ""  # librdkafka's fatal error, if one came
        self.denial: AuthorizationDenied | None = None  # the cluster's ACLs refused it
        self.spent = ""  # why this producer must not be used again ('' : it may)
        self.closed: ProducerClosed | None = None
        self.producer: Producer | None = None
        self._stop = threading.Event()
        self._keeper: threading.Thread | None = None

    @property
    def key(self) -> tuple[str, str | None, int | None]:
        """What a send needs to match to use this producer (its configuration's parts)."""
        return (self.acks, self.compression, self.message_max_bytes)

    @property
    def message_max_bytes(self) -> int | None:
        """librdkafka's message.max.bytes for it (None: librdkafka's default)."""
        if self.max_message_bytes is None:
            return None
        return clients.message_max_bytes(self.max_message_bytes)

    @property
    def idempotent(self) -> bool:
        return self.acks == "all"

    @property
    def ready(self) -> bool:
        return self.ready_at is not None

    @property
    def usable(self) -> bool:
        return self.producer is not None and not self.spent and self.closed is None

    def start(self) -> None:
        """Make the producer (it starts connecting and asking for its id at once) and the
        keeper thread. ProduceError: librdkafka refused the configuration."""
        if self.producer is not None:
            return
        conf = producer_config(
            self.settings,
            acks=self.acks,
            compression=self.compression,
            message_timeout_ms=self.message_timeout_ms,
            max_message_bytes=self.max_message_bytes,
            extra={
                "statistics.interval.ms": STATS_INTERVAL_MS,
                "stats_cb": self._on_stats,
                "error_cb": self._on_error,
            },
        )
        self._note_auth = clients.rdkafka_error_cb(self.settings.bootstrap)
        self.created_at = self.clock()
        try:
            self.producer = Producer(conf)
        except KafkaException as exc:
            raise ProduceError(f"cannot create the producer: {exc}") from exc
        self._keeper = threading.Thread(
            target=self._keep, name="kconsole-warm-producer", daemon=True
        )
        self._keeper.start()

    def warm(self, topic: str | None, timeout_s: float = 10.0) -> bool:
        """Fetch `topic`'s metadata and wait (at most `timeout_s`) for the producer id: True
        once the producer is ready. Nothing is written. AuthorizationDenied: the cluster's
        ACLs refused the producer its id (it can send nothing)."""
        self.start()
        producer = self.producer
        assert producer is not None
        deadline = self.clock() + timeout_s
        if topic:
            # no broker now: the send will say what happens to its records
            with contextlib.suppress(KafkaException):
                producer.list_topics(topic, timeout=max(0.1, timeout_s))
        while not self.ready and not self.spent and self.clock() < deadline:
            if self._stop.wait(0.02):
                break
        if self.denial is not None:
            raise self.denial
        return self.ready

    def timing(self, send_started: float) -> ProducerTiming:
        """How a send that began at `send_started` stood to this producer's start."""
        created = self.created_at if self.created_at is not None else send_started
        waited = None
        if self.ready_at is not None:
            waited = max(0.0, self.ready_at - max(send_started, created))
        return ProducerTiming(
            idempotent=self.idempotent,
            made_before_s=max(0.0, send_started - created),
            ready_after_s=None if self.ready_at is None else self.ready_at - created,
            waited_s=waited,
            producer_id=self.producer_id,
        )

    def learn_ready(self, timeout_s: float) -> None:
        """Poll (the caller holds `lock`) until the statistics say when the id arrived."""
        deadline = self.clock() + timeout_s
        while self.producer is not None and not self.ready and self.clock() < deadline:
            self.producer.poll(0.01)

    def close(self, timeout_s: float = 5.0) -> ProducerClosed:
        """Destroy the producer. Sends flush their own records, so only a send running now has
        records in flight: it gets `timeout_s` to end, then they are purged (that send reports
        them as unknown). Idempotent."""
        if self.closed is not None:
            return self.closed
        self._stop.set()
        producer = self.producer
        if producer is None:
            self.closed = ProducerClosed()
            return self.closed
        busy = self.lock.locked()
        purged = False
        got = self.lock.acquire(timeout=timeout_s)
        if not got:
            producer.purge(in_queue=True, in_flight=True, blocking=False)
            purged = True
            got = self.lock.acquire(timeout=5.0)
        try:
            if got:
                producer.close()  # nothing of a send is left in it: returns at once
        finally:
            if got:
                self.lock.release()
        if self._keeper is not None and self._keeper is not threading.current_thread():
            self._keeper.join(2.0)
        self.closed = ProducerClosed(busy, purged, got)
        return self.closed

    # -- librdkafka's callbacks (served by poll: the keeper's, or a send's) --------------------
    def _keep(self) -> None:
        while not self._stop.wait(KEEP_POLL_S if self.ready else 0.02):
            if self.lock.acquire(blocking=False):
                try:
                    if self.producer is not None and not self._stop.is_set():
                        self.producer.poll(0)
                except KafkaException as exc:  # librdkafka raises a fatal error from poll
                    err = exc.args[0] if exc.args else None
                    if isinstance(err, KafkaError):
                        self._on_error(err)
                    self.spent = self.spent or f"fatal producer error {exc}"
                    return  # a fatal error spends the producer: nothing more to serve
                finally:
                    self.lock.release()

    def _on_stats(self, raw: str) -> None:
        if self.ready_at is not None and (not self.idempotent or _ASSIGNED in raw):
            return  # ready, and still: nothing to parse (this runs every STATS_INTERVAL_MS)
        try:
            stats = json.loads(raw)
        except ValueError:
            return
        now = self.clock()
        if self.idempotent:
            eos = stats.get("eos") or {}
            if eos.get("idemp_state") == "Assigned":
                if self.ready_at is None or eos.get("producer_id") != self.producer_id:
                    # the state's age (µs) dates the id's arrival, not this report's
                    self.ready_at = now - eos.get("idemp_stateage", 0) / 1e6
                    self.producer_id = eos.get("producer_id")
            elif self.ready_at is not None and eos.get("idemp_state") not in (None, "Assigned"):
                self.ready_at = None  # a reset after lost requests: asking for a new id
        elif any(b.get("state") == "UP" for b in (stats.get("brokers") or {}).values()):
            self.ready_at = now

    def _on_error(self, err: KafkaError) -> None:
        self._note_auth(err)
        if err.fatal() or err.code() == KafkaError._FATAL:
            # error_cb hears of a fatal error as _FATAL, with the cause in its text; poll then
            # raises it with its own code. The denial is known before the producer is spent
            # (warm() stops waiting once it is).
            if self.denial is None:
                name = denied.authorization_error(err.name()) or denied.authorization_error(
                    err.str()
                )
                if name is not None:
                    # the id (InitProducerId) is the first thing an idempotent producer asks
                    request = "InitProducerId" if "PID" in err.str() else "Produce"
                    self.denial = denied.denied_to(self.settings, name, request)
            self.fatal = self.fatal or f"{err.name()}: {err.str()}"
            self.spent = (
                self.denial.message if self.denial else f"fatal producer error {self.fatal}"
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
    warm: WarmProducer | None = None,
    stop: StopSending | None = None,
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

    With `warm` the records go through that producer (kept open, its id perhaps already
    acquired; its own acks, codec and size limit apply) instead of a new one, and the result
    says how the send stood to the producer's start (`producer`). Once `stop` is set no
    further record is sent; the result's `stopped` says why.
    """
    if warm is None:
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
        return _send(producer, None, topic, records, acks, rate, partition, on_progress, tally,
                     on_tick, tick_s, message_timeout_ms, flush_timeout_s, clock, stop)  # fmt: skip
    if warm.denial is not None:
        raise warm.denial  # the cluster's ACLs refused the producer: nothing is sent
    if warm.acks != acks or warm.compression != compression or not warm.usable:
        raise ProduceError(
            f"the producer kept open (acks={warm.acks}, compression {warm.compression or 'none'}"
            f"{', ' + warm.spent if warm.spent else ''}) does not fit this send"
        )
    with warm.lock:
        assert warm.producer is not None
        try:
            return _send(warm.producer, warm, topic, records, acks, rate, partition,
                         on_progress, tally, on_tick, tick_s, warm.message_timeout_ms,
                         flush_timeout_s, clock, stop)  # fmt: skip
        except (KafkaException, SystemError) as exc:
            # A fatal error in the middle of the send: poll raises it (and a delivery callback
            # served by the same poll then fails with SystemError).
            warm.spent = warm.spent or f"fatal producer error {exc}"
            if warm.denial is not None:
                raise warm.denial from exc
            raise ClusterError(
                f"the producer failed during the send ({warm.fatal or exc}); records sent "
                "before it may have been written: tail the topic to see which"
            ) from exc


def _send(
    producer: Producer,
    warm: WarmProducer | None,
    topic: str,
    records: Iterable[Record],
    acks: str,
    rate: float | None,
    partition: int | None,
    on_progress: OnProgress | None,
    tally: Tally | None,
    on_tick: Callable[[], None] | None,
    tick_s: float,
    message_timeout_ms: int,
    flush_timeout_s: float | None,
    clock: Callable[[], float],
    stop: StopSending | None = None,
) -> ProduceResult:
    """produce_records' send through `producer` (kept open when `warm` holds it)."""
    ledger = _Ledger(tally if tally is not None else Tally(0, clock), on_progress, clock)
    halt = stop if stop is not None else StopSending()
    n = _send_all(producer, ledger, topic, records, rate, partition, on_tick, tick_s, halt)
    sent_done = clock()
    deadline = sent_done + (
        flush_timeout_s if flush_timeout_s is not None else message_timeout_ms / 1000 + 5
    )
    _flush(producer, ledger, n, deadline, on_tick, tick_s)
    elapsed = max(sent_done, clock()) - ledger.start
    done, unknown, unreported = ledger.settle(n)
    notes = []
    if unknown:
        notes.append(
            f"{unknown} records had no delivery report within the flush timeout: unknown "
            "outcome (they may or may not be in the log)"
        )
    if acks == "0":
        notes.append("acks=0: a delivery report only means the record was sent, not stored")
    timing = None if warm is None else _after_warm_send(warm, ledger, n, done, unknown)
    detailed, latencies = ledger.detailed, ledger.tally.latencies
    return ProduceResult(
        topic=topic,
        acks=acks,
        sent=n,
        deliveries=done,
        elapsed_s=elapsed,
        notes=tuple(notes),
        acked_count=None if detailed else len(latencies),
        latencies_s=() if detailed else tuple(x for x in latencies if x is not None),
        unreported=unreported,
        producer=timing,
        stopped=halt.reason,
    )


class _Ledger:
    """One send's accounting: the delivery reports as they arrive (librdkafka serves them in
    the sending thread's poll and flush), and at the end whatever is still without one."""

    def __init__(
        self, tally: Tally, on_progress: OnProgress | None, clock: Callable[[], float]
    ) -> None:
        self.tally = tally
        self.on_progress = on_progress
        self.detailed = on_progress is not None
        self.clock = clock
        # Detailed: lists indexed by send order. Bulk: the acked records' latencies (in the
        # tally: their count is the acked count) and a Delivery for every other outcome.
        self.outcomes: list[Delivery | None] = []
        self.keys: list[bytes | None] = []
        self.problems: list[Delivery] = []
        self.start = clock()  # the send begins

    def report(self, d: Delivery) -> None:
        """Record one outcome (and count it, and hand it to on_progress)."""
        if self.detailed:
            self.outcomes[d.index] = d
        else:
            self.problems.append(d)
        self.tally.add(d)
        if self.on_progress is not None:
            self.on_progress(d)

    def on_record(self, i: int, err: KafkaError | None, msg: Message) -> None:
        """A detailed send's delivery callback for the record sent `i`-th."""
        if self.outcomes[i] is not None:
            return
        part = msg.partition()
        part = part if part is not None and part >= 0 else None
        # librdkafka's own produce() -> report time: no Python scheduling in it (None only
        # when it has no timestamp: then since the send began).
        lat = msg.latency()
        if lat is None:
            lat = self.clock() - self.start
        if err is None:
            off = msg.offset()
            off = off if off is not None and off >= 0 else None  # acks=0: no offset
            self.report(Delivery(i, self.keys[i], part, off, lat))
        else:
            self.report(_failure(i, self.keys[i], part, lat, err))

    def bulk_callback(self) -> Callable[[KafkaError | None, Message], None]:
        """A bulk send's delivery callback: an ack only appends its latency."""
        # A closure over locals, not a method: it runs once per record on the hot path.
        acked, report = self.tally.latencies.append, self.report

        def on_bulk(err: KafkaError | None, msg: Message) -> None:
            if err is None:
                acked(msg.latency())
            else:
                part = msg.partition()
                part = part if part is not None and part >= 0 else None
                report(_failure(-1, msg.key(), part, msg.latency(), err))

        return on_bulk

    def reported(self) -> int:
        """How many records have a delivery report (or a produce() error) so far."""
        if self.detailed:
            return sum(1 for d in self.outcomes if d is not None)
        return len(self.tally.latencies) + len(self.problems)

    def settle(self, n: int) -> tuple[tuple[Delivery, ...], int, int]:
        """The `n` records sent, accounted for: (the deliveries kept, how many have an unknown
        outcome, how many of those never had a Delivery made: a bulk send's)."""
        unreported = 0
        if self.detailed:
            for i in range(n):
                if self.outcomes[i] is None:
                    self.report(
                        Delivery(i, self.keys[i], None, None, None, "UNKNOWN", "no delivery report")
                    )
            done = tuple(d for d in self.outcomes if d is not None)
            unknown = sum(1 for d in done if d.error == "UNKNOWN")
        else:
            unreported = max(0, n - len(self.tally.latencies) - len(self.problems))
            self.tally.unknown += unreported
            done = tuple(self.problems)
            unknown = unreported + sum(1 for d in done if d.error == "UNKNOWN")
        return done, unknown, unreported


def _send_all(
    producer: Producer,
    ledger: _Ledger,
    topic: str,
    records: Iterable[Record],
    rate: float | None,
    partition: int | None,
    on_tick: Callable[[], None] | None,
    tick_s: float,
    halt: StopSending,
) -> int:
    """The send loop: produce() every record (paced by `rate`), serving delivery reports as it
    goes, until the records end or `halt` is set (read once a record); how many were sent."""
    clock, start, detailed = ledger.clock, ledger.start, ledger.detailed
    next_tick = start + tick_s
    n = 0
    period = 1.0 / rate if rate else 0.0
    produce, poll = producer.produce, producer.poll
    fixed: dict[str, Any] = {} if partition is None else {"partition": partition}
    cb: Callable[..., None] = ledger.bulk_callback()
    on_record = ledger.on_record
    for key, value, headers in records:
        if period:
            while (wait := start + n * period - clock()) > 0 and not halt.reason:
                poll(min(wait, 0.1))
        if halt.reason:
            break
        if detailed:
            ledger.keys.append(key)
            ledger.outcomes.append(None)
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
                ledger.report(
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
    return n


def _flush(
    producer: Producer,
    ledger: _Ledger,
    n: int,
    deadline: float,
    on_tick: Callable[[], None] | None,
    tick_s: float,
) -> None:
    """Wait (until `deadline`) for the delivery reports of the `n` records sent; purge what
    still has none, so that nothing of this send is left in the producer."""
    clock = ledger.clock
    while producer.flush(tick_s if on_tick is not None else max(0.0, deadline - clock())) > 0:
        if on_tick is not None:
            on_tick()
        if clock() >= deadline:
            break
    # Records still without a report (not len(producer): a kept producer's queue also holds
    # its statistics events, and a purge for them would be a spurious one).
    if ledger.reported() < n:
        producer.purge(in_queue=True, in_flight=True, blocking=True)
        producer.flush(1.0)


def _after_warm_send(
    warm: WarmProducer, ledger: _Ledger, n: int, done: tuple[Delivery, ...], unknown: int
) -> ProducerTiming:
    """How the send stood to the kept producer's start; the producer marked spent when the
    send left records without an outcome or met a local error."""
    if n and not warm.ready and warm.idempotent and (ledger.tally.acked or not ledger.detailed):
        warm.learn_ready(2.5 * STATS_INTERVAL_MS / 1000)  # an ack means the id came
    timing = warm.timing(ledger.start)
    failed = ledger.problems if not ledger.detailed else [d for d in done if d.error is not None]
    local = sorted({d.error for d in failed if d.error and d.error.startswith("_")})
    if unknown or local:
        # Records without an outcome, or a local error (a timeout, a lost connection):
        # the next send gets a new producer rather than this one's state after it.
        warm.spent = "a send left " + (
            f"{unknown} records without an outcome" if unknown else ", ".join(local)
        )
    return timing


def _failure(
    index: int, key: bytes | None, part: int | None, lat: float | None, err: KafkaError
) -> Delivery:
    """A record that was not acked: purged or timed out (unknown outcome) or failed with the
    broker's error. librdkafka times a record out whether or not it was sent, and one sent before
    its timeout may be in the log (its "possibly persisted" status, which the Python client does
    not expose): so a timeout is not a 'no'."""
    if err.code() in clients.PURGED:
        return Delivery(index, key, part, None, None, "UNKNOWN", err.str())
    if err.code() == KafkaError._MSG_TIMED_OUT:
        why = f"{err.str()} (it may or may not be in the log)"
        return Delivery(index, key, part, None, None, "UNKNOWN", why)
    return Delivery(index, key, part, None, lat, err.name(), err.str())
