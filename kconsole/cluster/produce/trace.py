"""Where a key goes: the Java client's default partitioner, and a key -> partition -> leader trace.

The partition is computed exactly as the Java client's default partitioner does it (murmur2 of
the key bytes, Java-compatible, from kafka-python); the producer (kconsole.cluster.security.clients)
uses librdkafka's `murmur2_random` partitioner, so the records really land there.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kafka.partitioner.default import murmur2

from kconsole.models import ClusterSnapshot


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
    record_bytes: int | None = None  # the record's size with overhead, when it was asked about
    max_message_bytes: int | None = None  # the topic's limit it was checked against (None: not)

    @property
    def size_unchecked(self) -> bool:
        """A record size was given but the topic's limit is not known: no promise about it."""
        return self.record_bytes is not None and self.max_message_bytes is None

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
    snapshot: ClusterSnapshot,
    topic: str,
    key: bytes | None,
    partition: int | None = None,
    *,
    record_bytes: int | None = None,
    max_message_bytes: int | None = None,
    limit_source: str = "topic",
) -> Trace:
    """Where `key` (or the explicit `partition`) goes in `snapshot`, and what is wrong there.

    With `record_bytes` (request.record_size) and the topic's `max_message_bytes`, a
    record the send would refuse as too large is a warning too (`limit_source` says where the
    limit came from, as TopicLimits does)."""
    t = _route(snapshot, topic, key, partition)
    if record_bytes is None or not t.num_partitions:
        return t
    t = replace(t, record_bytes=record_bytes, max_message_bytes=max_message_bytes)
    if max_message_bytes is not None and record_bytes > max_message_bytes:
        t = replace(t, warnings=(*t.warnings, (
            f"record too large: about {record_bytes:,} bytes with overhead, but {topic} accepts "
            f"at most {max_message_bytes:,} (max.message.bytes, {limit_source}): a send would "
            "be refused"
        )))  # fmt: skip
    return t


def _route(
    snapshot: ClusterSnapshot, topic: str, key: bytes | None, partition: int | None
) -> Trace:
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
