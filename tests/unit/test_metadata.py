"""The metadata read undecoded (kconsole.cluster.metadata, AdminReader._read_metadata): the
fingerprint leaves out exactly the controller id, an unchanged answer is not decoded again and
hands on the same topics, and a failed or unsupported read falls back to librdkafka's."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from kafka.protocol.metadata import MetadataResponse

from kconsole.cluster import admin as admin_mod
from kconsole.cluster import metadata
from kconsole.cluster.admin import AdminReader
from kconsole.cluster.metadata import AdminPartition
from kconsole.cluster.security import kafka_python

_B = MetadataResponse.MetadataResponseBroker
_T = MetadataResponse.MetadataResponseTopic
_P = _T.MetadataResponsePartition


def _answer(
    *,
    controller: int = 1,
    leader: int = 1,
    cluster_id: str | None = "c1",
    racks: tuple[str | None, ...] = (None, "r2", None),
    version: int = 8,
) -> bytes:
    """A Metadata answer's body as a broker encodes it (kafka-python's encoder)."""
    brokers = [
        _B(node_id=i + 1, host=f"broker-{i + 1}.example", port=9092 + i, rack=rack)
        for i, rack in enumerate(racks)
    ]

    def part(i: int, lead: int) -> Any:
        return _P(
            error_code=0,
            partition_index=i,
            leader_id=lead,
            leader_epoch=3,
            replica_nodes=[1, 2, 3],
            isr_nodes=[1, 2, 3] if lead >= 0 else [2],
            offline_replicas=[],
        )

    topics = [
        # partitions out of order, as a broker may list them
        _T(
            error_code=0, name="orders", is_internal=False, partitions=[part(1, 2), part(0, leader)]
        ),
        _T(error_code=29, name="secret", is_internal=False, partitions=[]),  # not authorized
        _T(error_code=0, name="gone-leader", is_internal=False, partitions=[part(0, -1)]),
    ]
    response = MetadataResponse[version](
        throttle_time_ms=0,
        brokers=brokers,
        cluster_id=cluster_id,
        controller_id=controller,
        topics=topics,
    )
    return bytes(response.encode())


class TestFingerprint:
    def test_only_the_controller_id_is_left_out(self) -> None:
        """A KRaft broker names a random live broker as controller in each answer: two answers
        that differ only there have one fingerprint, and the id is read on its own."""
        one, other = _answer(controller=1), _answer(controller=3)
        assert one != other
        key1, c1 = metadata.fingerprint(one)
        key3, c3 = metadata.fingerprint(other)
        assert (key1 == key3, c1, c3) == (True, 1, 3)
        assert len(key1) == len(one) - 8  # throttle time and controller id

    def test_a_leader_moving_changes_it(self) -> None:
        assert (
            metadata.fingerprint(_answer(leader=1))[0] != metadata.fingerprint(_answer(leader=2))[0]
        )

    @pytest.mark.parametrize("cluster_id", [None, "", "a-much-longer-cluster-id"])
    @pytest.mark.parametrize("racks", [(), (None,), ("r1", "rack-two", None)])
    def test_the_controller_is_found_past_any_brokers_and_cluster_id(
        self, cluster_id: str | None, racks: tuple[str | None, ...]
    ) -> None:
        for version in range(metadata.RAW_MIN_VERSION, metadata.RAW_MAX_VERSION + 1):
            body = _answer(controller=7, cluster_id=cluster_id, racks=racks, version=version)
            assert metadata.fingerprint(body)[1] == 7, version

    def test_a_body_cut_short_is_an_error(self) -> None:
        body = _answer()
        with pytest.raises(ValueError, match="cut short"):
            metadata.fingerprint(body[:30])


class TestFromAnswer:
    def test_topics_in_partition_order_without_the_ones_refused(self) -> None:
        body = _answer(controller=-1)
        md = metadata.from_answer(MetadataResponse[8].decode(body), b"k")
        assert md.controller is None and md.cluster_id == "c1" and md.key == b"k"
        assert md.brokers == {
            1: ("broker-1.example", 9092),
            2: ("broker-2.example", 9093),
            3: ("broker-3.example", 9094),
        }
        assert md.topics == {
            "orders": (
                AdminPartition(0, 1, (1, 2, 3), (1, 2, 3)),
                AdminPartition(1, 2, (1, 2, 3), (1, 2, 3)),
            ),
            "gone-leader": (AdminPartition(0, -1, (1, 2, 3), (2,)),),
        }

    def test_librdkafkas_metadata_gives_the_same(self) -> None:
        """The same cluster through librdkafka's objects (as list_topics hands them on)."""

        def p(i: int, leader: int, isr: list[int]) -> Any:
            return SimpleNamespace(id=i, leader=leader, replicas=[1, 2, 3], isrs=isr)

        md = SimpleNamespace(
            cluster_id="c1",
            controller_id=-1,
            brokers={
                i: SimpleNamespace(id=i, host=f"broker-{i}.example", port=9091 + i)
                for i in (1, 2, 3)
            },
            topics={
                "orders": SimpleNamespace(
                    error=None, partitions={1: p(1, 2, [1, 2, 3]), 0: p(0, 1, [1, 2, 3])}
                ),
                "secret": SimpleNamespace(error="TOPIC_AUTHORIZATION_FAILED", partitions={}),
                "gone-leader": SimpleNamespace(error=None, partitions={0: p(0, -1, [2])}),
            },
        )
        raw = metadata.from_answer(MetadataResponse[8].decode(_answer(controller=-1)), None)
        assert metadata.from_librdkafka(md) == raw


class _Cluster:
    """What AdminReader asks through kafka_python: each call answers the next body."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, bodies: list[Any], version: int = 8):
        self.bodies, self.version = bodies, version
        self.asked: list[int] = []
        self.decoded = 0
        self.rdkafka = 0
        monkeypatch.setattr(kafka_python, "least_loaded_node", lambda _admin: 2)
        monkeypatch.setattr(kafka_python, "metadata_answer", self.answer)
        real_decode = kafka_python.decode_metadata

        def decode(version: int, body: bytes) -> Any:
            self.decoded += 1
            return real_decode(version, body)

        monkeypatch.setattr(kafka_python, "decode_metadata", decode)

    def answer(self, _admin: Any, node: int, timeout_ms: int, max_version: int) -> Any:
        assert max_version == metadata.RAW_MAX_VERSION and timeout_ms > 0
        self.asked.append(node)
        body = self.bodies.pop(0)
        if isinstance(body, BaseException):
            raise body
        return self.version, body

    def librdkafka(self) -> Any:
        self.rdkafka += 1
        return SimpleNamespace(
            cluster_id="c1",
            controller_id=2,
            brokers={1: SimpleNamespace(id=1, host="broker-1.example", port=9092)},
            topics={},
        )


@pytest.fixture
def reader(monkeypatch: pytest.MonkeyPatch) -> AdminReader:
    r = AdminReader({"bootstrap.servers": "127.0.0.1:9"}, timeout_s=1.0)
    monkeypatch.setattr(r, "_kafka_python", lambda: object())
    return r


class TestReadMetadata:
    def test_an_unchanged_answer_is_not_decoded_and_hands_on_the_same_topics(
        self, monkeypatch: pytest.MonkeyPatch, reader: AdminReader
    ) -> None:
        cluster = _Cluster(
            monkeypatch,
            [_answer(controller=1), _answer(controller=3), _answer(controller=3, leader=3)],
        )
        monkeypatch.setattr(reader, "_metadata", cluster.librdkafka)
        first = reader._read_metadata()  # librdkafka's, before any answer
        assert cluster.rdkafka == 1 and first.key is None
        one = reader._read_metadata()
        two = reader._read_metadata()
        assert cluster.decoded == 1 and two.topics is one.topics
        assert (one.controller, two.controller) == (1, 3)
        three = reader._read_metadata()  # a leader moved
        assert cluster.decoded == 2 and three.topics["orders"][0].leader == 3
        assert cluster.asked == [2, 2, 2]  # the broker that answered is asked again

    def test_a_failed_read_falls_back_to_librdkafka_for_a_while_and_asks_another_broker(
        self, monkeypatch: pytest.MonkeyPatch, reader: AdminReader
    ) -> None:
        now = [100.0]
        monkeypatch.setattr(admin_mod, "time", SimpleNamespace(monotonic=lambda: now[0]))
        cluster = _Cluster(monkeypatch, [_answer(), TimeoutError("paused"), _answer()])
        monkeypatch.setattr(reader, "_metadata", cluster.librdkafka)
        reader._read_metadata()  # librdkafka
        assert reader._read_metadata().key is not None and reader._md_node == 2
        assert reader._read_metadata().key is None  # failed: librdkafka's, this poll
        assert reader._md_node is None and cluster.rdkafka == 2
        now[0] += admin_mod.RAW_BACKOFF_S - 0.1
        assert reader._read_metadata().key is None and cluster.rdkafka == 3  # still backing off
        now[0] += 0.2
        assert reader._read_metadata().key is not None and len(cluster.asked) == 3

    def test_a_cluster_that_answers_too_old_a_version_is_read_through_librdkafka(
        self, monkeypatch: pytest.MonkeyPatch, reader: AdminReader
    ) -> None:
        now = [100.0]
        monkeypatch.setattr(admin_mod, "time", SimpleNamespace(monotonic=lambda: now[0]))
        cluster = _Cluster(monkeypatch, [b"", b""], version=2)
        monkeypatch.setattr(reader, "_metadata", cluster.librdkafka)
        reader._read_metadata()
        reader._read_metadata()
        assert "v2" in reader._raw_refused and cluster.rdkafka == 2
        now[0] += 3600
        reader._read_metadata()
        assert cluster.rdkafka == 3 and len(cluster.asked) == 1  # never asked again

    def test_after_a_failed_read_the_next_one_is_librdkafkas(
        self, monkeypatch: pytest.MonkeyPatch, reader: AdminReader
    ) -> None:
        """A cluster that stopped answering is not asked through kafka-python first (its
        bootstrap would wait out its own timeout before librdkafka's read failed too)."""
        cluster = _Cluster(monkeypatch, [])
        calls = []

        def down() -> Any:
            calls.append(1)
            raise admin_mod.ClusterError("all brokers down")

        monkeypatch.setattr(reader, "_metadata", down)
        for _ in range(3):
            with pytest.raises(admin_mod.ClusterError):
                reader._read_metadata()
        assert len(calls) == 3 and cluster.asked == []

    def test_a_fenced_or_paused_broker_is_not_asked(
        self, monkeypatch: pytest.MonkeyPatch, reader: AdminReader
    ) -> None:
        """A broker cut off from the quorum still answers, with what it knew then: once the
        controller fenced it (or kconsole paused it), the next read asks another broker."""
        cluster = _Cluster(monkeypatch, [_answer(), _answer(), _answer(leader=3)])
        monkeypatch.setattr(reader, "_metadata", cluster.librdkafka)
        reader._read_metadata()
        reader._read_metadata()
        assert reader._md_node == 2  # kafka-python's least loaded
        reader._read_metadata(avoid={2})
        assert cluster.asked == [2, 1] and reader._md_node == 1  # the lowest other id
        with pytest.raises(admin_mod.ClusterError):  # nobody left: librdkafka's read
            reader._read_undecoded(avoid={1, 2, 3})
