"""Reassignment, preferred leader election, a KIP-848 group's lag and a KIP-932 share group on
the real KRaft cluster
(conftest.py's session fixture `kraft`: 3 controllers + 3 brokers, Kafka 4.4.0), each checked
against Kafka's own tools run from the same jars. Every test works on a topic of its own."""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from confluent_kafka import Consumer, Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kconsole.cli import main
from kconsole.cluster.kraft import KRaftCluster
from kconsole.config import Settings
from kconsole.models import Group
from kconsole.observer import ClusterObserver
from kconsole.reassign.plan import Plan
from tests.integration.kafka_tools import run_tool, topic_describe
from tests.waiting import wait_until

pytestmark = pytest.mark.integration
REASSIGN_TOOL = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
GROUPS_TOOL = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
SHARE_GROUPS_TOOL = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"


def final_error(g: Group) -> bool:
    """A group read with an error that waiting cannot change (a coordinator that is moving or
    still loading the group can: those are retried)."""
    return bool(g.error) and not any(
        m in g.error for m in ("coordinator moving", "CoordinatorLoadInProgress")
    )


def kc(cluster: KRaftCluster, *args: str) -> Result:
    """The CLI on the KRaft cluster's brokers, with no ZooKeeper."""
    return CliRunner().invoke(main, ["-b", cluster.spec.bootstrap, "-z", "", *args])


def new_topic(cluster: KRaftCluster, partitions: int, rf: int) -> str:
    """A fresh topic, known to every broker with a full ISR."""
    name = f"kr-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.spec.bootstrap})
    admin.create_topics([NewTopic(name, partitions, rf)])[name].result(timeout=60)

    def ready() -> bool:
        parts = topic_describe(cluster, name)
        return len(parts) == partitions and all(len(isr) == rf for _, _, isr in parts.values())

    wait_until(ready, 90, f"{name} created with a full ISR", interval=0.5)
    return name


def test_generate_execute_verify_agrees_with_kafkas_tools(
    kraft_healthy: KRaftCluster, tmp_path: Path
) -> None:
    """A plan onto brokers 2,3 runs through `kconsole reassign`; its verify, Kafka's
    kafka-reassign-partitions --verify and kafka-topics --describe all say it is in place."""
    cluster = kraft_healthy
    topic = new_topic(cluster, partitions=3, rf=2)
    plan_file = tmp_path / "plan.json"
    res = kc(cluster, "reassign", "generate", "--topics", topic, "--brokers", "2,3",
             "--out", str(plan_file))  # fmt: skip
    assert res.exit_code == 0, res.output
    plan = Plan.from_json(plan_file.read_text())
    assert plan.moves and all(set(m.replicas) == {2, 3} for m in plan.moves), plan
    res = kc(cluster, "reassign", "execute", "--plan", str(plan_file), "--yes", "--wait",
             "--timeout", "120")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "complete" in res.output, res.output
    res = kc(cluster, "reassign", "verify", "--plan", str(plan_file))
    assert res.exit_code == 0, res.output
    kafka = run_tool(cluster, REASSIGN_TOOL, "--bootstrap-server", cluster.spec.bootstrap,
                     "--reassignment-json-file", str(plan_file), "--verify")  # fmt: skip
    assert kafka.count("is completed") == len(plan.moves), kafka
    described = topic_describe(cluster, topic)
    for m in plan.moves:
        _leader, replicas, isr = described[m.partition]
        assert replicas == m.replicas and set(isr) == set(m.replicas), described


def test_preferred_election_after_a_reorder(kraft_healthy: KRaftCluster, tmp_path: Path) -> None:
    """Replicas reordered by a reassignment leave the leader where it was; `kconsole elect
    --preferred` moves it to the new first replica, as kafka-topics --describe then shows."""
    cluster = kraft_healthy
    topic = new_topic(cluster, partitions=1, rf=3)
    leader, replicas, _isr = topic_describe(cluster, topic)[0]
    assert leader == replicas[0]
    order = (*replicas[1:], replicas[0])
    plan_file = tmp_path / "reorder.json"
    move = {"topic": topic, "partition": 0, "replicas": list(order), "log_dirs": ["any"] * 3}
    plan_file.write_text(json.dumps({"version": 1, "partitions": [move]}))
    res = kc(cluster, "reassign", "execute", "--plan", str(plan_file), "--yes", "--wait")
    assert res.exit_code == 0, res.output

    def reordered() -> tuple[int, tuple, tuple] | None:
        part = topic_describe(cluster, topic)[0]
        return part if part[1] == order else None

    before = wait_until(reordered, 60, "kafka-topics to show the new order")
    assert before[0] == leader != order[0], before  # KRaft kept the leader: not preferred
    res = kc(cluster, "elect", "--preferred", "--topic", topic, "--partition", "0", "--yes",
             "--json")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert [r["outcome"] for r in json.loads(res.output)] == ["elected"], res.output
    wait_until(
        lambda: topic_describe(cluster, topic)[0][0] == order[0],
        60,
        "kafka-topics to show the preferred leader",
    )


def test_kip848_group_lag_in_the_snapshot(kraft_healthy: KRaftCluster) -> None:
    """A consumer group on the new protocol (group.protocol=consumer) committed 4 of 10 on
    partition 0 and all 6 on partition 1: the observer's snapshot says type consumer, lag 6 and
    0, total 6 — as Kafka's kafka-consumer-groups --describe does."""
    cluster = kraft_healthy
    bootstrap = cluster.spec.bootstrap
    topic = new_topic(cluster, partitions=2, rf=3)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for p, count in ((0, 10), (1, 6)):
        for i in range(count):
            producer.produce(topic, value=f"v{i}".encode(), partition=p)
    assert producer.flush(60) == 0
    del producer  # a failing test's traceback must not keep it retrying a cluster taken down
    group = f"kip848-{uuid.uuid4().hex[:6]}"
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
        "enable.auto.commit": False,
    })  # fmt: skip
    try:
        consumer.subscribe([topic])

        def assigned() -> bool:
            consumer.poll(0.2)
            return len(consumer.assignment()) == 2

        wait_until(assigned, 90, f"{group} to get both partitions")
        offsets = [TopicPartition(topic, 0, 4), TopicPartition(topic, 1, 6)]

        def committed() -> bool:  # the coordinator may still be loading on a fresh cluster
            consumer.commit(offsets=offsets, asynchronous=False)
            return True

        wait_until(committed, 60, f"{group} to commit", interval=0.5)
    finally:
        consumer.close()
    settings = Settings(bootstrap=bootstrap, zookeeper="")

    seen: list[object] = []

    def lags() -> tuple[str, dict[int, int | None], int | None] | tuple[str, str] | None:
        snap = ClusterObserver(settings).read_once()
        g = next((g for g in snap.groups if g.group_id == group), None)
        seen[:] = [g, [x.group_id for x in snap.groups], snap.sources]
        if g is not None and final_error(g):
            return "unreadable", g.error  # no later read can mend it: fail now, not at 30 s
        if g is None or len([p for p in g.partitions if p.topic == topic]) < 2:
            return None
        return g.group_type, {p.partition: p.lag for p in g.partitions}, g.lag

    try:
        found = wait_until(lags, 30, f"{group} in the snapshot")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last read: {seen}") from None
    assert found == ("consumer", {0: 6, 1: 0}, 6), seen
    out = run_tool(cluster, GROUPS_TOOL, "--bootstrap-server", bootstrap,
                   "--describe", "--group", group)  # fmt: skip
    rows = re.findall(rf"{group}\s+{topic}\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", out)
    assert {int(p): int(lag) for p, _c, _e, lag in rows} == {0: 6, 1: 0}, out


def test_share_group_in_the_snapshot(kraft_healthy: KRaftCluster) -> None:
    """A share group (KIP-932; Kafka 4.4 finalizes share.version 2 on a new cluster, nothing to
    enable) with two members on a 2-partition topic: the observer's snapshot says type share,
    Stable, 2 members and each partition's owner, as Kafka's kafka-share-groups --describe
    does, and its lag is "not applicable" with the reason: a share group commits no consumer
    offsets, so no lag is made up from them (never 0)."""
    cluster = kraft_healthy
    bootstrap = cluster.spec.bootstrap
    topic = new_topic(cluster, partitions=2, rf=3)
    group = f"share-{uuid.uuid4().hex[:6]}"
    members = [ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group}) for _ in (1, 2)]
    settings = Settings(bootstrap=bootstrap, zookeeper="")
    seen: list[object] = []
    try:
        for m in members:
            m.subscribe([topic])

        def described() -> Group | tuple[str, str] | None:
            for m in members:  # the share consumers' own work: join and take the assignment
                m.poll(0.1)
            snap = ClusterObserver(settings).read_once()
            g = next((g for g in snap.groups if g.group_id == group), None)
            seen[:] = [g, snap.sources]
            if g is not None and final_error(g):
                return "unreadable", g.error  # fail now, not at the deadline
            owned = {p.partition for p in g.partitions if p.owner} if g else set()
            ok = g is not None and g.state == "STABLE" and g.members == 2 and owned == {0, 1}
            return g if ok else None

        try:
            g = wait_until(described, 90, f"{group} Stable with 2 members in the snapshot")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; last read: {seen}") from None
        assert isinstance(g, Group), g
        assert g.group_type == "share" and g.error == "", g
        assert g.lag is None and not g.lag_partial and g.lag_na, g  # not 0: not applicable
        assert "share group" in g.lag_na and "committed" in g.lag_na, g.lag_na
        assert all(p.committed is None and p.lag is None for p in g.partitions), g
        state = run_tool(cluster, SHARE_GROUPS_TOOL, "--bootstrap-server", bootstrap,
                         "--describe", "--group", group, "--state")  # fmt: skip
        row = re.search(rf"^{group}\s+\S+\s+\((\d+)\)\s+(\w+)\s+(\d+)\s*$", state, re.M)
        assert row, state
        assert (int(row[1]), row[2].upper(), int(row[3])) == (g.coordinator, g.state, 2), state
        offsets = run_tool(cluster, SHARE_GROUPS_TOOL, "--bootstrap-server", bootstrap,
                           "--describe", "--group", group)  # fmt: skip
        listed = {int(p) for p in re.findall(rf"^{group}\s+{topic}\s+(\d+)\s", offsets, re.M)}
        assert listed == {p.partition for p in g.partitions}, offsets
    finally:
        for m in members:
            m.close()


def test_produce_and_tail_on_kraft(kraft_healthy: KRaftCluster) -> None:
    """`kconsole produce` on KRaft, unchanged: each key lands where the Java client's murmur2
    puts it (checked against Kafka's own partitioner arithmetic in kafka-python) and is acked;
    the command layer's tail reads every record back, key and value, from the beginning."""
    from kafka.partitioner.default import murmur2

    from kconsole.cluster.tail import StartAt
    from kconsole.commands import Commands

    cluster = kraft_healthy
    topic = new_topic(cluster, partitions=4, rf=3)
    keys = [f"key-{i}" for i in range(12)]
    lines = "".join(f"{k}:value of {k}\n" for k in keys)
    res = CliRunner().invoke(
        main, ["-b", cluster.spec.bootstrap, "-z", "", "produce", "-t", topic, "-K", ":"],
        input=lines,
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    where = dict(re.findall(rf"#\d+ key (key-\d+) -> {topic}/(\d+)@\d+", res.output))
    assert len(where) == len(keys), res.output
    for k in keys:
        assert int(where[k]) == (murmur2(k.encode()) & 0x7FFFFFFF) % 4, (k, res.output)
    assert "sent 12, acked 12, failed 0" in res.output, res.output
    commands = Commands.for_settings(Settings(bootstrap=cluster.spec.bootstrap, zookeeper=""))
    source = commands.open_tail(topic, None, StartAt("beginning"), None)
    got: dict[str, tuple[int, bytes | None]] = {}
    try:

        def all_read() -> bool:
            for r in source.poll(0.5):
                assert r.key is not None
                got[r.key.decode()] = (r.partition, r.value)
            return len(got) == len(keys)

        wait_until(all_read, 60, f"the tail to read the {len(keys)} records")
    finally:
        source.close()
    assert got == {k: (int(where[k]), f"value of {k}".encode()) for k in keys}


@pytest.mark.spark
def test_keyed_counts_job_on_kraft(kraft_healthy: KRaftCluster, tmp_path: Path) -> None:
    """A Spark Structured Streaming job on KRaft, unchanged: keyed-counts reads the topic from
    the earliest offset and writes the exact count per (window, key) to both sinks; the KRaft
    snapshot shows its consumer group with lag 0 once it is done; stop ends it, exit code 0."""
    from datetime import UTC, datetime

    from kconsole.jobs import JobState, latest_counts
    from tests.integration.jobs_support import SMALL_SPARK, describe, job_manager

    cluster = kraft_healthy
    topic = new_topic(cluster, partitions=2, rf=3)
    base = (int(time.time() * 1000) // 10_000) * 10_000 - 120_000
    counts = {"a": 3, "b": 2}
    producer = Producer({"bootstrap.servers": cluster.spec.bootstrap, "acks": "all"})
    for key, n in counts.items():
        for i in range(n):
            producer.produce(topic, key=key.encode(), value=b"x", timestamp=base + i * 100)
    assert producer.flush(60) == 0
    del producer
    window = datetime.fromtimestamp(base / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    expected = {(window, k): n for k, n in counts.items()}
    settings = Settings(bootstrap=cluster.spec.bootstrap, zookeeper="")
    group = f"kconsole-job-test-{topic}"
    with job_manager(tmp_path / "jobs", settings) as manager:
        run = manager.start(
            "keyed-counts",
            {**SMALL_SPARK, "topic": topic, "starting-offsets": "earliest",
             "output-topic": f"{topic}-counts", "group-id": group, "window": "10",
             "watermark": "30"},
        )  # fmt: skip

        def counted() -> bool:
            current = manager.get(run.run_id)
            assert current.active, describe(current, manager)
            return latest_counts(manager.read_output(run.run_id)) == expected

        wait_until(counted, 300, f"the job to count {expected}", interval=0.5)

        def done_in_snapshot() -> bool:
            snap = ClusterObserver(settings).read_once()
            g = next((g for g in snap.groups if g.group_id == group), None)
            return g is not None and g.lag == 0 and len(g.partitions) == 2

        wait_until(done_in_snapshot, 60, f"{group} with lag 0 in the KRaft snapshot")
        stopped = manager.stop(run.run_id, timeout_s=30)
        assert stopped.state is JobState.STOPPED and stopped.exit_code == 0, describe(
            stopped, manager
        )
