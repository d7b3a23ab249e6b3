"""The tail view on a large topic (a fake that hands out a backlog as the real Tailer does) and
on start offsets outside the log (the recorded records): it shows its progress while catching
up, stays responsive, keeps bounded rows, shows a record written meanwhile once caught up, and
says where an offset start really began. The real-cluster version is in
tests/integration/test_tail.py."""

from __future__ import annotations

import re
import threading
import time
from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import DataTable, Input

from kconsole.cluster.tail import StartAt, TailPosition, TailRecord
from kconsole.ui.app import KConsoleApp
from kconsole.ui.screens import tail as tail_screen
from kconsole.ui.screens.tail import TailScreen, TailTable, record_cells
from tests.ui.conftest import new_app
from tests.ui.pilots import enter_in, open_tail, tail_app, text_of, wait_for
from tests.ui.produce_fakes import tail_records

SIZE = (120, 36)
PARTITIONS = 4


class Backlog:
    """A TailSource over a topic holding `n` records in 4 partitions, partition 0 much shorter
    than the others (a tail reaches its end long before theirs), as the real Tailer reads one:
    from the beginning (or the end: nothing), up to max_records per poll, a quarter from each
    partition, at about the pace measured on the local cluster (a poll of 500 in ~4 ms), none
    while paused; add() writes more to partition 0; behind() is what is left (unknown while
    paused)."""

    def __init__(self, n: int, start: StartAt) -> None:
        self.lock = threading.Lock()
        short = n // 20
        self.high = {0: short, **dict.fromkeys(range(1, PARTITIONS), (n - short) // 3)}
        from_end = start.kind == "end"
        self.next = {p: (h if from_end else 0) for p, h in self.high.items()}
        self.extra: dict[int, bytes] = {}  # offset in partition 0 -> value, for add()
        self.positions: tuple[TailPosition, ...] = ()
        self.paused = False
        self.closed = False
        self.polls = 0

    def open(self) -> tuple[TailPosition, ...]:
        self.positions = tuple(
            TailPosition(p, self.next[p], 0, self.high[p]) for p in range(PARTITIONS)
        )
        return self.positions

    def join(self, timeout_s: float | None = None) -> list[int]:
        return list(range(PARTITIONS))

    def poll(self, timeout_s: float = 0.2, max_records: int = 500) -> list[TailRecord]:
        self.polls += 1
        if self.paused or not self.left():
            time.sleep(min(timeout_s, 0.02))
            return []
        time.sleep(0.004)
        out = []
        with self.lock:
            for p in range(PARTITIONS):
                upto = min(self.high[p], self.next[p] + max_records // PARTITIONS)
                out += [self.record(p, o) for o in range(self.next[p], upto)]
                self.next[p] = upto
        return out

    def record(self, p: int, offset: int) -> TailRecord:
        value = self.extra.get(offset, b"v") if p == 0 else b"v"
        return TailRecord("test-topic", p, offset, None, "none", b"k", value, ())

    def left(self) -> int:
        with self.lock:
            return sum(self.high[p] - self.next[p] for p in self.high)

    def add(self, value: bytes) -> str:
        """Write one record to partition 0 (from the test's thread); its row key."""
        with self.lock:
            offset = self.high[0]
            self.extra[offset] = value
            self.high[0] += 1
        return f"0:{offset}"

    def behind(self) -> int | None:
        return None if self.paused else self.left()

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False

    def close(self) -> None:
        self.closed = True


def backlog_app(n: int) -> tuple[KConsoleApp, list[Backlog]]:
    made: list[Backlog] = []

    def factory(topic: str, partition: int | None, start: StartAt, group: str | None) -> Backlog:
        made.append(Backlog(n, start))
        return made[-1]

    return new_app(tailer=factory), made


async def start_from(pilot: Pilot[None], screen: TailScreen, start: str) -> None:
    """Tail again from `start` (what the from field takes)."""
    await enter_in(pilot, screen, {"#tail-from": start})


def shown_count(app: KConsoleApp) -> int | None:
    found = re.search(r"· ([0-9,]+) records", text_of(app, "#tail-status"))
    return None if found is None else int(found[1].replace(",", ""))


class TestCatchingUp:
    """A tail from the beginning of a large topic."""

    async def test_progress_shows_while_catching_up_and_a_new_record_appears_after(
        self,
    ) -> None:
        """Count, rate and distance to the end move while the backlog is read; pause works in
        the middle of it; the table never holds more than MAX_ROWS; a record written meanwhile
        is on screen once the tail has caught up, though thousands of older records were read
        after it, and every record is counted."""
        n = 420_000  # partition 0: 21,000; the others 133,000 each
        app, made = backlog_app(n)
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_tail(pilot)
            await start_from(pilot, screen, "beginning")
            await wait_for(pilot, lambda: len(made) == 2 and made[-1].polls > 0)
            tail = made[-1]
            table = screen.query_one("#tail-records", DataTable)

            def catching_up() -> bool:
                status = text_of(app, "#tail-status")
                return bool(re.search(r"records · [0-9,]+/s · catching up: [0-9,]+ behind", status))

            await wait_for(pilot, catching_up, timeout=30)
            first = shown_count(app)
            assert first is not None and 0 < first < n
            await wait_for(pilot, lambda: (shown_count(app) or 0) > first, timeout=30)
            assert tail.left() > 0, "the backlog was read before the test could see progress"
            assert table.row_count <= tail_screen.MAX_ROWS
            # The screen answers a key in the middle of it: fetching stops, the position stays.
            await pilot.press("space")
            await wait_for(pilot, lambda: tail.paused, timeout=10)
            left, polls = tail.left(), tail.polls
            await wait_for(pilot, lambda: tail.polls > polls + 3)
            assert tail.left() == left > 0
            assert "paused" in text_of(app, "#tail-status")
            newest = tail.add(b"written while catching up")
            await pilot.press("space")
            # Partition 0 is short: the tail reads the new record there long before it has
            # read the other partitions' backlog (thousands of records after it).
            await wait_for(pilot, lambda: tail.next[0] == tail.high[0], timeout=60)
            assert tail.left() > 10 * tail_screen.MAX_ROWS
            await wait_for(pilot, lambda: "at the end" in text_of(app, "#tail-status"), 60)
            assert screen.received == n + 1 == shown_count(app)
            await wait_for(pilot, lambda: newest in table.rows)
            assert str(table.get_row(newest)[4]) == "written while catching up"

            last = f"{PARTITIONS - 1}:{tail.high[PARTITIONS - 1] - 1}"  # the last record read
            await wait_for(pilot, lambda: last in table.rows)  # drawn, at most a second later
            assert table.row_count <= tail_screen.MAX_ROWS
            # The rows are the newest records read, without gaps: in each partition shown, a run
            # of offsets up to its last one.
            keys = [tuple(map(int, str(k.value).split(":"))) for k in table.rows]
            for p in {q for q, _ in keys}:
                offsets = [o for q, o in keys if q == p]
                assert offsets == list(range(offsets[0], tail.high[p])), p
            assert "newest" in text_of(app, "#tail-status")

    async def test_rows_held_while_racing_are_drawn_later_or_at_the_end(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """While behind and reading faster than the screen takes (records dropped), a batch less
        than REDRAW_EVERY_S after the last redraw waits for the next one (a timer, or the tick
        when nothing more arrives); a batch that reaches the end is drawn at once. A redraw
        shows the records written since the tail opened last, below the newest older ones."""
        monkeypatch.setattr(tail_screen, "REDRAW_EVERY_S", 60.0)  # hold everything after one
        app, _ = backlog_app(0)
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_tail(pilot)
            await wait_for(pilot, lambda: screen.behind == 0)  # the worker's one telling
            table = screen.query_one("#tail-records", DataTable)
            # As if opened on partitions that ended at 10,000 and far behind their end.
            screen.positions = tuple(TailPosition(p, 0, 0, 10_000) for p in range(PARTITIONS))
            screen.behind = 50_000

            def batch(p: int, first: int, n: int = 300) -> list[TailRecord]:
                return [
                    TailRecord("test-topic", p, o, None, "none", b"k", b"v", ())
                    for o in range(first, first + n)
                ]

            fast = tail_screen.FAST_ROWS
            screen.add_records(batch(0, 0), dropped=9_000)  # drawn (the first redraw)
            assert table.row_count == fast and "0:299" in table.rows
            written = batch(3, 10_000, 1)  # written after the tail opened
            screen.add_records(batch(1, 0) + written + batch(1, 300), dropped=9_000)  # held
            assert "1:599" not in table.rows and screen.received == 901
            screen.behind = 0
            screen.add_records(batch(2, 0), dropped=9_000)  # at the end: drawn now, with the held
            assert table.row_count == fast
            assert [str(table.get_row_at(i)[1]) for i in (0, fast - 2, fast - 1)] == [
                str(300 - fast + 1),
                "299",
                "10000",
            ]  # the newest older ones (partition 2's), then the written one, last
            assert str(table.get_row_at(fast - 1)[0]) == "3"
            # Behind again, and then quiet: the tick draws what was held.
            screen.behind = 50_000
            screen.add_records(batch(1, 1000), dropped=9_000)
            assert "1:1299" not in table.rows
            monkeypatch.setattr(tail_screen, "REDRAW_EVERY_S", 0.0)
            await wait_for(pilot, lambda: "1:1299" in table.rows, timeout=10)  # the 1 s tick
            assert table.row_count == fast


class TestTailTable:
    """Dropping the oldest rows in one pass leaves the table as remove_row would."""

    async def test_remove_oldest_matches_remove_row(self) -> None:
        class Two(App[None]):
            def compose(self) -> ComposeResult:
                yield TailTable(id="a", cursor_type="row")
                yield TailTable(id="b", cursor_type="row")

        records = [TailRecord("t", o % 3, o, None, "none", b"k", b"v", ()) for o in range(60)]
        app = Two()
        async with app.run_test(size=SIZE) as pilot:
            a, b = app.query_one("#a", TailTable), app.query_one("#b", TailTable)
            for table in (a, b):
                for label in ("partition", "offset", "timestamp", "key", "value", "headers"):
                    table.add_column(label, key=label)
                for r in records[:40]:
                    table.add_row(*record_cells(r), key=f"{r.partition}:{r.offset}")
                table.move_cursor(row=30, animate=False)
            gone = [f"{r.partition}:{r.offset}" for r in records[:25]]
            for key in gone:
                a.remove_row(key)
            b.remove_oldest(gone)
            await pilot.pause()
            for table in (a, b):  # both take more rows afterwards
                for r in records[40:]:
                    table.add_row(*record_cells(r), key=f"{r.partition}:{r.offset}")
            await pilot.pause()

            def state(t: TailTable) -> Any:
                return (
                    t.row_count,
                    [str(t.get_row_at(i)[1]) for i in range(t.row_count)],
                    {str(k.value): t.get_row_index(k) for k in t.rows},
                    t.cursor_coordinate,
                    t.virtual_size,
                    [t.render_line(y).text for y in range(t.size.height)],
                )

            assert state(a) == state(b)
            assert b.row_count == 35 and str(b.get_row_at(0)[1]) == "25"


class TestStartOffsets:
    """An offset outside the log is said, never silently replaced."""

    async def test_an_offset_past_the_end_is_refused_naming_the_real_ends(self) -> None:
        app, made = tail_app()
        ends: dict[int, int] = {}
        for r in tail_records():
            ends[r.partition] = max(ends.get(r.partition, 0), r.offset + 1)
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_tail(pilot)
            await start_from(pilot, screen, "@999999999")
            at = " ".join(f"{p}@{ends[p]}" for p in sorted(ends))
            await wait_for(pilot, lambda: screen.state == "failed")
            status = text_of(app, "#tail-status")
            assert (
                f"✗ offset 999999999 is past the end of test-topic (its partitions end at {at}, "
                "the offset of the next record written)"
            ) in status.replace("\n", " ")
            await wait_for(pilot, lambda: made[-1].closed)  # nothing left open
            assert screen.query_one("#tail-from", Input).value == "@999999999"  # kept to fix

    async def test_an_offset_past_the_end_of_some_partitions_says_where_it_began(self) -> None:
        records = tail_records()
        ends: dict[int, int] = {}
        for r in records:
            ends[r.partition] = max(ends.get(r.partition, 0), r.offset + 1)
        short = min(ends, key=lambda p: ends[p])
        assert ends[short] < max(ends.values())  # the recording has partitions of two lengths
        app, _ = tail_app()
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_tail(pilot)
            offset = max(ends.values()) - 1
            await start_from(pilot, screen, f"@{offset}")
            await wait_for(pilot, lambda: screen.state == "live")
            past = " ".join(f"{p}@{ends[p]}" for p in sorted(ends) if ends[p] < offset)
            await wait_for(
                pilot,
                lambda: (
                    f"offset {offset} is past the end in partition" in text_of(app, "#tail-status")
                ),
            )
            assert f"{past}: from the end" in text_of(app, "#tail-status").replace("\n", " ")


async def test_a_record_read_twice_in_one_batch_is_one_row() -> None:
    """A group tail's rebalance can hand the same records out again, even within one batch."""
    app, _ = backlog_app(0)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_tail(pilot)
        await wait_for(pilot, lambda: screen.state == "live")
        twice = TailRecord("test-topic", 1, 7, None, "none", b"k", b"v", ())
        screen.add_records([twice, twice])
        table = screen.query_one("#tail-records", DataTable)
        assert table.row_count == 1 and screen.received == 2


async def test_a_burst_the_screen_keeps_up_with_is_shown_whole() -> None:
    """500 records at once, none dropped by the hand-over (a tail from an offset, say): every
    one is a row, not a sample."""
    app, _ = backlog_app(0)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_tail(pilot)
        await wait_for(pilot, lambda: screen.state == "live")
        burst = [TailRecord("test-topic", 2, o, None, "none", b"k", b"v", ()) for o in range(500)]
        screen.add_records(burst)
        table = screen.query_one("#tail-records", DataTable)
        assert table.row_count == 500
        assert [str(table.get_row_at(i)[1]) for i in (0, 499)] == ["0", "499"]
