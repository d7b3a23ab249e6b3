"""A running reassignment on the real KRaft cluster (conftest.py's session fixture `kraft`: 3
controllers + 3 brokers, Kafka 4.4.0), seen as Kafka's own kafka-topics sees it at the same
moment: its adding and removing replicas, its replication factor, and no under-replicated
partition. Running the same plan again is refused as already being reassigned, the reassignment
screen follows and cancels such a move (and fills `+add` for one it started), and a cancel
puts the original replicas back and removes the throttles. Every move here is throttled so it
stays running; whatever a test leaves is cancelled and unthrottled."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kconsole.cli import main
from kconsole.cluster.kraft.cluster import KRaftCluster
from kconsole.cluster.reassign.client import ReassignClient
from kconsole.cluster.reassign.throttles import throttles_of
from kconsole.config import Settings
from kconsole.observer import ClusterObserver
from tests.integration.kafka_tools import run_tool
from tests.waiting import wait_until

pytestmark = pytest.mark.integration
TOPIC_TOOL = "org.apache.kafka.tools.TopicCommand"
CONFIG_TOOL = "org.apache.kafka.tools.ConfigCommand"
THROTTLE = 20_000  # B/s: a few MiB then take minutes to copy
MIB = 3


def settings_for(cluster: KRaftCluster) -> Settings:
    return Settings(bootstrap=cluster.spec.bootstrap, zookeeper="")


def kc(cluster: KRaftCluster, *args: str) -> Result:
    """The CLI on the KRaft cluster's brokers, with no ZooKeeper."""
    return CliRunner().invoke(main, ["-b", cluster.spec.bootstrap, "-z", "", *args])


def kafka_describe(cluster: KRaftCluster, topic: str, *extra: str) -> tuple[int | None, dict]:
    """kafka-topics --describe (with `extra` options): the topic's ReplicationFactor (None when
    it lists no topic line) and per partition its fields ("Replicas", "Isr", "Adding Replicas",
    "Removing Replicas", ...) as Kafka prints them."""
    out = run_tool(cluster, TOPIC_TOOL, "--bootstrap-server", cluster.spec.bootstrap,
                   "--describe", "--topic", topic, *extra)  # fmt: skip
    rf = None
    parts: dict[int, dict[str, str]] = {}
    for line in out.splitlines():
        fields = {}
        for item in line.strip().split("\t"):
            key, sep, value = item.partition(":")
            if sep:
                fields[key.strip()] = value.strip()
        if "Partition" in fields:
            parts[int(fields["Partition"])] = fields
        elif "ReplicationFactor" in fields:
            rf = int(fields["ReplicationFactor"])
    return rf, parts


def ids(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


def new_moving_topic(cluster: KRaftCluster, tmp_path: Path) -> tuple[str, dict, Path]:
    """An RF 2 topic of 2 partitions with MIB MiB each, and a plan that keeps each partition's
    first replica and moves its second to the broker it is not on: (topic, original replicas
    per partition, plan file)."""
    topic = f"mv-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.spec.bootstrap})
    admin.create_topics([NewTopic(topic, 2, 2)])[topic].result(timeout=60)

    def ready() -> bool:
        _rf, parts = kafka_describe(cluster, topic)
        return len(parts) == 2 and all(len(ids(p["Isr"])) == 2 for p in parts.values())

    wait_until(ready, 90, f"{topic} created with a full ISR", interval=0.5)
    producer = Producer({"bootstrap.servers": cluster.spec.bootstrap, "acks": "all"})
    for partition in (0, 1):
        for _ in range(MIB * 16):
            producer.produce(topic, b"x" * 65536, partition=partition)
            producer.poll(0)
    assert producer.flush(60) == 0
    _rf, parts = kafka_describe(cluster, topic)
    original = {p: ids(f["Replicas"]) for p, f in parts.items()}
    moves = []
    for p, replicas in sorted(original.items()):
        spare = (set(cluster.spec.broker_ids) - set(replicas)).pop()
        moves.append({"topic": topic, "partition": p, "replicas": [replicas[0], spare]})
    plan = tmp_path / f"{topic}.json"
    plan.write_text(json.dumps({"version": 1, "partitions": moves}))
    return topic, original, plan


@pytest.fixture
def moving(kraft_healthy: KRaftCluster, tmp_path: Path) -> Iterator[tuple[str, dict, Path]]:
    """new_moving_topic(); afterwards whatever still moves on it is cancelled and every
    throttle of it and of the brokers removed (a failed test must not leave a move running)."""
    cluster = kraft_healthy
    made = new_moving_topic(cluster, tmp_path)
    try:
        yield made
    finally:
        topic = made[0]
        with ReassignClient(settings_for(cluster)) as c:
            left = [(o.topic, o.partition) for o in c.ongoing() if o.topic == topic]
            if left:
                c.cancel(left)
            if throttles_of(c.throttles(), [topic]):
                c.remove_throttles([topic], cluster.spec.broker_ids)


def wait_moving(cluster: KRaftCluster, topic: str) -> dict:
    """kafka-topics' partitions once every one lists adding replicas."""

    def both() -> dict | None:
        _rf, parts = kafka_describe(cluster, topic)
        return parts if all(f.get("Adding Replicas") for f in parts.values()) else None

    return wait_until(both, 60, "kafka-topics to list the adding replicas", interval=0.5)


def throttles_left(cluster: KRaftCluster, topic: str) -> list[str]:
    """Every throttle Kafka's own ConfigCommand shows on the topic and on the brokers."""
    left = []
    for kind, name in [("topics", topic), *(("brokers", str(b)) for b in cluster.spec.broker_ids)]:
        out = run_tool(cluster, CONFIG_TOOL, "--bootstrap-server", cluster.spec.bootstrap,
                       "--entity-type", kind, "--entity-name", name, "--describe")  # fmt: skip
        for line in out.splitlines():
            for item in line.split():
                if "throttled" in item.split("=")[0]:
                    left.append(f"{kind}:{name} {item}")
    return left


def test_a_throttled_move_is_seen_as_kafka_topics_sees_it(
    kraft_healthy: KRaftCluster, moving: tuple[str, dict, Path]
) -> None:
    """While the move copies: describe --json's replicas, adding and removing replicas and
    replication factor are kafka-topics --describe's, read just before and just after (equal:
    the same moment), and no partition is under-replicated, as --under-replicated-partitions
    says; describe's text says them too. The same plan again is refused as already being
    reassigned (not with a replication factor of 3); cancel puts the original replicas back, in
    their order, and ConfigCommand then shows no throttle."""
    cluster = kraft_healthy
    topic, original, plan = moving
    res = kc(cluster, "reassign", "execute", "--plan", str(plan), "--throttle", str(THROTTLE),
             "--yes")  # fmt: skip
    assert res.exit_code == 0, res.output
    wait_moving(cluster, topic)

    def kafka_view() -> tuple[Any, ...]:
        rf, parts = kafka_describe(cluster, topic)
        return rf, {
            p: (ids(f["Replicas"]), ids(f["Adding Replicas"]), ids(f["Removing Replicas"]))
            for p, f in parts.items()
        }

    before = kafka_view()
    res = kc(cluster, "describe", "--json")
    assert res.exit_code == 0, res.output
    after = kafka_view()
    assert before == after, (before, after)  # the move held still around kconsole's read
    rf, kafka_parts = after
    snap = json.loads(res.output)
    mine = {p["partition"]: p for p in snap["partitions"] if p["topic"] == topic}
    assert {
        p: (tuple(d["replicas"]), tuple(d["adding"]), tuple(d["removing"])) for p, d in mine.items()
    } == kafka_parts
    assert rf == 2 and {len(d["replicas"]) - len(d["adding"]) for d in mine.values()} == {2}
    for p, (replicas, adding, removing) in kafka_parts.items():
        assert set(replicas) - set(adding) == set(original[p])  # the original ones, and
        assert set(replicas) - set(removing) == set(json.loads(plan.read_text())["partitions"][
            p]["replicas"])  # the target's  # fmt: skip
    admin = next(s for s in snap["sources"] if s["name"] == "admin")
    assert admin["ok"] and not admin["error"], admin  # the list was read, not assumed empty

    _rf, urp = kafka_describe(cluster, topic, "--under-replicated-partitions")
    assert urp == {}, urp
    observed = ClusterObserver(settings_for(cluster)).read_once()
    parts = [p for p in observed.partitions if p.topic == topic]
    assert [p.under_replicated for p in parts] == [False, False], parts
    assert all(observed.flags(p) == ["reassigning"] for p in parts), parts
    res = kc(cluster, "describe")
    assert res.exit_code == 0, res.output
    assert "adding" in res.output and "removing" in res.output, res.output
    for b in observed.brokers:  # "URP 2 on every broker" was the bug
        assert observed.under_replicated_on(b.id) == 0, b

    again = kc(cluster, "reassign", "execute", "--plan", str(plan), "--yes")
    assert again.exit_code != 0, again.output
    assert f"{topic}/0: already being reassigned (adding" in again.output, again.output
    assert "replication factor" not in again.output, again.output

    res = kc(cluster, "reassign", "cancel", "--plan", str(plan), "--yes")
    assert res.exit_code == 0, res.output
    assert "cancelled: 2 partition(s)" in res.output, res.output
    _rf, parts_now = kafka_describe(cluster, topic)
    assert {p: ids(f["Replicas"]) for p, f in parts_now.items()} == original
    assert not any(f.get("Adding Replicas") for f in parts_now.values()), parts_now
    assert throttles_left(cluster, topic) == []


async def test_the_screen_fills_add_follows_and_cancels(
    kraft_healthy: KRaftCluster, moving: tuple[str, dict, Path]
) -> None:
    """A move started on the reassignment screen (its plan imported, a throttle typed) shows
    its new replica under `+add` and its progress; after escape, and in a console started
    afresh, the screen follows it again (the move is the cluster's, not the screen's), and `c`
    cancels it: Kafka then shows the original replicas and no throttle."""
    from textual.widgets import Input, Static

    from kconsole.commands import Commands
    from kconsole.commands.reassign import confirmation_word
    from kconsole.reassign.plan import Plan
    from kconsole.ui.app import make_app
    from kconsole.ui.screens.ask import AskText
    from kconsole.ui.screens.reassign import ReassignScreen
    from tests.integration.test_console_live import until

    cluster = kraft_healthy
    topic, original, plan_file = moving
    settings = settings_for(cluster)
    plan = Plan.from_json(plan_file.read_text())
    added = {m.partition: (set(m.replicas) - set(original[m.partition])).pop() for m in plan.moves}

    def console() -> Any:
        door = Commands.for_settings(settings, control_reason="not in this test", audit=None)
        app = make_app(ClusterObserver(settings), commands=door, settings=settings)
        app.animation_level = "none"
        return app

    def said(screen: ReassignScreen, text: str) -> bool:
        return text in str(screen.query_one("#reassign-message", Static).content)

    def add_cells(screen: ReassignScreen) -> dict[int, str]:
        table = screen.table
        return {
            p: str(table.get_row(f"{topic}/{p}")[3]) for p in (0, 1) if f"{topic}/{p}" in table.rows
        }

    def current_cells(screen: ReassignScreen) -> dict[int, str]:
        table = screen.table
        return {
            p: str(table.get_row(f"{topic}/{p}")[1]) for p in (0, 1) if f"{topic}/{p}" in table.rows
        }

    async def follow(app: Any, pilot: Any) -> ReassignScreen:
        app.open_reassign(topics=[topic])
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReassignScreen)
        await until(lambda: screen.progress is not None and screen.progress.rate is not None
                    and not screen.progress.done, 90, "the move's progress")  # fmt: skip
        assert screen.progress is not None and screen.progress.left
        assert {p.partition for p in screen.progress.partitions} == {0, 1}
        assert all(p.adding == (added[p.partition],) for p in screen.progress.partitions)
        return screen

    app = console()
    async with app.run_test(size=(160, 48)) as pilot:
        await until(lambda: app.snapshot is not None and app.snapshot.partition(topic, 1), 30,
                    "the topic in the snapshot")  # fmt: skip
        app.open_reassign(topics=[topic])
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReassignScreen)
        screen.query_one("#reassign-file", Input).value = str(plan_file)
        screen.query_one("#reassign-throttle", Input).value = str(THROTTLE)
        screen.table.focus()
        await pilot.press("i")
        await until(partial(said, screen, "imported 2 partitions"), 10, "the import")
        await pilot.press("ctrl+s")
        await until(lambda: isinstance(app.screen, AskText), 10, "the confirmation")
        app.screen.query_one(Input).value = confirmation_word(plan)
        await pilot.press("enter")
        await until(partial(said, screen, "started moving 2 of 2 partitions"), 60, "the start")
        await until(lambda: screen.progress is not None and screen.progress.rate is not None,
                    90, "the move's progress")  # fmt: skip
        await pilot.pause()
        # While it moves (before the fix the adding replica counted as a current one: `—`)
        assert add_cells(screen) == {p: f"+{b}" for p, b in added.items()}
        assert current_cells(screen) == {p: ",".join(map(str, r)) for p, r in original.items()}
        await pilot.press("escape")
        await pilot.pause()
        await follow(app, pilot)  # after escape

    app = console()  # a restart: the move is followed from what the cluster lists
    async with app.run_test(size=(160, 48)) as pilot:
        await until(lambda: app.snapshot is not None and app.snapshot.partition(topic, 1), 30,
                    "the topic in the snapshot")  # fmt: skip
        screen = await follow(app, pilot)
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, AskText), screen.query_one("#reassign-message", Static)
        app.screen.query_one(Input).value = "cancel"
        await pilot.press("enter")
        await until(partial(said, screen, "cancelled the reassignment of 2 of 2 partitions"),
                    60, "the cancel")  # fmt: skip
    _rf, parts = kafka_describe(cluster, topic)
    assert {p: ids(f["Replicas"]) for p, f in parts.items()} == original
    assert throttles_left(cluster, topic) == []
