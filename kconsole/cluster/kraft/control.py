"""KRaftNodeControl: the BrokerControl of a local KRaft cluster.

The console's broker keys and `kconsole cluster stop|kill|pause|resume|start` act through it,
by node id: brokers 1-3, dedicated controllers 1001-1003 (a combined node's id is both its
broker's and its controller's). `states()` lists brokers only, as every BrokerControl does (the
observer shows them as brokers); `node_states()` has every node, controllers included.
"""

from __future__ import annotations

from kconsole.cluster.errors import ClusterError
from kconsole.cluster.kraft.cluster import KRaftCluster, Progress, node_label
from kconsole.cluster.logs import Truncation, tail_lines, truncations
from kconsole.cluster.net.record import described
from kconsole.cluster.values import BrokerAction, NetLinks, ProcState

# How far back a broker's log is read for truncations (a drill's minutes of INFO lines).
LOG_LINES = 20_000


class KRaftNodeControl:
    """BrokerControl over the JVMs of a local KRaft cluster; every outcome is one it
    verified (a stop: the process is gone; a start: the new process unfenced and / or back
    in the quorum)."""

    name = "local-kraft"

    def __init__(self, cluster: KRaftCluster, progress: Progress | None = None):
        self.cluster = cluster
        self.progress = progress
        self.guard: int | None = None  # see guard_network_faults

    def guard_network_faults(self, pid: int) -> None:
        """The network faults applied from now on are healed by a watchdog if process `pid`
        (a drill's) ends before it heals them."""
        self.guard = pid

    def truncations(self, since: float) -> list[Truncation]:
        """Every log truncation by leader epoch the brokers' logs show at or after `since`."""
        out = []
        for n in self.cluster.spec.nodes():
            if n.is_broker:
                log = self.cluster.proc_dir(n.name) / "server.log"
                out += truncations(tail_lines(log, LOG_LINES), since)
        return sorted(out, key=lambda t: t.ts)

    def network_faults(self) -> dict[int, str]:
        """Node id -> the network fault in force on it, in words (its state dir's record)."""
        faults = self.cluster.net_faults().in_force()
        return {self.cluster.node_named(name).node_id: described(f) for name, f in faults.items()}

    def states(self) -> dict[int, ProcState]:
        """Process state per broker id (combined nodes included)."""
        return {
            n.node_id: self.cluster.process(n.name).state()
            for n in self.cluster.spec.nodes()
            if n.is_broker
        }

    def node_states(self) -> dict[int, ProcState]:
        """Process state per node id, controllers included."""
        return {n.node_id: self.cluster.process(n.name).state() for n in self.cluster.spec.nodes()}

    def controller_states(self) -> dict[int, ProcState]:
        """Process state per controller that is no broker (a combined node is in states())."""
        return {
            n.node_id: self.cluster.process(n.name).state()
            for n in self.cluster.spec.nodes()
            if not n.is_broker
        }

    def label(self, node_id: int) -> str:
        """'broker 2', 'controller 1001' or 'node 1 (broker+controller)'."""
        return node_label(self.cluster.node_of(node_id).name)

    def act(
        self,
        action: BrokerAction,
        broker_id: int,
        progress: Progress | None = None,
        links: NetLinks | None = None,
    ) -> str:
        c = self.cluster
        node = c.node_of(broker_id)
        what = node_label(node.name)
        if action is BrokerAction.STOP:
            secs = c.stop_node(node.name)
            how = "controlled shutdown" if node.is_broker else "SIGTERM"
            return f"{what} stopped ({how}; the process was gone after {secs:.1f} s)"
        if action is BrokerAction.KILL:
            secs = c.kill_node(node.name)
            return f"{what} killed (SIGKILL; the process was gone after {secs:.1f} s)"
        if action is BrokerAction.PAUSE:
            c.pause_node(node.name)
            return f"{what} paused (SIGSTOP)"
        if action is BrokerAction.RESUME:
            c.resume_node(node.name)
            return f"{what} resumed (SIGCONT)"
        if action is BrokerAction.ISOLATE:
            return c.isolate_node(node.name, guard=self.guard)
        if action in (BrokerAction.PARTITION, BrokerAction.SLOW):
            if links is None or (links.rate is not None) is not (action is BrokerAction.SLOW):
                raise ClusterError(
                    "a partition names what it cuts the node from (--from), a slow fault its "
                    "rate too (--rate)"
                )
            return c.partition_node(node.name, links, guard=self.guard)
        if action is BrokerAction.HEAL:
            return c.heal_node(node.name)
        say = progress or self.progress
        if say is not None:
            say(f"starting {what}; waiting until it is back in its roles")
        return c.start_node(node.name).message
