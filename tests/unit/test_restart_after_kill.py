"""Starting a broker again after a SIGKILL: the killed process's ZooKeeper registration is not
the new one's (issue 24). Pure decisions of the local cluster and the docker backend."""

from __future__ import annotations

import copy

import pytest

from kconsole.cluster.docker.control import DockerBrokerControl, stale_session_left_s
from kconsole.cluster.local.cluster import BrokerStart, LocalClusterSpec
from kconsole.cluster.local.probes import Registration, fresh_registrations
from kconsole.cluster.local.spec import broker_session_timeout_ms, session_expiry_bound_s
from kconsole.cluster.values import BrokerAction
from tests.unit.test_docker_backend import (
    Engine,
    FakeDockerClient,
    compose_containers,
    state_of,
)

OLD, NEW = 0x100000A, 0x100000B


class TestFreshRegistrations:
    """Which registrations belong to a process started now."""

    def test_the_killed_process_registration_does_not_count(self) -> None:
        regs = {2: Registration(2, OLD, 1000)}
        assert fresh_registrations(regs, {2: OLD}) == set()

    def test_a_new_session_counts(self) -> None:
        regs = {1: Registration(1, 0x1, 10), 2: Registration(2, NEW, 2000)}
        assert fresh_registrations(regs, {2: OLD}) == {1, 2}

    def test_without_a_previous_registration_any_counts(self) -> None:
        assert fresh_registrations({3: Registration(3, NEW, 5)}, {}) == {3}


class TestSessionTimeout:
    """How long a dead broker's registration can outlive it, as ZooKeeper negotiates it."""

    def test_drill_default(self) -> None:
        spec = LocalClusterSpec()
        assert broker_session_timeout_ms(spec, 1) == 6000  # tickTime 2000: 4000..40000
        assert session_expiry_bound_s(spec, 1) == 8.0  # plus one tick

    def test_clamped_to_zookeeper_bounds(self) -> None:
        low = LocalClusterSpec(overrides={"zookeeper.session.timeout.ms": "1000"})
        assert broker_session_timeout_ms(low, 1) == 4000
        high = LocalClusterSpec(
            overrides={"zookeeper.session.timeout.ms": "90000"},
            zk_overrides={"maxSessionTimeout": "30000"},
        )
        assert broker_session_timeout_ms(high, 1) == 30000


class TestStartMessage:
    """The start's one line says what really happened."""

    def test_after_waiting_for_the_previous_session(self) -> None:
        msg = BrokerStart(2, 4242, 5.83, OLD, 4.12, NEW).message
        assert msg.startswith("waited 5.8 s for broker 2's previous ZooKeeper session (0x100000a")
        assert "broker 2 started (pid 4242) and registered in ZooKeeper after 4.1 s" in msg
        assert "session 0x100000b" in msg

    def test_without_waiting(self) -> None:
        msg = BrokerStart(1, 7, started_s=3.0, owner=NEW).message
        assert msg == (
            "broker 1 started (pid 7) and registered in ZooKeeper after 3.0 s (session 0x100000b)"
        )

    def test_not_waiting_for_registration_claims_none(self) -> None:
        msg = BrokerStart(1, 7, started_s=0.1).message
        assert "registered" not in msg.replace("not waiting for it to register", "")


# -- docker -----------------------------------------------------------------------------------

KILLED_AT = "2026-01-02T03:04:05.123456789Z"
KILLED_TS = 1767323045.123456


def killed(env: list[str] | None = None, code: int = 137) -> dict:
    return {
        "State": {**state_of("exited", code), "FinishedAt": KILLED_AT},
        "Config": {"Env": env if env is not None else ["KAFKA_ZOOKEEPER_SESSION_TIMEOUT_MS=6000"]},
    }


class TestDockerStaleSession:
    """docker start after docker kill waits for the killed broker's session."""

    def test_left_after_a_kill(self) -> None:
        assert stale_session_left_s(killed(), KILLED_TS + 1.0) == pytest.approx(7.0, abs=1e-3)
        assert stale_session_left_s(killed(), KILLED_TS + 9.0) == 0.0

    def test_clean_exit_and_unknown_finish_need_no_wait(self) -> None:
        assert stale_session_left_s(killed(code=143), KILLED_TS) == 0.0
        attrs = killed()
        attrs["State"]["FinishedAt"] = "0001-01-01T00:00:00Z"
        assert stale_session_left_s(attrs, KILLED_TS) == 0.0

    def test_kafka_default_timeout_without_the_env(self) -> None:
        assert stale_session_left_s(killed(env=[]), KILLED_TS) == pytest.approx(20.0, abs=1e-3)

    def test_start_waits_then_says_so(self) -> None:
        attrs = compose_containers()
        for a in attrs:
            if a["Name"] == "/kconsole-kafka-2-1":
                a["State"] = copy.deepcopy(killed()["State"])
                a["Config"]["Env"] = ["KAFKA_ZOOKEEPER_SESSION_TIMEOUT_MS=6000"]
        engine = Engine(attrs)
        now = [KILLED_TS + 0.5]
        said: list[str] = []
        slept: list[float] = []

        def sleep(s: float) -> None:
            slept.append(s)
            now[0] += s

        control = DockerBrokerControl(
            FakeDockerClient(engine), progress=said.append, clock=lambda: now[0], sleep=sleep
        )
        message = control.act(BrokerAction.START, 2)
        starts = [c for c in engine.calls if c[0] == "start"]
        assert starts == [("start", "kconsole-kafka-2-1", {})]
        assert now[0] >= KILLED_TS + 8.0  # started only once the session had surely expired
        assert sum(slept) == pytest.approx(7.5, abs=1e-3)
        assert said and "waiting 7.5 s" in said[0]
        assert message.startswith("waited 7.5 s for the killed broker's ZooKeeper session")
        assert "registration was not checked" in message  # no ZooKeeper given
