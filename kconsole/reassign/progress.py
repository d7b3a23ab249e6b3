"""How far a running reassignment has got, from two readings of the replicas' log sizes.

A replica the reassignment adds starts empty and copies the leader's log; "bytes left" is the
leader's size minus the new replica's, the rate is how fast that gap closed over the readings
of the last WINDOW_S seconds (one pair of readings swings with whatever the brokers happened to
flush in between), never more than the throttle lets the brokers copy, and the ETA is the gap
over that rate. A shown ETA counts down between readings and moves only when the rate really
changes (by more than ETA_SLACK of it). Pure: the sizes come from DescribeLogDirs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kconsole.models import ClusterSnapshot

Sizes = Mapping[tuple[str, int, int], int]  # (topic, partition, broker) -> bytes

WINDOW_S = 30.0  # the rate is over the readings of this many seconds
ETA_SLACK = 0.25  # a shown ETA is kept while the new one is within this share of it
ETA_SLACK_MIN_S = 5.0  # ...or within this many seconds


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
    rate: float | None  # bytes/s the gap closed at over the window (capped by the throttle)
    done: bool  # no longer being reassigned
    samples: tuple[tuple[float, int], ...] = ()  # (when, bytes left) within the window

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
    at: float = 0.0  # seconds since the first reading
    throttle_bps: int | None = None  # per broker, as set on the brokers (None: unthrottled)
    held_eta_s: float | None = None  # the ETA shown: see the module docstring

    @property
    def done(self) -> bool:
        return all(p.done for p in self.partitions)

    @property
    def left(self) -> int | None:
        lefts = [p.left for p in self.partitions]
        return None if any(v is None for v in lefts) else sum(v or 0 for v in lefts)

    @property
    def rate(self) -> float | None:
        """Bytes/s over every running partition; with a throttle, at most what the brokers
        receiving the new replicas may take (the throttle each)."""
        rates = [p.rate for p in self.partitions if not p.done]
        if not any(r is not None for r in rates):
            return None
        total = sum(r for r in rates if r)
        if self.throttle_bps is not None:
            receivers = {b for p in self.partitions if not p.done for b in p.adding}
            total = min(total, self.throttle_bps * max(len(receivers), 1))
        return total

    @property
    def raw_eta_s(self) -> float | None:
        """Bytes left over the rate now (jumps with the rate; `eta_s` is what to show)."""
        left, rate = self.left, self.rate
        if self.done or left == 0:
            return 0.0
        if left is None or not rate:
            return None
        return left / rate

    @property
    def eta_s(self) -> float | None:
        if self.done or self.left == 0:
            return 0.0
        return self.held_eta_s


def progress(
    ongoing: Iterable[tuple[str, int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]],
    watched: Iterable[tuple[str, int]],
    leaders: Mapping[tuple[str, int], int],
    isr: Mapping[tuple[str, int], tuple[int, ...]],
    sizes: Sizes,
    previous: Progress | None = None,
    elapsed_s: float | None = None,
    throttle_bps: int | None = None,
) -> Progress:
    """Progress of the `watched` partitions, `elapsed_s` after `previous`. `ongoing`: (topic,
    partition, replicas, adding, removing) of every reassignment Kafka lists now; a watched
    partition not in it is done. `throttle_bps`: the replication throttle on the brokers (the
    previous reading's when not given)."""
    running = {(t, p): (r, a, rm) for t, p, r, a, rm in ongoing}
    before = {(p.topic, p.partition): p for p in previous.partitions} if previous else {}
    at = previous.at + elapsed_s if previous is not None and elapsed_s else 0.0
    if throttle_bps is None and previous is not None:
        throttle_bps = previous.throttle_bps
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
        samples = _samples(before.get(key), at, now.left)
        rate = _rate(samples)
        if rate is not None and throttle_bps is not None:
            # each added replica is fetched by its broker at the throttle at most
            rate = min(rate, throttle_bps * max(len(adding), 1))
        out.append(
            PartitionProgress(
                now.topic, part, now.target, adding, removing, reps, rate, False, samples
            )
        )
    result = Progress(tuple(out), at, throttle_bps)
    return Progress(result.partitions, at, throttle_bps, _held_eta(result, previous, elapsed_s))


def _samples(
    before: PartitionProgress | None, at: float, left: int | None
) -> tuple[tuple[float, int], ...]:
    """The window's readings with this one (an unknown size is no reading)."""
    kept = [s for s in (before.samples if before else ()) if at - s[0] <= WINDOW_S]
    if left is not None:
        kept.append((at, left))
    return tuple(kept)


def _rate(samples: tuple[tuple[float, int], ...]) -> float | None:
    """How fast the gap closed from the window's first reading to its last."""
    if len(samples) < 2:
        return None
    (t0, left0), (t1, left1) = samples[0], samples[-1]
    if t1 <= t0:
        return None
    return max(left0 - left1, 0) / (t1 - t0)


def _held_eta(now: Progress, previous: Progress | None, elapsed_s: float | None) -> float | None:
    """The ETA to show: the previous one counted down, unless the new estimate is off it by
    more than the slack (then the new one)."""
    raw = now.raw_eta_s
    held = previous.held_eta_s if previous is not None else None
    if raw is None or held is None or not elapsed_s:
        return raw
    expected = max(held - elapsed_s, 0.0)
    if abs(raw - expected) <= max(ETA_SLACK * expected, ETA_SLACK_MIN_S):
        return expected
    return raw


def read_progress(
    ongoing: Iterable[Any],
    keys: Iterable[tuple[str, int]],
    snap: ClusterSnapshot | None,
    sizes: Mapping[tuple[str, int, int], int],
    previous: Progress | None,
    elapsed_s: float | None,
    throttle_bps: int | None = None,
) -> Progress:
    """progress() of `keys` from one reading: Kafka's running reassignments (objects with
    topic, partition, replicas, adding, removing) and the log sizes; leaders and ISRs from
    `snap`. One model of "being reassigned": listed by the controller, or shown moving (adding
    / removing replicas) in `snap` — the two are read at different moments, and a partition is
    done only when neither says it moves, so the screen never says "done" beside "in
    progress"."""
    parts = snap.partitions if snap is not None else ()
    listed = [(o.topic, o.partition, o.replicas, o.adding, o.removing) for o in ongoing]
    seen = {(t, p) for t, p, *_ in listed}
    listed += [
        (p.topic, p.partition, p.replicas, p.adding, p.removing)
        for p in parts
        if p.reassigning and (p.topic, p.partition) not in seen
    ]
    return progress(
        listed,
        keys,
        {(p.topic, p.partition): p.leader for p in parts},
        {(p.topic, p.partition): p.isr for p in parts},
        sizes,
        previous,
        elapsed_s,
        throttle_bps,
    )
