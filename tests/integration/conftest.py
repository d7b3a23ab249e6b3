"""The real local cluster, started once per test run in a temporary state dir and always torn
down. Ports are chosen away from the default ones so a developer's own cluster is never touched."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from kazoo.client import KazooClient

from kconsole.cluster import reaper
from kconsole.cluster.docker.control import CALL_TIMEOUT_S
from kconsole.cluster.docker.images import build_images, kafka_image
from kconsole.cluster.kraft.cluster import KRaftCluster, KRaftUpTimes
from kconsole.cluster.local.cluster import LocalCluster, LocalClusterSpec, partitions_fully_in_sync
from kconsole.cluster.settings import KAFKA_VERSION, KRAFT_KAFKA_VERSION, TEST_TOPIC
from kconsole.cluster.values import ProcState
from tests.integration.docker_support import (
    WARM_UP_NICE,
    Engine,
    NoEngine,
    start_engine,
    start_watchdog,
)
from tests.waiting import wait_until


def _free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def squat_low_port() -> socket.socket:
    """A listening socket on a free port below the ephemeral range (close it when done)."""
    for port in range(26000, 27000):
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            s.close()
            continue
        s.listen()
        return s
    raise RuntimeError("no free low port")


def port_offsets() -> list[int]:
    """The offsets (0, 100, ... 1900) of the port blocks to try, starting from one chosen by
    this process's pid: two test runs started at once do not both take the first free block
    before either has bound it."""
    blocks = [i * 100 for i in range(20)]
    start = os.getpid() % len(blocks)
    return blocks[start:] + blocks[:start]


def pick_ports(brokers: int) -> tuple[int, int]:
    """A ZooKeeper port and a broker base port, all currently free."""
    # Below the ephemeral port range (see LocalClusterSpec), away from the defaults.
    for offset in port_offsets():
        zk, base = 24181 + offset, 29092 + offset
        if _free(zk) and all(_free(base + i) for i in range(brokers)):
            return zk, base
    raise RuntimeError("no free block of ports for the test cluster")


ATTACH_ENV = "KCONSOLE_TEST_ATTACH_CLUSTER"


def start_reaper(local: LocalCluster) -> subprocess.Popen[bytes]:
    """Stops the cluster if this process dies without its fixtures' teardown (a native crash,
    a SIGKILL), by the pids the cluster recorded (kconsole.cluster.reaper)."""
    return reaper.start_reaper(local.state_dir)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A running 3-broker cluster with test-topic, for the whole run.

    With ATTACH_ENV set (a test running part of itself in a pytest process of its own), the
    cluster already running in that state dir, which its owner stops."""
    if attach := os.environ.get(ATTACH_ENV):
        yield LocalCluster(Path(attach))
        return
    zk_port, base_port = pick_ports(3)
    spec = LocalClusterSpec(brokers=3, zk_port=zk_port, base_port=base_port)
    local = LocalCluster(tmp_path_factory.mktemp("cluster"), spec)
    reaper = start_reaper(local)
    try:
        local.up(timeout=240)
        yield local
    finally:
        local.down(timeout=20)
        reaper.terminate()
        reaper.wait(10)
        leftovers = [p.name for p in local.status().processes if p.state is not ProcState.STOPPED]
        assert not leftovers, f"processes left running after down: {leftovers}"


@pytest.fixture(scope="session")
def zk(cluster: LocalCluster) -> Iterator[KazooClient]:
    client = KazooClient(hosts=cluster.spec.zk_connect, timeout=10)
    client.start(timeout=30)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def restore(cluster: LocalCluster, zk: KazooClient, timeout: float = 150.0) -> None:
    """Bring ZooKeeper and every broker back (resume paused, start stopped) and wait for full
    ISR."""
    if cluster.zookeeper.state() is ProcState.STOPPED:
        cluster.start_zookeeper(timeout=timeout)
    for bid in cluster.spec.broker_ids:
        proc = cluster.broker(bid)
        if proc.state() is ProcState.PAUSED:
            cluster.resume_broker(bid)
        elif proc.state() is ProcState.STOPPED:
            # A killed broker stays registered until its ZooKeeper session expires; started
            # before that, it finds its own id taken and exits at once.
            def expired(b: int = bid) -> bool:
                return b not in registered(zk)

            wait_until(
                expired,
                timeout,
                f"broker {bid}'s registration from before it was killed to expire",
            )
            cluster.start_broker(bid, wait=False)
    wait_until(
        lambda: registered(zk) == set(cluster.spec.broker_ids),
        timeout,
        "every broker to be registered",
    )
    wait_until(lambda: partitions_fully_in_sync(zk, TEST_TOPIC), timeout, "full ISR on test-topic")
    cluster.wait_metadata_everywhere(TEST_TOPIC, time.monotonic() + timeout)
    on_preferred_leaders(cluster)


def on_preferred_leaders(cluster: LocalCluster, timeout: float = 60.0) -> None:
    """Every partition led by its preferred replica, so that the cluster's own leader
    rebalancing (every 30 s here) cannot move a leader in the middle of the next test."""
    from confluent_kafka.admin import AdminClient

    from kconsole.cluster.reassign.client import ReassignClient
    from kconsole.config import Settings

    admin = AdminClient({"bootstrap.servers": cluster.spec.bootstrap})

    def preferred() -> bool:
        md = admin.list_topics(timeout=10)
        off = [p for tm in md.topics.values() for p in tm.partitions.values()
               if p.leader != p.replicas[0]]  # fmt: skip
        if off:
            with ReassignClient(Settings(bootstrap=cluster.spec.bootstrap)) as c:  # set-up
                c.elect("preferred", None)
        return not off

    wait_until(preferred, timeout, "every partition on its preferred leader")


@pytest.fixture
def healthy(cluster: LocalCluster, zk: KazooClient) -> Iterator[LocalCluster]:
    """The cluster with every broker up and test-topic fully in sync, before and after the test."""
    restore(cluster, zk)
    try:
        yield cluster
    finally:
        restore(cluster, zk)


def registered(zk: KazooClient) -> set[int]:
    return {int(i) for i in zk.get_children("/brokers/ids")}


def controller(zk: KazooClient) -> int | None:
    if not zk.exists("/controller"):
        return None
    return int(json.loads(zk.get("/controller")[0])["brokerid"])


def partition_state(zk: KazooClient, topic: str, partition: int) -> dict:
    return json.loads(zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")[0])


@pytest.fixture(scope="session")
def kraft(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KRaftCluster, KRaftUpTimes]]:
    """The local KRaft cluster (3 dedicated controllers + 3 brokers, Kafka 4.x) on free ports of
    its own, started once for the whole run (only when a test asks for it) and always torn down;
    its teardown fails the run if any node it started is left alive."""
    from tests.integration.kraft_support import running_kraft  # it imports this module

    yield from running_kraft(tmp_path_factory, combined=False)


@pytest.fixture
def kraft_healthy(kraft: tuple[KRaftCluster, KRaftUpTimes]) -> Iterator[KRaftCluster]:
    """The shared KRaft cluster with every node running, a quorum leader and every broker
    unfenced, before and after the test (what it stopped is started again, with deadlines)."""
    from tests.integration.kraft_support import restore_kraft

    cluster, _ = kraft
    restore_kraft(cluster)
    try:
        yield cluster
    finally:
        restore_kraft(cluster)


# ------------------------------------------------------------------------------------------
# A real Docker engine and the compose images (tests/integration/docker_support.py)
# ------------------------------------------------------------------------------------------


class _DockerWarmUp:
    """The engine and the images, made in a thread from the end of collection on: installing
    the packages, starting dockerd and building the images (about a minute on a new machine,
    mostly waiting for downloads and the engine) overlaps the tests that run before the
    real-engine ones instead of adding to the run. The fixtures below wait for it."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        # The process's environment as it is now, before any test: tests running while this
        # thread works set DOCKER_HOST to a socket that does not exist (tests/unit/
        # test_docker_backend.py), which from_env() would read here (a fresh-clone check of
        # three modules failed once so).
        self.environment = dict(os.environ)
        self.engine: Engine | None = None
        self.error: BaseException | None = None
        self.images: dict[str, str] = {}
        self.seconds = 0.0
        self.dog: subprocess.Popen[bytes] | None = None
        self.thread = threading.Thread(target=self._run, name="docker-warm-up", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        t0 = time.monotonic()
        try:
            self.engine = start_engine(self.workdir, self.environment)
            # stops that dockerd if pytest dies before its teardown
            self.dog = start_watchdog(self.engine, [])
            client = docker.from_env(timeout=CALL_TIMEOUT_S, environment=self.environment)
            try:
                versions = (KAFKA_VERSION, KRAFT_KAFKA_VERSION)
                self.engine.notes += build_images(client, versions, nice=WARM_UP_NICE)
                self.images = {v: kafka_image(v) for v in versions}
            finally:
                client.close()
        except BaseException as exc:  # handed to the fixture, which skips or fails with it
            self.error = exc
        self.seconds = time.monotonic() - t0

    def wait(self) -> Engine:
        self.thread.join()
        if isinstance(self.error, NoEngine):
            pytest.skip(f"no Docker engine: {self.error}")
        if self.error is not None:
            raise self.error
        assert self.engine is not None
        return self.engine

    def stop(self) -> None:
        self.thread.join()
        if self.engine is not None:
            self.engine.stop()
        if self.dog is not None:
            self.dog.terminate()
            self.dog.wait(10)
            self.dog = None
        shutil.rmtree(self.workdir, ignore_errors=True)  # the engine's log, once it is stopped


_WARM_UP: list[_DockerWarmUp] = []


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The real-engine tests run last in the session: the warm-up (packages, dockerd, images)
    then has the whole run to finish at its low priority instead of holding them up."""
    items.sort(key=lambda item: "docker_engine" in getattr(item, "fixturenames", ()))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the Docker warm-up when a collected test needs the engine."""
    if any("docker_engine" in getattr(item, "fixturenames", ()) for item in session.items):
        workdir = Path(tempfile.mkdtemp(prefix="kconsole-docker-"))
        _WARM_UP.append(_DockerWarmUp(workdir))


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """The dockerd this run started is stopped even when no real-engine test ran: last, after
    pytest's own teardown of the fixtures left (an interrupted run), so that the compose
    projects are taken down while the engine still answers."""
    while _WARM_UP:
        _WARM_UP.pop().stop()


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[Engine]:
    """A Docker engine that answers: the running one, or a dockerd this run starts (installing
    Debian's packages first on a root machine that lacks them) and stops by its PID at the end,
    with kconsole's compose images built. Skips, saying why, only where no engine can be
    started."""
    if not _WARM_UP:  # collected without the hook's help (a plugin reordering items)
        _WARM_UP.append(_DockerWarmUp(Path(tempfile.mkdtemp(prefix="kconsole-docker-"))))
    warm = _WARM_UP[0]
    engine = warm.wait()
    try:
        yield engine
    finally:
        warm.stop()


@pytest.fixture(scope="session")
def docker_images(docker_engine: Engine) -> dict[str, str]:
    """Kafka version -> the compose image, built by kconsole's own builder when missing (on a
    JRE image built from Debian packages where no registry answers)."""
    return dict(_WARM_UP[0].images)
