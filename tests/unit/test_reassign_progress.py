"""Reassignment progress from two readings of the log sizes: bytes left, rate, ETA."""

from __future__ import annotations

from itertools import pairwise

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


def readings(lefts: list[int], every_s: float = 2.0, throttle: int | None = None) -> list:
    """progress() over readings of the new replica's size, `every_s` apart."""
    out, previous = [], None
    for left in lefts:
        previous = progress(
            ONGOING, [("t", 0)], LEADERS, {("t", 0): (1, 2, 3)},
            {("t", 0, 2): 10_000_000, ("t", 0, 4): 10_000_000 - left},
            previous, every_s if previous else None, throttle,
        )  # fmt: skip
        out.append(previous)
    return out


def test_the_rate_is_over_the_window_not_the_last_pair() -> None:
    """A broker flushes in bursts: the gap closes 0, 2,000, 0, 2,000 ... bytes per 2 s. The
    rate over the window is the steady 500 B/s, not 0 / 1,000 / 0 B/s."""
    lefts = [9_000_000 - 2000 * (i // 2) for i in range(12)]
    last = readings(lefts)[-1]
    assert last.rate == pytest.approx(2000 * 5 / 22, rel=0.01)


def test_never_above_the_throttle() -> None:
    """Log sizes can jump by more than the throttle let through (a segment rolled, a flush):
    the rate shown is capped by what the throttle lets the one receiving broker take."""
    last = readings([9_000_000, 8_000_000], throttle=100_000)[-1]
    assert last.rate == 100_000
    assert last.partitions[0].rate == 100_000


def test_the_eta_counts_down_and_moves_only_when_the_rate_does() -> None:
    # 1 MB/s for 10 readings, then a wobble of a few percent: the ETA only counts down
    steady = [9_000_000 - 2_000_000 * i for i in range(4)]
    wobble = [steady[-1] - 1_900_000, steady[-1] - 4_100_000]
    shown = [p.eta_s for p in readings(steady + wobble)]
    assert shown[0] is None  # one reading: no rate yet
    counted = [round(e, 3) for e in shown[2:]]  # type: ignore[arg-type]
    assert all(b == pytest.approx(max(a - 2.0, 0), abs=1e-6) for a, b in pairwise(counted))
    # the rate drops to a quarter for good: the ETA moves to the new estimate, it does not
    # keep counting down from the old one
    fast = [100_000_000 - 2_000_000 * i for i in range(6)]
    slow = [fast[-1] - 500_000 * i for i in range(1, 13)]
    shown = readings(fast + slow)
    before, last = shown[len(fast) - 1], shown[-1]
    assert last.eta_s == pytest.approx(last.raw_eta_s)
    assert last.eta_s > 2 * (before.eta_s - 2.0 * len(slow))  # type: ignore[operator]
