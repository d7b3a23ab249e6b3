"""BrokerControl for the docker compose clusters (compose/docker-compose.yml, ZooKeeper mode;
compose/docker-compose.kraft.yml, KRaft with dedicated controllers).

Node containers are found by their labels, never by name: Compose labels every container with
`com.docker.compose.project` and `com.docker.compose.service`, and the compose files add
`dev.kconsole.role=broker` and `dev.kconsole.broker-id=N` to brokers, and in KRaft
`dev.kconsole.role=controller` to controllers, with `dev.kconsole.node-id=N` on every node
(controllers are acted on by node id, as with the local KRaft cluster: `controller:1001` on the
command line). The engine does the signalling:

    stop    docker stop: SIGTERM, Kafka's controlled shutdown, SIGKILL after `stop_timeout`
    kill    docker kill: SIGKILL
    pause   docker pause: the cgroup freezer (the JVM freezes with its sockets open)
    resume  docker unpause
    start   docker start (the broker registers in ZooKeeper a few seconds later); after a
            docker kill of a ZooKeeper-mode broker, only once its ZooKeeper session has expired

Each action is reported done only for an effect seen: the container's status read back after
the call (and for a stop its exit code), and for a start, while its container runs: in ZooKeeper
mode the broker's own registration (read through `registrations`, ZooKeeper's /brokers/ids, as
the local backend does); in KRaft (`kraft`), as the local KRaft backend verifies it, a broker
that logged its unfencing since the start and that the cluster's metadata has unfenced, a
controller that fetched from the quorum leader and caught up since the start. Every engine
failure becomes a ClusterError carrying the engine's own message.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol

import docker
import requests

from kconsole.cluster.docker.netfaults import DockerNetFaults
from kconsole.cluster.errors import ClusterError
from kconsole.cluster.kraft import probes as kraft_probes
from kconsole.cluster.kraft.cluster import QUORUM_GRACE_S, UNFENCED_LINE
from kconsole.cluster.kraft.probes import QuorumState
from kconsole.cluster.logs import Truncation, log_time, resignations, truncations
from kconsole.cluster.settings import ZK_TICK_TIME_MS
from kconsole.cluster.values import BrokerAction, NetLinks, ProcState

DEFAULT_PROJECT = "kconsole"
PROJECT_LABEL = "com.docker.compose.project"
SERVICE_LABEL = "com.docker.compose.service"
ONEOFF_LABEL = "com.docker.compose.oneoff"  # `docker compose run` containers
ROLE_LABEL = "dev.kconsole.role"
BROKER_ID_LABEL = "dev.kconsole.broker-id"
NODE_ID_LABEL = "dev.kconsole.node-id"  # every KRaft node; a controller is known by it alone
ROLES = ("broker", "controller")

# Finding out whether an engine answers: a missing socket fails at once, but DOCKER_HOST may
# name a host that never answers, and the SDK's default timeout is 60 s.
CONNECT_TIMEOUT_S = 3.0
# Engine calls once connected. `docker kill` waits (in the engine) up to 10 s for the exit;
# `docker stop` gets this plus its own stop timeout from the SDK.
CALL_TIMEOUT_S = 30.0
# Time docker stop allows for Kafka's controlled shutdown before it sends SIGKILL.
STOP_TIMEOUT_S = 60

_SERVICE_RE = re.compile(r"^kafka-(\d+)$")
# A log4j line's stamp, and how many lines of a container's log a drill reads for resignations
# and truncations (a drill's minutes of INFO lines).
_LOG4J_STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\]")
LOG_LINES = 20_000
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

# Network faults: in each container's own namespace (kconsole.cluster.docker.netfaults).
NETWORK = frozenset(
    {BrokerAction.ISOLATE, BrokerAction.PARTITION, BrokerAction.SLOW, BrokerAction.HEAL}
)
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
# A KRaft node's container: the entrypoint formats its storage and runs it in KRaft mode.
KRAFT_ENV = "KAFKA_PROCESS_ROLES"


def _addresses(servers: str) -> list[tuple[str, int]]:
    """HOST:PORT,... -> [(host, port)] (malformed entries skipped)."""
    out = []
    for item in servers.split(","):
        host, _, port = item.strip().rpartition(":")
        if host and port.isdigit():
            out.append((host.strip("[]"), int(port)))
    return out


@dataclass
class KRaftReads:
    """How the docker backend verifies a KRaft node's start, with the reads the local KRaft
    backend uses (kconsole.cluster.kraft.probes): the quorum as its leader describes it
    (DescribeQuorum, asked of the controllers directly) and every registered broker's fencing
    (DescribeCluster through the brokers).

    `bootstrap` is the console's bootstrap servers; `bootstrap_controller` its
    --bootstrap-controller, when given (else the controllers' published host ports)."""

    bootstrap: str
    bootstrap_controller: str = ""
    timeout_s: float = 2.0

    def quorum(self, controllers: list[tuple[str, int]]) -> QuorumState | None:
        """The quorum as its leader describes it, asking `controllers` (the configured ones
        first); None while no controller answers as leader."""
        asked = list(dict.fromkeys([*_addresses(self.bootstrap_controller), *controllers]))
        for host, port in asked:
            state = kraft_probes.quorum_from_controllers(host, [port], self.timeout_s)
            if state is not None:
                return state
        return None

    def fencing(self) -> dict[int, bool]:
        """Every registered broker's id -> fenced (raises when no broker answers)."""
        with kraft_probes.broker_admin(self.bootstrap, int(self.timeout_s * 1000)) as admin:
            return kraft_probes.broker_fencing(admin)


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
    def logs(self, **kwargs: Any) -> bytes: ...


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


def node_id_of(labels: Mapping[str, str]) -> int | None:
    """A node's id: `dev.kconsole.node-id`, else (a broker) its broker id."""
    raw = labels.get(NODE_ID_LABEL)
    if raw is not None:
        try:
            return int(raw)
        except ValueError:
            return None
    return broker_id_of(labels) if labels.get(ROLE_LABEL) == "broker" else None


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


def is_kraft(attrs: Mapping[str, Any]) -> bool:
    """Whether the container runs a KRaft node (its entrypoint sets process.roles)."""
    return bool(_env(attrs).get(KRAFT_ENV))


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
    if state.get("ExitCode") != SIGKILL_EXIT or is_kraft(attrs):
        return 0.0  # a KRaft broker has no ZooKeeper session: nothing to wait for
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
    """BrokerControl for the node containers of one docker compose project: its brokers, and
    on a KRaft project its controllers too (by node id, as KRaftNodeControl: `states()` has the
    brokers, `node_states()` every node, `label()` and `resolve_node()` name them)."""

    name = "docker"
    # How often the console reads the containers' states: each read is a call to the engine
    # (about 1 ms of the console's CPU, more under load); at the local backend's 0.25 s that
    # was 1.3 % of a core of an idle console in a real terminal (2.85 % against 1.55 % with
    # no backend). A stop or kill shows in ZooKeeper and the metadata first anyway.
    STATES_POLL_S = 1.0

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
        kraft: KRaftReads | None = None,
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
        # KRaft nodes: how a start is verified (None: as far as the container runs, said so)
        self.kraft = kraft
        self.guard: int | None = None  # see guard_network_faults
        self._net: DockerNetFaults | None = None

    # -- discovery ------------------------------------------------------------------------
    @classmethod
    def discover(
        cls,
        project: str = DEFAULT_PROJECT,
        *,
        client: Any = None,
        timeout: float = CONNECT_TIMEOUT_S,
        registrations: Registrations | None = None,
        kraft: KRaftReads | None = None,
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
        control = cls(client, project, registrations=registrations, kraft=kraft)
        return control, f"docker compose project {project!r} (brokers {ids})"

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = connect(CALL_TIMEOUT_S)
        return self._client

    def _brokers(self) -> dict[int, _Container]:
        """Broker id -> container, found by label (other projects and one-off runs ignored)."""
        return self._role("broker")

    def _controllers(self) -> dict[int, _Container]:
        """KRaft controller node id -> container (none in a ZooKeeper-mode project)."""
        return self._role("controller")

    def _nodes(self) -> dict[int, _Container]:
        """Every node's id -> container, brokers and controllers."""
        return {**self._controllers(), **self._brokers()}

    def _role(self, role: str) -> dict[int, _Container]:
        filters = {"label": [f"{PROJECT_LABEL}={self.project}", f"{ROLE_LABEL}={role}"]}
        try:
            # Not sparse: sparse containers lack .labels and .name. ignore_removed: a
            # container removed between the list and its inspect is skipped, not an error.
            containers = self.client.containers.list(all=True, filters=filters, ignore_removed=True)
        except _ENGINE_ERRORS as exc:
            raise self._cannot_list(exc) from exc
        found: dict[int, _Container] = {}
        for c in containers:
            labels = c.labels
            if labels.get(PROJECT_LABEL) != self.project or labels.get(ROLE_LABEL) != role:
                continue
            if labels.get(ONEOFF_LABEL, "").lower() == "true":
                continue
            bid = broker_id_of(labels) if role == "broker" else node_id_of(labels)
            if bid is None:
                continue
            # Two containers for one broker (a scaled service): prefer the live one.
            if bid not in found or _rank(c) < _rank(found[bid]):
                found[bid] = c
        return found

    def _cannot_list(self, exc: BaseException) -> ClusterError:
        return ClusterError(
            f"cannot list the containers of docker compose project {self.project!r}: "
            f"{engine_message(exc)}"
        )

    def published_ports(self) -> set[int]:
        """Host ports the broker containers publish (configured, so stopped ones count too)."""
        return {port for c in self._brokers().values() for _host, port in _published(c)}

    def controller_addresses(self) -> list[tuple[str, int]]:
        """(host, port) where the host reaches each KRaft controller (its published ports;
        an unspecified or 0.0.0.0 host is 127.0.0.1), by node id."""
        return [addr for _nid, c in sorted(self._controllers().items()) for addr in _published(c)]

    # -- BrokerControl --------------------------------------------------------------------
    def states(self) -> dict[int, ProcState]:
        """Process state per broker id (KRaft controllers are in node_states())."""
        return self._listed_states(("broker",))

    def node_states(self) -> dict[int, ProcState]:
        """Process state per node id, KRaft controllers included."""
        return self._listed_states(("controller", "broker"))

    def controller_states(self) -> dict[int, ProcState]:
        """Process state per KRaft controller container (none in ZooKeeper mode)."""
        return self._listed_states(("controller",))

    def _listed_states(self, roles: tuple[str, ...]) -> dict[int, ProcState]:
        """States from one engine call: the container list (GET /containers/json) carries
        each container's labels and state. The console asks four times a second; listing
        container objects also inspects each one (4 calls a time for 3 brokers, 8 with KRaft
        controllers), which was most of an idle console's CPU against a compose project."""
        filters = {"label": [f"{PROJECT_LABEL}={self.project}"]}
        try:
            listed = self.client.api.containers(all=True, filters=filters)
        except _ENGINE_ERRORS as exc:
            raise self._cannot_list(exc) from exc
        found: dict[int, tuple[int, ProcState]] = {}  # node id -> (rank, state)
        for entry in listed:
            node = self._labelled(entry, roles)
            if node is None or node[1] is None:
                continue
            nid = node[1]
            status = str(entry.get("State") or "")
            rank = 0 if status in ("running", "paused", "restarting") else 1
            # Two containers for one node (a scaled service): the live one, as _role() does;
            # a broker's entry after a controller's with the same id (a combined node) wins.
            if nid not in found or rank <= found[nid][0]:
                found[nid] = (rank, proc_state(status))
        return {nid: state for nid, (_rank, state) in sorted(found.items())}

    def label(self, node_id: int) -> str:
        """'broker 2' or 'controller 1001' (ClusterError: no such node in the project)."""
        if node_id in self._brokers():
            return f"broker {node_id}"
        if node_id in self._controllers():
            return f"controller {node_id}"
        raise ClusterError(f"no node {node_id} in docker compose project {self.project!r}")

    def resolve_node(self, text: str) -> int | None:
        """The node id a user names, as the local KRaft cluster takes it: a broker by its id
        (`2`, `broker:2`), a controller as `controller:1001`. None when the project has no
        controller containers (ZooKeeper mode: brokers are named by id alone). ClusterError,
        naming the nodes, when `text` is none of them."""
        controllers = sorted(self._controllers())
        if not controllers:
            return None
        brokers = sorted(self._brokers())
        kind, sep, num = text.strip().lower().partition(":")
        if not sep:
            kind, num = "", kind
        names = f"brokers {', '.join(map(str, brokers))}; " + ", ".join(
            f"controller:{i}" for i in controllers
        )
        if num.isdigit() and kind in ("", "broker", "controller"):
            nid = int(num)
            if kind in ("", "broker") and nid in brokers:
                return nid
            if kind == "controller" and nid in controllers:
                return nid
            if not kind and nid in controllers:
                raise ClusterError(
                    f"{nid} is a controller: name it controller:{nid} (brokers are named by "
                    "their id alone)"
                )
        raise ClusterError(
            f"no node {text!r} in docker compose project {self.project!r}; nodes: {names}"
        )

    def act(
        self,
        action: BrokerAction,
        broker_id: int,
        progress: Progress | None = None,
        links: NetLinks | None = None,
    ) -> str:
        if action in NETWORK:
            return self._network(action, broker_id, links)
        brokers = self._brokers()
        c = brokers.get(broker_id)
        what = f"broker {broker_id}"
        if c is None:
            controllers = self._controllers()
            c = controllers.get(broker_id)
            what = f"controller {broker_id}"
            if c is None:
                known = ", ".join(map(str, sorted(brokers))) or "none"
                ctl = (
                    f"; controllers: {', '.join(map(str, sorted(controllers)))}"
                    if controllers
                    else ""
                )
                raise ClusterError(
                    f"broker {broker_id} has no container in docker compose project "
                    f"{self.project!r} (brokers with containers: {known}{ctl})"
                )
        _check_fits(action, what, c)
        if action is BrokerAction.STOP and what.startswith("broker") and is_kraft(c.attrs):
            self._refuse_stop_without_leader(broker_id)
        try:
            return self._do(action, broker_id, what, c, progress or self.progress)
        except _ENGINE_ERRORS as exc:
            raise ClusterError(
                f"docker could not {action.value} {what} (container {c.name}): "
                f"{engine_message(exc)}"
            ) from exc

    # -- network faults (kconsole.cluster.docker.netfaults) ----------------------------------
    def guard_network_faults(self, pid: int) -> None:
        """The network faults applied from now on are healed by a watchdog if process `pid`
        (a drill's) ends before it heals them."""
        self.guard = pid

    def net_faults(self) -> DockerNetFaults:
        if self._net is None:
            self._net = DockerNetFaults(self)
        return self._net

    def network_faults(self) -> dict[int, str]:
        """Node id -> the network fault in force on it, in words (its namespace's rules)."""
        return self.net_faults().by_id()

    def _network(self, action: BrokerAction, node_id: int, links: NetLinks | None) -> str:
        net = self.net_faults()
        try:
            if action is BrokerAction.HEAL:
                return net.heal(node_id)
            if action is BrokerAction.ISOLATE:
                return net.isolate(node_id, self.guard)
            if links is None or (links.rate is not None) is not (action is BrokerAction.SLOW):
                raise ClusterError(
                    "a partition names what it cuts the node from (--from), a slow fault its "
                    "rate too (--rate)"
                )
            return net.partition(node_id, links, self.guard)
        except _ENGINE_ERRORS as exc:
            raise ClusterError(
                f"docker could not {action.value} node {node_id}: {engine_message(exc)}"
            ) from exc

    def controller_resignations(
        self, since: float, lines: int = LOG_LINES
    ) -> list[tuple[float, int]]:
        """(when, broker id) of each controller resignation the last `lines` of the brokers'
        container logs show at or after `since` (epoch seconds), oldest first."""
        out = []
        for bid, c in self._brokers().items():
            read, shift = self._log_lines(c, lines)
            out += [(ts + shift, n) for ts, n in resignations(read, since - shift) if n == bid]
        return sorted(out)

    def truncations(self, since: float) -> list[Truncation]:
        """Every log truncation by leader epoch the brokers' container logs show at or after
        `since`."""
        out = []
        for c in self._brokers().values():
            lines, shift = self._log_lines(c)
            out += [replace(t, ts=t.ts + shift) for t in truncations(lines, since - shift)]
        return sorted(out, key=lambda t: t.ts)

    @staticmethod
    def _log_lines(c: _Container, tail: int = LOG_LINES) -> tuple[list[str], float]:
        """The container's last log lines (log4j's own stamps, in the container's time zone),
        and the seconds to add to a time read from them to get epoch seconds: the engine's
        own UTC stamp of a line against log4j's, to the quarter hour (time zones)."""
        raw = c.logs(tail=tail, timestamps=True).decode("utf-8", "replace").splitlines()
        lines, shift = [], None
        for entry in raw:
            stamp, _, line = entry.partition(" ")
            lines.append(line)
            m = _LOG4J_STAMP.match(line)
            if shift is None and m is not None:
                try:
                    engine = datetime.fromisoformat(stamp[:26].rstrip("Z") + "+00:00")
                except ValueError:
                    continue
                diff = engine.timestamp() - log_time(m.group(1), m.group(2))
                shift = round(diff / 900) * 900
        return lines, shift or 0.0

    def running_entries(self) -> list[tuple[str, int | None, dict[str, Any]]]:
        """(role, node id (None: ZooKeeper), the engine's list entry) of each running or
        paused node container of the project, from one engine call (the list carries labels,
        state and addresses; no inspect)."""
        filters = {"label": [f"{PROJECT_LABEL}={self.project}"]}
        try:
            listed = self.client.api.containers(filters=filters)
        except _ENGINE_ERRORS as exc:
            raise self._cannot_list(exc) from exc
        out: list[tuple[str, int | None, dict[str, Any]]] = []
        for entry in listed:
            node = self._labelled(entry, (*ROLES, "zookeeper"))
            if node is not None:
                out.append((*node, entry))
        return out

    def _labelled(
        self, entry: Mapping[str, Any], roles: tuple[str, ...]
    ) -> tuple[str, int | None] | None:
        """(role, node id) of a container of the engine's list by its labels: one of `roles` in
        this project, not a one-off run, with its id (ZooKeeper has none); None otherwise."""
        labels = entry.get("Labels") or {}
        role = labels.get(ROLE_LABEL)
        if labels.get(PROJECT_LABEL) != self.project or role not in roles:
            return None
        if labels.get(ONEOFF_LABEL, "").lower() == "true":
            return None
        if role == "zookeeper":
            return role, None
        nid = broker_id_of(labels) if role == "broker" else node_id_of(labels)
        return (role, nid) if nid is not None else None

    def container_pid(self, container_id: str) -> int:
        """The first process of a container, as the engine says (0: not running)."""
        try:
            state = self.client.api.inspect_container(container_id).get("State") or {}
        except _ENGINE_ERRORS as exc:
            raise ClusterError(f"cannot inspect container {container_id[:12]}: {exc}") from exc
        return int(state.get("Pid") or 0)

    def _do(
        self,
        action: BrokerAction,
        broker_id: int,
        what: str,
        c: _Container,
        progress: Progress | None,
    ) -> str:
        where = f"container {c.name}"
        if action is BrokerAction.STOP:
            t0 = time.monotonic()
            c.stop(timeout=self.stop_timeout)
            secs = time.monotonic() - t0
            c.reload()
            code = (c.attrs.get("State") or {}).get("ExitCode")
            how = "controlled shutdown" if what.startswith("broker") else "SIGTERM"
            if code == 137:
                return (
                    f"{what} stopped: it did not exit within {self.stop_timeout} s "
                    f"of SIGTERM, so docker killed it ({where}, exit code 137)"
                )
            return (
                f"{what} stopped (docker stop, {how}, exited after "
                f"{secs:.1f} s; {where}, exit code {code})"
            )
        if action is BrokerAction.KILL:
            c.kill()
            _check_now(c, action, what, ("exited", "dead"))
            return f"{what} killed (docker kill, SIGKILL; {where})"
        if action is BrokerAction.PAUSE:
            c.pause()
            _check_now(c, action, what, ("paused",))
            return f"{what} paused (docker pause, cgroup freezer; {where})"
        if action is BrokerAction.RESUME:
            c.unpause()
            _check_now(c, action, what, ("running",))
            return f"{what} resumed (docker unpause; {where})"
        if is_kraft(c.attrs):
            return self._start_kraft(broker_id, what, c, progress)
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

    def _refuse_stop_without_leader(self, broker_id: int) -> None:
        """A KRaft broker's controlled shutdown asks the quorum leader to move its leaders away
        and waits for an answer that cannot come when none leads: refused, as the local KRaft
        backend refuses it, after QUORUM_GRACE_S for an election under way."""
        if self.kraft is None:
            return
        deadline = self._monotonic() + QUORUM_GRACE_S
        while self._quorum() is None:
            if self._monotonic() >= deadline:
                raise ClusterError(
                    f"not stopping broker {broker_id}: no controller answers as quorum leader (a "
                    "majority of the controllers is down, or an election is under way), so its "
                    "controlled shutdown would hang until docker kills it. Start a controller "
                    f"first, or stop it without a controlled shutdown: `kconsole --backend "
                    f"docker cluster kill {broker_id}`"
                )
            self._sleep(REGISTER_POLL_S)

    def _quorum(self) -> QuorumState | None:
        assert self.kraft is not None
        try:
            return self.kraft.quorum(self.controller_addresses())
        except Exception:  # an election, or the engine briefly busy: ask again
            return None

    def _start_kraft(
        self, node_id: int, what: str, c: _Container, progress: Progress | None
    ) -> str:
        """docker start of a KRaft node, verified as the local KRaft backend verifies a start:
        a broker logged its unfencing since the start (its own log, so an old registration
        still unfenced is not taken for it) and the metadata has it unfenced; a controller
        fetched from the quorum leader and caught up since the start."""
        where = f"container {c.name}"
        if progress is not None:
            progress(f"starting {what}; waiting until it is back in its role")
        wall = self._clock()
        t0 = self._monotonic()
        c.start()
        c.reload()
        if c.status != "running":
            raise ClusterError(
                f"{what}: docker started {where} but it is {c.status} (see `docker logs {c.name}`)"
            )
        if self.kraft is None:
            return (
                f"{what} started (docker start; {where}), container running; not verified "
                "further (no KRaft reads configured)"
            )
        is_broker = what.startswith("broker")
        deadline = t0 + self.register_timeout
        while True:
            if is_broker:
                if self._unfenced_since(node_id, c, wall):
                    took = self._monotonic() - t0
                    return (
                        f"{what} started (docker start; {where}), registered and unfenced "
                        f"after {took:.1f} s"
                    )
            else:
                found = self._back_in_quorum(node_id, wall)
                if found is not None:
                    took = self._monotonic() - t0
                    leader, lag = found
                    if leader == node_id:
                        return (
                            f"{what} started (docker start; {where}), quorum leader after "
                            f"{took:.1f} s"
                        )
                    return (
                        f"{what} started (docker start; {where}), back in the quorum after "
                        f"{took:.1f} s (fetching from leader {leader} and caught up since it "
                        f"started; {lag} record(s) behind at that read)"
                    )
            c.reload()
            if c.status != "running":
                raise ClusterError(
                    f"{what}: container {c.name} is {c.status} "
                    f"{self._monotonic() - t0:.1f} s after docker start, before it was back "
                    f"(see `docker logs {c.name}`)"
                )
            if self._monotonic() >= deadline:
                want = (
                    "registered and unfenced"
                    if is_broker
                    else "fetching from the quorum leader and caught up"
                )
                raise ClusterError(
                    f"{what}: container {c.name} is running but was not seen {want} within "
                    f"{self.register_timeout:.0f} s of docker start (see `docker logs {c.name}`)"
                )
            self._sleep(REGISTER_POLL_S)

    def _unfenced_since(self, node_id: int, c: _Container, wall: float) -> bool:
        """Whether the broker logged its unfencing since `wall` (its container's log) and the
        cluster's metadata has it registered and unfenced."""
        assert self.kraft is not None
        try:
            logs = c.logs(stdout=True, stderr=True, since=wall)
        except _ENGINE_ERRORS:
            return False
        text = logs.decode(errors="replace") if isinstance(logs, bytes) else str(logs)
        if UNFENCED_LINE not in text:
            return False
        with suppress(Exception):  # another broker stopping, or a read too slow: ask again
            return self.kraft.fencing().get(node_id) is False
        return False

    def _back_in_quorum(self, node_id: int, wall: float) -> tuple[int, int] | None:
        return kraft_probes.back_in_quorum(self._quorum(), node_id, int(wall * 1000))

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


def _published(c: _Container) -> list[tuple[str, int]]:
    """(host ip, host port) of every port the container publishes (configured bindings)."""
    out = []
    bindings = (c.attrs.get("HostConfig") or {}).get("PortBindings") or {}
    for entries in bindings.values():
        for entry in entries or ():
            port = str(entry.get("HostPort") or "")
            if port.isdigit():
                host = str(entry.get("HostIp") or "")
                out.append((host if host not in ("", "0.0.0.0", "::") else "127.0.0.1", int(port)))
    return out


def _rank(c: _Container) -> int:
    return 0 if c.status in ("running", "paused", "restarting") else 1


def _check_now(c: _Container, action: BrokerAction, what: str, want: tuple[str, ...]) -> None:
    """The effect, read back: the container's status after the call is one of `want`."""
    c.reload()
    if c.status not in want:
        raise ClusterError(
            f"docker {action.value} of {what} returned, but container {c.name} is "
            f"{c.status}, not {' or '.join(want)}"
        )


def _check_fits(action: BrokerAction, what: str, c: _Container) -> None:
    status = c.status
    if action in _FITS.get(status, frozenset()):
        return
    where = f"container {c.name}"
    if status == "dead":
        hint = "the engine failed to remove it; `docker rm` it and run `docker compose up -d`"
        raise ClusterError(f"cannot {action.value} {what}: {where} is dead ({hint})")
    if status == "removing":
        raise ClusterError(f"cannot {action.value} {what}: {where} is being removed")
    if action is BrokerAction.START:
        raise ClusterError(f"{what} is already {status} ({where})")
    if action is BrokerAction.RESUME:
        raise ClusterError(f"{what} is not paused ({where} is {status})")
    if action is BrokerAction.PAUSE and status == "paused":
        raise ClusterError(f"{what} is already paused ({where})")
    raise ClusterError(f"cannot {action.value} {what}: it is not running ({where} is {status})")
