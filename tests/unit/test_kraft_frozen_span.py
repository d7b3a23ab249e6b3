"""The metadata freeze of a stopped quorum majority, on what a real drill saw (issue 35).

tests/fixtures/kraft/majority_stopped_*.json were recorded by
tests/fixtures/record_majority_stop.py from `drill run --fault stop --target quorum-majority
--restore-after 8` on a local Kafka 4.4.0 KRaft cluster: the drill's timeline events and every
DescribeQuorum kconsole's quorum reader got. A stopped leader resigns at once; the voters left
may elect one of themselves while the second target is still stopping, or while the restored
controllers start: a leader answers with its high watermark unknown (-1), commits nothing and
resigns. The freeze lasts from the fault until a leader that commits answers after the restore,
and its three figures add up: fault -> frozen + frozen for = fault -> restore + restore ->
leader again.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kconsole.cluster.kraft.quorum import quorum_of
from kconsole.drills import kraft
from kconsole.models import BrokerConfig, ClusterSnapshot
from kconsole.observer.builder import SnapshotBuilder
from kconsole.timeline import Event, EventKind
from tests.ui import kraft_fakes as K

CFG = BrokerConfig.from_configs(
    {
        "process.roles": "broker",
        "controller.quorum.election.timeout.ms": "1000",
        "controller.quorum.fetch.timeout.ms": "2000",
    },
    1,
)
FAULT_AT = K.FIXED_NOW  # the recordings' times are relative to the fault


def events_of(name: str) -> tuple[list[Event], Event, Event]:
    """The recorded drill's events, the fault and the restore."""
    data = K.recorded(name)
    events = [
        Event(
            FAULT_AT + e["at"],
            EventKind(e["kind"]),
            e["text"],
            e["broker"],
            e["topic"],
            e["partition"],
            # a freeze's `old` is when a leader that commits last answered (relative here)
            FAULT_AT + e["old"] if e["kind"] == "metadata-frozen" and e["old"] else e["old"],
            e["new"],
        )
        for e in data["events"]
    ]
    fault, restore = [e for e in events if e.kind is EventKind.ACTION]
    return events, fault, restore


def replayed(name: str) -> list[Event]:
    """The freeze events of the recorded quorum reads, as the drill makes them: each read
    through the observer's builder (an answer, every controller saying it does not lead, or a
    failed read) into a snapshot, and frozen_event between one snapshot and the next."""
    b = SnapshotBuilder(use_zookeeper=False)
    base = K.healthy()
    b.quorum_read(quorum_of(K.recorded("healthy")["describe_quorum"], FAULT_AT - 5), FAULT_AT - 5)
    snap: ClusterSnapshot = dataclasses.replace(base, taken_at=FAULT_AT - 5, quorum=b.quorum)
    out = []
    read: dict[str, Any]
    for read in K.recorded(name)["reads"]:
        at = FAULT_AT + read["at"]
        if "answer" in read:
            b.quorum_read(quorum_of(read["answer"], at), at)
        elif "leaderless" in read:
            b.quorum_leaderless(read["leaderless"], at)
        else:
            b.quorum_failed(read["failed"])
        new = dataclasses.replace(base, taken_at=at, quorum=b.quorum)
        if (e := kraft.frozen_event(snap, new)) is not None:
            out.append(e)
        snap = new
    return out


def figures(events: list[Event], fault: Event, restore: Event) -> dict[str, Any]:
    out, notes = kraft.measurements(
        K.healthy(), events, fault=fault, targets=(1003, 1001), restore=restore, cfg=CFG
    )
    got: dict[str, Any] = {m.name: m for m in out}
    got["notes"] = notes
    return got


FROZE = "fault -> metadata frozen (no quorum leader answers)"
BACK = "restore -> quorum leader again"
FOR = "metadata frozen for"


def test_a_leader_without_a_high_watermark_is_no_thaw() -> None:
    """The real reads after the restore: controller 1002 led epoch 10 with its high watermark
    unknown, then 1001 was elected in epoch 11; only 1001's answer with a high watermark (546)
    ends the freeze. The freeze begins at the first read after the fault, once."""
    got = replayed("majority_stopped_reelected")
    reads = K.recorded("majority_stopped_reelected")["reads"]
    unknown = [
        r
        for r in reads
        if "answer" in r and r["answer"]["topics"][0]["partitions"][0]["high_watermark"] < 0
    ]
    assert [quorum_of(r["answer"], 0).leader_epoch for r in unknown] == [10, 11]
    assert [e.kind for e in got] == [EventKind.METADATA_FROZEN, EventKind.METADATA_UNFROZEN]
    froze, thawed = got
    assert froze.ts - FAULT_AT == pytest.approx(0.26, abs=0.01)
    assert thawed.ts - FAULT_AT == pytest.approx(32.67, abs=0.01)
    assert thawed.text == "quorum leader is controller 1001, epoch 11: metadata moves again"


def test_a_lone_leader_after_the_fault_is_no_thaw() -> None:
    """The case of issue 35, read again with the fix: the stopped leader 1002 answered last at
    +0.10 s and resigned; 1003 was elected in epoch 20 with 1001's vote as 1001 stopped, and
    led with its high watermark unknown until it resigned at +4.2 s. Frozen from the fault
    until 1003 commits in epoch 22, after the restore; the leaders of epoch 20, and of epoch
    22 before its first commit, are no thaw."""
    got = replayed("majority_stopped_lone_leader")
    assert [e.kind for e in got] == [EventKind.METADATA_FROZEN, EventKind.METADATA_UNFROZEN]
    assert [e.ts - FAULT_AT for e in got] == pytest.approx([0.35, 32.69], abs=0.01)
    assert got[0].old == pytest.approx(FAULT_AT + 0.10)  # the last answer that committed
    assert got[1].text == "quorum leader is controller 1003, epoch 22: metadata moves again"
    events, fault, restore = events_of("majority_stopped_lone_leader")
    figures_ = figures(events, fault, restore)
    froze, back, span = (figures_[n].seconds for n in (FROZE, BACK, FOR))
    # the drill's own reader: a leader that commits last answered 0.22 s before the fault
    assert (froze, back, span) == pytest.approx((0.0, 25.08, 33.08), abs=0.01)
    assert froze + span == pytest.approx(restore.ts - fault.ts + back)
    assert span >= restore.ts - fault.ts  # the freeze covers fault -> restore
    assert figures_[FROZE].note.startswith(
        "no quorum leader that commits answered after +0.00 s; seen at +0.52 s: no quorum "
        "leader answers"
    )
    (named,) = [n for n in figures_["notes"] if n.startswith("quorum leader(s) named")]
    assert "controller 1003, epoch 20 (was controller 1002) at +1.46 s" in named
    assert "epoch 22 (was controller 1003) at +32.05 s" in named


def test_the_drill_with_the_fix_adds_up() -> None:
    """The events of a drill recorded with the high-watermark rule, before a freeze carried
    its leader's last answer (so counted from when it was seen): frozen from +0.62 s to
    +33.07 s, over the restore at +8.13 s; the leader of epoch 10 (+31.41 s) is said, not a
    thaw."""
    events, fault, restore = events_of("majority_stopped_reelected")
    got = figures(events, fault, restore)
    froze, back, span = got[FROZE].seconds, got[BACK].seconds, got[FOR].seconds
    assert froze == pytest.approx(0.62, abs=0.01)
    assert back == pytest.approx(24.94, abs=0.01)
    assert span == pytest.approx(32.45, abs=0.01)
    assert froze + span == pytest.approx(restore.ts - fault.ts + back)
    assert froze < restore.ts - fault.ts < froze + span  # the freeze covers fault -> restore
    assert got[FOR].note == "from +0.62 s to +33.07 s from the fault"
    (named,) = [n for n in got["notes"] if n.startswith("quorum leader(s) named")]
    assert "controller 1002, epoch 10 (was controller 1002) at +31.41 s" in named


def test_a_thaw_before_the_restore_does_not_end_the_freeze() -> None:
    """The events as the drill reported them before the fix (issue 35: frozen for 0.49 s,
    restore at +8 s, leader again 33 s later): a leader of epoch 5 that committed nothing was
    taken for a thaw at +1.25 s. The freeze measured is the one the restore ended, so the
    three figures add up, and the earlier one is said with what ended it."""
    events, fault, restore = events_of("majority_stopped_before_fix")
    got = figures(events, fault, restore)
    froze, back, span = got[FROZE].seconds, got[BACK].seconds, got[FOR].seconds
    assert back == pytest.approx(32.99, abs=0.01)
    assert froze == pytest.approx(4.14, abs=0.01)
    assert froze + span == pytest.approx(restore.ts - fault.ts + back)
    assert froze < restore.ts - fault.ts < froze + span
    assert (
        "also frozen from +0.75 s to +1.25 s, ended by: quorum leader is controller 1002, "
        "epoch 5: metadata moves again" in got[FROZE].note
    )


def test_frozen_spans_pair_each_freeze_with_its_thaw() -> None:
    events, _, _ = events_of("majority_stopped_before_fix")
    spans = kraft.frozen_spans(events)
    assert [(round(f.ts - FAULT_AT, 2), t and round(t.ts - FAULT_AT, 2)) for f, t in spans] == [
        (0.75, 1.25),
        (4.14, 40.99),
    ]
    assert kraft.frozen_spans(events[:-1])[-1][1] is None  # still frozen at the end


def test_a_leader_that_commits_nothing_freezes() -> None:
    """From a healthy quorum straight to a leader whose high watermark is unknown (no read
    without a leader between): frozen, the leader named with what it lacks."""
    healthy = K.healthy()
    assert healthy.quorum is not None
    lone = dataclasses.replace(
        healthy,
        taken_at=healthy.taken_at + 1,
        quorum=dataclasses.replace(
            healthy.quorum, leader_id=1002, leader_epoch=5, high_watermark=None
        ),
    )
    e = kraft.frozen_event(healthy, lone)
    assert e is not None and e.kind is EventKind.METADATA_FROZEN
    assert e.text == (
        "quorum leader controller 1002, epoch 5 has committed nothing (high watermark unknown: "
        "no majority fetches from it): metadata frozen"
    )
    back = dataclasses.replace(lone, taken_at=lone.taken_at + 1, quorum=healthy.quorum)
    e = kraft.frozen_event(lone, back)
    assert e is not None and e.kind is EventKind.METADATA_UNFROZEN


def test_the_freeze_is_dated_from_the_last_answer_not_the_late_read() -> None:
    """Replayed, each freeze carries when a leader that commits last answered; the measures
    count from it (no earlier than the fault), not from the read that saw it."""
    got = replayed("majority_stopped_lone_leader")
    assert got[0].old == pytest.approx(FAULT_AT + 0.10)  # leader 1002, hw 1024, after the fault
    # As the shared cluster's paused majority showed it (test_kraft_drills): the first read
    # after the fault waited out the paused controllers and returned at +6.40 s; a leader that
    # commits had last answered 0.3 s before the fault; resumed at +8.00 s, one led at +8.49 s.
    fault = Event(FAULT_AT, EventKind.ACTION, "pause", 1003, new="pause")
    restore = Event(FAULT_AT + 8.0, EventKind.ACTION, "resume", 1003, new="resume")
    events = [
        fault,
        Event(
            FAULT_AT + 6.40,
            EventKind.METADATA_FROZEN,
            "no quorum leader answers (x)",
            old=FAULT_AT - 0.3,
        ),
        restore,
        Event(FAULT_AT + 8.49, EventKind.METADATA_UNFROZEN, "quorum leader is controller 1002"),
    ]
    got_ = figures(events, fault, restore)
    assert got_[FROZE].seconds == 0.0
    assert got_[FROZE].note.startswith(
        "no quorum leader that commits answered after +0.00 s; seen at +6.40 s: no quorum"
    )
    assert got_[FOR].seconds == pytest.approx(8.49)
    assert got_[FOR].note == "from +0.00 s to +8.49 s from the fault"
    assert got_[BACK].seconds == pytest.approx(0.49)
    # A leader that still answered after the fault: from then on.
    late = dataclasses.replace(events[1], old=FAULT_AT + 0.2)
    assert figures([fault, late, *events[2:]], fault, restore)[FOR].seconds == pytest.approx(8.29)
