"""LocalBrokerControl: the BrokerControl of the embedded local cluster."""

from __future__ import annotations

from kconsole.cluster.errors import ClusterError
from kconsole.cluster.local.cluster import LocalCluster, Progress
from kconsole.cluster.logs import Truncation, resignations, tail_lines, truncations
from kconsole.cluster.net.record import described
from kconsole.cluster.values import BrokerAction, NetLinks, ProcState

# How far back a broker's log is read for a resignation (a drill's minutes of INFO lines).
RESIGN_LINES = 20_000


class LocalBrokerControl:
    """BrokerControl for the embedded local cluster: signals to the JVMs kconsole started,
    and network faults (kconsole.cluster.net) on them.

    `progress` hears about long waits inside an action (a start waiting for the killed
    process's ZooKeeper session to expire); the returned line says what happened in the end."""

    name = "local"

    def __init__(self, cluster: LocalCluster, progress: Progress | None = None):
        self.cluster = cluster
        self.progress = progress
        self.guard: int | None = None  # see guard_network_faults

    def guard_network_faults(self, pid: int) -> None:
        """The network faults applied from now on are healed by a watchdog if process `pid`
        (a drill's) ends before it heals them."""
        self.guard = pid

    def controller_resignations(
        self, since: float, lines: int = RESIGN_LINES
    ) -> list[tuple[float, int]]:
        """(when, broker id) of each controller resignation the last `lines` of the brokers'
        logs show at or after `since` (epoch seconds), oldest first."""
        out = []
        for bid in self.cluster.known_broker_ids():
            read = tail_lines(self.cluster.log_path(f"broker-{bid}"), lines)
            out += [(ts, n) for ts, n in resignations(read, since) if n == bid]
        return sorted(out)

    def truncations(self, since: float) -> list[Truncation]:
        """Every log truncation by leader epoch the brokers' logs show at or after `since`."""
        out = []
        for bid in self.cluster.known_broker_ids():
            lines = tail_lines(self.cluster.log_path(f"broker-{bid}"), RESIGN_LINES)
            out += truncations(lines, since)
        return sorted(out, key=lambda t: t.ts)

    def network_faults(self) -> dict[int, str]:
        """Node id -> the network fault in force on it, in words (its state dir's record)."""
        faults = self.cluster.net_faults().in_force()
        return {int(name.split("-", 1)[1]): described(f) for name, f in faults.items()}

    def states(self) -> dict[int, ProcState]:
        return {
            bid: self.cluster.process(f"broker-{bid}").state()
            for bid in self.cluster.known_broker_ids()
        }

    def act(
        self,
        action: BrokerAction,
        broker_id: int,
        progress: Progress | None = None,
        links: NetLinks | None = None,
    ) -> str:
        c = self.cluster
        if action is BrokerAction.STOP:
            secs = c.stop_broker(broker_id)
            return f"broker {broker_id} stopped (controlled shutdown, exited after {secs:.1f} s)"
        if action is BrokerAction.KILL:
            c.kill_broker(broker_id)
            return f"broker {broker_id} killed (SIGKILL)"
        if action is BrokerAction.PAUSE:
            c.pause_broker(broker_id)
            return f"broker {broker_id} paused (SIGSTOP)"
        if action is BrokerAction.RESUME:
            c.resume_broker(broker_id)
            return f"broker {broker_id} resumed (SIGCONT)"
        if action is BrokerAction.ISOLATE:
            return c.isolate_broker(broker_id, guard=self.guard)
        if action in (BrokerAction.PARTITION, BrokerAction.SLOW):
            if links is None or (links.rate is not None) is not (action is BrokerAction.SLOW):
                raise ClusterError(
                    "a partition names what it cuts the node from (--from), a slow fault its "
                    "rate too (--rate)"
                )
            return c.partition_broker(broker_id, links, guard=self.guard)
        if action is BrokerAction.HEAL:
            return c.heal_broker(broker_id)
        return c.start_broker(broker_id, progress=progress or self.progress).message
