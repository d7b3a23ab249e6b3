"""Blast radius from a snapshot, and drill measurements replayed from events."""

from __future__ import annotations

import pytest

from kconsole.cluster.values import BrokerAction
from kconsole.drills.measure import Measurement, measure
from kconsole.impact import blast_radius
from kconsole.models import Broker, BrokerConfig, ClusterSnapshot, Controller, Partition, Topic
from kconsole.timeline import Event, EventKind
from tests.unit.snapshots import load


class TestBlastRadius:
    def test_controller_stop_on_healthy_cluster(self) -> None:
        snap = load("healthy")
        ctl = snap.controller.id
        assert ctl is not None
        imp = blast_radius(snap, BrokerAction.STOP, ctl)
        assert imp.is_controller
        led = {p.key for p in snap.partitions if p.leader == ctl and len(p.isr) > 1}
        assert set(imp.new_leader_needed) == led
        # audit-log has one replica per partition: the one on this broker goes offline
        assert set(imp.goes_offline) == {p.key for p in snap.partitions if p.replicas == (ctl,)}
        assert not imp.below_min_isr  # RF 3, min ISR 2: one broker down is still fine
        assert any("CONTROLLER" in line for line in imp.lines())

    def test_second_broker_down_drops_below_min_isr(self) -> None:
        snap = load("broker_down")
        up = [b.id for b in snap.brokers if b.state.value == "up"]
        imp = blast_radius(snap, BrokerAction.KILL, up[0])
        rf3 = [p for p in snap.partitions if p.topic == "test-topic"]
        assert {p.key for p in rf3} <= set(imp.below_min_isr) | set(imp.goes_offline)
        assert any("session" in line for line in imp.lines())  # kill: noticed on expiry

    def test_resume_takes_nothing_away(self) -> None:
        imp = blast_radius(load("healthy"), BrokerAction.RESUME, 1)
        assert not (imp.new_leader_needed or imp.goes_offline or imp.below_min_isr)
        assert "nothing is taken away" in imp.lines()[0]


def _before() -> ClusterSnapshot:
    return ClusterSnapshot(
        taken_at=100.0,
        brokers=(Broker(1, "h", 1), Broker(2, "h", 2), Broker(3, "h", 3)),
        controller=Controller(1, 3),
        partitions=(
            Partition("t", 0, 1, (1, 2, 3), (1, 2, 3)),
            Partition("t", 1, 2, (2, 3, 1), (2, 3, 1)),
        ),
        topics=(Topic("t", False, 2),),
    )


def _ev(ts: float, kind: EventKind, **kw: object) -> Event:
    return Event(ts, kind, kind.value, **kw)  # type: ignore[arg-type]


def test_measure_controller_kill_and_restore() -> None:
    fault = _ev(200.0, EventKind.ACTION, broker=1, new="kill")
    restore = _ev(220.0, EventKind.ACTION, broker=1, new="start")
    events = [
        fault,
        _ev(206.1, EventKind.BROKER_LEFT, broker=1),
        _ev(206.2, EventKind.CONTROLLER_CHANGED, broker=3, old=1, new=3),
        _ev(206.4, EventKind.LEADER_CHANGED, topic="t", partition=0, old=1, new=2),
        _ev(206.4, EventKind.ISR_SHRANK, topic="t", partition=0, old=[1, 2, 3], new=[2, 3]),
        _ev(206.5, EventKind.ISR_SHRANK, topic="t", partition=1, old=[2, 3, 1], new=[2, 3]),
        restore,
        _ev(224.0, EventKind.BROKER_JOINED, broker=1),
        _ev(225.0, EventKind.ISR_EXPANDED, topic="t", partition=1, old=[2, 3], new=[2, 3, 1]),
        _ev(226.0, EventKind.ISR_EXPANDED, topic="t", partition=0, old=[2, 3], new=[2, 3, 1]),
        _ev(250.0, EventKind.LEADER_CHANGED, topic="t", partition=0, old=2, new=1),
    ]
    m = {
        x.name: x
        for x in measure(
            _before(),
            events,
            fault=fault,
            target=1,
            restore=restore,
            config=BrokerConfig(6000, 10000, 30),
        )
    }
    assert round(m["fault -> broker gone from ZooKeeper"].seconds or 0, 3) == 6.1
    assert "6 s" in m["fault -> broker gone from ZooKeeper"].predicted
    assert round(m["fault -> new controller"].seconds or 0, 3) == 6.2
    assert round(m["fault -> every partition it led (1) has a leader again"].seconds or 0, 3) == 6.4
    assert round(m["fault -> out of every ISR it was in (2)"].seconds or 0, 3) == 6.5
    assert m["restore -> broker registered again"].seconds == 4.0
    assert m["restore -> ISR fully restored"].seconds == 6.0
    assert m["restore -> preferred leaders back"].seconds == 30.0


def test_measure_reports_what_did_not_happen() -> None:
    fault = _ev(200.0, EventKind.ACTION, broker=2, new="pause")
    m = {x.name: x for x in measure(_before(), [fault], fault=fault, target=2)}
    assert m["fault -> broker gone from ZooKeeper"].seconds is None
    assert "fault -> new controller" not in m  # broker 2 was not the controller
    led = m["fault -> every partition it led (1) has a leader again"]
    assert led.seconds is None and "without a new leader" in led.note


def test_pause_prediction_prefers_the_shorter_timeout() -> None:
    fault = _ev(200.0, EventKind.ACTION, broker=3, new="pause")
    short_lag = BrokerConfig(session_timeout_ms=20000, replica_lag_time_max_ms=10000)
    m = {x.name: x for x in measure(_before(), [fault], fault=fault, target=3, config=short_lag)}
    assert "replica.lag.time.max.ms" in m["fault -> out of every ISR it was in (2)"].predicted
    m = {x.name: x for x in measure(_before(), [fault], fault=fault, target=3)}
    assert "session expiry" in m["fault -> out of every ISR it was in (2)"].predicted


def test_broker_config_from_describe_configs() -> None:
    cfg = BrokerConfig.from_configs(
        {"zookeeper.session.timeout.ms": "6000", "replica.lag.time.max.ms": "bogus"}
    )
    assert cfg.session_timeout_ms == 6000 and cfg.replica_lag_time_max_ms == 30000


def _registered(fault_kind: str, restore_kind: str, *, left: bool) -> Measurement:
    fault = _ev(200.0, EventKind.ACTION, broker=2, new=fault_kind)
    restore = _ev(210.0, EventKind.ACTION, broker=2, new=restore_kind)
    events = [fault]
    if left:
        events.append(_ev(206.0, EventKind.BROKER_LEFT, broker=2, new="paused"))
    events.append(restore)
    if left:
        events.append(_ev(211.6, EventKind.BROKER_JOINED, broker=2, new="up"))
    m = {x.name: x for x in measure(_before(), events, fault=fault, target=2, restore=restore)}
    return m["restore -> broker registered again"]


def test_the_restore_prediction_fits_the_restore() -> None:
    """A resume starts no JVM (issue 26 predicted 'JVM start-up and log recovery' for it);
    a stop leaves no log to recover; a kill does."""
    resumed = _registered("pause", "resume", left=True)
    assert resumed.seconds == pytest.approx(1.6)
    assert "registers again (no JVM start, no log recovery)" in resumed.predicted
    assert "JVM start-up" not in resumed.predicted
    early = _registered("pause", "resume", left=False)
    assert early.seconds is None
    assert early.note == "it never left ZooKeeper (resumed before its session expired)"
    assert "log recovery after the kill" in _registered("kill", "start", left=True).predicted
    stopped = _registered("stop", "start", left=True).predicted
    assert stopped.startswith("JVM start-up (a clean shutdown leaves no log to recover)")


def _early_resume(target: int = 2, *, kraft: bool = False) -> dict[str, Measurement]:
    """A pause resumed before the session expired: nothing left, nothing moved (issue 28)."""
    fault = _ev(200.0, EventKind.ACTION, broker=target, new="pause")
    restore = _ev(202.0, EventKind.ACTION, broker=target, new="resume")
    cfg = BrokerConfig(6000, 10000, 30, election_timeout_ms=1000 if kraft else None)
    events = [fault, restore, _ev(202.1, EventKind.BROKER_STATE, broker=target, new="up")]
    out = measure(_before(), events, fault=fault, target=target, restore=restore, config=cfg)
    return {x.name: x for x in out}


def test_an_isr_that_never_shrank_is_said_not_zero() -> None:
    m = _early_resume()
    isr = m["restore -> ISR fully restored"]
    assert isr.seconds is None  # was 0.00 s
    assert isr.note == "ISR never shrank: the broker was back before it left the ISR"
    pref = m["restore -> preferred leaders back"]
    assert pref.seconds is None and "leaders never moved" in pref.note
    led = m["fault -> every partition it led (1) has a leader again"]
    assert led.seconds is None and "back before it lost their leadership" in led.note
    out = m["fault -> out of every ISR it was in (2)"]
    assert out.seconds is None and "never left any ISR: restored before it was removed" in out.note


def test_a_kraft_broker_never_fenced_is_said() -> None:
    m = _early_resume(kraft=True)
    unfenced = m["restore -> broker unfenced"]
    assert unfenced.seconds is None
    assert unfenced.note == "never fenced: it was back before the controller fenced it"
    assert m["restore -> ISR fully restored"].note.startswith("ISR never shrank")


def test_an_isr_that_shrank_and_came_back_is_still_measured() -> None:
    fault = _ev(200.0, EventKind.ACTION, broker=3, new="pause")
    restore = _ev(215.0, EventKind.ACTION, broker=3, new="resume")
    events = [
        fault,
        _ev(210.0, EventKind.ISR_SHRANK, topic="t", partition=0, old=[1, 2, 3], new=[1, 2]),
        restore,
        _ev(217.5, EventKind.ISR_EXPANDED, topic="t", partition=0, old=[1, 2], new=[1, 2, 3]),
    ]
    m = {x.name: x for x in measure(_before(), events, fault=fault, target=3, restore=restore)}
    isr = m["restore -> ISR fully restored"]
    assert isr.seconds == pytest.approx(2.5) and isr.note == ""
    # The leaders never moved off their preferred replicas: not a 0.00 s either.
    assert m["restore -> preferred leaders back"].seconds is None


def test_the_measurements_come_in_their_order() -> None:
    """ZooKeeper, the controller killed and restored: every family, in the order shown."""
    fault = _ev(200.0, EventKind.ACTION, broker=1, new="kill")
    restore = _ev(220.0, EventKind.ACTION, broker=1, new="start")
    out = measure(_before(), [fault, restore], fault=fault, target=1, restore=restore)
    assert [x.name for x in out] == [
        "fault -> broker gone from ZooKeeper",
        "fault -> new controller",
        "fault -> every partition it led (1) has a leader again",
        "fault -> out of every ISR it was in (2)",
        "restore -> broker registered again",
        "restore -> ISR fully restored",
        "restore -> preferred leaders back",
    ]
    # Nothing was seen after the fault: every duration is unknown, none is 0.
    assert all(x.seconds is None for x in out)
    kraft = BrokerConfig(9000, 30000, heartbeat_interval_ms=2000, election_timeout_ms=1000)
    out = measure(_before(), [fault, restore], fault=fault, target=1, restore=restore, config=kraft)
    assert [x.name for x in out] == [
        "fault -> broker fenced",
        "fault -> every partition it led (1) has a leader again",
        "fault -> out of every ISR it was in (2)",
        "restore -> broker unfenced",
        "restore -> ISR fully restored",
        "restore -> preferred leaders back",
    ]
    assert out[1].predicted == "~9 s + election (broker.session.timeout.ms = 9000 ms)"


def test_events_missing_leave_the_figures_unknown_with_why() -> None:
    """The broker left and was fenced but never came back into view: each figure whose event
    is missing is unknown, and its note says why."""
    fault = _ev(200.0, EventKind.ACTION, broker=3, new="kill")
    restore = _ev(220.0, EventKind.ACTION, broker=3, new="start")
    events = [
        fault,
        _ev(206.0, EventKind.BROKER_FENCED, broker=3),
        # only one of its two ISRs dropped it
        _ev(206.5, EventKind.ISR_SHRANK, topic="t", partition=0, old=[1, 2, 3], new=[1, 2]),
        restore,
    ]
    kraft = BrokerConfig(9000, 30000, heartbeat_interval_ms=2000, election_timeout_ms=1000)
    m = {
        x.name: x
        for x in measure(_before(), events, fault=fault, target=3, restore=restore, config=kraft)
    }
    assert m["fault -> broker fenced"].seconds == pytest.approx(6.0)
    assert m["fault -> broker fenced"].predicted == (
        "~9 s: no heartbeat for broker.session.timeout.ms = 9000 ms (heartbeats every 2000 ms)"
    )
    isr = m["fault -> out of every ISR it was in (2)"]
    assert isr.seconds is None and isr.note == "still in 1 ISR(s) while watched"
    unfenced = m["restore -> broker unfenced"]
    assert unfenced.seconds is None and unfenced.note == "no unfencing seen while watched"
    assert "JVM start-up, log recovery" in unfenced.predicted
    whole = m["restore -> ISR fully restored"]
    assert whole.seconds is None and whole.note == ""  # it shrank, and never came back
    assert m["restore -> preferred leaders back"].note.startswith("leaders never moved")


def test_a_clean_stop_predicts_controlled_shutdown() -> None:
    """A stop: leadership and ISRs move during controlled shutdown; a partition that was
    offline before the fault is not one the broker had to hand over."""
    before = _before()
    offline = Partition("t", 2, -1, (2, 1), (2,))
    before = ClusterSnapshot(
        before.taken_at, brokers=before.brokers, controller=before.controller,
        partitions=(*before.partitions, offline), topics=before.topics,
    )  # fmt: skip
    fault = _ev(200.0, EventKind.ACTION, broker=2, new="stop")
    events = [
        fault,
        _ev(200.3, EventKind.LEADER_CHANGED, topic="t", partition=1, old=2, new=3),
        _ev(200.4, EventKind.ISR_SHRANK, topic="t", partition=1, old=[2, 3, 1], new=[3, 1]),
        _ev(200.5, EventKind.ISR_SHRANK, topic="t", partition=0, old=[1, 2, 3], new=[1, 3]),
        _ev(201.2, EventKind.BROKER_LEFT, broker=2),
    ]
    cfg = BrokerConfig(6000, 10000, 30, auto_leader_rebalance=False)
    m = {x.name: x for x in measure(before, events, fault=fault, target=2, config=cfg)}
    gone = m["fault -> broker gone from ZooKeeper"]
    assert gone.seconds == pytest.approx(1.2) and gone.predicted.startswith("when it has shut")
    led = m["fault -> every partition it led (1) has a leader again"]
    assert led.seconds == pytest.approx(0.3) and led.note == ""
    assert led.predicted.startswith("< 1 s: controlled shutdown moves leadership")
    isr = m["fault -> out of every ISR it was in (2)"]
    assert isr.seconds == pytest.approx(0.5) and isr.note == ""
    assert isr.predicted == "< 1 s: removed from every ISR during controlled shutdown"
    assert not [n for n in m if n.startswith("restore")]  # no restore: nothing after it
    restore = _ev(210.0, EventKind.ACTION, broker=2, new="start")
    events += [restore, _ev(214.0, EventKind.BROKER_JOINED, broker=2)]
    m = {
        x.name: x
        for x in measure(before, events, fault=fault, target=2, restore=restore, config=cfg)
    }
    pref = m["restore -> preferred leaders back"]
    assert pref.seconds is None and pref.note == ""  # moved off, never back
    assert pref.predicted.startswith("never by itself: auto.leader.rebalance.enable is false")
