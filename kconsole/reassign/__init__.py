"""Partition reassignment, planned without touching Kafka: plans, checks, diffs, placement."""

from __future__ import annotations

from kconsole.reassign.placement import drain, generate, kafka_replicas, rack_alternated
from kconsole.reassign.plan import (
    Move,
    MoveDiff,
    Plan,
    PlanDiff,
    PlanError,
    Problem,
    diff,
    validate,
)

__all__ = [
    "Move",
    "MoveDiff",
    "Plan",
    "PlanDiff",
    "PlanError",
    "Problem",
    "diff",
    "drain",
    "generate",
    "kafka_replicas",
    "rack_alternated",
    "validate",
]
