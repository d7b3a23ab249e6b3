"""Which replication throttles belong to a reassignment. Pure: it imports no client, so the
reassignment screen can use it without loading kafka-python."""

from __future__ import annotations

from collections.abc import Iterable


def throttles_of(throttled: Iterable[str], topics: Iterable[str]) -> list[str]:
    """Of the throttled resources, keyed as ReassignClient.throttles keys them ("broker:N",
    "topic:T"), those a reassignment of `topics` sets and --verify removes: every broker's
    rates, and the replica lists of those topics only. Sorted."""
    wanted = set(topics)
    return sorted(
        k for k in throttled if k.startswith("broker:") or k.removeprefix("topic:") in wanted
    )
