"""A restore that fails is retried, and one that still fails is reported (issue 28)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kconsole.cli import main as cli
from kconsole.cluster.values import BrokerAction, ProcState
from kconsole.config import Settings
from kconsole.drills import runner as runner_mod
from kconsole.drills.audit import check
from kconsole.drills.runner import RESTORE_ATTEMPTS, DrillRunner
from kconsole.drills.spec import DrillReport, DrillSpec
from kconsole.errors import ClusterError
from kconsole.timeline import Event, EventKind


class Control:
    """A backend whose starts fail `failures` times, then succeed."""

    def __init__(self, name: str = "docker", failures: int = 0) -> None:
        self.name = name
        self.failures = failures
        self.state = ProcState.STOPPED
        self.calls: list[tuple[BrokerAction, int]] = []

    def states(self) -> dict[int, ProcState]:
        return {1: ProcState.RUNNING, 2: self.state, 3: ProcState.RUNNING}

    def act(
        self, action: BrokerAction, broker_id: int, progress: object = None, links: object = None
    ) -> str:
        self.calls.append((action, broker_id))
        if self.failures:
            self.failures -= 1
            raise ClusterError(
                f"docker could not start broker {broker_id} (container kconsole-kafka-2-1): "
                "driver failed programming external connectivity (HTTP 500)"
            )
        self.state = ProcState.RUNNING
        return f"broker {broker_id} started and registered in ZooKeeper after 3.1 s"


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    monkeypatch.setattr(runner_mod.time, "sleep", slept.append)
    return slept


def runner(control: Control, said: list[str]) -> DrillRunner:
    spec = DrillSpec("kill", "broker:2", duration_s=30, restore_after_s=10)
    return DrillRunner(
        Settings(),
        control,  # type: ignore[arg-type]
        spec,
        act=control.act,
        confirm=lambda _p, _e: True,
        progress=said.append,
    )


def test_a_failed_start_is_retried_after_a_short_backoff(quick_backoff: list[float]) -> None:
    control, said = Control(failures=1), []
    event, not_restored = runner(control, said)._restore(BrokerAction.START, (2,))
    assert not_restored == []
    assert control.calls == [(BrokerAction.START, 2)] * 2
    assert quick_backoff == [runner_mod.RESTORE_BACKOFF_S]
    assert event.kind is EventKind.ACTION and event.new == "start"
    assert any("failed (attempt 1)" in line and "HTTP 500" in line for line in said)
    assert any("(attempt 2): broker 2 started and registered" in line for line in said)


def test_a_start_that_keeps_failing_says_which_node_why_and_what_to_run(
    quick_backoff: list[float],
) -> None:
    control, said = Control(failures=99), []
    _event, not_restored = runner(control, said)._restore(BrokerAction.START, (2,))
    assert len(control.calls) == RESTORE_ATTEMPTS  # bounded
    assert quick_backoff == [1.0, 2.0]  # doubling, between attempts only
    (line,) = not_restored
    assert line.startswith("broker 2 was NOT restored (start failed 3 times: attempt 1: ")
    assert "external connectivity (HTTP 500)" in line
    assert "it is stopped" in line
    assert line.endswith("Run `kconsole --backend docker cluster start 2`")


def test_no_new_attempt_after_the_deadline(
    monkeypatch: pytest.MonkeyPatch, quick_backoff: list[float]
) -> None:
    monkeypatch.setattr(runner_mod, "RESTORE_DEADLINE_S", 0.5)  # less than the first backoff
    control = Control(failures=99)
    _event, not_restored = runner(control, [])._restore(BrokerAction.START, (2,))
    assert len(control.calls) == 1 and quick_backoff == []
    assert "start failed 1 time: attempt 1" in not_restored[0]


def test_a_process_already_running_is_not_started_again(quick_backoff: list[float]) -> None:
    """A start that ran the process but was not verified (never registered): another start
    would only be refused, so the failure is reported as it is."""

    class Unverified(Control):
        def act(
            self,
            action: BrokerAction,
            broker_id: int,
            progress: object = None,
            links: object = None,
        ) -> str:
            self.calls.append((action, broker_id))
            self.state = ProcState.RUNNING
            raise ClusterError("broker 2 did not register in ZooKeeper within 90 s")

    control = Unverified(name="local")
    _event, not_restored = runner(control, [])._restore(BrokerAction.START, (2,))
    assert len(control.calls) == 1 and quick_backoff == []
    assert "did not register" in not_restored[0] and "it is running" in not_restored[0]
    assert "`kconsole --backend local cluster start 2`" in not_restored[0]


def test_several_nodes_each_retried_and_reported_alone(quick_backoff: list[float]) -> None:
    class Two(Control):
        def states(self) -> dict[int, ProcState]:
            return {1: ProcState.RUNNING, 2: ProcState.RUNNING, 3: ProcState.PAUSED}

        def act(
            self,
            action: BrokerAction,
            broker_id: int,
            progress: object = None,
            links: object = None,
        ) -> str:
            self.calls.append((action, broker_id))
            if broker_id == 3:
                raise ClusterError("no such container")
            return f"broker {broker_id} resumed"

    control = Two()
    _event, not_restored = runner(control, [])._restore(BrokerAction.RESUME, (2, 3))
    assert control.calls.count((BrokerAction.RESUME, 2)) == 1
    assert control.calls.count((BrokerAction.RESUME, 3)) == RESTORE_ATTEMPTS
    (line,) = not_restored
    assert line.startswith("broker 3 was NOT restored (resume failed 3 times")


def _report(not_restored: list[str]) -> DrillReport:
    fault = Event(1000.0, EventKind.ACTION, "kill broker 2", broker=2, new="kill")
    audit = check([], [], [], send_times=(0.0, 10.0), origin=2.0, origin_name="the fault")
    spec = DrillSpec("kill", "broker:2", duration_s=30, restore_after_s=10)
    return DrillReport(
        spec,
        2,
        False,
        "2026-11-26T06:00:00+00:00",
        fault.ts,
        [],
        [],
        audit,
        [fault],
        False,
        not_restored=not_restored,
    )


def test_the_report_says_the_restore_failed() -> None:
    line = "broker 2 was NOT restored (start failed 3 times: ...). Run `kconsole cluster start 2`"
    report = _report([line])
    assert not report.restored
    md = report.markdown()
    assert "## RESTORE FAILED: the cluster was left degraded" in md and f"- {line}" in md
    assert "restore FAILED; did NOT settle." in md
    doc = report.to_dict()
    assert doc["restored"] is False and doc["not_restored"] == [line]
    assert _report([]).to_dict()["restored"] is True
    assert "RESTORE FAILED" not in _report([]).markdown()


@pytest.mark.parametrize(("not_restored", "code"), [([], 0), (["broker 2 was NOT restored"], 1)])
def test_drill_run_exits_1_when_a_node_was_not_restored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, not_restored: list[str], code: int
) -> None:
    from kconsole.commands import Commands

    monkeypatch.setattr(
        Commands, "drill_run", lambda self, spec, confirm, progress=None: _report(not_restored)
    )
    env = {"KCONSOLE_STATE_DIR": str(tmp_path / "state"), "KCONSOLE_CONFIG": ""}
    res = CliRunner().invoke(
        cli,
        [
            "drill",
            "run",
            "--fault",
            "kill",
            "--target",
            "broker:2",
            "--yes",
            "--report",
            str(tmp_path / "r.json"),
        ],
        env=env,
    )
    assert res.exit_code == code, res.output
    assert ("RESTORE FAILED: broker 2 was NOT restored" in res.output) == bool(not_restored)


class Clock:
    """A fake clock for the runner: time(), monotonic() and sleep() move together."""

    def __init__(self) -> None:
        self.now = 1_000.0
        self.slept: list[float] = []

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class SlowKill(Control):
    """A kill that returns `takes` seconds after it was applied (it waits for the process to
    go, as the local backend's does), then a start that returns at once."""

    def __init__(self, clock: Clock, takes: float) -> None:
        super().__init__(name="local")
        self.clock, self.takes = clock, takes
        self.at: dict[BrokerAction, float] = {}

    def act(
        self, action: BrokerAction, broker_id: int, progress: object = None, links: object = None
    ) -> str:
        self.at[action] = self.clock.now
        if action is BrokerAction.KILL:
            self.clock.now += self.takes
            self.state = ProcState.STOPPED
            return f"broker {broker_id} killed"
        return super().act(action, broker_id)


def held(clock: Clock, takes: float, restore_after: float = 8.0) -> tuple[SlowKill, tuple]:
    control = SlowKill(clock, takes)
    spec = DrillSpec("kill", "broker:2", duration_s=30, restore_after_s=restore_after)
    run = DrillRunner(
        Settings(),
        control,
        spec,
        act=control.act,
        confirm=lambda _p, _e: True,  # type: ignore[arg-type]
    )
    return control, run._hold_fault((2,))


def test_the_restore_comes_restore_after_seconds_from_the_fault_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 35 #10: --restore-after 8 restored at +10.3 s, the wait starting only when the
    kill command returned (2.3 s later). Counted from the fault, the restore comes at +8 s, and
    the drill measures and says the time it really took."""
    clock = Clock()
    monkeypatch.setattr(runner_mod, "time", clock)
    control, (fault, applied, restore, not_restored, measured) = held(clock, takes=2.3)
    assert not_restored == []
    assert control.at[BrokerAction.START] - control.at[BrokerAction.KILL] == pytest.approx(8.0)
    assert clock.slept == [pytest.approx(5.7)]  # 8 s less the kill's own 2.3 s
    assert fault.ts == applied == control.at[BrokerAction.KILL]
    assert restore.ts - fault.ts == pytest.approx(8.0)
    assert measured.name == "fault -> restore" and measured.seconds == pytest.approx(8.0)
    assert measured.predicted == "8 s (--restore-after, counted from the fault)"
    assert measured.note == "the kill command took 2.30 s of it"


def test_a_fault_command_slower_than_restore_after_is_restored_when_it_returns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock()
    monkeypatch.setattr(runner_mod, "time", clock)
    _control, (fault, _applied, restore, _nr, measured) = held(clock, takes=9.5)
    assert clock.slept == []  # no wait at all
    assert restore.ts - fault.ts == measured.seconds == pytest.approx(9.5)
    assert measured.note == "the kill command itself took 9.50 s: restored as soon as it returned"


def test_the_report_gives_the_real_fault_to_restore_time() -> None:
    report = _report([])
    assert report.restored_after_s is None
    assert "restore asked after 10 s; did NOT settle." in report.markdown()
    report.restore_at = report.fault_at + 10.27
    md = report.markdown()
    assert "restore asked after 10 s, applied 10.27 s after the fault;" in md
    assert report.to_dict()["restored_after_s"] == 10.27


class Network(Control):
    """A backend whose node runs all along (a network fault): its heals fail `failures` times."""

    def __init__(self, failures: int = 0) -> None:
        super().__init__("local", failures)
        self.state = ProcState.RUNNING


def isolate_runner(control: Control, said: list[str]) -> DrillRunner:
    spec = DrillSpec("isolate", "broker:2", duration_s=30, restore_after_s=10)
    return DrillRunner(
        Settings(),
        control,  # type: ignore[arg-type]
        spec,
        act=control.act,
        confirm=lambda _p, _e: True,
        progress=said.append,
    )


def test_a_failed_heal_is_retried_though_the_node_runs() -> None:
    """Issue 37: an isolated node's process runs all along, so "it runs" does not mean "it
    was restored", as it does after a start."""
    control, said = Network(failures=1), []
    _event, not_restored = isolate_runner(control, said)._restore(BrokerAction.HEAL, (2,))
    assert not_restored == []
    assert control.calls == [(BrokerAction.HEAL, 2)] * 2


def test_a_network_fault_is_healed_when_the_drill_is_interrupted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    control, said = Network(), []

    def interrupted(_s: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(runner_mod.time, "sleep", interrupted)
    with pytest.raises(KeyboardInterrupt):
        isolate_runner(control, said)._hold_fault((2,))
    assert control.calls == [(BrokerAction.ISOLATE, 2), (BrokerAction.HEAL, 2)]
