"""Read-only views of the backends the command layer holds.

Screens and CLI commands get these, never the backends: a view holds its backend privately and
offers only what reads (job runs and their logs, running reassignments and log sizes, the local
cluster's status and logs), so whatever acts on the cluster has to go through Commands.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from kconsole.cluster.values import ProcState

if TYPE_CHECKING:
    from kconsole.cluster.kraft.cluster import KRaftCluster, KRaftStatus
    from kconsole.cluster.kraft.spec import KRaftNode, KRaftSpec
    from kconsole.cluster.local.cluster import ClusterStatus, LocalCluster
    from kconsole.cluster.local.spec import LocalClusterSpec
    from kconsole.cluster.reassign.client import Ongoing, ReassignClient
    from kconsole.jobs.manager import JobManager
    from kconsole.jobs.runs import JobRun


class JobsView:
    """What the jobs screen and `kconsole jobs list/status/logs` read of the job manager."""

    def __init__(self, manager: JobManager) -> None:
        self.__manager = manager

    @property
    def jobs_directory(self) -> Path | None:
        """Where the job scripts are (None: the packaged jobs/)."""
        return self.__manager.jobs_directory

    def runs(self) -> list[JobRun]:
        """Every run the manager knows, oldest first."""
        return self.__manager.runs()

    def get(self, run_id: str) -> JobRun:
        """One run (JobError when there is none)."""
        return self.__manager.get(run_id)

    def log_tail(self, run_id: str, lines: int = 50) -> list[str]:
        """The last `lines` lines of a run's log."""
        return self.__manager.log_tail(run_id, lines)


class ReassignReader:
    """One open reassignment client, read side only (a context manager: it closes it)."""

    def __init__(self, client: ReassignClient) -> None:
        self.__client = client

    def __enter__(self) -> ReassignReader:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.__client.close()

    def ongoing(self) -> list[Ongoing]:
        """Every reassignment the controller is running."""
        return self.__client.ongoing()

    def log_sizes(self) -> dict[tuple[str, int, int], int]:
        """Bytes per (topic, partition, broker) replica."""
        return self.__client.log_sizes()

    def throttles(self) -> dict[str, dict[str, str]]:
        """The replication throttle configs that are set, by resource."""
        return self.__client.throttles()

    def throttles_left(self, topics: Iterable[str]) -> list[str]:
        """The throttles of `topics` (and every broker's) still set, read until stable."""
        return self.__client.throttles_left(topics)


class ReassignView:
    """Opens read-only reassignment readers (the read-write client stays with Commands)."""

    def __init__(self, factory: Callable[[], ReassignClient]) -> None:
        self.__factory = factory

    def open(self) -> ReassignReader:
        """A reader on a new connection; use it in a `with` block."""
        return ReassignReader(self.__factory())


class LocalView:
    """What `kconsole cluster status/logs` read of the local cluster (ZooKeeper mode)."""

    mode = "zookeeper"

    def __init__(self, cluster: LocalCluster) -> None:
        self.__cluster = cluster

    @property
    def state_dir(self) -> Path:
        """The cluster's state directory."""
        return self.__cluster.state_dir

    @property
    def spec(self) -> LocalClusterSpec:
        """Its saved spec (the defaults before the first `up`)."""
        return self.__cluster.spec

    def status(self) -> ClusterStatus:
        """Each process's state, and what ZooKeeper says."""
        return self.__cluster.status()

    def network_faults(self) -> dict[int, str]:
        """Broker id -> the network fault in force on it, in words (its state dir's record)."""
        from kconsole.cluster.net.record import described

        faults = self.__cluster.net_faults().in_force()
        return {int(name.split("-", 1)[1]): described(f) for name, f in faults.items()}

    def broker_process_name(self, broker_id: int) -> str:
        """The process name of `broker_id` (ClusterError when it has none)."""
        return self.__cluster.broker(broker_id).name

    def log_path(self, name: str) -> Path:
        """Where process `name` logs."""
        return self.__cluster.log_path(name)


class KRaftView:
    """What `kconsole cluster status/logs` read of a local KRaft cluster."""

    mode = "kraft"

    def __init__(self, cluster: KRaftCluster) -> None:
        self.__cluster = cluster

    @property
    def state_dir(self) -> Path:
        """The cluster's state directory."""
        return self.__cluster.state_dir

    @property
    def spec(self) -> KRaftSpec:
        """Its saved spec."""
        return self.__cluster.spec

    def status(self) -> KRaftStatus:
        """Each node's state and pid, and the quorum as its leader describes it."""
        return self.__cluster.status()

    def network_faults(self) -> dict[int, str]:
        """Node id -> the network fault in force on it, in words (its state dir's record)."""
        from kconsole.cluster.net.record import described

        faults = self.__cluster.net_faults().in_force()
        return {self.__cluster.node_named(name).node_id: described(f) for name, f in faults.items()}

    def node_of(self, node_id: int) -> KRaftNode:
        """The node with id `node_id` (ClusterError when there is none)."""
        return self.__cluster.node_of(node_id)

    def log_path(self, name: str) -> Path:
        """Where node `name` logs."""
        return self.__cluster.proc_dir(name) / "server.log"


BrokerStates = Callable[[], dict[int, ProcState]]
