"""Reassignment progress from two readings of the log sizes: bytes left, rate, ETA."""

from __future__ import annotations

import pytest

from kconsole.reassign.progress import progress

ONGOING = [("t", 0, (2, 3, 4, 1), (4,), (1,))]
LEADERS = {("t", 0): 2}


def test_bytes_left_rate_and_eta() -> None:
    first = progress(ONGOING, [("t", 0)], LEADERS, {("t", 0): (1, 2, 3)},
                     {("t", 0, 2): 1000, ("t", 0, 4): 100})  # fmt: skip
    p = first.partitions[0]
    assert p.target == (2, 3, 4) and p.left == 900 and p.rate is None and p.eta_s is None
    second = progress(ONGOING, [("t", 0)], LEADERS, {("t", 0): (1, 2, 3)},
                      {("t", 0, 2): 1000, ("t", 0, 4): 500}, first, 2.0)  # fmt: skip
    assert second.left == 500 and second.rate == pytest.approx(200.0)
    assert second.eta_s == pytest.approx(2.5)
    assert not second.done


def test_in_sync_replica_has_nothing_left_and_unknown_sizes_stay_unknown() -> None:
    synced = progress(ONGOING, [("t", 0)], LEADERS, {("t", 0): (1, 2, 3, 4)}, {})
    assert synced.left == 0 and synced.eta_s == 0.0
    unknown = progress(ONGOING, [("t", 0)], LEADERS, {("t", 0): (1, 2, 3)}, {("t", 0, 2): 10})
    assert unknown.left is None and unknown.eta_s is None  # never shown as 0


def test_a_partition_no_longer_listed_is_done() -> None:
    done = progress([], [("t", 0), ("t", 1)], LEADERS, {}, {})
    assert done.done and done.left == 0 and all(p.done for p in done.partitions)
