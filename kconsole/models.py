"""Immutable snapshots of a cluster: what every pane, `kconsole describe` and the drills read.

Everything here is plain data built by the sources (ZooKeeper watches, Admin API polls); the
derived flags (under-replicated, offline, under min ISR, not on the preferred leader) are
computed from it, never stored twice.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from enum import StrEnum
from functools import cached_property
from typing import Any, NamedTuple, Protocol, TypeVar

T = TypeVar("T")


class BrokerState(StrEnum):
    UP = "up"  # registered in ZooKeeper (or in the metadata) and reachable
    DOWN = "down"  # known, but not registered any more
    UNREACHABLE = "unreachable"  # registered, but its port does not answer
    PAUSED = "paused"  # the backend says its process is frozen (SIGSTOP / docker pause)
    # Not known: no source of the cluster's metadata has answered (nothing listens, or the
    # cluster refused the login: ClusterSnapshot.unreached says why). Not down.
    UNKNOWN = "unknown"


class SourceName(StrEnum):
    ZOOKEEPER = "zookeeper"
    ADMIN = "admin"
    GROUPS = "groups"
    QUORUM = "quorum"  # KRaft: DescribeQuorum / DescribeFeatures, polled


# A source's error before its first answer (neither answered nor failed yet).
SOURCE_WAITING = "waiting for first data"
# The sources that tell the cluster's brokers, controller and partitions (the groups do not).
METADATA_SOURCES = (SourceName.ZOOKEEPER, SourceName.ADMIN, SourceName.QUORUM)


class ClusterMode(StrEnum):
    """How the cluster keeps its metadata. ZooKeeper mode ends with Kafka 3.9."""

    ZOOKEEPER = "zookeeper"
    KRAFT = "kraft"
    UNKNOWN = "unknown"  # not told, and nothing answered that says which


@dataclass(frozen=True)
class Broker:
    id: int
    host: str
    port: int
    rack: str | None = None
    state: BrokerState = BrokerState.UP
    registered_at: float | None = None  # from the registration's timestamp (epoch seconds)
    # In ZooKeeper (or the metadata). Separate from `state`: a paused broker stays "paused"
    # while its session expires and it drops out of the cluster.
    registered: bool = True
    # KRaft only (None: ZooKeeper mode, or not known): fenced by the controller (registered,
    # but no heartbeat within broker.session.timeout.ms, or not caught up yet), as
    # DescribeCluster v2 says (KIP-1073). A controlled shutdown in progress is in the
    # controller's registration but in no answer of the Admin API, so it is not shown.
    fenced: bool | None = None
    # KRaft process.roles of the node with this id: ("broker",), ("controller",) or both
    # (a combined node). Empty: ZooKeeper mode or not known.
    roles: tuple[str, ...] = ()

    @property
    def in_cluster(self) -> bool:
        return self.registered and self.state is not BrokerState.DOWN

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}" if self.port else "-"


@dataclass(frozen=True)
class Controller:
    id: int | None  # None: no active controller
    epoch: int | None = None
    # Since when it is the controller (epoch seconds), as far as known: ZooKeeper mode the
    # /controller znode's creation; KRaft the election kconsole saw (None: it led already at
    # kconsole's first reading, so its election time is not known).
    since: float | None = None
    previous: int | None = None


# A voter not caught up with the quorum leader for longer than this is "lagging" (a healthy
# follower fetches continuously; controller.quorum.fetch.timeout.ms is 2 s by default).
VOTER_LAG_S = 5.0


@dataclass(frozen=True)
class QuorumReplica:
    """One member of the KRaft metadata quorum as DescribeQuorum reports it (from the
    leader's view). Times are epoch seconds; None: not reported (or not known)."""

    id: int
    voter: bool  # a voter (controller) or an observer (a broker, or a controller not voting)
    log_end_offset: int | None = None
    last_fetch_at: float | None = None  # the last fetch the leader saw from it
    last_caught_up_at: float | None = None  # the last time it was caught up with the leader
    directory_id: str | None = None  # KIP-853 replica directory id (dynamic quorum)
    host: str | None = None  # the controller listener, when known (voters)
    port: int | None = None

    def lag(self, high_watermark: int | None) -> int | None:
        """Records behind the quorum's high watermark (None: either unknown)."""
        if high_watermark is None or self.log_end_offset is None:
            return None
        return max(0, high_watermark - self.log_end_offset)


@dataclass(frozen=True)
class Quorum:
    """The KRaft metadata quorum. A quorum that could not be read this time keeps its last
    figures with `read_at` (their age) and `error` (why): never shown as fresh."""

    leader_id: int | None  # None: no leader (an election, or a lost majority)
    leader_epoch: int | None = None
    high_watermark: int | None = None
    voters: tuple[QuorumReplica, ...] = ()
    observers: tuple[QuorumReplica, ...] = ()
    read_at: float | None = None  # when these figures were read (epoch seconds)
    error: str = ""  # why the latest read failed ('' : `read_at` is the latest poll)
    # When kconsole first saw this leader and epoch (or no leader). Kafka reports no election
    # time: this is the election's time (within one poll) only when `leader_seen_elected`,
    # i.e. kconsole saw the leader or epoch change; else it led already at kconsole's first
    # reading and has led at least since then.
    leader_seen_since: float | None = None
    leader_seen_elected: bool = False
    previous_leader: int | None = None

    @property
    def voter_ids(self) -> tuple[int, ...]:
        return tuple(r.id for r in self.voters)

    def replica(self, node_id: int) -> QuorumReplica | None:
        return next((r for r in (*self.voters, *self.observers) if r.id == node_id), None)

    @property
    def stale(self) -> bool:
        """The latest read failed: these are the last figures read (see `read_at`)."""
        return bool(self.error)

    def caught_up_age(self, r: QuorumReplica) -> float | None:
        """Seconds since `r` was last caught up with the leader, on the leader's clock (its own
        entry's last caught-up time is its "now" when it answered); None: not reported."""
        leader = self.replica(self.leader_id) if self.leader_id is not None else None
        ref = leader.last_caught_up_at if leader is not None else None
        ref = ref if ref is not None else self.read_at
        if ref is None or r.last_caught_up_at is None:
            return None
        return max(0.0, ref - r.last_caught_up_at)

    def fetch_age(self, r: QuorumReplica) -> float | None:
        """Seconds since the leader last had a fetch from `r`, on the leader's clock (its own
        entry's last fetch time is its "now" when it answered); None: none reported (none
        since this leader was elected: its log end offset is -1 too)."""
        leader = self.replica(self.leader_id) if self.leader_id is not None else None
        ref = leader.last_fetch_at if leader is not None else None
        ref = ref if ref is not None else self.read_at
        if ref is None or r.last_fetch_at is None:
            return None
        return max(0.0, ref - r.last_fetch_at)

    def lagging_voters(self, lag_s: float = VOTER_LAG_S) -> frozenset[int]:
        """Voters other than the leader not caught up for more than `lag_s` seconds. One that
        reports no time counts only once the leader has led for `lag_s` (right after an
        election every follower reports none until its first fetch)."""
        out = set()
        for r in self.voters:
            if r.id == self.leader_id or self.leader_id is None:
                continue
            age = self.caught_up_age(r)
            if age is None:
                led = (
                    self.read_at - self.leader_seen_since
                    if self.read_at is not None and self.leader_seen_since is not None
                    else None
                )
                if led is not None and led > lag_s:
                    out.add(r.id)
            elif age > lag_s:
                out.add(r.id)
        return frozenset(out)


@dataclass(frozen=True)
class FeatureLevel:
    """One feature's finalized level, as `kafka-features describe` prints it (0: supported by
    the brokers but not finalized)."""

    name: str  # e.g. "share.version"
    level: int


@dataclass(frozen=True)
class Features:
    """Finalized feature levels (DescribeFeatures): what the cluster runs at, not its jars."""

    metadata_version: str | None = None  # e.g. "4.1-IV1" (None: not read)
    metadata_version_level: int | None = None
    kraft_version: int | None = None  # 0: static quorum, 1: dynamic (KIP-853)
    read_at: float | None = None
    # Every other feature the brokers support, by name: group.version, share.version,
    # streams.version, transaction.version, eligible.leader.replicas.version on Kafka 4.4.
    others: tuple[FeatureLevel, ...] = ()

    def level(self, name: str) -> int | None:
        """The finalized level of one of `others`; None: not reported."""
        return next((f.level for f in self.others if f.name == name), None)


@dataclass(frozen=True)
class ControllerStatus:
    """A KRaft controller (a quorum voter) as kconsole judges it: from its process when the
    backend knows it (stopped, paused), else from its fetches as the quorum leader reports
    them (none for longer than controller.quorum.fetch.timeout.ms: unreachable)."""

    id: int
    state: BrokerState | None  # None: not known (the quorum not read, nothing else says)
    reason: str = ""  # why it is not up, or why its state is not known ('' : up)
    # While its state is not known: the last one that was (None: never known). A change is
    # an event when it ends a run of readings that could not say (e.g. an election).
    last_known: BrokerState | None = None

    @property
    def up(self) -> bool:
        return self.state is BrokerState.UP


def _key_of(p: Partition) -> str:
    """A partition's "topic/partition", made once per partition object and kept in its
    __dict__ beside the fields (a failover on 10,000 partitions asks it of thousands of new
    partitions at once: functools.cached_property takes a lock for each first reading)."""
    key = p.__dict__.get("_key")
    if key is None:
        key = p.__dict__["_key"] = f"{p.topic}/{p.partition}"
    return key


@dataclass(frozen=True)
class Partition:
    topic: str
    partition: int
    leader: int  # -1 when offline
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader_epoch: int | None = None
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()
    # KRaft, KIP-966 (None: not reported, e.g. ZooKeeper mode or ELR off): eligible leader
    # replicas, and the last known ELR (replicas that were in it when all went down).
    elr: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None

    @property
    def key(self) -> str:
        return _key_of(self)

    @property
    def offline(self) -> bool:
        return self.leader < 0

    @property
    def replication_factor(self) -> int:
        """The replicas it is meant to have: during a reassignment its replicas less those
        still being added (Kafka's TopicCommand counts it so)."""
        return len(self.replicas) - len(self.adding)

    @property
    def under_replicated(self) -> bool:
        """Fewer in sync than its replication factor, as Kafka's TopicCommand
        --under-replicated-partitions says: a replica a reassignment is still adding (copying)
        is not a missing one."""
        # inlined (not self.replication_factor): the brokers' counts ask it of every partition
        return len(self.isr) < len(self.replicas) - len(self.adding)

    @property
    def preferred_leader(self) -> int | None:
        return self.replicas[0] if self.replicas else None

    @property
    def on_preferred_leader(self) -> bool:
        return self.offline or self.leader == self.preferred_leader

    @property
    def reassigning(self) -> bool:
        return bool(self.adding or self.removing)


@dataclass(frozen=True)
class Topic:
    name: str
    internal: bool = False
    min_isr: int | None = None  # the topic's effective min.insync.replicas, when known
    # Its Kafka topic id, new for each incarnation of the name (None: not read; ZooKeeper
    # mode reads it from the topic's node).
    topic_id: str | None = None
    # ZooKeeper mode deletes and creates a topic in steps that KRaft takes at once: marked for
    # deletion (its leaders then go to -1), or its partitions assigned with no leader elected
    # yet. Either way its partitions are not "offline": they are going or coming.
    deleting: bool = False
    creating: bool = False

    @property
    def live(self) -> bool:
        """Neither being deleted nor being created."""
        return not (self.deleting or self.creating)


@dataclass(frozen=True)
class GroupPartition:
    """One partition of a consumer group. A figure that could not be read in the latest poll is
    either carried from an earlier poll (`as_of` says when it was read) or unknown: never 0."""

    topic: str
    partition: int
    committed: int | None  # None: nothing committed (or unknown: see committed_known)
    log_end: int | None  # None: unknown
    owner: str | None = None  # member client id / host owning it
    committed_known: bool = True  # False: the committed offset could not be read, none known
    as_of: float | None = None  # set when a figure is carried from the poll at this time
    # A share group's partition (KIP-932): `committed` is then the share-partition start offset
    # and `share_lag` the lag its coordinator reports (KIP-1226, Kafka 4.4+: log end - start
    # offset - records past the start already delivered for good); None: not reported.
    share: bool = False
    share_lag: int | None = None

    @property
    def lag(self) -> int | None:
        """Committed offsets behind the log end (a share partition: the lag its coordinator
        reports); None when unknown (or nothing is committed yet / no start offset)."""
        if self.committed is None or not self.committed_known:
            return None
        if self.share:
            return self.share_lag
        if self.log_end is None:
            return None
        return max(0, self.log_end - self.committed)

    @property
    def lag_unknown(self) -> bool:
        """The lag could not be worked out (unlike "nothing committed", which is not lag)."""
        if self.share:
            return not self.committed_known or (
                self.committed is not None and self.share_lag is None
            )
        return self.log_end is None or not self.committed_known

    @property
    def carried(self) -> bool:
        return self.as_of is not None


@dataclass(frozen=True)
class Group:
    group_id: str
    state: str
    members: int
    assignor: str = ""
    coordinator: int | None = None
    partitions: tuple[GroupPartition, ...] = ()
    error: str = ""  # what could not be read this time (coordinator moving, leader down, ...)
    as_of: float | None = None  # state / members are carried from the poll at this time
    # "classic", "consumer" (KIP-848, the new protocol), "share" (KIP-932) or "streams"
    # (KIP-1071); '' : the cluster does not say (before Kafka 3.8 / ListGroups v5)
    group_type: str = ""
    # Why this group has no lag at all, though it was read: its lag is "not applicable", never
    # 0 and not an unread figure. No group type sets it since share groups report their lag
    # (KIP-1226).
    lag_na: str = ""

    @property
    def lag(self) -> int | None:
        """The sum of the partitions' known lags (see `lag_partial`); None when none is known."""
        lags = [p.lag for p in self.partitions if p.lag is not None]
        return sum(lags) if lags else None

    @property
    def lag_unknown(self) -> bool:
        """No figure at all: the group could not be read and nothing is known."""
        unread = bool(self.error) or any(p.lag_unknown for p in self.partitions)
        return self.lag is None and unread

    @property
    def lag_partial(self) -> bool:
        """The total leaves out partitions (lag unknown, or nothing committed), or adds
        carried figures."""
        return any(p.carried for p in self.partitions) or bool(self.lag_left_out())

    @property
    def lag_read_whole(self) -> bool:
        """Every figure was read in this poll (none unknown, none carried): partitions with
        nothing committed are left out of the total the same way every poll."""
        return not any(p.lag_unknown or p.carried for p in self.partitions)

    @property
    def uncommitted(self) -> tuple[GroupPartition, ...]:
        """Its partitions read with no committed offset (Kafka's tools show `-`): how far
        behind they are depends on where a consumer will start, so the total leaves them out.
        None for a group that has no lag at all (`lag_na`)."""
        if self.lag_na:
            return ()
        return tuple(p for p in self.partitions if p.committed_known and p.committed is None)

    def lag_left_out(self) -> dict[str, str]:
        """Each partition whose lag is not in the total ("topic/partition"), and why."""
        out = {f"{p.topic}/{p.partition}": "no committed offset" for p in self.uncommitted}
        for p in self.partitions:
            if not p.committed_known:
                out[f"{p.topic}/{p.partition}"] = "committed offset not read"
            elif p.log_end is None:
                out[f"{p.topic}/{p.partition}"] = "log end not read"
        return out

    @property
    def lag_note(self) -> str:
        """Why the total leaves out partitions that were read: none of them committed."""
        n, of = len(self.uncommitted), len(self.partitions)
        if not n:
            return ""
        return f"lag leaves out {n} of {of} partitions: no committed offset"

    @property
    def oldest(self) -> float | None:
        """When the oldest carried figure of this group was read (None: all from this poll)."""
        times = [p.as_of for p in self.partitions if p.as_of is not None]
        if self.as_of is not None:
            times.append(self.as_of)
        return min(times) if times else None


# -- rates (kconsole.rates works them out; see docs/rates.md) -----------------------------------
@dataclass(frozen=True)
class Rate:
    """How fast one counter (log-end offsets, a log's size, committed offsets) moved over the
    window that ends at `as_of`. `per_s` None: unknown, `reason` says why and `as_of` when its
    last figure was read (the age is measured from it), never 0."""

    per_s: float | None
    span_s: float = 0.0  # seconds the figure covers (the window once `full`)
    window_s: float = 30.0
    as_of: float | None = None  # when the newest reading in it was taken
    reason: str = ""  # unknown: why; known: what a reader should know (measured since ...)
    partial: bool = False  # a sum that leaves out counters not read (at least per_s)

    @property
    def known(self) -> bool:
        return self.per_s is not None

    @property
    def full(self) -> bool:
        """Whether it covers its whole window (a shorter span is shown as such)."""
        return self.per_s is not None and self.span_s >= self.window_s - 1e-6


UNREAD_RATE = Rate(None, reason="not read yet")


TPs = list[tuple[str, int]]


class _Leaders(NamedTuple):
    by_topic: dict[str, TPs]  # every partition, by topic
    by_leader: dict[int, TPs]  # the online ones, by leader
    serving: dict[tuple[str, int], int]  # each partition's leader, -1 when offline


_LEADERS: list[tuple[object, frozenset[int], _Leaders]] = []


def _leaders(partitions: tuple[Partition, ...], down: frozenset[int]) -> _Leaders:
    """The partitions by topic and by leader, and who serves each (offline as
    ClusterSnapshot.is_offline says: no leader, or a leader down): the very same for the same
    partitions tuple and brokers down, so the rates' sums and the groups poll (every poll, on
    10,000 partitions) only use them."""
    last = _LEADERS[0] if _LEADERS else None
    if last is not None and last[0] is partitions and last[1] == down:
        return last[2]
    out = _Leaders({}, {}, {})
    for p in partitions:
        tp = (p.topic, p.partition)
        out.by_topic.setdefault(p.topic, []).append(tp)
        if p.leader >= 0 and p.leader not in down:
            out.by_leader.setdefault(p.leader, []).append(tp)
            out.serving[tp] = p.leader
        else:
            out.serving[tp] = -1
    _LEADERS[:] = [(partitions, down, out)]
    return out


def sum_rates(rates: Sequence[Rate]) -> Rate:
    """The sum of `rates`: known when any is; `partial` (at least that much) when some are not,
    with how many and why. An empty sequence is an exact 0 (nothing to add up)."""
    if not rates:
        return Rate(0.0, span_s=0.0, window_s=0.0)
    known = [r for r in rates if r.per_s is not None]
    unknown = [r for r in rates if r.per_s is None]
    window = max(r.window_s for r in rates)
    as_of = max((r.as_of for r in rates if r.as_of is not None), default=None)
    if not known:
        first = unknown[0]
        reason = first.reason if len(unknown) == 1 else f"{len(unknown)} unknown: {first.reason}"
        return Rate(None, window_s=window, as_of=as_of, reason=reason)
    span = min(r.span_s for r in known)
    total = sum(r.per_s for r in known if r.per_s is not None)
    if unknown:
        why = f"{len(unknown)} of {len(rates)} not known: {unknown[0].reason}"
        return Rate(total, span, window, as_of, why, partial=True)
    partial = any(r.partial for r in known)
    reason = next((r.reason for r in known if r.partial), "")
    return Rate(total, span, window, as_of, reason, partial=partial)


class LagStatus(StrEnum):
    """A group's or a partition's consumption judged over the window, as Burrow does."""

    OK = "OK"
    WARNING = "WARNING"  # lag grew over the window while offsets were committed
    STALLED = "STALLED"  # members, but the committed offset did not move while behind
    STOPPED = "STOPPED"  # no member consumes, and it is behind
    UNKNOWN = "UNKNOWN"  # offsets not read this time
    PENDING = "PENDING"  # not a whole window of readings yet

    @property
    def severity(self) -> int:
        return _LAG_SEVERITY[self]


_LAG_SEVERITY = {
    LagStatus.OK: 0,
    LagStatus.PENDING: 1,
    LagStatus.UNKNOWN: 2,
    LagStatus.WARNING: 3,
    LagStatus.STALLED: 4,
    LagStatus.STOPPED: 5,
}


@dataclass(frozen=True)
class PartitionRate:
    """One partition's records in (log-end offsets' rate) and bytes in (its leader's log
    size's rate, where the cluster gives sizes)."""

    topic: str
    partition: int
    records: Rate = UNREAD_RATE
    bytes: Rate = UNREAD_RATE


@dataclass(frozen=True)
class GroupPartitionRate:
    """One partition of a group: its consumption (committed offsets' rate) against its
    production, judged."""

    topic: str
    partition: int
    status: LagStatus
    reason: str
    consumed: Rate = UNREAD_RATE
    produced: Rate = UNREAD_RATE


@dataclass(frozen=True)
class GroupRate:
    """A group's consumption judged over the window: the worst of its partitions' status (and
    that one's reason), its total lag's trend and, while it drains, the time to catch up."""

    group_id: str
    status: LagStatus
    reason: str
    trend: str = ""  # "growing", "draining", "steady"; "": not known
    catch_up_s: float | None = None  # draining: lag / how fast it falls
    lag_per_s: float | None = None  # the total lag's slope over the window
    consumed: Rate = UNREAD_RATE
    produced: Rate = UNREAD_RATE
    partitions: tuple[GroupPartitionRate, ...] = ()
    history: tuple[tuple[float, int], ...] = ()  # (when, total lag), oldest first


class RateSource(Protocol):
    """Works a partition's figures out of the readings when asked (kconsole.rates): on 10,000
    partitions, building every one at each reading cost more than the reading itself."""

    def partition_keys(self) -> list[tuple[str, int]]: ...
    def has(self, tp: tuple[str, int]) -> bool: ...
    def records(self, tp: tuple[str, int]) -> Rate: ...
    def bytes(self, tp: tuple[str, int]) -> Rate: ...
    def totals(self, groups: dict[Any, list[tuple[str, int]]], sizes: bool) -> dict[Any, Rate]: ...


@dataclass(frozen=True)
class Rates:
    """Every rate the observer measured, as of its last reading of the offsets. The partitions'
    figures come from `source` when it is there (worked out when asked), else from
    `partitions` (a snapshot read back from JSON)."""

    window_s: float
    taken_at: float
    partitions: tuple[PartitionRate, ...] = ()
    groups: tuple[GroupRate, ...] = ()
    bytes_note: str = ""  # why bytes/s are not shown at all (the cluster gives no sizes)
    # Records landed in every partition between the last two readings, a second: the whole
    # cluster's throughput now, not over the window (a drill's dip). None: no two readings.
    recent: Rate | None = None
    source: RateSource | None = field(default=None, compare=False, repr=False)
    # The sums of the last partitions tuple asked about, kept by the readings' source: every
    # Rates of the same readings shares them, and the observer hands on the same partitions
    # tuple while none changes, so a snapshot every second costs no 10,000 adds.
    _sums: list[Any] = field(default_factory=list, compare=False, repr=False)

    def materialized(self) -> Rates:
        """These rates with every partition's figures in `partitions` (and no source)."""
        if self.source is None:
            return self
        src = self.source
        parts = tuple(
            PartitionRate(t, p, src.records((t, p)), self.bytes(t, p))
            for t, p in src.partition_keys()
        )
        return replace(self, partitions=parts, source=None)

    @cached_property
    def _by_key(self) -> dict[tuple[str, int], PartitionRate]:
        return {(r.topic, r.partition): r for r in self.partitions}

    @cached_property
    def _groups(self) -> dict[str, GroupRate]:
        return {g.group_id: g for g in self.groups}

    def partition(self, topic: str, partition: int) -> PartitionRate | None:
        if self.source is not None:
            tp = (topic, partition)
            if not self.source.has(tp):
                return None
            return PartitionRate(topic, partition, self.source.records(tp), self.bytes(*tp))
        return self._by_key.get((topic, partition))

    def group(self, group_id: str) -> GroupRate | None:
        return self._groups.get(group_id)

    def records(self, topic: str, partition: int) -> Rate:
        if self.source is not None:
            return self.source.records((topic, partition))
        r = self._by_key.get((topic, partition))
        return r.records if r is not None else UNREAD_RATE

    def bytes(self, topic: str, partition: int) -> Rate:
        if self.source is not None:
            if self.bytes_note:
                return Rate(None, reason=self.bytes_note)
            return self.source.bytes((topic, partition))
        r = self._by_key.get((topic, partition))
        return r.bytes if r is not None else UNREAD_RATE

    def totals(
        self, groups: dict[Any, list[tuple[str, int]]], sizes: bool = False
    ) -> dict[Any, Rate]:
        """The sum of the records (`sizes`: bytes) a second of each group of partitions."""
        if self.source is not None:
            if sizes and self.bytes_note:
                return {k: Rate(None, reason=self.bytes_note) for k in groups}
            return self.source.totals(groups, sizes)
        pick = self.bytes if sizes else self.records
        return {k: sum_rates([pick(*tp) for tp in tps]) for k, tps in groups.items()}


@dataclass(frozen=True)
class SourceHealth:
    """How fresh one source's data is: a failed source keeps its last data, marked stale."""

    name: SourceName
    ok: bool
    updated_at: float | None = None  # last success (epoch seconds)
    error: str = ""  # when ok: what part of the data could not be read (degraded), else why none
    # The cluster refused kconsole's login or TLS handshake (`error` says where and why):
    # waiting does not mend it.
    refused: bool = False

    def age(self, now: float) -> float | None:
        return None if self.updated_at is None else max(0.0, now - self.updated_at)

    @property
    def degraded(self) -> bool:
        """Answering, but part of its data could not be read (said in `error`)."""
        return self.ok and bool(self.error)


@dataclass(frozen=True)
class BrokerConfig:
    """The broker settings that predictions (drill durations, blast radius) come from."""

    session_timeout_ms: int = 6000
    replica_lag_time_max_ms: int = 10000
    leader_imbalance_check_s: int = 30
    auto_leader_rebalance: bool = True
    read_from: int | None = None  # the broker whose configuration this is (None: assumed)
    # KRaft only (None on ZooKeeper mode): fencing and the metadata quorum's timers.
    heartbeat_interval_ms: int | None = None
    election_timeout_ms: int | None = None
    fetch_timeout_ms: int | None = None

    @property
    def kraft(self) -> bool:
        """Read from a KRaft node (the quorum timers are known)."""
        return self.election_timeout_ms is not None

    @classmethod
    def from_configs(cls, configs: dict[str, str], broker_id: int | None = None) -> BrokerConfig:
        """From a DescribeConfigs answer; Kafka's own defaults for what it leaves out."""

        def num(key: str, default: int) -> int:
            try:
                return int(configs.get(key, default))
            except (TypeError, ValueError):
                return default

        kraft = bool(str(configs.get("process.roles", "") or "").strip())
        session = (
            num("broker.session.timeout.ms", 9000)
            if kraft
            else num("zookeeper.session.timeout.ms", 18000)
        )
        return cls(
            session,
            num("replica.lag.time.max.ms", 30000),
            num("leader.imbalance.check.interval.seconds", 300),
            str(configs.get("auto.leader.rebalance.enable", "true")).lower() == "true",
            broker_id,
            num("broker.heartbeat.interval.ms", 2000) if kraft else None,
            num("controller.quorum.election.timeout.ms", 1000) if kraft else None,
            num("controller.quorum.fetch.timeout.ms", 2000) if kraft else None,
        )


@dataclass(frozen=True)
class PartitionChanges:
    """Which partitions of a snapshot differ from those of an earlier snapshot's, whose
    `partitions_gen` is `base`: their positions, ascending. Both list the same partitions in
    the same order; the others are the very same objects."""

    base: int
    positions: tuple[int, ...]


Pair = tuple[Partition, Partition]
# Dropped by to_dict: they describe how this process built a snapshot, not the cluster.
_IN_PROCESS_ONLY = ("partitions_gen", "partition_changes")


@dataclass(frozen=True)
class ClusterSnapshot:
    """One consistent view of the cluster at `taken_at`."""

    taken_at: float
    cluster_id: str | None = None
    brokers: tuple[Broker, ...] = ()
    controller: Controller = field(default_factory=lambda: Controller(None))
    partitions: tuple[Partition, ...] = ()
    topics: tuple[Topic, ...] = ()
    groups: tuple[Group, ...] = ()
    sources: tuple[SourceHealth, ...] = ()
    broker_config: BrokerConfig | None = None  # read from a live broker (None: not yet)
    mode: ClusterMode = ClusterMode.ZOOKEEPER
    quorum: Quorum | None = None  # KRaft: the metadata quorum (None: ZooKeeper, or not read)
    # KRaft: every quorum voter's health, by id (combined nodes too; empty: ZooKeeper mode)
    controllers: tuple[ControllerStatus, ...] = ()
    features: Features | None = None  # KRaft: metadata.version / kraft.version
    seq: int = 0  # publication order: a consumer never replaces a snapshot with an older one
    # Names this `partitions` tuple, unique in the process (0: not from a SnapshotBuilder);
    # handed on with the tuple when no partition changed.
    partitions_gen: int = 0
    partition_changes: PartitionChanges | None = None  # how `partitions` differs from before
    # While the cluster cannot be reached and it is the local cluster, not running: how to
    # start it ("" otherwise). Last: positional construction keeps its order.
    start_hint: str = ""
    # The local cluster's network faults in force (kconsole.cluster.net), by node id: what is
    # cut and since when, in words ("partition from zookeeper since 13:34:06 (4 rules)").
    net_faults: tuple[tuple[int, str], ...] = ()
    # ZooKeeper mode, while a network fault is in force and a minute after its heal: (when,
    # broker id) of each controller resignation the brokers' logs show, such as a zombie
    # controller's once it reaches ZooKeeper again and learns of its successor.
    resignations: tuple[tuple[float, int], ...] = ()
    # How fast it moves: records and bytes in per partition, each group's consumption judged
    # (None: not measured, e.g. `describe` without --sample).
    rates: Rates | None = None

    def net_fault(self, node_id: int) -> str | None:
        """The network fault in force on `node_id`, in words (None: none)."""
        return next((what for nid, what in self.net_faults if nid == node_id), None)

    # -- lookups ------------------------------------------------------------------------
    # Indexes are built on first use and kept with the (immutable) snapshot: a flag per
    # partition looks up its topic and leader, and on 10,000 partitions linear scans made
    # every refresh cost seconds (bench/results/scale.md).
    @cached_property
    def _brokers_by_id(self) -> dict[int, Broker]:
        return {b.id: b for b in self.brokers}

    @cached_property
    def _topics_by_name(self) -> dict[str, Topic]:
        return {t.name: t for t in self.topics}

    @cached_property
    def _partitions_by_key(self) -> dict[tuple[str, int], Partition]:
        return {(p.topic, p.partition): p for p in self.partitions}

    @cached_property
    def _broker_counts(self) -> dict[int, tuple[int, int, int]]:
        """Per broker: partitions led (online), replicas hosted, under-replicated hosted."""
        led: dict[int, int] = {}
        hosted: dict[int, int] = {}
        urp: dict[int, int] = {}
        down = self._down
        for p in self.partitions:  # every partition: is_offline and under_replicated inlined
            leader = p.leader
            if leader >= 0 and leader not in down:
                led[leader] = led.get(leader, 0) + 1
            under = len(p.isr) < len(p.replicas) - len(p.adding)
            for bid in p.replicas:
                hosted[bid] = hosted.get(bid, 0) + 1
                if under:
                    urp[bid] = urp.get(bid, 0) + 1
        return {b: (led.get(b, 0), hosted.get(b, 0), urp.get(b, 0)) for b in {*led, *hosted}}

    def changed_partitions(self, before: ClusterSnapshot) -> list[Pair] | None:
        """(before's, this one's) for every partition that differs, when both snapshots list
        the same partitions in the same order; None when they do not (a topic came or went).

        The observer keeps an unchanged partition the same object and says which ones it
        built again (`partition_changes`): when this snapshot was built right after `before`
        that is all there is to look at, and a slice of a failover's burst on 10,000
        partitions costs its own changes. Otherwise it is one pass of identity checks."""
        old, new = before.partitions, self.partitions
        if old is new:
            return []
        if len(old) != len(new):
            return None
        ch = self.partition_changes
        if ch is not None and before.partitions_gen and ch.base == before.partitions_gen:
            return [(old[i], new[i]) for i in ch.positions]
        return aligned_changes(old, new)

    def count_from(self, before: ClusterSnapshot) -> None:
        """Derive the per-broker counts from `before`'s, counting again only the partitions
        that are not the very same objects (the observer hands on an unchanged partition as
        the same object): a failover's snapshot on 10,000 partitions costs its changes, not a
        pass over every partition. Does nothing unless `before` has its counts and the same
        brokers are down (that decides which partitions are offline)."""
        mine = self.__dict__
        if "_broker_counts" in mine or "_broker_counts" not in before.__dict__:
            return
        if self._down != before._down:
            return
        old, new = before.partitions, self.partitions
        if old is not new:
            changed = self.changed_partitions(before)
            if changed is None or len(changed) > len(new) // 3:
                return  # reordered, or so much changed that counting again is as cheap
            counts = {bid: list(c) for bid, c in before._broker_counts.items()}
            for a, b in changed:
                _add_counts(counts, a, before.is_offline(a), -1)
                _add_counts(counts, b, self.is_offline(b), 1)
            mine["_broker_counts"] = {
                bid: (c[0], c[1], c[2]) for bid, c in counts.items() if any(c)
            }
        else:
            mine["_broker_counts"] = before._broker_counts

    @cached_property
    def _down(self) -> frozenset[int]:
        return frozenset(b.id for b in self.brokers if b.state is BrokerState.DOWN)

    @cached_property
    def unsettled_topics(self) -> frozenset[str]:
        """The topics being deleted or created (ZooKeeper mode): their partitions are going or
        coming, not changing."""
        return frozenset(t.name for t in self.topics if not t.live)

    def partitions_of(self, topic: str) -> list[Partition]:
        """The partitions of `topic`, in order."""
        return [p for p in self.partitions if p.topic == topic]

    def broker(self, broker_id: int) -> Broker | None:
        return self._brokers_by_id.get(broker_id)

    def topic(self, name: str) -> Topic | None:
        return self._topics_by_name.get(name)

    def controller_status(self, node_id: int) -> ControllerStatus | None:
        """KRaft: the health of controller `node_id` (None: not a voter kconsole knows)."""
        return next((c for c in self.controllers if c.id == node_id), None)

    def source(self, name: SourceName) -> SourceHealth | None:
        return next((s for s in self.sources if s.name == name), None)

    @property
    def refused(self) -> str:
        """Why the cluster refused kconsole's login or TLS handshake, as the first source it
        refused says it ("" when none was refused)."""
        return next((s.error for s in self.sources if s.refused and not s.ok), "")

    @property
    def unreached(self) -> str:
        """Why the cluster cannot be asked at all: every source of its metadata (ZooKeeper,
        the Admin API, the quorum) has failed -- nothing listens, or the login was refused
        (that reason first). "" when one answers, or one has not been tried yet. What is
        shown then is unknown (or the last figures read, with their age), never down."""
        meta = [s for s in self.sources if s.name in METADATA_SOURCES]
        if not meta or any(
            s.ok or (s.updated_at is None and s.error == SOURCE_WAITING) for s in meta
        ):
            return ""
        if self.refused:
            return self.refused
        admin = self.source(SourceName.ADMIN)
        if admin is not None and admin.error:
            return admin.error
        return next((s.error for s in meta if s.error), "no source answered")

    @property
    def never_answered(self) -> bool:
        """No source of the cluster's metadata has answered yet: every figure is unknown."""
        meta = [s for s in self.sources if s.name in METADATA_SOURCES]
        return bool(meta) and all(s.updated_at is None for s in meta)

    @property
    def last_answer(self) -> float | None:
        """When a source of the cluster's metadata last answered (None: never)."""
        times = [
            s.updated_at
            for s in self.sources
            if s.name in METADATA_SOURCES and s.updated_at is not None
        ]
        return max(times) if times else None

    def partition(self, topic: str, partition: int) -> Partition | None:
        return self._partitions_by_key.get((topic, partition))

    # -- derived flags ------------------------------------------------------------------
    def min_isr(self, topic: str) -> int | None:
        t = self.topic(topic)
        return t.min_isr if t else None

    def is_offline(self, p: Partition) -> bool:
        """No leader, or a leader that is not registered any more.

        When the last broker of a partition stops, nobody is left to update its state in
        ZooKeeper: it still names that broker as leader. Such a partition serves nothing.
        """
        return p.leader < 0 or p.leader in self._down

    def under_min_isr(self, p: Partition) -> bool:
        m = self.min_isr(p.topic)
        return m is not None and not self.is_offline(p) and len(p.isr) < m

    def is_internal(self, topic: str) -> bool:
        t = self.topic(topic)
        return t.internal if t else topic.startswith("__")

    def flags(self, p: Partition) -> list[str]:
        """Health flags of one partition, worst first; a partition of a topic being deleted
        or created has that one flag only (it is going or coming, not unhealthy)."""
        t = self.topic(p.topic)
        if t is not None and not t.live:
            return ["deleting" if t.deleting else "creating"]
        out = []
        offline = self.is_offline(p)
        if offline:
            out.append("offline")
        elif t is not None and t.min_isr is not None and len(p.isr) < t.min_isr:
            out.append("under-min-isr")  # under_min_isr(p), with what is known already
        if p.under_replicated:
            out.append("under-replicated")
        if not p.on_preferred_leader:
            out.append("not-preferred")
        if p.reassigning:
            out.append("reassigning")
        return out

    def unhealthy(self, p: Partition) -> bool:
        return bool(self.flags(p))

    def led_by(self, broker_id: int) -> int:
        return self._broker_counts.get(broker_id, (0, 0, 0))[0]

    def hosted_by(self, broker_id: int) -> int:
        return self._broker_counts.get(broker_id, (0, 0, 0))[1]

    def under_replicated_on(self, broker_id: int) -> int:
        return self._broker_counts.get(broker_id, (0, 0, 0))[2]

    # -- rates ----------------------------------------------------------------------------
    @cached_property
    def _rate_sums(self) -> tuple[dict[str, Rate], dict[int, Rate], dict[str, Rate]]:
        """Records/s per topic and per leader, bytes/s per topic (one pass; see rates), kept
        with the rates for this partitions tuple (and these brokers' states)."""
        if self.rates is None:
            return {}, {}, {}
        key = (self.partitions, self._down)
        cache = self.rates._sums
        if cache and cache[0][0] is key[0] and cache[0][1] == key[1]:
            return cache[1]
        sums = self._work_out_rate_sums()
        cache[:] = [key, sums]
        return sums

    def _work_out_rate_sums(self) -> tuple[dict[str, Rate], dict[int, Rate], dict[str, Rate]]:
        assert self.rates is not None
        by_topic, by_leader, _ = _leaders(self.partitions, self._down)
        return (
            self.rates.totals(by_topic),
            self.rates.totals(by_leader),
            self.rates.totals(by_topic, sizes=True),
        )

    def topic_records(self, topic: str) -> Rate | None:
        """Records in per second to `topic` (None: rates not measured)."""
        if self.rates is None:
            return None
        return self._rate_sums[0].get(topic, UNREAD_RATE)

    def topic_bytes(self, topic: str) -> Rate | None:
        if self.rates is None:
            return None
        return self._rate_sums[2].get(topic, UNREAD_RATE)

    def serving_leaders(self) -> dict[tuple[str, int], int]:
        """Each partition's leader, -1 where it is offline (`is_offline`): the same dict for
        every snapshot with the same partitions and brokers down. Read it, never change it."""
        return _leaders(self.partitions, self._down).serving

    def broker_records(self, broker_id: int) -> Rate | None:
        """Records in per second to the partitions `broker_id` leads now (None: not measured;
        an exact 0 when it leads none)."""
        if self.rates is None:
            return None
        return self._rate_sums[1].get(broker_id, sum_rates(()))

    # -- serialisation (recorded fixtures, `kconsole describe --json`) ---------------------
    def to_dict(self) -> dict[str, Any]:
        me = self if self.rates is None else replace(self, rates=self.rates.materialized())
        out = asdict(me)
        if out.get("rates") is not None:
            del out["rates"]["source"]
        for name in _IN_PROCESS_ONLY:
            del out[name]
        # Each group's total as the console shows it, and what it leaves out (from_dict
        # ignores these: they are derived).
        for g, d in zip(self.groups, out["groups"], strict=True):
            d.update(lag=g.lag, lag_partial=g.lag_partial, lag_left_out=g.lag_left_out())
        return out

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClusterSnapshot:
        return _build(cls, data)


def aligned_changes(old: Sequence[Partition], new: Sequence[Partition]) -> list[Pair] | None:
    """(old, new) for every position where the two differ, when both list the same
    partitions in the same order; None when they do not. Mostly identity checks: the
    observer keeps an unchanged partition the same object."""
    if len(old) != len(new):
        return None
    out: list[Pair] = []
    for a, b in zip(old, new, strict=True):
        if a is b:
            continue
        if a.topic != b.topic or a.partition != b.partition:
            return None  # not aligned: a topic came and another went
        if a != b:
            out.append((a, b))
    return out


def _build(cls: type[T], data: Any) -> T:
    """Rebuild nested frozen dataclasses (tuples, enums) from `asdict` output."""
    import typing

    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in fields(cls):  # type: ignore[arg-type]
        if f.name not in data:
            continue
        kwargs[f.name] = _convert(hints[f.name], data[f.name])
    return cls(**kwargs)


def _convert(tp: Any, value: Any) -> Any:
    import types
    import typing

    origin = typing.get_origin(tp)
    if value is None:
        return None
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _convert(args[0], value)
    if origin is tuple:
        (inner, *_rest) = typing.get_args(tp)
        return tuple(_convert(inner, v) for v in value)
    if isinstance(tp, type) and is_dataclass(tp):
        return _build(tp, value)
    if isinstance(tp, type) and issubclass(tp, StrEnum):
        return tp(value)
    return value


def _add_counts(counts: dict[int, list[int]], p: Partition, offline: bool, sign: int) -> None:
    """Add (sign 1) or take away (-1) one partition's part of ClusterSnapshot._broker_counts."""
    if not offline:
        counts.setdefault(p.leader, [0, 0, 0])[0] += sign
    under = p.under_replicated
    for bid in p.replicas:
        c = counts.setdefault(bid, [0, 0, 0])
        c[1] += sign
        if under:
            c[2] += sign
