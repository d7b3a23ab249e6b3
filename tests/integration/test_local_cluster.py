"""The embedded local cluster against real Kafka 3.9 + ZooKeeper processes."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient

from kconsole.cli import main as cli
from kconsole.cluster.errors import PortInUse
from kconsole.cluster.local.cluster import LocalCluster, LocalClusterSpec
from kconsole.cluster.settings import TEST_TOPIC, TEST_TOPIC_PARTITIONS
from kconsole.cluster.values import ProcState
from tests.integration.conftest import controller, partition_state, registered, squat_low_port
from tests.processes import zombie_children
from tests.waiting import wait_until

pytestmark = pytest.mark.integration


def _producer(cluster: LocalCluster, **extra: object) -> Producer:
    conf = {
        "bootstrap.servers": cluster.spec.bootstrap,
        "acks": "all",
        "partitioner": "murmur2_random",
        "linger.ms": 5,
    }
    conf.update(extra)
    return Producer(conf)


def _produce(p: Producer, records: list[tuple[str, str]], timeout: float = 30) -> list:
    """Produce and flush; return (error, partition, offset, key, value) per record."""
    results: list = []

    def on_delivery(err, msg) -> None:  # type: ignore[no-untyped-def]
        results.append((err, msg.partition(), msg.offset(), msg.key(), msg.value()))

    for key, value in records:
        p.produce(TEST_TOPIC, key=key.encode(), value=value.encode(), on_delivery=on_delivery)
    remaining = p.flush(timeout)
    assert remaining == 0, f"{remaining} records still in flight after {timeout} s"
    return results


class TestHealthyCluster:
    """A fresh cluster as `kconsole cluster up` leaves it."""

    def test_three_brokers_registered(self, cluster: LocalCluster, zk: KazooClient) -> None:
        """ZooKeeper lists brokers 1-3, each at the port kconsole configured."""
        assert registered(zk) == {1, 2, 3}
        for bid, port in cluster.spec.broker_ports().items():
            reg = json.loads(zk.get(f"/brokers/ids/{bid}")[0])
            assert reg["port"] == port
            assert reg["endpoints"] == [f"PLAINTEXT://127.0.0.1:{port}"]

    def test_exactly_one_controller(self, cluster: LocalCluster, zk: KazooClient) -> None:
        """One controller, the same in ZooKeeper and in the Admin API's DescribeCluster."""
        zk_controller = controller(zk)
        assert zk_controller in {1, 2, 3}
        assert int(zk.get("/controller_epoch")[0]) >= 1
        admin = AdminClient({"bootstrap.servers": cluster.spec.bootstrap})
        desc = admin.describe_cluster(request_timeout=10).result(timeout=15)
        assert desc.controller.id == zk_controller
        assert sorted(n.id for n in desc.nodes) == [1, 2, 3]

    def test_topic_layout(self, cluster: LocalCluster, zk: KazooClient) -> None:
        """test-topic: 4 partitions x 3 replicas, every replica in ISR, leaders spread."""
        admin = AdminClient({"bootstrap.servers": cluster.spec.bootstrap})
        md = admin.list_topics(TEST_TOPIC, timeout=10).topics[TEST_TOPIC]
        assert md.error is None
        assert sorted(md.partitions) == list(range(TEST_TOPIC_PARTITIONS))
        for pid, pmd in md.partitions.items():
            assert sorted(pmd.replicas) == [1, 2, 3]
            assert sorted(pmd.isrs) == [1, 2, 3]
            assert pmd.leader in pmd.replicas
            assert partition_state(zk, TEST_TOPIC, pid)["leader"] == pmd.leader

    def test_drill_settings_in_effect(self, cluster: LocalCluster) -> None:
        """The brokers run with the drill-friendly settings kconsole wrote."""
        from confluent_kafka.admin import ConfigResource

        admin = AdminClient({"bootstrap.servers": cluster.spec.bootstrap})
        res = ConfigResource(ConfigResource.Type.BROKER, "2")
        configs = admin.describe_configs([res])[res].result(timeout=15)
        assert configs["min.insync.replicas"].value == "2"
        assert configs["zookeeper.session.timeout.ms"].value == "6000"
        assert configs["offsets.topic.replication.factor"].value == "3"
        assert configs["auto.create.topics.enable"].value == "false"

    def test_keyed_round_trip(self, healthy: LocalCluster) -> None:
        """Keyed records come back intact, and each key sticks to one partition."""
        run = uuid.uuid4().hex[:8]
        records = [(f"key-{i % 5}-{run}", f"value-{i}-{run}") for i in range(40)]
        results = _produce(_producer(healthy), records)
        assert [r[0] for r in results] == [None] * len(records)
        parts_by_key: dict[bytes, set[int]] = {}
        for _err, part, _off, key, _val in results:
            parts_by_key.setdefault(key, set()).add(part)
        assert all(len(p) == 1 for p in parts_by_key.values())

        consumer = Consumer(
            {
                "bootstrap.servers": healthy.spec.bootstrap,
                "group.id": f"roundtrip-{run}",
                "enable.auto.commit": False,
            }
        )
        first = {}
        for _err, part, off, _k, _v in results:
            first[part] = min(first.get(part, off), off)
        consumer.assign([TopicPartition(TEST_TOPIC, p, o) for p, o in first.items()])
        wanted = {(k.encode(), v.encode()) for k, v in records}
        seen: set[tuple[bytes, bytes]] = set()
        deadline = time.monotonic() + 30
        try:
            while wanted - seen and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is None or msg.error():
                    continue
                seen.add((msg.key(), msg.value()))
        finally:
            consumer.close()
        assert wanted <= seen


class TestBrokerControl:
    """stop / kill / pause / resume / start on real broker processes."""

    def test_min_insync_replicas_enforced(self, healthy: LocalCluster, zk: KazooClient) -> None:
        """With two brokers stopped, acks=all fails with NOT_ENOUGH_REPLICAS; after restart it
        succeeds again."""
        survivor = 1
        for bid in (2, 3):
            healthy.stop_broker(bid)
        wait_until(lambda: registered(zk) == {survivor}, 30, "only broker 1 registered")
        wait_until(
            lambda: all(
                partition_state(zk, TEST_TOPIC, p)["isr"] == [survivor]
                for p in range(TEST_TOPIC_PARTITIONS)
            ),
            30,
            "ISR shrunk to broker 1",
        )
        p = _producer(
            healthy, retries=0, **{"enable.idempotence": False, "message.timeout.ms": 15000}
        )
        res = _produce(p, [("k", "must-fail")])
        assert res[0][0] is not None
        assert res[0][0].code() == KafkaError.NOT_ENOUGH_REPLICAS

        for bid in (2, 3):
            healthy.start_broker(bid)
        wait_until(
            lambda: all(
                len(partition_state(zk, TEST_TOPIC, p)["isr"]) >= 2
                for p in range(TEST_TOPIC_PARTITIONS)
            ),
            90,
            "ISR back to at least min.insync.replicas",
        )
        res = _produce(_producer(healthy), [("k", "must-succeed")])
        assert res[0][0] is None

    def test_stop_leaves_zookeeper_and_moves_leadership(
        self, healthy: LocalCluster, zk: KazooClient
    ) -> None:
        """A graceful stop deregisters the broker and moves its leaderships elsewhere."""
        victim = partition_state(zk, TEST_TOPIC, 0)["leader"]
        healthy.stop_broker(victim)
        assert healthy.broker(victim).state() is ProcState.STOPPED
        wait_until(lambda: victim not in registered(zk), 15, f"broker {victim} to deregister")
        state = wait_until(
            lambda: (s := partition_state(zk, TEST_TOPIC, 0))["leader"] not in (victim, -1) and s,
            15,
            "partition 0 to get a new leader",
        )
        assert victim not in state["isr"]
        healthy.start_broker(victim)
        assert victim in registered(zk)

    def test_pause_then_resume(self, healthy: LocalCluster, zk: KazooClient) -> None:
        """A paused broker is frozen (its session expires), and comes back after resume."""
        victim = next(b for b in (1, 2, 3) if b != controller(zk))
        pid = healthy.broker(victim).pid
        healthy.pause_broker(victim)
        assert healthy.broker(victim).state() is ProcState.PAUSED
        t0 = time.monotonic()
        wait_until(
            lambda: victim not in registered(zk), 40, "the paused broker's session to expire"
        )
        expired_after = time.monotonic() - t0
        assert expired_after > 2.0  # a frozen JVM is noticed only by session expiry (6 s)
        healthy.resume_broker(victim)
        assert healthy.broker(victim).state() is ProcState.RUNNING
        assert healthy.broker(victim).pid == pid
        wait_until(lambda: victim in registered(zk), 60, "the resumed broker to re-register")

    def test_kill_then_start(self, healthy: LocalCluster, zk: KazooClient) -> None:
        """SIGKILL skips controlled shutdown: ZooKeeper notices only when the session expires."""
        victim = partition_state(zk, TEST_TOPIC, 1)["leader"]
        old_pid = healthy.broker(victim).pid
        t0 = time.monotonic()
        healthy.kill_broker(victim)
        assert healthy.broker(victim).state() is ProcState.STOPPED
        wait_until(
            lambda: victim not in registered(zk), 40, "the killed broker's session to expire"
        )
        noticed_after = time.monotonic() - t0
        assert 2.0 < noticed_after < 30.0  # zookeeper.session.timeout.ms=6000
        wait_until(
            lambda: partition_state(zk, TEST_TOPIC, 1)["leader"] not in (victim, -1),
            20,
            "partition 1 to get a new leader",
        )
        healthy.start_broker(victim)
        assert healthy.broker(victim).pid != old_pid
        assert victim in registered(zk)

    def test_start_at_once_after_kill_waits_for_the_old_session(
        self, healthy: LocalCluster, zk: KazooClient
    ) -> None:
        """Issue 24: start right after kill returns only once the NEW process registered.

        The killed JVM's registration stays until its session expires; a start that counted it
        said "started" at once while the new broker died on "node already exists"."""
        victim = next(b for b in (1, 2, 3) if b != controller(zk))
        old_owner = zk.exists(f"/brokers/ids/{victim}").ephemeralOwner
        old_pid = healthy.broker(victim).pid
        healthy.kill_broker(victim)
        said: list[str] = []
        result = healthy.start_broker(victim, progress=said.append)

        assert result.stale_owner == old_owner
        assert result.waited_s > 1.0  # zookeeper.session.timeout.ms=6000
        assert any("waiting for it to expire" in line for line in said), said
        assert result.message.startswith(f"waited {result.waited_s:.1f} s for broker {victim}'s")
        assert "registered in ZooKeeper" in result.message
        # The registration start returned on is the new process's own session.
        stat = zk.exists(f"/brokers/ids/{victim}")
        assert stat is not None and stat.ephemeralOwner == result.owner != old_owner
        new_pid = healthy.broker(victim).pid
        assert new_pid is not None and new_pid != old_pid and new_pid == result.pid
        # ...and it stays: the broker catches up into every ISR under the same session.
        wait_until(
            lambda: all(
                victim in partition_state(zk, TEST_TOPIC, p)["isr"]
                for p in range(TEST_TOPIC_PARTITIONS)
            ),
            90,
            f"broker {victim} back in every ISR",
        )
        assert zk.exists(f"/brokers/ids/{victim}").ephemeralOwner == result.owner
        assert healthy.broker(victim).state() is ProcState.RUNNING
        assert healthy.broker(victim).pid == new_pid

    def test_up_twice_is_harmless(self, healthy: LocalCluster) -> None:
        """`up` on a running cluster starts nothing and keeps every pid."""
        before = {p.name: p.pid for p in healthy.status().processes}
        result = healthy.up(timeout=60)
        assert result.started == []
        assert sorted(result.already_running) == sorted(before)
        assert {p.name: p.pid for p in healthy.status().processes} == before


class TestErrors:
    """Failures give clear errors and leave nothing running."""

    def test_taken_port_is_reported_and_nothing_starts(self, tmp_path: Path) -> None:
        """A port already in use names the port and the process needing it; nothing starts."""
        with squat_low_port() as squatter:
            taken = squatter.getsockname()[1]
            spec = LocalClusterSpec(brokers=1, zk_port=taken, base_port=taken + 7)
            local = LocalCluster(tmp_path / "c", spec)
            with pytest.raises(PortInUse) as err:
                local.up(timeout=30)
            assert f"port {taken}" in str(err.value)
            assert "zookeeper" in str(err.value)
            asked = time.monotonic()
            status = local.status()  # asks the squatter, which never answers, for ZooKeeper
            assert time.monotonic() - asked < 10  # its 3 s time-out, not kazoo's 15 s session
            assert "unreachable" in status.zk_error
            assert all(p.state is ProcState.STOPPED for p in status.processes)

    def test_cli_reports_taken_port(self, tmp_path: Path) -> None:
        """The CLI prints the error and exits 1."""
        with squat_low_port() as squatter:
            taken = squatter.getsockname()[1]
            res = CliRunner().invoke(
                cli,
                [
                    "cluster",
                    "--state-dir",
                    str(tmp_path / "c"),
                    "up",
                    "--brokers",
                    "1",
                    "--base-port",
                    str(taken),
                    "--zk-port",
                    str(taken + 7),
                ],
            )
        assert res.exit_code == 1
        assert f"port {taken}" in res.output and "broker-1" in res.output

    def test_broker_that_exits_during_startup(self, tmp_path: Path) -> None:
        """A broker that dies at start-up is reported with its log; ZooKeeper is stopped again."""
        from tests.integration.conftest import pick_ports

        zk_port, base = pick_ports(1)
        zk_port, base = zk_port + 50, base + 50
        spec = LocalClusterSpec(
            brokers=1,
            zk_port=zk_port,
            base_port=base,
            overrides={"num.network.threads": "not-a-number"},
        )
        local = LocalCluster(tmp_path / "bad", spec)
        with pytest.raises(Exception) as err:
            local.up(timeout=90)
        text = str(err.value)
        assert "broker-1 exited during start-up" in text
        assert "num.network.threads" in text  # the log line that explains it
        assert all(p.state is ProcState.STOPPED for p in local.status().processes)


class TestCli:
    """The `kconsole cluster` commands on the running cluster."""

    def test_status_json(self, healthy: LocalCluster) -> None:
        res = CliRunner().invoke(
            cli, ["cluster", "--state-dir", str(healthy.state_dir), "status", "--json"]
        )
        assert res.exit_code == 0, res.output
        data = json.loads(res.output)
        brokers = [p for p in data["processes"] if p["broker_id"]]
        assert [b["broker_id"] for b in brokers] == [1, 2, 3]
        assert all(b["state"] == "running" and b["registered"] for b in brokers)
        assert data["controller"] in (1, 2, 3)

    def test_read_only_refuses_stop(self, healthy: LocalCluster) -> None:
        res = CliRunner().invoke(
            cli,
            ["--read-only", "cluster", "--state-dir", str(healthy.state_dir), "stop", "2", "--yes"],
        )
        assert res.exit_code == 4
        assert "read-only" in res.output
        assert healthy.broker(2).state() is ProcState.RUNNING

    def test_no_zombie_is_left_after_stop_or_kill(self, healthy: LocalCluster) -> None:
        """Issue 26 item 22: a broker this process started (the fixture's LocalCluster, as the
        console's) and stopped through another (the CLI's, the door's) stayed `[java] <defunct>`
        until its starter next asked. Now it is reaped at once, and the command returns only
        once it is."""
        for verb, bid in (("stop", 2), ("kill", 3)):
            pid = healthy.broker(bid).pid
            assert pid is not None and psutil.Process(pid).ppid() == os.getpid()
            res = CliRunner().invoke(
                cli, ["cluster", "--state-dir", str(healthy.state_dir), verb, str(bid), "--yes"]
            )
            assert res.exit_code == 0, res.output
            assert pid not in zombie_children(), f"broker {bid} ({verb}) left a zombie"
            assert not psutil.pid_exists(pid) or psutil.Process(pid).ppid() != os.getpid()
        wait_until(lambda: not zombie_children(), 10, "no zombie child of this test process")

    def test_stop_without_confirmation_is_refused(self, healthy: LocalCluster) -> None:
        res = CliRunner().invoke(
            cli, ["cluster", "--state-dir", str(healthy.state_dir), "kill", "3"]
        )
        assert res.exit_code == 1
        assert "not confirmed" in res.output
        assert healthy.broker(3).state() is ProcState.RUNNING

    def test_logs(self, healthy: LocalCluster) -> None:
        """The last N lines of the broker's own log file. (What those lines say depends on how
        much the broker logged since it started, which earlier tests change: run 7 of the
        fresh-clone series saw the start-up line pushed out of the last 2,000. So the output is
        compared with the file itself.)"""
        path = healthy.log_path(healthy.broker(1).name)
        res = CliRunner().invoke(
            cli, ["cluster", "--state-dir", str(healthy.state_dir), "logs", "1", "-n", "40"]
        )
        assert res.exit_code == 0, res.output
        shown = res.output.splitlines()
        log = path.read_text(errors="replace").splitlines()  # read after: it may have grown
        assert len(shown) == 40
        starts = [i for i in range(len(log) - 39) if log[i : i + 40] == shown]
        assert starts, "the output is not 40 consecutive lines of the broker's log"
        assert len(log) - (starts[-1] + 40) < 200, "the output is not the end of the log"
        assert any("[KafkaServer id=1]" in line or "KafkaServer id=1" in line for line in log)
