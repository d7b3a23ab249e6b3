"""changed_partitions and the title's counts: what the partitions table's incremental refresh
rests on."""

from __future__ import annotations

import dataclasses

from kconsole.models import Partition
from kconsole.ui.rows import PartitionView, changed_partitions, count_partitions
from tests.ui.builders import healthy as snapshot


def parts(*leaders: int, topic: str = "t") -> tuple[Partition, ...]:
    return tuple(Partition(topic, i, lead, (1, 2, 3), (1, 2, 3)) for i, lead in enumerate(leaders))


def test_same_objects_are_no_change() -> None:
    a = parts(1, 2, 3)
    assert changed_partitions(a, a) == []
    assert changed_partitions(a, tuple(a)) == []


def test_equal_but_new_objects_are_no_change() -> None:
    assert changed_partitions(parts(1, 2, 3), parts(1, 2, 3)) == []


def test_a_changed_partition_is_paired_with_its_old_self() -> None:
    a, b = parts(1, 2, 3), parts(1, 3, 3)
    assert changed_partitions(a, b) == [(a[1], b[1])]


def test_added_and_removed_partitions() -> None:
    a = parts(1, 2)
    b = (*parts(1, 2), Partition("u", 0, 1, (1,), (1,)))
    assert changed_partitions(a, b) == [(None, b[2])]
    assert changed_partitions(b, a) == [(b[2], None)]


def test_same_length_but_another_topic() -> None:
    """One topic deleted and another created between two snapshots: not aligned by position."""
    a = (*parts(1), Partition("x", 0, 1, (1,), (1,)))
    b = (*parts(1), Partition("y", 0, 1, (1,), (1,)))
    assert changed_partitions(a, b) == [(None, b[1]), (a[1], None)]


def test_counts_from_scratch() -> None:
    snap = snapshot()
    offline = dataclasses.replace(snap.partitions[0], leader=-1, isr=())
    snap = dataclasses.replace(snap, partitions=(offline, *snap.partitions[1:]))
    counts = count_partitions(snap, PartitionView())
    internal = sum(1 for p in snap.partitions if snap.is_internal(p.topic))
    assert counts.total == len(snap.partitions)
    assert counts.shown == len(snap.partitions) - internal
    assert counts.offline == 1
    assert counts.unhealthy == sum(1 for p in snap.partitions if snap.flags(p))
    assert count_partitions(None, PartitionView()).total == 0
