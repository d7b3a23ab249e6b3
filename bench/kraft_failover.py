"""KRaft: from a change in the cluster to the console's SCREEN showing it, minus Kafka's own time.

    .venv/bin/python bench/kraft_failover.py [--kills 5] [--pauses 5] [--idle 30]
        [--topics 0 --partitions 100] [--json out.json]

Starts its own throw-away local KRaft cluster (3 dedicated controllers + 3 brokers, Kafka 4.x)
on free ports in a temporary dir, and always takes it down again by the pids it recorded (a
reaper process does it if this script dies first). The real console runs headless (Textual's
run_test, 160x48) on the live ClusterObserver, set up as `kconsole` sets it up for a local KRaft
cluster (brokers, the controllers as --bootstrap-controller, no ZooKeeper).

  idle   the console process's CPU (every thread) over --idle seconds with nothing changing,
         and its RSS at the end;
  kill   SIGKILL of the active controller (the quorum leader): when a client asking the
         controllers every 20 ms sees another leader, and when the brokers pane stars it;
  pause  SIGSTOP of the broker leading test-topic/0, past broker.session.timeout.ms: when a
         client asking a live broker every 20 ms sees it fenced, its partitions led by others
         and their ISR without it, and when the brokers pane / partitions table show each.

Between runs the node is started (resumed) again, the quorum / ISR made whole and the leaders
put back, with deadlines. Prints Markdown; --json writes every run's figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import shlex
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import code_revision, elect_preferred, load
from confluent_kafka import TopicPartition

from kconsole.cluster.errors import PortInUse
from kconsole.cluster.kraft import probes as kraft_probes
from kconsole.cluster.kraft.cluster import KRaftCluster
from kconsole.cluster.kraft.control import KRaftNodeControl
from kconsole.cluster.kraft.spec import KRaftSpec
from kconsole.cluster.local.cluster import check_port_free, ephemeral_port_range
from kconsole.cluster.reaper import start_reaper
from kconsole.cluster.settings import HOST, TEST_TOPIC
from kconsole.config import Settings
from kconsole.models import ClusterMode, ClusterSnapshot
from kconsole.observer import ClusterObserver
from kconsole.ui.app import KConsoleApp, make_app
from kconsole.ui.widgets.tables import BrokersTable, PartitionsTable

KAFKA_POLL_S = 0.02  # the "client polling every 20 ms" that stands for Kafka's own time
SCREEN_POLL_S = 0.01
# Away from the integration tests' KRaft block (25092+/25192+) and the ZooKeeper benches'.
BASE_PORT, CONTROLLER_BASE_PORT, STEP, BLOCKS = 27092, 27192, 200, 10


def say(msg: str) -> None:
    print(f"[kraft-bench] {msg}", file=sys.stderr, flush=True)


# -- the cluster ------------------------------------------------------------------------------
def free_ports() -> tuple[int, int]:
    low, _high = ephemeral_port_range()
    for i in range(BLOCKS):
        base, ctl = BASE_PORT + i * STEP, CONTROLLER_BASE_PORT + i * STEP
        ports = [*range(base, base + 3), *range(ctl, ctl + 3)]
        if max(ports) >= low:
            break
        try:
            for p in ports:
                check_port_free(HOST, p, "")
        except PortInUse:
            continue
        return base, ctl
    raise RuntimeError("no free block of ports for the KRaft bench cluster")


@contextmanager
def temporary_kraft() -> Iterator[KRaftCluster]:
    """A running 3+3 KRaft cluster in a temporary dir; down (by its pids) whatever happens."""
    tmp = Path(tempfile.mkdtemp(prefix="kc-bench-kraft-"))
    base, ctl = free_ports()
    cluster = KRaftCluster(tmp / "cluster", KRaftSpec(base_port=base, controller_base_port=ctl))
    reaper = start_reaper(cluster.state_dir)  # stops it if this process dies first
    try:
        times = cluster.up(timeout=300, progress=say)
        say(f"cluster up: {times}")
        yield cluster
    finally:
        say("taking the cluster down")
        cluster.down(timeout=30)
        reaper.terminate()
        reaper.wait(10)


# -- Kafka's own time: plain requests to one live node every 20 ms ----------------------------
def ask(host: str, port: int, request: Any, timeout_s: float) -> Any:
    """One request over a plain socket to one node; its response object."""
    from kafka.protocol.parser import KafkaProtocol

    proto = KafkaProtocol(client_id="kc-bench-probe")
    proto.send_request(request)
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        sock.sendall(proto.send_bytes())
        while True:
            data = sock.recv(1 << 20)
            if not data:
                raise ConnectionError(f"{host}:{port} closed the connection")
            responses = proto.receive_bytes(data)
            if responses:
                return responses[0][1]


def fenced_at(host: str, port: int) -> dict[int, bool]:
    from kafka.protocol.admin import DescribeClusterRequest

    req = DescribeClusterRequest[2](
        include_cluster_authorized_operations=False, include_fenced_brokers=True, endpoint_type=1
    )
    out = ask(host, port, req, 1.0).to_dict()
    return {int(b["broker_id"]): bool(b.get("is_fenced")) for b in out["brokers"]}


def partitions_at(host: str, port: int, topic: str) -> dict[int, tuple[int, tuple[int, ...]]]:
    """partition -> (leader, ISR) of `topic` in that broker's metadata."""
    from kafka.protocol.metadata import MetadataRequest

    req = MetadataRequest[8](
        topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    out = ask(host, port, req, 1.0).to_dict()
    return {
        int(p["partition_index"]): (int(p["leader_id"]), tuple(int(r) for r in p["isr_nodes"]))
        for t in out["topics"]
        for p in t["partitions"]
    }


class Poller:
    """Calls `check` every 20 ms on a thread until it returns True for every name; records
    (monotonic) when each first did."""

    def __init__(self, check: Callable[[], dict[str, bool]]):
        self.check = check
        self.seen: dict[str, float] = {}
        self.errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="kafka-poller")

    def _run(self) -> None:
        while not self._stop.is_set():
            t = time.monotonic()
            try:
                for name, ok in self.check().items():
                    if ok:
                        self.seen.setdefault(name, time.monotonic())
            except Exception:
                self.errors += 1
            self._stop.wait(max(0.0, KAFKA_POLL_S - (time.monotonic() - t)))

    def start(self) -> Poller:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


# -- what the screen shows --------------------------------------------------------------------
def cell(app: KConsoleApp, table: type[Any], row: str, col: str) -> str | None:
    try:
        return str(app.screen.query_one(table).get_cell(row, col).plain)
    except Exception:  # row or table not there (yet)
        return None


def numbers(text: str | None) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", text or "")]


def screen_leader(app: KConsoleApp, ids: list[int]) -> int | None:
    """The controller the brokers pane stars (the quorum leader), if exactly one."""
    starred = [i for i in ids if "★" in (cell(app, BrokersTable, str(i), "id") or "")]
    return starred[0] if len(starred) == 1 else None


def whole(app: KConsoleApp, cluster: KRaftCluster) -> bool:
    """Every broker unfenced, one controller starred, every test-topic row on its preferred
    leader with a full ISR — in the snapshot and on the screen."""
    snap = app.snapshot
    spec = cluster.spec
    if snap is None or snap.quorum is None or snap.quorum.leader_id is None:
        return False
    if sorted(snap.quorum.voter_ids) != sorted(spec.controller_ids):
        return False
    if screen_leader(app, spec.controller_ids) != snap.quorum.leader_id:
        return False
    for b in spec.broker_ids:
        if cell(app, BrokersTable, str(b), "fencing") != "unfenced":
            return False
    parts = [p for p in snap.partitions if p.topic == TEST_TOPIC]
    if not parts:
        return False
    for p in parts:
        if p.leader != p.preferred_leader or sorted(p.isr) != sorted(p.replicas):
            return False
        if numbers(cell(app, PartitionsTable, p.key, "leader")) != [p.leader]:
            return False
        if sorted(numbers(cell(app, PartitionsTable, p.key, "isr"))) != sorted(p.replicas):
            return False
    return True


async def wait_for(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(0.05)


async def restore(app: KConsoleApp, cluster: KRaftCluster) -> None:
    from kconsole.cluster.values import ProcState

    for node in cluster.spec.nodes():
        state = cluster.process(node.name).state()
        if state is ProcState.PAUSED:
            await asyncio.to_thread(cluster.resume_node, node.name)
        elif state is ProcState.STOPPED:
            await asyncio.to_thread(cluster.start_node, node.name, timeout=180.0)
    deadline = time.monotonic() + 180
    while True:
        snap = app.snapshot
        parts = [p for p in (snap.partitions if snap else ()) if p.topic == TEST_TOPIC]
        if parts and all(sorted(p.isr) == sorted(p.replicas) for p in parts):
            break
        if time.monotonic() > deadline:
            raise TimeoutError("ISR of test-topic not full again within 180 s")
        await asyncio.sleep(0.1)
    tps = [TopicPartition(TEST_TOPIC, p.partition) for p in parts]
    await asyncio.to_thread(elect_preferred, cluster.spec.bootstrap, tps, 120.0)
    await wait_for(lambda: whole(app, cluster), 180, "the screen to show a whole cluster")


class TimedObserver(ClusterObserver):
    """The live observer, recording (monotonic) each admin poll's start and end, the part of it
    spent in the metadata read (read_cluster) and in the ELR read, and each publish."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        # start, end, its metadata read (s), its reassignments read (s), its publish's end
        self.polls: list[tuple[float, float, float, float, float]] = []
        self.wakes: list[float] = []  # the quorum thread asked for a metadata read now
        self._part: dict[str, float] = {}
        wakes = self.wakes

        class Recorded(threading.Event):
            """Each set() of the admin thread's wake-up, when it was not set yet (read at the
            quorum poll's end, a poll that takes a few ms had already woken and cleared it)."""

            def set(self) -> None:
                if not self.is_set():
                    wakes.append(time.monotonic())
                    del wakes[:-2000]
                super().set()

        self._wake_admin = Recorded()

    def _poll_admin(self, reader: Any, publish: bool = True) -> None:
        if not getattr(reader, "_timed", False):
            read = reader.read_cluster

            def timed_read(*a: Any, **kw: Any) -> Any:
                t = time.monotonic()
                try:
                    return read(*a, **kw)
                finally:
                    self._part["metadata"] = time.monotonic() - t

            moving = reader.read_reassignments

            def timed_moving(*a: Any, **kw: Any) -> Any:
                t = time.monotonic()
                try:
                    return moving(*a, **kw)
                finally:
                    self._part["reassignments"] = time.monotonic() - t

            reader.read_cluster = timed_read
            reader.read_reassignments = timed_moving
            reader._timed = True
        self._part = {}
        t = time.monotonic()
        super()._poll_admin(reader, publish)
        end = time.monotonic()
        part = self._part
        self.polls.append(
            (t, end, part.get("metadata", 0.0), part.get("reassignments", 0.0),
             part.get("published", end))
        )  # fmt: skip
        del self.polls[:-2000]

    def _publish(self, publish: bool = True) -> ClusterSnapshot:
        snap = super()._publish(publish)
        if threading.current_thread().name == "kconsole-admin":
            self._part["published"] = time.monotonic()
        return snap

    def window(self, t0: float, end: float) -> dict[str, Any]:
        """What the admin thread did between t0 and end (ms after t0)."""
        polls = [p for p in self.polls if p[1] >= t0 and p[0] <= end]
        return {
            "wakes_ms": [round((w - t0) * 1000) for w in self.wakes if t0 <= w <= end],
            "polls_ms": [
                [
                    round((a - t0) * 1000),
                    round((b - t0) * 1000),
                    round(m * 1000),
                    round(r * 1000),
                    round((p - t0) * 1000),
                ]
                for a, b, m, r, p in polls
            ],
        }


# -- runs -------------------------------------------------------------------------------------
@dataclass
class Change:
    what: str
    kafka_ms: float
    screen_ms: float
    snapshot_ms: float

    @property
    def own_ms(self) -> float:
        return self.screen_ms - self.kafka_ms


@dataclass
class Run:
    action: str
    n: int
    victim: str
    changes: list[Change] = field(default_factory=list)
    probe_errors: int = 0
    admin: dict[str, Any] = field(default_factory=dict)  # TimedObserver.window of the run


async def watch(
    app: KConsoleApp,
    t0: float,
    poller: Poller,
    screen: dict[str, Callable[[], bool]],
    snapshot: dict[str, Callable[[ClusterSnapshot], bool]],
    timeout: float,
) -> dict[str, tuple[float, float, float]]:
    """Until the screen and Kafka have shown every change: name -> (kafka, snapshot, screen)
    in ms after t0."""
    at_screen: dict[str, float] = {}
    at_snap: dict[str, float] = {}
    deadline = t0 + timeout
    while len(at_screen) < len(screen) or len(poller.seen) < len(screen):
        now = time.monotonic()
        snap = app.snapshot
        for name, ok in snapshot.items():
            if name not in at_snap and snap is not None and ok(snap):
                at_snap[name] = now
        for name, shown in screen.items():
            if name not in at_screen and shown():
                at_screen[name] = now
        if now > deadline:
            missing = sorted(set(screen) - set(at_screen)) + [
                f"kafka:{n}" for n in sorted(set(screen) - set(poller.seen))
            ]
            raise TimeoutError(f"not seen within {timeout:.0f} s: {missing}")
        await asyncio.sleep(SCREEN_POLL_S)
    return {
        n: (
            (poller.seen[n] - t0) * 1000,
            (at_snap.get(n, float("nan")) - t0) * 1000,
            (at_screen[n] - t0) * 1000,
        )
        for n in screen
    }


async def kill_run(app: KConsoleApp, cluster: KRaftCluster, n: int, timeout: float) -> Run:
    snap = app.snapshot
    assert snap is not None and snap.quorum is not None and snap.quorum.leader_id is not None
    spec = cluster.spec
    old = snap.quorum.leader_id
    name = cluster.node_of(old).name
    ports = [p for cid, p in spec.controller_ports().items() if cid != old]

    def kafka() -> dict[str, bool]:
        q = kraft_probes.quorum_from_controllers(spec.host, ports, 0.5)
        return {"quorum leader": q is not None and q.leader_id not in (None, old)}

    poller = Poller(kafka).start()  # armed first: kill_node returns once the JVM is reaped
    t0 = time.monotonic()
    await asyncio.to_thread(cluster.kill_node, name)
    try:
        seen = await watch(
            app,
            t0,
            poller,
            {"quorum leader": lambda: screen_leader(app, spec.controller_ids) not in (None, old)},
            {
                "quorum leader": lambda s: (
                    s.quorum is not None and s.quorum.leader_id not in (None, old)
                )
            },
            timeout,
        )
    finally:
        poller.stop()
    run = Run("kill active controller", n, name, probe_errors=poller.errors)
    obs = app_observer(app)
    if obs is not None:
        run.admin = obs.window(t0, t0 + max(v[2] for v in seen.values()) / 1000)
    run.changes = [Change(k, v[0], v[2], v[1]) for k, v in seen.items()]
    return run


async def pause_run(app: KConsoleApp, cluster: KRaftCluster, n: int, timeout: float) -> Run:
    snap = app.snapshot
    assert snap is not None
    p0 = snap.partition(TEST_TOPIC, 0)
    assert p0 is not None and p0.leader >= 0
    victim = p0.leader
    led = [p.partition for p in snap.partitions if p.topic == TEST_TOPIC and p.leader == victim]
    held = [p.partition for p in snap.partitions if p.topic == TEST_TOPIC and victim in p.isr]
    spec = cluster.spec
    live = next(b for b in spec.broker_ids if b != victim)
    port = spec.broker_ports()[live]

    def kafka() -> dict[str, bool]:
        fenced = fenced_at(spec.host, port).get(victim, False)
        parts = partitions_at(spec.host, port, TEST_TOPIC)
        return {
            "broker fenced": fenced,
            "leader change": all(parts[p][0] not in (victim, -1) for p in led),
            "ISR shrink": all(victim not in parts[p][1] for p in held),
        }

    def table(key: str, col: str) -> list[int]:
        return numbers(cell(app, PartitionsTable, f"{TEST_TOPIC}/{key}", col))

    def screen_leaders() -> bool:
        return all((v := table(str(p), "leader")) and v[0] != victim for p in led)

    def screen_isr() -> bool:
        return all((v := table(str(p), "isr")) and victim not in v for p in held)

    def snap_leaders(s: ClusterSnapshot) -> bool:
        parts = [s.partition(TEST_TOPIC, p) for p in led]
        return all(q is not None and q.leader not in (victim, -1) for q in parts)

    def snap_isr(s: ClusterSnapshot) -> bool:
        parts = [s.partition(TEST_TOPIC, p) for p in held]
        return all(q is not None and victim not in q.isr for q in parts)

    def snap_fenced(s: ClusterSnapshot) -> bool:
        b = s.broker(victim)
        return b is not None and bool(b.fenced)

    poller = Poller(kafka).start()
    t0 = time.monotonic()
    await asyncio.to_thread(cluster.pause_node, f"broker-{victim}")
    try:
        seen = await watch(
            app,
            t0,
            poller,
            {
                "broker fenced": lambda: (
                    cell(app, BrokersTable, str(victim), "fencing") == "fenced"
                ),
                "leader change": screen_leaders,
                "ISR shrink": screen_isr,
            },
            {"broker fenced": snap_fenced, "leader change": snap_leaders, "ISR shrink": snap_isr},
            timeout,
        )
    finally:
        poller.stop()
    run = Run("pause broker", n, f"broker-{victim}", probe_errors=poller.errors)
    obs = app_observer(app)
    if obs is not None:
        run.admin = obs.window(t0, t0 + max(v[2] for v in seen.values()) / 1000)
    run.changes = [Change(k, v[0], v[2], v[1]) for k, v in seen.items()]
    return run


def app_observer(app: KConsoleApp) -> TimedObserver | None:
    obs = getattr(app, "observer", None)
    return obs if isinstance(obs, TimedObserver) else None


async def idle(app: KConsoleApp, seconds: float) -> tuple[float, float]:
    """The whole console process's CPU (% of one core) over `seconds`, and its RSS (MiB)."""
    me = psutil.Process()
    c0, w0 = me.cpu_times(), time.monotonic()
    await asyncio.sleep(seconds)
    c1, wall = me.cpu_times(), time.monotonic() - w0
    used = (c1.user - c0.user) + (c1.system - c0.system)
    return 100 * used / wall, me.memory_info().rss / 2**20


async def drive(cluster: KRaftCluster, args: argparse.Namespace) -> dict[str, Any]:
    spec = cluster.spec
    settings = Settings(
        bootstrap=spec.bootstrap,
        zookeeper="",
        bootstrap_controller=spec.quorum_bootstrap,
        cluster_dir=cluster.state_dir,
    )
    observer = TimedObserver(settings, proc_states=KRaftNodeControl(cluster).states)
    app = make_app(
        observer,
        refresh_s=settings.refresh_s,
        group_refresh_s=settings.group_refresh_s,
        settings=settings,
        freeze_gc=True,
    )
    app.animation_level = "none"
    out: dict[str, Any] = {"idle_cpu_pct": [], "rss_mib": [], "runs": [], "requests": []}
    started = time.monotonic()
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(
            lambda: app.snapshot is not None and app.snapshot.mode is ClusterMode.KRAFT,
            120,
            "a KRaft snapshot",
        )

        def complete() -> bool:
            # Every partition in the table, and their rates on it (a second reading in).
            snap = app.snapshot
            table = app.screen.query_one(PartitionsTable)
            return (
                snap is not None
                and len(snap.partitions) >= args.expect
                and table.counts.total == len(snap.partitions)
                and snap.rates is not None
                and any(
                    snap.rates.records(p.topic, p.partition).per_s is not None
                    for p in snap.partitions[:50]
                )
            )

        await wait_for(complete, 300, "the first complete frame (every partition, with rates)")
        out["first_frame_s"] = time.monotonic() - started
        say(f"first complete frame: {out['first_frame_s']:.1f} s")
        await restore(app, cluster)
        await pilot.pause()
        parts = len(app.snapshot.partitions) if app.snapshot else 0
        out["partitions"] = parts
        for i in range(args.idle_runs):
            await asyncio.sleep(3)  # the last change's repaint done
            REQUESTS.clear()
            cpu, rss = await idle(app, args.idle)
            out["idle_cpu_pct"].append(cpu)
            out["rss_mib"].append(rss)
            out["requests"].append(list(REQUESTS))
            say(f"idle {i + 1}: {cpu:.2f} % of a core, RSS {rss:.0f} MiB")
        plan = [("kill", i) for i in range(1, args.kills + 1)]
        plan += [("pause", i) for i in range(1, args.pauses + 1)]
        for action, n in plan:
            fn = kill_run if action == "kill" else pause_run
            run = await fn(app, cluster, n, args.timeout)
            out["runs"].append(asdict(run))
            say(
                f"{run.action} {n} ({run.victim}): "
                + ", ".join(
                    f"{c.what} kafka {c.kafka_ms:.0f} screen {c.screen_ms:.0f} ms"
                    for c in run.changes
                )
            )
            await restore(app, cluster)
        out["rss_mib"].append(psutil.Process().memory_info().rss / 2**20)
    return out


def create_topics(cluster: KRaftCluster, topics: int, partitions: int, rf: int = 3) -> None:
    deadline = time.monotonic() + 1800
    for i in range(topics):
        cluster.ensure_topic(f"bench-{i:02d}", partitions, rf, deadline)
        say(f"topic bench-{i:02d}: {partitions} partitions, RF {rf}, full ISR")


# The offsets the console reads, by request (the rates' cost): (what, requests, partitions).
REQUESTS: list[tuple[str, int, int]] = []


def count_requests() -> None:
    """Count the console's ListOffsets and DescribeLogDirs requests (in this process)."""
    from kconsole.cluster.security import kafka_python as kp

    ends, sizes = kp.log_ends_by_leader, kp.log_sizes_at

    def log_ends(admin: Any, by_leader: Any, timeout_ms: int, give_up: Any = None) -> Any:
        REQUESTS.append(("ListOffsets", len(by_leader), sum(map(len, by_leader.values()))))
        return ends(admin, by_leader, timeout_ms, give_up)

    def log_sizes(admin: Any, brokers: Any, timeout_ms: int) -> Any:
        REQUESTS.append(("DescribeLogDirs", len(brokers), 0))
        return sizes(admin, brokers, timeout_ms)

    kp.log_ends_by_leader = log_ends
    kp.log_sizes_at = log_sizes


CHANGES = ("quorum leader", "broker fenced", "leader change", "ISR shrink")


def report(data: dict[str, Any], revision: str) -> None:
    print(f"command: `.venv/bin/python bench/kraft_failover.py {shlex.join(sys.argv[1:])}`  ")
    print(f"code: {revision}  ")
    print(
        f"cluster: 3 controllers + 3 brokers (Kafka {data['kafka']}), {data['partitions']} "
        "partitions; console: real app headless (160x48), live ClusterObserver (quorum every "
        "0.4 s from the controllers, metadata every 1 s); Kafka's time: a client asking the "
        f"controllers / a live broker every {KAFKA_POLL_S * 1000:.0f} ms; screen polled every "
        f"{SCREEN_POLL_S * 1000:.0f} ms.\n"
    )
    print(
        "| run | victim | change | Kafka (ms) | app snapshot (ms) | **screen (ms)** "
        "| screen - Kafka (ms) |"
    )
    print("|---|---|---|---:|---:|---:|---:|")
    for r in data["runs"]:
        for c in r["changes"]:
            print(
                f"| {r['action']} {r['n']} | {r['victim']} | {c['what']} | {c['kafka_ms']:.0f} "
                f"| {c['snapshot_ms']:.0f} | **{c['screen_ms']:.0f}** "
                f"| {c['screen_ms'] - c['kafka_ms']:.0f} |"
            )
    print()
    diag = [r for r in data["runs"] if r.get("admin")]
    if diag:
        print(
            "The observer's metadata thread in each run (ms after the kill / pause): when the "
            "quorum thread woke it (a leader, voter or fencing change), and each admin poll as "
            "start-end (its metadata read's ms / its reassignments read's ms / when it was "
            "published):\n"
        )
        for r in diag:
            polls = ", ".join(
                f"{a}-{b} ({m}/{ra}/{p})" for a, b, m, ra, p in r["admin"]["polls_ms"]
            )
            wakes = ", ".join(str(w) for w in r["admin"]["wakes_ms"]) or "none"
            print(f"- {r['action']} {r['n']}: woken at {wakes}; polls {polls}")
        print()
    idle_vals = data["idle_cpu_pct"]
    if idle_vals:
        print(
            f"Idle console process (all threads, rates on): "
            f"{', '.join(f'{v:.2f}' for v in idle_vals)} "
            f"% of a core; RSS {', '.join(f'{v:.0f}' for v in data['rss_mib'])} MiB."
        )
    if data.get("first_frame_s") is not None:
        print(
            f"\nStart -> first complete frame (every partition, with rates): "
            f"{data['first_frame_s']:.1f} s."
        )
    for i, reqs in enumerate(data.get("requests", [])):
        ends = [r for r in reqs if r[0] == "ListOffsets"]
        sizes = [r for r in reqs if r[0] == "DescribeLogDirs"]
        if ends:
            print(
                f"\nIdle window {i + 1}: {len(ends)} offset reads, each "
                f"{sorted({r[1] for r in ends})} ListOffsets request(s) (one per leader) for "
                f"{sorted({r[2] for r in ends})} partitions; {len(sizes)} DescribeLogDirs "
                f"reads of {sorted({r[1] for r in sizes})} broker(s)."
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=5, help="active-controller kills")
    ap.add_argument("--pauses", type=int, default=5, help="broker pauses (past fencing)")
    ap.add_argument("--idle", type=float, default=30.0, help="seconds per idle measurement")
    ap.add_argument("--idle-runs", type=int, default=3)
    ap.add_argument("--topics", type=int, default=0, help="extra topics")
    ap.add_argument("--rf", type=int, default=3, help="their replication factor")
    ap.add_argument("--partitions", type=int, default=100, help="partitions per extra topic")
    ap.add_argument("--timeout", type=float, default=90.0, help="per-run deadline, seconds")
    ap.add_argument(
        "--broker-heap",
        default="",
        help="the brokers' JVM heap flags (default: kconsole's own, 512 MiB; on 10,000 "
        "partitions at RF 2 that ran out of heap)",
    )
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.broker_heap:
        import kconsole.cluster.kraft.cluster as kraft_cluster

        kraft_cluster.BROKER_HEAP = args.broker_heap  # read when a broker is started
    logging.basicConfig(level=logging.CRITICAL, stream=sys.stderr)
    revision = code_revision()
    load_start = load()
    count_requests()
    args.expect = args.topics * args.partitions
    with temporary_kraft() as cluster:
        if args.topics:
            create_topics(cluster, args.topics, args.partitions, args.rf)
        data = asyncio.run(drive(cluster, args))
        data["kafka"] = cluster.spec.kafka_version
    data["load"] = [load_start, load()]
    if args.json is not None:
        args.json.write_text(json.dumps(data, indent=1))
    with suppress(Exception):
        data["own_ms"] = {
            w: statistics.median(
                c["screen_ms"] - c["kafka_ms"]
                for r in data["runs"]
                for c in r["changes"]
                if c["what"] == w
            )
            for w in CHANGES
        }
    report(data, f"{revision}  \nload average (1 min): {load_start} at start, {load()} at end")


if __name__ == "__main__":
    main()
