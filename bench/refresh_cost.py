"""The refresh cost with a ~2,000-partition cluster: each step of the data path, then the live
console idling against it.

    .venv/bin/python bench/refresh_cost.py [--topics 20] [--partitions 99] [--rf 3] [--reps 20]
                                           [--idle 30] [--no-baseline]

Starts its own throw-away 3-broker cluster on free ports in a temporary dir (bench/_cluster.py),
and always takes it down again. With the baseline (default), the idle console is first
measured on the bare cluster (test-topic only); then `--topics` x `--partitions` topics with
RF `--rf` are created and waited for (every partition led, ISR full, in ZooKeeper and in the
metadata), and measured:

  a. ZooKeeper: ZkReader(client).read_all() (own kazoo client), without and with watches; and
     the watcher's targeted re-read of 1/3 of the partition states, one read_path() each;
  b. one Admin poll: AdminReader(settings.kafka_config()).read_cluster() (the first call also
     reads every topic's min.insync.replicas; later ones within 30 s do not);
  c. SnapshotBuilder.build() from the data of (a) + (b);
  d. timeline.diff() of two consecutive snapshots, and of one where 1/3 of leaders changed;
  e. the UI (make_app(None), run_test 160x48, internal topics shown with `i`): app.apply_snapshot()
     called directly — its wall time (every pane's watcher re-syncing its rows) and the main
     thread's CPU time from that call until the app is idle again (+ layout and paint); for an
     unchanged snapshot, for 1/3 of leaders changed (with and without diff's events), plus a
     cProfile of the latter;
  f. the live ClusterObserver + app idling for `--idle` s: process CPU (user+sys / wall, 100% =
     one core) by thread, snapshots applied, app-loop stalls, RSS.

Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import dataclasses
import io
import logging
import os
import pstats
import shlex
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _common
import psutil
from _cluster import describe_ports, temporary_cluster
from _common import code_revision, load
from confluent_kafka import KafkaException
from kazoo.client import KazooClient

from kconsole.cluster.admin import AdminReader, AdminState
from kconsole.cluster.local.cluster import LocalCluster
from kconsole.cluster.local.control import LocalBrokerControl
from kconsole.cluster.zk import ZkReader, ZkState
from kconsole.config import Settings
from kconsole.models import BrokerState, ClusterSnapshot, SourceName
from kconsole.observer import ClusterObserver, SnapshotBuilder
from kconsole.timeline import diff
from kconsole.ui.app import make_app
from kconsole.ui.widgets.tables import PartitionsTable

SIZE = (160, 48)

Row = tuple[str, str, str, str]  # step, median, p95, note
OUT: list[str] = []


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def p95(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(0.95 * (len(s) - 1)))]


def timed(fn: Callable[[], Any], reps: int) -> tuple[list[float], Any]:
    out, last = [], None
    for _ in range(reps):
        t = time.perf_counter()
        last = fn()
        out.append(time.perf_counter() - t)
    return out, last


def row(step: str, xs: list[float], note: str = "") -> Row:
    return (step, f"{statistics.median(xs) * 1000:.1f}", f"{p95(xs) * 1000:.1f}", note)


# -- the cluster ------------------------------------------------------------------------------
def create_topics(cluster: LocalCluster, topics: int, partitions: int, rf: int) -> list[str]:
    names = [f"bench-{i:02d}" for i in range(topics)]
    return _common.create_topics(cluster.spec.bootstrap, names, partitions, rf, say)


def zk_all_led(zk: KazooClient, expected: int) -> tuple[int, int]:
    """(partitions in ZooKeeper, of which led with a full ISR)."""
    r = ZkReader(zk)
    r.read_all()
    good = 0
    for topic, tdata in r.topics.items():
        for p, replicas in tdata.get("partitions", {}).items():
            st = r.states.get((topic, int(p)), {})
            if st.get("leader", -1) >= 0 and sorted(st.get("isr", [])) == sorted(replicas):
                good += 1
    return sum(len(t.get("partitions", {})) for t in r.topics.values()), good


def wait_ready(cluster: LocalCluster, zk: KazooClient, expected: int, timeout: float) -> float:
    """Until ZooKeeper has `expected` partitions all led with full ISR, and the metadata from
    the Admin API has them all led. Seconds taken."""
    t0 = time.monotonic()
    deadline = t0 + timeout
    reader = AdminReader(Settings(bootstrap=cluster.spec.bootstrap, zookeeper="").kafka_config())
    last = ""
    while True:
        total, good = zk_all_led(zk, expected)
        led_md = -1
        if total >= expected and good == total:
            try:
                st = reader.read_cluster()
                parts = [p for ps in (st.topics or {}).values() for p in ps]
                led_md = sum(1 for p in parts if p.leader >= 0)
                if len(parts) >= expected and led_md == len(parts):
                    return time.monotonic() - t0
            except KafkaException:
                pass
        msg = f"zk {good}/{total} led+in sync, metadata {led_md} led"
        if msg != last:
            say(msg)
            last = msg
        if time.monotonic() > deadline:
            raise TimeoutError(f"partitions not ready after {timeout:.0f} s: {msg}")
        time.sleep(1.0)


# -- helpers for snapshots --------------------------------------------------------------------
def builder_from(zk_state: ZkState, admin: AdminState, states: dict[int, Any]) -> SnapshotBuilder:
    b = SnapshotBuilder(use_zookeeper=True)
    b.zk = zk_state
    b.admin = admin
    b.proc_states = states
    b.reachable = {bid: True for bid in admin.nodes}
    now = time.time()
    b.health[SourceName.ZOOKEEPER].success(now)
    b.health[SourceName.ADMIN].success(now)
    b.health[SourceName.GROUPS].success(now)
    return b


def moved_third(snap: ClusterSnapshot, dt: float = 1.0) -> ClusterSnapshot:
    """Every third partition led by its next in-sync replica instead (a failover's worth)."""
    parts = []
    for i, p in enumerate(snap.partitions):
        if i % 3 == 0 and len(p.isr) > 1:
            others = [r for r in p.isr if r != p.leader]
            parts.append(dataclasses.replace(p, leader=others[0]))
        else:
            parts.append(p)
    return dataclasses.replace(snap, taken_at=snap.taken_at + dt, partitions=tuple(parts))


def broker_stopped(snap: ClusterSnapshot, victim: int, dt: float = 2.0) -> ClusterSnapshot:
    """What a controlled shutdown of `victim` leaves: its leaders moved to the next in-sync
    replica, it is out of every ISR, it is down."""
    parts = []
    for p in snap.partitions:
        isr = tuple(r for r in p.isr if r != victim)
        leader = p.leader
        if leader == victim:
            leader = isr[0] if isr else -1
        parts.append(dataclasses.replace(p, leader=leader, isr=isr))
    brokers = tuple(
        dataclasses.replace(b, state=BrokerState.DOWN) if b.id == victim else b
        for b in snap.brokers
    )
    return dataclasses.replace(
        snap, taken_at=snap.taken_at + dt, partitions=tuple(parts), brokers=brokers
    )


def changed_leaders(a: ClusterSnapshot, b: ClusterSnapshot) -> int:
    old = {p.key: p.leader for p in a.partitions}
    return sum(1 for p in b.partitions if old.get(p.key) != p.leader)


# -- (a)-(d): the headless data path ----------------------------------------------------------
def data_path(
    cluster: LocalCluster, zk: KazooClient, reps: int
) -> tuple[list[Row], ClusterSnapshot, ClusterSnapshot]:
    rows: list[Row] = []
    # (a) ZooKeeper
    xs, reader = timed(lambda: _read_all(zk, None), reps)
    state = reader.snapshot()
    n = len(state.states)
    rows.append(row("a. ZooKeeper read_all(), no watches", xs, f"{n} partition states"))
    seen: list[object] = []
    xs, _ = timed(lambda: _read_all(zk, seen.append), reps)
    rows.append(row("a. ZooKeeper read_all(), with watches (as ZkWatcher)", xs, "same client"))
    third = sorted(state.states)[::3]
    paths = [f"/brokers/topics/{t}/partitions/{p}/state" for t, p in third]
    wreader = ZkReader(zk)
    wreader.read_all()

    def reread() -> None:
        for p in paths:
            wreader.read_path(p)

    xs, _ = timed(reread, max(3, reps // 4))
    rows.append(
        row(
            "a. watcher re-read of 1/3 of the states, read_path() each",
            xs,
            f"{len(paths)} sequential gets (ZkWatcher._run after a burst of watches)",
        )
    )
    # (b) Admin
    settings = Settings(bootstrap=cluster.spec.bootstrap, zookeeper=cluster.spec.zk_connect)
    admin_reader = AdminReader(settings.kafka_config())
    t = time.perf_counter()
    admin = admin_reader.read_cluster()
    first = time.perf_counter() - t
    topics = len(admin.topics or {})
    rows.append(
        (
            "b. Admin read_cluster(), first call",
            f"{first * 1000:.1f}",
            "",
            f"1 call; + describe_configs of {topics} topics (min.insync.replicas)",
        )
    )
    xs, admin = timed(admin_reader.read_cluster, reps)
    parts = sum(len(v) for v in admin.topics.values())
    rows.append(row("b. Admin read_cluster(), steady", xs, f"metadata of {parts} partitions"))
    # (c) build
    states = LocalBrokerControl(cluster).states()
    builder = builder_from(state, admin, states)
    xs, snap1 = timed(lambda: builder.build(time.time()), reps)
    rows.append(row("c. SnapshotBuilder.build()", xs, f"{len(snap1.partitions)} partitions"))
    snap2 = builder.build(time.time())
    # (d) diff
    xs, ev = timed(lambda: diff(snap1, snap2), reps)
    rows.append(row("d. diff(), consecutive snapshots", xs, f"{len(ev)} events"))
    moved = moved_third(snap2)
    xs, ev = timed(lambda: diff(snap2, moved), reps)
    rows.append(
        row(
            "d. diff(), 1/3 of leaders changed",
            xs,
            f"{changed_leaders(snap2, moved)} leaders changed, {len(ev)} events",
        )
    )
    return rows, snap2, moved


def _read_all(zk: KazooClient, watch: Callable[[Any], None] | None) -> ZkReader:
    r = ZkReader(zk, watch=watch)
    r.read_all()
    return r


# -- (e): the UI ------------------------------------------------------------------------------
async def ui_apply(
    base: ClusterSnapshot, moved: ClusterSnapshot, stopped: ClusterSnapshot, args: Any
) -> list[Row]:
    """Apply snapshots to the app directly; see the module docstring (e)."""
    rows: list[Row] = []
    app = make_app(None, refresh_s=1.0, group_refresh_s=2.0)
    app.animation_level = "none"
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("i")  # show internal topics: every partition is a row
        await pilot.pause()
        table = app.screen.query_one("#partitions", PartitionsTable)
        assert table.view.show_internal
        stamp = [0]

        def fresh(s: ClusterSnapshot) -> ClusterSnapshot:
            stamp[0] += 1
            return dataclasses.replace(s, taken_at=s.taken_at + stamp[0])

        async def apply(snap: ClusterSnapshot, events: tuple[Any, ...]) -> tuple[float, float]:
            cpu0 = time.thread_time()
            t = time.perf_counter()
            app.apply_snapshot(fresh(snap), events)
            wall = time.perf_counter() - t
            await until_quiet()
            return wall, time.thread_time() - cpu0

        async def until_quiet() -> None:
            """Pause until a pause costs the main thread < 10 ms: idle handlers (DataTable's
            column widths), layout and render have all run."""
            while True:
                c = time.thread_time()
                await pilot.pause()
                if time.thread_time() - c < 0.010:
                    return

        def add(label: str, walls: list[float], cpus: list[float], note: str = "") -> None:
            rows.append(row(f"e. {label}: apply_snapshot() call", walls, note))
            rows.append(row(f"e. {label}: call + until idle", cpus, "main-thread CPU"))
            say(f"  {rows[-2]}\n  {rows[-1]}")

        wall, cpu = await apply(base, ())
        assert table.row_count == len(base.partitions), (table.row_count, len(base.partitions))
        add(f"first snapshot, empty table -> {table.row_count} rows", [wall], [cpu], "1 call")

        walls, cpus = [], []
        for _ in range(args.reps):
            w, c = await apply(base, ())
            walls.append(w)
            cpus.append(c)
        add("unchanged snapshot (new object, same data)", walls, cpus)

        # Pairs: base -> other (the change) and other -> base (its undoing), measured apart:
        # DataTable re-measures a whole column for each cell that got narrower.
        pairs = [
            ("1/3 of leaders moved off preferred", moved, True, args.ui_reps),
            ("1/3 of leaders moved off preferred, no events", moved, False, args.ui_reps),
            ("broker 3 stopped", stopped, True, args.stop_reps),
        ]
        for label, other, with_events, n in pairs:
            if n <= 0:
                continue
            ev_to = tuple(diff(base, other)) if with_events else ()
            ev_back = tuple(diff(other, base)) if with_events else ()
            fw: tuple[list[float], list[float]] = ([], [])
            bw: tuple[list[float], list[float]] = ([], [])
            for _ in range(n):
                w, c = await apply(other, ev_to)
                fw[0].append(w)
                fw[1].append(c)
                w, c = await apply(base, ev_back)
                bw[0].append(w)
                bw[1].append(c)
            what = _describe_change(base, other)
            add(f"{label}", *fw, f"{n} x; {what}, {len(ev_to)} events")
            add(f"undo: {label}", *bw, f"{n} x; back to the base snapshot, {len(ev_back)} events")
        if args.ui_reps > 0:
            # Where the time goes: one change (1/3 of leaders moved, with events), until idle.
            prof = cProfile.Profile()
            prof.enable()
            app.apply_snapshot(fresh(moved), tuple(diff(base, moved)))
            await until_quiet()
            prof.disable()
            PROFILE.append(_profile_text(prof))
    return rows


def _describe_change(a: ClusterSnapshot, b: ClusterSnapshot) -> str:
    old = {p.key: p for p in a.partitions}
    leaders = sum(1 for p in b.partitions if old[p.key].leader != p.leader)
    isrs = sum(1 for p in b.partitions if old[p.key].isr != p.isr)
    return f"{leaders} leaders, {isrs} ISRs changed"


PROFILE: list[str] = []


def _profile_text(prof: cProfile.Profile) -> str:
    """Top functions by own time (everything), then kconsole's by cumulative time."""
    out = []
    for sort, pattern, top in (("tottime", "", 15), ("cumulative", r"kconsole/", 20)):
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats(sort).print_stats(pattern, top)
        text = s.getvalue()
        text = text[text.find("   ncalls") :]
        text = text.replace(str(Path(sys.prefix)) + "/lib/python3.11/site-packages/", "")
        text = text.replace(str(Path(__file__).resolve().parents[1]) + "/", "")
        out.append(f"-- by {sort}{' (kconsole only)' if pattern else ''}:")
        out.append(text.rstrip())
    return "\n".join(out)


# -- (f): idle ---------------------------------------------------------------------------------
class CountingObserver(ClusterObserver):
    """The live observer, counting the snapshots it publishes and its time building them."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.published = 0
        self.publish_s = 0.0

    def _publish(self, publish: bool = True) -> ClusterSnapshot:
        t = time.perf_counter()
        snap = super()._publish(publish)
        self.publish_s += time.perf_counter() - t
        self.published += 1
        return snap


def thread_groups() -> dict[int, str]:
    """Native thread id -> a group name (Python thread names, librdkafka's own)."""
    names = {t.native_id: t.name for t in threading.enumerate() if t.native_id}
    out = {}
    for t in psutil.Process().threads():
        name = names.get(t.id)
        if name is None:
            try:
                name = Path(f"/proc/self/task/{t.id}/comm").read_text().strip()
            except OSError:
                name = "?"
        if t.id == threading.main_thread().native_id:
            group = "main thread (asyncio + Textual app loop)"
        elif name.startswith("kconsole-"):
            group = name + (" (Admin poll + publish)" if name == "kconsole-admin" else "")
            if name == "kconsole-groups":
                group += " (groups poll + publish)"
            if name == "kconsole-zk":
                group += " (watches + publish)"
        elif name.startswith("rdk:"):
            group = "librdkafka threads (rdk:*)"
        else:
            group = "other (kazoo, executor, ...)"
        out[t.id] = group
    return out


def thread_cpu() -> dict[int, float]:
    return {t.id: t.user_time + t.system_time for t in psutil.Process().threads()}


async def idle(cluster: LocalCluster, seconds: float, label: str) -> list[str]:
    spec = cluster.spec
    settings = Settings(
        bootstrap=spec.bootstrap,
        zookeeper=spec.zk_connect,
        backend="local",
        cluster_dir=cluster.state_dir,
    )
    observer = CountingObserver(settings, proc_states=LocalBrokerControl(cluster).states)
    app = make_app(observer, refresh_s=settings.refresh_s, group_refresh_s=settings.group_refresh_s)
    app.animation_level = "none"
    proc = psutil.Process()
    rss_before = proc.memory_info().rss
    applied = [0]
    original = app.apply_snapshot

    def counting_apply(snapshot: ClusterSnapshot, events: Any = ()) -> None:
        applied[0] += 1
        original(snapshot, events)

    app.apply_snapshot = counting_apply  # type: ignore[method-assign]
    jvms = [cluster.zookeeper, *(cluster.broker(b) for b in spec.broker_ids)]
    async with app.run_test(size=SIZE) as pilot:
        deadline = time.monotonic() + 120
        while app.snapshot is None or not app.snapshot.partitions:
            if time.monotonic() > deadline:
                raise TimeoutError("no snapshot with partitions within 120 s")
            await asyncio.sleep(0.1)
        await pilot.press("i")
        await asyncio.sleep(5.0)  # warm up: first full reads, first min-ISR configs
        parts = len(app.snapshot.partitions)
        rows_shown = app.screen.query_one("#partitions", PartitionsTable).row_count
        lates: list[float] = []

        async def sampler() -> None:
            while True:
                t = time.monotonic()
                await asyncio.sleep(0.005)
                lates.append(time.monotonic() - t - 0.005)

        groups = thread_groups()
        before = thread_cpu()
        pub0, pubs0, app0 = observer.published, observer.publish_s, applied[0]
        jvm0 = {j.name: _cpu(j.process()) for j in jvms}
        cpu0, t0 = proc.cpu_times(), time.monotonic()
        task = asyncio.ensure_future(sampler())
        await asyncio.sleep(seconds)
        task.cancel()
        cpu1, wall = proc.cpu_times(), time.monotonic() - t0
        after = thread_cpu()
        jvm1 = {j.name: _cpu(j.process()) for j in jvms}
        published = observer.published - pub0
        publish_s = observer.publish_s - pubs0
        applies = applied[0] - app0
        rss = proc.memory_info().rss
    used = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
    by_group: dict[str, float] = {}
    for tid, c in after.items():
        g = groups.get(tid, "threads started during the window")
        by_group[g] = by_group.get(g, 0.0) + c - before.get(tid, 0.0)
    out = [
        f"**{label}**: {parts} partitions, {rows_shown} rows shown; {wall:.1f} s idle; "
        f"{published} snapshots published ({published / wall:.1f}/s, "
        f"{publish_s / max(published, 1) * 1000:.1f} ms each to build + diff), "
        f"{applies} applied by the app.",
        "",
        "| process CPU while idle | % of one core |",
        "|---|---|",
        f"| **kconsole process, total (user+sys)** | **{used / wall * 100:.1f}** |",
    ]
    for g, c in sorted(by_group.items(), key=lambda kv: -kv[1]):
        out.append(f"| &nbsp;&nbsp;{g} | {c / wall * 100:.1f} |")
    for name, start in jvm0.items():
        end = jvm1[name]
        if start is not None and end is not None:
            out.append(f"| (for scale) JVM {name} | {(end - start) / wall * 100:.1f} |")
    busy = sum(lates)
    worst = max(lates, default=0.0)
    out += [
        "",
        f"RSS: {rss / 2**20:.0f} MiB at the end (process before the app started: "
        f"{rss_before / 2**20:.0f} MiB). App loop: stalled {busy / wall * 100:.0f}% of the "
        f"time (sum of 5 ms-sleep lateness), longest stall {worst * 1000:.0f} ms.",
        "",
    ]
    return out


def _cpu(p: psutil.Process | None) -> float | None:
    if p is None:
        return None
    try:
        t = p.cpu_times()
    except psutil.Error:
        return None
    return t.user + t.system


# -- main -------------------------------------------------------------------------------------
def table(rows: list[Row]) -> list[str]:
    out = ["| step | median (ms) | p95 (ms) | note |", "|---|---|---|---|"]
    out += [f"| {s} | {m} | {p} | {n} |" for s, m, p, n in rows]
    return out


def run(cluster: LocalCluster, args: argparse.Namespace) -> None:
    if not args.no_baseline:
        say(f"baseline: idle console for {args.idle:.0f} s on the bare cluster")
        OUT.extend(asyncio.run(idle(cluster, args.idle, "(f) baseline, bare cluster")))
    zk = KazooClient(hosts=cluster.spec.zk_connect, timeout=10)
    zk.start(timeout=30)
    try:
        total0, _ = zk_all_led(zk, 0)
        t = time.monotonic()
        create_topics(cluster, args.topics, args.partitions, args.rf)
        expected = total0 + args.topics * args.partitions
        ready = wait_ready(cluster, zk, expected, args.ready_timeout)
        OUT.append(
            f"Created {args.topics} topics x {args.partitions} partitions, RF {args.rf} "
            f"(+ the {total0} existing): {expected} partitions, {expected * args.rf} replicas; "
            f"all led with full ISR, in ZooKeeper and in the metadata, "
            f"{time.monotonic() - t:.0f} s after the first create ({ready:.0f} s of waiting).\n"
        )
        say("measuring the data path")
        rows, base, moved = data_path(cluster, zk, args.reps)
        for r in rows:
            say(f"  {r}")
    finally:
        zk.stop()
        zk.close()
    OUT.append(f"Steps (a)-(d), {args.reps} repetitions each unless noted:\n")
    OUT.extend(table(rows))
    OUT.append("")
    say("measuring the UI")
    stopped = broker_stopped(base, victim=3)
    ui_rows = asyncio.run(ui_apply(base, moved, stopped, args))
    OUT.append(
        f"Step (e), the app fed directly with app.apply_snapshot(); {args.reps} repetitions "
        "unless noted. 'call' is the wall time of apply_snapshot() (every pane's watcher "
        "re-syncing its rows); 'call + until idle' is the main thread's CPU time from the call "
        "until the app is idle again (adds DataTable's idle-time column-width pass, layout, "
        "render):\n"
    )
    OUT.extend(table(ui_rows))
    OUT.append("")
    say(f"idle console for {args.idle:.0f} s on {len(base.partitions)} partitions")
    OUT.extend(asyncio.run(idle(cluster, args.idle, f"(f) {len(base.partitions)} partitions")))
    OUT.append(
        "Where (e) goes: cProfile of one apply_snapshot() with 1/3 of leaders moved off "
        "preferred (+ its events), until idle (cProfile slows it down ~2-3x):\n"
    )
    OUT.append("```")
    OUT.extend(PROFILE[0].rstrip().splitlines() if PROFILE else ["(no profile)"])
    OUT.append("```")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topics", type=int, default=20)
    ap.add_argument("--partitions", type=int, default=99)
    ap.add_argument("--rf", type=int, default=3)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument(
        "--ui-reps", type=int, default=3, help="repetitions of the 1/3-leaders-changed UI cases"
    )
    ap.add_argument(
        "--stop-reps", type=int, default=1, help="repetitions of the broker-stopped UI case"
    )
    ap.add_argument("--idle", type=float, default=30.0, help="seconds of idle measurement")
    ap.add_argument("--no-baseline", action="store_true", help="skip the bare-cluster idle run")
    ap.add_argument("--ready-timeout", type=float, default=600.0)
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    revision = code_revision()
    load_start = load()
    ports = "no cluster started"  # replaced once it is up
    try:
        with temporary_cluster("kc-bench-refresh-", down_timeout=60, progress=say) as (cluster, _):
            ports = describe_ports(cluster.spec)
            run(cluster, args)
    finally:  # whatever was measured, even when a later step failed
        cmd = " ".join(shlex.quote(a) for a in [".venv/bin/python", *sys.argv])
        mem = psutil.virtual_memory().total / 2**30
        print(f"command: `{cmd}`  ")
        print(f"code: {revision}  ")
        print(f"load average (1 min): {load_start} at start, {load()} at end  ")
        print(
            f"machine: {os.cpu_count()} cores, {mem:.0f} GiB; 3 brokers (512 MB heap) + ZooKeeper "
            f"on the same machine ({ports}); "
            f"UI headless (run_test {SIZE[0]}x{SIZE[1]}: everything but writing escape codes to "
            "a terminal).\n"
        )
        print("\n".join(OUT))


if __name__ == "__main__":
    main()
