"""Blast radius: what a broker action will do to the cluster, computed from the current
snapshot before the user confirms it."""

from __future__ import annotations

from dataclasses import dataclass

from kconsole.cluster.values import BrokerAction, NetLinks
from kconsole.faults import fault_of, primitive
from kconsole.models import ClusterSnapshot


@dataclass(frozen=True)
class Impact:
    action: BrokerAction
    broker_id: int
    is_controller: bool
    new_leader_needed: tuple[str, ...]  # led here, another in-sync replica can take over
    goes_offline: tuple[str, ...]  # no other in-sync replica: unavailable until it returns
    below_min_isr: tuple[str, ...]  # stay online, but acks=all writes fail (ISR < min)
    under_replicated: tuple[str, ...]  # lose a replica, still at or above min ISR

    @property
    def destructive(self) -> bool:
        return primitive(self.action).destructive

    def lines(self, session_timeout_ms: int | None = 6000) -> list[str]:
        """The blast radius in words, worst first (for the confirmation and the CLI)."""
        if not self.destructive:
            return [f"{self.action.value} broker {self.broker_id}: nothing is taken away."]
        out = []
        if self.goes_offline:
            out.append(
                f"{len(self.goes_offline)} partition(s) go OFFLINE (no other in-sync "
                f"replica): {_few(self.goes_offline)}"
            )
        if self.below_min_isr:
            out.append(
                f"{len(self.below_min_isr)} partition(s) drop below min ISR, acks=all "
                f"writes fail: {_few(self.below_min_isr)}"
            )
        if self.new_leader_needed:
            out.append(
                f"{len(self.new_leader_needed)} partition(s) lose their leader and elect "
                f"another: {_few(self.new_leader_needed)}"
            )
        if self.under_replicated:
            out.append(f"{len(self.under_replicated)} more partition(s) become under-replicated")
        if self.is_controller:
            out.append(f"broker {self.broker_id} is the active CONTROLLER: a new one is elected")
        fault = fault_of(self.action)
        if fault is not None and not fault.graceful and session_timeout_ms:
            out.append(
                f"{self.action.value}: no controlled shutdown; ZooKeeper notices after its "
                f"session times out (zookeeper.session.timeout.ms = {session_timeout_ms} ms), "
                "until then its partitions do not answer"
            )
        if not out:
            out.append(
                f"broker {self.broker_id} hosts no partition replicas and is not the controller"
            )
        return out


def _few(keys: tuple[str, ...], n: int = 4) -> str:
    return ", ".join(keys[:n]) + (f" (+{len(keys) - n} more)" if len(keys) > n else "")


def blast_radius(snap: ClusterSnapshot, action: BrokerAction, broker_id: int) -> Impact:
    """What `action` on `broker_id` does to the partitions and the controller in `snap`."""
    new_leader, offline, below, urp = [], [], [], []
    if primitive(action).destructive:
        for p in snap.partitions:
            if broker_id not in p.replicas or snap.is_offline(p):
                continue
            others = [b for b in p.isr if b != broker_id]
            in_isr = broker_id in p.isr
            if p.leader == broker_id and not others:
                offline.append(p.key)
                continue
            if p.leader == broker_id:
                new_leader.append(p.key)
            m = snap.min_isr(p.topic)
            if in_isr and m is not None and len(others) < m:
                below.append(p.key)
            elif (
                in_isr
                and p.leader != broker_id
                # "more": one under-replicated already is not a new one (and a reassignment
                # still copying a replica does not make a partition under-replicated)
                and not p.under_replicated
                and len(others) < p.replication_factor
            ):
                urp.append(p.key)
    return Impact(
        action,
        broker_id,
        snap.controller.id == broker_id,
        tuple(new_leader),
        tuple(offline),
        tuple(below),
        tuple(urp),
    )


def partition_lines(
    impact: Impact,
    sides: tuple[str, ...],
    *,
    kraft: bool,
    session_timeout_ms: int | None,
    replica_lag_ms: int,
    reaches_controller: bool = True,
    rate: int | None = None,
) -> list[str]:
    """The blast radius of a partition, by what it cuts the node from. Cut from what keeps it
    registered (ZooKeeper; on KRaft the quorum), it leaves the cluster as a crashed node does
    (impact.lines) while it keeps answering whoever still reaches it; cut from the other
    brokers or clients only, it stays registered: no leader moves."""
    if rate is not None:
        return [
            f"its links to {', '.join(sides)} capped at {rate:,} B/s each way (what exceeds it "
            "is dropped, TCP backs off): it stays a member and keeps its leaderships",
            f"where it follows a leader across those links and must fetch more than that, it "
            f"drops out of that partition's ISR once it has not caught up for "
            f"replica.lag.time.max.ms = {replica_lag_ms} ms (checked every half of that), and "
            "rejoins once caught up after the heal",
        ]
    if NetLinks(sides).cuts_membership(kraft):
        what = (
            "the quorum fences it"
            if kraft
            else f"ZooKeeper expires its session (zookeeper.session.timeout.ms = "
            f"{session_timeout_ms} ms)"
        )
        return [
            *impact.lines(None),
            f"partition: {what}, but it keeps running and answers whoever still reaches it: "
            "until it learns, it may act on what it last knew (acks=1 writes it takes alone are "
            "lost when another replica led meanwhile; acks=all writes fail)",
        ]
    out = []
    cut_brokers = any(s != "clients" for s in sides)
    if cut_brokers:
        led = impact.new_leader_needed + impact.goes_offline
        if led and reaches_controller:
            out.append(
                f"{len(led)} partition(s) it leads keep it as leader (it stays registered) and "
                f"shrink their ISR to it once its followers are replica.lag.time.max.ms = "
                f"{replica_lag_ms} ms behind (checked every half of that): acks=all writes "
                f"then fail with NOT_ENOUGH_REPLICAS: {_few(led)}"
            )
        elif led:
            out.append(
                f"{len(led)} partition(s) it leads keep it as leader (it stays registered), "
                "and it cannot shrink their ISR either: that goes through the controller "
                "(AlterPartition), which it is cut from. acks=all writes to them wait for "
                f"followers that cannot fetch, until the heal: {_few(led)}"
            )
        if impact.under_replicated or impact.below_min_isr:
            n = len(impact.under_replicated) + len(impact.below_min_isr)
            out.append(
                f"{n} partition(s) it follows drop it from their ISR once it is "
                f"replica.lag.time.max.ms = {replica_lag_ms} ms behind"
            )
        if impact.is_controller:
            out.append(
                f"broker {impact.broker_id} is the active CONTROLLER and stays so: the brokers "
                "it is cut from miss its requests"
            )
    if "clients" in sides:
        out.append(
            "its clients lose it (the cluster sees nothing): producers and consumers of the "
            "partitions it leads fail until it is healed, no leader moves"
        )
    return out or [f"broker {impact.broker_id}: nothing on the links named"]
