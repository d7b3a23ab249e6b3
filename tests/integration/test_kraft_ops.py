"""Reassignment, preferred leader election, a KIP-848 group's lag, a KIP-932 share group's lag, a
KIP-1071 streams group and the finalized feature levels on the real KRaft cluster
(conftest.py's session fixture `kraft`: 3 controllers + 3 brokers, Kafka 4.4.0), each checked
against Kafka's own tools run from the same jars. Every test works on a topic of its own."""

from __future__ import annotations

import contextlib
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
from kconsole.cluster.kraft.cluster import KRaftCluster
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
    --preferred` moves it to the new first replica, as kafka-topics --describe then shows.

    The active controller elects preferred leaders by itself too: its periodic task
    electPreferred runs every leader.imbalance.check.interval.seconds (30 s here), at a phase
    set when it became active. A reorder made at a random moment is undone by that task 0-30 s
    later, maybe before `elect` is sent (which then rightly answers "not needed"). So a first
    reorder is left to the controller: the moment it elects the new first replica is the moment
    its task ran, and it will not run again for 30 s; the reorder under test and the election
    are made in that window."""
    cluster = kraft_healthy
    topic = new_topic(cluster, partitions=1, rf=3)
    leader, replicas, _isr = topic_describe(cluster, topic)[0]
    assert leader == replicas[0]
    admin = AdminClient({"bootstrap.servers": cluster.spec.bootstrap})

    def reorder(order: tuple[int, ...], name: str) -> None:
        plan_file = tmp_path / name
        move = {"topic": topic, "partition": 0, "replicas": list(order), "log_dirs": ["any"] * 3}
        plan_file.write_text(json.dumps({"version": 1, "partitions": [move]}))
        res = kc(cluster, "reassign", "execute", "--plan", str(plan_file), "--yes", "--wait")
        assert res.exit_code == 0, res.output

    def led_by(broker: int) -> bool:  # a broker's metadata: cheap enough to poll every 0.1 s
        return admin.list_topics(topic, timeout=5).topics[topic].partitions[0].leader == broker

    first = (*replicas[1:], replicas[0])
    reorder(first, "first.json")
    wait_until(lambda: led_by(first[0]), 60, "the controller's own preferred election")
    ran = time.monotonic()  # electPreferred just ran: not again for 30 s
    order = (*first[1:], first[0])
    reorder(order, "reorder.json")

    def reordered() -> tuple[int, tuple, tuple] | None:
        part = topic_describe(cluster, topic)[0]
        return part if part[1] == order else None

    before = wait_until(reordered, 20, "kafka-topics to show the new order")
    since = f"{time.monotonic() - ran:.1f} s after the controller's own election was seen"
    assert before[0] == first[0] != order[0], (before, since)  # KRaft kept the leader
    res = kc(cluster, "elect", "--preferred", "--topic", topic, "--partition", "0", "--yes",
             "--json")  # fmt: skip
    since = f"{time.monotonic() - ran:.1f} s after the controller's own election was seen"
    assert res.exit_code == 0, res.output
    assert [r["outcome"] for r in json.loads(res.output)] == ["elected"], (res.output, since)
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


def share_tool(cluster: KRaftCluster, group: str) -> dict[int, tuple[int | None, int | None]]:
    """kafka-share-groups --describe: partition -> (START-OFFSET, LAG), None for "-"."""
    out = run_tool(cluster, SHARE_GROUPS_TOOL, "--bootstrap-server", cluster.spec.bootstrap,
                   "--describe", "--group", group)  # fmt: skip
    num = lambda s: None if s == "-" else int(s)  # noqa: E731
    rows = re.findall(rf"^{group}\s+\S+\s+(\d+)\s+(\S+)\s+(\S+)\s*$", out, re.M)
    return {int(p): (num(start), num(lag)) for p, start, lag in rows}


def delivered(member: ShareConsumer, timeout: float) -> int:
    """One poll of a share consumer: how many records it was given."""
    return sum(1 for msg in member.poll(timeout) if msg.error() is None)


def test_share_group_in_the_snapshot(kraft_healthy: KRaftCluster) -> None:
    """A share group (KIP-932; Kafka 4.4 finalizes share.version 2 on a new cluster, nothing to
    enable) with two members on a 2-partition topic: the observer's snapshot says type share,
    Stable, 2 members and each partition's owner, as Kafka's kafka-share-groups --describe
    does. The members read 10 + 6 records (from the start: the group's
    share.auto.offset.reset=earliest) and leave, 5 more come to partition 0: each
    partition's start offset and lag are what kafka-share-groups --describe prints (KIP-1226:
    the coordinator's lag), lag 5 and 0."""
    cluster = kraft_healthy
    bootstrap = cluster.spec.bootstrap
    topic = new_topic(cluster, partitions=2, rf=3)
    group = f"share-{uuid.uuid4().hex[:6]}"
    # The group reads from the start of the log (a share group starts at its end by default:
    # the records would race its first fetch), set as Kafka's tools set it (KIP-932).
    run_tool(cluster, "org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", bootstrap,
             "--alter", "--entity-type", "groups", "--entity-name", group,
             "--add-config", "share.auto.offset.reset=earliest")  # fmt: skip
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for p, count in ((0, 10), (1, 6)):
        for i in range(count):
            producer.produce(topic, value=f"v{i}".encode(), partition=p)
    assert producer.flush(60) == 0
    members = [ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group}) for _ in (1, 2)]
    settings = Settings(bootstrap=bootstrap, zookeeper="")
    seen: list[object] = []
    read = 0

    def snapshot_group() -> Group | None:
        snap = ClusterObserver(settings).read_once()
        g = next((g for g in snap.groups if g.group_id == group), None)
        seen[:] = [g, snap.sources]
        return g

    try:
        for m in members:
            m.subscribe([topic])

        def described() -> Group | tuple[str, str] | None:
            nonlocal read
            for m in members:  # the share consumers' own work: join and take the assignment
                read += delivered(m, 0.1)
            g = snapshot_group()
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
        assert g.group_type == "share" and g.lag_na == "", g
        state = run_tool(cluster, SHARE_GROUPS_TOOL, "--bootstrap-server", bootstrap,
                         "--describe", "--group", group, "--state")  # fmt: skip
        row = re.search(rf"^{group}\s+\S+\s+\((\d+)\)\s+(\w+)\s+(\d+)\s*$", state, re.M)
        assert row, state
        assert (int(row[1]), row[2].upper(), int(row[3])) == (g.coordinator, g.state, 2), state

        def all_read() -> bool:
            nonlocal read
            for m in members:
                read += delivered(m, 0.2)
            return read >= 16

        wait_until(all_read, 60, f"{group}'s members to read the 16 records")
        for m in members:  # acknowledges what the last poll gave (implicit acknowledgement)
            m.poll(0.2)
    finally:
        for m in members:
            m.close()
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(5):
        producer.produce(topic, value=f"late{i}".encode(), partition=0)
    assert producer.flush(60) == 0

    def settled() -> tuple[dict[int, tuple[int | None, int | None]], Group] | None:
        g = snapshot_group()
        if g is None or g.error:
            return None
        mine = {p.partition: (p.committed, p.lag) for p in g.partitions}
        return (mine, g) if {p: lag for p, (_s, lag) in mine.items()} == {0: 5, 1: 0} else None

    try:
        mine, g = wait_until(settled, 60, f"{group}'s lag 5 and 0 in the snapshot")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last read: {seen}") from None
    assert mine == share_tool(cluster, group)  # start offset and lag, partition by partition
    assert g.lag == 5 and not g.lag_partial and all(p.share for p in g.partitions), g
    res = kc(cluster, "describe")
    assert res.exit_code == 0, res.output
    assert re.search(rf"^{group}\s+share\s+EMPTY\s+0\s+simple\s+5$", res.output, re.M), res.output


def test_streams_group_in_the_snapshot(kraft_healthy: KRaftCluster) -> None:
    """A streams group (KIP-1071, GA in Kafka 4.2; streams.version 1 on a new 4.4 cluster): one
    member joins as a Kafka Streams client does (StreamsGroupHeartbeat with its topology: one
    subtopology reading a 2-partition topic), holds both tasks and commits 3 of 10 and 6 of 6.
    The snapshot says type streams, its state, member, assignor and coordinator as
    kafka-streams-groups --describe --state does, and each partition's committed offset, log
    end and lag as its --offsets does: lag 7 and 0."""
    from kconsole.cluster.security import kafka_python
    from kconsole.cluster.security.clients import kafka_python_config
    from tests.fixtures.streams_messages import StreamsMember

    cluster = kraft_healthy
    bootstrap = cluster.spec.bootstrap
    topic = new_topic(cluster, partitions=2, rf=3)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for p, count in ((0, 10), (1, 6)):
        for i in range(count):
            producer.produce(topic, value=f"v{i}".encode(), partition=p)
    assert producer.flush(60) == 0
    del producer
    group = f"streams-{uuid.uuid4().hex[:6]}"
    kp = kafka_python.admin_client(kafka_python_config({"bootstrap.servers": bootstrap}, 10))
    member = StreamsMember(kp, group, topic)
    settings = Settings(bootstrap=bootstrap, zookeeper="")
    seen: list[object] = []
    try:

        def holds_both() -> bool:
            member.heartbeat()
            return member.partitions() == {0, 1}

        wait_until(holds_both, 60, f"{group}'s member to hold both tasks", interval=0.5)
        member.commit({0: 3, 1: 6})

        def described() -> Group | tuple[str, str] | None:
            member.heartbeat()  # stays a member: the session does not lapse
            snap = ClusterObserver(settings).read_once()
            g = next((g for g in snap.groups if g.group_id == group), None)
            seen[:] = [g, snap.sources]
            if g is not None and final_error(g):
                return "unreadable", g.error
            ok = g is not None and g.state == "STABLE" and len(g.partitions) == 2
            return g if ok and all(p.lag is not None for p in g.partitions) else None

        try:
            g = wait_until(described, 60, f"{group} Stable in the snapshot", interval=0.5)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; last read: {seen}") from None
        assert isinstance(g, Group), g
        assert g.group_type == "streams" and g.error == "" and g.members == 1, g
        assert {p.partition: p.lag for p in g.partitions} == {0: 7, 1: 0} and g.lag == 7, g
        assert {p.owner for p in g.partitions} == {"kconsole-groups@127.0.0.1"}, g

        def tool(*args: str) -> str:
            return run_tool(cluster, "org.apache.kafka.tools.streams.StreamsGroupCommand",
                            "--bootstrap-server", bootstrap, "--describe", "--group", group,
                            *args)  # fmt: skip

        state = tool("--state")
        row = re.search(rf"^{group}\s+\S+\s+\((\d+)\)\s+(\S+)\s+(\w+)\s+(\d+)\s*$", state, re.M)
        assert row, state
        assert (int(row[1]), row[2], row[3].upper(), int(row[4])) == (
            g.coordinator, g.assignor, g.state, g.members,
        ), state  # fmt: skip
        offsets = tool("--offsets", "--verbose")
        rows = re.findall(
            rf"^{group}\s+{topic}\s+(\d+)\s+(\d+)\s+\S+\s+(\d+)\s+(-?\d+)", offsets, re.M
        )
        assert {int(p): (int(c), int(e), int(lag)) for p, c, e, lag in rows} == {
            p.partition: (p.committed, p.log_end, p.lag) for p in g.partitions
        }, offsets
    finally:
        with contextlib.suppress(Exception):
            member.leave()
        kp.close()


def test_feature_levels_are_kafka_features_describes(kraft_healthy: KRaftCluster) -> None:
    """`kconsole describe --json` gives every feature level `kafka-features describe` does,
    metadata.version and kraft.version among them; the text form names each."""
    cluster = kraft_healthy
    out = run_tool(cluster, "org.apache.kafka.tools.FeatureCommand", "--bootstrap-server",
                   cluster.spec.bootstrap, "describe")  # fmt: skip
    tool = dict(re.findall(r"Feature: (\S+)\s+.*?FinalizedVersionLevel: (\S+)", out))
    assert {"group.version", "share.version", "streams.version"} <= set(tool), out
    res = kc(cluster, "describe", "--json")
    assert res.exit_code == 0, res.output
    f = json.loads(res.output)["features"]
    mine = {o["name"]: str(o["level"]) for o in f["others"]}
    mine |= {"metadata.version": f["metadata_version"], "kraft.version": str(f["kraft_version"])}
    assert mine == tool, (mine, out)
    text = kc(cluster, "describe")
    assert all(f"{name} {level}" in text.output for name, level in tool.items()), text.output


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
