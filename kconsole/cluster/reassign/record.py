"""The reassignments kconsole started, kept in the state dir, one file per cluster.

Kafka remembers a running reassignment's replicas but not the order they had before it, nor
which replication throttles were set for it. kconsole writes both down when it executes a move
(`MoveBook.add`), so that cancelling puts each partition back in its original order (the
preferred leader included) and removes exactly the throttles that move set, and so that the
reassignment screen can show, after a restart, what it had started. An entry goes when its move
is cancelled or found finished.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TP = tuple[str, int]


@dataclass(frozen=True)
class MoveRecord:
    """One partition's move as kconsole started it."""

    topic: str
    partition: int
    original: tuple[int, ...]  # the replicas before the move, in their order
    target: tuple[int, ...]
    started_at: float
    throttle_bps: int | None = None  # the rate set on every broker of the move, if any
    throttle_brokers: tuple[int, ...] = ()  # where that rate was set for this move
    leader_throttled: tuple[int, ...] = ()  # brokers in this partition's leader replica list
    follower_throttled: tuple[int, ...] = ()  # brokers in its follower replica list

    @property
    def key(self) -> TP:
        return (self.topic, self.partition)

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "original": list(self.original),
            "target": list(self.target),
            "started_at": self.started_at,
            "throttle_bps": self.throttle_bps,
            "throttle_brokers": list(self.throttle_brokers),
            "leader_throttled": list(self.leader_throttled),
            "follower_throttled": list(self.follower_throttled),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MoveRecord:
        ints = lambda v: tuple(int(x) for x in v or ())  # noqa: E731
        return cls(
            str(d["topic"]),
            int(d["partition"]),
            ints(d["original"]),
            ints(d["target"]),
            float(d.get("started_at") or 0.0),
            None if d.get("throttle_bps") is None else int(d["throttle_bps"]),
            ints(d.get("throttle_brokers")),
            ints(d.get("leader_throttled")),
            ints(d.get("follower_throttled")),
        )


def book_name(cluster: str) -> str:
    """A file name for a cluster id or bootstrap list."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", cluster)[:120] or "unknown"


class MoveBook:
    """The moves kconsole started on one cluster: `<dir>/<cluster>.json`, rewritten whole and
    atomically on every change (a handful of entries; readers never see half a file)."""

    def __init__(self, directory: Path, cluster: str) -> None:
        self.path = directory / f"{book_name(cluster)}.json"

    def load(self) -> dict[TP, MoveRecord]:
        """Every recorded move (an unreadable file reads as none: it is a memory, not a
        source of truth, and Kafka's own list of running reassignments still holds)."""
        try:
            data = json.loads(self.path.read_text())
            return {r.key: r for r in (MoveRecord.from_dict(d) for d in data.get("moves", ()))}
        except (OSError, ValueError, KeyError, TypeError):
            return {}

    def add(self, records: Iterable[MoveRecord]) -> None:
        """Record moves (a partition moved again keeps its first original order: that is the
        one a cancel goes back to)."""
        moves = self.load()
        for r in records:
            before = moves.get(r.key)
            if before is not None:
                r = MoveRecord(r.topic, r.partition, before.original, r.target, r.started_at,
                               r.throttle_bps, r.throttle_brokers, r.leader_throttled,
                               r.follower_throttled)  # fmt: skip
            moves[r.key] = r
        self._write(moves)

    def drop(self, keys: Iterable[TP]) -> None:
        """Forget these partitions' moves (cancelled, or found finished)."""
        moves = self.load()
        gone = [k for k in keys if k in moves]
        if not gone:
            return
        for k in gone:
            del moves[k]
        self._write(moves)

    def _write(self, moves: Mapping[TP, MoveRecord]) -> None:
        if not moves:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        body = {"version": 1, "written_at": time.time(),
                "moves": [moves[k].to_dict() for k in sorted(moves)]}  # fmt: skip
        tmp.write_text(json.dumps(body, indent=1) + "\n")
        os.replace(tmp, self.path)


def records_for(
    moves: Sequence[tuple[str, int, tuple[int, ...]]],
    current: Mapping[TP, Sequence[int]],
    throttle_bps: int | None,
    throttle_brokers: Sequence[int],
    leader: Mapping[str, str],
    follower: Mapping[str, str],
    now: float,
) -> list[MoveRecord]:
    """What to write down for `moves` just started: the replicas they had (in order), and of
    the throttles just set (ThrottlePlan's leader / follower lists) each partition's own."""

    def mine(lists: Mapping[str, str], topic: str, partition: int) -> tuple[int, ...]:
        pairs = (e.split(":") for e in lists.get(topic, "").split(",") if ":" in e)
        return tuple(sorted({int(b) for p, b in pairs if p.isdigit() and int(p) == partition}))

    return [
        MoveRecord(
            topic,
            partition,
            tuple(current.get((topic, partition), ())),
            tuple(target),
            now,
            throttle_bps,
            tuple(throttle_brokers) if throttle_bps is not None else (),
            mine(leader, topic, partition) if throttle_bps is not None else (),
            mine(follower, topic, partition) if throttle_bps is not None else (),
        )
        for topic, partition, target in moves
    ]
