"""The console in a real terminal (tmux), on a real local cluster: start-up to the first complete
frame, idle CPU, and change -> screen for the controller, a broker, partition leaders and ISRs.

    .venv/bin/python bench/terminal.py [--runs 5] [--idle 30] [--json out.json]
                                       [--topics T --partitions P --groups G]

Starts its own throw-away 3-broker cluster on free ports in a temporary dir
(bench/_cluster.py) and always takes it down again; needs tmux. With `--topics`, T topics x P
partitions (RF 3, named topic-00.. so that they sort after test-topic, whose rows stay at the
top of the partitions pane) are created first, and waited for (every partition led by its
preferred replica with a full ISR, in ZooKeeper and in the metadata); with `--groups`, G
consumer groups commit offsets on them (every 10th one left with lag). The console runs as a
user runs it (`kconsole -b … -z … --backend none` in a 160x48 tmux window, on a tmux server of
its own); the screen is read with `capture-pane` through a tmux control-mode client (no process
per read: about 0.1 ms a read) every 5 ms while a change is awaited.

  - start-up: from launching the command to the screen showing the cluster id, the controller,
    every test-topic partition's leader and the partition count of the whole cluster; with
    groups, also to the groups pane counting all of them (`startup_groups_s`);
  - idle: the console's process CPU (user + sys over wall, 100 % = one core) for `--idle`
    seconds (three windows) with nothing changing, from 5 s after the first complete frame;
  - controller change -> screen: the controller is stopped gracefully; from the new /controller
    znode's creation time to the controller pane showing the new broker;
  - leader change -> screen: a broker that is not the controller and leads some test-topic
    partitions is stopped gracefully; for each partition it led, from the mtime of the
    partition-state znode version that first names another leader to that partition's row
    showing it (one figure per row);
  - ISR shrink -> screen: in the same runs, for each test-topic partition the stopped broker
    only followed, from the mtime of the state version that first drops it from the ISR to the
    row's ISR cell without it;
  - broker down -> screen (controller and leader runs): from the deletion of the stopped
    broker's /brokers/ids/N znode to its row in the brokers pane saying "down". No znode keeps
    a deletion time, so this is ZooKeeper's time of the closeSession transaction that deleted
    it, read from ZooKeeper's transaction log (every transaction header carries the server's
    clock: the same clock as ctime and mtime); where that is not found, from the moment the
    stop call returned (the broker process had exited; `info.runs` names the change "broker
    down (from the stop's return)" then).

The ZooKeeper server runs on this machine: its clock (ctime, mtime, transaction times) is this
machine's wall clock, compared with time.time() when the screen showed the change. The state
znodes are followed with kazoo data watches from before each stop; a version the watch skipped
(two writes between a notification and its re-read) would make the mtime a later one, and is
counted in `info.skipped_versions`. `info.runs` lists every stop: each change's ZooKeeper
and screen times in ms after the stop call. Between runs the stopped broker is started again,
every replica waited back into its ISR, preferred leaders elected, and the screen waited for to
show that (all with deadlines).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import queue
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import _common
import zk_reads
from _cluster import temporary_cluster
from _common import elect_preferred
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import ZnodeStat

from kconsole.cluster.local.cluster import LocalCluster

SOCKET = "kc-bench-terminal"  # a tmux server of our own (tmux -L)
SESSION = "kc-bench-terminal"
SIZE = ("160", "48")
TEST_TOPIC = "test-topic"
WARMUP_S = 5.0  # after the first complete frame, before idle CPU is measured
POLL_S = 0.005
BUSY_S = 2.0  # CPU sampled for this long after each stop
NOT_UTF8: list[str] = []  # lines tmux sent that were not UTF-8 (reported in info)


def say(msg: str) -> None:
    print(f"[terminal] {msg}", file=sys.stderr, flush=True)


def tmux(*args: str) -> str:
    return subprocess.run(
        ["tmux", "-L", SOCKET, *args], capture_output=True, text=True, check=True
    ).stdout


# -- the console in tmux ------------------------------------------------------------------------
class Console:
    """kconsole in a detached 160x48 tmux session; the pane stays when the console exits, to
    show why. The screen is read through a control-mode client (`tmux -C attach`)."""

    def __init__(self, cmd: list[str], state_dir: Path) -> None:
        self.started = time.monotonic()
        # remain-on-exit in the same command queue as the spawn: a crash at once still shows.
        out = tmux(
            "new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", SESSION, "-x", SIZE[0],
            "-y", SIZE[1], "-e", f"KCONSOLE_STATE_DIR={state_dir}", *cmd,
            ";", "set-option", "-t", SESSION, "remain-on-exit", "on",
        )  # fmt: skip
        self.proc = psutil.Process(int(out.split()[0]))
        self.ctl = subprocess.Popen(
            ["tmux", "-L", SOCKET, "-C", "attach", "-t", SESSION],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._send("refresh-client -f no-output")  # no %output stream: replies only
        self._send("display-message -p kc-bench-sync")
        while self._block() != ["kc-bench-sync"]:  # the attach's and refresh's replies
            pass

    def _read(self) -> None:
        assert self.ctl.stdout is not None
        try:
            # Bytes, decoded leniently: now and then a capture holds a byte that is not UTF-8.
            for raw in self.ctl.stdout:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                if "\ufffd" in line:
                    NOT_UTF8.append(repr(raw)[:300])
                self.lines.put(line)
        finally:
            self.lines.put(None)

    def _send(self, command: str) -> None:
        assert self.ctl.stdin is not None
        self.ctl.stdin.write(command.encode() + b"\n")
        self.ctl.stdin.flush()

    def _block(self) -> list[str]:
        """The next command reply (between %begin and %end); notifications are skipped."""
        body: list[str] | None = None
        while True:
            try:
                line = self.lines.get(timeout=30)
            except queue.Empty:
                raise RuntimeError("tmux did not answer within 30 s") from None
            if line is None or line.startswith("%exit"):
                raise RuntimeError("the tmux control client exited")
            if body is None:
                if line.startswith("%begin"):
                    body = []
            elif line.startswith(("%end", "%error")):
                return body
            else:
                body.append(line)

    def screen(self) -> str:
        self._send(f"capture-pane -p -t {SESSION}")
        return "\n".join(self._block())

    def frame(self) -> Frame:
        return Frame.parse(self.screen())

    def alive(self) -> bool:
        try:
            return self.proc.is_running() and self.proc.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    def wait(
        self, pred: Callable[[Frame], bool], deadline_s: float, what: str, every: float = 0.01
    ) -> float:
        """time.monotonic() when `pred(frame)` first held; raises at the deadline (or when the
        console exits, with its last screen)."""
        end = time.monotonic() + deadline_s
        while True:
            f = self.frame()
            if pred(f):
                return time.monotonic()
            if not self.alive():
                raise RuntimeError(f"the console exited while waiting for {what}:\n{f.text}")
            if time.monotonic() > end:
                raise TimeoutError(f"{deadline_s:.0f} s without {what} on screen:\n{f.text}")
            time.sleep(every)

    def watch(self, checks: dict[str, Callable[[Frame], bool]], deadline_s: float) -> Seen:
        """Read the screen every POLL_S until every check has held once: the wall time
        (time.time(), right after the read) at which each first held."""
        seen: dict[str, float] = {}
        end = time.monotonic() + deadline_s
        last = Frame.parse("")
        while len(seen) < len(checks) and time.monotonic() < end:
            last = self.frame()
            now = time.time()
            for name, check in checks.items():
                if name not in seen and check(last):
                    seen[name] = now
            if not self.alive():
                break
            time.sleep(POLL_S)
        return Seen(seen, [n for n in checks if n not in seen], last.text)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", SOCKET, "kill-session", "-t", SESSION], capture_output=True)
        try:
            self.proc.wait(timeout=15)
        except psutil.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        except psutil.NoSuchProcess:
            pass
        try:
            self.ctl.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.ctl.kill()
            self.ctl.wait()


@dataclass
class Seen:
    at: dict[str, float]
    missing: list[str]
    text: str


# -- what the screen shows ----------------------------------------------------------------------
ROW_RE = re.compile(rf"^│ {re.escape(TEST_TOPIC)}\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)")
BROKER_RE = re.compile(r"^│ (\d+)(?: ★)?\s+\S+\s+\S+\s+(up|down|unreachable|paused)\s")


@dataclass
class Row:
    leader: str
    replicas: str
    isr: str

    def isr_ids(self) -> set[int]:
        return {int(x) for x in re.findall(r"\d+", self.isr)}


@dataclass
class Frame:
    text: str
    cluster: str | None = None  # the cluster id in the header ("?" until the Admin API answers)
    controller: int | None = None
    brokers: dict[int, str] = field(default_factory=dict)  # id -> state
    rows: dict[int, Row] = field(default_factory=dict)  # test-topic partition -> row
    partitions_total: int | None = None
    groups: int | None = None

    @classmethod
    def parse(cls, text: str) -> Frame:
        f = cls(text)
        lines = text.splitlines()
        if m := re.search(r" cluster (\S+) ", lines[0] if lines else ""):
            f.cluster = m.group(1)
        # Only the top row (brokers, controller): the events pane may quote the same words.
        m = re.search(r"★ broker (\d+)", "\n".join(lines[:12]))
        f.controller = int(m.group(1)) if m else None
        for line in lines:
            if b := BROKER_RE.match(line):
                f.brokers[int(b.group(1))] = b.group(2)
            elif r := ROW_RE.match(line):
                f.rows[int(r.group(1))] = Row(r.group(2), r.group(3), r.group(4))
        if m := re.search(r"Partitions \d+/(\d+)", text):
            f.partitions_total = int(m.group(1))
        if m := re.search(r"Consumer groups (\d+)", text):
            f.groups = int(m.group(1))
        return f


def complete(f: Frame, partitions: int, test_partitions: int) -> bool:
    """Cluster id, a controller, every test-topic row with a leader, every partition counted."""
    return (
        f.cluster not in (None, "?")
        and f.controller is not None
        and len(f.rows) == test_partitions
        and all(r.leader.isdigit() for r in f.rows.values())
        and f.partitions_total == partitions
    )


# -- ZooKeeper ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class PState:
    replicas: tuple[int, ...]
    leader: int
    isr: tuple[int, ...]

    @property
    def settled(self) -> bool:
        """Led by its preferred replica, every replica in sync."""
        return self.leader == self.replicas[0] and set(self.isr) == set(self.replicas)


def state_path(topic: str, p: int) -> str:
    return f"/brokers/topics/{topic}/partitions/{p}/state"


def zk_partitions(zk: KazooClient) -> dict[tuple[str, int], PState]:
    """Every partition's replicas and state, read pipelined."""
    topics = zk.get_children("/brokers/topics")
    assigned = {t: zk.get_async(f"/brokers/topics/{t}") for t in topics}
    replicas: dict[tuple[str, int], tuple[int, ...]] = {}
    for t, res in assigned.items():
        try:
            data, _ = res.get(timeout=30)
        except NoNodeError:
            continue
        for p, rs in json.loads(data).get("partitions", {}).items():
            replicas[(t, int(p))] = tuple(rs)
    states = {k: zk.get_async(state_path(*k)) for k in replicas}
    out: dict[tuple[str, int], PState] = {}
    for k, res in states.items():
        try:
            data, _ = res.get(timeout=30)
        except NoNodeError:
            continue  # a partition being created
        st = json.loads(data)
        out[k] = PState(replicas[k], st["leader"], tuple(st["isr"]))
    return out


def wait_zk_settled(zk: KazooClient, count: int, timeout: float, elect: str = "") -> float:
    """Until ZooKeeper has `count` partitions, each led by its preferred replica with a full
    ISR. With `elect` (a bootstrap), a preferred-leader election is asked for once every ISR is
    full. Seconds taken."""
    t0 = time.monotonic()
    last, elected = "", False
    while True:
        parts = zk_partitions(zk)
        full = sum(1 for s in parts.values() if set(s.isr) == set(s.replicas))
        preferred = sum(1 for s in parts.values() if s.settled)
        if len(parts) >= count and preferred == len(parts):
            return time.monotonic() - t0
        if elect and not elected and len(parts) >= count and full == len(parts):
            elect_preferred(elect)
            elected = True
        msg = f"{len(parts)}/{count} partitions, {full} with full ISR, {preferred} preferred"
        if msg != last:
            say(f"  zk: {msg}")
            last = msg
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"ZooKeeper not settled after {timeout:.0f} s: {msg}")
        time.sleep(0.2)


@dataclass
class Version:
    version: int
    mtime_ms: int
    leader: int
    isr: tuple[int, ...]


class StateWatch:
    """Every version of some partition-state znodes seen from now on (a kazoo data watch each)."""

    def __init__(self, zk: KazooClient, topic: str, parts: list[int]) -> None:
        self.seen: dict[int, list[Version]] = {p: [] for p in parts}
        self.active = True
        self._lock = threading.Lock()
        for p in parts:
            zk.DataWatch(state_path(topic, p), self._callback(p))

    def _callback(self, p: int) -> Callable[[bytes | None, ZnodeStat | None], bool]:
        def on_data(data: bytes | None, stat: ZnodeStat | None) -> bool:
            if not self.active:
                return False
            if data is not None and stat is not None:
                st = json.loads(data)
                v = Version(stat.version, stat.mtime, st["leader"], tuple(st["isr"]))
                with self._lock:
                    vs = self.seen[p]
                    if not vs or vs[-1].version != v.version:
                        vs.append(v)
            return True

        return on_data

    def first(self, p: int, pred: Callable[[Version], bool]) -> tuple[float, bool] | None:
        """(mtime in s, whether a version before it was skipped) of the first version after
        the one current when the watch began that meets `pred`."""
        with self._lock:
            vs = list(self.seen[p])
        for prev, v in itertools.pairwise(vs):
            if pred(v):
                return v.mtime_ms / 1000, v.version != prev.version + 1
        return None


def zk_data_dir(cluster: LocalCluster) -> Path:
    cfg = (cluster.proc_dir("zookeeper") / "zoo.cfg").read_text()
    m = re.search(r"^dataDir=(.+)$", cfg, re.M)
    return Path(m.group(1).strip() if m else cluster.proc_dir("zookeeper") / "data")


CLOSE_SESSION = -11  # ZooKeeper's OpCode.closeSession


def session_closed_at(cluster: LocalCluster, session: int) -> float | None:
    """ZooKeeper's time (s) of the closeSession transaction of `session`: the moment its
    ephemeral znodes were deleted. From the transaction log: a file header (magic ZKLG, version,
    dbid), then records of crc (8 bytes), length (4), the transaction (its header: clientId 8,
    cxid 4, zxid 8, time 8, type 4, big-endian), and an end-of-record byte; zeros after the
    last record (preallocated space)."""
    logs = sorted(
        (zk_data_dir(cluster) / "version-2").glob("log.*"),
        key=lambda p: int(p.name.split(".", 1)[1], 16),
        reverse=True,
    )
    for path in logs:
        data = path.read_bytes()
        if data[:4] != b"ZKLG":
            continue
        found = None
        i = 16
        while i + 12 <= len(data):
            length = int.from_bytes(data[i + 8 : i + 12], "big", signed=True)
            if length < 32 or i + 12 + length > len(data):
                break
            head = data[i + 12 : i + 44]
            client = int.from_bytes(head[0:8], "big", signed=True)
            when = int.from_bytes(head[20:28], "big", signed=True)
            kind = int.from_bytes(head[28:32], "big", signed=True)
            if kind == CLOSE_SESSION and client == session:
                found = when / 1000
            i += 12 + length + 1
        if found is not None:
            return found
    return None


# -- setting up a big cluster ---------------------------------------------------------------------
def create_topics(bootstrap: str, topics: int, partitions: int) -> list[str]:
    # topic-NN sorts after test-topic, whose rows stay at the top of the partitions pane.
    names = [f"topic-{i:02d}" for i in range(topics)]
    return _common.create_topics(bootstrap, names, partitions, 3, say)


def wait_metadata(bootstrap: str, count: int, timeout: float) -> None:
    """Until the metadata has `count` partitions, all led."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    deadline = time.monotonic() + timeout
    while True:
        try:
            md = admin.list_topics(timeout=10)
            parts = [p for t in md.topics.values() for p in t.partitions.values()]
            if len(parts) >= count and all(p.leader >= 0 for p in parts):
                return
        except KafkaException:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"the metadata has not all {count} partitions led")
        time.sleep(0.2)


RECORDS = 20  # per partition that groups commit on
GROUP_PARTITIONS = 5  # partitions each group commits offsets for


def make_groups(bootstrap: str, topics: list[str], groups: int, partitions: int) -> int:
    """`groups` consumer groups, each with committed offsets on GROUP_PARTITIONS partitions of
    one topic; every 10th one is half-way (lag RECORDS / 2 per partition). Returns how many
    groups lag."""
    parts = min(GROUP_PARTITIONS, partitions)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 0})
    for t in topics:
        for p in range(parts):
            for n in range(RECORDS):
                producer.produce(t, value=b"x" * 100, key=str(n).encode(), partition=p)
        producer.poll(0)
    if producer.flush(60) != 0:
        raise RuntimeError("records not acknowledged within 60 s")

    def commit(i: int) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"bench-group-{i:03d}",
                "enable.auto.commit": False,
                "log_level": 0,
            }
        )
        offset = RECORDS // 2 if i % 10 == 9 else RECORDS
        tps = [TopicPartition(topics[i % len(topics)], p, offset) for p in range(parts)]
        deadline = time.monotonic() + 60
        try:
            while True:  # the first commits may find no coordinator yet (__consumer_offsets)
                try:
                    consumer.commit(offsets=tps, asynchronous=False)
                    return
                except KafkaException:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
        finally:
            consumer.close()

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(commit, range(groups)))
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    listed = admin.list_consumer_groups().result(timeout=30)
    found = sum(1 for g in listed.valid if g.group_id.startswith("bench-group-"))
    if found != groups:
        raise RuntimeError(f"{found} of {groups} consumer groups listed")
    return sum(1 for i in range(groups) if i % 10 == 9)


# -- the measurements ---------------------------------------------------------------------------
@dataclass
class Bench:
    cluster: LocalCluster
    zk: KazooClient
    console: Console
    partitions: int  # in the whole cluster
    out: dict[str, list[float]]
    info: dict[str, Any]
    runs: list[dict[str, Any]] = field(default_factory=list)  # per stop, for the report
    stop_errors: list[BaseException] = field(default_factory=list)
    skipped: int = 0
    nice_brokers: int = 0

    @property
    def bootstrap(self) -> str:
        return self.cluster.spec.bootstrap

    def test_topic(self) -> dict[int, PState]:
        return {p: s for (t, p), s in zk_partitions(self.zk).items() if t == TEST_TOPIC}

    def stop(self, victim: int) -> tuple[threading.Thread, float, list[float]]:
        """Stop `victim` gracefully on a thread (the screen is read meanwhile): the thread, the
        wall time of the stop, and a list that gets the wall time at which the call returned
        (the process had exited)."""
        returned: list[float] = []
        errors: list[BaseException] = []
        self.stop_errors = errors

        def run() -> None:
            try:
                self.cluster.stop_broker(victim)
            except BaseException as exc:  # reported by the caller
                errors.append(exc)
            returned.append(time.time())

        th = threading.Thread(target=run, daemon=True)
        threading.Thread(target=self.sample_cpu, daemon=True).start()
        t0 = time.time()
        th.start()
        return th, t0, returned

    def sample_cpu(self) -> None:
        """How busy the machine is in the first BUSY_S after a stop: the CPU of the cluster's
        own processes (ZooKeeper and the brokers, found by the marker this cluster's command
        lines carry) and of the console, in % of one core. On a machine with few cores the
        cluster's failover work competes with the console for them."""
        marker = f"@{self.cluster.state_dir}"
        cluster = [
            p
            for p in psutil.process_iter(["cmdline"])
            if any("kconsole.process=" in a and a.endswith(marker) for a in p.info["cmdline"] or ())
        ]

        procs = [*cluster, self.console.proc]
        first: dict[int, float] = {}
        last: dict[int, float] = {}  # the stopped broker exits meanwhile: its last reading
        w0 = time.monotonic()
        while True:
            for proc in procs:
                with contextlib.suppress(psutil.Error):
                    t = proc.cpu_times()
                    last[proc.pid] = t.user + t.system
                    first.setdefault(proc.pid, last[proc.pid])
            w1 = time.monotonic()
            if w1 - w0 >= BUSY_S:
                break
            time.sleep(0.05)

        def used(group: list[psutil.Process]) -> float:
            return sum(last[p.pid] - first[p.pid] for p in group if p.pid in first)

        self.out["failover_cluster_cpu_pct"].append(100 * used(cluster) / (w1 - w0))
        self.out["failover_console_cpu_pct"].append(100 * used([self.console.proc]) / (w1 - w0))

    def check_stop(self, th: threading.Thread) -> None:
        th.join(timeout=120)
        if th.is_alive() or self.stop_errors:
            raise RuntimeError(f"stopping the broker failed: {self.stop_errors or 'hangs'}")

    def session_of(self, broker: int) -> int:
        stat = self.zk.exists(f"/brokers/ids/{broker}")
        if stat is None:
            raise RuntimeError(f"broker {broker} is not registered")
        return stat.ephemeralOwner

    def record(
        self, run: dict[str, Any], key: str, what: str, zk_at: float, screen_at: float
    ) -> None:
        """One change -> screen figure; the run keeps both times, in ms after the stop."""
        self.out[key].append((screen_at - zk_at) * 1000)
        t0 = run["stop_at"]
        changes = run.setdefault("changes", [])
        changes.append([what, round((zk_at - t0) * 1000), round((screen_at - t0) * 1000)])

    def broker_down(self, run: dict[str, Any], seen: Seen, session: int) -> None:
        at = seen.at.get("down")
        if at is None:
            return
        what = "broker down"
        deleted = session_closed_at(self.cluster, session)
        if deleted is None:  # not in the log: from the process's exit instead
            deleted, what = run["returned_at"], "broker down (from the stop's return)"
        self.record(run, "broker_down_ms", what, deleted, at)

    def finish(self, run: dict[str, Any], seen: Seen) -> None:
        t0 = run.pop("stop_at")
        run["returned_ms"] = round((run.pop("returned_at") - t0) * 1000)
        self.runs.append(run)
        say(f"  {run}")
        if seen.missing:
            raise RuntimeError(f"{run['run']}: never on screen: {seen.missing}\n{seen.text}")

    def restore(self, victim: int) -> None:
        """Start `victim` again; every ISR full, preferred leaders; the screen showing it."""
        t0 = time.monotonic()
        self.cluster.start_broker(victim, timeout=120)
        renice_brokers(self.cluster, self.nice_brokers)  # a new process: at nice 0 until now
        wait_zk_settled(self.zk, self.partitions, 600, elect=self.bootstrap)
        base = self.test_topic()
        brokers = set(self.cluster.spec.broker_ids)

        def shown(f: Frame) -> bool:
            return (
                f.controller is not None
                and all(f.brokers.get(b) == "up" for b in brokers)
                and len(f.rows) == len(base)
                and all(
                    f.rows[p].leader == str(s.leader) and f.rows[p].isr_ids() == set(s.replicas)
                    for p, s in base.items()
                    if p in f.rows
                )
            )

        self.console.wait(shown, 120, "the restarted broker and preferred leaders")
        say(f"  broker {victim} back, all settled, in {time.monotonic() - t0:.1f} s")

    def controller_run(self, n: int) -> None:
        f = self.console.frame()
        was = f.controller
        if was is None:
            raise RuntimeError("no controller on screen:\n" + f.text)
        session = self.session_of(was)
        # On a thread: the controller moves during the controlled shutdown, before the process
        # exits, and the screen is read meanwhile.
        th, t0, returned = self.stop(was)
        seen = self.console.watch(
            {
                "moved": lambda f: f.controller is not None and f.controller != was,
                "down": lambda f: f.brokers.get(was) == "down",
            },
            60,
        )
        self.check_stop(th)
        run: dict[str, Any] = {"run": f"controller {n}", "stopped": was}
        run.update(stop_at=t0, returned_at=returned[0])
        _data, stat = self.zk.get("/controller")
        if "moved" in seen.at:
            self.record(run, "controller_ms", "controller", stat.ctime / 1000, seen.at["moved"])
        self.broker_down(run, seen, session)
        self.finish(run, seen)
        self.restore(was)

    def leader_run(self, n: int) -> None:
        base = self.test_topic()
        ctl = json.loads(self.zk.get("/controller")[0])["brokerid"]
        candidates = sorted({s.leader for s in base.values()} - {ctl})
        if not candidates:
            raise RuntimeError(f"no broker but the controller leads {TEST_TOPIC}: {base}")
        victim = candidates[n % len(candidates)]
        led = sorted(p for p, s in base.items() if s.leader == victim)
        followed = sorted(p for p, s in base.items() if s.leader != victim and victim in s.isr)
        watch = StateWatch(self.zk, TEST_TOPIC, sorted(base))
        session = self.session_of(victim)
        checks: dict[str, Callable[[Frame], bool]] = {
            "down": lambda f: f.brokers.get(victim) == "down"
        }

        def new_leader(p: int) -> Callable[[Frame], bool]:
            def check(f: Frame) -> bool:
                row = f.rows.get(p)
                return row is not None and row.leader.isdigit() and int(row.leader) != victim

            return check

        def isr_without(p: int) -> Callable[[Frame], bool]:
            def check(f: Frame) -> bool:
                row = f.rows.get(p)
                return row is not None and bool(row.isr_ids()) and victim not in row.isr_ids()

            return check

        checks.update({f"leader {p}": new_leader(p) for p in led})
        checks.update({f"isr {p}": isr_without(p) for p in followed})
        th, t0, returned = self.stop(victim)
        seen = self.console.watch(checks, 60)
        self.check_stop(th)
        watch.active = False
        run: dict[str, Any] = {"run": f"leader {n}", "stopped": victim}
        run.update(stop_at=t0, returned_at=returned[0])
        for p in led:
            z = watch.first(p, lambda v: v.leader >= 0 and v.leader != victim)
            if z is not None and f"leader {p}" in seen.at:
                self.record(run, "leader_ms", f"leader p{p}", z[0], seen.at[f"leader {p}"])
                self.skipped += z[1]
        for p in followed:
            z = watch.first(p, lambda v: victim not in v.isr)
            if z is not None and f"isr {p}" in seen.at:
                self.record(run, "isr_ms", f"ISR p{p}", z[0], seen.at[f"isr {p}"])
                self.skipped += z[1]
        self.broker_down(run, seen, session)
        self.finish(run, seen)
        self.restore(victim)


def renice_brokers(cluster: LocalCluster, nice: int) -> None:
    """Run the brokers' JVMs at niceness `nice` (0: leave them alone). Each broker leads a
    session and process group of its own: setpriority on the group reaches every thread in it
    (threads made later inherit it), and where the kernel groups sessions for scheduling
    (autogroup), the session's own niceness is what counts against other sessions, so that is
    set too. ZooKeeper is left alone: its notifications are part of what is measured."""
    if not nice:
        return
    for b in cluster.spec.broker_ids:
        pid = cluster.broker(b).pid
        if pid is None:
            continue
        os.setpriority(os.PRIO_PGRP, os.getpgid(pid), nice)
        autogroup = Path(f"/proc/{pid}/autogroup")
        if autogroup.exists():
            with contextlib.suppress(OSError):
                autogroup.write_text(str(nice))


def run(
    runs: int,
    idle_s: float,
    topics: int = 0,
    partitions: int = 0,
    groups: int = 0,
    nice_brokers: int = 0,
) -> dict[str, Any]:
    if shutil.which("tmux") is None:
        raise SystemExit("bench/terminal.py needs tmux")
    out: dict[str, list[float]] = {
        k: []
        for k in (
            "startup_s",
            "startup_groups_s",
            "idle_cpu_pct",
            "controller_ms",
            "leader_ms",
            "isr_ms",
            "broker_down_ms",
            "failover_cluster_cpu_pct",
            "failover_console_cpu_pct",
            "zk_reads_kazoo_ms",
            "zk_reads_kconsole_ms",
            "zk_reads_reader_ms",
            "zk_reads_reader_all_ms",
        )
    }
    info: dict[str, Any] = {"topics": topics, "partitions_per_topic": partitions}
    if nice_brokers:
        info["nice_brokers"] = nice_brokers
    kconsole = str(Path(sys.executable).with_name("kconsole"))
    subprocess.run(["tmux", "-L", SOCKET, "kill-server"], capture_output=True)  # a stale one
    say("cluster up")
    with temporary_cluster("kc-bench-term-") as (cluster, tmp):
        spec = cluster.spec
        zk = KazooClient(hosts=spec.zk_connect)
        console: Console | None = None
        try:
            renice_brokers(cluster, nice_brokers)
            zk.start(timeout=30)
            names: list[str] = []
            if topics:
                t0 = time.monotonic()
                expected = len(zk_partitions(zk)) + topics * partitions
                names = create_topics(spec.bootstrap, topics, partitions)
                wait_zk_settled(zk, expected, 900)
                say(f"  {expected} partitions settled in {time.monotonic() - t0:.0f} s")
            if groups:
                t0 = time.monotonic()
                info["lagging_groups"] = make_groups(
                    spec.bootstrap, names or [TEST_TOPIC], groups, partitions or 4
                )
                say(f"  {groups} consumer groups in {time.monotonic() - t0:.0f} s")
            total = len(zk_partitions(zk))
            wait_zk_settled(zk, total, 300)
            wait_metadata(spec.bootstrap, total, 120)
            test_parts = sum(1 for t, _ in zk_partitions(zk) if t == TEST_TOPIC)
            info.update(partitions=total, groups=groups)
            say(f"cluster ready: {total} partitions, {groups} groups")
            if topics:  # what re-reading every partition state costs (bench/zk_reads.py)
                _paths, reads = zk_reads.timings(spec.zk_connect, runs)
                out["zk_reads_kazoo_ms"] = reads["kazoo_wall_ms"]
                out["zk_reads_kconsole_ms"] = reads["kconsole_wall_ms"]
                out["zk_reads_reader_ms"] = reads["reader_wall_ms"]
                out["zk_reads_reader_all_ms"] = reads["reader_all_in_flight_wall_ms"]
            cmd = [kconsole, "-b", spec.bootstrap, "-z", spec.zk_connect, "--backend", "none"]
            state_dir = tmp / "state"

            def ready(f: Frame) -> bool:
                return complete(f, total, test_parts)

            for _ in range(max(1, runs // 2)):  # start-up, a few times (each a new process)
                console = Console(cmd, state_dir)
                at = console.wait(ready, 120, "a complete frame")
                out["startup_s"].append(at - console.started)
                if groups:
                    at = console.wait(lambda f: f.groups == groups, 120, f"{groups} groups")
                    out["startup_groups_s"].append(at - console.started)
                console.close()
                console = None
            say(f"start-up: {out['startup_s']} s, with groups {out['startup_groups_s']} s")
            console = Console(cmd, state_dir)
            console.wait(lambda f: ready(f) and f.groups == groups, 120, "a complete frame")
            time.sleep(WARMUP_S)  # not a synchronisation: the idle window starts after warm-up
            for _ in range(3):
                c0, w0 = console.proc.cpu_times(), time.monotonic()
                time.sleep(idle_s / 3)
                c1, w1 = console.proc.cpu_times(), time.monotonic()
                used = (c1.user - c0.user) + (c1.system - c0.system)
                out["idle_cpu_pct"].append(100 * used / (w1 - w0))
            say(f"idle: {[round(x, 2) for x in out['idle_cpu_pct']]} % of a core")
            bench = Bench(cluster, zk, console, total, out, info, nice_brokers=nice_brokers)
            for n in range(runs):
                bench.controller_run(n)
            for n in range(runs):
                bench.leader_run(n)
            info.update(runs=bench.runs, skipped_versions=bench.skipped)
            if NOT_UTF8:
                info.update(not_utf8_lines=len(NOT_UTF8), not_utf8_first=NOT_UTF8[0])
        finally:
            if console is not None:
                console.close()
            subprocess.run(["tmux", "-L", SOCKET, "kill-server"], capture_output=True)
            zk.stop()
            zk.close()
    return {**out, "info": info}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--idle", type=float, default=30.0)
    ap.add_argument("--topics", type=int, default=0, help="extra topics (RF 3) before the console")
    ap.add_argument("--partitions", type=int, default=100, help="partitions per extra topic")
    ap.add_argument("--groups", type=int, default=0, help="consumer groups with offsets")
    ap.add_argument(
        "--nice-brokers",
        type=int,
        default=0,
        help="run the brokers' JVMs at this niceness (an experiment: how much of change -> "
        "screen is the brokers taking the console's CPU on a small machine)",
    )
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    out = run(
        args.runs,
        args.idle,
        args.topics,
        args.partitions if args.topics else 0,
        args.groups,
        args.nice_brokers,
    )
    if args.json:
        args.json.write_text(json.dumps(out))
    for key, vals in out.items():
        if isinstance(vals, list) and vals:
            print(f"{key}: median {statistics.median(vals):.3f} "
                  f"({min(vals):.3f}-{max(vals):.3f}) n={len(vals)}: "
                  + ", ".join(f"{v:.3f}" for v in vals))  # fmt: skip
    print(f"info: {json.dumps(out['info'])}")


if __name__ == "__main__":
    main()
