"""BrokerControl for the docker compose cluster (compose/docker-compose.yml).

Broker containers are found by their labels, never by name: Compose labels every container with
`com.docker.compose.project` and `com.docker.compose.service`, and the compose file adds
`dev.kconsole.role=broker` and `dev.kconsole.broker-id=N`. The engine does the signalling:

    stop    docker stop: SIGTERM, Kafka's controlled shutdown, SIGKILL after `stop_timeout`
    kill    docker kill: SIGKILL
    pause   docker pause: the cgroup freezer (the JVM freezes with its sockets open)
    resume  docker unpause
    start   docker start (the broker registers in ZooKeeper a few seconds later); after a
            docker kill, only once the killed broker's ZooKeeper session has expired

Each action is reported done only for an effect seen: the container's status read back after
the call (and for a stop its exit code), and for a start the broker's own registration (read
through `registrations`, ZooKeeper's /brokers/ids, as the local backend does) while its
container runs. Every engine failure becomes a ClusterError carrying the engine's own message.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Protocol

import docker
import requests

from kconsole.cluster.control import BrokerAction
from kconsole.cluster.errors import ClusterError
from kconsole.cluster.procs import ProcState
from kconsole.cluster.settings import ZK_TICK_TIME_MS

DEFAULT_PROJECT = "kconsole"
PROJECT_LABEL = "com.docker.compose.project"
SERVICE_LABEL = "com.docker.compose.service"
ONEOFF_LABEL = "com.docker.compose.oneoff"  # `docker compose run` containers
ROLE_LABEL = "dev.kconsole.role"
BROKER_ID_LABEL = "dev.kconsole.broker-id"

# Finding out whether an engine answers: a missing socket fails at once, but DOCKER_HOST may
# name a host that never answers, and the SDK's default timeout is 60 s.
CONNECT_TIMEOUT_S = 3.0
# Engine calls once connected. `docker kill` waits (in the engine) up to 10 s for the exit;
# `docker stop` gets this plus its own stop timeout from the SDK.
CALL_TIMEOUT_S = 30.0
# Time docker stop allows for Kafka's controlled shutdown before it sends SIGKILL.
STOP_TIMEOUT_S = 60

_SERVICE_RE = re.compile(r"^kafka-(\d+)$")
# A container killed by SIGKILL (docker kill, or docker stop running out of time).
SIGKILL_EXIT = 137
# Kafka's zookeeper.session.timeout.ms when the container's environment does not set it.
KAFKA_DEFAULT_SESSION_TIMEOUT_MS = 18000
# Failures of engine calls. Connection errors after the client was created are plain
# `requests` exceptions, not DockerException (APIError is both).
_ENGINE_ERRORS: tuple[type[Exception], ...] = (
    docker.errors.DockerException,
    requests.exceptions.RequestException,
)
ENGINE_ERRORS = _ENGINE_ERRORS  # for the other modules that talk to the engine (images)

# Which actions fit which container status (the engine's State.Status).
_FITS: dict[str, frozenset[BrokerAction]] = {
    "running": frozenset({BrokerAction.STOP, BrokerAction.KILL, BrokerAction.PAUSE}),
    # The engine sends the signal, then unpauses the container so the process can act on it.
    "paused": frozenset({BrokerAction.STOP, BrokerAction.KILL, BrokerAction.RESUME}),
    # Between runs under a restart policy: stop or kill ends the restart loop.
    "restarting": frozenset({BrokerAction.STOP, BrokerAction.KILL}),
    "created": frozenset({BrokerAction.START}),
    "exited": frozenset({BrokerAction.START}),
}


Progress = Callable[[str], None]  # hears about a long wait inside an action
# Broker id -> the ZooKeeper session that owns its registration (None: registered, owner not
# known), read once; raises on a failed read (ClusterError or any exception: retried).
Registrations = Callable[[], "Mapping[int, int | None]"]
# How long a started broker has to register (the local backend's default too).
REGISTER_TIMEOUT_S = 90.0
REGISTER_POLL_S = 0.25


class _Container(Protocol):
    """The part of docker.models.containers.Container that kconsole uses."""

    attrs: dict[str, Any]

    @property
    def name(self) -> str: ...
    @property
    def labels(self) -> dict[str, str]: ...
    @property
    def status(self) -> str: ...
    def stop(self, *, timeout: int) -> None: ...
    def kill(self) -> None: ...
    def pause(self) -> None: ...
    def unpause(self) -> None: ...
    def start(self) -> None: ...
    def reload(self) -> None: ...


def proc_state(status: str) -> ProcState:
    """Container status -> process state.

    "restarting" is STOPPED: the broker process has exited and the engine waits out a back-off
    before running it again, so nothing serves. "created", "exited", "dead" and "removing" are
    STOPPED too."""
    if status == "running":
        return ProcState.RUNNING
    if status == "paused":
        return ProcState.PAUSED
    return ProcState.STOPPED


def broker_id_of(labels: Mapping[str, str]) -> int | None:
    """The broker id from `dev.kconsole.broker-id`, else from a `kafka-N` service name."""
    raw = labels.get(BROKER_ID_LABEL)
    if raw is not None:
        try:
            return int(raw)
        except ValueError:
            return None
    m = _SERVICE_RE.match(labels.get(SERVICE_LABEL, ""))
    return int(m.group(1)) if m else None


def _env(attrs: Mapping[str, Any]) -> dict[str, str]:
    env = (attrs.get("Config") or {}).get("Env") or []
    return dict(item.partition("=")[::2] for item in env if isinstance(item, str))


def _finished_at(attrs: Mapping[str, Any]) -> float | None:
    """State.FinishedAt as epoch seconds (the engine gives RFC 3339 with nanoseconds)."""
    raw = str((attrs.get("State") or {}).get("FinishedAt") or "")
    m = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$", raw)
    if not m or raw.startswith("0001-"):
        return None
    frac = (m.group(2) or ".0")[:7]  # microseconds at most
    zone = "+00:00" if m.group(3) == "Z" else m.group(3)
    return datetime.fromisoformat(m.group(1) + frac + zone).timestamp()


def stale_session_left_s(attrs: Mapping[str, Any], now: float) -> float:
    """Seconds until ZooKeeper has surely expired the session of a broker container that was
    killed (exit code 137): until then its registration stays and a broker started again finds
    its id taken and exits. 0 when it exited cleanly (it deregistered) or long enough ago.

    ZooKeeper expires a session at most the session timeout (KAFKA_ZOOKEEPER_SESSION_TIMEOUT_MS,
    as ZooKeeper grants it) plus one tick after the last heartbeat, which came before the kill."""
    state = attrs.get("State") or {}
    if state.get("ExitCode") != SIGKILL_EXIT:
        return 0.0
    finished = _finished_at(attrs)
    if finished is None:
        return 0.0
    raw = _env(attrs).get("KAFKA_ZOOKEEPER_SESSION_TIMEOUT_MS", "")
    timeout_ms = int(raw) if raw.isdigit() else KAFKA_DEFAULT_SESSION_TIMEOUT_MS
    timeout_ms = max(2 * ZK_TICK_TIME_MS, min(timeout_ms, 20 * ZK_TICK_TIME_MS))
    return max(finished + (timeout_ms + ZK_TICK_TIME_MS) / 1000.0 - now, 0.0)


def engine_message(exc: BaseException) -> str:
    """The engine's own words for a failure (APIError carries them as `explanation`)."""
    explanation = getattr(exc, "explanation", None)
    if explanation:
        status = getattr(exc, "status_code", None)
        return f"{explanation} (HTTP {status})" if status else str(explanation)
    return str(exc) or type(exc).__name__


def connect(timeout: float = CALL_TIMEOUT_S) -> Any:
    """A docker SDK client from the environment (DOCKER_HOST, or the CLI context).

    docker.from_env() already asks the engine for its API version, so this fails (ClusterError)
    when no engine answers within `timeout` seconds."""
    try:
        return docker.from_env(timeout=timeout)
    except _ENGINE_ERRORS as exc:
        raise ClusterError(f"no Docker engine: {engine_message(exc)}") from exc


class DockerBrokerControl:
    """BrokerControl for the broker containers of one docker compose project."""

    name = "docker"

    def __init__(
        self,
        client: Any = None,
        project: str = DEFAULT_PROJECT,
        *,
        stop_timeout: int = STOP_TIMEOUT_S,
        progress: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        registrations: Registrations | None = None,
        register_timeout: float = REGISTER_TIMEOUT_S,
        monotonic: Callable[[], float] = time.monotonic,
    ):
        self._client = client  # None: docker.from_env() on first use
        self.project = project
        self.stop_timeout = stop_timeout
        self.progress = progress  # hears about a start waiting for a killed broker's session
        self._clock = clock  # wall clock: compared with the engine's FinishedAt
        self._sleep = sleep
        # None: a start cannot be verified beyond the container running, and says so
        self.registrations = registrations
        self.register_timeout = register_timeout
        self._monotonic = monotonic

    # -- discovery ------------------------------------------------------------------------
    @classmethod
    def discover(
        cls,
        project: str = DEFAULT_PROJECT,
        *,
        client: Any = None,
        timeout: float = CONNECT_TIMEOUT_S,
        registrations: Registrations | None = None,
    ) -> tuple[DockerBrokerControl | None, str]:
        """The control when an engine answers (within `timeout` s) and has broker containers
        of `project`; otherwise (None, the reason). With no `client`, the probe uses its own
        short-timeout client and the control connects again lazily with CALL_TIMEOUT_S."""
        probe = client
        try:
            if probe is None:
                probe = connect(timeout)
            found = cls(probe, project)._brokers()
        except ClusterError as exc:
            return None, exc.message
        finally:
            if client is None and probe is not None:
                probe.close()
        if not found:
            return None, (
                f"no broker containers of docker compose project {project!r} "
                f"(labels {PROJECT_LABEL}={project}, {ROLE_LABEL}=broker)"
            )
        ids = ", ".join(map(str, sorted(found)))
        control = cls(client, project, registrations=registrations)
        return control, f"docker compose project {project!r} (brokers {ids})"

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = connect(CALL_TIMEOUT_S)
        return self._client

    def _brokers(self) -> dict[int, _Container]:
        """Broker id -> container, found by label (other projects and one-off runs ignored)."""
        filters = {"label": [f"{PROJECT_LABEL}={self.project}", f"{ROLE_LABEL}=broker"]}
        try:
            # Not sparse: sparse containers lack .labels and .name. ignore_removed: a
            # container removed between the list and its inspect is skipped, not an error.
            containers = self.client.containers.list(all=True, filters=filters, ignore_removed=True)
        except _ENGINE_ERRORS as exc:
            raise ClusterError(
                f"cannot list the containers of docker compose project {self.project!r}: "
                f"{engine_message(exc)}"
            ) from exc
        found: dict[int, _Container] = {}
        for c in containers:
            labels = c.labels
            if labels.get(PROJECT_LABEL) != self.project or labels.get(ROLE_LABEL) != "broker":
                continue
            if labels.get(ONEOFF_LABEL, "").lower() == "true":
                continue
            bid = broker_id_of(labels)
            if bid is None:
                continue
            # Two containers for one broker (a scaled service): prefer the live one.
            if bid not in found or _rank(c) < _rank(found[bid]):
                found[bid] = c
        return found

    def published_ports(self) -> set[int]:
        """Host ports the broker containers publish (configured, so stopped ones count too)."""
        ports: set[int] = set()
        for c in self._brokers().values():
            bindings = (c.attrs.get("HostConfig") or {}).get("PortBindings") or {}
            for entries in bindings.values():
                for entry in entries or ():
                    port = str(entry.get("HostPort") or "")
                    if port.isdigit():
                        ports.add(int(port))
        return ports

    # -- BrokerControl --------------------------------------------------------------------
    def states(self) -> dict[int, ProcState]:
        return {bid: proc_state(c.status) for bid, c in sorted(self._brokers().items())}

    def act(self, action: BrokerAction, broker_id: int, progress: Progress | None = None) -> str:
        brokers = self._brokers()
        c = brokers.get(broker_id)
        if c is None:
            known = ", ".join(map(str, sorted(brokers))) or "none"
            raise ClusterError(
                f"broker {broker_id} has no container in docker compose project "
                f"{self.project!r} (brokers with containers: {known})"
            )
        _check_fits(action, broker_id, c)
        try:
            return self._do(action, broker_id, c, progress or self.progress)
        except _ENGINE_ERRORS as exc:
            raise ClusterError(
                f"docker could not {action.value} broker {broker_id} (container {c.name}): "
                f"{engine_message(exc)}"
            ) from exc

    def _do(
        self, action: BrokerAction, broker_id: int, c: _Container, progress: Progress | None
    ) -> str:
        where = f"container {c.name}"
        if action is BrokerAction.STOP:
            t0 = time.monotonic()
            c.stop(timeout=self.stop_timeout)
            secs = time.monotonic() - t0
            c.reload()
            code = (c.attrs.get("State") or {}).get("ExitCode")
            if code == 137:
                return (
                    f"broker {broker_id} stopped: it did not exit within {self.stop_timeout} s "
                    f"of SIGTERM, so docker killed it ({where}, exit code 137)"
                )
            return (
                f"broker {broker_id} stopped (docker stop, controlled shutdown, exited after "
                f"{secs:.1f} s; {where}, exit code {code})"
            )
        if action is BrokerAction.KILL:
            c.kill()
            _check_now(c, action, broker_id, ("exited", "dead"))
            return f"broker {broker_id} killed (docker kill, SIGKILL; {where})"
        if action is BrokerAction.PAUSE:
            c.pause()
            _check_now(c, action, broker_id, ("paused",))
            return f"broker {broker_id} paused (docker pause, cgroup freezer; {where})"
        if action is BrokerAction.RESUME:
            c.unpause()
            _check_now(c, action, broker_id, ("running",))
            return f"broker {broker_id} resumed (docker unpause; {where})"
        waited = self._wait_for_killed_session(broker_id, c, progress)
        stale = self._read_registrations() if self.registrations is not None else {}
        t0 = self._monotonic()
        c.start()
        c.reload()
        if c.status != "running":
            raise ClusterError(
                f"broker {broker_id}: docker started {where} but it is {c.status} "
                f"(see `docker logs {c.name}`)"
            )
        before = (
            f"waited {waited:.1f} s for the killed broker's ZooKeeper session to expire; "
            if waited
            else ""
        )
        if self.registrations is None:
            return (
                f"{before}broker {broker_id} started (docker start; {where}), container "
                "running; its registration was not checked (no ZooKeeper to read)"
            )
        owner = self._wait_registered(broker_id, c, stale.get(broker_id), t0)
        session = f", session 0x{owner:x}" if owner is not None else ""
        return (
            f"{before}broker {broker_id} started (docker start; {where}) and registered in "
            f"ZooKeeper after {self._monotonic() - t0:.1f} s{session}"
        )

    def _read_registrations(self) -> dict[int, int | None]:
        assert self.registrations is not None
        try:
            return dict(self.registrations())
        except Exception as exc:
            raise ClusterError(f"cannot read the brokers' registrations: {exc}") from exc

    def _wait_registered(
        self, broker_id: int, c: _Container, stale: int | None, t0: float
    ) -> int | None:
        """Wait until broker `broker_id` is registered by a session other than `stale` (the
        one before the start) while its container runs; that session (None: not known)."""
        assert self.registrations is not None
        deadline = t0 + self.register_timeout
        last_error = ""
        while True:
            try:
                regs = dict(self.registrations())
                last_error = ""
            except Exception as exc:  # ZooKeeper briefly unreachable: asked again
                regs, last_error = {}, f"{type(exc).__name__}: {exc}"
            if broker_id in regs and (stale is None or regs[broker_id] != stale):
                c.reload()  # registered, and still running after that read: its own
                if c.status == "running":
                    return regs[broker_id]
            else:
                c.reload()
            if c.status != "running":
                raise ClusterError(
                    f"broker {broker_id}: container {c.name} is {c.status} "
                    f"{self._monotonic() - t0:.1f} s after docker start, before it registered "
                    f"(see `docker logs {c.name}`)"
                )
            if self._monotonic() >= deadline:
                why = f"; last read failed: {last_error}" if last_error else ""
                raise ClusterError(
                    f"broker {broker_id}: container {c.name} is running but the broker did not "
                    f"register in ZooKeeper within {self.register_timeout:.0f} s of docker "
                    f"start{why} (see `docker logs {c.name}`)"
                )
            self._sleep(REGISTER_POLL_S)

    def _wait_for_killed_session(
        self, broker_id: int, c: _Container, progress: Progress | None
    ) -> float:
        """After a docker kill, wait until ZooKeeper has expired the killed broker's session
        (saying so through `progress`); seconds waited."""
        t0 = self._clock()
        left = stale_session_left_s(c.attrs, t0)
        if left <= 0:
            return 0.0
        if progress is not None:
            progress(
                f"broker {broker_id} was killed; waiting {left:.1f} s for its ZooKeeper session "
                "to expire before starting it (it would find its id still registered)"
            )
        while (left := stale_session_left_s(c.attrs, self._clock())) > 0:
            self._sleep(min(left, 0.5))
        return self._clock() - t0


def _rank(c: _Container) -> int:
    return 0 if c.status in ("running", "paused", "restarting") else 1


def _check_now(c: _Container, action: BrokerAction, broker_id: int, want: tuple[str, ...]) -> None:
    """The effect, read back: the container's status after the call is one of `want`."""
    c.reload()
    if c.status not in want:
        raise ClusterError(
            f"docker {action.value} of broker {broker_id} returned, but container {c.name} is "
            f"{c.status}, not {' or '.join(want)}"
        )


def _check_fits(action: BrokerAction, broker_id: int, c: _Container) -> None:
    status = c.status
    if action in _FITS.get(status, frozenset()):
        return
    where = f"container {c.name}"
    if status == "dead":
        hint = "the engine failed to remove it; `docker rm` it and run `docker compose up -d`"
        raise ClusterError(f"cannot {action.value} broker {broker_id}: {where} is dead ({hint})")
    if status == "removing":
        raise ClusterError(f"cannot {action.value} broker {broker_id}: {where} is being removed")
    if action is BrokerAction.START:
        raise ClusterError(f"broker {broker_id} is already {status} ({where})")
    if action is BrokerAction.RESUME:
        raise ClusterError(f"broker {broker_id} is not paused ({where} is {status})")
    if action is BrokerAction.PAUSE and status == "paused":
        raise ClusterError(f"broker {broker_id} is already paused ({where})")
    raise ClusterError(
        f"cannot {action.value} broker {broker_id}: it is not running ({where} is {status})"
    )
