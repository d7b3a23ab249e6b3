"""Reassignment planning: the plan's JSON, its checks, its diff, and where `generate` and
`drain` put replicas (Kafka's placement, balanced, moving as little as possible)."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kconsole.cluster.reassign.throttles import throttles_of
from kconsole.models import Broker, BrokerState, ClusterSnapshot, Partition, Topic
from kconsole.reassign import (
    Move,
    Plan,
    PlanError,
    Problem,
    diff,
    drain,
    generate,
    kafka_replicas,
    placement,
    rack_alternated,
    validate,
)
from tests.ui.builders import healthy, replicas

PROPS = settings(max_examples=200, derandomize=True, deadline=None)
Assignment = Mapping[tuple[str, int], Sequence[int]]
EMPTY = "the plan is empty: it moves no partition"


def snapshot(
    assignment: Assignment,
    brokers: Sequence[int] = (1, 2, 3),
    *,
    racks: Mapping[int, str] | None = None,
    down: Sequence[int] = (),
    min_isr: Mapping[str, int] | None = None,
) -> ClusterSnapshot:
    """Brokers `brokers` (up unless in `down`), one partition per entry of `assignment`."""
    return ClusterSnapshot(
        taken_at=0.0,
        brokers=tuple(
            Broker(
                b,
                "127.0.0.1",
                19090 + b,
                rack=(racks or {}).get(b),
                state=BrokerState.DOWN if b in down else BrokerState.UP,
            )
            for b in brokers
        ),
        partitions=tuple(
            Partition(t, p, reps[0] if reps else -1, tuple(reps), tuple(reps))
            for (t, p), reps in sorted(assignment.items())
        ),
        topics=tuple(
            Topic(t, internal=t.startswith("__"), min_isr=(min_isr or {}).get(t))
            for t in sorted({t for t, _ in assignment})
        ),
    )


def kafka_topic(name: str, n: int, rf: int, brokers: Sequence[int]) -> dict:
    return {(name, i): tuple(kafka_replicas(i, rf, sorted(brokers))) for i in range(n)}


def apply(snap: ClusterSnapshot, plan: Plan) -> ClusterSnapshot:
    """`snap` once `plan` completed: new replicas, all in sync, preferred leaders elected."""
    new = {m.key: m.replicas for m in plan.moves}

    def moved(p: Partition) -> Partition:
        reps = new.get((p.topic, p.partition))
        return (
            p if reps is None else dataclasses.replace(p, leader=reps[0], replicas=reps, isr=reps)
        )

    return dataclasses.replace(snap, partitions=tuple(moved(p) for p in snap.partitions))


def counts(plan: Plan) -> tuple[Counter[int], Counter[int]]:
    return Counter(b for m in plan.moves for b in m.replicas), Counter(
        m.replicas[0] for m in plan.moves
    )


def within_one(counter: Counter[int], brokers: Sequence[int]) -> bool:
    values = [counter[b] for b in brokers]
    return max(values) - min(values) <= 1


# -- JSON ---------------------------------------------------------------------------------------


def test_to_json_is_kafkas_format_sorted_with_log_dirs() -> None:
    plan = Plan((Move("b", 1, (3, 1)), Move("a", 0, (1, 2), ("/d1", "/d2")), Move("b", 0, (2, 3))))
    assert json.loads(plan.to_json()) == {
        "version": 1,
        "partitions": [
            {"topic": "a", "partition": 0, "replicas": [1, 2], "log_dirs": ["/d1", "/d2"]},
            {"topic": "b", "partition": 0, "replicas": [2, 3], "log_dirs": ["any", "any"]},
            {"topic": "b", "partition": 1, "replicas": [3, 1], "log_dirs": ["any", "any"]},
        ],
    }


def test_from_json_reads_kafkas_output_with_and_without_log_dirs() -> None:
    kafka = (
        '{"version":1,"partitions":[{"topic":"test-topic","partition":1,"replicas":[3,1],'
        '"log_dirs":["any","any"]},{"topic":"test-topic","partition":0,"replicas":[2,3],'
        '"log_dirs":["/data/k1","any"],"extra":"ignored"}],"comment":"ignored"}'
    )
    plan = Plan.from_json(kafka)
    assert plan.moves == (
        Move("test-topic", 0, (2, 3), ("/data/k1", "any")),
        Move("test-topic", 1, (3, 1)),
    )
    bare = '{"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1]}]}'
    assert Plan.from_json(bare) == Plan((Move("t", 0, (1,)),))
    assert Plan.from_json('{"version":1,"partitions":[]}') == Plan(())


moves_st = st.lists(
    st.builds(
        Move,
        topic=st.sampled_from(["a", "test-topic", "__consumer_offsets"]),
        partition=st.integers(0, 50),
        replicas=st.lists(st.integers(0, 9), max_size=4).map(tuple),
    ),
    max_size=8,
    unique_by=lambda m: m.key,
)


@PROPS
@given(moves_st)
def test_json_round_trip(moves: list[Move]) -> None:
    moves = [
        dataclasses.replace(m, log_dirs=tuple(f"/d{b}" for b in m.replicas)) if i % 2 else m
        for i, m in enumerate(moves)
    ]
    plan = Plan(tuple(sorted(moves, key=lambda m: m.key)))
    assert Plan.from_json(plan.to_json()) == plan


def entry(**kw: object) -> str:
    item = {"topic": "t", "partition": 0, "replicas": [1, 2], **kw}
    item = {k: v for k, v in item.items() if v is not ...}
    return json.dumps({"version": 1, "partitions": [item]})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", 'expected a JSON object with "version" and "partitions"'),
        ('{"partitions": []}', '"version" is missing'),
        ('{"version": 2, "partitions": []}', "unsupported plan version 2"),
        ('{"version": 1}', '"partitions" is missing'),
        ('{"version": 1, "partitions": {}}', '"partitions" is a object, not a list'),
        ('{"version": 1, "partitions": [3]}', "partitions[0]: expected an object, got a number"),
        (entry(topic=...), '"topic" must be a non-empty string'),
        (entry(topic=7), '"topic" must be a non-empty string, got 7'),
        (entry(partition=...), '"partition" must be an integer, got None'),
        (entry(partition="0"), "\"partition\" must be an integer, got '0'"),
        (entry(partition=-1), "partitions[0] (t/-1): the partition number must not be negative"),
        (entry(replicas=...), '"replicas" must be a list of broker ids, got None'),
        (entry(replicas="1,2"), '"replicas" must be a list of broker ids'),
        (entry(replicas=[1, "2"]), "broker ids must be non-negative integers, got '2'"),
        (entry(replicas=[1, 2.5]), "broker ids must be non-negative integers, got 2.5"),
        (entry(replicas=[True]), "broker ids must be non-negative integers, got True"),
        (entry(log_dirs="any"), '"log_dirs" must be a list of strings'),
        (entry(log_dirs=["any"]), '"log_dirs" has 1 entries for 2 replicas'),
        (
            json.dumps(
                {
                    "version": 1,
                    "partitions": [
                        {"topic": "t", "partition": 0, "replicas": [1]},
                        {"topic": "t", "partition": 0, "replicas": [2]},
                    ],
                }
            ),
            "partitions[1]: t/0 is listed twice in the plan",
        ),
    ],
)
def test_from_json_errors(text: str, message: str) -> None:
    with pytest.raises(PlanError) as err:
        Plan.from_json(text)
    assert message in str(err.value)


def test_current_is_the_rollback_plan() -> None:
    snap = healthy()
    plan = Plan.current(snap, [("test-topic", 1), ("test-topic", 0)])
    assert plan.moves == (Move("test-topic", 0, replicas(0)), Move("test-topic", 1, replicas(1)))
    assert len(Plan.current(snap)) == len(snap.partitions)
    moving = dataclasses.replace(
        snap.partitions[0], replicas=(2, 3, 1, 4), adding=(4,), removing=(1,)
    )
    snap = dataclasses.replace(snap, partitions=(moving, *snap.partitions[1:]))
    assert Plan.current(snap, [("test-topic", 0)]).moves[0].replicas == (2, 3, 1)
    with pytest.raises(PlanError, match="test-topic/9: no such partition"):
        Plan.current(snap, [("test-topic", 9)])


# -- validate -----------------------------------------------------------------------------------


def test_validate_a_good_plan_and_an_unchanged_move() -> None:
    snap = healthy()
    assert validate(Plan((Move("test-topic", 0, (1, 2, 3)),)), snap) == []
    assert validate(Plan.current(snap), snap) == []


def test_validate_an_empty_plan() -> None:
    assert validate(Plan(()), healthy()) == [Problem(None, None, EMPTY)]


def test_validate_reports_every_problem() -> None:
    snap = snapshot(
        {
            **{("t", i): (1, 2, 3) for i in range(6)},
            ("solo", 0): (1,),
        },
        brokers=(1, 2, 3, 4),
        down=(3, 4),
        min_isr={"t": 2},
    )
    solo = snap.partitions[0]  # being reassigned from (1,) to (4,)
    assert solo.topic == "solo"
    moving = dataclasses.replace(solo, replicas=(1, 4), adding=(4,), removing=(1,))
    snap = dataclasses.replace(snap, partitions=(moving, *snap.partitions[1:]))
    plan = Plan(
        (
            Move("t", 0, (1, 2, 7)),  # unknown broker
            Move("t", 1, (1, 1, 2)),  # twice
            Move("t", 2, ()),  # empty
            Move("t", 3, (1, 2)),  # RF 2 of 3
            Move("t", 4, (1, 3, 4)),  # only 1 up < min ISR 2
            Move("t", 5, (1, 2, 3), ("/d",)),  # log dirs
            Move("t", 9, (1, 2, 3)),  # no such partition
            Move("gone", 0, (1,)),  # no such topic
            Move("gone", 1, (1,)),  # same topic: one problem
            Move("solo", 0, (8, 9)),  # unknown brokers (2), RF, no live replica
        )
    )
    problems = validate(plan, snap)
    assert [p.message for p in problems] == [
        "gone: topic gone does not exist",
        "solo/0: already being reassigned (adding 4; removing 1): wait until it is done, or "
        "cancel it",
        "solo/0: broker 8 does not exist (brokers: 1, 2, 3, 4)",
        "solo/0: broker 9 does not exist (brokers: 1, 2, 3, 4)",
        "solo/0: 2 replicas, but solo has replication factor 1 (changing it was not allowed)",
        "solo/0: only 0 of the new replicas are up (none), fewer than min.insync.replicas=1",
        "t/0: broker 7 does not exist (brokers: 1, 2, 3, 4)",
        "t/1: broker 1 is listed 2 times in [1, 1, 2]",
        "t/2: the replica list is empty",
        "t/3: 2 replicas, but t has replication factor 3 (changing it was not allowed)",
        "t/4: only 1 of the new replicas is up (1), fewer than min.insync.replicas=2",
        "t/5: 1 log dirs given for 3 replicas",
        "t/9: partition 9 does not exist (t has partitions 0-5)",
    ]
    assert [(p.topic, p.partition) for p in problems][:2] == [("gone", None), ("solo", 0)]
    assert validate(plan, snap, allow_rf_change=True) == [
        p for p in problems if "replication factor" not in p.message
    ]


def test_validate_a_partition_listed_twice() -> None:
    plan = Plan((Move("test-topic", 0, (1, 2, 3)), Move("test-topic", 0, (3, 2, 1))))
    assert [p.message for p in validate(plan, healthy())] == [
        "test-topic/0: the partition is listed 2 times in the plan"
    ]


# -- diff ---------------------------------------------------------------------------------------


def test_diff() -> None:
    snap = healthy()  # test-topic: 0 (2,3,1), 1 (3,1,2), 2 (1,2,3), 3 (2,1,3)
    plan = Plan(
        (
            Move("test-topic", 0, (2, 3, 1)),  # unchanged
            Move("test-topic", 1, (1, 3, 2)),  # leader only
            Move("test-topic", 2, (4, 2, 3)),  # 1 -> 4, leader 1 -> 4
            Move("test-topic", 3, (2, 4, 5)),  # two new, leader kept
        )
    )
    d = diff(plan, snap, {("test-topic", 2): 100, ("test-topic", 3): 10})
    m0, m1, m2, m3 = d.moves
    assert m0.unchanged and m0.added == () and m0.copy_bytes is None
    assert (m1.leader_now, m1.leader_after, m1.added, m1.unchanged) == (3, 1, (), False)
    assert (m2.added, m2.removed, m2.size_bytes, m2.copy_bytes) == ((4,), (1,), 100, 100)
    assert (m3.added, m3.removed, m3.copy_bytes, m3.leader_after) == ((4, 5), (1, 3), 20, 2)
    assert d.total_copy_bytes == 120
    assert d.moved_replicas == 3
    assert d.leader_changes == 2
    assert d.partitions_changed == 3
    assert diff(plan, snap).total_copy_bytes is None
    assert diff(plan, snap, {("test-topic", 2): 1}).total_copy_bytes is None
    assert diff(Plan(plan.moves[:2]), snap).total_copy_bytes == 0
    gone = diff(Plan((Move("nope", 0, (1,)),)), snap).moves[0]
    assert (gone.current, gone.leader_now, gone.added) == ((), -1, (1,))


# -- Kafka's placement --------------------------------------------------------------------------


def test_kafka_placement_matches_the_seed_cluster() -> None:
    """The seed cluster's test-topic was placed by Kafka with start index 1, shift 0."""
    assert [tuple(kafka_replicas(i, 3, [1, 2, 3], start_index=1)) for i in range(6)] == [
        replicas(i) for i in range(6)
    ]
    assert kafka_replicas(0, 2, [1, 2, 3, 4]) == [1, 2]
    assert kafka_replicas(4, 2, [1, 2, 3, 4]) == [1, 3]  # the shift moved on after 4


def test_rack_alternated_list() -> None:
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "a"}
    assert rack_alternated(racks, racks) == [1, 3, 5, 2, 4, 6]
    order = rack_alternated(racks, racks)
    for i in range(12):
        placed = kafka_replicas(i, 3, order, racks)
        assert len({racks[b] for b in placed}) == 3


# -- generate -----------------------------------------------------------------------------------

OLD = (11, 12, 13)  # brokers the partitions are on before being moved "from scratch"

layouts = st.lists(st.tuples(st.integers(1, 8), st.integers(1, 3)), min_size=1, max_size=3)


def old_assignment(layout: Sequence[tuple[int, int]]) -> dict:
    out: dict = {}
    for i, (n, rf) in enumerate(layout):
        out.update(kafka_topic(f"t{i}", n, rf, OLD))
    return out


def topics_of(layout: Sequence[tuple[int, int]]) -> list[str]:
    return [f"t{i}" for i in range(len(layout))]


def rf_of(snap: ClusterSnapshot) -> dict[tuple[str, int], int]:
    return {(p.topic, p.partition): len(p.replicas) for p in snap.partitions}


def check_lists(plan: Plan, brokers: Sequence[int], rf: Mapping[tuple[str, int], int]) -> None:
    for m in plan.moves:
        assert len(set(m.replicas)) == len(m.replicas), m
        assert set(m.replicas) <= set(brokers), m
        assert len(m.replicas) == rf[m.key], m


def spread(m: Move, racks: Mapping[int, str]) -> int:
    return len({racks[b] for b in m.replicas})


@PROPS
@given(layouts, st.integers(3, 6), st.sampled_from([None, 1, 2, 3]))
def test_generate_from_scratch_is_balanced(
    layout: list[tuple[int, int]], n: int, rf: int | None
) -> None:
    target = list(range(1, n + 1))
    snap = snapshot(old_assignment(layout), (*target, *OLD))
    plan = generate(snap, topics_of(layout), target, replication_factor=rf)
    wanted = rf_of(snap) if rf is None else {k: rf for k in rf_of(snap)}
    check_lists(plan, target, wanted)
    assert [m.key for m in plan.moves] == sorted(rf_of(snap))
    hosted, led = counts(plan)
    assert within_one(hosted, target), hosted
    assert within_one(led, target), led


racked = st.tuples(st.integers(3, 6), st.sampled_from([2, 3])).flatmap(
    lambda nr: st.lists(st.integers(0, nr[1] - 1), min_size=nr[0], max_size=nr[0]).filter(
        lambda rs: len(set(rs)) == nr[1]
    )
)


def rack_map(rack_ids: Sequence[int]) -> dict[int, str]:
    return {b: f"rack-{r}" for b, r in enumerate(rack_ids, start=1)}


@PROPS
@given(layouts, racked)
def test_generate_with_racks_spreads_every_partition(
    layout: list[tuple[int, int]], rack_ids: list[int]
) -> None:
    racks = rack_map(rack_ids)
    target = sorted(racks)
    snap = snapshot(old_assignment(layout), (*target, *OLD), racks=racks)
    plan = generate(snap, topics_of(layout), target)
    check_lists(plan, target, rf_of(snap))
    n_racks = len(set(racks.values()))
    for m in plan.moves:
        assert spread(m, racks) == min(len(m.replicas), n_racks), m
    sizes = Counter(racks.values())
    if len(set(sizes.values())) == 1:  # racks of one size: balance is possible too
        hosted, led = counts(plan)
        assert within_one(hosted, target), hosted
        assert within_one(led, target), led


@PROPS
@given(layouts, st.integers(3, 6), st.booleans(), st.booleans())
def test_generate_changes_nothing_when_already_valid(
    layout: list[tuple[int, int]], n: int, with_racks: bool, one_topic: bool
) -> None:
    """Placed once, a second plan for the same brokers keeps everything."""
    target = list(range(1, n + 1))
    racks = {b: f"r{b % 2}" for b in target} if with_racks else None
    snap = snapshot(old_assignment(layout), (*target, *OLD), racks=racks)
    topics = topics_of(layout)[:1] if one_topic else topics_of(layout)
    placed = apply(snap, generate(snap, topics, target))
    again = generate(placed, topics, target)
    assert all(m.unchanged for m in diff(again, placed).moves)


def test_generate_keeps_the_seed_cluster_as_it_is() -> None:
    snap = healthy()
    plan = generate(snap, ["test-topic", "__consumer_offsets"], [3, 2, 1])
    assert plan == Plan.current(snap)


def minimal_moves(snap: ClusterSnapshot, topics: Sequence[str], target: Sequence[int]) -> int:
    """Replicas that must move for replica counts within one: the excess over each share."""
    kept = Counter(b for p in snap.partitions if p.topic in topics for b in p.replicas)
    total = sum(len(p.replicas) for p in snap.partitions if p.topic in topics)
    q, r = divmod(total, len(target))
    have = sorted((kept[b] for b in target), reverse=True)
    shares = [q + 1] * r + [q] * (len(target) - r)
    return sum(max(0, h - s) for h, s in zip(have, shares, strict=True))


@PROPS
@given(layouts, st.booleans())
def test_adding_a_broker_moves_only_what_balance_needs(
    layout: list[tuple[int, int]], with_racks: bool
) -> None:
    racks = {1: "a", 2: "b", 3: "a", 4: "b"} if with_racks else None
    snap = snapshot(old_assignment(layout), (1, 2, 3, 4, *OLD), racks=racks)
    topics = topics_of(layout)
    on_three = apply(snap, generate(snap, topics, [1, 2, 3]))
    plan = generate(on_three, topics, [1, 2, 3, 4])
    check_lists(plan, [1, 2, 3, 4], rf_of(on_three))
    d = diff(plan, on_three)
    hosted, led = counts(plan)
    assert within_one(hosted, [1, 2, 3, 4]), hosted
    assert within_one(led, [1, 2, 3, 4]), led
    if racks:  # on 3 brokers rack b was broker 2 alone: spreading anew may take more moves
        assert all(spread(m, racks) == min(len(m.replicas), 2) for m in plan.moves)
    else:
        assert d.moved_replicas == minimal_moves(on_three, topics, [1, 2, 3, 4])
        assert all(b == 4 for m in d.moves for b in m.added)


@pytest.mark.parametrize(("n", "rf"), [(3, 3), (3, 2), (4, 3), (4, 2)])
def test_generate_from_scratch_is_kafkas_placement(n: int, rf: int) -> None:
    target = list(range(1, n + 1))
    snap = snapshot(kafka_topic("t", 2 * n, rf, OLD), (*target, *OLD))
    plan = generate(snap, ["t"], target)
    assert [list(m.replicas) for m in plan.moves] == [
        kafka_replicas(i, rf, target) for i in range(2 * n)
    ]


def test_generate_on_the_seed_cluster_plus_a_broker() -> None:
    snap = healthy()
    snap = dataclasses.replace(snap, brokers=(*snap.brokers, Broker(4, "127.0.0.1", 19095)))
    plan = placement.generate(snap, ["test-topic", "__consumer_offsets"], [1, 2, 3, 4])
    d = diff(plan, snap)
    assert d.moved_replicas == 10  # 42 replicas: 11, 11, 10 stay on 1-3, 10 go to 4
    assert counts(plan)[0] == Counter({1: 11, 2: 11, 3: 10, 4: 10})
    assert sorted(counts(plan)[1].values()) == [3, 3, 4, 4]
    for m in d.moves:  # a leader that stays keeps leading unless leaders need balancing
        assert set(m.added) <= {4}


def test_generate_a_partition_and_a_new_replication_factor() -> None:
    snap = healthy()
    plan = generate(snap, [("test-topic", 2)], [1, 2, 3], replication_factor=2)
    assert plan.moves == (Move("test-topic", 2, (1, 2)),)  # drops a follower, keeps the leader
    grown = generate(snap, [("test-topic", 2)], [1, 2, 3, 4][:3], replication_factor=3)
    assert grown.moves == (Move("test-topic", 2, (1, 2, 3)),)


def test_generate_moves_a_bad_rack_spread() -> None:
    racks = {1: "a", 2: "a", 3: "b", 4: "b"}
    snap = snapshot({("t", 0): (1, 2)}, (1, 2, 3, 4), racks=racks)
    (m,) = generate(snap, ["t"], [1, 2, 3, 4]).moves
    assert m.replicas[0] == 1 and spread(m, racks) == 2
    (m,) = generate(snap, ["t"], [1, 2, 3, 4], racks={}).moves  # racks ignored
    assert m.replicas == (1, 2)


@pytest.mark.parametrize(
    ("targets", "brokers", "rf", "message"),
    [
        (["nope"], [1, 2, 3], None, "topic nope does not exist"),
        ([("nope", 0)], [1, 2, 3], None, "topic nope does not exist"),
        ([("test-topic", 7)], [1, 2, 3], None, "test-topic/7: partition 7 does not exist"),
        ([], [1, 2, 3], None, "nothing to plan"),
        (["test-topic"], [], None, "no target brokers given"),
        (["test-topic"], [1, 9], None, "broker 9 does not exist (brokers: 1, 2, 3)"),
        (["test-topic"], [1, 2], None, "test-topic needs 3 brokers for replication factor 3"),
        (["test-topic"], [1, 2], 3, "but only 2 are given (1, 2)"),
        (["test-topic"], [1, 2], 0, "replication factor must be at least 1, got 0"),
    ],
)
def test_generate_errors(targets: list, brokers: list[int], rf: int | None, message: str) -> None:
    with pytest.raises(PlanError) as err:
        generate(healthy(), targets, brokers, replication_factor=rf)
    assert message in str(err.value)


# -- drain --------------------------------------------------------------------------------------


@PROPS
@given(layouts, st.integers(4, 6), st.data())
def test_drain_empties_the_broker(
    layout: list[tuple[int, int]], n: int, data: st.DataObject
) -> None:
    target = list(range(1, n + 1))
    with_racks = data.draw(st.booleans())
    racks = {b: f"r{b % 3}" for b in target} if with_racks else None
    snap = snapshot(old_assignment(layout), (*target, *OLD), racks=racks)
    snap = apply(snap, generate(snap, topics_of(layout), target))
    snap = dataclasses.replace(snap, brokers=tuple(b for b in snap.brokers if b.id in target))
    victim = data.draw(st.sampled_from(target))
    plan = drain(snap, victim)
    before = {(p.topic, p.partition): p.replicas for p in snap.partitions}
    assert [m.key for m in plan.moves] == sorted(k for k, r in before.items() if victim in r)
    for m in plan.moves:
        old = before[m.key]
        assert len(set(m.replicas)) == len(m.replicas) == len(old)
        assert victim not in m.replicas
        assert [a == b for a, b in zip(old, m.replicas, strict=True)].count(False) == 1
    after = apply(snap, plan)
    assert after.hosted_by(victim) == 0
    assert validate(plan, snap) == ([] if plan.moves else [Problem(None, None, EMPTY)])
    if racks:  # spread no less than before, as far as the racks left allow
        left = len({racks[b] for b in target if b != victim})
        for m in plan.moves:
            assert spread(m, racks) >= min(left, len({racks[b] for b in before[m.key]}))


def test_drain_example_keeps_positions_and_spreads() -> None:
    snap = healthy()
    snap = dataclasses.replace(snap, brokers=(*snap.brokers, Broker(4, "127.0.0.1", 19095)))
    plan = placement.drain(snap, 2)
    assert len(plan) == len(snap.partitions)  # every partition has a replica on 2
    assert plan.move("test-topic", 0) == Move("test-topic", 0, (4, 3, 1))
    assert all(
        m.replicas == tuple(4 if b == 2 else b for b in before.replicas)
        for m, before in zip(
            plan.moves, sorted(snap.partitions, key=lambda p: (p.topic, p.partition)), strict=True
        )
    )


def test_drain_errors() -> None:
    snap = healthy()
    with pytest.raises(PlanError, match=r"broker 9 does not exist \(brokers: 1, 2, 3\)"):
        drain(snap, 9)
    with pytest.raises(PlanError) as err:
        drain(snap, 2)
    assert str(err.value) == (
        "cannot drain broker 2: __consumer_offsets/0 has replication factor 3 and no other "
        "broker can take its replica (available: 1, 3)"
    )
    snap4 = dataclasses.replace(
        snap, brokers=(*snap.brokers, Broker(4, "h", 1, state=BrokerState.DOWN))
    )
    with pytest.raises(PlanError, match="available: 1, 3"):
        drain(snap4, 2)  # a down broker is no candidate by default
    assert len(drain(snap4, 2, brokers=[4])) == len(snap.partitions)


def test_the_throttles_of_a_reassignment_are_every_brokers_and_its_topics_only() -> None:
    """What verify removes: the rates on every broker, the replica lists of the plan's topics;
    a throttle on another topic (someone else's reassignment) is left alone."""
    throttled = {
        "topic:other": {"leader.replication.throttled.replicas": "0:1"},
        "broker:3": {"leader.replication.throttled.rate": "1000"},
        "topic:test-topic": {"follower.replication.throttled.replicas": "0:2"},
        "broker:1": {"follower.replication.throttled.rate": "1000"},
        "topic:test-topic-2": {"leader.replication.throttled.replicas": "1:3"},
    }
    assert throttles_of(throttled, ["test-topic"]) == ["broker:1", "broker:3", "topic:test-topic"]
    assert throttles_of(throttled, []) == ["broker:1", "broker:3"]
    assert throttles_of({}, ["test-topic"]) == []


def _client_whose_brokers_apply_late(applied_after: int, rate: int) -> tuple[Any, list[str]]:
    """A ReassignClient whose broker 3 shows the throttle only from the `applied_after`-th
    read on (as a broker does when ZooKeeper notifies it late); records what was sent."""
    from kconsole.cluster.reassign.client import THROTTLE_RATE_KEYS, ReassignClient
    from kconsole.config import Settings

    client = ReassignClient(Settings(bootstrap="127.0.0.1:1", zookeeper=""), timeout_s=0.5)
    calls: list[str] = []
    reads = {"n": 0}
    rates = dict.fromkeys(THROTTLE_RATE_KEYS, str(rate))

    def throttles() -> dict[str, dict[str, str]]:
        reads["n"] += 1
        out = {"broker:1": dict(rates), "broker:2": dict(rates)}
        if reads["n"] >= applied_after:
            out["broker:3"] = dict(rates)
        return out

    client.throttles = throttles  # type: ignore[method-assign]
    client.ongoing = lambda: []  # type: ignore[method-assign]
    client._set_throttles = lambda plan, r: calls.append("set")  # type: ignore[method-assign,assignment]

    def alter(targets: Mapping[Any, Any]) -> dict[tuple[str, int], str | None]:
        calls.append("alter")
        return dict.fromkeys(((tp.topic, tp.partition) for tp in targets), None)

    client._alter = alter  # type: ignore[method-assign,assignment]
    return client, calls


def test_execute_starts_the_move_only_once_every_broker_shows_the_throttle() -> None:
    client, calls = _client_whose_brokers_apply_late(applied_after=3, rate=1000)
    out = client.execute([("t", 0, (1, 3))], {("t", 0): (1, 2)}, throttle_bps=1000)
    assert out == {("t", 0): None}
    assert calls == ["set", "alter"]


def test_execute_starts_nothing_when_a_broker_never_applies_the_throttle() -> None:
    from kconsole.cluster.reassign.client import ReassignError

    client, calls = _client_whose_brokers_apply_late(applied_after=10**9, rate=1000)
    with pytest.raises(ReassignError, match=r"broker\(s\) 3 had not applied it"):
        client.execute([("t", 0, (1, 3))], {("t", 0): (1, 2)}, throttle_bps=1000)
    assert calls == ["set"]
