"""Rates over a window and groups judged as Burrow does (kconsole.rates), from readings."""

from __future__ import annotations

import pytest

from kconsole.models import (
    Broker,
    BrokerState,
    ClusterSnapshot,
    Group,
    GroupPartition,
    LagStatus,
    Partition,
    Rate,
    Topic,
    sum_rates,
)
from kconsole.rates import RateBook, judge, rate_text, topic_loads, trend_text

TP = ("orders", 0)


def test_a_counter_read_every_two_seconds_gives_its_rate_once_the_window_is_full() -> None:
    book = RateBook(30.0)
    for i in range(20):  # 2,000 records a second, read every 2 s (38 s in all)
        book.read_ends(100.0 + 2 * i, {TP: 4000 * i}, {}, [TP])
        r = book.rates().records(*TP)
        if i == 0:
            assert r.per_s is None and r.reason == "one reading so far"
            continue
        assert r.per_s == pytest.approx(2000.0)
        assert r.full is (2 * i >= 30)
        assert r.span_s == pytest.approx(min(2 * i, 30))


def test_a_log_end_that_goes_back_starts_again_and_says_so_never_a_negative_rate() -> None:
    book = RateBook(30.0)
    book.read_ends(0.0, {TP: 5000}, {}, [TP])
    book.read_ends(2.0, {TP: 6000}, {}, [TP])
    book.read_ends(4.0, {TP: 10}, {}, [TP])  # the topic deleted and made again
    r = book.rates().records(*TP)
    assert r.per_s is None
    assert "went back from 6,000 to 10" in r.reason and "made again" in r.reason
    book.read_ends(6.0, {TP: 410}, {}, [TP])
    r = book.rates().records(*TP)
    assert r.per_s == pytest.approx(200.0)
    assert "went back" in r.reason  # measured since, until a whole window is in


def test_a_reading_that_failed_is_unknown_with_its_reason_and_the_age_of_the_last() -> None:
    book = RateBook(30.0)
    book.read_ends(0.0, {TP: 0}, {}, [TP])
    book.read_ends(2.0, {TP: 100}, {}, [TP])
    book.read_ends(4.0, {}, {TP: "leader 2: timed out"}, [TP])
    r = book.rates().records(*TP)
    assert r.per_s is None and r.reason == "leader 2: timed out" and r.as_of == 2.0
    assert rate_text(r, now=14.0) == "? 12s"
    assert rate_text(r, now=14.0, why=True) == "? 12s (leader 2: timed out)"


def test_a_partition_gone_from_the_cluster_is_forgotten() -> None:
    book = RateBook(30.0)
    book.read_ends(0.0, {TP: 0, ("x", 0): 0}, {}, [TP, ("x", 0)])
    book.read_ends(2.0, {TP: 10}, {}, [TP])
    assert book.rates().partition("x", 0) is None


def test_a_sum_with_unknown_parts_is_at_least_the_known_ones_never_their_zero() -> None:
    known = Rate(100.0, 30.0, 30.0, 1.0)
    unknown = Rate(None, window_s=30.0, reason="leader 3: timed out")
    s = sum_rates([known, known, unknown])
    assert s.per_s == 200.0 and s.partial
    assert "1 of 3 not known: leader 3: timed out" in s.reason
    assert rate_text(s, now=2.0) == "≥200/s"
    assert sum_rates([unknown]).per_s is None


def test_log_sizes_read_from_another_broker_after_a_leader_change_start_again() -> None:
    book = RateBook(30.0)
    book.read_ends(0.0, {TP: 0}, {}, [TP])
    book.read_sizes(0.0, {TP: (1, 1000)}, {})
    book.read_sizes(10.0, {TP: (1, 11000)}, {})
    assert book.rates().bytes(*TP).per_s == pytest.approx(1000.0)
    book.read_sizes(20.0, {TP: (2, 10990)}, {})  # broker 2 leads it now: its own log
    b = book.rates().bytes(*TP)
    assert b.per_s is None and "broker 2" in b.reason


def test_a_cluster_that_gives_no_sizes_has_no_bytes_figure_and_says_why() -> None:
    book = RateBook(30.0)
    book.read_ends(0.0, {TP: 0}, {}, [TP])
    book.read_sizes(0.0, {}, {}, note="broker 1: ClusterAuthorizationFailedError")
    r = book.rates()
    assert r.bytes_note and r.bytes(*TP).per_s is None
    assert "ClusterAuthorizationFailedError" in r.bytes(*TP).reason


# -- judging a group partition over the window (Burrow's rules) -----------------------------


def _points(
    commits: list[int], ends: list[int], every: float = 2.0
) -> list[tuple[float, int, int]]:
    return [(i * every, c, e) for i, (c, e) in enumerate(zip(commits, ends, strict=True))]


def test_lag_zero_at_any_reading_of_the_window_is_ok() -> None:
    pts = _points([0, 100, 200, 300], [100, 200, 200, 400], every=10)
    assert judge(pts, 30.0, members=1) == (LagStatus.OK, "caught up within the window")


def test_a_stuck_committed_offset_with_members_is_stalled_without_is_stopped() -> None:
    pts = _points([500] * 16, [600 + 10 * i for i in range(16)])
    status, reason = judge(pts, 30.0, members=2)
    assert status is LagStatus.STALLED
    assert reason == "2 member(s), but committed offset 500 has not moved for 30 s; lag 250"
    status, reason = judge(pts, 30.0, members=0)
    assert status is LagStatus.STOPPED and reason.startswith("no member consumes")


def test_lag_growing_while_offsets_move_is_a_warning_with_both_rates() -> None:
    # produced 2,000/s, consumed 500/s: lag grows 1,500/s
    pts = _points([1000 + 1000 * i for i in range(16)], [2000 + 4000 * i for i in range(16)])
    status, reason = judge(pts, 30.0, members=1)
    assert status is LagStatus.WARNING
    assert reason == "lag grew 1,000 -> 46,000 in 30 s (consuming 500/s, produced 2,000/s)"


def test_a_saw_tooth_lag_from_periodic_commits_is_ok_when_it_keeps_up() -> None:
    # 1,000/s produced; the consumer keeps up but commits every 6 s: the lag saw-tooths
    # between 0.. and 6,000 and never reads 0 at a poll.
    commits, ends = [], []
    for i in range(16):
        t = 2 * i
        ends.append(1000 * t + 500)
        commits.append(1000 * (t - t % 6))
    status, _ = judge(_points(commits, ends), 30.0, members=1)
    assert status is LagStatus.OK


def test_before_a_whole_window_a_partition_is_pending_and_says_how_much_is_read() -> None:
    pts = _points([0, 10, 20], [100, 200, 300])
    assert judge(pts, 30.0, members=1) == (
        LagStatus.PENDING,
        "judged once 30 s are read (4 s so far)",
    )


def _group(committed: int | None, end: int | None, members: int = 1) -> Group:
    return Group("g", "Stable" if members else "Empty", members, partitions=(
        GroupPartition("orders", 0, committed, end),
    ))  # fmt: skip


def test_a_draining_group_says_its_time_to_catch_up() -> None:
    book = RateBook(30.0)
    # production stopped at 60,000; the group consumes 500/s from 30,000
    for i in range(20):
        t = 2.0 * i
        book.read_ends(t, {TP: 60_000}, {}, [TP])
        book.read_groups(t, [_group(30_000 + 1000 * i, 60_000)])
    g = _group(30_000 + 1000 * 19, 60_000)
    gr = book.rates([g]).group("g")
    assert gr is not None
    assert gr.trend == "draining" and gr.lag_per_s == pytest.approx(-500.0)
    assert gr.catch_up_s == pytest.approx(22.0)  # lag 11,000 at 500/s
    assert gr.consumed.per_s == pytest.approx(500.0) and gr.produced.per_s == 0.0
    assert trend_text(gr) == "draining, 22s to catch up"
    assert gr.status is LagStatus.OK


def test_a_group_that_stops_consuming_is_stopped_within_the_window_and_says_where() -> None:
    book = RateBook(30.0)
    for i in range(25):  # it consumed to 5,000 (4 s), then left: lag from 10 s on
        t = 2.0 * i
        end = 1000 * i
        book.read_ends(t, {TP: end}, {}, [TP])
        book.read_groups(t, [_group(min(end, 5000), end, members=0)])
    gr = book.rates([_group(5000, 24000, members=0)]).group("g")
    assert gr is not None and gr.status is LagStatus.STOPPED
    assert gr.reason.startswith("orders/0: no member consumes: committed offset 5,000")
    assert gr.trend == "growing"


def test_an_unread_committed_offset_makes_the_partition_unknown_not_ok() -> None:
    book = RateBook(30.0)
    book.read_ends(0.0, {TP: 10}, {}, [TP])
    g = Group("g", "Stable", 1, partitions=(
        GroupPartition("orders", 0, None, 10, committed_known=False),
    ))  # fmt: skip
    book.read_groups(0.0, [g])
    gr = book.rates([g]).group("g")
    assert gr is not None and gr.status is LagStatus.UNKNOWN
    assert "committed offset not read" in gr.reason


# -- topics ---------------------------------------------------------------------------------


def test_a_topic_whose_busiest_partition_takes_most_is_hot_with_its_skew() -> None:
    book = RateBook(30.0)
    parts = [("t", i) for i in range(4)]
    per_s = [700, 100, 100, 100]
    for step in range(2):
        book.read_ends(
            30.0 * step, {tp: 30 * r * step for tp, r in zip(parts, per_s, strict=True)}, {}, parts
        )
    snap = ClusterSnapshot(
        taken_at=30.0,
        partitions=tuple(Partition("t", i, 1, (1, 2), (1, 2)) for i in range(4)),
        topics=(Topic("t"),),
        rates=book.rates(),
    )
    (load,) = topic_loads(snap)
    assert load.records is not None and load.records.per_s == pytest.approx(1000.0)
    assert load.skew == pytest.approx(2.8) and load.hottest == 0 and load.hot
    assert snap.broker_records(1) is not None
    assert snap.broker_records(1).per_s == pytest.approx(1000.0)  # type: ignore[union-attr]
    assert snap.broker_records(2).per_s == 0.0  # type: ignore[union-attr]


def test_rates_survive_the_json_of_describe() -> None:
    book = RateBook(30.0)
    book.read_ends(0.0, {TP: 0}, {}, [TP])
    book.read_ends(2.0, {TP: 100}, {}, [TP])
    g = _group(50, 100)
    book.read_groups(2.0, [g])
    snap = ClusterSnapshot(taken_at=2.0, groups=(g,), rates=book.rates([g]))
    back = ClusterSnapshot.from_dict(snap.to_dict())
    assert snap.rates is not None
    assert back.rates == snap.rates.materialized()
    assert back.rates is not None and back.rates.records(*TP).per_s == pytest.approx(50.0)


def test_a_first_commit_on_another_partition_starts_the_trend_again_not_a_jump() -> None:
    book = RateBook(30.0)
    two = ("orders", 1)
    for i in range(10):
        t = 2.0 * i
        book.read_ends(t, {TP: 10_000, two: 50_000}, {}, [TP, two])
        parts = [GroupPartition("orders", 0, 5_000 + 100 * i, 10_000)]
        parts.append(GroupPartition("orders", 1, 100 if i >= 8 else None, 50_000))
        book.read_groups(t, [Group("g", "Stable", 1, partitions=tuple(parts))])
    g = Group("g", "Stable", 1, partitions=(
        GroupPartition("orders", 0, 5_900, 10_000), GroupPartition("orders", 1, 100, 50_000),
    ))  # fmt: skip
    gr = book.rates([g]).group("g")
    assert gr is not None
    assert [lag for _, lag in gr.history] == [4_200 + 49_900, 4_100 + 49_900]
    assert gr.trend == "draining"  # 50/s, not the 49,900 the second partition added


def test_the_sums_over_many_partitions_agree_with_adding_each_one_up() -> None:
    """Topic and broker sums take one subtraction per partition that counts over the same
    readings as the rest; one that went back, was not read or is new takes its own figure."""
    book = RateBook(10.0)
    tps = [("t", i) for i in range(6)]
    for k in range(12):
        ends = {tp: 100 * k * (i + 1) for i, tp in enumerate(tps)}
        errors = {}
        if k == 9:
            ends[tps[1]] = 5  # went back: counts again from here
        if k >= 10:
            ends[tps[1]] = 5 + 50 * (k - 9)
        if k == 11:
            del ends[tps[2]]
            errors[tps[2]] = "leader 2: timed out"
        book.read_ends(1.0 * k, ends, errors, tps)
    r = book.rates()
    one_by_one = sum_rates([r.records(*tp) for tp in tps])
    (fast,) = r.totals({"all": tps}).values()
    assert fast.per_s == pytest.approx(one_by_one.per_s)
    assert fast.partial and one_by_one.partial
    assert fast.reason == "1 of 6 not known: leader 2: timed out"
    assert r.records(*tps[1]).per_s == pytest.approx(50.0)
    assert r.records(*tps[0]).per_s == pytest.approx(100.0)


def test_every_partition_s_log_end_is_read_less_often_on_a_big_cluster() -> None:
    """Up to 2,000 partitions a second: on 10,000 every 5 s (a 30 s window still holds six
    readings), on a small cluster every groups poll."""
    from kconsole.config import Settings
    from kconsole.observer import ClusterObserver

    now = [1000.0]
    obs = ClusterObserver(Settings(group_refresh_s=2.0), clock=lambda: now[0])
    due = []
    for _ in range(10):
        due.append(obs._sample_due(10_000))
        if due[-1]:
            obs._rates.read_ends(now[0], {}, {}, [])
        now[0] += 2.0
    # the first two at once (a first rate sooner), then every 5 s
    assert due == [True, True, False, False, True, False, False, True, False, False]
    small = ClusterObserver(Settings(group_refresh_s=2.0), clock=lambda: now[0])
    every_poll = []
    for _ in range(3):
        every_poll.append(small._sample_due(100))
        now[0] += 2.0
    assert every_poll == [True, True, True]


def test_rates_without_a_new_reading_share_their_figures_and_sums() -> None:
    """A groups poll that read no log end hands on rates from the same readings: their
    per-partition figures and topic / broker sums are not worked out again (on 10,000
    partitions that was most of the console's own thread every poll); a new reading, or
    other partitions or brokers down, work them out anew."""
    book = RateBook(30.0)
    tps = [("t", 0), ("t", 1)]
    book.read_ends(0.0, dict.fromkeys(tps, 0), {}, tps)
    book.read_ends(10.0, {tps[0]: 100, tps[1]: 300}, {}, tps)
    parts = (Partition("t", 0, 1, (1, 2), (1, 2)), Partition("t", 1, 2, (1, 2), (1, 2)))
    one, two = book.rates(), book.rates()
    assert one is not two and one.source is two.source and one._sums is two._sums
    s1 = ClusterSnapshot(taken_at=10.0, partitions=parts, rates=one)
    s2 = ClusterSnapshot(taken_at=11.0, partitions=parts, rates=two)
    assert s1.topic_records("t") is s2.topic_records("t")
    assert s2.broker_records(2).per_s == pytest.approx(30.0)  # type: ignore[union-attr]
    down = ClusterSnapshot(
        taken_at=11.0,
        partitions=parts,
        brokers=(Broker(2, "h", 2, state=BrokerState.DOWN),),
        rates=two,
    )
    assert down.broker_records(2).per_s == 0.0  # type: ignore[union-attr]  # leads nothing
    book.read_ends(20.0, {tps[0]: 300, tps[1]: 500}, {}, tps)
    three = book.rates()
    assert three.source is not one.source
    s3 = ClusterSnapshot(taken_at=20.0, partitions=parts, rates=three)
    assert s3.topic_records("t").per_s == pytest.approx(40.0)  # type: ignore[union-attr]
