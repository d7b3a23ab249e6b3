"""The console's job actions and job polling: start and stop PySpark runs through the command
layer on a thread, and read every run's state (and, while the jobs screen shows them, log
tails) once a second."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from textual import work
from textual.app import App

from kconsole.commands import Commands
from kconsole.commands.views import JobsView
from kconsole.config import Settings
from kconsole.errors import ClusterError
from kconsole.jobs.runs import JobRun
from kconsole.jobs.specs import JobError, JobSpec, available_jobs
from kconsole.ui.messages import JobActionDone, JobsUpdated, LogNote

JOB_ACTIONS_GROUP = "job-actions"
JOB_LOG_LINES = 14
JOB_LOG_READS = 20  # ended runs' logs read per poll (each once): a long history comes in steps


class JobActions(App[None]):
    """The jobs half of KConsoleApp."""

    if TYPE_CHECKING:
        commands: Commands | None
        jobs_read: bool
        jobs_view: JobsView | None
        job_runs: tuple[JobRun, ...]
        job_logs: dict[str, tuple[str, ...]]
        show_job_logs: bool
        _jobs_polling: threading.Lock
        settings: Settings | None
        _job_specs: list[JobSpec] | None

    @property
    def jobs_available(self) -> bool:
        """Whether job runs can be started and stopped here."""
        return self.jobs_view is not None and self.commands is not None

    def job_specs(self) -> list[JobSpec]:
        """The jobs in jobs/ (read once)."""
        if self._job_specs is None:
            try:
                self._job_specs = available_jobs(
                    self.jobs_view.jobs_directory if self.jobs_view else None
                )
            except JobError as exc:
                self.notify(exc.message, severity="error", markup=False)
                self._job_specs = []
        return self._job_specs

    def job_option_defaults(self, spec: JobSpec) -> dict[str, object]:
        """What the start dialog shows: the job's defaults, with this console's cluster."""
        defaults: dict[str, object] = {o.name: o.default for o in spec.options}
        if self.settings is not None and spec.option("bootstrap") is not None:
            defaults["bootstrap"] = self.settings.bootstrap
        # Left empty, the manager picks these: a checkpoint kept per job and topic (so a
        # restarted job resumes) and an output dir inside the run's own dir.
        for managed in ("checkpoint", "output-dir"):
            if spec.option(managed) is not None:
                defaults[managed] = ""
        return defaults

    def poll_jobs(self) -> None:
        """Read every run's state and progress on a thread, unless the last read is still
        going (a slow one, e.g. while a Maven fetch holds the jobs' lock, must not pile up
        threads: a thread worker cannot be cancelled, only forgotten)."""
        if self.jobs_view is None or not self._jobs_polling.acquire(blocking=False):
            return
        self._read_jobs()

    @work(thread=True, group="jobs-poll", exit_on_error=False)
    def _read_jobs(self) -> None:
        try:
            jobs = self.jobs_view
            if jobs is None:
                return
            try:
                runs = tuple(jobs.runs())
            except Exception as exc:
                self.post_message(JobsUpdated((), {}, f"cannot read the jobs: {exc}"))
                return
            logs = self._read_job_logs(jobs, runs) if self.show_job_logs else {}
            self.post_message(JobsUpdated(runs, logs))
        finally:
            self._jobs_polling.release()

    def _read_job_logs(
        self, jobs: JobsView, runs: tuple[JobRun, ...]
    ) -> dict[str, tuple[str, ...]]:
        """The log tail of every run the jobs screen lists: an active run's each time, an
        ended run's once after it ended (its file does not change any more; a tail read while
        it ran would miss its last lines), at most JOB_LOG_READS of those per poll."""
        # job_runs before job_logs: on_jobs_updated sets them in the other order, so a run seen
        # ended here had its tail read after it ended, and that tail is in the logs read next.
        ended_before = {r.run_id for r in self.job_runs if not r.active}
        known = self.job_logs
        logs: dict[str, tuple[str, ...]] = {}
        reads = 0
        for run in reversed(runs):  # newest first
            if not run.active and run.run_id in ended_before and run.run_id in known:
                logs[run.run_id] = known[run.run_id]
                continue
            if not run.active:
                if reads >= JOB_LOG_READS:
                    continue
                reads += 1
            try:
                lines = tuple(jobs.log_tail(run.run_id, JOB_LOG_LINES))
                if not lines and not run.log_path.exists():
                    lines = (LogNote(f"{run.log_path.name} is gone: {run.log_path}"),)
            except Exception as exc:  # one unreadable log must not hide the others
                lines = (LogNote(f"cannot read {run.log_path}: {exc}"),)
            logs[run.run_id] = lines
        return logs

    def on_jobs_updated(self, message: JobsUpdated) -> None:
        if message.error:
            self.log.warning(message.error)
            return
        self.job_logs = message.logs
        self.jobs_read = True
        self.job_runs = message.runs

    def request_job_start(self, job: str, options: dict[str, object], detached: bool) -> None:
        """Start a run of `job` (through the command layer, on a thread)."""
        self.notify(f"starting {job}…", timeout=3)
        self._job_action("start", job, options, detached)

    def request_job_stop(self, run_id: str) -> None:
        """Stop a run: graceful first, forced after the timeout (on a thread)."""
        self.notify(f"stopping run {run_id}…", timeout=3)
        self._job_action("stop", run_id, {}, False)

    @work(thread=True, exit_on_error=False, group=JOB_ACTIONS_GROUP)
    def _job_action(self, what: str, name: str, options: dict[str, object], detached: bool) -> None:
        commands = self.commands
        if commands is None:
            return
        try:
            if what == "start":
                run = commands.start_job(name, options, detached)
                text = f"{run.job} started: run {run.run_id} (pid {run.pid})" + (
                    ", detached" if run.detached else ""
                )
            else:
                run = commands.stop_job(name)
                text = f"run {run.run_id} {run.state.value}" + (
                    f" (exit code {run.exit_code})" if run.exit_code is not None else ""
                )
        except ClusterError as exc:
            self.post_message(JobActionDone(False, f"{what} {name}: {exc.message}"))
        except Exception as exc:  # a bug must not take the console down
            self.post_message(JobActionDone(False, f"{what} {name}: {type(exc).__name__}: {exc}"))
        else:
            self.post_message(JobActionDone(True, text))

    def on_job_action_done(self, message: JobActionDone) -> None:
        if message.ok:
            self.notify(message.text, markup=False)
        else:
            self.notify(message.text, severity="error", timeout=10, markup=False)
        self.poll_jobs()
