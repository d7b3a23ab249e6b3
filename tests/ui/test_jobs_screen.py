"""The jobs screen driven with Pilot: a real JobManager starting real processes (a fake job
script that speaks the jobs' protocol, no Spark: tests/unit/test_jobs.py), and recorded runs."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from textual.widgets import DataTable, Input

from kconsole.commands import Commands
from kconsole.config import Settings
from kconsole.jobs import JobState
from kconsole.jobs.manager import JobManager
from kconsole.ui.app import KConsoleApp
from kconsole.ui.screens.jobs import JobsScreen, StartJobDialog, group_lag, run_cells
from tests.ui.conftest import feed, load, new_app
from tests.ui.jobs_fakes import recorded_jobs
from tests.ui.produce_fakes import text_of, wait_for
from tests.unit.test_jobs import write_fake

SIZE = (140, 40)


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[JobManager]:
    jobs_dir = tmp_path / "jobs"
    write_fake(jobs_dir, "fake")
    m = JobManager(tmp_path / "state", Settings(), jobs_directory=jobs_dir)
    try:
        yield m
    finally:
        for run in m.runs():
            if run.active:
                m.stop(run.run_id, timeout_s=5)
        assert not [r.run_id for r in m.runs() if r.active]


def jobs_app(manager: JobManager, read_only: bool = False) -> KConsoleApp:
    return new_app(commands=Commands(None, read_only=read_only), settings=Settings(), jobs=manager)


async def open_jobs(app: KConsoleApp, pilot: object) -> JobsScreen:
    feed(app, load("healthy"))
    await app.push_screen(JobsScreen())
    screen = app.screen
    assert isinstance(screen, JobsScreen)
    return screen


def alive(pid: int | None) -> bool:
    try:
        return pid is not None and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def test_start_and_stop_a_job_from_the_screen(manager: JobManager) -> None:
    app = jobs_app(manager)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_jobs(app, pilot)
        specs = screen.query_one("#job-specs", DataTable)
        assert [str(k.value) for k in specs.rows] == ["fake"]
        specs.focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, StartJobDialog))
        dialog = app.screen
        assert isinstance(dialog, StartJobDialog)
        dialog.query_one("#opt-topic", Input).value = "orders"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, JobsScreen))
        await wait_for(pilot, lambda: any(r.state is JobState.RUNNING for r in app.job_runs))
        await wait_for(pilot, lambda: app.job_runs[-1].latest is not None)
        run = app.job_runs[-1]
        assert run.options == {"topic": "orders"} and run.topic == "orders"  # only what changed
        assert not run.detached and alive(run.pid)
        runs = screen.query_one("#job-runs", DataTable)
        await wait_for(pilot, lambda: runs.row_count == 1)
        row = [str(c) for c in runs.get_row(run.run_id)]
        assert row[1] == "running" and row[2] != "-"  # state, batch
        assert "commits to group" not in text_of(app, "#job-summary") or run.group_id
        assert "some log line" in text_of(app, "#job-log")
        runs.focus()
        await pilot.press("s")
        await wait_for(pilot, lambda: app.job_runs[-1].state is JobState.STOPPED, timeout=20)
        assert not alive(run.pid)
        assert "stopped" in [str(c) for c in runs.get_row(run.run_id)][1]


async def test_a_failing_job_shows_why(manager: JobManager, tmp_path: Path) -> None:
    app = jobs_app(manager)
    async with app.run_test(size=SIZE) as pilot:
        await open_jobs(app, pilot)
        app.request_job_start("fake", {"mode": "fail"}, False)
        await wait_for(
            pilot, lambda: bool(app.job_runs) and app.job_runs[-1].state is JobState.FAILED
        )
        await pilot.pause()
        assert "why it failed: the topic is on fire" in text_of(app, "#job-log")
        assert "failed" in text_of(app, "#job-summary")


async def test_read_only_refuses_to_start(manager: JobManager) -> None:
    app = jobs_app(manager, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await open_jobs(app, pilot)
        app.request_job_start("fake", {}, False)
        for worker in list(app.workers):
            if worker.group == "job-actions":
                await worker.wait()
        await pilot.pause()
        assert manager.runs() == []
        assert any("read-only mode" in str(n.message) for n in app._notifications)


async def test_console_exit_stops_attached_runs_not_detached_ones(manager: JobManager) -> None:
    app = jobs_app(manager)
    async with app.run_test(size=SIZE) as pilot:
        await open_jobs(app, pilot)
        app.request_job_start("fake", {"topic": "attached"}, False)
        app.request_job_start("fake", {"topic": "detached"}, True)
        await wait_for(
            pilot,
            lambda: (
                len(app.job_runs) == 2 and all(r.state is JobState.RUNNING for r in app.job_runs)
            ),
        )
    by_topic = {r.topic: r for r in manager.runs()}
    assert by_topic["attached"].state is JobState.STOPPED and not alive(by_topic["attached"].pid)
    assert by_topic["detached"].state is JobState.RUNNING and alive(by_topic["detached"].pid)


def test_group_lag_column_is_the_groups_pane_lag(tmp_path: Path) -> None:
    """The runs table puts the consumer-groups pane's lag of the job's group beside the job's
    own offsets behind."""
    snap = load("group_lag")
    group = snap.groups[0]
    run = dataclasses.replace(recorded_jobs(tmp_path).runs()[-1], group_id=group.group_id)
    assert group_lag(snap, group.group_id) == group.lag
    cells = [str(c) for c in run_cells(run, snap)]
    assert cells[7] == f"{group.lag:,}"
    assert group_lag(snap, "nobody") is None


async def test_recorded_runs_are_listed_newest_first(tmp_path: Path) -> None:
    app = new_app(commands=Commands(None), settings=Settings(), jobs=recorded_jobs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_jobs(app, pilot)
        runs = screen.query_one("#job-runs", DataTable)
        await wait_for(pilot, lambda: runs.row_count == 3)
        states = [str(runs.get_row_at(i)[1]) for i in range(3)]
        assert states == ["running", "failed", "stopped"]
        runs.focus()
        await pilot.press("down")
        await wait_for(pilot, lambda: "does not exist" in text_of(app, "#job-log"))


async def test_quit_stops_attached_runs_first(manager: JobManager) -> None:
    app = jobs_app(manager)
    async with app.run_test(size=SIZE) as pilot:
        await open_jobs(app, pilot)
        app.request_job_start("fake", {}, False)
        await wait_for(pilot, lambda: bool(app.job_runs) and app.job_runs[-1].latest is not None)
        pid = app.job_runs[-1].pid
        await pilot.press("q")
        await wait_for(pilot, lambda: not alive(pid), timeout=20)
    assert manager.runs()[-1].state is JobState.STOPPED
