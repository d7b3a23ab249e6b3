"""A slice of a burst costs its own changes: ZkReader says which topics and partition states it
re-read since its last ZkState (ZkDelta), the builder builds just those partitions again and
says where they are (PartitionChanges), and diff, the brokers' counts and the partitions table
look only at them. Checked against a build from scratch after any sequence of changes."""

from __future__ import annotations

import dataclasses
import json
import random
from types import SimpleNamespace
from typing import Any

import pytest
from kazoo.exceptions import NoNodeError

from kconsole.cluster.zk import ZkReader, ZkState
from kconsole.models import ClusterSnapshot, SourceName, aligned_changes
from kconsole.observer import SnapshotBuilder
from kconsole.timeline import diff

_STAT = SimpleNamespace(ctime=1_000_000)


class _Answer:
    def __init__(self, zk: _MemZk, path: str) -> None:
        self.zk, self.path = zk, path

    def wait(self, timeout: float | None = None) -> bool:
        return True

    def get(self, timeout: float | None = None) -> tuple[bytes, Any]:
        return self.zk.get(self.path)


class _MemZk:
    """kazoo's reads over an in-memory tree of JSON nodes (the watches are the test's job)."""

    def __init__(self) -> None:
        self.nodes: dict[str, bytes] = {}

    def get(self, path: str, watch: object = None) -> tuple[bytes, Any]:
        if path not in self.nodes:
            raise NoNodeError(path)
        return self.nodes[path], _STAT

    def exists(self, path: str, watch: object = None) -> Any:
        return _STAT if path in self.nodes else None

    def get_children(self, path: str, watch: object = None) -> list[str]:
        prefix = path + "/"
        kids = {p[len(prefix) :].split("/")[0] for p in self.nodes if p.startswith(prefix)}
        if not kids and path not in self.nodes:
            raise NoNodeError(path)
        return sorted(kids)

    def get_async(self, path: str, watch: object = None) -> _Answer:
        return _Answer(self, path)


def _state_path(topic: str, p: int) -> str:
    return f"/brokers/topics/{topic}/partitions/{p}/state"


class _Cluster:
    """A cluster's ZooKeeper tree changing at random; each step returns the paths whose
    watches fire, in the order ZooKeeper would send them."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.zk = _MemZk()
        self.zk.nodes["/controller"] = b'{"brokerid": 1}'
        self.zk.nodes["/controller_epoch"] = b"3"
        self.zk.nodes["/brokers/topics"] = b""
        for b in (1, 2, 3):
            reg = {"host": "127.0.0.1", "port": 19091 + b, "timestamp": "1000"}
            self.zk.nodes[f"/brokers/ids/{b}"] = json.dumps(reg).encode()
        for name in ("a", "b", "c"):
            self.add_topic(name, rng.randint(1, 8))

    def partitions(self, topic: str) -> dict[str, list[int]]:
        data = json.loads(self.zk.nodes[f"/brokers/topics/{topic}"])
        return dict(data["partitions"])

    def topics(self) -> list[str]:
        return self.zk.get_children("/brokers/topics")

    def add_topic(self, name: str, count: int, extra: dict[str, Any] | None = None) -> None:
        old = self.partitions(name) if f"/brokers/topics/{name}" in self.zk.nodes else {}
        parts = {str(p): old.get(str(p)) or self.rng.sample([1, 2, 3, 4], 3) for p in range(count)}
        self.zk.nodes[f"/brokers/topics/{name}"] = json.dumps(
            {"partitions": parts, **(extra or {})}
        ).encode()
        for p in range(len(old), count):
            self.write_state(name, p)

    def write_state(self, topic: str, p: int) -> str:
        leader = self.rng.choice([-1, 1, 2, 3, 4])
        isr = sorted(self.rng.sample([1, 2, 3, 4], self.rng.randint(1, 3)))
        state = {"leader": leader, "isr": isr, "leader_epoch": self.rng.randint(0, 9)}
        self.zk.nodes[_state_path(topic, p)] = json.dumps(state).encode()
        return _state_path(topic, p)

    def step(self) -> list[str] | None:
        """Changes something; the paths whose watches fire (None: a new session)."""
        rng, roll = self.rng, self.rng.random()
        states = sorted(p for p in self.zk.nodes if p.endswith("/state"))
        if roll < 0.5 and states:  # a leader moves, an ISR shrinks: a burst of states
            fired = []
            for path in rng.sample(states, rng.randint(1, min(12, len(states)))):
                parts = path.split("/")
                fired.append(self.write_state(parts[3], int(parts[5])))
            return fired
        if roll < 0.58 and states:  # written again with the same content
            return [rng.choice(states)]
        name = rng.choice(self.topics())
        if roll < 0.66:  # a reassignment starts: the topic node changes, not its partitions
            parts = self.partitions(name)
            parts[rng.choice(sorted(parts))] = rng.sample([1, 2, 3, 4], 3)
            extra = {"adding_replicas": {"0": [4]}} if rng.random() < 0.5 else {}
            self.zk.nodes[f"/brokers/topics/{name}"] = json.dumps(
                {"partitions": parts, **extra}
            ).encode()
            return [f"/brokers/topics/{name}"]
        if roll < 0.72:  # partitions added
            self.add_topic(name, len(self.partitions(name)) + rng.randint(1, 3))
            return [f"/brokers/topics/{name}"]
        if roll < 0.78:  # a topic created
            self.add_topic(f"t{rng.randint(0, 99)}", rng.randint(1, 4))
            return ["/brokers/topics"]
        if roll < 0.84 and len(self.topics()) > 1:  # a topic deleted
            gone = [p for p in self.zk.nodes if p.startswith(f"/brokers/topics/{name}/")]
            for path in [f"/brokers/topics/{name}", *gone]:
                del self.zk.nodes[path]
            return ["/brokers/topics", f"/brokers/topics/{name}", *sorted(gone)]
        if roll < 0.9 and states:  # a state node gone: its partition shows no leader
            path = rng.choice(states)
            del self.zk.nodes[path]
            return [path]
        if roll < 0.95:  # the controller moves
            self.zk.nodes["/controller"] = json.dumps({"brokerid": rng.randint(1, 3)}).encode()
            return ["/controller"]
        return None


def _zk_states(reader: ZkReader, fired: list[str] | None, rng: random.Random) -> list[ZkState]:
    """What ZkWatcher publishes for one batch of watches: the other paths first (published
    when states follow), then the states in slices."""
    if fired is None:
        reader.read_all()
        return [reader.snapshot()]
    out = []
    states = [p for p in fired if p.endswith("/state")]
    others = [p for p in fired if p not in states]
    reader.read_paths(others)
    if others and states:
        out.append(reader.snapshot())
    while states:
        cut = rng.randint(1, len(states))
        reader.read_paths(states[:cut])
        out.append(reader.snapshot())
        states = states[cut:]
    if not out:
        out.append(reader.snapshot())
    return out


def _watching(zk: _MemZk) -> tuple[ZkReader, SnapshotBuilder]:
    """A reader that has read the whole tree, and a builder holding its first state."""
    reader = ZkReader(zk)  # type: ignore[arg-type]
    reader.read_all()
    b = SnapshotBuilder(use_zookeeper=True)
    b.health[SourceName.ZOOKEEPER].success(1.0)
    b.zk = reader.snapshot()
    return reader, b


def _without_changes(snap: ClusterSnapshot) -> ClusterSnapshot:
    return dataclasses.replace(snap, partitions_gen=0, partition_changes=None)


@pytest.mark.parametrize("seed", range(30))
def test_slices_equal_a_build_from_scratch(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """After any sequence of bursts, reassignments, topics coming and going and new sessions,
    each snapshot's partitions equal a fresh build; only what was re-read is built again; its
    changes name exactly the partitions that differ; and diff finds the same events with
    them as with a pass over every partition."""
    rng = random.Random(seed)
    cluster = _Cluster(rng)
    reader, b = _watching(cluster.zk)
    before = b.build(0.0)
    full = 0
    real_full = b._full_build

    def counting(zk: ZkState | None) -> None:
        nonlocal full
        full += 1
        real_full(zk)

    monkeypatch.setattr(b, "_full_build", counting)
    builds = 0
    for n in range(60):
        for state in _zk_states(reader, cluster.step(), rng):
            b.zk = state
            snap = b.build(float(n))
            builds += 1
            fresh = SnapshotBuilder(use_zookeeper=True)
            fresh.zk = dataclasses.replace(state, delta=None)
            fresh.health[SourceName.ZOOKEEPER].success(1.0)
            assert snap.partitions == fresh.build(0.0).partitions
            assert snap.brokers == fresh.build(0.0).brokers
            assert snap.topics == fresh.build(0.0).topics
            pairs = snap.changed_partitions(before)
            assert pairs == aligned_changes(before.partitions, snap.partitions)
            if pairs is not None:
                kept = {id(p) for p in before.partitions}
                changed = {id(b_) for _a, b_ in pairs}
                assert all(id(p) in kept or id(p) in changed for p in snap.partitions)
            assert diff(before, snap) == diff(_without_changes(before), _without_changes(snap))
            before = snap
    assert 0 < full < builds / 2, (full, builds)  # most builds took only what was re-read


def test_a_slice_builds_only_its_own_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    """On 10,000 partitions, a slice of 7 re-read states builds 7 partitions, and the
    snapshot's changes say which (no pass over the others in the builder or in diff)."""
    zk = _MemZk()
    zk.nodes["/brokers/topics"] = b""
    zk.nodes["/brokers/ids/1"] = b'{"host": "h", "port": 1}'
    for t in range(100):
        parts = {str(p): [1, 2, 3] for p in range(100)}
        zk.nodes[f"/brokers/topics/t{t:03d}"] = json.dumps({"partitions": parts}).encode()
        for p in range(100):
            zk.nodes[_state_path(f"t{t:03d}", p)] = b'{"leader": 1, "isr": [1, 2, 3]}'
    reader, b = _watching(zk)
    first = b.build(1.0)
    assert len(first.partitions) == 10_000
    moved = [("t007", 3), ("t042", 0), ("t042", 99), ("t099", 50), ("t000", 1), ("t500", 0)]
    for topic, p in moved[:5]:
        zk.nodes[_state_path(topic, p)] = b'{"leader": 2, "isr": [2, 3]}'
    zk.nodes[_state_path("t001", 1)] = zk.nodes[_state_path("t001", 2)]  # same content
    made: list[tuple[str, int]] = []
    import kconsole.observer.builder as observer

    real = observer._zk_partition

    def counted(topic: str, p: int, tdata: dict[str, Any], st: Any) -> Any:
        made.append((topic, p))
        return real(topic, p, tdata, st)

    monkeypatch.setattr(observer, "_zk_partition", counted)
    reader.read_paths([_state_path(t, p) for t, p in [*moved, ("t001", 1)]])
    b.zk = reader.snapshot()
    second = b.build(2.0)
    assert sorted(made) == sorted([*moved[:5], ("t001", 1)])  # "t500" is in no assignment
    changes = second.partition_changes
    assert changes is not None and changes.base == first.partitions_gen
    assert [second.partitions[i].key for i in changes.positions] == [
        "t000/1",
        "t007/3",
        "t042/0",
        "t042/99",
        "t099/50",
    ]
    events = diff(first, second)
    assert sorted({(e.topic, e.partition) for e in events}) == sorted(moved[:5])
    # The next build with nothing re-read hands on the very same partitions.
    b.zk = reader.snapshot()
    assert b.build(3.0).partitions is second.partitions


def test_changes_count_only_from_the_snapshot_they_were_built_after() -> None:
    """A snapshot's changes are relative to the one built just before it: compared with any
    other, the partitions are compared one by one."""
    zk = _MemZk()
    zk.nodes["/brokers/topics"] = b""
    zk.nodes["/brokers/topics/t"] = b'{"partitions": {"0": [1, 2], "1": [2, 1]}}'
    for p in (0, 1):
        zk.nodes[_state_path("t", p)] = b'{"leader": 1, "isr": [1, 2]}'
    reader, b = _watching(zk)
    s1 = b.build(1.0)
    zk.nodes[_state_path("t", 0)] = b'{"leader": 2, "isr": [2]}'
    reader.read_paths([_state_path("t", 0)])
    b.zk = reader.snapshot()
    s2 = b.build(2.0)
    assert s2.changed_partitions(s1) == [(s1.partitions[0], s2.partitions[0])]
    zk.nodes[_state_path("t", 1)] = b'{"leader": 1, "isr": [1]}'
    reader.read_paths([_state_path("t", 1)])
    b.zk = reader.snapshot()
    s3 = b.build(3.0)
    assert s3.partition_changes is not None and s3.partition_changes.positions == (1,)
    # From s1 both partitions differ, though s3 itself re-read only one of them.
    assert [(a.partition, c.partition) for a, c in s3.changed_partitions(s1) or []] == [
        (0, 0),
        (1, 1),
    ]
    assert [e.partition for e in diff(s1, s3)] == [0, 0, 1]  # leader, ISR; ISR
    assert "partition_changes" not in s3.to_dict() and "partitions_gen" not in s3.to_dict()
    assert ClusterSnapshot.from_dict(s3.to_dict()).partitions == s3.partitions
