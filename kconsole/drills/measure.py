"""Drill measurements: how long the cluster took to react to a fault, from the observed
events, next to what its configuration predicts.

Everything is computed by replaying the events that kconsole observed (ZooKeeper watches and
Admin polls) over the snapshot taken just before the fault, so the times are what an operator
would see: the cluster's reaction plus kconsole's own observation delay (tens of ms).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

from kconsole.faults import fault_of
from kconsole.faults.process import PAUSE_FAULT, START_UP_AFTER_STOP
from kconsole.models import BrokerConfig, ClusterSnapshot
from kconsole.timeline import Event, EventKind

TP = tuple[str, int]


@dataclass(frozen=True)
class Measurement:
    name: str
    seconds: float | None  # None: it did not happen while the drill watched
    predicted: str
    note: str = ""

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _ids(value: object) -> list[int]:
    return [int(i) for i in value] if isinstance(value, list | tuple) else []


@dataclass
class Frame:
    """The cluster at one moment, as far as the drill chart draws it."""

    brokers: dict[int, str]
    controller: int | None
    offline: int
    under_replicated: int


@dataclass
class Replay:
    """Broker states, controller, leaders and ISRs, advanced event by event from a snapshot.

    The one replay of a drill: measure() asks it when the ISRs and the preferred leaders were
    whole again, the console's drill chart draws its frame() at each step.
    """

    brokers: dict[int, str]
    controller: int | None
    replicas: dict[TP, tuple[int, ...]]
    leader: dict[TP, int]
    isr: dict[TP, set[int]]
    _offline: set[TP] = field(default_factory=set)
    _urp: set[TP] = field(default_factory=set)

    @classmethod
    def of(cls, snap: ClusterSnapshot) -> Replay:
        replay = cls(
            {b.id: b.state.value for b in snap.brokers},
            snap.controller.id,
            {(p.topic, p.partition): p.replicas for p in snap.partitions},
            {(p.topic, p.partition): p.leader for p in snap.partitions},
            {(p.topic, p.partition): set(p.isr) for p in snap.partitions},
        )
        for tp in replay.replicas:
            replay._flag(tp)
        return replay

    def _flag(self, tp: TP) -> None:
        leader = self.leader[tp]
        offline = leader < 0 or self.brokers.get(leader) == "down"
        (self._offline.add if offline else self._offline.discard)(tp)
        urp = len(self.isr[tp]) < len(self.replicas[tp])
        (self._urp.add if urp else self._urp.discard)(tp)

    def apply(self, e: Event) -> None:
        # Left and joined carry the state the broker is in (a paused broker that drops out
        # stays paused, and leads nothing offline: the snapshots say so too).
        if e.kind is EventKind.BROKER_LEFT and e.broker is not None:
            self.brokers[e.broker] = str(e.new or "down")
        elif e.kind is EventKind.BROKER_JOINED and e.broker is not None:
            self.brokers[e.broker] = str(e.new or "up")
        elif e.kind is EventKind.BROKER_STATE and e.broker is not None:
            self.brokers[e.broker] = str(e.new)
        elif e.kind is EventKind.CONTROLLER_CHANGED:
            self.controller = e.new if isinstance(e.new, int) else None
            return
        elif e.kind is EventKind.CONTROLLER_LOST:
            self.controller = None
            return
        elif e.kind in (EventKind.TOPIC_DELETING, EventKind.TOPIC_DELETED):
            # Its partitions are gone (or going): counted neither offline nor short any more.
            for tp in [tp for tp in self.replicas if tp[0] == e.topic]:
                for held in (self.replicas, self.leader, self.isr):
                    del held[tp]
                self._offline.discard(tp)
                self._urp.discard(tp)
            return
        elif e.kind is EventKind.TOPIC_CREATED:
            for part, leader, replicas, isr in e.new if isinstance(e.new, tuple) else ():
                tp = (str(e.topic), int(part))
                self.replicas[tp], self.leader[tp] = tuple(replicas), int(leader)
                self.isr[tp] = {int(i) for i in isr}
                self._flag(tp)
            return
        else:
            tp = (str(e.topic), e.partition if e.partition is not None else -1)
            if tp not in self.replicas:
                return
            if e.kind in (
                EventKind.LEADER_CHANGED,
                EventKind.PARTITION_OFFLINE,
                EventKind.PARTITION_ONLINE,
            ) and isinstance(e.new, int):
                self.leader[tp] = e.new
            elif e.kind in (EventKind.ISR_SHRANK, EventKind.ISR_EXPANDED) and isinstance(
                e.new, list | tuple
            ):
                self.isr[tp] = {int(i) for i in e.new}
            self._flag(tp)
            return
        # A broker came or went: partitions it leads change between online and offline.
        for tp in self.replicas:
            self._flag(tp)

    def frame(self) -> Frame:
        """The counts the chart draws, now."""
        return Frame(dict(self.brokers), self.controller, len(self._offline), len(self._urp))

    def isr_full(self) -> bool:
        """Every partition has all its replicas in sync."""
        return all(self.isr.get(tp, set()) >= set(r) for tp, r in self.replicas.items())

    def preferred(self) -> bool:
        """Every partition is led by its preferred (first) replica."""
        return all(self.leader.get(tp) == r[0] for tp, r in self.replicas.items() if r)


# What a partition that leaves the node a member predicts of its leaving.
STAYS = "never: it stays a member (ZooKeeper or the quorum still reaches it)"


def measure(
    before: ClusterSnapshot,
    events: Sequence[Event],
    *,
    fault: Event,
    target: int,
    restore: Event | None = None,
    config: BrokerConfig | None = None,
    stays: bool = False,
) -> list[Measurement]:
    """Durations of one drill. `fault` and `restore` are the ACTION events of the drill;
    `stays`: the fault leaves the node a member (a partition that does not cut it from
    ZooKeeper or the quorum): it is predicted to stay registered and keep its leaderships."""
    drill = _Drill(before, events, fault, target, config or BrokerConfig(), stays)
    out = [
        drill.broker_fenced(),
        drill.broker_gone(),
        drill.new_controller(),
        drill.leaders_moved(restore),
        drill.out_of_isr(restore),
    ]
    if restore is not None:
        out += [drill.broker_back(restore), *drill.whole_again(restore)]
    return [m for m in out if m is not None]


class _Drill:
    """One drill's events from its fault on; each method measures one family (None: it does
    not apply to this drill)."""

    def __init__(
        self,
        before: ClusterSnapshot,
        events: Sequence[Event],
        fault: Event,
        target: int,
        cfg: BrokerConfig,
        stays: bool = False,
    ) -> None:
        self.stays = stays
        self.before = before
        self.events = events
        self.fault = fault
        self.target = target
        self.cfg = cfg
        self.action = str(fault.new or "")
        self.after = sorted(
            (e for e in events if e.ts >= fault.ts and e.kind is not EventKind.ACTION),
            key=lambda e: e.ts,
        )
        timeout = "broker.session.timeout.ms" if cfg.kraft else "zookeeper.session.timeout.ms"
        self.session = f"{timeout} = {cfg.session_timeout_ms} ms"
        self.kind = fault_of(self.action)  # None: an event of no fault kconsole knows
        self.graceful = self.kind is not None and self.kind.graceful
        # Frozen, not gone: its followers drop it after replica.lag.time.max.ms when that
        # comes before the session's expiry.
        self.silent = self.kind is not None and "replica.lag.time.max.ms" in self.kind.bounded_by

    def first(self, pred: Callable[[Event], bool]) -> float | None:
        """Seconds from the fault to the first event after it that `pred` holds for."""
        for e in self.after:
            if pred(e):
                return e.ts - self.fault.ts
        return None

    def broker_fenced(self) -> Measurement | None:
        """KRaft: fault -> the controller fenced the broker."""
        cfg, target = self.cfg, self.target
        if not cfg.kraft:
            return None
        fenced = self.first(
            lambda e: (
                e.kind in (EventKind.BROKER_FENCED, EventKind.BROKER_LEFT) and e.broker == target
            )
        )
        return Measurement(
            "fault -> broker fenced",
            fenced,
            STAYS
            if self.stays
            else "about a second: controlled shutdown, then the controller fences it"
            if self.graceful
            else f"~{cfg.session_timeout_ms / 1000:g} s: no heartbeat for {self.session} "
            f"(heartbeats every {cfg.heartbeat_interval_ms} ms)",
        )

    def broker_gone(self) -> Measurement | None:
        """ZooKeeper: fault -> the broker's registration gone."""
        cfg, target = self.cfg, self.target
        if cfg.kraft:  # a KRaft broker stays registered, fenced (broker_fenced measures it)
            return None
        return Measurement(
            "fault -> broker gone from ZooKeeper",
            self.first(lambda e: e.kind is EventKind.BROKER_LEFT and e.broker == target),
            STAYS
            if self.stays
            else "when it has shut down: its session closes last, after controlled shutdown and "
            "the log flush (about a second; longer for the controller or on a busy machine)"
            if self.graceful
            else f"~{cfg.session_timeout_ms / 1000:.0f} s: when its session expires "
            f"({self.session}; ZooKeeper expires sessions on its tick, so up to one tickTime "
            "later)",
        )

    def new_controller(self) -> Measurement | None:
        """ZooKeeper, the controller hit: fault -> another broker is the controller."""
        target = self.target
        if self.before.controller.id != target or self.cfg.kraft:
            return None  # KRaft: drills/kraft.py measures it
        return Measurement(
            "fault -> new controller",
            self.first(
                lambda e: e.kind is EventKind.CONTROLLER_CHANGED and e.new not in (None, target)
            ),
            STAYS
            if self.stays
            else "as soon as it is gone from ZooKeeper (/controller is ephemeral)",
        )

    def leaders_moved(self, restore: Event | None) -> Measurement | None:
        """fault -> every partition the broker led (and was online) has another leader."""
        before, target, fault, cfg = self.before, self.target, self.fault, self.cfg
        led = {
            (p.topic, p.partition)
            for p in before.partitions
            if p.leader == target and not before.is_offline(p)
        }
        if not led:
            return None
        moved: dict[TP, float] = {}
        for e in self.after:
            tp = (e.topic, e.partition)
            if (
                tp in led
                and tp not in moved
                and e.kind in (EventKind.LEADER_CHANGED, EventKind.PARTITION_ONLINE)
                and e.new not in (-1, target)
            ):
                moved[tp] = e.ts - fault.ts
        stuck = led - set(moved)
        never_left = restore is not None and not any(
            e.kind in (EventKind.BROKER_LEFT, EventKind.BROKER_FENCED)
            and e.broker == target
            and e.ts < restore.ts
            for e in self.after
        )
        why_stuck = (
            f"{len(stuck)} never changed leader: it was back before it lost their leadership"
            if never_left and not moved
            else f"{len(stuck)} without a new leader while watched "
            "(no other in-sync replica, unclean election disabled)"
        )
        return Measurement(
            f"fault -> every partition it led ({len(led)}) has a leader again",
            max(moved.values()) if not stuck else None,
            STAYS
            if self.stays
            else "< 1 s: controlled shutdown moves leadership before the process exits"
            if self.graceful
            else f"~{cfg.session_timeout_ms / 1000:.0f} s + election ({self.session})",
            "" if not stuck else why_stuck,
        )

    def out_of_isr(self, restore: Event | None) -> Measurement | None:
        """fault -> the broker is out of every ISR it was in (of the online partitions)."""
        before, target, fault, cfg = self.before, self.target, self.fault, self.cfg
        in_isr = {
            (p.topic, p.partition)
            for p in before.partitions
            if target in p.isr and not before.is_offline(p)
        }
        if not in_isr:
            return None
        dropped: dict[TP, float] = {}
        for e in self.after:
            tp = (str(e.topic), int(e.partition or 0))
            if (
                e.topic is not None
                and tp in in_isr
                and tp not in dropped
                and e.kind is EventKind.ISR_SHRANK
                and target not in _ids(e.new)
            ):
                dropped[tp] = e.ts - fault.ts
        lag_s, sess_s = cfg.replica_lag_time_max_ms / 1000, cfg.session_timeout_ms / 1000
        if self.kind is not None and self.kind.name == "slow":
            predicted = (
                f"more than {lag_s:.0f} s where the traffic it follows exceeds the rate: once it "
                f"has not caught up for replica.lag.time.max.ms = {cfg.replica_lag_time_max_ms} "
                "(how soon it stops catching up depends on how far the traffic exceeds the rate; "
                "checked every half of it); never where it keeps up"
            )
        elif self.stays:
            predicted = (
                f"{lag_s:.0f}-{lag_s * 1.5:.0f} s where a leader it is cut from drops it "
                f"(replica.lag.time.max.ms = {cfg.replica_lag_time_max_ms}, checked every half of "
                "it); never where its leader is on its side"
            )
        elif self.graceful:
            predicted = "< 1 s: removed from every ISR during controlled shutdown"
        elif self.silent and lag_s < sess_s:
            predicted = f"~{lag_s:.0f} s: replica.lag.time.max.ms = {cfg.replica_lag_time_max_ms}"
        else:
            predicted = (
                f"~{sess_s:.0f} s: session expiry removes it from every ISR, before "
                f"replica.lag.time.max.ms ({lag_s:.0f} s) would"
            )
        missing = in_isr - set(dropped)
        kept = (
            f"never left {'any' if not dropped else len(missing)} ISR: restored before it was "
            "removed"
            if restore is not None and all(t >= restore.ts - fault.ts for t in dropped.values())
            else f"still in {len(missing)} ISR(s) while watched"
        )
        return Measurement(
            f"fault -> out of every ISR it was in ({len(in_isr)})",
            max(dropped.values()) if not missing else None,
            predicted,
            kept if missing else "",
        )

    def in_place(self, restore: Event) -> bool:
        """Whether the restore healed the fault without starting a process (a resume, a heal:
        the process ran all along)."""
        kind = self.kind
        healed = kind is not None and str(restore.new or "") == kind.heal.name and not kind.restart
        return healed or str(restore.new or "") == "resume"

    def broker_back(self, restore: Event) -> Measurement:
        """restore -> the broker is back: unfenced (KRaft) or registered again (ZooKeeper)."""
        back = [e for e in self.after if e.ts >= restore.ts]
        resumed = self.in_place(restore)
        if self.cfg.kraft:
            return self._unfenced(restore, back, resumed)
        return self._registered(restore, back, resumed)

    def _unfenced(self, restore: Event, back: list[Event], resumed: bool) -> Measurement:
        """KRaft: restore -> the controller unfenced the broker."""
        target = self.target
        unfenced = next(
            (
                e.ts - restore.ts
                for e in back
                if e.kind in (EventKind.BROKER_UNFENCED, EventKind.BROKER_JOINED)
                and e.broker == target
            ),
            None,
        )
        return Measurement(
            "restore -> broker unfenced",
            unfenced,
            f"its first heartbeat: at once after a {restore.new}"
            if resumed
            else "JVM start-up, log recovery, then it catches up with the metadata log",
            ""
            if unfenced is not None
            else "never fenced: it was back before the controller fenced it"
            if not any(
                e.kind in (EventKind.BROKER_FENCED, EventKind.BROKER_LEFT) and e.broker == target
                for e in self.after
            )
            else "no unfencing seen while watched",
        )

    def _registered(self, restore: Event, back: list[Event], resumed: bool) -> Measurement:
        """ZooKeeper: restore -> the broker registered again."""
        target = self.target
        joined = next(
            (
                e.ts - restore.ts
                for e in back
                if e.kind is EventKind.BROKER_JOINED and e.broker == target
            ),
            None,
        )
        left = any(
            e.kind is EventKind.BROKER_LEFT and e.broker == target and e.ts < restore.ts
            for e in self.after
        )
        healed = "resumed" if str(restore.new or "") == "resume" else "healed"
        if resumed and not left and joined is None:
            return Measurement(
                "restore -> broker registered again",
                None,
                f"nothing to wait for: {healed} before its ZooKeeper session expired",
                f"it never left ZooKeeper ({healed} before its session expired)",
            )
        kind = self.kind
        return Measurement(
            "restore -> broker registered again",
            joined,
            # A process healed in place starts nothing: its ZooKeeper client reconnects,
            # finds its session expired and registers anew (the fault's `rejoin`).
            (kind.rejoin if kind is not None and kind.rejoin else PAUSE_FAULT.rejoin)
            if resumed
            else (kind.restart if kind is not None and kind.restart else "") or START_UP_AFTER_STOP,
        )

    def whole_again(self, restore: Event) -> tuple[Measurement, Measurement]:
        """restore -> every ISR full, and every partition on its preferred leader, again."""
        cfg, fault = self.cfg, self.fault
        resumed = self.in_place(restore)
        back = "restarted" if not resumed else "resumed" if restore.new == "resume" else "healed"
        # Whether the ISRs were ever short and the leaders ever off their preferred replica
        # from the fault on: a duration "until whole again" is only one when they were not.
        replay = Replay.of(self.before)
        isr_at: float | None = None
        pref_at: float | None = None
        isr_shrank = not replay.isr_full()
        moved_off = not replay.preferred()
        for e in sorted(self.events, key=lambda e: e.ts):
            replay.apply(e)
            if e.ts < fault.ts:
                isr_shrank, moved_off = not replay.isr_full(), not replay.preferred()
                continue
            isr_shrank = isr_shrank or not replay.isr_full()
            moved_off = moved_off or not replay.preferred()
            if e.ts < restore.ts:
                continue
            if isr_at is None and replay.isr_full():
                isr_at = e.ts - restore.ts
            if pref_at is None and replay.preferred():
                pref_at = e.ts - restore.ts
        isr = Measurement(
            "restore -> ISR fully restored",
            isr_at if isr_shrank else None,
            f"once the {back} broker has caught up (seconds with little data behind)",
            "" if isr_shrank else "ISR never shrank: the broker was back before it left the ISR",
        )
        preferred = Measurement(
            "restore -> preferred leaders back",
            pref_at if moved_off else None,
            "within leader.imbalance.check.interval.seconds = "
            f"{cfg.leader_imbalance_check_s} s "
            "after it is back in sync (auto.leader.rebalance.enable, imbalance > 10 %)"
            if cfg.auto_leader_rebalance
            else "never by itself: auto.leader.rebalance.enable is "
            "false (use a preferred leader election)",
            "" if moved_off else "leaders never moved: every partition kept its preferred leader",
        )
        return isr, preferred


ZOMBIE_PREDICTED = (
    "until the heal: cut from ZooKeeper, it cannot learn that its session expired and another "
    "broker took the role at a higher epoch; it resigns once it reaches ZooKeeper again"
)


def zombie_measurements(
    events: list[Event], restore: Event, resigned: list[Event]
) -> list[Measurement]:
    """For each controller that resigned after another took its role (ZooKeeper mode, a
    network fault): how long it was a zombie (its successor elected -> it resigned) and how
    long after the heal it learned (heal -> resigned)."""
    out = []
    for r in resigned:
        successor = next(
            (
                e
                for e in events
                if e.kind is EventKind.CONTROLLER_CHANGED and e.old == r.broker and e.ts <= r.ts
            ),
            None,
        )
        if successor is None:
            continue  # it resigned with nobody in its place: no zombie
        out.append(
            Measurement(
                f"zombie controller {r.broker}: controller {successor.new} elected -> "
                f"{r.broker} resigned",
                r.ts - successor.ts,
                ZOMBIE_PREDICTED,
            )
        )
        out.append(
            Measurement(
                f"heal -> controller {r.broker} resigned",
                r.ts - restore.ts,
                "about a second: its ZooKeeper client reconnects and finds its session expired",
            )
        )
    return out
