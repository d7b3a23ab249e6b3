"""`kconsole cluster` on a KRaft state dir without starting a JVM: the mode guard, node names,
argument errors, status of a stopped cluster, and which backend a KRaft state dir gets. Each
refusal leaves the state dir as it was and, for cluster.up, an audit line saying it failed."""

from __future__ import annotations

import json
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from kconsole.cli import main as cli
from kconsole.cluster.backends import choose_backend, cluster_mode, open_local
from kconsole.cluster.docker.control import DockerBrokerControl
from kconsole.cluster.errors import ClusterError
from kconsole.cluster.kraft.cluster import KRaftCluster
from kconsole.cluster.kraft.control import KRaftNodeControl
from kconsole.cluster.kraft.spec import KRaftSpec
from kconsole.cluster.local.cluster import LocalCluster
from kconsole.cluster.local.spec import LocalClusterSpec
from kconsole.cluster.procs import PidRecord
from kconsole.cluster.values import ProcState
from kconsole.config import Settings


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A state dir of its own for the audit log."""
    d = tmp_path / "state"
    monkeypatch.setenv("KCONSOLE_STATE_DIR", str(d))
    return d


def zk_dir(path: Path) -> Path:
    """A state dir holding a (stopped) ZooKeeper-mode local cluster, as `cluster up` leaves it."""
    path.mkdir(parents=True)
    (path / "cluster.json").write_text(LocalClusterSpec().to_json())
    return path


def kraft_dir(path: Path, **spec: object) -> Path:
    """A state dir holding a (stopped, formatted) KRaft local cluster's spec."""
    path.mkdir(parents=True)
    saved = KRaftSpec(**spec).with_ids()  # type: ignore[arg-type]
    (path / "cluster.json").write_text(saved.to_json())
    return path


def run(state_dir: Path, *args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, ["cluster", "--state-dir", str(state_dir), *args])
    return res.exit_code, res.output


def audit_lines(state: Path) -> list[dict[str, object]]:
    path = state / "audit.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


class TestModeGuard:
    """One local cluster at a time, in the mode it was created in."""

    def test_kraft_asked_on_a_zookeeper_cluster(self, tmp_path: Path, state: Path) -> None:
        d = zk_dir(tmp_path / "local")
        before = sorted(p.name for p in d.iterdir())
        code, out = run(d, "up", "--mode", "kraft")
        assert code == 1
        assert "ZooKeeper-mode local cluster already exists" in out
        assert "kconsole cluster down --purge" in out
        assert sorted(p.name for p in d.iterdir()) == before  # nothing written
        line = audit_lines(state)[-1]
        assert line["command"] == "cluster.up"
        assert line["outcome"] == "failed"
        assert "down --purge" in str(line["error"])

    def test_combined_implies_kraft_and_is_refused_on_a_zookeeper_cluster(
        self, tmp_path: Path, state: Path
    ) -> None:
        code, out = run(zk_dir(tmp_path / "local"), "up", "--combined")
        assert code == 1
        assert "kconsole cluster down --purge" in out

    def test_zookeeper_asked_on_a_kraft_cluster(self, tmp_path: Path, state: Path) -> None:
        d = kraft_dir(tmp_path / "local")
        code, out = run(d, "up", "--mode", "zookeeper")
        assert code == 1
        assert "KRaft-mode local cluster already exists" in out
        assert "kconsole cluster down --purge" in out
        assert not (d / "zookeeper").exists()

    def test_another_kraft_topology_is_refused(self, tmp_path: Path, state: Path) -> None:
        """A formatted dedicated cluster asked to be combined says so, instead of quietly
        starting the dedicated one."""
        d = kraft_dir(tmp_path / "local")
        code, out = run(d, "up", "--combined")
        assert code == 1
        assert "was created with combined=False" in out
        assert "down --purge" in out
        assert not (d / "node-1").exists() and not (d / "controller-1001").exists()

    def test_new_settings_on_a_formatted_kraft_cluster_are_refused(
        self, tmp_path: Path, state: Path
    ) -> None:
        """Not silently dropped: the cluster keeps what it was created with, and says so."""
        code, out = run(kraft_dir(tmp_path / "local"), "up", "--set", "num.io.threads=8")
        assert code == 1
        assert "was created with overrides={}" in out

    def test_security_asked_of_a_formatted_kraft_cluster_is_refused(
        self, tmp_path: Path, state: Path
    ) -> None:
        """Its SCRAM users could only have been made when it was formatted."""
        code, out = run(kraft_dir(tmp_path / "local"), "up", "--security", "sasl-scram")
        assert code == 1
        assert "was created with security='plaintext'" in out
        # Not asked again: the saved security is kept, only what differs is named.
        code, out = run(kraft_dir(tmp_path / "sasl", security="sasl-scram"), "up", "--combined")
        assert code == 1
        assert "was created with combined=False;" in out

    def test_open_local_follows_the_saved_mode(self, tmp_path: Path) -> None:
        assert isinstance(open_local(kraft_dir(tmp_path / "k")), KRaftCluster)
        assert isinstance(open_local(zk_dir(tmp_path / "z")), LocalCluster)
        assert isinstance(open_local(tmp_path / "none"), LocalCluster)  # the default mode
        assert cluster_mode(tmp_path / "none") is None
        assert cluster_mode(tmp_path / "k") == "kraft"
        with pytest.raises(ClusterError, match="down --purge"):
            open_local(tmp_path / "z", KRaftSpec())
        with pytest.raises(ClusterError, match="down --purge"):
            open_local(tmp_path / "k", LocalClusterSpec())

    def test_a_cluster_json_with_an_unknown_mode(self, tmp_path: Path) -> None:
        d = tmp_path / "x"
        d.mkdir()
        (d / "cluster.json").write_text(json.dumps({"mode": "raft"}))
        with pytest.raises(ClusterError, match="unknown mode 'raft'"):
            open_local(d)


class TestArgumentErrors:
    """Bad options and node names: a clear error, exit 1, nothing started."""

    @pytest.mark.parametrize(
        ("args", "said"),
        [
            (("up", "--combined", "--mode", "zookeeper"), "--combined is a KRaft topology"),
            (("up", "--mode", "kraft", "--racks", "2"), "--racks: ZooKeeper-mode options"),
            (("up", "--mode", "kraft", "--zk-port", "22182"), "--zk-port: ZooKeeper-mode"),
            (("up", "--mode", "kraft", "--set", "zk:tickTime=1000"), "--set zk:"),
            (("up", "--controller-port", "19300"), "--controller-port is for a KRaft cluster"),
            (("up", "--kafka-version", "4.4.0"), "Kafka 4.4.0 has no ZooKeeper mode"),
            (("up", "--mode", "kraft", "--kafka-version", "2.8.2"), "too old"),
            (("up", "--mode", "kraft", "--controller-port", "60000"), "port 60000 is inside"),
            (("up", "--mode", "kraft", "--mtls"), "--mtls needs --security ssl"),
        ],
    )
    def test_up(self, tmp_path: Path, state: Path, args: tuple[str, ...], said: str) -> None:
        d = tmp_path / "fresh"
        code, out = run(d, *args)
        assert code == 1, out
        assert said in out
        assert not (d / "cluster.json").exists()

    @pytest.mark.parametrize(
        ("name", "said"),
        [
            ("1001", "1001 is a controller: name it controller:1001"),
            ("controller:2", "no node 'controller:2'"),
            ("broker:1001", "no node 'broker:1001'"),
            ("seven", "no node 'seven'"),
        ],
    )
    def test_node_names_on_a_kraft_cluster(
        self, tmp_path: Path, state: Path, name: str, said: str
    ) -> None:
        d = kraft_dir(tmp_path / "local")
        code, out = run(d, "stop", name, "--yes")
        assert code == 1
        assert said in out
        assert "controller:1001" in out or "1001" in name  # the names that work are listed

    def test_controller_on_a_zookeeper_cluster(self, tmp_path: Path, state: Path) -> None:
        code, out = run(zk_dir(tmp_path / "local"), "stop", "controller:1", "--yes")
        assert code == 1
        assert "ZooKeeper mode: it has no controller nodes" in out

    def test_stopping_a_node_that_is_not_running(self, tmp_path: Path, state: Path) -> None:
        """The door runs it and says why it failed; the audit line says failed, not done."""
        code, out = run(kraft_dir(tmp_path / "local"), "stop", "controller:1002", "--yes")
        assert code == 1
        assert "cannot stop controller 1002: it is not running" in out
        line = audit_lines(state)[-1]
        assert (line["command"], line["target"], line["outcome"]) == (
            "broker.stop",
            "controller 1002",
            "failed",
        )

    def test_read_only_refuses_a_controller_stop(self, tmp_path: Path, state: Path) -> None:
        d = kraft_dir(tmp_path / "local")
        res = CliRunner().invoke(
            cli,
            ["--read-only", "cluster", "--state-dir", str(d), "kill", "controller:1001", "--yes"],
        )
        assert res.exit_code == 4
        assert "read-only" in res.output
        assert audit_lines(state)[-1]["outcome"] == "refused"


class TestNodeNames:
    def test_dedicated(self) -> None:
        spec = KRaftSpec()
        assert spec.resolve_node("2").name == "broker-2"
        assert spec.resolve_node("broker:2").name == "broker-2"
        assert spec.resolve_node("controller:1003").name == "controller-1003"
        assert spec.resolve_node("Controller-1001").name == "controller-1001"
        assert spec.node_names() == (
            "brokers 1, 2, 3; controller:1001, controller:1002, controller:1003"
        )

    def test_combined_nodes_are_both(self) -> None:
        spec = KRaftSpec(combined=True)
        assert spec.resolve_node("1").name == "node-1"
        assert spec.resolve_node("controller:1").name == "node-1"
        assert spec.resolve_node("node-3").name == "node-3"
        with pytest.raises(ClusterError, match="no node 'controller:1001'"):
            spec.resolve_node("controller:1001")


class TestStoppedCluster:
    """A KRaft state dir with nothing running."""

    def test_status_says_every_node_stopped_and_the_quorum_unknown(
        self, tmp_path: Path, state: Path
    ) -> None:
        d = kraft_dir(tmp_path / "local", combined=True)
        code, out = run(d, "status")
        assert code == 0, out
        assert "KRaft mode, 3 combined broker+controller nodes" in out
        assert "quorum:      unknown (no controller is running)" in out
        assert out.count(" stopped ") == 3
        code, out = run(d, "status", "--json")
        data = json.loads(out)
        assert data["quorum"] is None
        assert data["quorum_error"] == "no controller is running"
        assert [(n["cli_name"], n["roles"], n["state"]) for n in data["nodes"]] == [
            (str(i), ["broker", "controller"], "stopped") for i in (1, 2, 3)
        ]

    def test_status_of_a_secured_cluster_says_how_a_client_gets_in(
        self, tmp_path: Path, state: Path
    ) -> None:
        d = kraft_dir(tmp_path / "local", security="sasl-scram")
        code, out = run(d, "status")
        assert code == 0, out
        assert (
            "security:    sasl-scram (SASL_PLAINTEXT, SCRAM-SHA-512): user kconsole, password "
            f"in {d / 'security' / 'client-password'}"
        ) in out

    def test_logs_of_a_node_with_no_log_yet(self, tmp_path: Path, state: Path) -> None:
        code, out = run(kraft_dir(tmp_path / "local"), "logs", "controller:1001")
        assert code == 1
        assert "no log yet" in out and "controller-1001" in out

    def test_the_backend_of_a_kraft_state_dir(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The console's broker keys get the KRaft nodes' control, by the same protocol the
        ZooKeeper-mode cluster's has; its states are the brokers' (controllers apart)."""
        # stopped, and no compose project on its ports: the local cluster all the same
        monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/kconsole-test/docker.sock")
        d = kraft_dir(tmp_path / "local")
        settings = Settings(backend="auto", cluster_dir=d)  # the default bootstrap 19092-19094
        control, what = choose_backend(settings)
        assert isinstance(control, KRaftNodeControl), what
        assert control.states() == {b: ProcState.STOPPED for b in (1, 2, 3)}
        assert set(control.node_states()) == {1, 2, 3, 1001, 1002, 1003}
        assert control.label(1002) == "controller 1002"
        assert control.label(2) == "broker 2"
        other = Settings(backend="auto", cluster_dir=d, bootstrap="127.0.0.1:29092")
        control, why = choose_backend(other, docker_timeout=0.5)
        assert not isinstance(control, KRaftNodeControl)
        assert control is not None or "serves 127.0.0.1:19092" in why


class FakeComposeProject:
    """What choose_backend asks of a docker compose project's control."""

    def __init__(self, ports: set[int]):
        self.ports = ports

    def published_ports(self) -> set[int]:
        return self.ports


class TestAutoBackendOfAKRaftStateDir:
    """ "auto" and a KRaft local cluster on the compose project's ports: the local one while
    any of its nodes runs (a controller is enough), else the compose brokers."""

    @pytest.fixture
    def discovered(self, monkeypatch: pytest.MonkeyPatch) -> list[str]:
        """The projects docker discovery was asked for; it finds brokers on 19092-19094."""
        asked: list[str] = []

        def discover(project: str, **_: object) -> tuple[object, str]:
            asked.append(project)
            return FakeComposeProject({19092, 19093, 19094}), f"docker compose project {project!r}"

        monkeypatch.setattr(DockerBrokerControl, "discover", staticmethod(discover))
        return asked

    @staticmethod
    def run_node(state_dir: Path, name: str) -> None:
        me = psutil.Process()
        pid_file = open_local(state_dir).process(name).pid_file
        pid_file.parent.mkdir(parents=True, exist_ok=True)
        pid_file.write_text(PidRecord(me.pid, me.create_time()).to_json())

    def test_a_running_controller_keeps_the_local_cluster(
        self, tmp_path: Path, discovered: list[str]
    ) -> None:
        d = kraft_dir(tmp_path / "local")
        self.run_node(d, "controller-1002")
        control, what = choose_backend(Settings(backend="auto", cluster_dir=d))
        assert isinstance(control, KRaftNodeControl), what
        assert what == f"local cluster in {d}"
        assert discovered == []  # docker was not even asked

    def test_no_node_running_gives_the_compose_brokers(
        self, tmp_path: Path, discovered: list[str]
    ) -> None:
        d = kraft_dir(tmp_path / "local")
        settings = Settings(backend="auto", cluster_dir=d, compose_project="kafka-lab")
        control, what = choose_backend(settings)
        assert isinstance(control, FakeComposeProject), what
        assert discovered == ["kafka-lab"]
        assert what == (
            f"docker compose project 'kafka-lab': the local cluster in {d} has no process "
            "running; docker compose project 'kafka-lab' publishes the bootstrap ports"
        )

    def test_no_node_running_and_compose_elsewhere_keeps_the_local_cluster(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(
            DockerBrokerControl,
            "discover",
            staticmethod(lambda project, **_: (FakeComposeProject({9092}), "found")),
        )
        d = kraft_dir(tmp_path / "local")
        control, what = choose_backend(Settings(backend="auto", cluster_dir=d))
        assert isinstance(control, KRaftNodeControl), what
        assert "no process running" in what and "publish 9092" in what


class TestQuorumReading:
    """What a start's verification reads of DescribeQuorum (the shape kafka-python's
    to_dict() gives: a dead voter has -1s)."""

    RESPONSE = {
        "error_code": 0,
        "topics": [
            {
                "partitions": [
                    {
                        "error_code": 0,
                        "leader_id": 1002,
                        "leader_epoch": 7,
                        "high_watermark": 900,
                        "current_voters": [
                            {"replica_id": 1001, "log_end_offset": 880,
                             "last_fetch_timestamp": 5000, "last_caught_up_timestamp": 4000},
                            {"replica_id": 1002, "log_end_offset": 901,
                             "last_fetch_timestamp": -1, "last_caught_up_timestamp": -1},
                            {"replica_id": 1003, "log_end_offset": -1,
                             "last_fetch_timestamp": -1, "last_caught_up_timestamp": -1},
                        ],
                        "observers": [
                            {"replica_id": 1, "log_end_offset": 901,
                             "last_fetch_timestamp": 5100, "last_caught_up_timestamp": 5100},
                        ],
                    }
                ]
            }
        ],
    }  # fmt: skip

    def test_lag_and_timestamps(self) -> None:
        from kconsole.cluster.kraft.probes import quorum_from_response

        q = quorum_from_response(self.RESPONSE)
        assert q is not None
        assert (q.leader_id, q.leader_epoch, q.voter_ids) == (1002, 7, [1001, 1002, 1003])
        assert q.lag(1001) == 21
        assert q.lag(1) == 0
        assert q.lag(1003) is None  # never fetched: unknown, not 0
        assert q.lag(42) is None
        voter = q.voter(1001)
        assert voter is not None
        assert (voter.last_fetch_ms, voter.last_caught_up_ms) == (5000, 4000)

    def test_back_in_quorum_only_after_the_start(self, tmp_path: Path) -> None:
        """A controller counts as back only when the leader saw it fetch and catch up after
        the start: an earlier fetch (the previous process's) does not count."""
        from kconsole.cluster.kraft.probes import quorum_from_response

        cluster = KRaftCluster(kraft_dir(tmp_path / "k"))
        q = quorum_from_response(self.RESPONSE)
        cluster.quorum = lambda timeout_s=2.0: q  # type: ignore[method-assign]
        assert cluster._back_in_quorum(1001, since_ms=3000) == (1002, 21)
        assert cluster._back_in_quorum(1001, since_ms=4500) is None  # caught up before it
        assert cluster._back_in_quorum(1003, since_ms=0) is None
        assert cluster._back_in_quorum(1002, since_ms=10**13) == (1002, 0)  # it leads

    def test_start_messages(self) -> None:
        from kconsole.cluster.kraft.cluster import NodeStart

        broker = NodeStart("broker-2", ("broker",), 42, unfenced_s=2.5)
        assert broker.message == "broker 2 started (pid 42), registered and unfenced after 2.5 s"
        ctl = NodeStart(
            "controller-1001", ("controller",), 7, in_quorum_s=4.9, quorum_leader=1002, lag=1
        )
        assert "controller 1001 started (pid 7), back in the quorum after 4.9 s" in ctl.message
        assert "fetching from leader 1002" in ctl.message
        both = NodeStart("node-1", ("broker", "controller"), 9, 3.0, 2.0, 1, 0)
        assert both.message == (
            "node 1 (broker+controller) started (pid 9), registered and unfenced after 3.0 s, "
            "quorum leader after 2.0 s"
        )
