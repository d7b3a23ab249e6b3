"""The producer kept open by the produce dialog (issue 26), on the real cluster: made and given
its producer id when the dialog opens, the same one (same id, no wait) for every send, closed
with the dialog; through an outage of every broker a send reports what really happened to its
record, and the send after the brokers are back is acked. And the CLI's producer, made while it
reads the cluster, has its id before the record is sent."""

from __future__ import annotations

import asyncio
import time
import uuid
from functools import partial

import pytest
from click.testing import CliRunner
from kazoo.client import KazooClient

from kconsole.cli.main import main
from kconsole.cluster.local.cluster import LocalCluster
from kconsole.cluster.settings import TEST_TOPIC
from kconsole.cluster.values import ProcState
from kconsole.ui.app import KConsoleApp
from tests.integration.conftest import controller, registered
from tests.integration.test_console_live import until
from tests.integration.test_produce import _read, ends
from tests.integration.test_produce_console import SIZE, console, open_dialog, send
from tests.ui.pilots import fill, text_of

pytestmark = pytest.mark.integration


def records_with(cluster: LocalCluster, start: dict[int, int], marker: str) -> list[int]:
    """Partitions of the records from `start` on whose value is `marker`."""
    return [
        p for p, _off, _key, value in _read(cluster, TEST_TOPIC, start) if value == marker.encode()
    ]


async def test_the_dialog_sends_through_one_warm_producer(healthy: LocalCluster) -> None:
    run = uuid.uuid4().hex[:8]
    start = ends(healthy)
    app = console(healthy)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_dialog(app)
        fill(screen, key=f"warm-{run}", value=f"first-{run}")
        await until(lambda: screen.prepared is not None and screen.prepared.ready, 30, "warm")
        assert screen.prepared is not None
        producer_id = screen.prepared.producer_id
        assert producer_id is not None and producer_id >= 0
        session = screen.session
        assert session is not None and session.made == 1
        for value in (f"first-{run}", f"second-{run}"):
            fill(screen, value=value)
            await pilot.pause()
            assert (await send(app, screen)).startswith("1/1 acked"), text_of(
                app, "#produce-status"
            )
            timing = screen.last_result.producer if screen.last_result else None
            # The same producer, its id acquired before the send: no record waited for it.
            assert timing is not None and timing.producer_id == producer_id, timing
            assert timing.waited_s == 0.0 and timing.was_warm, timing
        assert session.made == 1
        screen.dismiss()
        await pilot.pause()
        assert session.closed is not None and session.closed.closed
        assert not session.closed.purged
    assert len(records_with(healthy, start, f"first-{run}")) == 1
    assert len(records_with(healthy, start, f"second-{run}")) == 1


def _stop_all(cluster: LocalCluster, zk: KazooClient) -> None:
    ctl = controller(zk)
    # The controller last: each controlled shutdown then has one to talk to.
    for b in [b for b in cluster.spec.broker_ids if b != ctl] + ([ctl] if ctl else []):
        cluster.stop_broker(b)


def _start_all(cluster: LocalCluster) -> None:
    for b in cluster.spec.broker_ids:  # one at a time: three JVMs at once starve 2 cores
        if cluster.broker(b).state() is ProcState.STOPPED:
            cluster.start_broker(b, wait=True)


async def test_a_send_during_an_outage_then_after_it(
    healthy: LocalCluster, zk: KazooClient
) -> None:
    """Every broker stopped: the send's record times out (its real outcome: not acked, and
    not in the log afterwards); the brokers back, the next send from the same dialog is
    acked (through a new producer: the one that lost a record is not used again)."""
    run = uuid.uuid4().hex[:8]
    app: KConsoleApp = console(healthy)
    assert app.commands is not None
    # The session's message timeout, short: the outage's send ends in seconds, not 30.
    app.commands.produce_session = partial(  # type: ignore[method-assign]
        app.commands.produce_session, message_timeout_ms=4000
    )
    try:
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_dialog(app)
            fill(screen, key=f"outage-{run}", value=f"during-{run}")
            await until(lambda: screen.prepared is not None and screen.prepared.ready, 30, "warm")
            await asyncio.to_thread(_stop_all, healthy, zk)
            start_down = time.monotonic()
            status = await send(app, screen, timeout=60)
            assert status.startswith("0/1 acked"), status
            result = screen.last_result
            assert result is not None and result.acked_n == 0
            assert result.failed_n + result.unknown_n == 1, result
            assert time.monotonic() - start_down < 30
            session = screen.session
            assert session is not None and session.made == 1
            await asyncio.to_thread(_start_all, healthy)
            await until(lambda: registered(zk) == set(healthy.spec.broker_ids), 120, "brokers")
            start = ends(healthy, timeout=60)
            fill(screen, value=f"after-{run}")
            await pilot.pause()
            deadline = time.monotonic() + 90
            while True:  # the partition's leader may still be moving back: send until acked
                status = await send(app, screen, timeout=60)
                if status.startswith("1/1 acked") or time.monotonic() > deadline:
                    break
            assert status.startswith("1/1 acked"), status
            assert session.made >= 2  # a new producer after the one that lost its record
            assert len(records_with(healthy, start, f"after-{run}")) == 1
            assert records_with(healthy, {p: 0 for p in start}, f"during-{run}") == []
    finally:
        await asyncio.to_thread(_start_all, healthy)


def test_the_cli_producer_has_its_id_before_the_record(healthy: LocalCluster) -> None:
    """kconsole produce makes its producer before it reads the topic and the cluster: by the
    time the record is sent, the id is there (issue 26: every record waited 0.5-1 s for it)."""
    run = uuid.uuid4().hex[:8]
    base = ["--bootstrap", healthy.spec.bootstrap, "--zookeeper", healthy.spec.zk_connect]
    out = CliRunner().invoke(
        main, [*base, "produce", "-t", TEST_TOPIC, "-k", f"cli-{run}", "-v", f"cli-{run}"]
    )
    assert out.exit_code == 0, out.output
    assert "sent 1, acked 1, failed 0, unknown 0" in out.output
    # Waiting for the id would make the record slow, and the CLI would say so.
    assert "waiting for the new producer's id" not in out.output, out.output
