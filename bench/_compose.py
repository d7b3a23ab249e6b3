"""The throw-away docker compose cluster of the benchmarks that measure the compose mode.

    with temporary_compose("kcbench") as cluster:
        ...  # cluster: a ComposeCluster up (brokers healthy and registered, test-topic in sync)

compose/docker-compose.yml (ZooKeeper + 3 brokers + the one-shot test-topic creator) as a
project of its own, `<prefix>-<pid>`, on host ports picked free in 25000-25999: below the
kernel's ephemeral range, and away from the local cluster's defaults (22181, 19092-), the
integration tests' (24181-, 29092-) and bench/_cluster.py's (23181-, 21092-), so nobody else's
cluster or compose project is touched. Every wait has a deadline and polls (no fixed sleeps).
The project is always taken down with `down -v`, by its own name; a reaper process does it if
the script dies first (a timeout's SIGKILL from bench/suite.py, say), as in bench/_cluster.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kconsole.cluster.errors import PortInUse
from kconsole.cluster.local.cluster import check_port_free, ephemeral_port_range
from kconsole.cluster.local.probes import partitions_fully_in_sync, read_registrations, zk_client
from kconsole.cluster.reaper import wait_for_exit
from kconsole.cluster.settings import HOST, TEST_TOPIC

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_FILE = ROOT / "compose" / "docker-compose.yml"
KAFKA_VERSION = "3.9.2"  # the compose file's default image, kconsole-kafka:<version>
BROKERS = (1, 2, 3)  # the compose file's brokers
# Blocks of 10 ports from PORT_LOW: ZooKeeper on the first, the brokers on the next three.
PORT_LOW, PORT_HIGH, PORT_STEP = 25000, 26000, 10
UP_TIMEOUT_S = 300.0
DOWN_TIMEOUT_S = 20  # docker stop time per container in `down`


def compose_command() -> list[str]:
    """`docker compose` (v2) when it works, else the standalone `docker-compose` (v1)."""
    docker = shutil.which("docker")
    if docker:
        probe = subprocess.run(
            [docker, "compose", "version"], capture_output=True, timeout=30, check=False
        )
        if probe.returncode == 0:
            return [docker, "compose"]
    v1 = shutil.which("docker-compose")
    if v1:
        return [v1]
    raise RuntimeError("neither `docker compose` nor `docker-compose` is installed")


def _free(port: int) -> bool:
    try:
        check_port_free(HOST, port, "")
    except PortInUse:
        return False
    return True


def free_ports() -> tuple[int, list[int]]:
    """A ZooKeeper port and one port per broker, all free, in PORT_LOW..PORT_HIGH."""
    low, _high = ephemeral_port_range()
    for base in range(PORT_LOW, min(PORT_HIGH, low) - PORT_STEP + 1, PORT_STEP):
        ports = [base, *(base + i for i in BROKERS)]
        if all(_free(p) for p in ports):
            return ports[0], ports[1:]
    raise RuntimeError(f"no free block of ports in {PORT_LOW}-{PORT_HIGH}")


@dataclass
class ComposeCluster:
    """One compose project of a benchmark: its name, command, ports and how long `up` took."""

    project: str
    command: list[str]
    zk_port: int
    broker_ports: list[int]
    version: str = KAFKA_VERSION
    up_s: float = float("nan")  # `up -d` to every broker healthy + test-topic in sync
    up_steps: dict[str, float] = field(default_factory=dict)  # when each step was seen

    @property
    def env(self) -> dict[str, str]:
        env = {
            "KCONSOLE_ZK_PORT": str(self.zk_port),
            "KCONSOLE_KAFKA_VERSION": self.version,
        }
        for bid, port in zip(BROKERS, self.broker_ports, strict=True):
            env[f"KCONSOLE_BROKER_{bid}_PORT"] = str(port)
        return env

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{HOST}:{p}" for p in self.broker_ports)

    @property
    def zk_connect(self) -> str:
        return f"{HOST}:{self.zk_port}"

    @property
    def broker_ids(self) -> list[int]:
        return list(BROKERS)

    def describe(self) -> str:
        ports = self.broker_ports
        return (
            f"docker compose project {self.project} (kconsole-kafka:{self.version}), "
            f"ZooKeeper {self.zk_port}, brokers {ports[0]}-{ports[-1]}"
        )

    def argv(self, *args: str) -> list[str]:
        return [*self.command, "-p", self.project, "-f", str(COMPOSE_FILE), *args]

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*args),
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **self.env},
            stdin=subprocess.DEVNULL,
            check=False,
        )

    def containers(self) -> dict[str, dict[str, Any]]:
        """Service -> `docker inspect` of its container (this project's only)."""
        ids = subprocess.run(
            ["docker", "ps", "-aq", "--filter", f"label=com.docker.compose.project={self.project}"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout.split()
        if not ids:
            return {}
        out = subprocess.run(
            ["docker", "inspect", *ids], capture_output=True, text=True, timeout=60, check=True
        ).stdout
        return {
            c["Config"]["Labels"].get("com.docker.compose.service", c["Name"]): c
            for c in json.loads(out)
        }

    def up(self, progress: Callable[[str], None]) -> None:
        """`up -d`, then wait (polling, with a deadline) until every broker container is healthy,
        the topic creator exited 0, ZooKeeper has every broker registered and every test-topic
        partition has its full ISR. Sets up_s and up_steps."""
        t0 = time.monotonic()
        deadline = t0 + UP_TIMEOUT_S
        done = self.run("up", "-d", timeout=UP_TIMEOUT_S)
        if done.returncode != 0:
            logs = self.run("logs", "--tail", "30", timeout=60)
            raise RuntimeError(
                f"compose up of {self.project} failed (exit {done.returncode}):\n"
                f"{done.stderr.strip()[-1500:]}\n{logs.stdout[-2000:]}"
            )
        self.up_steps["up -d returned"] = time.monotonic() - t0
        progress(f"compose up -d returned after {self.up_steps['up -d returned']:.1f} s")
        want = {f"kafka-{b}" for b in BROKERS}
        while True:
            cs = self.containers()
            healthy = {
                s
                for s, c in cs.items()
                if (c["State"].get("Health") or {}).get("Status") == "healthy"
            }
            init = (cs.get("init-topics") or {}).get("State") or {}
            if init.get("Status") == "exited" and init.get("ExitCode") != 0:
                logs = self.run("logs", "--tail", "30", "init-topics", timeout=60)
                raise RuntimeError(f"init-topics exited {init.get('ExitCode')}:\n{logs.stdout}")
            if want <= healthy:
                self.up_steps.setdefault("brokers healthy", time.monotonic() - t0)
            if init.get("Status") == "exited":
                self.up_steps.setdefault("test-topic created", time.monotonic() - t0)
            if len(self.up_steps) == 3 and self._in_sync():
                break
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"compose project {self.project} not up within {UP_TIMEOUT_S:.0f} s: "
                    f"healthy {sorted(healthy)}, init-topics {init.get('Status')}"
                )
            time.sleep(0.2)
        self.up_s = time.monotonic() - t0
        self.up_steps["registered + test-topic in sync"] = self.up_s

    def _in_sync(self) -> bool:
        try:
            with zk_client(self.zk_connect, 5.0) as zk:
                regs = read_registrations(zk)
                return sorted(regs) == list(BROKERS) and partitions_fully_in_sync(zk, TEST_TOPIC)
        except Exception:  # ZooKeeper not answering yet: asked again
            return False

    def down(self) -> str:
        done = self.run("down", "-v", "--remove-orphans", "-t", str(DOWN_TIMEOUT_S), timeout=300)
        if done.returncode != 0:
            return f"failed (exit {done.returncode}): {done.stderr.strip()[-500:]}"
        return "done"


def image_exists(version: str = KAFKA_VERSION) -> bool:
    probe = subprocess.run(
        ["docker", "image", "inspect", f"kconsole-kafka:{version}"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    return probe.returncode == 0


@contextmanager
def temporary_compose(
    prefix: str = "kcbench", *, progress: Callable[[str], None] | None = None
) -> Iterator[ComposeCluster]:
    """A compose project up (see ComposeCluster.up), always taken down with `down -v` after."""
    say = progress or (lambda _msg: None)
    if not image_exists():
        raise RuntimeError(
            f"image kconsole-kafka:{KAFKA_VERSION} is missing: "
            ".venv/bin/python compose/build_images.py builds it"
        )
    zk_port, broker_ports = free_ports()
    cluster = ComposeCluster(f"{prefix}-{os.getpid()}", compose_command(), zk_port, broker_ports)
    reaper = _start_reaper(cluster)
    try:
        cluster.up(say)
        say(f"compose cluster up in {cluster.up_s:.1f} s ({cluster.describe()})")
        yield cluster
    finally:
        try:
            say(f"compose down -v {cluster.project}: {cluster.down()}")
        finally:
            reaper.terminate()
            reaper.wait(10)
        left = cluster.containers()
        if left:  # not raised: that would hide the error the body may be raising
            print(f"containers left after down: {sorted(left)}", file=sys.stderr)


def _start_reaper(cluster: ComposeCluster) -> subprocess.Popen[bytes]:
    """This file run as a script: it waits for our process to end, then takes the project down."""
    argv = [sys.executable, __file__, str(os.getpid()), cluster.project]
    argv += [str(cluster.zk_port), *map(str, cluster.broker_ports), *cluster.command]
    return subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        cwd=str(ROOT),
        start_new_session=True,  # outlives a signal sent to our process group
    )


def _reap(argv: list[str]) -> None:
    """Once pid argv[0] is gone, `down -v` its compose project (argv[1], ports, command)."""
    pid, project = int(argv[0]), argv[1]
    zk_port, broker_ports = int(argv[2]), [int(p) for p in argv[3 : 3 + len(BROKERS)]]
    command = argv[3 + len(BROKERS) :]
    wait_for_exit(pid)
    ComposeCluster(project, command, zk_port, broker_ports).down()


if __name__ == "__main__":
    _reap(sys.argv[1:])
