"""A topic deleted and created again is a deletion and a creation, not partitions going offline
and coming back (issue 35, item 14). ZooKeeper mode takes it in steps, each a ZkState here as
the watcher reads them (the order Kafka 3.9's controller writes them): the topic marked in
/admin/delete_topics, its leaders set to -1, its nodes removed, the mark removed; a new topic
node (a new topic id) with no partition state, then its states with elected leaders. KRaft
takes each at once."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

from kconsole.cluster.admin import AdminPartition
from kconsole.cluster.zk import ZkState
from kconsole.drills.measure import Replay
from kconsole.models import ClusterMode, ClusterSnapshot, SourceName
from kconsole.observer import SnapshotBuilder
from kconsole.timeline import Event, EventKind, diff
from tests.unit.test_observer_builder import REG, admin_state

T = "test-topic"
OTHER = "audit-log"
REPLICAS = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2], 3: [1, 3, 2]}
TOPIC_EVENTS = {EventKind.TOPIC_DELETING, EventKind.TOPIC_DELETED, EventKind.TOPIC_CREATED}


def _topic(topic_id: str, parts: dict[int, list[int]] = REPLICAS) -> dict[str, Any]:
    return {"version": 3, "topic_id": topic_id, "partitions": {str(p): r for p, r in parts.items()}}


def _state(leader: int, isr: list[int], epoch: int = 0) -> dict[str, Any]:
    return {
        "controller_epoch": 1,
        "leader": leader,
        "leader_epoch": epoch,
        "isr": isr,
        "version": 1,
    }


def _zk(
    topics: dict[str, dict[str, Any]],
    states: dict[tuple[str, int], dict[str, Any]],
    deleting: frozenset[str] = frozenset(),
) -> ZkState:
    return ZkState(
        read_at=0.0,
        controller=1,
        controller_epoch=1,
        controller_since=1.0,
        brokers=dict(REG),
        topics=topics,
        states=states,
        deleting=deleting,
    )


OTHER_TOPIC = {OTHER: _topic("other-id", {0: [2, 1, 3]})}
OTHER_STATE = {(OTHER, 0): _state(2, [2, 1, 3])}
LED = {(T, p): _state(r[0], r) for p, r in REPLICAS.items()}


def deletion_and_creation() -> list[ZkState]:
    """What the watcher publishes while `kafka-topics --delete` and `--create` of test-topic
    run, the other topic untouched."""
    old, new = {T: _topic("id-A")}, {T: _topic("id-B")}
    marked = frozenset({T})
    # The controller takes each replica out (OfflineReplica): leader -1, the last one kept.
    no_leader = {(T, p): _state(-1, r[-1:], 1) for p, r in REPLICAS.items()}
    return [
        _zk({**OTHER_TOPIC, **old}, {**OTHER_STATE, **LED}),
        _zk({**OTHER_TOPIC, **old}, {**OTHER_STATE, **LED}, marked),
        _zk({**OTHER_TOPIC, **old}, {**OTHER_STATE, **no_leader}, marked),
        _zk({**OTHER_TOPIC, **old}, dict(OTHER_STATE), marked),  # its state nodes removed first
        _zk(dict(OTHER_TOPIC), dict(OTHER_STATE), marked),
        _zk(dict(OTHER_TOPIC), dict(OTHER_STATE)),
        _zk({**OTHER_TOPIC, **new}, dict(OTHER_STATE)),  # assigned, not elected yet
        _zk({**OTHER_TOPIC, **new}, {**OTHER_STATE, (T, 0): LED[(T, 0)]}),
        _zk({**OTHER_TOPIC, **new}, {**OTHER_STATE, **LED}),
    ]


def built(states: list[ZkState]) -> list[ClusterSnapshot]:
    b = SnapshotBuilder(use_zookeeper=True)
    b.admin = replace(admin_state(), topics=None)  # ZooKeeper serves the partitions
    out = []
    for i, zk in enumerate(states):
        b.zk = zk
        b.health[next(n for n in b.health if n.value == "zookeeper")].success(float(i))
        out.append(b.build(100.0 + i))
    return out


def events_of(snaps: list[ClusterSnapshot]) -> list[Event]:
    return [e for a, z in itertools.pairwise(snaps) for e in diff(a, z)]


def test_zookeeper_delete_and_create_are_topic_events_not_offline_ones() -> None:
    snaps = built(deletion_and_creation())
    events = events_of(snaps)
    assert [(e.kind, e.text) for e in events] == [
        (EventKind.TOPIC_DELETING, f"topic {T} is being deleted (4 partitions)"),
        (EventKind.TOPIC_DELETED, f"topic {T} deleted"),
        (EventKind.TOPIC_CREATED, f"topic {T} created (4 partitions, replication factor 3)"),
    ]
    created = events[-1]
    assert created.new == tuple((p, r[0], tuple(r), tuple(r)) for p, r in REPLICAS.items())


def test_partitions_going_or_coming_are_not_flagged_offline() -> None:
    """While marked for deletion (leaders -1) its partitions say `deleting`, while not yet
    elected `creating`: neither is counted offline; the other topic is untouched."""
    snaps = built(deletion_and_creation())
    for snap in snaps:
        other = snap.partition(OTHER, 0)
        assert other is not None and snap.flags(other) == []
    marked = snaps[2]
    topic = marked.topic(T)
    assert topic is not None and topic.deleting and topic.topic_id == "id-A"
    assert {tuple(marked.flags(p)) for p in marked.partitions_of(T)} == {("deleting",)}
    assert all(p.leader == -1 for p in marked.partitions_of(T))
    coming = snaps[7]
    assert coming.topic(T) == replace(coming.topic(T), creating=True, topic_id="id-B")  # type: ignore[arg-type]
    assert {tuple(coming.flags(p)) for p in coming.partitions_of(T)} == {("creating",)}
    assert not any("offline" in snap.flags(p) for snap in snaps for p in snap.partitions)
    whole = snaps[-1].topic(T)
    assert whole is not None and whole.live


def test_the_timeline_counts_no_deleted_partition_offline() -> None:
    """The drill chart's replay: a topic that had offline partitions (its leader's broker
    down in a drill) and was then deleted counts 0 offline once deleted; the new topic's
    partitions are counted as they are."""
    snaps = built(deletion_and_creation())
    before = snaps[0]
    replay = Replay.of(before)
    outage = [
        Event(
            100.5, EventKind.PARTITION_OFFLINE, f"{T}/{p} is offline", topic=T, partition=p, new=-1
        )
        for p in range(3)
    ]
    for e in outage:
        replay.apply(e)
    assert replay.frame().offline == 3
    for e in events_of(snaps):
        replay.apply(e)
        assert replay.frame().offline <= 3
    assert replay.frame().offline == 0 and replay.frame().under_replicated == 0
    assert replay.leader[(T, 2)] == REPLICAS[2][0] and replay.isr_full()


def test_a_topic_replaced_between_two_reads_is_deleted_then_created() -> None:
    """The watcher may publish the new topic in the read that finds the old one gone: its new
    topic id says it is another topic (no leader-changed events of the old one's)."""
    states = deletion_and_creation()
    moved = {(T, p): _state(r[1], r) for p, r in REPLICAS.items()}  # other leaders this time
    snaps = built([states[0], _zk({**OTHER_TOPIC, T: _topic("id-B")}, {**OTHER_STATE, **moved})])
    assert [e.kind for e in events_of(snaps)] == [EventKind.TOPIC_DELETED, EventKind.TOPIC_CREATED]


def test_kraft_topic_gone_and_back_are_topic_events() -> None:
    """KRaft deletes a topic in one metadata record and creates one with its leaders: the
    topic is gone from one read and back in a later one."""
    b = SnapshotBuilder(use_zookeeper=False)
    b.set_mode(ClusterMode.KRAFT)
    parts = tuple(AdminPartition(p, r[0], tuple(r), tuple(r)) for p, r in REPLICAS.items())
    other = (AdminPartition(0, 2, (2, 1, 3), (2, 1, 3)),)
    snaps = []
    for i, topics in enumerate(
        [{OTHER: other, T: parts}, {OTHER: other}, {OTHER: other, T: parts}]
    ):
        b.admin = replace(admin_state(), topics=topics)
        b.health[SourceName.ADMIN].success(100.0 + i)
        snaps.append(b.build(100.0 + i))
    events = events_of(snaps)
    assert [e.kind for e in events] == [EventKind.TOPIC_DELETED, EventKind.TOPIC_CREATED]
    assert not {e.kind for e in events} - TOPIC_EVENTS


def test_no_topic_event_before_the_topics_were_first_read() -> None:
    """KRaft: the quorum poller publishes before the first metadata read; the topics then
    first seen were not created (the console said 'topic test-topic created' at start)."""
    b = SnapshotBuilder(use_zookeeper=False)
    b.set_mode(ClusterMode.KRAFT)
    b.health[SourceName.QUORUM].success(100.0)
    first = b.build(100.0)
    parts = tuple(AdminPartition(p, r[0], tuple(r), tuple(r)) for p, r in REPLICAS.items())
    b.admin = replace(admin_state(), topics={T: parts})
    b.health[SourceName.ADMIN].success(101.0)
    assert first.topics == ()
    assert not [e for e in diff(first, b.build(101.0)) if e.kind in TOPIC_EVENTS]
