"""The JobManager: starts job processes (`python jobs/<job>.py ...`, each in its own session),
observes them through their run directories, and stops them.

A run ends once: the manager that started it reaps its process, and in the same step decides its
state, exit code and failure reason and records them together in job.json. Any other manager (the
CLI, another console) that reads the run adopts that record; until it is there it works out what
it can from the job's last state line and its log.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import secrets
import signal
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import psutil

from kconsole import paths
from kconsole.cluster import jars
from kconsole.cluster.logs import tail_lines
from kconsole.cluster.procs import wait_exited
from kconsole.config import Settings
from kconsole.jobs.client import (
    CLIENT_FILE,
    CLIENT_FILE_ENV,
    job_client,
    redacted,
    redacted_argv,
    write_client_file,
)
from kconsole.jobs.output import read_output_dir
from kconsole.jobs.runs import JobRun, RunRecord, recorded_outcome
from kconsole.jobs.specs import INTERNAL_OPTIONS, MASTER, JobError, JobSpec, get_job
from kconsole.secrets import variables as secret_variables

HISTORY = 120  # progress entries kept per run: two minutes at a 1 s trigger
_REAP_GRACE_S = 5.0  # a process gone from view is reaped once its last threads have exited


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
        self._records: dict[str, RunRecord] = {}

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
        # Secrets resolved now (a missing one is a ConfigError before anything starts).
        client = job_client(self.settings.client, self.settings.client_origin)
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
                "options": redacted(given),
                "argv": redacted_argv(argv),
                "detached": detached,
                "started_at": time.time(),
                "manager_pid": os.getpid(),
                "checkpoint": str(checkpoint) if checkpoint else None,
                "output_dir": str(output_dir) if output_dir else None,
                "topic": getattr(ns, "topic", None),
                "group_id": getattr(ns, "group_id", None) or None,
            }
            rec = RunRecord(run_dir, meta, self.history)
            rec.ours = True
            env = self._env(spec)
            client_file = run_dir / CLIENT_FILE
            write_client_file(client_file, client)
            env[CLIENT_FILE_ENV] = str(client_file)
            try:
                pid = rec.proc.spawn(argv, cwd=run_dir, env=env, stdout_file=rec.progress_path)
            except BaseException:
                client_file.unlink(missing_ok=True)
                raise
            pid_rec = rec.proc.record()
            rec.update_meta({"pid": pid, "create_time": pid_rec.create_time if pid_rec else None})
            self._records[run_id] = rec
            return self._refresh(rec)

    def _flags(self, spec: JobSpec, given: Mapping[str, Any]) -> list[str]:
        flags: list[str] = []
        known = {o.name: o for o in spec.options}
        for raw, value in given.items():
            name = raw.replace("_", "-").lstrip("-")
            opt = known.get(name)
            if opt is None or name in INTERNAL_OPTIONS:
                raise JobError(
                    f"{spec.name} has no option {raw!r} (options: {', '.join(sorted(known))})"
                )
            if opt.kind == "flag":
                if _truthy(value):
                    flags.append(f"--{name}")
            elif opt.kind == "list" and value is not None:
                items = list(value) if isinstance(value, list | tuple) else [value]
                for item in items:
                    flags += [f"--{name}", _argument(name, item)]
            elif value is not None:
                text = _argument(name, value)
                # "--topic=-x": as two arguments argparse would take "-x" for an option
                flags += [f"--{name}={text}"] if text.startswith("-") else [f"--{name}", text]
        if spec.option("bootstrap") and "bootstrap" not in {k.replace("_", "-") for k in given}:
            flags += ["--bootstrap", self.settings.bootstrap]
        return flags

    def _validate(self, spec: JobSpec, flags: list[str]) -> argparse.Namespace:
        parser = spec.make_parser()

        def error(message: str) -> None:
            named = re.match(r"argument --([\w-]+)", message)
            opt = spec.option(named.group(1)) if named else None
            form = f" ({opt.name}: {opt.form})" if opt is not None and opt.kind != "flag" else ""
            raise JobError(f"bad option for {spec.name}: {message}{form}")

        parser.error = error  # type: ignore[method-assign,assignment]
        ns = parser.parse_args(flags)
        offsets = getattr(ns, "starting_offsets", None)
        if offsets not in (None, "earliest", "latest"):
            try:
                json.loads(offsets)
            except (ValueError, RecursionError) as exc:
                raise JobError(
                    f"bad option for {spec.name}: starting-offsets must be earliest, latest or "
                    f"JSON, not {offsets!r}"
                ) from exc
        master = getattr(ns, "master", None)
        if master and not MASTER.match(master):
            raise JobError(f"bad option for {spec.name}: master {master!r} is not a Spark master")
        return ns

    def _env(self, spec: JobSpec) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        env.setdefault("PYSPARK_PYTHON", self.python)
        # Client properties (maybe secrets) travel in the run's secret file (CLIENT_FILE_ENV
        # names it), never on the command line or in the environment: not even the variables
        # the settings read their secrets from.
        env.pop(CLIENT_FILE_ENV, None)
        for name in secret_variables(self.settings.client):
            env.pop(name, None)
        return env

    # -- observe ----------------------------------------------------------------------------
    def runs(self) -> list[JobRun]:
        """Every run in the state dir, oldest first (cheap: only new progress bytes are read)."""
        with self._lock:
            if self.runs_dir.is_dir():
                for d in self.runs_dir.iterdir():
                    if d.name not in self._records and (d / "job.json").exists():
                        rec = RunRecord.load(d, self.history)
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

    def attached_run_ids(self) -> list[str]:
        """The runs this manager started without detached that are still running: what the
        console (or `jobs start --attach`) stops when it exits."""
        with self._lock:
            return [
                rid
                for rid, r in self._records.items()
                if r.ours and not r.meta.get("detached") and self._observe(r)[0]
            ]

    def stop_attached(self, timeout_s: float = 20.0) -> list[JobRun]:
        """Stop every run this manager started without detached (the console calls this on
        exit), all at once."""
        with self._lock:
            recs = [
                r
                for r in self._records.values()
                if r.ours and not r.meta.get("detached") and self._observe(r)[0]
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

    def _request_stop(self, rec: RunRecord) -> None:
        proc = rec.proc.process()
        if proc is None:
            return
        changes: dict[str, Any] = {"stop_requested_at": time.time()}
        with contextlib.suppress(psutil.Error):
            changes["children"] = [[c.pid, c.create_time()] for c in proc.children(recursive=True)]
        rec.reload_meta()
        if rec.meta.get("stop_requested_at"):
            del changes["stop_requested_at"]  # the first request is the one that counts
        rec.update_meta(changes)
        rec.proc.signal(signal.SIGCONT)  # a paused job could not act on SIGTERM
        rec.proc.signal(signal.SIGTERM)  # the Python driver only: it stops the JVM itself

    def _wait_stopped(self, rec: RunRecord, timeout_s: float) -> None:
        if not self._wait_ended(rec, timeout_s):
            proc = rec.proc.process()
            if proc is not None:
                try:
                    if os.getpgid(proc.pid) == proc.pid:  # our session leader: the whole group
                        os.killpg(proc.pid, signal.SIGKILL)
                    else:
                        proc.kill()
                except (ProcessLookupError, psutil.Error):
                    pass
                with self._lock:
                    rec.update_meta({"killed": True})
            self._wait_ended(rec, 10.0)
        # The JVM exits when the driver's pipe closes; make sure, by identity, it did (exited:
        # reaping it is for the process that inherited it, at its own pace).
        for pid, created in rec.meta.get("children", []):
            try:
                child = psutil.Process(pid)
                if abs(child.create_time() - created) > 0.5:
                    continue
            except psutil.Error:
                continue
            if not wait_exited(child, 5.0):
                with contextlib.suppress(psutil.Error):
                    child.kill()

    def _wait_ended(self, rec: RunRecord, timeout_s: float) -> bool:
        """Wait until the run's process has exited (and, if it is our child, been reaped)."""
        deadline = time.monotonic() + timeout_s
        if not rec.proc.wait_exit(timeout_s):
            return False
        # Gone from view, but a process whose other threads are still exiting cannot be reaped
        # yet, and until it is reaped the run has not ended (see _observe).
        deadline = max(deadline, time.monotonic() + _REAP_GRACE_S)
        while rec.ours and rec.proc.exit_code() is None:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True

    # -- internals --------------------------------------------------------------------------
    def _record(self, run_id: str) -> RunRecord:
        if run_id not in self._records:
            self.runs()
        if run_id in self._records:
            return self._records[run_id]
        hits = [k for k in self._records if k.startswith(run_id)]
        if len(hits) == 1:
            return self._records[hits[0]]
        raise JobError(f"no job run {run_id!r}" if not hits else f"{run_id!r} is ambiguous: {hits}")

    def _observe(self, rec: RunRecord) -> tuple[bool, int | None]:
        """Whether the run's process is alive and, if this manager reaped it, its exit code:
        one observation. Our own child is alive until it is reaped, and reaping is what gives its
        exit code: psutil can show it gone (a zombie whose other threads are still exiting) well
        before waitpid can reap it, so asking psutil first and waitpid second can see a dead
        process without an exit code."""
        if rec.ours:
            code = rec.proc.exit_code()
            return code is None, code
        return rec.proc.process() is not None, None

    def _refresh(self, rec: RunRecord) -> JobRun:
        """The run as of now. The one place a run's state is decided, always under self._lock:
        state, exit code, reason and end time together, and, when it has ended and this manager
        started it, recorded together in job.json before anyone is told."""
        if rec.final is not None:
            return rec.final
        rec.reload_meta()  # another kconsole (the CLI) may have asked it to stop
        alive, exit_code = self._observe(rec)
        rec.read_new()  # after the observation: a process that has exited has written it all
        outcome = rec.decide(alive=alive, exit_code=exit_code)
        if outcome.state.active:
            return rec.snapshot(outcome)
        # The run has ended: its secret file goes, if the job did not remove it itself.
        with contextlib.suppress(OSError):
            (rec.run_dir / CLIENT_FILE).unlink(missing_ok=True)
        recorded = recorded_outcome(rec.meta) is not None
        if rec.ours and not recorded:
            rec.update_meta(outcome.as_meta())
            recorded = True
        run = rec.snapshot(outcome)
        if recorded or not self._owner_may_record(rec.meta):
            rec.final = run  # else the manager that started it will record its exit code
        return run

    @staticmethod
    def _owner_may_record(meta: Mapping[str, Any]) -> bool:
        """Whether the manager that started a run may still record its end."""
        pid = meta.get("manager_pid")
        return isinstance(pid, int) and psutil.pid_exists(pid)


def _argument(name: str, value: Any) -> str:
    """`value` as a command-line argument, or a JobError when no command line can hold it."""
    text = str(value)
    try:
        ok = b"\0" not in os.fsencode(text)
    except UnicodeEncodeError:
        ok = False
    if not ok:
        raise JobError(
            f"option {name}: {text!r} cannot go on a command line (a NUL or an unencodable "
            "character)"
        )
    return text


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)
