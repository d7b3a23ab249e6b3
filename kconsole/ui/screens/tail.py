"""The tail view: records of a topic (or one partition) as they arrive.

A thread worker owns the tail, which the command layer opens (kconsole.cluster.tailer.Tailer by
default): it reads as fast as the tail gives records and puts them in a TailBuffer, which keeps
only the newest MAX_ROWS not yet shown; the screen takes them when told (one telling in flight,
at most every BATCH_EVERY_S), so a tail racing through a large topic keeps its memory bounded
and never floods the screen's message queue. Pausing stops fetching without losing the
position. No consumer group is used unless the user types one; with one, the command layer
joins it (tail.group, audited once the group has assigned partitions).
"""

from __future__ import annotations

import time
from collections import deque
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual._two_way_dict import TwoWayDict
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Input, Label, Static
from textual.widgets.data_table import RowKey
from textual.worker import get_current_worker

from kconsole.cluster.errors import ClusterError
from kconsole.cluster.tail import (
    StartAt,
    TailBuffer,
    TailPosition,
    TailRecord,
    Taken,
    parse_start,
    show_bytes,
    start_notes,
)
from kconsole.ui import format as fmt
from kconsole.ui.context import actions
from kconsole.ui.widgets.auto_width import AutoWidthTable
from kconsole.ui.widgets.footer import KeyBar

MAX_ROWS = 1000  # the table keeps the newest this many records
# Reading faster than the screen takes records (a tail catching up), the table shows this many:
# DataTable's cost is per row added and per row removed; the count covers them all.
FAST_ROWS = 200
BATCH_EVERY_S = 0.1  # the worker tells the screen about new records at most this often
CATCHING_UP_EVERY_S = 0.25  # ...and this often while more than FAST_ROWS behind the end
REDRAW_EVERY_S = 1.0  # catching up, the table shows the newest FAST_ROWS this often
RATE_OVER_S = 3.0  # the rate is over the last this many seconds
START_HELP = "end · beginning · @OFFSET · -N · ts:TIME · ago:5m"


class TailScreen(Screen[None]):
    """Watch records arrive."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "toggle_pause", "Pause/resume", id="tail-pause"),
        Binding("c", "clear", "Clear", id="tail-clear"),
        Binding("ctrl+r", "restart", "Restart the tail", id="tail-restart"),
        Binding("escape", "back", "Back", id="tail-back"),
    ]

    class Opened(Message):
        def __init__(self, generation: int, positions: tuple[TailPosition, ...]) -> None:
            super().__init__()
            self.generation = generation
            self.positions = positions

    class Records(Message):
        """The tail's buffer has news (take it from there)."""

        def __init__(self, generation: int) -> None:
            super().__init__()
            self.generation = generation

    class Failed(Message):
        def __init__(self, generation: int, reason: str) -> None:
            super().__init__()
            self.generation = generation
            self.reason = reason

    def __init__(
        self, topic: str = "", partition: int | None = None, start: str = "end", group: str = ""
    ) -> None:
        super().__init__()
        self.initial = (topic, partition, start, group)
        self.generation = 0  # one per (re)start: late messages of an old tail are ignored
        self.paused = False
        self.state = "idle"  # idle, opening, live, failed
        self.error = ""
        self.positions: tuple[TailPosition, ...] = ()
        self.start_at = StartAt()
        self.received = 0
        self.behind: int | None = None  # records between what was read and the end
        self.buffer = TailBuffer(MAX_ROWS)
        self.held: list[TailRecord] | None = None  # catching up: older rows of the next redraw
        self.written: deque[TailRecord] = deque(maxlen=FAST_ROWS)  # since the tail opened
        self.redrawn_at = 0.0
        self.redraw_due = False  # a timer will draw the held rows
        self.rows: deque[str] = deque()
        self.rate_window: deque[tuple[float, int]] = deque()
        self.describing = ""

    def compose(self) -> ComposeResult:
        topic, partition, start, group = self.initial
        with Vertical(id="tail-bar", classes="pane") as bar:
            bar.border_title = "Tail"
            bar.border_subtitle = "enter starts · space pauses · escape goes back"
            with Horizontal(classes="form-row"):
                yield Label("Topic", classes="form-label")
                yield Input(topic, placeholder="topic", compact=True, id="tail-topic")
                yield Label("Partition", classes="form-label")
                yield Input(
                    "" if partition is None else str(partition),
                    placeholder="all",
                    compact=True,
                    id="tail-partition",
                )
                yield Label("From", classes="form-label")
                yield Input(start, placeholder=START_HELP, compact=True, id="tail-from")
                yield Label("Group", classes="form-label")
                yield Input(group, placeholder="none", compact=True, id="tail-group")
        yield Static(id="tail-status")
        yield TailTable(cursor_type="row", id="tail-records")
        yield KeyBar()

    def on_mount(self) -> None:
        self._columns()
        self.set_interval(1.0, self._tick)
        if self.initial[0]:
            self.action_restart()
        else:
            self.query_one("#tail-topic", Input).focus()
            self._show_status()

    # -- starting -----------------------------------------------------------------------------
    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.action_restart()

    def action_restart(self) -> None:
        """(Re)start the tail with what the bar says."""
        door = actions(self).commands
        self.generation += 1
        self.workers.cancel_group(self, "tail")
        topic = self.query_one("#tail-topic", Input).value.strip()
        part_text = self.query_one("#tail-partition", Input).value.strip()
        group = self.query_one("#tail-group", Input).value.strip() or None
        self.paused = False
        self.positions = ()
        self.received = 0
        self.behind = None
        self.buffer = TailBuffer(MAX_ROWS)
        self.rate_window.clear()
        try:
            if not topic:
                raise ClusterError("type a topic to tail")
            try:
                partition = int(part_text) if part_text else None
            except ValueError:
                raise ClusterError(f"partition must be a whole number, not {part_text!r}") from None
            self.start_at = parse_start(self.query_one("#tail-from", Input).value)
            if door is None or not door.can_tail:
                raise ClusterError("tailing is not available: no cluster connection")
        except ClusterError as exc:
            self._fail(exc.message)
            return
        self.describing = (
            f"{topic}" + (f"/{partition}" if partition is not None else "")
            + f" from {self.start_at.describe()}"
            + (f" · as group {group} (commits!)" if group else " · no consumer group")
        )  # fmt: skip
        self.state = "opening"
        self.error = ""
        self._clear_rows()
        self._show_status()
        self.query_one("#tail-records", TailTable).focus()
        self._tail(self.generation, self.buffer, topic, partition, self.start_at, group)

    @work(thread=True, group="tail", exit_on_error=False)
    def _tail(
        self,
        generation: int,
        buffer: TailBuffer,
        topic: str,
        partition: int | None,
        start: StartAt,
        group: str | None,
    ) -> None:
        # A worker thread: it alone touches the tail; the screen only sets `paused`.
        worker = get_current_worker()
        door = actions(self).commands
        assert door is not None
        try:
            # The door opens it; with a group it joins it (and so commits) only if the door
            # lets it, and logs the join's real outcome.
            source = door.open_tail(topic, partition, start, group)
        except ClusterError as exc:
            self.post_message(self.Failed(generation, exc.message))
            return
        except Exception as exc:  # a broken tail must not take the console down
            self.post_message(self.Failed(generation, f"{type(exc).__name__}: {exc}"))
            return
        try:
            self.post_message(self.Opened(generation, source.positions))
            buffer.opened(source.positions)
            told_at, every = time.monotonic(), BATCH_EVERY_S
            while not worker.is_cancelled:
                if self.paused != source.paused:
                    source.pause() if self.paused else source.resume()
                buffer.put(source.poll(0.1))
                now = time.monotonic()
                if now - told_at < every or buffer.pending:
                    continue
                behind = source.behind()
                if buffer.offer(behind):
                    self.post_message(self.Records(generation))
                    told_at = now
                    # Catching up, the screen redraws less often: each redraw takes the GIL
                    # from the reader, and nobody reads rows that fly past.
                    fast = behind is not None and behind > FAST_ROWS
                    every = CATCHING_UP_EVERY_S if fast else BATCH_EVERY_S
        except ClusterError as exc:
            self.post_message(self.Failed(generation, exc.message))
        except Exception as exc:  # a broken tail must not take the console down
            self.post_message(self.Failed(generation, f"{type(exc).__name__}: {exc}"))
        finally:
            source.close()

    # -- what the worker says -----------------------------------------------------------------
    def on_tail_screen_opened(self, message: Opened) -> None:
        if message.generation != self.generation:
            return
        self.positions = message.positions
        self.state = "live"
        self._show_status()

    def on_tail_screen_records(self, message: Records) -> None:
        if message.generation != self.generation:
            return
        self.show(self.buffer.take())

    def show(self, taken: Taken) -> None:
        """What the worker's buffer handed over: its records, the count and how far behind."""
        self.behind = taken.behind
        self.add_records(taken.records, read=taken.read, dropped=taken.dropped)

    def on_tail_screen_failed(self, message: Failed) -> None:
        if message.generation != self.generation:
            return
        self._fail(message.reason)

    def _fail(self, reason: str) -> None:
        self.state = "failed"
        self.error = reason
        self._show_status()

    def add_records(
        self,
        records: tuple[TailRecord, ...] | list[TailRecord],
        read: int | None = None,
        dropped: int = 0,
    ) -> None:
        """Append records to the table; the oldest rows go beyond MAX_ROWS. `read`: the tail's
        count of records read (default: these are all of them since the last call); `dropped`:
        how many the hand-over had to leave out since the last call.

        Records dropped means the tail reads faster than the screen takes them (a tail catching
        up): then the table starts again, at most every REDRAW_EVERY_S (held until then; at
        once when the tail is at the end), with the newest FAST_ROWS records written since the
        tail opened and, above them, the newest older ones read, FAST_ROWS in all. Rows that
        fly past cost the screen as much as any and the count already says how many there are;
        a record someone wrote meanwhile is never among those left out for older ones.
        """
        now = time.monotonic()
        self.received = self.received + len(records) if read is None else read
        self._sample_rate()
        table = self.query_one("#tail-records", TailTable)
        follow = table.cursor_row >= table.row_count - 1
        fast = min(FAST_ROWS, MAX_ROWS)
        fresh = [r for r in records[-MAX_ROWS:] if f"{r.partition}:{r.offset}" not in table.rows]
        ends = {p.partition: p.high for p in self.positions}
        is_new = [r.offset >= ends.get(r.partition, r.offset + 1) for r in fresh]
        self.written.extend(r for r, new in zip(fresh, is_new, strict=True) if new)
        if self.held is not None or dropped:
            older = [r for r, new in zip(fresh, is_new, strict=True) if not new]
            self.held = [*(self.held or ()), *older][-fast:]
            wait = REDRAW_EVERY_S - (now - self.redrawn_at)
            if dropped and self.behind != 0 and wait > 0:
                # Still racing: the rows wait for the next redraw (at the end: drawn now).
                if not self.redraw_due:
                    self.redraw_due = True
                    self.set_timer(wait, self._redraw_held)
                self._show_status()
                return
            written = list(self.written)[-fast:]
            fresh = self.held[max(0, len(self.held) - (fast - len(written))) :] + written
            self.held, self.redrawn_at = None, now
            table.clear()
            self.rows.clear()
        for r in fresh:
            key = f"{r.partition}:{r.offset}"
            if key in table.rows:  # read twice (a group's rebalance re-delivers)
                continue
            table.add_row(*record_cells(r), key=key)
            self.rows.append(key)
        over = len(self.rows) - MAX_ROWS
        if over > 0:
            table.remove_oldest([self.rows.popleft() for _ in range(over)])
        if follow and table.row_count:
            table.move_cursor(row=table.row_count - 1, animate=False)
        elif over > 0:  # the same record stays under the cursor
            table.move_cursor(row=max(0, table.cursor_row - over), animate=False)
        self._show_status()

    # -- keys ---------------------------------------------------------------------------------
    def action_toggle_pause(self) -> None:
        """Stop fetching (the position is kept), or go on."""
        if self.state != "live":
            return
        self.paused = not self.paused
        self._show_status()

    def action_clear(self) -> None:
        """Empty the table (the tail goes on)."""
        self._clear_rows()

    def _clear_rows(self) -> None:
        # Columns too: auto widths never narrow, so clear() alone kept the old tail's widths.
        self.query_one("#tail-records", TailTable).clear(columns=True)
        self._columns()
        self.rows.clear()
        self.held = None
        self.written.clear()

    def _columns(self) -> None:
        table = self.query_one("#tail-records", TailTable)
        for label, key in (
            ("partition", "partition"),
            ("offset", "offset"),
            ("timestamp", "timestamp"),
            ("key", "key"),
            ("value", "value"),
            ("headers", "headers"),
        ):
            table.add_column(label, key=key)

    def action_back(self) -> None:
        """Stop the tail and go back."""
        self.workers.cancel_group(self, "tail")
        self.dismiss()

    # -- status line --------------------------------------------------------------------------
    def _redraw_held(self) -> None:
        self.redraw_due = False
        if self.held is not None:
            self.add_records(())  # the last rows held while catching up, if nothing came since

    def _tick(self) -> None:
        if self.held is not None and time.monotonic() - self.redrawn_at >= REDRAW_EVERY_S:
            self.add_records(())
        self._show_status()  # a quiet tail's rate falls to 0

    def _show_status(self) -> None:
        self.query_one("#tail-status", Static).update(self.status_text())

    def status_text(self) -> Text:
        text = Text(" ")
        if self.state == "failed":
            text.append("✗ ", fmt.BAD)
            text.append(self.error, fmt.BAD)
            return text
        if self.state == "idle":
            text.append(f"type a topic and press enter · from: {START_HELP}", fmt.DIM)
            return text
        if self.state == "opening":
            text.append(f"opening {self.describing} …", fmt.DIM)
            return text
        if self.paused:
            text.append("⏸ paused", fmt.WARN)
        else:
            text.append("● live", fmt.GOOD)
        text.append(f"  {self.describing}", fmt.DIM)
        text.append(f" · {self.received:,} records", fmt.BOLD)
        rate = None if self.paused else self.rate()  # paused, the last rate is no rate
        if rate is not None:
            text.append(f" · {rate:,.0f}/s", fmt.DIM)
        if self.behind:
            text.append(f" · catching up: {self.behind:,} behind the end", fmt.WARN)
        elif self.behind == 0:
            text.append(" · at the end", fmt.DIM)
        if self.received > MAX_ROWS:
            text.append(f" · newest {len(self.rows):,} shown", fmt.DIM)
        for note in start_notes(self.start_at, self.positions):
            text.append(f" · {note}", fmt.WARN)
        if self.positions:
            starts = " ".join(f"{p.partition}@{p.start}" for p in self.positions[:8])
            more = " …" if len(self.positions) > 8 else ""
            text.append(f" · started at {starts}{more}", fmt.DIM)
        return text

    def _sample_rate(self) -> None:
        now = time.monotonic()
        self.rate_window.append((now, self.received))
        while len(self.rate_window) > 2 and now - self.rate_window[1][0] >= RATE_OVER_S:
            self.rate_window.popleft()

    def rate(self) -> float | None:
        """Records per second over the last RATE_OVER_S (None before two samples): 0 once
        nothing has arrived for that long."""
        if len(self.rate_window) < 2:
            return None
        (t0, n0), (t1, n1) = self.rate_window[0], self.rate_window[-1]
        if time.monotonic() - t1 >= RATE_OVER_S:
            return 0.0
        return (n1 - n0) / (t1 - t0) if t1 > t0 else None


class TailTable(AutoWidthTable):
    """The tail's table, which drops its oldest rows in one pass."""

    def remove_oldest(self, keys: list[str]) -> None:
        """Remove these rows, the first ones of the table. DataTable.remove_row renumbers
        every row for each row it removes (and re-sets the cursor): 1,000 of them froze the
        screen for seconds; this renumbers once. It does what remove_row does to DataTable's
        state (Textual is pinned; tests/ui/test_tail_screen.py checks the table after it)."""
        gone = {RowKey(k) for k in keys}
        if not gone:
            return
        kept = [row.key for row in self.ordered_rows if row.key not in gone]
        for key in gone:
            del self.rows[key]
            del self._data[key]
        self._new_rows -= gone
        self._updated_cells = {c for c in self._updated_cells if c.row_key not in gone}
        self._row_locations = TwoWayDict({key: i for i, key in enumerate(kept)})
        self._require_update_dimensions = True
        self.check_idle()
        self.cursor_coordinate = self.cursor_coordinate
        self.hover_coordinate = self.hover_coordinate
        self._update_count += 1
        self.refresh(layout=True)


def record_cells(r: TailRecord) -> tuple[Text | str, ...]:
    ts = "-"
    if r.timestamp_ms is not None:
        secs = r.timestamp_ms / 1000
        ts = time.strftime("%m-%d ", time.localtime(secs)) + fmt.clock_time(secs)
    headers = ", ".join(f"{k}={show_bytes(v, 40)}" for k, v in r.headers)
    return (
        str(r.partition),
        str(r.offset),
        ts,
        Text(show_bytes(r.key, 40), fmt.DIM if r.key is None else fmt.PLAIN),
        show_bytes(r.value, 120),
        Text(headers, fmt.DIM),
    )
