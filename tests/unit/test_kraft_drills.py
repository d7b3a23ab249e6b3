"""Drills on KRaft without a cluster: the targets on snapshots built from a real cluster's
recorded answers (tests/ui/kraft_fakes.py), the predictions from KRaft settings as
DescribeConfigs gives them, the metadata freeze, and the measurements over events."""

from __future__ import annotations

import dataclasses

import pytest

from kconsole.cluster.errors import ClusterError
from kconsole.cluster.kraft.quorum import quorum_of
from kconsole.drills import kraft
from kconsole.drills.spec import DrillError, resolve_targets
from kconsole.models import BrokerConfig
from kconsole.timeline import Event, EventKind
from tests.ui import kraft_fakes as K
from tests.unit.snapshots import load

# What DescribeConfigs of a broker of the test cluster says (the settings the drills read).
KRAFT_CONFIGS = {
    "process.roles": "broker",
    "broker.session.timeout.ms": "9000",
    "broker.heartbeat.interval.ms": "2000",
    "controller.quorum.election.timeout.ms": "1000",
    "controller.quorum.fetch.timeout.ms": "2000",
    "replica.lag.time.max.ms": "10000",
}
CFG = BrokerConfig.from_configs(KRAFT_CONFIGS, 1)


class TestTargets:
    def test_active_controller_is_the_quorum_leader(self) -> None:
        """Not the metadata's controller id (a random broker in KRaft): the quorum leader."""
        snap = K.healthy()
        assert snap.quorum is not None and snap.quorum.leader_id == 1003
        assert resolve_targets(snap, "active-controller") == (1003,)
        assert resolve_targets(snap, "controller") == (1003,)

    def test_a_voter_by_id(self) -> None:
        assert resolve_targets(K.healthy(), "controller:1001") == (1001,)

    def test_a_broker_is_not_a_voter(self) -> None:
        with pytest.raises(DrillError, match=r"controller 2 is not a voter .*1001, 1002, 1003"):
            resolve_targets(K.healthy(), "controller:2")

    @pytest.mark.parametrize("bad", ["controller:", "controller:x", "controller:-1"])
    def test_a_voter_id_must_be_a_number(self, bad: str) -> None:
        with pytest.raises(DrillError, match="controller:ID needs a number"):
            resolve_targets(K.healthy(), bad)

    def test_quorum_majority_is_the_leader_and_the_lowest_other_voter(self) -> None:
        assert resolve_targets(K.healthy(), "quorum-majority") == (1003, 1001)

    def test_brokers_and_leaders_as_before(self) -> None:
        snap = K.healthy()
        assert resolve_targets(snap, "broker:2") == (2,)
        p = snap.partitions[0]
        assert resolve_targets(snap, f"leader:{p.topic}/{p.partition}") == (p.leader,)

    def test_no_leader_refuses_controller_targets(self) -> None:
        """The majority already lost (recorded): no target is made up from the last leader."""
        snap = K.no_leader()
        for target in ("active-controller", "quorum-majority", "controller:1002"):
            with pytest.raises(DrillError, match="cannot be read"):
                resolve_targets(snap, target)

    def test_kraft_targets_on_zookeeper_mode_are_refused(self) -> None:
        snap = load("healthy")
        with pytest.raises(DrillError, match="needs a KRaft cluster"):
            resolve_targets(snap, "quorum-majority")
        # `controller` / `active-controller` there is ZooKeeper's controller.
        assert resolve_targets(snap, "active-controller") == (snap.controller.id,)

    def test_unknown_target_lists_every_kind(self) -> None:
        with pytest.raises(DrillError, match=r"quorum-majority.*leader:TOPIC/PARTITION"):
            resolve_targets(K.healthy(), "voter:1")


class TestSettingsAndPredictions:
    def test_kraft_settings_from_describe_configs(self) -> None:
        assert (
            CFG.kraft,
            CFG.session_timeout_ms,
            CFG.heartbeat_interval_ms,
            CFG.election_timeout_ms,
            CFG.fetch_timeout_ms,
        ) == (True, 9000, 2000, 1000, 2000)

    def test_zookeeper_mode_has_no_quorum_timers(self) -> None:
        cfg = BrokerConfig.from_configs({"zookeeper.session.timeout.ms": "6000"})
        assert not cfg.kraft and cfg.session_timeout_ms == 6000 and cfg.fetch_timeout_ms is None

    def test_killed_leader_predicts_an_election_from_the_timers(self) -> None:
        lines = kraft.prediction_lines(K.healthy(), "kill", (1003,), CFG)
        text = "\n".join(lines)
        assert "controller 1003 is the QUORUM LEADER" in text
        assert "within ~3 s (fetch timeout 2 s + election timeout 1 s)" in text
        assert "controller.quorum.fetch.timeout.ms = 2000" in text

    def test_a_follower_voter_changes_nothing_clients_see(self) -> None:
        text = "\n".join(kraft.prediction_lines(K.healthy(), "pause", (1001,), CFG))
        assert "not the quorum leader (controller 1003): no election" in text
        assert "2 of 3 voters stay" in text

    def test_majority_lost_says_metadata_frozen_and_brokers_serve(self) -> None:
        text = "\n".join(kraft.prediction_lines(K.healthy(), "kill", (1003, 1001), CFG))
        assert "quorum MAJORITY is lost" in text and "no ISR change" in text
        assert "acks=all keeps working where the ISR is whole" in text
        assert "1 of 3 voters stay" in text

    def test_paused_broker_is_fenced_after_the_session_timeout(self) -> None:
        line = kraft.broker_fencing_line("pause", 3, CFG)
        assert "fences broker 3 after broker.session.timeout.ms = 9000 ms" in line
        assert "every 2000 ms" in line and "leaders move" in line


class TestFrozen:
    def test_a_failed_quorum_read_is_no_leader_not_leader_0(self) -> None:
        """The recorded answer of a follower with the majority lost: NOT_LEADER_OR_FOLLOWER
        with leader 0, epoch 0. It is an error (the read is stale), never leader 0."""
        answer = K.recorded("no_leader")["describe_quorum_left"]
        part = answer["topics"][0]["partitions"][0]
        assert (part["leader_id"], part["leader_epoch"], part["error_code"]) == (0, 0, 6)
        with pytest.raises(ClusterError, match="NotLeader"):
            quorum_of(answer, 1.0)

    def test_frozen_then_moving_again(self) -> None:
        healthy = K.healthy()
        lost = dataclasses.replace(K.no_leader(), taken_at=healthy.taken_at + 5)
        e = kraft.frozen_event(healthy, lost)
        assert e is not None and e.kind is EventKind.METADATA_FROZEN
        assert e.text.startswith("no quorum leader answers (no controller leads (127.0.0.1:19193")
        assert "1003" not in e.text.split("(")[0]  # no leader named
        assert kraft.frozen_event(lost, lost) is None  # said once
        back = dataclasses.replace(healthy, taken_at=lost.taken_at + 9)
        e = kraft.frozen_event(lost, back)
        assert e is not None and e.kind is EventKind.METADATA_UNFROZEN
        assert e.text == "quorum leader is controller 1003, epoch 1: metadata moves again"

    def test_zookeeper_mode_never_freezes(self) -> None:
        assert kraft.frozen_event(load("healthy"), load("no_controller")) is None


def ev(ts: float, kind: EventKind, text: str = "", **kw: object) -> Event:
    return Event(ts, kind, text, **kw)  # type: ignore[arg-type]


class TestMeasurements:
    def test_new_quorum_leader_with_its_epoch(self) -> None:
        before = K.healthy()
        fault = ev(100.0, EventKind.ACTION, "kill controller 1003", broker=1003, new="kill")
        said = "quorum leader is controller 1001, epoch 2 (was controller 1003)"
        events = [
            fault,
            ev(101.95, EventKind.CONTROLLER_CHANGED, said, broker=1001, old=1003, new=1001),
        ]
        out, notes = kraft.measurements(
            before, events, fault=fault, targets=(1003,), restore=None, cfg=CFG
        )
        (m,) = out
        assert m.name == "fault -> new quorum leader"
        assert m.seconds == pytest.approx(1.95) and m.note == said
        assert m.predicted.startswith("~3 s") and not notes

    def test_majority_frozen_span_and_nothing_committed(self) -> None:
        before = K.healthy()
        fault = ev(100.0, EventKind.ACTION, "kill", broker=1003, new="kill")
        restore = ev(110.0, EventKind.ACTION, "start", broker=1003, new="start")
        events = [
            fault,
            ev(100.4, EventKind.METADATA_FROZEN, "no quorum leader answers (x): metadata frozen"),
            restore,
            ev(121.5, EventKind.METADATA_UNFROZEN, "quorum leader is controller 1001, epoch 3"),
        ]
        out, notes = kraft.measurements(
            before, events, fault=fault, targets=(1003, 1001), restore=restore, cfg=CFG
        )
        got = {m.name: m.seconds for m in out}
        assert got["fault -> metadata frozen (no quorum leader answers)"] == pytest.approx(0.4)
        assert got["restore -> quorum leader again"] == pytest.approx(11.5)
        assert got["metadata frozen for"] == pytest.approx(21.1)
        assert notes == [
            "while metadata was frozen kconsole saw 0 leader, ISR or fencing change(s)"
        ]

    def test_a_leader_named_in_the_snapshot_that_shows_the_freeze_committed_nothing(
        self,
    ) -> None:
        """A lone leader (high watermark unknown) first seen in the very poll that shows the
        freeze has the freeze's time: it is listed as named while frozen, and so is a leader
        change seen then (a fresh-clone run lost it to a strict `<`). One named before the
        freeze is not (it may have committed)."""
        before = K.healthy()
        fault = ev(100.0, EventKind.ACTION, "stop", broker=1003, new="stop")
        restore = ev(108.0, EventKind.ACTION, "start", broker=1003, new="start")
        lone = "quorum leader is controller 1002, epoch 4"
        events = [
            fault,
            ev(100.2, EventKind.CONTROLLER_CHANGED, "quorum leader is controller 1001, epoch 3"),
            ev(100.6, EventKind.CONTROLLER_CHANGED, lone),
            ev(100.6, EventKind.METADATA_FROZEN, "quorum leader controller 1002, epoch 4 has "
               "committed nothing (high watermark unknown: no majority fetches from it): "
               "metadata frozen"),
            ev(100.6, EventKind.LEADER_CHANGED, "test-topic/0 leader 1 -> 2"),
            restore,
            ev(115.0, EventKind.METADATA_UNFROZEN, "quorum leader is controller 1001, epoch 5"),
        ]  # fmt: skip
        _out, notes = kraft.measurements(
            before, events, fault=fault, targets=(1003, 1001), restore=restore, cfg=CFG
        )
        assert notes[0] == (
            "while metadata was frozen kconsole saw 1 leader, ISR or fencing change(s): "
            "test-topic/0 leader 1 -> 2"
        )
        assert notes[1].startswith("quorum leader(s) named while metadata was frozen")
        assert f"{lone} at +0.60 s" in notes[1] and "epoch 3" not in notes[1]

    def test_never_frozen_is_said_not_zero(self) -> None:
        fault = ev(100.0, EventKind.ACTION, "kill", broker=1003, new="kill")
        out, _ = kraft.measurements(
            K.healthy(), [fault], fault=fault, targets=(1003, 1001), restore=None, cfg=CFG
        )
        (m,) = out
        assert m.seconds is None and m.note == "a quorum leader answered all along"


class TestBrokerOnKRaft:
    def test_fenced_not_gone_from_zookeeper(self) -> None:
        """A paused broker on KRaft: fenced after the session timeout (9.5 s measured on the
        test cluster), unfenced after the resume; no ZooKeeper measurement."""
        from kconsole.drills.measure import measure

        before = K.healthy()
        fault = ev(100.0, EventKind.ACTION, "pause broker 3", broker=3, new="pause")
        restore = ev(112.0, EventKind.ACTION, "resume broker 3", broker=3, new="resume")
        events = [
            fault,
            ev(109.5, EventKind.BROKER_FENCED, "broker 3 fenced", broker=3),
            restore,
            ev(112.1, EventKind.BROKER_UNFENCED, "broker 3 unfenced", broker=3),
        ]
        out = measure(before, events, fault=fault, target=3, restore=restore, config=CFG)
        got = {m.name: m for m in out}
        assert got["fault -> broker fenced"].seconds == pytest.approx(9.5)
        assert "broker.session.timeout.ms = 9000 ms" in got["fault -> broker fenced"].predicted
        assert got["restore -> broker unfenced"].seconds == pytest.approx(0.1)
        assert not [n for n in got if "ZooKeeper" in n or "new controller" in n]


def test_unread_quorum_timers_are_said_assumed() -> None:
    """No DescribeConfigs answer: the prediction says the defaults are assumed, not read."""
    text = "\n".join(kraft.prediction_lines(K.healthy(), "kill", (1003,), BrokerConfig()))
    assert "quorum timers NOT read from the cluster: Kafka's defaults assumed" in text
