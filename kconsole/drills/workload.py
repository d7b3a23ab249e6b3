"""The drill workload: a keyed producer at a steady rate, with per-message delivery accounting.

Every message says who it is (`run`, `key`, per-key `seq`), so a reader can find gaps,
duplicates and reordering. Outcomes come only from delivery reports: a message is acked when
librdkafka reports success, failed with the error's name, and anything without a report when
the workload stops is an unknown outcome, never counted as acked.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from kconsole.cluster.security.clients import PURGED, producer_config
from kconsole.config import Settings
from kconsole.drills.audit import ACKS0_NOTE, ACKS_VALUES, Acked, Acks, Failed, Pending


def padded(record: dict[str, Any], size: int) -> str:
    """`record` as JSON, with a "pad" field of filler making it `size` bytes long when it is
    shorter (0: as it is; never shorter than the record with an empty "pad"). The read-back
    parses it like any other value."""
    value = json.dumps(record)
    if size <= len(value):
        return value
    short = size - len(json.dumps({**record, "pad": ""}))
    return json.dumps({**record, "pad": "x" * max(short, 0)})


@dataclass(frozen=True)
class WorkloadCounters:
    """A consistent live view, cheap enough to take on every UI refresh."""

    sent: int
    acked: int
    failed: dict[str, int]
    in_flight: int
    queue_full: int  # produce() refused (local queue full) and retried after poll()
    elapsed_s: float
    running: bool
    error: str | None = None

    @property
    def failed_total(self) -> int:
        return sum(self.failed.values())


@dataclass(frozen=True)
class WorkloadResult:
    """What the producer was told about every message it sent."""

    run_id: str
    topic: str
    acks: Acks
    rate: float
    keys: int
    started_at: float  # workload clock (monotonic by default)
    stopped_at: float  # sending stopped; flushing came after
    finished: bool  # False: a live snapshot, `unknown` are simply still in flight
    sent: int
    acked: tuple[Acked, ...]
    failed: tuple[Failed, ...]
    unknown: tuple[Pending, ...]
    queue_full: int = 0
    ready_s: float | None = None  # producer start-up before sending; None: never got ready
    error: str | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def acknowledged(self) -> bool:
        """False with acks=0: the delivery report only means the message was sent."""
        return self.acks != "0"

    @property
    def send_times(self) -> tuple[float, float]:
        """(start, stop) of sending, the edges of the audit's no-success window."""
        return (self.started_at, self.stopped_at)

    @property
    def failed_by_code(self) -> dict[str, int]:
        return dict(sorted(Counter(f.code for f in self.failed).items()))


class Workload:
    """A keyed producer in its own thread: `start()`, watch `counters()`, `stop()`."""

    def __init__(
        self,
        settings_or_config: Settings | Mapping[str, Any],
        topic: str,
        *,
        acks: Acks = "all",
        rate: float = 100.0,
        keys: int = 16,
        run_id: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        message_timeout_ms: int = 30000,
        request_timeout_ms: int | None = None,
        linger_ms: int = 5,
        extra: Mapping[str, Any] | None = None,
        value_bytes: int = 0,
    ):
        if acks not in ACKS_VALUES:
            raise ValueError(f"acks must be one of {', '.join(ACKS_VALUES)}, not {acks!r}")
        if not 0 < rate <= 100_000:
            raise ValueError(f"rate must be in (0, 100000] messages/s, not {rate}")
        if keys < 1:
            raise ValueError(f"keys must be at least 1, not {keys}")
        self.topic = topic
        self.acks = acks
        self.rate = float(rate)
        self.keys = keys
        self.value_bytes = value_bytes  # each value padded to this many bytes (0: not padded)
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self._clock = clock
        self.config = producer_config(
            settings_or_config,
            acks=acks,
            linger_ms=linger_ms,
            message_timeout_ms=message_timeout_ms,
            request_timeout_ms=request_timeout_ms,
            # Statistics carry the idempotent producer's id state: start() waits for it.
            stats_cb=self._on_stats if acks == "all" else None,
            extra=extra,
        )
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._producer: Producer | None = None
        self._flush_timeout_s = 10.0
        self._seq = [0] * keys
        self._sent = 0
        self._queue_full = 0
        self._acked: list[Acked] = []
        self._failed: list[Failed] = []
        self._in_flight: dict[tuple[str, int], float] = {}
        self._unknown: list[Pending] = []
        self._started_at: float | None = None
        self._stopped_at: float | None = None
        self._finished = False
        self._error: str | None = None
        self._pid_assigned = threading.Event()
        self._ready_s: float | None = None

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, ready_timeout_s: float = 15.0) -> Workload:
        """Create the producer (configuration errors raise here), wait until it is ready, and
        start sending.

        Ready: the topic's metadata is known and, with idempotence, the producer id assigned.
        On a fresh cluster that can take seconds ("coordinator load in progress"); without
        this wait, start-up would show up as the first no-success window of every drill.
        Not ready within `ready_timeout_s`: it starts anyway, and the result says so.
        """
        if self._thread is not None:
            raise RuntimeError("a Workload runs once; make a new one")
        self._producer = Producer(self.config)
        self._ready_s = self._wait_ready(self._producer, ready_timeout_s)
        self._started_at = self._clock()
        self._thread = threading.Thread(
            target=self._run, name=f"workload-{self.run_id}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self, flush_timeout_s: float = 10.0) -> WorkloadResult:
        """Stop sending, wait up to `flush_timeout_s` for outstanding reports, and return."""
        if self._thread is None:
            raise RuntimeError("the workload was never started")
        self._flush_timeout_s = flush_timeout_s
        self._stop.set()
        self._thread.join(flush_timeout_s + 10.0)
        if self._thread.is_alive():  # never expected: librdkafka calls are all bounded
            with self._lock:
                self._error = self._error or "the producer thread did not finish"
                self._close_books()
        return self.result()

    def _wait_ready(self, producer: Producer, timeout_s: float) -> float | None:
        """Seconds until ready, or None when the timeout passed first."""
        t0 = self._clock()
        deadline = t0 + timeout_s
        try:
            producer.list_topics(self.topic, timeout=max(0.1, timeout_s))
        except KafkaException:
            return None
        if self.acks == "all":
            while not self._pid_assigned.is_set():
                if self._clock() >= deadline:
                    return None
                producer.poll(0.05)  # serves the statistics callback
        return self._clock() - t0

    def _on_stats(self, stats: str) -> None:
        if self._pid_assigned.is_set():
            return
        try:
            state = json.loads(stats).get("eos", {}).get("idemp_state")
        except (ValueError, AttributeError):
            return
        if state == "Assigned":
            self._pid_assigned.set()

    def __enter__(self) -> Workload:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None and not self._finished:
            self.stop()

    # -- live view ------------------------------------------------------------------------
    def counters(self) -> WorkloadCounters:
        """Thread-safe counters for a live display."""
        with self._lock:
            start = self._started_at
            end = self._stopped_at if self._stopped_at is not None else self._clock()
            return WorkloadCounters(
                sent=self._sent,
                acked=len(self._acked),
                failed=dict(Counter(f.code for f in self._failed)),
                in_flight=len(self._in_flight) + len(self._unknown),
                queue_full=self._queue_full,
                elapsed_s=0.0 if start is None else end - start,
                running=self._thread is not None and not self._finished,
                error=self._error,
            )

    def result(self) -> WorkloadResult:
        """Everything recorded so far; final once `stop()` returned."""
        with self._lock:
            start = self._started_at if self._started_at is not None else self._clock()
            stop = self._stopped_at if self._stopped_at is not None else self._clock()
            pending = list(self._unknown) + [
                Pending(k, s, t) for (k, s), t in self._in_flight.items()
            ]
            notes = [ACKS0_NOTE] if self.acks == "0" else []
            if self._started_at is not None and self._ready_s is None:
                notes.append(
                    "The producer was not ready when sending started (no topic metadata or no "
                    "idempotent producer id yet): the first no-success window includes start-up."
                )
            if self._finished and pending:
                notes.append(
                    f"{len(pending)} messages had no delivery report within the flush "
                    "timeout: unknown outcome (they may or may not be in the log)."
                )
            return WorkloadResult(
                run_id=self.run_id,
                topic=self.topic,
                acks=self.acks,
                rate=self.rate,
                keys=self.keys,
                started_at=start,
                stopped_at=stop,
                finished=self._finished,
                sent=self._sent,
                acked=tuple(self._acked),
                failed=tuple(self._failed),
                unknown=tuple(sorted(pending, key=lambda p: (p.sent_at, p.key, p.seq))),
                queue_full=self._queue_full,
                ready_s=self._ready_s,
                error=self._error,
                notes=tuple(notes),
            )

    # -- the producer thread --------------------------------------------------------------
    def _run(self) -> None:
        producer = self._producer
        assert producer is not None and self._started_at is not None
        try:
            self._send_loop(producer, self._started_at)
        except Exception as exc:  # reported in counters/result instead of dying silently
            with self._lock:
                self._error = f"{type(exc).__name__}: {exc}"
        finally:
            with self._lock:
                self._stopped_at = self._clock()
            self._drain(producer)
            # The producer's stats callback is a bound method of this Workload: a reference
            # cycle. Left to the garbage collector, the producer would be destroyed whenever
            # and wherever a collection runs, possibly inside another client's librdkafka
            # thread (a logger callback) -- which can crash the process. Drop it here, so it
            # is destroyed now, on this thread, when `producer` goes out of scope.
            self._producer = None

    def _send_loop(self, producer: Producer, start: float) -> None:
        period = 1.0 / self.rate
        n = 0
        while not self._stop.is_set():
            # Message n is due at start + n/rate: absolute times, so waits never accumulate.
            wait = start + n * period - self._clock()
            if wait > 0:
                producer.poll(min(wait, 0.1))  # serves delivery reports while waiting
                continue
            if self._produce_one(producer, n % self.keys):
                n += 1
            producer.poll(0)

    def _produce_one(self, producer: Producer, k: int) -> bool:
        """Produce the next message of key k; False when it must be retried (queue full)."""
        key, seq = f"k{k}", self._seq[k]
        value = padded(
            {"run": self.run_id, "key": key, "seq": seq, "ts": time.time()}, self.value_bytes
        )
        sent_at = self._clock()
        try:
            producer.produce(
                self.topic,
                key=key.encode(),
                value=value.encode(),
                on_delivery=partial(self._on_delivery, key, seq, sent_at),
            )
        except BufferError:
            # The local queue is full: serve reports to make room, then send the same message.
            with self._lock:
                self._queue_full += 1
            producer.poll(0.05)
            return False
        except KafkaException as exc:
            # Refused before it left this process: definitely not written.
            err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
            with self._lock:
                self._failed.append(
                    Failed(
                        key,
                        seq,
                        err.name() if err else type(exc).__name__,
                        None,
                        sent_at,
                        self._clock(),
                        err.str() if err else str(exc),
                    )
                )
                self._sent += 1
            self._seq[k] += 1
            return True
        with self._lock:
            self._in_flight[(key, seq)] = sent_at
            self._sent += 1
        self._seq[k] += 1
        return True

    def _on_delivery(
        self, key: str, seq: int, sent_at: float, err: KafkaError | None, msg: Message
    ) -> None:
        now = self._clock()
        with self._lock:
            if self._in_flight.pop((key, seq), None) is None:
                return  # already booked as unknown (stop gave up waiting)
            if err is None:
                part, off = msg.partition(), msg.offset()
                self._acked.append(
                    Acked(
                        key,
                        seq,
                        part if part is not None else -1,
                        off if off is not None else -1,
                        sent_at,
                        now,
                    )
                )
            elif err.code() in PURGED:
                # Purged at stop: it may have reached the broker (or be a retry of one that did).
                self._unknown.append(Pending(key, seq, sent_at))
            else:
                part = msg.partition()
                self._failed.append(
                    Failed(
                        key,
                        seq,
                        err.name(),
                        part if part is not None and part >= 0 else None,
                        sent_at,
                        now,
                        err.str(),
                    )
                )

    def _drain(self, producer: Producer) -> None:
        """Flush with a bound; purge what is left so it reports (as unknown), then close."""
        try:
            producer.flush(self._flush_timeout_s)
            if len(producer) > 0:
                producer.purge(in_queue=True, in_flight=True, blocking=True)
                producer.flush(1.0)
        except Exception as exc:
            with self._lock:
                self._error = self._error or f"{type(exc).__name__}: {exc}"
        with self._lock:
            self._close_books()

    def _close_books(self) -> None:
        """Whatever still has no report is an unknown outcome (lock held)."""
        self._unknown.extend(Pending(k, s, t) for (k, s), t in self._in_flight.items())
        self._in_flight.clear()
        self._finished = True
