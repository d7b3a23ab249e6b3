"""KRaft controllers' truth, on answers recorded from a real cluster (tests/fixtures/
kraft_observer): the first quorum reading is a baseline (never a change, never fed by the
metadata's random "controller"), a controller's health from its process and from its fetches
(controller.quorum.fetch.timeout.ms), and how long a leader has led as kconsole saw it."""

from __future__ import annotations

import dataclasses
import socket

from kconsole.cluster.kraft.quorum import quorum_of
from kconsole.cluster.values import ProcState
from kconsole.config import Settings
from kconsole.describe import render_text
from kconsole.errors import ClusterError
from kconsole.models import (
    BrokerConfig,
    BrokerState,
    ClusterMode,
    ClusterSnapshot,
    Quorum,
    SourceName,
)
from kconsole.observer import ClusterObserver, SnapshotBuilder
from kconsole.observer.controllers import controller_status, controller_statuses
from kconsole.timeline import EventKind, diff
from tests.unit.test_kraft_observer import HEALTHY, VOTER, _now, admin_state, kraft_builder

Q_HEALTHY = HEALTHY["describe_metadata_quorum"]
Q_VOTER = VOTER["describe_metadata_quorum"]
PAUSED_VOTER = int(VOTER["paused"])  # 1001: its last fetch 7.7 s before the leader's answer


class TestFirstReadingIsABaseline:
    def _metadata_first(self) -> tuple[SnapshotBuilder, ClusterSnapshot]:
        """The metadata answered before the quorum (mode not known yet): its controller is a
        random broker (2), as librdkafka reports it on KRaft."""
        b = SnapshotBuilder(use_zookeeper=True)
        b.admin = admin_state(controller=2)
        b.health[SourceName.ADMIN].success(10.0)
        b.health[SourceName.ZOOKEEPER].failure("connection refused")
        return b, b.build(10.0)

    def test_no_event_when_the_quorum_is_first_read(self) -> None:
        b, before = self._metadata_first()
        assert before.mode is ClusterMode.UNKNOWN and before.controller.id == 2
        b.set_mode(ClusterMode.KRAFT)
        b.quorum_read(quorum_of(Q_HEALTHY, 11.0), 11.0)
        first = b.build(11.0)
        assert first.controller.id == 1003
        assert diff(before, first) == []  # was: "quorum leader is ... (was controller 2)"
        assert first.controller.previous is None and first.quorum is not None
        assert first.quorum.previous_leader is None

    def test_metadata_controller_changing_before_the_mode_is_known_is_no_event(self) -> None:
        b, before = self._metadata_first()
        b.admin = admin_state(controller=3)  # another random broker on the next poll
        assert diff(before, b.build(11.0)) == []

    def test_kraft_snapshot_without_a_quorum_then_the_first_reading(self) -> None:
        b = SnapshotBuilder(use_zookeeper=False)
        b.set_mode(ClusterMode.KRAFT)
        b.admin = admin_state(controller=2)
        b.health[SourceName.ADMIN].success(10.0)
        before = b.build(10.0)
        b.quorum_read(quorum_of(Q_HEALTHY, 11.0), 11.0)
        assert diff(before, b.build(11.0)) == []

    def test_a_change_after_the_baseline_names_the_quorum_leader_before(self) -> None:
        b, _before = self._metadata_first()
        b.set_mode(ClusterMode.KRAFT)
        q = quorum_of(Q_HEALTHY, 11.0)
        b.quorum_read(q, 11.0)
        first = b.build(11.0)
        b.quorum_read(dataclasses.replace(q, leader_id=1002, leader_epoch=2), 12.0)
        changed = [e for e in diff(first, b.build(12.0)) if e.kind is EventKind.CONTROLLER_CHANGED]
        assert [e.text for e in changed] == [
            "quorum leader is controller 1002, epoch 2 (was controller 1003)"
        ]

    def test_a_first_reading_without_leader_is_no_loss(self) -> None:
        b, before = self._metadata_first()
        b.set_mode(ClusterMode.KRAFT)
        b.quorum_leaderless("no controller leads", 11.0)
        assert diff(before, b.build(11.0)) == []


class TestLeaderSeenSince:
    def test_first_reading_is_not_the_election(self) -> None:
        b = kraft_builder(now=10.0)
        snap = b.build(30.0)
        q = snap.quorum
        assert q is not None and q.leader_seen_since == 10.0 and not q.leader_seen_elected
        assert snap.controller.since is None  # Kafka does not say when it was elected
        assert '"leader_seen_elected": false' in snap.to_json()

    def test_a_change_seen_is_the_election_within_a_poll(self) -> None:
        b = kraft_builder(now=10.0)
        q = quorum_of(Q_HEALTHY, 12.0)
        b.quorum_read(dataclasses.replace(q, leader_id=1002, leader_epoch=2), 12.0)
        b.quorum_read(dataclasses.replace(q, leader_id=1002, leader_epoch=2), 12.4)
        snap = b.build(13.0)
        assert snap.quorum is not None and snap.quorum.leader_seen_since == 12.0
        assert snap.quorum.leader_seen_elected and snap.controller.since == 12.0


def _quorum(answer: dict[str, object], seen_since: float) -> object:
    return dataclasses.replace(quorum_of(answer, seen_since), leader_seen_since=seen_since)


class TestStaleness:
    """controller.quorum.fetch.timeout.ms decides when a voter the leader hears nothing from
    is unreachable; the backend's process state comes first."""

    def test_fetch_older_than_the_timeout_is_unreachable(self) -> None:
        now = _now(Q_VOTER)
        q = quorum_of(Q_VOTER, now)
        age = q.fetch_age(q.replica(PAUSED_VOTER))  # type: ignore[arg-type]
        assert age is not None and 7.0 < age < 8.5
        c = controller_status(q, PAUSED_VOTER, None, 2.0, now)
        assert c.state is BrokerState.UNREACHABLE
        assert "no fetch reached leader 1003 for 7.7 s" in c.reason
        assert "controller.quorum.fetch.timeout.ms 2000" in c.reason
        # the others fetch: up; the leader answered: up
        states = {s.id: s.state for s in controller_statuses(q, q.voter_ids, {}, 2.0, now)}
        assert states == {1001: BrokerState.UNREACHABLE, 1002: BrokerState.UP, 1003: BrokerState.UP}

    def test_the_clusters_own_timeout_is_used(self) -> None:
        now = _now(Q_VOTER)
        q = quorum_of(Q_VOTER, now)
        assert controller_status(q, PAUSED_VOTER, None, 10.0, now).state is BrokerState.UP
        assumed = controller_status(q, PAUSED_VOTER, None, None, now)
        assert "2000 assumed" in assumed.reason

    def test_process_state_comes_first(self) -> None:
        now = _now(Q_HEALTHY)
        q = quorum_of(Q_HEALTHY, now)  # every voter fetching
        down = controller_status(q, 1001, ProcState.STOPPED, 2.0, now)
        assert (down.state, down.reason) == (BrokerState.DOWN, "process not running")
        paused = controller_status(q, 1001, ProcState.PAUSED, 2.0, now)
        assert paused.state is BrokerState.PAUSED
        assert controller_status(q, 1001, ProcState.RUNNING, 2.0, now).state is BrokerState.UP

    def test_no_fetch_since_the_election_waits_one_timeout(self) -> None:
        """A voter with no fetch reported (log end -1): right after an election nobody has
        fetched yet; once kconsole has watched the leader longer than the timeout, it is
        unreachable."""
        now = _now(Q_HEALTHY)
        answer = dataclasses.replace(quorum_of(Q_HEALTHY, now), leader_seen_since=now)
        voters = tuple(
            dataclasses.replace(v, log_end_offset=None, last_fetch_at=None, last_caught_up_at=None)
            if v.id == 1001
            else v
            for v in answer.voters
        )
        q = dataclasses.replace(answer, voters=voters)
        soon = controller_status(q, 1001, None, 2.0, now + 1.0)
        assert soon.state is None and "no fetch reported" in soon.reason
        later = controller_status(q, 1001, None, 2.0, now + 2.5)
        assert later.state is BrokerState.UNREACHABLE and "since its election" in later.reason

    def test_an_unread_quorum_is_unknown_not_down(self) -> None:
        now = _now(Q_VOTER)
        q = dataclasses.replace(quorum_of(Q_VOTER, now), error="timed out")
        c = controller_status(q, PAUSED_VOTER, None, 2.0, now + 30)
        assert c.state is None and c.reason == "quorum not read: timed out"


class TestControllerEvents:
    def test_down_then_up_are_events_the_first_reading_is_not(self) -> None:
        now = _now(Q_VOTER)
        b = kraft_builder(HEALTHY, now - 30)
        b.controller_proc_states = {1001: ProcState.STOPPED, 1002: ProcState.RUNNING}
        s0 = b.build(now - 30)
        assert s0.controller_status(1001).state is BrokerState.DOWN  # type: ignore[union-attr]
        b.controller_proc_states = {1001: ProcState.RUNNING, 1002: ProcState.RUNNING}
        s1 = b.build(now - 29)
        up = [e for e in diff(s0, s1) if e.kind is EventKind.CONTROLLER_UP]
        assert [e.text for e in up] == ["controller 1001 is up again (was down)"]
        b.quorum_read(quorum_of(Q_VOTER, now), now)
        s2 = b.build(now)
        down = [e for e in diff(s1, s2) if e.kind is EventKind.CONTROLLER_DOWN]
        assert [e.broker for e in down] == [PAUSED_VOTER] and down[0].severity == "bad"
        assert down[0].text.startswith("controller 1001 is unreachable: no fetch reached")
        # The down controller at the first reading was no event: nothing was seen changing.
        first = SnapshotBuilder(use_zookeeper=False).build(now - 31)
        assert not [e for e in diff(first, s0) if e.kind is EventKind.CONTROLLER_DOWN]

    def test_a_change_across_readings_that_could_not_say_is_an_event(self) -> None:
        """Up, then unknown (a failed read; after an election, no fetch reported yet), then
        unreachable: the change is said when it is known, against the last state known."""
        now = _now(Q_VOTER)
        b = kraft_builder(HEALTHY, now - 30)
        s0 = b.build(now - 30)
        b.quorum_failed("timed out")
        s1 = b.build(now - 1)
        gap = s1.controller_status(PAUSED_VOTER)
        assert gap is not None and gap.state is None and gap.last_known is BrokerState.UP
        assert not [e for e in diff(s0, s1) if e.kind is EventKind.CONTROLLER_DOWN]
        b.quorum_read(quorum_of(Q_VOTER, now), now)
        down = [e for e in diff(s1, b.build(now)) if e.kind is EventKind.CONTROLLER_DOWN]
        assert [(e.broker, e.old, e.new) for e in down] == [(PAUSED_VOTER, "up", "unreachable")]

    def test_the_brokers_settings_give_the_timeout(self) -> None:
        now = _now(Q_VOTER)
        b = kraft_builder(VOTER, now)
        b.broker_config = BrokerConfig.from_configs(
            {"process.roles": "broker", "controller.quorum.fetch.timeout.ms": "10000"}, 1
        )
        assert b.build(now).controller_status(PAUSED_VOTER).state is BrokerState.UP  # type: ignore[union-attr]

    def test_describe_says_which_controller_is_down_and_why(self) -> None:
        now = _now(Q_HEALTHY)
        b = kraft_builder(HEALTHY, now)
        b.controller_proc_states = {1001: ProcState.STOPPED}
        lines = render_text(b.build(now), now).splitlines()
        at = lines.index("controllers: 3, 1 down")
        assert lines[at + 1].split() == ["id", "state", "why"]
        assert lines[at + 2].split() == ["1001", "down", "process", "not", "running"]
        assert lines[at + 3].split() == ["1002", "up", "-"]
        assert lines[at + 4].split() == ["1003", "*", "up", "-"]


class _Reader:
    """QuorumReader's calls as read_once makes them, answering recorded quorums; the brokers
    do not answer."""

    def __init__(self, quorum: Quorum):
        self.quorum = quorum
        self.reads = 0

    def read_quorum(self, now: float) -> Quorum:
        self.reads += 1
        return dataclasses.replace(self.quorum, read_at=now)

    def read_registrations(self, avoid: object = ()) -> object:
        raise ClusterError("brokers not answering")

    def read_features(self, now: float, avoid: object = ()) -> object:
        raise ClusterError("brokers not answering")

    def close(self) -> None:
        pass


def _dead_bootstrap() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"  # closed again: nothing listens


class TestDescribeSettles:
    """One reading cannot tell an election a moment ago from a voter that is gone: describe
    reads the quorum once more after the fetch timeout, only when that is what is unknown."""

    def _observer(self, quorum: Quorum) -> tuple[ClusterObserver, _Reader]:
        obs = ClusterObserver(Settings(bootstrap=_dead_bootstrap(), zookeeper=""))
        reader = _Reader(quorum)
        obs._quorum_reader = lambda: reader  # type: ignore[method-assign,assignment,return-value]
        return obs, reader

    def test_a_voter_with_no_fetch_is_read_again_and_unreachable(self) -> None:
        q = quorum_of(Q_HEALTHY, 0.0)
        gone = tuple(
            dataclasses.replace(v, log_end_offset=None, last_fetch_at=None, last_caught_up_at=None)
            if v.id == 1001
            else v
            for v in q.voters
        )
        obs, reader = self._observer(dataclasses.replace(q, voters=gone))
        snap = obs.read_once()
        assert reader.reads == 2
        c = snap.controller_status(1001)
        assert c is not None and c.state is BrokerState.UNREACHABLE, c
        assert "since its election" in c.reason

    def test_every_controller_known_is_read_once(self) -> None:
        obs, reader = self._observer(quorum_of(Q_HEALTHY, 0.0))
        snap = obs.read_once()
        assert reader.reads == 1
        assert {c.id: c.state for c in snap.controllers} == dict.fromkeys(
            (1001, 1002, 1003), BrokerState.UP
        )
