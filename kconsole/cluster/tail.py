"""Tailing a topic or one partition, the data of it: where to start (the end, the beginning, an
offset, a timestamp or the last N records of each partition), the records as read, where each
partition starts, and the buffer that hands records from a reader to a screen. Data and pure
functions only, so a screen imports it without reaching the consumer; the consumer that reads is
kconsole.cluster.tailer (Tailer), which the command layer opens.
"""

from __future__ import annotations

import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from kconsole.cluster.errors import ClusterError

Header = tuple[str, bytes | None]


class TailError(ClusterError):
    """The tail could not start (or stopped); the message says why."""


# -- where to start -----------------------------------------------------------------------------
START_KINDS = ("end", "beginning", "offset", "timestamp", "last")


@dataclass(frozen=True)
class StartAt:
    """Where a tail starts in each partition."""

    kind: str = "end"  # one of START_KINDS
    value: int = 0  # the offset, the timestamp (ms since the epoch) or N for "last"

    def describe(self) -> str:
        if self.kind == "offset":
            return f"offset {self.value}"
        if self.kind == "timestamp":
            try:
                when = _EPOCH + timedelta(milliseconds=self.value)
            except OverflowError:  # past the year 9999
                return f"time {self.value} ms after 1970"
            return f"time {when.isoformat(timespec='milliseconds')}"
        if self.kind == "last":
            return f"last {self.value} per partition"
        return self.kind


_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|h|d)")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_WHOLE = re.compile(r"[+-]?[0-9]+")  # ASCII digits only: int() also reads "٣" (and "²" breaks it)
MAX_INT64 = 2**63 - 1  # Kafka's offsets and timestamps are signed 64-bit
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _whole(raw: str, text: str) -> int:
    """`raw` (a part of the typed `text`) as a number that fits Kafka's 64 bits."""
    raw = raw.strip()
    if not _WHOLE.fullmatch(raw):
        raise TailError(f"cannot read the start position {text!r}: {raw!r} is not a whole number")
    if len(raw.lstrip("+-").lstrip("0")) > 19 or abs(int(raw)) > MAX_INT64:
        raise TailError(f"cannot read the start position {text!r}: the number is too large")
    return int(raw)


def _since_epoch(ms: int, text: str) -> StartAt:
    if ms < 0:  # Kafka reads -1 and -2 as "latest" and "earliest"
        raise TailError(f"start position {text!r} is before 1970")
    return StartAt("timestamp", ms)


def parse_start(text: str, now_ms: Callable[[], int] | None = None) -> StartAt:
    """A start position as typed by a user.

    `end` (new records only), `beginning`, `@123` or `offset:123` (that offset in each
    partition), `-10` or `last:10` (the last 10 records of each partition), `ts:<ISO time>` or
    `ts:<ms since epoch>`, or `ago:5m` (records from 5 minutes ago on; ms, s, m, h, d).
    """
    t = text.strip().lower()
    now_ms = now_ms or (lambda: int(time.time() * 1000))
    if t in ("", "end", "latest"):
        return StartAt("end")
    if t in ("beginning", "begin", "earliest", "start"):
        return StartAt("beginning")
    if t.startswith("@") or t.startswith("offset:"):
        n = _whole(t.split(":", 1)[1] if ":" in t else t[1:], text)
        if n < 0:
            raise TailError(f"an offset is >= 0, not {n}")
        return StartAt("offset", n)
    if t.startswith("-") or t.startswith("last:"):
        n = _whole(t[1:] if t.startswith("-") else t.split(":", 1)[1], text)
        if n < 1:
            raise TailError(f"last N needs N >= 1, not {n}")
        return StartAt("last", n)
    if t.startswith("ago:"):
        m = _DURATION.fullmatch(t[4:].strip())
        if not m:
            raise TailError(f"ago: takes a duration like 30s, 5m or 2h, not {t[4:]!r}")
        back = float(m[1]) * _UNIT_MS[m[2]]  # inf for a number of hundreds of digits
        now = now_ms()
        return _since_epoch(now - int(back) if back <= now else -1, text)
    if t.startswith("ts:"):
        raw = text.strip()[3:].strip()
        if raw.isdigit():
            return _since_epoch(_whole(raw, text), text)
        try:
            when = datetime.fromisoformat(raw)
            if when.tzinfo is None:
                when = when.astimezone()  # local time, as the user reads their clock
            return _since_epoch((when - _EPOCH) // timedelta(milliseconds=1), text)
        except (ValueError, OverflowError) as exc:  # not ISO, or beyond what a clock reads
            raise TailError(f"cannot read the start position {text!r}: {exc}") from exc
    raise TailError(
        f"unknown start position {text!r}: use end, beginning, @OFFSET, -N, ts:TIME or ago:5m"
    )


# -- records ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TailRecord:
    """One record as read."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int | None  # None when the record has none
    timestamp_type: str  # "create", "log-append" or "none"
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def show_bytes(data: bytes | None, limit: int = 200) -> str:
    """Bytes for a screen: UTF-8 text as it is, anything else escaped (undecodable bytes and
    control characters as \\xNN, so nothing reaches the terminal raw); `null` for None."""
    if data is None:
        return "null"
    text = data.decode("utf-8", "backslashreplace")
    text = _CONTROL.sub(lambda m: _NAMED.get(m[0], f"\\x{ord(m[0]):02x}"), text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- where each partition starts -------------------------------------------------------------------
@dataclass(frozen=True)
class TailPosition:
    """Where the tail started in one partition, and that partition's end when it started."""

    partition: int
    start: int  # the first offset that will be read
    low: int
    high: int


def start_positions(
    where: str, start: StartAt, marks: dict[int, tuple[int, int]], by_time: dict[int, int]
) -> tuple[TailPosition, ...]:
    """Each partition's first offset for `start`, given its (low, high) watermarks and, for a
    time, the offset Kafka found for it (-1: no record that late, so the end).

    An offset before a partition's first record starts at its first record and one past its
    end at its end (start_notes says so). An offset past the end of every partition is
    refused: nothing could be read from there until that many records exist, which is a typo
    far more often than a wish, so the message names the real ends."""
    out = []
    for p in sorted(marks):
        low, high = marks[p]
        kind, value = start.kind, start.value
        if kind == "beginning":
            first = low
        elif kind == "offset":
            first = min(max(value, low), high)
        elif kind == "last":
            first = max(low, high - value)
        elif kind == "timestamp":
            found_at = by_time.get(p, -1)
            first = found_at if found_at >= 0 else high
        else:
            first = high
        out.append(TailPosition(p, first, low, high))
    if start.kind == "offset" and out and all(start.value > pos.high for pos in out):
        ends = " ".join(f"{pos.partition}@{pos.high}" for pos in out)
        raise TailError(
            f"offset {start.value} is past the end of {where} "
            + (f"(it ends at {out[0].high}" if len(out) == 1 else f"(its partitions end at {ends}")
            + ", the offset of the next record written): type an offset up to the end, or end "
            "for new records only"
        )
    return tuple(out)


def start_notes(start: StartAt, positions: Iterable[TailPosition]) -> list[str]:
    """What a user should know about where an offset start really began: the partitions
    where that offset was past the end, or already deleted."""
    if start.kind != "offset":
        return []
    notes = []
    for clamped, edge, began in (
        ([p for p in positions if start.value > p.high], "past the end", "the end"),
        ([p for p in positions if start.value < p.low], "deleted", "the oldest record"),
    ):
        if clamped:
            at = " ".join(f"{p.partition}@{p.start}" for p in clamped)
            many = "s" if len(clamped) > 1 else ""
            notes.append(f"offset {start.value} is {edge} in partition{many} {at}: from {began}")
    return notes


class TailSource(Protocol):
    """What the tail view needs of a Tailer (tests replay recorded records through it)."""

    positions: tuple[TailPosition, ...]
    paused: bool

    def open(self) -> tuple[TailPosition, ...]: ...
    def join(self, timeout_s: float | None = None) -> list[int]: ...
    def poll(self, timeout_s: float = 0.2, max_records: int = 500) -> list[TailRecord]: ...
    def behind(self) -> int | None: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class Taken:
    """What a TailBuffer handed over: the newest records not taken before, and the counts."""

    records: tuple[TailRecord, ...]  # older records first, then those written since the open
    read: int  # records read since the tail opened, shown or not
    dropped: int  # records read since the last take but not kept (more than `keep` came)
    behind: int | None  # the reader's distance to the end (see Tailer.behind)


class TailBuffer:
    """The hand-over from a tail's reader thread to whoever shows its records.

    It keeps only the newest `keep` records not yet taken (and counts every record read), so
    a reader racing through a large topic never piles up records in memory or messages in a
    queue faster than a screen can draw them. Records written since the tail opened (at or past
    the end it found, see `opened`) are kept apart, the newest `keep` of them: a backlog read
    fast never pushes out the record someone wrote meanwhile. `offer` says when the taker
    should be told (news, and the last news taken), so at most one telling is in flight."""

    def __init__(self, keep: int) -> None:
        self._lock = threading.Lock()
        self._older: deque[TailRecord] = deque(maxlen=keep)
        self._new: deque[TailRecord] = deque(maxlen=keep)
        self._ends: dict[int, int] = {}  # partition -> its end when the tail opened
        self._read = 0
        self._dropped = 0
        self._behind: int | None = None
        self._told: tuple[int, int | None] = (0, None)  # (read, behind) as last taken
        self._pending = False  # told, not yet taken

    def opened(self, positions: Iterable[TailPosition]) -> None:
        """Where each partition ended when the tail opened: records from there on are new."""
        with self._lock:
            self._ends = {p.partition: p.high for p in positions}

    def put(self, records: list[TailRecord]) -> None:
        """Records the reader read (from the reader's thread)."""
        if not records:
            return
        ends = self._ends
        with self._lock:
            for r in records:
                kept = self._new if r.offset >= ends.get(r.partition, MAX_INT64) else self._older
                if len(kept) == kept.maxlen:
                    self._dropped += 1
                kept.append(r)
            self._read += len(records)

    @property
    def pending(self) -> bool:
        """Told, and not taken yet."""
        return self._pending

    def offer(self, behind: int | None) -> bool:
        """The reader's distance to the end now; True when the taker should be told: something
        changed since it last took, and it has taken what it was last told."""
        with self._lock:
            self._behind = behind
            if self._pending or (self._read, behind) == self._told:
                return False
            self._pending = True
            return True

    def take(self) -> Taken:
        """Everything not taken yet (from the taker's thread)."""
        with self._lock:
            records = (*self._older, *self._new)
            self._older.clear()
            self._new.clear()
            self._told = (self._read, self._behind)
            self._pending = False
            dropped, self._dropped = self._dropped, 0
            return Taken(records, self._read, dropped, self._behind)


# (topic, partition or None, start, group id or None) -> a tail, not yet open
TailFactory = Callable[[str, int | None, StartAt, str | None], TailSource]
