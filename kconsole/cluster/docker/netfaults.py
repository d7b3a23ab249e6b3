"""The docker backend's network faults: isolate, partition and heal a node of a compose project,
with iptables rules in the node's own container's network namespace (kconsole.cluster.net.netns).

Each container has its own address on the project's network, so a link is an address: a node
cut from ZooKeeper drops what comes from and goes to the zookeeper container's address; cut from
clients, everything that is not another node of the project (what the host's clients send
through a published port arrives from the network's gateway). The engine must run on this
machine: the rules are made with `nsenter` into the container's first process, which is checked
to be the container's own (its cgroup names the container).

Run as `python -m kconsole.cluster.docker.netfaults GUARD PROJECT NODE`, it is the watchdog of a
drill's fault (kconsole.cluster.net.watchdog): once process GUARD has ended, it heals NODE's
fault if GUARD still holds it."""

from __future__ import annotations

import hashlib
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kconsole.cluster.errors import ClusterError
from kconsole.cluster.net import watchdog
from kconsole.cluster.net.faults import NetNode, links_for
from kconsole.cluster.net.netns import NsFault, NsFaults, fault_rules
from kconsole.cluster.values import NetLinks

if TYPE_CHECKING:
    from kconsole.cluster.docker.control import DockerBrokerControl

ZOOKEEPER = "zookeeper"
MODULE = "kconsole.cluster.docker.netfaults"
# How often the namespaces are read for the faults in force (each read: one engine call and one
# nsenter + iptables per running node, about 3 ms each).
READ_EVERY_S = 5.0


def project_tag(project: str) -> str:
    """A short tag, stable for one compose project."""
    return hashlib.sha256(f"docker:{project}".encode()).hexdigest()[:8]


def node_name(role: str, node_id: int | None) -> str:
    """broker-2, controller-1001, zookeeper: the names `--from` resolves to, as locally."""
    return ZOOKEEPER if node_id is None else f"{role}-{node_id}"


class DockerNetFaults:
    """The network faults of one compose project's nodes."""

    def __init__(self, control: DockerBrokerControl):
        self.control = control
        self.ns = NsFaults(project_tag(control.project))
        self.watchdogs: dict[str, int] = {}  # node name -> the watchdog this process started
        self._pids: dict[str, int] = {}  # container id -> its first process, as last inspected
        self._ids: dict[str, str] = {}  # node name -> its container's id
        self._read: tuple[float, dict[int, str]] | None = None  # by_id's last read, and when

    # -- the nodes ---------------------------------------------------------------------------
    def nodes(self) -> dict[str, NetNode]:
        """Every node of the project whose container runs (or is paused: its namespace is
        there), by name: brokers, controllers and ZooKeeper. One engine call, plus an inspect
        for a container whose first process is not known yet (or is no longer its own)."""
        out = {}
        for role, nid, entry in self.control.running_entries():
            cid = str(entry.get("Id") or "")
            networks = (entry.get("NetworkSettings") or {}).get("Networks") or {}
            ips = [n.get("IPAddress") for n in networks.values() if n.get("IPAddress")]
            pid = self._pids.get(cid, 0)
            if not ips or not cid:
                continue
            if not _is_of(pid, cid):
                pid = self.control.container_pid(cid)
                self._pids[cid] = pid
            if pid <= 0:
                continue
            name = node_name(role, nid)
            label = "ZooKeeper" if nid is None else f"{role} {nid}"
            out[name] = NetNode(name, label, pid, (), str(ips[0]))
            self._ids[name] = cid
        return out

    def _running(self, node_id: int) -> NetNode | None:
        """The running node `node_id` (a broker's id first, as the other actions take it),
        checked to be on this machine; None when its container does not run."""
        nodes = self.nodes()
        for role in ("broker", "controller"):
            found = nodes.get(node_name(role, node_id))
            if found is not None:
                self._check_local(found)
                return found
        return None

    def _node(self, node_id: int) -> NetNode:
        """The running node `node_id`; ClusterError when it does not run (or is no node)."""
        found = self._running(node_id)
        if found is None:
            label = self.control.label(node_id)  # ClusterError when there is no such node
            raise ClusterError(f"{label} is not running: its container has no network to cut")
        return found

    def _check_local(self, node: NetNode) -> None:
        """The container's process is on this machine (the engine is local): its cgroup names
        the container. ClusterError saying what is needed otherwise."""
        if not _is_of(node.pid, self._ids.get(node.name, "")):
            raise ClusterError(
                f"cannot reach {node.label}'s network namespace: its container's process "
                f"{node.pid} is not on this machine (network faults on the docker backend need "
                "the engine to run here, as root)"
            )

    # -- the faults --------------------------------------------------------------------------
    def isolate(self, node_id: int, guard: int | None) -> str:
        me = self._node(node_id)
        n = self.ns.apply(me, "isolate", "", fault_rules(me, isolate=True), guard)
        return f"{me.label} isolated ({self._said(me, n, guard)})"

    def partition(self, node_id: int, links: NetLinks, guard: int | None) -> str:
        """Cut (or with a rate, slow) the node's links named; what was done, read back."""
        me = self._node(node_id)
        nodes = self.nodes()
        cut = links_for(me, links, list(nodes.values()), self._groups(me, nodes), self._resolve)
        matches = fault_rules(
            me, peers=cut.peers, nodes=cut.nodes, clients=cut.clients, one_way=cut.one_way,
            rate=links.rate, tag=self.ns.tag,
        )  # fmt: skip
        n = self.ns.apply(me, cut.fault, links.words, matches, guard)
        if links.rate is not None:
            way = f"what exceeds {links.rate:,} B/s each way is dropped"
            return f"{me.label} slowed {links.words} ({way}: {self._said(me, n, guard)})"
        way = "what it sends only" if links.one_way else "both ways"
        return f"{me.label} partitioned {links.words} ({way}: {self._said(me, n, guard)})"

    def _said(self, me: NetNode, rules: int, guard: int | None) -> str:
        """How the fault was made, after it was: the console's next read is a fresh one."""
        self._read = None
        said = f"{rules} rules in its container's namespace, address {me.host}"
        if guard is not None:
            self.watchdogs[me.name] = watchdog.spawn(
                MODULE, [str(guard), self.control.project, me.name], me.name
            )
            said += f"; healed by a watchdog if process {guard} ends first"
        return said

    def _groups(self, me: NetNode, nodes: dict[str, NetNode]) -> dict[str, list[str] | str]:
        controllers = [n for n in nodes if n.startswith("controller-") and n != me.name]
        brokers = [n for n in nodes if n.startswith("broker-") and n != me.name]
        kraft = bool(self.control._controllers())
        return {
            "brokers": brokers,
            "zookeeper": "this compose project runs in KRaft mode: it has no ZooKeeper "
            "(--from quorum cuts a node from the controllers)"
            if kraft
            else [ZOOKEEPER],
            "quorum": controllers
            if kraft
            else "this compose project runs in ZooKeeper mode: it has no quorum "
            "(--from zookeeper cuts a broker from ZooKeeper)",
        }

    def _resolve(self, side: str) -> str:
        nid = self.control.resolve_node(side)
        if nid is None:  # ZooKeeper mode: brokers by id alone
            kind, sep, num = side.partition(":")
            if kind == "controller" or not (num if sep else kind).isdigit():
                raise ClusterError(
                    f"--from {side}: this compose project runs in ZooKeeper mode: it has no "
                    "controller nodes (--from zookeeper, or a broker id)"
                )
            nid = int(num if sep else kind)
            if nid not in self.control._brokers():
                raise ClusterError(f"--from {side}: no broker {nid} in this compose project")
            return node_name("broker", nid)
        return node_name("broker" if nid in self.control._brokers() else "controller", nid)

    def heal(self, node_id: int) -> str:
        me = self._running(node_id)
        label = self.control.label(node_id)
        if me is None:
            return f"{label}: not running (a stopped container's network is gone with it)"
        said = self.ns.heal(me)
        self._read = None
        pid = self.watchdogs.pop(me.name, None)
        if pid is not None:
            watchdog.stop(pid, MODULE)
        if not said:
            return f"{label}: no network fault in force (nothing to heal)"
        return f"{label} healed ({said})"

    def in_force(self) -> dict[str, NsFault]:
        """The faults in force, by node name, as the nodes' namespaces hold them."""
        return self.ns.in_force(list(self.nodes().values()))

    def by_id(self) -> dict[int, str]:
        """Node id -> the fault in force on it, in words. The console asks every second; the
        namespaces are read at most every READ_EVERY_S (a fault this process made or healed
        shows at once: that resets it; one made by another process within READ_EVERY_S)."""
        now = time.monotonic()
        if self._read is not None and now - self._read[0] < READ_EVERY_S:
            return dict(self._read[1])
        found = {
            int(name.split("-", 1)[1]): f.described()
            for name, f in self.in_force().items()
            if name != ZOOKEEPER
        }
        self._read = (now, found)
        return dict(found)

    def heal_if_held(self, name: str, guard: int) -> None:
        """The watchdog's heal: node `name`'s fault, if process `guard` still holds it."""
        nodes = self.nodes()
        me = nodes.get(name)
        if me is None:
            return
        fault = self.ns.in_force([me]).get(name)
        if fault is not None and fault.guard == guard:
            self.ns.heal(me)


def _is_of(pid: int, container_id: str) -> bool:
    """Whether process `pid` on this machine is in container `container_id` (its cgroup names
    the container: cgroup v1 /docker/ID, v2 docker-ID.scope)."""
    if pid <= 0 or not container_id:
        return False
    try:
        return container_id in Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return False


def main(argv: list[str]) -> int:
    """The watchdog: GUARD PROJECT NODE."""
    guard, project, name = int(argv[0]), argv[1], argv[2]
    watchdog.wait_for_exit(guard)
    from kconsole.cluster.docker.control import DockerBrokerControl

    DockerNetFaults(DockerBrokerControl(None, project)).heal_if_held(name, guard)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
