"""Which backend can act on the brokers of the cluster kconsole is pointed at.

    none    broker control disabled
    local   the embedded local cluster in settings.cluster_dir (it must have a cluster.json)
    docker  the broker containers of a docker compose project
    auto    local when kconsole started the cluster the settings point at (every bootstrap
            server is one of its brokers, whatever their number), else docker when the compose
            project's brokers publish the bootstrap ports, else none

Acting on the wrong cluster is the failure to avoid: "auto" only picks a backend whose brokers
are the ones the console shows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kconsole.cluster.control import BrokerControl
from kconsole.cluster.docker import CONNECT_TIMEOUT_S, DEFAULT_PROJECT, DockerBrokerControl
from kconsole.cluster.errors import ClusterError
from kconsole.cluster.local import LocalCluster
from kconsole.cluster.local_control import LocalBrokerControl

if TYPE_CHECKING:  # the cluster layer does not depend on the settings module at run time
    from kconsole.config import Settings

# LocalBrokerControl is importable from here too: callers pick backends in one place.
__all__ = ["LocalBrokerControl", "choose_backend", "serves"]


def choose_backend(
    settings: Settings,
    *,
    project: str = DEFAULT_PROJECT,
    docker_timeout: float = CONNECT_TIMEOUT_S,
) -> tuple[BrokerControl | None, str]:
    """(the control, what it acts on) or (None, why broker control is disabled)."""
    if settings.backend == "none":
        return None, "broker control disabled by configuration (backend = none)"
    if settings.backend == "local":
        local, why = _local_cluster(settings)
        if local is None:
            return None, f"backend = local, but {why}"
        return LocalBrokerControl(local), f"local cluster in {local.state_dir}"
    if settings.backend == "docker":
        return DockerBrokerControl.discover(project, timeout=docker_timeout)

    # auto
    local, why_not_local = _local_cluster(settings)
    if local is not None:
        if serves(local.spec.bootstrap, settings.bootstrap):
            return LocalBrokerControl(local), f"local cluster in {local.state_dir}"
        why_not_local = (
            f"the local cluster in {local.state_dir} serves {local.spec.bootstrap}, "
            f"not {settings.bootstrap}"
        )
    control, why_not_docker = DockerBrokerControl.discover(project, timeout=docker_timeout)
    if control is not None:
        mismatch = _bootstrap_not_published(control, settings.bootstrap)
        if mismatch is None:
            return control, why_not_docker
        why_not_docker = mismatch
    return None, (
        f"kconsole did not start this cluster ({why_not_local}) and no docker compose project "
        f"{project!r} was found serving it: {why_not_docker}"
    )


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


def _local_cluster(settings: Settings) -> tuple[LocalCluster | None, str]:
    """The local cluster in settings.cluster_dir if it has a cluster.json, else why not."""
    spec_file = settings.cluster_dir / "cluster.json"
    if not spec_file.exists():
        return None, f"no local cluster in {settings.cluster_dir} (no cluster.json)"
    try:
        return LocalCluster(settings.cluster_dir), ""
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
