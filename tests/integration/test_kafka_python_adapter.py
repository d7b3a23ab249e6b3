"""Every function of kconsole.cluster.security.kafka_python (kafka-python's private APIs) against
the real cluster, with answers checked against what Kafka itself says: an upgrade of kafka-python
that changes one of them fails here, not on a user's screen."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.errors import KafkaError

from kconsole.cluster.local.cluster import LocalCluster
from kconsole.cluster.security import kafka_python
from kconsole.cluster.security.clients import kafka_python_config
from tests.waiting import wait_until

pytestmark = pytest.mark.integration


def _conf(cluster: LocalCluster, client_id: str) -> dict[str, Any]:
    conf = kafka_python_config({"bootstrap.servers": cluster.spec.bootstrap}, 10.0)
    conf["client_id"] = client_id
    return conf


def _io_threads(client_id: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"kafka-io-{client_id}"]


@pytest.fixture
def admin(healthy: LocalCluster) -> Iterator[Any]:
    client = kafka_python.admin_client(_conf(healthy, "kconsole-adapter-test"))
    try:
        yield client
    finally:
        client.close()


@contextmanager
def topic(cluster: LocalCluster, partitions: int = 2) -> Iterator[str]:
    """A fresh topic (replication 3) led by its preferred replicas; deleted afterwards."""
    admin = AdminClient({"bootstrap.servers": cluster.spec.bootstrap})
    name = f"adapter-{secrets.token_hex(3)}"
    admin.create_topics([NewTopic(name, partitions, 3)])[name].result(timeout=30)
    try:
        cluster.wait_metadata_everywhere(name, time.monotonic() + 30)

        def led() -> bool:
            parts = admin.list_topics(name, timeout=5).topics[name].partitions
            return len(parts) == partitions and all(
                p.leader == p.replicas[0] for p in parts.values()
            )

        wait_until(led, 30, f"preferred leaders for {name}")
        yield name
    finally:
        admin.delete_topics([name], operation_timeout=30)[name].result(timeout=40)


def _partitions(cluster: LocalCluster, name: str) -> dict[int, Any]:
    md = AdminClient({"bootstrap.servers": cluster.spec.bootstrap}).list_topics(name, timeout=10)
    return dict(md.topics[name].partitions)


def _java_hash(text: str) -> int:
    """Java's String.hashCode (ASCII text)."""
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _coordinator_by_kafka(cluster: LocalCluster, group: str) -> int:
    """The group's coordinator as the broker computes it: the leader of __consumer_offsets
    partition Utils.abs(group.hashCode) % its partition count."""
    parts = _partitions(cluster, "__consumer_offsets")
    h = _java_hash(group)
    index = 0 if h == -(1 << 31) else abs(h)
    return int(parts[index % len(parts)].leader)


def _group_with_offsets(cluster: LocalCluster, name: str, group: str) -> None:
    consumer = Consumer({"bootstrap.servers": cluster.spec.bootstrap, "group.id": group})
    try:
        consumer.commit(offsets=[TopicPartition(name, 0, 1)], asynchronous=False)
    finally:
        consumer.close()


class TestAdminClient:
    def test_a_client_bootstraps_answers_and_closes_its_io_thread(
        self, healthy: LocalCluster
    ) -> None:
        """admin_client bootstraps; close() stops its IO thread."""
        cid = f"kconsole-adapter-{secrets.token_hex(3)}"
        client = kafka_python.admin_client(_conf(healthy, cid))
        try:
            brokers = {int(b["broker_id"]) for b in client.describe_cluster()["brokers"]}
            assert brokers == set(healthy.spec.broker_ids)
            assert len(_io_threads(cid)) == 1
        finally:
            client.close()
        assert _io_threads(cid) == []

    def test_a_failed_bootstrap_leaves_no_io_thread(self, healthy: LocalCluster) -> None:
        """Nothing listens: admin_client raises, and stops the IO thread __init__ started."""
        cid = f"kconsole-adapter-{secrets.token_hex(3)}"
        conf = _conf(healthy, cid)
        conf["bootstrap_servers"] = "127.0.0.1:1"
        conf["bootstrap_timeout_ms"] = 1500
        with pytest.raises(KafkaError):  # 3.0.12: KafkaTimeoutError, "Unable to bootstrap"
            kafka_python.admin_client(conf)
        assert _io_threads(cid) == []


class TestGroupCoordinators:
    def test_coordinators_are_the_offsets_partition_leaders(
        self, healthy: LocalCluster, admin: Any
    ) -> None:
        """group_coordinators (batched) and group_coordinator name the broker Kafka does."""
        with topic(healthy) as name:
            groups = [f"adapter-group-{secrets.token_hex(3)}" for _ in range(3)]
            for group in groups:
                _group_with_offsets(healthy, name, group)
            expected = {g: _coordinator_by_kafka(healthy, g) for g in groups}
            assert kafka_python.group_coordinators(admin, groups) == expected
            for group in groups:
                assert kafka_python.group_coordinator(admin, group) == expected[group]
            # The client's cache answers the next time too.
            assert kafka_python.group_coordinators(admin, groups) == expected


class TestDescribeAt:
    def test_zookeeper_mode_answers_consumer_group_describe_unsupported(
        self, healthy: LocalCluster, admin: Any
    ) -> None:
        """Kafka 3.9 in ZooKeeper mode has no KIP-848 group coordinator, yet its ApiVersions
        offer ConsumerGroupDescribe: describe_at gets each group answered UNSUPPORTED_VERSION
        (35). The groups reader, asking a group of unknown type as Kafka's Admin does, then
        falls back to DescribeGroups and describes the classic group with no note."""
        from kconsole.cluster.groups.messages import ConsumerGroupDescribeRequest
        from kconsole.cluster.groups.reader import GroupReader

        group = f"adapter-group-{secrets.token_hex(3)}"
        with topic(healthy) as name:
            _group_with_offsets(healthy, name, group)
            coordinator = kafka_python.group_coordinator(admin, group)
            request = ConsumerGroupDescribeRequest(
                group_ids=[group], include_authorized_operations=False
            )
            answer = kafka_python.describe_at(admin, request, coordinator, 5000)
            assert [(g["group_id"], g["error_code"]) for g in answer] == [(group, 35)], answer
            reader = GroupReader({"bootstrap.servers": healthy.spec.bootstrap}, 10.0)
            try:
                assert reader._types.get(group) is None  # not listed yet: type unknown
                descs, errors = reader._describe(reader.client(), [group])
                assert errors == {} and descs[group].state == "EMPTY", (descs, errors)
                assert descs[group].coordinator == coordinator
                read = reader.read()
            finally:
                reader.close()
            g = next(g for g in read.groups if g.group_id == group)
            assert (g.error, g.state, g.group_type) == ("", "EMPTY", "classic"), g
            assert [(p.partition, p.committed) for p in g.partitions] == [(0, 1)], g

    def test_describe_each_at_answers_each_request_in_order(
        self, healthy: LocalCluster, admin: Any
    ) -> None:
        """Two requests in flight at once, one to the group's coordinator and one to a broker
        id the cluster does not have: each slot holds its own answer (the coordinator's, as
        describe_at gets it) or its own failure, in the order asked."""
        from kconsole.cluster.groups.messages import ConsumerGroupDescribeRequest

        group = f"adapter-group-{secrets.token_hex(3)}"
        with topic(healthy) as name:
            _group_with_offsets(healthy, name, group)
            coordinator = kafka_python.group_coordinator(admin, group)

            def request() -> Any:
                return ConsumerGroupDescribeRequest(
                    group_ids=[group], include_authorized_operations=False
                )

            alone = kafka_python.describe_at(admin, request(), coordinator, 5000)
            both = kafka_python.describe_each_at(
                admin, [(request(), 999), (request(), coordinator)], 5000
            )
        assert isinstance(both[0], BaseException), both
        assert both[1] == alone and [g["error_code"] for g in alone] == [35], both


class TestLogEnds:
    def test_log_ends_are_what_was_produced(self, healthy: LocalCluster, admin: Any) -> None:
        """log_ends_by_leader answers each leader's log-end offsets, error code 0."""
        with topic(healthy) as name:
            counts = {0: 7, 1: 3}
            producer = Producer({"bootstrap.servers": healthy.spec.bootstrap, "acks": "all"})
            for partition, n in counts.items():
                for i in range(n):
                    producer.produce(name, f"v{i}".encode(), partition=partition)
            assert producer.flush(30) == 0
            leaders = {p: int(m.leader) for p, m in _partitions(healthy, name).items()}
            by_leader: dict[int, list[tuple[str, int]]] = {}
            for partition, leader in leaders.items():
                by_leader.setdefault(leader, []).append((name, partition))
            answers = kafka_python.log_ends_by_leader(admin, by_leader, 10_000)
            assert set(answers) == set(by_leader)
            got: dict[tuple[str, int], tuple[int, int]] = {}
            for leader, answer in answers.items():
                assert not isinstance(answer, BaseException), (leader, answer)
                got.update(answer)
            assert got == {(name, p): (0, n) for p, n in counts.items()}
            # Asked again for the same partitions: the same request object, sent again (with
            # a new header), answers what was produced since.
            made = {leader: kafka_python._LOG_END_REQUESTS[admin][leader][1] for leader in answers}
            for i in range(4):
                producer.produce(name, f"more{i}".encode(), partition=0)
            assert producer.flush(30) == 0
            again = kafka_python.log_ends_by_leader(admin, by_leader, 10_000)
            assert all(kafka_python._LOG_END_REQUESTS[admin][b][1] is r for b, r in made.items())
            got = {}
            for answer in again.values():
                assert not isinstance(answer, BaseException), answer
                got.update(answer)
            assert got == {(name, 0): (0, 11), (name, 1): (0, 3)}

    def test_a_follower_says_not_leader(self, healthy: LocalCluster, admin: Any) -> None:
        """Asked of a follower, ListOffsets answers NOT_LEADER_OR_FOLLOWER (6): groups.py then
        asks through kafka-python's own leader lookup."""
        with topic(healthy, partitions=1) as name:
            meta = _partitions(healthy, name)[0]
            follower = next(b for b in meta.replicas if b != meta.leader)
            answers = kafka_python.log_ends_by_leader(admin, {follower: [(name, 0)]}, 10_000)
            answer = answers[follower]
            assert not isinstance(answer, BaseException), answer
            assert answer[(name, 0)][0] == 6


class TestMetadata:
    def test_an_answer_read_undecoded_is_the_metadata_and_its_fingerprint_says_what_changed(
        self, healthy: LocalCluster, admin: Any
    ) -> None:
        """metadata_answer hands on one broker's answer undecoded; decoded, it is what
        librdkafka's list_topics says; asked again with nothing changed, its fingerprint is the
        same; a new topic changes it. A decoded request on the same client still decodes."""
        from kconsole.cluster import metadata

        node = kafka_python.least_loaded_node(admin)
        assert node in (1, 2, 3)

        def ask() -> tuple[int, bytes]:
            return kafka_python.metadata_answer(admin, node, 10_000, metadata.RAW_MAX_VERSION)

        version, body = ask()
        assert metadata.RAW_MIN_VERSION <= version <= metadata.RAW_MAX_VERSION
        key, controller = metadata.fingerprint(body)
        raw = metadata.from_answer(kafka_python.decode_metadata(version, body), key)
        rdkafka = metadata.from_librdkafka(
            AdminClient({"bootstrap.servers": healthy.spec.bootstrap}).list_topics(timeout=10)
        )
        assert raw.topics == rdkafka.topics and raw.brokers == rdkafka.brokers
        assert raw.cluster_id == rdkafka.cluster_id and controller in (1, 2, 3)
        wait_until(lambda: metadata.fingerprint(ask()[1])[0] == key, 30, "the same answer again")
        with topic(healthy, partitions=1) as name:
            wait_until(
                lambda: (
                    name in metadata.from_answer(kafka_python.decode_metadata(*ask()), None).topics
                ),
                30,
                f"{name} in the answer",
            )
            assert metadata.fingerprint(ask()[1])[0] != key
            ends = kafka_python.log_ends_by_leader(admin, {node: [(name, 0)]}, 10_000)[node]
            assert not isinstance(ends, BaseException)  # decoded: a dict, not bytes


class TestDescribeCluster:
    def test_zookeeper_mode_answers_describe_cluster_with_fenced_brokers_unsupported(
        self, admin: Any
    ) -> None:
        """DescribeCluster v2 (fenced brokers, Kafka 4.0+) asked of a 3.9 broker: unsupported,
        which read_registrations takes as "ask as kafka-python asks"."""
        with pytest.raises(Exception) as refused:
            kafka_python.describe_cluster_at(admin, 1, 10_000)
        assert kafka_python.is_unsupported(refused.value), refused.value


class TestElection:
    def test_election_codes_of_a_preferred_election_not_needed(
        self, healthy: LocalCluster, admin: Any
    ) -> None:
        """election_codes reads ElectLeaders' answer: ELECTION_NOT_NEEDED (84) per partition."""
        with topic(healthy) as name:
            response = admin.elect_leaders(0, {name: [0, 1]}, raise_errors=False)
            top, parts = kafka_python.election_codes(response)
            assert top == 0
            assert sorted(parts) == [(name, 0, 84), (name, 1, 84)]
