"""What a reassignment is and what cancelling one did: data only, so the screen and the CLI
show them without importing the client that acts (kconsole.cluster.reassign.client)."""

from __future__ import annotations

from dataclasses import dataclass

TP = tuple[str, int]


@dataclass(frozen=True)
class Ongoing:
    """A reassignment the controller is running now."""

    topic: str
    partition: int
    replicas: tuple[int, ...]  # every replica during the move (target + those being removed)
    adding: tuple[int, ...]
    removing: tuple[int, ...]

    @property
    def target(self) -> tuple[int, ...]:
        """Where it is going: its replicas without those being removed."""
        return tuple(r for r in self.replicas if r not in self.removing)


@dataclass(frozen=True)
class CancelOutcome:
    """What a cancel did, partition by partition and throttle by throttle."""

    errors: dict[TP, str | None]  # per partition: None = cancelled, else Kafka's answer
    reordered: tuple[TP, ...] = ()  # put back in their original order (nothing copied)
    order_unknown: tuple[TP, ...] = ()  # cancelled, but not started by kconsole: Kafka's order
    throttles_removed: tuple[str, ...] = ()  # "broker:N", "topic:T leader 0:1,0:2", ...
    throttles_kept: tuple[str, ...] = ()  # each with why

    @property
    def cancelled(self) -> list[TP]:
        return sorted(k for k, err in self.errors.items() if err is None)
