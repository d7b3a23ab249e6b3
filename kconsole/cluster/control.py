"""BrokerControl: stop / kill / pause / resume / start a broker, one interface for every backend.

The backends: kconsole.cluster.local.control (the embedded local cluster) and
kconsole.cluster.docker.control (docker compose containers); kconsole.cluster.backends picks one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from kconsole.cluster.values import BrokerAction, NetLinks, ProcState


@runtime_checkable
class BrokerControl(Protocol):
    """A backend that can act on broker processes or containers."""

    name: str

    def states(self) -> dict[int, ProcState]:
        """Process state per broker id, as far as the backend can tell."""
        ...

    def act(
        self,
        action: BrokerAction,
        broker_id: int,
        progress: Callable[[str], None] | None = None,
        links: NetLinks | None = None,
    ) -> str:
        """Carry out `action`; return a one-line description of what really happened (a
        start: the new process registered, and any wait before it). `progress` hears about a
        long wait while it lasts."""
        ...
