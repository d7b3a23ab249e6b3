"""The KRaft compose cluster (compose/docker-compose.kraft.yml) on a real Docker engine: its
topology as kconsole reads it (the controllers reached from the host, KIP-919), and its nodes,
controllers included, acted on through the docker backend with every start verified.

The engine and the images come from the session fixtures (tests/integration/conftest.py,
docker_support.py). The project runs under its own name and on free host ports below the
ephemeral range (the compose file's port variables), and always ends with `down -v` (a watchdog
takes it down when pytest dies first).

The node actions use DockerBrokerControl directly (its start verification is the point); the
reads and the drill use the CLI, the drill on this project through `--compose-project`.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import docker
import pytest
from click.testing import CliRunner, Result

from kconsole.cli.main import main as cli
from kconsole.cluster.docker.control import DockerBrokerControl, KRaftReads
from kconsole.cluster.kraft import probes as kraft_probes
from kconsole.cluster.kraft.probes import QuorumState
from kconsole.cluster.security import kafka_python
from kconsole.cluster.settings import KRAFT_KAFKA_VERSION, TEST_TOPIC
from kconsole.cluster.values import BrokerAction, ProcState
from tests.integration.conftest import _free, port_offsets
from tests.integration.docker_support import (
    ComposeProject,
    Engine,
    running_project,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

BROKERS = [1, 2, 3]
CONTROLLERS = [1001, 1002, 1003]


def pick_kraft_ports() -> tuple[int, int]:
    """Free base ports for the brokers and the controllers (3 each), below 32768."""
    for offset in port_offsets():
        brokers, controllers = 27092 + offset, 27142 + offset
        if all(_free(p) for b in (brokers, controllers) for p in range(b, b + 3)):
            return brokers, controllers
    raise RuntimeError("no free block of ports for the KRaft compose cluster")


class KRaftCompose:
    """The running project: names, ports, and kconsole's reads and control of it."""

    def __init__(self, project: ComposeProject, brokers: dict[int, int], ctls: dict[int, int]):
        self.project = project
        self.bootstrap = ",".join(f"127.0.0.1:{brokers[b]}" for b in BROKERS)
        self.bootstrap_controller = ",".join(f"127.0.0.1:{ctls[c]}" for c in CONTROLLERS)
        self.controller_ports = ctls
        self.engine = docker.from_env(timeout=60)
        self.control = DockerBrokerControl(
            project=project.name, kraft=KRaftReads(self.bootstrap, self.bootstrap_controller)
        )

    def quorum(self) -> QuorumState | None:
        ports = [self.controller_ports[c] for c in CONTROLLERS]
        return kraft_probes.quorum_from_controllers("127.0.0.1", ports, 2.0)

    def fencing(self) -> dict[int, bool]:
        with kraft_probes.broker_admin(self.bootstrap, 3000) as admin:
            return kraft_probes.broker_fencing(admin)

    def status(self, node: int) -> str:
        service = f"kafka-{node}" if node in BROKERS else f"controller-{node - 1000}"
        (c,) = self.engine.containers.list(
            all=True,
            filters={
                "label": [
                    f"com.docker.compose.project={self.project.name}",
                    f"com.docker.compose.service={service}",
                ]
            },
        )
        return str(c.status)

    def cli(self, *args: str, state_dir: Path) -> Result:
        return CliRunner().invoke(
            cli,
            [
                "--bootstrap",
                self.bootstrap,
                "--zookeeper",
                "",
                "--bootstrap-controller",
                self.bootstrap_controller,
                *args,
            ],
            # an empty state dir: no local cluster for kconsole to find or touch
            env={"KCONSOLE_CLUSTER_DIR": str(state_dir), "KCONSOLE_STATE_DIR": str(state_dir)},
            catch_exceptions=False,
        )


@pytest.fixture(scope="module")
def kraft(docker_engine: Engine, docker_images: dict[str, str]) -> Iterator[KRaftCompose]:
    broker_base, controller_base = pick_kraft_ports()
    brokers = {b: broker_base + i for i, b in enumerate(BROKERS)}
    ctls = {c: controller_base + i for i, c in enumerate(CONTROLLERS)}
    env = {"KCONSOLE_KRAFT_KAFKA_VERSION": KRAFT_KAFKA_VERSION}
    env |= {f"KCONSOLE_BROKER_{b}_PORT": str(p) for b, p in brokers.items()}
    env |= {f"KCONSOLE_CONTROLLER_{c - 1000}_PORT": str(p) for c, p in ctls.items()}
    name = f"kconsole-kraft-test-{os.getpid()}"
    with running_project("docker-compose.kraft.yml", name, env) as project:
        yield KRaftCompose(project, brokers, ctls)


def healthy(k: KRaftCompose) -> None:
    """3 voters with a leader, every voter caught up, 3 brokers unfenced, test-topic in sync."""

    def ok() -> bool:
        q = k.quorum()
        if q is None or q.voter_ids != CONTROLLERS or any(q.lag(c) for c in CONTROLLERS):
            return False
        if k.fencing() != dict.fromkeys(BROKERS, False):
            return False
        with kraft_probes.broker_admin(k.bootstrap, 3000) as admin:
            parts = kraft_probes.topic_partitions(admin, TEST_TOPIC)
        return parts is not None and len(parts) == 4 and all(set(p.isr) == {1, 2, 3} for p in parts)

    wait_until(ok, 180, "a quorum leader, 3 unfenced brokers and test-topic fully in sync", 0.5)


def test_topology_as_kconsole_describes_it(kraft: KRaftCompose, tmp_path: Path) -> None:
    """3 voters and a leader, 3 brokers at their published 127.0.0.1 ports, test-topic 4 x RF 3;
    the controllers answer on the host with host addresses (DescribeCluster, KIP-919)."""
    healthy(kraft)
    res = kraft.cli("describe", "--json", state_dir=tmp_path)
    assert res.exit_code == 0, res.output
    snap = json.loads(res.output)
    assert snap["mode"] == "kraft"
    assert sorted(v["id"] for v in snap["quorum"]["voters"]) == CONTROLLERS
    assert snap["quorum"]["leader_id"] in CONTROLLERS
    brokers = {b["id"]: b for b in snap["brokers"]}
    assert sorted(brokers) == BROKERS
    for b, addr in zip(BROKERS, kraft.bootstrap.split(","), strict=True):
        assert f"{brokers[b]['host']}:{brokers[b]['port']}" == addr and not brokers[b]["fenced"]
    parts = [p for p in snap["partitions"] if p["topic"] == TEST_TOPIC]
    assert len(parts) == 4 and all(len(p["replicas"]) == 3 for p in parts)

    port = kraft.controller_ports[CONTROLLERS[0]]
    answer = kafka_python.describe_controllers_at("127.0.0.1", port, 5.0)
    named = {b["broker_id"]: (b["host"], b["port"]) for b in answer["brokers"]}
    assert named == {c: ("127.0.0.1", kraft.controller_ports[c]) for c in CONTROLLERS}


def test_controllers_and_brokers_through_the_docker_backend(
    kraft: KRaftCompose, tmp_path: Path
) -> None:
    """stop / start of a controller, every broker killed and the quorum read through the
    controllers alone, then every broker started (each verified unfenced, with no ZooKeeper
    session to wait for): each outcome the backend reports is the one the engine and the
    cluster then show. (Killing the quorum leader and starting it again is the drill's, below.)"""
    healthy(kraft)
    control = kraft.control
    assert control.states() == dict.fromkeys(BROKERS, ProcState.RUNNING)
    assert control.node_states() == dict.fromkeys([*BROKERS, *CONTROLLERS], ProcState.RUNNING)
    try:
        said = control.act(BrokerAction.STOP, 1001)
        assert said.startswith("controller 1001 stopped (docker stop, SIGTERM"), said
        assert kraft.status(1001) == "exited"
        said = control.act(BrokerAction.START, 1001)
        assert "controller 1001 started" in said and (
            "back in the quorum" in said or "quorum leader" in said
        ), said
        assert kraft.status(1001) == "running"

        # Every broker down: the quorum is still read, from the controllers (KIP-919).
        for b in BROKERS:
            control.act(BrokerAction.KILL, b)
        res = kraft.cli("describe", "--json", state_dir=tmp_path)
        snap = json.loads(res.output)
        assert sorted(v["id"] for v in snap["quorum"]["voters"]) == CONTROLLERS
        assert snap["quorum"]["leader_id"] in CONTROLLERS and snap["brokers"] == []
        starts = parallel([lambda b=b: control.act(BrokerAction.START, b) for b in BROKERS])
        assert all("registered and unfenced" in s and "ZooKeeper" not in s for s in starts), starts
        assert kraft.fencing() == dict.fromkeys(BROKERS, False)
    finally:
        for node in [*CONTROLLERS, *BROKERS]:
            if kraft.status(node) != "running":
                kraft.control.act(BrokerAction.START, node)
        healthy(kraft)


def parallel(calls: list[Callable[[], str]]) -> list[str]:
    out: list[str] = [""] * len(calls)

    def run(i: int) -> None:
        try:
            out[i] = calls[i]()
        except Exception as exc:
            out[i] = f"FAILED: {exc}"

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def test_kill_drill_on_the_quorum_leader_loses_nothing(kraft: KRaftCompose, tmp_path: Path) -> None:
    """`drill run --fault kill --target active-controller` through the docker backend: the
    quorum leader is killed and started again by the drill (verified back in the quorum), and
    no acknowledged record is lost."""
    healthy(kraft)
    report = tmp_path / "drill.json"
    res = kraft.cli(
        "--backend",
        "docker",
        "--compose-project",
        kraft.project.name,
        "drill",
        "run",
        "--yes",
        "--fault",
        "kill",
        "--target",
        "active-controller",
        "--duration",
        "12",
        "--restore-after",
        "4",
        "--no-wait-preferred",
        "--report",
        str(report),
        state_dir=tmp_path,
    )
    try:
        assert res.exit_code == 0, res.output
        data = json.loads(report.read_text())
        assert data["ok"] is True and data["target_broker"] in CONTROLLERS, data
        assert data["audit"]["acked"] > 0 and not data["audit"]["lost"], data["audit"]
        assert "back in the quorum" in res.output or "quorum leader after" in res.output
        assert kraft.status(data["target_broker"]) == "running"
    finally:
        for node in CONTROLLERS:
            if kraft.status(node) != "running":
                kraft.control.act(BrokerAction.START, node)
        healthy(kraft)
