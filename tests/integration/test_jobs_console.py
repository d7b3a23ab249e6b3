"""The jobs screen of the real console (Pilot) on the real cluster and real Spark (local[2]):
start keyed-counts from the screen, watch its progress rows arrive, see the consumer-groups
pane's lag of its group agree with the job's offsets behind, stop it from the screen."""

from __future__ import annotations

import time
from pathlib import Path

import psutil
import pytest
from textual.widgets import DataTable, Input

from kconsole.cluster.local.cluster import LocalCluster
from kconsole.commands import Commands
from kconsole.jobs import JobState
from kconsole.observer import ClusterObserver
from kconsole.ui.app import make_app
from kconsole.ui.screens.jobs import JobsScreen, StartJobDialog, run_lag
from tests.integration.jobs_support import (
    SMALL_SPARK,
    describe,
    job_manager,
    new_topic,
    produce,
    settings_for,
)
from tests.integration.test_console_live import until
from tests.ui.pilots import text_of

pytestmark = pytest.mark.integration


async def test_start_watch_and_stop_keyed_counts_from_the_jobs_screen(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    topic = new_topic(cluster, "console-kc", partitions=2)
    settings = settings_for(cluster)
    with job_manager(tmp_path / "state", settings) as manager:
        app = make_app(
            ClusterObserver(settings),
            commands=Commands(None, settings=settings, jobs=manager),
            settings=settings,
        )
        app.animation_level = "none"
        async with app.run_test(size=(160, 48)) as pilot:
            await until(lambda: app.snapshot is not None, 30, "a snapshot")
            await pilot.press("J")
            await until(lambda: isinstance(app.screen, JobsScreen), 5, "the jobs screen")
            screen = app.screen
            specs = screen.query_one("#job-specs", DataTable)
            specs.focus()
            specs.move_cursor(row=specs.get_row_index("keyed-counts"))
            await pilot.press("enter")
            await until(lambda: isinstance(app.screen, StartJobDialog), 5, "the start dialog")
            dialog = app.screen
            assert isinstance(dialog, StartJobDialog)
            options = {
                "topic": topic,
                "starting-offsets": "earliest",
                "output-topic": f"{topic}-counts",
                **{k: v for k, v in SMALL_SPARK.items() if k != "conf"},
                "conf": ",".join(SMALL_SPARK["conf"]),  # the box takes them comma-separated
            }
            for name, value in options.items():
                if dialog.spec.option(name) is not None:
                    dialog.query_one(f"#opt-{name}").value = value  # type: ignore[attr-defined]
            await pilot.press("ctrl+s")
            await until(lambda: isinstance(app.screen, JobsScreen), 5, "back on the jobs screen")
            await until(lambda: bool(app.job_runs), 30, "the run listed")

            def run():  # type: ignore[no-untyped-def]
                return app.job_runs[-1]

            assert run().topic == topic and not run().detached
            # The run just started is the one selected and shown (issue 26 #16).
            runs = screen.query_one("#job-runs", DataTable)
            await until(lambda: run().run_id in str(screen.query_one("#job-detail").border_title),
                        10, "the new run shown")  # fmt: skip
            assert runs.coordinate_to_cell_key(runs.cursor_coordinate).row_key.value == run().run_id
            await until(lambda: run().state is JobState.RUNNING or not run().active, 180,
                        "the job running")  # fmt: skip
            assert run().active, describe(run(), manager)
            # Records arrive; the job processes them and commits its group.
            now_ms = int(time.time() * 1000)
            produce(cluster, topic, [(f"k{i % 5}", f"v{i}", now_ms) for i in range(300)])
            await until(
                lambda: sum(p.input_rows for p in run().history) >= 300, 120, "300 rows processed"
            )
            cell = lambda col: str(runs.get_cell(run().run_id, col))  # noqa: E731
            assert cell("state") == "running" and cell("batch") != "-"
            assert f"topic {topic}" in text_of(app, "#job-summary")
            # Caught up: the run's lag (the groups pane's log end minus what this run committed)
            # equals the job's offsets behind.
            await until(
                lambda: run().offsets_behind == 0 and run_lag(run(), app.snapshot).value == 0,
                90,
                "the job and its consumer group both caught up",
            )
            assert cell("behind") == cell("lag") == "0"  # the job's == the groups pane's
            pid = run().pid
            runs.focus()
            await pilot.press("s")
            await until(lambda: run().state is JobState.STOPPED, 60, "the run stopped")
            # Its log, read from job.log after it ended, ends with the job's own last words.
            await until(lambda: "kconsole-job: stopped" in text_of(app, "#job-log"), 15,
                        "the stopped run's log")  # fmt: skip
            assert pid is not None
            assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"


async def test_a_driver_memory_the_jvm_refuses_is_the_reason_shown(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """Issue 26 #18: conf spark.driver.memory=1zz from the start dialog failed as "Java could not
    start (is Java installed? ...)"; the screen now shows the JVM's reason as the setting."""
    topic = new_topic(cluster, "console-mem", partitions=1)
    settings = settings_for(cluster)
    with job_manager(tmp_path / "state", settings) as manager:
        app = make_app(
            ClusterObserver(settings),
            commands=Commands(None, settings=settings, jobs=manager),
            settings=settings,
        )
        app.animation_level = "none"
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.press("J")
            await until(lambda: isinstance(app.screen, JobsScreen), 5, "the jobs screen")
            specs = app.screen.query_one("#job-specs", DataTable)
            specs.focus()
            specs.move_cursor(row=specs.get_row_index("keyed-counts"))
            await pilot.press("enter")
            await until(lambda: isinstance(app.screen, StartJobDialog), 5, "the start dialog")
            dialog = app.screen
            assert isinstance(dialog, StartJobDialog)
            dialog.query_one("#opt-topic", Input).value = topic
            dialog.query_one("#opt-master", Input).value = "local[1]"
            dialog.query_one("#opt-conf", Input).value = "spark.driver.memory=1zz"
            await pilot.press("ctrl+s")
            await until(lambda: bool(app.job_runs), 30, "the run listed")
            await until(lambda: not app.job_runs[-1].active, 120, "the run ended")
            run = app.job_runs[-1]
            assert run.state is JobState.FAILED, describe(run, manager)
            assert (run.error or "").startswith(
                "Spark could not start: spark.driver.memory=1zz is not a valid size"
            ), run.error
            await until(lambda: "spark.driver.memory=1zz" in text_of(app, "#job-notes"), 10,
                        "the reason on the screen")  # fmt: skip
