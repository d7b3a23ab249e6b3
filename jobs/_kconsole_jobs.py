"""What every kconsole Structured Streaming job shares: its options, the Spark session, the Kafka
source, progress as JSON lines on stdout, the consumer-group commit and a graceful stop.

Only the standard library and pyspark are needed, so a job runs under plain `spark-submit` as
well as under `python jobs/<job>.py`. When confluent_kafka is importable (it is in kconsole's
venv) the driver also checks Kafka and the topic before starting Spark, creates a missing output
topic, and commits each batch's end offsets to a consumer group.

The stdout protocol (one JSON object per line, nothing else on stdout):

    {"type": "state", "state": "starting|running|stopping|stopped|failed|finished", ...}
    {"type": "progress", "batchId": 7, "numInputRows": 120, "offsetsBehindLatest": 0, ...}
    {"type": "warning", "message": "..."}
    plus job-specific lines ("output", "finding", "findings")

Everything else — Spark's and Kafka's logging, the JVM's output — goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

DEFAULT_BOOTSTRAP = os.environ.get(
    "KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094"
)
# Set by spark-submit for the Python driver it launches: then spark-submit's own --master,
# --jars and --packages apply and the job does not override them.
UNDER_SPARK_SUBMIT = "PYSPARK_GATEWAY_PORT" in os.environ
_POLL_S = 0.25

try:  # optional: pre-flight checks, topic creation and the consumer-group commit
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    HAVE_CONFLUENT_KAFKA = True
except ImportError:  # plain spark-submit without kconsole's venv
    HAVE_CONFLUENT_KAFKA = False


class JobFailure(Exception):
    """A failure with a reason a person can act on (reported as the failed state's reason)."""


def key_value(text: str) -> tuple[str, str]:
    """argparse type for KEY=VALUE options."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def positive_or_zero(text: str) -> float:
    value = float(text)
    if not value >= 0:  # NaN too
        raise argparse.ArgumentTypeError(f"must be >= 0, not {text}")
    return value


def summary(doc: str | None) -> str:
    """The first paragraph of a docstring, on one line."""
    return " ".join((doc or "").strip().split("\n\n")[0].split())


def parser(
    job: str, description: str, *, topic: str, starting_offsets: str
) -> argparse.ArgumentParser:
    """The options every job takes; the job adds its own."""
    p = argparse.ArgumentParser(
        prog=f"{job}.py",
        description=description,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--bootstrap", default=DEFAULT_BOOTSTRAP, help="Kafka bootstrap servers")
    p.add_argument("--topic", default=topic, help="topic to read")
    p.add_argument(
        "--starting-offsets",
        default=starting_offsets,
        help="earliest, latest, or Spark's JSON form; only for a new checkpoint",
    )
    p.add_argument(
        "--trigger",
        type=positive_or_zero,
        default=2.0,
        help="seconds between micro-batches (0: each batch starts when the last one ends)",
    )
    p.add_argument(
        "--checkpoint",
        default=os.path.join(tempfile.gettempdir(), "kconsole-jobs", job, "checkpoint"),
        help="checkpoint dir: offsets and state; a restart with the same dir resumes",
    )
    p.add_argument(
        "--output-dir",
        default=None,
        help="readable sink: one JSON-lines file per batch (default: beside the checkpoint)",
    )
    p.add_argument(
        "--master",
        default=None,
        help="Spark master: local[*] (default), local[2], spark://HOST:PORT; under "
        "spark-submit its --master applies",
    )
    p.add_argument(
        "--group-id",
        default=f"kconsole-job-{job.replace('_', '-')}",
        help="consumer group the end offset of each batch is committed to ('' = none)",
    )
    p.add_argument(
        "--max-offsets-per-trigger", type=int, default=None, help="cap on records per batch"
    )
    p.add_argument("--shuffle-partitions", type=int, default=4, help="spark.sql.shuffle.partitions")
    p.add_argument(
        "--fail-on-data-loss",
        choices=["true", "false"],
        default="true",
        help="fail when offsets were deleted before they were read (Spark's failOnDataLoss)",
    )
    p.add_argument(
        "-X",
        "--kafka-option",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Java Kafka client property for Spark's source and sink (SASL, SSL), e.g. "
        "security.protocol=SASL_SSL; repeatable",
    )
    p.add_argument(
        "--admin-option",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="librdkafka property for the driver's checks and group commit; repeatable",
    )
    p.add_argument(
        "--conf",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Spark configuration, e.g. spark.ui.enabled=true; repeatable",
    )
    p.add_argument(
        "--jars",
        default=None,
        help="comma-separated connector jars (default: kconsole's cache when run with python)",
    )
    p.add_argument("--log-level", default="WARN", help="Spark's log level (to stderr)")
    p.add_argument(
        "--available-now",
        action="store_true",
        help="process what is in the topic now, then finish",
    )
    p.add_argument(
        "--preflight-timeout",
        type=float,
        default=10.0,
        help="seconds to wait for Kafka when checking it before starting Spark",
    )
    p.add_argument(
        "--stop-grace",
        type=float,
        default=10.0,
        help="on SIGTERM, seconds to let a running batch finish before stopping",
    )
    # Internal: kconsole passes its pid so an attached job stops when the console is gone.
    p.add_argument("--stop-with-parent", type=int, default=None, help=argparse.SUPPRESS)
    return p


class Emitter:
    """One JSON object per line on the real stdout; fd 1 is pointed at stderr, so nothing else
    (the JVM, py4j, libraries) can write into the protocol."""

    def __init__(self, job: str):
        self.job = job
        self._lock = threading.Lock()
        sys.stdout.flush()
        self._out = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
        os.dup2(2, 1)
        sys.stdout = sys.stderr

    def emit(self, kind: str, /, **fields: Any) -> None:
        line = json.dumps(
            {"type": kind, "job": self.job, "ts": time.time(), **fields}, default=jsonable
        )
        with self._lock:
            self._out.write(line + "\n")
            self._out.flush()


def log(message: str) -> None:
    """A line for the job's log (stderr)."""
    print(f"{time.strftime('%H:%M:%S')} kconsole-job: {message}", file=sys.stderr, flush=True)


def _client_from_env(args: argparse.Namespace) -> list[str]:
    """Client properties kconsole passes in KCONSOLE_JOB_CLIENT (kept off the command line, as
    they may hold secrets): merged under the command line's -X / --admin-option."""
    raw = os.environ.get("KCONSOLE_JOB_CLIENT")
    if not raw:
        return []
    try:
        data = json.loads(raw)
    except ValueError:
        return ["KCONSOLE_JOB_CLIENT is not JSON: ignored"]
    args.kafka_option = list((data.get("kafka") or {}).items()) + list(args.kafka_option)
    args.admin_option = list((data.get("admin") or {}).items()) + list(args.admin_option)
    left = data.get("untranslated") or []
    if left:
        return [f"client properties not passed to Spark's Kafka client: {', '.join(left)}"]
    return []


class Job:
    """The life of one job: checks, session, query, progress loop, stop."""

    def __init__(self, name: str, args: argparse.Namespace):
        self.name = name
        self.args = args
        self._env_notes = _client_from_env(args)
        self.out = Emitter(name)
        self.spark: Any = None
        self.query: Any = None
        self._stop = threading.Event()
        self._stop_reason = ""
        self._admin: Any = None
        self._last_ts: str | None = None
        self._last_batch = -1
        self._committer: _Committer | None = None
        self._warned: set[str] = set()
        self.master = args.master or (None if UNDER_SPARK_SUBMIT else "local[*]")
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
        if not HAVE_CONFLUENT_KAFKA:
            return None
        if self._admin is None:
            conf = {"bootstrap.servers": self.args.bootstrap, "log_level": 2}
            conf.update(dict(self.args.admin_option))
            self._admin = AdminClient(conf)
        return self._admin

    def check_kafka(self, topics: list[str]) -> dict[str, int]:
        """Fail fast when Kafka is unreachable or a topic is missing: Spark's source would wait
        for a missing topic forever and retry an unreachable cluster for minutes.
        Returns partitions per existing topic (empty without confluent_kafka)."""
        admin = self.admin()
        if admin is None:
            if not any(_connects(hp) for hp in self.args.bootstrap.split(",")):
                raise JobFailure(f"Kafka is unreachable: no connection to {self.args.bootstrap}")
            self.warn("confluent_kafka is not installed: topics not checked, no group commit")
            return {}
        try:
            md = admin.list_topics(timeout=self.args.preflight_timeout)
        except KafkaException as exc:
            raise JobFailure(
                f"Kafka is unreachable at {self.args.bootstrap}: {_kafka_reason(exc)}"
            ) from exc
        parts = {t: len(m.partitions) for t, m in md.topics.items() if m.error is None}
        for topic in topics:
            if topic not in parts:
                raise JobFailure(
                    f"topic {topic!r} does not exist on {self.args.bootstrap} (topics are not "
                    "auto-created on kconsole clusters); create it or choose another with --topic"
                )
        return parts

    def ensure_topic(self, topic: str, partitions: int) -> None:
        """Create `topic` when missing (replication min(3, brokers)); fail clearly otherwise."""
        admin = self.admin()
        if admin is None:
            return  # Spark's sink reports a missing topic itself
        md = admin.list_topics(timeout=self.args.preflight_timeout)
        if topic in md.topics and md.topics[topic].error is None:
            return
        rf = min(3, len(md.brokers))
        futs = admin.create_topics([NewTopic(topic, partitions, rf)], request_timeout=15)
        try:
            futs[topic].result(timeout=20)
            log(f"created output topic {topic} ({partitions} partitions, replication {rf})")
        except KafkaException as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise JobFailure(
                    f"cannot create output topic {topic!r}: {_kafka_reason(exc)}"
                ) from exc

    def commit(self, end: dict[tuple[str, int], int]) -> None:
        """Hand a batch's end offsets to the committer thread (the newest offer wins)."""
        if not self.args.group_id or not end or not HAVE_CONFLUENT_KAFKA:
            return
        if self._committer is None:
            self._committer = _Committer(self)
            self._committer.start()
        self._committer.offer(end)

    # -- Spark --------------------------------------------------------------------------------
    def session(self) -> Any:
        """The SparkSession; in local mode with the connector jars from kconsole's cache."""
        if not UNDER_SPARK_SUBMIT and not os.environ.get("JAVA_HOME") and not _which("java"):
            raise JobFailure("Java is not installed: no java on PATH and JAVA_HOME is not set")
        from pyspark.sql import SparkSession

        b = SparkSession.builder.appName(f"kconsole-{self.name}")
        if self.master:
            b = b.master(self.master)
        if self.args.jars is not None:
            if self.args.jars:
                b = b.config("spark.jars", self.args.jars)
        elif not UNDER_SPARK_SUBMIT:
            jars, packages = _connector()
            if jars:
                b = b.config("spark.jars", ",".join(jars))
            else:
                b = b.config("spark.jars.packages", packages)
        conf = {
            "spark.sql.shuffle.partitions": str(self.args.shuffle_partitions),
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.session.timeZone": "UTC",
        }
        if self.master and self.master.startswith("local"):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            conf["spark.driver.host"] = "127.0.0.1"
            conf["spark.driver.bindAddress"] = "127.0.0.1"
        if not UNDER_SPARK_SUBMIT:
            # Python workers (local executors, and standalone ones on this machine) run the
            # driver's Python unless told otherwise: it has pandas and pyarrow.
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        conf.update(dict(self.args.conf))
        for k, v in conf.items():
            b = b.config(k, v)
        self.spark = b.getOrCreate()
        self.spark.sparkContext.setLogLevel(self.args.log_level)
        return self.spark

    def kafka_options(self) -> dict[str, str]:
        """Options for Spark's Kafka source and sink: bootstrap plus -X properties."""
        opts = {"kafka.bootstrap.servers": self.args.bootstrap}
        opts.update({f"kafka.{k}": v for k, v in self.args.kafka_option})
        return opts

    def source(self) -> Any:
        """The Kafka topic as a streaming DataFrame (key, value, topic, partition, offset,
        timestamp, ...)."""
        r = (
            self.spark.readStream.format("kafka")
            .options(**self.kafka_options())
            .option("subscribe", self.args.topic)
            .option("startingOffsets", self.args.starting_offsets)
            .option("failOnDataLoss", self.args.fail_on_data_loss)
        )
        if self.args.max_offsets_per_trigger:
            r = r.option("maxOffsetsPerTrigger", str(self.args.max_offsets_per_trigger))
        return r.load()

    def trigger(self, writer: Any) -> Any:
        if self.args.available_now:
            return writer.trigger(availableNow=True)
        return writer.trigger(processingTime=f"{self.args.trigger} seconds")

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
                check(self)
            if self._stop.is_set():
                return self._finish("stopped", 0)
            self.session()
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
            return self._finish("failed", 1, reason=_reason(exc))

    def _loop(self) -> int:
        q = self.query
        while not self._stop.is_set():
            done = q.awaitTermination(_POLL_S)
            self._report()
            if done:
                exc = q.exception()
                if exc is not None:
                    return self._finish("failed", 1, reason=_reason(exc))
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
            return self._finish("failed", 1, reason=_reason(exc))
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
            self.emit("progress", **line)
            self._last_ts = p.get("timestamp")
            self._last_batch = max(self._last_batch, p.get("batchId", -1))
        end = progress_line(last)["endOffset"]
        self.commit(
            {(t, int(part)): off for t, parts in end.items() for part, off in parts.items()}
        )

    def _last_progress(self) -> dict[str, Any] | None:
        # One py4j call for the JSON: pyspark's own lastProgress builds the Python object field
        # by field (~100 calls, 0.1-2 s of a busy driver's CPU at every poll).
        jsq = getattr(self.query, "_jsq", None)
        if jsq is None:
            return _as_dict(self.query.lastProgress)
        jp = jsq.lastProgress()
        return None if jp is None else json.loads(jp.json())

    def _recent_progress(self) -> list[dict[str, Any]]:
        jsq = getattr(self.query, "_jsq", None)
        if jsq is None:
            return [d for p in self.query.recentProgress if (d := _as_dict(p))]
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

    def _watch_parent(self) -> None:
        def parent_gone() -> None:
            self._stop_reason = "kconsole (the parent process) exited"
            self._stop.set()

        watch_parent(self.args.stop_with_parent, self._stop, parent_gone)


def watch_parent(pid: int, done: threading.Event, on_gone: Callable[[], None]) -> None:
    """Call on_gone() once this process's parent is no longer `pid` (it exited and we were
    re-parented): an attached job must not outlive the console that started it, even when
    the console was killed and could not stop it."""
    while not done.is_set():
        if os.getppid() != pid:
            on_gone()
            return
        time.sleep(0.5)


class _Committer(threading.Thread):
    """Commits end offsets to the job's consumer group, so the console's groups pane (log end -
    committed) shows how far behind the job is. Spark's Kafka source never commits offsets (its
    checkpoint is the truth); this copy is for observers. A plain consumer that never joins the
    group commits them (the group stays empty, so nothing is rebalanced), on its own thread so a
    slow coordinator never delays progress reports."""

    def __init__(self, job: Job):
        super().__init__(daemon=True, name="group-commit")
        self.job = job
        self._cond = threading.Condition()
        self._pending: dict[tuple[str, int], int] | None = None
        self._done: dict[tuple[str, int], int] = {}
        self._closing = False
        conf = {
            "bootstrap.servers": job.args.bootstrap,
            "group.id": job.args.group_id,
            "enable.auto.commit": False,
            "log_level": 2,
        }
        conf.update(dict(job.args.admin_option))
        self._consumer = Consumer(conf)

    def offer(self, end: dict[tuple[str, int], int]) -> None:
        with self._cond:
            self._pending = dict(end)
            self._cond.notify()

    def run(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._closing:
                    self._cond.wait()
                end, self._pending = self._pending, None
                closing = self._closing
            if end is not None and end != self._done:
                tps = [TopicPartition(t, p, off) for (t, p), off in sorted(end.items())]
                try:
                    self._consumer.commit(offsets=tps, asynchronous=False)
                    self._done = end
                except KafkaException as exc:
                    self.job.warn(
                        f"could not commit offsets to group {self.job.args.group_id}: "
                        f"{_kafka_reason(exc)}"
                    )
            if closing and self._pending is None:
                self._consumer.close()
                return

    def close(self, timeout: float) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify()
        self.join(timeout)


def progress_line(p: dict[str, Any]) -> dict[str, Any]:
    """The fields of a StreamingQueryProgress kconsole reads, plus offsets behind latest:
    per partition latest available - end of batch, summed over the job's sources."""
    end: dict[str, dict[str, int]] = {}
    latest: dict[str, dict[str, int]] = {}
    behind: int | None = None
    metrics: dict[str, Any] = {}
    for src in p.get("sources") or []:
        e, lt = _offsets(src.get("endOffset")), _offsets(src.get("latestOffset"))
        for t, parts in e.items():
            end.setdefault(t, {}).update(parts)
        for t, parts in lt.items():
            latest.setdefault(t, {}).update(parts)
        if e and lt:
            behind = (behind or 0) + sum(
                max(0, lt.get(t, {}).get(part, off) - off)
                for t, parts in e.items()
                for part, off in parts.items()
            )
        metrics.update(src.get("metrics") or {})
    state_ops = p.get("stateOperators") or []
    return {
        "batchId": p.get("batchId"),
        "timestamp": p.get("timestamp"),
        "numInputRows": p.get("numInputRows", 0),
        "inputRowsPerSecond": _num(p.get("inputRowsPerSecond")),
        "processedRowsPerSecond": _num(p.get("processedRowsPerSecond")),
        "batchDuration": p.get("batchDuration"),
        "durationMs": p.get("durationMs") or {},
        "offsetsBehindLatest": behind,
        "endOffset": end,
        "latestOffset": latest,
        "sourceMetrics": metrics,
        "watermark": (p.get("eventTime") or {}).get("watermark"),
        "stateRows": sum(op.get("numRowsTotal", 0) for op in state_ops) if state_ops else None,
        "queryId": p.get("id"),
        "runId": p.get("runId"),
    }


def _offsets(raw: Any) -> dict[str, dict[str, int]]:
    """Kafka offsets as Spark reports them (a JSON string {topic: {partition: offset}})."""
    if raw is None:
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    if not isinstance(raw, dict):
        return {}
    return {
        t: {str(k): int(v) for k, v in parts.items()}
        for t, parts in raw.items()
        if isinstance(parts, dict)
    }


def _num(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if v == v and v not in (float("inf"), float("-inf")) else None  # NaN, inf -> null


def _as_dict(progress: Any) -> dict[str, Any] | None:
    """lastProgress is a dict in some pyspark versions and an object with .json in others."""
    if progress is None:
        return None
    if isinstance(progress, dict):
        return progress
    raw = getattr(progress, "json", None)
    if raw is not None:
        return json.loads(raw() if callable(raw) else raw)
    return None


_PY_ERROR = re.compile(r"^(?:[\w.]+\.)?\w*(?:Error|Exception): .+")


def _reason(exc: BaseException) -> str:
    """What went wrong, in a line or two: a Python error inside Spark (a traceback relayed by
    the JVM) by its last line, a Java one by its first lines; hints for the common ones."""
    text = str(exc).strip() or type(exc).__name__
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    py_errors = [ln for ln in lines if _PY_ERROR.match(ln) and not ln.startswith("at ")]
    if "Traceback (most recent call last)" in text and py_errors:
        head = py_errors[-1][:600]
    else:
        head = " ".join(lines[:3])[:600]
    hints = [
        (
            r"Failed to find (the )?data source: kafka",
            "the Kafka connector jars are missing: run 'kconsole jobs fetch' or pass "
            "--packages " + _coordinate_hint(),
        ),
        ("JAVA_GATEWAY_EXITED", "Java could not start (is Java installed? see the log)"),
        ("UnknownTopicOrPartition", "a topic does not exist"),
    ]
    for needle, hint in hints:
        if re.search(needle, text):
            return f"{hint}: {head}"
    return head


def _coordinate_hint() -> str:
    try:
        import pyspark

        return f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark.__version__}"
    except ImportError:
        return "org.apache.spark:spark-sql-kafka-0-10_2.13:<your Spark version>"


def _connector() -> tuple[list[str], str]:
    """(cached jar paths, Maven coordinate): the jars from kconsole's cache when kconsole is
    importable (resolved with Maven on first use), else only the coordinate for Spark to fetch."""
    try:
        from kconsole.cluster import jars
    except ImportError:
        return [], _coordinate_hint()
    inst = jars.pyspark_install()
    return [str(p) for p in jars.ensure_spark_kafka_jars(inst)], jars.spark_kafka_coordinate(inst)


def _kafka_reason(exc: Exception) -> str:
    describe = getattr(exc.args[0] if exc.args else None, "str", None)  # a KafkaError
    return str(describe()) if callable(describe) else str(exc)


def _connects(host_port: str, timeout: float = 3.0) -> bool:
    host, _, port = host_port.strip().rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def _which(name: str) -> str | None:
    import shutil

    return shutil.which(name)


def write_jsonl(directory: str, batch_id: int, rows: list[dict[str, Any]]) -> str:
    """The readable sink: one file per batch, replaced atomically, so a re-run batch (after a
    crash) overwrites its own file instead of adding a second copy."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"batch-{batch_id:09d}.jsonl")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, default=jsonable) + "\n")
    os.replace(tmp, path)
    return path


def jsonable(value: Any) -> Any:
    """JSON for what Spark rows hold besides plain values: timestamps as ISO 8601."""
    iso = getattr(value, "isoformat", None)
    return iso() if callable(iso) else str(value)
