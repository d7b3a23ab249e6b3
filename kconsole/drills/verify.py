"""The verifying consumer: read a run's messages back without touching any consumer group.

Partitions are assigned explicitly (no subscribe, so no JoinGroup and no rebalance of anyone's
group) and offsets are never committed. librdkafka insists on a group.id for a Consumer, so a
unique throw-away one is set; with assign() and no commits it never exists on the broker.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from kconsole.cluster.security.clients import groupless_consumer_config
from kconsole.config import Settings
from kconsole.drills.audit import Acked, Consumed


@dataclass(frozen=True)
class ReadBack:
    """The records of one run read from a topic, and whether the read got to the end."""

    records: tuple[Consumed, ...]
    complete: bool  # every partition read to its high watermark, `until` seen or given up on
    unfinished: tuple[int, ...]  # partitions short of their high watermark at the deadline
    missing_until: int  # of `until`: neither seen nor given up on at the deadline
    not_waited: int  # of `until`: given up on (read past, or beyond an end standing still)
    high_watermarks: dict[int, int]
    other: int  # messages of other runs or not ours at all, skipped
    elapsed_s: float


def verifier_config(settings_or_config: Settings | Mapping[str, Any]) -> dict[str, Any]:
    """Consumer properties that can never join, rebalance or commit for a real group."""
    return groupless_consumer_config(settings_or_config)


def partitions_of(
    consumer: Consumer, topic: str, timeout_s: float, clock: Callable[[], float] = time.monotonic
) -> list[int]:
    """`topic`'s partitions. Metadata reaches brokers one by one (the broker asked may not
    know a topic another one already serves), so UNKNOWN_TOPIC_OR_PART is asked again until
    `timeout_s` has passed; then, and for any other error, KafkaException."""
    deadline = clock() + timeout_s
    while True:
        md = consumer.list_topics(topic, timeout=max(0.1, deadline - clock()))
        t = md.topics.get(topic)
        if t is not None and (t.error is None or t.partitions):
            return sorted(t.partitions)
        error = t.error if t is not None else KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)
        if error.code() != KafkaError.UNKNOWN_TOPIC_OR_PART or clock() >= deadline:
            raise KafkaException(error)
        time.sleep(min(0.1, max(0.0, deadline - clock())))


def end_offsets(
    settings_or_config: Settings | Mapping[str, Any], topic: str, *, timeout_s: float = 10.0
) -> dict[int, int]:
    """Every partition's high watermark now: capture it before a workload starts."""
    consumer = Consumer(verifier_config(settings_or_config))
    deadline = time.monotonic() + timeout_s
    try:
        return {
            p: _high_watermark(consumer, TopicPartition(topic, p), deadline)
            for p in partitions_of(consumer, topic, timeout_s)
        }
    finally:
        consumer.close()


# Right after a leader election the new leader answers these until it has caught up (seen in
# CI: OFFSET_NOT_AVAILABLE, "Leader high watermark is not caught up", just after the preferred
# leaders were elected): asked again until the deadline.
_NOT_YET = frozenset(
    {
        KafkaError.OFFSET_NOT_AVAILABLE,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.NOT_LEADER_FOR_PARTITION,
    }
)


def _high_watermark(consumer: Any, tp: TopicPartition, deadline: float) -> int:
    while True:
        try:
            left = max(0.1, deadline - time.monotonic())
            return int(consumer.get_watermark_offsets(tp, timeout=left)[1])
        except KafkaException as exc:
            code = exc.args[0].code() if exc.args else None
            if code not in _NOT_YET or time.monotonic() >= deadline:
                raise
            time.sleep(0.1)


def read_back(
    settings_or_config: Settings | Mapping[str, Any],
    topic: str,
    run_id: str,
    *,
    start_offsets: Mapping[int, int] | None = None,
    timeout_s: float = 30.0,
    until: Iterable[Acked] | None = None,
    still_s: float = 5.0,
    clock: Callable[[], float] = time.monotonic,
) -> ReadBack:
    """Read every partition from `start_offsets` (or the beginning) to its high watermark.

    With `until` (acknowledged records), keep reading (re-asking for the watermarks) until each
    has been seen: after a leader change the new leader's high watermark can lag for a moment,
    so an acked record may not be readable yet. Not waited for (the audit calls them lost):
    one whose partition was read past the offset it was acknowledged at (that offset holds
    another record now: it was truncated), and one beyond a high watermark that was read to and
    has stood still for `still_s` (the log was truncated below it; call this once producers
    stopped and the replicas caught up, as a drill does). Ends at the deadline either way.
    """
    started = clock()
    deadline = started + timeout_s
    consumer = Consumer(verifier_config(settings_or_config))
    records: list[Consumed] = []
    other = 0
    wanted = _Wanted(until or ())
    try:
        parts = partitions_of(consumer, topic, max(1.0, timeout_s / 3))
        starts = dict(start_offsets or {})
        consumer.assign([TopicPartition(topic, p, starts.get(p, OFFSET_BEGINNING)) for p in parts])
        next_offset = {p: starts.get(p, 0) for p in parts}
        targets = _watermarks(consumer, topic, parts, deadline, clock)
        asked_at = clock()
        ends = {p: (hw, asked_at) for p, hw in targets.items()}  # each end, and since when
        while True:
            # A partition whose watermark is not known yet counts as behind.
            behind = [p for p in parts if next_offset[p] < targets.get(p, next_offset[p] + 1)]
            if (not behind and not wanted) or clock() >= deadline:
                break
            if (not behind or len(targets) < len(parts)) and clock() - asked_at >= 0.5:
                # At the end (or an end unknown) with `until` not all seen: the end may move.
                targets.update(_watermarks(consumer, topic, parts, deadline, clock))
                asked_at = clock()
                for part, hw in targets.items():
                    if part not in ends or ends[part][0] != hw:
                        ends[part] = (hw, asked_at)
            for msg in consumer.consume(num_messages=500, timeout=0.2):
                if msg.error() is not None:
                    continue  # transient (leader moving); librdkafka keeps fetching
                p, off = msg.partition(), msg.offset()
                if p is None or off is None:
                    continue
                next_offset[p] = max(next_offset[p], off + 1)
                rec = _parse(msg.value(), run_id, p, off)
                if rec is None:
                    other += 1
                    continue
                records.append(rec)
                wanted.discard((rec.key, rec.seq))
            wanted.passed(next_offset)
            for part, (hw, since) in ends.items():
                if next_offset[part] >= hw and asked_at - since >= still_s:
                    wanted.passed({part: sys.maxsize})  # the end stands still: nothing more comes
    finally:
        consumer.close()
    unfinished = tuple(p for p in parts if next_offset[p] < targets.get(p, next_offset[p] + 1))
    return ReadBack(
        records=tuple(records),
        complete=not unfinished and not wanted,
        unfinished=unfinished,
        missing_until=len(wanted),
        not_waited=wanted.not_waited,
        high_watermarks=dict(targets),
        other=other,
        elapsed_s=clock() - started,
    )


class _Wanted:
    """The acknowledged records not read back yet, by partition in offset order, so those
    whose offset was read past are dropped without a scan of them all."""

    def __init__(self, acked: Iterable[Acked]) -> None:
        self._keys: set[tuple[str, int]] = set()
        self.not_waited = 0
        self._by_part: dict[int, list[tuple[int, str, int]]] = {}
        for a in acked:
            self._keys.add((a.key, a.seq))
            if a.offset >= 0:  # acks=0: the broker never said where; waited for by key only
                self._by_part.setdefault(a.partition, []).append((a.offset, a.key, a.seq))
        for offsets in self._by_part.values():
            offsets.sort(reverse=True)  # lowest last: popped first

    def __bool__(self) -> bool:
        return bool(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def discard(self, key: tuple[str, int]) -> None:
        self._keys.discard(key)

    def passed(self, next_offset: Mapping[int, int]) -> None:
        """Stop waiting for those at an offset below where `next_offset` says reading got."""
        for p, reached in next_offset.items():
            offsets = self._by_part.get(p, [])
            while offsets and offsets[-1][0] < reached:
                _, key, seq = offsets.pop()
                if (key, seq) in self._keys:
                    self._keys.discard((key, seq))
                    self.not_waited += 1


def _watermarks(
    consumer: Consumer,
    topic: str,
    parts: list[int],
    deadline: float,
    clock: Callable[[], float],
) -> dict[int, int]:
    """High watermark per partition (from each leader); one that does not answer is left out
    (the caller asks again)."""
    out = {}
    for p in parts:
        left = deadline - clock()
        if left <= 0:
            break
        try:
            out[p] = consumer.get_watermark_offsets(
                TopicPartition(topic, p), timeout=min(left, 5.0)
            )[1]
        except KafkaException:
            continue
    return out


def _parse(value: bytes | str | None, run_id: str, partition: int, offset: int) -> Consumed | None:
    if value is None:
        return None
    try:
        data = json.loads(value)
        if data.get("run") != run_id:
            return None
        return Consumed(str(data["key"]), int(data["seq"]), partition, offset)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
