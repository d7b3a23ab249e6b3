"""The console itself (Textual Pilot) on the real cluster, fed by the real observer: what is on
screen matches ZooKeeper, and a broker stop shows up as it happens."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
from kazoo.client import KazooClient

from kconsole.cluster.local.cluster import LocalCluster
from kconsole.observer import ClusterObserver
from kconsole.ui.app import KConsoleApp, make_app
from kconsole.ui.widgets.panes import controller_text
from kconsole.ui.widgets.table import KeyedTable
from tests import tables
from tests.integration.conftest import controller, partition_state, restore
from tests.integration.test_observer import settings_for

pytestmark = pytest.mark.integration


def cell(app: KConsoleApp, table: str, row: str, column: str) -> str:
    t = tables.table(app.screen, table)
    return t.get_cell(row, column).plain


async def until(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what} on screen")
        await asyncio.sleep(0.05)


def live_app(cluster: LocalCluster) -> KConsoleApp:
    observer = ClusterObserver(
        settings_for(cluster),
        proc_states=lambda: {b: cluster.broker(b).state() for b in cluster.spec.broker_ids},
    )
    app = make_app(observer)
    app.animation_level = "none"
    return app


async def test_screen_matches_zookeeper(healthy: LocalCluster, zk: KazooClient) -> None:
    """Brokers 1-3 up, the controller ZooKeeper names, and each test-topic row's leader,
    replicas and ISR as in ZooKeeper."""
    app = live_app(healthy)
    async with app.run_test(size=(160, 48)):
        await until(
            lambda: tables.table(app.screen, "partitions").row_count >= 4,
            30,
            "the partitions",
        )
        brokers = app.screen.query_one("#brokers", KeyedTable)
        assert sorted(brokers.row_keys) == ["1", "2", "3"]
        assert all(cell(app, "brokers", k, "state") == "up" for k in "123")
        ctl = controller(zk)
        assert "★" in cell(app, "brokers", str(ctl), "id")
        assert f"broker {ctl}" in controller_text(app.snapshot, app.now).plain
        for p in range(4):
            st = partition_state(zk, "test-topic", p)
            row = f"test-topic/{p}"
            assert cell(app, "partitions", row, "leader") == str(st["leader"])
            assert sorted(
                cell(app, "partitions", row, "isr").replace(" ", "").split(",")
            ) == sorted(str(i) for i in st["isr"])


async def test_stop_is_shown_down_with_new_leaders_and_events(
    healthy: LocalCluster, zk: KazooClient
) -> None:
    """After a stop the screen shows the broker down, new leaders, shrunk ISRs and events."""
    app = live_app(healthy)
    try:
        async with app.run_test(size=(160, 48)):
            await until(
                lambda: tables.table(app.screen, "partitions").row_count >= 4,
                30,
                "the partitions",
            )
            # The victim is whoever leads test-topic/0 on screen now: Kafka's automatic
            # preferred-leader election may have moved it since an earlier test's restore.
            victim = int(cell(app, "partitions", "test-topic/0", "leader"))
            led = [
                p
                for p in range(4)
                if cell(app, "partitions", f"test-topic/{p}", "leader") == str(victim)
            ]
            await asyncio.to_thread(healthy.stop_broker, victim)
            await until(
                lambda: cell(app, "brokers", str(victim), "state") == "down", 30, "the broker down"
            )
            await until(
                lambda: all(
                    cell(app, "partitions", f"test-topic/{p}", "leader")
                    not in (str(victim), "—", "none")
                    for p in led
                ),
                30,
                "new leaders",
            )
            await until(
                lambda: all(
                    str(victim) not in cell(app, "partitions", f"test-topic/{p}", "isr")
                    for p in range(4)
                ),
                30,
                "shrunk ISRs",
            )
            assert "under-replicated" in cell(app, "partitions", "test-topic/0", "flags")
            events = tables.table(app.screen, "events")
            texts = [events.get_cell(k, "text").plain for k in events.row_keys]
            assert f"broker {victim} left the cluster" in texts
            # A leader change is an event of its own, or (when the observer read the broker's
            # deregistration before the partition's new leader, as under load) the partition
            # offline because its leader is down, then online with the new leader.
            for p in led:
                moved = (f"test-topic/{p} leader", f"test-topic/{p} is online, leader")
                mine = [t for t in texts if t.startswith(f"test-topic/{p} ")]
                assert any(t.startswith(moved) for t in mine), (p, mine)
            assert any(t.startswith("test-topic/") and "ISR shrank" in t for t in texts)
    finally:
        restore(healthy, zk)
