"""ZooKeeper as an event source: kazoo watches on the controller, broker registrations, topics
and partition states, so a change reaches the console when ZooKeeper says so, not on the next
poll.

ZooKeeper watches fire once; every read here re-arms the watch on what it read. A watch only
queues the path that changed; one worker thread re-reads just that node, updates a cache and
publishes an immutable ZkState. After a (re)connection — a new session has no watches — the
whole tree is read again, partition states in parallel.
"""

from __future__ import annotations

import itertools
import json
import logging
import queue
import re
import select
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError, SequentialThreadingHandler
from kazoo.retry import KazooRetry

from kconsole.cluster.security import translate as security

log = logging.getLogger(__name__)

_FULL = "<full>"
# While a burst of partition states is read, what has been read is published this often.
SLICE_S = 0.05
# State reads in flight at once: few enough that a state on screen that changes mid-burst is
# asked before the rest waiting, many enough to cost little. Each answer that lets another
# request go wakes kazoo's thread once more: re-reading 2,000 states took 371 ms with 512 in
# flight, 492 with 64, 288 with all (median of 15 alternating rounds; `bench/zk_reads.py
# --window N` compares a window with all in flight on a real cluster).
WINDOW = 512
# ZkWatcher.wait_quiet: no change read for this long ends a burst.
QUIET_S = 0.2
_STATE_RE = re.compile(r"^/brokers/topics/([^/]+)/partitions/(\d+)/state$")
_TOPIC_RE = re.compile(r"^/brokers/topics/([^/]+)$")
_BROKER_RE = re.compile(r"^/brokers/ids/(\d+)$")
# Topics marked for deletion (ZooKeeper mode deletes a topic in steps: marked here, then its
# partitions' leaders set to -1, then its nodes removed).
DELETE_TOPICS = "/admin/delete_topics"
# Read mid-burst; the deletion marks too, before the leaders the deletion then takes away.
_URGENT = frozenset({"/controller", "/controller_epoch", "/brokers/ids", DELETE_TOPICS})
_STATE_SEQ = itertools.count(1)  # ZkState.seq: unique in the process, whichever reader


class _SelectHandler(SequentialThreadingHandler):
    """kazoo's threading handler, waiting on its two sockets with one select() call.

    kazoo's own select sets up and closes an epoll set for every request it sends and every
    answer it reads (three system calls and a few objects each time): that was half of its
    CPU when a failover makes the console re-read ~2,000 partition states (2,014 pipelined
    reads: 136 -> 71 ms of CPU, 140 -> 95 ms wall; bench/zk_reads.py). select() cannot
    wait on a descriptor above FD_SETSIZE: then kazoo's own way is used."""

    def select(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return select.select(*args, **kwargs)
        except ValueError:  # "filedescriptor out of range in select()"
            return super().select(*args, **kwargs)


def zk_client(
    hosts: str, client_props: Mapping[str, Any] | None = None, **kwargs: Any
) -> KazooClient:
    """A kazoo client with the cheaper select above, authenticated and over TLS as the
    `zookeeper.*` properties among `client_props` say
    (kconsole.cluster.security.translate.kazoo_args)."""
    auth = security.kazoo_args(client_props) if client_props else {}
    return KazooClient(hosts=hosts, handler=_SelectHandler(), **auth, **kwargs)


@dataclass(frozen=True)
class ZkDelta:
    """What a ZkState re-read since the ZkState numbered `base` (the reader's one before):
    the partition states and the topics (their assignment JSON). Everything else of the two
    is the very same objects."""

    base: int
    states: frozenset[tuple[str, int]]
    topics: frozenset[str]


@dataclass(frozen=True)
class ZkState:
    """What ZooKeeper said about the cluster, as of `read_at`.

    `delta`, when set, says which topics and states were re-read since the reader's previous
    ZkState: a consumer that built from that one can build again from just those (a burst of
    2,000 partition states is shown in slices; each slice then costs its own states, not a
    pass over every partition). None: a full read, or nothing to compare with."""

    read_at: float
    controller: int | None = None
    controller_epoch: int | None = None
    controller_since: float | None = None  # creation time of /controller (epoch seconds)
    brokers: dict[int, dict[str, Any]] = field(default_factory=dict)  # /brokers/ids/<id> JSON
    topics: dict[str, dict[str, Any]] = field(default_factory=dict)  # /brokers/topics/<t> JSON
    states: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)  # partition state
    seq: int = 0  # unique in the process (0: made by hand)
    delta: ZkDelta | None = None
    deleting: frozenset[str] = frozenset()  # topics marked for deletion (/admin/delete_topics)


OnChange = Callable[[ZkState | None, str], None]  # (state, error); error "" when healthy


class ZkReader:
    """Reads the cluster tree through one kazoo client; with `watch`, re-arms watches."""

    def __init__(self, client: KazooClient, watch: Callable[[Any], None] | None = None):
        self.zk = client
        self.watch = watch
        self.controller: int | None = None
        self.controller_epoch: int | None = None
        # The zxid of the /controller_epoch read (its last change), -1 before any read.
        self._epoch_zxid = -1
        self.controller_since: float | None = None
        self.brokers: dict[int, dict[str, Any]] = {}
        self.topics: dict[str, dict[str, Any]] = {}
        self.states: dict[tuple[str, int], dict[str, Any]] = {}
        self.deleting: frozenset[str] = frozenset()
        # What was re-read since the last snapshot(), for its ZkDelta (None: everything).
        self._seq = 0
        self._re_read: tuple[set[tuple[str, int]], set[str]] | None = None

    def snapshot(self) -> ZkState:
        seq, re_read = next(_STATE_SEQ), self._re_read
        delta = None
        if re_read is not None and self._seq:
            delta = ZkDelta(self._seq, frozenset(re_read[0]), frozenset(re_read[1]))
        self._seq, self._re_read = seq, (set(), set())
        return ZkState(
            time.time(),
            self.controller,
            self.controller_epoch,
            self.controller_since,
            dict(self.brokers),
            dict(self.topics),
            dict(self.states),
            seq,
            delta,
            self.deleting,
        )

    def _state_read(self, tp: tuple[str, int]) -> None:
        if self._re_read is not None:
            self._re_read[0].add(tp)

    def _topic_read(self, name: str) -> None:
        if self._re_read is not None:
            self._re_read[1].add(name)

    # -- node reads ---------------------------------------------------------------------
    def _get(self, path: str) -> tuple[bytes, Any] | None:
        """Data and stat of `path`, watching it; None (watching for its creation) if absent."""
        try:
            return self.zk.get(path, watch=self.watch)
        except NoNodeError:
            if self.zk.exists(path, watch=self.watch) is not None:
                return self._get(path)  # created in between
            return None

    def _children(self, path: str) -> list[str]:
        try:
            return self.zk.get_children(path, watch=self.watch)
        except NoNodeError:
            self.zk.exists(path, watch=self.watch)
            return []

    def read_controller(self) -> None:
        got = self._get("/controller")
        if got is None:
            self.controller, self.controller_since = None, None
            return
        data, stat = got
        try:
            self.controller = int(json.loads(data)["brokerid"])
        except (ValueError, KeyError, TypeError):
            self.controller = None
        self.controller_since = stat.ctime / 1000.0
        # A controller registers /controller and bumps /controller_epoch in one transaction
        # (one zxid), but their watches fire and are read one by one: a /controller newer
        # than the epoch read means that epoch is the previous controller's. Read it now, so
        # the new controller is never shown with its predecessor's epoch.
        czxid = getattr(stat, "czxid", None)
        if isinstance(czxid, int) and czxid > self._epoch_zxid:
            self.read_controller_epoch()

    def read_controller_epoch(self) -> None:
        got = self._get("/controller_epoch")
        if got is not None:
            mzxid = getattr(got[1], "mzxid", None)
            self._epoch_zxid = mzxid if isinstance(mzxid, int) else self._epoch_zxid
        try:
            self.controller_epoch = int(got[0]) if got else None
        except ValueError:
            self.controller_epoch = None

    def read_broker_ids(self) -> None:
        ids = {int(i) for i in self._children("/brokers/ids") if i.isdigit()}
        for gone in set(self.brokers) - ids:
            del self.brokers[gone]
        for bid in ids - set(self.brokers):
            self.read_broker(bid)

    def read_broker(self, bid: int) -> None:
        got = self._get(f"/brokers/ids/{bid}")
        if got is None:
            self.brokers.pop(bid, None)
        else:
            self.brokers[bid] = _json(got[0])

    def read_deleting(self) -> None:
        """The topics marked for deletion."""
        self.deleting = frozenset(self._children(DELETE_TOPICS))

    def read_topics(self) -> None:
        names = set(self._children("/brokers/topics"))
        for gone in set(self.topics) - names:
            self._drop_topic(gone)
        new = sorted(names - set(self.topics))
        for name in new:
            self.read_topic(name, states=False)
        self._read_states_parallel([(t, p) for t in new for p in self._partitions_of(t)])

    def read_topic(self, name: str, states: bool = True) -> None:
        got = self._get(f"/brokers/topics/{name}")
        if got is None:
            self._drop_topic(name)
            return
        before = set(self._partitions_of(name))
        self.topics[name] = _json(got[0])
        self._topic_read(name)
        now = set(self._partitions_of(name))
        for p in before - now:
            self.states.pop((name, p), None)
            self._state_read((name, p))
        if states:
            self._read_states_parallel([(name, p) for p in sorted(now - before)])

    def read_state(self, topic: str, partition: int) -> None:
        got = self._get(f"/brokers/topics/{topic}/partitions/{partition}/state")
        if got is None:
            self.states.pop((topic, partition), None)
        else:
            self.states[(topic, partition)] = _json(got[0])
        self._state_read((topic, partition))

    def _read_states_parallel(
        self,
        tps: list[tuple[str, int]],
        on_slice: Callable[[], None] | None = None,
        more: Callable[[], list[tuple[str, int]]] | None = None,
        first: Callable[[tuple[str, int]], bool] | None = None,
    ) -> None:
        """Read many partition states at once (pipelined requests, WINDOW in flight).

        With `on_slice`, it is called whenever SLICE_S has passed since the read began or
        since its last call and something was read since, while answers are still to come:
        a failover re-reads ~2,000 states, and the first of them are shown then, not when
        the last one is in. With `more`, it is asked after every answer for states that
        changed since, and their reads join the ones waiting (rather than waiting for this
        burst to end). States for which `first` says True (the rows on screen) are asked
        before the others waiting, also when they join mid-burst."""
        pending: deque[tuple[tuple[str, int], Any]] = deque()
        waiting: deque[tuple[str, int]] = deque()

        def add(batch: list[tuple[str, int]]) -> None:
            if first is None:
                waiting.extend(batch)
                return
            urgent = [tp for tp in batch if first(tp)]
            waiting.extendleft(reversed(urgent))
            waiting.extend(tp for tp in batch if not first(tp))

        def ask() -> None:
            while waiting and len(pending) < WINDOW:
                tp = waiting.popleft()
                path = f"/brokers/topics/{tp[0]}/partitions/{tp[1]}/state"
                pending.append((tp, self.zk.get_async(path, watch=self.watch)))

        add(tps)
        ask()
        last = time.monotonic()
        shown = True  # nothing read since the last slice
        while pending:
            tp, fut = pending.popleft()
            if on_slice is not None and not shown:
                # What has been read is shown SLICE_S after the last slice at the latest,
                # also while ZooKeeper is slow to send the next answer (a busy server, a
                # pause in the controller's writes): wait for it only until then.
                left = last + SLICE_S - time.monotonic()
                if left > 0:
                    fut.wait(left)  # returns as soon as the answer is in
                if time.monotonic() - last >= SLICE_S:
                    on_slice()
                    last, shown = time.monotonic(), True
            try:
                data, _stat = fut.get(timeout=10)
                self.states[tp] = _json(data)
                self._state_read(tp)
            except NoNodeError:
                self.read_state(*tp)  # sets an exists-watch for its creation
            shown = False
            if more is not None:
                add(more())
            ask()

    def _partitions_of(self, topic: str) -> list[int]:
        parts = self.topics.get(topic, {}).get("partitions", {})
        return sorted(int(p) for p in parts)

    def _drop_topic(self, name: str) -> None:
        self.topics.pop(name, None)
        self._topic_read(name)
        for tp in [tp for tp in self.states if tp[0] == name]:
            del self.states[tp]
            self._state_read(tp)

    def read_all(self) -> None:
        """Read (and watch) the whole tree."""
        self._re_read = None  # the next snapshot() says nothing about what changed
        self.read_controller_epoch()
        self.read_controller()
        self.brokers.clear()
        self.read_broker_ids()
        self.read_deleting()  # before the topics: a topic being deleted is known as such
        self.topics.clear()
        self.states.clear()
        self.read_topics()

    def read_paths(
        self,
        paths: list[str],
        on_slice: Callable[[], None] | None = None,
        more: Callable[[], list[tuple[str, int]]] | None = None,
        first: Callable[[tuple[str, int]], bool] | None = None,
    ) -> None:
        """Re-read what watches on `paths` said has changed; partition states all at once
        (a leader moving off a broker changes hundreds: one round trip, not hundreds), in
        the order given, with `on_slice`, `more` and `first` as in _read_states_parallel."""
        states = []
        for path in paths:
            if m := _STATE_RE.match(path):
                states.append((m.group(1), int(m.group(2))))
            else:
                self.read_path(path)
        self._read_states_parallel(states, on_slice, more, first)

    def read_path(self, path: str) -> None:
        """Re-read what a watch on `path` said has changed."""
        if path == "/controller":
            self.read_controller()
        elif path == "/controller_epoch":
            self.read_controller_epoch()
        elif path == "/brokers/ids":
            self.read_broker_ids()
        elif path == "/brokers/topics":
            self.read_topics()
        elif path == DELETE_TOPICS:
            self.read_deleting()
        elif m := _BROKER_RE.match(path):
            self.read_broker(int(m.group(1)))
        elif m := _STATE_RE.match(path):
            self.read_state(m.group(1), int(m.group(2)))
        elif m := _TOPIC_RE.match(path):
            self.read_topic(m.group(1))


def _json(data: bytes) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except (ValueError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def read_once(
    hosts: str, timeout: float = 5.0, client_props: Mapping[str, Any] | None = None
) -> ZkState:
    """One read of the whole tree without watches (for `kconsole describe`)."""
    client = zk_client(hosts, client_props, timeout=timeout, connection_retry=None)
    try:
        client.start(timeout=timeout)
        reader = ZkReader(client)
        reader.read_all()
        return reader.snapshot()
    finally:
        client.stop()
        client.close()


class ZkWatcher:
    """Keeps a live ZkState from watches and hands every change to `on_change`."""

    def __init__(
        self,
        hosts: str,
        on_change: OnChange,
        *,
        safety_reload_s: float = 30.0,
        client_props: Mapping[str, Any] | None = None,
    ):
        self.hosts = hosts
        self.client_props = dict(client_props or {})
        self.on_change = on_change
        self.safety_reload_s = safety_reload_s
        self._queue: queue.Queue[str] = queue.Queue()
        self._held: list[str] = []  # taken from the queue, not read yet (worker thread only)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._client: KazooClient | None = None
        self._reader: ZkReader | None = None
        self._connected = threading.Event()
        # The partitions on screen: in a burst their states are read first (set from any
        # thread: one reference, replaced whole).
        self._preferred: frozenset[tuple[str, int]] = frozenset()
        self._idle = threading.Event()  # clear while a batch of changes is read
        self._idle.set()
        self._read_ended = 0.0  # time.monotonic() when the last batch was read

    def prefer(self, partitions: frozenset[tuple[str, int]]) -> None:
        """Read these partitions' states before the others when many change at once."""
        self._preferred = partitions

    def _first(self, tp: tuple[str, int]) -> bool:
        return tp in self._preferred

    def start(self) -> None:
        self._client = zk_client(
            self.hosts,
            self.client_props,
            timeout=10.0,  # session: survives a busy machine; the observer has no ephemeral nodes
            connection_retry=KazooRetry(max_tries=-1, delay=0.2, max_delay=2.0),
            command_retry=KazooRetry(max_tries=2, delay=0.1, max_delay=1.0),
        )
        self._reader = ZkReader(self._client, watch=self._on_watch)
        self._client.add_listener(self._on_state)
        self._thread = threading.Thread(target=self._run, name="kconsole-zk", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._idle.set()
        self._queue.put(_FULL)
        if self._client is not None:
            try:
                self._client.stop()
                self._client.close()
            except Exception:  # closing a never-connected client may complain
                log.debug("closing kazoo client", exc_info=True)
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def connected(self) -> bool:
        """True while the ZooKeeper session is up (its watches then keep the data current)."""
        return self._client is not None and bool(self._client.connected)

    def reload(self) -> None:
        """Ask for a full re-read (e.g. after the user pressed refresh)."""
        self._queue.put(_FULL)

    # -- kazoo callbacks (kazoo's threads: only queue work) --------------------------------
    def _on_watch(self, event: Any) -> None:
        # Session-level events carry no path: then only a full re-read is safe.
        self._queue.put(event.path or _FULL)

    def _on_state(self, state: str) -> None:
        if state == KazooState.CONNECTED:
            self._connected.set()
            self._queue.put(_FULL)
        else:
            self._connected.clear()
            self._queue.put("<lost>" if state == KazooState.LOST else "<suspended>")

    # -- worker ---------------------------------------------------------------------------
    def _run(self) -> None:
        assert self._client is not None and self._reader is not None
        # Started once: kazoo keeps reconnecting by itself (connection_retry without limit),
        # and a new session announces itself as CONNECTED, which queues a full re-read.
        self._client.start_async()
        self._connected.wait(3.0)  # a normal connect is not worth a "stale" flash
        while not self._stop.is_set():
            if not self._client.connected:
                self.on_change(None, f"ZooKeeper {self.hosts} unreachable, retrying")
                self._connected.wait(1.0)
                continue
            if self._held:  # what came in while the last burst of states was read
                first = self._held.pop(0)
            else:
                try:
                    first = self._queue.get(timeout=self.safety_reload_s)
                except queue.Empty:
                    first = _FULL  # a periodic full read, in case a watch was ever missed
            batch = {first: None}  # a dict: the paths in the order their watches fired
            batch.update(dict.fromkeys(self._held))
            self._held.clear()
            while True:  # coalesce a burst of watches into one read
                try:
                    batch[self._queue.get_nowait()] = None
                except queue.Empty:
                    break
            if self._stop.is_set():
                break
            if not self._client.connected:
                continue
            self._idle.clear()
            try:
                if any(not p.startswith("/") for p in batch):
                    self._reader.read_all()
                else:
                    # The controller and the brokers first, published at once: a burst of
                    # partition states must not hold back "who is the controller now".
                    # Then the partition states, those on screen first, then oldest change
                    # first, shown as they come in (every SLICE_S) rather than when the
                    # whole burst has been read.
                    states = [p for p in batch if _STATE_RE.match(p)]
                    others = sorted(set(batch) - set(states))
                    self._reader.read_paths(others)
                    if others and states:
                        self.on_change(self._reader.snapshot(), "")
                    self._reader.read_paths(
                        states,
                        on_slice=self._publish_so_far,
                        more=self._more_states,
                        first=self._first,
                    )
                self.on_change(self._reader.snapshot(), "")
            except (KazooException, KazooTimeoutError, OSError) as exc:
                self.on_change(None, f"ZooKeeper {self.hosts}: {_why(exc)}")
                self._queue.put(_FULL)
                self._stop.wait(0.5)
            except Exception as exc:  # never let the watcher die: the console relies on it
                log.exception("ZooKeeper watcher")
                self.on_change(None, f"ZooKeeper {self.hosts}: internal error {_why(exc)}")
                self._queue.put(_FULL)
                self._stop.wait(1.0)
            finally:
                self._read_ended = time.monotonic()
                self._idle.set()
        self._idle.set()

    def wait_quiet(self, timeout: float) -> None:
        """Return once no change has been read for QUIET_S (a burst of partition states is
        over), or after `timeout`, or when stopped. For work that can wait a moment and
        would take the CPU the burst needs (the consumer-group poll)."""
        deadline = time.monotonic() + timeout
        while not self._stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0 or not self._idle.wait(left):
                return
            since = time.monotonic() - self._read_ended
            if since >= QUIET_S:
                return
            self._stop.wait(min(QUIET_S - since, left))

    def _more_states(self) -> list[tuple[str, int]]:
        """Partition states whose watches fired since the burst being read began, to be read
        with it. The controller or a broker that changes meanwhile is read at once and
        published: a burst of 2,000 states must not hold back "who is the controller now".
        The first other path (a topic, a reconnection) and all after it are held for the
        next turn of the loop, where they come first."""
        assert self._reader is not None
        out: list[tuple[str, int]] = []
        urgent: dict[str, None] = {}
        while not self._held:
            try:
                path = self._queue.get_nowait()
            except queue.Empty:
                break
            if m := _STATE_RE.match(path):
                out.append((m.group(1), int(m.group(2))))
            elif path in _URGENT or _BROKER_RE.match(path):
                urgent[path] = None
            else:
                self._held.append(path)
        if urgent:
            for path in urgent:
                self._reader.read_path(path)
            self.on_change(self._reader.snapshot(), "")
        return out

    def _publish_so_far(self) -> None:
        assert self._reader is not None
        self.on_change(self._reader.snapshot(), "")


def _why(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
