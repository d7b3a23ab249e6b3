"""A producer kept open across sends, held by the command layer (the produce dialog's, and the
CLI's started while it reads the cluster).

A new idempotent producer waits 0.5-1 s for its producer id before its first record (see
kconsole.cluster.produce.send.WarmProducer): made per send, every send paid it. A session makes
one when asked to `prepare` (the dialog: when it opens and when topic, acks or compression
change), so the id is acquired while the user types, and hands it to each send. Each send is
still the `produce` command: refused read-only, checked against the topic's limits, audited with
its real counts (Commands.produce_request). Read-only, the session makes no producer at all.
Whoever opened the session closes it (the dialog when it closes, the CLI when it is done).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kconsole.cluster.produce import request as produce_request
from kconsole.cluster.produce.outcome import ProducerClosed, ProduceResult
from kconsole.cluster.produce.request import ProduceError, ProduceRequest, Record, TopicLimits
from kconsole.cluster.security.clients import message_max_bytes
from kconsole.errors import ClusterError

if TYPE_CHECKING:
    from kconsole.cluster.produce.send import WarmProducer
    from kconsole.commands.bus import Commands

# The topic's max.message.bytes as read is used this long (the trace and each send check the
# size against it; the broker still refuses a record over a newer, smaller limit, and the send
# reports that refusal).
LIMITS_MAX_AGE_S = 30.0
WARM_TIMEOUT_S = 10.0  # prepare() waits this long at most for the producer id

WarmFactory = Callable[..., "WarmProducer"]


@dataclass(frozen=True)
class SessionState:
    """What a prepared session knows: for the dialog's trace and status."""

    topic: str
    refused: str = ""  # why the door would refuse a send ('' : it would not)
    limits: TopicLimits | None = None
    limits_age_s: float | None = None
    ready: bool = False  # a producer is made and has its id (or, acks 1/0, a broker is up)
    producer_id: int | None = None
    error: str = ""  # why the limits (then `limits` is None) or the producer could not be had


class ProduceSession:
    """A producer kept warm for one dialog (or one CLI command), its sends through the door."""

    def __init__(
        self,
        commands: Commands,
        factory: WarmFactory | None = None,
        *,
        message_timeout_ms: int = 30000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.commands = commands
        self.factory = factory
        self.message_timeout_ms = message_timeout_ms
        self.clock = clock
        self._lock = threading.Lock()
        self._warm: WarmProducer | None = None
        self._limits: dict[str, tuple[float, TopicLimits]] = {}
        self.made = 0  # producers made so far (a new one after a fatal error or a lost send)
        self.closed: ProducerClosed | None = None

    # -- the topic's limits, read once and kept a while -----------------------------------------
    def cached_limits(self, topic: str) -> tuple[TopicLimits, float] | None:
        """(the limits last read for `topic`, their age in seconds), or None."""
        with self._lock:
            got = self._limits.get(topic)
        return None if got is None else (got[1], self.clock() - got[0])

    def read_limits(self, topic: str, max_age_s: float = LIMITS_MAX_AGE_S) -> TopicLimits:
        """`topic`'s limits, read again when older than `max_age_s` (ProduceError: no metadata)."""
        cached = self.cached_limits(topic)
        if cached is not None and cached[1] <= max_age_s:
            return cached[0]
        settings = self.commands.settings
        assert settings is not None  # the door refused before, without settings
        limits = produce_request.read_topic_limits(settings, topic)
        if limits.exists:  # a topic that is not there yet is asked about again next time
            with self._lock:
                self._limits[topic] = (self.clock(), limits)
        return limits

    # -- the producer ---------------------------------------------------------------------------
    def producer(self, acks: str, compression: str | None, max_message_bytes: int) -> WarmProducer:
        """The producer for a send with these settings: the one kept, or a new one when they
        differ or it is spent (a fatal error, a send that lost records)."""
        from kconsole.cluster.produce.send import WarmProducer

        factory = self.factory or WarmProducer
        settings = self.commands.settings
        assert settings is not None
        with self._lock:
            if self.closed is not None:
                raise ProduceError("the produce session is closed")
            warm = self._warm
            if (
                warm is not None
                and warm.usable
                and warm.key == (acks, compression, message_max_bytes(max_message_bytes))
            ):
                return warm
            self._warm = None
            new = factory(
                settings,
                acks=acks,
                compression=compression,
                max_message_bytes=max_message_bytes,
                message_timeout_ms=self.message_timeout_ms,
            )
            new.start()
            self._warm = new
            self.made += 1
        if warm is not None:
            if warm.lock.locked():
                # A send is still going through it: it is closed once that send has every
                # report (its own flush is bounded by the message timeout), never purged early.
                wait = self.message_timeout_ms / 1000 + 10
                threading.Thread(target=warm.close, args=(wait,), daemon=True).start()
            else:
                warm.close(1.0)
        return new

    def producer_ready(
        self, topic: str, acks: str, compression: str | None, max_message_bytes: int,
        timeout_s: float = WARM_TIMEOUT_S,
    ) -> WarmProducer:  # fmt: skip
        """The producer for a send with these settings, once it has its id (waits at most
        `timeout_s`: without a reachable broker it is returned without one, and the send says
        what happens to its records; one the cluster's ACLs refused makes the send raise
        AuthorizationDenied, sending nothing). Writes nothing."""
        warm = self.producer(acks, compression, max_message_bytes)
        if not warm.ready:  # (a kept one that has its id is asked nothing)
            with contextlib.suppress(ClusterError):  # AuthorizationDenied: the send says it
                warm.warm(topic, timeout_s)
        return warm

    @property
    def spent(self) -> bool:
        """No usable producer is kept (none made yet, or the last one was spent by a fatal
        error or a send that lost records): the next send would wait for a new one."""
        warm = self._warm
        return warm is None or not warm.usable

    def prepare(
        self, topic: str, acks: str = "all", compression: str | None = None,
        timeout_s: float = WARM_TIMEOUT_S,
    ) -> SessionState:  # fmt: skip
        """Get ready to send to `topic`: its limits read, the producer made, its id acquired
        (waits at most `timeout_s`). Refused read-only (nothing is made); writes nothing."""
        refused = self.commands.refusal("produce")
        if refused:
            return SessionState(topic, refused=refused)
        limits: TopicLimits | None = None
        try:
            produce_request.check_topic_name(topic)
            limits = self.read_limits(topic)
            age = 0.0 if (c := self.cached_limits(topic)) is None else c[1]
            if not limits.exists:
                return SessionState(topic, limits=limits, limits_age_s=age)
            warm = self.producer(acks, compression, limits.max_message_bytes)
            warm.warm(topic, timeout_s)
        except ClusterError as exc:  # with the limits read: the producer's failure (an ACL)
            return SessionState(topic, limits=limits, error=exc.message)
        return SessionState(
            topic, limits=limits, limits_age_s=age, ready=warm.ready,
            producer_id=warm.producer_id,
        )  # fmt: skip

    def send(
        self, request: ProduceRequest, records: Iterable[Record], **options: Any
    ) -> ProduceResult:
        """Send through the door (Commands.produce_request) with the producer kept here."""
        return self.commands.produce_request(request, records, session=self, **options)

    def close(self, timeout_s: float = 5.0) -> ProducerClosed:
        """Close the producer (a send running now gets `timeout_s` to end, then what it still
        has in flight is purged and reported unknown by it). No more sends after this."""
        with self._lock:
            if self.closed is not None:
                return self.closed
            warm, self._warm = self._warm, None
            self.closed = ProducerClosed(closed=True)
        if warm is not None:
            self.closed = warm.close(timeout_s)
        return self.closed
