"""The produce dialog and the tail view, driven with Pilot over recorded snapshots, recorded
deliveries and recorded tail records (the real-cluster versions are in tests/integration)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from rich.cells import cell_len
from textual.coordinate import Coordinate
from textual.widgets import DataTable, Input, ProgressBar

from kconsole.cluster.produce import api as pr
from kconsole.cluster.tail import StartAt, TailRecord
from kconsole.ui.screens.produce import ProduceScreen
from kconsole.ui.screens.tail import record_cells
from tests.ui.conftest import feed, load, new_app, table_settled
from tests.ui.pilots import (
    enter_in,
    fill,
    open_produce,
    open_tail,
    prepared,
    produce_app,
    send,
    send_and_wait,
    tail_app,
    text_of,
    trace_after,
    wait_for,
)
from tests.ui.produce_fakes import RECORDED_LIMITS, ReplayCommands, deliveries, tail_records
from tests.ui.warm_fakes import FakeWarm

SIZE = (120, 36)


# read_topic_limits answers what the real cluster answered for test-topic.
pytestmark = pytest.mark.usefixtures("recorded_limits")


# -- the trace ------------------------------------------------------------------------------
async def test_trace_follows_the_key_as_typed() -> None:
    app = produce_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_produce(pilot)
        assert screen.query_one("#topic", Input).value == "test-topic"  # the selected row's
        snap = load("healthy")
        for key in ("order-7", "order-42", "customer-9"):
            screen.query_one("#key", Input).value = ""
            await pilot.press(*key)
            await pilot.pause()
            partition = pr.partition_for(key.encode(), 4)
            p = snap.partition("test-topic", partition)
            assert p is not None
            shown = text_of(app, "#trace")
            assert f"key {key} → test-topic/partition {partition} → leader {p.leader}" in shown
            assert "ISR " + ",".join(map(str, p.isr)) in shown
            assert "a send would be accepted now" in shown
        # An explicit partition overrides the key; a null key spreads.
        assert "partition 3 → leader" in await trace_after(pilot, screen, partition="3")
        assert "any of 4 partitions" in await trace_after(pilot, screen, partition="", key="")
        trace = await trace_after(pilot, screen, topic="no such topic")
        assert "invalid topic name 'no such topic'" in trace
        trace = await trace_after(pilot, screen, topic="missing-topic")
        assert "topic 'missing-topic' does not exist" in trace


async def test_trace_warns_under_min_isr_and_follows_snapshots() -> None:
    app = produce_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_produce(pilot, "healthy")
        assert "a send would be accepted now" in await trace_after(pilot, screen, key="order-42")
        # Two brokers go down while the dialog is open: the trace warns before any send.
        feed(app, load("two_down"))
        await pilot.pause()
        shown = text_of(app, "#trace")
        assert "under min ISR: ISR 1 < min.insync.replicas 2" in shown
        assert "acks=all would fail now with NOT_ENOUGH_REPLICAS" in shown
        assert "acks=1 does not wait for the ISR" in await trace_after(pilot, screen, acks="1")


async def test_trace_offline_partition() -> None:
    app = produce_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_produce(pilot, "no_controller")
        trace = await trace_after(pilot, screen, key="order-42")
        assert "is offline (no live leader): sends will fail" in trace


async def test_trace_checks_the_record_size() -> None:
    """Issue 26: the trace said "a send would be accepted now" for a 1.5 MB record that ctrl+s
    then refused as too large. It checks the size against the topic's max.message.bytes (as
    the send does), and promises nothing before that limit is read."""
    app = produce_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_produce(pilot)
        trace = await trace_after(pilot, screen, key="order-42", value="x" * 1_500_000)
        assert "record too large: about 1,500,090 bytes with overhead, but test-topic accepts" in (
            trace
        ), trace
        assert "at most 1,048,588 (max.message.bytes, topic): a send would be refused" in trace
        assert "would be accepted" not in trace
        # the refusal writes the figures as the trace does (issue 35 #19: 1500087 beside 1,500,087)
        refused = await send(pilot, screen)
        assert "the record is too large: about 1,500,090 bytes with overhead" in refused, refused
        assert "test-topic accepts at most 1,048,588 (max.message.bytes" in refused, refused
        # Key, headers and value all count, as in the send's check: one byte under the limit
        # is accepted, one over is not.
        limit = RECORDED_LIMITS.max_message_bytes
        under = limit - pr.record_size(b"order-42", b"", [("src", b"ui")])
        trace = await trace_after(pilot, screen, headers="src=ui", value="y" * under)
        assert "a send would be accepted now" in trace
        assert "record too large" in await trace_after(pilot, screen, value="y" * (under + 1))
        # A topic whose limit is not read yet: no promise either way.
        assert screen.session is not None
        screen.session._limits.clear()
        screen.update_trace()
        trace = text_of(app, "#trace")
        assert "test-topic's max.message.bytes is not read yet" in trace, trace
        assert "would be accepted" not in trace and "too large" not in trace


# -- sending ----------------------------------------------------------------------------------
async def test_one_producer_is_kept_warm_across_sends(no_real_producers: list[FakeWarm]) -> None:
    """Issue 26: every send made a new idempotent producer and waited 0.5-1 s for its producer
    id. The dialog's session makes one when the dialog opens (its id acquired before the first
    send), hands that same one to every send through the door, makes another only when acks or
    compression change, and closes it when the dialog closes."""
    sent, elapsed = deliveries("small_send")
    commands = ReplayCommands(sent, elapsed)
    app = produce_app(commands)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_produce(pilot)
        assert len(no_real_producers) == 1
        first = no_real_producers[0]
        assert first.ready and first.acks == "all" and first.producer_id is not None
        assert screen.prepared is not None and screen.prepared.ready
        fill(screen, key="k", value="v")
        await send_and_wait(pilot, screen)
        await send_and_wait(pilot, screen)
        assert [options["warm"] for _, options in commands.calls] == [first, first]
        assert len(no_real_producers) == 1 and first.closed is None
        fill(screen, acks="1")
        await prepared(pilot, screen)
        assert len(no_real_producers) == 2 and no_real_producers[1].acks == "1"
        assert first.closed is not None  # the one it replaced
        await send_and_wait(pilot, screen)
        assert commands.calls[-1][1]["warm"] is no_real_producers[1]
        await pilot.press("escape")  # the dialog closes: so does its producer
        await pilot.pause()
        assert not isinstance(app.screen, ProduceScreen)
        assert no_real_producers[1].closed is not None


async def test_the_apps_exit_closes_the_producer(no_real_producers: list[FakeWarm]) -> None:
    app = produce_app()
    async with app.run_test(size=SIZE) as pilot:
        await open_produce(pilot)
        assert len(no_real_producers) == 1 and no_real_producers[0].closed is None
        app.exit()
        await pilot.pause()
    assert no_real_producers[0].closed is not None


async def test_acks_0_says_sent_not_acked() -> None:
    """With acks=0 the broker confirms nothing: the rows and the total say "sent", not
    "acked" (issue 26: every row said acked, only a note below said what it meant)."""
    sent, elapsed = deliveries("small_send")
    commands = ReplayCommands(sent, elapsed)
    app = produce_app(commands)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_produce(pilot)
        status = await send(pilot, screen, key="order-7", value="v", count="3", acks="0")
        assert commands.calls[0][1]["acks"] == "0"
        table = screen.query_one("#deliveries", DataTable)
        assert [str(table.get_row(str(i))[5]) for i in range(3)] == [
            "sent (acks=0: not confirmed)"
        ] * 3
        assert "3/3 sent, not confirmed (acks=0)" in status and " acked" not in status, status


async def test_small_send_shows_every_delivery() -> None:
    sent, elapsed = deliveries("small_send")
    commands = ReplayCommands(sent, elapsed)
    app = produce_app(commands)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_produce(pilot)
        status = await send(
            pilot, screen, key="order-7", value="order order-7 placed", count="3", headers="src=ui"
        )
        assert len(commands.calls) == 1
        topic, options = commands.calls[0]
        assert topic == "test-topic" and options["acks"] == "all"
        assert options["max_message_bytes"] == RECORDED_LIMITS.max_message_bytes
        table = screen.query_one("#deliveries", DataTable)
        assert table.row_count == 3
        for i in range(3):
            row = [str(c) for c in table.get_row(str(i))]
            assert row[2] == str(sent[i].partition) and row[3] == str(sent[i].offset)
            assert row[5] == "acked"
        assert status.startswith("3/3 acked, 0 failed, 0 unknown")
        assert screen.last_result is not None and screen.last_result.ok


async def test_not_enough_replicas_is_shown() -> None:
    failed, elapsed = deliveries("not_enough_replicas")
    commands = ReplayCommands(failed, elapsed)
    app = produce_app(commands)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_produce(pilot, "two_down")
        trace = await trace_after(pilot, screen, key="order-42", value="order order-42 paid")
        assert "NOT_ENOUGH_REPLICAS" in trace  # warned before sending
        status = await send(pilot, screen)
        assert "0/1 acked, 1 failed (NOT_ENOUGH_REPLICAS: 1)" in status
        row = [str(c) for c in screen.query_one("#deliveries", DataTable).get_row("0")]
        assert row[5] == "NOT_ENOUGH_REPLICAS: Broker: Not enough in-sync replicas"


async def test_bulk_send_shows_progress_and_can_be_stopped() -> None:
    sent, elapsed = deliveries("small_send")
    commands = ReplayCommands(sent, elapsed, delay_s=0.002)
    app = produce_app(commands)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_produce(pilot)
        fill(screen, key="bulk", value="x", count="100000")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: commands.taken > 50)
        assert screen.sending
        assert not screen.query_one("#deliveries").display  # bulk: a progress bar instead
        assert screen.query_one("#produce-progress").display
        await wait_for(pilot, lambda: "sending" in text_of(app, "#produce-status"))
        await pilot.press("escape")  # stop sending, stay on the dialog
        await wait_for(pilot, lambda: not screen.sending)
        assert isinstance(app.screen, ProduceScreen)
        result = screen.last_result
        assert result is not None and 50 < result.sent < 100000
        assert len(result.acked) == result.sent  # every record sent is accounted for
        assert "stopped by you" in text_of(app, "#produce-status")
        bar = screen.query_one("#produce-progress", ProgressBar)
        assert bar.total == 100000 and bar.progress == result.sent  # not 100 % of what was sent
        await pilot.press("escape")
        assert not isinstance(app.screen, ProduceScreen)


async def test_a_refused_send_clears_the_rows_of_the_one_before() -> None:
    commands = ReplayCommands(*deliveries("small_send"))
    app = produce_app(commands)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_produce(pilot)
        fill(screen, key="k", value="v", count="2")
        await send_and_wait(pilot, screen)
        table = screen.query_one("#deliveries", DataTable)
        assert table.row_count == 2
        assert (await send(pilot, screen, count="0")).startswith("not sent: ")
        assert table.row_count == 0


BAD_INPUTS = [
    ({"topic": "bad topic"}, "invalid topic name 'bad topic'"),
    ({"topic": "missing-topic"}, "topic 'missing-topic' does not exist"),
    ({"count": "0"}, "count must be at least 1, not 0"),
    ({"count": "many"}, "count must be a whole number"),
    ({"rate": "-5"}, "rate must be in (0, 1000000] messages/s, not -5.0"),
    ({"partition": "9"}, "partition 9 does not exist: test-topic has partitions 0..3"),
    ({"key": "caf\udce9"}, "the key is not valid UTF-8 text"),
    ({"value_mode": "json", "value": "{oops"}, "the value is not valid JSON"),
    ({"value_mode": "file", "value_file": "/nonexistent/blob"}, "cannot read /nonexistent/blob"),
    ({"value": "x" * (pr.DEFAULT_MAX_MESSAGE_BYTES + 10)}, "the record is too large"),
]


@pytest.mark.parametrize(("fields", "message"), BAD_INPUTS)
async def test_bad_input_is_refused_and_nothing_sent(fields: dict[str, str], message: str) -> None:
    commands = ReplayCommands(*deliveries("small_send"))
    app = produce_app(commands)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_produce(pilot)
        fill(screen, key="k", value="v")
        status = await send(pilot, screen, **fields)
        assert status.startswith("not sent: ")
        assert message in status
        assert "--" not in status  # the dialog's fields, not the command line's flags
        assert commands.calls == [] and commands.taken == 0
        assert not screen.sending


async def test_read_only_refuses_to_produce(no_real_producers: list[FakeWarm]) -> None:
    commands = ReplayCommands(*deliveries("small_send"), read_only=True)
    app = produce_app(commands)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_produce(pilot)
        assert screen.prepared is not None and screen.prepared.refused.startswith("read-only")
        assert no_real_producers == []  # read-only: no producer is even made
        # The trace promises nothing the door will refuse.
        trace = await trace_after(pilot, screen, key="k", value="v")
        assert "kconsole refuses to send: read-only mode" in trace, trace
        assert "would be accepted" not in trace
        status = await send(pilot, screen)
        assert "not sent: read-only mode: refusing to produce to test-topic" in status
        assert commands.calls == [] and no_real_producers == []


async def test_send_is_unavailable_without_a_connection() -> None:
    app = new_app()  # no settings, no commands
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_produce(pilot)
        assert screen.check_action("send", ()) is None  # shown disabled
        await pilot.press("ctrl+s")
        assert "nothing sent yet" in text_of(app, "#produce-status")


# -- the tail ---------------------------------------------------------------------------------
async def test_tail_shows_records_and_pauses() -> None:
    records = tail_records()
    app, made = tail_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_tail(pilot)
        table = screen.query_one("#tail-records", DataTable)
        await wait_for(pilot, lambda: table.row_count == len(records))
        tail = made[-1]
        assert (tail.topic, tail.partition, tail.start, tail.group) == (
            "test-topic", None, StartAt("end"), None,
        )  # fmt: skip
        by_key = {f"{r.partition}:{r.offset}": r for r in records}
        for key, r in by_key.items():
            cells = [str(c) for c in table.get_row(key)]
            assert cells[0] == str(r.partition) and cells[1] == str(r.offset)
            assert cells[3] == ("null" if r.key is None else r.key.decode("utf-8", "replace"))
        headers = next(r for r in records if r.headers)
        assert "trace-id=abc123" in str(table.get_row(f"{headers.partition}:{headers.offset}")[5])
        binary = next(r for r in records if r.key == b"bin")
        assert (
            str(table.get_row(f"{binary.partition}:{binary.offset}")[4])
            == "\\x00\\x9f\\x92\\x96\\xff"
        )
        assert "no consumer group" in text_of(app, "#tail-status")
        # Pause: nothing more is fetched; resume: what arrived meanwhile shows.
        await pilot.press("space")
        await wait_for(pilot, lambda: tail.paused)
        assert "paused" in text_of(app, "#tail-status")
        extra = [TailRecord("test-topic", 0, 99, None, "none", b"late", b"arrived", ())]
        tail.add(extra)
        polls = tail.polls
        await wait_for(pilot, lambda: tail.polls > polls + 3)
        assert table.row_count == len(records)
        await pilot.press("space")
        await wait_for(pilot, lambda: table.row_count == len(records) + 1)
        await pilot.press("escape")
        await wait_for(pilot, lambda: tail.closed)


async def test_tail_of_one_partition_from_an_offset() -> None:
    app, made = tail_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_tail(pilot)
        typed = {"#tail-partition": "1", "#tail-from": "@1", "#tail-group": ""}
        await enter_in(pilot, screen, typed, at="#tail-from")
        table = screen.query_one("#tail-records", DataTable)
        ones = [r for r in tail_records() if r.partition == 1 and r.offset >= 1]
        assert len(ones) >= 2
        # The rows count at once; their widths only once the table has measured them.
        await wait_for(pilot, lambda: table.row_count == len(ones) and table_settled(table))
        assert (made[-1].partition, made[-1].start) == (1, StartAt("offset", 1))
        shown = [
            (str(table.get_row_at(i)[0]), str(table.get_row_at(i)[1]))
            for i in range(table.row_count)
        ]
        assert shown == [("1", str(r.offset)) for r in ones]
        assert made[0].closed  # the first tail was stopped when this one started
        # The restarted tail's columns are new: they fit its cells.
        assert too_narrow(table) == []


async def test_tail_columns_catch_up_with_rows_that_arrived() -> None:
    """DataTable measures new rows on its own idle: in between, the rows count but the
    columns are as wide as their labels, and a frame drawn then cuts the cells off. Both
    catch up without another record: a quiet tail does not keep cut-off cells."""
    app, _ = tail_app([])  # no records from the worker: this test adds them
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_tail(pilot)
        await wait_for(pilot, lambda: screen.state == "live")
        table = screen.query_one("#tail-records", DataTable)
        await wait_for(pilot, lambda: table_settled(table))
        ones = [r for r in tail_records() if r.partition == 1]
        screen.add_records(ones)  # what a Records message does; nothing runs in between
        assert table.row_count == len(ones)
        assert "timestamp" in " ".join(too_narrow(table))  # what the old test could catch
        assert not table_settled(table)  # ...and what it now waits for
        assert not drawn_whole(table, ones)  # a repaint of the screen before the table's idle
        await wait_for(pilot, lambda: table_settled(table))
        assert too_narrow(table) == []
        await wait_for(pilot, lambda: drawn_whole(table, ones))


def too_narrow(table: DataTable[Any]) -> list[str]:
    """The columns narrower than one of their cells, as "label width<cell width"."""
    out = []
    for column in table.columns.values():
        index = table.get_column_index(column.key)
        widest = max(
            (
                cell_len(str(table.get_cell_at(Coordinate(i, index))))
                for i in range(table.row_count)
            ),
            default=0,
        )
        if column.content_width < widest:
            out.append(f"{column.label} {column.content_width}<{widest}")
    return out


def drawn_whole(table: DataTable[Any], records: list[TailRecord]) -> bool:
    """The table, drawn now, shows every cell of these records (its rows, below the header)."""
    lines = [table.render_line(y).text for y in range(1, len(records) + 1)]
    return all(
        str(cell) in line
        for record, line in zip(records, lines, strict=True)
        for cell in record_cells(record)
    )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("#tail-from", "someday", "unknown start position 'someday'"),
        ("#tail-partition", "two", "partition must be a whole number"),
        ("#tail-topic", "", "type a topic to tail"),
    ],
)
async def test_tail_bad_input(field: str, value: str, message: str) -> None:
    app, made = tail_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_tail(pilot)
        n = len(made)
        await enter_in(pilot, screen, {field: value})
        await pilot.pause()
        assert message in text_of(app, "#tail-status")
        assert len(made) == n  # no new tail was opened


async def test_tail_error_from_the_cluster_is_shown() -> None:
    app, made = tail_app(error="topic 'gone' does not exist")
    async with app.run_test(size=SIZE) as pilot:
        await open_tail(pilot)
        await wait_for(pilot, lambda: "does not exist" in text_of(app, "#tail-status"))
        assert text_of(app, "#tail-status").strip().startswith("✗ topic 'gone' does not exist")
        await wait_for(pilot, lambda: made[-1].closed)


async def test_tail_keeps_the_newest_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    from kconsole.ui.screens import tail as tail_screen

    monkeypatch.setattr(tail_screen, "MAX_ROWS", 50)
    many = [
        TailRecord("test-topic", 0, i, None, "none", str(i).encode(), b"v", ()) for i in range(120)
    ]
    app, _ = tail_app(many)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_tail(pilot)
        await wait_for(pilot, lambda: screen.received == 120)
        await asyncio.sleep(0)
        table = screen.query_one("#tail-records", DataTable)
        assert table.row_count == 50
        assert str(table.get_row_at(0)[1]) == "70" and str(table.get_row_at(49)[1]) == "119"
