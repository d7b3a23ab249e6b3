"""The KRaft spec and what it renders: topology, ports, server.properties, format arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

from kconsole.cluster.errors import ClusterError
from kconsole.cluster.kraft.spec import (
    KRaftSpec,
    format_args,
    kafka_uuid,
    log_config_flag,
    node_properties,
)


def test_dedicated_topology_controllers_first() -> None:
    spec = KRaftSpec()
    assert [(n.name, n.node_id, n.roles) for n in spec.nodes()] == [
        ("controller-1001", 1001, ("controller",)),
        ("controller-1002", 1002, ("controller",)),
        ("controller-1003", 1003, ("controller",)),
        ("broker-1", 1, ("broker",)),
        ("broker-2", 2, ("broker",)),
        ("broker-3", 3, ("broker",)),
    ]
    assert spec.broker_ports() == {1: 19092, 2: 19093, 3: 19094}
    assert spec.controller_ports() == {1001: 19192, 1002: 19193, 1003: 19194}
    assert spec.quorum_bootstrap == "127.0.0.1:19192,127.0.0.1:19193,127.0.0.1:19194"
    assert spec.bootstrap == "127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094"


def test_combined_topology() -> None:
    spec = KRaftSpec(combined=True)
    assert [(n.name, n.node_id, n.roles) for n in spec.nodes()] == [
        ("node-1", 1, ("broker", "controller")),
        ("node-2", 2, ("broker", "controller")),
        ("node-3", 3, ("broker", "controller")),
    ]
    assert spec.controller_ports() == {1: 19192, 2: 19193, 3: 19194}
    props = node_properties(spec, spec.nodes()[0], Path("/d"))
    assert props["process.roles"] == "broker,controller"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19192"
    assert props["advertised.listeners"] == props["listeners"]
    assert props["inter.broker.listener.name"] == "PLAINTEXT"
    assert props["num.partitions"] == "1"  # a controller role: the topic defaults belong here


def test_controller_properties() -> None:
    spec = KRaftSpec()
    props = node_properties(spec, spec.node("controller-1002"), Path("/data"))
    assert props["process.roles"] == "controller"
    assert props["node.id"] == "1002"
    assert props["listeners"] == "CONTROLLER://127.0.0.1:19193"
    assert props["controller.listener.names"] == "CONTROLLER"
    assert props["controller.quorum.bootstrap.servers"] == spec.quorum_bootstrap
    assert "controller.quorum.voters" not in props  # dynamic quorum, not static
    assert "inter.broker.listener.name" not in props
    assert props["log.dirs"] == "/data"
    assert props["default.replication.factor"] == "3"
    assert props["min.insync.replicas"] == "2"
    assert props["unclean.leader.election.enable"] == "false"


def test_broker_properties_drop_zookeeper_removed_and_controller_only_settings() -> None:
    spec = KRaftSpec(overrides={"replica.lag.time.max.ms": "5000"})
    props = node_properties(spec, spec.node("broker-2"), Path("/data"))
    assert props["process.roles"] == "broker"
    assert props["node.id"] == "2"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:19093"
    assert props["listener.security.protocol.map"] == "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
    for gone in (
        "zookeeper.connect",
        "zookeeper.session.timeout.ms",
        "controlled.shutdown.retry.backoff.ms",
        "num.partitions",
        "default.replication.factor",
        "broker.id",
    ):
        assert gone not in props
    assert props["min.insync.replicas"] == "2"
    assert props["replica.lag.time.max.ms"] == "5000"  # overrides last


def test_ids_generated_once_and_format_args() -> None:
    spec = KRaftSpec().with_ids()
    assert len(spec.cluster_id) == 22 and not spec.cluster_id.startswith("-")
    assert set(spec.directory_ids) == {"1001", "1002", "1003"}
    assert spec.with_ids() == spec  # kept, not regenerated
    ctl = format_args(spec, spec.node("controller-1001"), Path("c.properties"))
    assert ctl[:5] == ["format", "--cluster-id", spec.cluster_id, "--config", "c.properties"]
    voters = ctl[ctl.index("--initial-controllers") + 1].split(",")
    assert voters[0] == f"1001@127.0.0.1:19192:{spec.directory_ids['1001']}"
    assert len(voters) == 3
    broker = format_args(spec, spec.node("broker-1"), Path("b.properties"))
    assert "--no-initial-controllers" in broker and "--initial-controllers" not in broker


def test_initial_controllers_needs_ids() -> None:
    with pytest.raises(ClusterError, match="not formatted"):
        KRaftSpec().initial_controllers()


def test_json_round_trip_and_mode_check() -> None:
    spec = KRaftSpec(combined=True, overrides={"a": "b"}).with_ids()
    assert KRaftSpec.from_json(spec.to_json()) == spec
    with pytest.raises(ClusterError, match="ZooKeeper-mode"):
        KRaftSpec.from_json('{"brokers": 3, "zk_port": 22181}')


def test_ports_checked() -> None:
    with pytest.raises(ClusterError, match="collide"):
        KRaftSpec(base_port=19192)
    with pytest.raises(ClusterError, match="inside this machine's ephemeral port range"):
        KRaftSpec(controller_base_port=60000)
    with pytest.raises(ClusterError, match=r"outside 1024\.\.65535"):
        KRaftSpec(base_port=1000)


def test_kafka_uuid_shape() -> None:
    ids = {kafka_uuid() for _ in range(200)}
    assert len(ids) == 200
    assert all(len(i) == 22 and not i.startswith("-") and "=" not in i for i in ids)


def test_log_config_by_version(tmp_path: Path) -> None:
    name, content, flag = log_config_flag(KRaftSpec(), tmp_path)
    assert name == "log4j2.xml" and "${sys:kafka.logs.dir}/server.log" in content
    assert flag == f"-Dlog4j2.configurationFile={tmp_path / 'log4j2.xml'}"
    name, _, flag = log_config_flag(KRaftSpec(kafka_version="3.9.2"), tmp_path)
    assert name == "log4j.properties" and flag.startswith("-Dlog4j.configuration=file:")


def test_each_mode_refuses_the_other_modes_state_dir(tmp_path: Path) -> None:
    from kconsole.cluster.kraft.cluster import KRaftCluster
    from kconsole.cluster.local.cluster import LocalCluster, LocalClusterSpec

    kraft_dir, zk_dir = tmp_path / "kraft", tmp_path / "zk"
    kraft_dir.mkdir()
    (kraft_dir / "cluster.json").write_text(KRaftSpec().with_ids().to_json())
    with pytest.raises(ClusterError, match=r"kraft mode.*down --purge"):
        LocalCluster(kraft_dir)
    zk_dir.mkdir()
    (zk_dir / "cluster.json").write_text(LocalClusterSpec().to_json())
    with pytest.raises(ClusterError, match=r"ZooKeeper-mode.*down --purge"):
        KRaftCluster(zk_dir)
    assert LocalCluster(zk_dir).spec == LocalClusterSpec()  # its own mode still loads
