"""What the produce dialog, the tail view and the jobs screen look like, fed recorded snapshots,
recorded deliveries and tail records (tests/fixtures/record_produce_tail.py) and recorded job
runs (tests/fixtures/record_jobs.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input

from kconsole.cluster.produce import api as pr
from kconsole.config import Settings
from kconsole.ui.screens.produce import ProduceScreen
from tests.ui.conftest import feed, load
from tests.ui.jobs_fakes import recorded_jobs
from tests.ui.pilots import (
    SMALL,
    RunBefore,
    SnapCompare,
    console,
    fill,
    jobs_app,
    open_produce,
    open_start_dialog,
    open_tail,
    produce_app,
    send_and_wait,
    steady_cursors,
    tail_app,
    wait_for,
)
from tests.ui.produce_fakes import ReplayCommands, deliveries, tail_records

WIDE = (140, 40)

pytestmark = pytest.mark.usefixtures("recorded_limits")


def dialog(snapshot: str, send: bool = False, **fields: str) -> RunBefore:
    """Open the dialog over `snapshot`, fill `fields`, optionally send."""

    async def run_before(pilot: Pilot[Any]) -> None:
        screen = await open_produce(pilot, snapshot)
        fill(screen, **fields)
        await pilot.pause()
        if send:
            await send_and_wait(pilot, screen)

    return run_before


class TestProduceDialog:
    def test_trace_healthy(self, snap_compare: SnapCompare) -> None:
        """The trace of a typed key on a healthy cluster."""
        run = dialog("healthy", key="order-42", value='{"qty": 3}', value_mode="json")
        assert snap_compare(produce_app(), terminal_size=WIDE, run_before=run)

    def test_trace_warns_under_min_isr_small(self, snap_compare: SnapCompare) -> None:
        """Two brokers down: acks=all would fail, and the trace says so before sending."""
        run = dialog("two_down", key="order-42", value="order order-42 paid")
        assert snap_compare(produce_app(), terminal_size=SMALL, run_before=run)

    def test_small_send_deliveries(self, snap_compare: SnapCompare) -> None:
        """A recorded send of six records: partition, offset and latency of each."""
        run = dialog("healthy", send=True, key="order-7", value="order order-7 placed", count="6")
        assert snap_compare(produce_app(), terminal_size=WIDE, run_before=run)

    def test_not_enough_replicas(self, snap_compare: SnapCompare) -> None:
        """The recorded NOT_ENOUGH_REPLICAS of an acks=all send with two brokers down."""
        commands = ReplayCommands(*deliveries("not_enough_replicas"))
        run = dialog("two_down", send=True, key="order-42", value="order order-42 paid")
        assert snap_compare(produce_app(commands), terminal_size=WIDE, run_before=run)

    def test_refused(self, snap_compare: SnapCompare) -> None:
        """A bad count: refused with its reason, nothing sent."""
        run = dialog("healthy", send=True, key="k", value="v", count="0")
        assert snap_compare(produce_app(), terminal_size=WIDE, run_before=run)

    def test_bulk_progress(self, snap_compare: SnapCompare) -> None:
        """A bulk send half-way: progress bar, rate, acked and failed by error code."""

        async def run_before(pilot: Pilot[Any]) -> None:
            screen = await open_produce(pilot, "healthy")
            fill(screen, key="bulk", value="x", count="20000")
            await pilot.pause()
            # The screen as the worker leaves it mid-send (the tally of a real half-way send).
            screen.request = screen.form_request()
            screen.sending = True
            screen.query_one("#deliveries").display = False
            bar = screen.query_one("#produce-progress")
            bar.display = True
            bar.update(total=20000, progress=0)  # type: ignore[attr-defined]
            tally = pr.TallyView(20000, 11480, {"NOT_ENOUGH_REPLICAS": 37}, 0, 3.5, {})
            screen.post_message(ProduceScreen.Progressed(tally))
            await pilot.pause()

        assert snap_compare(produce_app(), terminal_size=WIDE, run_before=run_before)


class TestTail:
    def test_tail_records(self, snap_compare: SnapCompare) -> None:
        """Recorded records: keys, a null key, JSON, binary, headers."""
        app, _ = tail_app()

        async def run_before(pilot: Pilot[Any]) -> None:
            screen = await open_tail(pilot)
            table = screen.query_one("#tail-records", DataTable)
            await wait_for(pilot, lambda: table.row_count == len(tail_records()))
            await pilot.pause()

        assert snap_compare(app, terminal_size=WIDE, run_before=run_before)

    def test_tail_paused_small(self, snap_compare: SnapCompare) -> None:
        """Paused, on a small terminal."""
        app, made = tail_app()

        async def run_before(pilot: Pilot[Any]) -> None:
            screen = await open_tail(pilot)
            table = screen.query_one("#tail-records", DataTable)
            await wait_for(pilot, lambda: table.row_count == len(tail_records()))
            await pilot.press("space")
            await wait_for(pilot, lambda: made[-1].paused)
            await pilot.pause()

        assert snap_compare(app, terminal_size=SMALL, run_before=run_before)

    def test_tail_error(self, snap_compare: SnapCompare) -> None:
        """A tail the cluster refused says why."""
        app, _ = tail_app(error="topic 'orders' does not exist")

        async def run_before(pilot: Pilot[Any]) -> None:
            await open_tail(pilot)
            await wait_for(
                pilot,
                lambda: "does not exist" in str(app.screen.query_one("#tail-status").render()),
            )

        assert snap_compare(app, terminal_size=WIDE, run_before=run_before)


class TestJobs:
    """The jobs screen over runs recorded from real Spark jobs (tests/ui/jobs_fakes.py)."""

    def test_jobs_screen(self, snap_compare: SnapCompare, tmp_path: Path) -> None:
        """keyed-counts catching up on a backlog: rate and offsets-behind charts, log."""
        app = jobs_app(recorded_jobs(tmp_path))
        assert snap_compare(app, terminal_size=WIDE, run_before=jobs_screen())

    def test_jobs_screen_small(self, snap_compare: SnapCompare, tmp_path: Path) -> None:
        """The same on 80x24."""
        app = jobs_app(recorded_jobs(tmp_path))
        assert snap_compare(app, terminal_size=SMALL, run_before=jobs_screen())

    def test_failed_run(self, snap_compare: SnapCompare, tmp_path: Path) -> None:
        """A run that failed on a missing topic: its reason, from its own output."""
        app = jobs_app(recorded_jobs(tmp_path))
        assert snap_compare(app, terminal_size=WIDE, run_before=jobs_screen("down"))

    def test_start_dialog(self, snap_compare: SnapCompare, tmp_path: Path) -> None:
        """keyed-counts' options, prefilled with this console's cluster."""
        app = jobs_app(recorded_jobs(tmp_path), settings=Settings(bootstrap="127.0.0.1:19092"))

        async def run_before(pilot: Pilot[Any]) -> None:
            await jobs_screen()(pilot)
            steady_cursors(await open_start_dialog(pilot))
            await pilot.pause()

        assert snap_compare(app, terminal_size=WIDE, run_before=run_before)

    def test_start_dialog_bad_option(self, snap_compare: SnapCompare, tmp_path: Path) -> None:
        """An empty trigger: the dialog stays open, the field named with its form beside it."""
        app = jobs_app(recorded_jobs(tmp_path), settings=Settings(bootstrap="127.0.0.1:19092"))

        async def run_before(pilot: Pilot[Any]) -> None:
            await jobs_screen()(pilot)
            steady_cursors(await open_start_dialog(pilot))
            pilot.app.screen.query_one("#opt-trigger", Input).value = ""
            await pilot.press("ctrl+s")
            await pilot.pause()

        assert snap_compare(app, terminal_size=WIDE, run_before=run_before)

    def test_stopped_run_log(self, snap_compare: SnapCompare, tmp_path: Path) -> None:
        """A stopped run: its log, read from its file once it ended."""
        app = jobs_app(recorded_jobs(tmp_path))
        assert snap_compare(app, terminal_size=WIDE, run_before=jobs_screen("down", "down"))

    def test_job_description_small(self, snap_compare: SnapCompare, tmp_path: Path) -> None:
        """On 80x24 the jobs table has no room for what a job does: the detail pane says it
        whole while the jobs table has the focus."""
        app = jobs_app(recorded_jobs(tmp_path))

        async def run_before(pilot: Pilot[Any]) -> None:
            await jobs_screen()(pilot)
            pilot.app.screen.query_one("#job-specs").focus()
            await pilot.pause()

        assert snap_compare(app, terminal_size=SMALL, run_before=run_before)


def jobs_screen(*keys: str) -> RunBefore:
    async def run_before(pilot: Pilot[Any]) -> None:
        app = console(pilot)
        feed(app, load("healthy"))
        await pilot.pause()
        await pilot.press("J")
        await wait_for(pilot, lambda: len(app.job_runs) == 3)
        app.screen.query_one("#job-runs").focus()
        await pilot.pause()
        if keys:
            await pilot.press(*keys)
        await pilot.pause()

    return run_before
