"""The observer and `describe` on the real KRaft cluster (conftest.py's session fixture `kraft`,
3 controllers + 3 brokers, Kafka 4.4.0): the mode, the quorum as Kafka's own
kafka-metadata-quorum tool reports it, --bootstrap-controller, a killed quorum leader, a paused
broker fenced and unfenced. What a test breaks it restores, with deadlines."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kconsole.cluster.kraft.cluster import KRaftCluster, KRaftUpTimes
from kconsole.config import Settings
from kconsole.models import ClusterMode, ClusterSnapshot, SourceName
from kconsole.observer import ClusterObserver
from kconsole.timeline import Event, EventKind
from tests.integration.conftest import _free
from tests.integration.kraft_support import metadata_quorum_tool, quorum_whole, restart_node
from tests.waiting import wait_until

Kraft = tuple[KRaftCluster, KRaftUpTimes]


def _dead_port() -> int:
    """A local port nothing listens on (a ZooKeeper, or brokers, that do not answer)."""
    for port in range(27900, 28000):
        if _free(port):
            return port
    raise RuntimeError("no free port")


def describe_json(*args: str, timeout: float = 120) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "kconsole", *args, "describe", "--json"],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    assert done.stdout.strip(), done.stderr[-2000:]
    data: dict[str, Any] = json.loads(done.stdout)
    return done.returncode, data


def _status(text: str) -> dict[str, str]:
    return {k.strip(): v.strip() for k, _, v in (ln.partition(":") for ln in text.splitlines())}


def _ids(value: str) -> list[int]:
    return sorted(int(i) for i in re.findall(r'"id":\s*(\d+)', value))


class Recorder:
    """A live observer's snapshots and events, as the console would receive them."""

    def __init__(self, settings: Settings):
        self.lock = threading.Lock()
        self.snaps: list[ClusterSnapshot] = []
        self.events: list[Event] = []
        self.observer = ClusterObserver(settings)

    def __call__(self, snap: ClusterSnapshot, events: tuple[Event, ...]) -> None:
        with self.lock:
            self.snaps.append(snap)
            self.events.extend(events)

    def latest(self) -> ClusterSnapshot | None:
        with self.lock:
            return self.snaps[-1] if self.snaps else None


@pytest.fixture
def live(kraft: Kraft) -> Iterator[Recorder]:
    cluster, _ = kraft
    zk = f"127.0.0.1:{_dead_port()}"  # a ZooKeeper given that does not answer
    rec = Recorder(Settings(bootstrap=cluster.spec.bootstrap, zookeeper=zk))
    rec.observer.start(rec)
    try:
        wait_until(
            lambda: (s := rec.latest()) is not None and s.mode is ClusterMode.KRAFT,
            60,
            "the observer in KRaft mode",
        )
        yield rec
    finally:
        rec.observer.stop()


def test_describe_json_agrees_with_kafka_metadata_quorum(kraft: Kraft) -> None:
    """describe --json (with a ZooKeeper given that does not answer) says KRaft, and its quorum
    is the one kafka-metadata-quorum --bootstrap-controller describes."""
    cluster, _ = kraft
    wait_until(lambda: quorum_whole(cluster), 120, "the quorum whole")
    zk = f"127.0.0.1:{_dead_port()}"
    code, snap = describe_json("-b", cluster.spec.bootstrap, "-z", zk)
    status = _status(metadata_quorum_tool(cluster, "describe", "--status"))
    replication = metadata_quorum_tool(cluster, "describe", "--replication")
    assert code == 0
    assert snap["mode"] == "kraft"
    q = snap["quorum"]
    assert status["ClusterId"] == snap["cluster_id"]
    assert int(status["LeaderId"]) == q["leader_id"] == snap["controller"]["id"]
    assert int(status["LeaderEpoch"]) == q["leader_epoch"] == snap["controller"]["epoch"]
    # The high watermark moves (the leader appends a record every 500 ms): read before the tool.
    assert 0 < q["high_watermark"] <= int(status["HighWatermark"])
    assert _ids(status["CurrentVoters"]) == sorted(v["id"] for v in q["voters"])
    assert _ids(status["CurrentObservers"]) == sorted(o["id"] for o in q["observers"])
    rows = [ln.split() for ln in replication.splitlines()[1:] if ln.strip()]
    tool = {int(r[0]): (r[1], r[-1]) for r in rows}  # id -> (directory id, status)
    ours = {
        r["id"]: (
            r["directory_id"],
            "Leader" if r["id"] == q["leader_id"] else "Follower" if r["voter"] else "Observer",
        )
        for r in (*q["voters"], *q["observers"])
    }
    assert ours == tool
    assert snap["features"]["metadata_version"] == "4.4-IV2"
    assert snap["features"]["kraft_version"] == 1
    assert {b["id"]: b["fenced"] for b in snap["brokers"]} == {1: False, 2: False, 3: False}
    assert not any(s["name"] == "zookeeper" for s in snap["sources"])


def test_bootstrap_controller_reads_the_quorum_with_no_broker_answering(kraft: Kraft) -> None:
    """--bootstrap-controller: the quorum comes from the controllers, the brokers named do not
    answer; the Admin API is marked stale, the quorum is fresh, the exit code 0. One controller
    that is not the leader is given, as a user would: it names the others and the leader."""
    cluster, _ = kraft
    dead = f"127.0.0.1:{_dead_port()}"
    leader = cluster.quorum()
    assert leader is not None
    follower = next(
        f"{cluster.spec.host}:{port}"
        for i, port in cluster.spec.controller_ports().items()
        if i != leader.leader_id
    )
    code, snap = describe_json("-b", dead, "-z", "", "--bootstrap-controller", follower)
    assert code == 0
    assert snap["mode"] == "kraft"
    assert snap["quorum"]["leader_id"] == leader.leader_id
    assert sorted(v["id"] for v in snap["quorum"]["voters"]) == cluster.spec.controller_ids
    sources = {s["name"]: s for s in snap["sources"]}
    assert sources["quorum"]["ok"] is True
    assert sources["admin"]["ok"] is False


def test_nothing_answers_is_unknown_and_no_crash() -> None:
    dead = f"127.0.0.1:{_dead_port()}"
    code, snap = describe_json("-b", dead, "-z", dead, timeout=180)
    assert code == 2  # no source answered
    assert snap["mode"] == "unknown" and snap["quorum"] is None


def test_killed_quorum_leader_gives_a_new_leader_and_a_higher_epoch(
    kraft: Kraft, live: Recorder
) -> None:
    cluster, _ = kraft
    wait_until(lambda: quorum_whole(cluster), 120, "the quorum whole")
    wait_until(
        lambda: (s := live.latest()) is not None and s.quorum is not None and not s.quorum.stale,
        30,
        "a fresh quorum",
    )
    before = live.latest()
    assert before is not None and before.quorum is not None
    old, epoch = before.controller.id, before.controller.epoch or 0
    assert old in cluster.spec.controller_ids
    name = f"controller-{old}"
    killed = time.time()
    cluster.process(name).signal(signal.SIGKILL)
    try:

        def new_leader() -> ClusterSnapshot | None:
            with live.lock:
                return next(
                    (
                        s
                        for s in live.snaps
                        if s.taken_at >= killed
                        and s.controller.id not in (None, old)
                        and (s.controller.epoch or 0) > epoch
                    ),
                    None,
                )

        snap = wait_until(new_leader, 60, "a new quorum leader in a published snapshot")
        assert snap.quorum is not None and snap.quorum.leader_id == snap.controller.id
        assert snap.controller.previous == old
        with live.lock:
            changed = [e for e in live.events if e.kind is EventKind.CONTROLLER_CHANGED]
        assert (
            changed
            and changed[-1].old == old
            and "quorum leader is controller" in (changed[-1].text)
        )
        print(f"\nnew quorum leader published {snap.taken_at - killed:.2f} s after the kill")
    finally:
        restart_node(cluster, name)
    wait_until(
        lambda: (
            (s := live.latest()) is not None
            and s.quorum is not None
            and not s.quorum.stale
            and all(v.log_end_offset is not None for v in s.quorum.voters)
            and not s.quorum.lagging_voters()
        ),
        60,
        "the observer's quorum whole again",
    )


def test_paused_broker_is_fenced_then_unfenced(kraft: Kraft, live: Recorder) -> None:
    """SIGSTOP past broker.session.timeout.ms (9 s): fenced; SIGCONT: unfenced."""
    cluster, _ = kraft
    proc = cluster.process("broker-3")
    proc.signal(signal.SIGSTOP)
    try:
        wait_until(
            lambda: (
                (s := live.latest()) is not None
                and (b := s.broker(3)) is not None
                and b.fenced is True
            ),
            60,
            "broker 3 fenced",
        )
        # The groups are listed by the live brokers: the source stays fresh and says what broker
        # 3 did not list (issue 35, item 9: it went STALE when no group existed). Without a
        # backend the observer cannot tell paused from slow: broker 3 is asked and times out.
        at = time.time()
        wait_until(
            lambda: (
                (s := live.latest()) is not None
                and (g := s.source(SourceName.GROUPS)) is not None
                and g.ok
                and (g.updated_at or 0) > at
                and "broker 3 " in g.error
            ),
            30,
            "the groups source fresh and degraded",
        )
    finally:
        proc.signal(signal.SIGCONT)
    wait_until(
        lambda: (
            (s := live.latest()) is not None
            and (b := s.broker(3)) is not None
            and b.fenced is False
        ),
        60,
        "broker 3 unfenced",
    )
    with live.lock:
        kinds = [(e.kind, e.broker) for e in live.events if e.broker == 3]
    assert (EventKind.BROKER_FENCED, 3) in kinds
    assert kinds.index((EventKind.BROKER_FENCED, 3)) < kinds.index((EventKind.BROKER_UNFENCED, 3))
    wait_until(lambda: not any(cluster.broker_fencing().values()), 60, "every broker unfenced")


def test_a_deleted_and_recreated_topic_is_a_deletion_and_a_creation(
    kraft: Kraft, live: Recorder
) -> None:
    """KRaft (issue 35, item 14): kafka-topics --delete and --create of one name are a
    deletion and a creation, with no partition event of the topic's."""
    import uuid

    from tests.integration.kafka_tools import run_tool

    cluster, _ = kraft
    topic = f"recreated-{uuid.uuid4().hex[:6]}"

    def tool(*args: str) -> None:
        run_tool(
            cluster,
            "org.apache.kafka.tools.TopicCommand",
            "--bootstrap-server",
            cluster.spec.bootstrap,
            *args,
            "--topic",
            topic,
        )

    def present() -> bool:
        s = live.latest()
        return s is not None and len(s.partitions_of(topic)) == 3

    create = ("--create", "--partitions", "3", "--replication-factor", "3")
    tool(*create)
    wait_until(present, 30, f"{topic} in the observer")
    with live.lock:
        start = len(live.events)
    tool("--delete")
    wait_until(lambda: (s := live.latest()) is not None and s.topic(topic) is None, 30, "gone")
    tool(*create)
    wait_until(present, 30, f"{topic} back")
    with live.lock:
        mine = [(e.kind, e.text) for e in live.events[start:] if e.topic == topic]
    assert mine == [
        (EventKind.TOPIC_DELETED, f"topic {topic} deleted"),
        (EventKind.TOPIC_CREATED, f"topic {topic} created (3 partitions, replication factor 3)"),
    ]
    tool("--delete")


def test_group_types_from_list_groups(kraft: Kraft) -> None:
    """A classic group and a KIP-848 consumer group, each with a member that got partitions:
    ListGroups says which is which."""
    import uuid

    from confluent_kafka import Consumer, TopicPartition

    from kconsole.cluster.settings import TEST_TOPIC

    cluster, _ = kraft
    token = uuid.uuid4().hex[:8]
    groups = {f"classic-{token}": "classic", f"consumer-{token}": "consumer"}
    for gid, protocol in groups.items():
        conf = {
            "bootstrap.servers": cluster.spec.bootstrap,
            "group.id": gid,
            "group.protocol": protocol,
            "enable.auto.commit": False,
        }
        consumer = Consumer(conf)
        try:
            consumer.subscribe([TEST_TOPIC])  # a member: a commit alone makes a classic group

            def assigned(c: Consumer = consumer) -> bool:
                c.poll(0.2)
                return bool(c.assignment())

            wait_until(assigned, 90, f"{gid} to get partitions")

            def committed(c: Consumer = consumer) -> bool:
                # a fresh cluster answers COORDINATOR_LOAD_IN_PROGRESS for a moment
                c.commit(offsets=[TopicPartition(TEST_TOPIC, 0, 0)], asynchronous=False)
                return True

            wait_until(committed, 60, f"{gid} to commit", interval=0.5)
        finally:
            consumer.close()
    settings = Settings(bootstrap=cluster.spec.bootstrap, zookeeper="")

    def types() -> dict[str, str] | None:
        snap = ClusterObserver(settings).read_once()
        found = {g.group_id: g.group_type for g in snap.groups if g.group_id in groups}
        return found if len(found) == len(groups) else None

    assert wait_until(types, 60, "both groups listed") == groups


def test_zookeeper_mode_cluster_says_zookeeper(healthy: Any) -> None:
    """The ZooKeeper-mode cluster (Kafka 3.9): with its ZooKeeper, ZooKeeper mode and no quorum
    source; with no ZooKeeper given its brokers, which have no DescribeQuorum, say the same."""
    spec = healthy.spec
    code, snap = describe_json("-b", spec.bootstrap, "-z", spec.zk_connect)
    assert code == 0 and snap["mode"] == "zookeeper" and snap["quorum"] is None
    assert [s["name"] for s in snap["sources"]] == ["zookeeper", "admin", "groups"]
    code, snap = describe_json("-b", spec.bootstrap, "-z", "")
    assert code == 0 and snap["mode"] == "zookeeper" and snap["quorum"] is None
    assert [s["name"] for s in snap["sources"]] == ["admin", "groups"]


def test_describe_cluster_asked_of_each_broker_names_every_broker_and_its_fencing(
    kraft: Kraft,
) -> None:
    """kafka_python.describe_cluster_at (what the quorum poller asks of a broker it chose, not
    a paused one): every broker answers with all three, unfenced, as Kafka's own tool says."""
    from kconsole.cluster.kraft.quorum import registrations_of
    from kconsole.cluster.security import kafka_python
    from kconsole.cluster.security.clients import kafka_python_config

    cluster, _ = kraft
    wait_until(lambda: not any(cluster.broker_fencing().values()), 60, "every broker unfenced")
    admin = kafka_python.admin_client(
        kafka_python_config({"bootstrap.servers": cluster.spec.bootstrap}, 10.0)
    )
    try:
        for node in (1, 2, 3):
            regs = registrations_of(kafka_python.describe_cluster_at(admin, node, 10_000))
            assert sorted(regs) == [1, 2, 3], node
            assert not any(r.fenced for r in regs.values()), (node, regs)
    finally:
        admin.close()


def test_features_asked_of_each_broker_are_kafka_pythons_own(kraft: Kraft) -> None:
    """kafka_python.describe_features_at (the quorum poller's features read, of a broker it
    chose): each broker's answer is the one kafka-python's describe_features() gives, with
    metadata.version finalized."""
    from kconsole.cluster.kraft.quorum import features_of
    from kconsole.cluster.security import kafka_python
    from kconsole.cluster.security.clients import kafka_python_config

    cluster, _ = kraft
    admin = kafka_python.admin_client(
        kafka_python_config({"bootstrap.servers": cluster.spec.bootstrap}, 10.0)
    )

    def levels(answer: dict[str, Any]) -> dict[str, Any]:
        # (finalized_epoch is the broker's metadata offset as it answered: it moves on)
        return {k: (v.get("supported"), v.get("finalized")) for k, v in answer.items()}

    try:
        own = admin.describe_features()
        assert own["metadata.version"]["finalized"][1] > 0
        for node in (1, 2, 3):
            answer = kafka_python.describe_features_at(admin, node, 10_000)
            assert levels(answer) == levels(own), node
        assert features_of(own, 1.0).metadata_version is not None
    finally:
        admin.close()


def test_a_paused_broker_is_not_asked_for_the_features(kraft_healthy: KRaftCluster) -> None:
    """With a connection to every broker (as a console that has run a while has) and broker 3
    paused, the quorum poller's registrations and features reads, told to avoid it, are
    answered every time: kafka-python's own pick sent the features read to the paused broker
    now and then, and the poll waited out its timeout with the error as its outcome."""
    from kconsole.cluster.kraft.quorum import QuorumReader
    from kconsole.cluster.security import kafka_python

    cluster = kraft_healthy
    reader = QuorumReader({"bootstrap.servers": cluster.spec.bootstrap})
    proc = cluster.process("broker-3")
    try:
        reader.read_registrations()
        for node in (1, 2, 3):  # connected to each
            kafka_python.describe_cluster_at(reader._admin(), node, 10_000)
        proc.signal(signal.SIGSTOP)  # well within the session timeout: never fenced
        for i in range(8):
            assert sorted(reader.read_registrations(avoid={3})) == [1, 2, 3], i
            assert reader.read_features(float(i), avoid={3}).metadata_version, i
    finally:
        proc.signal(signal.SIGCONT)
        reader.close()


def test_answers_still_due_from_a_broker_paused_meanwhile_are_not_waited_for(
    kraft_healthy: KRaftCluster,
) -> None:
    """A groups poll in flight when a broker is paused: told that broker 3 is paused now, the
    waits for its ListGroups and ListOffsets answers end (NotAwaited) instead of lasting the
    requests' 10 s, and the brokers that answered keep their answers."""
    from kconsole.cluster.security import kafka_python
    from kconsole.cluster.security.clients import kafka_python_config
    from kconsole.cluster.settings import TEST_TOPIC

    cluster = kraft_healthy
    admin = kafka_python.admin_client(
        kafka_python_config({"bootstrap.servers": cluster.spec.bootstrap}, 10.0)
    )
    proc = cluster.process("broker-3")
    tp = (TEST_TOPIC, 0)
    try:
        both = kafka_python.log_ends_by_leader(admin, {1: [tp], 3: [tp]}, 10_000)
        assert all(isinstance(a, dict) for a in both.values()), both  # connected to each
        listed = kafka_python.list_groups_at(admin, [1, 2, 3], 10_000)
        assert all(isinstance(a, list) for a in listed.values()), listed
        proc.signal(signal.SIGSTOP)  # well within the session timeout: never fenced
        listed = kafka_python.list_groups_at(admin, [1, 2, 3], 10_000, give_up=lambda: {3})
        assert isinstance(listed[3], kafka_python.NotAwaited), listed
        assert isinstance(listed[1], list) and isinstance(listed[2], list), listed
        answers = kafka_python.log_ends_by_leader(
            admin, {1: [tp], 3: [tp]}, 10_000, give_up=lambda: {3}
        )
        assert isinstance(answers[3], kafka_python.NotAwaited), answers
        assert "broker 3 paused" in str(answers[3])
        assert isinstance(answers[1], dict) and tp in answers[1], answers  # its own answer
    finally:
        proc.signal(signal.SIGCONT)
        admin.close()
