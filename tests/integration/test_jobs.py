"""The PySpark jobs against the real cluster and real Spark (local[2]), started the way the
console starts them: through JobManager, as background processes."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil
import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from kconsole.cluster.local.cluster import LocalCluster
from kconsole.jobs import JobProgress, JobState, latest_counts, parse_progress_line
from kconsole.jobs.manager import JobManager
from kconsole.observer import ClusterObserver
from tests.integration.jobs_support import (
    SMALL_SPARK,
    describe,
    job_manager,
    new_topic,
    produce,
    read_topic,
    settings_for,
    workload_record,
)
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.fixture(scope="module")
def manager(
    cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[JobManager]:
    with job_manager(tmp_path_factory.mktemp("jobs-state"), settings_for(cluster)) as m:
        yield m


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


# --------------------------------------------------------------------------------------------
# Keyed counts: one run serves every test of the class
# --------------------------------------------------------------------------------------------

PER_WINDOW = {0: {"a": 25, "b": 15, "c": 5}, 1: {"a": 10, "c": 20}}
TOTAL = sum(n for w in PER_WINDOW.values() for n in w.values())


@pytest.fixture(scope="class")
def keyed(cluster: LocalCluster, manager: JobManager) -> dict[str, Any]:
    """A known set of keyed records in two 10 s windows (event time two minutes ago), then the
    keyed-counts job from the earliest offset, at most 20 records a batch so it starts behind.
    While it catches up, the console's view of its consumer group is compared with its
    progress (the comparison is checked by a test below)."""
    topic = new_topic(cluster, "kc")
    base = (int(time.time() * 1000) // 10_000) * 10_000 - 120_000
    records = []
    for w, counts in PER_WINDOW.items():
        i = 0
        for key, n in counts.items():
            for _ in range(n):
                records.append((key, b"x", base + w * 10_000 + (i % 100) * 90))
                i += 1
    records.sort(key=lambda r: r[2])  # in event-time order, as a live producer would send
    assert produce(cluster, topic, records) == TOTAL
    expected = {
        (_iso(base + w * 10_000), key): n
        for w, counts in PER_WINDOW.items()
        for key, n in counts.items()
    }
    group = f"kconsole-job-test-{topic}"
    run = manager.start(
        "keyed-counts",
        {
            **SMALL_SPARK,
            "topic": topic,
            "starting-offsets": "earliest",
            "output-topic": f"{topic}-counts",
            "group-id": group,
            "max-offsets-per-trigger": "20",
            "window": "10",
            "watermark": "30",
        },
    )
    observations = _observe_group_until_caught_up(cluster, manager, run.run_id, topic, group)
    return {
        "run_id": run.run_id,
        "topic": topic,
        "expected": expected,
        "group": group,
        "observations": observations,
    }


def _observe_group_until_caught_up(
    cluster: LocalCluster, manager: JobManager, run_id: str, topic: str, group: str
) -> list[tuple[int | None, int | None]]:
    """(group lag in the console's snapshot, offsets behind of the progress whose end offsets
    are what the group has committed), each time they could be matched."""
    observer = ClusterObserver(settings_for(cluster))
    seen: list[tuple[int | None, int | None]] = []
    # The JVM and the session first (minutes on a busy machine), then the batches.
    wait_until(
        lambda: manager.get(run_id).state is not JobState.STARTING, 300, "the query to start"
    )
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        run = manager.get(run_id)
        assert run.active, describe(run, manager)
        snap = observer.read_once()
        g = next((g for g in snap.groups if g.group_id == group), None)
        run = manager.get(run_id)
        if g is not None:
            committed = {
                (p.topic, p.partition): p.committed for p in g.partitions if p.topic == topic
            }
            match = next((p for p in reversed(run.history) if p.end_offsets == committed), None)
            if match is not None:
                seen.append((g.lag, match.offsets_behind))
                if match.offsets_behind == 0 and sum(committed.values()) == TOTAL:  # type: ignore[arg-type]
                    return seen
        time.sleep(0.2)
    raise AssertionError(f"the job never caught up: {describe(manager.get(run_id), manager)}")


class TestKeyedCounts:
    """keyed-counts on local[2]: output, progress, consumer group, stop."""

    def test_group_lag_agrees_with_progress(self, keyed: dict[str, Any]) -> None:
        """The groups pane's lag equals the job's own offsets-behind, while it catches up."""
        obs = keyed["observations"]
        assert obs, "no observation matched a progress"
        assert all(lag == behind for lag, behind in obs), obs
        assert any((behind or 0) > 0 for _lag, behind in obs), f"never seen behind: {obs}"
        assert obs[-1] == (0, 0)

    def test_counts_equal_expected(
        self, cluster: LocalCluster, manager: JobManager, keyed: dict[str, Any]
    ) -> None:
        """Both sinks hold exactly the expected count per (window, key)."""
        run_id, expected = keyed["run_id"], keyed["expected"]
        wait_until(
            lambda: latest_counts(manager.read_output(run_id)) == expected,
            60,
            f"the readable sink to hold {expected}",
        )
        from_topic: dict[tuple[str, str], int] = {}
        for _key, value in read_topic(cluster, f"{keyed['topic']}-counts"):
            from_topic[(value["window_start"], value["key"])] = value["count"]
        assert from_topic == expected

    def test_progress_lines_parsed(self, manager: JobManager, keyed: dict[str, Any]) -> None:
        """Every progress line parses; batches, rows and offsets add up to what was produced."""
        run = manager.get(keyed["run_id"])
        assert run.state is JobState.RUNNING
        lines = run.progress_path.read_text().splitlines()
        parsed = [parse_progress_line(ln) for ln in lines if '"type": "progress"' in ln]
        assert parsed and all(isinstance(p, JobProgress) for p in parsed)
        progress = [p for p in parsed if p is not None]
        ids = [p.batch_id for p in progress]
        assert ids == sorted(ids)
        with_rows = {p.batch_id: p.input_rows for p in progress if p.input_rows}
        assert sum(with_rows.values()) == TOTAL
        assert max(with_rows.values()) <= 20  # max-offsets-per-trigger
        last = progress[-1]
        assert sum(last.end_offsets.values()) == TOTAL
        assert last.offsets_behind == 0
        assert all(p.processed_rows_per_second is not None for p in progress)
        assert any((p.processed_rows_per_second or 0) > 0 for p in progress)
        assert run.latest == last

    def test_stop_ends_the_process(self, manager: JobManager, keyed: dict[str, Any]) -> None:
        """stop: the driver and its JVM exit, the run says stopped with exit code 0."""
        run = manager.get(keyed["run_id"])
        proc = psutil.Process(run.pid)
        family = [proc, *proc.children(recursive=True)]
        assert any("java" in (p.name() or "") for p in family[1:]), "no JVM under the driver"
        stopped = manager.stop(run.run_id, timeout_s=30)
        assert stopped.state is JobState.STOPPED, describe(stopped, manager)
        assert stopped.exit_code == 0
        assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in family)
        assert manager.get(run.run_id).state is JobState.STOPPED


# --------------------------------------------------------------------------------------------
# Sequence checker: planted gap, duplicate and reordering; restart from the checkpoint
# --------------------------------------------------------------------------------------------


def _findings(manager: JobManager, run_id: str) -> set[tuple[str, str, int]]:
    return {(r["key"], r["kind"], r["seq"]) for r in manager.read_output(run_id)}


def test_sequence_checker_finds_planted_faults_and_resumes(
    cluster: LocalCluster, manager: JobManager, tmp_path: Any
) -> None:
    """A gap, a duplicate and a late (out-of-order) record are found; after a stop and a
    restart on the same checkpoint only new faults are reported."""
    topic = new_topic(cluster, "seq")
    first = [("k0", s) for s in (0, 1, 2, 4, 5, 5, 6)]  # gap at 3, duplicate 5
    first += [("k1", s) for s in range(5)]  # clean
    first += [("k2", s) for s in (0, 1, 3, 2)]  # gap at 2, then 2 arrives late: order
    produce(cluster, topic, [workload_record("r1", k, s) for k, s in first])
    produce(cluster, topic, [("noise", b"not a workload record", None)])
    options = {
        **SMALL_SPARK,
        "topic": topic,
        "checkpoint": str(tmp_path / "checkpoint"),
        "group-id": f"kconsole-job-test-{topic}",
    }
    run1 = manager.start("sequence-checker", options)
    expected1 = {
        ("k0", "gap", 3),
        ("k0", "duplicate", 5),
        ("k2", "gap", 2),
        ("k2", "late", 2),
        ("k2", "order", 2),
    }
    wait_until(
        lambda: _findings(manager, run1.run_id) == expected1 or not manager.get(run1.run_id).active,
        180,
        "the planted findings",
    )
    r1 = manager.get(run1.run_id)
    assert _findings(manager, run1.run_id) == expected1, describe(r1, manager)
    assert r1.finding_counts == {"gap": 2, "duplicate": 1, "late": 1, "order": 1}
    total1 = len(first) + 1
    wait_until(
        lambda: (p := manager.get(run1.run_id).latest) and sum(p.end_offsets.values()) == total1,
        60,
        "the first run to read everything",
    )
    r1 = manager.stop(run1.run_id, timeout_s=30)
    assert r1.state is JobState.STOPPED and r1.exit_code == 0, describe(r1, manager)
    last_batch = r1.latest.batch_id if r1.latest else -1

    second = [("k0", s) for s in (7, 8, 10)] + [("k1", s) for s in (5, 6)]  # gap at 9
    produce(cluster, topic, [workload_record("r1", k, s) for k, s in second])
    run2 = manager.start("sequence-checker", options)
    wait_until(
        lambda: (
            (
                (p := manager.get(run2.run_id).latest)
                and sum(p.end_offsets.values()) == total1 + len(second)
            )
            or not manager.get(run2.run_id).active
        ),
        180,
        "the restarted run to read the new records",
    )
    r2 = manager.get(run2.run_id)
    assert r2.active, describe(r2, manager)
    assert _findings(manager, run2.run_id) == {("k0", "gap", 9)}, describe(r2, manager)
    assert r2.finding_counts == {"gap": 1}
    # It resumed: batch ids continue and its first batch read only the new records.
    assert r2.checkpoint_note is not None and r2.checkpoint_note.status == "resuming"
    assert r1.latest is not None and r2.checkpoint_note.offsets == r1.latest.end_offsets
    assert r2.history[0].batch_id > last_batch
    assert sum(p.input_rows for p in r2.history) == len(second)
    manager.stop(run2.run_id, timeout_s=30)


# --------------------------------------------------------------------------------------------
# Failures with a reason
# --------------------------------------------------------------------------------------------


def _free_port() -> int:
    for port in range(27100, 27900):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port")


def test_unreachable_kafka_fails_with_reason(manager: JobManager) -> None:
    """Nothing listens at the bootstrap address: failed, and the reason says so."""
    run = manager.start(
        "keyed-counts",
        {**SMALL_SPARK, "bootstrap": f"127.0.0.1:{_free_port()}", "preflight-timeout": "3"},
    )
    wait_until(lambda: not manager.get(run.run_id).active, 60, "the job to fail")
    failed = manager.get(run.run_id)
    assert failed.state is JobState.FAILED, describe(failed, manager)
    assert failed.exit_code == 1
    assert failed.error and "unreachable" in failed.error, failed.error


def test_missing_topic_fails_with_reason(cluster: LocalCluster, manager: JobManager) -> None:
    """A topic that does not exist: failed, and the reason names it."""
    run = manager.start("sequence-checker", {**SMALL_SPARK, "topic": "no-such-topic-here"})
    wait_until(lambda: not manager.get(run.run_id).active, 60, "the job to fail")
    failed = manager.get(run.run_id)
    assert failed.state is JobState.FAILED, describe(failed, manager)
    assert failed.error and "'no-such-topic-here' does not exist" in failed.error, failed.error


# --------------------------------------------------------------------------------------------
# Offsets behind under live traffic; checkpoints of another topic incarnation
# --------------------------------------------------------------------------------------------


def _log_ends(admin: AdminClient, tps: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    futs = admin.list_offsets({TopicPartition(t, p): OffsetSpec.latest() for t, p in tps})
    return {(tp.topic, tp.partition): f.result(timeout=30).offset for tp, f in futs.items()}


@pytest.fixture(scope="module")
def live(
    cluster: LocalCluster, manager: JobManager, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """keyed-counts from the earliest offset with records arriving all the time (about 100 a
    second) and no cap per batch, stopped after at least five batches past the first. What the
    test below checks is recorded as it happens: each new progress with the log ends read just
    after it, and the group's lag with the log ends read just after the lag. The stopped run
    is also the first run of the checkpoint test (its checkpoint is new, then resumed)."""
    topic = new_topic(cluster, "live")
    group = f"kconsole-job-test-{topic}"
    checkpoint = tmp_path_factory.mktemp("live") / "ck"
    options = {
        **SMALL_SPARK,
        "trigger": "1",
        "topic": topic,
        "starting-offsets": "earliest",
        "output-topic": "",
        "checkpoint": str(checkpoint),
        "group-id": group,
    }
    stop = threading.Event()

    def traffic() -> None:
        p = Producer({"bootstrap.servers": cluster.spec.bootstrap, "linger.ms": 5})
        i = 0
        while not stop.is_set():
            for _ in range(10):
                p.produce(topic, key=f"k{i % 7}".encode(), value=b"x")
                i += 1
            p.poll(0)
            stop.wait(0.1)  # about 100 records a second
        p.flush(30)

    sender = threading.Thread(target=traffic, daemon=True)
    sender.start()
    admin = AdminClient({"bootstrap.servers": cluster.spec.bootstrap})
    observer = ClusterObserver(settings_for(cluster))
    tps = [(topic, 0), (topic, 1)]
    # (progress, log ends read just after it was seen)
    checked: list[tuple[JobProgress, dict[tuple[str, int], int]]] = []
    # (the newest progress, the group's lag, its committed offsets, log ends read after the lag)
    compared: list[tuple[JobProgress, int, dict[tuple[str, int], int | None], int]] = []
    try:
        run = manager.start("keyed-counts", options)
        deadline = time.monotonic() + 300
        while len(checked) < 5 or not compared:
            assert time.monotonic() < deadline, describe(manager.get(run.run_id), manager)
            r = manager.get(run.run_id)
            assert r.active, describe(r, manager)
            seen = [p for p, _ends in checked]
            for p in [p for p in r.history if p.batch_id >= 1 and p not in seen]:
                checked.append((p, _log_ends(admin, tps)))  # read after the job read its own
            g = next((g for g in observer.read_once().groups if g.group_id == group), None)
            latest = manager.get(run.run_id).latest
            if g is not None and latest is not None and latest.offsets_behind is not None:
                committed = {(p.topic, p.partition): p.committed for p in g.partitions}
                if committed == latest.end_offsets and g.lag is not None:
                    ends_after = sum(_log_ends(admin, tps).values())
                    compared.append((latest, g.lag, committed, ends_after))
            time.sleep(0.2)
    finally:
        stop.set()
        sender.join(30)
    # Stopped once it has read everything, so its checkpoint ends where its last batch did.
    total = sum(_log_ends(admin, tps).values())
    wait_until(
        lambda: (
            ((p := manager.get(run.run_id).latest) and sum(p.end_offsets.values()) == total)
            or not manager.get(run.run_id).active
        ),
        120,
        f"the live run to read all {total} records",
    )
    stopped = manager.stop(run.run_id, timeout_s=30)
    return {
        "topic": topic,
        "tps": tps,
        "options": options,
        "checkpoint": checkpoint,
        "checked": checked,
        "compared": compared,
        "stopped": stopped,
    }


def test_behind_is_measured_against_the_log_end_under_live_traffic(
    manager: JobManager, live: dict[str, Any]
) -> None:
    """With records arriving all the time and no cap per batch, Spark's own figure (its latest
    offset when it planned the batch - the batch's end) is always 0; the job's "behind" is the
    log end read after the batch - its end, which the group's lag (log end now - the committed
    end) can only exceed by what arrived since."""
    tps = live["tps"]
    checked: list[tuple[JobProgress, dict[tuple[str, int], int]]] = live["checked"]
    assert len(checked) >= 5 and live["compared"]
    for p, ends_now in checked:
        assert p.offsets_behind is not None, p.behind_unknown
        assert p.behind_at_plan == 0  # what "behind" used to show
        assert set(p.log_end_offsets) == set(p.end_offsets) == set(tps)
        for tp in tps:
            assert p.end_offsets[tp] <= p.log_end_offsets[tp] <= ends_now[tp], (p, ends_now)
        assert p.offsets_behind == sum(p.log_end_offsets[tp] - p.end_offsets[tp] for tp in tps)
    for latest, lag, committed, ends_after in live["compared"]:
        # behind <= lag <= (log end after the lag was read) - the committed end
        assert latest.offsets_behind <= lag <= ends_after - sum(committed.values())
    assert any(p.offsets_behind for p, _ends in checked), [p.offsets_behind for p, _ in checked]
    assert live["stopped"].state is JobState.STOPPED, describe(live["stopped"], manager)


def _recreate(cluster: LocalCluster, topic: str) -> None:
    """Delete `topic` and create it again (same name, a new topic id)."""
    admin = AdminClient({"bootstrap.servers": cluster.spec.bootstrap})
    admin.delete_topics([topic])[topic].result(timeout=30)

    def created() -> bool:
        admin.create_topics([NewTopic(topic, 2, 3)])[topic].result(timeout=30)
        return True

    wait_until(created, 60, f"{topic} to be created again (after its deletion completes)")
    cluster.wait_metadata_everywhere(topic, time.monotonic() + 30)


def test_checkpoint_of_a_recreated_topic_is_refused_then_started_fresh(
    cluster: LocalCluster, manager: JobManager, live: dict[str, Any]
) -> None:
    """A run resumes its own checkpoint and says from which offsets; once the topic was deleted
    and created again the checkpoint is refused with the way out, and fresh-checkpoint moves it
    aside (kept whole) and reads the new topic from its start. The first run is the live run
    above (a new checkpoint, stopped after its batches)."""
    topic, options, ck = live["topic"], live["options"], live["checkpoint"]
    r1 = manager.get(live["stopped"].run_id)
    assert r1.state is JobState.STOPPED and r1.latest is not None, describe(r1, manager)
    assert r1.checkpoint_note is not None and r1.checkpoint_note.status == "new"

    run2 = manager.start("keyed-counts", options)
    note = wait_until(lambda: manager.get(run2.run_id).checkpoint_note, 120, "run 2's checkpoint")
    assert note.status == "resuming", describe(manager.get(run2.run_id), manager)
    assert note.offsets == r1.latest.end_offsets
    assert note.message.startswith("resuming from checkpoint: offsets {")
    assert note.out_of_range == ()
    manager.stop(run2.run_id, timeout_s=30)

    _recreate(cluster, topic)
    produce(cluster, topic, [(f"n{i}", b"y", None) for i in range(5)])
    run3 = manager.start("keyed-counts", options)
    wait_until(lambda: not manager.get(run3.run_id).active, 120, "run 3 to refuse the checkpoint")
    r3 = manager.get(run3.run_id)
    assert r3.state is JobState.FAILED and r3.exit_code == 1, describe(r3, manager)
    assert r3.error and "deleted and created again" in r3.error, r3.error
    assert "--fresh-checkpoint" in r3.error and str(ck) in r3.error
    assert r3.checkpoint_note is not None and r3.checkpoint_note.status == "refused"
    assert (ck / "offsets").is_dir()  # left as it was

    run4 = manager.start("keyed-counts", {**options, "fresh-checkpoint": "true"})
    wait_until(
        lambda: (
            ((p := manager.get(run4.run_id).latest) and sum(p.end_offsets.values()) == 5)
            or not manager.get(run4.run_id).active
        ),
        240,
        "the fresh run to read the new topic's 5 records",
    )
    r4 = manager.get(run4.run_id)
    assert r4.active, describe(r4, manager)
    note4 = r4.checkpoint_note
    assert note4 is not None and note4.status == "fresh" and note4.moved_to
    assert note4.moved_to in note4.message
    old = Path(note4.moved_to)
    assert (old / "offsets").is_dir() and (old / "commits").is_dir()  # moved, not deleted
    assert sum(p.input_rows for p in r4.history) == 5
    manager.stop(run4.run_id, timeout_s=30)
