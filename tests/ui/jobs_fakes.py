"""Job runs for the jobs-screen tests, from what real runs printed (tests/fixtures/jobs, written
by tests/fixtures/record_jobs.py): each recording becomes a run directory that a real
JobManager reads, exactly as it reads a live run's files."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from kconsole.config import Settings
from kconsole.jobs import JobRun, JobState
from kconsole.jobs.manager import JobManager

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests" / "fixtures" / "jobs"
T0 = 1_800_000_000.0  # the UI tests' fixed "now" (tests/ui/builders.py)


def plant_run(
    state_dir: Path,
    run_id: str,
    recording: str,
    *,
    job: str,
    started_at: float,
    topic: str,
    group_id: str | None,
    live: bool = False,
) -> None:
    """A run dir holding `recording`'s stdout and log; `live` drops its final state lines (as a
    run that is still going has not printed them yet)."""
    run_dir = state_dir / "jobs" / "runs" / run_id
    run_dir.mkdir(parents=True)
    lines = (RECORDED / f"{recording}.jsonl").read_text().splitlines()
    if live:
        lines = [ln for ln in lines if json.loads(ln).get("state") not in ("stopping", "stopped")]
    if group_id:
        lines = _with_commits(lines, group_id)
    (run_dir / "progress.jsonl").write_text("".join(f"{ln}\n" for ln in lines))
    (run_dir / "job.log").write_text((RECORDED / f"{recording}.log").read_text())
    meta = {
        "run_id": run_id,
        "job": job,
        "options": {},
        "argv": [],
        "detached": False,
        "started_at": started_at,
        "pid": None,
        "checkpoint": None,
        "output_dir": None,
        "topic": topic,
        "group_id": group_id,
    }
    (run_dir / "job.json").write_text(json.dumps(meta))


def _with_commits(lines: list[str], group_id: str) -> list[str]:
    """The recording with the "commit" line a job prints after each batch's commit (since
    issue 35; these recordings are older): the batch's end offsets, as its committer commits
    them, acknowledged a moment after the progress line."""
    out = []
    for ln in lines:
        out.append(ln)
        data = json.loads(ln)
        if data.get("type") == "progress" and data.get("endOffset"):
            commit = {
                "type": "commit",
                "job": data.get("job"),
                "ts": float(data.get("ts") or 0.0) + 0.05,
                "group": group_id,
                "offsets": data["endOffset"],
            }
            out.append(json.dumps(commit))
    return out


class RecordedJobs(JobManager):
    """A real JobManager over planted runs; the runs named in `live` are shown as running (their
    processes are not there, so the manager alone would call them failed)."""

    def __init__(self, state_dir: Path, live: set[str]) -> None:
        super().__init__(state_dir, Settings(), jobs_directory=ROOT / "jobs")
        self.live = live

    def runs(self) -> list[JobRun]:
        return [
            dataclasses.replace(
                r, state=JobState.RUNNING, error=None, exit_code=None, ended_at=None, pid=4242
            )
            if r.run_id in self.live
            else r
            for r in super().runs()
        ]


def recorded_jobs(state_dir: Path) -> RecordedJobs:
    """Three runs: keyed-counts going (with a backlog), a sequence checker that stopped after
    finding a gap and a duplicate, and one that failed on a missing topic."""
    plant_run(state_dir, "sequence-checker-20270115-074000-5c1d", "sequence_checker",
              job="sequence-checker", started_at=T0 - 1200, topic="drill-topic",
              group_id="kconsole-job-sequence-checker")  # fmt: skip
    plant_run(state_dir, "sequence-checker-20270115-075500-9e02", "missing_topic",
              job="sequence-checker", started_at=T0 - 300, topic="no-such-topic",
              group_id="kconsole-job-sequence-checker")  # fmt: skip
    plant_run(state_dir, "keyed-counts-20270115-075800-a41f", "keyed_counts_backlog",
              job="keyed-counts", started_at=T0 - 95, topic="test-topic",
              group_id="kconsole-job-keyed-counts", live=True)  # fmt: skip
    return RecordedJobs(state_dir, {"keyed-counts-20270115-075800-a41f"})
