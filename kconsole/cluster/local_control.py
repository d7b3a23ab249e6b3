"""LocalBrokerControl: the BrokerControl of the embedded local cluster."""

from __future__ import annotations

from kconsole.cluster.control import BrokerAction
from kconsole.cluster.local import LocalCluster
from kconsole.cluster.procs import ProcState


class LocalBrokerControl:
    """BrokerControl for the embedded local cluster: signals to the JVMs kconsole started."""

    name = "local"

    def __init__(self, cluster: LocalCluster):
        self.cluster = cluster

    def states(self) -> dict[int, ProcState]:
        return {
            bid: self.cluster.process(f"broker-{bid}").state()
            for bid in self.cluster.known_broker_ids()
        }

    def act(self, action: BrokerAction, broker_id: int) -> str:
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
        secs = c.start_broker(broker_id)
        return f"broker {broker_id} started and registered in ZooKeeper after {secs:.1f} s"
