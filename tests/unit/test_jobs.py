"""kconsole.jobs without Spark: progress and failure parsing on recorded real output, the
manager's start / observe / stop on tiny fake job scripts, and the sequence checker's logic
against the drill audit."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import psutil
import pytest

from kconsole.cluster.errors import ToolMissing
from kconsole.cluster.procs import ManagedProcess
from kconsole.commands import Commands, ReadOnlyError
from kconsole.config import Settings
from kconsole.drills.audit import Acked, Consumed, check
from kconsole.jobs import (
    JobError,
    JobProgress,
    JobRun,
    JobState,
    available_jobs,
    extract_error,
    get_job,
    job_client,
    latest_counts,
    parse_line,
    parse_progress_line,
)
from kconsole.jobs.manager import JobManager
from kconsole.jobs.progress import explain_failure
from kconsole.jobs.specs import value_problem
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests" / "fixtures" / "jobs"


def recorded(name: str) -> list[str]:
    return (RECORDED / name).read_text().splitlines()


# --------------------------------------------------------------------------------------------
# Parsing what real runs printed
# --------------------------------------------------------------------------------------------


class TestRecordedProgress:
    """Progress lines recorded from real runs (tests/fixtures/record_jobs.py)."""

    def test_every_progress_line_parses(self) -> None:
        """Each recorded progress line becomes a JobProgress with the job's numbers."""
        lines = [ln for ln in recorded("keyed_counts.jsonl") if '"type": "progress"' in ln]
        assert len(lines) >= 3
        progress = [parse_progress_line(ln) for ln in lines]
        assert all(isinstance(p, JobProgress) for p in progress)
        first = progress[0]
        assert first is not None
        raw = json.loads(lines[0])
        assert first.batch_id == raw["batchId"] == 0
        assert first.input_rows == raw["numInputRows"]
        assert first.processed_rows_per_second == pytest.approx(raw["processedRowsPerSecond"])
        assert first.batch_duration_ms == raw["batchDuration"]
        assert first.duration_ms["triggerExecution"] == raw["durationMs"]["triggerExecution"]
        topic = next(iter(raw["endOffset"]))
        assert first.end_offsets == {(topic, int(p)): o for p, o in raw["endOffset"][topic].items()}
        assert first.offsets_behind == raw["offsetsBehindLatest"]

    def test_offsets_behind_while_capped(self) -> None:
        """With max-offsets-per-trigger the job starts behind: the log end read after each
        batch - its end, per partition; nothing arrives meanwhile, so Spark's at-plan figure
        (its latest offset - end) is the same number."""
        lines = recorded("keyed_counts_measured.jsonl")
        progress = [p for ln in lines if (p := parse_progress_line(ln))]
        behind = [p.offsets_behind for p in progress]
        assert behind[0] and behind[0] > 0
        assert behind[-1] == 0
        for p in progress:
            assert p.behind_at is not None and p.behind_unknown is None
            assert set(p.log_end_offsets) == set(p.end_offsets)
            assert p.offsets_behind == sum(
                p.log_end_offsets[tp] - off for tp, off in p.end_offsets.items()
            )
            assert p.behind_at_plan == sum(
                p.latest_offsets[tp] - off for tp, off in p.end_offsets.items()
            )
            assert p.behind_at_plan == p.offsets_behind
        note = next(
            d for ln in lines if (d := parse_line(ln)) is not None and d["type"] == "checkpoint"
        )
        assert note["status"] == "new"

    def test_other_lines_and_garbage_are_not_progress(self) -> None:
        """State, output and finding lines, and anything that is not a JSON object, give None."""
        for ln in recorded("sequence_checker.jsonl"):
            data = parse_line(ln)
            assert data is not None
            if data["type"] != "progress":
                assert parse_progress_line(ln) is None
        for junk in [
            "",
            "Setting default log level to WARN",
            "{not json",
            '{"type": "progress"',  # cut off
            '{"type": "progress", "batchId": "x"}',
            '{"batchId": 3}',  # no type
            "[1, 2]",
            b"\xff\xfe garbage",
        ]:
            assert parse_progress_line(junk) is None

    def test_findings_recorded(self) -> None:
        """The recorded sequence-checker run found the planted gap, duplicate and late record."""
        found = {
            (d["key"], d["kind"], d["seq"])
            for ln in recorded("sequence_checker.jsonl")
            if (d := parse_line(ln)) and d["type"] == "finding"
        }
        assert found == {
            ("k0", "gap", 3),
            ("k0", "duplicate", 5),
            ("k0", "late", 3),
            ("k0", "order", 3),
        }


class TestRecordedFailures:
    """Failure reasons: the failed state line of real runs, and extract_error on their logs."""

    @pytest.mark.parametrize(
        ("name", "words"),
        [
            ("unreachable", "Kafka is unreachable at 127.0.0.1:1"),
            ("missing_topic", "'no-such-topic' does not exist"),
            ("no_connector", "the Kafka connector jars are missing"),
            ("java_missing", "Java could not start"),
            ("bad_driver_memory", "Java could not start"),  # all the job itself can know
        ],
    )
    def test_failed_state_line_has_the_reason(self, name: str, words: str) -> None:
        states = [d for ln in recorded(f"{name}.jsonl") if (d := parse_line(ln))]
        assert states[-1]["state"] == "failed"
        assert states[-1]["exitCode"] == 1
        assert words in states[-1]["reason"]

    @pytest.mark.parametrize(
        ("name", "words"),
        [
            ("unreachable", "Kafka is unreachable"),
            ("missing_topic", "does not exist"),
            ("no_connector", "Kafka connector jars are missing"),
            ("java_missing", "Java is missing"),
            ("bad_driver_memory", "Spark could not start: spark.driver.memory=1zz is not a valid"),
        ],
    )
    def test_reason_from_the_log_alone(self, name: str, words: str) -> None:
        """Without stdout (a job killed mid-way), the log still says what went wrong."""
        reason = extract_error(recorded(f"{name}.log"))
        assert reason is not None and words in reason, reason

    def test_the_jvm_refusing_its_options_is_the_reason(self) -> None:
        """Issue 26 #18: conf spark.driver.memory=1zz failed as "Java could not start (is Java
        installed? …)" while the log said the JVM refused -Xmx1zz: the job sees only that Java
        exited, so the reason is taken from the log, said as the setting to fix."""
        states = [d for ln in recorded("bad_driver_memory.jsonl") if (d := parse_line(ln))]
        reason = explain_failure(states[-1]["reason"], recorded("bad_driver_memory.log"))
        assert reason == (
            "Spark could not start: spark.driver.memory=1zz is not a valid size (a number with "
            "k, m or g, e.g. 1g; the JVM said: Invalid maximum heap size: -Xmx1zz)"
        )
        # A reason that names its cause is kept; without the JVM's words the job's stands.
        assert explain_failure("the topic is on fire", recorded("bad_driver_memory.log")) == (
            "the topic is on fire"
        )
        java_missing = [d for ln in recorded("java_missing.jsonl") if (d := parse_line(ln))]
        said = java_missing[-1]["reason"]
        assert explain_failure(said, recorded("java_missing.log")) == said
        refused = [
            "Unrecognized VM option 'Bogus'",
            "Error: Could not create the Java Virtual Machine.",
        ]
        assert "spark.driver.extraJavaOptions (the JVM said: Unrecognized VM option 'Bogus')" in (
            explain_failure(None, refused) or ""
        )

    def test_a_run_that_failed_so_shows_the_setting(self, tmp_path: Path) -> None:
        """The same through a JobManager reading the recorded run's files."""
        from tests.ui.jobs_fakes import plant_run

        plant_run(tmp_path, "keyed-counts-1", "bad_driver_memory", job="keyed-counts",
                  started_at=time.time(), topic="t", group_id=None)  # fmt: skip
        (run,) = JobManager(tmp_path, Settings()).runs()
        assert run.state is JobState.FAILED
        assert run.error is not None
        assert run.error.startswith("Spark could not start: spark.driver.memory=1zz is not a")

    def test_python_traceback_and_java_exception(self) -> None:
        log = [
            "26/11/22 03:15:46 WARN ProcessingTimeExecutor: Current batch is falling behind.",
            "Traceback (most recent call last):",
            '  File "/x/jobs/sequence_checker.py", line 206, in sink',
            "TypeError: Job.emit() got multiple values for argument 'kind'",
            "\tat py4j.Protocol.getReturnValue(Protocol.java:476)",
        ]
        assert extract_error(log) == "TypeError: Job.emit() got multiple values for argument 'kind'"
        java = [
            "26/11/22 03:15:46 ERROR MicroBatchExecution: Query x terminated with error",
            "\tat org.apache.spark.Foo(Foo.scala:1)",
        ]
        assert extract_error(java) == java[0]
        assert extract_error(["all fine", "WARN something"]) is None


# --------------------------------------------------------------------------------------------
# The real jobs' specs
# --------------------------------------------------------------------------------------------


def test_available_jobs_come_from_the_scripts() -> None:
    """Both jobs, their options read from the scripts' own parsers (internal ones hidden)."""
    jobs = {j.name: j for j in available_jobs()}
    assert set(jobs) == {"keyed-counts", "sequence-checker"}
    kc = jobs["keyed-counts"]
    assert kc.script == ROOT / "jobs" / "keyed_counts.py"
    assert kc.spark
    names = {o.name for o in kc.options}
    assert {"bootstrap", "topic", "starting-offsets", "trigger", "checkpoint", "master"} <= names
    assert {"group-id", "kafka-option", "window", "watermark", "output-mode"} <= names
    assert not names & {"jars", "stop-with-parent", "help"}
    mode = kc.option("output_mode")
    assert mode is not None and mode.kind == "choice" and mode.choices == ("update", "append")
    assert kc.option("trigger").kind == "float"  # type: ignore[union-attr]
    assert kc.option("kafka-option").kind == "list"  # type: ignore[union-attr]
    assert jobs["sequence-checker"].option("starting-offsets").default == "earliest"  # type: ignore[union-attr]
    assert get_job("sequence_checker").name == "sequence-checker"
    with pytest.raises(JobError, match="no job called 'nope'"):
        get_job("nope")


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("trigger", "", "trigger: a number of seconds, 0 or more (it is empty)"),
        ("trigger", "-1", "trigger: a number of seconds, 0 or more (not '-1')"),
        ("trigger", "nan", "trigger: a number of seconds, 0 or more (not 'nan')"),
        ("trigger", "0", None),
        ("shuffle-partitions", "four", "shuffle-partitions: a whole number (not 'four')"),
        ("max-offsets-per-trigger", "", None),  # empty: none (not given)
        ("max-offsets-per-trigger", "1k", "max-offsets-per-trigger: a whole number, or empty"),
        ("output-mode", "all", "output-mode: one of update, append (not 'all')"),
        ("starting-offsets", "{oops", "starting-offsets: earliest, latest, or Spark's JSON"),
        ("starting-offsets", '{"t": {"0": 5}}', None),
        ("master", "local[x]", "master: local, local[N], local[*], spark://HOST:PORT"),
        ("conf", ["a=1", "b"], "conf: KEY=VALUE (not 'b')"),
        ("window", "ten", "window: a number of seconds (not 'ten')"),
        ("available-now", "whatever", None),
        ("topic", "orders", None),
    ],
)
def test_a_bad_value_is_named_with_its_form(name: str, value: Any, problem: str | None) -> None:
    """Issue 26 #18: the start dialog said "invalid positive_or_zero value: ''"; each option now
    says, by the job's own parser, which field is wrong and what it takes, in words."""
    said = value_problem(get_job("keyed-counts"), name, value)
    assert (said is None) if problem is None else (said or "").startswith(problem), said


def test_the_cli_names_the_form_too(tmp_path: Path) -> None:
    """The manager's refusal (what `kconsole jobs start` prints) says the form after argparse."""
    manager = JobManager(tmp_path, Settings())
    with pytest.raises(JobError) as refused:
        manager.start("keyed-counts", {"trigger": ""})
    assert "(trigger: a number of seconds, 0 or more)" in refused.value.message
    assert manager.runs() == []


def test_job_help_runs_without_spark() -> None:
    """`python jobs/<job>.py --help` works with the stdlib alone (no JVM, nothing started)."""
    for script in ("keyed_counts.py", "sequence_checker.py"):
        out = subprocess.run(
            [sys.executable, str(ROOT / "jobs" / script), "--help"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        assert "--bootstrap" in out.stdout and "--master" in out.stdout


# The job's own loop with the session replaced: building it starts a stand-in for pyspark's
# gateway JVM, which like the real one (PythonGatewayServer) exits when its stdin reaches EOF,
# and then takes as long as a JVM start on a busy machine.
_SLOW_SESSION = """
import signal, subprocess, sys
sys.path.insert(0, {jobs!r})
import _kconsole_jobs as common
from _kconsole_jobs import spark

def build_session(name, master, args):
    gw = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                          stdin=subprocess.PIPE)
    print("gateway", gw.pid, file=sys.stderr, flush=True)
    while True:  # a start that never ends by itself: only the stop's signal ends it
        signal.pause()

spark.build_session = build_session
p = common.parser("keyed_counts", "", topic="t", starting_offsets="latest")
job = common.Job("keyed_counts", p.parse_args(["--checkpoint", "s3://bucket/ck"]))
sys.exit(job.run(lambda job: None))
"""


def test_a_stop_while_spark_starts_ends_the_job_at_once(tmp_path: Path) -> None:
    """SIGTERM while the session is being built: the job says stopped (exit 0) at once instead
    of after the JVM start, and the gateway it started goes too."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_SESSION.format(jobs=str(ROOT / "jobs"))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stderr is not None and proc.stdout is not None
        line = ""
        deadline = time.monotonic() + 60
        while not line.startswith("gateway ") and time.monotonic() < deadline:
            line = proc.stderr.readline()
        assert line.startswith("gateway "), line
        gateway = psutil.Process(int(line.split()[1]))
        asked = time.monotonic()
        proc.terminate()
        assert proc.wait(30) == 0
        assert time.monotonic() - asked < 10  # the session start would never have ended
        states = [d for ln in proc.stdout.read().splitlines() if (d := parse_line(ln))]
        last = [d for d in states if d["type"] == "state"][-1]
        assert last["state"] == "stopped" and last["exitCode"] == 0
        assert last["reason"] == "signal SIGTERM, before Spark started"
        wait_until(lambda: _gone(gateway.pid), 30, "the gateway to exit on its stdin's EOF")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_a_job_gets_the_translated_client_properties() -> None:
    """librdkafka SASL/SSL properties become Spark's Java client properties (without their
    kafka. prefix: the job adds it) and the driver's librdkafka ones
    (kconsole.cluster.security.translate translates; tests/unit/test_security.py checks each
    translation)."""
    client = job_client(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "ops",
            "sasl.password": 'p"w',
            "ssl.ca.location": "/etc/ca.pem",
            "statistics.interval.ms": "100",
        }
    )
    assert client["kafka"] == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            'username="ops" password="p\\"w";'
        ),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/etc/ca.pem",
        "ssl.endpoint.identification.algorithm": "https",
    }
    assert client["admin"]["sasl.password"] == 'p"w'
    assert client["admin"]["ssl.endpoint.identification.algorithm"] == "https"
    assert client["jvm"] == {}
    assert client["untranslated"] == ["statistics.interval.ms"]


def test_latest_counts_last_update_wins() -> None:
    rows = [
        {"window_start": "w0", "key": "a", "count": 1},
        {"window_start": "w0", "key": "a", "count": 3},
        {"window_start": "w1", "key": None, "count": 2},
    ]
    assert latest_counts(rows) == {("w0", "a"): 3, ("w1", None): 2}


# --------------------------------------------------------------------------------------------
# The sequence checker's logic is the drill audit's
# --------------------------------------------------------------------------------------------


def _load(name: str) -> ModuleType:
    sys.path.insert(0, str(ROOT / "jobs"))
    try:
        spec = importlib.util.spec_from_file_location(f"test_{name}", ROOT / "jobs" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(ROOT / "jobs"))


def test_sequence_checker_step_planted() -> None:
    seq = _load("sequence_checker")
    st = seq.new_state()
    found = []
    for off, s in enumerate([0, 1, 2, 4, 5, 5, 6, 3]):
        found += [(f["kind"], f["seq"], f["seq_to"]) for f in seq.step(st, s, 0, off)]
    assert found == [("gap", 3, 3), ("duplicate", 5, None), ("order", 3, None), ("late", 3, None)]
    assert st["missing"] == [] and st["high"] == 6


@pytest.mark.parametrize("seed", range(20))
def test_sequence_checker_agrees_with_the_audit(seed: int) -> None:
    """Random streams with duplicates and reordering: the checker's duplicates and order
    violations are exactly the audit's; its open gaps are the seqs never read."""
    seq = _load("sequence_checker")
    rng = random.Random(seed)
    consumed: list[Consumed] = []
    next_offset = [0, 0]
    for key in ("k0", "k1", "k2"):
        part = rng.randrange(2)
        seqs = [s for s in range(30) if rng.random() > 0.1]  # some lost
        seqs += rng.sample(seqs, 3)  # some duplicated
        for _ in range(3):  # some reordered
            i, j = rng.randrange(len(seqs)), rng.randrange(len(seqs))
            seqs[i], seqs[j] = seqs[j], seqs[i]
        for s in seqs:
            consumed.append(Consumed(key, s, part, next_offset[part]))
            next_offset[part] += 1
    audit = check(
        [Acked(c.key, c.seq, c.partition, c.offset, 0.0, 1.0) for c in consumed],
        [],
        consumed,
        send_times=[0.0, 1.0],
    )
    states: dict[str, Any] = {}
    found: list[dict[str, Any]] = []
    for c in sorted(consumed, key=lambda c: (c.key, c.partition, c.offset)):
        st = states.setdefault(c.key, seq.new_state())
        found += [{**f, "key": c.key} for f in seq.step(st, c.seq, c.partition, c.offset)]
    dup_audit = {(d.key, d.seq) for d in audit.duplicates}
    assert {(f["key"], f["seq"]) for f in found if f["kind"] == "duplicate"} == dup_audit
    order_audit = {(v.key, v.offset, v.seq, v.after_seq) for v in audit.order_violations}
    assert {
        (f["key"], f["offset"], f["seq"], f["after_seq"]) for f in found if f["kind"] == "order"
    } == order_audit
    for key, st in states.items():
        seen = {c.seq for c in consumed if c.key == key}
        missing = {s for lo, hi in st["missing"] for s in range(lo, hi + 1)}
        assert missing == set(range(min(seen), max(seen) + 1)) - seen


# --------------------------------------------------------------------------------------------
# The manager on fake jobs
# --------------------------------------------------------------------------------------------

FAKE = textwrap.dedent(
    '''
    """A fake job for kconsole's unit tests: prints the job protocol, no Spark."""
    import argparse, json, os, signal, sys, threading, time
    sys.path.insert(0, {jobs_dir!r})
    import _kconsole_jobs

    NAME = {name!r}

    def build_parser():
        p = argparse.ArgumentParser()
        p.add_argument("--bootstrap", default="x:1")
        p.add_argument("--topic", default="t")
        p.add_argument("--checkpoint", default="/tmp/fake-ck")
        p.add_argument("--output-dir", default=None)
        p.add_argument("--mode", choices=["run", "fail", "crash", "ignore-term"], default="run")
        p.add_argument("--batches", type=int, default=1000000)
        p.add_argument("--stop-with-parent", type=int, default=None, help=argparse.SUPPRESS)
        {extra}
        return p

    def out(kind, **kw):
        print(json.dumps({{"type": kind, "job": NAME, "ts": time.time(), **kw}}), flush=True)

    def main():
        a = build_parser().parse_args()
        # The client properties, as a real job takes them (its secret file, then removed).
        client_file = os.environ.get("KCONSOLE_JOB_CLIENT_FILE", "")
        mode = oct(os.stat(client_file).st_mode & 0o777) if client_file else None
        a.kafka_option, a.admin_option, a.conf = [], [], []
        from _kconsole_jobs.options import client_from_env
        client_from_env(a)
        if os.environ.get("KCONSOLE_TEST_RECORD_CLIENT"):
            with open("client-seen.json", "w") as f:
                json.dump({{"mode": mode, "kafka": sorted(a.kafka_option),
                           "admin": sorted(a.admin_option), "conf": sorted(a.conf)}}, f)
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        if a.mode == "ignore-term":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if a.stop_with_parent:
            args = (a.stop_with_parent, stop, stop.set)
            threading.Thread(target=_kconsole_jobs.watch_parent, args=args, daemon=True).start()
        out("state", state="starting", pid=os.getpid())
        print("some log line", file=sys.stderr, flush=True)
        if a.mode == "fail":
            out("state", state="failed", exitCode=1, reason="the topic is on fire")
            return 1
        if a.mode == "crash":
            print("not json on stdout", flush=True)
            raise RuntimeError("boom in the driver")
        out("state", state="running")
        b = 0
        while not stop.is_set() and b < a.batches:
            print("garbage between lines", flush=True)
            out("progress", batchId=b, numInputRows=10, inputRowsPerSecond=5.0,
                processedRowsPerSecond=50.0, batchDuration=200, durationMs={{"addBatch": 150}},
                offsetsBehindLatest=3, endOffset={{a.topic: {{"0": b * 10}}}},
                latestOffset={{a.topic: {{"0": b * 10 + 3}}}})
            b += 1
            stop.wait(0.05)
        if b >= a.batches:
            out("state", state="finished", exitCode=0)
            return 0
        out("state", state="stopping")
        out("state", state="stopped", exitCode=0)
        return 0

    if __name__ == "__main__":
        sys.exit(main())
    '''
)


def write_fake(directory: Path, name: str = "fake", extra: str = "") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / f"{name}.py"
    script.write_text(FAKE.format(jobs_dir=str(ROOT / "jobs"), name=name, extra=extra))
    return script


@pytest.fixture
def fake_jobs(tmp_path: Path) -> Path:
    d = tmp_path / "jobs"
    write_fake(d, "fake")
    write_fake(d, "fake_spark", extra='p.add_argument("--jars", default=None)')
    return d


@pytest.fixture
def manager(tmp_path: Path, fake_jobs: Path) -> Iterator[JobManager]:
    m = JobManager(tmp_path / "state", Settings(), jobs_directory=fake_jobs, history=5)
    try:
        yield m
    finally:
        for run in m.runs():
            if run.active:
                m.stop(run.run_id, timeout_s=5)
        assert not [r.run_id for r in m.runs() if r.active]


def _gone(pid: int | None) -> bool:
    if pid is None:
        return True
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


class TestManager:
    """Start, observe and stop fake job processes."""

    def test_start_observe_stop(self, manager: JobManager) -> None:
        run = manager.start("fake", {"topic": "orders"})
        assert run.state in (JobState.STARTING, JobState.RUNNING)
        assert run.pid and psutil.pid_exists(run.pid)
        assert run.checkpoint == manager.checkpoint_dir("fake", "orders")
        assert "--bootstrap" in run.argv and Settings().bootstrap in run.argv
        assert "--stop-with-parent" in run.argv  # attached
        wait_until(lambda: len(manager.get(run.run_id).history) == 5, 20, "five progress lines")
        live = manager.get(run.run_id)
        assert live.state is JobState.RUNNING
        assert live.latest is not None and live.latest.offsets_behind == 3
        assert live.latest.end_offsets == {("orders", 0): live.latest.batch_id * 10}
        assert [p.batch_id for p in live.history] == sorted(p.batch_id for p in live.history)
        stopped = manager.stop(run.run_id, timeout_s=10)
        assert stopped.state is JobState.STOPPED
        assert stopped.exit_code == 0 and stopped.ended_at is not None
        assert _gone(run.pid)
        meta = json.loads((stopped.run_dir / "job.json").read_text())
        assert meta["exit_code"] == 0 and meta["stop_requested_at"]
        assert manager.log_tail(run.run_id, 5)[-1] == "some log line"

    def test_finished_by_itself(self, manager: JobManager) -> None:
        run = manager.start("fake", {"batches": 3})
        wait_until(lambda: not manager.get(run.run_id).active, 20, "the job to finish")
        done = manager.get(run.run_id)
        assert done.state is JobState.FINISHED and done.exit_code == 0
        assert [p.batch_id for p in done.history] == [0, 1, 2]

    def test_failed_with_reason(self, manager: JobManager) -> None:
        run = manager.start("fake", {"mode": "fail"})
        wait_until(lambda: not manager.get(run.run_id).active, 20, "the job to fail")
        failed = manager.get(run.run_id)
        assert failed.state is JobState.FAILED
        assert failed.error == "the topic is on fire" and failed.exit_code == 1

    def test_crash_reason_from_the_log(self, manager: JobManager) -> None:
        run = manager.start("fake", {"mode": "crash"})
        wait_until(lambda: not manager.get(run.run_id).active, 20, "the job to crash")
        crashed = manager.get(run.run_id)
        assert crashed.state is JobState.FAILED and crashed.exit_code == 1
        assert crashed.error == "RuntimeError: boom in the driver"

    def test_not_ended_until_reaped(
        self, manager: JobManager, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A process can look gone (a zombie whose other threads are still exiting) before
        waitpid can reap it and give its exit code: until then the run has not ended, and then
        it ends with its exit code and reason at once (never failed without an exit code)."""
        reaped = threading.Event()
        real = ManagedProcess.exit_code
        monkeypatch.setattr(
            ManagedProcess, "exit_code", lambda self: real(self) if reaped.is_set() else None
        )
        run = manager.start("fake", {"mode": "crash"})
        wait_until(lambda: _gone(run.pid), 20, "the job's process to exit")
        seen = manager.get(run.run_id)
        assert seen.active and seen.exit_code is None and seen.error is None
        reaped.set()
        # waitpid itself can still say "not yet" while the zombie's last threads exit (a busy
        # machine shows it): every reading until the end is still active, with no exit code
        seen_states = []

        def ended_run() -> JobRun | None:
            now = manager.get(run.run_id)
            seen_states.append((now.active, now.exit_code))
            return None if now.active else now

        ended = wait_until(ended_run, 20, "the run's end")
        assert all(code is None for active, code in seen_states if active)
        assert ended.state is JobState.FAILED and ended.exit_code == 1
        assert ended.error == "RuntimeError: boom in the driver"

    def test_the_end_is_recorded_whole(
        self, manager: JobManager, tmp_path: Path, fake_jobs: Path
    ) -> None:
        """The manager that reaps a run writes its state, exit code, reason and end time to
        job.json in one atomic write; another manager (the CLI) shows exactly that."""
        run = manager.start("fake", {"mode": "crash"})
        wait_until(lambda: not manager.get(run.run_id).active, 20, "the job to crash")
        crashed = manager.get(run.run_id)
        meta = json.loads((run.run_dir / "job.json").read_text())
        assert meta["state"] == "failed" and meta["exit_code"] == 1
        assert meta["error"] == crashed.error == "RuntimeError: boom in the driver"
        assert meta["ended_at"] == crashed.ended_at
        assert not list(run.run_dir.glob("*.tmp"))
        other = JobManager(tmp_path / "state", Settings(), jobs_directory=fake_jobs).get(run.run_id)
        assert (other.state, other.exit_code, other.error, other.ended_at) == (
            crashed.state,
            crashed.exit_code,
            crashed.error,
            crashed.ended_at,
        )

    def test_sigkill_after_the_timeout(self, manager: JobManager) -> None:
        run = manager.start("fake", {"mode": "ignore-term"})
        wait_until(lambda: manager.get(run.run_id).state is JobState.RUNNING, 20, "running")
        t0 = time.monotonic()
        stopped = manager.stop(run.run_id, timeout_s=1.0)
        assert time.monotonic() - t0 < 10
        assert stopped.state is JobState.STOPPED and _gone(run.pid)
        assert json.loads((stopped.run_dir / "job.json").read_text())["killed"] is True

    def test_stop_attached_leaves_detached_running(self, manager: JobManager) -> None:
        attached = manager.start("fake", {"topic": "a"})
        detached = manager.start("fake", {"topic": "b"}, detached=True)
        assert "--stop-with-parent" not in detached.argv
        stopped = manager.stop_attached(timeout_s=10)
        assert [r.run_id for r in stopped] == [attached.run_id]
        assert manager.get(attached.run_id).state is JobState.STOPPED
        assert manager.get(detached.run_id).active
        assert manager.stop(detached.run_id).state is JobState.STOPPED

    def test_another_manager_sees_and_stops_a_detached_run(
        self, manager: JobManager, tmp_path: Path, fake_jobs: Path
    ) -> None:
        """The CLI is another process: it finds runs from the state dir and stops them."""
        run = manager.start("fake", {}, detached=True)
        other = JobManager(tmp_path / "state", Settings(), jobs_directory=fake_jobs)
        wait_until(lambda: other.get(run.run_id[:20]).state is JobState.RUNNING, 20, "running")
        stopped = other.stop(run.run_id, timeout_s=10)
        assert stopped.state is JobState.STOPPED and stopped.exit_code == 0  # from its last line
        # The other manager returns once the process has exited; the one that started it ends
        # the run when it has reaped it (its reaping thread may not have run yet on a busy
        # machine: a zombie for some ms). Until then it says stopping, with no exit code.
        seen: list[tuple[JobState, int | None]] = []

        def owner_ended() -> JobRun | None:
            now = manager.get(run.run_id)
            seen.append((now.state, now.exit_code))
            return None if now.active else now

        ended = wait_until(owner_ended, 10, "the starting manager to reap the run")
        assert all(s == (JobState.STOPPING, None) for s in seen[:-1]), seen
        assert ended.state is JobState.STOPPED and ended.exit_code == 0

    def test_attached_job_stops_when_its_parent_dies(self, tmp_path: Path, fake_jobs: Path) -> None:
        """A console that is killed cannot stop its jobs: they notice and stop themselves."""
        code = (
            "import sys; from pathlib import Path; from kconsole.jobs.manager import JobManager;"
            "from kconsole.config import Settings;"
            f"m = JobManager(Path({str(tmp_path / 'state')!r}), Settings(),"
            f" jobs_directory=Path({str(fake_jobs)!r}));"
            "print(m.start('fake', {}).run_id, flush=True)"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
        )
        run_id = out.stdout.strip()
        assert run_id, out.stderr
        m = JobManager(tmp_path / "state", Settings(), jobs_directory=fake_jobs)
        wait_until(lambda: not m.get(run_id).active, 20, "the orphaned job to stop itself")
        assert m.get(run_id).state is JobState.STOPPED

    def test_recycled_pid_is_never_signalled(self, manager: JobManager) -> None:
        """A run whose pid now belongs to another process is not active, and stop leaves that
        process alone."""
        run = manager.start("fake", {"batches": 2})
        wait_until(lambda: not manager.get(run.run_id).active, 20, "the job to finish")
        victim = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])
        try:
            other = JobManager(manager.state_dir.parent, Settings())
            (run.run_dir / "pid").write_text(
                json.dumps({"pid": victim.pid, "create_time": time.time() - 1000})
            )
            meta = json.loads((run.run_dir / "job.json").read_text())
            for recorded_end in ("state", "exit_code", "error", "ended_at"):
                meta.pop(recorded_end, None)
            (run.run_dir / "job.json").write_text(json.dumps({**meta, "pid": victim.pid}))
            seen = other.get(run.run_id)
            assert not seen.active
            other.stop(run.run_id, timeout_s=1)
            assert victim.poll() is None
        finally:
            victim.kill()
            victim.wait()

    def test_bad_options_start_nothing(self, manager: JobManager) -> None:
        for options, match in [
            ({"mode": "explode"}, "bad option for fake: argument --mode: invalid choice"),
            ({"batches": "many"}, "bad option for fake: argument --batches"),
            ({"nope": "1"}, "fake has no option 'nope'"),
            ({"stop-with-parent": "1"}, "fake has no option"),
        ]:
            with pytest.raises(JobError, match=match):
                manager.start("fake", options)
        with pytest.raises(JobError, match="no job called"):
            manager.start("missing-job")
        assert manager.runs() == []

    def test_checkpoint_in_use_is_refused(self, manager: JobManager, tmp_path: Path) -> None:
        ck = str(tmp_path / "ck")
        manager.start("fake", {"checkpoint": ck})
        with pytest.raises(JobError, match="is running with checkpoint"):
            manager.start("fake", {"checkpoint": ck})

    def test_missing_java_refuses_a_spark_job(
        self, manager: JobManager, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        monkeypatch.setenv("PATH", str(tmp_path / "empty"))
        monkeypatch.delenv("JAVA_HOME", raising=False)
        with pytest.raises(ToolMissing, match="Java is needed"):
            manager.start("fake-spark")
        assert manager.runs() == []

    def test_read_only_refuses_start_and_stop(self, manager: JobManager) -> None:
        run = manager.start("fake", {})
        ro = Commands(None, read_only=True, jobs=manager)
        with pytest.raises(ReadOnlyError, match="refusing to start job fake"):
            ro.start_job("fake", {})
        with pytest.raises(ReadOnlyError, match=f"refusing to stop job run {run.run_id}"):
            ro.stop_job(run.run_id)
        assert manager.get(run.run_id).active  # still running: refused before anything
        assert len(manager.runs()) == 1
        assert Commands(None, jobs=manager).stop_job(run.run_id).state is JobState.STOPPED

    def test_client_properties_stay_off_the_command_line(
        self, tmp_path: Path, fake_jobs: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("KCONSOLE_TEST_RECORD_CLIENT", "1")
        settings = Settings(
            client={
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.username": "u",
                "sasl.password": "hunter2",
            }
        )
        m = JobManager(tmp_path / "state", settings, jobs_directory=fake_jobs)
        run = m.start("fake", {})
        try:
            wait_until(lambda: m.get(run.run_id).state is JobState.RUNNING, 20, "running")
            assert "hunter2" not in " ".join(psutil.Process(run.pid).cmdline())
            assert "hunter2" not in (run.run_dir / "job.json").read_text()
            env = psutil.Process(run.pid).environ()
            assert "hunter2" not in json.dumps(env)
            # The job read its secret file (only the user could) and removed it.
            read = json.loads((run.run_dir / "client-seen.json").read_text())
            assert read["admin"] == [
                ["sasl.mechanism", "PLAIN"],
                ["sasl.password", "hunter2"],
                ["sasl.username", "u"],
                ["security.protocol", "SASL_PLAINTEXT"],
            ]
            assert 'password="hunter2"' in dict(read["kafka"])["sasl.jaas.config"]
            assert read["mode"] == "0o600"
            assert not (run.run_dir / "client.json").exists()
        finally:
            m.stop(run.run_id)
        assert os.environ.get("KCONSOLE_JOB_CLIENT_FILE") is None


def test_cli_start_status_logs_stop(
    tmp_path: Path, fake_jobs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kconsole jobs ...` end to end on a fake job: detached start, status, logs, stop."""
    from click.testing import CliRunner

    from kconsole.cli import main

    monkeypatch.setenv("KCONSOLE_JOBS_DIR", str(fake_jobs))
    state = str(tmp_path / "state")
    cli = CliRunner()

    def kc(*args: str) -> str:
        res = cli.invoke(main, ["jobs", "--state-dir", state, *args], catch_exceptions=False)
        assert res.exit_code == 0, res.output
        return res.output

    assert "fake" in kc("list")
    out = kc("start", "fake", "-o", "topic=orders")
    run_id = out.split()[1]
    assert f"kconsole jobs stop {run_id}" in out
    m = JobManager(tmp_path / "state", Settings(), jobs_directory=fake_jobs)
    try:
        wait_until(lambda: m.get(run_id).latest is not None, 20, "progress")
        status = json.loads(kc("status", "--json"))
        assert status[0]["run_id"] == run_id and status[0]["state"] == "running"
        assert status[0]["detached"] is True and status[0]["topic"] == "orders"
        assert "some log line" in kc("logs", run_id)
        assert f"{run_id}: stopped (exit 0)" in kc("stop", run_id)
    finally:
        m.stop(run_id, timeout_s=5)
    assert "stopped" in kc("status")
    res = cli.invoke(main, ["--read-only", "jobs", "--state-dir", state, "start", "fake"])
    assert res.exit_code == 4 and "read-only mode" in res.output
    res = cli.invoke(main, ["jobs", "--state-dir", state, "start", "fake", "-o", "mode=x"])
    assert res.exit_code == 1 and "bad option for fake" in res.output


# --------------------------------------------------------------------------------------------
# A run's commits are its own (issue 35, item 16)
# --------------------------------------------------------------------------------------------


def test_a_run_knows_what_it_committed_and_only_that(tmp_path: Path) -> None:
    """The job's "commit" lines give the run the offsets it committed to its group; a run
    that printed none committed nothing (None, not the group's offsets)."""
    from kconsole.jobs.runs import RunRecord

    def record(lines: list[dict[str, Any]]) -> Any:
        run_dir = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
        run_dir.mkdir()
        (run_dir / "progress.jsonl").write_text("".join(json.dumps(d) + "\n" for d in lines))
        rec = RunRecord(run_dir, {"run_id": "r1", "job": "kc", "group_id": "g"}, 10)
        rec.read_new()
        return rec.snapshot(rec.decide(alive=False, exit_code=1))

    failed = record([{"type": "state", "state": "failed", "reason": "refused", "ts": 1.0}])
    assert failed.committed is None and failed.committed_at is None
    ran = record([
        {"type": "commit", "group": "g", "offsets": {"t": {"0": 10, "1": 7}}, "ts": 5.0},
        {"type": "commit", "group": "g", "offsets": {"t": {"0": 12, "1": 9}}, "ts": 6.0},
        {"type": "commit", "group": "g", "offsets": "garbage", "ts": 7.0},
    ])  # fmt: skip
    assert ran.committed == {("t", 0): 12, ("t", 1): 9} and ran.committed_at == 6.0


def test_the_committer_reports_only_acknowledged_commits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The job prints a "commit" line for a commit the group took, none for one it refused."""
    import argparse

    sys.path.insert(0, str(ROOT / "jobs"))
    try:
        from _kconsole_jobs import committer as committer_mod
    finally:
        sys.path.remove(str(ROOT / "jobs"))

    class FakeConsumer:
        def __init__(self, conf: dict[str, Any]) -> None:
            self.fail = False

        def commit(self, offsets: Any, asynchronous: bool) -> None:
            if self.fail:
                raise committer_mod.KafkaException("COORDINATOR_NOT_AVAILABLE")

        def close(self) -> None:
            pass

    monkeypatch.setattr(committer_mod, "Consumer", FakeConsumer)
    told: list[dict[tuple[str, int], int]] = []
    warned: list[str] = []
    args = argparse.Namespace(bootstrap="b:1", group_id="g", admin_option=[])
    c = committer_mod.Committer(args, warned.append, told.append)
    c.start()
    c.offer({("t", 0): 5})
    wait_until(lambda: told == [{("t", 0): 5}], 5, "the first commit reported")
    c._consumer.fail = True
    c.offer({("t", 0): 9})
    wait_until(lambda: bool(warned), 5, "the refused commit warned")
    c.close(timeout=5)
    assert told == [{("t", 0): 5}]
    assert "could not commit offsets to group g" in warned[0]
