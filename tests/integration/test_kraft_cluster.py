"""The real local KRaft cluster (Kafka 4.x, 3 dedicated controllers + 3 brokers) shared by the
run (conftest.py's `kraft`): quorum, fencing, status, test-topic, an acks=all round trip. That
down leaves no process is checked by the fixture's teardown."""

from __future__ import annotations

import time
import uuid

from kconsole.cluster.kraft import probes as kraft_probes
from kconsole.cluster.kraft.cluster import KRaftCluster, KRaftUpTimes
from kconsole.cluster.settings import TEST_TOPIC
from kconsole.cluster.values import ProcState


def test_quorum_has_a_leader_among_three_voters(kraft: tuple[KRaftCluster, KRaftUpTimes]) -> None:
    cluster, _ = kraft
    quorum = cluster.quorum()
    assert quorum is not None
    assert quorum.leader_id in (1001, 1002, 1003)
    assert quorum.voter_ids == [1001, 1002, 1003]
    assert quorum.leader_epoch > 0
    assert set(quorum.observer_ids) >= {1, 2, 3}
    # The brokers answer the same quorum (they forward DescribeQuorum to the controllers).
    with kraft_probes.broker_admin(cluster.spec.bootstrap) as admin:
        via_broker = kraft_probes.quorum_from_response(admin.describe_metadata_quorum())
    assert via_broker is not None
    assert via_broker.leader_id == quorum.leader_id
    assert via_broker.voter_ids == quorum.voter_ids


def test_three_unfenced_brokers(kraft: tuple[KRaftCluster, KRaftUpTimes]) -> None:
    cluster, _ = kraft
    assert cluster.broker_fencing() == {1: False, 2: False, 3: False}


def test_status_lists_every_node_running(kraft: tuple[KRaftCluster, KRaftUpTimes]) -> None:
    cluster, _ = kraft
    status = cluster.status()
    names = [n.name for n in status.nodes]
    assert names == [
        "controller-1001",
        "controller-1002",
        "controller-1003",
        "broker-1",
        "broker-2",
        "broker-3",
    ]
    assert all(n.state is ProcState.RUNNING and n.pid for n in status.nodes)
    assert status.quorum is not None


def test_test_topic_four_partitions_rf3_full_isr(kraft: tuple[KRaftCluster, KRaftUpTimes]) -> None:
    cluster, _ = kraft
    with kraft_probes.broker_admin(cluster.spec.bootstrap) as admin:
        parts = kraft_probes.topic_partitions(admin, TEST_TOPIC)
        assert parts is not None
        assert [p.partition for p in parts] == [0, 1, 2, 3]
        assert all(len(p.replicas) == 3 and sorted(p.isr) == [1, 2, 3] for p in parts)
        from kafka.admin import ConfigResource, ConfigResourceType

        res = admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, TEST_TOPIC, None)], config_filter="all"
        )
    assert res["topic"][TEST_TOPIC]["min.insync.replicas"]["value"] == "2"


def test_produce_consume_round_trip_acks_all(kraft: tuple[KRaftCluster, KRaftUpTimes]) -> None:
    from confluent_kafka import Consumer, Producer

    cluster, _ = kraft
    token = uuid.uuid4().hex
    producer = Producer({"bootstrap.servers": cluster.spec.bootstrap, "acks": "all"})
    acked: list[tuple[int, int]] = []

    def on_delivery(err: object, msg: object) -> None:
        assert err is None, err
        acked.append((msg.partition(), msg.offset()))  # type: ignore[attr-defined]

    values = [f"{token}-{i}".encode() for i in range(20)]
    for i, value in enumerate(values):
        producer.produce(TEST_TOPIC, value, partition=i % 4, on_delivery=on_delivery)
    assert producer.flush(30) == 0
    assert len(acked) == len(values)

    consumer = Consumer(
        {
            "bootstrap.servers": cluster.spec.bootstrap,
            "group.id": f"kraft-test-{token}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([TEST_TOPIC])
        seen: set[bytes] = set()
        deadline = time.monotonic() + 60
        while not set(values) <= seen and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                seen.add(msg.value())
    finally:
        consumer.close()
    assert set(values) <= seen
