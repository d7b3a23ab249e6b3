"""Tail a topic or one partition: from the end, the beginning, an offset, a timestamp or the
last N records of each partition.

By default no consumer group is used: partitions are assigned explicitly and nothing is ever
committed, so tailing never joins, rebalances or moves the offsets of anyone's group (see
kconsole.cluster.security.clients.groupless_consumer_config). With `group_id`, the tail joins that
group as a normal member (it subscribes, so it takes partitions away from the group's other members)
and commits, which is only for when the user asks for it.

The data (StartAt, TailRecord, TailPosition, TailBuffer, ...) is kconsole.cluster.tail; this
module is the consumer that reads, behind the door (only the command layer opens one).
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import (
    OFFSET_INVALID,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)

from kconsole.cluster.errors import ClusterError
from kconsole.cluster.produce.request import check_topic_name
from kconsole.cluster.security import clients, denied
from kconsole.cluster.security.clients import RDKAFKA_LOG, client_config, groupless_consumer_config
from kconsole.cluster.tail import (
    Header,
    StartAt,
    TailError,
    TailFactory,
    TailPosition,
    TailRecord,
    TailSource,
    start_positions,
)
from kconsole.config import Settings
from kconsole.errors import AuthenticationFailed

# -- records as read ---------------------------------------------------------------------------
_TS_TYPES = {1: "create", 2: "log-append"}


def _record(msg: Message) -> TailRecord:
    ts_type, ts = msg.timestamp()
    return TailRecord(
        topic=msg.topic() or "",
        partition=msg.partition() or 0,
        offset=msg.offset() or 0,
        timestamp_ms=ts if ts_type in _TS_TYPES and ts >= 0 else None,
        timestamp_type=_TS_TYPES.get(ts_type, "none"),
        key=_as_bytes(msg.key()),
        value=_as_bytes(msg.value()),
        headers=_headers(msg.headers()),
    )


def _headers(raw: Any) -> tuple[Header, ...]:
    # confluent-kafka gives a list of (name, value) pairs (or None).
    return tuple((str(h[0]), _as_bytes(h[1])) for h in raw or ())


def _as_bytes(data: bytes | str | None) -> bytes | None:
    return data.encode() if isinstance(data, str) else data


# -- the tailer ---------------------------------------------------------------------------------
_AT_END = StartAt("end")  # StartAt is frozen: one default serves every tail
PREFETCH_KB = 16 * 1024  # the most a tail's client holds read ahead of poll()


class Tailer:
    """Reads a topic (or one partition) from `start` on. Not thread-safe: one thread uses it.

    open() resolves the start offsets (and raises TailError for a bad topic or partition, or
    an unreachable cluster); poll() returns what arrived; pause()/resume() stop and restart
    fetching without losing the position; close() always.
    """

    def __init__(
        self,
        settings: Settings,
        topic: str,
        *,
        partition: int | None = None,
        start: StartAt = _AT_END,
        group_id: str | None = None,
        timeout_s: float = 10.0,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.settings = settings
        self.topic = topic
        self.partition = partition
        self.start = start
        self.group_id = group_id or None
        self.timeout_s = timeout_s
        self.extra = extra or {}
        self.positions: tuple[TailPosition, ...] = ()
        self.paused = False
        self._consumer: Consumer | None = None
        self._assigned: list[TopicPartition] = []
        self._joined: list[int] | None = None  # the partitions the group gave us, once it did
        self._early: list[TailRecord] = []  # read while joining, handed out by the next poll

    # -- set-up -------------------------------------------------------------------------------
    def _config(self) -> dict[str, Any]:
        if self.group_id is None:
            conf = groupless_consumer_config(self.settings)
        else:
            conf = client_config(self.settings)
            conf.update(
                {
                    "logger": RDKAFKA_LOG,
                    "group.id": self.group_id,
                    "enable.auto.commit": True,
                    "enable.partition.eof": False,
                }
            )
        conf.update(
            {
                "socket.timeout.ms": int(self.timeout_s * 1000),
                # What the client prefetches ahead of poll(): bounded well below its 64 MB default,
                # which only a consumer that keeps up with far more than one screen needs.
                "queued.max.messages.kbytes": PREFETCH_KB,
            }
        )
        conf.update(self.extra)
        return conf

    def open(self) -> tuple[TailPosition, ...]:
        """Connect, check the topic and partition, and position every partition."""
        try:
            check_topic_name(self.topic)
        except ClusterError as exc:
            raise TailError(exc.message) from exc
        if self.partition is not None and self.partition < 0:
            raise TailError(f"partition must be >= 0, not {self.partition}")
        try:
            consumer = Consumer(self._config())
        except KafkaException as exc:
            raise TailError(f"cannot create the consumer: {exc}") from exc
        try:
            parts = self._partitions(consumer)
            self.positions = self._resolve(consumer, parts)
            if self.group_id is None:
                consumer.assign(
                    [TopicPartition(self.topic, p.partition, p.start) for p in self.positions]
                )
            else:
                starts = {p.partition: p.start for p in self.positions}

                def on_assign(c: Consumer, tps: list[TopicPartition]) -> None:
                    # Only a start the user chose overrides the group's committed offsets.
                    if self.start.kind != "end":
                        for tp in tps:
                            tp.offset = starts.get(tp.partition, tp.offset)
                    c.assign(tps)
                    self._joined = sorted(tp.partition for tp in tps)

                consumer.subscribe([self.topic], on_assign=on_assign)
        except BaseException:
            consumer.close()
            raise
        self._consumer = consumer
        return self.positions

    def _partitions(self, consumer: Consumer) -> list[int]:
        try:
            md = consumer.list_topics(self.topic, timeout=self.timeout_s)
        except KafkaException as exc:
            try:
                clients.diagnose_auth(self.settings)
            except AuthenticationFailed as refused:
                raise TailError(refused.message) from exc
            raise TailError(
                f"cannot read metadata from {self.settings.bootstrap}: {exc.args[0]}"
            ) from exc
        t = md.topics.get(self.topic)
        if t is None or (t.error is not None and not t.partitions):
            raise TailError(f"topic {self.topic!r} does not exist")
        parts = sorted(t.partitions)
        if self.partition is not None:
            if self.partition not in parts:
                raise TailError(
                    f"partition {self.partition} does not exist: {self.topic} has partitions "
                    f"0..{len(parts) - 1}"
                )
            return [self.partition]
        return parts

    def _resolve(self, consumer: Consumer, parts: list[int]) -> tuple[TailPosition, ...]:
        marks = {}
        for p in parts:
            try:
                got = consumer.get_watermark_offsets(
                    TopicPartition(self.topic, p), timeout=self.timeout_s
                )
            except KafkaException as exc:
                raise TailError(
                    f"cannot read the offsets of {self.topic}/{p}: {exc.args[0]}"
                ) from exc
            if got is None:  # the client's way to say it timed out
                raise TailError(
                    f"cannot read the offsets of {self.topic}/{p}: no answer within "
                    f"{self.timeout_s:.0f} s"
                )
            marks[p] = got
        by_time: dict[int, int] = {}
        if self.start.kind == "timestamp":
            asked = [TopicPartition(self.topic, p, self.start.value) for p in parts]
            try:
                found = consumer.offsets_for_times(asked, timeout=self.timeout_s)
            except KafkaException as exc:
                raise TailError(f"cannot look up offsets by time: {exc.args[0]}") from exc
            # -1: no record at or after that time -> the end.
            by_time = {tp.partition: tp.offset for tp in found}
        return start_positions(self._where(), self.start, marks, by_time)

    def _where(self) -> str:
        return self.topic if self.partition is None else f"{self.topic}/{self.partition}"

    # -- reading ------------------------------------------------------------------------------
    def join(self, timeout_s: float | None = None) -> list[int]:
        """A group tail: wait until the group has assigned this member its partitions (what
        it read meanwhile comes with the next poll). The partitions it got, maybe none when the
        group has more members than partitions; TailError when the join does not finish."""
        if self.group_id is None:
            return [p.partition for p in self.positions]
        deadline = time.monotonic() + (self.timeout_s if timeout_s is None else timeout_s)
        while self._joined is None:
            if time.monotonic() >= deadline:
                raise TailError(
                    f"group {self.group_id!r} assigned no partitions of {self.topic} within "
                    f"{self.timeout_s if timeout_s is None else timeout_s:.0f} s (is its "
                    "coordinator reachable?)"
                )
            self._early.extend(self._read(0.1, 500))
        return list(self._joined)

    def poll(self, timeout_s: float = 0.2, max_records: int = 500) -> list[TailRecord]:
        """What arrived within `timeout_s` (nothing while paused). Raises TailError on a fatal
        error; transient ones (a leader moving) are left to librdkafka."""
        if self._early:
            early, self._early = self._early, []
            return early
        return self._read(timeout_s, max_records)

    def _read(self, timeout_s: float, max_records: int) -> list[TailRecord]:
        consumer = self._consumer
        if consumer is None:
            raise TailError("the tail is not open")
        if self.paused:
            time.sleep(timeout_s)  # paused partitions fetch nothing: just wait
            consumer.poll(0)  # serve callbacks (rebalances, errors)
            return []
        out = []
        for msg in consumer.consume(num_messages=max_records, timeout=timeout_s):
            err = msg.error()
            if err is not None:
                name = denied.authorization_error(err.name())
                if name == "GROUP_AUTHORIZATION_FAILED" and self.group_id is None:
                    # the throw-away group's coordinator lookup: a groupless tail has
                    # explicit offsets and commits nothing, so it needs no group at all
                    continue
                if name is not None:
                    raise self._denied(name)
                if err.fatal() or err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    raise TailError(f"reading {self.topic} failed: {err.str()}")
                continue
            out.append(_record(msg))
        return out

    def _denied(self, error: str) -> TailError:
        """The cluster's ACLs refused this tail: reading the topic, or joining the group."""
        if error == "GROUP_AUTHORIZATION_FAILED":
            refusal = denied.denied_to(self.settings, error, "JoinGroup", self.group_id or "")
        else:
            refusal = denied.denied_to(self.settings, error, "Fetch", self.topic)
        return TailError(refusal.message)

    def behind(self) -> int | None:
        """How many records lie between what was read and the end of the log as the client
        last saw it (its fetches carry the end): 0 once caught up. None when not known: paused
        (nothing is fetched, so the end it knows is old) or a group member not yet positioned."""
        consumer = self._consumer
        if consumer is None or self.paused:
            return None
        assigned = consumer.assignment()
        if not assigned:
            return None if self.group_id is not None else 0
        starts = {p.partition: p.start for p in self.positions} if self.group_id is None else {}
        ends = {p.partition: p.high for p in self.positions}
        try:
            at_now = consumer.position(assigned)
        except KafkaException:
            return None
        total = 0
        for tp in at_now:
            known = ends.get(tp.partition, -1)
            try:
                marks = consumer.get_watermark_offsets(tp, cached=True)
            except KafkaException:
                marks = None
            high = max(known, marks[1] if marks else -1)
            at = tp.offset if tp.offset >= 0 else starts.get(tp.partition, OFFSET_INVALID)
            if at < 0 or high < 0:
                return None
            total += max(0, high - at)
        return total

    def pause(self) -> None:
        """Stop fetching; the position is kept."""
        if self._consumer is not None and not self.paused:
            self._consumer.pause(self._consumer.assignment())
        self.paused = True

    def resume(self) -> None:
        """Fetch again from where the tail stopped."""
        if self._consumer is not None and self.paused:
            self._consumer.resume(self._consumer.assignment())
        self.paused = False

    def close(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            consumer.close()

    def __enter__(self) -> Tailer:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def tail_factory(settings: Settings) -> TailFactory:
    """Real tails of the cluster `settings` point at."""

    def make(topic: str, partition: int | None, start: StartAt, group: str | None) -> TailSource:
        return Tailer(settings, topic, partition=partition, start=start, group_id=group)

    return make
