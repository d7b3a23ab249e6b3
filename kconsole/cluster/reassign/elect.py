"""Leader-election results and Kafka error codes in plain words (ReassignClient.elect sends
the request; this turns the answer into one ElectResult per partition)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import kafka.errors as kerrors

ELECTION_TYPES = {"preferred": 0, "unclean": 1}  # ElectLeaders election_type

# Kafka error name -> what it means here, in plain words.
PLAIN = {
    "UNKNOWN_TOPIC_OR_PARTITION": "the topic or partition does not exist",
    "INVALID_REPLICATION_ASSIGNMENT": "the replica list is invalid (duplicate or unknown broker)",
    "INVALID_REPLICATION_FACTOR": "the replica list is empty or too long",
    "NO_REASSIGNMENT_IN_PROGRESS": "no reassignment of this partition is running",
    "REASSIGNMENT_IN_PROGRESS": "a reassignment of this partition is already running",
    "NOT_CONTROLLER": "the controller moved; try again",
    "REQUEST_TIMED_OUT": "the controller did not finish in time; check the partition again",
    "CLUSTER_AUTHORIZATION_FAILED": "this client may not alter the cluster (ACLs)",
    "TOPIC_AUTHORIZATION_FAILED": "this client may not alter the topic (ACLs)",
    "PREFERRED_LEADER_NOT_AVAILABLE": "the preferred replica is not in the ISR or not alive",
    "ELIGIBLE_LEADERS_NOT_AVAILABLE": "no live replica is eligible",
    "INVALID_REQUEST": "the broker refused the request",
}


@dataclass(frozen=True)
class ElectResult:
    topic: str
    partition: int
    outcome: str  # "elected" | "not needed" | "not possible"
    reason: str  # "" when elected; else Kafka's error name and what it means


def error_text(err: Any, plain: str | None = None) -> str:
    """'NAME: plain explanation' for a kafka-python error class (or instance)."""
    name = getattr(err, "message", None) or getattr(err, "__name__", None) or str(err)
    explain = plain or PLAIN.get(name) or getattr(err, "description", "") or ""
    return f"{name}: {explain}" if explain else str(name)


def elect_result(kind: str, topic: str, partition: int, code: int) -> ElectResult:
    """One partition's outcome from its ElectLeaders error code."""
    err = kerrors.for_code(code)
    if err is kerrors.NoError:
        return ElectResult(topic, partition, "elected", "")
    if err is kerrors.ElectionNotNeededError:
        plain = (
            "the preferred replica already leads"
            if kind == "preferred"
            else "the partition already has a leader"
        )
        return ElectResult(topic, partition, "not needed", error_text(err, plain))
    return ElectResult(topic, partition, "not possible", error_text(err))


def elect_results(kind: str, codes: Iterable[tuple[str, int, int]]) -> list[ElectResult]:
    """Every partition's outcome from its (topic, partition, ElectLeaders error code), by
    topic and partition."""
    results = [elect_result(kind, topic, partition, code) for topic, partition, code in codes]
    return sorted(results, key=lambda r: (r.topic, r.partition))
