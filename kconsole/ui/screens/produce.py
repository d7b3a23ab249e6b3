"""The produce dialog: a record (or many), a live key -> partition -> leader -> ISR trace, and
every delivery accounted for.

The trace is recomputed as the user types and with every snapshot, so it warns before sending
when the target partition is offline or under min ISR, or the record is larger than the topic
accepts. Sending runs in a thread worker through the command layer (read-only refuses it):
first the request is checked against the cluster (topic exists, partition exists, record size),
then sent; deliveries come back as messages.

The dialog holds a produce session of the command layer (kconsole.commands.produce): a producer
kept open across sends, made and given its producer id when the dialog opens (and again when
topic, acks or compression change), so a send does not wait for a new producer; the session
also keeps the topic's limits the trace checks the record's size against. It is closed when
the dialog closes (the app's exit closes it too).
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, ClassVar

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.render import measure
from textual.screen import Screen
from textual.widgets import DataTable, Input, Label, ProgressBar, Select, Static, TextArea

from kconsole.cluster.errors import ClusterError
from kconsole.cluster.produce import api as pr
from kconsole.cluster.tail import show_bytes
from kconsole.ui import format as fmt
from kconsole.ui.context import actions, state, subscribe
from kconsole.ui.widgets.footer import KeyBar

if TYPE_CHECKING:
    from kconsole.commands.produce import ProduceSession, SessionState

VALUE_MODE_LABELS = {"text": "text", "json": "JSON", "file": "file"}
PROGRESS_EVERY_S = 0.1
PREPARE_AFTER_S = 0.3  # the topic, acks or compression unchanged this long: get ready for them
CLOSE_TIMEOUT_S = 3.0  # a send still running when the dialog closes gets this long to end


class ProduceScreen(Screen[None]):
    """Produce to a topic from the keyboard."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "send", "Send", id="produce-send"),
        Binding("escape", "back", "Back / stop sending", id="produce-back"),
        Binding("ctrl+t", "tail", "Tail this topic", id="produce-tail"),
    ]

    class Delivered(Message):
        """One record's outcome (small sends), with the running tally."""

        def __init__(self, delivery: pr.Delivery, tally: pr.TallyView) -> None:
            super().__init__()
            self.delivery = delivery
            self.tally = tally

    class Progressed(Message):
        """The running tally of a bulk send."""

        def __init__(self, tally: pr.TallyView) -> None:
            super().__init__()
            self.tally = tally

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, ProduceScreen.Progressed)

    class Finished(Message):
        """The send is over: every record acked, failed or unknown."""

        def __init__(self, result: pr.ProduceResult, tally: pr.TallyView) -> None:
            super().__init__()
            self.result = result
            self.tally = tally

    class Refused(Message):
        """Nothing was sent: the request was refused (the reason says why)."""

        def __init__(self, reason: str) -> None:
            super().__init__()
            self.reason = reason

    class Prepared(Message):
        """The produce session is ready (or says why not) for a topic, acks and compression."""

        def __init__(self, for_: tuple[str, str, str | None], state: SessionState) -> None:
            super().__init__()
            self.for_ = for_
            self.state = state

    def __init__(self, topic: str = "", key: str = "", partition: int | None = None) -> None:
        super().__init__()
        self.initial_topic = topic
        self.initial_key = key
        self.initial_partition = partition
        self.sending = False
        self.request: pr.ProduceRequest | None = None
        self.last_result: pr.ProduceResult | None = None
        self._stop = threading.Event()
        self.session: ProduceSession | None = None
        self.prepared: SessionState | None = None  # the latest answer of the session
        self._prepared_for: tuple[str, str, str | None] | None = None
        self._prepare_timer: Any = None

    # -- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Vertical(id="produce-form", classes="pane") as form:
            form.border_title = "Produce"
            form.border_subtitle = "ctrl+s sends · escape goes back"
            with Horizontal(classes="form-row"):
                yield Label("Topic", classes="form-label")
                yield Input(self.initial_topic, placeholder="topic", compact=True, id="topic")
                yield Label("Partition", classes="form-label")
                yield Input(
                    "" if self.initial_partition is None else str(self.initial_partition),
                    placeholder="by key",
                    compact=True,
                    id="partition",
                )
            with Horizontal(classes="form-row"):
                yield Label("Key", classes="form-label")
                yield Input(self.initial_key, placeholder="empty: null key", compact=True, id="key")
                yield Label("Count", classes="form-label")
                yield Input("1", compact=True, id="count")
                yield Label("Rate", classes="form-label")
                yield Input(placeholder="max", compact=True, id="rate")
                yield Label("msg/s", classes="form-unit")
            with Horizontal(classes="form-row"):
                yield Label("Value", classes="form-label")
                yield Select(
                    [(label, mode) for mode, label in VALUE_MODE_LABELS.items()],
                    value="text",
                    allow_blank=False,
                    compact=True,
                    id="value-mode",
                )
                yield Label("Acks", classes="form-label")
                yield Select(
                    [("all", "all"), ("1", "1"), ("0", "0")],
                    value="all",
                    allow_blank=False,
                    compact=True,
                    id="acks",
                )
                yield Label("Compression", classes="form-label")
                yield Select(
                    [(c, c) for c in pr.COMPRESSIONS],
                    value="none",
                    allow_blank=False,
                    compact=True,
                    id="compression",
                )
                yield Label("Headers", classes="form-label")
                yield Input(placeholder="k=v, k2=v2", compact=True, id="headers")
            yield TextArea(
                placeholder="the value (text, or JSON in JSON mode)", compact=True, id="value"
            )
            yield Input(placeholder="path of the file to send", compact=True, id="value-file")
        with Vertical(id="trace-pane", classes="pane") as trace:
            trace.border_title = "Trace: key → partition → leader → ISR"
            yield Static(id="trace")
        with Vertical(id="result-pane", classes="pane") as result:
            result.border_title = "Delivery"
            yield Static(Text("nothing sent yet", fmt.DIM), id="produce-status")
            yield ProgressBar(show_eta=False, id="produce-progress")
            yield DataTable(cursor_type="row", zebra_stripes=False, id="deliveries")
        yield KeyBar()

    def on_mount(self) -> None:
        table = self.query_one("#deliveries", DataTable)
        for label, key in (
            ("#", "n"),
            ("key", "key"),
            ("partition", "partition"),
            ("offset", "offset"),
            ("latency", "latency"),
            ("result", "result"),
        ):
            table.add_column(label, key=key)
        self.query_one("#value-file").display = False
        self.query_one("#produce-progress").display = False
        commands = actions(self).commands
        if commands is not None:
            self.session = commands.produce_session()
            self._prepare(self._form_target())
        subscribe(self, "snapshot", self.update_trace, init=True)
        self.query_one("#topic" if not self.initial_topic else "#key", Input).focus()

    def on_unmount(self) -> None:
        # The app's exit unmounts every screen too: the producer never outlives the dialog.
        self._stop.set()
        session, self.session = self.session, None
        if session is None:
            return
        closed = session.close(CLOSE_TIMEOUT_S)
        if closed.purged or not closed.closed:
            self.app.notify(closed.describe(), severity="warning", timeout=10)

    # -- the producer kept open ------------------------------------------------------------
    def _form_target(self) -> tuple[str, str, str | None]:
        codec = self._select("#compression")
        return (self._text("#topic").strip(), self._select("#acks"),
                None if codec == "none" else codec)  # fmt: skip

    def _schedule_prepare(self) -> None:
        """Get the session ready for the form's topic, acks and compression once they have
        stayed put a moment (not on every keystroke of the topic)."""
        if self.session is None or self.sending or self._form_target() == self._prepared_for:
            return  # (while sending: once the send has finished)
        if self._prepare_timer is not None:
            self._prepare_timer.stop()
        self._prepare_timer = self.set_timer(
            PREPARE_AFTER_S, lambda: self._prepare(self._form_target())
        )

    @work(thread=True, exclusive=True, group="produce-prepare", exit_on_error=False)
    def _prepare(self, target: tuple[str, str, str | None]) -> None:
        # A worker thread: no widgets here, only post_message.
        session = self.session
        if session is None or not target[0]:
            return
        try:
            state = session.prepare(*target)
        except Exception as exc:  # the dialog must stay usable: the send says what is wrong
            from kconsole.commands.produce import SessionState

            state = SessionState(target[0], error=f"{type(exc).__name__}: {exc}")
        self.post_message(self.Prepared(target, state))

    def on_produce_screen_prepared(self, message: Prepared) -> None:
        if message.for_ == self._form_target():  # else a newer one is on its way
            self._prepared_for = message.for_
            self.prepared = message.state
        self.update_trace()  # the limits it read are in the session now

    # -- the form -----------------------------------------------------------------------------
    def _text(self, selector: str) -> str:
        return self.query_one(selector, Input).value

    def _select(self, selector: str) -> str:
        return str(self.query_one(selector, Select).value)

    @property
    def value_mode(self) -> str:
        return self._select("#value-mode")

    def form_request(self) -> pr.ProduceRequest:
        """The request the form describes, or a ProduceError (nothing touched the cluster)."""
        mode = self.value_mode
        value = self._text("#value-file") if mode == "file" else self.query_one(TextArea).text
        return pr.build_request(
            topic=self._text("#topic"),
            key=self._text("#key"),
            value=value,
            value_mode=mode,
            headers=self._text("#headers"),
            count=self._text("#count"),
            rate=self._text("#rate"),
            acks=self._select("#acks"),
            compression=self._select("#compression"),
            partition=self._text("#partition"),
        )

    @on(Select.Changed, "#value-mode")
    def _mode_changed(self) -> None:
        file_mode = self.value_mode == "file"
        self.query_one("#value-file").display = file_mode
        self.query_one("#value").display = not file_mode

    @on(Input.Changed)
    @on(TextArea.Changed)
    @on(Select.Changed)
    def _form_changed(self) -> None:
        self.update_trace()
        self._schedule_prepare()

    def update_trace(self) -> None:
        """Re-trace the key against the latest snapshot."""
        self.query_one("#trace", Static).update(self.render_trace())

    def render_trace(self) -> Text | Group:
        snap = state(self).snapshot
        topic = self._text("#topic").strip()
        if not topic:
            return Text("type a topic", fmt.DIM)
        try:
            pr.check_topic_name(topic)
        except pr.ProduceError as exc:
            return Text(exc.message, fmt.BAD)
        if snap is None:
            return Text("no snapshot of the cluster yet", fmt.DIM)
        key_text = self._text("#key")
        try:
            key = pr.encode_text(key_text, "the key") if key_text else None
        except pr.ProduceError as exc:
            return Text(exc.message, fmt.BAD)
        partition_text = self._text("#partition").strip()
        partition = None
        if partition_text:
            try:
                partition = int(partition_text)
            except ValueError:
                return Text(f"partition must be a whole number, not {partition_text!r}", fmt.BAD)
        door = actions(self).commands
        refused = door.refusal("produce") if door is not None else "this console only observes"
        size = self.record_bytes(key)
        limits = self.limits_for(topic)
        return render_trace(
            pr.trace(
                snap, topic, key, partition, record_bytes=size,
                max_message_bytes=None if limits is None else limits.max_message_bytes,
                limit_source="topic" if limits is None else limits.max_message_bytes_source,
            ),
            self._select("#acks"),
            refused=refused,
            limit_unknown=self._limit_unknown(topic),
            producer_failed=self._producer_failed(topic),
        )  # fmt: skip

    def _producer_failed(self, topic: str) -> str:
        """Why the session's producer for `topic` cannot send (the cluster's ACLs refused it
        its id), as the session last said; '' when nothing is known against it."""
        p = self.prepared
        if p is not None and p.topic == topic and p.error and p.limits is not None:
            return p.error
        return ""

    def _limit_unknown(self, topic: str) -> str:
        """Why `topic`'s max.message.bytes is not known: being read, or why it could not be."""
        p = self.prepared
        if p is not None and p.topic == topic and p.error:
            return f"could not be read ({p.error})"
        return "is not read yet"

    def limits_for(self, topic: str) -> pr.TopicLimits | None:
        """`topic`'s limits as the session last read them (None: not read yet)."""
        if self.session is None:
            return None
        cached = self.session.cached_limits(topic)
        return None if cached is None else cached[0]

    def record_bytes(self, key: bytes | None) -> int | None:
        """The form's record's size with overhead, as the send checks it (None: unknown, e.g.
        a file that cannot be read; the send says why)."""
        if self.value_mode == "file":
            try:
                value_len = os.path.getsize(os.path.expanduser(self._text("#value-file").strip()))
            except (OSError, ValueError):
                return None
        else:
            value_len = len(self.query_one(TextArea).text.encode("utf-8", "surrogatepass"))
        try:
            headers = pr.parse_headers(self._text("#headers"))
        except pr.ProduceError:
            headers = ()
        return pr.record_size(key, b"", headers) + value_len

    # -- sending ------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "send":
            if actions(self).commands is None:
                return None
            return None if self.sending else True
        return True

    def action_send(self) -> None:
        """Check the form and send."""
        door = actions(self).commands
        if self.sending or door is None:
            return
        try:  # refused (and logged) by the command layer before the form is even read
            door.refuse("produce", self.query_one("#topic", Input).value.strip())
        except ClusterError as exc:
            self._refused(exc.message)
            return
        try:
            request = self.form_request()
        except ClusterError as exc:
            self._refused(exc.message)
            return
        self.request = request
        self.sending = True
        self._stop.clear()
        self.refresh_bindings()
        table = self.query_one("#deliveries", DataTable)
        table.clear()
        table.display = request.count <= pr.SMALL_SEND
        bar = self.query_one("#produce-progress", ProgressBar)
        bar.display = request.count > pr.SMALL_SEND
        bar.update(total=request.count, progress=0)
        self._status(Text(f"checking {request.topic} …", fmt.DIM))
        self._send(request)

    @work(thread=True, exclusive=True, group="produce", exit_on_error=False)
    def _send(self, request: pr.ProduceRequest) -> None:
        # A worker thread: no widgets here, only post_message.
        commands = actions(self).commands
        assert commands is not None
        tally = pr.Tally(request.count)
        progress: dict[str, Any]
        if request.count <= pr.SMALL_SEND:  # each delivery on screen as it comes

            def on_progress(d: pr.Delivery) -> None:
                self.post_message(self.Delivered(d, tally.view()))

            progress = {"on_progress": on_progress}
        else:  # counted as reports arrive; the screen hears about it every PROGRESS_EVERY_S

            def on_tick() -> None:
                self.post_message(self.Progressed(tally.view()))

            progress = {"on_tick": on_tick, "tick_s": PROGRESS_EVERY_S}

        try:
            # The door checks the request against the topic's limits before anything is sent.
            records = request.records(self._stop.is_set)
            if self.session is not None:  # through the producer kept open
                result = self.session.send(request, records, tally=tally, **progress)
            else:
                result = commands.produce_request(request, records, tally=tally, **progress)
        except ClusterError as exc:
            self.post_message(self.Refused(exc.message))
            return
        except Exception as exc:  # a bug must not leave the dialog "sending" forever
            self.post_message(self.Refused(f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(self.Finished(result, tally.view()))

    def on_produce_screen_delivered(self, message: Delivered) -> None:
        d = message.delivery
        table = self.query_one("#deliveries", DataTable)
        key = fmt_key(d.key)
        if d.error is None and self.request is not None and self.request.acks == "0":
            # acks=0: the broker confirms nothing; a delivery report only says it was sent
            result = Text("sent (acks=0: not confirmed)", fmt.DIM)
        elif d.error is None:
            result = Text("acked", fmt.GOOD)
        elif d.error == "UNKNOWN":
            result = Text(f"unknown: {d.reason}", fmt.WARN)
        else:
            result = Text(f"{d.error}: {d.reason}", fmt.BAD)
        add_settled_row(
            table,
            str(d.index + 1),
            key,
            "-" if d.partition is None else str(d.partition),
            "-" if d.offset is None else str(d.offset),
            "-" if d.latency_s is None else f"{d.latency_s * 1000:.1f} ms",
            result,
            key=str(d.index),
        )
        self._status(sending_text(self.request, message.tally))

    def on_produce_screen_progressed(self, message: Progressed) -> None:
        self.query_one("#produce-progress", ProgressBar).update(progress=message.tally.done)
        self._status(sending_text(self.request, message.tally))

    def on_produce_screen_finished(self, message: Finished) -> None:
        self.sending = False
        self.last_result = message.result
        self.refresh_bindings()
        # The bar keeps the count asked for: a send stopped at 1,600 of 10,000 shows 16 %.
        asked = self.request.count if self.request is not None else message.result.sent
        self.query_one("#produce-progress", ProgressBar).update(
            total=max(1, asked, message.result.sent), progress=message.tally.done
        )
        self._status(finished_text(message.result, stopped=self._stop.is_set()))
        result = message.result
        if result.ok:
            self.notify(f"{result.acked_n} acked by {result.topic}", timeout=3)
        else:
            failed = ", ".join(f"{k}: {v}" for k, v in result.failed_by_code.items())
            self.notify(
                f"{result.acked_n}/{result.sent} acked"
                + (f"; failed: {failed}" if failed else "")
                + (f"; {result.unknown_n} unknown" if result.unknown_n else ""),
                severity="error",
                timeout=10,
                markup=False,
            )
        actions(self).refresh_observer()
        # A send that lost its producer (a fatal error, records without an outcome) leaves a
        # new one to be made: made now, not when the user sends again.
        if self.session is not None and self.session.spent:
            self._prepared_for = None
        self._schedule_prepare()  # and what was changed during the send

    def on_produce_screen_refused(self, message: Refused) -> None:
        self.sending = False
        self.refresh_bindings()
        self._refused(message.reason)
        self._schedule_prepare()  # what was changed while it was being checked

    def _refused(self, reason: str) -> None:
        self._status(Text.assemble(("not sent: ", fmt.BAD), (reason, fmt.BAD)))
        self.query_one("#produce-progress").display = False
        # an earlier send's rows (and result) under "not sent" would read as this send's
        self.query_one("#deliveries", DataTable).clear()
        self.last_result = None

    def _status(self, text: Text) -> None:
        self.query_one("#produce-status", Static).update(text)

    # -- leaving ------------------------------------------------------------------------------
    def action_back(self) -> None:
        """Stop sending (what was sent is still accounted for), else go back."""
        if self.sending:
            self._stop.set()
            self._status(Text("stopping: waiting for the reports of what was sent …", fmt.WARN))
            return
        self.dismiss()

    def action_tail(self) -> None:
        """Tail the topic being produced to."""
        from kconsole.ui.screens.tail import TailScreen

        topic = self._text("#topic").strip()
        self.app.push_screen(TailScreen(topic=topic, start="-20"))


def add_settled_row(table: DataTable[str | Text], *cells: str | Text, key: str) -> None:
    """Add a row with the columns already as wide as it needs.

    DataTable measures new rows later, on its own idle, and keeps the lines it has drawn when
    the widths then grow (Textual issues 3533, 4470): a repaint in between (a busy machine)
    left the row cut at the header's widths for good ("ord", "NOT_EN"). Growing the auto-width
    columns here, in the same step as the row, means no line is ever drawn before its widths;
    DataTable's own measurement on idle then comes to the same widths.
    """
    table.add_row(*cells, key=key)
    console = table.app.console
    for column, cell in zip(table.ordered_columns, cells, strict=False):
        if column.auto_width:
            column.content_width = max(column.content_width, measure(console, cell, 1))


# -- rendering (pure functions: tested without a screen) ---------------------------------------
def fmt_key(key: bytes | None) -> Text:
    if key is None:
        return Text("null", fmt.DIM)
    return Text(show_bytes(key, 60))


def render_trace(
    t: pr.Trace, acks: str = "all", *, refused: str = "", limit_unknown: str = "is not read yet",
    producer_failed: str = "",
) -> Text | Group:  # fmt: skip
    """The trace as lines: where the key goes, then each warning. `refused`: why the command
    layer would refuse a send now (read-only mode, no cluster connection): said instead of
    "a send would be accepted". `limit_unknown`: why the topic's size limit is not known, said
    instead of it when the record's size could not be checked. `producer_failed`: why the
    producer cannot send (the cluster refused it): said instead of "would be accepted"."""
    line = Text()
    line.append("key ", fmt.DIM)
    line.append_text(fmt_key(t.key))
    line.append(" → ", fmt.DIM)
    if t.partition is None:
        if t.num_partitions:
            line.append(
                f"{t.topic}: any of {t.num_partitions} partitions (null key: the sticky "
                "partitioner spreads batches)",
            )
        else:
            line.append("?", fmt.DIM)
    else:
        line.append(f"{t.topic}/", fmt.DIM)
        line.append(f"partition {t.partition}", fmt.BOLD)
        line.append(" → ", fmt.DIM)
        if t.leader is None or t.leader < 0:
            line.append("no leader", fmt.BAD)
        else:
            line.append(f"leader {t.leader}", fmt.BOLD)
        line.append(" → ", fmt.DIM)
        line.append("ISR ", fmt.DIM)
        line.append(",".join(map(str, t.isr)) or "-")
        line.append("  replicas ", fmt.DIM)
        line.append(",".join(map(str, t.replicas)) or "-")
        if t.min_isr is not None:
            line.append("  min.insync.replicas ", fmt.DIM)
            line.append(str(t.min_isr))
    if refused or producer_failed:
        no = Text("✗ ", fmt.BAD)
        no.append(f"kconsole refuses to send: {refused}" if refused else producer_failed, fmt.BAD)
        lines: list[Text] = [line, no]
        return Group(*lines, *(Text(f"⚠ {w}", fmt.WARN) for w in t.warnings))
    if not t.warnings and t.size_unchecked:
        # No promise the send would break: its size is checked against a limit not read yet.
        wait = Text("… ", fmt.DIM)
        wait.append(
            f"record about {t.record_bytes:,} bytes: {t.topic}'s max.message.bytes {limit_unknown}",
            fmt.DIM,
        )
        return Group(line, wait)
    if not t.warnings:
        ok = Text("✓ ", fmt.GOOD)
        ok.append("a send would be accepted now", fmt.DIM)
        return Group(line, ok) if t.partition is not None else line
    table = Table.grid()
    table.add_column(width=2, no_wrap=True)
    table.add_column()
    for w in t.warnings:
        text = w
        if acks != "all" and "min ISR" in w:
            text += f" (acks={acks} does not wait for the ISR: it would be accepted)"
        severe = "offline" in w or "does not exist" in w or "too large" in w or acks == "all"
        style = fmt.BAD if severe else fmt.WARN
        table.add_row(Text("⚠", style), Text(text, style))
    return Group(line, table)


def sending_text(request: pr.ProduceRequest | None, tally: pr.TallyView) -> Text:
    total = request.count if request else tally.total
    text = Text()
    text.append(f"sending {tally.done:,}/{total:,}", fmt.BOLD)
    if request is not None:
        text.append(f" to {request.topic} (acks={request.acks})", fmt.DIM)
    text.append(f" · {tally.acked:,} acked", fmt.GOOD)
    if tally.failed:
        text.append(" · failed " + ", ".join(f"{k}: {v}" for k, v in tally.failed.items()), fmt.BAD)
    text.append(f" · {tally.rate:,.0f} msg/s", fmt.DIM)
    return text


def finished_text(result: pr.ProduceResult, stopped: bool = False) -> Text:
    """'1,000 acked, 0 failed, 0 unknown in 1.2 s · 812 msg/s · latency p50 …'."""
    text = Text()
    acked, failed, unknown = result.acked_n, result.failed_n, result.unknown_n
    style = fmt.GOOD if result.ok else fmt.BAD
    if result.acks == "0":  # nothing is acknowledged with acks=0: say what is known
        text.append(f"{acked:,}/{result.sent:,} sent, not confirmed (acks=0)", style + fmt.BOLD)
    else:
        text.append(f"{acked:,}/{result.sent:,} acked", style + fmt.BOLD)
    text.append(f", {failed:,} failed", fmt.BAD if failed else fmt.DIM)
    for code, n in result.failed_by_code.items():
        text.append(f" ({code}: {n:,})", fmt.BAD)
    text.append(f", {unknown:,} unknown", fmt.WARN if unknown else fmt.DIM)
    text.append(f" in {result.elapsed_s:.2f} s · {result.rate:,.0f} msg/s", fmt.DIM)
    lat = result.latency()
    if lat:
        text.append(
            f" · latency p50 {lat['p50']:.1f} ms  p99 {lat['p99']:.1f} ms  max {lat['max']:.1f} ms",
            fmt.DIM,
        )
    if stopped:
        text.append(" · stopped by you", fmt.WARN)
    for note in result.notes:
        text.append(f"\nnote: {note}", fmt.WARN)
    return text
