"""The pure half of the observer: SnapshotBuilder turns the latest state of each source
(ZooKeeper's tree, the Admin API's reading, the groups, the backend's process states, each
source's health) into an immutable ClusterSnapshot. No threads, no I/O: ClusterObserver
(kconsole.observer.threads) feeds it under its lock, and tests and benchmarks feed it by hand.

It keeps what it built last, so an unchanged partition or group stays the very same object and
a build that changed a few partitions says which (`partition_changes`).
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import replace
from typing import Any

from kconsole.cluster.admin import AdminState
from kconsole.cluster.kraft.quorum import BrokerRegistration
from kconsole.cluster.security.kafka_python import Reassignments
from kconsole.cluster.values import ProcState
from kconsole.cluster.zk import ZkState
from kconsole.models import SOURCE_WAITING as _WAITING  # _has_metadata: "not yet" or "failed"
from kconsole.models import (
    Broker,
    BrokerConfig,
    BrokerState,
    ClusterMode,
    ClusterSnapshot,
    Controller,
    ControllerStatus,
    Features,
    Group,
    Partition,
    PartitionChanges,
    Quorum,
    Rates,
    SourceHealth,
    SourceName,
    Topic,
)
from kconsole.observer.controllers import controller_statuses, with_last_known

# Kafka (ZooKeeper mode) registers a starting broker before its listeners accept connections:
# 2.1 s apart in a restart on the local cluster with the machine busy. A failed port probe of
# a registration this young says "still starting", not "unreachable".
STARTING_S = 10.0
_GENS = itertools.count(1)  # ClusterSnapshot.partitions_gen: unique in the process


class _Health:
    def __init__(self, name: SourceName):
        self.name = name
        self.ok = False
        self.updated_at: float | None = None
        self.error = _WAITING
        self.refused = False

    def success(self, now: float, degraded: str = "") -> None:
        """Fresh data; `degraded` says which part of it could not be read."""
        self.ok, self.updated_at, self.error, self.refused = True, now, degraded, False

    def failure(self, error: str, refused: bool = False) -> None:
        """No data this time: `error` says why; `refused`: the cluster refused the login."""
        self.ok, self.error, self.refused = False, error, refused

    def frozen(self) -> SourceHealth:
        return SourceHealth(self.name, self.ok, self.updated_at, self.error, self.refused)


class SnapshotBuilder:
    """Merges the latest data of each source into a ClusterSnapshot (pure, no I/O)."""

    def __init__(self, use_zookeeper: bool):
        self.use_zookeeper = use_zookeeper
        self.zk: ZkState | None = None
        self.admin: AdminState | None = None
        self.groups: tuple[Group, ...] = ()
        self.groups_at: float | None = None  # when `groups` were read
        self.broker_config: BrokerConfig | None = None
        self.seq = 0
        self.reachable: dict[int, bool] = {}
        self.start_hint = ""  # how to start the local cluster while it cannot be reached
        self.net_faults: tuple[tuple[int, str], ...] = ()  # the backend's, as last read
        self.resignations: tuple[tuple[float, int], ...] = ()  # the brokers' logs', as read
        self.rates: Rates | None = None  # as of the last reading of the offsets
        # When a registration was first seen (this builder's clock): brokers that joined while
        # it watched, not those already there at its first build.
        self._joined_at: dict[int, float] = {}
        self._registered_before: set[int] | None = None  # None: no broker seen yet
        self.proc_states: dict[int, ProcState] = {}
        # KRaft: the backend's process states of the controllers that are no brokers.
        self.controller_proc_states: dict[int, ProcState] = {}
        self._controller_known: dict[int, BrokerState] = {}  # each one's last known state
        self.health = {n: _Health(n) for n in SourceName}
        # ZooKeeper when one is given; else the quorum is asked (KRaft), until set_mode says.
        del self.health[SourceName.ZOOKEEPER if not use_zookeeper else SourceName.QUORUM]
        self.mode = ClusterMode.UNKNOWN
        # KRaft: the last quorum read (kept, with its error, when a read fails), the features,
        # the registered brokers with their fencing (None: not read), and ELR per partition.
        self.quorum: Quorum | None = None
        self.features: Features | None = None
        self.registrations: dict[int, BrokerRegistration] | None = None
        self.elr: dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...]]] = {}
        # KRaft: the running reassignments (ListPartitionReassignments; the metadata has no
        # adding / removing replicas there), when they were read, and why the latest read
        # failed ('' : it did not). None: never read.
        self.reassignments: Reassignments | None = None
        self.reassignments_at: float | None = None
        self.reassignments_error = ""
        # The leader and epoch last read, since when kconsole sees them (None: no reading
        # yet), and whether it saw them come (False: they were there at its first reading).
        self._leader_seen: tuple[int | None, int | None, float | None, bool] = (
            None,
            None,
            None,
            False,
        )
        self._previous_leader: int | None = None
        self._known: dict[int, Broker] = {}  # every broker ever seen, for "down" rows
        self._controller_seen: tuple[int | None, float | None] = (None, None)
        self._previous_controller: int | None = None
        # The last partitions built, and what they were built from: most builds (an Admin
        # poll, a group poll) change no partition, and handing on the very same tuple lets
        # every consumer see that in O(1) (bench/results/scale.md).
        self._parts_from: tuple[object, ...] = ()
        self._parts: tuple[Partition, ...] = ()
        self._gen = 0  # ClusterSnapshot.partitions_gen of `_parts`
        self._changes: PartitionChanges | None = None  # how `_parts` differs from the ones before
        self._part_objs: dict[tuple[str, int], Partition] = {}
        self._pos: dict[tuple[str, int], int] = {}  # where each partition is in `_parts`
        # Each partition's Admin figures at the last build from the metadata (_from_admin).
        self._admin_raw: dict[tuple[str, int], tuple[Any, ...]] = {}
        self._per_topic: Counter[str] = Counter()  # partitions per topic in `_parts`
        # The ZooKeeper topics and states the partitions were last built from, and its seq.
        self._zk_read: tuple[dict[str, Any], dict[tuple[str, int], Any]] = ({}, {})
        self._zk_seq = 0
        self._replicas_gen = -1  # the partitions _brokers last looked at
        self._names_gen = -1  # ... and _topics
        self._names: list[str] = []
        # ZooKeeper's topics whose partitions are not all elected yet (no state node), as of
        # the partitions build _creating_gen.
        self._creating: set[str] = set()
        self._creating_gen = -1

    def set_mode(self, mode: ClusterMode) -> None:
        """What the cluster turned out to be: KRaft drops ZooKeeper (its health too), ZooKeeper
        drops the quorum source."""
        self.mode = mode
        if mode is ClusterMode.KRAFT:
            self.use_zookeeper, self.zk = False, None
            self.health.pop(SourceName.ZOOKEEPER, None)
            self.health.setdefault(SourceName.QUORUM, _Health(SourceName.QUORUM))
        elif mode is ClusterMode.ZOOKEEPER:
            self.health.pop(SourceName.QUORUM, None)

    def quorum_read(self, quorum: Quorum, now: float) -> None:
        """A fresh quorum read: tracks since when kconsole sees its leader lead (and whether
        it saw that leader's election), and the one before."""
        leader, epoch, since, elected = self._leader_seen
        if (quorum.leader_id, quorum.leader_epoch) != (leader, epoch) or since is None:
            if leader is not None and quorum.leader_id != leader:
                self._previous_leader = leader
            # The first reading is where kconsole starts watching, not an election it saw.
            elected = since is not None
            since = now
            self._leader_seen = (quorum.leader_id, quorum.leader_epoch, since, elected)
        self.quorum = replace(
            quorum,
            leader_seen_since=since,
            leader_seen_elected=elected,
            previous_leader=self._previous_leader,
        )
        self.health[SourceName.QUORUM].success(now)

    def quorum_leaderless(self, error: str, now: float) -> None:
        """Every controller answered that it does not lead (or is not running): no leader,
        since `now` if one led before. The other figures are the last ones read, with their
        age; `error` says what the controllers answered."""
        leader, _epoch, since, elected = self._leader_seen
        if leader is not None or since is None:
            if leader is not None:
                self._previous_leader = leader
            elected = since is not None  # a loss kconsole saw, or its first reading
            since = now
        self._leader_seen = (None, None, since, elected)
        last = self.quorum if self.quorum is not None else Quorum(None)
        self.quorum = replace(  # the epoch stays: the last one known, of the leader that was
            last,
            leader_id=None,
            error=error,
            leader_seen_since=since,
            leader_seen_elected=elected,
            previous_leader=self._previous_leader,
        )
        if SourceName.QUORUM in self.health:
            self.health[SourceName.QUORUM].failure(error)

    def quorum_failed(self, error: str, refused: bool = False) -> None:
        """The quorum could not be read: the last figures stay, marked with the error
        (`refused`: the cluster refused the login)."""
        if self.quorum is not None:
            self.quorum = replace(self.quorum, error=error)
        if SourceName.QUORUM in self.health:
            self.health[SourceName.QUORUM].failure(error, refused)

    def reassignments_read(self, found: Reassignments, now: float) -> None:
        """A fresh ListPartitionReassignments answer (kept as the same object when unchanged,
        so the partitions are not built again for it)."""
        if found != self.reassignments:
            self.reassignments = found
        self.reassignments_at, self.reassignments_error = now, ""

    def reassignments_failed(self, error: str) -> None:
        """The running reassignments could not be read: the last ones read stay (see
        `moving`), and `reassignments_note` says so."""
        self.reassignments_error = error

    def reassignments_note(self, now: float) -> str:
        """What the Admin API source could not say about the running reassignments, for its
        health ('' : they were read in the latest poll)."""
        if not self.reassignments_error:
            return ""
        at = self.reassignments_at
        last = (
            f"the last read ({max(0.0, now - at):.0f}s ago) is shown"
            if at is not None
            else "unknown"
        )
        return (
            f"running reassignments not read ({self.reassignments_error}): adding/removing "
            f"replicas {last}"
        )

    def moving(
        self, topic: str, partition: int, replicas: tuple[int, ...]
    ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(adding, removing) of one partition whose metadata lists `replicas`, from the
        running reassignments read. They are read just after the metadata: one that started
        or ended in between lists other replicas than the metadata does, and is applied only
        from the next poll on (applied to the old replicas, "adding 3" to [1, 2] would make its
        replication factor 1)."""
        listed = (self.reassignments or {}).get((topic, partition))
        if listed is None or set(listed[0]) != set(replicas):
            return (), ()
        return listed[1], listed[2]

    def build(self, now: float) -> ClusterSnapshot:
        zk_ok = self.use_zookeeper and self.zk is not None
        admin = self.admin
        partitions = self._partitions(zk_ok)
        brokers = self._brokers(zk_ok, partitions, now)
        controller = self._controller(zk_ok, now)
        topics = self._topics(partitions)
        self.seq += 1
        return ClusterSnapshot(
            taken_at=now,
            cluster_id=admin.cluster_id if admin else None,
            brokers=brokers,
            controller=controller,
            partitions=partitions,
            topics=topics,
            groups=self.groups,
            sources=tuple(h.frozen() for h in self.health.values()),
            broker_config=self.broker_config,
            mode=self._mode(zk_ok),
            quorum=self.quorum if self.mode is ClusterMode.KRAFT else None,
            controllers=self.controllers(now),
            features=self.features if self.mode is ClusterMode.KRAFT else None,
            seq=self.seq,
            partitions_gen=self._gen,
            partition_changes=self._changes,
            start_hint=self.start_hint,
            net_faults=self.net_faults,
            resignations=self.resignations,
            rates=self.rates,
        )

    def controllers(self, now: float) -> tuple[ControllerStatus, ...]:
        """KRaft: every voter's health (and every controller the backend runs), by id."""
        if self.mode is not ClusterMode.KRAFT:
            return ()
        q = self.quorum
        ids = {*(q.voter_ids if q is not None else ()), *self.controller_proc_states}
        processes = {**self.proc_states, **self.controller_proc_states}
        statuses = controller_statuses(q, ids, processes, self.fetch_timeout_s(), now)
        return with_last_known(statuses, self._controller_known)

    def fetch_timeout_s(self) -> float | None:
        """controller.quorum.fetch.timeout.ms as read from a broker, in seconds (None: not
        read: Kafka's default is assumed)."""
        cfg = self.broker_config
        if cfg is None or cfg.fetch_timeout_ms is None or cfg.read_from is None:
            return None
        return cfg.fetch_timeout_ms / 1000.0

    def _mode(self, zk_ok: bool) -> ClusterMode:
        if self.mode is ClusterMode.UNKNOWN and zk_ok:
            return ClusterMode.ZOOKEEPER  # ZooKeeper answered (the quorum poller says so too)
        return self.mode

    def _partitions(self, zk_ok: bool) -> tuple[Partition, ...]:
        # ZooKeeper's partitions, also stale ones when the Admin API has not read any (its
        # poll reads them only while ZooKeeper fails: ZooKeeper's health says how old they are).
        from_zk = (
            zk_ok
            and self.zk is not None
            and (
                self.health[SourceName.ZOOKEEPER].ok
                or self.admin is None
                or self.admin.topics is None
            )
        )
        source: tuple[object, ...] = (
            ("zk", self.zk)
            if from_zk
            else ("admin", self.admin and self.admin.topics, self.elr, self.reassignments)
        )
        if len(source) == len(self._parts_from) and all(
            a is b for a, b in zip(source, self._parts_from, strict=True)
        ):
            return self._parts
        zk = self.zk if from_zk else None
        delta = self._zk_delta(zk) if zk is not None else None
        if delta is not None:
            if delta:  # only what ZooKeeper re-read, each in its place
                parts = list(self._parts)
                for i, p in delta:
                    parts[i] = p
                    self._part_objs[(p.topic, p.partition)] = p
                self._changes = PartitionChanges(self._gen, tuple(i for i, _p in delta))
                self._parts, self._gen = tuple(parts), next(_GENS)
        else:
            self._full_build(zk)
        self._parts_from = source
        self._zk_read = (zk.topics, zk.states) if zk is not None else ({}, {})
        self._zk_seq = zk.seq if zk is not None else 0
        return self._parts

    def _full_build(self, zk: ZkState | None) -> None:
        if zk is not None:
            self._admin_raw = {}  # what the next build from the metadata compares with: none
            built = self._from_zk(zk, self._parts_from[:1] == ("zk",))
        else:
            built = self._from_admin()
        # An unchanged partition stays the same object: comparing two snapshots' partitions
        # is then mostly identity checks.
        known = self._part_objs
        parts = tuple(
            p if p is (same := known.get((p.topic, p.partition))) or p != same else same
            for p in built
        )
        if parts == self._parts:
            return
        self._part_objs = {(p.topic, p.partition): p for p in parts}
        self._pos = {(p.topic, p.partition): i for i, p in enumerate(parts)}
        self._per_topic = Counter(p.topic for p in parts)
        self._parts, self._gen, self._changes = parts, next(_GENS), None

    def _zk_delta(self, zk: ZkState) -> list[tuple[int, Partition]] | None:
        """(position, partition) for each partition that differs from the last build, from
        just what ZooKeeper re-read since (ZkState.delta); None when that cannot say: not
        built from the ZkState before, or a topic gained or lost partitions."""
        d = zk.delta
        if d is None or not self._zk_seq or d.base != self._zk_seq:
            return None
        pos = self._pos
        keys = set(d.states)
        for topic in d.topics:
            tdata = zk.topics.get(topic)
            if tdata is None:
                return None  # deleted
            ids = tdata.get("partitions", {})
            if len(ids) != self._per_topic.get(topic, 0):
                return None
            for p_str in ids:
                key = (topic, int(p_str))
                if key not in pos:
                    return None
                keys.add(key)
        out: list[tuple[int, Partition]] = []
        for key in keys:
            i = pos.get(key)
            tdata = zk.topics.get(key[0])
            if i is None:
                if tdata is not None and str(key[1]) in tdata.get("partitions", {}):
                    return None  # a partition the last build did not have
                continue  # a state no assignment names: not shown (as in a full build)
            assert tdata is not None
            p = _zk_partition(key[0], key[1], tdata, zk.states.get(key))
            if p != self._parts[i]:
                out.append((i, p))
        out.sort(key=lambda ip: ip[0])
        return out

    def _from_zk(self, zk: ZkState, incremental: bool) -> list[Partition]:
        """Partitions from ZooKeeper's data. ZkWatcher hands on the very same dict for a
        topic or a partition state it did not re-read, so only what it re-read is built again:
        a leader moving on one partition of 10,000 costs one Partition, not 10,000 (plus an
        identity check each). Used when _zk_delta cannot say what changed."""
        prev_topics, prev_states = self._zk_read if incremental else ({}, {})
        known = self._part_objs
        out: list[Partition] = []
        for topic in sorted(zk.topics):
            tdata = zk.topics[topic]
            same_topic = tdata is prev_topics.get(topic)
            for p in sorted(int(p_str) for p_str in tdata.get("partitions", {})):
                key = (topic, p)
                st = zk.states.get(key)
                if same_topic and st is prev_states.get(key) and (old := known.get(key)):
                    out.append(old)
                    continue
                out.append(_zk_partition(topic, p, tdata, st))
        return out

    def _from_admin(self) -> list[Partition]:
        """Partitions from the Admin metadata, by topic and partition. A partition whose
        figures are those of the last build stays the same object without being built again:
        on 10,000 partitions, building and comparing them all every metadata poll (every
        second) was most of an idle console's CPU (bench/RESULTS.md, kraft-10k)."""
        out: list[Partition] = []
        kraft = self.mode is ClusterMode.KRAFT
        known_objs = self._part_objs
        last_raw = self._admin_raw
        raw_now: dict[tuple[str, int], tuple[Any, ...]] = {}
        moving = bool(self.reassignments)
        elrs = self.elr
        if self.admin is not None and self.admin.topics is not None:
            topics = self.admin.topics
            for topic in sorted(topics):
                parts = topics[topic]
                if any(parts[i].partition > parts[i + 1].partition for i in range(len(parts) - 1)):
                    parts = tuple(sorted(parts, key=lambda ap: ap.partition))
                for ap in parts:
                    elr: tuple[int, ...] | None = None
                    known: tuple[int, ...] | None = None
                    if kraft:
                        read = elrs.get((topic, ap.partition))
                        if read is not None:
                            elr, known = read
                        elif len(ap.isr) >= len(ap.replicas) and ap.leader >= 0:
                            # ELR holds replicas out of the ISR: none while the ISR is full.
                            elr, known = (), ()
                    adding, removing = (
                        self.moving(topic, ap.partition, ap.replicas) if moving else ((), ())
                    )
                    key = (topic, ap.partition)
                    raw = (ap.leader, ap.replicas, ap.isr, adding, removing, elr, known)
                    raw_now[key] = raw
                    old = known_objs.get(key)
                    if old is not None and last_raw.get(key) == raw:
                        out.append(old)
                        continue
                    out.append(
                        Partition(
                            topic,
                            ap.partition,
                            ap.leader,
                            ap.replicas,
                            ap.isr,
                            adding=adding,
                            removing=removing,
                            elr=elr,
                            last_known_elr=known,
                        )
                    )
        self._admin_raw = raw_now
        return out

    def _since(self, gen: int) -> tuple[Partition, ...] | None:
        """The partitions built again since the build `gen` (none if it is the last one);
        None when the last build was a full one after it (look at every partition)."""
        if gen == self._gen:
            return ()
        ch = self._changes
        if ch is not None and ch.base == gen:
            return tuple(self._parts[i] for i in ch.positions)
        return None

    def _brokers(
        self, zk_ok: bool, partitions: tuple[Partition, ...], now: float
    ) -> tuple[Broker, ...]:
        present: dict[int, Broker] = {}
        if zk_ok and self.zk is not None:
            listener = _client_listener(self.zk.brokers, self.admin)
            for bid, reg in self.zk.brokers.items():
                host, port = _endpoint(reg, listener)
                ts = reg.get("timestamp")
                present[bid] = Broker(
                    bid, host, port, reg.get("rack"), registered_at=float(ts) / 1000 if ts else None
                )
        elif self.mode is ClusterMode.KRAFT and self.registrations is not None:
            # Every registered broker, fenced ones too (the metadata lists only unfenced ones).
            for bid, r in self.registrations.items():
                present[bid] = Broker(bid, r.host, r.port, r.rack)
        elif self.admin is not None:
            for bid, (host, port, rack) in self.admin.nodes.items():
                present[bid] = Broker(bid, host, port, rack)
        if self.admin is not None:  # racks come from DescribeCluster when ZooKeeper has none
            for bid, (_h, _p, rack) in self.admin.nodes.items():
                if bid in present and present[bid].rack is None and rack:
                    b = present[bid]
                    present[bid] = Broker(b.id, b.host, b.port, rack, b.state, b.registered_at)
        for bid, b in present.items():
            self._known[bid] = b
        if self._registered_before is not None:
            for bid in present.keys() - self._registered_before:
                self._joined_at[bid] = now
        for bid in self._joined_at.keys() - present.keys():
            del self._joined_at[bid]
        if (
            (zk_ok and self.zk is not None) or self.admin is not None or self.registrations
        ):  # a source answered
            self._registered_before = set(present)
        # A replica on a broker never seen is a broker that is down; most builds change no
        # partition, and a slice of a burst only a few.
        scan = self._since(self._replicas_gen)
        self._replicas_gen = self._gen
        for bid in {bid for p in (partitions if scan is None else scan) for bid in p.replicas}:
            if bid not in self._known:
                self._known[bid] = Broker(bid, "?", 0, state=BrokerState.DOWN)
        for bid in self.proc_states:
            self._known.setdefault(bid, Broker(bid, "?", 0, state=BrokerState.DOWN))
        # No source has ever said which brokers there are (nothing listens, or the login was
        # refused): a broker the backend knows is not known to be down, only unknown -- unless
        # its process is not running.
        never_read = self.zk is None and self.admin is None and self.registrations is None
        out = []
        for bid in sorted(self._known):
            b = present.get(bid) or self._known[bid]
            if bid not in present and never_read:
                stopped = self.proc_states.get(bid) is ProcState.STOPPED
                state = BrokerState.DOWN if stopped else BrokerState.UNKNOWN
            elif bid not in present:
                state = BrokerState.DOWN
            elif self.proc_states.get(bid) is ProcState.PAUSED:
                state = BrokerState.PAUSED
            elif self.reachable.get(bid) is False and not self._starting(bid, now):
                state = BrokerState.UNREACHABLE
            elif self.proc_states.get(bid) is ProcState.STOPPED:
                # Registered, but its process is gone (killed): the registration is the dead
                # process's, kept until its ZooKeeper session expires. Not up.
                state = BrokerState.UNREACHABLE
            else:
                state = BrokerState.UP
            if self.proc_states.get(bid) is ProcState.PAUSED and bid not in present:
                state = BrokerState.PAUSED
            fenced: bool | None = None
            roles: tuple[str, ...] = ()
            if self.mode is ClusterMode.KRAFT:
                known = (self.registrations or {}).get(bid)
                fenced = known.fenced if known is not None else None
                voter = self.quorum is not None and bid in self.quorum.voter_ids
                roles = ("broker", "controller") if voter else ("broker",)
            out.append(
                Broker(
                    b.id,
                    b.host,
                    b.port,
                    b.rack,
                    state,
                    b.registered_at,
                    bid in present,
                    fenced=fenced,
                    roles=roles,
                )
            )
        return tuple(out)

    def _starting(self, bid: int, now: float) -> bool:
        """Registered less than STARTING_S ago, while this builder watched: a failed port
        probe then means its listeners are not open yet, and it is shown as it registered."""
        joined = self._joined_at.get(bid)
        return joined is not None and now - joined < STARTING_S

    def _controller(self, zk_ok: bool, now: float) -> Controller:
        if self.mode is ClusterMode.KRAFT:
            # The quorum leader: the metadata's controller id is a random broker in KRaft.
            q = self.quorum
            if q is None:
                return Controller(None)
            # Since when it leads only when kconsole saw it elected: Kafka does not say.
            since = q.leader_seen_since if q.leader_seen_elected else None
            return Controller(q.leader_id, q.leader_epoch, since, q.previous_leader)
        if zk_ok and self.zk is not None:
            cid, epoch, since = (
                self.zk.controller,
                self.zk.controller_epoch,
                self.zk.controller_since,
            )
        elif self.admin is not None:
            cid, epoch, since = self.admin.controller, None, None
        else:
            cid, epoch, since = None, None, None
        seen_id, seen_since = self._controller_seen
        if cid != seen_id:
            if seen_id is not None:
                self._previous_controller = seen_id
            self._controller_seen = (cid, since or now)
        elif since is None:
            since = seen_since
        return Controller(cid, epoch, since or self._controller_seen[1], self._previous_controller)

    def _topics(self, partitions: tuple[Partition, ...]) -> tuple[Topic, ...]:
        # A build of just the changed partitions keeps every topic and partition.
        if self._since(self._names_gen) is None:
            self._names = sorted({p.topic for p in partitions})
        self._names_gen = self._gen
        names = self._names
        min_isr = self.admin.min_isr if self.admin else {}
        zk = self.zk if self._parts_from[:1] == ("zk",) else None
        if zk is None:
            return tuple(Topic(n, n.startswith("__"), min_isr.get(n)) for n in names)
        creating = self._creating_topics(zk)
        return tuple(
            Topic(
                n,
                n.startswith("__"),
                min_isr.get(n),
                (zk.topics.get(n) or {}).get("topic_id"),
                n in zk.deleting,
                n in creating,
            )
            for n in names
        )

    def _creating_topics(self, zk: ZkState) -> set[str]:
        """The topics with a partition that has no state node yet: assigned, its leader not
        elected (ZooKeeper mode creates a topic so). Looked at again only for the partitions
        built since the last look (a full build: all of them)."""
        changed = self._since(self._creating_gen)
        if changed is None:
            topics = set(zk.topics)
            self._creating = set()
        else:
            topics = {p.topic for p in changed}
        self._creating_gen = self._gen
        for t in topics:
            tdata = zk.topics.get(t)
            parts = tdata.get("partitions", {}) if tdata else {}
            if any((t, int(p)) not in zk.states for p in parts):
                self._creating.add(t)
            else:
                self._creating.discard(t)
        return self._creating


def _zk_partition(
    topic: str, p: int, tdata: dict[str, Any], state: dict[str, Any] | None
) -> Partition:
    """One partition from its topic's assignment JSON and its state znode's JSON."""
    st = state or {}
    key = str(p)
    return Partition(
        topic,
        p,
        int(st.get("leader", -1)),
        tuple(tdata.get("partitions", {})[key]),
        tuple(st.get("isr", ())),
        st.get("leader_epoch"),
        tuple((tdata.get("adding_replicas") or {}).get(key, ())),
        tuple((tdata.get("removing_replicas") or {}).get(key, ())),
    )


def _listeners(reg: dict[str, Any]) -> list[tuple[str, str, int]]:
    """(listener name, host, port) of each endpoint of a ZooKeeper broker registration
    ("INTERNAL://kafka-1:29092"), in its order."""
    out = []
    for ep in reg.get("endpoints") or []:
        name, sep, hostport = str(ep).partition("://")
        if not sep:
            name, hostport = "", name
        h, _, p = hostport.rpartition(":")
        if h and p.isdigit():
            out.append((name, h.strip("[]"), int(p)))
    return out


def _client_listener(brokers: dict[int, dict[str, Any]], admin: AdminState | None) -> str | None:
    """The listener the console's own clients use, by name: the one whose advertised address
    is what the Admin API's metadata gave for that broker (a client is told the addresses of
    the listener it connected on, so the one reachable from the bootstrap given). None when
    no broker's metadata address is one of its registered endpoints."""
    if admin is None:
        return None
    for bid, reg in sorted(brokers.items()):
        node = admin.nodes.get(bid)
        if node is None:
            continue
        for name, host, port in _listeners(reg):
            if (host, port) == (node[0], node[1]):
                return name
    return None


def _endpoint(reg: dict[str, Any], listener: str | None = None) -> tuple[str, int]:
    """The address to show for a broker registered in ZooKeeper: its endpoint on `listener`
    (the clients' one) when it has it, else the registration's host/port (set only for a
    PLAINTEXT listener), else its first endpoint (often the inter-broker one)."""
    endpoints = _listeners(reg)
    if listener is not None:
        for name, h, p in endpoints:
            if name == listener:
                return h, p
    host, port = reg.get("host"), reg.get("port")
    if host and port and int(port) > 0:
        return str(host), int(port)
    if endpoints:  # SASL_SSL://host:9093 etc. when host/port are unset
        return endpoints[0][1], endpoints[0][2]
    return "?", 0


def _same_where_equal(before: tuple[Group, ...], now: tuple[Group, ...]) -> tuple[Group, ...]:
    """`now`, with every group equal to its last reading kept as that same object (and the same
    tuple when nothing changed): the groups pane redraws only the groups that are not."""
    known = {g.group_id: g for g in before}
    out = tuple(same if (same := known.get(g.group_id)) == g else g for g in now)
    return before if out == before else out


def _has_metadata(snap: ClusterSnapshot) -> bool:
    """True once the snapshot rests on the preferred source: ZooKeeper when it is configured
    and has answered (or failed) at least once, else the Admin API."""
    zk = snap.source(SourceName.ZOOKEEPER)
    if zk is not None and zk.updated_at is None and zk.error == _WAITING:
        return False  # the Admin API's controller and ISRs may differ from ZooKeeper's
    return any(s.ok for s in snap.sources if s.name is not SourceName.GROUPS)
