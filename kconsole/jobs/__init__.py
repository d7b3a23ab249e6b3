"""PySpark Structured Streaming jobs (jobs/*.py) as background processes: start, observe, stop.

A run is a `python jobs/<job>.py ...` process in its own session, never a thread of the
console. Everything about it lives in `<state_dir>/jobs/runs/<run_id>/`:

    job.json        what was started (job, options, argv, detached), its pid and process start
                    time, and later the stop request and the end: state, exit code, failure
                    reason and end time, written together (atomically, under job.lock)
    pid             the pid file used for every signal (pid + start time: a recycled pid is
                    never signalled)
    progress.jsonl  the job's stdout: one JSON object per line (state, progress, output,
                    finding, findings, warning), read incrementally
    job.log         the job's stderr: Spark's and Kafka's log
    client.json     the client properties with their secrets (mode 0600), while the job starts:
                    it reads and removes the file, and the manager removes it at the run's end
    output/         the job's readable sink, one JSON-lines file per micro-batch

Checkpoints outlive runs, in `<state_dir>/jobs/checkpoints/<job>--<topic>/`: starting the same
job on the same topic again resumes where the last run stopped, if the job finds the checkpoint
is this cluster's and this topic incarnation's (its record beside it, `<checkpoint>.kconsole.json`);
what it did is the run's `checkpoint_note`.

The job's options are the job script's own argparse options: `available_jobs()` reads them from
each script's `build_parser()`, and `start()` validates with that same parser before anything
is started, so the console, the CLI and `python jobs/<job>.py --help` always agree.

Modules: specs (what jobs there are, their options), progress (parsing what a job prints and
logs), runs (a run's state, its job.json, and the decision of its state), manager (the
JobManager), client (Kafka client properties for the jobs), output (reading a job's sink).

This package gathers the data-only ones. The JobManager, which starts and signals processes,
is not re-exported: only the command layer holds one (Commands.jobs); screens and CLI commands
read runs through kconsole.commands.views.JobsView.
"""

from __future__ import annotations

from kconsole.jobs.client import job_client
from kconsole.jobs.output import latest_counts, read_output_dir
from kconsole.jobs.progress import (
    CheckpointNote,
    JobProgress,
    extract_error,
    parse_checkpoint_line,
    parse_line,
    parse_progress_line,
)
from kconsole.jobs.runs import JobRun, JobState
from kconsole.jobs.specs import JobError, JobOption, JobSpec, available_jobs, get_job, jobs_dir

__all__ = [
    "CheckpointNote",
    "JobError",
    "JobOption",
    "JobProgress",
    "JobRun",
    "JobSpec",
    "JobState",
    "available_jobs",
    "extract_error",
    "get_job",
    "job_client",
    "jobs_dir",
    "latest_counts",
    "parse_checkpoint_line",
    "parse_line",
    "parse_progress_line",
    "read_output_dir",
]
