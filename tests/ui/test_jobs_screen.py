"""The jobs screen driven with Pilot: a real JobManager starting real processes (a fake job
script that speaks the jobs' protocol, no Spark: tests/unit/test_jobs.py), and recorded runs."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Sparkline, Static

from kconsole.config import Settings
from kconsole.jobs import JobRun, JobState
from kconsole.jobs.manager import JobManager
from kconsole.ui.app import KConsoleApp
from kconsole.ui.screens.jobs import (
    CHART_BATCHES,
    RUN_COLUMNS,
    RUN_LAYOUTS,
    JobsScreen,
    RunLag,
    fit_runs,
    layout_width,
    rate_scale,
    run_cells,
    run_lag,
    run_summary,
    short_run_id,
)
from tests.ui.conftest import feed, load
from tests.ui.jobs_fakes import T0, RecordedJobs, plant_run, recorded_jobs
from tests.ui.pilots import border_title, jobs_app, open_start_dialog, text_of, wait_for
from tests.unit.test_jobs import write_fake
from tests.waiting import wait_until

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


async def open_jobs(app: KConsoleApp, pilot: Pilot[Any], *, read: bool = True) -> JobsScreen:
    """The jobs screen, open; with `read`, once the runs were read (as a user sees the screen
    before using it: keys pressed before that may find the focus moved to the runs)."""
    feed(app, load("healthy"))
    await app.push_screen(JobsScreen())
    screen = app.screen
    assert isinstance(screen, JobsScreen)
    if read and app.jobs_view is not None:
        await wait_for(pilot, lambda: app.jobs_read)
        await pilot.pause()
    return screen


async def runs_listed(
    pilot: Pilot[Any], screen: JobsScreen, count: int, timeout: float = 10.0
) -> DataTable[Any]:
    """The runs table, once it lists `count` runs."""
    runs = screen.query_one("#job-runs", DataTable)
    await wait_for(pilot, lambda: runs.row_count == count, timeout=timeout)
    return runs


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
        dialog = await open_start_dialog(pilot)
        dialog.query_one("#opt-topic", Input).value = "orders"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, JobsScreen))
        await wait_for(pilot, lambda: any(r.state is JobState.RUNNING for r in app.job_runs))
        await wait_for(pilot, lambda: app.job_runs[-1].latest is not None)
        run = app.job_runs[-1]
        assert run.options == {"topic": "orders"} and run.topic == "orders"  # only what changed
        assert not run.detached and alive(run.pid)
        runs = await runs_listed(pilot, screen, 1)
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
        screen = await open_jobs(app, pilot)
        app.request_job_start("fake", {"mode": "fail"}, False)
        # A real process starts, fails and is reaped, then the next poll lists it: over 10 s in
        # a CI run with both cores saturated (a Python start-up alone took seconds there).
        await wait_for(
            pilot,
            lambda: bool(app.job_runs) and app.job_runs[-1].state is JobState.FAILED,
            timeout=30,
        )
        screen.query_one("#job-runs").focus()  # the jobs table had it: the detail showed the job
        await pilot.pause()
        assert "why it failed: the topic is on fire" in text_of(app, "#job-notes")
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


def test_a_runs_lag_is_measured_from_its_own_commits(tmp_path: Path) -> None:
    """The runs table's lag is the run's own: log end (as the groups pane read it) - what this
    run committed. A run that committed what the group holds shows the group's lag."""
    snap = load("group_lag")
    group = snap.groups[0]
    mine = {
        (p.topic, p.partition): p.committed for p in group.partitions if p.committed is not None
    }
    run = dataclasses.replace(
        recorded_jobs(tmp_path).runs()[-1], group_id=group.group_id, committed=mine
    )
    assert run_lag(run, snap) == RunLag(group.lag)
    assert str(run_cells(run, snap)[7]) == f"{group.lag:,}"
    # A partition whose log end the groups pane could not read: left out, and said.
    (t, p), _off = next(iter(mine.items()))
    unread = dataclasses.replace(
        snap,
        groups=(
            dataclasses.replace(
                group,
                partitions=tuple(
                    dataclasses.replace(gp, log_end=None)
                    if (gp.topic, gp.partition) == (t, p)
                    else gp
                    for gp in group.partitions
                ),
            ),
        ),
    )
    lag = run_lag(run, unread)
    assert lag.value is not None and lag.why == f"log end not read for {t}/{p}"
    assert str(run_cells(run, unread)[7]).endswith(" + ?")


def test_a_failed_run_that_never_committed_has_no_lag_of_the_shared_group(
    tmp_path: Path,
) -> None:
    """Issue 35, item 16: a failed run that committed nothing showed `group lag 1,403` (a
    past run's offsets in the shared group). Its lag is unknown, with the reason."""
    snap = load("group_lag")
    group = snap.groups[0]
    assert group.lag
    run = dataclasses.replace(
        recorded_jobs(tmp_path).runs()[-1],
        group_id=group.group_id,
        state=JobState.FAILED,
        committed=None,
    )
    lag = run_lag(run, snap)
    assert lag == RunLag(None, f"this run committed no offsets to group {group.group_id}")
    assert str(run_cells(run, snap)[7]) == "?"
    summary = run_summary(run, snap, T0).plain
    assert f"run lag ? (this run committed no offsets to group {group.group_id})" in summary
    assert f"{group.lag:,}" not in summary
    no_group = dataclasses.replace(run, group_id=None)
    assert run_lag(no_group, snap) == RunLag(None) and str(run_cells(no_group, snap)[7]) == "-"


async def test_recorded_runs_are_listed_newest_first(tmp_path: Path) -> None:
    app = jobs_app(recorded_jobs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_jobs(app, pilot)
        runs = await runs_listed(pilot, screen, 3)
        states = [str(runs.get_row_at(i)[1]) for i in range(3)]
        assert states == ["running", "failed", "stopped"]
        runs.focus()
        await pilot.press("down")
        await wait_for(pilot, lambda: "does not exist" in text_of(app, "#job-notes"))
        assert "does not exist" in text_of(app, "#job-log")


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


async def test_a_run_the_user_starts_is_selected_and_shown(manager: JobManager) -> None:
    """Issue 26 #16: the runs table kept its cursor on the run it was on (now one row down), so
    the detail pane went on showing an old run after a start."""
    old = manager.start("fake", {"batches": "3"})
    wait_until(lambda: not manager.get(old.run_id).active, 20, "the first run to finish")
    app = jobs_app(manager)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_jobs(app, pilot)
        runs = await runs_listed(pilot, screen, 1)
        runs.focus()
        await wait_for(pilot, lambda: old.run_id in border_title(app, "#job-detail"))
        await open_start_dialog(pilot)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: runs.row_count == 2, timeout=20)
        new = app.job_runs[-1]
        assert new.run_id != old.run_id
        cursor = runs.coordinate_to_cell_key(runs.cursor_coordinate).row_key.value
        assert cursor == new.run_id and screen.focused is runs
        assert new.run_id in border_title(app, "#job-detail")


async def test_an_ended_runs_log_is_read_from_its_file(manager: JobManager, tmp_path: Path) -> None:
    """Issue 26 #15: only active and failed runs had their log read, so a finished or stopped run
    showed 'log (job.log, newest last):' and nothing. The tail is read once the run has ended,
    so what it wrote last is there; a log file that is gone is said to be gone."""
    write_fake(
        manager.jobs_directory or tmp_path,
        "last_words",
        # at the job's exit (not the console's: it loads the script to read its options)
        extra="__name__ == '__main__' and __import__('atexit').register("
        "print, 'the last words', file=sys.stderr)",
    )
    app = jobs_app(manager)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_jobs(app, pilot)
        app.request_job_start("last-words", {"batches": "40"}, False)
        await wait_for(pilot, lambda: bool(app.job_runs), timeout=20)
        run_id = app.job_runs[-1].run_id
        screen.query_one("#job-runs").focus()
        await wait_for(pilot, lambda: app.job_runs[-1].state is JobState.FINISHED, timeout=20)
        await wait_for(pilot, lambda: "the last words" in text_of(app, "#job-log"))
        log = text_of(app, "#job-log")
        assert "some log line" in log and log.index("some log line") < log.index("the last words")
        # Another run; the finished one, selected again, still shows its log.
        app.request_job_start("fake", {"batches": "2"}, False)
        runs = await runs_listed(pilot, screen, 2, timeout=20)
        await wait_for(pilot, lambda: not app.job_runs[-1].active, timeout=20)
        runs.move_cursor(row=runs.get_row_index(run_id))
        await wait_for(pilot, lambda: run_id in border_title(app, "#job-detail"))
        assert "the last words" in text_of(app, "#job-log")
        # Its log removed: a console that has not read it says it is gone.
        (manager.runs_dir / run_id / "job.log").unlink()
        app.job_logs = {k: v for k, v in app.job_logs.items() if k != run_id}
        await wait_for(pilot, lambda: "job.log is gone" in text_of(app, "#job-log"))


async def test_a_bad_option_is_shown_beside_its_field_and_the_dialog_stays(
    manager: JobManager,
) -> None:
    """Issue 26 #18: a bad option closed the dialog (everything typed lost), and the only word
    of it was a notification ("invalid int value: ''"). Now the dialog stays with every field as
    typed, names the field and its form beside it, and starts nothing until it is fixed; opened
    again, it shows what was asked for last."""
    app = jobs_app(manager)
    async with app.run_test(size=SIZE) as pilot:
        await open_jobs(app, pilot)
        dialog = await open_start_dialog(pilot)
        dialog.query_one("#opt-topic", Input).value = "orders"
        dialog.query_one("#opt-batches", Input).value = ""
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is dialog
        assert text_of(app, "#err-batches") == "↑ batches: a whole number (it is empty)"
        assert "fix batches" in text_of(app, "#start-job-error")
        assert dialog.query_one("#opt-topic", Input).value == "orders"
        assert dialog.focused is dialog.query_one("#opt-batches", Input)
        assert manager.runs() == [] and not app.job_runs
        dialog.query_one("#opt-batches", Input).value = "many"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert text_of(app, "#err-batches") == "↑ batches: a whole number (not 'many')"
        dialog.query_one("#opt-batches", Input).value = "3"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, JobsScreen))
        await wait_for(pilot, lambda: bool(app.job_runs), timeout=20)
        assert app.job_runs[-1].options == {"topic": "orders", "batches": "3"}
        again = await open_start_dialog(pilot)
        assert again is not dialog
        assert again.query_one("#opt-topic", Input).value == "orders"
        assert again.query_one("#opt-batches", Input).value == "3"
        assert not again.query_one("#err-batches", Static).display
        await pilot.press("escape")


def test_one_fast_first_batch_does_not_flatten_the_rate_chart() -> None:
    """Issue 26 #17: the first batch (32,313 rows/s: startup and the backlog since the last
    checkpoint) set the chart's top, and 400-500 rows/s drew as nothing."""
    shown, top, clipped = rate_scale([32_313.0, 400.0, 500.0, 450.0, 480.0])
    assert (top, clipped) == (500.0, 1)
    assert shown == [500.0, 400.0, 500.0, 450.0, 480.0]
    # A spike later on is an outlier against the window's median; a steady run is drawn as is.
    assert rate_scale([400.0, 420.0, 9_000.0, 410.0, 430.0])[1:] == (430.0, 1)
    assert rate_scale([180.0, 893.0, 1228.0, 2091.0]) == ([180.0, 893.0, 1228.0, 2091.0], 2091.0, 0)
    assert rate_scale([]) == ([], 0.0, 0)
    assert len(rate_scale([float(i) for i in range(200)])[0]) == CHART_BATCHES


async def test_the_rate_chart_names_what_it_clipped(tmp_path: Path) -> None:
    state_dir, run_id = tmp_path / "state", "keyed-counts-20270115-080000-0001"
    plant_run(state_dir, run_id, "keyed_counts_backlog", job="keyed-counts",
              started_at=T0 - 60, topic="test-topic", group_id=None)  # fmt: skip
    progress = state_dir / "jobs" / "runs" / run_id / "progress.jsonl"
    lines = progress.read_text().splitlines()
    first = next(i for i, ln in enumerate(lines) if '"progress"' in ln)
    lines[first] = lines[first].replace('"processedRowsPerSecond": 179.98918983844814',
                                        '"processedRowsPerSecond": 32313.0')  # fmt: skip
    assert "32313.0" in lines[first]
    progress.write_text("".join(f"{ln}\n" for ln in lines))
    app = jobs_app(RecordedJobs(state_dir, set()))
    async with app.run_test(size=SIZE) as pilot:
        await open_jobs(app, pilot)
        await wait_for(pilot, lambda: "now" in text_of(app, "#job-rate-range"))
        said = text_of(app, "#job-rate-range")
        assert "now 1,391" in said and "max 3,637 rows/s" in said, said
        assert "(1 batch above it, up to 32,313)" in said, said
        assert app.screen.query_one("#job-rate", Sparkline).data[0] == 3_637.13592233009740


class LateRuns(RecordedJobs):
    """Recorded runs whose first read waits until `release` is set (a read that comes back after
    the jobs screen opened, as one does on a loaded machine)."""

    def __init__(self, state_dir: Path, live: set[str]) -> None:
        super().__init__(state_dir, live)
        self.release = threading.Event()

    def runs(self) -> list[JobRun]:
        assert self.release.wait(30), "the test never let the runs be read"
        return super().runs()


async def test_runs_read_after_the_screen_opened_take_the_focus(tmp_path: Path) -> None:
    """A CI run under load: the jobs screen opened before the first read of the runs came back,
    the jobs table kept the focus it had been given for want of runs, and the selected run's
    charts were never shown. Runs listed later take the focus, and their detail is shown."""
    state_dir, run_id = tmp_path / "state", "keyed-counts-20270115-080000-0001"
    plant_run(state_dir, run_id, "keyed_counts_backlog", job="keyed-counts",
              started_at=T0 - 60, topic="test-topic", group_id=None)  # fmt: skip
    jobs = LateRuns(state_dir, set())
    app = jobs_app(jobs)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_jobs(app, pilot, read=False)
        await pilot.pause()
        assert not app.job_runs and app.focused is screen.query_one("#job-specs", DataTable)
        assert "Job" in border_title(app, "#job-detail")
        jobs.release.set()
        await runs_listed(pilot, screen, 1)
        await wait_for(pilot, lambda: "now" in text_of(app, "#job-rate-range"))
        assert app.focused is screen.query_one("#job-runs", DataTable)
        assert run_id in border_title(app, "#job-detail")


async def test_what_a_job_does_fits_the_pane_at_any_width(tmp_path: Path) -> None:
    """Issue 26 #8: "what it does" was cut mid-word at 200 columns and hidden at 80. Where the
    jobs pane has room it is elided with '…'; where it has none the column is left out, and the
    detail pane shows the whole description while the jobs table has the focus."""
    for width, column in ((200, True), (80, False)):
        jobs = recorded_jobs(tmp_path / str(width))
        app = jobs_app(jobs)
        async with app.run_test(size=(width, 40)) as pilot:
            screen = await open_jobs(app, pilot)
            specs = screen.query_one("#job-specs", DataTable)
            runs = screen.query_one("#job-runs", DataTable)

            # Fitted after the first refresh at this size once the three recorded runs are
            # listed (later under load than one pause): before the first poll of the runs the
            # jobs table has the whole width and says all of what each job does.
            def fitted(s: JobsScreen = screen, t: DataTable = specs, r: DataTable = runs) -> bool:
                return r.row_count == 3 and s.fitted_width == t.size.width > 0

            await wait_for(pilot, fitted)
            assert ("what" in specs.columns) is column
            if column:
                cell = str(specs.get_cell("keyed-counts", "what"))
                assert cell.endswith("…") and len(cell) > 16
                whole = "how many records each key had in each event-time window, from a Kafka"
                assert whole.startswith(cell[:-1])
                widths = sum(c.get_render_width(specs) for c in specs.columns.values())
                assert widths <= specs.scrollable_content_region.width
                # Issue 35 #19: ~30 columns stood empty beside the runs while this was cut: the
                # runs table has all its columns, and the jobs table the width left.
                assert list(runs.columns) == [key for _, key in RUN_COLUMNS]
                used = sum(c.get_render_width(runs) for c in runs.columns.values())
                assert runs.scrollable_content_region.width - used <= 4
            specs.focus()
            await wait_for(pilot, lambda: "Job" in border_title(pilot.app, "#job-detail"))  # type: ignore[arg-type]
            assert "keyed-counts" in border_title(app, "#job-detail")
            assert "each event-time window, from a Kafka topic." in text_of(app, "#job-summary")


async def test_an_unknown_behind_is_shown_unknown_not_zero(tmp_path: Path) -> None:
    """A batch whose log ends could not be read has no offsets behind: the runs table shows `?`,
    the summary the reason, and the behind chart leaves that batch out and says so (it drew
    such a batch as 0)."""
    state_dir, run_id = tmp_path / "state", "keyed-counts-20270115-080000-0002"
    plant_run(state_dir, run_id, "keyed_counts_measured", job="keyed-counts",
              started_at=T0 - 60, topic="test-topic", group_id=None)  # fmt: skip
    progress = state_dir / "jobs" / "runs" / run_id / "progress.jsonl"
    lines = progress.read_text().splitlines()
    batches = [i for i, ln in enumerate(lines) if '"type": "progress"' in ln]
    assert len(batches) >= 2, batches
    last = json.loads(lines[batches[-1]])
    last["offsetsBehindLatest"] = None
    last["behindUnknown"] = "the log ends could not be read: timed out"
    lines[batches[-1]] = json.dumps(last)
    progress.write_text("".join(f"{ln}\n" for ln in lines))
    jobs = RecordedJobs(state_dir, set())
    run = jobs.runs()[-1]
    assert run.latest is not None and run.latest.offsets_behind is None
    assert str(run_cells(run, None)[6]) == "?"
    app = jobs_app(jobs)
    async with app.run_test(size=SIZE) as pilot:
        await open_jobs(app, pilot)
        await wait_for(pilot, lambda: "now" in text_of(app, "#job-behind-range"))
        said = text_of(app, "#job-behind-range")
        assert "(1 unknown, left out)" in said, said
        chart = app.screen.query_one("#job-behind", Sparkline).data
        assert chart is not None and len(chart) == len(batches) - 1
        summary = text_of(app, "#job-summary")
        assert "behind ? (the log ends could not be read: timed out)" in summary, summary


async def test_a_run_started_elsewhere_is_selected_when_it_appears(tmp_path: Path) -> None:
    """Issue 35 #19: a run started from the command line while the console was open was listed
    but not selected: the cursor stayed on an older run. It is selected when it appears, as a
    run started from the screen is."""
    state_dir = tmp_path / "state"
    jobs = recorded_jobs(state_dir)
    app = jobs_app(jobs)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_jobs(app, pilot)
        runs = await runs_listed(pilot, screen, 3)
        runs.focus()
        runs.move_cursor(row=2)  # an older run
        await pilot.pause()
        assert screen.selected_run is not None
        assert screen.selected_run.run_id == "sequence-checker-20270115-074000-5c1d"
        new = "keyed-counts-20270115-080500-77aa"
        plant_run(state_dir, new, "keyed_counts_backlog", job="keyed-counts",
                  started_at=T0 + 300, topic="test-topic", group_id=None)  # fmt: skip
        await wait_for(pilot, lambda: runs.row_count == 4, timeout=10)
        await wait_for(pilot, lambda: screen.selected_run is not None)
        assert screen.selected_run is not None and screen.selected_run.run_id == new
        await wait_for(pilot, lambda: new in border_title(app, "#job-detail"))


async def test_an_option_error_goes_once_the_value_is_right(tmp_path: Path) -> None:
    """Issue 35 #19: the trigger's error stayed under it after the value was corrected, until
    the next ctrl+s. An option said to be wrong is checked again as it changes."""
    app = jobs_app(recorded_jobs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await open_jobs(app, pilot)
        dialog = await open_start_dialog(pilot)
        trigger = dialog.query_one("#opt-trigger", Input)
        trigger.value = ""
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is dialog
        note = dialog.query_one("#err-trigger", Static)
        assert note.display and "trigger" in text_of(app, "#err-trigger")
        assert "fix trigger" in text_of(app, "#start-job-error")
        trigger.value = "x"  # still wrong: said as it is now
        await pilot.pause()
        assert note.display and "'x'" in text_of(app, "#err-trigger"), text_of(app, "#err-trigger")
        trigger.value = "5"
        await pilot.pause()
        assert not note.display
        assert text_of(app, "#start-job-error") == ""
        await pilot.press("escape")


def test_run_ids_are_shortened_only_as_far_as_the_room_needs(tmp_path: Path) -> None:
    """The runs table's layouts: the start time (in the run id) goes first, then the columns
    of least use; what a run is doing (state, rows/s done, offsets behind) stays."""
    runs = list(reversed(recorded_jobs(tmp_path).runs()))
    keyed = next(r for r in runs if r.job == "keyed-counts")
    assert short_run_id(keyed, "full") == "keyed-counts-20270115-075800-a41f"
    assert short_run_id(keyed, "job") == "keyed-counts …075800-a41f"
    assert short_run_id(keyed, "tail") == "…075800-a41f"
    assert short_run_id(dataclasses.replace(keyed, run_id="odd"), "tail") == "odd"
    full = layout_width(runs, None, RUN_LAYOUTS[0])
    assert fit_runs(runs, None, full) == RUN_LAYOUTS[0]
    assert "started" not in fit_runs(runs, None, full - 1)[0]
    assert fit_runs(runs, None, 10) == RUN_LAYOUTS[-1]
    assert RUN_LAYOUTS[-1][0] == ("run", "state", "done", "behind")


async def test_at_80x24_the_runs_table_shows_what_a_run_is_doing(tmp_path: Path) -> None:
    """Issue 35 #19: at 80x24 the runs table showed only run and state, and the jobs pane's
    border read `enter or n st…`."""
    app = jobs_app(recorded_jobs(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_jobs(app, pilot)
        runs = screen.query_one("#job-runs", DataTable)
        await wait_for(pilot, lambda: runs.row_count == 3 and "done" in runs.columns)
        assert list(runs.columns) == ["run", "state", "done", "behind"]
        used = sum(c.get_render_width(runs) for c in runs.columns.values())
        assert used <= runs.scrollable_content_region.width
        assert str(runs.get_cell("keyed-counts-20270115-075800-a41f", "run")) == "…075800-a41f"
        pane = screen.query_one("#job-specs-pane")
        assert pane.border_subtitle == "n starts one"
        assert pane.size.width >= len("n starts one") + 6
