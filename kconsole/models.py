"""Immutable snapshots of a cluster: what every pane, `kconsole describe` and the drills read.

Everything here is plain data built by the sources (ZooKeeper watches, Admin API polls); the
derived flags (under-replicated, offline, under min ISR, not on the preferred leader) are
computed from it, never stored twice.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from enum import StrEnum
from typing import Any, TypeVar

T = TypeVar("T")


class BrokerState(StrEnum):
    UP = "up"  # registered in ZooKeeper (or in the metadata) and reachable
    DOWN = "down"  # known, but not registered any more
    UNREACHABLE = "unreachable"  # registered, but its port does not answer
    PAUSED = "paused"  # the backend says its process is frozen (SIGSTOP / docker pause)


class SourceName(StrEnum):
    ZOOKEEPER = "zookeeper"
    ADMIN = "admin"
    GROUPS = "groups"


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
    since: float | None = None  # when kconsole first saw this controller (epoch seconds)
    previous: int | None = None


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

    @property
    def key(self) -> str:
        return f"{self.topic}/{self.partition}"

    @property
    def offline(self) -> bool:
        return self.leader < 0

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

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


@dataclass(frozen=True)
class GroupPartition:
    topic: str
    partition: int
    committed: int | None  # None: nothing committed
    log_end: int | None
    owner: str | None = None  # member client id / host owning it

    @property
    def lag(self) -> int | None:
        if self.log_end is None:
            return None
        return max(0, self.log_end - (self.committed or 0)) if self.committed is not None else None


@dataclass(frozen=True)
class Group:
    group_id: str
    state: str
    members: int
    assignor: str = ""
    coordinator: int | None = None
    partitions: tuple[GroupPartition, ...] = ()

    @property
    def lag(self) -> int | None:
        lags = [p.lag for p in self.partitions if p.lag is not None]
        return sum(lags) if lags else None


@dataclass(frozen=True)
class SourceHealth:
    """How fresh one source's data is: a failed source keeps its last data, marked stale."""

    name: SourceName
    ok: bool
    updated_at: float | None = None  # last success (epoch seconds)
    error: str = ""

    def age(self, now: float) -> float | None:
        return None if self.updated_at is None else max(0.0, now - self.updated_at)


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

    # -- lookups ------------------------------------------------------------------------
    def broker(self, broker_id: int) -> Broker | None:
        return next((b for b in self.brokers if b.id == broker_id), None)

    def topic(self, name: str) -> Topic | None:
        return next((t for t in self.topics if t.name == name), None)

    def source(self, name: SourceName) -> SourceHealth | None:
        return next((s for s in self.sources if s.name == name), None)

    def partition(self, topic: str, partition: int) -> Partition | None:
        return next(
            (p for p in self.partitions if p.topic == topic and p.partition == partition), None
        )

    # -- derived flags ------------------------------------------------------------------
    def min_isr(self, topic: str) -> int | None:
        t = self.topic(topic)
        return t.min_isr if t else None

    def is_offline(self, p: Partition) -> bool:
        """No leader, or a leader that is not registered any more.

        When the last broker of a partition stops, nobody is left to update its state in
        ZooKeeper: it still names that broker as leader. Such a partition serves nothing.
        """
        if p.offline:
            return True
        b = self.broker(p.leader)
        return b is not None and b.state is BrokerState.DOWN

    def under_min_isr(self, p: Partition) -> bool:
        m = self.min_isr(p.topic)
        return m is not None and not self.is_offline(p) and len(p.isr) < m

    def is_internal(self, topic: str) -> bool:
        t = self.topic(topic)
        return t.internal if t else topic.startswith("__")

    def flags(self, p: Partition) -> list[str]:
        """Health flags of one partition, worst first."""
        out = []
        if self.is_offline(p):
            out.append("offline")
        if self.under_min_isr(p):
            out.append("under-min-isr")
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
        return sum(1 for p in self.partitions if p.leader == broker_id and not self.is_offline(p))

    def hosted_by(self, broker_id: int) -> int:
        return sum(1 for p in self.partitions if broker_id in p.replicas)

    def under_replicated_on(self, broker_id: int) -> int:
        return sum(1 for p in self.partitions if broker_id in p.replicas and p.under_replicated)

    # -- serialisation (recorded fixtures, `kconsole describe --json`) ---------------------
    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClusterSnapshot:
        return _build(cls, data)


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
