"""DockerBrokerControl against a real Docker engine and compose/docker-compose.yml.

Skipped as a whole when no engine answers (docker.from_env().ping()) or the compose plugin is
missing. The compose file publishes fixed host ports (ZooKeeper 22181, brokers 19092-19094, the
same as the embedded local cluster), so this test cannot run alongside a local cluster or a
`docker compose up` of the default project; it is skipped when those ports are taken. It runs
under its own project name, kconsole-test, and always ends with `down -v`.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from kazoo.client import KazooClient

from kconsole.cluster.control import BrokerAction
from kconsole.cluster.docker import DockerBrokerControl
from kconsole.cluster.procs import ProcState
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

try:
    _engine = docker.from_env(timeout=10)
    _engine.ping()
    _engine.close()
except Exception as exc:  # from_env() itself fails when nothing answers
    pytest.skip(f"no Docker engine reachable: {exc}", allow_module_level=True)

COMPOSE_FILE = Path(__file__).resolve().parents[2] / "compose" / "docker-compose.yml"
PROJECT = "kconsole-test"
HOST_PORTS = (22181, 19092, 19093, 19094)
ZK = "127.0.0.1:22181"
BROKERS = {1, 2, 3}


def compose_command() -> list[str]:
    """`docker compose` (the plugin) or the standalone `docker-compose`."""
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=30)
        if probe.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    pytest.skip("the docker compose plugin (or docker-compose) is not installed")


def port_taken(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def compose(cmd: list[str], *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    argv = [*cmd, "-f", str(COMPOSE_FILE), "-p", PROJECT, *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def project() -> Iterator[str]:
    cmd = compose_command()
    taken = [p for p in HOST_PORTS if port_taken(p)]
    if taken:
        pytest.skip(
            f"host ports {taken} are in use (a local cluster or another compose project?); "
            "the compose file publishes fixed ports"
        )
    try:
        # `up -d` waits for the healthchecks the brokers depend on; image pulls may take a while.
        up = compose(cmd, "up", "-d", timeout=900)
        assert up.returncode == 0, f"docker compose up failed:\n{up.stdout}\n{up.stderr}"
        yield PROJECT
    finally:
        down = compose(cmd, "down", "-v", "--remove-orphans", timeout=300)
        assert down.returncode == 0, f"docker compose down failed:\n{down.stderr}"


@pytest.fixture(scope="module")
def zk(project: str) -> Iterator[KazooClient]:
    client = KazooClient(hosts=ZK, timeout=10)
    client.start(timeout=120)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def registered(zk: KazooClient) -> set[int]:
    if not zk.exists("/brokers/ids"):
        return set()
    return {int(i) for i in zk.get_children("/brokers/ids")}


def controller(zk: KazooClient) -> int | None:
    if not zk.exists("/controller"):
        return None
    return int(json.loads(zk.get("/controller")[0])["brokerid"])


def test_stop_start_pause_resume_broker_2(project: str, zk: KazooClient) -> None:
    wait_until(lambda: registered(zk) == BROKERS, 180, "3 registered brokers")
    control, what = DockerBrokerControl.discover(project)
    assert control is not None, what
    assert control.states() == dict.fromkeys(BROKERS, ProcState.RUNNING)
    assert control.published_ports() == {19092, 19093, 19094}

    message = control.act(BrokerAction.STOP, 2)
    assert "controlled shutdown" in message, message
    assert control.states()[2] is ProcState.STOPPED
    wait_until(lambda: registered(zk) == {1, 3}, 30, "broker 2 to deregister")

    control.act(BrokerAction.START, 2)
    assert control.states()[2] is ProcState.RUNNING
    wait_until(lambda: registered(zk) == BROKERS, 120, "broker 2 to register again")

    control.act(BrokerAction.PAUSE, 2)
    assert control.states()[2] is ProcState.PAUSED
    control.act(BrokerAction.RESUME, 2)
    assert control.states()[2] is ProcState.RUNNING
    wait_until(lambda: registered(zk) == BROKERS, 60, "every broker registered after resume")
    assert controller(zk) in BROKERS
