"""A run's state: what the manager knows about one run (its files, read incrementally), its
state file job.json (written atomically, under a lock shared by every kconsole process), and
the one place where its state, exit code and failure reason are decided together."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from kconsole.cluster.logs import tail_lines
from kconsole.cluster.procs import ManagedProcess
from kconsole.jobs.progress import (
    CheckpointNote,
    JobProgress,
    explain_failure,
    extract_error,
    parse_checkpoint_line,
    parse_commit_line,
    parse_line,
    parse_progress_line,
)

RECENT = 50  # output / finding lines kept per run
FIRST_READ_MAX = 16 * 2**20  # a longer progress file is read from its last 4 MiB only


class JobState(StrEnum):
    STARTING = "starting"  # process up, query not started yet (JVM, checks, session)
    RUNNING = "running"
    STOPPING = "stopping"  # asked to stop, still shutting down
    STOPPED = "stopped"  # stopped on request (or by the console exiting)
    FAILED = "failed"
    FINISHED = "finished"  # ended by itself (--available-now)

    @property
    def active(self) -> bool:
        return self in (JobState.STARTING, JobState.RUNNING, JobState.STOPPING)


@dataclass(frozen=True)
class JobRun:
    """A run of a job, as last observed."""

    run_id: str
    job: str
    options: dict[str, Any]  # as given to start()
    argv: tuple[str, ...]
    pid: int | None
    started_at: float
    state: JobState
    detached: bool
    run_dir: Path
    log_path: Path
    progress_path: Path
    output_dir: Path | None
    checkpoint: Path | None
    topic: str | None
    group_id: str | None  # the consumer group the job commits its offsets to
    latest: JobProgress | None = None
    history: tuple[JobProgress, ...] = ()
    error: str | None = None
    exit_code: int | None = None
    ended_at: float | None = None
    warnings: tuple[str, ...] = ()
    finding_counts: dict[str, int] = field(default_factory=dict)
    recent_output: tuple[dict[str, Any], ...] = ()  # the newest output / finding lines
    checkpoint_note: CheckpointNote | None = None  # what the job did with its checkpoint
    # The offsets this run last committed to its group (None: it committed nothing), and
    # when: its lag is measured from these, never from the group a later run shares.
    committed: dict[tuple[str, int], int] | None = None
    committed_at: float | None = None

    @property
    def active(self) -> bool:
        return self.state.active

    @property
    def offsets_behind(self) -> int | None:
        """The newest batch's offsets behind (log end after it - its end); None if unknown."""
        return self.latest.offsets_behind if self.latest else None


@dataclass(frozen=True)
class Outcome:
    """A run's state with what goes with it: an ended run has its exit code (when anyone can
    know it), its end time and, if it failed, the reason."""

    state: JobState
    exit_code: int | None = None
    error: str | None = None
    ended_at: float | None = None

    def as_meta(self) -> dict[str, Any]:
        return {
            "state": self.state.value,
            "exit_code": self.exit_code,
            "error": self.error,
            "ended_at": self.ended_at,
        }


# --------------------------------------------------------------------------------------------
# job.json
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _locked(run_dir: Path) -> Iterator[None]:
    """An exclusive lock on the run's state file, across threads and kconsole processes."""
    fd = os.open(run_dir / "job.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def read_meta(path: Path) -> dict[str, Any] | None:
    """A state file's content; None if it is missing or not a run's."""
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) and "run_id" in meta else None


def _write_atomically(path: Path, meta: Mapping[str, Any]) -> None:
    """Readers see the old file or the new one, never a part of either."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(json.dumps(meta, indent=2, default=str))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def recorded_outcome(meta: Mapping[str, Any]) -> Outcome | None:
    """The end of a run as its manager recorded it (state, exit code, reason and end time,
    written together), or None if none was recorded."""
    try:
        state = JobState(str(meta.get("state")))
    except ValueError:
        return None
    if state.active:
        return None
    code, ended = meta.get("exit_code"), meta.get("ended_at")
    return Outcome(
        state,
        code if isinstance(code, int) else None,
        str(meta["error"]) if meta.get("error") else None,
        float(ended) if isinstance(ended, int | float) else None,
    )


# --------------------------------------------------------------------------------------------
# One run
# --------------------------------------------------------------------------------------------


class RunRecord:
    """What the manager knows about one run; refreshed incrementally."""

    def __init__(self, run_dir: Path, meta: dict[str, Any], history: int):
        self.run_dir = run_dir
        self.meta = meta
        self.meta_mtime = 0.0
        self.proc = ManagedProcess(meta["run_id"], run_dir / "pid", self.log_path)
        self.offset = 0
        self.partial = b""
        self.history: deque[JobProgress] = deque(maxlen=history)
        self.recent: deque[dict[str, Any]] = deque(maxlen=RECENT)
        self.counts: dict[str, int] = {}
        self.warnings: list[str] = []
        self.last_state: dict[str, Any] | None = None
        self.checkpoint_note: CheckpointNote | None = None
        self.committed: dict[tuple[str, int], int] | None = None
        self.committed_at: float | None = None
        self.seen_running = False
        self.final: JobRun | None = None
        self.ours = False  # started by this manager (so it can reap it and knows its exit code)
        self.seen_ended_at: float | None = None  # when this reader first saw it gone

    @classmethod
    def load(cls, run_dir: Path, history: int) -> RunRecord | None:
        """A run found in the state dir (started by anyone)."""
        meta = read_meta(run_dir / "job.json")
        if meta is None:
            return None
        rec = cls(run_dir, meta, history)
        with contextlib.suppress(OSError):
            rec.meta_mtime = rec.meta_path.stat().st_mtime
        try:
            size = rec.progress_path.stat().st_size
        except OSError:
            size = 0
        if size > FIRST_READ_MAX:  # an old long run: its tail is what matters
            rec.offset = size - 4 * 2**20
            rec.partial = b"\0"  # drop the first, partial line
        return rec

    @property
    def meta_path(self) -> Path:
        return self.run_dir / "job.json"

    @property
    def progress_path(self) -> Path:
        return self.run_dir / "progress.jsonl"

    @property
    def log_path(self) -> Path:
        return self.run_dir / "job.log"

    # -- job.json ---------------------------------------------------------------------------
    def update_meta(self, changes: Mapping[str, Any]) -> None:
        """Merge `changes` into job.json, over what any other kconsole wrote meanwhile."""
        with _locked(self.run_dir):
            merged = {**self.meta, **(read_meta(self.meta_path) or {}), **changes}
            _write_atomically(self.meta_path, merged)
            self.meta = merged
            self.meta_mtime = self.meta_path.stat().st_mtime

    def reload_meta(self) -> None:
        """Pick up what another kconsole (the CLI) wrote, e.g. a stop request."""
        try:
            mtime = self.meta_path.stat().st_mtime
        except OSError:
            return
        if mtime != self.meta_mtime:
            meta = read_meta(self.meta_path)
            if meta is not None:
                self.meta = {**self.meta, **meta}
                self.meta_mtime = mtime

    # -- progress.jsonl ---------------------------------------------------------------------
    def read_new(self) -> None:
        """Apply the lines the job printed since the last call."""
        try:
            with open(self.progress_path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except OSError:
            return
        if not data:
            return
        self.offset += len(data)
        data = self.partial + data
        lines = data.split(b"\n")
        self.partial = lines.pop()
        if lines and lines[0].startswith(b"\0"):
            lines.pop(0)
        for line in lines:
            self._apply(line)

    def _apply(self, line: bytes) -> None:
        data = parse_line(line)
        if data is None:
            return
        kind = data["type"]
        if kind == "progress":
            p = parse_progress_line(line)
            if p is not None:
                self.history.append(p)
        elif kind == "state":
            self.last_state = data
            if data.get("state") == "running":
                self.seen_running = True
        elif kind == "checkpoint":
            self.checkpoint_note = parse_checkpoint_line(data) or self.checkpoint_note
        elif kind == "commit":
            committed = parse_commit_line(data)
            if committed is not None:
                self.committed = committed
                ts = data.get("ts")
                self.committed_at = float(ts) if isinstance(ts, int | float) else None
        elif kind in ("output", "finding"):
            self.recent.append(data)
        elif kind == "findings":
            for k, n in (data.get("counts") or {}).items():
                self.counts[k] = self.counts.get(k, 0) + int(n)
        elif kind == "warning":
            msg = str(data.get("message", ""))
            if msg and msg not in self.warnings:
                self.warnings.append(msg)

    # -- the decision -----------------------------------------------------------------------
    def decide(self, *, alive: bool, exit_code: int | None) -> Outcome:
        """The run's state, exit code, reason and end time, decided together from one
        observation of its process (`alive`, and `exit_code` if this reader reaped it), what
        the job printed last, and job.json. An end recorded in job.json is final."""
        recorded = recorded_outcome(self.meta)
        if recorded is not None:
            return recorded
        meta = self.meta
        last = self.last_state or {}
        last_state = last.get("state")
        if alive:
            if meta.get("stop_requested_at") or last_state in ("stopping", "stopped", "failed"):
                return Outcome(JobState.STOPPING)
            return Outcome(JobState.RUNNING if self.seen_running else JobState.STARTING)
        if exit_code is None and isinstance(meta.get("exit_code"), int):
            exit_code = meta["exit_code"]  # a state file without the state (older kconsole)
        if exit_code is None and isinstance(last.get("exitCode"), int):
            exit_code = last["exitCode"]
        error = None
        if last_state == "failed":
            state = JobState.FAILED
            error = explain_failure(str(last.get("reason") or ""), tail_lines(self.log_path, 300))
        elif last_state == "finished":
            state = JobState.FINISHED
        elif last_state == "stopped" or meta.get("stop_requested_at"):
            state = JobState.STOPPED
        else:
            state = JobState.FAILED
            found = extract_error(tail_lines(self.log_path, 300))
            code = "unknown" if exit_code is None else str(exit_code)
            error = found or f"the job exited (code {code}) without reporting why"
        ended_at = meta.get("ended_at")
        if ended_at is None:
            if self.seen_ended_at is None:
                self.seen_ended_at = float(last.get("ts") or time.time())
            ended_at = self.seen_ended_at
        return Outcome(state, exit_code, error, ended_at)

    def snapshot(self, outcome: Outcome) -> JobRun:
        meta = self.meta
        return JobRun(
            run_id=meta["run_id"],
            job=meta.get("job", ""),
            options=dict(meta.get("options") or {}),
            argv=tuple(meta.get("argv") or ()),
            pid=meta.get("pid"),
            started_at=float(meta.get("started_at") or 0.0),
            state=outcome.state,
            detached=bool(meta.get("detached")),
            run_dir=self.run_dir,
            log_path=self.log_path,
            progress_path=self.progress_path,
            output_dir=Path(meta["output_dir"]) if meta.get("output_dir") else None,
            checkpoint=Path(meta["checkpoint"]) if meta.get("checkpoint") else None,
            topic=meta.get("topic"),
            group_id=meta.get("group_id"),
            latest=self.history[-1] if self.history else None,
            history=tuple(self.history),
            error=outcome.error,
            exit_code=outcome.exit_code,
            ended_at=outcome.ended_at,
            warnings=tuple(self.warnings),
            finding_counts=dict(self.counts),
            recent_output=tuple(self.recent),
            checkpoint_note=self.checkpoint_note,
            committed=dict(self.committed) if self.committed is not None else None,
            committed_at=self.committed_at,
        )


__all__ = ["JobRun", "JobState", "Outcome", "RunRecord", "read_meta", "recorded_outcome"]
