"""The job's checkpoint check without Spark or Kafka: a real Spark checkpoint's layout (recorded
from a keyed-counts run, tests/fixtures/jobs/checkpoint), kconsole's record beside it, and what a
start does with it: new, resuming (with its offsets and any out of the log's range), refused
(another cluster, another topic incarnation, no record) and fresh (moved aside, not deleted)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kconsole.jobs import parse_checkpoint_line, parse_line, parse_progress_line
from kconsole.jobs.runs import RunRecord

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "jobs"))

import _kconsole_jobs as common  # noqa: E402
from _kconsole_jobs import checkpoint  # noqa: E402
from _kconsole_jobs.checkpoint import Identity  # noqa: E402

RECORDED = ROOT / "tests" / "fixtures" / "jobs" / "checkpoint"
TOPIC = "measure-488c68"  # the topic of the recorded run
# offsets/3 was planned but not committed: a restart re-runs batch 3 from batch 2's end.
RESUME = {TOPIC: {"0": 6228, "1": 8008, "2": 6669, "3": 1335}}
HERE = Identity("cluster-A", {TOPIC: "topic-id-1"})


@pytest.fixture
def ck(tmp_path: Path) -> str:
    """A copy of the recorded checkpoint (the test may move it)."""
    dest = tmp_path / "checkpoints" / f"keyed-counts--{TOPIC}"
    shutil.copytree(RECORDED, dest)
    return str(dest)


class TestSparkLayout:
    """Reading Spark's own checkpoint files."""

    def test_resume_point_is_the_newest_committed_batch(self, ck: str) -> None:
        """The offsets a restart reads from are those of the newest batch with a commit."""
        assert checkpoint.resume_point(ck) == (2, RESUME)
        assert checkpoint.has_progress(ck)

    def test_no_committed_batch_resumes_from_the_initial_offsets(self, ck: str) -> None:
        """Without commits, the first batch is re-run from the source's initial offsets."""
        shutil.rmtree(os.path.join(ck, "commits"))
        batch, offsets = checkpoint.resume_point(ck)
        assert batch is None
        assert offsets == {TOPIC: {"0": 2486, "1": 3190, "2": 2656, "3": 531}}

    def test_missing_or_empty_checkpoint_has_no_progress(self, tmp_path: Path) -> None:
        """Nothing to resume: a missing directory, or one with only Spark's metadata file."""
        assert not checkpoint.has_progress(str(tmp_path / "none"))
        (tmp_path / "empty" / "offsets").mkdir(parents=True)
        (tmp_path / "empty" / "metadata").write_text('{"id":"x"}')
        assert not checkpoint.has_progress(str(tmp_path / "empty"))


class TestIdentity:
    """The record beside the checkpoint against the cluster of this start."""

    def test_same_cluster_and_topic_match(self, ck: str) -> None:
        checkpoint.write_record(ck, HERE, "keyed_counts", "b:1")
        assert Path(ck + ".kconsole.json").is_file()
        assert checkpoint.mismatch(checkpoint.read_record(ck), HERE, [TOPIC]) is None

    def test_another_cluster(self, ck: str) -> None:
        checkpoint.write_record(ck, Identity("cluster-B", {TOPIC: "topic-id-1"}), "kc", "old:1")
        why = checkpoint.mismatch(checkpoint.read_record(ck), HERE, [TOPIC])
        assert why is not None and "cluster cluster-B" in why and "cluster cluster-A" in why

    def test_recreated_topic(self, ck: str) -> None:
        checkpoint.write_record(ck, Identity("cluster-A", {TOPIC: "topic-id-0"}), "kc", "b:1")
        why = checkpoint.mismatch(checkpoint.read_record(ck), HERE, [TOPIC])
        assert why is not None and "topic-id-0" in why and "topic-id-1" in why
        assert "created again" in why

    def test_no_record(self, ck: str) -> None:
        why = checkpoint.mismatch(checkpoint.read_record(ck), HERE, [TOPIC])
        assert why is not None and "no record beside it" in why

    def test_offsets_outside_the_log_are_named(self) -> None:
        """Beyond the end (truncated) and below the start (deleted) each get a sentence."""
        found = checkpoint.out_of_range(
            {"t": {"0": 50, "1": 5, "2": 7}},
            {("t", 0): (0, 40), ("t", 1): (10, 20), ("t", 2): (0, 9)},
        )
        assert len(found) == 2
        assert "t/0" in found[0] and "beyond the log end 40" in found[0]
        assert "t/1" in found[1] and "below the log start 10" in found[1]


# --------------------------------------------------------------------------------------------
# What a start does (Job.check_checkpoint with the Kafka side faked as the real one answers)
# --------------------------------------------------------------------------------------------


class FakePreflight:
    """Answers as Preflight does against a cluster with this identity and these log ranges."""

    def __init__(self, identity: Identity, ranges: dict[tuple[str, int], tuple[int, int]]):
        self._identity = identity
        self._ranges = ranges

    def identity(self, topics: list[str]) -> Identity:
        return Identity(
            self._identity.cluster_id, {t: self._identity.topic_ids.get(t) for t in topics}
        )

    def log_ranges(self, topics: list[str]) -> dict[tuple[str, int], tuple[int, int]]:
        return {tp: r for tp, r in self._ranges.items() if tp[0] in topics}


def _job(
    ck: str,
    *,
    fresh: bool = False,
    identity: Identity = HERE,
    ranges: dict[tuple[str, int], tuple[int, int]] | None = None,
) -> common.Job:
    parser = common.parser("keyed_counts", "", topic=TOPIC, starting_offsets="latest")
    args = parser.parse_args(["--checkpoint", ck, "--bootstrap", "b:1"])
    args.fresh_checkpoint = fresh
    job = common.Job("keyed_counts", args)
    job._preflight = FakePreflight(  # type: ignore[assignment]
        identity, ranges if ranges is not None else {(TOPIC, p): (0, 10_000) for p in range(4)}
    )
    return job


def _lines(capfd: Any, kind: str) -> list[dict[str, Any]]:
    out = capfd.readouterr().out.splitlines()
    return [d for ln in out if (d := parse_line(ln)) and d["type"] == kind]


class TestStart:
    """Job.check_checkpoint: the checkpoint line it prints and what it does on disk."""

    def test_new_checkpoint_is_recorded(self, tmp_path: Path, capfd: Any) -> None:
        ck = str(tmp_path / "ck")
        _job(ck).check_checkpoint()
        (line,) = _lines(capfd, "checkpoint")
        assert line["status"] == "new" and "starting-offsets latest" in line["message"]
        assert checkpoint.read_record(ck) == {**checkpoint.read_record(ck), **HERE.as_json()}  # type: ignore[dict-item]

    def test_valid_checkpoint_resumes_with_its_offsets(self, ck: str, capfd: Any) -> None:
        checkpoint.write_record(ck, HERE, "keyed_counts", "b:1")
        _job(ck).check_checkpoint()
        (line,) = _lines(capfd, "checkpoint")
        note = parse_checkpoint_line(line)
        assert note is not None and note.status == "resuming"
        assert note.message.startswith("resuming from checkpoint: offsets {")
        assert '"3": 1335' in note.message and "after batch 2" in note.message
        assert note.offsets == {(TOPIC, int(p)): o for p, o in RESUME[TOPIC].items()}
        assert note.batch == 2 and note.out_of_range == ()

    def test_truncated_log_is_named_when_resuming(self, ck: str, capfd: Any) -> None:
        checkpoint.write_record(ck, HERE, "keyed_counts", "b:1")
        ranges = {
            (TOPIC, 0): (0, 100),
            (TOPIC, 1): (0, 9000),
            (TOPIC, 2): (6700, 9000),
            (TOPIC, 3): (0, 2000),
        }
        _job(ck, ranges=ranges).check_checkpoint()
        out = capfd.readouterr().out.splitlines()
        note = parse_checkpoint_line(
            next(d for ln in out if (d := parse_line(ln)) and d["type"] == "checkpoint")
        )
        assert note is not None and note.status == "resuming"
        assert len(note.out_of_range) == 2
        assert "/0: checkpoint offset 6,228 is beyond the log end 100" in note.out_of_range[0]
        assert "/2: checkpoint offset 6,669 is below the log start 6,700" in note.out_of_range[1]
        assert "Spark will stop on it" in note.message
        warnings = [d["message"] for ln in out if (d := parse_line(ln)) and d["type"] == "warning"]
        assert len(warnings) == 2

    @pytest.mark.parametrize(
        ("recorded", "words"),
        [
            (Identity("cluster-B", {TOPIC: "topic-id-1"}), "this is cluster cluster-A"),
            (Identity("cluster-A", {TOPIC: "topic-id-0"}), "deleted and created again"),
            (None, "no record beside it"),
        ],
    )
    def test_foreign_checkpoint_is_refused_with_the_way_out(
        self, ck: str, capfd: Any, recorded: Identity | None, words: str
    ) -> None:
        if recorded is not None:
            checkpoint.write_record(ck, recorded, "keyed_counts", "old:1")
        before = sorted(p.name for p in Path(ck).rglob("*"))
        with pytest.raises(common.JobFailure) as info:
            _job(ck).check_checkpoint()
        reason = str(info.value)
        assert words in reason and "--fresh-checkpoint" in reason and ck in reason
        (line,) = _lines(capfd, "checkpoint")
        assert line["status"] == "refused" and line["message"] == reason
        assert sorted(p.name for p in Path(ck).rglob("*")) == before  # nothing touched

    def test_fresh_moves_it_aside_and_starts_anew(self, ck: str, capfd: Any) -> None:
        checkpoint.write_record(ck, Identity("cluster-B", {}), "keyed_counts", "old:1")
        _job(ck, fresh=True).check_checkpoint()
        (line,) = _lines(capfd, "checkpoint")
        note = parse_checkpoint_line(line)
        assert note is not None and note.status == "fresh" and note.moved_to
        assert note.moved_to in note.message
        assert checkpoint.resume_point(note.moved_to) == (2, RESUME)  # kept whole
        old = checkpoint.read_record(note.moved_to)
        assert old is not None and old["cluster_id"] == "cluster-B"
        assert not os.path.exists(ck)  # Spark starts a new one
        new = checkpoint.read_record(ck)
        assert new is not None and new["cluster_id"] == "cluster-A"
        assert new["topic_ids"] == {TOPIC: "topic-id-1"}


def test_run_record_keeps_the_checkpoint_note(tmp_path: Path) -> None:
    """The console and CLI see the job's checkpoint line on the run."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    line = {
        "type": "checkpoint",
        "status": "resuming",
        "message": "resuming from checkpoint: offsets {}",
        "offsets": RESUME,
        "batch": 2,
    }
    (run_dir / "progress.jsonl").write_text(json.dumps(line) + "\n")
    rec = RunRecord(run_dir, {"run_id": "r1", "job": "kc"}, 10)
    rec.read_new()
    assert rec.checkpoint_note is not None and rec.checkpoint_note.batch == 2
    assert rec.checkpoint_note.offsets[(TOPIC, 3)] == 1335


def test_progress_line_behind_fields() -> None:
    """A progress line's measured behind, its time and log ends, and Spark's at-plan figure;
    unknown stays None with its reason."""
    base = {"type": "progress", "ts": 5.0, "batchId": 3, "endOffset": {"t": {"0": 10}}}
    known = parse_progress_line(json.dumps({
        **base, "offsetsBehindLatest": 7, "behindAt": 4.5, "logEndOffset": {"t": {"0": 17}},
        "offsetsBehindAtPlan": 0,
    }))  # fmt: skip
    assert known is not None and known.offsets_behind == 7 and known.behind_at == 4.5
    assert known.log_end_offsets == {("t", 0): 17} and known.behind_at_plan == 0
    unknown = parse_progress_line(json.dumps({
        **base, "offsetsBehindLatest": None, "behindUnknown": "log end not read (t/0: timed out)",
    }))  # fmt: skip
    assert unknown is not None and unknown.offsets_behind is None
    assert unknown.behind_unknown == "log end not read (t/0: timed out)"


def test_jobs_screen_summary_shows_the_checkpoint_note(tmp_path: Path) -> None:
    """The selected run's summary on the jobs screen carries the job's checkpoint line."""
    from kconsole.jobs import CheckpointNote, JobRun, JobState
    from kconsole.ui.screens.jobs import run_summary

    note = CheckpointNote("resuming", 'resuming from checkpoint: offsets {"t": {"0": 5}}', "/x")
    run = JobRun(
        run_id="kc-1", job="keyed-counts", options={}, argv=(), pid=None, started_at=1.0,
        state=JobState.RUNNING, detached=False, run_dir=tmp_path, log_path=tmp_path / "job.log",
        progress_path=tmp_path / "p", output_dir=None, checkpoint=Path("/x"), topic="t",
        group_id=None, checkpoint_note=note,
    )  # fmt: skip
    text = run_summary(run, None, 2.0).plain
    assert f"checkpoint: {note.message}" in text.splitlines()
    # Refused: the reason (with the way out) is the run's failure reason, shown once, below.
    refused = dataclasses.replace(
        run,
        state=JobState.FAILED,
        error="checkpoint /x not resumed: ... --fresh-checkpoint ...",
        checkpoint_note=CheckpointNote("refused", "checkpoint /x not resumed: ...", "/x"),
    )
    lines = run_summary(refused, None, 2.0).plain.splitlines()
    assert "checkpoint: not resumed (why and the way out: below)" in lines


def test_without_confluent_kafka_the_checkpoint_is_resumed_unverified(ck: str) -> None:
    """Plain spark-submit without confluent_kafka: the package imports, and a checkpoint is
    resumed with its offsets, saying it was not checked against the cluster."""
    code = f"""
import sys
sys.modules["confluent_kafka"] = None  # import fails as when it is not installed
sys.path.insert(0, {str(ROOT / "jobs")!r})
import _kconsole_jobs as common
assert not common.HAVE_CONFLUENT_KAFKA
p = common.parser("keyed_counts", "", topic={TOPIC!r}, starting_offsets="latest")
job = common.Job("keyed_counts", p.parse_args(["--checkpoint", {ck!r}]))
job.check_checkpoint()
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    (line,) = [d for ln in out.splitlines() if (d := parse_line(ln)) and d["type"] == "checkpoint"]
    assert line["status"] == "unverified"
    assert line["message"].startswith("resuming from checkpoint: offsets {")
    assert "not checked against the cluster" in line["message"]


# --------------------------------------------------------------------------------------------
# A refused run changes nothing on the cluster (issue 35, item 15)
# --------------------------------------------------------------------------------------------


class _Done:
    """A confluent_kafka future that has its answer."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self, timeout: float | None = None) -> Any:
        return self.value


class RecordingAdmin:
    """confluent_kafka's AdminClient as the job's preflight uses it, against cluster-A with
    the input topic (4 partitions, 3 brokers) and no output topic: every call is recorded, so a
    test can say what a run did to the cluster."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[str, ...]]] = []
        self.topics = {TOPIC: 4}

    def list_topics(self, timeout: float | None = None) -> Any:
        from types import SimpleNamespace as NS

        self.calls.append(("list_topics", ()))
        parts = {
            t: NS(partitions=dict.fromkeys(range(n)), error=None) for t, n in self.topics.items()
        }
        return NS(cluster_id="cluster-A", brokers=dict.fromkeys((1, 2, 3)), topics=parts)

    def describe_topics(self, topics: Any, request_timeout: float | None = None) -> Any:
        from types import SimpleNamespace as NS

        names = tuple(topics.topic_names)
        self.calls.append(("describe_topics", names))
        return {t: _Done(NS(topic_id=HERE.topic_ids.get(t, f"id-of-{t}"))) for t in names}

    def create_topics(self, new: list[Any], request_timeout: float | None = None) -> Any:
        names = tuple(t.topic for t in new)
        self.calls.append(("create_topics", names))
        self.topics.update(dict.fromkeys(names, 4))
        return {t: _Done(None) for t in names}


def _keyed_counts_run(ck: str, admin: RecordingAdmin, capfd: Any) -> tuple[int, str, str]:
    """keyed_counts' own check and Job.run up to Spark (not started here): its exit code,
    stdout and stderr."""
    import importlib.util
    import signal

    spec = importlib.util.spec_from_file_location(
        "kc_under_test", ROOT / "jobs" / "keyed_counts.py"
    )
    assert spec is not None and spec.loader is not None
    kc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kc)
    args = kc.build_parser().parse_args(
        ["--checkpoint", ck, "--bootstrap", "kafka.invalid:9092", "--topic", TOPIC]
    )
    job = common.Job(kc.NAME, args)
    job._preflight._admin = admin

    def no_spark() -> None:
        raise common.JobFailure("Spark is not started in this test")

    job.session = no_spark  # type: ignore[method-assign]
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        code = job.run(kc.start, kc.check)
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
    out = capfd.readouterr()
    return code, out.out, out.err


def test_a_run_refused_over_its_checkpoint_creates_no_topic(ck: str, capfd: Any) -> None:
    """The recorded checkpoint has no record beside it: refused, and the output topic that a
    run would create is not created (it used to be, before the refusal)."""
    admin = RecordingAdmin()
    code, out, err = _keyed_counts_run(ck, admin, capfd)
    assert code == 1
    lines = [d for ln in out.splitlines() if (d := parse_line(ln))]
    assert [d["status"] for d in lines if d["type"] == "checkpoint"] == ["refused"]
    assert lines[-1]["state"] == "failed" and "not resumed" in lines[-1]["reason"]
    assert [c for c in admin.calls if c[0] == "create_topics"] == []
    assert "test-topic-counts" not in admin.topics
    assert "created output topic" not in err


def test_an_accepted_run_creates_its_output_topic_after_the_check(
    tmp_path: Path, capfd: Any
) -> None:
    """A new checkpoint is accepted: the output topic is created then, after the checkpoint
    was checked (its identity read), not before."""
    admin = RecordingAdmin()
    code, out, err = _keyed_counts_run(str(tmp_path / "ck"), admin, capfd)
    assert code == 1  # Spark is not started here
    kinds = [c[0] for c in admin.calls]
    assert kinds.index("create_topics") > kinds.index("describe_topics")
    assert ("create_topics", ("test-topic-counts",)) in admin.calls
    assert "created output topic test-topic-counts (4 partitions, replication 3)" in err
    lines = [d for ln in out.splitlines() if (d := parse_line(ln))]
    assert [d["status"] for d in lines if d["type"] == "checkpoint"] == ["new"]
