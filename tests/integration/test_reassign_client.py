"""ReassignClient against the real 3-broker cluster: a throttled move that completes, a move
held back by a 1 byte/s throttle and cancelled, a preferred election that is not needed, and
log sizes from DescribeLogDirs. Each test makes its own replication-2 topics and deletes them."""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kconsole.cluster.local.cluster import LocalCluster
from kconsole.cluster.reassign.client import (
    THROTTLE_RATE_KEYS,
    THROTTLE_REPLICA_KEYS,
    Ongoing,
    ReassignClient,
    ReassignError,
    throttle_plan,
)
from kconsole.config import Settings
from tests.integration.jobs_support import settings_for
from tests.waiting import wait_until


def _admin(cluster: LocalCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.spec.bootstrap})


@contextmanager
def rf2_topic(cluster: LocalCluster, prefix: str) -> Iterator[str]:
    """A fresh topic with 2 partitions and replication factor 2 (so a replica can move to the
    third broker), each partition led by its preferred replica; deleted afterwards."""
    admin = _admin(cluster)
    name = f"{prefix}-{secrets.token_hex(3)}"
    try:
        admin.create_topics([NewTopic(name, 2, replication_factor=2)])[name].result(timeout=30)
        # Every broker must know it before any metadata is read: each AdminClient below may
        # ask another broker, and one the controller has not told yet says UNKNOWN_TOPIC.
        cluster.wait_metadata_everywhere(name, time.monotonic() + 30)

        def led() -> bool:
            parts = _partitions(cluster, name)
            return len(parts) == 2 and all(p.leader == p.replicas[0] for p in parts.values())

        wait_until(led, 30, f"preferred leaders for {name}")
        yield name
    finally:
        admin.delete_topics([name], operation_timeout=30)[name].result(timeout=40)


def _partitions(cluster: LocalCluster, topic: str) -> dict:
    md = _admin(cluster).list_topics(topic, timeout=5).topics[topic]
    assert md.error is None, md.error
    return md.partitions


def replicas_of(cluster: LocalCluster, topic: str, partition: int) -> tuple[int, ...]:
    return tuple(_partitions(cluster, topic)[partition].replicas)


def fill(cluster: LocalCluster, topic: str, partition: int, total_bytes: int) -> None:
    """Write about `total_bytes` of incompressible records to one partition (acks=all)."""
    p = Producer({"bootstrap.servers": cluster.spec.bootstrap, "acks": "all", "linger.ms": 20})
    errors: list[str] = []
    size = 10_000
    for _ in range(total_bytes // size):
        p.produce(
            topic,
            os.urandom(size),
            partition=partition,
            on_delivery=lambda err, _m: errors.append(str(err)) if err else None,
        )
        p.poll(0)
    assert p.flush(60) == 0, "records left unsent"
    assert not errors, errors[:3]


def moving(client: ReassignClient, topic: str) -> list[Ongoing]:
    return [o for o in client.ongoing() if o.topic == topic]


def test_throttle_plan_matches_kafka_tool() -> None:
    """Sources are current replicas (or, for a partition already moving, its replicas minus
    those being added), destinations the targets not among them; the whole move map counts."""
    plan = throttle_plan(
        [("t", 0, (2, 3)), ("u", 0, (3, 1))],
        {("t", 0): (1, 2), ("u", 0): (1, 3)},
        [Ongoing("t", 5, (1, 2, 4), (4,), (1,))],
    )
    assert plan.brokers == (1, 2, 3, 4)
    assert plan.leader == {"t": "0:1,0:2,5:1,5:2", "u": "0:1,0:3"}
    assert plan.follower == {"t": "0:3,5:4", "u": ""}


def test_unreachable_cluster_is_a_clear_error() -> None:
    """Nothing listening: a ReassignError naming the address, and no IO thread left behind."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    before = {t.ident for t in threading.enumerate()}
    settings = Settings(bootstrap=f"127.0.0.1:{port}", zookeeper="")
    with (
        ReassignClient(settings, 2) as client,
        pytest.raises(ReassignError, match=f"cannot reach the cluster at 127.0.0.1:{port}"),
    ):
        client.cancel()
    wait_until(
        lambda: {t.ident for t in threading.enumerate() if t.is_alive()} <= before,
        10,
        "the admin client's IO thread to stop",
    )


def test_execute_with_throttle_completes_and_throttles_come_off(healthy: LocalCluster) -> None:
    brokers = list(healthy.spec.broker_ids)
    with (
        rf2_topic(healthy, "reassign-exec") as topic,
        ReassignClient(settings_for(healthy), timeout_s=15) as client,
    ):
        current = replicas_of(healthy, topic, 0)
        third = next(b for b in brokers if b not in current)
        target = (current[0], third)
        try:
            result = client.execute([(topic, 0, target)], {(topic, 0): current}, 10_000_000)
            assert result == {(topic, 0): None}

            set_now = client.throttles()
            for b in sorted({*current, third}):
                assert set_now[f"broker:{b}"] == dict.fromkeys(THROTTLE_RATE_KEYS, "10000000")
            leader = ",".join(f"0:{b}" for b in sorted(current))
            assert set_now[f"topic:{topic}"] == {
                THROTTLE_REPLICA_KEYS[0]: leader,
                THROTTLE_REPLICA_KEYS[1]: f"0:{third}",
            }

            wait_until(
                lambda: not moving(client, topic) and replicas_of(healthy, topic, 0) == target,
                90,
                f"{topic}/0 to move to {target}",
                interval=0.5,
            )
        finally:
            client.remove_throttles([topic], brokers)
        # Each broker applies the removal when ZooKeeper notifies it: a read at once may still
        # show a rate (seen on broker 3 with one core busy); throttles_left reads until none.
        assert client.throttles_left([topic]) == []
        left = client.throttles()
        assert f"topic:{topic}" not in left
        assert not [k for k in left if k in {f"broker:{b}" for b in brokers}], left


def test_cancel_returns_the_original_replicas(healthy: LocalCluster) -> None:
    brokers = list(healthy.spec.broker_ids)
    with (
        rf2_topic(healthy, "reassign-cancel") as topic,
        ReassignClient(settings_for(healthy), timeout_s=15) as client,
    ):
        fill(healthy, topic, 0, 3_000_000)
        original = replicas_of(healthy, topic, 0)
        third = next(b for b in brokers if b not in original)
        try:
            result = client.execute(
                [(topic, 0, (original[0], third))], {(topic, 0): original}, throttle_bps=1
            )
            assert result == {(topic, 0): None}
            now = moving(client, topic)
            assert [(o.partition, o.adding) for o in now] == [(0, (third,))], now
            assert set(now[0].replicas) == {*original, third}

            # A partition that is not moving cannot be cancelled, and says why.
            other = client.cancel([(topic, 1)])
            assert (other.errors[(topic, 1)] or "").startswith("NO_REASSIGNMENT_IN_PROGRESS")

            # With its original order known (kconsole started it), the cancel puts it back in
            # that order too; it waits until the controller no longer lists the move.
            out = client.cancel([(topic, 0)], original={(topic, 0): original})
            assert out.errors == {(topic, 0): None}
            assert not moving(client, topic)
            wait_until(
                lambda: replicas_of(healthy, topic, 0) == original,
                90,
                f"{topic}/0 back on {original}",
                interval=0.5,
            )
            # ...and took away the throttle entries of the cancelled partition
            assert any(r.startswith(f"topic:{topic} ") for r in out.throttles_removed), out
            assert f"topic:{topic}" not in client.throttles_left([topic])
        finally:
            client.remove_throttles([topic], brokers)
        assert f"topic:{topic}" not in client.throttles()


def test_preferred_election_not_needed(healthy: LocalCluster) -> None:
    with (
        rf2_topic(healthy, "reassign-elect") as topic,
        ReassignClient(settings_for(healthy), timeout_s=15) as client,
    ):
        results = client.elect("preferred", [(topic, 0), (topic, 1)])
        assert [(r.topic, r.partition, r.outcome) for r in results] == [
            (topic, 0, "not needed"),
            (topic, 1, "not needed"),
        ], results
        assert results[0].reason == "ELECTION_NOT_NEEDED: the preferred replica already leads"


def test_log_sizes_cover_every_replica(healthy: LocalCluster) -> None:
    with (
        rf2_topic(healthy, "reassign-sizes") as topic,
        ReassignClient(settings_for(healthy), timeout_s=15) as client,
    ):
        fill(healthy, topic, 0, 200_000)
        fill(healthy, topic, 1, 200_000)
        replicas = {p: replicas_of(healthy, topic, p) for p in (0, 1)}
        wanted = {(topic, p, b) for p, rs in replicas.items() for b in rs}

        def sizes_in() -> dict:
            sizes = client.log_sizes()
            got = {k: v for k, v in sizes.items() if k[0] == topic}
            return got if set(got) == wanted and all(v > 0 for v in got.values()) else {}

        got = wait_until(sizes_in, 60, f"log sizes of every replica of {topic}", interval=0.5)
        assert client.last_unreachable == []
        assert all(v >= 150_000 for v in got.values()), got
