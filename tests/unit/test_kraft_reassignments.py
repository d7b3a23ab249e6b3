"""A running reassignment on KRaft: the metadata lists a moving partition's old and new replicas
at once, with no adding or removing ones; the observer reads those from ListPartitionReassignments
(as kafka-topics does) and the snapshot then says what ZooKeeper mode says: not under-replicated,
the target replication factor, adding / removing replicas. What could not be read is said."""

from __future__ import annotations

import json
from typing import Any

import kafka.errors
import pytest

from kconsole.cluster import admin as admin_module
from kconsole.cluster.admin import AdminPartition, AdminReader, AdminState
from kconsole.config import Settings
from kconsole.describe import render_text
from kconsole.errors import AuthorizationDenied, ClusterError
from kconsole.models import ClusterMode, ClusterSnapshot, SourceName
from kconsole.observer import ClusterObserver, SnapshotBuilder
from kconsole.reassign.plan import Move, Plan, validate

# RF 2 topic "mv", replicas [1, 2] moving to [2, 3]: the metadata lists [2, 3, 1] while broker 3
# copies (not in the ISR yet), as Kafka 4.4 does.
MOVING = {("mv", 0): ((2, 3, 1), (3,), (1,))}


def state(replicas: tuple[int, ...] = (2, 3, 1), isr: tuple[int, ...] = (1, 2)) -> AdminState:
    return AdminState(
        read_at=0.0,
        cluster_id="cid",
        controller=1,
        nodes={b: ("127.0.0.1", 26091 + b, None) for b in (1, 2, 3)},
        topics={
            "mv": (AdminPartition(0, 2, replicas, isr),),
            "still": (AdminPartition(0, 1, (1, 2), (1, 2)),),
        },
        min_isr={"mv": 1, "still": 1},
    )


def builder(read: Any = MOVING, now: float = 10.0) -> SnapshotBuilder:
    b = SnapshotBuilder(use_zookeeper=False)
    b.set_mode(ClusterMode.KRAFT)
    b.admin = state()
    if read is not None:
        b.reassignments_read(read, now)
    b.health[SourceName.ADMIN].success(now, b.reassignments_note(now))
    return b


class TestSnapshot:
    def test_a_moving_partition_is_not_under_replicated(self) -> None:
        """As kafka-topics --describe: Adding Replicas 3, Removing Replicas 1, replication
        factor 2, and --under-replicated-partitions leaves it out."""
        snap = builder().build(10.0)
        p = snap.partition("mv", 0)
        assert p is not None
        assert (p.replicas, p.adding, p.removing) == ((2, 3, 1), (3,), (1,))
        assert p.replication_factor == 2 and not p.under_replicated
        assert snap.flags(p) == ["reassigning"]
        assert [snap.under_replicated_on(b) for b in (1, 2, 3)] == [0, 0, 0]
        still = snap.partition("still", 0)
        assert still is not None and (still.adding, still.removing) == ((), ())

    def test_json_has_adding_and_removing(self) -> None:
        data = json.loads(builder().build(10.0).to_json(default=str))
        mv = next(p for p in data["partitions"] if p["topic"] == "mv")
        assert (mv["adding"], mv["removing"]) == ([3], [1])
        back = ClusterSnapshot.from_dict(data).partition("mv", 0)
        assert back is not None and back.adding == (3,)

    def test_never_read_is_said_unknown_not_nothing_moving(self) -> None:
        b = builder(read=None)
        b.reassignments_failed(
            "denied by the cluster's ACLs: this client may not DESCRIBE the cluster"
        )
        b.health[SourceName.ADMIN].success(10.0, b.reassignments_note(10.0))
        snap = b.build(10.0)
        health = snap.source(SourceName.ADMIN)
        assert health is not None and health.ok and health.degraded
        assert "running reassignments not read (denied by the cluster's ACLs" in health.error
        assert health.error.endswith("adding/removing replicas unknown")
        assert "admin      ok, degraded: running reassignments not read" in render_text(snap, 10.0)

    def test_a_failed_read_keeps_the_last_one_with_its_age(self) -> None:
        b = builder(now=10.0)
        b.reassignments_failed("ListPartitionReassignments (broker 2): timed out")
        assert b.reassignments_note(15.0) == (
            "running reassignments not read (ListPartitionReassignments (broker 2): timed out): "
            "adding/removing replicas the last read (5s ago) is shown"
        )
        p = b.build(15.0).partition("mv", 0)
        assert p is not None and p.adding == (3,)
        b.reassignments_read({}, 16.0)
        assert b.reassignments_note(16.0) == ""

    def test_a_move_that_started_or_ended_between_the_reads_waits_a_poll(self) -> None:
        """Read after the metadata, the list may already name a move the metadata does not
        show yet (or no longer): applied to other replicas it would be wrong (adding 3 to
        [1, 2] is a replication factor of 1), so it is applied only when both agree."""
        b = builder()
        b.admin = state(replicas=(1, 2), isr=(1, 2))  # the metadata before the move began
        p = b.build(10.0).partition("mv", 0)
        assert p is not None and (p.adding, p.removing) == ((), ()) and p.replication_factor == 2
        b.admin = state(replicas=(2, 3), isr=(2, 3))  # ...and after it ended
        p = b.build(11.0).partition("mv", 0)
        assert p is not None and (p.adding, p.removing) == ((), ())

    def test_an_unchanged_read_builds_no_partition_again(self) -> None:
        b = builder()
        first = b.build(10.0)
        b.reassignments_read(dict(MOVING), 11.0)  # equal, a new dict
        assert b.build(11.0).partitions is first.partitions
        b.reassignments_read({}, 12.0)  # the move ended: the list is empty
        p = b.build(12.0).partition("mv", 0)
        assert p is not None and p.adding == () and p.under_replicated  # RF 3, ISR 2

    def test_zookeeper_mode_reads_no_reassignments(self) -> None:
        b = SnapshotBuilder(use_zookeeper=False)
        b.set_mode(ClusterMode.ZOOKEEPER)
        b.admin = state()
        assert b.reassignments_note(10.0) == ""
        p = b.build(10.0).partition("mv", 0)
        assert p is not None and p.adding == ()


class TestPlan:
    def test_running_the_same_plan_again_is_refused_as_already_being_reassigned(self) -> None:
        """Not "3 replicas, but mv has replication factor 3": the factor is the target's."""
        snap = builder().build(10.0)
        problems = [p.message for p in validate(Plan((Move("mv", 0, (2, 3)),)), snap)]
        assert problems == [
            "mv/0: already being reassigned (adding 3; removing 1): wait until it is done, or "
            "cancel it"
        ]

    def test_a_running_move_shows_what_it_adds_and_removes(self) -> None:
        """The screen's `+add` / `-remove` (and the CLI's diff) while the move runs: compared
        with the replicas before it, not with the old and new ones at once."""
        from kconsole.reassign.plan import diff

        (m,) = diff(Plan((Move("mv", 0, (2, 3)),)), builder().build(10.0)).moves
        assert (m.current, m.added, m.removed) == ((2, 1), (3,), (1,))
        assert not m.unchanged


class TestObserverPoll:
    class Reader:
        """AdminReader's calls the KRaft admin poll makes, answering as given."""

        def __init__(self, moving: Any) -> None:
            self.moving = moving
            self.asked: list[list[int]] = []

        def read_cluster(self, **_kw: Any) -> AdminState:
            return state()

        def read_reassignments(self, brokers: list[int]) -> Any:
            self.asked.append(list(brokers))
            if isinstance(self.moving, BaseException):
                raise self.moving
            return self.moving

        def read_elr(self, _topics: list[str]) -> Any:
            return {}

        def refresh_configs(self, _topics: list[str]) -> None:
            pass

        def read_broker_settings(self, _ids: list[int]) -> Any:
            raise ClusterError("not in this test")

    def observer(self) -> tuple[ClusterObserver, list[ClusterSnapshot]]:
        published: list[ClusterSnapshot] = []
        obs = ClusterObserver(Settings(bootstrap="127.0.0.1:1", zookeeper=""))
        obs.builder.set_mode(ClusterMode.KRAFT)
        obs._on_update = lambda snap, _events: published.append(snap)
        return obs, published

    def test_the_first_snapshot_of_a_poll_has_the_adding_replicas(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Read before the publish: a moving partition never flashes under-replicated."""
        monkeypatch.setattr("kconsole.observer.threads.reachable", lambda _h, _p: True)
        obs, published = self.observer()
        reader = self.Reader(MOVING)
        obs._poll_admin(reader)  # type: ignore[arg-type]
        assert reader.asked == [[1, 2, 3]]  # the brokers up, once a poll
        p = published[0].partition("mv", 0)
        assert p is not None and p.adding == (3,) and not p.under_replicated
        health = published[0].source(SourceName.ADMIN)
        assert health is not None and health.ok and not health.degraded

    def test_a_paused_or_unreachable_broker_is_not_asked(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from kconsole.cluster.values import ProcState

        monkeypatch.setattr("kconsole.observer.threads.reachable", lambda _h, p: p != 26093)
        obs, _ = self.observer()
        obs.builder.proc_states = {1: ProcState.PAUSED}
        reader = self.Reader(MOVING)
        obs._poll_admin(reader)  # type: ignore[arg-type]
        assert reader.asked == [[3]]

    def test_a_refusal_is_said_and_the_figures_marked_unknown(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr("kconsole.observer.threads.reachable", lambda _h, _p: True)
        obs, published = self.observer()
        denied = AuthorizationDenied(
            "denied by the cluster's ACLs: this client may not DESCRIBE the cluster (list "
            "partition reassignments; CLUSTER_AUTHORIZATION_FAILED)"
        )
        obs._poll_admin(self.Reader(denied))  # type: ignore[arg-type]
        health = published[0].source(SourceName.ADMIN)
        assert health is not None and health.ok  # the metadata was read
        assert "CLUSTER_AUTHORIZATION_FAILED" in health.error and "unknown" in health.error


class FakeKafkaPython:
    """Stands for kafka_python.list_reassignments_at: answers per broker, records the asks."""

    def __init__(self, answers: dict[int, Any]) -> None:
        self.answers = answers
        self.asked: list[int] = []

    def __call__(self, _admin: Any, node_id: int, timeout_ms: int) -> Any:
        self.asked.append(node_id)
        answer = self.answers[node_id]
        if isinstance(answer, BaseException):
            raise answer
        return answer


class TestAdminReader:
    @pytest.fixture
    def reader(self, monkeypatch: pytest.MonkeyPatch) -> AdminReader:
        reader = AdminReader({"bootstrap.servers": "127.0.0.1:1"})
        monkeypatch.setattr(reader, "_kafka_python", lambda: object())
        return reader

    def test_the_broker_that_answered_is_asked_again_a_failed_one_next_time_not(
        self, reader: AdminReader, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        fake = FakeKafkaPython({1: kafka.errors.KafkaTimeoutError("timed out"), 2: MOVING})
        monkeypatch.setattr(admin_module.kafka_python, "list_reassignments_at", fake)
        with pytest.raises(ClusterError, match=r"ListPartitionReassignments \(broker 1\)"):
            reader.read_reassignments([1, 2])
        assert reader.read_reassignments([1, 2]) == MOVING
        assert reader.read_reassignments([1, 2]) == MOVING
        assert fake.asked == [1, 2, 2]

    def test_an_acl_refusal_says_what_was_denied(
        self, reader: AdminReader, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        refused = kafka.errors.ClusterAuthorizationFailedError("")
        monkeypatch.setattr(
            admin_module.kafka_python, "list_reassignments_at", FakeKafkaPython({1: refused})
        )
        with pytest.raises(AuthorizationDenied, match="may not DESCRIBE the cluster"):
            reader.read_reassignments([1])

    def test_no_broker_up(self, reader: AdminReader) -> None:
        with pytest.raises(ClusterError, match="no broker is up"):
            reader.read_reassignments([])
