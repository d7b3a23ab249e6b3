"""BrokerControl: stop / kill / pause / resume / start a broker, one interface for every backend."""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol, runtime_checkable

from kconsole.cluster.local import LocalCluster
from kconsole.cluster.procs import ProcState


class BrokerAction(StrEnum):
    STOP = "stop"  # graceful: SIGTERM / docker stop, controlled shutdown
    KILL = "kill"  # SIGKILL / docker kill
    PAUSE = "pause"  # SIGSTOP / docker pause
    RESUME = "resume"  # SIGCONT / docker unpause
    START = "start"

    @property
    def destructive(self) -> bool:
        """Actions that take a running broker away and so need confirmation."""
        return self in (BrokerAction.STOP, BrokerAction.KILL, BrokerAction.PAUSE)


@runtime_checkable
class BrokerControl(Protocol):
    """A backend that can act on broker processes or containers."""

    name: str

    def states(self) -> dict[int, ProcState]:
        """Process state per broker id, as far as the backend can tell."""
        ...

    def act(self, action: BrokerAction, broker_id: int) -> str:
        """Carry out `action`; return a one-line description of what happened."""
        ...


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
