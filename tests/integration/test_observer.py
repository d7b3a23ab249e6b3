"""The console's data path against the real cluster: what kconsole shows equals what Kafka and
ZooKeeper say, changes arrive as events, and lag is log end minus committed."""

from __future__ import annotations

import statistics
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kazoo.client import KazooClient

from kconsole.cluster.local.cluster import LocalCluster
from kconsole.config import Settings
from kconsole.models import BrokerState, ClusterSnapshot
from kconsole.observer import ClusterObserver
from kconsole.timeline import Event, EventKind
from tests.integration.conftest import controller, partition_state
from tests.integration.kafka_tools import topic_describe
from tests.waiting import wait_until

pytestmark = pytest.mark.integration


def settings_for(cluster: LocalCluster) -> Settings:
    return Settings(
        bootstrap=cluster.spec.bootstrap,
        zookeeper=cluster.spec.zk_connect,
        cluster_dir=cluster.state_dir,
    )


class Live:
    """A started observer that records every snapshot and event, with arrival times."""

    def __init__(self, cluster: LocalCluster):
        self.observer = ClusterObserver(
            settings_for(cluster),
            proc_states=lambda: {b: cluster.broker(b).state() for b in cluster.spec.broker_ids},
        )
        self.latest: ClusterSnapshot | None = None
        self.events: list[tuple[float, Event]] = []
        self._lock = threading.Lock()

    def __enter__(self) -> Live:
        self.observer.start(self._on_update)
        wait_until(
            lambda: self.latest is not None and all(s.ok for s in self.latest.sources),
            30,
            "every source healthy",
        )
        return self

    def __exit__(self, *exc: object) -> None:
        self.observer.stop()

    def _on_update(self, snap: ClusterSnapshot, events: tuple[Event, ...]) -> None:
        now = time.monotonic()
        with self._lock:
            self.latest = snap
            self.events.extend((now, e) for e in events)

    def kinds_since(self, t0: float) -> list[Event]:
        with self._lock:
            return [e for t, e in self.events if t >= t0]


def test_partitions_equal_kafka_topics_describe(healthy: LocalCluster) -> None:
    """Leader, replicas and ISR of every partition equal kafka-topics --describe.

    The two are read moments apart, and Kafka's automatic preferred-leader election may move a
    leader in between (earlier tests restart brokers), so they must agree within a deadline."""

    def views() -> tuple[dict, dict]:
        snap = ClusterObserver(settings_for(healthy)).read_once()
        mine = {
            p.partition: (p.leader, p.replicas, tuple(sorted(p.isr)))
            for p in snap.partitions
            if p.topic == "test-topic"
        }
        ref = {
            k: (v[0], v[1], tuple(sorted(v[2])))
            for k, v in topic_describe(healthy, "test-topic").items()
        }
        return mine, ref

    last: list[tuple[dict, dict]] = []

    def agree() -> bool:
        last[:] = [views()]
        return last[0][0] == last[0][1] and len(last[0][0]) == 4

    wait_until(agree, 90, "kconsole and kafka-topics to agree", interval=2.0)


def test_brokers_and_controller(healthy: LocalCluster, zk: KazooClient) -> None:
    """Brokers 1-3 up at their ports; the controller is the one ZooKeeper names."""
    snap = ClusterObserver(settings_for(healthy)).read_once()
    assert [(b.id, b.port, b.state) for b in snap.brokers] == [
        (i, healthy.spec.broker_ports()[i], BrokerState.UP) for i in (1, 2, 3)
    ]
    assert snap.controller.id == controller(zk)
    assert snap.controller.epoch == int(zk.get("/controller_epoch")[0])
    assert snap.cluster_id


def test_prediction_settings_are_read_from_the_brokers(healthy: LocalCluster) -> None:
    """The timeline's predictions use what the brokers run with (DescribeConfigs), not
    Kafka's defaults: the local cluster's settings differ from those on every one."""
    from kconsole.cluster.settings import drill_settings

    props = drill_settings(len(healthy.spec.broker_ids))
    cfg = ClusterObserver(settings_for(healthy)).read_once().broker_config
    assert cfg is not None and cfg.read_from in (1, 2, 3)
    assert cfg.session_timeout_ms == int(props["zookeeper.session.timeout.ms"]) != 18000
    assert cfg.replica_lag_time_max_ms == int(props["replica.lag.time.max.ms"]) != 30000
    assert (
        cfg.leader_imbalance_check_s == int(props["leader.imbalance.check.interval.seconds"]) != 300
    )


def _stop_round(cluster: LocalCluster, zk: KazooClient) -> float:
    """Stop partition 0's leader under a live observer; check what it shows; restart it.
    Returns seconds from the stop to the observer showing every new leader."""
    with Live(cluster) as live:

        def snap() -> ClusterSnapshot:
            assert live.latest is not None
            return live.latest

        victim = partition_state(zk, "test-topic", 0)["leader"]
        led = [
            p.partition for p in snap().partitions if p.topic == "test-topic" and p.leader == victim
        ]
        t0 = time.monotonic()
        cluster.stop_broker(victim)
        wait_until(
            lambda: all(
                snap().partition("test-topic", p).leader not in (victim, -1)  # type: ignore[union-attr]
                for p in led
            ),
            30,
            "new leaders in the observer",
        )
        delay = time.monotonic() - t0
        wait_until(
            lambda: snap().broker(victim).state is BrokerState.DOWN,  # type: ignore[union-attr]
            30,
            "the broker shown down",
        )
        wait_until(
            lambda: all(victim not in p.isr for p in snap().partitions if p.topic == "test-topic"),
            30,
            "shrunk ISRs",
        )
        events = live.kinds_since(t0)
        assert (EventKind.BROKER_LEFT, victim) in {(e.kind, e.broker) for e in events}
        changed = {
            e.partition
            for e in events
            if e.kind is EventKind.LEADER_CHANGED and e.topic == "test-topic"
        }
        assert set(led) <= changed
        assert any(e.kind is EventKind.ISR_SHRANK and e.topic == "test-topic" for e in events)
        cluster.start_broker(victim)
        wait_until(
            lambda: snap().broker(victim).state is BrokerState.UP,  # type: ignore[union-attr]
            60,
            "the broker back up",
        )
        assert any(
            e.kind is EventKind.BROKER_JOINED and e.broker == victim for e in live.kinds_since(t0)
        )
    return delay


def test_stop_shows_down_new_leaders_and_events(healthy: LocalCluster, zk: KazooClient) -> None:
    """A stopped leader shows as down, its partitions get new leaders and shrunk ISRs, and an
    event says each of these. Also measures stop -> new leaders in the observer (printed)."""
    from tests.integration.conftest import restore

    delays = []
    for _round in range(3):
        delays.append(_stop_round(healthy, zk))
        restore(healthy, zk)
    print(
        f"\nstop -> new leaders visible: {[round(d, 3) for d in delays]} s, "
        f"median {statistics.median(delays):.3f} s"
    )


def test_paused_broker_is_shown_paused(healthy: LocalCluster) -> None:
    """The local backend tells the observer a SIGSTOPped broker is paused."""
    with Live(healthy) as live:
        healthy.pause_broker(3)
        try:
            wait_until(
                lambda: live.latest.broker(3).state is BrokerState.PAUSED,  # type: ignore[union-attr]
                15,
                "broker 3 shown paused",
            )
        finally:
            healthy.resume_broker(3)


def test_group_lag_is_log_end_minus_committed(healthy: LocalCluster) -> None:
    """Lag per partition equals the log end offset minus the committed offset."""
    group = f"lag-test-{uuid.uuid4().hex[:6]}"
    prod = Producer({"bootstrap.servers": healthy.spec.bootstrap, "acks": "all"})
    for i in range(200):
        prod.produce("test-topic", key=f"k{i}", value=b"x")
    assert prod.flush(30) == 0
    cons = Consumer(
        {
            "bootstrap.servers": healthy.spec.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        cons.subscribe(["test-topic"])
        read = 0
        deadline = time.monotonic() + 30
        while read < 50 and time.monotonic() < deadline:
            m = cons.poll(0.5)
            if m is not None and not m.error():
                read += 1
        cons.commit(asynchronous=False)
        tps = [TopicPartition("test-topic", p) for p in range(4)]
        committed = {tp.partition: tp.offset for tp in cons.committed(tps, timeout=10)}
        ends = {
            p: cons.get_watermark_offsets(TopicPartition("test-topic", p), timeout=10)[1]
            for p in range(4)
        }
        snap = ClusterObserver(settings_for(healthy)).read_once()
        g = next(g for g in snap.groups if g.group_id == group)
        assert g.state == "STABLE" and g.members == 1
        for gp in g.partitions:
            if committed[gp.partition] >= 0:
                assert gp.committed == committed[gp.partition]
                assert gp.log_end == ends[gp.partition]
                assert gp.lag == ends[gp.partition] - committed[gp.partition]
        expected = sum(ends[p] - c for p, c in committed.items() if c >= 0)
        assert g.lag == expected and expected > 0
        # Partitions with nothing committed (Kafka's `-`) are out of the total, and it says so.
        uncommitted = {f"test-topic/{p}" for p, c in committed.items() if c < 0}
        assert g.lag_left_out() == dict.fromkeys(uncommitted, "no committed offset")
        assert g.lag_partial == bool(uncommitted)
    finally:
        cons.close()


def test_a_deleted_and_recreated_topic_is_a_deletion_and_a_creation(healthy: LocalCluster) -> None:
    """kafka-topics --delete, then --create of the same name (issue 35, item 14): the events
    are the topic's deletion and creation, none of its partitions offline or online, nothing
    is flagged offline, and the drill chart's count of offline partitions is 0 again. Twice:
    how the watcher's reads fall against the controller's steps differs from run to run."""
    from kconsole.drills.measure import Replay
    from tests.integration.kafka_tools import run_tool

    topic = f"recreated-{uuid.uuid4().hex[:6]}"

    def tool(*args: str) -> str:
        return run_tool(
            healthy,
            "org.apache.kafka.tools.TopicCommand",
            "--bootstrap-server",
            healthy.spec.bootstrap,
            *args,
            "--topic",
            topic,
        )

    create = ("--create", "--partitions", "4", "--replication-factor", "3")
    tool(*create)
    with Live(healthy) as live:

        def snap() -> ClusterSnapshot:
            assert live.latest is not None
            return live.latest

        def whole() -> bool:
            t = snap().topic(topic)
            return t is not None and t.live and len(snap().partitions_of(topic)) == 4

        for _round in range(2):
            wait_until(whole, 30, f"{topic} in the observer, whole")
            before = snap()
            old_id = before.topic(topic).topic_id  # type: ignore[union-attr]
            t0 = time.monotonic()
            tool("--delete")
            wait_until(lambda: snap().topic(topic) is None, 60, f"{topic} gone")
            tool(*create)
            wait_until(whole, 30, f"{topic} back, whole")
            new = snap()
            assert new.topic(topic).topic_id not in (None, old_id)  # type: ignore[union-attr]
            mine = [e for e in live.kinds_since(t0) if e.topic == topic]
            kinds = [e.kind for e in mine]
            assert EventKind.TOPIC_DELETED in kinds and EventKind.TOPIC_CREATED in kinds, mine
            assert kinds.index(EventKind.TOPIC_DELETED) < kinds.index(EventKind.TOPIC_CREATED)
            topic_kinds = {
                EventKind.TOPIC_DELETING,
                EventKind.TOPIC_DELETED,
                EventKind.TOPIC_CREATED,
            }
            assert set(kinds) <= topic_kinds, [(e.kind, e.text) for e in mine]
            assert f"topic {topic} deleted" in [e.text for e in mine]
            # As Kafka says, and nothing offline.
            described = topic_describe(healthy, topic)
            wait_until(
                lambda d=described: (
                    {  # type: ignore[misc]
                        p.partition: (p.leader, p.replicas) for p in snap().partitions_of(topic)
                    }
                    == {p: (leader, replicas) for p, (leader, replicas, _isr) in d.items()}
                ),
                30,
                "the observer's leaders equal kafka-topics --describe",
            )
            assert not any("offline" in snap().flags(p) for p in snap().partitions)
            # The drill chart's replay from before the deletion, through every event since.
            replay = Replay.of(before)
            for e in live.kinds_since(t0):
                replay.apply(e)
            assert replay.frame().offline == 0
            created = next(e for e in reversed(mine) if e.kind is EventKind.TOPIC_CREATED)
            assert {p for p, *_rest in created.new} == {0, 1, 2, 3}  # type: ignore[union-attr]
    tool("--delete")


def test_zookeeper_down_marks_stale_and_recovers(healthy: LocalCluster) -> None:
    """With ZooKeeper stopped the ZooKeeper source goes stale (Admin data keeps coming), and it
    recovers on its own when ZooKeeper is back."""
    from kconsole.models import SourceName

    with Live(healthy) as live:
        zk_proc = healthy.zookeeper
        assert zk_proc.terminate(15)
        try:
            wait_until(
                lambda: not live.latest.source(SourceName.ZOOKEEPER).ok,  # type: ignore[union-attr]
                30,
                "zookeeper marked stale",
            )
            admin = live.latest.source(SourceName.ADMIN)  # type: ignore[union-attr]
            assert admin is not None and admin.ok
            assert live.latest.partitions  # type: ignore[union-attr]
        finally:
            healthy.up(timeout=120)  # restarts ZooKeeper only
        wait_until(
            lambda: live.latest.source(SourceName.ZOOKEEPER).ok,  # type: ignore[union-attr]
            60,
            "zookeeper healthy again",
        )


@pytest.mark.parametrize("window", [None, 3])
def test_watched_paths_reread_together_equal_a_full_read(
    healthy: LocalCluster, monkeypatch: pytest.MonkeyPatch, window: int | None
) -> None:
    """The watcher re-reads a burst of watched paths with pipelined requests (partition states
    WINDOW at a time, the controller and brokers first, through kconsole's kazoo handler): the
    result is what a full read gives, and the slices shown while answers come in grow in the
    order the paths were given."""
    from kconsole.cluster import zk as zkmod

    if window is not None:
        monkeypatch.setattr(zkmod, "WINDOW", window)
    client = zkmod.zk_client(healthy.spec.zk_connect)
    client.start(timeout=30)
    try:
        full = zkmod.ZkReader(client)
        full.read_all()
        again = zkmod.ZkReader(client)
        again.read_topics()  # topics known, as the watcher's reader has them
        again.states.clear()
        order = sorted(full.states, reverse=True)
        paths = [f"/brokers/topics/{t}/partitions/{p}/state" for t, p in order]
        slices: list[list[tuple[str, int]]] = []
        monkeypatch.setattr(zkmod, "SLICE_S", 0.0)  # a slice after every answer but the last
        again.read_paths(
            ["/controller", "/brokers/ids", *paths, "/controller_epoch"],
            on_slice=lambda: slices.append(list(again.states)),
        )
        assert again.states == full.states
        assert slices == [order[:n] for n in range(1, len(order))]
        assert (again.controller, again.controller_epoch) == (
            full.controller,
            full.controller_epoch,
        )
        assert again.brokers == full.brokers
    finally:
        client.stop()
        client.close()


def test_the_zookeeper_reads_benchmark_reads_every_state(healthy: LocalCluster) -> None:
    """bench/zk_reads.py (part of make bench) runs end to end: every side reads every state."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import zk_reads

    out = zk_reads.run(healthy.spec.zk_connect, 1)
    client = KazooClient(hosts=healthy.spec.zk_connect, timeout=10)
    client.start(timeout=30)
    try:
        states = sum(
            len(client.get_children(f"/brokers/topics/{t}/partitions"))
            for t in client.get_children("/brokers/topics")
        )
    finally:
        client.stop()
        client.close()
    assert out["paths"] == states > 0
    for side in ("kazoo", "kconsole", "reader", "reader_all_in_flight"):
        walls = out[f"{side}_wall_ms"]
        assert isinstance(walls, list) and len(walls) == 1 and walls[0] > 0, side
