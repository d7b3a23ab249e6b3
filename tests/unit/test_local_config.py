"""Config generation for the embedded cluster (no processes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kconsole.cluster.errors import ClusterError
from kconsole.cluster.local.cluster import (
    LocalCluster,
    LocalClusterSpec,
    broker_properties,
    parse_set_options,
    render_properties,
    zookeeper_properties,
)
from kconsole.cluster.settings import ZK_TICK_TIME_MS, default_bootstrap, drill_settings


def _parse(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            k, _, v = line.partition("=")
            out[k] = v
    return out


class TestSpec:
    def test_defaults_match_reference_topology(self) -> None:
        spec = LocalClusterSpec()
        assert spec.broker_ids == [1, 2, 3]
        assert spec.zk_connect == "127.0.0.1:22181"
        assert spec.bootstrap == "127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094"
        assert spec.bootstrap == default_bootstrap()

    @pytest.mark.parametrize(
        "kwargs, message",
        [
            ({"brokers": 0}, "--brokers"),
            ({"brokers": 3, "racks": 4}, "--racks"),
            ({"zk_port": 80}, "outside"),
            ({"zk_port": 19093}, "collides"),
            ({"base_port": 40000}, "ephemeral port range"),
        ],
    )
    def test_invalid_specs_are_refused(self, kwargs: dict, message: str) -> None:
        with pytest.raises(ClusterError, match=message):
            LocalClusterSpec(**kwargs)

    def test_json_round_trip(self) -> None:
        spec = LocalClusterSpec(brokers=5, racks=2, overrides={"a.b": "1"}, zk_overrides={"x": "y"})
        assert LocalClusterSpec.from_json(spec.to_json()) == spec

    def test_racks_round_robin(self) -> None:
        spec = LocalClusterSpec(brokers=5, racks=2)
        assert [spec.rack_of(i) for i in spec.broker_ids] == [
            "rack-1",
            "rack-2",
            "rack-1",
            "rack-2",
            "rack-1",
        ]
        assert LocalClusterSpec().rack_of(1) is None

    def test_corrupt_spec_file_is_a_clear_error(self, tmp_path: Path) -> None:
        (tmp_path / "cluster.json").write_text("{not json")
        with pytest.raises(ClusterError, match="not a valid cluster spec"):
            LocalCluster(tmp_path)


class TestSetOptions:
    def test_broker_and_zookeeper_overrides(self) -> None:
        broker, zk = parse_set_options(["min.insync.replicas=1", "zk:tickTime=1000", "a=b=c"])
        assert broker == {"min.insync.replicas": "1", "a": "b=c"}
        assert zk == {"tickTime": "1000"}

    @pytest.mark.parametrize("bad", ["novalue", "=x", "a b=c"])
    def test_malformed(self, bad: str) -> None:
        with pytest.raises(ClusterError, match="key=value"):
            parse_set_options([bad])


class TestBrokerProperties:
    def test_listener_id_and_zookeeper(self, tmp_path: Path) -> None:
        props = broker_properties(LocalClusterSpec(), 2, tmp_path)
        assert props["broker.id"] == "2"
        assert props["listeners"] == "PLAINTEXT://127.0.0.1:19093"
        assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:19093"
        assert props["zookeeper.connect"] == "127.0.0.1:22181"
        assert props["log.dirs"] == str(tmp_path)
        assert "broker.rack" not in props

    def test_drill_settings_for_three_brokers(self, tmp_path: Path) -> None:
        props = broker_properties(LocalClusterSpec(), 1, tmp_path)
        assert props["min.insync.replicas"] == "2"
        assert props["offsets.topic.replication.factor"] == "3"
        assert props["transaction.state.log.min.isr"] == "2"
        assert props["zookeeper.session.timeout.ms"] == "6000"
        assert props["group.initial.rebalance.delay.ms"] == "0"

    def test_single_broker_lowers_replication(self, tmp_path: Path) -> None:
        props = broker_properties(LocalClusterSpec(brokers=1), 1, tmp_path)
        assert props["offsets.topic.replication.factor"] == "1"
        assert props["min.insync.replicas"] == "1"

    def test_overrides_win_and_racks_apply(self, tmp_path: Path) -> None:
        spec = LocalClusterSpec(racks=3, overrides={"min.insync.replicas": "1", "x.y": "z"})
        props = broker_properties(spec, 3, tmp_path)
        assert props["min.insync.replicas"] == "1"
        assert props["x.y"] == "z"
        assert props["broker.rack"] == "rack-3"

    def test_session_timeout_fits_zookeeper_clamp(self, tmp_path: Path) -> None:
        """ZooKeeper clamps session timeouts to 2..20 x tickTime; ours must be inside."""
        timeout = int(drill_settings(3)["zookeeper.session.timeout.ms"])
        tick = int(zookeeper_properties(LocalClusterSpec(), tmp_path)["tickTime"])
        assert tick == ZK_TICK_TIME_MS
        assert 2 * tick <= timeout <= 20 * tick


class TestFiles:
    def test_render_round_trip(self) -> None:
        props = {"a": "1", "b.c": "x=y"}
        assert _parse(render_properties(props)) == props

    def test_write_configs_layout(self, tmp_path: Path) -> None:
        spec = LocalClusterSpec(
            brokers=2, zk_port=23000, base_port=23100, zk_overrides={"maxClientCnxns": "7"}
        )
        local = LocalCluster(tmp_path, spec)
        local.write_configs()
        zoo = _parse((tmp_path / "zookeeper" / "zoo.cfg").read_text())
        assert zoo["clientPort"] == "23000"
        assert zoo["maxClientCnxns"] == "7"
        assert zoo["dataDir"] == str(tmp_path / "zookeeper" / "data")
        b2 = _parse((tmp_path / "broker-2" / "server.properties").read_text())
        assert b2["listeners"] == "PLAINTEXT://127.0.0.1:23101"
        assert b2["zookeeper.connect"] == "127.0.0.1:23000"
        assert (tmp_path / "broker-2" / "data").is_dir()
        assert LocalCluster(tmp_path).spec == spec  # cluster.json reloads the same spec
        assert "${kafka.logs.dir}/server.log" in (tmp_path / "log4j.properties").read_text()

    def test_argv_runs_kafka_with_its_config(self, tmp_path: Path) -> None:
        local = LocalCluster(tmp_path, LocalClusterSpec())
        argv = local._argv("broker-1", tmp_path / "lib")
        assert argv[-2:] == ["kafka.Kafka", str(tmp_path / "broker-1" / "server.properties")]
        assert "-Xmx512m" in argv and f"{tmp_path / 'lib'}/*" in argv
        zk = local._argv("zookeeper", tmp_path / "lib")
        assert zk[-2] == "org.apache.zookeeper.server.quorum.QuorumPeerMain"
        assert "-Xmx256m" in zk

    def test_unknown_broker_is_a_clear_error(self, tmp_path: Path) -> None:
        with pytest.raises(ClusterError, match="broker 7 is not part of this cluster"):
            LocalCluster(tmp_path, LocalClusterSpec()).broker(7)


def test_extra_jvm_flags_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from kconsole.cluster.local.state_dir import JVM_OPTS_ENV, jvm_flags

    monkeypatch.setenv(JVM_OPTS_ENV, "-XX:TieredStopAtLevel=1 -Dx='a b'")
    flags = jvm_flags()
    assert flags[-2:] == ["-XX:TieredStopAtLevel=1", "-Dx=a b"] and "-XX:+UseG1GC" in flags
    monkeypatch.setenv(JVM_OPTS_ENV, "")
    assert "-XX:TieredStopAtLevel=1" not in jvm_flags()
