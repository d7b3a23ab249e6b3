"""The docker backend on a KRaft compose project (compose/docker-compose.kraft.yml), with no
Docker engine: controllers acted on by node id, as the local KRaft backend does, and a start
reported only once verified (a broker unfenced, a controller back in the quorum).

The stand-in engine holds the containers `docker compose up` of the KRaft file creates (labels,
environment and port bindings from the file, variables at their defaults) and changes their
states by the engine's rules; its containers have the SDK's signatures where kconsole calls
them (checked below, as tests/unit/test_docker_backend.py does for the ZooKeeper file).
"""

from __future__ import annotations

import copy
import inspect
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from docker.models.containers import Container

from kconsole.cluster.backends import kraft_reads
from kconsole.cluster.docker.control import (
    DockerBrokerControl,
    KRaftReads,
    node_id_of,
    stale_session_left_s,
)
from kconsole.cluster.errors import ClusterError
from kconsole.cluster.kraft.cluster import UNFENCED_LINE
from kconsole.cluster.kraft.probes import QuorumReplica, QuorumState
from kconsole.cluster.values import BrokerAction, ProcState
from kconsole.commands import Commands
from kconsole.config import Settings

COMPOSE_FILE = Path(__file__).resolve().parents[2] / "compose" / "docker-compose.kraft.yml"
_DEFAULT = re.compile(r"\$\{(\w+):-([^}]*)\}")
T0 = 1_800_000_000.0  # the wall clock when a test starts


def resolved(value: Any) -> str:
    return _DEFAULT.sub(lambda m: m[2], str(value))


def kraft_containers(project: str = "kconsole") -> list[dict[str, Any]]:
    """`docker inspect` (the parts kconsole reads) of every service of the KRaft file."""
    services = yaml.safe_load(COMPOSE_FILE.read_text())["services"]
    out = []
    for n, (service, spec) in enumerate(sorted(services.items()), start=1):
        bindings: dict[str, list[dict[str, str]]] = {}
        for port in spec.get("ports", []):
            ip, host_port, container_port = resolved(port).split(":")
            bindings[f"{container_port}/tcp"] = [{"HostIp": ip, "HostPort": host_port}]
        labels = {
            "com.docker.compose.project": project,
            "com.docker.compose.service": service,
            "com.docker.compose.oneoff": "False",
            **{k: str(v) for k, v in (spec.get("labels") or {}).items()},
        }
        env = [f"{k}={resolved(v)}" for k, v in (spec.get("environment") or {}).items()]
        out.append(
            {
                "Id": f"{project}{n:02d}".encode().hex().ljust(64, "0"),
                "Name": f"/{project}-{service}-1",
                "State": state_of("running"),
                "Config": {"Hostname": service, "Labels": labels, "Env": env},
                "HostConfig": {"PortBindings": bindings},
            }
        )
    return out


def state_of(status: str, exit_code: int = 0, finished: str = "") -> dict[str, Any]:
    return {
        "Status": status,
        "Running": status in ("running", "paused"),
        "ExitCode": exit_code,
        "FinishedAt": finished or "0001-01-01T00:00:00Z",
    }


class Engine:
    def __init__(self, attrs: list[dict[str, Any]]):
        self.by_id = {a["Id"]: a for a in attrs}
        self.calls: list[tuple[str, str]] = []
        self.logs: dict[str, list[tuple[float, str]]] = {}  # name -> (wall time, line)
        self.on_start: dict[str, Any] = {}  # name -> called after its start

    def find(self, name: str) -> dict[str, Any]:
        return next(a for a in self.by_id.values() if a["Name"] == f"/{name}")

    def apply(self, action: str, cid: str) -> None:
        a = self.by_id[cid]
        name = a["Name"].lstrip("/")
        self.calls.append((action, name))
        new = {
            "stop": ("exited", 143),
            "kill": ("exited", 137),
            "pause": ("paused", 0),
            "unpause": ("running", 0),
            "start": ("running", 0),
        }[action]
        a["State"] = state_of(*new)
        if action == "start" and name in self.on_start:
            self.on_start[name]()


class FakeContainer:
    def __init__(self, engine: Engine, attrs: dict[str, Any]):
        self._engine = engine
        self.id = attrs["Id"]
        self.attrs = copy.deepcopy(attrs)

    @property
    def name(self) -> str:
        return str(self.attrs["Name"]).lstrip("/")

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.attrs["Config"]["Labels"])

    @property
    def status(self) -> str:
        return str(self.attrs["State"]["Status"])

    def stop(self, timeout: int | None = None) -> None:
        self._engine.apply("stop", self.id)

    def kill(self, signal: str | int | None = None) -> None:
        self._engine.apply("kill", self.id)

    def pause(self) -> None:
        self._engine.apply("pause", self.id)

    def unpause(self) -> None:
        self._engine.apply("unpause", self.id)

    def start(self) -> None:
        self._engine.apply("start", self.id)

    def reload(self) -> None:
        self.attrs = copy.deepcopy(self._engine.by_id[self.id])

    def logs(
        self,
        stdout: bool = True,
        stderr: bool = True,
        stream: bool = False,
        timestamps: bool = False,
        tail: str | int = "all",
        since: Any = None,
        follow: bool | None = None,
        until: Any = None,
    ) -> bytes:
        lines = self._engine.logs.get(self.name, [])
        return "".join(f"{line}\n" for t, line in lines if since is None or t >= since).encode()


class FakeContainers:
    def __init__(self, engine: Engine):
        self._engine = engine

    def list(self, all: bool = False, filters: dict[str, Any] | None = None, **_: Any) -> list:
        wanted = (filters or {}).get("label", [])
        out = []
        for a in self._engine.by_id.values():
            labels = a["Config"]["Labels"]
            shown = all or a["State"]["Status"] == "running"
            pairs = [f.partition("=") for f in wanted]
            if shown and not [k for k, _, v in pairs if labels.get(k) != v]:
                out.append(FakeContainer(self._engine, a))
        return out


class FakeApi:
    """docker.APIClient.containers: the list as the engine answers it (labels, state)."""

    def __init__(self, engine: Engine):
        self._engine = engine

    def containers(
        self, all: bool = False, filters: dict[str, Any] | None = None, **_: Any
    ) -> list:
        listed = FakeContainers(self._engine).list(all=all, filters=filters)
        return [
            {
                "Id": c.id,
                "Names": ["/" + c.name],
                "Labels": c.labels,
                "State": c.status,
            }
            for c in listed
        ]


class FakeClient:
    def __init__(self, engine: Engine):
        self.containers = FakeContainers(engine)
        self.api = FakeApi(engine)

    def close(self) -> None:
        pass


class Reads(KRaftReads):
    """KRaftReads answering from the test: quorum states and fencings in turn (the last one
    repeats), recording which controllers it was asked."""

    def __init__(self, quorums: list[QuorumState | None], fencings: list[dict[int, bool]]):
        super().__init__("127.0.0.1:19092")
        self.quorums, self.fencings = quorums, fencings
        self.asked: list[list[tuple[str, int]]] = []

    def quorum(self, controllers: list[tuple[str, int]]) -> QuorumState | None:
        self.asked.append(controllers)
        return self.quorums.pop(0) if len(self.quorums) > 1 else self.quorums[0]

    def fencing(self) -> dict[int, bool]:
        return self.fencings.pop(0) if len(self.fencings) > 1 else self.fencings[0]


def quorum(leader: int, fetched_ms: int, caught_up_ms: int | None = None) -> QuorumState:
    caught = fetched_ms if caught_up_ms is None else caught_up_ms
    voters = tuple(
        QuorumReplica(nid, 100, fetched_ms, caught) if nid != leader else QuorumReplica(nid, 100)
        for nid in (1001, 1002, 1003)
    )
    return QuorumState(leader, 3, 100, voters, ())


class Clock:
    """Wall and monotonic clocks that only a sleep moves."""

    def __init__(self) -> None:
        self.now = T0

    def wall(self) -> float:
        return self.now

    def mono(self) -> float:
        return self.now - T0

    def sleep(self, s: float) -> None:
        self.now += s


@pytest.fixture
def engine() -> Engine:
    return Engine(kraft_containers("kconsole") + kraft_containers("other"))


@pytest.fixture
def clock() -> Clock:
    return Clock()


def control_for(engine: Engine, clock: Clock, reads: KRaftReads | None) -> DockerBrokerControl:
    return DockerBrokerControl(
        FakeClient(engine),
        project="kconsole",
        clock=clock.wall,
        sleep=clock.sleep,
        monotonic=clock.mono,
        kraft=reads,
        register_timeout=30.0,
    )


def acts(engine: Engine) -> list[tuple[str, str]]:
    return list(engine.calls)


# ------------------------------------------------------------------------------------------


def test_fake_logs_has_the_sdk_signature() -> None:
    sdk = [p.name for p in inspect.signature(Container.logs).parameters.values()]
    assert sdk == ["self", "kwargs"]  # forwarded to APIClient.logs
    from docker.api.client import APIClient

    api = [p.name for p in inspect.signature(APIClient.logs).parameters.values()]
    fake = [p.name for p in inspect.signature(FakeContainer.logs).parameters.values()]
    assert fake == [n for n in api if n != "container"]


def test_discovery_states_and_labels(engine: Engine) -> None:
    control, what = DockerBrokerControl.discover("kconsole", client=FakeClient(engine))
    assert control is not None, what
    assert what == "docker compose project 'kconsole' (brokers 1, 2, 3)"
    running = ProcState.RUNNING
    assert control.states() == {1: running, 2: running, 3: running}  # brokers only
    set_status(engine, "kconsole-controller-2-1", "exited")
    assert control.node_states() == {
        1: running,
        2: running,
        3: running,
        1001: running,
        1002: ProcState.STOPPED,
        1003: running,
    }
    # the controllers alone, for the observer: a stopped one is shown down
    assert control.controller_states() == {1001: running, 1002: ProcState.STOPPED, 1003: running}
    assert Commands(control).controller_states() == control.controller_states
    assert control.label(2) == "broker 2" and control.label(1003) == "controller 1003"
    with pytest.raises(ClusterError, match="no node 7"):
        control.label(7)
    assert control.controller_addresses() == [
        ("127.0.0.1", 19192),
        ("127.0.0.1", 19193),
        ("127.0.0.1", 19194),
    ]
    assert control.published_ports() == {19092, 19093, 19094}  # the brokers'


def set_status(engine: Engine, name: str, status: str, code: int = 0, finished: str = "") -> None:
    engine.find(name)["State"] = state_of(status, code, finished)


def test_node_id_label() -> None:
    assert node_id_of({"dev.kconsole.role": "controller", "dev.kconsole.node-id": "1002"}) == 1002
    assert node_id_of({"dev.kconsole.role": "controller"}) is None
    labels = {"dev.kconsole.role": "broker", "com.docker.compose.service": "kafka-3"}
    assert node_id_of(labels) == 3


@pytest.mark.parametrize(
    ("text", "node"),
    [("2", 2), ("broker:2", 2), (" Controller:1001 ", 1001), ("controller:1003", 1003)],
)
def test_resolve_node(engine: Engine, clock: Clock, text: str, node: int) -> None:
    assert control_for(engine, clock, None).resolve_node(text) == node


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("1001", "1001 is a controller: name it controller:1001"),
        ("controller:2", "no node 'controller:2'.*nodes: brokers 1, 2, 3; controller:1001"),
        ("broker:1001", "no node 'broker:1001'"),
        ("zookeeper", "no node 'zookeeper'"),
    ],
)
def test_resolve_node_refuses(engine: Engine, clock: Clock, text: str, error: str) -> None:
    with pytest.raises(ClusterError, match=error):
        control_for(engine, clock, None).resolve_node(text)


def test_a_zookeeper_project_names_no_nodes(engine: Engine, clock: Clock) -> None:
    for a in engine.by_id.values():
        if a["Config"]["Labels"].get("dev.kconsole.role") == "controller":
            a["Config"]["Labels"]["dev.kconsole.role"] = "gone"
    assert control_for(engine, clock, None).resolve_node("controller:1001") is None


def test_controller_stop_kill_pause_resume(engine: Engine, clock: Clock) -> None:
    control = control_for(engine, clock, None)
    said = control.act(BrokerAction.STOP, 1001)
    assert said.startswith("controller 1001 stopped (docker stop, SIGTERM, exited after")
    assert "container kconsole-controller-1-1, exit code 143" in said
    assert control.node_states()[1001] is ProcState.STOPPED
    assert "controller 1002 killed (docker kill, SIGKILL" in control.act(BrokerAction.KILL, 1002)
    assert "controller 1003 paused" in control.act(BrokerAction.PAUSE, 1003)
    assert "controller 1003 resumed" in control.act(BrokerAction.RESUME, 1003)
    assert acts(engine) == [
        ("stop", "kconsole-controller-1-1"),
        ("kill", "kconsole-controller-2-1"),
        ("pause", "kconsole-controller-3-1"),
        ("unpause", "kconsole-controller-3-1"),
    ]
    with pytest.raises(ClusterError, match="cannot kill controller 1001: it is not running"):
        control.act(BrokerAction.KILL, 1001)
    with pytest.raises(ClusterError, match="controller 1003 is already running"):
        control.act(BrokerAction.START, 1003)
    assert "broker 2 stopped (docker stop, controlled shutdown" in control.act(BrokerAction.STOP, 2)


def test_a_broker_stop_without_a_quorum_leader_is_refused(engine: Engine, clock: Clock) -> None:
    """As the local KRaft backend: its controlled shutdown would wait for a leader that cannot
    answer; an election under way (a leader within QUORUM_GRACE_S) is waited for."""
    with pytest.raises(ClusterError, match=r"not stopping broker 2: no controller answers"):
        control_for(engine, clock, Reads([None], [{}])).act(BrokerAction.STOP, 2)
    assert acts(engine) == [] and clock.now - T0 >= 6.0
    reads = Reads([None, None, quorum(1001, 0)], [{}])
    said = control_for(engine, clock, reads).act(BrokerAction.STOP, 2)
    assert said.startswith("broker 2 stopped (docker stop, controlled shutdown")
    # a controller's stop needs no leader
    control_for(engine, clock, Reads([None], [{}])).act(BrokerAction.STOP, 1001)
    assert acts(engine) == [("stop", "kconsole-kafka-2-1"), ("stop", "kconsole-controller-1-1")]


def test_unknown_node_names_the_controllers(engine: Engine, clock: Clock) -> None:
    with pytest.raises(ClusterError, match=r"brokers with containers: 1, 2, 3; controllers: 1001"):
        control_for(engine, clock, None).act(BrokerAction.STOP, 7)


def test_controller_start_is_done_once_back_in_the_quorum(engine: Engine, clock: Clock) -> None:
    """Done only when the leader says the controller fetched and caught up after the start:
    no leader yet, then an answer from before the start, do not count."""
    set_status(engine, "kconsole-controller-1-1", "exited", 143)
    start_ms = int(T0 * 1000)
    reads = Reads(
        [
            None,
            quorum(1002, start_ms - 5000),
            quorum(1002, start_ms + 10, start_ms - 1),
            quorum(1002, start_ms + 900),
        ],
        [{}],
    )
    said: list[str] = []
    control = control_for(engine, clock, reads)
    message = control.act(BrokerAction.START, 1001, progress=said.append)
    assert acts(engine) == [("start", "kconsole-controller-1-1")]
    assert message.startswith(
        "controller 1001 started (docker start; container kconsole-controller-1-1), back in "
        "the quorum after 0.8 s"
    )
    assert "fetching from leader 1002" in message
    assert said == ["starting controller 1001; waiting until it is back in its role"]
    # asked of the controllers where the host reaches them
    assert reads.asked[0] == [("127.0.0.1", 19192), ("127.0.0.1", 19193), ("127.0.0.1", 19194)]


def test_controller_start_that_leads(engine: Engine, clock: Clock) -> None:
    set_status(engine, "kconsole-controller-3-1", "exited", 137)
    control = control_for(engine, clock, Reads([quorum(1003, 0)], [{}]))
    assert "quorum leader after 0.0 s" in control.act(BrokerAction.START, 1003)


def test_broker_start_is_done_once_it_logged_its_unfencing_and_is_unfenced(
    engine: Engine, clock: Clock
) -> None:
    """An unfencing logged before the start (the old process's) does not count; nor does the
    metadata still showing it fenced."""
    set_status(engine, "kconsole-kafka-2-1", "exited", 143)
    engine.logs["kconsole-kafka-2-1"] = [(T0 - 60, UNFENCED_LINE)]

    def unfenced_later() -> None:
        engine.logs["kconsole-kafka-2-1"].append((T0 + 0.5, "[x] INFO " + UNFENCED_LINE))

    engine.on_start["kconsole-kafka-2-1"] = unfenced_later
    reads = Reads(
        [None], [{1: False, 2: True, 3: False}, {1: False, 2: True, 3: False}, {2: False}]
    )
    message = control_for(engine, clock, reads).act(BrokerAction.START, 2)
    assert message == (
        "broker 2 started (docker start; container kconsole-kafka-2-1), registered and "
        "unfenced after 0.5 s"
    )


def test_broker_start_without_its_own_unfencing_times_out(engine: Engine, clock: Clock) -> None:
    set_status(engine, "kconsole-kafka-2-1", "exited", 143)
    engine.logs["kconsole-kafka-2-1"] = [(T0 - 60, UNFENCED_LINE)]  # the old process's
    reads = Reads([None], [{2: False}])  # an old registration, still unfenced
    with pytest.raises(ClusterError, match="was not seen registered and unfenced within 30 s"):
        control_for(engine, clock, reads).act(BrokerAction.START, 2)


def test_start_fails_when_the_container_exits(engine: Engine, clock: Clock) -> None:
    set_status(engine, "kconsole-controller-2-1", "exited", 143)
    control = control_for(engine, clock, Reads([None], [{}]))

    def dies() -> None:
        set_status(engine, "kconsole-controller-2-1", "exited", 1)

    engine.on_start["kconsole-controller-2-1"] = dies
    with pytest.raises(
        ClusterError, match="docker started container kconsole-controller-2-1 but it is exited"
    ):
        control.act(BrokerAction.START, 1002)


def test_start_without_reads_says_it_was_not_verified(engine: Engine, clock: Clock) -> None:
    set_status(engine, "kconsole-controller-2-1", "exited", 143)
    message = control_for(engine, clock, None).act(BrokerAction.START, 1002)
    assert "container running; not verified further" in message


def test_a_killed_kraft_broker_starts_without_a_zookeeper_wait(
    engine: Engine, clock: Clock
) -> None:
    """A KRaft broker has no ZooKeeper session: killed a second ago, it starts at once."""
    killed_at = "2027-01-15T08:00:00.000000000Z"  # T0 - 1 s would do as well: never waited
    set_status(engine, "kconsole-kafka-3-1", "exited", 137, killed_at)
    attrs = engine.find("kconsole-kafka-3-1")
    assert stale_session_left_s(attrs, T0) == 0.0
    zk_like = copy.deepcopy(attrs)
    zk_like["Config"]["Env"] = ["KAFKA_ZOOKEEPER_SESSION_TIMEOUT_MS=6000"]
    from kconsole.cluster.docker.control import _finished_at

    assert stale_session_left_s(zk_like, (_finished_at(attrs) or 0) + 1) > 0
    said: list[str] = []
    message = control_for(engine, clock, None).act(BrokerAction.START, 3, progress=said.append)
    assert (
        clock.now == T0 and "ZooKeeper" not in message and not any("ZooKeeper" in s for s in said)
    )


def test_kraft_reads_ask_the_configured_controllers_first(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, list[int]]] = []
    leader = quorum(1002, 0)

    def fake(host: str, ports: list[int], timeout_s: float = 2.0) -> QuorumState | None:
        asked.append((host, ports))
        return leader if ports == [19193] else None

    monkeypatch.setattr("kconsole.cluster.kraft.probes.quorum_from_controllers", fake)
    reads = KRaftReads("127.0.0.1:19092", "localhost:19194,127.0.0.1:19193")
    found = reads.quorum([("127.0.0.1", 19192), ("127.0.0.1", 19193)])
    assert found is leader
    assert asked == [("localhost", [19194]), ("127.0.0.1", [19193])]


def test_backends_give_the_docker_backend_the_kraft_settings() -> None:
    settings = Settings(
        bootstrap="127.0.0.1:23092", bootstrap_controller="127.0.0.1:23192,127.0.0.1:23193"
    )
    reads = kraft_reads(settings)
    assert (reads.bootstrap, reads.bootstrap_controller) == (
        "127.0.0.1:23092",
        "127.0.0.1:23192,127.0.0.1:23193",
    )


def test_cli_acts_on_a_controller_by_name(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kconsole --backend docker cluster stop controller:1001` on a KRaft compose project;
    a controller's bare id is refused, naming how to say it."""
    from click.testing import CliRunner

    from kconsole.cli import main
    from kconsole.commands.auditlog import AuditLog

    monkeypatch.setattr(
        "kconsole.cluster.docker.control.connect", lambda timeout=0: FakeClient(engine)
    )

    def cli(*args: str) -> tuple[int, str]:
        res = CliRunner().invoke(
            main,
            [
                "--backend",
                "docker",
                "--bootstrap",
                "127.0.0.1:9",
                "--zookeeper",
                "",
                "cluster",
                "--state-dir",
                str(tmp_path / "local"),
                *args,
            ],
            env={"KCONSOLE_STATE_DIR": str(tmp_path / "state"), "KCONSOLE_CONFIG": ""},
        )
        return res.exit_code, res.output

    code, out = cli("stop", "1001", "--yes")
    assert code == 1 and "1001 is a controller: name it controller:1001" in out
    assert acts(engine) == []
    code, out = cli("stop", "controller:1001", "--yes")
    assert code == 0, out
    assert "controller 1001 stopped (docker stop, SIGTERM" in out
    assert acts(engine) == [("stop", "kconsole-controller-1-1")]
    audit = list(AuditLog(tmp_path / "state" / "audit.jsonl").entries())
    assert [(e["command"], e["target"], e["outcome"]) for e in audit][-1] == (
        "broker.stop",
        "controller 1001",
        "done",
    )
