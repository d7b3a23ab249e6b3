"""The observer on KRaft, fed with answers recorded from a real cluster (Kafka 4.4.0, 3
controllers + 3 brokers; tests/fixtures/record_kraft.py): the parsers, the mode, the quorum,
fencing and ELR in the snapshot, the events, and `describe`."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kconsole.cluster.admin import AdminPartition, AdminState
from kconsole.cluster.kraft.quorum import (
    NotKRaft,
    QuorumReader,
    features_of,
    quorum_of,
    registrations_of,
)
from kconsole.cluster.security import kafka_python
from kconsole.cluster.values import ProcState
from kconsole.config import Settings
from kconsole.describe import render_text
from kconsole.errors import ClusterError
from kconsole.models import ClusterMode, ClusterSnapshot, SourceName
from kconsole.observer import ClusterObserver, SnapshotBuilder
from kconsole.timeline import EventKind, diff
from tests.unit.test_observer_builder import zk_state

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kraft_observer"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())
    return data


HEALTHY = load("healthy")
PAUSED = load("brokers_paused")
VOTER = load("voter_paused")


def _part(answer: dict[str, Any]) -> dict[str, Any]:
    part: dict[str, Any] = answer["topics"][0]["partitions"][0]
    return part


def _now(answer: dict[str, Any]) -> float:
    """When the leader answered (its own entry's last fetch time), in seconds."""
    part = _part(answer)
    leader = next(v for v in part["current_voters"] if v["replica_id"] == part["leader_id"])
    return float(leader["last_fetch_timestamp"]) / 1000


class FakeAdmin:
    """kafka-python's KafkaAdminClient, answering what the real cluster answered."""

    def __init__(self, **answers: Any):
        self.answers = answers
        self.closed = False

    def __getattr__(self, name: str) -> Any:
        answer = self.answers[name]

        def call(*_a: Any, **_k: Any) -> Any:
            if isinstance(answer, BaseException):
                raise answer
            return answer

        return call

    def close(self) -> None:
        self.closed = True


@pytest.fixture(autouse=True)
def _features_from_the_fake(monkeypatch: pytest.MonkeyPatch) -> None:
    """The features read asks a broker of the reader's choosing (describe_features_at): the
    fake answers it as it answers kafka-python's own pick (every broker gives the same)."""
    monkeypatch.setattr(
        kafka_python, "describe_features_at", lambda admin, _node, _ms: admin.describe_features()
    )


def reader_with(admin: FakeAdmin) -> QuorumReader:
    reader = QuorumReader({"bootstrap.servers": "127.0.0.1:1"})
    reader._kp = admin
    return reader


def healthy_admin(**over: Any) -> FakeAdmin:
    answers = {
        "describe_metadata_quorum": HEALTHY["describe_metadata_quorum"],
        "describe_cluster": HEALTHY["describe_cluster"],
        "describe_features": HEALTHY["describe_features"],
    }
    answers.update(over)
    return FakeAdmin(**answers)


def admin_state(controller: int = 2, isr: tuple[int, ...] = (1, 2, 3)) -> AdminState:
    """What the metadata (librdkafka) says: its controller is a random broker in KRaft."""
    return AdminState(
        read_at=0.0,
        cluster_id=HEALTHY["describe_cluster"]["cluster_id"],
        controller=controller,
        nodes={b: ("127.0.0.1", 26091 + b, None) for b in (1, 2, 3)},
        topics={"test-topic": tuple(AdminPartition(p, 1, (1, 2, 3), isr) for p in range(4))},
        min_isr={"test-topic": 2},
    )


# -- parsers ---------------------------------------------------------------------------
class TestParsers:
    def test_quorum_through_a_broker(self) -> None:
        """Leader, epoch, high watermark, voters with their endpoints, observers; ms -> s."""
        answer = HEALTHY["describe_metadata_quorum"]
        q = quorum_of(answer, 5.0)
        part = _part(answer)
        assert q.leader_id == part["leader_id"] and q.leader_id in HEALTHY["controller_ids"]
        assert q.leader_epoch == part["leader_epoch"] >= 1
        assert q.high_watermark == part["high_watermark"] > 0
        assert q.voter_ids == tuple(HEALTHY["controller_ids"])
        assert [r.id for r in q.observers] == HEALTHY["broker_ids"]
        assert all(r.voter for r in q.voters) and not any(r.voter for r in q.observers)
        v = q.voters[0]
        raw = part["current_voters"][0]
        assert v.last_fetch_at == raw["last_fetch_timestamp"] / 1000
        assert v.log_end_offset == raw["log_end_offset"]
        assert v.host == "127.0.0.1" and v.port is not None
        assert q.read_at == 5.0 and q.error == ""

    def test_quorum_from_the_leader_controller_agrees(self) -> None:
        """Asked of the leader controller directly (KIP-919), the same leader and voters."""
        direct = quorum_of(HEALTHY["describe_quorum_at_controller"], 0.0)
        via = quorum_of(HEALTHY["describe_metadata_quorum"], 0.0)
        assert (direct.leader_id, direct.leader_epoch) == (via.leader_id, via.leader_epoch)
        assert direct.voter_ids == via.voter_ids

    def test_a_follower_controller_says_not_leader(self) -> None:
        with pytest.raises(ClusterError, match="NotLeaderForPartition"):
            quorum_of(HEALTHY["describe_quorum_at_follower"], 0.0)

    def test_features(self) -> None:
        f = features_of(HEALTHY["describe_features"], 1.0)
        assert (f.metadata_version, f.metadata_version_level, f.kraft_version) == (
            "4.4-IV2",
            33,
            1,
        )

    def test_unknown_metadata_level_is_named_by_its_number(self) -> None:
        f = features_of({"metadata.version": {"finalized": [99, 99]}}, 1.0)
        assert f.metadata_version == "level 99" and f.kraft_version is None

    def test_registrations_with_fenced_brokers(self) -> None:
        assert {b: r.fenced for b, r in registrations_of(HEALTHY["describe_cluster"]).items()} == {
            1: False,
            2: False,
            3: False,
        }
        regs = registrations_of(PAUSED["describe_cluster"])
        assert {b for b, r in regs.items() if r.fenced} == {2, 3}

    def test_a_paused_voter_lags(self) -> None:
        """8 s without a fetch: lagging; in the healthy answer nobody is."""
        q = quorum_of(VOTER["describe_metadata_quorum"], _now(VOTER["describe_metadata_quorum"]))
        assert q.lagging_voters() == {VOTER["paused"]}
        age = q.caught_up_age(q.replica(VOTER["paused"]))  # type: ignore[arg-type]
        assert age is not None and age > 5
        healthy = quorum_of(HEALTHY["describe_metadata_quorum"], 0.0)
        assert healthy.lagging_voters() == frozenset()


# -- mode ------------------------------------------------------------------------------
class TestMode:
    def test_quorum_answers_kraft_and_zookeeper_dropped(self) -> None:
        """The default ZooKeeper is given, the brokers answer DescribeQuorum: KRaft, and the
        snapshot carries no ZooKeeper health."""
        obs = ClusterObserver(Settings())
        assert obs._poll_quorum(reader_with(healthy_admin()), publish=False) is ClusterMode.KRAFT
        snap = obs._publish(publish=False)
        assert snap.mode is ClusterMode.KRAFT
        assert snap.source(SourceName.ZOOKEEPER) is None
        quorum = snap.source(SourceName.QUORUM)
        assert quorum is not None and quorum.ok
        assert snap.features is not None and snap.features.metadata_version == "4.4-IV2"

    def test_brokers_without_kraft_apis_are_zookeeper_mode(self) -> None:
        from kafka.errors import IncompatibleBrokerVersion

        obs = ClusterObserver(Settings(zookeeper=""))
        admin = FakeAdmin(describe_metadata_quorum=IncompatibleBrokerVersion("no DescribeQuorum"))
        assert obs._poll_quorum(reader_with(admin), publish=False) is ClusterMode.ZOOKEEPER
        snap = obs._publish(publish=False)
        assert snap.mode is ClusterMode.ZOOKEEPER
        assert snap.source(SourceName.QUORUM) is None

    def test_brokers_decide_over_an_answering_zookeeper(self) -> None:
        """A ZooKeeper answers (another cluster's, on the default port) while the brokers
        answer DescribeQuorum: KRaft."""
        obs = ClusterObserver(Settings())
        obs.builder.zk = zk_state()
        assert obs._poll_quorum(reader_with(healthy_admin()), publish=False) is ClusterMode.KRAFT
        assert obs._publish(publish=False).mode is ClusterMode.KRAFT

    def test_zookeeper_answers_and_no_broker_does(self) -> None:
        obs = ClusterObserver(Settings())
        obs.builder.zk = zk_state()
        admin = FakeAdmin(describe_metadata_quorum=TimeoutError("no broker"))
        assert obs._poll_quorum(reader_with(admin), publish=False) is ClusterMode.ZOOKEEPER

    def test_nothing_answers_unknown(self) -> None:
        obs = ClusterObserver(Settings(zookeeper=""))
        admin = FakeAdmin(describe_metadata_quorum=TimeoutError("no broker"))
        assert obs._poll_quorum(reader_with(admin), publish=False) is ClusterMode.UNKNOWN
        snap = obs._publish(publish=False)
        assert snap.mode is ClusterMode.UNKNOWN and snap.quorum is None
        text = render_text(snap, now=snap.taken_at)
        assert "mode unknown" in text

    def test_not_kraft_error_is_raised_as_such(self) -> None:
        from kafka.errors import IncompatibleBrokerVersion

        admin = FakeAdmin(describe_metadata_quorum=IncompatibleBrokerVersion("x"))
        with pytest.raises(NotKRaft):
            reader_with(admin).read_quorum(0.0)


# -- the snapshot ----------------------------------------------------------------------
def kraft_builder(answer: dict[str, Any] = HEALTHY, now: float = 10.0) -> SnapshotBuilder:
    b = SnapshotBuilder(use_zookeeper=False)
    b.set_mode(ClusterMode.KRAFT)
    b.admin = admin_state()
    b.health[SourceName.ADMIN].success(now)
    b.quorum_read(quorum_of(answer["describe_metadata_quorum"], now), now)
    b.registrations = registrations_of(HEALTHY["describe_cluster"])
    return b


class TestSnapshot:
    def test_controller_is_the_quorum_leader_not_the_metadata_answer(self) -> None:
        b = kraft_builder()
        snap = b.build(10.0)
        leader = _part(HEALTHY["describe_metadata_quorum"])["leader_id"]
        assert snap.controller.id == leader != 2
        assert snap.controller.epoch == snap.quorum.leader_epoch  # type: ignore[union-attr]

    def test_brokers_fenced_and_roles(self) -> None:
        b = kraft_builder()
        b.registrations = registrations_of(PAUSED["describe_cluster"])
        snap = b.build(10.0)
        assert {x.id: x.fenced for x in snap.brokers} == {1: False, 2: True, 3: True}
        assert all(x.roles == ("broker",) for x in snap.brokers)
        # controllers are not brokers: they are the quorum's voters
        assert [x.id for x in snap.brokers] == [1, 2, 3]

    def test_elr_from_describe_topic_partitions(self) -> None:
        b = kraft_builder()
        b.admin = admin_state(isr=(1,))
        parts = PAUSED["describe_topic_partitions"]["topics"][0]["partitions"]
        b.elr = {
            ("test-topic", p["partition_index"]): (
                tuple(p["eligible_leader_replicas"] or ()),
                tuple(p["last_known_elr"] or ()),
            )
            for p in parts
        }
        snap = b.build(10.0)
        assert [p.elr for p in snap.partitions] == [(2,)] * 4
        assert [p.last_known_elr for p in snap.partitions] == [()] * 4

    def test_elr_unread_is_unknown_full_isr_is_none(self) -> None:
        b = kraft_builder()
        assert {p.elr for p in b.build(10.0).partitions} == {()}
        b.admin = admin_state(isr=(1, 2))
        assert {p.elr for p in b.build(11.0).partitions} == {None}

    def test_leaders_and_isr_are_published_before_the_elr_read(self) -> None:
        """An ISR that just shrank is published at once, its ELR unknown; the ELR read (which
        a paused broker can hold for its timeout) follows in a second snapshot. A partition
        whose ISR is full again drops its last ELR read without asking."""
        parts = PAUSED["describe_topic_partitions"]["topics"][0]["partitions"]
        recorded = {
            ("test-topic", p["partition_index"]): (
                tuple(p["eligible_leader_replicas"] or ()),
                tuple(p["last_known_elr"] or ()),
            )
            for p in parts
        }
        published: list[ClusterSnapshot] = []
        at_elr_read: list[list[ClusterSnapshot]] = []
        at_settings_read: list[int] = []

        class Reader:
            state = admin_state(isr=(1,))

            def read_cluster(self, **_kw: Any) -> AdminState:
                return self.state

            def read_broker_settings(self, _ids: list[int]) -> Any:
                at_settings_read.append(len(published))
                raise ClusterError("no broker answers")

            def refresh_configs(self, topics: list[str]) -> None:
                at_settings_read.append(len(published))

            def read_elr(self, _topics: list[str]) -> Any:
                at_elr_read.append(list(published))
                return recorded

        obs = ClusterObserver(Settings(bootstrap="127.0.0.1:1", zookeeper=""))
        obs.builder.set_mode(ClusterMode.KRAFT)
        obs._on_update = lambda snap, _events: published.append(snap)
        reader = Reader()
        obs._poll_admin(reader)  # type: ignore[arg-type]
        assert len(at_elr_read) == 1 and len(at_elr_read[0]) == 1
        first = at_elr_read[0][0]
        assert {p.isr for p in first.partitions} == {(1,)}
        assert {p.elr for p in first.partitions} == {None}  # not read yet: unknown, not none
        assert len(published) == 2 and {p.elr for p in published[1].partitions} == {(2,)}
        # The configs' refresh and the brokers' settings too come after the publish: a paused
        # broker answers neither, and the leaders must not wait for them.
        assert at_settings_read and min(at_settings_read) >= 1, at_settings_read
        reader.state = admin_state(isr=(1, 2, 3))
        obs._poll_admin(reader)  # type: ignore[arg-type]
        assert len(at_elr_read) == 1  # nothing short: no ELR read
        assert {p.elr for p in published[-1].partitions} == {()}

    def test_a_held_details_read_does_not_hold_the_next_poll(self) -> None:
        """With the observer's threads running, the reads after a poll (ELR, configs, the
        brokers' settings) go to a thread of their own, with its own reader: one that a paused
        broker holds (here, until released) does not hold the next poll, whose leaders and
        ISRs are published at once (a KRaft bench: a leader change reached the screen 3.3 s
        late while the racks' DescribeCluster waited 5 s on the poll's thread)."""
        release, held = threading.Event(), threading.Event()
        published: list[ClusterSnapshot] = []

        class Reader:  # the admin poll's
            state = admin_state(isr=(1, 2, 3))

            def read_cluster(self, **_kw: Any) -> AdminState:
                return self.state

        class Held:  # the details thread's: the broker it asks does not answer
            def refresh_configs(self, topics: list[str]) -> None:
                held.set()
                release.wait(10)

            def read_broker_settings(self, _ids: list[int]) -> Any:
                raise ClusterError("no broker answers")

            def read_elr(self, _topics: list[str]) -> Any:
                held.set()
                release.wait(10)
                return {}

            def close(self) -> None:
                pass

        obs = ClusterObserver(Settings(bootstrap="127.0.0.1:1", zookeeper=""))
        obs.builder.set_mode(ClusterMode.KRAFT)
        obs._on_update = lambda snap, _events: published.append(snap)
        obs._reader = Held  # type: ignore[assignment,method-assign]
        obs._details_thread = True
        details = threading.Thread(target=obs._details_loop, daemon=True)
        details.start()
        try:
            reader = Reader()
            obs._poll_admin(reader)  # type: ignore[arg-type]
            assert held.wait(5), "the details thread never read"
            reader.state = admin_state(isr=(1,))
            start = time.monotonic()
            obs._poll_admin(reader)  # type: ignore[arg-type]
            took = time.monotonic() - start
            assert took < 1.0, f"the poll waited {took:.2f} s for the held read"
            assert {p.isr for p in published[-1].partitions} == {(1,)}
            assert not release.is_set()  # the first details read is still held
        finally:
            release.set()
            obs._stop.set()
            obs._wake_details.set()
            details.join(5)
        assert not details.is_alive()

    def test_a_failed_quorum_read_keeps_the_figures_marked(self) -> None:
        b = kraft_builder()
        before = b.build(10.0).quorum
        b.quorum_failed("DescribeQuorum: timed out")
        snap = b.build(20.0)
        assert snap.quorum is not None and before is not None
        assert snap.quorum.leader_id == before.leader_id
        assert snap.quorum.read_at == before.read_at == 10.0
        assert snap.quorum.stale and "timed out" in snap.quorum.error
        health = snap.source(SourceName.QUORUM)
        assert health is not None and not health.ok and health.updated_at == 10.0
        assert "STALE (DescribeQuorum: timed out)" in render_text(snap, now=20.0)

    def test_json_round_trip(self) -> None:
        snap = kraft_builder().build(10.0)
        back = ClusterSnapshot.from_dict(json.loads(snap.to_json(default=str)))
        assert back.mode is ClusterMode.KRAFT
        assert back.quorum == snap.quorum and back.features == snap.features
        assert back.brokers == snap.brokers


# -- events ----------------------------------------------------------------------------
class TestEvents:
    def test_quorum_leader_changed_with_epoch(self) -> None:
        b = kraft_builder()
        old = b.build(10.0)
        q = quorum_of(HEALTHY["describe_metadata_quorum"], 12.0)
        new_leader = next(v for v in q.voter_ids if v != q.leader_id)
        b.quorum_read(dataclasses.replace(q, leader_id=new_leader, leader_epoch=9), 12.0)
        new = b.build(12.0)
        assert new.controller.previous == old.controller.id
        events = [e for e in diff(old, new) if e.kind is EventKind.CONTROLLER_CHANGED]
        assert len(events) == 1
        was = old.controller.id
        assert (
            events[0].text
            == f"quorum leader is controller {new_leader}, epoch 9 (was controller {was})"
        )

    def test_no_leader_is_controller_lost(self) -> None:
        b = kraft_builder()
        old = b.build(10.0)
        q = quorum_of(HEALTHY["describe_metadata_quorum"], 12.0)
        b.quorum_read(dataclasses.replace(q, leader_id=None), 12.0)
        kinds = [e.kind for e in diff(old, b.build(12.0))]
        assert EventKind.CONTROLLER_LOST in kinds

    def test_fenced_then_unfenced(self) -> None:
        b = kraft_builder()
        s1 = b.build(10.0)
        b.registrations = registrations_of(PAUSED["describe_cluster"])
        s2 = b.build(11.0)
        b.registrations = registrations_of(HEALTHY["describe_cluster"])
        s3 = b.build(12.0)
        fenced = [(e.kind, e.broker) for e in diff(s1, s2)]
        assert fenced == [(EventKind.BROKER_FENCED, 2), (EventKind.BROKER_FENCED, 3)]
        unfenced = [(e.kind, e.broker) for e in diff(s2, s3)]
        assert unfenced == [(EventKind.BROKER_UNFENCED, 2), (EventKind.BROKER_UNFENCED, 3)]

    def test_registered_and_unregistered(self) -> None:
        b = kraft_builder()
        s1 = b.build(10.0)
        regs = registrations_of(HEALTHY["describe_cluster"])
        b.registrations = {k: v for k, v in regs.items() if k != 3}
        s2 = b.build(11.0)
        b.registrations = regs
        s3 = b.build(12.0)
        assert [e.text for e in diff(s1, s2) if e.broker == 3] == ["broker 3 unregistered"]
        assert [e.text for e in diff(s2, s3) if e.broker == 3] == ["broker 3 registered"]

    def test_voter_lagging_then_caught_up(self) -> None:
        now = _now(VOTER["describe_metadata_quorum"])
        b = kraft_builder(HEALTHY, now - 30)
        s1 = b.build(now - 30)
        b.quorum_read(quorum_of(VOTER["describe_metadata_quorum"], now), now)
        s2 = b.build(now)
        b.quorum_read(quorum_of(HEALTHY["describe_metadata_quorum"], now + 1), now + 1)
        s3 = b.build(now + 1)
        lag = [e for e in diff(s1, s2) if e.kind is EventKind.VOTER_LAGGING]
        assert [e.broker for e in lag] == [VOTER["paused"]]
        assert lag[0].severity == "bad"
        back = [e for e in diff(s2, s3) if e.kind is EventKind.VOTER_CAUGHT_UP]
        assert [e.broker for e in back] == [VOTER["paused"]]

    def test_stale_quorum_says_nothing_new(self) -> None:
        b = kraft_builder()
        s1 = b.build(10.0)
        b.quorum_failed("timed out")
        assert diff(s1, b.build(11.0)) == []


# -- describe --------------------------------------------------------------------------
def test_describe_text_has_mode_features_and_quorum() -> None:
    b = kraft_builder()
    b.features = features_of(HEALTHY["describe_features"], 10.0)
    snap = b.build(10.0)
    text = render_text(snap, now=10.5)
    leader = snap.controller.id
    assert "mode kraft" in text
    assert "features: metadata.version 4.4-IV2 (level 33), kraft.version 1" in text
    assert f"quorum: leader controller {leader}, epoch " in text
    lines = text.splitlines()
    assert any(ln.split()[:2] == [str(leader), "leader"] for ln in lines)
    assert sum(1 for ln in lines if ln.split()[1:2] == ["observer"]) == 3
    assert "elr" in lines[lines.index(next(ln for ln in lines if ln.startswith("topic")))]


# -- --bootstrap-controller ------------------------------------------------------------
class TestBootstrapController:
    def test_the_leader_answers_and_is_asked_first_next_time(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A follower controller answers NOT_LEADER (recorded): the next one is asked; the
        leader found is asked first on the next poll."""
        from kconsole.cluster.security import kafka_python

        asked: list[int] = []

        def at(host: str, port: int, timeout_s: float) -> dict[str, Any]:
            asked.append(port)
            key = "describe_quorum_at_controller" if port == 3 else "describe_quorum_at_follower"
            answer: dict[str, Any] = HEALTHY[key]
            return answer

        monkeypatch.setattr(kafka_python, "describe_quorum_at", at)
        reader = QuorumReader({}, "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3")
        q = reader.read_quorum(1.0)
        assert q.leader_id == _part(HEALTHY["describe_quorum_at_controller"])["leader_id"]
        # The first alone, then the others at once (in any order).
        assert asked[0] == 1 and sorted(asked[1:]) == [2, 3]
        reader.read_quorum(2.0)
        assert asked[3:] == [3]

    def test_one_controller_that_is_not_the_leader_is_enough(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """As with Kafka's own --bootstrap-controller: the follower given answers NOT_LEADER,
        then names every controller and the active one (DescribeCluster, endpoint type
        controllers; recorded), which is asked -- and asked first from then on."""
        from kconsole.cluster.security import kafka_python

        named = HEALTHY["describe_controllers_at"]
        ports = {b["broker_id"]: b["port"] for b in named["brokers"]}
        leader_port = ports[named["controller_id"]]
        follower_port = next(p for p in ports.values() if p != leader_port)
        asked: list[int] = []

        def at(host: str, port: int, timeout_s: float) -> dict[str, Any]:
            asked.append(port)
            key = (
                "describe_quorum_at_controller"
                if port == leader_port
                else "describe_quorum_at_follower"
            )
            answer: dict[str, Any] = HEALTHY[key]
            return answer

        def controllers_at(host: str, port: int, timeout_s: float) -> dict[str, Any]:
            asked.append(-port)
            answer: dict[str, Any] = named
            return answer

        monkeypatch.setattr(kafka_python, "describe_quorum_at", at)
        monkeypatch.setattr(kafka_python, "describe_controllers_at", controllers_at)
        reader = QuorumReader({}, f"127.0.0.1:{follower_port}")
        q = reader.read_quorum(1.0)
        assert q.leader_id == _part(HEALTHY["describe_quorum_at_controller"])["leader_id"]
        assert asked == [follower_port, -follower_port, leader_port]
        reader.read_quorum(2.0)
        assert asked[3:] == [leader_port]

    def test_a_controller_that_cannot_name_the_others_says_so(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from kconsole.cluster.security import kafka_python

        follower = HEALTHY["describe_quorum_at_follower"]
        monkeypatch.setattr(kafka_python, "describe_quorum_at", lambda h, p, t: follower)
        monkeypatch.setattr(
            kafka_python, "describe_controllers_at", lambda h, p, t: {"error_code": 35}
        )
        with pytest.raises(ClusterError, match=r"127.0.0.1:1: .*DescribeCluster: "):
            QuorumReader({}, "127.0.0.1:1").read_quorum(1.0)

    def test_no_controller_answering_says_each(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from kconsole.cluster.security import kafka_python

        def at(host: str, port: int, timeout_s: float) -> dict[str, Any]:
            raise ConnectionRefusedError(111, "Connection refused")

        monkeypatch.setattr(kafka_python, "describe_quorum_at", at)
        with pytest.raises(ClusterError, match=r"127.0.0.1:1: .*refused.*127.0.0.1:2"):
            QuorumReader({}, "127.0.0.1:1,127.0.0.1:2").read_quorum(1.0)

    def test_settings(self) -> None:
        from kconsole.config import ConfigError, load_settings

        s = load_settings(bootstrap_controller="c1:9093,c2:9093", env={})
        assert s.bootstrap_controller == "c1:9093,c2:9093"
        s = load_settings(env={"KCONSOLE_BOOTSTRAP_CONTROLLER": "c1:9093"})
        assert s.bootstrap_controller == "c1:9093"
        with pytest.raises(ConfigError, match="--bootstrap-controller: 'c1:x' is not HOST:PORT"):
            load_settings(bootstrap_controller="c1:x", env={})


# -- no quorum leader, from what the controllers answer ---------------------------------
class TestNoLeader:
    """The brokers cannot say (they forward DescribeQuorum to a leader there is not); the
    voters the last answer named are asked directly (ports 26192-26194 in the recording)."""

    LEADER = _part(HEALTHY["describe_quorum_at_controller"])["leader_id"]

    def answers(self, monkeypatch: pytest.MonkeyPatch, by_port: dict[int, Any]) -> list[int]:
        from kconsole.cluster.security import kafka_python

        asked: list[int] = []

        def at(host: str, port: int, timeout_s: float) -> dict[str, Any]:
            asked.append(port)
            answer = by_port[port]
            if isinstance(answer, BaseException):
                raise answer
            result: dict[str, Any] = answer
            return result

        def controllers_at(host: str, port: int, timeout_s: float) -> dict[str, Any]:
            raise ConnectionRefusedError(111, "Connection refused")

        monkeypatch.setattr(kafka_python, "describe_quorum_at", at)
        monkeypatch.setattr(kafka_python, "describe_controllers_at", controllers_at)
        return asked

    def polled_once(self) -> tuple[ClusterObserver, QuorumReader]:
        """An observer that read the healthy quorum through the brokers, whose brokers now
        time out."""
        obs = ClusterObserver(Settings(zookeeper=""))
        reader = reader_with(healthy_admin())
        assert obs._poll_quorum(reader, publish=False) is ClusterMode.KRAFT
        reader._kp = FakeAdmin(describe_metadata_quorum=TimeoutError("request timed out"))
        return obs, reader

    def test_one_not_leader_and_two_not_running_is_no_leader(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        follower = HEALTHY["describe_quorum_at_follower"]  # recorded NOT_LEADER_OR_FOLLOWER
        refused = ConnectionRefusedError(111, "Connection refused")
        asked = self.answers(monkeypatch, {26192: refused, 26193: follower, 26194: refused})
        obs, reader = self.polled_once()
        before = obs._publish(publish=False)
        assert before.controller.id == self.LEADER
        assert obs._poll_quorum(reader, publish=False) is ClusterMode.KRAFT
        snap = obs._publish(publish=False)
        assert sorted(set(asked)) == [26192, 26193, 26194]
        q = snap.quorum
        assert q is not None and q.leader_id is None and q.stale
        assert "no controller leads (127.0.0.1:26193 not the leader; " in q.error
        assert "not running" in q.error
        assert q.previous_leader == self.LEADER and snap.controller.id is None
        assert q.voters == before.quorum.voters  # type: ignore[union-attr]  # last figures
        events = diff(before, snap)
        lost = [e for e in events if e.kind is EventKind.CONTROLLER_LOST]
        assert [e.text for e in lost] == [f"no quorum leader (was controller {self.LEADER})"]
        health = snap.source(SourceName.QUORUM)
        assert health is not None and not health.ok

    def test_a_voter_that_does_not_answer_may_lead_so_the_quorum_is_unknown(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        follower = HEALTHY["describe_quorum_at_follower"]
        self.answers(
            monkeypatch,
            {
                26192: TimeoutError("timed out"),  # paused, or out of reach
                26193: follower,
                26194: ConnectionRefusedError(111, "Connection refused"),
            },
        )
        obs, reader = self.polled_once()
        obs._poll_quorum(reader, publish=False)
        q = obs._publish(publish=False).quorum
        assert q is not None and q.stale and q.leader_id == self.LEADER  # last figures
        assert "no controller answered as quorum leader" in q.error

    def test_the_leader_asked_directly_while_the_brokers_are_down(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        leader_port = 26191 + (self.LEADER - 1000)
        by_port: dict[int, Any] = {
            p: HEALTHY["describe_quorum_at_follower"] for p in (26192, 26193, 26194)
        }
        by_port[leader_port] = HEALTHY["describe_quorum_at_controller"]
        self.answers(monkeypatch, by_port)
        obs, reader = self.polled_once()
        obs._poll_quorum(reader, publish=False)
        q = obs._publish(publish=False).quorum
        assert q is not None and not q.stale and q.leader_id == self.LEADER

    def test_voters_are_asked_at_once_so_paused_ones_cost_one_timeout(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Two paused voters: both asks are in flight together (each waits for the other at a
        barrier, which a one-by-one ask would never pass), then time out."""
        import threading

        from kconsole.cluster.security import kafka_python

        barrier = threading.Barrier(2)

        def at(host: str, port: int, timeout_s: float) -> dict[str, Any]:
            if port == 26193:
                answer: dict[str, Any] = HEALTHY["describe_quorum_at_follower"]
                return answer
            barrier.wait(timeout=10)  # broken (BrokenBarrierError) if asked one at a time
            raise TimeoutError("timed out")

        monkeypatch.setattr(kafka_python, "describe_quorum_at", at)
        obs, reader = self.polled_once()
        obs._poll_quorum(reader, publish=False)
        q = obs._publish(publish=False).quorum
        assert q is not None and q.stale
        assert "26192: timed out" in q.error and "26194: timed out" in q.error
        assert "Broken" not in q.error


def test_the_groups_poll_s_leaders_are_worked_out_again_only_when_they_can_differ() -> None:
    """_hints: a partition whose leader is down (or has none) is asked of nobody (-1), as
    ClusterSnapshot.is_offline says; the same partitions and brokers down give the very same
    answer (10,000 partitions every groups poll were a fifth of its thread); a broker going
    down, or other partitions, give a new one; _short likewise per metadata answer."""
    from kconsole.models import Broker, BrokerState, Partition
    from kconsole.observer.threads import _hints, _short

    parts = (
        Partition("t", 0, 1, (1, 2), (1, 2)),
        Partition("t", 1, 2, (2, 1), (2, 1)),
        Partition("t", 2, -1, (1, 2), ()),
    )
    up = (Broker(1, "h", 1), Broker(2, "h", 2))
    snap = ClusterSnapshot(taken_at=1.0, partitions=parts, brokers=up)
    brokers, leaders, unasked = _hints(snap)
    assert (brokers, unasked) == ([1, 2], [])
    assert leaders == {("t", 0): 1, ("t", 1): 2, ("t", 2): -1}
    again = _hints(dataclasses.replace(snap, taken_at=2.0))[1]
    assert again is leaders
    one_down = (Broker(1, "h", 1), Broker(2, "h", 2, state=BrokerState.DOWN))
    down = dataclasses.replace(snap, brokers=one_down)
    moved = _hints(down)[1]
    assert moved == {("t", 0): 1, ("t", 1): -1, ("t", 2): -1}
    assert [k for k, v in moved.items() if v < 0] == [
        (p.topic, p.partition) for p in parts if down.is_offline(p)
    ]
    other = _hints(dataclasses.replace(snap, partitions=parts[:1]))[1]
    assert other == {("t", 0): 1}

    topics: dict[str, tuple[AdminPartition, ...]] = {
        "t": (AdminPartition(0, 1, (1, 2), (1,)), AdminPartition(1, -1, (1, 2), (1, 2)))
    }
    state = AdminState(0.0, "c", 1, {}, topics)
    short = _short(state)
    assert short == {("t", 0), ("t", 1)}
    assert _short(dataclasses.replace(state, read_at=1.0)) is short
    full: dict[str, tuple[AdminPartition, ...]] = {"t": (AdminPartition(0, 1, (1, 2), (1, 2)),)}
    assert _short(dataclasses.replace(state, topics=full)) == set()


class TestFencingDue:
    """While the controller's verdict on a broker is due (kconsole sees its process paused or
    stopped and it is still unfenced, or running again and still fenced), the quorum poller
    asks every QUORUM_ELECTION_POLL_S instead of QUORUM_POLL_S, for at most FENCING_WATCH_S."""

    def observer(self, fenced: tuple[int, ...], procs: dict[int, ProcState]) -> ClusterObserver:
        obs = ClusterObserver(Settings(zookeeper=""))
        answer = {
            **HEALTHY["describe_cluster"],
            "brokers": [
                {**b, "is_fenced": b["broker_id"] in fenced}
                for b in HEALTHY["describe_cluster"]["brokers"]
            ],
        }
        obs.builder.registrations = registrations_of(answer)
        obs.builder.proc_states = procs
        return obs

    def test_due_while_the_process_and_the_fencing_disagree(self) -> None:
        up = {1: ProcState.RUNNING, 2: ProcState.RUNNING, 3: ProcState.RUNNING}
        assert not self.observer((), up)._fencing_due()
        assert self.observer((), {**up, 3: ProcState.PAUSED})._fencing_due()
        assert self.observer((), {**up, 3: ProcState.STOPPED})._fencing_due()
        assert not self.observer((3,), {**up, 3: ProcState.PAUSED})._fencing_due()  # came
        assert self.observer((3,), up)._fencing_due()  # restarted, not unfenced yet
        assert not ClusterObserver(Settings(zookeeper=""))._fencing_due()  # no backend

    def test_for_at_most_the_watch(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A broker cut off by a network fault stays fenced while running: no fast polls for
        the whole fault."""
        from kconsole.observer import threads

        now = [100.0]
        monkeypatch.setattr(threads.time, "monotonic", lambda: now[0])
        up = {1: ProcState.RUNNING, 2: ProcState.RUNNING, 3: ProcState.RUNNING}
        obs = self.observer((3,), up)
        assert obs._fencing_due()
        now[0] += threads.FENCING_WATCH_S - 0.1
        assert obs._fencing_due()
        now[0] += 0.2
        assert not obs._fencing_due()
        obs.builder.registrations = self.observer((), up).builder.registrations  # unfenced
        assert not obs._fencing_due()
        obs.builder.registrations = self.observer((3,), up).builder.registrations  # again
        assert obs._fencing_due()  # a new watch

    def test_the_poller_asks_sooner_while_due(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from kconsole.observer import threads

        up = {1: ProcState.RUNNING, 2: ProcState.RUNNING, 3: ProcState.RUNNING}
        for procs, expected in (
            (up, threads.QUORUM_POLL_S),
            ({**up, 3: ProcState.PAUSED}, threads.QUORUM_ELECTION_POLL_S),
        ):
            obs = self.observer((), procs)
            waits: list[float] = []

            def polled(_reader: Any) -> ClusterMode:
                return ClusterMode.KRAFT

            def wait(
                timeout: float, obs: ClusterObserver = obs, waits: list[float] = waits
            ) -> bool:
                waits.append(timeout)
                obs._stop.set()
                return False

            monkeypatch.setattr(obs, "_poll_quorum", polled)
            monkeypatch.setattr(obs, "_quorum_reader", lambda: reader_with(healthy_admin()))
            monkeypatch.setattr(obs._wake_quorum, "wait", wait)
            obs._quorum_loop()
            assert waits == [expected]


class TestExpectedChange:
    """Woken by the quorum poller, the metadata poll expects a change: an answer that did not
    change (the broker asked has not applied it yet) is asked again every
    EXPECTED_REREAD_EVERY_S, for at most EXPECTED_REREAD_FOR_S, instead of a refresh later."""

    def run(self, monkeypatch: pytest.MonkeyPatch, changes_at: int | None) -> list[float]:
        from kconsole.observer import threads

        now = [0.0]
        monkeypatch.setattr(threads.time, "monotonic", lambda: now[0])
        monkeypatch.setattr(threads, "EXPECTED_REREAD_EVERY_S", 0.125)  # exact sums of time
        obs = ClusterObserver(Settings(zookeeper=""))
        obs.builder.set_mode(ClusterMode.KRAFT)
        obs.builder.admin = admin_state()
        polls: list[int] = []

        def poll(_reader: Any, publish: bool = True) -> None:
            polls.append(1)
            if len(polls) == changes_at:  # a new answer: new topics
                obs.builder.admin = admin_state(isr=(1, 2))

        waits: list[float] = []

        def wait(timeout: float) -> bool:
            waits.append(timeout)
            now[0] += 0.0 if len(waits) == 1 else timeout
            if len(waits) == 16:
                obs._stop.set()
            return len(waits) == 1  # the quorum poller woke it once, at once

        monkeypatch.setattr(obs, "_poll_admin", poll)
        monkeypatch.setattr(obs, "_reader", lambda: None)
        monkeypatch.setattr(obs._wake_admin, "wait", wait)
        obs._admin_loop()
        return waits

    def test_an_unchanged_answer_is_asked_again_soon_for_a_while(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from kconsole.observer import threads

        waits = self.run(monkeypatch, changes_at=None)
        soon = round(threads.EXPECTED_REREAD_FOR_S / threads.EXPECTED_REREAD_EVERY_S)
        refresh = Settings().refresh_s
        assert waits[1 : 1 + soon] == [threads.EXPECTED_REREAD_EVERY_S] * soon
        assert waits[1 + soon :] == [refresh] * (len(waits) - 1 - soon)

    def test_once_it_changed_the_usual_cadence(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from kconsole.observer import threads

        waits = self.run(monkeypatch, changes_at=4)  # the third re-read saw it
        refresh = Settings().refresh_s
        assert waits[1:3] == [threads.EXPECTED_REREAD_EVERY_S] * 2
        assert waits[3:] == [refresh] * (len(waits) - 3)


def test_the_groups_reader_is_told_which_brokers_are_paused_now(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The backend's process states say which brokers are paused; the groups poll's reader
    asks that (on its client's IO thread) while it waits for log ends."""
    states = {1: ProcState.RUNNING, 2: ProcState.RUNNING, 3: ProcState.PAUSED}
    obs = ClusterObserver(Settings(zookeeper=""), proc_states=lambda: dict(states))
    assert obs._read_proc_states() and obs._paused == {3}
    told: list[Any] = []

    def poll(reader: Any, publish: bool = True) -> None:
        told.append(reader.groups.paused())
        states[3] = ProcState.RUNNING
        obs._read_proc_states()
        told.append(reader.groups.paused())
        obs._stop.set()
        obs._wake_groups.set()

    monkeypatch.setattr(obs, "_poll_groups", poll)
    obs._groups_loop()
    assert told == [{3}, frozenset()]
