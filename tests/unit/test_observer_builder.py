"""How the observer merges ZooKeeper, Admin API and backend data into snapshots and events."""

from __future__ import annotations

import dataclasses
from typing import Any

from kconsole.cluster.admin import AdminPartition, AdminState
from kconsole.cluster.procs import ProcState
from kconsole.cluster.zk import ZkState
from kconsole.config import Settings
from kconsole.models import BrokerState, SourceName
from kconsole.observer import ClusterObserver, SnapshotBuilder
from kconsole.timeline import EventKind

REG = {
    i: {"host": "127.0.0.1", "port": 19091 + i, "endpoints": [], "timestamp": "1000"}
    for i in (1, 2, 3)
}


def zk_state(
    controller: int = 1,
    brokers: tuple[int, ...] = (1, 2, 3),
    leader: int = 1,
    isr: tuple[int, ...] = (1, 2, 3),
) -> ZkState:
    return ZkState(
        read_at=0.0,
        controller=controller,
        controller_epoch=4,
        controller_since=50.0,
        brokers={b: REG[b] for b in brokers},
        topics={"t": {"partitions": {"0": [1, 2, 3]}, "adding_replicas": {"0": [3]}}},
        states={("t", 0): {"leader": leader, "isr": list(isr), "leader_epoch": 7}},
    )


def admin_state(controller: int = 2) -> AdminState:
    return AdminState(
        read_at=0.0,
        cluster_id="cid",
        controller=controller,
        nodes={b: ("127.0.0.1", 19091 + b, f"r{b}") for b in (1, 2, 3)},
        topics={"t": (AdminPartition(0, 2, (1, 2, 3), (2, 3)),)},
        min_isr={"t": 2},
    )


def test_zookeeper_is_preferred_and_admin_fills_in() -> None:
    b = SnapshotBuilder(use_zookeeper=True)
    b.zk, b.admin = zk_state(), admin_state()
    b.health[SourceName.ZOOKEEPER].success(1.0)
    b.health[SourceName.ADMIN].success(1.0)
    snap = b.build(100.0)
    p = snap.partitions[0]
    assert (p.leader, p.isr, p.leader_epoch, p.adding) == (1, (1, 2, 3), 7, (3,))
    assert snap.controller.id == 1 and snap.controller.epoch == 4
    assert snap.controller.since == 50.0  # the /controller znode's creation time
    assert snap.cluster_id == "cid" and snap.min_isr("t") == 2
    assert [br.rack for br in snap.brokers] == ["r1", "r2", "r3"]  # racks from DescribeCluster


def test_admin_serves_when_zookeeper_fails() -> None:
    b = SnapshotBuilder(use_zookeeper=True)
    b.zk, b.admin = zk_state(), admin_state()
    b.health[SourceName.ZOOKEEPER].failure("Connection refused")
    b.health[SourceName.ADMIN].success(1.0)
    p = b.build(100.0).partitions[0]
    assert (p.leader, p.isr) == (2, (2, 3))


def test_without_zookeeper() -> None:
    b = SnapshotBuilder(use_zookeeper=False)
    b.admin = admin_state(controller=3)
    b.health[SourceName.ADMIN].success(1.0)
    snap = b.build(100.0)
    assert snap.source(SourceName.ZOOKEEPER) is None
    assert snap.controller.id == 3
    assert [br.id for br in snap.brokers] == [1, 2, 3]


def test_broker_states() -> None:
    """Down keeps its last address; paused comes from the backend; unreachable from probes."""
    b = SnapshotBuilder(use_zookeeper=True)
    b.zk = zk_state()
    b.health[SourceName.ZOOKEEPER].success(1.0)
    b.build(1.0)
    b.zk = zk_state(brokers=(1, 3))
    b.proc_states = {3: ProcState.PAUSED}
    b.reachable = {1: False}
    states = {br.id: (br.state, br.address, br.registered) for br in b.build(2.0).brokers}
    assert states[2] == (BrokerState.DOWN, "127.0.0.1:19093", False)
    assert states[3][0] is BrokerState.PAUSED and states[3][2] is True
    assert states[1][0] is BrokerState.UNREACHABLE
    b.zk = zk_state(brokers=(1,))  # broker 3's session expired while it was paused
    paused = next(br for br in b.build(3.0).brokers if br.id == 3)
    assert paused.state is BrokerState.PAUSED and not paused.registered


def test_previous_controller_is_remembered() -> None:
    b = SnapshotBuilder(use_zookeeper=True)
    b.zk = zk_state(controller=1)
    b.health[SourceName.ZOOKEEPER].success(1.0)
    b.build(1.0)
    b.zk = zk_state(controller=2)
    c = b.build(2.0).controller
    assert (c.id, c.previous) == (2, 1)


def test_no_events_until_zookeeper_has_answered() -> None:
    """An Admin poll that lands first (with a stale controller) must not produce a
    'controller changed' event when ZooKeeper's first read arrives."""
    obs = ClusterObserver(Settings())
    obs.builder.admin = admin_state(controller=2)
    obs.builder.health[SourceName.ADMIN].success(1.0)
    obs._publish(publish=False)
    obs._zk_changed(zk_state(controller=1), "")
    assert list(obs.events) == []
    obs._zk_changed(zk_state(controller=3, leader=2, isr=(2, 3)), "")
    kinds = [e.kind for e in obs.events]
    assert EventKind.CONTROLLER_CHANGED in kinds
    assert EventKind.LEADER_CHANGED in kinds and EventKind.ISR_SHRANK in kinds


def test_kafka_python_config_translates_security_settings() -> None:
    """Committed offsets are read with kafka-python (librdkafka's admin OffsetFetch can crash
    the process when a coordinator moves): the -X settings must reach it."""
    from kconsole.cluster.admin import kafka_python_config

    conf = kafka_python_config(
        {
            "bootstrap.servers": "b1:9093,b2:9093",
            "security.protocol": "sasl_ssl",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "ops",
            "sasl.password": "secret",
            "ssl.ca.location": "/etc/kafka/ca.pem",
            "logger": object(),  # librdkafka-only settings are left out
        },
        5.0,
    )
    assert conf == {
        "request_timeout_ms": 5000,
        "bootstrap_servers": "b1:9093,b2:9093",
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "ops",
        "sasl_plain_password": "secret",
        "ssl_cafile": "/etc/kafka/ca.pem",
        "client_id": "kconsole-groups",
    }


def test_snapshots_reach_on_update_in_the_order_they_were_built() -> None:
    """Four source threads publishing at once: every snapshot arrives, in `seq` order, even
    when handing one on is slow (the bug: a slow poll's older snapshot landing last)."""
    import threading
    import time

    obs = ClusterObserver(Settings())
    obs.builder.admin = admin_state(controller=1)
    obs.builder.health[SourceName.ADMIN].success(1.0)
    seen: list[int] = []

    def on_update(snap: Any, events: Any) -> None:
        if snap.seq % 3 == 0:
            time.sleep(0.002)  # a slow hand-off: the next builder must wait its turn
        seen.append(snap.seq)

    obs._on_update = on_update
    threads = [
        threading.Thread(target=lambda: [obs._publish() for _ in range(50)]) for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 200 and seen == sorted(seen) and len(set(seen)) == 200


def test_event_log_is_copied_under_its_lock() -> None:
    obs = ClusterObserver(Settings())
    obs._zk_changed(zk_state(controller=1), "")
    obs._zk_changed(zk_state(controller=2), "")
    events = obs.events_since(0.0)
    assert events and all(e.ts >= 0.0 for e in events)
    assert obs.events_since(float("inf")) == []


def test_broker_config_is_read_from_the_cluster_and_says_so() -> None:
    from kconsole.models import BrokerConfig

    zk_mode = BrokerConfig.from_configs(
        {
            "zookeeper.session.timeout.ms": "6000",
            "replica.lag.time.max.ms": "10000",
            "leader.imbalance.check.interval.seconds": "30",
        },
        2,
    )
    assert (zk_mode.session_timeout_ms, zk_mode.leader_imbalance_check_s, zk_mode.read_from) == (
        6000,
        30,
        2,
    )
    kraft = BrokerConfig.from_configs(
        {"process.roles": "broker", "broker.session.timeout.ms": "4500"}, 1
    )
    assert kraft.session_timeout_ms == 4500 and kraft.replica_lag_time_max_ms == 30000


def two_partitions(leader0: int = 1, leader1: int = 2) -> ZkState:
    return dataclasses.replace(
        zk_state(),
        topics={"t": {"partitions": {"0": [1, 2, 3], "1": [2, 3, 1]}}},
        states={
            ("t", 0): {"leader": leader0, "isr": [1, 2, 3]},
            ("t", 1): {"leader": leader1, "isr": [1, 2, 3]},
        },
    )


def test_unchanged_partitions_are_handed_on_as_they_were() -> None:
    """Most builds (an Admin or group poll) change no partition: the snapshot carries the same
    tuple, and a changed one keeps every unchanged partition the same object, so consumers
    (diff, the tables) find the change with identity checks."""
    b = SnapshotBuilder(use_zookeeper=True)
    b.zk, b.admin = two_partitions(), admin_state()
    b.health[SourceName.ZOOKEEPER].success(1.0)
    first = b.build(1.0)
    b.admin = admin_state(controller=3)  # an Admin poll: ZooKeeper's data did not change
    again = b.build(2.0)
    assert again.partitions is first.partitions
    b.zk = two_partitions(leader1=3)  # a watch fired: partition 1 has a new leader
    moved = b.build(3.0)
    assert moved.partitions is not first.partitions
    assert moved.partitions[0] is first.partitions[0]
    assert moved.partitions[1].leader == 3 and first.partitions[1].leader == 2
    b.zk = two_partitions(leader1=3)  # a new read with the same content
    assert b.build(4.0).partitions is moved.partitions
    b.health[SourceName.ZOOKEEPER].failure("gone")  # now the Admin API's view
    from_admin = b.build(5.0)
    assert [(p.partition, p.leader) for p in from_admin.partitions] == [(0, 2)]
