"""PySpark Structured Streaming jobs (jobs/*.py) as background processes: start, observe, stop.

A run is a `python jobs/<job>.py ...` process in its own session, never a thread of the
console. Everything about it lives in `<state_dir>/jobs/runs/<run_id>/`:

    job.json        what was started (job, options, argv, detached), its pid and process start
                    time, and later the stop request, exit code and end time
    pid             the pid file used for every signal (pid + start time: a recycled pid is
                    never signalled)
    progress.jsonl  the job's stdout: one JSON object per line (state, progress, output,
                    finding, findings, warning), read incrementally
    job.log         the job's stderr: Spark's and Kafka's log
    output/         the job's readable sink, one JSON-lines file per micro-batch

Checkpoints outlive runs, in `<state_dir>/jobs/checkpoints/<job>--<topic>/`: starting the same
job on the same topic again resumes where the last run stopped.

The job's options are the job script's own argparse options: `available_jobs()` reads them from
each script's `build_parser()`, and `start()` validates with that same parser before anything
is started, so the console, the CLI and `python jobs/<job>.py --help` always agree.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import re
import secrets
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import psutil

from kconsole import paths
from kconsole.cluster import jars
from kconsole.cluster.errors import ClusterError
from kconsole.cluster.procs import ManagedProcess, tail_lines
from kconsole.config import Settings

HISTORY = 120  # progress entries kept per run: two minutes at a 1 s trigger
_RECENT = 50  # output / finding lines kept per run
_FIRST_READ_MAX = 16 * 2**20  # a longer progress file is read from its last 4 MiB only
_INTERNAL = {"stop-with-parent", "jars", "help"}


class JobError(ClusterError):
    """A job could not be started or found; the message says why."""


# --------------------------------------------------------------------------------------------
# What jobs there are
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobOption:
    """One command-line option of a job (`name` is the long flag without dashes)."""

    name: str
    default: Any
    help: str
    kind: str = "str"  # str | int | float | choice | flag | list (repeatable KEY=VALUE)
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class JobSpec:
    """A job script in jobs/ with its options."""

    name: str  # "keyed-counts"
    script: Path
    description: str  # one line
    doc: str  # the module docstring
    options: tuple[JobOption, ...]
    make_parser: Callable[[], argparse.ArgumentParser] = field(compare=False, repr=False)

    def option(self, name: str) -> JobOption | None:
        norm = name.replace("_", "-").lstrip("-")
        return next((o for o in self.options if o.name == norm), None)

    @property
    def spark(self) -> bool:
        """A Spark job (takes --jars): needs Java and the Kafka connector jars."""
        return any(a.dest == "jars" for a in self.make_parser()._actions)


def jobs_dir() -> Path:
    """jobs/ beside the kconsole package (KCONSOLE_JOBS_DIR moves it)."""
    override = os.environ.get("KCONSOLE_JOBS_DIR")
    return Path(override) if override else Path(__file__).resolve().parents[1] / "jobs"


_SPECS: dict[tuple[Path, float], JobSpec] = {}
_SPECS_LOCK = threading.Lock()


def available_jobs(directory: Path | None = None) -> list[JobSpec]:
    """Every job in jobs/: each script that defines NAME and build_parser()."""
    d = directory or jobs_dir()
    out = []
    for script in sorted(d.glob("*.py")):
        if script.name.startswith("_"):
            continue
        spec = _load_spec(script)
        if spec is not None:
            out.append(spec)
    return out


def get_job(name: str, directory: Path | None = None) -> JobSpec:
    """The job called `name` (keyed-counts and keyed_counts both work)."""
    norm = name.replace("_", "-")
    jobs = available_jobs(directory)
    for spec in jobs:
        if spec.name == norm:
            return spec
    known = ", ".join(s.name for s in jobs) or f"none in {directory or jobs_dir()}"
    raise JobError(f"no job called {name!r} (jobs: {known})")


def _load_spec(script: Path) -> JobSpec | None:
    key = (script, script.stat().st_mtime)
    with _SPECS_LOCK:
        if key in _SPECS:
            return _SPECS[key]
        mod_name = f"kconsole_job_{script.stem}"
        loader = importlib.util.spec_from_file_location(mod_name, script)
        if loader is None or loader.loader is None:
            return None
        module = importlib.util.module_from_spec(loader)
        saved = list(sys.path)  # a job script puts its own dir first, for `import _kconsole_jobs`
        try:
            loader.loader.exec_module(module)  # jobs import only the stdlib at module level
        except Exception as exc:
            raise JobError(f"cannot load job script {script}: {exc}") from exc
        finally:
            sys.path[:] = saved
        make_parser = getattr(module, "build_parser", None)
        name = getattr(module, "NAME", None)
        if make_parser is None or name is None:
            return None
        doc = (module.__doc__ or "").strip()
        spec = JobSpec(
            name=str(name).replace("_", "-"),
            script=script,
            description=" ".join(doc.split("\n\n")[0].split()),
            doc=doc,
            options=tuple(_options(make_parser())),
            make_parser=make_parser,
        )
        _SPECS[key] = spec
        return spec


def _options(parser: argparse.ArgumentParser) -> Iterable[JobOption]:
    for a in parser._actions:
        longs = [s for s in a.option_strings if s.startswith("--")]
        if not longs or a.help == argparse.SUPPRESS or a.dest == "help":
            continue
        name = longs[0][2:]
        if name in _INTERNAL:
            continue
        if isinstance(a, argparse._StoreTrueAction):
            kind = "flag"
        elif isinstance(a, argparse._AppendAction):
            kind = "list"
        elif a.choices:
            kind = "choice"
        elif a.type is int:
            kind = "int"
        elif a.type is float or getattr(a.type, "__name__", "") == "positive_or_zero":
            kind = "float"
        else:
            kind = "str"
        default = [] if kind == "list" else a.default
        yield JobOption(name, default, a.help or "", kind, tuple(str(c) for c in a.choices or ()))


# --------------------------------------------------------------------------------------------
# What a job reports
# --------------------------------------------------------------------------------------------


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
class JobProgress:
    """One StreamingQueryProgress as the job reported it."""

    ts: float  # when the job emitted it (epoch seconds)
    batch_id: int
    input_rows: int
    input_rows_per_second: float | None
    processed_rows_per_second: float | None
    batch_duration_ms: int | None
    offsets_behind: int | None  # sum over partitions of latest available - batch end
    end_offsets: dict[tuple[str, int], int]
    latest_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    duration_ms: dict[str, int] = field(default_factory=dict)
    timestamp: str = ""  # Spark's trigger time, ISO 8601
    watermark: str | None = None
    state_rows: int | None = None


def parse_line(line: str | bytes) -> dict[str, Any] | None:
    """One JSON object from a job's stdout, or None for anything else."""
    if isinstance(line, bytes):
        line = line.decode("utf-8", "replace")
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        data = json.loads(line)
    except ValueError:
        return None
    return data if isinstance(data, dict) and isinstance(data.get("type"), str) else None


def parse_progress_line(line: str | bytes) -> JobProgress | None:
    """A progress line as JobProgress; None for other lines and garbage."""
    data = parse_line(line)
    if data is None or data["type"] != "progress":
        return None
    try:
        return JobProgress(
            ts=float(data.get("ts") or 0.0),
            batch_id=int(data["batchId"]),
            input_rows=int(data.get("numInputRows") or 0),
            input_rows_per_second=_float(data.get("inputRowsPerSecond")),
            processed_rows_per_second=_float(data.get("processedRowsPerSecond")),
            batch_duration_ms=_int(data.get("batchDuration")),
            offsets_behind=_int(data.get("offsetsBehindLatest")),
            end_offsets=_flat_offsets(data.get("endOffset")),
            latest_offsets=_flat_offsets(data.get("latestOffset")),
            duration_ms={
                str(k): int(v)
                for k, v in (data.get("durationMs") or {}).items()
                if isinstance(v, int | float)
            },
            timestamp=str(data.get("timestamp") or ""),
            watermark=data.get("watermark"),
            state_rows=_int(data.get("stateRows")),
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _flat_offsets(raw: Any) -> dict[tuple[str, int], int]:
    if not isinstance(raw, dict):
        return {}
    out = {}
    for topic, parts in raw.items():
        if isinstance(parts, dict):
            for p, off in parts.items():
                out[(str(topic), int(p))] = int(off)
    return out


def _float(v: Any) -> float | None:
    try:
        return None if v is None else float(v)
    except (TypeError, ValueError):
        return None


def _int(v: Any) -> int | None:
    try:
        return None if v is None else int(v)
    except (TypeError, ValueError):
        return None


_PY_ERROR = re.compile(r"^(?:[\w.]+\.)?\w*(?:Error|Exception): \S")
_LOG_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"JAVA_HOME is not set|java: (command )?not found|bin/java: No such file"),
        "Java is missing: install Java 17 or set JAVA_HOME",
    ),
    (re.compile(r"Java is not installed"), "Java is missing: install Java 17 or set JAVA_HOME"),
    (
        re.compile(r"JAVA_GATEWAY_EXITED|Java gateway process exited"),
        "Java could not start (see the log)",
    ),
    (
        re.compile(r"Failed to find (the )?data source: kafka"),
        "the Kafka connector jars are missing (kconsole jobs fetch)",
    ),
]


def extract_error(lines: Iterable[str]) -> str | None:
    """The reason a job failed, from its log: a known cause first, then the job's own
    'failed' line, then the last Python error, then the first Java exception or ERROR line."""
    lines = [ln.rstrip() for ln in lines if ln.strip()]
    for pattern, what in _LOG_PATTERNS:
        hit = next((ln for ln in lines if pattern.search(ln)), None)
        if hit is not None:
            return f"{what}: {hit.strip()[:300]}"
    own = [ln for ln in lines if "kconsole-job: failed" in ln]
    if own:
        return own[-1].split("kconsole-job: failed", 1)[1].strip()[:600] or None
    py = [ln.strip() for ln in lines if _PY_ERROR.match(ln.strip())]
    if py:
        return py[-1][:600]
    for ln in lines:
        s = ln.strip()
        if s.startswith("at ") or s.startswith("..."):
            continue
        if " ERROR " in s or "Exception" in s or s.startswith("Error"):
            return s[:600]
    return None


# --------------------------------------------------------------------------------------------
# Runs
# --------------------------------------------------------------------------------------------


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

    @property
    def active(self) -> bool:
        return self.state.active

    @property
    def offsets_behind(self) -> int | None:
        return self.latest.offsets_behind if self.latest else None


class _Record:
    """What the manager knows about one run; refreshed incrementally."""

    def __init__(self, run_dir: Path, meta: dict[str, Any], history: int):
        self.run_dir = run_dir
        self.meta = meta
        self.meta_mtime = 0.0
        self.proc = ManagedProcess(meta["run_id"], run_dir / "pid", run_dir / "job.log")
        self.offset = 0
        self.partial = b""
        self.history: deque[JobProgress] = deque(maxlen=history)
        self.recent: deque[dict[str, Any]] = deque(maxlen=_RECENT)
        self.counts: dict[str, int] = {}
        self.warnings: list[str] = []
        self.last_state: dict[str, Any] | None = None
        self.seen_running = False
        self.final: JobRun | None = None
        self.ours = False  # started by this manager (so it can reap it and knows its exit code)

    @property
    def progress_path(self) -> Path:
        return self.run_dir / "progress.jsonl"


class JobManager:
    """Starts job processes and observes them through their files; safe to poll from a thread."""

    def __init__(
        self,
        state_dir: Path | None = None,
        settings: Settings | None = None,
        *,
        jobs_directory: Path | None = None,
        python: str | None = None,
        history: int = HISTORY,
    ):
        self.state_dir = (state_dir or paths.state_dir()) / "jobs"
        self.settings = settings or Settings()
        self.jobs_directory = jobs_directory
        self.python = python or sys.executable
        self.history = history
        self._lock = threading.RLock()
        self._records: dict[str, _Record] = {}

    @property
    def runs_dir(self) -> Path:
        return self.state_dir / "runs"

    def checkpoint_dir(self, job: str, topic: str) -> Path:
        """The default checkpoint of a job on a topic (kept across runs)."""
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", topic)
        return self.state_dir / "checkpoints" / f"{job}--{safe}"

    # -- start ------------------------------------------------------------------------------
    def start(
        self, job_name: str, options: Mapping[str, Any] | None = None, *, detached: bool = False
    ) -> JobRun:
        """Start a run. Options are the job's long flags without dashes (see available_jobs);
        bootstrap and client properties come from the settings unless given. An attached run
        (detached=False) is stopped by stop_attached(), and by itself if this process dies."""
        spec = get_job(job_name, self.jobs_directory)
        given = dict(options or {})
        if not spec.script.exists():
            raise JobError(f"job script {spec.script} is missing")
        flags = self._flags(spec, given)
        ns = self._validate(spec, flags)
        run_id = f"{spec.name}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
        run_dir = self.runs_dir / run_id
        extra: list[str] = []
        checkpoint: Path | None = None
        if spec.option("checkpoint"):
            if given.get("checkpoint"):
                checkpoint = Path(str(given["checkpoint"])).resolve()
            else:  # kept across runs: the same job on the same topic resumes
                checkpoint = self.checkpoint_dir(spec.name, str(getattr(ns, "topic", "") or "-"))
                extra += ["--checkpoint", str(checkpoint)]
        output_dir = run_dir / "output" if spec.option("output-dir") else None
        if output_dir is not None and not given.get("output-dir"):
            extra += ["--output-dir", str(output_dir)]
        elif given.get("output-dir"):
            output_dir = Path(str(given["output-dir"]))
        with self._lock:
            if checkpoint is not None:
                for other in self.runs():
                    if other.active and other.checkpoint == checkpoint:
                        raise JobError(
                            f"{other.run_id} is running with checkpoint {checkpoint}; stop it "
                            "first or give this run another checkpoint"
                        )
            if spec.spark:
                jars.java_executable()  # ToolMissing with the install hint
                extra += ["--jars", ",".join(str(p) for p in jars.ensure_spark_kafka_jars())]
            if not detached:
                extra += ["--stop-with-parent", str(os.getpid())]
            argv = [self.python, "-u", str(spec.script), *flags, *extra]
            run_dir.mkdir(parents=True)
            meta: dict[str, Any] = {
                "run_id": run_id,
                "job": spec.name,
                "script": str(spec.script),
                "options": _redacted(given),
                "argv": _redacted_argv(argv),
                "detached": detached,
                "started_at": time.time(),
                "manager_pid": os.getpid(),
                "checkpoint": str(checkpoint) if checkpoint else None,
                "output_dir": str(output_dir) if output_dir else None,
                "topic": getattr(ns, "topic", None),
                "group_id": getattr(ns, "group_id", None) or None,
            }
            rec = _Record(run_dir, meta, self.history)
            rec.ours = True
            pid = rec.proc.spawn(
                argv, cwd=run_dir, env=self._env(spec), stdout_file=rec.progress_path
            )
            pid_rec = rec.proc.record()
            meta.update(pid=pid, create_time=pid_rec.create_time if pid_rec else None)
            self._write_meta(rec)
            self._records[run_id] = rec
            return self._refresh(rec)

    def _flags(self, spec: JobSpec, given: Mapping[str, Any]) -> list[str]:
        flags: list[str] = []
        known = {o.name: o for o in spec.options}
        for raw, value in given.items():
            name = raw.replace("_", "-").lstrip("-")
            opt = known.get(name)
            if opt is None or name in _INTERNAL:
                raise JobError(
                    f"{spec.name} has no option {raw!r} (options: {', '.join(sorted(known))})"
                )
            if opt.kind == "flag":
                if _truthy(value):
                    flags.append(f"--{name}")
            elif opt.kind == "list":
                items = [value] if isinstance(value, str) else list(value)
                for item in items:
                    flags += [f"--{name}", str(item)]
            elif value is not None:
                flags += [f"--{name}", str(value)]
        if spec.option("bootstrap") and "bootstrap" not in {k.replace("_", "-") for k in given}:
            flags += ["--bootstrap", self.settings.bootstrap]
        return flags

    def _validate(self, spec: JobSpec, flags: list[str]) -> argparse.Namespace:
        parser = spec.make_parser()

        def error(message: str) -> None:
            raise JobError(f"bad option for {spec.name}: {message}")

        parser.error = error  # type: ignore[method-assign,assignment]
        ns = parser.parse_args(flags)
        offsets = getattr(ns, "starting_offsets", None)
        if offsets not in (None, "earliest", "latest"):
            try:
                json.loads(offsets)
            except ValueError as exc:
                raise JobError(
                    f"bad option for {spec.name}: starting-offsets must be earliest, latest or "
                    f"JSON, not {offsets!r}"
                ) from exc
        master = getattr(ns, "master", None)
        if master and not re.match(
            r"^(local(\[(\*|\d+)(,\d+)?\])?|spark://.+|yarn|k8s://.+)$", master
        ):
            raise JobError(f"bad option for {spec.name}: master {master!r} is not a Spark master")
        return ns

    def _env(self, spec: JobSpec) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        env.setdefault("PYSPARK_PYTHON", self.python)
        kafka, untranslated = java_kafka_options(self.settings.client)
        # Client properties (maybe secrets) travel in the environment, not on the command line.
        env["KCONSOLE_JOB_CLIENT"] = json.dumps(
            {"admin": dict(self.settings.client), "kafka": kafka, "untranslated": untranslated}
        )
        return env

    # -- observe ----------------------------------------------------------------------------
    def runs(self) -> list[JobRun]:
        """Every run in the state dir, oldest first (cheap: only new progress bytes are read)."""
        with self._lock:
            if self.runs_dir.is_dir():
                for d in self.runs_dir.iterdir():
                    if d.name not in self._records and (d / "job.json").exists():
                        rec = self._load(d)
                        if rec is not None:
                            self._records[d.name] = rec
            out = [self._refresh(r) for r in self._records.values()]
        return sorted(out, key=lambda r: (r.started_at, r.run_id))

    def get(self, run_id: str) -> JobRun:
        """One run by id (a unique prefix works too)."""
        with self._lock:
            return self._refresh(self._record(run_id))

    def log_tail(self, run_id: str, lines: int = 50) -> list[str]:
        """The last lines of a run's log (Spark's stderr)."""
        with self._lock:
            rec = self._record(run_id)
        return tail_lines(rec.run_dir / "job.log", lines)

    def read_output(self, run_id: str) -> list[dict[str, Any]]:
        """Every row of the run's readable sink, batch by batch."""
        run = self.get(run_id)
        return read_output_dir(run.output_dir) if run.output_dir else []

    # -- stop -------------------------------------------------------------------------------
    def stop(self, run_id: str, timeout_s: float = 20.0) -> JobRun:
        """SIGTERM (the job stops its query and exits), SIGKILL to its process group after
        `timeout_s`. Returns the run once it has exited."""
        with self._lock:
            rec = self._record(run_id)
            self._request_stop(rec)
        self._wait_stopped(rec, timeout_s)
        with self._lock:
            return self._refresh(rec)

    def stop_attached(self, timeout_s: float = 20.0) -> list[JobRun]:
        """Stop every run this manager started without detached (the console calls this on
        exit), all at once."""
        with self._lock:
            recs = [
                r
                for r in self._records.values()
                if r.ours and not r.meta.get("detached") and r.proc.process() is not None
            ]
            for rec in recs:
                self._request_stop(rec)
        threads = [threading.Thread(target=self._wait_stopped, args=(r, timeout_s)) for r in recs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with self._lock:
            return [self._refresh(r) for r in recs]

    def _request_stop(self, rec: _Record) -> None:
        proc = rec.proc.process()
        if proc is None:
            return
        with contextlib.suppress(psutil.Error):
            rec.meta["children"] = [[c.pid, c.create_time()] for c in proc.children(recursive=True)]
        rec.meta.setdefault("stop_requested_at", time.time())
        self._write_meta(rec)
        rec.proc.signal(signal.SIGCONT)  # a paused job could not act on SIGTERM
        rec.proc.signal(signal.SIGTERM)  # the Python driver only: it stops the JVM itself

    def _wait_stopped(self, rec: _Record, timeout_s: float) -> None:
        if not rec.proc.wait_exit(timeout_s):
            proc = rec.proc.process()
            if proc is not None:
                try:
                    if os.getpgid(proc.pid) == proc.pid:  # our session leader: the whole group
                        os.killpg(proc.pid, signal.SIGKILL)
                    else:
                        proc.kill()
                except (ProcessLookupError, psutil.Error):
                    pass
                rec.meta["killed"] = True
            rec.proc.wait_exit(10.0)
        # The JVM exits when the driver's pipe closes; make sure, by identity, it did.
        for pid, created in rec.meta.get("children", []):
            try:
                child = psutil.Process(pid)
                if abs(child.create_time() - created) > 0.5:
                    continue
                child.wait(5.0)
            except psutil.TimeoutExpired:
                with contextlib.suppress(psutil.Error):
                    child.kill()
            except psutil.Error:
                continue

    # -- internals --------------------------------------------------------------------------
    def _record(self, run_id: str) -> _Record:
        if run_id not in self._records:
            self.runs()
        if run_id in self._records:
            return self._records[run_id]
        hits = [k for k in self._records if k.startswith(run_id)]
        if len(hits) == 1:
            return self._records[hits[0]]
        raise JobError(f"no job run {run_id!r}" if not hits else f"{run_id!r} is ambiguous: {hits}")

    def _load(self, run_dir: Path) -> _Record | None:
        try:
            meta = json.loads((run_dir / "job.json").read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(meta, dict) or "run_id" not in meta:
            return None
        rec = _Record(run_dir, meta, self.history)
        rec.meta_mtime = (run_dir / "job.json").stat().st_mtime
        try:
            size = rec.progress_path.stat().st_size
        except OSError:
            size = 0
        if size > _FIRST_READ_MAX:  # an old long run: its tail is what matters
            rec.offset = size - 4 * 2**20
            rec.partial = b"\0"  # drop the first, partial line
        return rec

    def _write_meta(self, rec: _Record) -> None:
        path = rec.run_dir / "job.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(rec.meta, indent=2, default=str))
        tmp.replace(path)
        rec.meta_mtime = path.stat().st_mtime

    def _read_new(self, rec: _Record) -> None:
        try:
            with open(rec.progress_path, "rb") as fh:
                fh.seek(rec.offset)
                data = fh.read()
        except OSError:
            return
        if not data:
            return
        rec.offset += len(data)
        data = rec.partial + data
        lines = data.split(b"\n")
        rec.partial = lines.pop()
        if lines and lines[0].startswith(b"\0"):
            lines.pop(0)
        for line in lines:
            self._apply(rec, line)

    def _apply(self, rec: _Record, line: bytes) -> None:
        data = parse_line(line)
        if data is None:
            return
        kind = data["type"]
        if kind == "progress":
            p = parse_progress_line(line)
            if p is not None:
                rec.history.append(p)
        elif kind == "state":
            rec.last_state = data
            if data.get("state") == "running":
                rec.seen_running = True
        elif kind in ("output", "finding"):
            rec.recent.append(data)
        elif kind == "findings":
            for k, n in (data.get("counts") or {}).items():
                rec.counts[k] = rec.counts.get(k, 0) + int(n)
        elif kind == "warning":
            msg = str(data.get("message", ""))
            if msg and msg not in rec.warnings:
                rec.warnings.append(msg)

    def _refresh(self, rec: _Record) -> JobRun:
        if rec.final is not None:
            return rec.final
        meta_path = rec.run_dir / "job.json"
        try:
            mtime = meta_path.stat().st_mtime
            if mtime != rec.meta_mtime:  # another kconsole (the CLI) may have asked it to stop
                rec.meta = {**rec.meta, **json.loads(meta_path.read_text())}
                rec.meta_mtime = mtime
        except (OSError, ValueError):
            pass
        alive = rec.proc.process() is not None
        self._read_new(rec)
        meta = rec.meta
        exit_code = meta.get("exit_code")
        if not alive and rec.ours and exit_code is None:
            exit_code = rec.proc.exit_code()
        last = rec.last_state or {}
        last_state = last.get("state")
        error = None
        ended_at = meta.get("ended_at")
        if alive:
            if meta.get("stop_requested_at") or last_state in ("stopping", "stopped", "failed"):
                state = JobState.STOPPING
            elif rec.seen_running:
                state = JobState.RUNNING
            else:
                state = JobState.STARTING
        else:
            if exit_code is None and isinstance(last.get("exitCode"), int):
                exit_code = last["exitCode"]
            if last_state == "failed":
                state = JobState.FAILED
                error = str(last.get("reason") or "") or extract_error(
                    tail_lines(rec.run_dir / "job.log", 300)
                )
            elif last_state == "finished":
                state = JobState.FINISHED
            elif last_state == "stopped" or meta.get("stop_requested_at"):
                state = JobState.STOPPED
            else:
                state = JobState.FAILED
                found = extract_error(tail_lines(rec.run_dir / "job.log", 300))
                code = "unknown" if exit_code is None else str(exit_code)
                error = found or f"the job exited (code {code}) without reporting why"
            if ended_at is None:
                ended_at = float(last.get("ts") or time.time())
        run = JobRun(
            run_id=meta["run_id"],
            job=meta.get("job", ""),
            options=dict(meta.get("options") or {}),
            argv=tuple(meta.get("argv") or ()),
            pid=meta.get("pid"),
            started_at=float(meta.get("started_at") or 0.0),
            state=state,
            detached=bool(meta.get("detached")),
            run_dir=rec.run_dir,
            log_path=rec.run_dir / "job.log",
            progress_path=rec.progress_path,
            output_dir=Path(meta["output_dir"]) if meta.get("output_dir") else None,
            checkpoint=Path(meta["checkpoint"]) if meta.get("checkpoint") else None,
            topic=meta.get("topic"),
            group_id=meta.get("group_id"),
            latest=rec.history[-1] if rec.history else None,
            history=tuple(rec.history),
            error=error,
            exit_code=exit_code,
            ended_at=ended_at,
            warnings=tuple(rec.warnings),
            finding_counts=dict(rec.counts),
            recent_output=tuple(rec.recent),
        )
        if not alive:
            if rec.ours and (meta.get("exit_code") is None or meta.get("ended_at") is None):
                meta.update(exit_code=exit_code, ended_at=ended_at)
                self._write_meta(rec)
            rec.final = run
        return run


def read_output_dir(directory: Path) -> list[dict[str, Any]]:
    """Rows of a job's readable sink (batch-*.jsonl), in batch order, each with its batch id."""
    rows: list[dict[str, Any]] = []
    for path in sorted(directory.glob("batch-*.jsonl")):
        batch = int(path.stem.split("-", 1)[1])
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rows.append({**json.loads(line), "_batch": batch})
    return rows


def latest_counts(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str | None], int]:
    """Keyed counts' current count per (window start, key): the last update wins."""
    out: dict[tuple[str, str | None], int] = {}
    for r in rows:
        out[(str(r["window_start"]), r.get("key"))] = int(r["count"])
    return out


def java_kafka_options(client: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """librdkafka client properties (kconsole's -X) as Java client properties for Spark's
    Kafka source and sink; returns (translated, names it could not translate)."""
    out: dict[str, str] = {}
    left: list[str] = []
    c = dict(client)
    for same in ("security.protocol", "sasl.mechanism", "client.id"):
        if same in c:
            out[same] = c.pop(same)
    if "sasl.mechanisms" in c:
        out["sasl.mechanism"] = c.pop("sasl.mechanisms")
    user, password = c.pop("sasl.username", None), c.pop("sasl.password", None)
    if user is not None and password is not None:
        mech = out.get("sasl.mechanism", "PLAIN").upper()
        module = (
            "org.apache.kafka.common.security.scram.ScramLoginModule"
            if mech.startswith("SCRAM")
            else "org.apache.kafka.common.security.plain.PlainLoginModule"
        )
        out["sasl.jaas.config"] = (
            f'{module} required username="{_jaas(user)}" password="{_jaas(password)}";'
        )
    if "ssl.ca.location" in c:
        out["ssl.truststore.type"] = "PEM"
        out["ssl.truststore.location"] = c.pop("ssl.ca.location")
    if c.pop("enable.ssl.certificate.verification", "true").lower() == "false":
        out["ssl.endpoint.identification.algorithm"] = ""
    left = sorted(c)
    return out, left


def _jaas(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


_SECRET = re.compile(r"password|secret|jaas|token|key\.pem|ssl\.key", re.I)


def _redacted(options: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in options.items():
        if isinstance(v, list | tuple):
            out[k] = [_redact_kv(str(i)) for i in v]
        else:
            out[k] = "***" if _SECRET.search(k) else v
    return out


def _redact_kv(item: str) -> str:
    key, sep, _value = item.partition("=")
    return f"{key}=***" if sep and _SECRET.search(key) else item


def _redacted_argv(argv: list[str]) -> list[str]:
    return [_redact_kv(a) for a in argv]


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


__all__ = [
    "JobError",
    "JobManager",
    "JobOption",
    "JobProgress",
    "JobRun",
    "JobSpec",
    "JobState",
    "available_jobs",
    "extract_error",
    "get_job",
    "java_kafka_options",
    "latest_counts",
    "parse_line",
    "parse_progress_line",
    "read_output_dir",
]
