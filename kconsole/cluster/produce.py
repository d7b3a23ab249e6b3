"""Produce keyed messages, with a key -> partition -> leader trace and per-record delivery.

Where a key goes is computed exactly as the Java client's default partitioner does it
(murmur2 of the key bytes, Java-compatible, from kafka-python), and the producer is configured
with librdkafka's `murmur2_random` partitioner so the records really land there. Validation runs
before anything is sent: a bad topic name, a missing topic, an oversized record, a silly count or
rate, or undecodable text input are errors with nothing written.

Outcomes come only from delivery reports, as in the drill workload: acked when librdkafka
reports success, failed with the error's name, and whatever still has no report when the bounded
flush ends is an unknown outcome, never counted as acked.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient, ConfigResource
from kafka.partitioner.default import murmur2

from kconsole.cluster.errors import ClusterError
from kconsole.config import Settings
from kconsole.models import ClusterSnapshot

RDKAFKA_LOG = logging.getLogger("kconsole.rdkafka")

ACKS_CHOICES = ("all", "1", "0")
COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")
# The broker's default message.max.bytes (and so a topic's default max.message.bytes).
DEFAULT_MAX_MESSAGE_BYTES = 1048588
MAX_COUNT = 1_000_000  # more than this from one command line is a typo, not a plan
MAX_RATE = 1_000_000.0
# A record batch of one record: the v2 batch header (61 bytes) plus the record's own framing
# (length, attributes, timestamp/offset deltas, key/value lengths, header count: at most ~21).
RECORD_OVERHEAD = 61 + 21
_TOPIC_RE = re.compile(r"[a-zA-Z0-9._-]{1,249}")
_PURGED = {KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT}

Header = tuple[str, bytes | None]
Record = tuple[bytes | None, bytes | None, Sequence[Header]]


class ProduceError(ClusterError):
    """A produce request was refused before anything was sent; the message says why."""


# -- where a key goes -------------------------------------------------------------------------
def partition_for(key: bytes | None, num_partitions: int) -> int | None:
    """The partition the Java client's default partitioner picks for `key`.

    `(murmur2(key) & 0x7fffffff) % num_partitions`, murmur2 being Kafka's Java
    `Utils.murmur2` (kafka-python's port). A null key has no fixed partition: the Java client
    spreads null-keyed records with its sticky partitioner (a batch at a time to one partition,
    then another), so None is returned.
    """
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be at least 1, not {num_partitions}")
    if key is None:
        return None
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


@dataclass(frozen=True)
class Trace:
    """key -> partition -> leader, with what would make a send fail right now."""

    topic: str
    key: bytes | None
    partition: int | None  # None: null key (sticky partitioner) or unknown topic
    leader: int | None  # None: unknown; -1: no leader
    isr: tuple[int, ...] = ()
    replicas: tuple[int, ...] = ()
    min_isr: int | None = None
    num_partitions: int = 0
    warnings: tuple[str, ...] = ()

    def describe(self) -> str:
        key = "null" if self.key is None else self.key.decode("utf-8", "backslashreplace")
        if self.partition is None:
            where = (
                f"key {key} -> any of {self.num_partitions} partitions (sticky partitioner)"
                if self.num_partitions
                else f"key {key} -> ?"
            )
        else:
            leader = "none" if self.leader is None or self.leader < 0 else str(self.leader)
            isr = ",".join(map(str, self.isr)) or "-"
            reps = ",".join(map(str, self.replicas)) or "-"
            mi = f" (min.insync.replicas {self.min_isr})" if self.min_isr is not None else ""
            where = (
                f"key {key} -> {self.topic}/{self.partition} -> leader {leader}, "
                f"ISR [{isr}]{mi}, replicas [{reps}]"
            )
        return "\n".join([where, *(f"  warning: {w}" for w in self.warnings)])


def trace(
    snapshot: ClusterSnapshot, topic: str, key: bytes | None, partition: int | None = None
) -> Trace:
    """Where `key` (or the explicit `partition`) goes in `snapshot`, and what is wrong there."""
    parts = sorted((p for p in snapshot.partitions if p.topic == topic), key=lambda p: p.partition)
    if not parts:
        return Trace(topic, key, None, None, warnings=(f"topic {topic!r} does not exist",))
    n = len(parts)
    min_isr = snapshot.min_isr(topic)
    target = partition if partition is not None else partition_for(key, n)
    if target is None:
        # Null key: the sticky partitioner may pick any partition, so every one matters.
        warnings = []
        offline = [p.partition for p in parts if snapshot.is_offline(p)]
        under = [p.partition for p in parts if snapshot.under_min_isr(p)]
        if offline:
            warnings.append(f"partitions {_ids(offline)} offline (no leader)")
        if under:
            warnings.append(
                f"partitions {_ids(under)} under min ISR ({min_isr}): acks=all sends to them "
                "would fail now with NOT_ENOUGH_REPLICAS"
            )
        return Trace(topic, key, None, None, (), (), min_isr, n, tuple(warnings))
    p = snapshot.partition(topic, target)
    if p is None:
        return Trace(
            topic, key, target, None, (), (), min_isr, n,
            (f"partition {target} does not exist ({topic} has {n})",),
        )  # fmt: skip
    warnings = []
    if snapshot.is_offline(p):
        warnings.append(f"partition {p.partition} is offline (no live leader): sends will fail")
    elif snapshot.under_min_isr(p):
        warnings.append(
            f"under min ISR: ISR {len(p.isr)} < min.insync.replicas {min_isr}; acks=all would "
            "fail now with NOT_ENOUGH_REPLICAS"
        )
    return Trace(topic, key, p.partition, p.leader, p.isr, p.replicas, min_isr, n, tuple(warnings))


def _ids(ids: list[int]) -> str:
    return ",".join(map(str, ids))


# -- input --------------------------------------------------------------------------------------
def parse_line(line: str, key_separator: str | None) -> tuple[str | None, str]:
    """One kcat-like input line as (key, value); the trailing newline is dropped.

    With a separator, the line splits at its first occurrence: "k:v:w" -> ("k", "v:w"), and
    ":v" -> ("", "v") (an empty, not a null, key). A line without the separator is all value
    with a null key, as kcat -K does (Java's console producer refuses such a line instead).
    Without a separator, every line is a value with a null key.
    """
    line = line.removesuffix("\n").removesuffix("\r")
    if not key_separator:
        return None, line
    key, sep, value = line.partition(key_separator)
    if not sep:
        return None, line
    return key, value


def decode_text(data: bytes, what: str) -> str:
    """`data` as UTF-8 text, or a ProduceError naming `what` and the bad byte's position."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProduceError(
            f"{what} is not valid UTF-8 (byte {exc.start}: {data[exc.start : exc.start + 1]!r})"
        ) from exc


def parse_header(item: str) -> Header:
    name, sep, value = item.partition("=")
    if not sep or not name:
        raise ProduceError(f"--header expects key=value, got {item!r}")
    return name, value.encode()


# -- validation (nothing is sent before it passed) -------------------------------------------
def check_topic_name(topic: str) -> None:
    """Kafka's rules: 1..249 characters of [a-zA-Z0-9._-], and not "." or ".."."""
    if topic in (".", ".."):
        raise ProduceError(f'invalid topic name {topic!r}: "." and ".." are not allowed')
    if not topic:
        raise ProduceError("invalid topic name: it is empty")
    if len(topic) > 249:
        raise ProduceError(f"invalid topic name: {len(topic)} characters, at most 249 allowed")
    if not _TOPIC_RE.fullmatch(topic):
        bad = sorted({c for c in topic if not _TOPIC_RE.fullmatch(c)})
        raise ProduceError(
            f"invalid topic name {topic!r}: {''.join(bad)!r} not allowed "
            "(only ASCII letters, digits, '.', '_' and '-')"
        )


def record_size(key: bytes | None, value: bytes | None, headers: Sequence[Header] = ()) -> int:
    """Upper estimate of one record's size in its own (uncompressed) batch."""
    size = RECORD_OVERHEAD + len(key or b"") + len(value or b"")
    return size + sum(len(h.encode()) + len(v or b"") + 10 for h, v in headers)


@dataclass(frozen=True)
class TopicLimits:
    """What validation needs to know about a topic, read from the cluster."""

    topic: str
    exists: bool
    partitions: int = 0
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    max_message_bytes_source: str = "default"  # "topic" when read from describe_configs


def read_topic_limits(settings: Settings, topic: str, timeout_s: float = 10.0) -> TopicLimits:
    """Does `topic` exist (metadata), how many partitions, and its max.message.bytes.

    max.message.bytes is the topic's effective value (it inherits the broker's
    message.max.bytes); when DescribeConfigs fails, Kafka's default 1048588 is assumed.
    """
    conf: dict[str, Any] = {"logger": RDKAFKA_LOG, "socket.timeout.ms": int(timeout_s * 1000)}
    conf.update(settings.kafka_config())
    admin = AdminClient(conf)
    try:
        md = admin.list_topics(topic, timeout=timeout_s)
    except KafkaException as exc:
        raise ProduceError(f"cannot read metadata from {settings.bootstrap}: {exc}") from exc
    t = md.topics.get(topic)
    if t is None or (t.error is not None and not t.partitions):
        return TopicLimits(topic, False)
    limit, source = DEFAULT_MAX_MESSAGE_BYTES, "default"
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    try:
        entries = admin.describe_configs([res], request_timeout=timeout_s)[res].result(
            timeout=timeout_s + 1
        )
        limit, source = int(entries["max.message.bytes"].value), "topic"
    except (KafkaException, KeyError, ValueError, TypeError):
        pass
    return TopicLimits(topic, True, len(t.partitions), limit, source)


def validate(
    topic: str,
    *,
    limits: TopicLimits | None,
    records: Sequence[Record] = (),
    count: int = 1,
    rate: float | None = None,
    partition: int | None = None,
    acks: str = "all",
    compression: str | None = None,
) -> None:
    """Raise ProduceError for the first rule `topic` and the records break.

    `limits` None checks only what needs no cluster (name, count, rate, acks, compression).
    The size check is on the uncompressed record: conservative with compression.
    """
    check_topic_name(topic)
    if count < 1:
        raise ProduceError(f"--count must be at least 1, not {count}")
    if count > MAX_COUNT:
        raise ProduceError(f"--count {count} is too many (at most {MAX_COUNT} per command)")
    if rate is not None and not 0 < rate <= MAX_RATE:
        raise ProduceError(f"--rate must be in (0, {MAX_RATE:.0f}] messages/s, not {rate}")
    if acks not in ACKS_CHOICES:
        raise ProduceError(f"--acks must be one of {', '.join(ACKS_CHOICES)}, not {acks!r}")
    if compression is not None and compression not in COMPRESSIONS:
        raise ProduceError(f"--compression must be one of {', '.join(COMPRESSIONS)}")
    if partition is not None and partition < 0:
        raise ProduceError(f"--partition must be >= 0, not {partition}")
    if limits is None:
        return
    if not limits.exists:
        raise ProduceError(
            f"topic {topic!r} does not exist (kconsole does not create topics by producing)"
        )
    if partition is not None and partition >= limits.partitions:
        raise ProduceError(
            f"--partition {partition} does not exist: {topic} has partitions "
            f"0..{limits.partitions - 1}"
        )
    for i, (key, value, headers) in enumerate(records):
        size = record_size(key, value, headers)
        if size > limits.max_message_bytes:
            which = f"record {i + 1}" if len(records) > 1 else "the record"
            raise ProduceError(
                f"{which} is too large: about {size} bytes with overhead, but {topic} accepts at "
                f"most {limits.max_message_bytes} (max.message.bytes, "
                f"{limits.max_message_bytes_source}); nothing was sent"
            )


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
    topic: str
    acks: str
    sent: int
    deliveries: tuple[Delivery, ...]  # in send order
    elapsed_s: float
    notes: tuple[str, ...] = field(default=())

    @property
    def acked(self) -> tuple[Delivery, ...]:
        return tuple(d for d in self.deliveries if d.error is None)

    @property
    def failed(self) -> tuple[Delivery, ...]:
        return tuple(d for d in self.deliveries if d.error not in (None, "UNKNOWN"))

    @property
    def unknown(self) -> tuple[Delivery, ...]:
        return tuple(d for d in self.deliveries if d.error == "UNKNOWN")

    @property
    def failed_by_code(self) -> dict[str, int]:
        return dict(sorted(Counter(d.error for d in self.failed if d.error).items()))

    @property
    def ok(self) -> bool:
        return len(self.acked) == self.sent

    @property
    def rate(self) -> float:
        return self.sent / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def latency(self) -> dict[str, float]:
        """p50 / p99 / max of acked records' latencies, in milliseconds ({} if none)."""
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
    conf = settings.kafka_config()
    conf.update(
        {
            "logger": RDKAFKA_LOG,
            "acks": acks,
            # Idempotence needs acks=all; with it, retries cannot duplicate or reorder.
            "enable.idempotence": acks == "all",
            # Java's default partitioner: keys land where Java producers put them.
            "partitioner": "murmur2_random",
            "linger.ms": 5,
            "message.timeout.ms": message_timeout_ms,
            "request.timeout.ms": min(30000, message_timeout_ms),
            "compression.type": compression or "none",
            # A few retries, not librdkafka's "forever until message.timeout.ms": a record that
            # keeps failing (NOT_ENOUGH_REPLICAS) then reports the broker's error, not a
            # generic _MSG_TIMED_OUT. Idempotence keeps retries free of duplicates.
            "retries": retries,
            "retry.backoff.ms": 100,
        }
    )
    if max_message_bytes is not None:
        # librdkafka's own limit (1000000 by default) must not refuse what the topic accepts.
        conf["message.max.bytes"] = max(1_000_000, max_message_bytes + 1024)
    conf.update(extra or {})
    return conf


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
    message_timeout_ms: int = 30000,
    flush_timeout_s: float | None = None,
    max_message_bytes: int | None = None,
    extra: dict[str, Any] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> ProduceResult:
    """Send `records` (key, value, headers) to `topic` and account for every one.

    `rate` paces sends (messages/s, absolute schedule); `partition` overrides the partitioner.
    The flush is bounded (`flush_timeout_s`, by default the message timeout + 5 s): what is
    still in flight then is purged and reported as unknown. `on_progress` gets each outcome.
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
    # Lists indexed by send order: the delivery callback runs once per record, so keep it lean.
    outcomes: list[Delivery | None] = []
    sent_at: list[float] = []
    keys: list[bytes | None] = []

    def report(d: Delivery) -> None:
        outcomes[d.index] = d
        if on_progress is not None:
            on_progress(d)

    def on_delivery(i: int, err: KafkaError | None, msg: Message) -> None:
        if outcomes[i] is not None:
            return
        part, off = msg.partition(), msg.offset()
        part = part if part is not None and part >= 0 else None
        if err is None:
            # librdkafka's own produce() -> ack time: no Python scheduling in it.
            lat = msg.latency()
            if lat is None:
                lat = clock() - sent_at[i]
            off = off if off is not None and off >= 0 else None  # acks=0: no offset
            report(Delivery(i, keys[i], part, off, lat))
        elif err.code() in _PURGED:
            report(Delivery(i, keys[i], part, None, None, "UNKNOWN", err.str()))
        else:
            report(Delivery(i, keys[i], part, None, clock() - sent_at[i], err.name(), err.str()))

    start = clock()
    n = 0
    period = 1.0 / rate if rate else 0.0
    produce, poll = producer.produce, producer.poll
    fixed: dict[str, Any] = {} if partition is None else {"partition": partition}
    for key, value, headers in records:
        if period:
            while (wait := start + n * period - clock()) > 0:
                poll(min(wait, 0.1))
        keys.append(key)
        outcomes.append(None)
        kwargs: dict[str, Any] = {"key": key, "value": value, **fixed}
        if headers:
            kwargs["headers"] = list(headers)
        kwargs["on_delivery"] = partial(on_delivery, n)
        sent_at.append(clock())
        while True:
            try:
                produce(topic, **kwargs)
            except BufferError:
                poll(0.05)  # local queue full: serve reports, then send it again
                sent_at[n] = clock()
                continue
            except KafkaException as exc:
                err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
                name = err.name() if err else type(exc).__name__
                report(Delivery(n, key, None, None, None, name, err.str() if err else str(exc)))
            break
        n += 1
        poll(0)
    sent_done = clock()
    notes = []
    producer.flush(
        flush_timeout_s if flush_timeout_s is not None else message_timeout_ms / 1000 + 5
    )
    if len(producer) > 0:
        producer.purge(in_queue=True, in_flight=True, blocking=True)
        producer.flush(1.0)
    for i in range(n):
        if outcomes[i] is None:
            report(Delivery(i, keys[i], None, None, None, "UNKNOWN", "no delivery report"))
    done = [d for d in outcomes if d is not None]
    unknown = sum(1 for d in done if d.error == "UNKNOWN")
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
        deliveries=tuple(done),
        elapsed_s=max(sent_done, clock()) - start,
        notes=tuple(notes),
    )


# -- a produce request as typed into a form -----------------------------------------------------
VALUE_MODES = ("text", "json", "file")
SMALL_SEND = 20  # up to this many records, each delivery is shown on its own


@dataclass(frozen=True)
class ProduceRequest:
    """Everything one send needs, checked (but not yet against the cluster)."""

    topic: str
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    count: int = 1
    rate: float | None = None
    acks: str = "all"
    compression: str | None = None
    partition: int | None = None

    @property
    def record(self) -> Record:
        return (self.key, self.value, self.headers)

    def records(self, stop: Callable[[], bool] = lambda: False) -> Iterable[Record]:
        """`count` copies of the record, ending early once `stop()` is true."""
        record = self.record
        for i in range(self.count):
            if not i & 63 and stop():  # every 64 records: cheap enough, soon enough
                return
            yield record


def encode_text(text: str, what: str) -> bytes:
    """`text` as UTF-8, or a ProduceError naming `what` (a lone surrogate cannot be encoded:
    that is what undecodable bytes pasted into a terminal become)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start : exc.start + 1].encode("utf-8", "surrogateescape")
        raise ProduceError(
            f"{what} is not valid UTF-8 text (character {exc.start + 1} is the undecodable "
            f"byte {bad!r}); use the file value mode to send raw bytes"
        ) from exc


def _int_field(text: str, what: str, default: int | None) -> int | None:
    t = text.strip().replace("_", "").replace(",", "")
    if not t:
        return default
    try:
        return int(t)
    except ValueError:
        raise ProduceError(f"{what} must be a whole number, not {text.strip()!r}") from None


def parse_headers(text: str) -> tuple[Header, ...]:
    """`k=v, k2=v2` (comma or newline separated) as headers; an empty text is none."""
    items = [i.strip() for i in re.split(r"[,\n]", text) if i.strip()]
    out = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ProduceError(f"headers are key=value, separated by commas; got {item!r}")
        out.append((name.strip(), encode_text(value, f"header {name.strip()!r}")))
    return tuple(out)


def build_request(
    *,
    topic: str,
    key: str,
    value: str,
    value_mode: str = "text",
    headers: str = "",
    count: str = "1",
    rate: str = "",
    acks: str = "all",
    compression: str = "none",
    partition: str = "",
    read_file: Callable[[str], bytes] | None = None,
) -> ProduceRequest:
    """A ProduceRequest from a form's text fields, or a ProduceError saying what is wrong.

    An empty key is a null key; `value_mode` json checks the value parses (and sends it as
    typed); file reads the file named by `value` and sends its bytes as they are.
    """
    topic = topic.strip()
    n = _int_field(count, "count", 1) or 0  # an empty field is the default, 1
    part = _int_field(partition, "partition", None)
    codec = None if compression == "none" else compression
    rate_t = rate.strip()
    try:
        r = float(rate_t) if rate_t else None
    except ValueError:
        raise ProduceError(f"rate must be a number (messages per second), not {rate_t!r}") from None
    validate(
        topic,
        limits=None,
        count=n,
        rate=r,
        partition=part,
        acks=acks,
        compression=codec,
    )
    if value_mode not in VALUE_MODES:
        raise ProduceError(f"value mode must be one of {', '.join(VALUE_MODES)}")
    kbytes = encode_text(key, "the key") if key else None
    if value_mode == "file":
        path = value.strip()
        if not path:
            raise ProduceError("file mode: give the path of the file to send")
        try:
            data = (read_file or _read_bytes)(path)
        except OSError as exc:
            raise ProduceError(f"cannot read {path}: {exc.strerror or exc}") from exc
    else:
        data = encode_text(value, "the value")
        if value_mode == "json":
            try:
                json.loads(value)
            except ValueError as exc:
                raise ProduceError(f"the value is not valid JSON: {exc}") from None
    return ProduceRequest(
        topic=topic,
        key=kbytes,
        value=data,
        headers=parse_headers(headers),
        count=n,
        rate=r,
        acks=acks,
        compression=codec,
        partition=part,
    )


def _read_bytes(path: str) -> bytes:
    with open(os.path.expanduser(path), "rb") as fh:
        return fh.read()


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
    """Counts outcomes as delivery reports arrive (on the producing thread)."""

    def __init__(self, total: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.total = total
        self.clock = clock
        self.started = clock()
        self.acked = 0
        self.unknown = 0
        self.failed: Counter[str] = Counter()
        self.latencies: list[float] = []

    def add(self, d: Delivery) -> None:
        if d.error is None:
            self.acked += 1
            if d.latency_s is not None:
                self.latencies.append(d.latency_s)
        elif d.error == "UNKNOWN":
            self.unknown += 1
        else:
            self.failed[d.error] += 1

    def view(self) -> TallyView:
        return TallyView(
            self.total,
            self.acked,
            dict(sorted(self.failed.items())),
            self.unknown,
            self.clock() - self.started,
            latency_summary(self.latencies),
        )
