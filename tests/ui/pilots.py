"""The steps the UI tests take with Pilot, in one place: make the console on fakes and recorded
data, run it at a size with snapshots fed, open a screen, wait for a condition, press keys, read
what a widget shows. A test then reads as what a user does and what they see.

conftest.py keeps the fakes, the clock, the recorded snapshots and its own steps (feed,
select_broker, settle, wait_for_actions, feeding, keys_then, run_fixture_drill); the helpers
here are built on them. produce_fakes.py and jobs_fakes.py keep the recorded data and the
fakes that replay it."""

from __future__ import annotations

import io
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import DataTable, Input, Select, Static, TextArea

from kconsole.cluster.produce import api as pr
from kconsole.cluster.tail import StartAt, TailRecord
from kconsole.commands import Commands
from kconsole.config import Settings
from kconsole.jobs.manager import JobManager
from kconsole.models import ClusterSnapshot
from kconsole.ui.app import KConsoleApp
from kconsole.ui.screens.actions import ConfirmBrokerAction
from kconsole.ui.screens.ask import AskText
from kconsole.ui.screens.jobs import StartJobDialog
from kconsole.ui.screens.produce import ProduceScreen
from kconsole.ui.screens.tail import TailScreen
from kconsole.ui.widgets.tables import PartitionsTable
from tests.ui.conftest import (
    Clock,
    FakeControl,
    FakeObserver,
    feed,
    load,
    new_app,
    select_broker,
    settle,
    table_settled,
)
from tests.ui.produce_fakes import ReplayCommands, ReplayTailer, deliveries, tail_records

SMALL = (80, 24)
S = TypeVar("S", bound=Screen[Any])
SnapCompare = Callable[..., bool]
RunBefore = Callable[[Pilot[Any]], Awaitable[None]]


# -- the console, made and run -------------------------------------------------------------------
def controlled_app(
    control: FakeControl | None = None,
    *,
    read_only: bool = False,
    observer: FakeObserver | None = None,
    clock: Clock | None = None,
    export_dir: Path | None = None,
) -> tuple[KConsoleApp, FakeControl]:
    """The console with `control` (a FakeControl when not given) behind its command layer, and
    that control, to see what it was asked."""
    control = control or FakeControl()
    commands = Commands(control, read_only=read_only)
    app = new_app(observer, clock, commands=commands, export_dir=export_dir)
    return app, control


def produce_app(commands: ReplayCommands | None = None) -> KConsoleApp:
    """The console whose sends replay `commands`' deliveries (the recorded small send when not
    given)."""
    sent, elapsed = deliveries("small_send")
    return new_app(commands=commands or ReplayCommands(sent, elapsed), settings=Settings())


def tail_app(
    records: list[TailRecord] | None = None, error: str = "", *, commands: Commands | None = None
) -> tuple[KConsoleApp, list]:
    """The console whose tails replay `records` (the recorded ones when not given), or refuse
    with `error`, through `commands` (a command layer of its own when not given); and the list
    of the tails it made, newest last."""
    made: list[ReplayTailer] = []
    data = tail_records() if records is None else records

    def factory(
        topic: str, partition: int | None, start: StartAt, group: str | None
    ) -> ReplayTailer:
        made.append(ReplayTailer(data, topic, partition, start, group, error))
        return made[-1]

    return new_app(commands=commands, tailer=factory), made


def jobs_app(
    jobs: JobManager, *, read_only: bool = False, settings: Settings | None = None
) -> KConsoleApp:
    """The console with `jobs` behind its command layer (and no cluster control)."""
    return new_app(
        commands=Commands(None, read_only=read_only), settings=settings or Settings(), jobs=jobs
    )


@asynccontextmanager
async def driving(
    app: KConsoleApp, *snapshots: ClusterSnapshot, size: tuple[int, int]
) -> AsyncIterator[Pilot[None]]:
    """Run `app` at `size` and feed it `snapshots` at once (no pause: as if a poll had just
    answered); the pilot."""
    async with app.run_test(size=size) as pilot:
        if snapshots:
            feed(app, *snapshots)
        yield pilot


def console(pilot: Pilot[Any]) -> KConsoleApp:
    """The console `pilot` drives."""
    app = pilot.app
    assert isinstance(app, KConsoleApp)
    return app


# -- waiting ---------------------------------------------------------------------------------------
async def wait_for(pilot: Pilot[Any], check: Callable[[], bool], timeout: float = 10.0) -> None:
    """Let the app run until `check()` holds; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met within the deadline")
        await pilot.pause(0.02)


async def wait_for_screen(pilot: Pilot[Any], kind: type, timeout: float = 10.0) -> None:
    """Wait until the app's screen is a `kind`."""
    deadline = time.monotonic() + timeout
    while not isinstance(pilot.app.screen, kind):
        assert time.monotonic() < deadline, f"no {kind.__name__} within {timeout}s"
        await pilot.pause(0.05)


async def wait_group(pilot: Pilot[Any], group: str) -> None:
    """Wait for the app's workers of `group` (only those), then for what they posted."""
    for worker in list(pilot.app.workers):
        if worker.group == group:
            await worker.wait()
    await pilot.pause()
    await pilot.pause()


# -- pressing and choosing -------------------------------------------------------------------------
async def press(pilot: Pilot[Any], *keys: str) -> None:
    """Press `keys`, then let the app handle what they posted."""
    await pilot.press(*keys)
    await pilot.pause()


async def on_partition(
    pilot: Pilot[Any], snapshot: str, row: str = "test-topic/0", *, focus: bool = False
) -> None:
    """Feed the recorded `snapshot` and put the partitions cursor on `row` (focusing the pane
    with its key 2 first, if `focus`)."""
    app = console(pilot)
    feed(app, load(snapshot))
    await pilot.pause()
    if focus:
        await pilot.press("2")
    table = app.screen.query_one("#partitions", PartitionsTable)
    table.move_cursor(row=table.get_row_index(row))
    await pilot.pause()


async def screen_after(pilot: Pilot[Any], kind: type[S], *keys: str) -> S:
    """Press `keys`; the screen they lead to, which must be a `kind`."""
    await pilot.press(*keys)
    screen = pilot.app.screen
    assert isinstance(screen, kind)
    return screen


async def confirm_dialog(pilot: Pilot[Any], broker_id: int, key: str) -> ConfirmBrokerAction:
    """Put the brokers cursor on `broker_id` and press `key` (s, k, p): the confirmation."""
    await select_broker(pilot, broker_id)
    return await screen_after(pilot, ConfirmBrokerAction, key)


async def answer(pilot: Pilot[Any], text: str) -> None:
    """Type `text` into the open dialog and press Enter."""
    assert isinstance(pilot.app.screen, AskText)
    pilot.app.screen.query_one(Input).value = ""
    await pilot.press(*text, "enter")
    await pilot.pause()


async def enter_in(
    pilot: Pilot[Any], screen: Screen[Any], values: dict[str, str], at: str | None = None
) -> None:
    """Type `values` (selector: text) into `screen`'s inputs in order, then press Enter in the
    input `at` (the last one typed into by default)."""
    for selector, value in values.items():
        screen.query_one(selector, Input).value = value
    screen.query_one(at or list(values)[-1], Input).focus()
    await pilot.press("enter")


async def open_start_dialog(pilot: Pilot[Any]) -> StartJobDialog:
    """On the jobs screen: Enter on the jobs table; the start dialog, once it is up."""
    pilot.app.screen.query_one("#job-specs").focus()
    await pilot.press("enter")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, StartJobDialog))
    dialog = pilot.app.screen
    assert isinstance(dialog, StartJobDialog)
    return dialog


# -- the produce dialog and the tail view ----------------------------------------------------------
async def open_produce(pilot: Pilot[Any], snapshot: str = "healthy") -> ProduceScreen:
    """Open the dialog on `snapshot`'s test-topic/0 row; returns once its produce session has
    answered (the producer warmed, the topic's limits read), as it soon does on a cluster."""
    app = console(pilot)
    await on_partition(pilot, snapshot)
    await pilot.press("P")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, ProduceScreen)
    steady_cursors(screen)
    await prepared(pilot, screen)
    return screen


async def prepared(pilot: Pilot[Any], screen: ProduceScreen) -> None:
    """Wait until the session has answered for what the form says now (if it has a session)."""
    if screen.session is None or not screen.query_one("#topic", Input).value.strip():
        return
    await wait_for(pilot, lambda: screen._prepared_for == screen._form_target())
    await pilot.pause()


def fill(screen: ProduceScreen, **fields: str) -> None:
    """Set the dialog's fields (value is the text area; acks, compression, value_mode are
    selects; the rest inputs)."""
    for name, value in fields.items():
        if name == "value":
            screen.query_one(TextArea).text = value
        elif name in ("acks", "compression", "value_mode"):
            screen.query_one(f"#{name.replace('_', '-')}", Select).value = value
        else:
            screen.query_one(f"#{name.replace('_', '-')}", Input).value = value


async def trace_after(pilot: Pilot[Any], screen: ProduceScreen, **fields: str) -> str:
    """Fill `fields`, let the dialog take them in; its trace."""
    fill(screen, **fields)
    await pilot.pause()
    return text_of(console(pilot), "#trace")


async def send_and_wait(pilot: Pilot[Any], screen: ProduceScreen) -> None:
    """ctrl+s, then wait until the dialog has shown the outcome (or the refusal): the worker
    done, the dialog no longer sending, a row per delivery of a small send and the table's
    widths measured, then the screen idle."""
    await pilot.press("ctrl+s")
    await pilot.pause()
    for worker in list(pilot.app.workers):
        if worker.group == "produce":
            await worker.wait()
    await wait_for(pilot, lambda: not screen.sending)
    table = screen.query_one("#deliveries", DataTable)
    result = screen.last_result
    rows = result.sent if result is not None and result.sent <= pr.SMALL_SEND else 0
    await wait_for(pilot, lambda: table.row_count == rows and table_settled(table))
    await settle(pilot)


async def send(pilot: Pilot[Any], screen: ProduceScreen, **fields: str) -> str:
    """Fill `fields`, send and wait for the outcome; the dialog's status line."""
    fill(screen, **fields)
    await send_and_wait(pilot, screen)
    return text_of(console(pilot), "#produce-status")


async def open_tail(pilot: Pilot[Any]) -> TailScreen:
    """Open the tail view on the recorded healthy snapshot's test-topic/0 row."""
    app = console(pilot)
    await on_partition(pilot, "healthy")
    await pilot.press("F")
    await pilot.pause()
    assert isinstance(app.screen, TailScreen)
    steady_cursors(app.screen)
    return app.screen


# -- reading what is shown -------------------------------------------------------------------------
def text_of(app: KConsoleApp, selector: str) -> str:
    """A Static's content as plain text (Rich renderables rendered, wide enough not to wrap)."""
    content = app.screen.query_one(selector, Static).content
    if isinstance(content, str):
        return content
    out = Console(width=400, file=io.StringIO(), color_system=None, legacy_windows=False)
    with out.capture() as captured:
        out.print(content)
    return "\n".join(line.rstrip() for line in captured.get().splitlines())


def rendered(widget: Widget, width: int = 200) -> str:
    """What a widget shows, as plain text."""
    content = widget.content if isinstance(widget, Static) else widget.render()
    out = Console(width=width, no_color=True)
    with out.capture() as capture:
        out.print(content)
    return capture.get()


def impact(screen: ConfirmBrokerAction) -> str:
    """The confirmation's blast radius, as plain text on one line per item."""
    return rendered(screen.query_one("#confirm-impact"), width=400)


def notices(app: KConsoleApp) -> list[str]:
    """The notifications shown, as "title: message"."""
    return [f"{n.title}: {n.message}" for n in app._notifications]


def border_title(app: KConsoleApp, selector: str) -> str:
    """The border title of the widget `selector` names ("" when it has none)."""
    return str(app.screen.query_one(selector).border_title or "")


def steady_cursors(screen: Screen[Any]) -> None:
    """No blinking text cursors: a snapshot must not depend on when it is taken."""
    for widget in screen.query(Input):
        widget.cursor_blink = False
    for area in screen.query(TextArea):
        area.cursor_blink = False
