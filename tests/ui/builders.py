"""Hand-built snapshots of the seed cluster (brokers 1-3 on 127.0.0.1:19092-19094, test-topic
4x RF3, __consumer_offsets 10x RF3, min ISR 2) for the pilot tests: exact, stable numbers and odd
cases. The screenshots use the recordings in tests/fixtures/snapshots instead.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from kconsole.models import (
    Broker,
    BrokerState,
    ClusterSnapshot,
    Controller,
    Group,
    GroupPartition,
    Partition,
    SourceHealth,
    SourceName,
    Topic,
)

T0 = 1763712000.0  # 2025-11-21 08:00:00 UTC
CLUSTER_ID = "Ft2Qc7m1S0mQ0yJx8o3n4A"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "snapshots"

# Kafka's rack-unaware assignment for 3 brokers: leaders rotate, the follower shift moves on
# after every 3 partitions.
_ORDERS = ((2, 3, 1), (3, 1, 2), (1, 2, 3), (2, 1, 3), (3, 2, 1), (1, 3, 2))


def replicas(partition: int, offset: int = 0) -> tuple[int, ...]:
    """The replica list the seed cluster gave `partition`."""
    return _ORDERS[(partition + offset) % len(_ORDERS)]


def brokers(**states: BrokerState) -> tuple[Broker, ...]:
    """Brokers 1-3; `b2=BrokerState.DOWN` changes one's state."""
    return tuple(
        Broker(
            i,
            "127.0.0.1",
            19091 + i,
            state=states.get(f"b{i}", BrokerState.UP),
            registered_at=T0 - 3600 + i,
        )
        for i in (1, 2, 3)
    )


def topics() -> tuple[Topic, ...]:
    """test-topic and __consumer_offsets, both min ISR 2."""
    return (Topic("__consumer_offsets", internal=True, min_isr=2), Topic("test-topic", min_isr=2))


def partitions() -> tuple[Partition, ...]:
    """All partitions healthy, each on its preferred leader."""
    out = [
        Partition("test-topic", p, replicas(p)[0], replicas(p), replicas(p), 0) for p in range(4)
    ]
    out += [
        Partition("__consumer_offsets", p, replicas(p, 4)[0], replicas(p, 4), replicas(p, 4), 0)
        for p in range(10)
    ]
    return tuple(out)


def sources(taken_at: float = T0, **failed: str) -> tuple[SourceHealth, ...]:
    """All three sources; `zookeeper="ConnectionLoss"` marks one failed 12 s ago."""
    ages = {SourceName.ZOOKEEPER: 0.2, SourceName.ADMIN: 0.4, SourceName.GROUPS: 0.9}
    return tuple(
        SourceHealth(name, False, taken_at - 12.0, failed[name.value])
        if name.value in failed
        else SourceHealth(name, True, taken_at - age)
        for name, age in ages.items()
    )


def group(
    group_id: str,
    lags: tuple[int | None, ...],
    *,
    state: str = "Stable",
    members: int = 2,
    assignor: str = "range",
    coordinator: int | None = 2,
    log_end: int = 5000,
) -> Group:
    """A group on test-topic whose partition p lags lags[p] (None: nothing committed)."""
    parts = []
    for p, lag in enumerate(lags):
        owner = f"consumer-{group_id}-{1 + p % max(members, 1)} /127.0.0.1" if members else None
        committed = None if lag is None else log_end + 100 * p - lag
        parts.append(GroupPartition("test-topic", p, committed, log_end + 100 * p, owner))
    return Group(group_id, state, members, assignor, coordinator, tuple(parts))


def healthy(taken_at: float = T0) -> ClusterSnapshot:
    """Three brokers up, controller 1, everything in sync, one caught-up group."""
    return ClusterSnapshot(
        taken_at=taken_at,
        cluster_id=CLUSTER_ID,
        brokers=brokers(),
        controller=Controller(1, epoch=3, since=T0 - 3500),
        partitions=partitions(),
        topics=topics(),
        groups=(group("test-consumer", (0, 0, 0, 0)),),
        sources=sources(taken_at),
    )


def without(p: Partition, broker: int) -> Partition:
    """`p` after `broker` died: out of the ISR, leadership moved to the next ISR member."""
    isr = tuple(r for r in p.isr if r != broker)
    leader = p.leader if p.leader != broker else (isr[0] if isr else -1)
    epoch = (p.leader_epoch or 0) + (1 if leader != p.leader else 0)
    return dataclasses.replace(p, leader=leader, isr=isr or (p.isr[-1:]), leader_epoch=epoch)


def broker_down(taken_at: float = T0 + 30) -> ClusterSnapshot:
    """Broker 1 (the controller) was killed: controller moved to 2, its partitions degraded."""
    snap = healthy(taken_at)
    return dataclasses.replace(
        snap,
        brokers=brokers(b1=BrokerState.DOWN),
        controller=Controller(2, epoch=4, since=taken_at - 6, previous=1),
        partitions=tuple(without(p, 1) for p in snap.partitions),
        sources=sources(taken_at),
    )


def offline_partition(taken_at: float = T0 + 60) -> ClusterSnapshot:
    """Broker 3 is down; single-replica topic 'audit-log' lost its partition on it."""
    snap = healthy(taken_at)
    single = (
        Partition("audit-log", 0, 2, (2,), (2,), 0),
        Partition("audit-log", 1, -1, (3,), (3,), 1),
    )
    return dataclasses.replace(
        snap,
        brokers=brokers(b3=BrokerState.DOWN),
        partitions=tuple(without(p, 3) for p in snap.partitions) + single,
        topics=(*snap.topics, Topic("audit-log", min_isr=1)),
        sources=sources(taken_at),
    )


def no_controller(taken_at: float = T0 + 90) -> ClusterSnapshot:
    """Brokers 1 and 2 down, 3 paused: no broker holds a ZooKeeper session, so no controller."""
    snap = healthy(taken_at)
    parts = tuple(without(without(p, 1), 2) for p in snap.partitions)
    return dataclasses.replace(
        snap,
        brokers=brokers(b1=BrokerState.DOWN, b2=BrokerState.DOWN, b3=BrokerState.PAUSED),
        controller=Controller(None, epoch=5, since=taken_at - 8, previous=3),
        partitions=parts,
        groups=(),
        sources=sources(taken_at),
    )


def zk_unreachable(taken_at: float = T0 + 120) -> ClusterSnapshot:
    """ZooKeeper stopped answering 12 s ago: its data is the last it gave, marked stale."""
    return dataclasses.replace(
        healthy(taken_at),
        sources=sources(taken_at, zookeeper="ConnectionLoss: 127.0.0.1:22181 refused"),
    )


def group_lag(taken_at: float = T0 + 150, scale: float = 1.0) -> ClusterSnapshot:
    """A slow consumer group behind on test-topic, an idle Spark group and a rebalancing one."""
    lags = tuple(int(v * scale) for v in (1240, 385, 0, 97))
    return dataclasses.replace(
        healthy(taken_at),
        groups=(
            group("orders-verifier", lags),
            group("console-consumer-48213", (12, 3, 0, 0), state="PreparingRebalance", members=1),
            group(
                "spark-kafka-source-2b7e4c1a-driver-0",
                (None, None, None, None),
                state="Empty",
                members=0,
                assignor="",
                coordinator=3,
            ),
            group("test-consumer", (0, 0, 0, 0)),
        ),
    )
