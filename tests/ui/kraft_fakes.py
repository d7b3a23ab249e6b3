"""KRaft snapshots for the screen tests, built from what a real cluster answered.

tests/fixtures/kraft/*.json are raw answers recorded by tests/fixtures/record_kraft.py from a
real dedicated KRaft cluster (Kafka 4.4.0: controllers 1001-1003, brokers 1-3): DescribeQuorum
asked of the controllers, DescribeCluster (with fenced brokers), DescribeFeatures and
DescribeTopicPartitions of test-topic. Times in them are shifted so each was read at
FIXED_NOW. What no cluster answer says is kconsole's own and set here: when it first saw a
leader, the health of its sources, and the wording of a failed read.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from kconsole.cluster.values import ProcState
from kconsole.models import (
    Broker,
    BrokerState,
    ClusterMode,
    ClusterSnapshot,
    Controller,
    Features,
    Group,
    GroupPartition,
    Partition,
    Quorum,
    QuorumReplica,
    SourceHealth,
    SourceName,
    Topic,
)
from kconsole.observer.controllers import controller_statuses

KRAFT_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kraft"
FETCH_TIMEOUT_S = 2.0  # controller.quorum.fetch.timeout.ms of the recorded cluster (default)
FIXED_NOW = 1_800_000_000.0  # what record_kraft.py shifts every answer's time to
# Kafka 4.4.0's MetadataVersion.fromFeatureLevel(33).version() (DescribeFeatures gives the level)
METADATA_VERSIONS = {33: "4.4-IV2"}
# Seconds kconsole has seen the recorded leader lead (its own observation: it led already at
# kconsole's first reading, so its election time is not known).
LEADER_SEEN_FOR = 125.0


def recorded(name: str) -> dict[str, Any]:
    """The raw answers of one recorded scenario."""
    with (KRAFT_FIXTURES / f"{name}.json").open() as f:
        data: dict[str, Any] = json.load(f)
    return data


def _seconds(ms: int | None) -> float | None:
    """An answer's epoch milliseconds as seconds; -1 (not known to the leader) as None."""
    return None if ms is None or ms < 0 else ms / 1000.0


def quorum_from(
    answer: dict[str, Any],
    read_at: float,
    *,
    error: str = "",
    leader_seen_since: float | None = None,
    previous: int | None = None,
) -> Quorum:
    """The Quorum model of a DescribeQuorum answer (v2, with `nodes` for the voters' hosts)."""
    part = answer["topics"][0]["partitions"][0]
    hosts = {
        n["node_id"]: (n["listeners"][0]["host"], n["listeners"][0]["port"])
        for n in answer.get("nodes") or []
        if n.get("listeners")
    }

    def replicas(key: str, voter: bool) -> tuple[QuorumReplica, ...]:
        out = []
        for r in part.get(key) or []:
            host, port = hosts.get(r["replica_id"], (None, None))
            leo = r.get("log_end_offset", -1)
            out.append(
                QuorumReplica(
                    r["replica_id"],
                    voter,
                    log_end_offset=None if leo < 0 else leo,
                    last_fetch_at=_seconds(r.get("last_fetch_timestamp")),
                    last_caught_up_at=_seconds(r.get("last_caught_up_timestamp")),
                    directory_id=r.get("replica_directory_id"),
                    host=host,
                    port=port,
                )
            )
        return tuple(out)

    leader = part["leader_id"]
    return Quorum(
        leader_id=leader if leader >= 0 else None,
        leader_epoch=part["leader_epoch"],
        high_watermark=part["high_watermark"],
        voters=replicas("current_voters", True),
        observers=replicas("observers", False),
        read_at=read_at,
        error=error,
        leader_seen_since=leader_seen_since,
        previous_leader=previous,
    )


def brokers_from(
    answer: dict[str, Any], states: dict[int, BrokerState] | None = None
) -> tuple[Broker, ...]:
    """DescribeCluster's brokers (fenced or not; their roles it does not say); `states` as the
    backend sees the processes."""
    states = states or {}
    return tuple(
        Broker(
            b["broker_id"],
            b["host"],
            b["port"],
            b.get("rack"),
            state=states.get(b["broker_id"], BrokerState.UP),
            fenced=bool(b.get("is_fenced")),
        )
        for b in sorted(answer["brokers"], key=lambda b: b["broker_id"])
    )


def partitions_from(answer: dict[str, Any]) -> tuple[Partition, ...]:
    """DescribeTopicPartitions' partitions (ELR as it came: None when not reported)."""
    out = []
    for t in answer["topics"]:
        for p in t["partitions"]:
            elr, last = p.get("eligible_leader_replicas"), p.get("last_known_elr")
            out.append(
                Partition(
                    t["name"],
                    p["partition_index"],
                    p["leader_id"],
                    tuple(p["replica_nodes"]),
                    tuple(p["isr_nodes"]),
                    p.get("leader_epoch"),
                    elr=None if elr is None else tuple(elr),
                    last_known_elr=None if last is None else tuple(last),
                )
            )
    return tuple(sorted(out, key=lambda p: (p.topic, p.partition)))


def features_from(answer: dict[str, Any], read_at: float) -> Features:
    """DescribeFeatures' finalized levels, read by the quorum reader's own mapping."""
    from kconsole.cluster.kraft.quorum import features_of

    return features_of(answer, read_at)


def sources(
    taken_at: float, quorum_error: str = "", quorum_age: float = 0.3
) -> tuple[SourceHealth, ...]:
    """The quorum, Admin API and groups sources; the quorum failed `quorum_age` s ago when
    `quorum_error` says why."""
    quorum = (
        SourceHealth(SourceName.QUORUM, False, taken_at - quorum_age, quorum_error)
        if quorum_error
        else SourceHealth(SourceName.QUORUM, True, taken_at - quorum_age)
    )
    return (
        quorum,
        SourceHealth(SourceName.ADMIN, True, taken_at - 0.4),
        SourceHealth(SourceName.GROUPS, True, taken_at - 0.9),
    )


def snapshot(
    name: str,
    *,
    quorum: Quorum | None = None,
    brokers: tuple[Broker, ...] | None = None,
    groups: tuple[Group, ...] = (),
    quorum_error: str = "",
    quorum_age: float = 0.3,
    processes: dict[int, ProcState] | None = None,
) -> ClusterSnapshot:
    """The snapshot kconsole would show of the recorded scenario `name` (answers it lacks
    are the healthy recording's: nothing changed there); `processes`: the controllers'
    process states as the backend saw them (the others running)."""
    data, healthy = recorded(name), recorded("healthy")
    now = FIXED_NOW
    cluster = data.get("describe_cluster", healthy["describe_cluster"])
    parts = data.get("describe_topic_partitions", healthy["describe_topic_partitions"])
    if quorum is None:
        quorum = quorum_from(data["describe_quorum"], now, leader_seen_since=now - LEADER_SEEN_FOR)
    return ClusterSnapshot(
        taken_at=now,
        cluster_id=cluster["cluster_id"],
        brokers=brokers if brokers is not None else brokers_from(cluster),
        # led already when first seen: since when is not known (SnapshotBuilder._controller)
        controller=Controller(quorum.leader_id, quorum.leader_epoch, None),
        partitions=partitions_from(parts),
        topics=(Topic("test-topic", min_isr=2),),
        groups=groups,
        sources=sources(now, quorum_error, quorum_age),
        mode=ClusterMode.KRAFT,
        quorum=quorum,
        controllers=controller_statuses(
            quorum,
            quorum.voter_ids,
            {v: ProcState.RUNNING for v in quorum.voter_ids} | (processes or {}),
            FETCH_TIMEOUT_S,
            now,
        ),
        features=features_from(healthy["describe_features"], now),
    )


def healthy() -> ClusterSnapshot:
    """Every voter and observer caught up; leader 1003, epoch 1."""
    return snapshot("healthy")


def lagging_voter() -> ClusterSnapshot:
    """Controller 1001 paused: 14 records behind, its last fetch 6.6 s old."""
    paused = int(recorded("lagging_voter")["paused"])
    return snapshot("lagging_voter", processes={paused: ProcState.PAUSED})


def killed_voter() -> ClusterSnapshot:
    """Controller 1001 killed: the backend says its process is not running; the quorum's
    last answer (the paused recording: its fetches stopped 6.6 s before) says the same."""
    return snapshot("lagging_voter", processes={1001: ProcState.STOPPED})


def fenced_broker() -> ClusterSnapshot:
    """Broker 3 paused until the controller fenced it: out of every ISR, an observer 25
    records behind."""
    data = recorded("fenced_broker")
    paused = {data["paused"]: BrokerState.PAUSED}
    return snapshot("fenced_broker", brokers=brokers_from(data["describe_cluster"], paused))


NO_LEADER_ERROR = (
    "no controller leads (127.0.0.1:19193 not the leader; 127.0.0.1:19192, 127.0.0.1:19194 "
    "not running)"
)


def no_leader(lost_for: float = 6.0) -> ClusterSnapshot:
    """Controllers 1001 and 1003 (the leader) stopped: the majority is lost. 1002 answers
    NOT_LEADER_OR_FOLLOWER (recorded), the others refuse the connection, so the observer says
    there is no leader (SnapshotBuilder.quorum_leaderless, as in the live path) and keeps the
    last figures read with their age."""
    from kconsole.observer.builder import SnapshotBuilder

    data = recorded("no_leader")
    answered = data["describe_quorum_left"]["topics"][0]["partitions"][0]
    assert answered["error_code"] == 6  # NOT_LEADER_OR_FOLLOWER: what the recording says
    now = FIXED_NOW
    last = quorum_from(data["last_quorum"], now - lost_for)
    b = SnapshotBuilder(use_zookeeper=False)
    b.quorum_read(last, now - 120.0)
    b.quorum = dataclasses.replace(b.quorum, read_at=now - lost_for)  # type: ignore[arg-type]
    b.quorum_leaderless(NO_LEADER_ERROR, now - lost_for)
    assert b.quorum is not None
    stopped = {int(n): ProcState.STOPPED for n in data["paused"]}  # refused: "not running"
    return snapshot(
        "no_leader",
        quorum=b.quorum,
        quorum_error=NO_LEADER_ERROR,
        quorum_age=lost_for,
        processes=stopped,
    )


STALE_ERROR = "DescribeQuorum: timed out after 2.0 s (controllers 1001-1003)"


def stale_quorum(age: float = 12.0) -> ClusterSnapshot:
    """The healthy quorum's figures, read `age` seconds ago: the reads since timed out."""
    now = FIXED_NOW
    data = recorded("healthy")
    # The figures as read then: the recording's times moved back by `age`.
    answer = json.loads(json.dumps(data["describe_quorum"]))
    for r in (*answer["topics"][0]["partitions"][0]["current_voters"],
              *answer["topics"][0]["partitions"][0]["observers"]):  # fmt: skip
        for key in ("last_fetch_timestamp", "last_caught_up_timestamp"):
            if r[key] > 0:
                r[key] -= round(age * 1000)
    quorum = quorum_from(
        answer, now - age, error=STALE_ERROR, leader_seen_since=now - LEADER_SEEN_FOR
    )
    return snapshot("healthy", quorum=quorum, quorum_error=STALE_ERROR, quorum_age=age)


def elr_groups() -> ClusterSnapshot:
    """Brokers 2 and 3 paused until fenced (a cluster recorded on its own): test-topic's ISR is
    [1], below min.insync.replicas 2, and broker 3 is an eligible leader replica (KIP-966);
    a classic and a consumer-protocol (KIP-848) group, both empty, listed with their types,
    their committed offsets and log ends as their consumers read them before they closed."""
    data = recorded("elr_groups")
    now = FIXED_NOW
    paused = {b: BrokerState.PAUSED for b in data["paused"]}
    offsets = data["group_offsets"]
    groups = tuple(
        Group(
            g["group_id"],
            g["group_state"],
            0,  # their consumers were closed
            partitions=tuple(
                GroupPartition("test-topic", int(p), committed, log_end)
                for p, (committed, log_end) in sorted(
                    offsets[g["group_id"]].items(), key=lambda kv: int(kv[0])
                )
            ),
            group_type=g["group_type"],
        )
        for g in sorted(data["list_groups"], key=lambda g: g["group_id"])
    )
    quorum = quorum_from(data["describe_quorum"], now, leader_seen_since=now - LEADER_SEEN_FOR)
    snap = snapshot(
        "elr_groups",
        quorum=quorum,
        brokers=brokers_from(data["describe_cluster"], paused),
        groups=groups,
    )
    return dataclasses.replace(snap, features=features_from(data["describe_features"], now))


def new_groups() -> ClusterSnapshot:
    """The four group types Kafka 4.4 lists, with members on test-topic, read from a healthy
    cluster. Recorded on a cluster of its own by tests/fixtures/record_new_groups.py:
    orders-classic (classic protocol, described with DescribeGroups), orders-next (KIP-848
    consumer protocol, ConsumerGroupDescribe) and orders-share (KIP-932 share group,
    ShareGroupDescribe, two members). Recorded by tests/fixtures/record_share_streams.py for the
    same topic: orders-share's start offsets and lag (DescribeShareGroupOffsets) and
    orders-streams (KIP-1071 streams group, StreamsGroupDescribe, one member, its committed
    offsets and log ends as kafka-streams-groups --describe --offsets printed them; nothing was
    produced after, so they are the share group's log ends too). Each answer goes through the
    groups reader's own mapping."""
    from kconsole.cluster.groups import messages as gm
    from kconsole.cluster.groups.reader import (
        CONSUMER_API,
        SHARE_API,
        STREAMS_API,
        _Desc,
        _group,
        _owners,
        _parse_answers,
        _parse_share_offsets,
    )

    def decoded(cls: Any, exchange: list[str]) -> list[dict[str, Any]]:
        raw = bytes.fromhex(exchange[1])[4:]
        return list(cls.decode(raw, version=1, header=True).to_dict()["groups"])

    data = recorded("new_groups")
    more = recorded("share_streams")
    coord = {**data["coordinators"], "orders-streams": more["streams"]["coordinator"]}
    classic, nxt, share, streams = "orders-classic", "orders-next", "orders-share", "orders-streams"
    streams_answer = decoded(gm.StreamsGroupDescribeResponse, more["streams"]["describe"]["v1"])
    descs: dict[str, Any] = {
        classic: _Desc.parse(data["describe_groups"][classic], coord[classic]),
        **_parse_answers(CONSUMER_API, [nxt], data["consumer_group_describe"], coord[nxt]),
        **_parse_answers(SHARE_API, [share], data["share_group_describe"], coord[share]),
        **_parse_answers(STREAMS_API, [streams], streams_answer, coord[streams]),
    }
    offsets = data["group_offsets"]
    ends = {("test-topic", int(p)): end for p, (_c, end) in offsets[classic].items()}
    types = {g["group_id"]: g["group_type"] for g in (*data["list_groups"], *more["list_groups"])}
    share_answer = decoded(gm.DescribeShareGroupOffsetsResponse, more["share"]["offsets"]["v1"])
    shares = _parse_share_offsets([share], share_answer)[share]
    assert not isinstance(shares, BaseException)
    # The streams tool's rows: group topic partition current-offset leader-epoch log-end lag.
    streams_rows = [
        line.split() for line in more["streams"]["tool_offsets"].splitlines()
        if line.startswith(f"{streams} ")
    ]  # fmt: skip
    streams_ends = {("test-topic", int(r[2])): int(r[5]) for r in streams_rows}
    groups = []
    for gid in sorted(descs):
        committed = {("test-topic", int(p)): c for p, (c, _e) in offsets.get(gid, {}).items()}
        if gid == share:
            committed = {tp: o.start for tp, o in shares.items()}
        if gid == streams:
            committed = {("test-topic", int(p)): c for p, c in more["streams"]["offsets"].items()}
        g = _group(
            gid,
            descs[gid],
            committed,
            _owners(descs[gid]),
            streams_ends if gid in (share, streams) else ends,  # their own cluster's
            [],
            {},
            shares if gid == share else None,
        )
        groups.append(dataclasses.replace(g, group_type=types[gid]))
    quorum = quorum_from(
        recorded("healthy")["describe_quorum"],
        FIXED_NOW,
        leader_seen_since=FIXED_NOW - LEADER_SEEN_FOR,
    )
    return snapshot("healthy", quorum=quorum, groups=tuple(groups))
