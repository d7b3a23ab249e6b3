"""How to start the cluster, when kconsole is pointed at the local one and it is not running.

A newcomer's first screen is often `kconsole` (or `kconsole describe`) before `kconsole cluster
up`: nothing answers at the default addresses. That is said as what it is -- the cluster cannot
be reached -- and, when the addresses are the local cluster's and none of its processes runs (or
none was ever made), with the command that starts it. Read-only: the spec file and the pid
files, never the cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kconsole import paths
from kconsole.cluster.backends import open_local, serves
from kconsole.cluster.kraft.cluster import KRaftCluster
from kconsole.cluster.values import ProcState
from kconsole.errors import ClusterError

if TYPE_CHECKING:
    from kconsole.config import Settings

UP = "`kconsole cluster up`"
# The Makefile's target: the local cluster, then the console (from a source checkout).
MAKE = "`make console`"


def start_hint(settings: Settings, cluster_dir: Path | None = None) -> str:
    """How to start the local cluster in `cluster_dir` (default the settings' one) when the
    settings' bootstrap servers are its and none of its processes runs, or when none was made
    and they are the default addresses; "" otherwise (another cluster, or it runs)."""
    state_dir = Path(cluster_dir or settings.cluster_dir)
    default_dir = state_dir == paths.default_cluster_dir()
    make = f" (or, in a source checkout, {MAKE}: it starts it and opens the console)"
    if not (state_dir / "cluster.json").exists():
        if not settings.is_default_local:
            return ""
        return f"no local cluster runs here: start one with {UP}" + (make if default_dir else "")
    try:
        local = open_local(state_dir)
        if not serves(local.spec.bootstrap, settings.bootstrap):
            return ""
        if isinstance(local, KRaftCluster):
            states = list(local.node_states().values())
        else:
            names = ["zookeeper", *(f"broker-{b}" for b in local.known_broker_ids())]
            states = [local.process(n).state() for n in names]
    except (ClusterError, OSError):
        return ""  # a broken state dir is `cluster status`'s to report
    if any(s is not ProcState.STOPPED for s in states):
        return ""
    where = "" if default_dir else f" in {state_dir}"
    return f"the local cluster{where} is not running: start it with {UP}" + (
        make if default_dir and settings.is_default_local else ""
    )
