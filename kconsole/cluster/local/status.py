"""The status of a local cluster: every process's state, and what ZooKeeper says about it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kconsole.cluster.errors import ClusterError
from kconsole.cluster.local.spec import LocalClusterSpec
from kconsole.cluster.local.state_dir import LocalClusterDir
from kconsole.cluster.settings import broker_port
from kconsole.cluster.values import ProcState


@dataclass(frozen=True)
class ProcessStatus:
    name: str  # "zookeeper" or "broker-N"
    broker_id: int | None
    state: ProcState
    pid: int | None
    port: int
    registered: bool | None  # in ZooKeeper's /brokers/ids; None when ZooKeeper is unreachable
    log: Path


@dataclass(frozen=True)
class ClusterStatus:
    state_dir: Path
    spec: LocalClusterSpec
    processes: list[ProcessStatus]
    controller: int | None
    zk_error: str = ""

    @property
    def any_running(self) -> bool:
        return any(p.state is not ProcState.STOPPED for p in self.processes)


def read_status(cluster: LocalClusterDir, zk_timeout: float = 3.0) -> ClusterStatus:
    """Every process's state, pid, port, and whether ZooKeeper lists it."""
    registered: set[int] | None = None
    controller: int | None = None
    zk_error = ""
    if cluster.zookeeper.state() is ProcState.RUNNING or not cluster.spec_file.exists():
        try:
            with cluster.zk_client(zk_timeout) as zk:
                registered = cluster.read_registered(zk)
                controller = cluster.read_controller(zk)
        except ClusterError as exc:
            zk_error = exc.message
    else:
        zk_error = f"ZooKeeper is {cluster.zookeeper.state().value}"
    procs = [
        ProcessStatus(
            "zookeeper",
            None,
            cluster.zookeeper.state(),
            cluster.zookeeper.pid,
            cluster.spec.zk_port,
            None,
            cluster.log_path("zookeeper"),
        )
    ]
    for bid in cluster.known_broker_ids():
        p = cluster.process(f"broker-{bid}")
        procs.append(
            ProcessStatus(
                f"broker-{bid}",
                bid,
                p.state(),
                p.pid,
                broker_port(bid, cluster.spec.base_port),
                None if registered is None else bid in registered,
                cluster.log_path(f"broker-{bid}"),
            )
        )
    return ClusterStatus(cluster.state_dir, cluster.spec, procs, controller, zk_error)
