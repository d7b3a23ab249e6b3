"""A reassignment plan: its kafka-reassign-partitions JSON, its checks and its diff.

Pure data and pure functions: nothing here talks to Kafka. `generate` and `drain` live in
`kconsole.reassign.placement`; the ones here hand over to them.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kconsole.errors import ClusterError
from kconsole.models import BrokerState, ClusterSnapshot, Partition

Key = tuple[str, int]


class PlanError(ClusterError):
    """A plan that cannot be read or built; the message says what and where."""


@dataclass(frozen=True)
class Move:
    """One partition's target replica list, preferred leader first."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    log_dirs: tuple[str, ...] = ()  # () means "any" for every replica

    def __post_init__(self) -> None:  # lists given by callers become tuples (hashable, equal)
        object.__setattr__(self, "replicas", tuple(self.replicas))
        object.__setattr__(self, "log_dirs", tuple(self.log_dirs))

    @property
    def key(self) -> Key:
        return (self.topic, self.partition)


@dataclass(frozen=True)
class Plan:
    moves: tuple[Move, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "moves", tuple(self.moves))

    def __len__(self) -> int:
        return len(self.moves)

    def move(self, topic: str, partition: int) -> Move | None:
        return next((m for m in self.moves if m.key == (topic, partition)), None)

    def to_json(self) -> str:
        """kafka-reassign-partitions' format, partitions sorted, log_dirs always written."""
        parts = [
            {
                "topic": m.topic,
                "partition": m.partition,
                "replicas": list(m.replicas),
                "log_dirs": list(m.log_dirs) if m.log_dirs else ["any"] * len(m.replicas),
            }
            for m in sorted(self.moves, key=lambda m: m.key)
        ]
        return json.dumps({"version": 1, "partitions": parts}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Plan:
        """Read a plan written by kconsole or by Kafka's own tool (version 1)."""
        try:
            data = json.loads(text)
        except (TypeError, ValueError) as e:
            raise PlanError(f"not a reassignment plan: the text is not valid JSON ({e})") from e
        except RecursionError:
            raise PlanError("not a reassignment plan: the JSON is nested too deeply") from None
        if not isinstance(data, dict):
            raise PlanError(
                'not a reassignment plan: expected a JSON object with "version" and "partitions"'
            )
        if "version" not in data:
            raise PlanError('not a reassignment plan: "version" is missing (expected 1)')
        if data["version"] != 1 or isinstance(data["version"], bool):
            raise PlanError(f"unsupported plan version {data['version']!r}: only version 1 exists")
        entries = data.get("partitions")
        if not isinstance(entries, list):
            what = "missing" if entries is None else f"a {_kind(entries)}, not a list"
            raise PlanError(f'not a reassignment plan: "partitions" is {what}')
        moves: list[Move] = []
        seen: set[Key] = set()
        for i, entry in enumerate(entries):
            move = _read_move(i, entry)
            if move.key in seen:
                raise PlanError(
                    f"partitions[{i}]: {move.topic}/{move.partition} is listed twice in the plan"
                )
            seen.add(move.key)
            moves.append(move)
        return cls(tuple(sorted(moves, key=lambda m: m.key)))

    @classmethod
    def current(cls, snapshot: ClusterSnapshot, partitions: Iterable[Key] | None = None) -> Plan:
        """The assignment now: applying it undoes a plan (replicas being added are left out)."""
        index = {p_key(p): p for p in snapshot.partitions}
        keys = sorted(index) if partitions is None else sorted(set(partitions))
        moves = []
        for key in keys:
            p = index.get(key)
            if p is None:
                raise PlanError(f"{key[0]}/{key[1]}: no such partition in the cluster")
            moves.append(Move(p.topic, p.partition, original_replicas(p)))
        return cls(tuple(moves))


def p_key(p: Partition) -> Key:
    return (p.topic, p.partition)


def original_replicas(p: Partition) -> tuple[int, ...]:
    """The replicas before any reassignment in progress (Kafka lists adding ones too)."""
    return tuple(r for r in p.replicas if r not in p.adding)


def _kind(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean"}.get(
        type(value), "number" if isinstance(value, int | float) else "null"
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _read_move(i: int, entry: Any) -> Move:
    where = f"partitions[{i}]"
    if not isinstance(entry, dict):
        raise PlanError(f"{where}: expected an object, got a {_kind(entry)}")
    topic = entry.get("topic")
    if not isinstance(topic, str) or not topic:
        raise PlanError(f'{where}: "topic" must be a non-empty string, got {topic!r}')
    partition = entry.get("partition")
    if not _is_int(partition):
        raise PlanError(f'{where} ({topic}): "partition" must be an integer, got {partition!r}')
    assert isinstance(partition, int)
    where = f"{where} ({topic}/{partition})"
    if partition < 0:
        raise PlanError(f"{where}: the partition number must not be negative")
    replicas = entry.get("replicas")
    if not isinstance(replicas, list):
        raise PlanError(f'{where}: "replicas" must be a list of broker ids, got {replicas!r}')
    bad = [r for r in replicas if not _is_int(r) or r < 0]
    if bad:
        raise PlanError(f"{where}: broker ids must be non-negative integers, got {bad[0]!r}")
    log_dirs = entry.get("log_dirs")
    dirs: tuple[str, ...] = ()
    if log_dirs is not None:
        if not isinstance(log_dirs, list) or not all(isinstance(d, str) for d in log_dirs):
            raise PlanError(f'{where}: "log_dirs" must be a list of strings, got {log_dirs!r}')
        if len(log_dirs) != len(replicas):
            raise PlanError(
                f'{where}: "log_dirs" has {len(log_dirs)} entries for {len(replicas)} replicas'
            )
        if any(d != "any" for d in log_dirs):
            dirs = tuple(log_dirs)
    return Move(topic, partition, tuple(replicas), dirs)


# -- validation ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    topic: str | None
    partition: int | None
    message: str  # one sentence, naming the partition

    def __str__(self) -> str:
        return self.message


def topic_rf(partitions: Iterable[Partition]) -> dict[str, int]:
    """Each topic's replication factor: the most common one among its partitions."""
    counts: dict[str, Counter[int]] = {}
    for p in partitions:
        counts.setdefault(p.topic, Counter())[len(original_replicas(p))] += 1
    return {t: max(c, key=lambda rf: (c[rf], rf)) for t, c in counts.items()}


def _ids(brokers: Iterable[int]) -> str:
    return ", ".join(str(b) for b in brokers) or "none"


def validate(
    plan: Plan, snapshot: ClusterSnapshot, *, allow_rf_change: bool = False
) -> list[Problem]:
    """Every problem of `plan` against `snapshot`; a move that changes nothing is fine."""
    if not plan.moves:
        return [Problem(None, None, "the plan is empty: it moves no partition")]
    problems: list[Problem] = []
    index = {p_key(p): p for p in snapshot.partitions}
    known = {b.id: b for b in snapshot.brokers}
    rf_of = topic_rf(snapshot.partitions)
    counts = Counter(m.key for m in plan.moves)
    missing_topics: set[str] = set()
    reported_twice: set[Key] = set()
    for m in sorted(plan.moves, key=lambda m: m.key):
        name = f"{m.topic}/{m.partition}"

        def add(message: str, m: Move = m, name: str = name) -> None:
            problems.append(Problem(m.topic, m.partition, f"{name}: {message}"))

        if counts[m.key] > 1:
            if m.key not in reported_twice:
                reported_twice.add(m.key)
                add(f"the partition is listed {counts[m.key]} times in the plan")
            continue
        if m.topic not in rf_of and snapshot.topic(m.topic) is None:
            if m.topic not in missing_topics:
                missing_topics.add(m.topic)
                problems.append(
                    Problem(m.topic, None, f"{m.topic}: topic {m.topic} does not exist")
                )
            continue
        current = index.get(m.key)
        if current is None:
            have = sorted(p for t, p in index if t == m.topic)
            span = f"partitions {have[0]}-{have[-1]}" if have else "no partitions"
            add(f"partition {m.partition} does not exist ({m.topic} has {span})")
            continue
        if current.reassigning:
            add(
                "already being reassigned "
                f"(adding {_ids(current.adding)}; removing {_ids(current.removing)}): wait "
                "until it is done, or cancel it"
            )
        if not m.replicas:
            add("the replica list is empty")
            continue
        for b in dict.fromkeys(r for r in m.replicas if r not in known):
            add(f"broker {b} does not exist (brokers: {_ids(sorted(known))})")
        for b, n in Counter(m.replicas).items():
            if n > 1:
                add(f"broker {b} is listed {n} times in {list(m.replicas)}")
        if m.log_dirs and len(m.log_dirs) != len(m.replicas):
            add(f"{len(m.log_dirs)} log dirs given for {len(m.replicas)} replicas")
        rf = rf_of.get(m.topic)
        if not allow_rf_change and rf is not None and len(m.replicas) != rf:
            add(
                f"{len(m.replicas)} replicas, but {m.topic} has replication factor {rf} "
                "(changing it was not allowed)"
            )
        t = snapshot.topic(m.topic)
        min_isr = t.min_isr if t is not None and t.min_isr is not None else 1
        live = [b for b in dict.fromkeys(m.replicas) if b in known and _up(known[b].state)]
        if len(live) < min_isr:
            add(
                f"only {len(live)} of the new replicas {'is' if len(live) == 1 else 'are'} up "
                f"({_ids(live)}), fewer than min.insync.replicas={min_isr}"
            )
    return problems


def _up(state: BrokerState) -> bool:
    return state is BrokerState.UP


# -- diff ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MoveDiff:
    topic: str
    partition: int
    current: tuple[int, ...]
    proposed: tuple[int, ...]
    added: tuple[int, ...]
    removed: tuple[int, ...]
    leader_now: int  # -1: offline, or a partition the snapshot does not know
    leader_after: int  # proposed[0]: the preferred leader, elected once the move completes
    size_bytes: int | None  # the leader's log, None when unknown
    copy_bytes: int | None  # size_bytes * len(added), None when the size is unknown

    @property
    def unchanged(self) -> bool:
        return self.proposed == self.current

    @property
    def key(self) -> Key:
        return (self.topic, self.partition)


@dataclass(frozen=True)
class PlanDiff:
    moves: tuple[MoveDiff, ...]

    @property
    def changed(self) -> tuple[MoveDiff, ...]:
        return tuple(m for m in self.moves if not m.unchanged)

    @property
    def total_copy_bytes(self) -> int | None:
        """Bytes to copy; None when the size of a partition that gets a new replica is unknown."""
        needed = [m.copy_bytes for m in self.moves if m.added]
        if any(c is None for c in needed):
            return None
        return sum(c for c in needed if c is not None)

    @property
    def moved_replicas(self) -> int:
        return sum(len(m.added) for m in self.moves)

    @property
    def leader_changes(self) -> int:
        return sum(1 for m in self.changed if m.leader_after != m.leader_now)

    @property
    def partitions_changed(self) -> int:
        return len(self.changed)


def diff(plan: Plan, snapshot: ClusterSnapshot, sizes: Mapping[Key, int] | None = None) -> PlanDiff:
    """What `plan` changes: replicas added and removed, leaders, bytes to copy. A partition
    being reassigned is compared as it was before the move (its replicas without those being
    added): while a move runs its replicas are the old and the new ones at once, and against
    those its own plan would add nothing."""
    index = {p_key(p): p for p in snapshot.partitions}
    sizes = sizes or {}
    out = []
    for m in sorted(plan.moves, key=lambda m: m.key):
        p = index.get(m.key)
        current = original_replicas(p) if p is not None else ()
        added = tuple(b for b in dict.fromkeys(m.replicas) if b not in current)
        size = sizes.get(m.key)
        out.append(
            MoveDiff(
                topic=m.topic,
                partition=m.partition,
                current=current,
                proposed=m.replicas,
                added=added,
                removed=tuple(b for b in current if b not in m.replicas),
                leader_now=p.leader if p is not None else -1,
                leader_after=m.replicas[0] if m.replicas else -1,
                size_bytes=size,
                copy_bytes=None if size is None else size * len(added),
            )
        )
    return PlanDiff(tuple(out))
