"""The tail view: records of a topic (or one partition) as they arrive.

A thread worker owns the tail, which the command layer opens (kconsole.cluster.tail.Tailer by
default): it polls it and posts what arrived in batches; pausing stops fetching without losing
the position. No consumer group is used unless the user types one; with one, the command layer
joins it (tail.group, audited once the group has assigned partitions).
"""

from __future__ import annotations

import time
from collections import deque
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Input, Label, Static
from textual.worker import get_current_worker

from kconsole.cluster.errors import ClusterError
from kconsole.cluster.tail import StartAt, TailPosition, TailRecord, parse_start, show_bytes
from kconsole.ui import format as fmt
from kconsole.ui.context import actions
from kconsole.ui.widgets.auto_width import AutoWidthTable
from kconsole.ui.widgets.footer import KeyBar

MAX_ROWS = 1000  # the table keeps the newest this many records
BATCH_EVERY_S = 0.1
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
        def __init__(self, generation: int, records: tuple[TailRecord, ...]) -> None:
            super().__init__()
            self.generation = generation
            self.records = records

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
        self.rows: deque[str] = deque()
        self.rate_window: deque[tuple[float, int]] = deque(maxlen=20)
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
        yield AutoWidthTable(cursor_type="row", id="tail-records")
        yield KeyBar()

    def on_mount(self) -> None:
        self._columns()
        self.set_interval(1.0, self._show_status)
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
        self.query_one("#tail-records", DataTable).focus()
        self._tail(self.generation, topic, partition, self.start_at, group)

    @work(thread=True, group="tail", exit_on_error=False)
    def _tail(
        self, generation: int, topic: str, partition: int | None, start: StartAt, group: str | None
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
            batch: list[TailRecord] = []
            sent_at = time.monotonic()
            while not worker.is_cancelled:
                if self.paused != source.paused:
                    source.pause() if self.paused else source.resume()
                batch.extend(source.poll(0.1))
                now = time.monotonic()
                if batch and now - sent_at >= BATCH_EVERY_S:
                    self.post_message(self.Records(generation, tuple(batch)))
                    batch, sent_at = [], now
            if batch:
                self.post_message(self.Records(generation, tuple(batch)))
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
        self.add_records(message.records)

    def on_tail_screen_failed(self, message: Failed) -> None:
        if message.generation != self.generation:
            return
        self._fail(message.reason)

    def _fail(self, reason: str) -> None:
        self.state = "failed"
        self.error = reason
        self._show_status()

    def add_records(self, records: tuple[TailRecord, ...] | list[TailRecord]) -> None:
        """Append records to the table (the oldest rows go beyond MAX_ROWS)."""
        table = self.query_one("#tail-records", DataTable)
        follow = table.cursor_row >= table.row_count - 1
        for r in records[-MAX_ROWS:]:
            key = f"{r.partition}:{r.offset}"
            if key in table.rows:
                continue
            table.add_row(*record_cells(r), key=key)
            self.rows.append(key)
        while len(self.rows) > MAX_ROWS:
            table.remove_row(self.rows.popleft())
        self.received += len(records)
        self.rate_window.append((time.monotonic(), self.received))
        if follow and table.row_count:
            table.move_cursor(row=table.row_count - 1, animate=False)
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
        self.query_one("#tail-records", DataTable).clear(columns=True)
        self._columns()
        self.rows.clear()

    def _columns(self) -> None:
        table = self.query_one("#tail-records", DataTable)
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
        rate = self.rate()
        if rate is not None:
            text.append(f" · {rate:,.0f}/s", fmt.DIM)
        if self.positions:
            starts = " ".join(f"{p.partition}@{p.start}" for p in self.positions[:8])
            more = " …" if len(self.positions) > 8 else ""
            text.append(f" · started at {starts}{more}", fmt.DIM)
        return text

    def rate(self) -> float | None:
        if len(self.rate_window) < 2:
            return None
        (t0, n0), (t1, n1) = self.rate_window[0], self.rate_window[-1]
        return (n1 - n0) / (t1 - t0) if t1 > t0 else None


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
