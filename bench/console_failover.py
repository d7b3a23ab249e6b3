"""Delay from a broker stop (or kill) to the console's SCREEN showing the new leaders.

    .venv/bin/python bench/console_failover.py [--runs 5] [--kill-runs 3]

Starts its own throw-away 3-broker cluster on free ports in a temporary dir (bench/_cluster.py),
and always takes it down again. The real console runs headless (Textual's run_test) on the
live ClusterObserver. Each run:

  1. the victim is the current leader of test-topic/0 on the app's snapshot;
  2. t0, then `stop_broker` (SIGTERM, controlled shutdown) or `kill_broker` (SIGKILL) on a thread,
     so the app's loop keeps running;
  3. every 10 ms: has the partitions table (rows keyed "test-topic/<p>") got, in the leader cell
     of every partition the victim led, a leader that is neither the victim nor offline?
     Also recorded: when ZooKeeper said so (our own kazoo watch on each partition's state znode),
     when the app's snapshot said so, and when the stop/kill call returned (the process exited);
  4. the broker is started again, ISR waited for (with a deadline), a preferred-leader election
     puts every leader back, and the screen is waited for before the next run.

Prints Markdown tables (per run, then median / min / max).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import shlex
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from _cluster import describe_ports, temporary_cluster, to_stderr
from _common import code_revision, elect_preferred, load
from confluent_kafka import TopicPartition
from kazoo.client import KazooClient

from kconsole.cluster.local import LocalCluster
from kconsole.cluster.local_control import LocalBrokerControl
from kconsole.cluster.settings import TEST_TOPIC
from kconsole.config import Settings
from kconsole.models import BrokerState, ClusterSnapshot
from kconsole.observer import ClusterObserver
from kconsole.ui import format as fmt
from kconsole.ui.app import KConsoleApp, make_app
from kconsole.ui.widgets.tables import PartitionsTable

POLL_S = 0.01


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
    cluster: LocalCluster,
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
        if action == "stop":
            cluster.stop_broker(victim)
        else:
            cluster.kill_broker(victim)
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


async def restore(app: KConsoleApp, cluster: LocalCluster, victim: int) -> float:
    """Start the victim again, wait for full ISR, put leaders back; seconds it took."""
    t0 = time.monotonic()
    await asyncio.to_thread(cluster.start_broker, victim, timeout=120.0)
    await asyncio.to_thread(cluster.wait_isr_full, TEST_TOPIC, time.monotonic() + 120.0)
    await settle(app, cluster)
    return time.monotonic() - t0


async def settle(app: KConsoleApp, cluster: LocalCluster) -> None:
    count = len(
        [p for p in (app.snapshot.partitions if app.snapshot else ()) if p.topic == TEST_TOPIC]
    )
    await asyncio.to_thread(
        elect_preferred,
        cluster.spec.bootstrap,
        [TopicPartition(TEST_TOPIC, p) for p in range(count or 4)],
    )
    await wait_for(
        lambda: settled(app, cluster.spec.broker_ids), 120.0, "the screen to show a healthy cluster"
    )


# -- main -------------------------------------------------------------------------------------
async def drive(cluster: LocalCluster, args: argparse.Namespace) -> tuple[list[Run], list[float]]:
    spec = cluster.spec
    settings = Settings(
        bootstrap=spec.bootstrap,
        zookeeper=spec.zk_connect,
        backend="local",
        cluster_dir=cluster.state_dir,
    )
    observer = TimedObserver(settings, proc_states=LocalBrokerControl(cluster).states)
    app = make_app(observer, refresh_s=settings.refresh_s, group_refresh_s=settings.group_refresh_s)
    app.animation_level = "none"
    zk = KazooClient(hosts=spec.zk_connect, timeout=10)
    await asyncio.to_thread(zk.start, 30)
    stalls = LoopStalls()
    runs: list[Run] = []
    restores: list[float] = []
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            stalls.start()
            await wait_for(lambda: app.snapshot is not None, 60.0, "the first snapshot")
            await settle(app, cluster)
            await pilot.pause()
            plan = [("stop", i) for i in range(1, args.runs + 1)]
            plan += [("kill", i) for i in range(1, args.kill_runs + 1)]
            for action, n in plan:
                run = await one_run(app, observer, cluster, zk, stalls, action, n, args.timeout)
                runs.append(run)
                print(
                    f"{action} {n}: broker {run.victim} -> screen {run.screen_s:.3f} s "
                    f"(zk {run.zk_s:.3f} s, exit {run.exited_s:.3f} s)",
                    file=sys.stderr,
                )
                restores.append(await restore(app, cluster, run.victim))
    finally:
        stalls.stop()
        zk.stop()
        zk.close()
    return runs, restores


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


def report(
    runs: list[Run], restores: list[float], args: argparse.Namespace, revision: str, ports: str
) -> None:
    cmd = " ".join(shlex.quote(a) for a in [".venv/bin/python", *sys.argv])
    mem = psutil.virtual_memory().total / 2**30
    print(f"command: `{cmd}`  ")
    print(f"code: {revision}  ")
    print(f"machine: {os.cpu_count()} cores, {mem:.0f} GiB; 3 brokers (512 MB heap), ", end="")
    print(f"{ports}; {TEST_TOPIC} 4 x RF3; ")
    print(
        "console: real app, headless (run_test, 160x48), live ClusterObserver (ZooKeeper watches, "
        f"Admin poll every 1 s); screen polled every {POLL_S * 1000:.0f} ms.\n"
    )
    print(
        "| run | action | victim | was controller | partitions it led | process exited (s) "
        "| ZooKeeper: new leaders (s) | observer published (s) | app snapshot (s) "
        "| **screen (s)** | screen - ZooKeeper (ms) | longest app-loop stall (ms) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        print(
            f"| {r.n} | {'SIGTERM (stop)' if r.action == 'stop' else 'SIGKILL (kill)'} "
            f"| {r.victim} | {'yes' if r.was_controller else 'no'} "
            f"| {','.join(map(str, r.partitions))} | {s3(r.exited_s)} | {s3(r.zk_s)} "
            f"| {s3(r.published_s)} | {s3(r.snapshot_s)} | **{s3(r.screen_s)}** "
            f"| {ms(r.screen_s - r.zk_s)} | {r.stall_ms:.0f} |"
        )
    print()
    for action, name in (("stop", "stop (SIGTERM)"), ("kill", "kill (SIGKILL)")):
        sel = [r for r in runs if r.action == action]
        if sel:
            print("\n".join(summary(name, sel)))
            print()
    if restores:
        print(
            f"Restore between runs (start broker, full ISR, preferred election, screen settled): "
            f"median {statistics.median(restores):.1f} s."
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="stop (SIGTERM) runs")
    ap.add_argument("--kill-runs", type=int, default=3, help="kill (SIGKILL) runs")
    ap.add_argument("--timeout", type=float, default=90.0, help="per-run deadline, seconds")
    ap.add_argument(
        "--json", type=Path, help="also write every run's figures here (bench/suite.py)"
    )
    args = ap.parse_args()
    # librdkafka complains loudly while a broker is down; keep stderr to progress lines.
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    revision = code_revision()
    load_start = load()
    with temporary_cluster("kc-bench-failover-", progress=to_stderr) as (cluster, _tmp):
        ports = describe_ports(cluster.spec)
        runs, restores = asyncio.run(drive(cluster, args))
    if args.json is not None:
        keep: tuple[str, ...] = ("action", "n", "victim", "was_controller", "exited_s", "zk_s")
        keep += ("published_s", "snapshot_s", "screen_s", "stall_ms")
        args.json.write_text(json.dumps([{k: getattr(r, k) for k in keep} for r in runs], indent=1))
    report(
        runs,
        restores,
        args,
        f"{revision}  \nload average (1 min): {load_start} at start, {load()} at end",
        ports,
    )


if __name__ == "__main__":
    main()
