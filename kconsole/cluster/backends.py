"""Which backend can act on the brokers of the cluster kconsole is pointed at.

    none    broker control disabled
    local   the embedded local cluster in settings.cluster_dir (it must have a cluster.json),
            in the mode it was created in: ZooKeeper (LocalBrokerControl) or KRaft
            (KRaftNodeControl, controllers included)
    docker  the node containers of a docker compose project (settings.compose_project):
            brokers, and in KRaft mode the controllers too (a start verified through the
            bootstrap servers and the --bootstrap-controller controllers, or the controllers'
            published ports)
    auto    local when kconsole started the cluster the settings point at (every bootstrap
            server is one of its brokers, whatever their number) and one of its processes
            runs; else docker when the compose project's brokers publish the bootstrap ports;
            else that local cluster, stopped (so `cluster start` still works on it); else none

A stopped local cluster left behind in the state dir does not hide live compose containers on
the same ports: the console would show every broker "unreachable" through the local backend.

Acting on the wrong cluster is the failure to avoid: "auto" only picks a backend whose brokers
are the ones the console shows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from kconsole.cluster.control import BrokerControl
from kconsole.cluster.docker.control import (
    CONNECT_TIMEOUT_S,
    DockerBrokerControl,
    KRaftReads,
    Registrations,
)
from kconsole.cluster.errors import ClusterError
from kconsole.cluster.kraft.cluster import KRaftCluster
from kconsole.cluster.kraft.control import KRaftNodeControl
from kconsole.cluster.kraft.spec import KRaftSpec
from kconsole.cluster.local.cluster import LocalCluster
from kconsole.cluster.local.control import LocalBrokerControl
from kconsole.cluster.local.probes import read_registrations, zk_client
from kconsole.cluster.local.spec import LocalClusterSpec
from kconsole.cluster.values import ProcState

if TYPE_CHECKING:  # the cluster layer does not depend on the settings module at run time
    from kconsole.config import Settings

# LocalBrokerControl is importable from here too: callers pick backends in one place.
__all__ = [
    "KRaftNodeControl",
    "LocalBrokerControl",
    "choose_backend",
    "cluster_mode",
    "kraft_reads",
    "open_local",
    "serves",
    "zk_registrations",
]


def choose_backend(
    settings: Settings,
    *,
    project: str | None = None,
    docker_timeout: float = CONNECT_TIMEOUT_S,
) -> tuple[BrokerControl | None, str]:
    """(the control, what it acts on) or (None, why broker control is disabled). The docker
    backend acts on the compose `project`, default settings.compose_project."""
    project = project or settings.compose_project
    if settings.backend == "none":
        return None, "broker control disabled by configuration (backend = none)"
    if settings.backend == "local":
        local, why = _local_cluster(settings)
        if local is None:
            return None, f"backend = local, but {why}"
        return _local_control(local), f"local cluster in {local.state_dir}"
    if settings.backend == "docker":
        return DockerBrokerControl.discover(
            project,
            timeout=docker_timeout,
            registrations=zk_registrations(settings.zookeeper),
            kraft=kraft_reads(settings),
        )

    # auto
    local, why_not_local = _local_cluster(settings)
    stopped_local: BrokerControl | None = None  # serves the bootstrap, but nothing of it runs
    if local is not None:
        if serves(local.spec.bootstrap, settings.bootstrap):
            local_control = _local_control(local)
            if _any_running(local_control):
                return local_control, f"local cluster in {local.state_dir}"
            stopped_local = local_control
            why_not_local = f"the local cluster in {local.state_dir} has no process running"
        else:
            why_not_local = (
                f"the local cluster in {local.state_dir} serves {local.spec.bootstrap}, "
                f"not {settings.bootstrap}"
            )
    control, why_not_docker = DockerBrokerControl.discover(
        project,
        timeout=docker_timeout,
        registrations=zk_registrations(settings.zookeeper),
        kraft=kraft_reads(settings),
    )
    if control is not None:
        mismatch = _bootstrap_not_published(control, settings.bootstrap)
        if mismatch is None:
            if stopped_local is None:
                return control, why_not_docker
            return control, (
                f"{why_not_docker}: {why_not_local}; docker compose project {project!r} "
                "publishes the bootstrap ports"
            )
        why_not_docker = mismatch
    if stopped_local is not None and local is not None:
        # Nothing else serves the bootstrap: the stopped local cluster, so that `cluster
        # start` (and the console's start key) still act on it.
        return stopped_local, (
            f"local cluster in {local.state_dir} (no process running; no docker compose "
            f"project {project!r} serves the bootstrap servers instead: {why_not_docker})"
        )
    return None, (
        f"kconsole did not start this cluster ({why_not_local}) and no docker compose project "
        f"{project!r} was found serving it: {why_not_docker}"
    )


def _any_running(control: BrokerControl) -> bool:
    """True when a process of the local cluster runs (or is paused): a broker's, or for
    KRaft any node's, controllers included. A state that cannot be read counts as running:
    the local cluster is then kept, as before the docker backend was asked at all."""
    try:
        if isinstance(control, KRaftNodeControl):
            states = control.node_states()
        else:
            states = control.states()
    except (ClusterError, OSError):
        return True
    return any(s in (ProcState.RUNNING, ProcState.PAUSED) for s in states.values())


def zk_registrations(zk_connect: str, timeout: float = 5.0) -> Registrations | None:
    """How the docker backend reads the brokers' registrations (broker id -> the ZooKeeper
    session owning /brokers/ids/N) to verify a start, through a short-lived client per read;
    None without a ZooKeeper (a start is then verified only as far as its container runs)."""
    if not zk_connect:
        return None

    def read() -> dict[int, int | None]:
        with zk_client(zk_connect, timeout) as zk:
            return {bid: r.owner for bid, r in read_registrations(zk).items()}

    return read


def kraft_reads(settings: Settings) -> KRaftReads:
    """How the docker backend verifies a KRaft node's start: the console's bootstrap servers
    (a broker unfenced) and --bootstrap-controller (a controller back in the quorum; when not
    given, the controller containers' published ports). Unused on a ZooKeeper-mode project."""
    return KRaftReads(settings.bootstrap, settings.bootstrap_controller)


def serves(brokers: str, bootstrap: str) -> bool:
    """True when every server in `bootstrap` is one of `brokers` (both HOST:PORT,...): a
    client bootstrapping there reaches that cluster, however many more brokers it has."""
    theirs = {_address(a) for a in brokers.split(",") if a.strip()}
    wanted = {_address(a) for a in bootstrap.split(",") if a.strip()}
    return bool(wanted) and wanted <= theirs


def _address(server: str) -> tuple[str, int]:
    host, _, port = server.strip().rpartition(":")
    # localhost and 127.0.0.1 are one address for a local cluster
    host = "127.0.0.1" if host in ("localhost", "127.0.0.1", "") else host
    return host, int(port) if port.isdigit() else -1


def cluster_mode(state_dir: Path) -> str | None:
    """The mode of the local cluster saved in `state_dir` ("zookeeper" or "kraft"), None when
    there is none. A cluster.json without a mode is a ZooKeeper one (written before KRaft)."""
    try:
        data = json.loads((Path(state_dir) / "cluster.json").read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ClusterError(
            f"{state_dir / 'cluster.json'} is not a valid cluster spec: {exc}"
        ) from exc
    mode = data.get("mode", "zookeeper") if isinstance(data, dict) else None
    if mode not in ("zookeeper", "kraft"):
        raise ClusterError(f"{state_dir / 'cluster.json'} names an unknown mode {mode!r}")
    return str(mode)


def open_local(
    state_dir: Path, spec: LocalClusterSpec | KRaftSpec | None = None
) -> LocalCluster | KRaftCluster:
    """The local cluster in `state_dir`: with `spec`, in that spec's mode (ClusterError, saying
    how to go on, when the state dir holds a cluster of the other mode); without, in the mode
    it was created in (ZooKeeper when there is none yet)."""
    saved = cluster_mode(state_dir)
    if spec is None:
        return KRaftCluster(state_dir) if saved == "kraft" else LocalCluster(state_dir)
    asked = "kraft" if isinstance(spec, KRaftSpec) else "zookeeper"
    if saved is not None and saved != asked:
        names = {"kraft": "KRaft", "zookeeper": "ZooKeeper"}
        raise ClusterError(
            f"a {names[saved]}-mode local cluster already exists in {state_dir}; one local "
            f"cluster at a time, in the mode it was created in. Use it as it is (`kconsole "
            f"cluster up` without --mode), or remove it first with `kconsole cluster down "
            f"--purge` and then start a {names[asked]} one"
        )
    if isinstance(spec, KRaftSpec):
        return KRaftCluster(state_dir, spec)
    return LocalCluster(state_dir, spec)


def _local_control(local: LocalCluster | KRaftCluster) -> BrokerControl:
    if isinstance(local, KRaftCluster):
        return KRaftNodeControl(local)
    return LocalBrokerControl(local)


def _local_cluster(settings: Settings) -> tuple[LocalCluster | KRaftCluster | None, str]:
    """The local cluster in settings.cluster_dir if it has a cluster.json, else why not."""
    spec_file = settings.cluster_dir / "cluster.json"
    if not spec_file.exists():
        return None, f"no local cluster in {settings.cluster_dir} (no cluster.json)"
    try:
        return open_local(settings.cluster_dir), ""
    except ClusterError as exc:
        return None, exc.message


def _bootstrap_not_published(control: DockerBrokerControl, bootstrap: str) -> str | None:
    """None when every bootstrap port is published by one of the project's broker containers,
    else why the containers are not the cluster the console shows."""
    try:
        published = control.published_ports()
    except ClusterError as exc:
        return exc.message
    wanted = {int(hp.rsplit(":", 1)[1]) for hp in bootstrap.split(",") if ":" in hp}
    if wanted and wanted <= published:
        return None
    shown = ", ".join(map(str, sorted(published))) or "no ports"
    return (
        f"its broker containers publish {shown}, which does not cover the bootstrap "
        f"servers {bootstrap}"
    )
