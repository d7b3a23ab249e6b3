"""ClusterObserver: keeps one live ClusterSnapshot from every source and reports each change.

Sources, each on its own thread, never overlapping themselves:
  - ZooKeeper watches (kconsole.cluster.zk): controller, brokers, topics, partition states;
  - Admin API poll every `refresh_s`: metadata, cluster id, topic min.insync.replicas, broker
    reachability — and the partition table when there is no ZooKeeper (on KRaft with the
    running reassignments: one ListPartitionReassignments a poll, as kafka-topics reads them);
  - consumer groups poll every `group_refresh_s`: groups, members, committed and end offsets
    (kconsole.cluster.groups.reader; what one poll could not read is carried with its age);
  - the control backend (if any): which broker processes are paused;
  - KRaft (kconsole.cluster.kraft.quorum): DescribeQuorum every QUORUM_POLL_S (through the brokers,
    or the controllers given with --bootstrap-controller) and DescribeCluster with fenced
    brokers; features every FEATURES_REFRESH_S. It also tells the mode: a quorum that answers
    is KRaft (ZooKeeper is then dropped, even the default one); brokers without the KRaft APIs,
    or a ZooKeeper that answers while no broker does, are ZooKeeper mode (this poller stops).
    KRaft has nothing to watch: a change it sees (leader, registrations, fencing) wakes the
    metadata poll at once, which otherwise runs every `refresh_s`.

A source that fails keeps its last data and is marked stale with its error; it retries on its
own. Every update builds a new immutable snapshot, diffs it with the previous one and hands
both to `on_update(snapshot, events)` — the console posts that as a message, the drills and
`describe` use it directly. Never imports Textual.

The snapshot itself is built by kconsole.observer.builder (pure); this module holds the threads,
the locks and the publishing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable

from kconsole.cluster.admin import AdminReader, AdminState, TopicConfigs, reachable
from kconsole.cluster.groups.reader import GroupsRead, carry_forward
from kconsole.cluster.kraft.quorum import NoQuorumLeader, NotKRaft, QuorumReader, QuorumUnanswered
from kconsole.cluster.security.clients import auth_failure, diagnose_auth, nothing_listens
from kconsole.cluster.values import ProcState
from kconsole.cluster.zk import ZkState, ZkWatcher, read_once
from kconsole.config import Settings
from kconsole.errors import AuthenticationFailed, ClusterError
from kconsole.models import (
    METADATA_SOURCES,
    BrokerConfig,
    BrokerState,
    ClusterMode,
    ClusterSnapshot,
    Group,
    Rates,
    SourceName,
)
from kconsole.observer.builder import (
    SnapshotBuilder,
    _client_listener,
    _endpoint,
    _has_metadata,
    _same_where_equal,
)
from kconsole.observer.controllers import DEFAULT_FETCH_TIMEOUT_S
from kconsole.rates import RateBook
from kconsole.timeline import Event, diff

log = logging.getLogger(__name__)
OnUpdate = Callable[[ClusterSnapshot, tuple[Event, ...]], None]
StatesFn = Callable[[], dict[int, ProcState]]
HintFn = Callable[[], str]
NetFaultsFn = Callable[[], dict[int, str]]
# (when, broker id) of each controller resignation the brokers' logs show since a time.
ResignationsFn = Callable[[float], list[tuple[float, int]]]
# How often the logs are read for resignations while a network fault is in force, and how long
# after the last heal: a zombie controller resigns once it reaches ZooKeeper again (a second or
# so after the heal; its session may take longer to be found expired).
RESIGN_READ_EVERY_S = 2.0
RESIGN_WATCH_AFTER_S = 60.0
# The longest a consumer-group poll waits for a burst of ZooKeeper changes to be read.
GROUPS_HOLD_S = 2.0
# KRaft: DescribeQuorum (and DescribeCluster) this often; small answers whatever the partitions.
QUORUM_POLL_S = 0.4
# ... and this often while no leader answers (an election takes a second or two).
QUORUM_ELECTION_POLL_S = 0.1
# ... and as often while a fencing kconsole expects has not come, for at most FENCING_WATCH_S:
# a broker whose process it sees paused or stopped is still unfenced, or one running again is
# still fenced (a drill's pause or restart: the controller's verdict is the news then).
FENCING_WATCH_S = 20.0
FEATURES_REFRESH_S = 30.0
# KRaft: after the quorum poller wakes the metadata poll, an unchanged answer is asked again
# this often, for this long (the broker asked had not applied the change yet: in a bench run
# on 10,000 partitions that held a leader change back a whole refresh, 1 s).
EXPECTED_REREAD_EVERY_S = 0.1
EXPECTED_REREAD_FOR_S = 1.0
# Until the mode is known the quorum is asked this often (each try may wait its timeout).
MODE_PROBE_S = 1.0
# A secured cluster is asked first whether it accepts kconsole's login or TLS handshake, by
# a librdkafka client that stops at the first answer: kafka-python (the quorum, the groups)
# would try every broker until its timeout to fail the same way (3 + 5 s).
REFUSAL_PROBE_S = 2.0
# ... again at most this often while the Admin API has never answered (the console).
REFUSAL_PROBE_EVERY_S = 10.0


# How often the partitions' log sizes are read (bytes/s): one DescribeLogDirs per broker lists
# every replica it holds, more to decode than the log ends; a window of them still gives the rate.
SIZES_EVERY_S = 10.0
# Partitions whose log ends a second the rates read at most: on more, less often than every
# groups poll (10,000 partitions: every 5 s).
SAMPLE_PARTITIONS_PER_S = 2000.0
TP = tuple[str, int]

# How often the backend's process states are read (the local backend: pid files and /proc).
PROC_STATES_POLL_S = 0.25


class ClusterObserver:
    """Live snapshots of one cluster; see the module docstring."""

    def __init__(
        self,
        settings: Settings,
        *,
        proc_states: StatesFn | None = None,
        controller_states: StatesFn | None = None,
        clock: Callable[[], float] = time.time,
        history: int = 2000,
        start_hint: HintFn | None = None,
        net_faults: NetFaultsFn | None = None,
        resignations: ResignationsFn | None = None,
    ):
        self.settings = settings
        self.clock = clock
        self.proc_states_fn = proc_states
        # KRaft: the process states of the controllers that are no brokers (a stopped one is
        # shown down at once; the quorum alone says so only after the fetch timeout).
        self.controller_states_fn = controller_states
        # While nothing answers: how to start the cluster if it is the local one, not running.
        self.start_hint_fn = start_hint
        # The local cluster's network faults in force (read with the process states).
        self.net_faults_fn = net_faults
        # ZooKeeper mode: the controller resignations the brokers' logs show (a zombie's),
        # read while a network fault is in force and for a minute after the last heal.
        self.resignations_fn = resignations
        self._watch: tuple[float, float | None] | None = None  # (from, until) in wall time
        self._resign_read_at = 0.0
        self._probed_at = -REFUSAL_PROBE_EVERY_S  # when the login was last probed (monotonic)
        self.builder = SnapshotBuilder(use_zookeeper=bool(settings.zookeeper))
        self.events: deque[Event] = deque(maxlen=history)
        self.snapshot: ClusterSnapshot | None = None
        self._lock = threading.Lock()
        self._on_update: OnUpdate | None = None
        self._stop = threading.Event()
        self._wake_admin = threading.Event()
        self._wake_groups = threading.Event()
        self._wake_quorum = threading.Event()
        self._due_since: dict[int, float] = {}  # _fencing_due: since when each has been due
        self._paused: frozenset[int] = frozenset()  # brokers the backend says are paused
        # The reads that follow an admin poll (ELR, configs, the brokers' settings): a thread
        # of their own, so a broker that holds them (paused, cut off) never holds the next
        # poll of the leaders and ISRs. The latest poll's job only; None once taken.
        self._wake_details = threading.Event()
        self._details: tuple[AdminState | None, tuple[AdminState, dict[int, bool]] | None] | None
        self._details = None
        self._details_thread = False  # whether a thread takes them (else the poll reads them)
        # Racks and min.insync.replicas, shared by every reader of this observer: a refresh
        # made by the details thread is used by the admin poll.
        self._configs = TopicConfigs()
        self._features_at = -FEATURES_REFRESH_S
        self._threads: list[threading.Thread] = []
        self._zk: ZkWatcher | None = None
        self._publishing = threading.Lock()  # snapshots reach on_update in the order built
        self.config_refresh_s = 30.0
        self._config_at = 0.0
        self._preferred: frozenset[tuple[str, int]] = frozenset()
        # How fast it moves: the offsets each groups poll reads, over a window (kconsole.rates).
        self._rates = RateBook(settings.rate_window_s)
        self._sizes_at = -SIZES_EVERY_S
        self._sampled_at = float("-inf")

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, on_update: OnUpdate) -> None:
        self._on_update = on_update
        self._stop.clear()
        if self.settings.zookeeper:
            self._zk = ZkWatcher(
                self.settings.zookeeper, self._zk_changed, client_props=self.settings.client
            )
            self._zk.prefer(self._preferred)
            self._zk.start()
        loops = [
            ("admin", self._admin_loop),
            ("details", self._details_loop),
            ("groups", self._groups_loop),
            ("quorum", self._quorum_loop),
        ]
        self._details_thread = True
        if self.proc_states_fn or self.controller_states_fn or self.net_faults_fn:
            loops.append(("backend", self._backend_loop))
        for name, target in loops:
            t = threading.Thread(target=target, name=f"kconsole-{name}", daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        self._stop.set()
        self._wake_admin.set()
        self._wake_details.set()
        self._wake_groups.set()
        self._wake_quorum.set()
        if self._zk is not None:
            self._zk.stop()
        for t in self._threads:
            t.join(timeout=10)
        self._threads.clear()
        self._details_thread = False

    def refresh(self) -> None:
        """Poll every source now (after an action, or when the user asks)."""
        self._wake_admin.set()
        self._wake_groups.set()
        self._wake_quorum.set()
        if self._zk is not None:
            self._zk.reload()

    def record(self, event: Event) -> None:
        """Put an event of our own (an action, a drill step) on the timeline, in order."""
        with self._publishing:
            with self._lock:
                self.events.append(event)
                snap = self.snapshot
            if snap is not None and self._on_update is not None:
                try:
                    self._on_update(snap, (event,))
                except Exception:
                    log.exception("on_update failed")

    def prefer(self, partitions: frozenset[tuple[str, int]]) -> None:
        """The partitions on screen: in a burst of ZooKeeper changes, read these first."""
        self._preferred = partitions
        if self._zk is not None:
            self._zk.prefer(partitions)

    def events_since(self, ts: float) -> list[Event]:
        """A copy of the kept events at or after `ts` (the source threads append to the log:
        it is only ever read under its lock)."""
        with self._lock:
            return [e for e in self.events if e.ts >= ts]

    # -- one-shot (kconsole describe) ---------------------------------------------------------
    def read_once(self, sample_s: float = 0.0) -> ClusterSnapshot:
        """Read every source once, synchronously, and return the snapshot. The quorum is
        asked first: a KRaft cluster then needs no ZooKeeper timeout (the default ZooKeeper
        is given even when the cluster is KRaft). A cluster that refuses the login is asked
        nothing more: each source says so (ZooKeeper, which has its own login, is read).

        With `sample_s`, the offsets are read again every `group_refresh_s` for that many
        seconds and the snapshot carries the rates over them (the window); else no rates."""
        if sample_s > 0:
            self._rates = RateBook(sample_s)
        login = self._refusal()
        if login is not None:
            with self._lock:
                self.builder.quorum_failed(login, refused=True)
        else:
            quorum = self._quorum_reader()
            try:
                self._poll_quorum(quorum, publish=False)
            finally:
                quorum.close()
        if self.settings.zookeeper and self.builder.mode is not ClusterMode.KRAFT:
            # Every address refusing: kazoo would retry them until its timeout (5 s).
            zk_silent = nothing_listens(self.settings.zookeeper)
            try:
                if zk_silent is not None:
                    raise ClusterError(zk_silent)
                self._zk_changed(
                    read_once(self.settings.zookeeper, client_props=self.settings.client),
                    "",
                    publish=False,
                )
            except Exception as exc:
                self._zk_changed(None, f"ZooKeeper {self.settings.zookeeper}: {exc}", publish=False)
        self._read_proc_states()
        # A fresh Admin client knows only the bootstrap brokers: when every one refuses, the
        # metadata and the groups fail now, not after a timeout each (5 s + 5 s).
        silent = nothing_listens(str(self.settings.kafka_config().get("bootstrap.servers", "")))
        if silent is not None or login is not None:
            with self._lock:
                for name in (SourceName.ADMIN, SourceName.GROUPS):
                    self.builder.health[name].failure(
                        login or silent or "", refused=login is not None
                    )
            self._settle_controllers()  # the quorum, asked of the controllers, still answers
            self._note_hint()
            return self._publish(publish=False)
        reader = self._reader()
        try:
            self._poll_admin(reader, publish=False)
            self._poll_groups(reader, publish=False)
            # Until the readings span the whole sample (or, when they fail, the clock says it
            # has passed with room for one more poll's timeout).
            first, start = self._rates.taken_at, self.clock()
            deadline = start + sample_s + self.settings.group_refresh_s + 10.0
            while (
                sample_s > 0 and self._rates.taken_at - first < sample_s and self.clock() < deadline
            ):
                left = first + sample_s - self._rates.taken_at
                time.sleep(max(0.05, min(self.settings.group_refresh_s, left)))
                self._poll_groups(reader, publish=False)
        finally:
            reader.close()
        if sample_s <= 0:
            with self._lock:
                self.builder.rates = None  # one reading: no rate
        self._settle_controllers()
        return self._publish(publish=False)

    def _settle_controllers(self) -> None:
        """One reading cannot tell a voter the leader has had no fetch from because it was
        elected a moment ago from one that is gone (a killed leader, once another leads):
        when that leaves a controller unknown, the quorum is read once more when the leader
        has been seen for longer than controller.quorum.fetch.timeout.ms."""
        with self._lock:
            b = self.builder
            q = b.quorum
            if b.mode is not ClusterMode.KRAFT or q is None or q.stale:
                return
            if q.leader_seen_since is None:
                return
            now = self.clock()
            if all(c.state is not None for c in b.controllers(now)):
                return
            timeout = b.fetch_timeout_s() or DEFAULT_FETCH_TIMEOUT_S
            wait = q.leader_seen_since + timeout + 0.2 - now
        if wait > 0:
            self._stop.wait(wait)
        quorum = self._quorum_reader()
        try:
            self._poll_quorum(quorum, publish=False)
        finally:
            quorum.close()

    def _failed(self, exc: BaseException, start: float) -> tuple[str, bool]:
        """(why, refused) for a read that failed with `exc` after `start` (monotonic): a
        refused login any of kconsole's clients met meanwhile is the reason (kafka-python
        meets one as a bootstrap that timed out)."""
        if _is_refusal(exc):
            return _describe(exc), True
        servers = self.settings.kafka_config().get("bootstrap.servers", "")
        refused = auth_failure(servers, start)
        if refused is not None:
            return refused, True
        # Said plainly when every bootstrap address refuses the connection (nothing runs
        # there), rather than as the client's "transport failure" or bootstrap timeout.
        return nothing_listens(str(servers), 0.2) or _describe(exc), False

    def _refusal(self) -> str | None:
        """Why the cluster refuses kconsole's login or TLS handshake (asked only of a secured
        one, by a fresh librdkafka client: REFUSAL_PROBE_S); None when it did not refuse, or
        did not answer in time (the sources then say what they meet)."""
        self._probed_at = time.monotonic()
        try:
            diagnose_auth(self.settings, REFUSAL_PROBE_S)
        except AuthenticationFailed as exc:
            return exc.message
        except Exception as exc:  # the probe is a shortcut: the sources say the rest
            log.debug("login probe: %s", exc)
        return None

    def _note_hint(self) -> None:
        """While the cluster cannot be reached: how to start it, if it is the local one and
        not running (asked of the command layer's start_hint)."""
        if self.start_hint_fn is None:
            return
        with self._lock:
            health = self.builder.health
            answering = any(health[n].ok for n in METADATA_SOURCES if n in health)
        if answering:  # reached: nothing to start (a drill's stopped brokers are its own)
            with self._lock:
                self.builder.start_hint = ""
            return
        try:
            hint = self.start_hint_fn()
        except Exception as exc:
            log.debug("start hint: %s", exc)
            hint = ""
        with self._lock:
            self.builder.start_hint = hint

    # -- sources ----------------------------------------------------------------------------
    def _reader(self) -> AdminReader:
        return AdminReader(self.settings.kafka_config(), configs=self._configs)

    def _quorum_reader(self) -> QuorumReader:
        return QuorumReader(self.settings.kafka_config(), self.settings.bootstrap_controller)

    def _poll_quorum(self, reader: QuorumReader, publish: bool = True) -> ClusterMode:
        """One KRaft poll (and, until it is known, the mode); publishes when the leader, the
        epoch, the lagging voters, the registrations or the fencing changed, or the mode was
        found. The mode it knows after the poll."""
        with self._lock:
            mode = self.builder.mode
        if mode is ClusterMode.ZOOKEEPER:
            return mode
        # The brokers decide first: a ZooKeeper that answers may be another cluster's (the
        # default connect string is given to every cluster).
        now = self.clock()
        start = time.monotonic()
        try:
            quorum = reader.read_quorum(now)
        except NotKRaft:
            return self._zookeeper_mode(publish)
        except NoQuorumLeader as exc:  # the controllers said so: metadata is frozen
            with self._lock:
                b = self.builder
                before = b.quorum
                if b.mode is not ClusterMode.KRAFT:
                    b.set_mode(ClusterMode.KRAFT)
                b.quorum_leaderless(str(exc), self.clock())
                changed = before is None or before.leader_id is not None
            if publish and changed:
                self._publish()
            return ClusterMode.KRAFT
        except Exception as exc:  # keep the last figures, marked with their age and error
            # What the controllers said when asked directly is the reason, not that nothing
            # listens at the brokers' addresses (their being down is why they were asked).
            unanswered = isinstance(exc, QuorumUnanswered)
            why, refused = (_describe(exc), False) if unanswered else self._failed(exc, start)
            with self._lock:
                b = self.builder
                if b.mode is ClusterMode.UNKNOWN and b.use_zookeeper and b.zk is not None:
                    zk_answered = True  # no broker answers, ZooKeeper does: ZooKeeper mode
                else:
                    zk_answered = False
                    before = b.quorum
                    b.quorum_failed(why, refused)
                    changed = before is not None and not before.stale
            if zk_answered:
                return self._zookeeper_mode(publish)
            if publish and changed:
                self._publish()
            return mode
        registrations = None
        reg_error = ""
        with self._lock:
            avoid = self._not_to_ask()
        try:
            registrations = reader.read_registrations(avoid)
        except Exception as exc:  # the brokers are down: the quorum still is news
            reg_error = f"brokers not described: {_describe(exc)}"
        features = None
        if now - self._features_at >= FEATURES_REFRESH_S or (
            self.builder.quorum is not None and self.builder.quorum.leader_id != quorum.leader_id
        ):
            try:
                features = reader.read_features(now, avoid)
                self._features_at = now
            except Exception as exc:
                log.debug("features: %s", exc)
        with self._lock:
            b = self.builder
            found = b.mode is not ClusterMode.KRAFT
            if found:
                b.set_mode(ClusterMode.KRAFT)
            old_q, old_regs = b.quorum, b.registrations
            # Seen when it answered: a read through the brokers during an election blocks for
            # seconds (they wait for the new leader), and "seen since" must not predate it.
            b.quorum_read(quorum, self.clock())
            if reg_error:
                b.health[SourceName.QUORUM].success(now, reg_error)
            if registrations is not None:
                b.registrations = registrations
            if features is not None:
                b.features = features
            new_q = b.quorum
            assert new_q is not None
            shown = self.snapshot.controllers if self.snapshot is not None else ()
            changed = (
                found
                or old_q is None
                or old_q.stale
                or (old_q.leader_id, old_q.leader_epoch) != (new_q.leader_id, new_q.leader_epoch)
                or old_q.voter_ids != new_q.voter_ids
                or old_q.lagging_voters() != new_q.lagging_voters()
                or (registrations is not None and registrations != old_regs)
                # a controller's health (its reason says an age: that alone is no news)
                or [(c.id, c.state) for c in shown]
                != [(c.id, c.state) for c in b.controllers(self.clock())]
            )
        if found:
            zk, self._zk = self._zk, None
            if zk is not None:
                zk.stop()  # the default ZooKeeper of a KRaft cluster: nothing to watch
        if changed:
            self._wake_admin.set()  # KRaft has no watches: re-read the metadata now
            if publish:
                self._publish()
        return ClusterMode.KRAFT

    def _zookeeper_mode(self, publish: bool) -> ClusterMode:
        with self._lock:
            self.builder.set_mode(ClusterMode.ZOOKEEPER)
        if publish:
            self._publish()
        return ClusterMode.ZOOKEEPER

    def _quorum_loop(self) -> None:
        reader = self._quorum_reader()
        try:
            while not self._stop.is_set():
                mode = self._poll_quorum(reader)
                if mode is ClusterMode.ZOOKEEPER:
                    return  # ZooKeeper mode: its watches say everything
                with self._lock:
                    q = self.builder.quorum
                    # The controllers said none leads (not merely a failed read: with every
                    # node down that would be a busy loop of refused connections).
                    electing = q is not None and q.leader_id is None
                if mode is not ClusterMode.KRAFT:
                    wait = MODE_PROBE_S
                elif electing or self._fencing_due():
                    # no leader answers (an election is under way) or a fencing is due: the
                    # result is the news
                    wait = QUORUM_ELECTION_POLL_S
                else:
                    wait = QUORUM_POLL_S
                self._wake_quorum.wait(wait)
                self._wake_quorum.clear()
        finally:
            reader.close()

    def _zk_changed(self, state: ZkState | None, error: str, publish: bool = True) -> None:
        with self._lock:
            h = self.builder.health[SourceName.ZOOKEEPER]
            if state is None:
                h.failure(error)
            else:
                self.builder.zk = state
                h.success(self.clock())
        if publish:
            self._publish()

    def _poll_admin(self, reader: AdminReader, publish: bool = True) -> None:
        read: AdminState | None = None  # KRaft: whose short partitions' ELR to read after
        settings_from: tuple[AdminState, dict[int, bool]] | None = None  # configs, read after
        start = time.monotonic()
        with self._lock:
            never = self.builder.health[SourceName.ADMIN].updated_at is None
        # Until the Admin API first answers, a refused login is found in a moment (the first
        # read through kafka-python, with ZooKeeper, would wait out its timeout to fail).
        probe = never and time.monotonic() - self._probed_at >= REFUSAL_PROBE_EVERY_S
        refused = self._refusal() if probe else None
        try:
            if refused is not None:
                raise AuthenticationFailed(refused)
            with self._lock:
                tree = self.builder.zk
                serves = tree is not None and self.builder.health[SourceName.ZOOKEEPER].ok
                names = sorted(tree.topics) if serves and tree is not None else None
                avoid = self._not_to_ask()
            state = reader.read_cluster(topic_names=names, refresh_stale=False, avoid=avoid)
            nodes = dict(state.nodes)
            if self.builder.zk is not None:
                # probed where the console's clients reach it (not an inter-broker listener)
                listener = _client_listener(self.builder.zk.brokers, state)
                for bid, reg in self.builder.zk.brokers.items():
                    nodes.setdefault(bid, (*_endpoint(reg, listener), None))
            with self._lock:
                regs = self.builder.registrations
                kraft = self.builder.mode is ClusterMode.KRAFT
            for bid, r in (regs or {}).items():  # fenced brokers are not in the metadata
                nodes.setdefault(bid, (r.host, r.port, r.rack))
            reach = {bid: reachable(h, p) for bid, (h, p, _r) in nodes.items()}
            settings_from = (state, reach)
            moving, moving_error = None, ""
            if kraft:
                # Before the publish, unlike the ELR: a partition being reassigned lists its
                # old and new replicas at once, and without its adding ones it would show as
                # under-replicated (and with the wrong replication factor) for a poll.
                try:
                    moving = reader.read_reassignments(self._up_brokers(state, reach))
                except Exception as exc:  # unknown, said so: never "nothing is moving"
                    moving_error = _describe(exc)
            with self._lock:
                b = self.builder
                if kraft:  # the last ELR read stands only where the ISR is still short
                    short = _short(state)
                    if any(k not in short for k in b.elr):  # else the same object: no build
                        b.elr = {k: v for k, v in b.elr.items() if k in short}
                    if moving is not None:
                        b.reassignments_read(moving, self.clock())
                    else:
                        b.reassignments_failed(moving_error)
                b.admin = state
                b.reachable = reach
                now = self.clock()
                b.health[SourceName.ADMIN].success(now, b.reassignments_note(now) if kraft else "")
                b.start_hint = ""
            read = state if kraft else None
        except Exception as exc:  # a dead cluster must never stop the poller
            why, refused_now = self._failed(exc, start)
            with self._lock:
                self.builder.health[SourceName.ADMIN].failure(why, refused_now)
            self._note_hint()
        if self._zk is not None and self._zk.connected:
            with self._lock:
                zk = self.builder.health[SourceName.ZOOKEEPER]
                if zk.ok:
                    zk.success(self.clock())  # watches armed on a live session: data is current
        if publish:
            self._publish()
        if read is None and settings_from is None:
            return
        if self._details_thread:
            with self._lock:
                self._details = (read, settings_from)
            self._wake_details.set()
        else:  # read once (describe): in line
            self._read_details(reader, read, settings_from, publish)

    def _read_details(
        self,
        reader: AdminReader,
        read: AdminState | None,
        settings_from: tuple[AdminState, dict[int, bool]] | None,
        publish: bool = True,
    ) -> None:
        """What follows an admin poll, after its publish: kafka-python requests to any broker,
        and a paused or cut-off one holds them for their timeout (5 s). On the poll's own
        thread that held the next poll, and the leaders it carried (a KRaft paused-broker
        bench: a leader change reached the screen 3.3 s after Kafka made it, while the racks'
        DescribeCluster waited 5.02 s)."""
        if read is not None:
            # KRaft: the ELR of the partitions whose ISR is short (a partition that just went
            # short shows its ELR unknown until this read answers).
            elr = _read_elr(reader, read)
            with self._lock:
                changed = elr != self.builder.elr
                if changed:
                    self.builder.elr = elr
            if changed and publish:
                self._publish()
        if settings_from is not None:
            # Every config_refresh_s the topics' min.insync.replicas and the racks are read
            # again, and the brokers' settings, asked of the controller first -- in KRaft's
            # metadata a random broker.
            state, reach = settings_from
            with self._lock:
                tree = self.builder.zk
                names = sorted(tree.topics) if tree is not None else []
            reader.refresh_configs(sorted(state.topics or ()) or names)
            config = self._broker_config(reader, state, reach)
            with self._lock:
                changed = config != self.builder.broker_config
                self.builder.broker_config = config
            if changed and publish:
                self._publish()

    def _details_loop(self) -> None:
        reader = self._reader()  # its own clients: what holds its requests holds this thread
        try:
            while not self._stop.is_set():
                self._wake_details.wait()
                self._wake_details.clear()
                with self._lock:
                    job, self._details = self._details, None
                if job is not None and not self._stop.is_set():
                    try:
                        self._read_details(reader, *job)
                    except Exception:  # a details read never stops the thread
                        log.debug("details after a poll", exc_info=True)
        finally:
            reader.close()

    def _fencing_due(self) -> bool:
        """Whether the controller's verdict on a broker is due (the quorum poller then asks
        every QUORUM_ELECTION_POLL_S): its process, as the backend sees it, is paused or stopped
        while its registration is unfenced, or running while fenced -- for at most
        FENCING_WATCH_S after that was first seen (a broker cut off by a network fault stays
        fenced while running, for as long as the fault lasts)."""
        now = time.monotonic()
        with self._lock:
            regs = self.builder.registrations or {}
            procs = self.builder.proc_states
            due = {
                b
                for b, st in procs.items()
                if (r := regs.get(b)) is not None
                and (r.fenced if st is ProcState.RUNNING else not r.fenced)
            }
        self._due_since = {b: self._due_since.get(b, now) for b in due}
        return any(now - since < FENCING_WATCH_S for since in self._due_since.values())

    def _not_to_ask(self) -> set[int]:
        """The brokers whose answer about the cluster is not asked for (call it holding the
        lock): fenced by the controller (one cut off from the quorum still answers, with what
        it knew when it was cut off) or paused by kconsole (it answers nothing)."""
        avoid = {b for b, r in (self.builder.registrations or {}).items() if r.fenced}
        avoid |= {b for b, st in self.builder.proc_states.items() if st is ProcState.PAUSED}
        return avoid

    def _up_brokers(self, state: AdminState, reach: dict[int, bool]) -> list[int]:
        """The brokers in the metadata whose port answers and whose process is not paused
        (those a request can be sent to), by id."""
        with self._lock:
            procs = dict(self.builder.proc_states)
        return [
            bid
            for bid in sorted(state.nodes)
            if reach.get(bid) and procs.get(bid) is not ProcState.PAUSED
        ]

    def _poll_groups(self, reader: AdminReader, publish: bool = True) -> None:
        with self._lock:
            known = [g.group_id for g in self.builder.groups]
            snap = self.snapshot
            admin = self.builder.admin
            if snap is None and admin is not None:  # read_once: nothing published yet
                snap = self.builder.build(self.clock())
        brokers, leaders, unasked = _hints(snap)
        if brokers is None and admin is not None:  # before the first snapshot (read_once)
            brokers = sorted(admin.nodes) or None
        start = time.monotonic()
        try:
            sample = self._sample_due(len(leaders))
            read = reader.groups.read(
                known, brokers, leaders, unasked, sample=leaders if sample else (), clock=self.clock
            )
            sizes = self._read_sizes(reader, brokers, leaders)
            with self._lock:
                b = self.builder
                b.groups = _same_where_equal(
                    b.groups, carry_forward(b.groups, b.groups_at, read.groups)
                )
                b.groups_at = self.clock()
                b.rates = self._rate(read if sample else None, sizes, b.groups)
                partly = [g.group_id for g in b.groups if g.error]
                notes = list(read.notes)
                if partly:
                    notes.append(f"{len(partly)} of {len(b.groups)} groups partly unread")
                b.health[SourceName.GROUPS].success(b.groups_at, "; ".join(notes))
        except Exception as exc:  # nothing answered: keep the last data, marked stale
            why, refused = self._failed(exc, start)
            with self._lock:
                self.builder.health[SourceName.GROUPS].failure(why, refused)
        if publish:
            self._publish()

    def _read_sizes(
        self, reader: AdminReader, brokers: list[int] | None, leaders: dict[TP, int]
    ) -> tuple[float, dict[TP, tuple[int, int]], dict[TP, str], str] | None:
        """The partitions' log sizes on their leaders, every SIZES_EVERY_S (None between)."""
        now = self.clock()
        if not leaders or not brokers or now - self._sizes_at < SIZES_EVERY_S:
            return None
        self._sizes_at = now
        try:
            sizes, errors, note = reader.groups.log_sizes(brokers, leaders)
        except Exception as exc:  # its figures are unknown this time, said per partition
            log.debug("log sizes", exc_info=True)
            return self.clock(), {}, dict.fromkeys(leaders, _describe(exc)), ""
        return self.clock(), sizes, errors, note

    def _sample_due(self, partitions: int) -> bool:
        """Whether this groups poll reads every partition's log end for the rates: every poll
        up to SAMPLE_PARTITIONS_PER_S * group_refresh_s partitions, less often beyond (on
        10,000 partitions decoding the answers is most of an idle console's CPU; a window of
        30 s still holds several readings)."""
        every = max(self.settings.group_refresh_s, partitions / SAMPLE_PARTITIONS_PER_S)
        if len(self._rates.ends.list) < 2:
            every = 0.0  # the first two readings at once: a first rate on screen sooner
        now = self.clock()
        if now - self._sampled_at < every - 0.05:
            return False
        self._sampled_at = now
        return True

    def _rate(
        self,
        read: GroupsRead | None,
        sizes: tuple[float, dict[TP, tuple[int, int]], dict[TP, str], str] | None,
        groups: tuple[Group, ...],
    ) -> Rates | None:
        """Hand this poll's readings to the rate book (`read`: None when it read only the
        groups' partitions); the figures as of them."""
        book = self._rates
        at = self.clock()
        if read is not None and read.ends_at is not None:
            book.read_ends(read.ends_at, read.ends, read.end_errors, [*read.ends, *read.end_errors])
            at = read.ends_at  # the committed offsets were read just before: one time for both
        if sizes is not None:
            book.read_sizes(*sizes)
        book.read_groups(at, groups)
        return book.rates(groups)

    def _broker_config(
        self, reader: AdminReader, state: AdminState, reach: dict[int, bool]
    ) -> BrokerConfig | None:
        """The brokers' prediction settings, re-read every `config_refresh_s` (the controller's
        first: it runs the elections the predictions are about)."""
        current = self.builder.broker_config
        if current is not None and self.clock() - self._config_at < self.config_refresh_s:
            return current
        live = [b for b in sorted(state.nodes) if reach.get(b)]
        if state.controller in live:
            live.remove(state.controller)
            live.insert(0, state.controller)
        try:
            config = reader.read_broker_settings(live)
        except Exception as exc:
            log.debug("broker settings: %s", exc)
            return current  # the last ones read (None: the predictions say "assumed")
        self._config_at = self.clock()
        return config

    def _read_proc_states(self) -> bool:
        """Read the backend's process states (brokers', and controllers'); True when they
        changed."""
        changed = False
        for fn, attr in (
            (self.proc_states_fn, "proc_states"),
            (self.controller_states_fn, "controller_proc_states"),
        ):
            if fn is None:
                continue
            try:
                states = fn()
            except Exception:
                log.debug("backend states", exc_info=True)
                continue
            with self._lock:
                if states != getattr(self.builder, attr):
                    changed = True
                    setattr(self.builder, attr, states)
            if attr == "proc_states":  # one reference, swapped whole: read without the lock
                self._paused = frozenset(b for b, st in states.items() if st is ProcState.PAUSED)
        if self.net_faults_fn is not None:
            try:
                faults = tuple(sorted(self.net_faults_fn().items()))
            except Exception:  # its record unreadable: said by `cluster status`, not here
                log.debug("network faults", exc_info=True)
            else:
                with self._lock:
                    if faults != self.builder.net_faults:
                        changed = True
                        self.builder.net_faults = faults
                changed = self._read_resignations(bool(faults)) or changed
        return changed

    def _read_resignations(self, in_force: bool) -> bool:
        """While a network fault is in force and RESIGN_WATCH_AFTER_S after the last heal,
        read the brokers' logs for controller resignations (every RESIGN_READ_EVERY_S); True
        when a new one was found."""
        if self.resignations_fn is None:
            return False
        now = self.clock()
        if in_force:
            self._watch = (self._watch[0] if self._watch else now - 1.0, None)
        elif self._watch is not None and self._watch[1] is None:
            self._watch = (self._watch[0], now + RESIGN_WATCH_AFTER_S)
        if self._watch is None:
            return False
        since, until = self._watch
        if until is not None and now > until:
            self._watch = None
            return False
        if now - self._resign_read_at < RESIGN_READ_EVERY_S:
            return False
        self._resign_read_at = now
        try:
            found = set(self.resignations_fn(since))
        except Exception:  # a hint only: the drill's report reads them again
            log.debug("controller resignations", exc_info=True)
            return False
        with self._lock:
            known = set(self.builder.resignations)
            if found <= known:
                return False
            self.builder.resignations = tuple(sorted(known | found))[-20:]
        return True

    def _backend_loop(self) -> None:
        # Its own loop: an Admin poll can block for its whole timeout on a frozen broker, and
        # "paused" must not wait for that. A backend whose read costs more than a look at
        # /proc says how often to ask (STATES_POLL_S: the docker one, a call to the engine).
        owner = getattr(self.proc_states_fn or self.controller_states_fn, "__self__", None)
        interval = float(getattr(owner, "STATES_POLL_S", PROC_STATES_POLL_S))
        while not self._stop.is_set():
            if self._read_proc_states():
                self._publish()
            self._stop.wait(interval)

    def _admin_loop(self) -> None:
        reader = self._reader()
        expect_until = 0.0  # KRaft: a change the quorum poller saw is due in the metadata
        while not self._stop.is_set():
            before = self._kraft_topics()
            self._poll_admin(reader)
            if self._kraft_topics() is not before:
                expect_until = 0.0  # it came (or the mode changed): the usual cadence
            # Re-armed only after the poll finished: polls never overlap. Woken by the quorum
            # poller (KRaft has no watches), the metadata should change; an answer that did
            # not is from a broker that has not applied it yet (each broker applies the
            # controller's records at its own pace): asked again soon, for a while.
            wait = self.settings.refresh_s
            if time.monotonic() < expect_until:
                wait = min(wait, EXPECTED_REREAD_EVERY_S)
            if self._wake_admin.wait(wait) and self._kraft_topics() is not None:
                expect_until = time.monotonic() + EXPECTED_REREAD_FOR_S
            self._wake_admin.clear()

    def _kraft_topics(self) -> object:
        """The metadata's topics as last read on KRaft (an unchanged answer hands on the same
        object), None otherwise."""
        with self._lock:
            b = self.builder
            if b.mode is not ClusterMode.KRAFT or b.admin is None:
                return None
            return b.admin.topics

    def _groups_loop(self) -> None:
        reader = self._reader()
        # A reading in flight when a leader is paused stops waiting for that leader's answer
        # as soon as the backend says so (else every partition's figure waits out its 10 s).
        reader.groups.paused = lambda: self._paused
        try:
            while not self._stop.is_set():
                self._poll_groups(reader)
                self._wake_groups.wait(self.settings.group_refresh_s)
                self._wake_groups.clear()
                if self._zk is not None:
                    # Decoding 200 groups' offsets is Python work that takes the CPU a
                    # failover's burst of partition states needs to reach the screen: the
                    # poll waits for the burst (its figures then show a moment's more age).
                    self._zk.wait_quiet(GROUPS_HOLD_S)
        finally:
            reader.close()

    def _publish(self, publish: bool = True) -> ClusterSnapshot:
        # One rule for every source thread: build and diff under the state lock, and hand the
        # result on under the publishing lock, so a slow poll can never deliver its snapshot
        # after a newer one (each also carries `seq`, for consumers that queue them).
        with self._publishing:
            with self._lock:
                snap = self.builder.build(self.clock())
                # Until some source has delivered cluster data there is nothing to compare
                # with; diffing against the empty start would report every broker as "joined".
                before = self.snapshot if self.snapshot and _has_metadata(self.snapshot) else None
                events = tuple(diff(before, snap)) if _has_metadata(snap) else ()
                self.snapshot = snap
                self.events.extend(events)
            if publish and self._on_update is not None:
                try:
                    self._on_update(snap, events)
                except Exception:
                    log.exception("on_update failed")
        return snap


def _hints(
    snap: ClusterSnapshot | None,
) -> tuple[list[int] | None, dict[tuple[str, int], int], list[int]]:
    """Which brokers to ask for their groups, which leader serves each partition, and which
    registered brokers are not asked (paused, unreachable: the groups they coordinate must be
    kept, not dropped), from the latest snapshot (ZooKeeper's view is fresher than any
    client's metadata)."""
    if snap is None:
        return None, {}, []
    brokers = [b.id for b in snap.brokers if b.in_cluster and b.state is BrokerState.UP]
    unasked = [b.id for b in snap.brokers if b.registered and b.state is not BrokerState.UP]
    # Worked out again only for other partitions or other brokers down (10,000 partitions
    # every groups poll were a fifth of its thread's CPU).
    return (brokers or None), snap.serving_leaders(), unasked


def _short(state: AdminState) -> set[tuple[str, int]]:
    """The partitions with an ISR short of their replicas, or no leader (worked out again only
    for another metadata answer: an unchanged one hands on the same `topics`)."""
    topics = state.topics or {}
    if _SHORT and _SHORT[0][0] is topics:
        return _SHORT[0][1]
    short = {
        (t, p.partition)
        for t, parts in topics.items()
        for p in parts
        if len(p.isr) < len(p.replicas) or p.leader < 0
    }
    _SHORT[:] = [(topics, short)]
    return short


_SHORT: list[tuple[object, set[tuple[str, int]]]] = []  # _short's last answer, by its topics


def _read_elr(
    reader: AdminReader, state: AdminState
) -> dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...]]]:
    """ELR and last known ELR (KIP-966) of the partitions whose ISR is not full (a full ISR
    has none: the builder says so without asking); {} when nothing is short or unread."""
    short = sorted({t for t, _p in _short(state)})
    if not short:
        return {}
    try:
        return reader.read_elr(short)
    except Exception as exc:
        log.debug("ELR: %s", exc)
        return {}


def _is_refusal(exc: BaseException) -> bool:
    """The cluster refused kconsole's login or TLS handshake: `exc` or what caused it."""
    seen: BaseException | None = exc
    for _ in range(8):  # a chain of causes, never a loop
        if seen is None:
            return False
        if isinstance(seen, AuthenticationFailed):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if "KafkaError" in text and "str=" in text:  # KafkaError{code=..,str="..."} -> the str
        text = text.split('str="', 1)[-1].rstrip('"})')
    return text
