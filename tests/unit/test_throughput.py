"""A drill's throughput through the fault (kconsole.drills.throughput)."""

from __future__ import annotations

import pytest

from kconsole.drills.throughput import acked_rates, describe, dip, measurements


def _acks(per_s: float, start: float, end: float) -> list[float]:
    n = int((end - start) * per_s)
    return [start + i / per_s for i in range(n)]


def test_a_leader_stop_dips_the_acks_and_says_when_how_low_and_for_how_long() -> None:
    # 2,000 acks/s for 10 s; the fault at 10 s; nothing acked for 3 s; then the backlog
    # flushes and the pace resumes.
    acked = [*_acks(2000, 0.0, 10.0), *_acks(2000, 13.0, 25.0)]
    points = acked_rates(acked, origin=10.0, until=25.0)
    d = dip(points)
    assert d is not None
    assert d.before == pytest.approx(2000)
    assert d.dipped_at == pytest.approx(0.0)
    assert d.lowest == 0.0
    assert d.recovered_at == pytest.approx(3.0)
    assert d.lasted == pytest.approx(3.0)
    assert describe(d, "acks") == (
        "2,000 acks/s before; under 80% from +0.0 s, lowest 0/s at +0.0 s; back to 90% at +3.0 s"
    )


def test_no_dip_is_said_as_such_and_a_dip_still_on_at_the_end_is_not_back() -> None:
    steady = acked_rates(_acks(1000, 0.0, 20.0), origin=10.0, until=20.0)
    d = dip(steady)
    assert d is not None and d.dipped_at is None and d.lasted is None
    assert "never under 80%" in describe(d, "acks")
    stuck = [(-2.0, 500.0), (-1.0, 500.0), (0.0, 100.0), (2.0, 0.0), (4.0, 450.0)]
    d = dip(stuck)
    assert d is not None and d.recovered_at is None and d.lowest == 0.0 and d.lowest_at == 2.0
    assert "not back to 90% by +4.0 s" in describe(d, "records")


def test_one_reading_back_at_pace_is_not_yet_recovered() -> None:
    points = [(-2.0, 1000.0), (0.0, 0.0), (2.0, 950.0), (4.0, 100.0), (6.0, 990.0), (8.0, 1000.0)]
    d = dip(points)
    assert d is not None and d.recovered_at == 6.0 and d.lowest == 0.0


def test_without_readings_before_the_fault_nothing_is_measured_not_a_zero() -> None:
    (w, c) = measurements([(0.0, 10.0)], [], partial=0)
    assert w.seconds is None and "not measured" in w.note
    assert c.seconds is None and c.name == "cluster throughput dip"


def test_cluster_readings_that_left_out_partitions_are_said() -> None:
    cluster = [(-4.0, 2000.0), (-2.0, 2000.0), (0.0, 900.0), (2.0, 1900.0), (4.0, 2000.0)]
    (_, c) = measurements([], cluster, partial=1)
    assert c.seconds == pytest.approx(2.0)
    assert "1 of 5 readings without the partitions" in c.note
