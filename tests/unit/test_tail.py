"""kconsole.cluster.tail without a cluster: start positions, resolving them, showing bytes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from confluent_kafka import OFFSET_INVALID, TopicPartition

from kconsole.cluster.tail import (
    StartAt,
    TailBuffer,
    TailError,
    TailPosition,
    TailRecord,
    parse_start,
    show_bytes,
    start_notes,
    start_positions,
)
from kconsole.cluster.tailer import PREFETCH_KB, Tailer
from kconsole.config import Settings

NOW_MS = 1_800_000_000_000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", StartAt("end")),
        ("end", StartAt("end")),
        ("Latest", StartAt("end")),
        ("beginning", StartAt("beginning")),
        ("earliest", StartAt("beginning")),
        ("@120", StartAt("offset", 120)),
        ("offset:7", StartAt("offset", 7)),
        ("-10", StartAt("last", 10)),
        ("last:3", StartAt("last", 3)),
        ("ts:1799999999000", StartAt("timestamp", 1_799_999_999_000)),
        ("ts:2027-01-15T08:00:00+00:00", StartAt("timestamp", NOW_MS)),
        ("ago:5m", StartAt("timestamp", NOW_MS - 300_000)),
        ("ago:1.5s", StartAt("timestamp", NOW_MS - 1500)),
    ],
)
def test_parse_start(text: str, expected: StartAt) -> None:
    assert parse_start(text, now_ms=lambda: NOW_MS) == expected


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("yesterday", "unknown start position"),
        ("@-5", "an offset is >= 0"),
        ("@abc", "cannot read the start position"),
        ("-0", "last N needs N >= 1"),
        ("ago:soon", "ago: takes a duration"),
        ("ts:not-a-time", "cannot read the start position"),
    ],
)
def test_parse_start_refuses(text: str, match: str) -> None:
    with pytest.raises(TailError, match=match):
        parse_start(text, now_ms=lambda: NOW_MS)


def test_describe() -> None:
    assert StartAt("offset", 5).describe() == "offset 5"
    assert StartAt("last", 10).describe() == "last 10 per partition"
    when = datetime(2027, 1, 15, 8, tzinfo=UTC)
    assert StartAt("timestamp", int(when.timestamp() * 1000)).describe() == (
        "time 2027-01-15T08:00:00.000+00:00"
    )


class FakeConsumer:
    """What _resolve asks a Consumer: watermarks and offsets by time."""

    def __init__(self, marks: dict[int, tuple[int, int]], by_time: dict[int, int]) -> None:
        self.marks = marks
        self.by_time = by_time

    def get_watermark_offsets(self, tp, timeout=None):  # type: ignore[no-untyped-def]
        return self.marks[tp.partition]

    def offsets_for_times(self, tps, timeout=None):  # type: ignore[no-untyped-def]
        for tp in tps:
            tp.offset = self.by_time.get(tp.partition, -1)
        return tps


@pytest.mark.parametrize(
    ("start", "expected"),
    [
        (StartAt("end"), [100, 50, 0]),
        (StartAt("beginning"), [10, 0, 0]),
        (StartAt("offset", 40), [40, 40, 0]),  # clamped into [low, high]
        (StartAt("offset", 5), [10, 5, 0]),
        (StartAt("last", 20), [80, 30, 0]),
        (StartAt("last", 95), [10, 0, 0]),
        (StartAt("timestamp", 123), [77, 50, 0]),  # -1 (nothing that late): the end
    ],
)
def test_resolve_positions(start: StartAt, expected: list[int]) -> None:
    tailer = Tailer(Settings(), "t", start=start)
    consumer = FakeConsumer({0: (10, 100), 1: (0, 50), 2: (0, 0)}, {0: 77, 1: -1})
    positions = tailer._resolve(consumer, [0, 1, 2])  # type: ignore[arg-type]
    assert [p.start for p in positions] == expected


def test_show_bytes() -> None:
    assert show_bytes(None) == "null"
    assert show_bytes(b"a\nb\tc") == "a\\nb\\tc"
    assert show_bytes(bytes([0x00, 0x9F, 0xFF, 0x1B])) == "\\x00\\x9f\\xff\\x1b"
    assert show_bytes(b"x" * 300, limit=10) == "x" * 9 + "…"


def test_bad_topic_or_partition_refused_before_connecting() -> None:
    with pytest.raises(TailError, match="invalid topic name"):
        Tailer(Settings(), "no spaces").open()
    with pytest.raises(TailError, match="partition must be >= 0"):
        Tailer(Settings(), "t", partition=-1).open()


# -- a start offset outside the log -----------------------------------------------------------
MARKS = {0: (10, 100), 1: (0, 50), 2: (0, 0)}


def test_offset_past_the_end_of_every_partition_is_refused_with_the_real_ends() -> None:
    with pytest.raises(TailError) as err:
        start_positions("t", StartAt("offset", 999_999_999), MARKS, {})
    assert err.value.message == (
        "offset 999999999 is past the end of t (its partitions end at 0@100 1@50 2@0, the "
        "offset of the next record written): type an offset up to the end, or end for new "
        "records only"
    )
    with pytest.raises(TailError, match=r"past the end of t/1 \(it ends at 50, "):
        start_positions("t/1", StartAt("offset", 51), {1: (0, 50)}, {})


def test_offset_at_the_end_waits_for_the_next_record() -> None:
    [only] = start_positions("t/1", StartAt("offset", 50), {1: (0, 50)}, {})
    assert only.start == 50
    assert start_notes(StartAt("offset", 50), [only]) == []


def test_offset_past_the_end_of_some_partitions_starts_there_at_the_end_and_says_so() -> None:
    start = StartAt("offset", 60)
    positions = start_positions("t", start, MARKS, {})
    assert [p.start for p in positions] == [60, 50, 0]
    assert start_notes(start, positions) == [
        "offset 60 is past the end in partitions 1@50 2@0: from the end"
    ]


def test_offset_already_deleted_starts_at_the_oldest_record_and_says_so() -> None:
    start = StartAt("offset", 5)
    positions = start_positions("t", start, {0: (10, 100), 1: (0, 50)}, {})
    assert [p.start for p in positions] == [10, 5]
    assert start_notes(start, positions) == [
        "offset 5 is deleted in partition 0@10: from the oldest record"
    ]
    assert start_notes(StartAt("beginning"), positions) == []  # only a typed offset can miss


# -- the hand-over from the reader to the screen ------------------------------------------------
def _records(first: int, n: int) -> list[TailRecord]:
    return [TailRecord("t", 0, o, None, "none", None, b"v", ()) for o in range(first, first + n)]


def test_buffer_keeps_the_newest_and_counts_every_record() -> None:
    buffer = TailBuffer(keep=100)
    for first in range(0, 10_000, 500):
        buffer.put(_records(first, 500))
    assert buffer.offer(behind=5)
    taken = buffer.take()
    assert [r.offset for r in taken.records] == list(range(9_900, 10_000))
    assert (taken.read, taken.dropped, taken.behind) == (10_000, 9_900, 5)
    assert buffer.take().records == ()  # taken means gone


def test_buffer_tells_once_until_taken_and_only_of_news() -> None:
    buffer = TailBuffer(keep=10)
    assert not buffer.offer(behind=None)  # nothing read, nothing known: no news
    buffer.put(_records(0, 3))
    assert buffer.offer(behind=0)
    assert buffer.pending
    buffer.put(_records(3, 3))
    assert not buffer.offer(behind=0)  # told, not yet taken: one telling in flight
    assert buffer.take().read == 6
    assert not buffer.pending
    assert not buffer.offer(behind=0)  # nothing new since
    assert buffer.offer(behind=7)  # records written meanwhile: the distance changed
    assert buffer.take().behind == 7


def test_the_tail_prefetches_a_bounded_amount() -> None:
    conf = Tailer(Settings(), "t")._config()
    assert conf["queued.max.messages.kbytes"] == PREFETCH_KB == 16 * 1024


class PositionedConsumer:
    """What Tailer.behind asks a Consumer, as the real one answers: the assignment, positions
    (OFFSET_INVALID before the first record of a partition is consumed) and the cached
    watermarks (high: the end as of the last fetch; -1001 before any)."""

    def __init__(self, at: dict[int, int], cached_high: dict[int, int]) -> None:
        self.at = at
        self.cached_high = cached_high

    def assignment(self) -> list[TopicPartition]:
        return [TopicPartition("t", p) for p in sorted(self.at)]

    def position(self, tps: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition("t", tp.partition, self.at[tp.partition]) for tp in tps]

    def get_watermark_offsets(self, tp, timeout=None, cached=False):  # type: ignore[no-untyped-def]
        assert cached  # behind() asks the client's cache, never the broker
        return (OFFSET_INVALID, self.cached_high.get(tp.partition, OFFSET_INVALID))


def test_behind_counts_from_the_position_to_the_end_the_client_last_saw() -> None:
    tailer = Tailer(Settings(), "t", start=StartAt("beginning"))
    tailer.positions = (TailPosition(0, 0, 0, 1000), TailPosition(1, 0, 0, 300))
    # Partition 0 read up to 400 and fetched an end of 1200; partition 1 not read yet.
    tailer._consumer = PositionedConsumer({0: 400, 1: OFFSET_INVALID}, {0: 1200})  # type: ignore[assignment]
    assert tailer.behind() == (1200 - 400) + (300 - 0)
    tailer._consumer = PositionedConsumer({0: 1200, 1: 300}, {0: 1200, 1: 300})  # type: ignore[assignment]
    assert tailer.behind() == 0
    tailer.paused = True
    assert tailer.behind() is None  # paused, nothing is fetched: the end it knows is old


def test_buffer_keeps_a_record_written_since_the_open_whatever_is_read_after_it() -> None:
    buffer = TailBuffer(keep=100)
    buffer.opened([TailPosition(0, 0, 0, 5), TailPosition(1, 0, 0, 50_000)])
    buffer.put(_records(0, 5))  # partition 0's backlog
    written = TailRecord("t", 0, 5, None, "none", None, b"meanwhile", ())
    buffer.put([written])
    for first in range(0, 50_000, 500):  # partition 1's backlog, read after it
        buffer.put(
            [TailRecord("t", 1, o, None, "none", None, b"v", ()) for o in range(first, first + 500)]
        )
    taken = buffer.take()
    assert taken.records[-1] == written  # kept, and after the older records
    assert [r.offset for r in taken.records[:-1]] == list(range(49_900, 50_000))
    assert (taken.read, taken.dropped) == (50_006, 50_005 - 100)
