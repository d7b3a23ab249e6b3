"""Reassignment and leader election end to end on the real cluster, through the CLI, and side
by side with Kafka's own kafka-reassign-partitions (the same jars): plans go either way.

The module adds a fourth broker to the shared test cluster (a move needs a free broker), and
drains it again before stopping it, so the rest of the run sees the three brokers it expects.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from kconsole.cli import main
from kconsole.cluster.local.cluster import LocalCluster
from kconsole.cluster.local.probes import partitions_fully_in_sync
from kconsole.cluster.reassign.client import ReassignClient
from kconsole.config import Settings
from kconsole.drills.audit import check
from kconsole.drills.verify import end_offsets, read_back
from kconsole.drills.workload import Workload
from kconsole.observer import ClusterObserver
from kconsole.reassign.plan import Plan
from tests.integration.conftest import restore
from tests.integration.kafka_tools import run_tool, topic_describe
from tests.waiting import wait_until

pytestmark = pytest.mark.integration
REASSIGN_TOOL = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"


def settings_for(cluster: LocalCluster) -> Settings:
    return Settings(bootstrap=cluster.spec.bootstrap, zookeeper=cluster.spec.zk_connect)


def kc(cluster: LocalCluster, *args: str) -> Result:
    return CliRunner().invoke(
        main, ["-b", cluster.spec.bootstrap, "-z", cluster.spec.zk_connect, *args]
    )


def assignment(cluster: LocalCluster, topic: str) -> dict[int, tuple[tuple[int, ...], tuple]]:
    """partition -> (replicas, isr), from the brokers' metadata."""
    md = AdminClient({"bootstrap.servers": cluster.spec.bootstrap}).list_topics(topic, timeout=10)
    return {p.id: (tuple(p.replicas), tuple(p.isrs)) for p in md.topics[topic].partitions.values()}


def hosted_on(cluster: LocalCluster, broker: int) -> list[str]:
    md = AdminClient({"bootstrap.servers": cluster.spec.bootstrap}).list_topics(timeout=10)
    return [
        f"{t}/{p.id}"
        for t, tm in md.topics.items()
        for p in tm.partitions.values()
        if broker in p.replicas
    ]


def new_topic(cluster: LocalCluster, partitions: int = 2, rf: int = 3) -> str:
    name = f"move-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.spec.bootstrap})
    admin.create_topics([NewTopic(name, partitions, rf)])[name].result(timeout=30)
    # Every broker must know it: a client asking another one would hear UNKNOWN_TOPIC.
    cluster.wait_metadata_everywhere(name, time.monotonic() + 30)
    return name


def fill(cluster: LocalCluster, topic: str, partition: int, mib: int) -> None:
    p = Producer({"bootstrap.servers": cluster.spec.bootstrap, "acks": "all"})
    for _ in range(mib * 16):
        p.produce(topic, b"x" * 65536, partition=partition)
        p.poll(0)
    assert p.flush(60) == 0


@pytest.fixture(scope="module")
def four(cluster: LocalCluster, zk: KazooClient) -> Iterator[LocalCluster]:
    """The shared cluster with broker 4 started (adding brokers works while it runs)."""
    restore(cluster, zk)
    big = LocalCluster(cluster.state_dir, replace(cluster.spec, brokers=4))
    big.up(timeout=120, create_topic=False)
    try:
        yield big
    finally:
        # Nothing may stay on broker 4 when it stops: drain it with kconsole itself, once no
        # reassignment is left running (a test that failed half-way may have left one).
        with ReassignClient(settings_for(big)) as c:
            if c.ongoing():
                c.cancel(None)
        try:
            if hosted_on(big, 4):
                out = big.state_dir / "teardown-drain.json"
                assert (
                    kc(big, "reassign", "drain", "--broker", "4", "--out", str(out)).exit_code == 0
                )
                kc(
                    big,
                    "reassign",
                    "execute",
                    "--plan",
                    str(out),
                    "--yes",
                    "--wait",
                    "--timeout",
                    "120",
                )
        finally:
            big.stop_broker(4)
            cluster.spec_file.write_text(cluster.spec.to_json() + "\n")  # back to 3 brokers
            restore(cluster, zk)


def test_generate_execute_verify_under_load(four: LocalCluster, tmp_path: Path) -> None:
    """Moved onto 2,3,4 with a throttle while an acks=all workload runs: in place, in sync,
    throttles removed, Kafka's own --verify agrees, and no acknowledged record was lost."""
    topic = new_topic(four, partitions=2)
    plan_file = tmp_path / "plan.json"
    res = kc(four, "reassign", "generate", "--topics", topic, "--brokers", "2,3,4",
             "--out", str(plan_file))  # fmt: skip
    assert res.exit_code == 0, res.output
    plan = Plan.from_json(plan_file.read_text())
    assert {b for m in plan.moves for b in m.replicas} <= {2, 3, 4}
    assert Plan.from_json((tmp_path / "plan.rollback.json").read_text()).moves  # the way back

    settings = settings_for(four)
    starts = end_offsets(settings, topic)
    workload = Workload(settings, topic, acks="all", rate=150, keys=16).start()
    try:
        wait_until(lambda: workload.counters().acked >= 100, 60, "the workload running")
        res = kc(four, "reassign", "execute", "--plan", str(plan_file), "--throttle",
                 "20000000", "--yes", "--wait", "--timeout", "180")  # fmt: skip
        assert res.exit_code == 0, res.output
        assert "complete" in res.output and "throttles removed" in res.output
        wait_until(lambda: workload.counters().acked >= 400, 60, "more acks after the move")
    finally:
        result = workload.stop(flush_timeout_s=15)
    now = assignment(four, topic)
    for m in plan.moves:
        assert now[m.partition][0] == m.replicas and set(now[m.partition][1]) == set(m.replicas)
    with ReassignClient(settings) as c:
        left = c.throttles()
    assert not any(k == f"topic:{topic}" or k.startswith("broker:") for k in left), left
    kafka = run_tool(four, REASSIGN_TOOL, "--bootstrap-server", four.spec.bootstrap,
                     "--reassignment-json-file", str(plan_file), "--verify")  # fmt: skip
    assert kafka.count("is completed") == len(plan.moves), kafka
    back = read_back(settings, topic, result.run_id, start_offsets=starts, timeout_s=60,
                     until=result.acked)  # fmt: skip
    audit = check(result.acked, result.failed, back.records, send_times=result.send_times,
                  unknown=result.unknown, acks="all")  # fmt: skip
    assert len(result.acked) >= 400
    assert audit.ok and not audit.lost and not audit.order_violations, audit.to_dict()


def test_plans_go_both_ways_with_kafkas_tool(four: LocalCluster, tmp_path: Path) -> None:
    """Kafka's --generate output runs in kconsole; kconsole's plan runs in Kafka's --execute."""
    topic = new_topic(four, partitions=2)
    moves = tmp_path / "topics.json"
    moves.write_text(json.dumps({"version": 1, "topics": [{"topic": topic}]}))
    out = run_tool(four, REASSIGN_TOOL, "--bootstrap-server", four.spec.bootstrap,
                   "--topics-to-move-json-file", str(moves), "--broker-list", "1,2,4",
                   "--generate")  # fmt: skip
    proposed = out.split("Proposed partition reassignment configuration")[1].strip()
    kafka_plan = tmp_path / "kafka.json"
    kafka_plan.write_text(proposed.splitlines()[0])
    res = kc(four, "reassign", "execute", "--plan", str(kafka_plan), "--yes", "--wait")
    assert res.exit_code == 0, res.output
    target = {m.partition: m.replicas for m in Plan.from_json(kafka_plan.read_text()).moves}
    assert {p: r for p, (r, _) in assignment(four, topic).items()} == target

    mine = tmp_path / "mine.json"
    res = kc(four, "reassign", "generate", "--topics", topic, "--brokers", "1,2,3",
             "--out", str(mine))  # fmt: skip
    assert res.exit_code == 0, res.output
    run_tool(four, REASSIGN_TOOL, "--bootstrap-server", four.spec.bootstrap,
             "--reassignment-json-file", str(mine), "--execute")  # fmt: skip
    wait_until(lambda: kc(four, "reassign", "verify", "--plan", str(mine)).exit_code == 0, 120,
               "kconsole verify of the plan Kafka's tool executed")  # fmt: skip


def test_throttle_during_the_move_and_cancel(four: LocalCluster, tmp_path: Path) -> None:
    """A throttled move is listed with its throttles; cancel returns the original replicas and
    verify of the rollback plan removes the throttles."""
    topic = new_topic(four, partitions=1)
    fill(four, topic, 0, mib=4)
    original = assignment(four, topic)[0][0]
    spare = ({1, 2, 3, 4} - set(original)).pop()  # RF 3 on 4 brokers: one is free
    target = (*original[:-1], spare)
    plan_file = tmp_path / "slow.json"
    plan_file.write_text(Plan.from_json(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": list(target)}]})).to_json())  # fmt: skip
    res = kc(four, "reassign", "execute", "--plan", str(plan_file), "--throttle", "20000",
             "--yes")  # fmt: skip
    assert res.exit_code == 0, res.output
    listed = kc(four, "reassign", "list", "--json")
    assert any(o["topic"] == topic for o in json.loads(listed.output)), listed.output
    with ReassignClient(settings_for(four)) as c:
        throttles = c.throttles()
    assert f"{topic}" in json.dumps(throttles) and "follower.replication.throttled.rate" in (
        json.dumps(throttles)
    )
    res = kc(four, "reassign", "cancel", "--plan", str(plan_file), "--yes")
    assert res.exit_code == 0, res.output
    wait_until(lambda: assignment(four, topic)[0][0] == original, 60, "the original replicas")
    rollback = tmp_path / "rollback.json"
    rollback.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": list(original)}]}))  # fmt: skip
    res = kc(four, "reassign", "verify", "--plan", str(rollback))
    assert res.exit_code == 0, res.output
    with ReassignClient(settings_for(four)) as c:
        assert not any(topic in k or k.startswith("broker:") for k in c.throttles())


CONFIG_TOOL = "kafka.admin.ConfigCommand"
TOPIC_TOOL = "org.apache.kafka.tools.TopicCommand"


# ConfigCommand's header before each entity's configs, when it describes every entity of a type.
_CONFIGS_OF = re.compile(r"Dynamic configs for (broker|topic) (\S+) are:")


def kafka_throttles(cluster: LocalCluster, topics: list[str]) -> list[str]:
    """Every throttle config Kafka's own ConfigCommand shows on brokers 1-4 and `topics`.

    One ConfigCommand per entity type, describing every entity of it (a JVM per broker and per
    topic cost a dozen JVM starts per call); each entity's configs follow its header."""
    found = []
    for kind, names in (("brokers", ["1", "2", "3", "4"]), ("topics", topics)):
        out = run_tool(cluster, CONFIG_TOOL, "--bootstrap-server", cluster.spec.bootstrap,
                       "--describe", "--entity-type", kind)  # fmt: skip
        described: set[str] = set()
        name = None  # the entity the lines below belong to (None: another section)
        for line in out.splitlines():
            if header := _CONFIGS_OF.match(line.strip()):
                name = header.group(2) if header.group(2) in names else None
                described.update([name] if name else [])
            elif line.startswith(("Default configs", "Dynamic configs")):
                name = None
            elif name is not None and "throttled" in line.split("=")[0]:
                found.append(f"{kind}:{name} {line.split()[0]}")
        assert described == set(names), (kind, names, out[-2000:])  # every one was described
    return found


def kafka_urp(cluster: LocalCluster, topic: str) -> set[int]:
    """The partitions of `topic` Kafka's TopicCommand calls under-replicated."""
    out = run_tool(cluster, TOPIC_TOOL, "--bootstrap-server", cluster.spec.bootstrap,
                   "--describe", "--under-replicated-partitions", "--topic", topic)  # fmt: skip
    return {int(m.group(1)) for m in re.finditer(r"Partition:\s*(\d+)", out)}


def slow_move(cluster: LocalCluster, tmp_path: Path, mib: int = 4) -> tuple[str, tuple, Path]:
    """A one-partition topic with `mib` MiB and a plan that moves its first replica to the free
    broker and puts the survivors first: (topic, original replicas, plan file)."""
    topic = new_topic(cluster, partitions=1)
    fill(cluster, topic, 0, mib=mib)
    original = assignment(cluster, topic)[0][0]
    spare = ({1, 2, 3, 4} - set(original)).pop()  # RF 3 on 4 brokers: one is free
    plan_file = tmp_path / f"{topic}.json"
    plan_file.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [*original[1:], spare]}]}))  # fmt: skip
    return topic, original, plan_file


def test_cancel_restores_the_order_and_removes_only_its_throttles(
    four: LocalCluster, tmp_path: Path
) -> None:
    """Two throttled moves: one kconsole's, one Kafka's own tool's. While they copy, kconsole's
    under-replicated partitions are TopicCommand's. Cancelling kconsole's puts the partition
    back on its replicas in their original order and removes its throttles, but not those the
    other move still needs; cancelling that one too leaves ConfigCommand showing none."""
    mine, original, my_plan = slow_move(four, tmp_path)
    theirs, their_original, their_plan = slow_move(four, tmp_path)
    res = kc(four, "reassign", "execute", "--plan", str(my_plan), "--throttle", "20000", "--yes")
    assert res.exit_code == 0, res.output
    run_tool(four, REASSIGN_TOOL, "--bootstrap-server", four.spec.bootstrap,
             "--reassignment-json-file", str(their_plan), "--execute", "--additional",
             "--throttle", "20000")  # fmt: skip
    settings = settings_for(four)
    for topic in (mine, theirs):
        snap = ClusterObserver(settings).read_once()
        (p,) = [p for p in snap.partitions if p.topic == topic]
        assert p.reassigning, p
        ours = {p.partition} if p.under_replicated else set()
        assert ours == kafka_urp(four, topic), (p, ours)

    res = kc(four, "reassign", "cancel", "--plan", str(my_plan), "--yes")
    assert res.exit_code == 0, res.output
    assert "back in its original replica order" in res.output, res.output
    assert topic_describe(four, mine)[0][1] == original  # the order too, not only the set
    left = kafka_throttles(four, [mine, theirs])
    assert not [t for t in left if t.startswith(f"topics:{mine} ")], left
    assert [t for t in left if t.startswith(f"topics:{theirs} ")], left  # still moving
    assert [t for t in left if t.startswith("brokers:")], left  # the other move needs them

    res = kc(four, "reassign", "cancel", "--all", "--yes")
    assert res.exit_code == 0, res.output
    assert "kconsole did not start this move" in res.output, res.output
    assert set(topic_describe(four, theirs)[0][1]) == set(their_original)
    assert kafka_throttles(four, [mine, theirs]) == []


def test_invalid_plans_are_refused_and_nothing_moves(four: LocalCluster, tmp_path: Path) -> None:
    topic = new_topic(four, partitions=2)
    before = assignment(four, topic)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [1, 9, 2]},
        {"topic": topic, "partition": 1, "replicas": [2, 2, 3]},
        {"topic": "no-such-topic", "partition": 0, "replicas": [1, 2, 3]},
    ]}))  # fmt: skip
    res = kc(four, "reassign", "execute", "--plan", str(bad), "--yes")
    assert res.exit_code == 1
    for needle in ("broker 9 does not exist", "listed 2 times", "no-such-topic does not exist"):
        assert needle in res.output, res.output
    assert "nothing was sent" in res.output
    short = tmp_path / "short.json"
    short.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [1, 2]}]}))  # fmt: skip
    res = kc(four, "reassign", "execute", "--plan", str(short), "--yes")
    assert res.exit_code == 1 and "replication factor" in res.output, res.output
    assert assignment(four, topic) == before


def test_drain_leaves_nothing_on_the_broker(four: LocalCluster, tmp_path: Path) -> None:
    """Drain broker 4: afterwards it hosts no replica, and stopping it leaves every partition
    fully replicated. (It is started again for the teardown.)"""
    topic = new_topic(four, partitions=3)
    move = tmp_path / "onto4.json"
    assert kc(four, "reassign", "generate", "--topics", topic, "--brokers", "2,3,4",
              "--out", str(move)).exit_code == 0  # fmt: skip
    assert kc(four, "reassign", "execute", "--plan", str(move), "--yes", "--wait").exit_code == 0
    assert hosted_on(four, 4)
    drain = tmp_path / "drain.json"
    res = kc(four, "reassign", "drain", "--broker", "4", "--out", str(drain))
    assert res.exit_code == 0, res.output
    res = kc(four, "reassign", "execute", "--plan", str(drain), "--yes", "--wait")
    assert res.exit_code == 0, res.output
    assert hosted_on(four, 4) == []
    four.stop_broker(4)
    try:
        md = AdminClient({"bootstrap.servers": four.spec.bootstrap}).list_topics(timeout=10)
        short = [f"{t}/{p.id}" for t, tm in md.topics.items() for p in tm.partitions.values()
                 if set(p.isrs) != set(p.replicas)]  # fmt: skip
        assert short == []
    finally:
        four.start_broker(4)


def test_preferred_election_after_a_restart(four: LocalCluster, zk: KazooClient) -> None:
    """Broker 1 restarted: its partitions are led elsewhere until `elect --preferred`; an
    unclean election is refused without its typed confirmation."""
    four.stop_broker(1)
    four.start_broker(1)
    # `--all` asks for every partition of every topic (__consumer_offsets too, which catches up
    # on its own time): the controller refuses a preferred replica that is not yet in the ISR it
    # holds, so wait on ZooKeeper's ISR of every topic, not on one topic's metadata.
    wait_until(
        lambda: all(partitions_fully_in_sync(zk, t) for t in zk.get_children("/brokers/topics")),
        120,
        "broker 1 back in every ISR of every topic",
    )
    res = kc(four, "elect", "--preferred", "--all", "--yes", "--json")
    assert res.exit_code == 0, res.output
    outcomes = {r["outcome"] for r in json.loads(res.output)}
    assert outcomes <= {"elected", "not needed"}, res.output
    admin = AdminClient({"bootstrap.servers": four.spec.bootstrap})

    def on_preferred() -> bool:
        # Every broker learns the new leaders asynchronously (UpdateMetadata from the
        # controller): the broker answering may still have the old ones for a moment.
        md = admin.list_topics(timeout=10)
        return all(p.leader == p.replicas[0] for tm in md.topics.values()
                   for p in tm.partitions.values())  # fmt: skip

    wait_until(on_preferred, 30, "the metadata to show every partition on its preferred leader")
    res = kc(four, "elect", "--unclean", "--topic", "test-topic", "--partition", "0")
    assert res.exit_code == 1 and "not confirmed" in res.output


async def test_the_console_follows_and_cancels_a_move_kafkas_tool_started(
    four: LocalCluster, tmp_path: Path
) -> None:
    """A throttled move started by Kafka's own tool: the reassignment screen opened on its
    topic follows it (bytes left, a rate no higher than the throttle), again after escape and
    in a console started afresh, and cancels it; the partition is back on its replicas and its
    throttles are gone."""
    from textual.widgets import Static

    from kconsole.commands import Commands
    from kconsole.ui.app import make_app
    from kconsole.ui.screens.reassign import ReassignScreen
    from tests.integration.test_console_live import until

    topic, original, plan = slow_move(four, tmp_path, mib=6)
    run_tool(four, REASSIGN_TOOL, "--bootstrap-server", four.spec.bootstrap,
             "--reassignment-json-file", str(plan), "--execute", "--throttle", "50000")  # fmt: skip
    settings = settings_for(four)

    def console() -> Any:
        door = Commands.for_settings(settings, control_reason="not in this test", audit=None)
        app = make_app(ClusterObserver(settings), commands=door, settings=settings)
        app.animation_level = "none"
        return app

    def said(screen: ReassignScreen, text: str) -> bool:
        return text in str(screen.query_one("#reassign-message", Static).content)

    def moving(app: Any) -> bool:
        snap = app.snapshot
        return snap is not None and any(p.topic == topic and p.reassigning for p in snap.partitions)

    async def follow(app: Any, pilot: Any) -> ReassignScreen:
        await until(lambda: moving(app), 30, "the move")
        app.open_reassign(topics=[topic])
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReassignScreen)
        await until(lambda: screen.progress is not None and screen.progress.rate is not None
                    and not screen.progress.done, 60, "the move's progress")  # fmt: skip
        assert screen.progress is not None and screen.progress.left
        # the throttle is read from the brokers (Kafka's tool set it): a replication quota lets
        # a burst above the rate through (it averages over its window), and the rate shown is
        # over a window too, capped by the throttle
        assert screen.progress.throttle_bps == 50_000
        assert screen.progress.rate <= 50_000  # type: ignore[operator]
        return screen

    try:
        await follow_then_cancel(console, follow, said)
    finally:
        with ReassignClient(settings) as c:  # a failure above must not leave the move running
            if any(o.topic == topic for o in c.ongoing()):
                c.cancel([(topic, 0)])
    assert set(topic_describe(four, topic)[0][1]) == set(original)
    assert not [t for t in kafka_throttles(four, [topic]) if t.startswith(f"topics:{topic} ")]


async def follow_then_cancel(console: Any, follow: Any, said: Any) -> None:
    """Open the console twice (the second time standing for a restart), follow the move each
    time (also after escape), and cancel it from the second."""
    from kconsole.ui.screens.ask import AskText
    from tests.integration.test_console_live import until

    for run in ("first", "after a restart"):
        app = console()
        async with app.run_test(size=(160, 48)) as pilot:
            await follow(app, pilot)
            await pilot.press("escape")
            await pilot.pause()
            screen = await follow(app, pilot)  # and after escape
            if run == "after a restart":
                await pilot.press("c")
                await pilot.pause()
                assert isinstance(app.screen, AskText)
                app.screen.query_one("Input").value = "cancel"  # type: ignore[attr-defined]
                await pilot.press("enter")
                cancelled = "cancelled the reassignment of 1 of 1 partition"
                await until(partial(said, screen, cancelled), 60, "the cancel")
