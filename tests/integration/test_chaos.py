"""Chaos tests of the console itself (issue 13): the real ClusterObserver and KConsoleApp on the
real local cluster while ZooKeeper, every broker, one frozen broker or a group's coordinator
fail under it.

In every scenario, throughout the fault and the recovery:
  (a) the app keeps running, with no exception;
  (b) it answers a key within a second: tab moves the focus to the next pane, in a loop, each
      press timed until the focus has moved (Watch);
  (c) what is affected says so: the header's source marks and the panes' subtitles read
      "STALE <age>" / "degraded" / "via ..." with the reason (checked on every sample, plus
      what each scenario must show);
  (d) it recovers without a restart: every source "ok" in the header, brokers 1-3 "up".
Scenario 5 also follows one group's lag cell: never "0" while the true lag (read with clients of
our own) is above 0, and a fresh figure within 10 s of the coordinator moving.

The test's own clients never describe a group while its coordinator may be dead: librdkafka
(2.16) aborts the whole process (`rd_kafka_enq_once_del_source_return: Assertion
eonce->refcnt > 0`, in rd_kafka_admin_coord_response_parse) when a DescribeConsumerGroups is
pending as the coordinator dies. The coordinator is read from ZooKeeper instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Coroutine
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient
from rich.text import Text
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widget import Widget

from kconsole.cluster.local.cluster import LocalCluster
from kconsole.cluster.reassign.client import ReassignClient
from kconsole.cluster.settings import TEST_TOPIC, TEST_TOPIC_PARTITIONS
from kconsole.cluster.values import ProcState
from kconsole.ui.app import KConsoleApp
from kconsole.ui.widgets.panes import ControllerView, HeaderLine, Pane
from kconsole.ui.widgets.table import KeyedTable
from tests import tables
from tests.integration.conftest import (
    ATTACH_ENV,
    controller,
    partition_state,
    registered,
    restore,
)
from tests.integration.test_console_live import live_app
from tests.integration.test_observer import settings_for
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

SIZE = (160, 48)
# A key's answer, less the time the app's thread waited on the run queue for a CPU that other
# processes held (its schedstat): what the console itself took, running or blocked (on I/O, a
# lock, the GIL its own threads hold). A key once took 1.26 s of wall time on a 2-core machine
# with a core busy, the other half of the suite and three starting JVMs: the thread's samples
# showed it restyling and drawing, not waiting on the cluster.
KEY_BUDGET_S = 1.0
BUSY_S = 0.3  # a key waiting longer than this has the app's thread sampled
LOG = logging.getLogger("tests.chaos.rdkafka")  # librdkafka's lines, off the terminal
SOURCES = ("ZooKeeper", "Admin API", "groups")
CLUSTER_PANES = ("brokers-pane", "controller-pane", "partitions-pane")
PANES = (*CLUSTER_PANES, "groups-pane")
# fmt.age: 0s, 42s, 3m05s, 2h07m, 3d04h; "—" / "no data" before any success.
AGE = r"(?:\d+[smhd](?:\d\d[smh])?|—|no data)"
MARK = re.compile(rf"(ZooKeeper|Admin API|groups) +(ok|degraded|STALE) +({AGE})")
SUBTITLE = (
    re.compile(rf"STALE {AGE}: \S.*"),  # the pane's own source failed: age and reason
    re.compile(r"via \S.* · \S.* down: \S.*"),  # served by the fallback source, with why
    re.compile(r"degraded: \S.*"),  # answering, part unread: what
)
FRESH_LAG = re.compile(r"[0-9][0-9,]*")
WATCH: ContextVar[Watch | None] = ContextVar("WATCH", default=None)
OFFSETS_TOPIC = "__consumer_offsets"
LAG_CELL = re.compile(r"([0-9][0-9,]*)( \+ \?)?( \(\S+ old\))?")


# -- reading the screen (always the main screen, whatever may be on top of it) -----------------
def main_screen(app: KConsoleApp) -> Screen[Any]:
    return app.screen_stack[0]


def header(app: KConsoleApp) -> str:
    content = main_screen(app).query_one("#header", HeaderLine).content
    return content.plain if isinstance(content, Text) else str(content)


def marks(app: KConsoleApp) -> dict[str, tuple[str, str]]:
    """The header's mark per source: label -> (ok | degraded | STALE, age)."""
    return {m[1]: (m[2], m[3]) for m in MARK.finditer(header(app))}


def subtitle(app: KConsoleApp, pane: str) -> str:
    return str(main_screen(app).query_one(f"#{pane}", Pane).border_subtitle or "")


def cell(app: KConsoleApp, table: str, row: str, column: str) -> str | None:
    t = tables.table(main_screen(app), table)
    if row not in t.row_keys:
        return None
    return t.get_cell(row, column).plain


def controller_shown(app: KConsoleApp) -> str:
    content = main_screen(app).query_one("#controller", ControllerView).content
    return content.plain if isinstance(content, Text) else str(content)


def broker_states(app: KConsoleApp) -> dict[str, str]:
    t = main_screen(app).query_one("#brokers", KeyedTable)
    return {str(k): t.get_cell(k, "state").plain for k in t.row_keys}


def age_s(age: str) -> float:
    """fmt.age back to seconds (for "has been stale at least this long")."""
    total = 0.0
    for n, unit in re.findall(r"(\d+)([smhd])", age):
        total += int(n) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[unit]
    return total


def all_ok(app: KConsoleApp) -> bool:
    m = marks(app)
    return len(m) == len(SOURCES) and all(m[s][0] == "ok" for s in SOURCES)


def brokers_up(app: KConsoleApp) -> bool:
    return broker_states(app) == {"1": "up", "2": "up", "3": "up"}


def alive(app: KConsoleApp) -> None:
    """(a): still running, no exception caught by the app."""
    assert app.is_running, "the console stopped"
    assert app._exception is None, f"the console raised {app._exception!r}"


def check_marks(app: KConsoleApp) -> None:
    """(c), on every sample: each source has a mark with an age; each pane subtitle has its
    age or reason; and the groups pane and the cluster panes agree with the header."""
    m = marks(app)
    assert set(m) == set(SOURCES), f"header without every source mark: {header(app)!r}"
    subs = {p: subtitle(app, p) for p in PANES}
    for pane, text in subs.items():
        assert not text or any(r.fullmatch(text) for r in SUBTITLE), (pane, text)
    groups = m["groups"][0]
    g = subs["groups-pane"]
    assert (groups == "STALE") == g.startswith("STALE"), (m, g)
    assert (groups == "degraded") == g.startswith("degraded"), (m, g)
    zk_state, admin_state = m["ZooKeeper"][0], m["Admin API"][0]
    for pane in CLUSTER_PANES:
        s = subs[pane]
        if zk_state == "STALE" and admin_state == "STALE":
            assert s.startswith("STALE"), (m, pane, s)
        elif zk_state == "STALE":
            assert s.startswith("via Admin API · ZooKeeper down: "), (m, pane, s)
        else:
            assert not s.startswith(("STALE", "via")), (m, pane, s)


async def until(
    cond: Callable[[], object],
    timeout: float,
    what: str,
    detail: Callable[[], object] | None = None,
) -> float:
    """Poll `cond` on the app's loop until true; returns the seconds it took. A failure of the
    running Watch (a key not answered, a wrong mark) ends the wait at once; on a timeout,
    `detail()` says what was there instead."""
    t0 = time.monotonic()
    while not cond():
        if (watch := WATCH.get()) is not None and watch.failure is not None:
            raise watch.failure
        if time.monotonic() - t0 > timeout:
            raise AssertionError(
                f"timed out after {timeout:.0f} s waiting for {what}"
                + (f"; instead: {detail()}" if detail is not None else "")
            )
        await asyncio.sleep(0.05)
    return time.monotonic() - t0


async def settled(app: KConsoleApp) -> None:
    await until(
        lambda: app.snapshot is not None and all_ok(app) and brokers_up(app),
        60,
        "every source ok and brokers 1-3 up",
        lambda: (header(app), broker_states(app)),
    )


async def recovered(app: KConsoleApp, timeout: float = 90.0) -> float:
    """(d): every source ok in the header and brokers 1-3 up, on the same console."""
    took = await until(
        lambda: all_ok(app) and brokers_up(app),
        timeout,
        "the header to say ok for every source and brokers 1-3 up",
        lambda: (header(app), broker_states(app), {p: subtitle(app, p) for p in PANES}),
    )
    for pane in PANES:
        assert not subtitle(app, pane), (pane, subtitle(app, pane))
    return took


# -- (b) and the samples of (c) --------------------------------------------------------------
@dataclass
class Watch:
    """While a scenario runs: presses tab in a loop, timing each press until the focus moved,
    and samples the screen every 100 ms (the checks of (a) and (c), and the scenario's own)."""

    app: KConsoleApp
    pilot: Pilot[Any]
    sample: Callable[[], None] | None = None  # a scenario's own per-sample check
    # (at, key, seconds until the screen showed it, of which the app's thread was runnable but
    # waiting for a CPU)
    keys: list[tuple[float, str, float, float]] = field(default_factory=list)
    seen: set[tuple[str, str]] = field(default_factory=set)  # header marks (source, state)
    subtitles: set[str] = field(default_factory=set)  # with the age taken out
    failure: BaseException | None = None  # the first failure of a loop (it then stops)
    # What the app's thread was running while a key waited more than BUSY_S, per key press.
    busy: dict[float, list[str]] = field(default_factory=dict)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _presses: set[asyncio.Task[None]] = field(default_factory=set)
    _pending: float | None = None  # when the key now waiting for the screen was pressed
    _sampler_stop: threading.Event = field(default_factory=threading.Event)
    _sampler: threading.Thread | None = None
    _tid: int = 0  # the app's thread, as the kernel knows it (its schedstat)

    async def __aenter__(self) -> Watch:
        WATCH.set(self)
        loop_thread = threading.get_ident()
        self._tid = threading.get_native_id()
        self._sampler = threading.Thread(target=self._stacks, args=(loop_thread,), daemon=True)
        self._sampler.start()
        self._tasks = [
            asyncio.create_task(self._guard(self._keys_loop())),
            asyncio.create_task(self._guard(self._sample_loop())),
        ]
        return self

    async def __aexit__(self, *exc: object) -> None:
        WATCH.set(None)
        self._stop.set()
        self._sampler_stop.set()
        if self._sampler is not None:
            self._sampler.join(5)
        await asyncio.gather(*self._tasks)
        await asyncio.gather(*self._presses, return_exceptions=True)
        if self.failure is not None:  # the cause of whatever the scenario then ran into
            raise self.failure

    async def _guard(self, loop: Coroutine[Any, Any, None]) -> None:
        try:
            await loop
        except Exception as exc:
            self.failure = self.failure or exc

    def _stacks(self, loop_thread: int) -> None:
        """Samples the app's thread while a key waits: the evidence when one is slow."""
        while not self._sampler_stop.wait(0.05):
            t0 = self._pending
            if t0 is None or time.monotonic() - t0 < BUSY_S:
                continue
            frame = sys._current_frames().get(loop_thread)
            if frame is not None:
                stack = traceback.extract_stack(frame)[-16:]
                text = " <- ".join(
                    f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in stack[::-1]
                )
                self.busy.setdefault(t0, []).append(f"+{time.monotonic() - t0:.2f}s {text}")

    def _run_queue_s(self) -> float:
        """Seconds the app's thread has spent runnable, waiting for a CPU (0.0 when the kernel
        does not say: every second of a key then counts as the console's)."""
        try:
            return int(Path(f"/proc/self/task/{self._tid}/schedstat").read_text().split()[1]) / 1e9
        except (OSError, ValueError, IndexError):
            return 0.0

    async def _press(self, key: str, changed: Callable[[], bool]) -> None:
        t0 = time.monotonic()
        queued0 = self._run_queue_s()
        self._pending = t0
        # pilot.press returns only once the process looks idle (up to ~2 s with the observer's
        # and the workload's threads busy): the key is timed until the screen shows it.
        task = asyncio.create_task(self.pilot.press(key))
        self._presses.add(task)
        task.add_done_callback(self._presses.discard)
        while not changed():
            if task.done() and task.exception() is not None:
                raise AssertionError(f"pressing {key}") from task.exception()
            if time.monotonic() - t0 > 30:
                raise AssertionError(f"the screen did not change 30 s after pressing {key}")
            await asyncio.sleep(0.005)
        self._pending = None
        self.keys.append((t0, key, time.monotonic() - t0, self._run_queue_s() - queued0))

    async def _keys_loop(self) -> None:
        app = self.app
        while not self._stop.is_set():

            def moved(before: Widget | None = app.focused) -> bool:
                return app.focused is not before

            await self._press("tab", moved)
            with contextlib.suppress(TimeoutError):  # pacing: the probe's own renders stay light
                await asyncio.wait_for(self._stop.wait(), 0.4)

    async def _sample_loop(self) -> None:
        while not self._stop.is_set():
            alive(self.app)
            check_marks(self.app)
            self.seen.update((s, st) for s, (st, _age) in marks(self.app).items())
            for p in PANES:
                if text := subtitle(self.app, p):
                    self.subtitles.add(re.sub(rf"STALE {AGE}", "STALE <age>", text))
            if self.sample is not None:
                self.sample()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), 0.1)

    def assert_responsive(self, scenario: str, fault_at: float, fault_end: float) -> float:
        during = [s for at, _k, s, _q in self.keys if fault_at <= at <= fault_end]
        slowest = max(self.keys, key=lambda k: k[2] - k[3])
        worst, queued = slowest[2] - slowest[3], slowest[3]
        busy = "\n  ".join(self.busy.get(slowest[0], ["(not sampled)"]))
        print(
            f"\n[chaos] {scenario}: {len(self.keys)} keys ({len(during)} during the fault), "
            f"median {statistics.median(s for _at, _k, s, _q in self.keys) * 1000:.0f} ms, "
            f"slowest {worst * 1000:.0f} ms of its own (+{queued * 1000:.0f} ms waiting for a "
            f"CPU) at {slowest[0] - fault_at:+.1f} s; "
            f"marks seen {sorted(self.seen)}; subtitles {sorted(self.subtitles)}"
            + (f"\n[chaos] the app's thread meanwhile:\n  {busy}" if worst > BUSY_S else "")
        )
        assert len(during) >= 4, f"{scenario}: only {len(during)} keys pressed during the fault"
        assert worst < KEY_BUDGET_S, (
            f"{scenario}: the console took {worst:.2f} s of its own to answer {slowest[1]!r} "
            f"(+{queued:.2f} s waiting for a CPU; budget {KEY_BUDGET_S:.0f} s; slowest of "
            f"{len(self.keys)}, "
            f"{slowest[0] - fault_at:+.1f} s from the fault); the app's thread meanwhile:\n  {busy}"
        )
        return worst


@contextlib.asynccontextmanager
async def console(cluster: LocalCluster) -> Any:
    app = live_app(cluster)
    async with app.run_test(size=SIZE) as pilot:
        await settled(app)
        # The sources can be ok before the console has drawn its start (the first snapshots'
        # rows, the key bar): the watch times keys during the fault, not that queue.
        await pilot.pause()
        yield app, pilot
        alive(app)


# -- helpers on the cluster ------------------------------------------------------------------
def session_timeout_s(cluster: LocalCluster, broker_id: int) -> float:
    """zookeeper.session.timeout.ms from the server.properties the local cluster wrote."""
    path = cluster.proc_dir(f"broker-{broker_id}") / "server.properties"
    props = dict(
        line.split("=", 1)
        for line in path.read_text().splitlines()
        if "=" in line and line[0] != "#"
    )
    return int(props["zookeeper.session.timeout.ms"]) / 1000


def leaders(zk: KazooClient) -> dict[int, int]:
    return {
        p: int(partition_state(zk, TEST_TOPIC, p)["leader"]) for p in range(TEST_TOPIC_PARTITIONS)
    }


def prefer_leaders(cluster: LocalCluster, zk: KazooClient) -> None:
    """A preferred-leader election on test-topic; returns once ZooKeeper shows every partition
    led by its first replica."""
    with ReassignClient(settings_for(cluster)) as client:  # what the console's "e" uses
        client.elect("preferred", [(TEST_TOPIC, p) for p in range(TEST_TOPIC_PARTITIONS)])
    assign = json.loads(zk.get(f"/brokers/topics/{TEST_TOPIC}")[0])["partitions"]
    preferred = {int(p): replicas[0] for p, replicas in assign.items()}
    wait_until(lambda: leaders(zk) == preferred, 30, "the preferred leaders on test-topic")


def client_config(cluster: LocalCluster, **extra: Any) -> dict[str, Any]:
    return {"bootstrap.servers": cluster.spec.bootstrap, "logger": LOG, **extra}


def delete_groups(cluster: LocalCluster, *groups: str) -> None:
    admin = AdminClient(client_config(cluster))
    for fut in admin.delete_consumer_groups(list(groups), request_timeout=10).values():
        with contextlib.suppress(Exception):  # already gone, or a member still leaving
            fut.result(timeout=15)


# -- the scenarios ---------------------------------------------------------------------------
async def test_zookeeper_stopped_then_restarted(healthy: LocalCluster, zk: KazooClient) -> None:
    """ZooKeeper down: its header mark goes STALE with an age, the cluster panes say they are
    served by the Admin API and why; it comes back to ok by itself once ZooKeeper is up."""
    async with console(healthy) as (app, pilot), Watch(app, pilot) as watch:
        fault_at = time.monotonic()
        try:
            await asyncio.to_thread(healthy.stop_zookeeper)
            await until(
                lambda: (
                    marks(app)["ZooKeeper"][0] == "STALE" and age_s(marks(app)["ZooKeeper"][1]) >= 2
                ),
                30,
                "ZooKeeper STALE for 2 s in the header",
                lambda: header(app),
            )
            assert re.search(rf"ZooKeeper +STALE {AGE}", header(app)), header(app)
            assert marks(app)["Admin API"][0] == "ok", header(app)
            for pane in CLUSTER_PANES:
                text = subtitle(app, pane)
                assert text.startswith("via Admin API · ZooKeeper down: "), (pane, text)
            assert brokers_up(app), broker_states(app)
        finally:
            if healthy.zookeeper.state() is ProcState.STOPPED:
                await asyncio.to_thread(healthy.start_zookeeper)
        await recovered(app)
        fault_end = time.monotonic()
    watch.assert_responsive("ZooKeeper stopped", fault_at, fault_end)


async def test_every_broker_stopped_then_started(healthy: LocalCluster, zk: KazooClient) -> None:
    """No broker left: the Admin API and groups go STALE with an age, the groups pane says why,
    the brokers show down (from ZooKeeper, which stays ok); all recover when they start."""
    ctl = controller(zk)
    order = [b for b in healthy.spec.broker_ids if b != ctl] + ([ctl] if ctl else [])

    def stop_all() -> None:
        for b in order:  # the controller last: each controlled shutdown then has one to talk to
            healthy.stop_broker(b)

    def start_all() -> None:
        # One at a time, each once the previous one registered: three JVMs starting together
        # starve this 2-core machine (the console included) for seconds.
        for b in healthy.spec.broker_ids:
            if healthy.broker(b).state() is ProcState.STOPPED:
                healthy.start_broker(b, wait=True)

    async with console(healthy) as (app, pilot), Watch(app, pilot) as watch:
        fault_at = time.monotonic()
        try:
            await asyncio.to_thread(stop_all)
            await until(
                lambda: set(broker_states(app).values()) == {"down"},
                30,
                "every broker down",
                lambda: broker_states(app),
            )
            await until(
                lambda: (
                    marks(app)["Admin API"][0] == "STALE" and marks(app)["groups"][0] == "STALE"
                ),
                40,
                "the Admin API and groups STALE in the header",
                lambda: header(app),
            )
            assert marks(app)["ZooKeeper"][0] == "ok", header(app)
            assert re.search(rf"Admin API +STALE {AGE}", header(app)), header(app)
            assert re.search(rf"groups +STALE {AGE}", header(app)), header(app)
            assert re.fullmatch(rf"STALE {AGE}: \S.*", subtitle(app, "groups-pane")), subtitle(
                app, "groups-pane"
            )
        finally:
            await asyncio.to_thread(start_all)
        await recovered(app)
        fault_end = time.monotonic()
    watch.assert_responsive("every broker stopped", fault_at, fault_end)


async def test_broker_paused_past_its_session_timeout(
    healthy: LocalCluster, zk: KazooClient
) -> None:
    """The controller frozen (SIGSTOP) until ZooKeeper expires its session: the console shows it
    paused, a new controller and the leaders moved off it, then all of it back when resumed."""
    victim = controller(zk)
    assert victim is not None
    timeout_s = session_timeout_s(healthy, victim)
    async with console(healthy) as (app, pilot), Watch(app, pilot) as watch:
        fault_at = time.monotonic()
        try:
            await asyncio.to_thread(healthy.pause_broker, victim)
            t_paused = time.monotonic()
            await until(
                lambda: broker_states(app).get(str(victim)) == "paused", 10, "the broker paused"
            )

            def expired() -> bool:
                return victim not in registered(zk)

            await until_thread(expired, 3 * timeout_s + 20, "its registration to leave ZooKeeper")
            print(
                f"\n[chaos] broker {victim} left ZooKeeper {time.monotonic() - t_paused:.1f} s "
                f"after SIGSTOP (session timeout {timeout_s:.0f} s)"
            )
            new_ctl = await until_thread(
                lambda: (c := controller(zk)) is not None and c != victim and c,
                30,
                "a new controller",
            )
            await until(
                lambda: f"broker {new_ctl}" in controller_shown(app), 15, "the new controller"
            )

            def moved() -> dict[int, int] | None:
                now = leaders(zk)
                return now if victim not in now.values() else None

            await until_thread(moved, 30, "test-topic's leaders off the paused broker")

            def shown() -> dict[int, str | None]:
                return {
                    p: cell(app, "partitions", f"{TEST_TOPIC}/{p}", "leader")
                    for p in range(TEST_TOPIC_PARTITIONS)
                }

            # What ZooKeeper says now (it may move again: the console must follow).
            zk_now: dict[int, int] = {}

            async def matches() -> bool:
                zk_now.update(await asyncio.to_thread(leaders, zk))
                return shown() == {p: str(b) for p, b in zk_now.items()}

            t0 = time.monotonic()
            while not await matches():
                assert time.monotonic() - t0 < 15, (
                    f"the partitions pane shows leaders {shown()}, ZooKeeper {zk_now}"
                )
                await asyncio.sleep(0.1)
            assert broker_states(app).get(str(victim)) == "paused", broker_states(app)
        finally:
            if healthy.broker(victim).state() is ProcState.PAUSED:
                await asyncio.to_thread(healthy.resume_broker, victim)
        await asyncio.to_thread(restore, healthy, zk)
        await recovered(app)
        fault_end = time.monotonic()
    watch.assert_responsive("broker paused past its session", fault_at, fault_end)


async def test_admin_calls_hang_on_a_paused_broker(healthy: LocalCluster, zk: KazooClient) -> None:
    """A broker that is not the controller frozen (SIGSTOP, its sockets open) while it leads a
    partition a group reads: every request to it hangs until its timeout. The groups pane says
    what could not be read (degraded, or STALE, with the reason), the group's lag is never a
    made-up 0, the keys keep answering, and all is back to ok when it resumes."""
    ctl = controller(zk)
    if set(leaders(zk).values()) <= {ctl}:
        # An earlier fault left every leader on the controller (the automatic rebalance runs
        # only every 30 s): back to the preferred leaders, spread over the brokers.
        await asyncio.to_thread(prefer_leaders, healthy, zk)
    lead = leaders(zk)
    # The one leading the most test-topic partitions, so the groups poll has to ask it.
    candidates = sorted(
        (b for b in healthy.spec.broker_ids if b != ctl and b in lead.values()),
        key=lambda b: -list(lead.values()).count(b),
    )
    assert candidates, f"no broker but the controller {ctl} leads test-topic: {lead}"
    victim = candidates[0]
    # A group the victim does not coordinate (a group whose coordinator is frozen is the
    # coordinator scenario's business), with offset 0 committed on every partition, each of
    # which holds messages: its lag is above 0. (FindCoordinator creates __consumer_offsets on
    # a cluster that never had a group.)
    await until_thread(
        lambda: described_coordinator(healthy, "chaos-idle-0") is not None,
        60,
        "a group coordinator",
    )
    group = await until_thread(
        lambda: next(
            (
                g
                for g in (f"chaos-idle-{i}" for i in range(20))
                if coordinator_of(zk, g) not in (victim, -1)
            ),
            None,
        ),
        30,
        "a group id the victim does not coordinate",
    )
    await asyncio.to_thread(produce_to_every_partition, healthy, 10)
    await asyncio.to_thread(commit_offsets, healthy, group, 0)
    seen: list[tuple[float, str | None, str, str]] = []

    def sample() -> None:
        lag, mark = cell(app, "groups", group, "lag"), marks(app)["groups"][0]
        seen.append((time.monotonic(), lag, mark, subtitle(app, "groups-pane")))
        m = LAG_CELL.fullmatch(lag or "")
        assert m is None or _n(m[1]) > 0 or m[2], f"lag shown as {lag!r}"

    async with console(healthy) as (app, pilot), Watch(app, pilot, sample) as watch:
        await until(
            lambda: FRESH_LAG.fullmatch(cell(app, "groups", group, "lag") or ""),
            30,
            f"{group}'s lag on screen",
        )
        fault_at = time.monotonic()
        try:
            await asyncio.to_thread(healthy.pause_broker, victim)
            await until(
                lambda: broker_states(app).get(str(victim)) == "paused", 10, "the broker paused"
            )
            # The groups poll asks the paused leader for its log-end offsets and waits out its
            # timeout; the pane then says so.
            await until(
                lambda: marks(app)["groups"][0] in ("degraded", "STALE"),
                session_timeout_s(healthy, victim) + 30,
                "the groups source marked degraded or STALE",
                lambda: (header(app), cell(app, "groups", group, "lag")),
            )
            text = subtitle(app, "groups-pane")
            assert re.fullmatch(rf"(degraded: |STALE {AGE}: )\S.*", text), text
            lag = cell(app, "groups", group, "lag") or ""
            assert not FRESH_LAG.fullmatch(lag), f"{group}'s lag {lag!r} shown as fresh"
            assert cell(app, "groups", group, "note"), f"{group}'s row does not say why"
        finally:
            if healthy.broker(victim).state() is ProcState.PAUSED:
                await asyncio.to_thread(healthy.resume_broker, victim)
        await asyncio.to_thread(restore, healthy, zk)
        await recovered(app)
        await until(
            lambda: FRESH_LAG.fullmatch(cell(app, "groups", group, "lag") or ""),
            30,
            f"{group}'s lag fresh again",
        )
        fault_end = time.monotonic()
    with contextlib.suppress(Exception):
        await asyncio.to_thread(delete_groups, healthy, group)
    print_timeline(f"broker {victim} paused, {group}", seen, fault_at)
    watch.assert_responsive("Admin calls hanging on a paused broker", fault_at, fault_end)


COORDINATOR_GROUP = "chaos-consumer"


def test_coordinator_killed_while_the_group_consumes(
    healthy: LocalCluster, zk: KazooClient
) -> None:
    """A consuming group's coordinator SIGKILLed, with the console in a pytest process of its
    own (test_coordinator_killed_in_own_process): a native crash of the console then fails
    this test, with the evidence, instead of ending the whole run."""
    env = {**os.environ, ATTACH_ENV: str(healthy.state_dir)}
    node = f"{Path(__file__).resolve()}::test_coordinator_killed_in_own_process"
    argv = [sys.executable, "-m", "pytest", node, "-q", "-s", "-p", "no:cacheprovider"]
    try:
        run = subprocess.run(
            argv,
            cwd=Path(__file__).resolve().parents[2],
            env=env,
            capture_output=True,
            text=True,
            timeout=400,
            stdin=subprocess.DEVNULL,
        )
    finally:
        restore(healthy, zk)  # the killed broker, should the child have died before that
        with contextlib.suppress(Exception):
            delete_groups(healthy, COORDINATOR_GROUP)
    out = run.stdout + run.stderr
    print("\n".join(ln for ln in out.splitlines() if ln.startswith(("[chaos]", "  +"))))
    crash = [ln for ln in out.splitlines() if "Assertion" in ln or "Fatal Python" in ln]
    assert run.returncode not in (-6, 134, -11, 139), (
        f"the console's process crashed (exit {run.returncode}): {crash}\n{out[-3000:]}"
    )
    assert run.returncode == 0 and re.search(r"\b1 passed", out), out[-6000:]


@pytest.mark.skipif(
    not os.environ.get(ATTACH_ENV),
    reason="run in a process of its own by test_coordinator_killed_while_the_group_consumes",
)
async def test_coordinator_killed_in_own_process(healthy: LocalCluster, zk: KazooClient) -> None:
    """A consuming group's coordinator SIGKILLed: the lag cell is carried (with its age) or
    partial ("+ ?"), never "0" while the true lag is above 0, and a fresh figure is back within
    10 s of the coordinator having moved."""
    group = COORDINATOR_GROUP
    load = Workload(healthy, group)
    # (when, lag cell or None when the row is missing, the header's groups mark, its subtitle)
    screen: list[tuple[float, str | None, str, str]] = []

    def sample() -> None:
        lag, mark = cell(app, "groups", group, "lag"), marks(app)["groups"][0]
        screen.append((time.monotonic(), lag, mark, subtitle(app, "groups-pane")))
        if lag is not None and not FRESH_LAG.fullmatch(lag) and lag != "—":
            # Carried, partial or unknown: the row says why, and so does the source -- unless
            # what it leaves out is partitions the group has not committed yet (the consumer
            # joined a moment ago): that is read, not unread, and the note says so.
            note = cell(app, "groups", group, "note")
            assert note, f"lag {lag!r} without a note"
            if "no committed offset" not in note:
                assert mark in ("degraded", "STALE"), f"lag {lag!r} while groups are {mark}"

    load.start()
    try:
        async with console(healthy) as (app, pilot), Watch(app, pilot, sample) as watch:
            await until(
                lambda: (
                    FRESH_LAG.fullmatch(c := cell(app, "groups", group, "lag") or "")
                    and _n(c) > 0
                    # Well above what the consumer can take in while a read of the true lag
                    # waits on the dead coordinator: that read then still sees it above 0.
                    and load.truth_lag() > 1000
                ),
                60,
                f"{group}'s lag on screen and a true lag above 1,000",
            )
            coordinator = coordinator_of(zk, group)
            described = await until_thread(
                lambda: described_coordinator(healthy, group), 30, "the group described"
            )
            assert described == coordinator, f"ZooKeeper says {coordinator}, Kafka {described}"
            fault_at = time.monotonic()
            try:
                await asyncio.to_thread(healthy.kill_broker, coordinator)
                t_killed = time.monotonic()
                new = await until_thread(
                    lambda: (c := coordinator_of(zk, group)) not in (coordinator, -1) and c,
                    60,
                    "a new coordinator",
                )
                t_moved, wall_moved = time.monotonic(), time.time()
                back = await until(
                    lambda: (
                        FRESH_LAG.fullmatch(cell(app, "groups", group, "lag") or "")
                        and fresh_groups(app, wall_moved)
                    ),
                    10,
                    "a fresh lag figure within 10 s of the coordinator moving",
                    lambda: (
                        cell(app, "groups", group, "lag"),
                        cell(app, "groups", group, "note"),
                        header(app),
                    ),
                )
                print(
                    f"\n[chaos] coordinator {coordinator} killed; {new} took over "
                    f"{t_moved - t_killed:.1f} s later; fresh lag on screen {back:.1f} s after"
                )
            finally:
                await asyncio.to_thread(restore, healthy, zk)
            await recovered(app)
            fault_end = time.monotonic()
    finally:
        load.stop()
    outage = [x for x in screen if t_killed <= x[0] <= t_moved + back]
    truth = [(t, lag) for t, lag in load.truth if t >= fault_at]
    print_timeline(f"coordinator {coordinator} killed, {group}", outage, t_killed)
    print(
        f"[chaos] true lag {[lag for _t, lag in truth]} ({len(truth)} reads); unreadable: "
        f"{[(round(t - t_killed, 1), e[:80]) for t, e in load.truth_errors]}; "
        f"produced {load.produced}, consumed {load.consumed}"
    )
    assert load.error is None, load.error
    # Committed offsets cannot move while the group has no coordinator and log ends never go
    # back: the true lag between two reads is at least the earlier one.
    assert truth and min(lag for _t, lag in truth) > 0, f"the true lag was 0 at times: {truth}"
    assert any(t_moved < t for t, _lag in truth), "the true lag was not read after the move"
    zeros = [
        c
        for _t, c, _m, _s in outage
        if c and (m := LAG_CELL.fullmatch(c)) and not m[2] and _n(m[1]) == 0
    ]
    assert not zeros, f"lag shown as 0 while the true lag was > 0: {zeros}"
    assert load.produced > load.consumed > 0, (load.produced, load.consumed)
    watch.assert_responsive("coordinator killed", fault_at, fault_end)


# -- scenario helpers ------------------------------------------------------------------------
async def until_thread(cond: Callable[[], Any], timeout: float, what: str) -> Any:
    """`until` for a blocking condition (ZooKeeper or Kafka reads): run off the app's loop."""
    t0 = time.monotonic()
    while True:
        try:
            value = await asyncio.to_thread(cond)
        except Exception:  # the cluster is changing under it: ask again
            value = None
        if value:
            return value
        if (watch := WATCH.get()) is not None and watch.failure is not None:
            raise watch.failure
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(0.1)


def fresh_groups(app: KConsoleApp, since: float) -> bool:
    """The groups source answered in full at or after `since` (epoch seconds)."""
    snap = app.snapshot
    if snap is None:
        return False
    h = next((s for s in snap.sources if s.name.value == "groups"), None)
    return h is not None and h.ok and not h.degraded and (h.updated_at or 0) >= since


def described_coordinator(cluster: LocalCluster, group: str) -> int | None:
    """The group's coordinator as DescribeConsumerGroups names it (an Admin client of our own;
    only asked while every broker is up: librdkafka aborts the process when a coordinator dies
    under a pending describe, see the module docstring)."""
    admin = AdminClient(client_config(cluster, **{"socket.timeout.ms": 3000}))
    desc = admin.describe_consumer_groups([group], request_timeout=3)[group].result(timeout=5)
    return desc.coordinator.id if desc.coordinator is not None else None


def coordinator_of(zk: KazooClient, group: str) -> int:
    """The group's coordinator by Kafka's definition: the leader of its __consumer_offsets
    partition, abs(groupId.hashCode) % partitions, read from ZooKeeper."""
    h = 0
    for unit in group.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    signed = h - (1 << 32) if h >= 1 << 31 else h
    count = len(zk.get_children(f"/brokers/topics/{OFFSETS_TOPIC}/partitions"))
    partition = (0 if signed == -(1 << 31) else abs(signed)) % count
    return int(partition_state(zk, OFFSETS_TOPIC, partition)["leader"])


def commit_offsets(cluster: LocalCluster, group: str, offset: int) -> None:
    c = Consumer(client_config(cluster, **{"group.id": group, "enable.auto.commit": False}))
    try:
        tps = [TopicPartition(TEST_TOPIC, p, offset) for p in range(TEST_TOPIC_PARTITIONS)]
        c.commit(offsets=tps, asynchronous=False)
    finally:
        c.close()


def print_timeline(what: str, samples: list[tuple[float, str | None, str, str]], t0: float) -> None:
    """The group's lag cell, the groups mark and the pane subtitle, each time they change."""
    print(f"\n[chaos] {what}: lag cell / groups mark / subtitle from the fault on")
    last = None
    for t, c, mark, sub in samples:
        if t < t0:
            continue
        now = (_shape(c) if c is not None else "<no row>", mark, re.sub(r"\d+s", "<age>", sub))
        if now != last:
            shown = c if c is not None else "<no row>"
            print(f"  +{t - t0:5.1f}s  {shown!r:22} {mark:8} {sub[:100]!r}")
            last = now


def produce_to_every_partition(cluster: LocalCluster, n: int) -> None:
    p = Producer(client_config(cluster))
    for partition in range(TEST_TOPIC_PARTITIONS):
        for _ in range(n):
            p.produce(TEST_TOPIC, b"chaos", partition=partition)
    assert p.flush(30) == 0, "messages left unsent"


def _n(digits: str) -> int:
    return int(digits.replace(",", ""))


def _shape(c: str) -> str:
    """A lag cell with its figures taken out, for the report."""
    return re.sub(r"\d+[smh]", "<age>", re.sub(r"[0-9][0-9,]*(?=[ ]|$)", "N", c))


class Workload:
    """A producer writing to test-topic and a slower consumer in `group` committing after every
    batch, each on its own thread, so the group's lag keeps growing; and the true lag
    (committed offsets vs log ends), read by a third client of our own."""

    def __init__(self, cluster: LocalCluster, group: str):
        self.cluster = cluster
        self.group = group
        self.produced = 0
        self.consumed = 0
        self.truth: list[tuple[float, int]] = []  # (monotonic, lag) when every partition read
        self.error: BaseException | None = None
        self.truth_errors: list[tuple[float, str]] = []
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._guard(f), name=f"chaos-{f.__name__}", daemon=True)
            for f in (self._produce, self._consume, self._measure)
        ]

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=30)
        assert not any(t.is_alive() for t in self._threads), "a workload thread did not stop"

    def truth_lag(self) -> int:
        return self.truth[-1][1] if self.truth else 0

    def _guard(self, f: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                f()
            except BaseException as exc:
                self.error = exc

        return run

    def _produce(self) -> None:
        p = Producer(client_config(self.cluster, **{"linger.ms": 20}))
        payload = b"x" * 100
        while not self._stop.is_set():
            for _ in range(20):
                p.produce(TEST_TOPIC, payload)
            self.produced += 20
            p.poll(0)
            self._stop.wait(0.05)  # pacing (~400 messages/s), not a wait for a condition
        p.flush(30)

    def _consume(self) -> None:
        c = Consumer(
            client_config(
                self.cluster,
                **{
                    "group.id": self.group,
                    "enable.auto.commit": False,
                    "auto.offset.reset": "earliest",
                },
            )
        )
        c.subscribe([TEST_TOPIC])
        try:
            while not self._stop.is_set():
                msgs = c.consume(num_messages=5, timeout=0.2)
                if msgs:
                    self.consumed += len(msgs)
                    with contextlib.suppress(KafkaException):  # the coordinator may be moving
                        c.commit(asynchronous=True)
                self._stop.wait(0.1)  # pacing: ~50 messages/s, well below the producer
        finally:
            c.close()

    def _measure(self) -> None:
        c = Consumer(client_config(self.cluster, **{"group.id": self.group}))
        tps = [TopicPartition(TEST_TOPIC, p) for p in range(TEST_TOPIC_PARTITIONS)]
        try:
            while not self._stop.is_set():
                try:
                    # Log ends first, then the committed offsets: a commit in between makes the
                    # figure smaller, never larger, than the true lag.
                    c.list_topics(TEST_TOPIC, timeout=3)  # the current leaders
                    ends = [c.get_watermark_offsets(tp, timeout=3, cached=False)[1] for tp in tps]
                    committed = c.committed(tps, timeout=3)
                    if all(tp.error is None for tp in committed):
                        lag = sum(
                            max(0, end - tp.offset)
                            for end, tp in zip(ends, committed, strict=True)
                            if tp.offset >= 0
                        )
                        self.truth.append((time.monotonic(), lag))
                    else:
                        errors = [str(tp.error) for tp in committed if tp.error is not None]
                        self.truth_errors.append((time.monotonic(), errors[0]))
                except KafkaException as exc:
                    self.truth_errors.append((time.monotonic(), repr(exc)))
                self._stop.wait(0.3)  # pacing
        finally:
            c.close()
