"""The produce dialog and the tail view of the real console (Pilot) on the real cluster, fed by
the real observer: keys land where Kafka's Java producer puts them and the trace shows that
partition and its leader; a bulk send is acked and tails back in order per key; with two
brokers stopped the trace warns and the send fails with NOT_ENOUGH_REPLICAS; bad input sends
nothing."""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections import defaultdict

import pytest
from kazoo.client import KazooClient
from textual.widgets import DataTable

from kconsole.cluster.local.cluster import LocalCluster
from kconsole.cluster.produce.api import partition_for
from kconsole.cluster.settings import TEST_TOPIC, TEST_TOPIC_PARTITIONS
from kconsole.commands import Commands
from kconsole.observer import ClusterObserver
from kconsole.ui.app import KConsoleApp, make_app
from kconsole.ui.screens.produce import ProduceScreen
from kconsole.ui.screens.tail import TailScreen
from tests.integration.conftest import partition_state, registered
from tests.integration.test_console_live import until
from tests.integration.test_produce import (
    _java_console_produce,
    _read,
    _settings,
    assert_nothing_sent,
    ends,
)
from tests.ui.pilots import fill, text_of

pytestmark = pytest.mark.integration
SIZE = (140, 40)


def console(cluster: LocalCluster, read_only: bool = False) -> KConsoleApp:
    settings = _settings(cluster)
    observer = ClusterObserver(settings)
    # The command layer as the kconsole command builds it (its tails, its producer), minus
    # broker control: these tests act on no broker.
    door = Commands.for_settings(
        dataclasses.replace(settings, read_only=read_only),
        control_reason="no broker control in these tests",
        audit=None,
    )
    app = make_app(observer, commands=door, settings=settings)
    app.animation_level = "none"
    return app


async def open_dialog(app: KConsoleApp) -> ProduceScreen:
    await until(lambda: app.snapshot is not None and bool(app.snapshot.partitions), 30, "data")
    await app.push_screen(ProduceScreen(topic=TEST_TOPIC))
    screen = app.screen
    assert isinstance(screen, ProduceScreen)
    # The session's answer (its producer warmed, the topic's limits read: the trace checks the
    # record's size against them before it says a send would be accepted).
    await until(lambda: screen.prepared is not None, 60, "the dialog's producer to be ready")
    return screen


async def send(app: KConsoleApp, screen: ProduceScreen, timeout: float = 60) -> str:
    screen.action_send()
    await until(lambda: not screen.sending, timeout, "the send to finish")
    return text_of(app, "#produce-status")


async def test_trace_shows_where_java_puts_the_key_and_its_leader(
    healthy: LocalCluster, zk: KazooClient
) -> None:
    run = uuid.uuid4().hex[:8]
    keys = [f"user-{i}-{run}" for i in range(12)]
    start = ends(healthy)
    app = console(healthy)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_dialog(app)
        traced: dict[str, int] = {}
        for key in keys:
            fill(screen, key=key, value=f"kconsole-{run}")
            await pilot.pause()
            shown = text_of(app, "#trace")
            part = int(shown.split("partition ")[1].split(" ")[0])
            leader = partition_state(zk, TEST_TOPIC, part)["leader"]
            assert f"partition {part} → leader {leader} →" in shown
            traced[key] = part
            status = await send(app, screen)
            assert status.startswith("1/1 acked"), status
            row = [str(c) for c in screen.query_one("#deliveries", DataTable).get_row("0")]
            assert row[2] == str(part) and row[5] == "acked"
    _java_console_produce(healthy, TEST_TOPIC, [f"{k}:java-{run}" for k in keys])
    where: dict[str, dict[str, int]] = {"kconsole": {}, "java": {}}
    for p, _off, key, value in _read(healthy, TEST_TOPIC, start):
        if value and value.endswith(run.encode()) and key is not None:
            where[value.decode().split("-")[0]][key.decode()] = p
    assert where["kconsole"] == where["java"] == traced
    assert len(set(traced.values())) > 1


async def test_bulk_send_from_the_dialog_then_tail_each_partition(healthy: LocalCluster) -> None:
    n, run = 1000, uuid.uuid4().hex[:8]  # at most MAX_ROWS per partition: all stay on screen
    start = ends(healthy)
    app = console(healthy)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_dialog(app)
        # One key per send (the dialog sends copies of one record): 4 keys x 250.
        keys = [f"bulk-{k}-{run}" for k in range(4)]
        for key in keys:
            fill(screen, key=key, value=f"v-{run}", count=str(n // len(keys)), acks="all")
            await pilot.pause()
            status = await send(app, screen)
            assert status.startswith(f"{n // len(keys)}/{n // len(keys)} acked, 0 failed"), status
            assert screen.query_one("#produce-progress").display  # bulk: progress bar
        # The tail view, from the offsets before the sends, one partition at a time.
        seen: dict[str, list[int]] = defaultdict(list)
        for p in range(TEST_TOPIC_PARTITIONS):
            await app.push_screen(TailScreen(topic=TEST_TOPIC, partition=p, start=f"@{start[p]}"))
            tail = app.screen
            assert isinstance(tail, TailScreen)
            expected = sum(
                n // len(keys)
                for k in keys
                if partition_for(k.encode(), TEST_TOPIC_PARTITIONS) == p
            )
            await until(lambda tail=tail, e=expected: tail.received >= e, 60, f"partition {p}")  # type: ignore[misc]
            assert "no consumer group" in text_of(app, "#tail-status")
            table = tail.query_one("#tail-records", DataTable)
            for i in range(table.row_count):
                row = [str(c) for c in table.get_row_at(i)]
                assert row[0] == str(p)
                seen[row[3]].append(int(row[1]))
            tail.action_back()
            await pilot.pause()
    assert set(seen) == set(keys)
    for key, offsets in seen.items():
        assert len(offsets) == n // len(keys), key
        assert offsets == sorted(offsets), f"{key} out of order"
        assert partition_for(key.encode(), TEST_TOPIC_PARTITIONS) in range(TEST_TOPIC_PARTITIONS)


async def test_tail_uses_no_consumer_group_and_follows_new_records(healthy: LocalCluster) -> None:
    from confluent_kafka.admin import AdminClient

    run = uuid.uuid4().hex[:8]
    admin = AdminClient({"bootstrap.servers": healthy.spec.bootstrap})
    groups_before = {g.group_id for g in admin.list_consumer_groups().result().valid}
    app = console(healthy)
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: app.snapshot is not None, 30, "data")
        await app.push_screen(TailScreen(topic=TEST_TOPIC))  # from the end
        await until(
            lambda: isinstance(app.screen, TailScreen) and app.screen.state == "live", 30, "live"
        )
        tail = app.screen
        assert isinstance(tail, TailScreen)
        screen = ProduceScreen(topic=TEST_TOPIC)
        await app.push_screen(screen)
        fill(screen, key=f"live-{run}", value="hello", count="3")
        assert (await send(app, screen)).startswith("3/3 acked")
        screen.dismiss()
        await until(lambda: tail.received >= 3, 30, "the new records in the tail")
        table = tail.query_one("#tail-records", DataTable)
        keys = [str(table.get_row_at(i)[3]) for i in range(table.row_count)]
        assert keys.count(f"live-{run}") == 3
        # Pause: nothing new shows; resume: it does.
        await pilot.press("space")
        await until(lambda: "paused" in text_of(app, "#tail-status"), 5, "paused")
        screen2 = ProduceScreen(topic=TEST_TOPIC)
        await app.push_screen(screen2)
        fill(screen2, key=f"paused-{run}", value="later", count="2")
        assert (await send(app, screen2)).startswith("2/2 acked")
        screen2.dismiss()
        # A negative check needs a window: a second of polling with nothing shown.
        await pilot.pause(1.0)
        assert tail.received == 3
        await pilot.press("space")
        await until(lambda: tail.received >= 5, 30, "the records sent while paused")
    groups_after = {g.group_id for g in admin.list_consumer_groups().result().valid}
    assert groups_after == groups_before  # the tail joined no group, created none


async def test_under_min_isr_warns_then_fails_in_the_dialog(
    healthy: LocalCluster, zk: KazooClient
) -> None:
    app = console(healthy)
    try:
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_dialog(app)
            key = "order-42"
            part = partition_for(key.encode(), TEST_TOPIC_PARTITIONS)
            fill(screen, key=key, value="paid", acks="all")
            await pilot.pause()
            assert "a send would be accepted now" in text_of(app, "#trace")
            survivor = partition_state(zk, TEST_TOPIC, part)["leader"]
            for bid in healthy.spec.broker_ids:
                if bid != survivor:
                    healthy.stop_broker(bid)
            await until(
                lambda: "under min ISR" in text_of(app, "#trace"), 60, "the trace's warning"
            )
            assert "acks=all would fail now with NOT_ENOUGH_REPLICAS" in text_of(app, "#trace")
            status = await send(app, screen, timeout=90)
            assert "0/1 acked, 1 failed (NOT_ENOUGH_REPLICAS: 1)" in status, status
            row = [str(c) for c in screen.query_one("#deliveries", DataTable).get_row("0")]
            assert row[5].startswith("NOT_ENOUGH_REPLICAS")
    finally:
        for bid in healthy.spec.broker_ids:
            if bid not in registered(zk):
                healthy.start_broker(bid, wait=False)


BAD = [
    ({"topic": "no-such-topic-here"}, "topic 'no-such-topic-here' does not exist"),
    ({"topic": "bad/name"}, "invalid topic name 'bad/name'"),
    ({"count": "0"}, "count must be at least 1, not 0"),
    ({"rate": "0"}, "rate must be in (0, 1000000] messages/s"),
    ({"partition": "4"}, "partition 4 does not exist: test-topic has partitions 0..3"),
    ({"value": "{m}" + "x" * 1_100_000}, "the record is too large"),
    ({"key": "\udcff"}, "the key is not valid UTF-8 text"),
]


async def test_bad_input_gets_its_message_and_sends_nothing(healthy: LocalCluster) -> None:
    marker = f"refused-{uuid.uuid4().hex[:10]}"
    before = ends(healthy)
    app = console(healthy)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_dialog(app)
        for fields, message in BAD:
            fill(screen, topic=TEST_TOPIC, key="k", value=marker, count="1", rate="", partition="")
            fill(screen, **{k: v.replace("{m}", marker) for k, v in fields.items()})
            await pilot.pause()
            status = await send(app, screen)
            assert status.startswith("not sent: ") and message in status, (fields, status)
    assert_nothing_sent(healthy, before, marker)


async def test_unreachable_cluster_is_a_clear_error() -> None:
    from kconsole.config import Settings
    from tests.integration.conftest import squat_low_port

    # A port that accepts nothing Kafka-like: a listening socket that never answers.
    sock = squat_low_port()
    try:
        port = sock.getsockname()[1]
        settings = Settings(bootstrap=f"127.0.0.1:{port}", zookeeper="")
        app = make_app(None, commands=Commands(None, settings=settings), settings=settings)
        async with app.run_test(size=SIZE):
            screen = ProduceScreen(topic=TEST_TOPIC)
            await app.push_screen(screen)
            fill(screen, key="k", value="v")
            t0 = time.monotonic()
            status = await send(app, screen, timeout=60)
            assert status.startswith("not sent: cannot read metadata from 127.0.0.1:"), status
            assert time.monotonic() - t0 < 30
    finally:
        sock.close()


async def test_read_only_console_refuses(healthy: LocalCluster) -> None:
    marker = f"read-only-{uuid.uuid4().hex[:10]}"
    before = ends(healthy)
    app = console(healthy, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_dialog(app)
        fill(screen, key="k", value=marker)
        await pilot.pause()
        assert (await send(app, screen)).startswith("not sent: read-only mode")
    assert_nothing_sent(healthy, before, marker)
