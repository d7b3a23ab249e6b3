"""Delay from a broker stop (or kill) to the console's SCREEN showing the new leaders.

    .venv/bin/python bench/console_failover.py [--runs 5] [--kill-runs 3]
    .venv/bin/python bench/console_failover.py --security sasl-scram|ssl-mtls [--runs 5] ...
    .venv/bin/python bench/console_failover.py --compose [--runs 5] [--kill-runs 3] [--idle 30]
    sudo .venv/bin/python bench/console_failover.py --runs 0 --kill-runs 0 --isolate-runs 5

Starts its own throw-away 3-broker cluster and always takes it down again: by default the local
cluster, on free ports in a temporary dir (bench/_cluster.py); with --compose the docker compose
cluster (compose/docker-compose.yml, a project of its own on free ports, bench/_compose.py), its
brokers stopped, killed and started through the engine (DockerBrokerControl: docker stop,
docker kill, docker start) and the console's broker states read from the engine, as the console
does against a compose project. The real console runs headless (Textual's run_test) on the
live ClusterObserver. With --security (local cluster only) the cluster is a secured one:
sasl-scram (SASL_PLAINTEXT listeners, SCRAM-SHA-512, an ACL authorizer) or ssl-mtls (TLS
listeners requiring a client certificate); the console's settings get the cluster's client
settings as `kconsole` itself gives them (with_local_security), so its Admin API and group reads
go through SASL or TLS, and the bench's own Kafka clients (the preferred elections) use the
cluster's client config too. ZooKeeper is not secured in either mode. Each run:

  1. the victim is the current leader of test-topic/0 on the app's snapshot;
  2. t0, then `stop_broker` (SIGTERM, controlled shutdown) or `kill_broker` (SIGKILL) on a thread,
     so the app's loop keeps running (compose: `docker stop` / `docker kill` of its container);
     --isolate-runs: the network fault `isolate` instead (iptables, kconsole.cluster.net; local
     cluster, as root), whose new leaders come after ZooKeeper expires the victim's session;
  3. every 10 ms: has the partitions table (rows keyed "test-topic/<p>") got, in the leader cell
     of every partition the victim led, a leader that is neither the victim nor offline?
     Also recorded: when ZooKeeper said so (our own kazoo watch on each partition's state znode),
     when the app's snapshot said so, and when the stop/kill call returned (the process exited);
  4. the broker is started again (an isolated one healed: it registers again by itself), ISR
     waited for (with a deadline), a preferred-leader election
     puts every leader back, and the screen is waited for before the next run.

With --compose it also measures what the compose mode costs a user: `compose up -d` to every
broker healthy, test-topic created and in sync; and, once the runs are done and the cluster is
settled, the console process's CPU (every thread) over --idle seconds in --idle-runs windows, its
RSS, and each container's CPU and memory over the same seconds from the engine's stats API.

Prints Markdown tables (per run, then median / min / max).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import os
import re
import shlex
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import psutil
from _cluster import describe_ports, temporary_cluster, to_stderr
from _common import code_revision, elect_preferred, load
from _compose import ComposeCluster, temporary_compose
from confluent_kafka import TopicPartition
from kazoo.client import KazooClient

from kconsole.cluster.backends import zk_registrations
from kconsole.cluster.docker.control import DockerBrokerControl
from kconsole.cluster.local.cluster import LocalCluster
from kconsole.cluster.local.control import LocalBrokerControl
from kconsole.cluster.local.probes import partitions_fully_in_sync, zk_client
from kconsole.cluster.settings import TEST_TOPIC
from kconsole.cluster.values import BrokerAction, ProcState
from kconsole.commands.bus import LIVE_LOG_LINES
from kconsole.commands.local_security import with_local_security
from kconsole.config import Settings
from kconsole.models import BrokerState, ClusterSnapshot
from kconsole.observer import ClusterObserver
from kconsole.ui import format as fmt
from kconsole.ui.app import KConsoleApp, make_app
from kconsole.ui.widgets.tables import PartitionsTable

POLL_S = 0.01
# --security: its name -> LocalClusterSpec's (security, mtls)
SECURITY = {"plaintext": ("plaintext", False), "sasl-scram": ("sasl-scram", False),
            "ssl-mtls": ("ssl", True)}  # fmt: skip


@dataclass
class Run:
    action: str
    n: int
    victim: int
    was_controller: bool
    partitions: list[int]
    exited_s: float = float("nan")  # the stop/kill call returned: the process is gone
    zk_s: float = float("nan")  # ZooKeeper names a live new leader for every partition
    published_s: float = float("nan")  # the observer publishes a snapshot that does
    snapshot_s: float = float("nan")  # the app's snapshot does
    screen_s: float = float("nan")  # the partitions table's leader cells do
    zk_watch_at: dict[int, float] = field(default_factory=dict)
    stall_ms: float = float("nan")  # the app loop's longest stall between t0 and the screen


class LoopStalls:
    """Samples how late a 5 ms sleep on the app's loop wakes up (time spent in handlers and
    painting, during which a new snapshot waits)."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []  # (woke at, seconds late)
        self._task: asyncio.Future[None] | None = None

    async def _run(self) -> None:
        while True:
            t = time.monotonic()
            await asyncio.sleep(0.005)
            now = time.monotonic()
            self.samples.append((now, now - t - 0.005))
            if len(self.samples) > 100_000:
                del self.samples[:50_000]

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def worst(self, start: float, end: float) -> float:
        return max((late for at, late in self.samples if start <= at <= end), default=0.0)


class TimedObserver(ClusterObserver):
    """The live observer, plus a probe called (on the observer's thread) with each snapshot
    it publishes: the step between ZooKeeper and the app's loop."""

    probe: Callable[[ClusterSnapshot], None] | None = None

    def _publish(self, publish: bool = True) -> ClusterSnapshot:
        snap = super()._publish(publish)
        probe = self.probe
        if publish and probe is not None:
            probe(snap)
        return snap


# -- the cluster under test: the local one or a compose project --------------------------------
class Target:
    """What a run needs of the cluster: its addresses, the console's settings and broker
    states, and stop / kill / start of one broker (blocking: called on a thread)."""

    describe = ""  # ports, for the report
    bootstrap = ""
    zk_connect = ""
    broker_ids: list[int] = []
    security = "plaintext"  # a name of SECURITY
    client: dict[str, str] = {}  # the cluster's client settings, for the bench's own clients
    settings: Settings
    states: Callable[[], dict[int, ProcState]]  # the console's broker states (its backend's)
    # What the console reads with them, as `kconsole` wires it (kconsole.cli.main): the network
    # faults in force, and while one is, the controllers' resignations in the brokers' logs.
    net_faults: Callable[[], dict[int, str]] | None = None
    resignations: Callable[[float], list[tuple[float, int]]] | None = None

    def act(self, action: str, victim: int) -> None:
        raise NotImplementedError

    def start(self, victim: int) -> None:
        raise NotImplementedError

    def wait_isr_full(self, deadline: float) -> None:
        raise NotImplementedError


class LocalTarget(Target):
    """The local cluster's processes (SIGTERM / SIGKILL / start by bench/_cluster.py)."""

    def __init__(self, cluster: LocalCluster, security: str = "plaintext") -> None:
        spec = cluster.spec
        self.cluster = cluster
        self.security = security
        self.describe = describe_ports(spec)
        if security != "plaintext":
            self.describe += f", listeners {security}"
        self.bootstrap, self.zk_connect, self.broker_ids = (
            spec.bootstrap,
            spec.zk_connect,
            spec.broker_ids,
        )
        # As `kconsole` makes them: a secured local cluster's client settings join the settings.
        self.settings = with_local_security(
            Settings(
                bootstrap=spec.bootstrap,
                zookeeper=spec.zk_connect,
                backend="local",
                cluster_dir=cluster.state_dir,
            )
        )
        self.client = cluster.client_config()
        if security != "plaintext" and not self.settings.client:
            raise RuntimeError(f"the console's settings got no {security} client settings")
        control = LocalBrokerControl(cluster)
        self.states = control.states
        self.net_faults = control.network_faults
        self.resignations = partial(control.controller_resignations, lines=LIVE_LOG_LINES)

    def act(self, action: str, victim: int) -> None:
        if action == "stop":
            self.cluster.stop_broker(victim)
        elif action == "isolate":
            self.cluster.isolate_broker(victim)
        else:
            self.cluster.kill_broker(victim)

    def start(self, victim: int) -> None:
        if self.cluster.net_faults().in_force():
            self.cluster.heal_broker(victim)
            return  # it registers again by itself: wait_isr_full waits for it
        self.cluster.start_broker(victim, timeout=120.0)

    def wait_isr_full(self, deadline: float) -> None:
        self.cluster.wait_isr_full(TEST_TOPIC, deadline)


class ComposeTarget(Target):
    """A compose project's containers, through the console's own DockerBrokerControl; a start
    is done once the broker registered in ZooKeeper again (after a kill, once the killed
    broker's session expired)."""

    def __init__(self, cluster: ComposeCluster) -> None:
        self.cluster = cluster
        self.describe = cluster.describe()
        self.bootstrap, self.zk_connect = cluster.bootstrap, cluster.zk_connect
        self.broker_ids = cluster.broker_ids
        self.settings = Settings(
            bootstrap=cluster.bootstrap, zookeeper=cluster.zk_connect, backend="docker"
        )
        self.control = DockerBrokerControl(
            project=cluster.project,
            registrations=zk_registrations(cluster.zk_connect),
            register_timeout=120.0,
        )
        self.states = self.control.states
        self.net_faults = self.control.network_faults
        self.resignations = partial(self.control.controller_resignations, lines=LIVE_LOG_LINES)

    def act(self, action: str, victim: int) -> None:
        self.control.act(BrokerAction.STOP if action == "stop" else BrokerAction.KILL, victim)

    def start(self, victim: int) -> None:
        self.control.act(BrokerAction.START, victim, progress=to_stderr)

    def wait_isr_full(self, deadline: float) -> None:
        with zk_client(self.zk_connect, 10.0) as zk:
            while not partitions_fully_in_sync(zk, TEST_TOPIC):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"timed out waiting for every {TEST_TOPIC} replica in ISR")
                time.sleep(0.1)


# -- what the app shows -----------------------------------------------------------------------
def partitions_table(app: KConsoleApp) -> PartitionsTable:
    return app.screen.query_one("#partitions", PartitionsTable)


def screen_moved(app: KConsoleApp, victim: int, parts: list[int]) -> bool:
    """Every row test-topic/<p> shows a leader that is not `victim`, not 'none', not offline."""
    table = partitions_table(app)
    for p in parts:
        try:
            cell = table.get_cell(f"{TEST_TOPIC}/{p}", "leader")
        except Exception:  # row not there (yet)
            return False
        text = cell.plain.strip()
        if not text.isdigit() or int(text) == victim or cell.style == fmt.BAD:
            return False
    return True


def snapshot_moved(snap: ClusterSnapshot | None, victim: int, parts: list[int]) -> bool:
    if snap is None:
        return False
    for p in parts:
        part = snap.partition(TEST_TOPIC, p)
        if part is None or part.leader in (victim, -1) or snap.is_offline(part):
            return False
    return True


def settled(app: KConsoleApp, brokers: list[int]) -> bool:
    """Every broker up, every test-topic partition on its preferred leader with a full ISR —
    in the snapshot and in the table's leader and ISR cells."""
    snap = app.snapshot
    if snap is None:
        return False
    if sorted(b.id for b in snap.brokers if b.state is BrokerState.UP) != brokers:
        return False
    parts = [p for p in snap.partitions if p.topic == TEST_TOPIC]
    if not parts:
        return False
    table = partitions_table(app)
    for p in parts:
        if p.leader != p.preferred_leader or sorted(p.isr) != sorted(p.replicas):
            return False
        try:
            leader = table.get_cell(p.key, "leader").plain
            isr = table.get_cell(p.key, "isr").plain
        except Exception:
            return False
        if leader != str(p.leader) or isr != fmt.ids(p.isr):
            return False
    return True


def sources_said(app: KConsoleApp) -> tuple[str, bool]:
    """The console's sources as a line, and whether every one answered in full."""
    sources = app.snapshot.sources if app.snapshot is not None else ()
    said = ", ".join(
        f"{h.name}: {'ok' if h.ok and not h.error else h.error or 'failed'}" for h in sources
    )
    return said or "none", bool(sources) and all(h.ok and not h.error for h in sources)


async def check_sources(app: KConsoleApp, target: Target) -> None:
    """Every source the console reads answers in full within a minute (on a secured cluster:
    the Admin API and the group reads get through SASL / TLS), said on stderr; a secured run
    stops if not."""
    try:
        await wait_for(lambda: sources_said(app)[1], 60.0, "every source to answer")
    except TimeoutError:
        if target.security != "plaintext":
            raise RuntimeError(
                f"{target.security}: the console's reads did not all get through: "
                f"{sources_said(app)[0]}"
            ) from None
    print(f"console's sources: {sources_said(app)[0]}", file=sys.stderr)


async def wait_for(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(0.05)


# -- the cluster ------------------------------------------------------------------------------
def watch_leaders(zk: KazooClient, victim: int, parts: list[int], run: Run) -> None:
    """Record (monotonic) when ZooKeeper's state of each partition first names another leader."""
    lock = threading.Lock()

    def watcher(p: int) -> Callable[[bytes | None, object], bool]:
        def on_data(data: bytes | None, _stat: object) -> bool:
            now = time.monotonic()
            if data is None:
                return True
            leader = int(json.loads(data).get("leader", -1))
            if leader not in (victim, -1):
                with lock:
                    run.zk_watch_at.setdefault(p, now)
                return False  # stop watching this partition
            return True

        return on_data

    for p in parts:
        zk.DataWatch(f"/brokers/topics/{TEST_TOPIC}/partitions/{p}/state", watcher(p))


async def one_run(
    app: KConsoleApp,
    observer: TimedObserver,
    target: Target,
    zk: KazooClient,
    stalls: LoopStalls,
    action: str,
    n: int,
    timeout: float,
) -> Run:
    snap = app.snapshot
    assert snap is not None
    p0 = snap.partition(TEST_TOPIC, 0)
    assert p0 is not None and p0.leader >= 0
    victim = p0.leader
    parts = [p.partition for p in snap.partitions if p.topic == TEST_TOPIC and p.leader == victim]
    run = Run(action, n, victim, snap.controller.id == victim, parts)
    watch_leaders(zk, victim, parts, run)

    def probe(published: ClusterSnapshot) -> None:
        if run.published_s != run.published_s and snapshot_moved(published, victim, parts):
            run.published_s = time.monotonic() - t0

    def act() -> float:
        target.act(action, victim)
        return time.monotonic()

    t0 = time.monotonic()
    observer.probe = probe
    task = asyncio.ensure_future(asyncio.to_thread(act))
    deadline = t0 + timeout
    while run.screen_s != run.screen_s or run.snapshot_s != run.snapshot_s:  # NaN: not yet
        now = time.monotonic()
        if run.snapshot_s != run.snapshot_s and snapshot_moved(app.snapshot, victim, parts):
            run.snapshot_s = now - t0
        if run.screen_s != run.screen_s and screen_moved(app, victim, parts):
            run.screen_s = now - t0
        if now > deadline:
            raise TimeoutError(f"run {n} ({action} broker {victim}): screen never showed it")
        await asyncio.sleep(POLL_S)
    run.stall_ms = stalls.worst(t0, t0 + run.screen_s + POLL_S) * 1000
    run.exited_s = await task - t0
    observer.probe = None
    if len(run.zk_watch_at) == len(parts):
        run.zk_s = max(run.zk_watch_at.values()) - t0
    return run


async def restore(app: KConsoleApp, target: Target, victim: int) -> float:
    """Start the victim again, wait for full ISR, put leaders back; seconds it took."""
    t0 = time.monotonic()
    await asyncio.to_thread(target.start, victim)
    await asyncio.to_thread(target.wait_isr_full, time.monotonic() + 120.0)
    await settle(app, target)
    return time.monotonic() - t0


async def settle(app: KConsoleApp, target: Target) -> None:
    count = len(
        [p for p in (app.snapshot.partitions if app.snapshot else ()) if p.topic == TEST_TOPIC]
    )
    await asyncio.to_thread(
        elect_preferred,
        target.bootstrap,
        [TopicPartition(TEST_TOPIC, p) for p in range(count or 4)],
        config=target.client,
    )
    await wait_for(
        lambda: settled(app, target.broker_ids), 120.0, "the screen to show a healthy cluster"
    )


# -- idle (compose) ----------------------------------------------------------------------------
@dataclass
class Idle:
    """The console process's CPU per window (% of one core, every thread), its RSS, and each
    container's CPU (% of one core) and memory over the whole idle time."""

    console_cpu_pct: list[float] = field(default_factory=list)
    console_rss_mib: float = float("nan")
    seconds: float = float("nan")
    containers: dict[str, dict[str, float]] = field(default_factory=dict)


def container_samples(project: str) -> dict[str, dict[str, Any]]:
    """Service -> the engine's one-shot stats of its running container (cumulative CPU ns,
    the engine's time of the read), read in parallel."""
    import docker

    client = docker.from_env(timeout=30)
    try:
        found = client.containers.list(
            filters={"label": f"com.docker.compose.project={project}", "status": "running"}
        )
        with ThreadPoolExecutor(max(len(found), 1)) as pool:
            stats = pool.map(lambda c: c.stats(stream=False, one_shot=True), found)
            return {
                c.labels.get("com.docker.compose.service", c.name): st
                for c, st in zip(found, stats, strict=True)
            }
    finally:
        client.close()


def _read_at(stats: dict[str, Any]) -> float:
    """The stats' `read` time (RFC 3339 with nanoseconds) as epoch seconds."""
    m = re.match(r"^(.*T\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$", str(stats["read"]))
    assert m is not None, f"unexpected stats time {stats['read']!r}"
    zone = "+00:00" if m.group(3) == "Z" else m.group(3)
    return datetime.fromisoformat(m.group(1) + (m.group(2) or ".0")[:7] + zone).timestamp()


def container_usage(first: dict[str, Any], last: dict[str, Any]) -> dict[str, float]:
    """CPU (% of one core) between two samples (by the engine's own read times); memory at the
    last (MiB): `usage` minus the inactive file cache (what `docker stats` shows), and the
    anonymous memory (RSS)."""
    cpu0 = first["cpu_stats"]["cpu_usage"]["total_usage"]
    cpu1 = last["cpu_stats"]["cpu_usage"]["total_usage"]
    mem = last.get("memory_stats") or {}
    stats = mem.get("stats") or {}
    inactive = stats.get("total_inactive_file", stats.get("inactive_file", 0))
    rss = stats.get("rss", stats.get("anon", float("nan")))  # cgroup v1, v2
    return {
        "cpu_pct": 100 * (cpu1 - cpu0) / 1e9 / (_read_at(last) - _read_at(first)),
        "mem_mib": (mem.get("usage", 0) - inactive) / 2**20,
        "rss_mib": rss / 2**20,
    }


async def measure_idle(app: KConsoleApp, project: str, seconds: float, windows: int) -> Idle:
    """Nothing changing: the console's CPU in `windows` windows of `seconds / windows`, and the
    containers' from engine samples taken just before and after (off the app's loop)."""
    me = psutil.Process()
    out = Idle(seconds=0.0)
    first = await asyncio.to_thread(container_samples, project)
    for _ in range(windows):
        c0, w0 = me.cpu_times(), time.monotonic()
        await asyncio.sleep(seconds / windows)
        c1, wall = me.cpu_times(), time.monotonic() - w0
        out.console_cpu_pct.append(100 * ((c1.user - c0.user) + (c1.system - c0.system)) / wall)
        out.seconds += wall
    last = await asyncio.to_thread(container_samples, project)
    out.console_rss_mib = me.memory_info().rss / 2**20
    for svc in sorted(set(first) & set(last)):
        out.containers[svc] = container_usage(first[svc], last[svc])
    return out


# -- main -------------------------------------------------------------------------------------
async def drive(
    target: Target, args: argparse.Namespace
) -> tuple[list[Run], list[float], Idle | None]:
    settings = target.settings
    observer = TimedObserver(
        settings,
        proc_states=target.states,
        net_faults=target.net_faults,
        resignations=target.resignations,
    )
    app = make_app(observer, refresh_s=settings.refresh_s, group_refresh_s=settings.group_refresh_s)
    app.animation_level = "none"
    zk = KazooClient(hosts=target.zk_connect, timeout=10)
    await asyncio.to_thread(zk.start, 30)
    stalls = LoopStalls()
    runs: list[Run] = []
    restores: list[float] = []
    idle: Idle | None = None
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            stalls.start()
            await wait_for(lambda: app.snapshot is not None, 60.0, "the first snapshot")
            await settle(app, target)
            await pilot.pause()
            await check_sources(app, target)
            plan = [("stop", i) for i in range(1, args.runs + 1)]
            plan += [("kill", i) for i in range(1, args.kill_runs + 1)]
            plan += [("isolate", i) for i in range(1, args.isolate_runs + 1)]
            for action, n in plan:
                run = await one_run(app, observer, target, zk, stalls, action, n, args.timeout)
                runs.append(run)
                print(
                    f"{action} {n}: broker {run.victim} -> screen {run.screen_s:.3f} s "
                    f"(zk {run.zk_s:.3f} s, exit {run.exited_s:.3f} s)",
                    file=sys.stderr,
                )
                restores.append(await restore(app, target, run.victim))
            if isinstance(target, ComposeTarget) and args.idle > 0:
                idle = await measure_idle(app, target.cluster.project, args.idle, args.idle_runs)
                print(f"idle: console {idle.console_cpu_pct} % of a core", file=sys.stderr)
    finally:
        stalls.stop()
        zk.stop()
        zk.close()
    return runs, restores, idle


def ms(x: float) -> str:
    return "n/a" if x != x else f"{x * 1000:.0f}"


def s3(x: float) -> str:
    return "n/a" if x != x else f"{x:.3f}"


def summary(name: str, runs: list[Run]) -> list[str]:
    out = []
    cols = [
        ("stop/kill call returned (process exited)", lambda r: r.exited_s),
        ("ZooKeeper names the new leaders", lambda r: r.zk_s),
        ("observer publishes a snapshot with them", lambda r: r.published_s),
        ("app snapshot shows them", lambda r: r.snapshot_s),
        ("**screen shows them**", lambda r: r.screen_s),
        ("console's own share (screen - ZooKeeper)", lambda r: r.screen_s - r.zk_s),
        ("  of which: publish -> app snapshot", lambda r: r.snapshot_s - r.published_s),
        ("longest app-loop stall in the window", lambda r: r.stall_ms / 1000),
    ]
    out.append(f"| {name} ({len(runs)} runs), seconds after t0 | median | min | max |")
    out.append("|---|---|---|---|")
    for label, get in cols:
        vals = [get(r) for r in runs if get(r) == get(r)]
        if not vals:
            out.append(f"| {label} | n/a | n/a | n/a |")
            continue
        out.append(
            f"| {label} | {s3(statistics.median(vals))} | {s3(min(vals))} | {s3(max(vals))} |"
        )
    return out


ACTION_WORDS = {
    "stop": "SIGTERM ({via}stop)",
    "kill": "SIGKILL ({via}kill)",
    "isolate": "isolate (iptables)",
}


def report(
    runs: list[Run], restores: list[float], args: argparse.Namespace, revision: str, ports: str
) -> None:
    cmd = " ".join(shlex.quote(a) for a in [".venv/bin/python", *sys.argv])
    via = "docker " if args.compose else ""  # compose: the engine stops and kills
    mem = psutil.virtual_memory().total / 2**30
    print(f"command: `{cmd}`  ")
    print(f"code: {revision}  ")
    print(f"machine: {os.cpu_count()} cores, {mem:.0f} GiB; 3 brokers (512 MB heap), ", end="")
    print(f"{ports}; {TEST_TOPIC} 4 x RF3; ")
    print(
        "console: real app, headless (run_test, 160x48), live ClusterObserver (ZooKeeper watches, "
        f"Admin poll every 1 s); screen polled every {POLL_S * 1000:.0f} ms.\n"
    )
    if args.security != "plaintext":
        how = {"sasl-scram": "SASL_PLAINTEXT listeners, SCRAM-SHA-512, ACL authorizer",
               "ssl-mtls": "TLS listeners, client certificate required"}[args.security]  # fmt: skip
        print(
            f"security: {args.security} ({how}); the console's settings carry the cluster's "
            "client settings (with_local_security), the bench's elections its client config; "
            "ZooKeeper plaintext.\n"
        )
    print(
        "| run | action | victim | was controller | partitions it led | process exited (s) "
        "| ZooKeeper: new leaders (s) | observer published (s) | app snapshot (s) "
        "| **screen (s)** | screen - ZooKeeper (ms) | longest app-loop stall (ms) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        print(
            f"| {r.n} | {ACTION_WORDS.get(r.action, r.action).format(via=via)} "
            f"| {r.victim} | {'yes' if r.was_controller else 'no'} "
            f"| {','.join(map(str, r.partitions))} | {s3(r.exited_s)} | {s3(r.zk_s)} "
            f"| {s3(r.published_s)} | {s3(r.snapshot_s)} | **{s3(r.screen_s)}** "
            f"| {ms(r.screen_s - r.zk_s)} | {r.stall_ms:.0f} |"
        )
    print()
    for action, name in (
        ("stop", f"{via}stop (SIGTERM)"),
        ("kill", f"{via}kill (SIGKILL)"),
        ("isolate", "isolate (iptables: its session expires)"),
    ):
        sel = [r for r in runs if r.action == action]
        if sel:
            print("\n".join(summary(name, sel)))
            print()
    if restores:
        print(
            f"Restore between runs (start broker, full ISR, preferred election, screen settled): "
            f"median {statistics.median(restores):.1f} s."
        )


def compose_report(cluster: ComposeCluster, idle: Idle | None) -> None:
    """What the compose mode costs: its start, and the console and containers at idle."""
    steps = ", ".join(f"{k} {v:.1f} s" for k, v in cluster.up_steps.items())
    tool = " ".join([Path(cluster.command[0]).name, *cluster.command[1:]])
    print(
        f"\nCompose start (`{tool} up -d` to every "
        f"broker container healthy, test-topic created and its ISR full): **{cluster.up_s:.1f} s** "
        f"({steps})."
    )
    if idle is None:
        return
    cpu = idle.console_cpu_pct
    print(
        f"\nIdle, after the runs, the cluster settled, nothing changing ({idle.seconds:.0f} s): "
        f"console process (all threads, broker states read from the engine every 0.25 s) "
        f"{', '.join(f'{v:.2f}' for v in cpu)} % of a core in {len(cpu)} windows "
        f"(median {statistics.median(cpu):.2f}), RSS {idle.console_rss_mib:.0f} MiB.\n"
    )
    if idle.containers:
        print("| container (engine stats API) | CPU over the idle time (% of a core) "
              "| memory, usage - inactive file (MiB) | RSS (MiB) |")  # fmt: skip
        print("|---|---:|---:|---:|")
        for svc, u in idle.containers.items():
            print(f"| {svc} | {u['cpu_pct']:.1f} | {u['mem_mib']:.0f} | {u['rss_mib']:.0f} |")
        tot = {k: sum(u[k] for u in idle.containers.values()) for k in ("cpu_pct", "mem_mib")}
        tot_rss = sum(u["rss_mib"] for u in idle.containers.values())
        print(f"| **all** | {tot['cpu_pct']:.1f} | {tot['mem_mib']:.0f} | {tot_rss:.0f} |")


@contextmanager
def cluster_under_test(args: argparse.Namespace) -> Iterator[Target]:
    """The throw-away cluster of this run (local, or compose with --compose), always down after."""
    if args.compose:
        with temporary_compose("kcbench-failover", progress=to_stderr) as compose:
            yield ComposeTarget(compose)
    else:
        security, mtls = SECURITY[args.security]
        with temporary_cluster(
            "kc-bench-failover-", progress=to_stderr, security=security, mtls=mtls
        ) as (cluster, _tmp):
            yield LocalTarget(cluster, args.security)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="stop (SIGTERM) runs")
    ap.add_argument("--kill-runs", type=int, default=3, help="kill (SIGKILL) runs")
    ap.add_argument(
        "--isolate-runs",
        type=int,
        default=0,
        help="isolate (network fault, iptables; local cluster, as root) runs",
    )
    ap.add_argument("--timeout", type=float, default=90.0, help="per-run deadline, seconds")
    ap.add_argument(
        "--compose", action="store_true", help="the docker compose cluster, not the local one"
    )
    ap.add_argument(
        "--idle", type=float, default=30.0, help="--compose: idle seconds measured after the runs"
    )
    ap.add_argument("--idle-runs", type=int, default=3, help="--compose: windows of --idle")
    ap.add_argument(
        "--security",
        choices=list(SECURITY),
        default="plaintext",
        help="local cluster: its listeners' security (ssl-mtls: TLS with client certificates)",
    )
    ap.add_argument(
        "--json", type=Path, help="also write every run's figures here (bench/suite.py)"
    )
    args = ap.parse_args()
    if args.compose and args.security != "plaintext":
        ap.error("--security is for the local cluster (not --compose)")
    if args.compose and args.isolate_runs:
        ap.error(
            "--isolate-runs is for the local cluster (the docker backend has no network faults yet)"
        )
    # librdkafka complains loudly while a broker is down; keep stderr to progress lines.
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    revision = code_revision()
    load_start = load()
    with cluster_under_test(args) as target:
        ports = target.describe
        runs, restores, idle = asyncio.run(drive(target, args))
    if args.json is not None:
        keep: tuple[str, ...] = ("action", "n", "victim", "was_controller", "exited_s", "zk_s")
        keep += ("published_s", "snapshot_s", "screen_s", "stall_ms")
        rows = [{k: getattr(r, k) for k in keep} for r in runs]
        data: Any = rows
        if isinstance(target, ComposeTarget):
            data = {"runs": rows, "up_s": target.cluster.up_s, "up_steps": target.cluster.up_steps}
            if idle is not None:
                data["idle"] = dataclasses.asdict(idle)
        args.json.write_text(json.dumps(data, indent=1))
    report(
        runs,
        restores,
        args,
        f"{revision}  \nload average (1 min): {load_start} at start, {load()} at end",
        ports,
    )
    if isinstance(target, ComposeTarget):
        compose_report(target.cluster, idle)


if __name__ == "__main__":
    main()
