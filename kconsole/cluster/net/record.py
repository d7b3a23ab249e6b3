"""What network faults are in force on a cluster, kept in its state dir (network-faults.json),
so that another kconsole process, or this one after a crash, can say and heal them. Written
before the rules go in (a crash half-way leaves a record to heal from) and after each heal."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kconsole.cluster.errors import ClusterError

RECORD_FILE = "network-faults.json"


@dataclass(frozen=True)
class NodeFault:
    """One node's network fault: which, since when, its process and cgroups, its rules."""

    node: str  # the node's process name: broker-2, controller-1001
    fault: str  # isolate
    pid: int
    since: float  # epoch seconds
    cgroup: str  # ours, relative to the cgroup v2 root: kconsole/TAG/NODE
    origin: str  # where the process was before ('/'), and goes back to on heal
    rules: list[list[str]] = field(default_factory=list)  # each as `iptables -A CHAIN` takes it
    guard: int | None = None  # the process whose end heals it (a drill's), if any
    watchdog: int | None = None  # the process that heals it then (net.watchdog)
    # A partition's: what it cuts, in words ('from zookeeper', 'from broker 2, one way')
    links: str = ""
    # The other nodes it moved into cgroups of ours: name -> [our cgroup, where it came from]
    moved: dict[str, list[str]] = field(default_factory=dict)
    chain: str = ""  # the node's own chain (a partition from clients), "" none
    chain_rules: list[list[str]] = field(default_factory=list)  # as `iptables -A CHAIN` takes


def involved(fault: NodeFault) -> set[str]:
    """The nodes a fault holds: its own and those it moved into our cgroups."""
    return {fault.node, *fault.moved}


def described(fault: NodeFault) -> str:
    """The fault in force, in words: 'isolate since 10:47:03 (7 rules)'."""
    since = time.strftime("%H:%M:%S", time.localtime(fault.since))
    what = f"{fault.fault} {fault.links}" if fault.links else fault.fault
    return f"{what} since {since} ({len(fault.rules) + len(fault.chain_rules)} rules)"


def record_path(state_dir: Path) -> Path:
    return Path(state_dir) / RECORD_FILE


def load(state_dir: Path) -> dict[str, NodeFault]:
    """The faults in force, by node ({} when none is recorded)."""
    path = record_path(state_dir)
    try:
        data = json.loads(path.read_text())
        return {name: NodeFault(**f) for name, f in data["faults"].items()}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ClusterError(f"{path} is not a network fault record: {exc}") from exc


def save(state_dir: Path, tag: str, faults: dict[str, NodeFault]) -> None:
    """Write the record (atomically); remove it when no fault is left."""
    path = record_path(state_dir)
    if not faults:
        path.unlink(missing_ok=True)
        return
    body = {"tag": tag, "faults": {name: asdict(f) for name, f in sorted(faults.items())}}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(body, indent=1) + "\n")
    tmp.replace(path)
