"""What a local KRaft cluster says about itself: the metadata quorum (asked of the controllers
directly, so it answers before any broker runs), the registered brokers and whether they are
fenced, and a topic's partitions (asked of the brokers with kafka-python)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from kconsole.cluster.security import kafka_python

NOT_LEADER_OR_FOLLOWER = 6


@dataclass(frozen=True)
class QuorumReplica:
    node_id: int
    log_end_offset: int
    last_fetch_ms: int = -1  # wall-clock ms of its last fetch from the leader (-1: none)
    last_caught_up_ms: int = -1  # wall-clock ms it was last caught up with the leader


@dataclass(frozen=True)
class QuorumState:
    """DescribeQuorum of `__cluster_metadata`: the leader, its epoch and the replicas."""

    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[QuorumReplica, ...]
    observers: tuple[QuorumReplica, ...]

    @property
    def voter_ids(self) -> list[int]:
        return sorted(v.node_id for v in self.voters)

    @property
    def observer_ids(self) -> list[int]:
        return sorted(o.node_id for o in self.observers)

    def voter(self, node_id: int) -> QuorumReplica | None:
        return next((v for v in self.voters if v.node_id == node_id), None)

    def lag(self, node_id: int) -> int | None:
        """Records `node_id` is behind the leader (None: not a voter or observer here)."""
        leader = self.voter(self.leader_id)
        mine = self.voter(node_id) or next(
            (o for o in self.observers if o.node_id == node_id), None
        )
        if leader is None or mine is None or mine.log_end_offset < 0:
            return None
        return max(0, leader.log_end_offset - mine.log_end_offset)


def quorum_from_response(data: Mapping[str, Any]) -> QuorumState | None:
    """A DescribeQuorumResponse as a dict (kafka-python's to_dict(), or what
    KafkaAdminClient.describe_metadata_quorum() returns): None while there is no leader or
    when the node asked is not the leader."""
    if data.get("error_code"):
        return None
    try:
        part = data["topics"][0]["partitions"][0]
    except (KeyError, IndexError, TypeError):
        return None
    if part.get("error_code") or part.get("error") or int(part.get("leader_id", -1)) < 0:
        return None

    def replicas(key: str) -> tuple[QuorumReplica, ...]:
        return tuple(
            QuorumReplica(
                int(r["replica_id"]),
                int(r.get("log_end_offset", -1)),
                int(r.get("last_fetch_timestamp", -1)),
                int(r.get("last_caught_up_timestamp", -1)),
            )
            for r in part.get(key) or []
        )

    return QuorumState(
        leader_id=int(part["leader_id"]),
        leader_epoch=int(part.get("leader_epoch", -1)),
        high_watermark=int(part.get("high_watermark", -1)),
        voters=replicas("current_voters"),
        observers=replicas("observers"),
    )


def quorum_from_controllers(
    host: str, ports: list[int], timeout_s: float = 2.0
) -> QuorumState | None:
    """The quorum as its leader describes it, asking each controller in turn; None when no
    controller answers as leader (not started yet, or an election under way)."""
    for port in ports:
        with suppress(OSError, Exception):
            state = quorum_from_response(kafka_python.describe_quorum_at(host, port, timeout_s))
            if state is not None:
                return state
    return None


def back_in_quorum(
    state: QuorumState | None, node_id: int, since_ms: int
) -> tuple[int, int] | None:
    """(leader, lag) once `state` (the quorum as its leader describes it) says `node_id`
    fetched from the leader and was caught up after `since_ms` (wall-clock ms), or `node_id`
    leads; None until then: how a controller started again is seen back in the quorum."""
    if state is None:
        return None
    if state.leader_id == node_id:
        return state.leader_id, 0
    voter = state.voter(node_id)
    if voter is None or voter.last_fetch_ms < since_ms or voter.last_caught_up_ms < since_ms:
        return None
    return state.leader_id, state.lag(node_id) or 0


@contextmanager
def broker_admin(
    bootstrap: str, timeout_ms: int = 5000, security: Mapping[str, Any] | None = None
) -> Iterator[Any]:
    """A kafka-python KafkaAdminClient on the brokers, closed on exit; `security`: its
    kafka-python security arguments (kconsole.cluster.security.translate.kafka_python_args)."""
    admin = kafka_python.admin_client(
        {
            **(security or {}),
            "bootstrap_servers": bootstrap,
            "request_timeout_ms": timeout_ms,
            "client_id": "kconsole-kraft",
        }
    )
    try:
        yield admin
    finally:
        with suppress(Exception):
            admin.close()


def broker_fencing(admin: Any) -> dict[int, bool]:
    """Every registered broker's id -> fenced (DescribeCluster with fenced brokers, 4.0+)."""
    info = admin.describe_cluster()
    return {int(b["broker_id"]): bool(b.get("is_fenced", False)) for b in info["brokers"]}


@dataclass(frozen=True)
class PartitionState:
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


def topic_partitions(admin: Any, topic: str) -> list[PartitionState] | None:
    """The partitions of `topic` from a broker's metadata; None if it does not exist."""
    described = admin.describe_topics([topic])
    if not described or described[0].get("error_code"):
        return None
    return sorted(
        (
            PartitionState(
                int(p["partition_index"]),
                int(p["leader_id"]),
                tuple(int(r) for r in p["replica_nodes"]),
                tuple(int(r) for r in p["isr_nodes"]),
            )
            for p in described[0]["partitions"]
        ),
        key=lambda p: p.partition,
    )
