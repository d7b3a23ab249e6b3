"""kconsole.cluster.tail without a cluster: start positions, resolving them, showing bytes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kconsole.cluster.tail import StartAt, Tailer, TailError, parse_start, show_bytes
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
