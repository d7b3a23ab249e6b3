"""Contract tests for the docker backend and the backend choice, with no Docker engine.

Two stand-ins for the engine, both built from compose/docker-compose.yml the way Compose v2
labels and names its containers:

- FakeDockerClient implements exactly the docker SDK surface DockerBrokerControl uses, with the
  SDK's own signatures (checked against the installed SDK below), so an unknown keyword or a
  signature drift fails here rather than against a real engine.
- FakeEngineServer speaks the Engine HTTP API for the same calls, so the real SDK (URL, query
  parameters, label filters, error decoding) is exercised end to end via DOCKER_HOST.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import docker
import psutil
import pytest
import requests
import yaml
from docker.api.client import APIClient
from docker.models.containers import Container, ContainerCollection

from kconsole.cluster.backends import choose_backend, open_local, serves
from kconsole.cluster.control import BrokerControl
from kconsole.cluster.docker.control import (
    STOP_TIMEOUT_S,
    DockerBrokerControl,
    broker_id_of,
    proc_state,
)
from kconsole.cluster.errors import ClusterError
from kconsole.cluster.local.cluster import LocalCluster, LocalClusterSpec
from kconsole.cluster.local.control import LocalBrokerControl
from kconsole.cluster.procs import PidRecord
from kconsole.cluster.values import BrokerAction, ProcState
from kconsole.config import Settings

COMPOSE_FILE = Path(__file__).resolve().parents[2] / "compose" / "docker-compose.yml"
NO_ENGINE = "unix:///nonexistent/kconsole-test/docker.sock"

# ------------------------------------------------------------------------------------------
# Containers as the engine reports them for `docker compose up` of compose/docker-compose.yml
# ------------------------------------------------------------------------------------------


@functools.cache
def compose_services() -> dict[str, Any]:
    # Compose's interpolation with no variable set: ${NAME:-default} is the default
    text = re.sub(r"\$\{[A-Za-z0-9_]+:-([^}]*)\}", r"\1", COMPOSE_FILE.read_text())
    services = yaml.safe_load(text)["services"]
    assert isinstance(services, dict)
    return services


def compose_containers(project: str = "kconsole", status: str = "running") -> list[dict]:
    """`docker inspect` output (the parts kconsole reads) of every service of the compose file,
    as Compose v2 creates them: name <project>-<service>-1, com.docker.compose.* labels plus the
    service's own labels, port bindings from the short port syntax."""
    services = copy.deepcopy(compose_services())
    out = []
    for n, (service, spec) in enumerate(sorted(services.items()), start=1):
        bindings: dict[str, list[dict[str, str]]] = {}
        for port in spec.get("ports", []):
            ip, host_port, container_port = str(port).split(":")
            bindings[f"{container_port}/tcp"] = [{"HostIp": ip, "HostPort": host_port}]
        labels = {
            "com.docker.compose.config-hash": f"{n:064x}",
            "com.docker.compose.container-number": "1",
            "com.docker.compose.oneoff": "False",
            "com.docker.compose.project": project,
            "com.docker.compose.project.config_files": str(COMPOSE_FILE),
            "com.docker.compose.project.working_dir": str(COMPOSE_FILE.parent),
            "com.docker.compose.service": service,
            "com.docker.compose.version": "2.29.7",
            **{k: str(v) for k, v in (spec.get("labels") or {}).items()},
        }
        out.append(
            {
                "Id": f"{project}{n:02d}".encode().hex().ljust(64, "0"),
                "Name": f"/{project}-{service}-1",
                "State": state_of(status),
                "Config": {"Hostname": service, "Labels": labels},
                "HostConfig": {"PortBindings": bindings, "RestartPolicy": {"Name": "no"}},
            }
        )
    return out


def state_of(status: str, exit_code: int = 0) -> dict[str, Any]:
    return {
        "Status": status,
        "Running": status in ("running", "paused", "restarting"),
        "Paused": status == "paused",
        "Restarting": status == "restarting",
        "Dead": status == "dead",
        "ExitCode": exit_code,
    }


def api_error(status: int, message: str) -> docker.errors.APIError:
    """An APIError as the SDK builds it from an engine response."""
    response = requests.Response()
    response.status_code = status
    response.reason = {304: "Not Modified", 404: "Not Found", 409: "Conflict"}.get(status, "")
    response.url = "http+docker://localhost/v1.45/containers/x"
    return docker.errors.APIError(
        requests.exceptions.HTTPError(f"{status} error"), response=response, explanation=message
    )


class Engine:
    """Container states and the engine's rules for changing them (Moby's behaviour)."""

    def __init__(self, attrs: list[dict]):
        self.by_id = {a["Id"]: a for a in attrs}
        self.calls: list[tuple[str, str, dict[str, Any]]] = []  # (action, name, arguments)
        self.fail: dict[tuple[str, str], tuple[int, str]] = {}  # (action, name) -> error

    def find(self, name_or_id: str) -> dict:
        for a in self.by_id.values():
            if name_or_id in (a["Id"], a["Name"].lstrip("/")):
                return a
        raise KeyError(name_or_id)

    def listing(self, all_: bool, label_filters: list[str]) -> list[dict]:
        def matches(labels: dict[str, str]) -> bool:
            for f in label_filters:
                key, sep, value = f.partition("=")
                if key not in labels or (sep and labels[key] != value):
                    return False
            return True

        return [
            a
            for a in self.by_id.values()
            if (all_ or a["State"]["Status"] == "running") and matches(a["Config"]["Labels"])
        ]

    def apply(self, action: str, cid: str, args: dict[str, Any]) -> tuple[int, str]:
        """Carry out an action; (HTTP status, error message or "")."""
        a = self.by_id[cid]
        name = a["Name"].lstrip("/")
        self.calls.append((action, name, args))
        if (action, name) in self.fail:
            return self.fail.pop((action, name))
        status = a["State"]["Status"]
        running = a["State"]["Running"]
        if action == "stop":
            if not running:
                return 304, ""
            a["State"] = state_of("exited", 143)
        elif action == "kill":
            if not running:
                return 409, f"Cannot kill container: {cid}: Container {cid} is not running"
            a["State"] = state_of("exited", 137)
        elif action == "pause":
            if status == "paused":
                return 409, f"Container {cid} is already paused"
            if not running:
                return 409, f"Container {cid} is not running"
            a["State"] = state_of("paused")
        elif action == "unpause":
            if status != "paused":
                return 409, f"Container {cid} is not paused"
            a["State"] = state_of("running")
        elif action == "start":
            if running:
                return 304, ""
            a["State"] = state_of("running")
        else:
            raise AssertionError(f"unexpected action {action}")
        return 204, ""


# ------------------------------------------------------------------------------------------
# The fake SDK client: the surface DockerBrokerControl uses, with the SDK's signatures
# ------------------------------------------------------------------------------------------


class FakeContainer:
    """docker.models.containers.Container: attrs are a snapshot, refreshed by reload()."""

    def __init__(self, engine: Engine, attrs: dict):
        self._engine = engine
        self.id = attrs["Id"]
        self.attrs = copy.deepcopy(attrs)

    @property
    def name(self) -> str:
        return self.attrs["Name"].lstrip("/")

    @property
    def labels(self) -> dict[str, str]:
        return self.attrs["Config"].get("Labels") or {}

    @property
    def status(self) -> str:
        return self.attrs["State"]["Status"]

    def _call(self, action: str, **args: Any) -> None:
        code, message = self._engine.apply(action, self.id, args)
        if code >= 400:
            raise api_error(code, message)

    # Container.stop(**kwargs) passes them to APIClient.stop(container, timeout=None).
    def stop(self, timeout: int | None = None) -> None:
        self._call("stop", timeout=timeout)

    def kill(self, signal: str | int | None = None) -> None:
        self._call("kill", signal=signal)

    def pause(self) -> None:
        self._call("pause")

    def unpause(self) -> None:
        self._call("unpause")

    # Container.start(**kwargs): APIClient.start raises DeprecatedMethod for any argument.
    def start(self) -> None:
        self._call("start")

    def reload(self) -> None:
        self._engine.calls.append(("reload", self.name, {}))
        self.attrs = copy.deepcopy(self._engine.by_id[self.id])


class FakeContainers:
    """docker.models.containers.ContainerCollection."""

    def __init__(self, engine: Engine):
        self._engine = engine
        self.list_error: Exception | None = None

    def list(
        self,
        all: bool = False,
        before: str | None = None,
        filters: dict[str, Any] | None = None,
        limit: int = -1,
        since: str | None = None,
        sparse: bool = False,
        ignore_removed: bool = False,
    ) -> list[FakeContainer]:
        assert not sparse, "sparse containers have neither .labels nor .name"
        assert set(filters or {}) <= {"label"}, f"unexpected filters {filters}"
        self._engine.calls.append(("list", "", {"all": all, "filters": filters}))
        if self.list_error is not None:
            raise self.list_error
        labels = (filters or {}).get("label", [])
        labels = [labels] if isinstance(labels, str) else labels
        return [FakeContainer(self._engine, a) for a in self._engine.listing(all, labels)]


class FakeApi:
    """docker.APIClient (DockerClient.api), as far as kconsole uses it: the container list as
    the engine answers GET /containers/json, labels and state in each entry."""

    def __init__(self, engine: Engine, containers: FakeContainers):
        self._engine = engine
        self._containers = containers

    def containers(
        self,
        quiet: bool = False,
        all: bool = False,
        trunc: bool = False,
        latest: bool = False,
        since: str | None = None,
        before: str | None = None,
        limit: int = -1,
        size: bool = False,
        filters: dict[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        assert set(filters or {}) <= {"label"}, f"unexpected filters {filters}"
        self._engine.calls.append(("api-list", "", {"all": all, "filters": filters}))
        if self._containers.list_error is not None:
            raise self._containers.list_error
        labels = (filters or {}).get("label", [])
        labels = [labels] if isinstance(labels, str) else labels
        return [list_entry(a) for a in self._engine.listing(all, labels)]


def list_entry(attrs: dict[str, Any]) -> dict[str, Any]:
    """A container as GET /containers/json lists it."""
    return {
        "Id": attrs["Id"],
        "Names": [attrs["Name"]],
        "Labels": attrs["Config"].get("Labels") or {},
        "State": attrs["State"]["Status"],
    }


class FakeDockerClient:
    """docker.DockerClient, as far as kconsole uses it."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.containers = FakeContainers(engine)
        self.api = FakeApi(engine, self.containers)
        self.closed = False

    def close(self) -> None:
        self.closed = True


def params(fn: Any, drop: tuple[str, ...] = ()) -> list[tuple[str, Any, Any]]:
    sig = inspect.signature(fn)
    return [(p.name, p.kind, p.default) for p in sig.parameters.values() if p.name not in drop]


def test_fake_has_the_sdk_signatures() -> None:
    assert params(FakeContainers.list) == params(ContainerCollection.list)
    assert params(FakeApi.containers) == params(APIClient.containers)
    for method in ("kill", "pause", "unpause", "reload"):
        assert params(getattr(FakeContainer, method)) == params(getattr(Container, method))
    # stop(**kwargs) and start(**kwargs) forward to the low-level API.
    assert params(FakeContainer.stop) == params(APIClient.stop, drop=("container",))
    assert [p[0] for p in params(APIClient.start)] == ["self", "container", "args", "kwargs"]
    for prop in ("name", "labels", "status"):
        assert isinstance(inspect.getattr_static(Container, prop), property)
        assert isinstance(inspect.getattr_static(FakeContainer, prop), property)
    assert "timeout" in inspect.signature(docker.from_env).parameters or any(
        p.kind is p.VAR_KEYWORD for p in inspect.signature(docker.from_env).parameters.values()
    )


def test_fake_rejects_unknown_keywords() -> None:
    engine = Engine(compose_containers())
    client = FakeDockerClient(engine)
    with pytest.raises(TypeError):
        client.containers.list(all=True, labels=["x"])  # type: ignore[call-arg]
    c = client.containers.list(all=True)[0]
    with pytest.raises(TypeError):
        c.stop(t=5)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        c.start(detach=True)  # type: ignore[call-arg]


# ------------------------------------------------------------------------------------------
# DockerBrokerControl against the fake client
# ------------------------------------------------------------------------------------------


@pytest.fixture
def engine() -> Engine:
    # The kconsole project plus a second checkout of the same file under another project name.
    return Engine(compose_containers("kconsole") + compose_containers("other", "paused"))


@pytest.fixture
def control(engine: Engine) -> DockerBrokerControl:
    return DockerBrokerControl(FakeDockerClient(engine), project="kconsole")


def set_status(engine: Engine, name: str, status: str) -> None:
    engine.find(name)["State"] = state_of(status)


def actions(engine: Engine) -> list[tuple[str, str, dict[str, Any]]]:
    return [c for c in engine.calls if c[0] not in ("list", "reload")]


def test_is_a_broker_control(control: DockerBrokerControl) -> None:
    assert isinstance(control, BrokerControl)
    assert control.name == "docker"


def test_discovers_brokers_by_compose_labels(engine: Engine, control: DockerBrokerControl) -> None:
    assert control.states() == {1: ProcState.RUNNING, 2: ProcState.RUNNING, 3: ProcState.RUNNING}
    # one engine call: the list carries labels and states (the console asks 4 times a second)
    assert engine.calls == [
        (
            "api-list",
            "",
            {"all": True, "filters": {"label": ["com.docker.compose.project=kconsole"]}},
        )
    ]
    # ZooKeeper and init-topics are not brokers; project "other" (all paused) is not ours.
    assert DockerBrokerControl(FakeDockerClient(engine), project="other").states() == {
        1: ProcState.PAUSED,
        2: ProcState.PAUSED,
        3: ProcState.PAUSED,
    }


def test_broker_id_falls_back_to_the_service_name(engine: Engine) -> None:
    del engine.find("kconsole-kafka-3-1")["Config"]["Labels"]["dev.kconsole.broker-id"]
    control = DockerBrokerControl(FakeDockerClient(engine))
    assert sorted(control.states()) == [1, 2, 3]
    assert broker_id_of({"com.docker.compose.service": "kafka-7"}) == 7
    assert broker_id_of({"com.docker.compose.service": "zookeeper"}) is None
    assert broker_id_of({"dev.kconsole.broker-id": "x"}) is None


def test_one_off_run_containers_are_ignored(engine: Engine) -> None:
    oneoff = copy.deepcopy(engine.find("kconsole-kafka-2-1"))
    oneoff["Id"] = "f" * 64
    oneoff["Name"] = "/kconsole-kafka-2-run-0123abcd"
    oneoff["Config"]["Labels"]["com.docker.compose.oneoff"] = "True"
    oneoff["State"] = state_of("exited")
    engine.by_id[oneoff["Id"]] = oneoff
    control = DockerBrokerControl(FakeDockerClient(engine))
    assert control.states()[2] is ProcState.RUNNING


@pytest.mark.parametrize(
    ("status", "state"),
    [
        ("running", ProcState.RUNNING),
        ("paused", ProcState.PAUSED),
        ("exited", ProcState.STOPPED),
        ("created", ProcState.STOPPED),
        ("restarting", ProcState.STOPPED),  # exited, waiting out the restart back-off
        ("dead", ProcState.STOPPED),
        ("removing", ProcState.STOPPED),
    ],
)
def test_state_mapping(engine: Engine, status: str, state: ProcState) -> None:
    set_status(engine, "kconsole-kafka-2-1", status)
    assert proc_state(status) is state
    assert DockerBrokerControl(FakeDockerClient(engine)).states()[2] is state


@pytest.mark.parametrize(
    ("action", "before", "call", "after"),
    [
        (BrokerAction.STOP, "running", ("stop", {"timeout": STOP_TIMEOUT_S}), "exited"),
        (BrokerAction.STOP, "paused", ("stop", {"timeout": STOP_TIMEOUT_S}), "exited"),
        (BrokerAction.KILL, "running", ("kill", {"signal": None}), "exited"),
        (BrokerAction.KILL, "paused", ("kill", {"signal": None}), "exited"),
        (BrokerAction.PAUSE, "running", ("pause", {}), "paused"),
        (BrokerAction.RESUME, "paused", ("unpause", {}), "running"),
        (BrokerAction.START, "exited", ("start", {}), "running"),
        (BrokerAction.START, "created", ("start", {}), "running"),
    ],
)
def test_each_action_calls_the_engine_once(
    engine: Engine,
    control: DockerBrokerControl,
    action: BrokerAction,
    before: str,
    call: tuple[str, dict[str, Any]],
    after: str,
) -> None:
    set_status(engine, "kconsole-kafka-2-1", before)
    message = control.act(action, 2)
    assert actions(engine) == [(call[0], "kconsole-kafka-2-1", call[1])]
    assert engine.find("kconsole-kafka-2-1")["State"]["Status"] == after
    assert "broker 2" in message and "kconsole-kafka-2-1" in message
    # the other brokers were not touched
    assert {bid: s for bid, s in control.states().items() if bid != 2} == {
        1: ProcState.RUNNING,
        3: ProcState.RUNNING,
    }


def test_stop_reports_controlled_shutdown_or_the_forced_kill(
    engine: Engine, control: DockerBrokerControl
) -> None:
    message = control.act(BrokerAction.STOP, 1)
    assert "controlled shutdown" in message and "exit code 143" in message
    # docker stop ran out of time and sent SIGKILL: the exit code says so (read after reload)
    set_status(engine, "kconsole-kafka-1-1", "running")
    real_apply = engine.apply

    def forced(action: str, cid: str, args: dict[str, Any]) -> tuple[int, str]:
        result = real_apply(action, cid, args)
        engine.by_id[cid]["State"] = state_of("exited", 137)
        return result

    engine.apply = forced  # type: ignore[method-assign]
    message = control.act(BrokerAction.STOP, 1)
    assert f"did not exit within {STOP_TIMEOUT_S} s" in message and "137" in message


def test_stop_timeout_is_configurable(engine: Engine) -> None:
    DockerBrokerControl(FakeDockerClient(engine), stop_timeout=5).act(BrokerAction.STOP, 3)
    assert actions(engine) == [("stop", "kconsole-kafka-3-1", {"timeout": 5})]


@pytest.mark.parametrize(
    ("action", "status", "words"),
    [
        (BrokerAction.PAUSE, "exited", "not running"),
        (BrokerAction.PAUSE, "paused", "already paused"),
        (BrokerAction.RESUME, "running", "not paused"),
        (BrokerAction.RESUME, "exited", "not paused"),
        (BrokerAction.STOP, "exited", "not running"),
        (BrokerAction.KILL, "created", "not running"),
        (BrokerAction.START, "running", "already running"),
        (BrokerAction.START, "paused", "already paused"),
        (BrokerAction.START, "restarting", "already restarting"),
        (BrokerAction.PAUSE, "restarting", "not running"),
        (BrokerAction.START, "dead", "is dead"),
        (BrokerAction.STOP, "removing", "being removed"),
    ],
)
def test_refuses_actions_that_do_not_fit_the_state(
    engine: Engine, control: DockerBrokerControl, action: BrokerAction, status: str, words: str
) -> None:
    set_status(engine, "kconsole-kafka-2-1", status)
    with pytest.raises(ClusterError, match=words) as err:
        control.act(action, 2)
    assert "broker 2" in str(err.value)
    assert actions(engine) == []  # refused before any engine call


def test_stop_and_kill_end_a_restart_loop(engine: Engine, control: DockerBrokerControl) -> None:
    set_status(engine, "kconsole-kafka-2-1", "restarting")
    control.act(BrokerAction.KILL, 2)
    assert actions(engine) == [("kill", "kconsole-kafka-2-1", {"signal": None})]


def test_refuses_a_broker_without_a_container(engine: Engine, control: DockerBrokerControl) -> None:
    with pytest.raises(ClusterError, match=r"broker 4 has no container.*'kconsole'.*1, 2, 3"):
        control.act(BrokerAction.STOP, 4)
    assert actions(engine) == []


def test_engine_errors_are_surfaced_with_the_engine_message(
    engine: Engine, control: DockerBrokerControl
) -> None:
    engine.fail[("start", "kconsole-kafka-1-1")] = (
        500,
        "driver failed programming external connectivity: Bind for 127.0.0.1:19092 failed: "
        "port is already allocated",
    )
    set_status(engine, "kconsole-kafka-1-1", "exited")
    with pytest.raises(ClusterError) as err:
        control.act(BrokerAction.START, 1)
    text = str(err.value)
    assert "docker could not start broker 1 (container kconsole-kafka-1-1)" in text
    assert "port is already allocated" in text and "HTTP 500" in text
    assert isinstance(err.value.__cause__, docker.errors.APIError)


def test_the_engine_refusing_after_a_race_is_surfaced(
    engine: Engine, control: DockerBrokerControl
) -> None:
    engine.fail[("pause", "kconsole-kafka-3-1")] = (409, "Container abc is not running")
    with pytest.raises(ClusterError, match="Container abc is not running"):
        control.act(BrokerAction.PAUSE, 3)


def test_connection_errors_are_surfaced(engine: Engine) -> None:
    client = FakeDockerClient(engine)
    client.containers.list_error = requests.exceptions.ConnectionError("Connection refused")
    control = DockerBrokerControl(client)
    with pytest.raises(ClusterError, match=r"cannot list the containers.*Connection refused"):
        control.states()
    with pytest.raises(ClusterError, match="Connection refused"):
        control.act(BrokerAction.STOP, 1)


def test_start_that_exits_at_once_is_an_error(engine: Engine, control: DockerBrokerControl) -> None:
    set_status(engine, "kconsole-kafka-2-1", "exited")
    real_apply = engine.apply

    def dies(action: str, cid: str, args: dict[str, Any]) -> tuple[int, str]:
        result = real_apply(action, cid, args)
        engine.by_id[cid]["State"] = state_of("exited", 1)
        return result

    engine.apply = dies  # type: ignore[method-assign]
    with pytest.raises(ClusterError, match="started container kconsole-kafka-2-1 but it is exited"):
        control.act(BrokerAction.START, 2)


def test_published_ports(control: DockerBrokerControl) -> None:
    assert control.published_ports() == {19092, 19093, 19094}


# ------------------------------------------------------------------------------------------
# discover()
# ------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never reach a developer's real engine: DOCKER_HOST names a socket that does not exist."""
    monkeypatch.setenv("DOCKER_HOST", NO_ENGINE)
    for var in ("DOCKER_CONTEXT", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH"):
        monkeypatch.delenv(var, raising=False)


def test_discover_finds_the_project(engine: Engine) -> None:
    client = FakeDockerClient(engine)
    control, what = DockerBrokerControl.discover("kconsole", client=client)
    assert isinstance(control, DockerBrokerControl)
    assert control.project == "kconsole" and "brokers 1, 2, 3" in what
    assert not client.closed  # a client passed in belongs to the caller


def test_discover_without_broker_containers(engine: Engine) -> None:
    control, reason = DockerBrokerControl.discover("absent", client=FakeDockerClient(engine))
    assert control is None
    assert "no broker containers of docker compose project 'absent'" in reason


def test_discover_without_an_engine_is_quick() -> None:
    t0 = time.monotonic()
    control, reason = DockerBrokerControl.discover("kconsole")
    assert control is None
    assert reason.startswith("no Docker engine: ") and "No such file" in reason
    assert time.monotonic() - t0 < 2.0


def test_discover_does_not_hang_on_an_engine_that_never_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with socket.socket() as silent:  # accepts connections (backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        monkeypatch.setenv("DOCKER_HOST", f"tcp://127.0.0.1:{silent.getsockname()[1]}")
        t0 = time.monotonic()
        control, reason = DockerBrokerControl.discover("kconsole", timeout=0.5)
    assert control is None and reason.startswith("no Docker engine: ")
    assert "timed out" in reason.lower()
    assert time.monotonic() - t0 < 3.0


def test_lazy_client_without_an_engine_raises_cluster_error() -> None:
    control = DockerBrokerControl()  # no engine is contacted yet
    with pytest.raises(ClusterError, match="no Docker engine"):
        control.states()


# ------------------------------------------------------------------------------------------
# The real SDK against a fake Engine API server
# ------------------------------------------------------------------------------------------


class FakeEngineServer:
    """The Engine API endpoints the SDK calls for kconsole, over TCP (DOCKER_HOST=tcp://...)."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.requests: list[tuple[str, str, dict[str, list[str]]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                outer.handle(self, "GET")

            def do_POST(self) -> None:
                outer.handle(self, "POST")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"tcp://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def handle(self, req: BaseHTTPRequestHandler, method: str) -> None:
        url = urlsplit(req.path)
        query = parse_qs(url.query)
        parts = [p for p in url.path.split("/") if p]
        if parts and parts[0].startswith("v1."):
            parts = parts[1:]
        self.requests.append((method, "/".join(parts), query))
        if parts == ["version"]:
            return self.reply(req, 200, {"ApiVersion": "1.45", "Version": "27.0.0"})
        if parts == ["_ping"]:
            return self.reply(req, 200, "OK")
        if method == "GET" and parts == ["containers", "json"]:
            filters = json.loads(query.get("filters", ["{}"])[0])
            listed = self.engine.listing(query.get("all") == ["1"], filters.get("label", []))
            return self.reply(req, 200, [list_entry(a) for a in listed])
        if len(parts) == 3 and parts[0] == "containers":
            try:
                attrs = self.engine.find(parts[1])
            except KeyError:
                return self.reply(req, 404, {"message": f"No such container: {parts[1]}"})
            if method == "GET" and parts[2] == "json":
                return self.reply(req, 200, attrs)
            if method == "POST":
                args = {k: v[0] for k, v in query.items()}
                code, message = self.engine.apply(parts[2], attrs["Id"], args)
                return self.reply(req, code, {"message": message} if message else None)
        return self.reply(req, 404, {"message": f"page not found: {url.path}"})

    @staticmethod
    def reply(req: BaseHTTPRequestHandler, code: int, body: Any) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        req.send_response(code)
        req.send_header("Content-Type", "application/json")
        req.send_header("Content-Length", str(len(data)))
        req.end_headers()
        req.wfile.write(data)

    def __enter__(self) -> FakeEngineServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeEngineServer]:
    with FakeEngineServer(engine) as srv:
        monkeypatch.setenv("DOCKER_HOST", srv.url)
        yield srv


def test_real_sdk_discovers_and_acts(engine: Engine, server: FakeEngineServer) -> None:
    control, what = DockerBrokerControl.discover("kconsole")
    assert control is not None, what
    server.requests.clear()
    assert control.states() == {1: ProcState.RUNNING, 2: ProcState.RUNNING, 3: ProcState.RUNNING}
    # the list alone, no inspect per container (the SDK's own /version first, once)
    [(method, path, listing)] = [r for r in server.requests if r[1].startswith("containers")]
    assert (method, path, listing["all"]) == ("GET", "containers/json", ["1"])
    assert json.loads(listing["filters"][0]) == {"label": ["com.docker.compose.project=kconsole"]}
    server.requests.clear()
    assert control.published_ports() == {19092, 19093, 19094}
    listing = [q for m, p, q in server.requests if p == "containers/json"][-1]
    assert json.loads(listing["filters"][0]) == {
        "label": ["com.docker.compose.project=kconsole", "dev.kconsole.role=broker"]
    }

    server.requests.clear()
    assert "controlled shutdown" in control.act(BrokerAction.STOP, 2)
    assert control.states()[2] is ProcState.STOPPED
    control.act(BrokerAction.START, 2)
    control.act(BrokerAction.PAUSE, 1)
    assert control.states()[1] is ProcState.PAUSED
    control.act(BrokerAction.RESUME, 1)
    control.act(BrokerAction.KILL, 3)
    posts = [(p.split("/")[2], q) for m, p, q in server.requests if m == "POST"]
    assert posts == [
        ("stop", {"t": [str(STOP_TIMEOUT_S)]}),
        ("start", {}),
        ("pause", {}),
        ("unpause", {}),
        ("kill", {}),
    ]


def test_real_sdk_engine_error_carries_the_engine_message(
    engine: Engine, server: FakeEngineServer
) -> None:
    engine.fail[("pause", "kconsole-kafka-2-1")] = (409, "Container kafka-2 is restarting")
    control = DockerBrokerControl(project="kconsole")
    with pytest.raises(ClusterError, match=r"Container kafka-2 is restarting \(HTTP 409\)"):
        control.act(BrokerAction.PAUSE, 2)


def test_real_sdk_container_removed_during_listing_is_skipped(
    engine: Engine, server: FakeEngineServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = engine.find("kconsole-kafka-3-1")["Id"]
    real_find = engine.find

    def find(name_or_id: str) -> dict:
        if name_or_id == gone:
            raise KeyError(name_or_id)  # listed, then removed before its inspect
        return real_find(name_or_id)

    monkeypatch.setattr(engine, "find", find)
    assert DockerBrokerControl().published_ports() == {19092, 19093}


# ------------------------------------------------------------------------------------------
# choose_backend()
# ------------------------------------------------------------------------------------------


def started_local_cluster(path: Path, **spec: Any) -> Path:
    """A local cluster's state dir as `cluster up` leaves it, with none of its processes
    running (see running())."""
    LocalCluster(path, LocalClusterSpec(**spec)).write_configs()
    return path


def running(state_dir: Path, name: str = "broker-1") -> Path:
    """`name` of the local cluster in `state_dir` running: its pid file names a live process
    (this test's own, which it is not, but the backend choice only asks whether it runs)."""
    cluster = open_local(state_dir)
    me = psutil.Process()
    cluster.process(name).pid_file.write_text(PidRecord(me.pid, me.create_time()).to_json())
    return state_dir


def test_backend_none(tmp_path: Path) -> None:
    control, reason = choose_backend(Settings(backend="none", cluster_dir=tmp_path))
    assert control is None and reason.startswith("broker control disabled by configuration")


def test_backend_local(tmp_path: Path) -> None:
    control, reason = choose_backend(Settings(backend="local", cluster_dir=tmp_path))
    assert control is None and "no cluster.json" in reason and str(tmp_path) in reason
    started_local_cluster(tmp_path)
    # forced: chosen even when the bootstrap servers are another cluster's
    settings = Settings(backend="local", cluster_dir=tmp_path, bootstrap="kafka.example:9092")
    control, what = choose_backend(settings)
    assert isinstance(control, LocalBrokerControl) and str(tmp_path) in what


def test_backend_local_with_a_broken_spec(tmp_path: Path) -> None:
    (tmp_path / "cluster.json").write_text("{not json")
    control, reason = choose_backend(Settings(backend="local", cluster_dir=tmp_path))
    assert control is None and "not a valid cluster spec" in reason


def test_backend_docker(tmp_path: Path, server: FakeEngineServer) -> None:
    started_local_cluster(tmp_path)  # ignored: docker was asked for
    settings = Settings(backend="docker", cluster_dir=tmp_path, bootstrap="kafka.example:9092")
    control, what = choose_backend(settings)
    assert isinstance(control, DockerBrokerControl) and "'kconsole'" in what


def test_backend_docker_without_an_engine(tmp_path: Path) -> None:
    control, reason = choose_backend(Settings(backend="docker", cluster_dir=tmp_path))
    assert control is None and reason.startswith("no Docker engine: ")


def test_auto_picks_the_local_cluster_kconsole_started(
    tmp_path: Path, server: FakeEngineServer
) -> None:
    running(started_local_cluster(tmp_path))
    control, _ = choose_backend(Settings(backend="auto", cluster_dir=tmp_path))
    assert isinstance(control, LocalBrokerControl)
    assert not server.requests  # the engine was not even asked


def test_auto_picks_the_local_cluster_whatever_its_broker_count(
    tmp_path: Path, server: FakeEngineServer
) -> None:
    """`cluster up --brokers 4` (the README's set-up for reassigning): the default bootstrap
    servers are three of its four brokers, so the console can act on it."""
    running(started_local_cluster(tmp_path, brokers=4), "broker-4")
    control, what = choose_backend(Settings(backend="auto", cluster_dir=tmp_path))
    assert isinstance(control, LocalBrokerControl), what
    assert not server.requests


def test_serves_needs_every_bootstrap_server_among_the_brokers() -> None:
    four = "127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094,127.0.0.1:19095"
    assert serves(four, "127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094")
    assert serves(four, "localhost:19095")  # one address, two names
    assert not serves("127.0.0.1:19092,127.0.0.1:19093", "127.0.0.1:19092,127.0.0.1:19099")
    assert not serves(four, "kafka.example:19092")
    assert not serves(four, "")


def test_auto_picks_docker_when_the_local_cluster_is_another(
    tmp_path: Path, server: FakeEngineServer
) -> None:
    started_local_cluster(tmp_path, base_port=29092, zk_port=24181)
    control, what = choose_backend(Settings(backend="auto", cluster_dir=tmp_path))
    assert isinstance(control, DockerBrokerControl), what


def test_auto_refuses_docker_brokers_that_are_not_the_bootstrap_servers(
    tmp_path: Path, server: FakeEngineServer
) -> None:
    settings = Settings(backend="auto", cluster_dir=tmp_path, bootstrap="kafka.example:9092")
    control, reason = choose_backend(settings)
    assert control is None
    assert "publish 19092, 19093, 19094" in reason and "kafka.example:9092" in reason


def test_auto_with_neither(tmp_path: Path) -> None:
    t0 = time.monotonic()
    control, reason = choose_backend(Settings(backend="auto", cluster_dir=tmp_path))
    assert control is None
    assert reason.startswith("kconsole did not start this cluster (no local cluster in ")
    assert "no docker compose project 'kconsole'" in reason and "no Docker engine" in reason
    assert time.monotonic() - t0 < 2.0


def test_auto_with_another_local_cluster_and_no_engine(tmp_path: Path) -> None:
    started_local_cluster(tmp_path)
    settings = Settings(backend="auto", cluster_dir=tmp_path, bootstrap="kafka.example:9092")
    control, reason = choose_backend(settings)
    assert control is None
    assert "serves 127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094, not kafka.example:9092" in (
        reason
    )
    assert "no Docker engine" in reason


def test_auto_picks_live_compose_brokers_over_a_stopped_local_cluster(
    tmp_path: Path, server: FakeEngineServer
) -> None:
    """A local cluster left behind (4 brokers, every process stopped) serves the bootstrap
    servers on paper, but the compose project's running containers publish those ports: the
    console must act on (and show the states of) the containers, not 4 stopped processes."""
    started_local_cluster(tmp_path, brokers=4)
    control, what = choose_backend(Settings(backend="auto", cluster_dir=tmp_path))
    assert isinstance(control, DockerBrokerControl), what
    assert control.project == "kconsole"
    assert control.states() == {b: ProcState.RUNNING for b in (1, 2, 3)}
    assert (
        f"the local cluster in {tmp_path} has no process running; docker compose project "
        "'kconsole' publishes the bootstrap ports" in what
    )


def test_auto_keeps_a_running_local_cluster_over_compose_brokers(
    tmp_path: Path, server: FakeEngineServer
) -> None:
    running(started_local_cluster(tmp_path, brokers=4), "broker-2")
    control, what = choose_backend(Settings(backend="auto", cluster_dir=tmp_path))
    assert isinstance(control, LocalBrokerControl), what
    assert what == f"local cluster in {tmp_path}"
    assert not server.requests


def test_auto_keeps_a_paused_local_cluster(
    tmp_path: Path, server: FakeEngineServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A paused broker is a process of the cluster (frozen, not gone)."""
    running(started_local_cluster(tmp_path))
    monkeypatch.setattr(psutil.Process, "status", lambda self: psutil.STATUS_STOPPED)
    assert LocalCluster(tmp_path).process("broker-1").state() is ProcState.PAUSED
    control, what = choose_backend(Settings(backend="auto", cluster_dir=tmp_path))
    assert isinstance(control, LocalBrokerControl), what
    assert not server.requests


def test_auto_keeps_a_stopped_local_cluster_when_nothing_else_serves_it(tmp_path: Path) -> None:
    """No engine: the stopped local cluster is still the backend, so `cluster start` works."""
    started_local_cluster(tmp_path)
    control, what = choose_backend(Settings(backend="auto", cluster_dir=tmp_path))
    assert isinstance(control, LocalBrokerControl), what
    assert what.startswith(f"local cluster in {tmp_path} (no process running; no docker")
    assert "'kconsole'" in what and "no Docker engine" in what


def test_auto_keeps_a_stopped_local_cluster_when_compose_publishes_other_ports(
    tmp_path: Path, server: FakeEngineServer
) -> None:
    started_local_cluster(tmp_path, base_port=29092, zk_port=24181)
    settings = Settings(
        backend="auto", cluster_dir=tmp_path, bootstrap="127.0.0.1:29092,127.0.0.1:29093"
    )
    control, what = choose_backend(settings)
    assert isinstance(control, LocalBrokerControl), what
    assert "no process running" in what and "publish 19092, 19093, 19094" in what


def test_auto_looks_for_the_configured_compose_project(
    tmp_path: Path, server: FakeEngineServer
) -> None:
    started_local_cluster(tmp_path)
    settings = Settings(backend="auto", cluster_dir=tmp_path, compose_project="other")
    control, what = choose_backend(settings)
    assert isinstance(control, DockerBrokerControl), what
    assert control.project == "other"
    assert control.states() == {b: ProcState.PAUSED for b in (1, 2, 3)}
    assert "docker compose project 'other' publishes the bootstrap ports" in what
    settings = Settings(backend="auto", cluster_dir=tmp_path / "none", compose_project="absent")
    control, reason = choose_backend(settings)
    assert control is None
    assert "no docker compose project 'absent' was found" in reason
    assert "no broker containers of docker compose project 'absent'" in reason


def test_backend_docker_acts_on_the_configured_compose_project(
    tmp_path: Path, server: FakeEngineServer
) -> None:
    control, what = choose_backend(
        Settings(backend="docker", cluster_dir=tmp_path, compose_project="other")
    )
    assert isinstance(control, DockerBrokerControl) and control.project == "other"
    assert what == "docker compose project 'other' (brokers 1, 2, 3)"
    # an explicit project beats the settings'
    control, _ = choose_backend(
        Settings(backend="docker", cluster_dir=tmp_path, compose_project="other"),
        project="kconsole",
    )
    assert isinstance(control, DockerBrokerControl) and control.project == "kconsole"


def test_the_default_compose_project_is_the_backends() -> None:
    from kconsole.cluster.docker.control import DEFAULT_PROJECT
    from kconsole.config import DEFAULT_COMPOSE_PROJECT

    assert DEFAULT_COMPOSE_PROJECT == DEFAULT_PROJECT == Settings().compose_project


# ------------------------------------------------------------------------------------------
# Reported done only for an effect seen (issue 28): a start is its broker registered
# ------------------------------------------------------------------------------------------


class Clock:
    """monotonic() and sleep() that advance together (no real waiting)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.now += s


def test_start_is_done_once_the_broker_registers_by_a_new_session(engine: Engine) -> None:
    set_status(engine, "kconsole-kafka-2-1", "exited")
    clock = Clock()
    reads: list[dict[int, int | None]] = [
        {1: 11, 3: 13},  # before the start
        {1: 11, 3: 13},  # not yet
        {1: 11, 3: 13},
        {1: 11, 2: 0x22, 3: 13},
    ]

    def registrations() -> dict[int, int | None]:
        return reads.pop(0) if len(reads) > 1 else reads[0]

    control = DockerBrokerControl(
        FakeDockerClient(engine),
        registrations=registrations,
        sleep=clock.sleep,
        monotonic=clock.monotonic,
    )
    message = control.act(BrokerAction.START, 2)
    assert "registered in ZooKeeper after 0.5 s" in message and "session 0x22" in message
    assert len(clock.slept) == 2


def test_start_never_registering_is_an_error_at_the_deadline(engine: Engine) -> None:
    set_status(engine, "kconsole-kafka-2-1", "exited")
    clock = Clock()
    control = DockerBrokerControl(
        FakeDockerClient(engine),
        registrations=lambda: {1: 11, 3: 13},
        register_timeout=5.0,
        sleep=clock.sleep,
        monotonic=clock.monotonic,
    )
    with pytest.raises(ClusterError, match="did not register in ZooKeeper within 5 s"):
        control.act(BrokerAction.START, 2)
    assert clock.now - 1000.0 == pytest.approx(5.0, abs=0.3)


def test_a_stale_registration_is_not_the_started_broker(engine: Engine) -> None:
    """Registered before the start by the old session: not the new broker registering."""
    set_status(engine, "kconsole-kafka-2-1", "exited")
    clock = Clock()
    control = DockerBrokerControl(
        FakeDockerClient(engine),
        registrations=lambda: {2: 0x99},
        register_timeout=2.0,
        sleep=clock.sleep,
        monotonic=clock.monotonic,
    )
    with pytest.raises(ClusterError, match="did not register"):
        control.act(BrokerAction.START, 2)


def test_start_whose_container_exits_before_registering_is_an_error(engine: Engine) -> None:
    set_status(engine, "kconsole-kafka-2-1", "exited")
    clock = Clock()

    def registrations() -> dict[int, int | None]:
        if clock.slept:  # the broker exits (its id is still taken, say) after the start
            set_status(engine, "kconsole-kafka-2-1", "exited")
        return {}

    control = DockerBrokerControl(
        FakeDockerClient(engine),
        registrations=registrations,
        sleep=clock.sleep,
        monotonic=clock.monotonic,
    )
    with pytest.raises(ClusterError, match=r"is exited .* before it registered"):
        control.act(BrokerAction.START, 2)


@pytest.mark.parametrize(
    ("action", "before", "stays"),
    [
        (BrokerAction.PAUSE, "running", "running"),
        (BrokerAction.RESUME, "paused", "paused"),
        (BrokerAction.KILL, "running", "running"),
    ],
)
def test_an_action_without_its_effect_is_an_error(
    engine: Engine,
    control: DockerBrokerControl,
    action: BrokerAction,
    before: str,
    stays: str,
) -> None:
    set_status(engine, "kconsole-kafka-2-1", before)
    real_apply = engine.apply

    def no_effect(a: str, cid: str, args: dict[str, Any]) -> tuple[int, str]:
        result = real_apply(a, cid, args)
        engine.by_id[cid]["State"] = state_of(stays)
        return result

    engine.apply = no_effect  # type: ignore[method-assign]
    with pytest.raises(ClusterError, match=f"container kconsole-kafka-2-1 is {stays}"):
        control.act(action, 2)


# ------------------------------------------------------------------------------------------
# `kconsole --backend docker cluster ...`: the broker commands act on the containers (issue 28)
# ------------------------------------------------------------------------------------------


def docker_cli(
    tmp_path: Path, *args: str, options: tuple[str, ...] = (), env: dict[str, str] | None = None
) -> tuple[int, str, list[dict[str, Any]]]:
    """`kconsole --backend docker OPTIONS cluster --state-dir <empty> ARGS`, with `env` added;
    (exit, output, audit)."""
    from click.testing import CliRunner

    from kconsole.cli import main
    from kconsole.commands.auditlog import AuditLog

    env = {"KCONSOLE_STATE_DIR": str(tmp_path / "state"), "KCONSOLE_CONFIG": "", **(env or {})}
    res = CliRunner().invoke(
        main,
        [
            *options,
            "--backend",
            "docker",
            "--bootstrap",
            "127.0.0.1:9",
            "--zookeeper",
            "127.0.0.1:9",
            "cluster",
            "--state-dir",
            str(tmp_path / "local"),  # no local cluster there: it must not matter
            *args,
        ],
        env=env,
    )
    return res.exit_code, res.output, list(AuditLog(tmp_path / "state" / "audit.jsonl").entries())


@pytest.fixture
def zk_regs(monkeypatch: pytest.MonkeyPatch) -> dict[int, int | None]:
    """What ZooKeeper says is registered, for the docker backend's start (no ZooKeeper runs)."""
    regs: dict[int, int | None] = {1: 0x11, 3: 0x13}
    monkeypatch.setattr(
        "kconsole.cluster.backends.zk_registrations", lambda _zk, timeout=5.0: lambda: regs
    )
    return regs


@pytest.mark.parametrize(
    ("action", "before", "post", "after"),
    [
        ("stop", "running", "stop", "exited"),
        ("kill", "running", "kill", "exited"),
        ("pause", "running", "pause", "paused"),
        ("resume", "paused", "unpause", "running"),
    ],
)
def test_cli_broker_commands_act_on_the_containers(
    engine: Engine,
    server: FakeEngineServer,
    tmp_path: Path,
    action: str,
    before: str,
    post: str,
    after: str,
) -> None:
    set_status(engine, "kconsole-kafka-2-1", before)
    code, out, audit = docker_cli(tmp_path, action, "2", "--yes")
    assert code == 0, out
    assert "container kconsole-kafka-2-1" in out
    posts = [p.split("/")[2] for m, p, _q in server.requests if m == "POST"]
    assert posts == [post]
    assert engine.find("kconsole-kafka-2-1")["State"]["Status"] == after
    assert not (tmp_path / "local").exists()  # the local cluster's state dir was not read
    (line,) = audit
    assert (line["command"], line["target"], line["outcome"]) == (
        f"broker.{action}",
        "broker 2",
        "done",
    )
    assert "kconsole-kafka-2-1" in line["result"]["said"]


def test_cli_start_is_done_once_registered(
    engine: Engine, server: FakeEngineServer, tmp_path: Path, zk_regs: dict[int, int | None]
) -> None:
    set_status(engine, "kconsole-kafka-2-1", "exited")
    real_apply = engine.apply

    def registers(action: str, cid: str, args: dict[str, Any]) -> tuple[int, str]:
        out = real_apply(action, cid, args)
        if action == "start":
            zk_regs[2] = 0x22  # the broker registers once its container runs
        return out

    engine.apply = registers  # type: ignore[method-assign]
    code, out, audit = docker_cli(tmp_path, "start", "broker:2")
    assert code == 0, out
    assert "registered in ZooKeeper" in out and "session 0x22" in out
    assert audit[0]["outcome"] == "done" and "registered" in audit[0]["result"]["said"]


def test_cli_failure_is_said_and_logged_failed(
    engine: Engine, server: FakeEngineServer, tmp_path: Path
) -> None:
    code, out, audit = docker_cli(tmp_path, "resume", "2")  # running: not paused
    assert code == 1
    assert "broker 2 is not paused (container kconsole-kafka-2-1 is running)" in out
    assert [(e["command"], e["outcome"]) for e in audit] == [("broker.resume", "failed")]
    assert "not paused" in audit[0]["error"]
    assert not [r for r in server.requests if r[0] == "POST"]


def test_cli_without_the_compose_project_refuses(tmp_path: Path) -> None:
    code, out, audit = docker_cli(tmp_path, "stop", "2", "--yes")  # DOCKER_HOST: no engine
    assert code == 1
    assert "broker control is not available: no Docker engine" in out
    assert [(e["command"], e["outcome"]) for e in audit] == [("broker.stop", "refused")]


@pytest.mark.parametrize(
    ("sub", "instead"),
    [
        (["up"], "make compose-up"),
        (["down"], "make compose-down"),
        (["status"], "docker compose -p kconsole -f compose/docker-compose.yml ps"),
        (["logs", "2"], "docker compose -p kconsole -f compose/docker-compose.yml logs kafka-N"),
    ],
)
def test_cli_local_only_commands_say_what_to_run_instead(
    tmp_path: Path, sub: list[str], instead: str
) -> None:
    code, out, audit = docker_cli(tmp_path, *sub)
    assert code == 1
    assert "the backend is docker" in out and instead in out
    assert not (tmp_path / "local").exists() and audit == []


@pytest.mark.parametrize(
    ("options", "env", "project"),
    [
        ((), {}, "kconsole"),
        ((), {"COMPOSE_PROJECT_NAME": "from_compose"}, "from_compose"),
        ((), {"KCONSOLE_COMPOSE_PROJECT": "from-env"}, "from-env"),
        (("--compose-project", "lab"), {"KCONSOLE_COMPOSE_PROJECT": "from-env"}, "lab"),
    ],
)
def test_cli_the_compose_project_reaches_discovery(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    options: tuple[str, ...],
    env: dict[str, str],
    project: str,
) -> None:
    asked: list[str] = []
    real = DockerBrokerControl.discover

    def discover(project: str = "unset", **kwargs: Any) -> Any:
        asked.append(project)
        return real(project, **kwargs)  # DOCKER_HOST: no engine

    monkeypatch.delenv("COMPOSE_PROJECT_NAME", raising=False)
    monkeypatch.delenv("KCONSOLE_COMPOSE_PROJECT", raising=False)
    monkeypatch.setattr(DockerBrokerControl, "discover", staticmethod(discover))
    code, out, audit = docker_cli(tmp_path, "stop", "2", "--yes", options=options, env=env)
    assert asked == [project]
    assert code == 1 and "broker control is not available: no Docker engine" in out
    assert [(e["command"], e["outcome"]) for e in audit] == [("broker.stop", "refused")]


def test_cli_the_compose_project_names_the_containers_acted_on(
    engine: Engine, server: FakeEngineServer, tmp_path: Path
) -> None:
    """--compose-project other: the other project's containers (all paused), not kconsole's."""
    code, out, _ = docker_cli(tmp_path, "resume", "2", options=("--compose-project", "other"))
    assert code == 0, out
    assert engine.find("other-kafka-2-1")["State"]["Status"] == "running"
    assert engine.find("kconsole-kafka-2-1")["State"]["Status"] == "running"
    posts = [p for m, p, _ in server.requests if m == "POST"]
    other = engine.find("other-kafka-2-1")["Id"]
    assert posts and all(other in p for p in posts), posts


@pytest.mark.parametrize(
    ("sub", "instead"),
    [
        (["up"], "`docker compose -p lab -f compose/docker-compose.yml up -d`"),
        (["down"], "`docker compose -p lab -f compose/docker-compose.yml down -v`"),
        (["status"], "`docker compose -p lab -f compose/docker-compose.yml ps`"),
        (["logs", "2"], "`docker compose -p lab -f compose/docker-compose.yml logs kafka-N`"),
    ],
)
def test_cli_local_only_commands_name_the_compose_project(
    tmp_path: Path, sub: list[str], instead: str
) -> None:
    code, out, _ = docker_cli(tmp_path, *sub, options=("--compose-project", "lab"))
    assert code == 1
    flat = " ".join(out.split())  # as wrapped for the terminal, if it is
    assert instead in flat and "make compose-" not in flat  # the Makefile's is kconsole


def test_cli_a_controller_node_is_not_a_compose_broker(
    engine: Engine, server: FakeEngineServer, tmp_path: Path
) -> None:
    code, out, audit = docker_cli(tmp_path, "stop", "controller:1001", "--yes")
    assert code == 1 and "docker compose cluster runs in ZooKeeper mode" in out
    assert audit == [] and not [r for r in server.requests if r[0] == "POST"]


def test_the_console_reads_container_states_once_a_second(engine: Engine) -> None:
    """The observer's backend loop asks the docker control at its STATES_POLL_S (each read
    is an engine call), the local backend at the 0.25 s default."""
    from kconsole.config import Settings
    from kconsole.observer.threads import PROC_STATES_POLL_S, ClusterObserver

    def waits(states: Any) -> list[float]:
        obs = ClusterObserver(Settings(), proc_states=states)
        seen: list[float] = []

        def wait(timeout: float | None = None) -> bool:
            seen.append(float(timeout or 0))
            obs._stop.set()
            return True

        obs._stop.wait = wait  # type: ignore[method-assign]
        obs._backend_loop()
        return seen

    docker_control = DockerBrokerControl(FakeDockerClient(engine))
    assert waits(docker_control.states) == [DockerBrokerControl.STATES_POLL_S] == [1.0]
    assert waits(lambda: {}) == [PROC_STATES_POLL_S] == [0.25]
