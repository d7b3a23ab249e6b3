"""diff(old, new): the events that explain how one snapshot became the next."""

from __future__ import annotations

from dataclasses import replace

from kconsole.models import Broker, BrokerState, ClusterSnapshot, Controller, Partition
from kconsole.timeline import EventKind, diff
from tests.unit.snapshots import load


def _snap(**kw: object) -> ClusterSnapshot:
    base = ClusterSnapshot(
        taken_at=10.0,
        brokers=(Broker(1, "h", 1), Broker(2, "h", 2), Broker(3, "h", 3)),
        controller=Controller(1, 5),
        partitions=(Partition("t", 0, 1, (1, 2, 3), (1, 2, 3)),),
    )
    return replace(base, **kw)  # type: ignore[arg-type]


def test_first_snapshot_has_no_events() -> None:
    assert diff(None, _snap()) == []


def test_identical_snapshots_have_no_events() -> None:
    assert diff(_snap(), _snap(taken_at=11.0)) == []


def test_broker_leaves_and_joins() -> None:
    down = _snap(
        brokers=(Broker(1, "h", 1), Broker(2, "h", 2, state=BrokerState.DOWN), Broker(3, "h", 3))
    )
    left = diff(_snap(), down)
    assert [(e.kind, e.broker) for e in left] == [(EventKind.BROKER_LEFT, 2)]
    back = diff(down, _snap())
    assert [(e.kind, e.broker) for e in back] == [(EventKind.BROKER_JOINED, 2)]


def test_controller_change_and_loss() -> None:
    moved = diff(_snap(), _snap(controller=Controller(3, 6)))
    assert moved[0].kind is EventKind.CONTROLLER_CHANGED
    assert (moved[0].old, moved[0].new) == (1, 3)
    assert "epoch 6" in moved[0].text
    lost = diff(_snap(), _snap(controller=Controller(None)))
    assert lost[0].kind is EventKind.CONTROLLER_LOST and lost[0].severity == "bad"


def test_leader_change_isr_shrink_and_expand() -> None:
    after = _snap(partitions=(Partition("t", 0, 2, (1, 2, 3), (2, 3)),))
    kinds = {e.kind: e for e in diff(_snap(), after)}
    assert kinds[EventKind.LEADER_CHANGED].text == "t/0 leader 1 -> 2"
    assert kinds[EventKind.ISR_SHRANK].old == [1, 2, 3]
    assert kinds[EventKind.ISR_SHRANK].new == [2, 3]
    back = {e.kind for e in diff(after, _snap())}
    assert EventKind.ISR_EXPANDED in back


def test_offline_and_online() -> None:
    off = _snap(partitions=(Partition("t", 0, -1, (1, 2, 3), (1,)),))
    assert EventKind.PARTITION_OFFLINE in {e.kind for e in diff(_snap(), off)}
    assert EventKind.PARTITION_ONLINE in {e.kind for e in diff(off, _snap())}


def test_recorded_controller_stop() -> None:
    """From the real recordings: stopping the controller shows as left + moved + leader changes."""
    healthy, down = load("healthy"), load("broker_down")
    events = diff(healthy, down)
    kinds = [e.kind for e in events]
    victim = healthy.controller.id
    assert (EventKind.BROKER_LEFT, victim) in [(e.kind, e.broker) for e in events]
    assert EventKind.CONTROLLER_CHANGED in kinds
    assert EventKind.ISR_SHRANK in kinds
    assert all(victim not in e.new for e in events if e.kind is EventKind.ISR_SHRANK)  # type: ignore[operator]


def test_paused_broker_leaves_when_its_session_expires() -> None:
    """Paused (process frozen) and registered are separate: 'left' comes at session expiry,
    while the broker still shows as paused (and says so); the resume is an event of its own
    (no longer paused, not registered yet); 'joined' when it re-registers."""
    b = (Broker(1, "h", 1), Broker(3, "h", 3))
    up = _snap(brokers=(*b, Broker(2, "h", 2)))
    paused = _snap(brokers=(*b, Broker(2, "h", 2, state=BrokerState.PAUSED)))
    expired = _snap(brokers=(*b, Broker(2, "h", 2, state=BrokerState.PAUSED, registered=False)))
    resumed = _snap(brokers=(*b, Broker(2, "h", 2, state=BrokerState.DOWN, registered=False)))
    kinds = lambda a, z: [(e.kind, e.broker) for e in diff(a, z)]  # noqa: E731
    assert kinds(up, paused) == [(EventKind.BROKER_STATE, 2)]
    assert kinds(paused, expired) == [(EventKind.BROKER_LEFT, 2)]
    assert [e.new for e in diff(paused, expired)] == ["paused"]
    (back,) = diff(expired, resumed)
    assert (back.kind, back.old, back.new) == (EventKind.BROKER_STATE, "paused", "down")
    assert back.text == "broker 2 is no longer paused (not registered yet)"
    assert kinds(resumed, up) == [(EventKind.BROKER_JOINED, 2)]
    # Resumed before the backend noticed: it re-registers while still shown paused, then is up.
    rejoined = _snap(brokers=(*b, Broker(2, "h", 2, state=BrokerState.PAUSED)))
    assert kinds(expired, rejoined) == [(EventKind.BROKER_JOINED, 2)]
    assert [e.text for e in diff(rejoined, up)] == ["broker 2 is up (was paused)"]


def test_reassignment_started_caught_up_completed() -> None:
    """1,2,3 -> 2,3,4 as Kafka shows it: the union of both sets, with adding / removing."""
    brokers = (*_snap().brokers, Broker(4, "h", 4))
    moving = _snap(
        brokers=brokers,
        partitions=(Partition("t", 0, 1, (2, 3, 4, 1), (1, 2, 3), adding=(4,), removing=(1,)),),
    )
    started = diff(_snap(brokers=brokers), moving)
    assert [(e.kind, e.text) for e in started] == [
        (EventKind.REASSIGN_STARTED, "t/0 reassignment started: [1,2,3] -> [2,3,4]")
    ]
    synced = replace(
        moving,
        partitions=(Partition("t", 0, 1, (2, 3, 4, 1), (1, 2, 3, 4), adding=(4,), removing=(1,)),),
    )
    kinds = [e.kind for e in diff(moving, synced)]
    assert kinds == [EventKind.ISR_EXPANDED, EventKind.REASSIGN_IN_SYNC]
    done = replace(moving, partitions=(Partition("t", 0, 2, (2, 3, 4), (2, 3, 4)),))
    completed = [e for e in diff(synced, done) if e.kind is EventKind.REASSIGN_COMPLETED]
    assert completed[0].text == "t/0 reassignment completed: [2,3,4]"
    assert completed[0].severity == "good"


def test_reassignment_cancelled() -> None:
    moving = _snap(
        partitions=(Partition("t", 0, 1, (2, 3, 4, 1), (1, 2, 3), adding=(4,), removing=(1,)),)
    )
    back = _snap(partitions=(Partition("t", 0, 1, (1, 2, 3), (1, 2, 3)),))
    (event,) = [e for e in diff(moving, back) if e.kind.value.startswith("reassign")]
    assert event.kind is EventKind.REASSIGN_CANCELLED
    assert event.text == "t/0 reassignment cancelled: back to [1,2,3]"


def test_the_last_replica_in_sync_and_completion_in_one_update() -> None:
    """Seen in one read: 4 joined the ISR and the controller completed the move. Both are
    said, in that order; the ISR change says it was one update."""
    moving = _snap(
        partitions=(Partition("t", 0, 1, (2, 3, 4, 1), (1, 2, 3), adding=(4,), removing=(1,)),)
    )
    done = _snap(partitions=(Partition("t", 0, 2, (2, 3, 4), (2, 3, 4)),))
    events = diff(moving, done)
    kinds = [e.kind for e in events if e.kind is not EventKind.LEADER_CHANGED]
    assert kinds == [
        EventKind.ISR_EXPANDED,
        EventKind.ISR_SHRANK,
        EventKind.REASSIGN_IN_SYNC,
        EventKind.REASSIGN_COMPLETED,
    ]
    assert all("(same update)" in e.text for e in events if e.kind.value.startswith("isr"))


def test_a_reorder_is_said_and_copies_nothing() -> None:
    """What kconsole's cancel does after Kafka's: the same replicas in the original order."""
    after_cancel = _snap(partitions=(Partition("t", 0, 2, (2, 3, 1), (1, 2, 3)),))
    reordered = _snap(partitions=(Partition("t", 0, 2, (1, 2, 3), (1, 2, 3)),))
    (event,) = diff(after_cancel, reordered)
    assert event.kind is EventKind.REPLICAS_REORDERED
    assert event.text == (
        "t/0 replicas reordered: [2,3,1] -> [1,2,3] (preferred leader 1, nothing copied)"
    )
