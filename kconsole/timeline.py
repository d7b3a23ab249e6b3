"""Cluster events derived from two consecutive snapshots.

diff(old, new) says what changed in between: brokers leaving and joining, the controller moving,
leaders changing, ISRs shrinking and expanding, partitions going offline and coming back. The
events pane, the drill timeline and the drill measurements all read these.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kconsole.models import BrokerState, ClusterSnapshot, Partition


class EventKind(StrEnum):
    BROKER_LEFT = "broker-left"
    BROKER_JOINED = "broker-joined"
    BROKER_STATE = "broker-state"  # e.g. up -> paused / unreachable
    CONTROLLER_CHANGED = "controller-changed"
    CONTROLLER_LOST = "controller-lost"
    LEADER_CHANGED = "leader-changed"
    ISR_SHRANK = "isr-shrank"
    ISR_EXPANDED = "isr-expand"
    PARTITION_OFFLINE = "partition-offline"
    PARTITION_ONLINE = "partition-online"
    ACTION = "action"  # something the user (or a drill) did


@dataclass(frozen=True)
class Event:
    ts: float
    kind: EventKind
    text: str
    broker: int | None = None
    topic: str | None = None
    partition: int | None = None
    old: object = None
    new: object = None

    @property
    def severity(self) -> str:
        """'bad', 'good' or 'info': for colouring."""
        if self.kind in (
            EventKind.BROKER_LEFT,
            EventKind.CONTROLLER_LOST,
            EventKind.ISR_SHRANK,
            EventKind.PARTITION_OFFLINE,
        ):
            return "bad"
        if self.kind is EventKind.BROKER_STATE and self.new != BrokerState.UP.value:
            return "bad"
        if self.kind in (
            EventKind.BROKER_JOINED,
            EventKind.ISR_EXPANDED,
            EventKind.PARTITION_ONLINE,
            EventKind.BROKER_STATE,
        ):
            return "good"
        return "info"


def diff(old: ClusterSnapshot | None, new: ClusterSnapshot) -> list[Event]:
    """Events that explain how `old` became `new` (none for the first snapshot)."""
    if old is None:
        return []
    ts = new.taken_at
    events: list[Event] = []

    old_b = {b.id: b for b in old.brokers}
    new_b = {b.id: b for b in new.brokers}
    for bid in sorted(set(old_b) | set(new_b)):
        was, now = old_b.get(bid), new_b.get(bid)
        was_in = was is not None and was.in_cluster
        now_in = now is not None and now.in_cluster
        if was_in and not now_in:
            events.append(Event(ts, EventKind.BROKER_LEFT, f"broker {bid} left the cluster", bid))
        elif now_in and not was_in:
            events.append(Event(ts, EventKind.BROKER_JOINED, f"broker {bid} joined", bid))
        if (
            was is not None
            and now is not None
            and was.state != now.state
            and BrokerState.DOWN not in (was.state, now.state)
        ):
            events.append(
                Event(
                    ts,
                    EventKind.BROKER_STATE,
                    f"broker {bid} is {now.state.value} (was {was.state.value})",
                    bid,
                    old=was.state.value,
                    new=now.state.value,
                )
            )

    oc, nc = old.controller, new.controller
    if oc.id != nc.id or (oc.epoch != nc.epoch and nc.id is not None):
        if nc.id is None:
            events.append(
                Event(
                    ts,
                    EventKind.CONTROLLER_LOST,
                    f"no active controller (was broker {oc.id})",
                    oc.id,
                    old=oc.id,
                )
            )
        else:
            was_text = f"broker {oc.id}" if oc.id is not None else "none"
            epoch = f", epoch {nc.epoch}" if nc.epoch is not None else ""
            events.append(
                Event(
                    ts,
                    EventKind.CONTROLLER_CHANGED,
                    f"controller is broker {nc.id}{epoch} (was {was_text})",
                    nc.id,
                    old=oc.id,
                    new=nc.id,
                )
            )

    old_p = {(p.topic, p.partition): p for p in old.partitions}
    for p in new.partitions:
        before = old_p.get((p.topic, p.partition))
        if before is not None:
            events.extend(_partition_events(ts, before, p))
    return events


def _partition_events(ts: float, a: Partition, b: Partition) -> list[Event]:
    out: list[Event] = []
    tp = f"{b.topic}/{b.partition}"

    def ev(kind: EventKind, text: str, **kw: object) -> None:
        out.append(Event(ts, kind, text, topic=b.topic, partition=b.partition, **kw))  # type: ignore[arg-type]

    if a.leader != b.leader:
        if b.offline:
            ev(
                EventKind.PARTITION_OFFLINE,
                f"{tp} is offline (leader was {a.leader})",
                old=a.leader,
                new=b.leader,
            )
        elif a.offline:
            ev(
                EventKind.PARTITION_ONLINE,
                f"{tp} is online, leader {b.leader}",
                broker=b.leader,
                old=a.leader,
                new=b.leader,
            )
        else:
            ev(
                EventKind.LEADER_CHANGED,
                f"{tp} leader {a.leader} -> {b.leader}",
                broker=b.leader,
                old=a.leader,
                new=b.leader,
            )
    removed = sorted(set(a.isr) - set(b.isr))
    added = sorted(set(b.isr) - set(a.isr))
    if removed:
        ev(
            EventKind.ISR_SHRANK,
            f"{tp} ISR shrank: -{_ids(removed)} -> [{_ids(b.isr)}]",
            old=list(a.isr),
            new=list(b.isr),
        )
    if added:
        ev(
            EventKind.ISR_EXPANDED,
            f"{tp} ISR expanded: +{_ids(added)} -> [{_ids(b.isr)}]",
            old=list(a.isr),
            new=list(b.isr),
        )
    return out


def _ids(ids: object) -> str:
    return ",".join(str(i) for i in ids)  # type: ignore[attr-defined]
