"""Derived flags and the `describe` text, on snapshots recorded from a real cluster."""

from __future__ import annotations

import dataclasses
import json

import pytest

from kconsole.cluster.values import BrokerAction
from kconsole.describe import render_text
from kconsole.impact import blast_radius
from kconsole.models import BrokerState, ClusterSnapshot, Partition, SourceName
from tests.unit.snapshots import FIXED_NOW, load


def test_round_trip_of_every_fixture() -> None:
    for name in (
        "healthy",
        "broker_down",
        "offline_partition",
        "no_controller",
        "zk_unreachable",
        "group_lag",
    ):
        snap = load(name)
        assert ClusterSnapshot.from_dict(json.loads(snap.to_json())) == snap


def test_healthy_has_no_flags() -> None:
    snap = load("healthy")
    assert [b.state for b in snap.brokers] == [BrokerState.UP] * 3
    assert not [p for p in snap.partitions if snap.flags(p)]
    assert snap.min_isr("test-topic") == 2
    assert sum(snap.led_by(b.id) for b in snap.brokers) == len(snap.partitions)


def test_broker_down_flags() -> None:
    snap = load("broker_down")
    down = [b for b in snap.brokers if b.state is BrokerState.DOWN]
    assert len(down) == 1
    victim = down[0].id
    assert snap.controller.id != victim
    urp = [p for p in snap.partitions if "under-replicated" in snap.flags(p)]
    assert urp and all(victim not in p.isr for p in urp)
    assert snap.under_replicated_on(victim) == len(urp)
    assert snap.led_by(victim) == 0


def test_offline_partition_is_flagged() -> None:
    snap = load("offline_partition")
    offline = [p for p in snap.partitions if "offline" in snap.flags(p)]
    assert [p.topic for p in offline] == ["audit-log"]
    assert offline[0].leader == -1


def test_leader_on_a_down_broker_counts_as_offline() -> None:
    """With every broker stopped, ZooKeeper still names the last leader; that is offline."""
    snap = load("no_controller")
    assert snap.controller.id is None
    assert all(b.state is BrokerState.DOWN for b in snap.brokers)
    assert all(snap.is_offline(p) for p in snap.partitions)
    assert all(snap.led_by(b.id) == 0 for b in snap.brokers)


def test_a_partitions_key_is_made_once_and_is_no_field() -> None:
    """The key is kept beside the fields after its first reading: it takes no part in
    equality, in what a snapshot saves, or in a partition made from it."""
    p = Partition("orders", 3, 1, (1, 2), (1, 2))
    assert p.key == "orders/3" and p.key is p.key
    assert p == Partition("orders", 3, 1, (1, 2), (1, 2))
    assert "_key" not in dataclasses.asdict(p)
    assert dataclasses.replace(p, partition=4).key == "orders/4"


def test_group_lag_is_end_minus_committed() -> None:
    snap = load("group_lag")
    g = next(g for g in snap.groups if g.group_id == "billing")
    with_commit = [p for p in g.partitions if p.committed is not None]
    assert with_commit
    assert g.lag == sum(p.log_end - p.committed for p in with_commit)  # type: ignore[operator]
    assert g.lag > 0


def test_describe_text() -> None:
    text = render_text(load("broker_down"), now=FIXED_NOW)
    assert "controller: broker" in text
    assert "under-replicated" in text
    assert "down" in text
    stale = render_text(load("zk_unreachable"), now=FIXED_NOW)
    assert "zookeeper  STALE" in stale
    zk = load("zk_unreachable").source(SourceName.ZOOKEEPER)
    assert zk is not None and not zk.ok
    none = render_text(load("no_controller"), now=FIXED_NOW)
    assert "NONE (no active controller)" in none


@pytest.mark.parametrize("seed", range(20))
def test_broker_counts_derived_from_the_last_snapshot_equal_a_full_count(seed: int) -> None:
    """count_from() counts again only the partitions that are new objects; through leaders
    moving, ISRs shrinking, reassignments, brokers going down and coming back, and topics
    coming and going, its counts are what a pass over every partition gives."""
    import dataclasses
    import random

    from kconsole.models import Broker, BrokerState, ClusterSnapshot, Partition

    rng = random.Random(seed)

    def brokers(down: set[int]) -> tuple[Broker, ...]:
        return tuple(
            Broker(i, "h", 9000 + i, state=BrokerState.DOWN if i in down else BrokerState.UP)
            for i in (1, 2, 3, 4)
        )

    parts = tuple(
        Partition(f"t{t}", p, (p % 3) + 1, (1, 2, 3), (1, 2, 3))
        for t in range(3)
        for p in range(40)
    )
    snap = ClusterSnapshot(taken_at=0.0, brokers=brokers(set()), partitions=parts)
    snap.led_by(1)  # the pane counts the first snapshot in full
    derived = 0
    for step in range(60):
        new = list(snap.partitions)
        for _ in range(rng.choice([0, 1, 3, 10, 50])):
            i = rng.randrange(len(new))
            replicas = tuple(rng.sample([1, 2, 3, 4], 3))
            isr = tuple(r for r in replicas if rng.random() < 0.7)
            new[i] = dataclasses.replace(
                new[i], replicas=replicas, isr=isr, leader=rng.choice([*replicas, -1])
            )
        if rng.random() < 0.05:
            new = [p for p in new if p.topic != "t2"] + [Partition("t9", 0, 1, (1, 2, 3), (1,))]
        down = {b for b in (1, 2, 3, 4) if rng.random() < 0.15}
        after = ClusterSnapshot(
            taken_at=float(step),
            brokers=brokers(down) if rng.random() < 0.3 else snap.brokers,
            partitions=tuple(new) if new != list(snap.partitions) else snap.partitions,
        )
        after.count_from(snap)
        derived += "_broker_counts" in after.__dict__
        fresh = ClusterSnapshot(taken_at=0.0, brokers=after.brokers, partitions=after.partitions)
        for b in (1, 2, 3, 4, 7):
            got = (after.led_by(b), after.hosted_by(b), after.under_replicated_on(b))
            assert got == (fresh.led_by(b), fresh.hosted_by(b), fresh.under_replicated_on(b))
        snap = after
    assert derived > 20  # most steps were derived, not counted in full


class TestUnderReplicatedAsKafkaCountsIt:
    """Kafka's TopicCommand --under-replicated-partitions: ISR smaller than the replicas less
    those a reassignment is still adding. kconsole's flags, counts and blast radius agree."""

    def moving(self, isr: tuple[int, ...]) -> Partition:
        # test-topic/0 moving from 1,2,3 to 1,2,4: ZooKeeper lists every replica during it
        return Partition("test-topic", 0, 1, (1, 2, 4, 3), isr, adding=(4,), removing=(3,))

    def test_a_replica_still_being_copied_is_not_missing(self) -> None:
        p = self.moving((1, 2, 3))
        assert p.replication_factor == 3 and not p.under_replicated
        assert self.moving((1, 2, 3, 4)).under_replicated is False  # copied, not yet removed
        assert self.moving((1, 2)).under_replicated  # one of the three it keeps is out

    def test_counts_and_flags_follow(self) -> None:
        snap = dataclasses.replace(load("healthy"), partitions=(self.moving((1, 2, 3)),))
        assert "under-replicated" not in snap.flags(snap.partitions[0])
        assert "reassigning" in snap.flags(snap.partitions[0])
        assert [snap.under_replicated_on(b) for b in (1, 2, 3, 4)] == [0, 0, 0, 0]

    def test_blast_radius_counts_only_new_under_replication(self) -> None:
        snap = dataclasses.replace(load("healthy"), partitions=(self.moving((1, 2, 3)),))
        assert blast_radius(snap, BrokerAction.STOP, 2).under_replicated == ("test-topic/0",)
        already = dataclasses.replace(snap, partitions=(self.moving((1, 2)),))
        assert blast_radius(already, BrokerAction.STOP, 2).under_replicated == ()
