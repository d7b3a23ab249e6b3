"""The tail view of the real console on the real cluster, on a topic of its own with a large
backlog: from the beginning it shows its progress while it catches up, and a record written
meanwhile (in a partition the tail reaches the end of long before the others) appears once it
has; a start offset past the end is refused naming the real ends."""

from __future__ import annotations

import re
import secrets
import time

import pytest
from confluent_kafka import KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from textual.widgets import DataTable, Input

from kconsole.cluster.local.cluster import LocalCluster
from kconsole.ui.screens import tail as tail_screen
from kconsole.ui.screens.tail import TailScreen
from tests.integration.test_console_live import until
from tests.integration.test_produce import ends
from tests.integration.test_produce_console import SIZE, console
from tests.ui.pilots import text_of

pytestmark = pytest.mark.integration
BACKLOG = 100_000
PARTITIONS = 4


def new_topic(cluster: LocalCluster) -> str:
    """A fresh topic (4 partitions, replication 3) only this test uses."""
    name = f"tail-{secrets.token_hex(3)}"
    admin = AdminClient({"bootstrap.servers": cluster.spec.bootstrap})
    admin.create_topics([NewTopic(name, PARTITIONS, 3)])[name].result(timeout=30)
    cluster.wait_metadata_everywhere(name, time.monotonic() + 30)
    return name


def fill(cluster: LocalCluster, topic: str, n: int) -> None:
    """n small keyed records, every one acknowledged (a set-up, not what is tested): 1 in 20 to
    partition 0, the rest spread over the others, so a tail reaches partition 0's end long before
    theirs."""
    failed: list[KafkaError] = []
    p = Producer({"bootstrap.servers": cluster.spec.bootstrap, "acks": "all", "linger.ms": 20})

    def report(err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            failed.append(err)

    for i in range(n):
        while True:
            try:
                p.produce(
                    topic,
                    key=f"k{i % 500}",
                    value=f"backlog {i}",
                    partition=0 if i % 20 == 0 else 1 + i % (PARTITIONS - 1),
                    on_delivery=report,
                )
                break
            except BufferError:  # the client's queue is full: let it send
                p.poll(0.05)
    assert p.flush(60) == 0 and not failed, failed[:3]


def send_one(cluster: LocalCluster, topic: str, value: str) -> str:
    """One acknowledged record in partition 0; its row key in the tail (partition:offset)."""
    p = Producer({"bootstrap.servers": cluster.spec.bootstrap, "acks": "all"})
    where: list[str] = []
    p.produce(
        topic,
        key="meanwhile",
        value=value,
        partition=0,
        on_delivery=lambda err, msg: where.append(
            f"{msg.partition()}:{msg.offset()}" if err is None else str(err)
        ),
    )
    assert p.flush(30) == 0
    assert re.fullmatch(r"[0-9]+:[0-9]+", where[0]), where
    return where[0]


async def test_tail_from_the_beginning_catches_up_and_shows_a_record_written_meanwhile(
    healthy: LocalCluster,
) -> None:
    topic = new_topic(healthy)
    fill(healthy, topic, BACKLOG)
    value = f"written meanwhile {secrets.token_hex(4)}"
    app = console(healthy)
    async with app.run_test(size=SIZE):
        await app.push_screen(TailScreen(topic=topic, start="beginning"))
        tail = app.screen
        assert isinstance(tail, TailScreen)
        progress: list[str] = []  # what the status said while the backlog was being read

        def moving() -> bool:
            status = text_of(app, "#tail-status")
            if re.search(r"records · [0-9,]+/s · catching up: [0-9,]+ behind", status):
                progress.append(status)
            return 0 < tail.received < BACKLOG and bool(progress)

        await until(moving, 60, "the count, the rate and the distance to the end")
        key = send_one(healthy, topic, value)
        table = tail.query_one("#tail-records", DataTable)
        await until(lambda: key in table.rows, 120, "the record written meanwhile")
        await until(lambda: "at the end" in text_of(app, "#tail-status"), 30, "at the end")
        assert tail.received == BACKLOG + 1  # every record counted, once
        assert str(table.get_row(key)[4]) == value
        assert table.row_count <= tail_screen.MAX_ROWS
        assert f"{BACKLOG + 1:,} records" in text_of(app, "#tail-status")


async def test_an_offset_past_the_end_is_refused_naming_the_real_ends(
    healthy: LocalCluster,
) -> None:
    topic = new_topic(healthy)
    fill(healthy, topic, 400)
    end = ends(healthy, topic)
    app = console(healthy)
    async with app.run_test(size=SIZE):
        await app.push_screen(TailScreen(topic=topic, start="@999999999"))
        tail = app.screen
        assert isinstance(tail, TailScreen)
        await until(lambda: tail.state == "failed", 30, "the refusal")
        at = " ".join(f"{p}@{end[p]}" for p in sorted(end))
        assert (
            f"✗ offset 999999999 is past the end of {topic} (its partitions end at {at}, the "
            "offset of the next record written)"
        ) in text_of(app, "#tail-status").replace("\n", " ")
        # An offset inside some partitions and past the end of others starts those at their
        # end, and says so.
        short = min(end, key=lambda p: end[p])
        offset = max(end.values())
        assert end[short] < offset
        tail.query_one("#tail-from", Input).value = f"@{offset}"
        tail.action_restart()
        await until(lambda: tail.state == "live", 30, "the tail")
        await until(
            lambda: "is past the end in partition" in text_of(app, "#tail-status"), 10, "the note"
        )
        status = text_of(app, "#tail-status").replace("\n", " ")
        assert f"{short}@{end[short]}" in status.split("past the end in partition")[1]
