"""The ZooKeeper compose cluster on a real Docker engine, driven through kconsole's CLI with
`--backend docker`, as a user would after `make compose-up`.

The engine and the images come from the session fixtures (tests/integration/conftest.py,
docker_support.py): a dockerd this run starts when none answers, and kconsole-kafka images
built from the same jars as the local cluster. The project runs under its own name and on free
host ports below the ephemeral range (the compose file's port variables), and always ends with
`down -v`. Every outcome the CLI reports is checked against the engine (container states) and
ZooKeeper (registrations).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from click.testing import CliRunner, Result
from kazoo.client import KazooClient

from kconsole.cli.main import main as cli
from kconsole.cluster.settings import KAFKA_VERSION, TEST_TOPIC
from kconsole.config import Settings
from tests.integration.conftest import _free, port_offsets
from tests.integration.docker_support import (
    ComposeProject,
    Engine,
    running_project,
)
from tests.integration.test_rates import WINDOW_S as RATES_WINDOW_S
from tests.integration.test_rates import rates_on
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

BROKERS = {1, 2, 3}
# Ports inside the containers: a broker's EXTERNAL listener listens on its host port, so a host
# port equal to one of these makes the broker refuse its listeners ("two listeners on the same
# port") -- seen when the integration tests' own block 29092- was used here.
CONTAINER_PORTS = {2181, 29092, 29093}


def compose_ports() -> tuple[int, dict[int, int]]:
    """A free ZooKeeper port and broker ports, below the ephemeral range, none of them a port
    the containers use inside."""
    for offset in port_offsets():
        zk, base = 27181 + offset, 27182 + offset
        ports = [zk, *range(base, base + len(BROKERS))]
        if not CONTAINER_PORTS & set(ports) and all(_free(p) for p in ports):
            return zk, {b: base + b - 1 for b in BROKERS}
    raise RuntimeError("no free block of ports for the compose project")


class Compose:
    """The running project: its names, ports and the clients the checks use."""

    def __init__(self, project: ComposeProject, zk_port: int, ports: dict[int, int]):
        self.project = project
        self.zk_port = zk_port
        self.ports = ports
        self.bootstrap = ",".join(f"127.0.0.1:{ports[b]}" for b in sorted(ports))
        self.zk_connect = f"127.0.0.1:{zk_port}"
        self.engine = docker.from_env(timeout=60)

    def container(self, service: str) -> docker.models.containers.Container:
        found = self.engine.containers.list(
            all=True,
            filters={
                "label": [
                    f"com.docker.compose.project={self.project.name}",
                    f"com.docker.compose.service={service}",
                ]
            },
        )
        assert len(found) == 1, f"{service}: {[c.name for c in found]}"
        return found[0]

    def status(self, broker: int) -> str:
        return str(self.container(f"kafka-{broker}").status)

    def cli(self, *args: str, state_dir: Path) -> Result:
        return CliRunner().invoke(
            cli,
            [
                "--bootstrap",
                self.bootstrap,
                "--zookeeper",
                self.zk_connect,
                "--backend",
                "docker",
                "--compose-project",
                self.project.name,
                *args,
            ],
            # an empty state dir: no local cluster for kconsole to find or touch
            env={"KCONSOLE_CLUSTER_DIR": str(state_dir), "KCONSOLE_STATE_DIR": str(state_dir)},
            catch_exceptions=False,
        )


@pytest.fixture(scope="module")
def compose(docker_engine: Engine, docker_images: dict[str, str]) -> Iterator[Compose]:
    zk_port, ports = compose_ports()
    env = {"KCONSOLE_ZK_PORT": str(zk_port), "KCONSOLE_KAFKA_VERSION": KAFKA_VERSION}
    env |= {f"KCONSOLE_BROKER_{b}_PORT": str(p) for b, p in ports.items()}
    with running_project("docker-compose.yml", f"kconsole-test-{os.getpid()}", env) as project:
        yield Compose(project, zk_port, ports)


@pytest.fixture(autouse=True)
def no_rule_left(compose: Compose) -> Iterator[None]:
    """After every test of the module, pass or fail: no rule or chain of kconsole's in any of
    the project's containers' network namespaces (the docker backend's network faults)."""
    yield
    assert kconsole_chains(compose) == {}


@pytest.fixture(scope="module")
def zk(compose: Compose) -> Iterator[KazooClient]:
    client = KazooClient(hosts=compose.zk_connect, timeout=10)
    client.start(timeout=60)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def registered(zk: KazooClient) -> set[int]:
    if not zk.exists("/brokers/ids"):
        return set()
    return {int(i) for i in zk.get_children("/brokers/ids")}


def healthy(compose: Compose, zk: KazooClient) -> None:
    """Every broker registered and every test-topic partition fully in sync."""

    def in_sync() -> bool:
        if registered(zk) != BROKERS:
            return False
        base = f"/brokers/topics/{TEST_TOPIC}/partitions"
        if not zk.exists(base):
            return False
        parts = zk.get_children(base)
        states = [json.loads(zk.get(f"{base}/{p}/state")[0]) for p in parts]
        return len(parts) == 4 and all(set(s["isr"]) == BROKERS for s in states)

    wait_until(in_sync, 180, "3 registered brokers and test-topic fully in sync")


def test_topology_as_kconsole_describes_it(
    compose: Compose, zk: KazooClient, tmp_path: Path
) -> None:
    """The compose cluster is the reference topology, and `describe` names the addresses
    clients use (127.0.0.1:<published port>), not the internal kafka-N:29092 ones."""
    healthy(compose, zk)
    res = compose.cli("describe", "--json", state_dir=tmp_path)
    assert res.exit_code == 0, res.output
    snap = json.loads(res.output)
    brokers = {b["id"]: b for b in snap["brokers"]}
    assert set(brokers) == BROKERS
    for b, port in compose.ports.items():
        assert (brokers[b]["host"], brokers[b]["port"]) == ("127.0.0.1", port), brokers[b]
        assert brokers[b]["state"] == "up", brokers[b]
    parts = [p for p in snap["partitions"] if p["topic"] == TEST_TOPIC]
    assert len(parts) == 4 and all(len(p["replicas"]) == 3 for p in parts)
    text = compose.cli("describe", state_dir=tmp_path)
    assert f"127.0.0.1:{compose.ports[2]}" in text.output and "kafka-2:29092" not in text.output


def test_rates_of_a_known_load_through_the_compose_cluster(
    compose: Compose, zk: KazooClient, tmp_path: Path
) -> None:
    """Issue 38 through the docker backend's cluster: a producer at 2,000 records/s shown at
    that rate within 5 %, a consumer at 500/s likewise, STALLED and STOPPED within the window
    (the same check as on the local clusters, tests/integration/test_rates.py)."""
    healthy(compose, zk)
    settings = Settings(
        bootstrap=compose.bootstrap,
        zookeeper=compose.zk_connect,
        backend="docker",
        compose_project=compose.project.name,
        cluster_dir=tmp_path,
        rate_window_s=RATES_WINDOW_S,
    )
    rates_on(compose.bootstrap, settings)


def test_broker_commands_through_the_docker_backend(
    compose: Compose, zk: KazooClient, tmp_path: Path
) -> None:
    """stop / start / pause / resume / kill / start of broker 2 through the CLI: each reports
    only what the engine and ZooKeeper then show."""
    healthy(compose, zk)
    try:
        res = compose.cli("cluster", "stop", "2", "--yes", state_dir=tmp_path)
        assert res.exit_code == 0, res.output
        assert "controlled shutdown" in res.output, res.output
        assert compose.status(2) == "exited"
        assert compose.container("kafka-2").attrs["State"]["ExitCode"] == 143 or (
            compose.container("kafka-2").attrs["State"]["ExitCode"] == 0
        )
        wait_until(lambda: registered(zk) == {1, 3}, 30, "broker 2 to deregister")

        res = compose.cli("cluster", "start", "2", state_dir=tmp_path)
        assert res.exit_code == 0, res.output
        assert "registered in ZooKeeper" in res.output, res.output
        assert compose.status(2) == "running" and 2 in registered(zk)

        res = compose.cli("cluster", "pause", "2", "--yes", state_dir=tmp_path)
        assert res.exit_code == 0, res.output
        assert compose.status(2) == "paused"
        res = compose.cli("cluster", "resume", "2", state_dir=tmp_path)
        assert res.exit_code == 0, res.output
        assert compose.status(2) == "running"

        res = compose.cli("cluster", "kill", "2", "--yes", state_dir=tmp_path)
        assert res.exit_code == 0, res.output
        assert compose.status(2) == "exited"
        assert compose.container("kafka-2").attrs["State"]["ExitCode"] == 137
        # The killed broker's session lives until ZooKeeper expires it: start waits for that.
        res = compose.cli("cluster", "start", "2", state_dir=tmp_path)
        assert res.exit_code == 0, res.output
        assert "registered in ZooKeeper" in res.output, res.output
        assert compose.status(2) == "running" and registered(zk) == BROKERS

        # A broker command on a stopped state is refused with the engine's view, not faked.
        res = compose.cli("cluster", "resume", "2", state_dir=tmp_path)
        assert res.exit_code != 0 and "not paused" in res.output, res.output
    finally:
        container = compose.container("kafka-2")
        if container.status == "paused":
            container.unpause()
        elif container.status != "running":
            container.start()
        healthy(compose, zk)


def test_read_only_refuses_the_docker_backend(
    compose: Compose, zk: KazooClient, tmp_path: Path
) -> None:
    healthy(compose, zk)
    res = compose.cli("--read-only", "cluster", "kill", "3", "--yes", state_dir=tmp_path)
    assert res.exit_code == 4, res.output
    assert compose.status(3) == "running" and registered(zk) == BROKERS


def test_kill_drill_loses_nothing(compose: Compose, zk: KazooClient, tmp_path: Path) -> None:
    """A kill drill through the docker backend: the broker is killed, started again by the
    drill, and no acknowledged record is lost."""
    healthy(compose, zk)
    report = tmp_path / "drill.json"
    res = compose.cli(
        "drill",
        "run",
        "--yes",
        "--fault",
        "kill",
        "--target",
        "broker:2",
        "--duration",
        "8",
        "--restore-after",
        "3",
        "--no-wait-preferred",
        "--report",
        str(report),
        state_dir=tmp_path,
    )
    try:
        assert res.exit_code == 0, res.output
        data = json.loads(report.read_text())
        assert data["ok"] is True and data["target_broker"] == 2, data
        assert data["audit"]["acked"] > 0 and not data["audit"]["lost"], data["audit"]
        assert compose.status(2) == "running"
    finally:
        if compose.status(2) != "running":
            compose.container("kafka-2").start()
        healthy(compose, zk)


def kconsole_chains(compose: Compose) -> dict[str, list[str]]:
    """Every KCONSOLE rule or chain in any container's network namespace of the project, read
    with the host's iptables (what the docker backend's network faults make)."""
    out = {}
    for c in compose.engine.containers.list(
        filters={"label": f"com.docker.compose.project={compose.project.name}"}
    ):
        pid = int(c.attrs["State"]["Pid"])
        if pid <= 0:
            continue  # it exited after the list (the one-shot init-topics): no namespace left
        done = subprocess.run(
            ["nsenter", "--target", str(pid), "--net", "iptables", "-w", "5", "-S"],
            capture_output=True, text=True, timeout=20,
        )  # fmt: skip
        if done.returncode != 0:
            c.reload()
            assert c.status != "running", (c.name, done.stderr)  # gone since: nothing to read
            continue
        ours = [ln for ln in done.stdout.splitlines() if "KCONSOLE" in ln or "kconsole:" in ln]
        if ours:
            out[c.name] = ours
    return out


def healed(compose: Compose, zk: KazooClient, tmp_path: Path) -> None:
    """After a network drill, pass or fail: any rule left is healed (`drill heal --all`) and
    the cluster is healthy again for the next test; then it fails if a rule had been left."""
    left = kconsole_chains(compose)
    if left:
        compose.cli("drill", "heal", "--all", "--yes", state_dir=tmp_path)
    healthy(compose, zk)
    assert left == {}, left


def test_partition_drill_the_controller_from_zookeeper_in_its_container(
    compose: Compose, zk: KazooClient, tmp_path: Path
) -> None:
    """The docker backend's network faults: the active controller's container is partitioned
    from ZooKeeper (iptables in its own namespace): ZooKeeper expires its session, another
    broker becomes controller at a higher epoch, the old one resigns only after the heal (its
    container's log says so), nothing acknowledged is lost with acks=all, and no rule is left
    in any container."""
    healthy(compose, zk)
    old = json.loads(zk.get("/controller")[0])["brokerid"]
    epoch = int(zk.get("/controller_epoch")[0])
    report = tmp_path / "drill.json"
    try:
        res = compose.cli(
            "drill", "run", "--yes", "--fault", "partition", "--target", "controller",
            "--from", "zookeeper", "--duration", "14", "--restore-after", "11",
            "--no-wait-preferred", "--report", str(report),
            state_dir=tmp_path,
        )  # fmt: skip
        assert res.exit_code == 0, res.output
        assert f"broker {old} partitioned from zookeeper (both ways: 2 rules in its container" in (
            res.output
        )
        data = json.loads(report.read_text())
        assert data["ok"] is True and data["target_broker"] == old, data["notes"]
        assert data["audit"]["acked"] > 100 and not data["audit"]["lost"], data["audit"]
        events = data["timeline"]["events"]
        heal = next(e for e in events if e["kind"] == "action" and e["new"] == "heal")
        changed = next(e for e in events if e["kind"] == "controller-changed")
        resigned = [e for e in events if e["kind"] == "controller-resigned"]
        assert changed["old"] == old and changed["new"] != old and changed["ts"] < heal["ts"]
        assert int(zk.get("/controller_epoch")[0]) > epoch
        # The zombie: it resigned after the heal, when it reached ZooKeeper again.
        assert [e["broker"] for e in resigned] == [old] and resigned[0]["ts"] > heal["ts"]
        assert kconsole_chains(compose) == {}
    finally:
        healed(compose, zk, tmp_path)


def test_a_slow_follower_in_its_container_drops_out_of_the_isr_and_back(
    compose: Compose, zk: KazooClient, tmp_path: Path
) -> None:
    """slow on the docker backend: a broker's container links to the other brokers capped at
    65,536 B/s (hashlimit in its own namespace) cannot carry what it follows at 2,000 msg/s of
    1 KiB; a leader drops it from an ISR before the heal, it stays registered, every ISR is
    full again after the heal, nothing acknowledged is lost, and no rule is left in any
    container. The preferred leaders are elected first: a leader moving during the fault
    starts the follower's lag afresh (seen: the balance check moved two, 24.6 s in)."""
    healthy(compose, zk)
    res = compose.cli("elect", "--preferred", "--all", "--yes", state_dir=tmp_path)
    assert res.exit_code == 0, res.output
    ctl = json.loads(zk.get("/controller")[0])["brokerid"]
    b = min(BROKERS - {ctl})
    report = tmp_path / "drill.json"
    try:
        res = compose.cli(
            "drill", "run", "--yes", "--fault", "slow", "--target", f"broker:{b}",
            "--slow-rate", "65536", "--rate", "2000", "--message-bytes", "1024",
            "--duration", "34", "--restore-after", "30", "--no-wait-preferred",
            "--report", str(report),
            state_dir=tmp_path,
        )  # fmt: skip
        assert res.exit_code == 0, res.output
        assert f"broker {b} slowed from brokers at 65,536 B/s" in res.output, res.output
        data = json.loads(report.read_text())
        assert data["ok"] is True and data["settled"], data["notes"]
        assert data["audit"]["acked"] > 10_000 and not data["audit"]["lost"], data["audit"]
        events = data["timeline"]["events"]
        heal = next(e for e in events if e["kind"] == "action" and e["new"] == "heal")
        dropped = [
            e
            for e in events
            if e["kind"] == "isr-shrank"
            and e["topic"] == TEST_TOPIC
            and b not in (e["new"] or [])
            and e["ts"] < heal["ts"]
        ]
        assert dropped, "a follower capped at 65,536 B/s stayed in every ISR"
        assert not [e for e in events if e["kind"] == "broker-left" and e["broker"] == b]
        assert kconsole_chains(compose) == {}
    finally:
        healed(compose, zk, tmp_path)


def test_a_container_fault_held_by_a_killed_process_is_healed_by_its_watchdog(
    compose: Compose, zk: KazooClient, tmp_path: Path
) -> None:
    """The docker backend's faults outlive nothing either: a process holding one (a drill's
    guard) is SIGKILLed, and its watchdog removes the rules from the container's namespace."""
    healthy(compose, zk)
    code = (
        "import os, signal\n"
        "from kconsole.cluster.docker.control import DockerBrokerControl\n"
        "from kconsole.cluster.values import BrokerAction\n"
        f"c = DockerBrokerControl(None, {compose.project.name!r})\n"
        "c.guard_network_faults(os.getpid())\n"
        "print(c.act(BrokerAction.ISOLATE, 3), flush=True)\n"
        "signal.pause()  # holds the fault until the test SIGKILLs it\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        said = holder.stdout.readline() if holder.stdout else ""
        assert f"healed by a watchdog if process {holder.pid} ends first" in said, said
        assert list(kconsole_chains(compose)) == [compose.container("kafka-3").name]
        holder.kill()
        holder.wait(10)
        t0 = time.monotonic()
        wait_until(lambda: kconsole_chains(compose) == {}, 30, "the watchdog's heal")
        print(f"\nwatchdog healed kafka-3 {time.monotonic() - t0:.2f} s after its holder died")
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)
        if kconsole_chains(compose):
            compose.cli("drill", "heal", "--all", "--yes", state_dir=tmp_path)
        healthy(compose, zk)
