"""Cluster events derived from two consecutive snapshots.

diff(old, new) says what changed in between: brokers leaving and joining, the controller moving,
topics created and deleted, leaders changing, ISRs shrinking and expanding, partitions going
offline and coming back, and reassignments starting, catching up, completing or being cancelled.
The events pane, the drill timeline and the drill measurements all read these.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kconsole.models import BrokerState, ClusterMode, ClusterSnapshot, Partition, SourceName


class EventKind(StrEnum):
    BROKER_LEFT = "broker-left"
    BROKER_JOINED = "broker-joined"
    BROKER_STATE = "broker-state"  # e.g. up -> paused / unreachable
    CONTROLLER_CHANGED = "controller-changed"  # in KRaft: the quorum leader (with its epoch)
    CONTROLLER_LOST = "controller-lost"
    # ZooKeeper mode: a broker's own log says it gave up the controller role (a zombie
    # controller, cut from ZooKeeper, does so only once it reaches ZooKeeper again).
    CONTROLLER_RESIGNED = "controller-resigned"
    # A network fault (kconsole.cluster.net) put in force on a node, and healed: from the
    # local cluster's record, whoever applied it (a key, a drill, the command line).
    NET_FAULT = "net-fault"
    NET_HEALED = "net-healed"
    BROKER_FENCED = "broker-fenced"  # KRaft: no heartbeat within broker.session.timeout.ms
    BROKER_UNFENCED = "broker-unfenced"
    VOTER_LAGGING = "voter-lagging"  # KRaft: a controller not caught up with the leader
    VOTER_CAUGHT_UP = "voter-caught-up"
    # KRaft: a controller's process stopped / paused, or no fetch reaching the leader for longer
    # than controller.quorum.fetch.timeout.ms; and back up.
    CONTROLLER_DOWN = "controller-down"
    CONTROLLER_UP = "controller-up"
    # KRaft drills: no quorum leader answered (metadata cannot change), and answered again.
    METADATA_FROZEN = "metadata-frozen"
    METADATA_UNFROZEN = "metadata-unfrozen"
    LEADER_CHANGED = "leader-changed"
    ISR_SHRANK = "isr-shrank"
    ISR_EXPANDED = "isr-expand"
    PARTITION_OFFLINE = "partition-offline"
    PARTITION_ONLINE = "partition-online"
    REASSIGN_STARTED = "reassign-started"
    REASSIGN_IN_SYNC = "reassign-in-sync"  # a replica the reassignment adds caught up (ISR)
    REASSIGN_COMPLETED = "reassign-completed"
    REASSIGN_CANCELLED = "reassign-cancelled"
    REPLICAS_REORDERED = "replicas-reordered"  # the same replicas in another order
    # A topic, not its partitions: deleted (ZooKeeper mode first marks it, then takes its
    # leaders away: that is not its partitions going offline) and created (`new`: its
    # partitions as (partition, leader, replicas, isr)).
    TOPIC_DELETING = "topic-deleting"
    TOPIC_DELETED = "topic-deleted"
    TOPIC_CREATED = "topic-created"
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
            EventKind.NET_FAULT,
            EventKind.BROKER_LEFT,
            EventKind.CONTROLLER_LOST,
            EventKind.ISR_SHRANK,
            EventKind.PARTITION_OFFLINE,
            EventKind.BROKER_FENCED,
            EventKind.VOTER_LAGGING,
            EventKind.METADATA_FROZEN,
            EventKind.CONTROLLER_DOWN,
        ):
            return "bad"
        if self.kind is EventKind.BROKER_STATE and self.new != BrokerState.UP.value:
            return "bad"
        if self.kind in (
            EventKind.NET_HEALED,
            EventKind.BROKER_JOINED,
            EventKind.ISR_EXPANDED,
            EventKind.PARTITION_ONLINE,
            EventKind.BROKER_STATE,
            EventKind.REASSIGN_IN_SYNC,
            EventKind.REASSIGN_COMPLETED,
            EventKind.BROKER_UNFENCED,
            EventKind.VOTER_CAUGHT_UP,
            EventKind.METADATA_UNFROZEN,
            EventKind.CONTROLLER_UP,
        ):
            return "good"
        return "info"


def diff(old: ClusterSnapshot | None, new: ClusterSnapshot) -> list[Event]:
    """Events that explain how `old` became `new` (none for the first snapshot)."""
    if old is None:
        return []
    ts = new.taken_at
    events: list[Event] = []
    kraft = new.mode is ClusterMode.KRAFT
    joined, left = ("registered", "unregistered") if kraft else ("joined", "left the cluster")

    old_b = {b.id: b for b in old.brokers}
    new_b = {b.id: b for b in new.brokers}
    for bid in sorted(set(old_b) | set(new_b)):
        was, now = old_b.get(bid), new_b.get(bid)
        was_in = was is not None and was.in_cluster
        now_in = now is not None and now.in_cluster
        # `new` is the state it is in now: a paused broker that drops out stays paused.
        state = now.state.value if now is not None else BrokerState.DOWN.value
        if was_in and not now_in:
            events.append(Event(ts, EventKind.BROKER_LEFT, f"broker {bid} {left}", bid, new=state))
        elif now_in and not was_in:
            events.append(
                Event(ts, EventKind.BROKER_JOINED, f"broker {bid} {joined}", bid, new=state)
            )
        if kraft and was is not None and now is not None and now.registered:
            if was.fenced is False and now.fenced is True:
                events.append(Event(ts, EventKind.BROKER_FENCED, f"broker {bid} fenced", bid))
            elif was.fenced is True and now.fenced is False:
                events.append(Event(ts, EventKind.BROKER_UNFENCED, f"broker {bid} unfenced", bid))
        if (
            was is not None
            and now is not None
            and was.state is BrokerState.PAUSED
            and now.state is BrokerState.DOWN
            and not was_in
        ):
            # Resumed after its session expired: running again, not registered yet (it
            # registers anew in a moment: "joined"). Without this the resume would say nothing.
            events.append(
                Event(
                    ts,
                    EventKind.BROKER_STATE,
                    f"broker {bid} is no longer paused (not registered yet)",
                    bid,
                    old=was.state.value,
                    new=now.state.value,
                )
            )
        elif (
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

    if kraft:
        events.extend(_quorum_events(ts, old, new))
        events.extend(_controller_health_events(ts, old, new))
    elif old.mode is new.mode is ClusterMode.ZOOKEEPER:
        # Only between two readings of the same source: before the mode is known the
        # controller id is the metadata's, which on KRaft is a random broker.
        events.extend(_controller_events(ts, old, new, "controller", "broker", "active controller"))

    events.extend(_net_fault_events(ts, old, new))
    events.extend(_resigned_events(old, new))

    # Topics that came or went; only partitions of a topic that is there, whole, before and
    # after (the same incarnation) have partition events.
    topic_events, unsteady = _topic_events(ts, old, new)
    events.extend(topic_events)

    # Most snapshots hand on the very partitions of the one before, or say which they built
    # again: then only those are compared.
    pairs = new.changed_partitions(old)
    if pairs is None:  # a topic came or went: by key
        old_p = {(p.topic, p.partition): p for p in old.partitions}
        pairs = [
            (before, p)
            for p in new.partitions
            if (before := old_p.get((p.topic, p.partition))) is not None and before is not p
        ]
    # A partition is offline also while its leader is a broker that left (is_offline): between
    # the broker leaving and the controller electing another leader, or for good when no
    # other replica can lead. Those partitions did not change themselves: find them by leader.
    flipped = _down(old) ^ _down(new)
    if flipped:
        seen = {(p.topic, p.partition) for _a, p in pairs}
        pairs = list(pairs)
        for p in new.partitions:
            if p.leader in flipped and (p.topic, p.partition) not in seen:
                before = old.partition(p.topic, p.partition)
                if before is not None:
                    pairs.append((before, p))
    for before, p in pairs:
        if unsteady and p.topic in unsteady:
            continue
        events.extend(_partition_events(ts, before, p, old.is_offline(before), new.is_offline(p)))
    return events


def _topic_events(
    ts: float, old: ClusterSnapshot, new: ClusterSnapshot
) -> tuple[list[Event], frozenset[str] | set[str]]:
    """Topics deleted (or marked for deletion) and created between the two snapshots, and the
    topics whose partitions have no partition events: not there, whole, in both."""
    if old.topics is new.topics or old.topics == new.topics or not _topics_read(old):
        # (Before the topics were first read, e.g. a KRaft quorum answer published ahead of
        # the first metadata, every topic would look created: nothing changed that was seen.)
        return [], new.unsettled_topics
    before = {t.name: t for t in old.topics}
    after = {t.name: t for t in new.topics}
    events: list[Event] = []
    unsteady: set[str] = set()
    for name in sorted(before.keys() | after.keys()):
        a, b = before.get(name), after.get(name)
        # Deleted and created again in between: another topic id (when both are known).
        replaced = (
            a is not None
            and b is not None
            and a.topic_id is not None
            and b.topic_id is not None
            and a.topic_id != b.topic_id
        )
        if a is not None and b is not None and not replaced and a.live and b.live:
            continue
        unsteady.add(name)
        if a is not None and a.live and b is not None and b.deleting and not replaced:
            n = len(old.partitions_of(name))
            events.append(
                Event(
                    ts,
                    EventKind.TOPIC_DELETING,
                    f"topic {name} is being deleted ({n} partitions)",
                    topic=name,
                )
            )
        elif a is not None and (a.live or a.deleting) and (b is None or replaced):
            events.append(Event(ts, EventKind.TOPIC_DELETED, f"topic {name} deleted", topic=name))
        if b is not None and b.live and (a is None or replaced or not a.live):
            parts = new.partitions_of(name)
            rf = max((len(p.replicas) for p in parts), default=0)
            events.append(
                Event(
                    ts,
                    EventKind.TOPIC_CREATED,
                    f"topic {name} created ({len(parts)} partitions, replication factor {rf})",
                    topic=name,
                    new=tuple((p.partition, p.leader, p.replicas, p.isr) for p in parts),
                )
            )
    return events, unsteady


def _net_fault_events(ts: float, old: ClusterSnapshot, new: ClusterSnapshot) -> list[Event]:
    """A network fault put in force on a node, or healed (the local cluster's record)."""
    if old.net_faults == new.net_faults:
        return []
    was, now = dict(old.net_faults), dict(new.net_faults)
    out = []
    for nid in sorted(set(was) | set(now)):
        if nid in now and was.get(nid) != now[nid]:
            text = f"NETWORK FAULT on node {nid}: {now[nid]}"
            out.append(Event(ts, EventKind.NET_FAULT, text, nid, new=now[nid]))
        elif nid in was and nid not in now:
            text = f"network fault on node {nid} healed (was: {was[nid]})"
            out.append(Event(ts, EventKind.NET_HEALED, text, nid, old=was[nid]))
    return out


def resigned_event(ts: float, broker: int) -> Event:
    """A controller's resignation as its own log gives it (in ZooKeeper mode a zombie's, once
    it reaches ZooKeeper again)."""
    text = f"controller {broker} resigned (its log)"
    return Event(ts, EventKind.CONTROLLER_RESIGNED, text, broker=broker)


def _resigned_events(old: ClusterSnapshot, new: ClusterSnapshot) -> list[Event]:
    """The resignations read from the brokers' logs since the last snapshot."""
    seen = set(old.resignations)
    return [resigned_event(ts, n) for ts, n in new.resignations if (ts, n) not in seen]


def _controller_events(
    ts: float, old: ClusterSnapshot, new: ClusterSnapshot, role: str, node: str, lost: str
) -> list[Event]:
    """The active controller changed (kind CONTROLLER_CHANGED, which the drills measure) or
    was lost: "{role} is {node} N, epoch E (was {node} M)", "no {lost} (was {node} M)"; after
    a loss M is the last one that led. A loss with no controller before it says nothing."""
    oc, nc = old.controller, new.controller
    if oc.id == nc.id and (oc.epoch == nc.epoch or nc.id is None):
        return []
    if nc.id is None:
        if oc.id is None:
            return []
        text = f"no {lost} (was {node} {oc.id})"
        return [Event(ts, EventKind.CONTROLLER_LOST, text, oc.id, old=oc.id)]
    # After a loss the one before is the snapshot's `previous` (the last one that led).
    before = oc.id if oc.id is not None else nc.previous
    was = f"{node} {before}" if before is not None else "none"
    epoch = f", epoch {nc.epoch}" if nc.epoch is not None else ""
    text = f"{role} is {node} {nc.id}{epoch} (was {was})"
    return [Event(ts, EventKind.CONTROLLER_CHANGED, text, nc.id, old=before, new=nc.id)]


def _quorum_events(ts: float, old: ClusterSnapshot, new: ClusterSnapshot) -> list[Event]:
    """KRaft: the quorum leader changed (kind CONTROLLER_CHANGED, which the drills measure) or
    was lost, and voters falling behind or catching up. Stale figures (a failed read) say
    nothing new. The first quorum reading is where kconsole starts watching, not a change:
    the snapshot before it has no quorum (its controller, if any, is the metadata's random
    broker), so it says nothing either."""
    oq, nq = old.quorum, new.quorum
    if nq is None or oq is None or old.mode is not ClusterMode.KRAFT:
        return []
    if nq.stale:  # a failed read says nothing new, but for the controllers saying none leads
        lost = nq.leader_id is None and old.controller.id is not None
        return (
            _controller_events(ts, old, new, "quorum leader", "controller", "quorum leader")
            if lost
            else []
        )
    out = _controller_events(ts, old, new, "quorum leader", "controller", "quorum leader")
    if oq.stale:
        return out
    before, now = oq.lagging_voters(), nq.lagging_voters()
    for vid in sorted(now - before):
        age = nq.caught_up_age(r) if (r := nq.replica(vid)) else None
        since = f", last caught up {age:.1f} s before" if age is not None else ""
        out.append(Event(ts, EventKind.VOTER_LAGGING, f"voter {vid} is lagging{since}", vid))
    for vid in sorted(before - now):
        if vid in nq.voter_ids:
            out.append(Event(ts, EventKind.VOTER_CAUGHT_UP, f"voter {vid} caught up", vid))
    return out


def _controller_health_events(ts: float, old: ClusterSnapshot, new: ClusterSnapshot) -> list[Event]:
    """KRaft: a controller that went down (stopped, paused, unreachable) or came back up, as
    kconsole saw it change: a controller not known before (its first reading, or an unread
    quorum) is a baseline, not a change."""
    before = {c.id: c for c in old.controllers}
    out: list[Event] = []
    for c in new.controllers:
        was = before.get(c.id)
        # What it was before: across readings that could not say (an election, a failed
        # read), the last state known.
        prior = None if was is None else (was.state or was.last_known)
        # up <-> not up (a restarted one running but not fetching yet stays "not up")
        if prior is None or c.state is None or (prior is BrokerState.UP) is c.up:
            continue
        if c.up:
            text = f"controller {c.id} is up again (was {prior.value})"
            kind = EventKind.CONTROLLER_UP
        else:
            text = f"controller {c.id} is {c.state.value}: {c.reason}"
            kind = EventKind.CONTROLLER_DOWN
        out.append(Event(ts, kind, text, c.id, old=prior.value, new=c.state.value))
    return out


def _partition_events(
    ts: float, a: Partition, b: Partition, was_offline: bool, now_offline: bool
) -> list[Event]:
    # Thousands of these at once in a failover on a big cluster: the cheap comparisons first,
    # and each event made where it is said (no helper made per call).
    out: list[Event] = []
    tp = f"{b.topic}/{b.partition}"
    topic, partition = b.topic, b.partition
    if a.leader != b.leader or was_offline != now_offline:
        if now_offline and not was_offline:
            text = (
                f"{tp} is offline (leader was {a.leader})"
                if b.offline
                else f"{tp} is offline (its leader, broker {b.leader}, is down)"
            )
            kind, broker = EventKind.PARTITION_OFFLINE, None
        elif was_offline and not now_offline:
            text = f"{tp} is online, leader {b.leader}"
            kind, broker = EventKind.PARTITION_ONLINE, b.leader
        elif now_offline:  # another leader, still offline (-1, or another broker gone)
            text = (
                f"{tp} leader {a.leader} -> {b.leader if b.leader >= 0 else 'none'} (still offline)"
            )
            kind, broker = EventKind.LEADER_CHANGED, None
        else:
            text = f"{tp} leader {a.leader} -> {b.leader}"
            kind, broker = EventKind.LEADER_CHANGED, b.leader
        out.append(Event(ts, kind, text, broker, topic, partition, a.leader, b.leader))
    moving = bool(a.adding or a.removing or b.adding or b.removing)
    if a.isr != b.isr:
        old_isr, new_isr = set(a.isr), set(b.isr)
        removed = sorted(old_isr - new_isr)
        added = sorted(new_isr - old_isr)
        if removed or added:
            both = " (same update)" if removed and added else ""
            isr = _ids(b.isr)
            shrank = (EventKind.ISR_SHRANK, f"{tp} ISR shrank: -{_ids(removed)} -> [{isr}]")
            expanded = (EventKind.ISR_EXPANDED, f"{tp} ISR expanded: +{_ids(added)} -> [{isr}]")
            # Both in one update: during a reassignment the new replica joins before the old
            # one is dropped, so say them in that order (they share the update's time: both
            # were read then).
            pairs = [(added, expanded), (removed, shrank)]
            for changed, (kind, text) in pairs if moving else reversed(pairs):
                if changed:
                    out.append(
                        Event(
                            ts, kind, text + both, None, topic, partition, list(a.isr), list(b.isr)
                        )
                    )
    if moving:
        out.extend(_reassign_events(ts, a, b))
    elif a.replicas != b.replicas and sorted(a.replicas) == sorted(b.replicas):
        out.append(
            Event(
                ts,
                EventKind.REPLICAS_REORDERED,
                f"{tp} replicas reordered: [{_ids(a.replicas)}] -> [{_ids(b.replicas)}] "
                f"(preferred leader {b.replicas[0]}, nothing copied)",
                None,
                topic,
                partition,
                list(a.replicas),
                list(b.replicas),
            )
        )
    return out


def _target(p: Partition) -> tuple[int, ...]:
    """Where a reassigning partition is going: its replicas without those being removed."""
    return tuple(r for r in p.replicas if r not in p.removing)


def _reassign_events(ts: float, a: Partition, b: Partition) -> list[Event]:
    # While Kafka moves a partition its replicas are the union of the old and the new set, with
    # `adding` and `removing` saying which is which (KIP-455).
    was, now = bool(a.adding or a.removing), bool(b.adding or b.removing)
    if not (was or now):
        return []  # neither side moving: nothing to say (most changes, all of a failover's)
    tp = f"{b.topic}/{b.partition}"
    out: list[Event] = []

    def ev(kind: EventKind, text: str, old: object, new: object) -> None:
        out.append(Event(ts, kind, text, topic=b.topic, partition=b.partition, old=old, new=new))

    if now and not was:
        origin = a.replicas  # before the reassignment, in their order
        ev(
            EventKind.REASSIGN_STARTED,
            f"{tp} reassignment started: [{_ids(origin)}] -> [{_ids(_target(b))}]",
            list(origin),
            list(_target(b)),
        )
    # A replica being added that joined the ISR, also when the same update ends the move (the
    # last one caught up and the controller completed the reassignment at once).
    adding = b.adding if now else a.adding
    caught_up = sorted((set(b.isr) - set(a.isr)) & set(adding))
    if (now or was) and caught_up:
        ev(
            EventKind.REASSIGN_IN_SYNC,
            f"{tp} reassignment: new replica {_ids(caught_up)} in sync",
            list(a.isr),
            list(b.isr),
        )
    if was and not now:
        origin = tuple(r for r in a.replicas if r not in a.adding)
        if set(b.replicas) == set(_target(a)):
            ev(
                EventKind.REASSIGN_COMPLETED,
                f"{tp} reassignment completed: [{_ids(b.replicas)}]",
                list(origin),
                list(b.replicas),
            )
        else:
            ev(
                EventKind.REASSIGN_CANCELLED,
                f"{tp} reassignment cancelled: back to [{_ids(b.replicas)}]",
                list(_target(a)),
                list(b.replicas),
            )
    return out


def _topics_read(snap: ClusterSnapshot) -> bool:
    """The snapshot's topics come from a read: a source that serves them has answered."""
    return any(
        s.updated_at is not None
        for s in snap.sources
        if s.name in (SourceName.ZOOKEEPER, SourceName.ADMIN)
    )


def _down(snap: ClusterSnapshot) -> set[int]:
    return {b.id for b in snap.brokers if b.state is BrokerState.DOWN}


def _ids(ids: object) -> str:
    return ",".join(map(str, ids))  # type: ignore[call-overload]
