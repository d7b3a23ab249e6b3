"""How far a running reassignment has got, from two readings of the replicas' log sizes.

A replica the reassignment adds starts empty and copies the leader's log; "bytes left" is the
leader's size minus the new replica's, the rate is how fast that gap closed between two
readings, and the ETA is the gap over the rate. Pure: the sizes come from DescribeLogDirs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kconsole.models import ClusterSnapshot

Sizes = Mapping[tuple[str, int, int], int]  # (topic, partition, broker) -> bytes


def human_bytes(n: float | None) -> str:
    """Bytes in binary units, the way the CLI and the console print them: 512 B, 1.5 KiB."""
    if n is None:
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"  # not reached


@dataclass(frozen=True)
class ReplicaProgress:
    broker: int
    size: int | None  # the new replica's log now (None: its broker did not answer)
    target: int | None  # the leader's log now
    in_sync: bool

    @property
    def left(self) -> int | None:
        """Bytes still to copy (0 once in sync)."""
        if self.in_sync:
            return 0
        if self.size is None or self.target is None:
            return None
        return max(self.target - self.size, 0)


@dataclass(frozen=True)
class PartitionProgress:
    topic: str
    partition: int
    target: tuple[int, ...]  # the replicas it ends with
    adding: tuple[int, ...]
    removing: tuple[int, ...]
    replicas: tuple[ReplicaProgress, ...]  # one per added replica
    rate: float | None  # bytes/s the gap closed at since the previous reading
    done: bool  # no longer being reassigned

    @property
    def left(self) -> int | None:
        """Bytes still to copy over all added replicas (None: some size unknown)."""
        lefts = [r.left for r in self.replicas]
        return None if any(v is None for v in lefts) else sum(v or 0 for v in lefts)

    @property
    def eta_s(self) -> float | None:
        left = self.left
        if self.done or left == 0:
            return 0.0
        if left is None or not self.rate or self.rate <= 0:
            return None
        return left / self.rate


@dataclass(frozen=True)
class Progress:
    partitions: tuple[PartitionProgress, ...]

    @property
    def done(self) -> bool:
        return all(p.done for p in self.partitions)

    @property
    def left(self) -> int | None:
        lefts = [p.left for p in self.partitions]
        return None if any(v is None for v in lefts) else sum(v or 0 for v in lefts)

    @property
    def rate(self) -> float | None:
        rates = [p.rate for p in self.partitions if not p.done]
        return sum(r for r in rates if r) if any(r is not None for r in rates) else None

    @property
    def eta_s(self) -> float | None:
        left, rate = self.left, self.rate
        if self.done or left == 0:
            return 0.0
        if left is None or not rate:
            return None
        return left / rate


def progress(
    ongoing: Iterable[tuple[str, int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]],
    watched: Iterable[tuple[str, int]],
    leaders: Mapping[tuple[str, int], int],
    isr: Mapping[tuple[str, int], tuple[int, ...]],
    sizes: Sizes,
    previous: Progress | None = None,
    elapsed_s: float | None = None,
) -> Progress:
    """Progress of the `watched` partitions. `ongoing`: (topic, partition, replicas, adding,
    removing) of every reassignment Kafka lists now; a watched partition not in it is done."""
    running = {(t, p): (r, a, rm) for t, p, r, a, rm in ongoing}
    before = {(p.topic, p.partition): p for p in previous.partitions} if previous else {}
    out = []
    for key in sorted(set(watched)):
        topic, part = key
        if key not in running:
            out.append(PartitionProgress(topic, part, (), (), (), (), None, True))
            continue
        replicas, adding, removing = running[key]
        leader = leaders.get(key)
        target_size = sizes.get((topic, part, leader)) if leader is not None else None
        reps = tuple(
            ReplicaProgress(b, sizes.get((topic, part, b)), target_size, b in isr.get(key, ()))
            for b in adding
        )
        now = PartitionProgress(
            topic,
            part,
            tuple(r for r in replicas if r not in removing),
            adding,
            removing,
            reps,
            None,
            False,
        )
        rate = _rate(before.get(key), now, elapsed_s)
        out.append(
            PartitionProgress(now.topic, part, now.target, adding, removing, reps, rate, False)
        )
    return Progress(tuple(out))


def _rate(
    before: PartitionProgress | None, now: PartitionProgress, elapsed_s: float | None
) -> float | None:
    if before is None or not elapsed_s or elapsed_s <= 0:
        return None
    was, left = before.left, now.left
    if was is None or left is None:
        return None
    return max(was - left, 0) / elapsed_s


def read_progress(
    ongoing: Iterable[Any],
    keys: Iterable[tuple[str, int]],
    snap: ClusterSnapshot | None,
    sizes: Mapping[tuple[str, int, int], int],
    previous: Progress | None,
    elapsed_s: float | None,
) -> Progress:
    """progress() of `keys` from one reading: Kafka's running reassignments (objects with
    topic, partition, replicas, adding, removing) and the log sizes; leaders and ISRs from
    `snap`."""
    parts = snap.partitions if snap is not None else ()
    return progress(
        [(o.topic, o.partition, o.replicas, o.adding, o.removing) for o in ongoing],
        keys,
        {(p.topic, p.partition): p.leader for p in parts},
        {(p.topic, p.partition): p.isr for p in parts},
        sizes,
        previous,
        elapsed_s,
    )
