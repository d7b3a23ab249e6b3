"""A real Docker engine and compose projects for the real-engine tests.

The engine: one that already answers is used and left alone. Otherwise, on a root machine, this
installs Debian's packages when they are missing (docker.io, docker-compose, debootstrap,
iptables: the issue's recipe) and starts `dockerd` itself; at the end it stops that dockerd by its
PID and nothing else. Where no engine can be started (not root, no apt, the packages refused)
the tests skip, saying why. A watchdog process (`python -m tests.integration.docker_support`)
takes the compose projects down and stops the dockerd this run started if pytest dies without
its teardown.

The images are built once per run by kconsole's own builder (kconsole.cluster.docker.images, what
`make compose-images` runs); an image that exists is kept.

Each compose project gets its own name and free host ports below the ephemeral range, through
the compose files' port variables, so a developer's own compose cluster or local cluster on the
reference ports is never touched.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import psutil
import pytest

from kconsole.cluster import reaper
from kconsole.cluster.kraft.cluster import LAST_CONTROLLERS_GRACE_S, LAST_NODES_GRACE_S

COMPOSE_DIR = Path(__file__).resolve().parents[2] / "compose"
# The compose files' knobs for the tests: the containers' JVMs compile with C1 only, as the
# tests' local clusters do (tests/conftest.py: on a 2-core machine their starts cost about a
# third less CPU), and the healthchecks run every second, so that `up` does not wait up to 5 s
# per dependency.
TEST_KAFKA_OPTS = {
    "KCONSOLE_KAFKA_OPTS": "-XX:TieredStopAtLevel=1",
    "KCONSOLE_HEALTHCHECK_INTERVAL": "1s",
}
# The warm-up's package installs and image builds run at the lowest CPU priority: they overlap
# the tests before the real-engine ones, which should not feel them.
WARM_UP_NICE = 19
PACKAGES = ("docker.io", "docker-compose", "debootstrap", "iptables")
ENGINE_START_TIMEOUT_S = 60.0
# Tearing a project down: a broker's controlled shutdown (seconds; `docker stop` returns as soon
# as it has exited), then the others, as kconsole.cluster.kraft.cluster's `down` gives its
# controllers.
BROKER_STOP_S = 20


class NoEngine(Exception):
    """No Docker engine can be had here; the message says why (the tests skip with it)."""


def _answers(timeout: float = 5.0, environment: Mapping[str, str] | None = None) -> bool:
    try:
        client = docker.from_env(timeout=timeout, environment=environment)
    except Exception:
        return False
    try:
        return bool(client.ping())
    except Exception:
        return False
    finally:
        client.close()


@dataclass
class Engine:
    """The engine the tests use; `pid` is the dockerd this run started (None: not ours)."""

    pid: int | None = None
    log: Path | None = None
    notes: list[str] = field(default_factory=list)

    def stop(self, timeout: float = 60.0) -> None:
        """Stop the dockerd this run started, by its PID (SIGTERM, then SIGKILL)."""
        if self.pid is None:
            return
        stop_pid(self.pid, timeout)
        self.pid = None


def stop_pid(pid: int, timeout: float) -> None:
    try:
        proc = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return
    with contextlib.suppress(psutil.Error):
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except psutil.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def start_engine(workdir: Path, environment: Mapping[str, str] | None = None) -> Engine:
    """An engine that answers: the running one, or a dockerd started here (see the module).
    `environment`: the DOCKER_* settings to find it by (default the process's own, read now;
    the warm-up thread passes a copy, as unit tests running meanwhile point DOCKER_HOST away)."""
    if _answers(environment=environment):
        return Engine(notes=["a Docker engine was already running: used, left running"])
    if os.geteuid() != 0:
        raise NoEngine("no Docker engine answers, and starting one needs root")
    notes: list[str] = []
    missing = [cmd for cmd in ("dockerd", "docker-compose", "debootstrap") if not _which(cmd)]
    if missing:
        if not _which("apt-get"):
            raise NoEngine(f"no Docker engine answers, {missing} are missing and there is no apt")
        t0 = time.monotonic()
        argv = ["apt-get", "install", "-y", "--no-install-recommends", *PACKAGES]
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        run = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=900,
            env=env,
            stdin=subprocess.DEVNULL,
            preexec_fn=lambda: os.nice(WARM_UP_NICE),
        )
        if run.returncode != 0:
            tail = "\n".join((run.stdout + run.stderr).strip().splitlines()[-5:])
            raise NoEngine(f"`{' '.join(argv)}` failed (exit {run.returncode}):\n{tail}")
        notes.append(f"installed {' '.join(PACKAGES)} in {time.monotonic() - t0:.1f} s")
    log = workdir / "dockerd.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [_which("dockerd") or "dockerd"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    engine = Engine(pid=proc.pid, log=log, notes=notes)
    deadline = time.monotonic() + ENGINE_START_TIMEOUT_S
    while not _answers(2.0, environment):
        if proc.poll() is not None or time.monotonic() > deadline:
            engine.stop()
            tail = "\n".join(log.read_text(errors="replace").strip().splitlines()[-5:])
            raise NoEngine(f"dockerd did not answer (exit {proc.returncode}):\n{tail}")
        time.sleep(0.2)
    notes.append(f"started dockerd (pid {proc.pid})")
    return engine


def _which(cmd: str) -> str | None:
    # /usr/sbin is not on every PATH (dockerd lives there)
    return shutil.which(cmd) or shutil.which(cmd, path="/usr/sbin:/usr/bin:/sbin:/bin")


def compose_command() -> list[str]:
    """`docker compose` (v2) when it works, else the standalone `docker-compose` (v1)."""
    if _which("docker"):
        probe = subprocess.run(
            ["docker", "compose", "version"], capture_output=True, timeout=30, check=False
        )
        if probe.returncode == 0:
            return ["docker", "compose"]
    v1 = _which("docker-compose")
    if v1:
        return [v1]
    raise NoEngine("neither `docker compose` nor `docker-compose` is installed")


@dataclass
class ComposeProject:
    """One compose project of the tests: its file, name and environment (the ports)."""

    file: Path
    name: str
    env: Mapping[str, str]
    command: list[str]

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        argv = [*self.command, "-p", self.name, "-f", str(self.file), *args]
        return subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **self.env},
            stdin=subprocess.DEVNULL,
        )

    def up(self, timeout: float = 300) -> None:
        """`up -d`, then every long-running service healthy; a container that exits instead
        fails at once, with its own log."""
        run = self.run("up", "-d", timeout=timeout)
        if run.returncode != 0:
            logs = self.run("logs", "--tail", "30", timeout=60)
            raise AssertionError(
                f"compose up of {self.name} failed:\n{run.stdout}\n{run.stderr}\n{logs.stdout}"
            )
        client = docker.from_env(timeout=60)
        try:
            deadline = time.monotonic() + timeout
            while True:
                waiting = []
                for c in client.containers.list(
                    all=True, filters={"label": f"com.docker.compose.project={self.name}"}
                ):
                    if c.labels.get("dev.kconsole.role") == "init":
                        continue  # the one-shot topic creator
                    service = c.labels.get("com.docker.compose.service", c.name)
                    if c.status != "running":
                        logs = c.logs(tail=30).decode(errors="replace")
                        raise AssertionError(f"{service} is {c.status} after up:\n{logs}")
                    health = (c.attrs.get("State") or {}).get("Health") or {}
                    if health.get("Status") != "healthy":
                        waiting.append(service)
                if not waiting:
                    return
                if time.monotonic() > deadline:
                    raise AssertionError(f"not healthy {timeout:.0f} s after up: {waiting}")
                time.sleep(0.5)
        finally:
            client.close()

    def down(self) -> None:
        """`down -v`, the nodes stopped first as kconsole stops a cluster of its own: the
        brokers with their controlled shutdown (all at once, each as long as it takes, up to
        BROKER_STOP_S), then the rest before SIGKILL: ZooKeeper LAST_NODES_GRACE_S, the KRaft
        controllers LAST_CONTROLLERS_GRACE_S. The last controller standing resigns to voters
        that are gone and waits its 5 s for a successor: the time a `down -t 20` of the project
        spent on it is not spent, for a quorum whose volumes are deleted next."""
        self._stop_nodes()
        run = self.run("down", "-v", "--remove-orphans", "-t", "20", timeout=300)
        assert run.returncode == 0, f"compose down of {self.name} failed:\n{run.stderr}"

    def _stop_nodes(self) -> None:
        client = docker.from_env(timeout=60)
        try:
            running = client.containers.list(
                filters={"label": f"com.docker.compose.project={self.name}"}
            )
            brokers = [c for c in running if c.labels.get("dev.kconsole.role") == "broker"]
            rest = [c for c in running if c not in brokers]
            controllers = all(c.labels.get("dev.kconsole.role") == "controller" for c in rest)
            grace = LAST_CONTROLLERS_GRACE_S if controllers else LAST_NODES_GRACE_S
            for group, timeout in ((brokers, BROKER_STOP_S), (rest, grace)):
                threads = [threading.Thread(target=_stop_quietly, args=(c, timeout)) for c in group]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
        finally:
            client.close()


def _stop_quietly(container: Any, timeout: float) -> None:
    """docker stop (SIGTERM, SIGKILL after `timeout`); `down` deals with what this could not."""
    with contextlib.suppress(docker.errors.DockerException):
        container.stop(timeout=int(timeout))


def start_watchdog(engine: Engine, projects: list[ComposeProject]) -> subprocess.Popen[bytes]:
    """Takes `projects` down and stops our dockerd once this process has ended (for a pytest
    killed before its teardown); terminate it after a normal teardown."""
    argv = [sys.executable, "-m", "tests.integration.docker_support", str(os.getpid())]
    argv += [str(engine.pid or 0)]
    for p in projects:
        argv += [str(p.file), p.name, " ".join(p.command)]
    return subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        cwd=str(COMPOSE_DIR.parent),
    )


@contextlib.contextmanager
def watched(engine: Engine, projects: list[ComposeProject]) -> Iterator[None]:
    dog = start_watchdog(engine, projects)
    try:
        yield
    finally:
        dog.terminate()
        dog.wait(10)


@contextlib.contextmanager
def running_project(file_name: str, name: str, env: Mapping[str, str]) -> Iterator[ComposeProject]:
    """A compose file of compose/ up as project `name` (every service healthy), with the test
    knobs (TEST_KAFKA_OPTS) and `env`; always taken down, by a watchdog too if pytest dies
    first. Skips where there is no compose command."""
    try:
        command = compose_command()
    except NoEngine as exc:
        pytest.skip(str(exc))
    project = ComposeProject(COMPOSE_DIR / file_name, name, {**TEST_KAFKA_OPTS, **env}, command)
    with watched(Engine(), [project]):
        try:
            project.up()
            yield project
        finally:
            project.down()


def _watchdog(argv: list[str]) -> int:
    pid, dockerd = int(argv[0]), int(argv[1])
    reaper.wait_for_exit(pid)
    rest = argv[2:]
    for i in range(0, len(rest) - 2, 3):
        file, name, command = rest[i], rest[i + 1], rest[i + 2].split()
        subprocess.run(
            [*command, "-p", name, "-f", file, "down", "-v", "--remove-orphans", "-t", "5"],
            capture_output=True,
            timeout=300,
            check=False,
        )
    if dockerd:
        stop_pid(dockerd, 60)
    return 0


if __name__ == "__main__":
    raise SystemExit(_watchdog(sys.argv[1:]))
