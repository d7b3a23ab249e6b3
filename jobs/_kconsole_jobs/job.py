"""The life of one job: checks, session, query, the progress loop and a graceful stop, on SIGTERM
or SIGINT or when the console that started it is gone. What each step does lives beside this
module (preflight, spark, emitter, committer); Job ties them together for the job scripts."""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from . import checkpoint, spark
from .committer import Committer
from .confluent import HAVE_CONFLUENT_KAFKA
from .emitter import Emitter, as_dict, log, progress_line
from .errors import JobFailure, failure_reason
from .options import client_from_env
from .preflight import Preflight, log_offsets

_POLL_S = 0.25
_MEASURE_TIMEOUT_S = 2.0  # reading the log ends after a batch: an unhealthy cluster delays the
# progress line by at most this, and "behind" is then unknown


class Job:
    """The life of one job: checks, session, query, progress loop, stop."""

    def __init__(self, name: str, args: argparse.Namespace):
        self.name = name
        self.args = args
        self._env_notes = client_from_env(args)
        self.out = Emitter(name)
        self.spark: Any = None
        self.query: Any = None
        self._stop = threading.Event()
        self._stop_reason = ""
        self._building_session = False
        self._preflight = Preflight(args, self.warn)
        self._topics_to_create: dict[str, int] = {}  # ensure_topic's, made once accepted
        self._last_ts: str | None = None
        self._last_batch = -1
        self._committer: Committer | None = None
        self._warned: set[str] = set()
        self.master = args.master or (None if spark.UNDER_SPARK_SUBMIT else "local[*]")
        self.output_dir = args.output_dir or os.path.join(
            os.path.dirname(os.path.abspath(args.checkpoint)), "output"
        )

    # -- reporting --------------------------------------------------------------------------
    def emit(self, kind: str, /, **fields: Any) -> None:
        self.out.emit(kind, **fields)

    def state(self, state: str, **fields: Any) -> None:
        self.emit("state", state=state, pid=os.getpid(), **fields)
        log(f"{state} {fields.get('reason', '')}".rstrip())

    def warn(self, message: str) -> None:
        """A warning, reported once per distinct message."""
        if message not in self._warned:
            self._warned.add(message)
            self.emit("warning", message=message)
            log(f"WARNING {message}")

    # -- Kafka from the driver (confluent_kafka, optional) -------------------------------------
    def admin(self) -> Any:
        return self._preflight.admin()

    def check_kafka(self, topics: list[str]) -> dict[str, int]:
        """Fail fast when Kafka is unreachable or a topic is missing (Preflight.check_kafka)."""
        return self._preflight.check_kafka(topics)

    def ensure_topic(self, topic: str, partitions: int) -> None:
        """Create `topic` when missing (Preflight.ensure_topic), once the run is accepted: a
        job's `check` only plans it, and run() creates it after the checkpoint check, so a run
        refused there has changed nothing on the cluster."""
        self._topics_to_create[topic] = partitions

    def create_planned_topics(self) -> None:
        """Create the topics ensure_topic planned (each when missing)."""
        planned, self._topics_to_create = self._topics_to_create, {}
        for topic, partitions in planned.items():
            self._preflight.ensure_topic(topic, partitions)

    def commit(self, end: dict[tuple[str, int], int]) -> None:
        """Hand a batch's end offsets to the committer thread (the newest offer wins)."""
        if not self.args.group_id or not end or not HAVE_CONFLUENT_KAFKA:
            return
        if self._committer is None:
            self._committer = Committer(self.args, self.warn, self._committed)
            self._committer.start()
        self._committer.offer(end)

    def _committed(self, end: dict[tuple[str, int], int]) -> None:
        """A "commit" line: the offsets this run committed to its group, as the group took
        them (the console's figure of this run's lag starts from these, not from whatever
        the shared group holds)."""
        offsets: dict[str, dict[str, int]] = {}
        for (topic, part), off in sorted(end.items()):
            offsets.setdefault(topic, {})[str(part)] = off
        self.emit("commit", group=self.args.group_id, offsets=offsets)

    def check_checkpoint(self) -> None:
        """Resume the checkpoint only if it is this cluster's and this topic incarnation's;
        report what happens to it as a "checkpoint" line (and a JobFailure when refused)."""
        if "://" in str(self.args.checkpoint):  # HDFS, S3...: not a local directory to read
            self._checkpoint("unverified", "checkpoint not checked: it is not a local directory")
            return
        ck = os.path.abspath(self.args.checkpoint)
        topics = [t.strip() for t in str(self.args.topic).split(",") if t.strip()]
        here = self._preflight.identity(topics)
        start = f"starting from starting-offsets {self.args.starting_offsets}"
        moved = None
        if getattr(self.args, "fresh_checkpoint", False) and (
            os.path.exists(ck) or os.path.exists(checkpoint.record_path(ck))
        ):
            moved = checkpoint.move_aside(ck)
        if not checkpoint.has_progress(ck):
            checkpoint.write_record(ck, here, self.name, self.args.bootstrap)
            if moved:
                self._checkpoint(
                    "fresh",
                    f"fresh checkpoint: the old one moved to {moved}; {start}",
                    movedTo=moved,
                )
            else:
                self._checkpoint("new", f"new checkpoint: {start}")
            return
        batch, offsets = checkpoint.resume_point(ck)
        where = checkpoint.offsets_text(offsets) if offsets else "(none recorded yet)"
        after = "" if batch is None else f" (after batch {batch})"
        if not HAVE_CONFLUENT_KAFKA:
            self._checkpoint(
                "unverified",
                f"resuming from checkpoint: offsets {where}{after}; not checked against the "
                "cluster (confluent_kafka is not installed)",
                offsets=offsets,
                batch=batch,
            )
            return
        why = checkpoint.mismatch(checkpoint.read_record(ck), here, topics)
        if why is not None:
            reason = (
                f"checkpoint {ck} not resumed: {why}. To start anew, run with --fresh-checkpoint "
                "(kconsole: the fresh-checkpoint box, or -o fresh-checkpoint=true), which moves "
                f"it to {ck}.old-<time> and starts from starting-offsets "
                f"{self.args.starting_offsets}"
            )
            self._checkpoint("refused", reason, offsets=offsets, batch=batch)
            raise JobFailure(reason)
        problems = checkpoint.out_of_range(offsets, self._preflight.log_ranges(topics))
        message = f"resuming from checkpoint: offsets {where}{after}"
        if problems:
            message += "; " + "; ".join(problems)
            if self.args.fail_on_data_loss == "true":
                message += " (fail-on-data-loss is true: Spark will stop on it)"
        self._checkpoint("resuming", message, offsets=offsets, batch=batch, outOfRange=problems)
        for problem in problems:
            self.warn(f"checkpoint: {problem}")

    def _checkpoint(self, status: str, message: str, **fields: Any) -> None:
        path = str(self.args.checkpoint)
        path = path if "://" in path else os.path.abspath(path)
        self.emit("checkpoint", status=status, path=path, message=message, **fields)
        log(message)

    # -- Spark --------------------------------------------------------------------------------
    def session(self) -> Any:
        """The SparkSession; in local mode with the connector jars from kconsole's cache."""
        self.spark = spark.build_session(self.name, self.master, self.args)
        self.spark.sparkContext.setLogLevel(self.args.log_level)
        return self.spark

    def kafka_options(self) -> dict[str, str]:
        """Options for Spark's Kafka source and sink: bootstrap plus -X properties."""
        return spark.kafka_options(self.args)

    def source(self) -> Any:
        """The Kafka topic as a streaming DataFrame (key, value, topic, partition, offset,
        timestamp, ...)."""
        return spark.source(self.spark, self.args)

    def trigger(self, writer: Any) -> Any:
        return spark.trigger(writer, self.args)

    # -- the run -----------------------------------------------------------------------------
    def run(self, start: Callable[[Job], Any], check: Callable[[Job], None] | None = None) -> int:
        """Check, build the session, start the query (`start` returns the StreamingQuery),
        report progress until stopped or failed. Returns the exit code."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._on_signal)
        if self.args.stop_with_parent:
            threading.Thread(target=self._watch_parent, daemon=True, name="parent").start()
        self.state(
            "starting",
            master=self.master or "(spark-submit)",
            topic=self.args.topic,
            checkpoint=os.path.abspath(self.args.checkpoint),
            output_dir=os.path.abspath(self.output_dir),
        )
        for note in self._env_notes:
            self.warn(note)
        try:
            if check is not None:
                check(self)  # reads only: what it would create waits for the checkpoint
            self.check_checkpoint()
            if self._stop.is_set():
                return self._finish("stopped", 0)
            self.create_planned_topics()
            self._building_session = True
            if self._stop.is_set():  # asked before the flag was up
                return self._finish("stopped", 0)
            self.session()
            self._building_session = False
            if self._stop.is_set():
                return self._finish("stopped", 0)
            os.makedirs(self.output_dir, exist_ok=True)
            self.query = start(self)
            self.state(
                "running",
                queryId=str(self.query.id),
                runId=str(self.query.runId),
                sparkVersion=self.spark.version,
                master=self.spark.sparkContext.master,
            )
            return self._loop()
        except JobFailure as exc:
            return self._finish("failed", 1, reason=str(exc))
        except Exception as exc:  # Spark's own errors: the first lines say what happened
            return self._finish("failed", 1, reason=failure_reason(exc))

    def _loop(self) -> int:
        q = self.query
        while not self._stop.is_set():
            done = q.awaitTermination(_POLL_S)
            self._report()
            if done:
                exc = q.exception()
                if exc is not None:
                    return self._finish("failed", 1, reason=failure_reason(exc))
                return self._finish("finished", 0)
        self.state("stopping", reason=self._stop_reason)
        # Let a running batch finish, so a restart does not redo (and re-report) it.
        deadline = time.monotonic() + self.args.stop_grace
        while time.monotonic() < deadline and q.isActive and q.status.get("isTriggerActive"):
            time.sleep(0.05)
        q.stop()
        self._report()
        exc = q.exception()
        if exc is not None:
            return self._finish("failed", 1, reason=failure_reason(exc))
        return self._finish("stopped", 0)

    def _report(self) -> None:
        """Emit every progress not emitted yet, then commit the newest end offsets."""
        last = self._last_progress()
        if last is None or last.get("timestamp") == self._last_ts:
            return
        todo = [last]
        if last.get("batchId", -1) > self._last_batch + 1:  # several batches since the last poll
            newer = [p for p in self._recent_progress() if p["timestamp"] > (self._last_ts or "")]
            todo = newer or [last]
        for p in todo:
            line = progress_line(p)
            if p is todo[-1]:
                line.update(self._behind_now(line["endOffset"]))
            else:  # an older batch, found late: the log end when it ended is not known
                line.update(
                    offsetsBehindLatest=None,
                    behindUnknown="not measured (a later batch ended first)",
                )
            self.emit("progress", **line)
            self._last_ts = p.get("timestamp")
            self._last_batch = max(self._last_batch, p.get("batchId", -1))
        end = progress_line(last)["endOffset"]
        self.commit(
            {(t, int(part)): off for t, parts in end.items() for part, off in parts.items()}
        )

    def _behind_now(self, end: dict[str, dict[str, int]]) -> dict[str, Any]:
        """How far behind the topic the job is as its newest batch ends: per partition the log
        end now - the batch's end offset, summed (what the group's lag is once the batch's end is
        committed); with the log ends read and when. Unknown, with why, when a log end could not
        be read."""
        tps = [(t, int(p)) for t, parts in end.items() for p in parts]
        admin = self.admin()
        if admin is None:
            return {
                "offsetsBehindLatest": None,
                "behindUnknown": "confluent_kafka is not installed",
            }
        ends, errors = log_offsets(admin, tps, "latest", _MEASURE_TIMEOUT_S)
        at = time.time()
        log_end = {
            t: {p: ends[(t, int(p))] for p in parts if (t, int(p)) in ends}
            for t, parts in end.items()
        }
        if errors or not tps:
            why = "; ".join(f"{t}/{p}: {e}" for (t, p), e in sorted(errors.items()))
            return {
                "offsetsBehindLatest": None,
                "behindUnknown": f"log end not read ({why or 'no partitions'})",
                "logEndOffset": log_end,
                "behindAt": at,
            }
        behind = sum(
            max(0, ends[(t, int(p))] - off) for t, parts in end.items() for p, off in parts.items()
        )
        return {"offsetsBehindLatest": behind, "logEndOffset": log_end, "behindAt": at}

    def _last_progress(self) -> dict[str, Any] | None:
        # One py4j call for the JSON: pyspark's own lastProgress builds the Python object field
        # by field (~100 calls, 0.1-2 s of a busy driver's CPU at every poll).
        jsq = getattr(self.query, "_jsq", None)
        if jsq is None:
            return as_dict(self.query.lastProgress)
        jp = jsq.lastProgress()
        return None if jp is None else json.loads(jp.json())

    def _recent_progress(self) -> list[dict[str, Any]]:
        jsq = getattr(self.query, "_jsq", None)
        if jsq is None:
            return [d for p in self.query.recentProgress if (d := as_dict(p))]
        return [json.loads(p.json()) for p in jsq.recentProgress()]

    def _finish(self, state: str, code: int, **fields: Any) -> int:
        if self._committer is not None:
            self._committer.close(timeout=10.0)  # the group shows where the job stopped
        if self.spark is not None:
            try:
                self.spark.stop()
            except Exception as exc:  # stopping a broken session must not hide the reason
                log(f"spark.stop() failed: {exc}")
        self.state(state, exitCode=code, **fields)
        return code

    def _on_signal(self, signum: int, _frame: object) -> None:
        self._stop_reason = f"signal {signal.Signals(signum).name}"
        self._stop.set()
        self._stop_if_starting()

    def _watch_parent(self) -> None:
        def parent_gone() -> None:
            self._stop_reason = "kconsole (the parent process) exited"
            self._stop.set()
            self._stop_if_starting()

        watch_parent(self.args.stop_with_parent, self._stop, parent_gone)

    def _stop_if_starting(self) -> None:
        """A stop asked while Spark's session is still being built ends the job now: nothing
        of the query exists yet, and waiting for the session (a JVM start, 10-30 s on a busy
        machine) only to stop it made a stop that slow. The JVM exits by itself when our end of
        its stdin pipe closes (pyspark's gateway reads it for that)."""
        if not self._building_session:
            return
        self.state("stopped", exitCode=0, reason=f"{self._stop_reason}, before Spark started")
        os._exit(0)


def watch_parent(pid: int, done: threading.Event, on_gone: Callable[[], None]) -> None:
    """Call on_gone() once this process's parent is no longer `pid` (it exited and we were
    re-parented): an attached job must not outlive the console that started it, even when
    the console was killed and could not stop it."""
    while not done.is_set():
        if os.getppid() != pid:
            on_gone()
            return
        time.sleep(0.5)
