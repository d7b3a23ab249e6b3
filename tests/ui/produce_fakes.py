"""Fakes for the produce dialog and the tail view, replaying data recorded from a real cluster
(tests/fixtures/produce_tail.json, written by tests/fixtures/record_produce_tail.py). The steps
that open and drive those screens are in tests/ui/pilots.py."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kconsole.cluster.produce import api as pr
from kconsole.cluster.tail import StartAt, TailError, TailPosition, TailRecord, start_positions
from kconsole.commands import Commands
from kconsole.config import Settings
from tests.ui.conftest import recorded_topic_limits

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "produce_tail.json"


def recorded() -> dict[str, Any]:
    with RECORDED.open() as f:
        return json.load(f)  # type: ignore[no-any-return]


def deliveries(name: str) -> tuple[list[pr.Delivery], float]:
    """The recorded deliveries of a send ("small_send" or "not_enough_replicas")."""
    data = recorded()[name]
    out = [
        pr.Delivery(**{**d, "key": None if d["key"] is None else d["key"].encode()})
        for d in data["deliveries"]
    ]
    return out, data["elapsed_s"]


def tail_records() -> list[TailRecord]:
    """The records a real tail read back, in the order it read them."""
    unhex = bytes.fromhex
    return [
        TailRecord(
            topic=r["topic"],
            partition=r["partition"],
            offset=r["offset"],
            timestamp_ms=r["timestamp_ms"],
            timestamp_type=r["timestamp_type"],
            key=None if r["key"] is None else unhex(r["key"]),
            value=None if r["value"] is None else unhex(r["value"]),
            headers=tuple((k, None if v is None else unhex(v)) for k, v in r["headers"]),
        )
        for r in recorded()["tail"]
    ]


RECORDED_LIMITS = recorded_topic_limits()


class ReplayCommands(Commands):
    """A command layer whose produce() replays recorded deliveries as produce_records reports
    them (on_progress per record, the tally, on_tick every tick_s), in the order the real run
    reported them, and returns the result the real run returned.

    With `delay_s`, it takes each record from the iterator slowly (as a rate limit does), so a
    test can stop a send half-way; records beyond the recording repeat its last outcome.
    """

    def __init__(
        self, recorded: list[pr.Delivery], elapsed_s: float, *, read_only: bool = False,
        delay_s: float = 0.0,
    ) -> None:  # fmt: skip
        super().__init__(None, read_only=read_only, settings=Settings())
        self.recorded = recorded
        self.elapsed_s = elapsed_s
        self.delay_s = delay_s
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.taken = 0
        self.started = threading.Event()

    def produce(self, topic: str, records: Iterable[pr.Record], **options: Any) -> pr.ProduceResult:
        if self.read_only:
            return super().produce(topic, records, **options)
        self.calls.append((topic, options))
        self.started.set()
        on_progress = options.get("on_progress")
        tally, on_tick = options.get("tally"), options.get("on_tick")
        tick_s, next_tick = options.get("tick_s", 0.1), time.monotonic()
        out = []
        for i, _record in enumerate(records):
            self.taken += 1
            if self.delay_s:
                time.sleep(self.delay_s)
            src = self.recorded[min(i, len(self.recorded) - 1)]
            d = pr.Delivery(i, src.key, src.partition, src.offset, src.latency_s, src.error,
                            src.reason)  # fmt: skip
            out.append(d)
            if tally is not None:  # as produce_records does: counted as reports arrive
                tally.add(d)
            if on_progress is not None:
                on_progress(d)
            if on_tick is not None and time.monotonic() >= next_tick:
                next_tick = time.monotonic() + tick_s
                on_tick()
        return pr.ProduceResult(topic, options.get("acks", "all"), len(out), tuple(out),
                                self.elapsed_s)  # fmt: skip


class ReplayTailer:
    """A TailSource over recorded records: open() positions at the first record of each
    partition (or refuses like the real one), poll() hands out what is left, none while paused."""

    def __init__(
        self, records: list[TailRecord], topic: str, partition: int | None, start: StartAt,
        group: str | None, error: str = "",
    ) -> None:  # fmt: skip
        self.records = [
            r
            for r in records
            if r.topic == topic and (partition is None or r.partition == partition)
        ]
        self.topic, self.partition, self.start, self.group = topic, partition, start, group
        self.error = error
        self.positions: tuple[TailPosition, ...] = ()
        self.paused = False
        self.polls = 0
        self.closed = False
        self.joined = False

    def open(self) -> tuple[TailPosition, ...]:
        """Position like the real Tailer over a log holding the recorded records; from the end,
        the recorded records count as arriving after the tail opened (a live tail's view)."""
        if self.error:
            raise TailError(self.error)
        marks, by_time = {}, {}
        for p in sorted({r.partition for r in self.records}):
            offsets = sorted(r.offset for r in self.records if r.partition == p)
            # From the end the log ended where the recording begins: all of it is new.
            marks[p] = (offsets[0], offsets[0] if self.start.kind == "end" else offsets[-1] + 1)
            by_time[p] = min(
                (r.offset for r in self.records
                 if r.partition == p and (r.timestamp_ms or 0) >= self.start.value),
                default=-1,
            )  # fmt: skip
        where = self.topic + ("" if self.partition is None else f"/{self.partition}")
        self.positions = start_positions(where, self.start, marks, by_time)
        first = {pos.partition: pos.start for pos in self.positions}
        self.records = [r for r in self.records if r.offset >= first[r.partition]]
        return self.positions

    def join(self, timeout_s: float | None = None) -> list[int]:
        """A group tail: the group gives this member every partition it positioned."""
        self.joined = True
        return [p.partition for p in self.positions]

    def poll(self, timeout_s: float = 0.2, max_records: int = 500) -> list[TailRecord]:
        self.polls += 1
        if self.paused or not self.records:
            time.sleep(min(timeout_s, 0.02))
            return []
        out, self.records = self.records[:max_records], self.records[max_records:]
        return out

    def behind(self) -> int | None:
        """Like the real one: what is left to read (unknown while paused)."""
        return None if self.paused else len(self.records)

    def add(self, records: list[TailRecord]) -> None:
        """More records arrive (from the test's thread)."""
        self.records = self.records + records

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False

    def close(self) -> None:
        self.closed = True
