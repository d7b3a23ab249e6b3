"""A whole drill run, step by step, on a recorded cluster: the order of its side effects, and
the clean-up on every path (issue 36: run() became named steps, its behaviour unchanged).

The cluster is faked at the runner's edges (observer, workload, read-back, Admin), each doing
what the real one does for the runner: the observer hands over snapshots and keeps the events
recorded on it, the workload starts and stops, the read-back finds the topic as it was."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest

from kconsole.cluster.values import BrokerAction, ProcState
from kconsole.config import Settings
from kconsole.drills import runner as runner_mod
from kconsole.drills.runner import RESTORE_ATTEMPTS, DrillRunner
from kconsole.drills.spec import DrillError, DrillReport, DrillSpec
from kconsole.errors import NotConfirmed
from kconsole.models import ClusterSnapshot
from kconsole.timeline import Event
from tests.unit.snapshots import load


class Clock:
    """time(), monotonic() and sleep() on one fake clock; a wait for a change moves it too."""

    def __init__(self, steps: list[tuple[str, Any]]) -> None:
        self.now, self.steps = 1_000.0, steps

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.steps.append(("sleep", round(float(seconds), 3)))
        self.now += seconds


class Cluster:
    """The runner's edges, recording every step they are asked for, in order."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, first: ClusterSnapshot | None) -> None:
        self.steps: list[tuple[str, Any]] = []
        self.clock = Clock(self.steps)
        self.first = first
        self.events: list[Event] = []
        self.on_update: Any = None  # the runner's, once its observer started
        self.workload_bytes: int | None = None  # what the runner asked the workload's values be
        cluster = self

        class Observer:
            def __init__(self, settings: Settings, **_kw: object) -> None:
                pass

            def start(self, on_update: Any) -> None:
                cluster.steps.append(("observer.start", None))
                cluster.on_update = on_update
                if cluster.first is not None:  # its first poll answered
                    on_update(cluster.first, ())

            def record(self, event: Event) -> None:
                cluster.steps.append(("record", event.text))
                cluster.events.append(event)

            def events_since(self, ts: float) -> list[Event]:
                return [e for e in cluster.events if e.ts >= ts]

            def stop(self) -> None:
                cluster.steps.append(("observer.stop", None))

        class Workload:
            def __init__(
                self, settings: Settings, topic: str, *, acks: str, rate: float, value_bytes: int
            ):
                cluster.workload_bytes = value_bytes

            def start(self) -> Workload:
                cluster.steps.append(("workload.start", None))
                return self

            def stop(self, flush_timeout_s: float = 10.0) -> SimpleNamespace:
                cluster.steps.append(("workload.stop", flush_timeout_s))
                now = cluster.clock.now
                return SimpleNamespace(
                    acked=(),
                    failed=(),
                    failed_by_code={},
                    unknown=(),
                    run_id="run-1",
                    send_times=(now - 30, now),
                    notes=("the workload's note",),
                )

        class Admin:
            def __init__(self, config: object) -> None:
                pass

            def read_broker_config(self, broker_id: int) -> dict[str, str]:
                cluster.steps.append(("read_broker_config", broker_id))
                return {"zookeeper.session.timeout.ms": "18000"}

        def end_offsets(settings: Settings, topic: str) -> dict[int, int]:
            cluster.steps.append(("end_offsets", topic))
            return {0: 5}

        def read_back(settings: Settings, topic: str, run_id: str, **kw: Any) -> SimpleNamespace:
            cluster.steps.append(("read_back", kw["start_offsets"]))
            return SimpleNamespace(records=(), complete=True, unfinished=(), missing_until=0)

        monkeypatch.setattr(runner_mod, "time", self.clock)
        monkeypatch.setattr(runner_mod, "ClusterObserver", Observer)
        monkeypatch.setattr(runner_mod, "Workload", Workload)
        monkeypatch.setattr(runner_mod, "AdminReader", Admin)
        monkeypatch.setattr(runner_mod, "end_offsets", end_offsets)
        monkeypatch.setattr(runner_mod, "read_back", read_back)

    def runner(
        self,
        spec: DrillSpec,
        *,
        fails: BrokerAction | None = None,
        confirm: bool = True,
        after: ClusterSnapshot | None = None,
    ) -> DrillRunner:
        """A runner whose actions succeed (but `fails`); a restore brings `after` on screen."""

        states = {n: ProcState.RUNNING for n in (1, 2, 3)}
        state_after = {
            BrokerAction.KILL: ProcState.STOPPED,
            BrokerAction.STOP: ProcState.STOPPED,
            BrokerAction.PAUSE: ProcState.PAUSED,
        }

        def act(action: BrokerAction, node: int) -> str:
            self.steps.append(("act", f"{action.value} {node}"))
            if action is fails:
                raise RuntimeError(f"{action.value} refused")
            states[node] = state_after.get(action, ProcState.RUNNING)
            if action in (BrokerAction.START, BrokerAction.RESUME) and after is not None:
                self.on_update(after, ())
            return "done"

        def asked(prompt: str, expected: str) -> bool:
            self.steps.append(("confirm", expected))
            return confirm

        control = SimpleNamespace(name="local", states=lambda: dict(states))
        runner = DrillRunner(
            Settings(),
            control,  # type: ignore[arg-type]
            spec,
            act=act,
            confirm=asked,
            progress=lambda line: self.steps.append(("say", line)),
        )

        class Changed(threading.Condition):
            def wait(self, timeout: float | None = None) -> bool:
                clock.now += timeout or 0.0  # a wait for the next snapshot takes its time
                return False

        clock = self.clock
        runner._changed = Changed()
        # As the real observer's first two log-end readings give: the cluster's throughput
        # read once before the fault (else the fault waits for it, WARMUP_READING_S at most).
        runner._landed.append((clock.now, 100.0, False))
        return runner

    def said(self) -> list[str]:
        return [str(arg) for step, arg in self.steps if step == "say"]

    def order(self) -> list[str]:
        """The steps that act or wait, without what was said."""
        return [f"{s} {a}" if a is not None else s for s, a in self.steps if s != "say"]


def test_a_drill_runs_its_steps_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    healthy = load("healthy")
    cluster = Cluster(monkeypatch, healthy)
    spec = DrillSpec(
        "kill", "broker:2", duration_s=30, restore_after_s=10, warmup_s=2, message_bytes=1024
    )
    report = cluster.runner(spec, after=healthy).run()
    assert cluster.workload_bytes == 1024  # --message-bytes reaches the workload
    assert cluster.order() == [
        "observer.start",
        "read_broker_config 2",
        "confirm 2",  # before anything writes or acts
        "end_offsets test-topic",
        "workload.start",
        "sleep 2.0",  # the warm-up
        "record kill broker 2",
        "act kill 2",
        "sleep 10.0",  # --restore-after, from the fault
        "record start broker 2",
        "act start 2",
        "sleep 18.0",  # settled at once: the rest of --duration
        "workload.stop 10.0",
        "read_back {0: 5}",  # from where the topic ended before the workload
        "observer.stop",
    ]
    said = cluster.said()
    assert said[0] == "waiting for a healthy view of the cluster"
    assert said[1] == "workload: 200 msg/s of 1,024 B, acks=all, on test-topic"
    assert "settling: broker registered, every ISR full, preferred leaders back" in said
    assert "workload stopped: 0 acked, 0 failed, 0 unknown" in said
    assert isinstance(report, DrillReport)
    assert report.targets == [2] and report.not_restored == [] and report.settled
    assert report.restore_at is not None and report.restore_at - report.fault_at == 10.0
    assert report.measurements[0].name == "fault -> restore"
    assert report.notes[0] == "the workload's note"
    assert report.notes[-1].startswith("Durations are as kconsole observed them (ZooKeeper")
    assert [e.text for e in report.events] == ["kill broker 2", "start broker 2"]
    assert report.impact and report.impact == [line.strip() for line in said[2:7]]


def test_a_fault_that_fails_still_stops_the_workload_and_the_observer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster = Cluster(monkeypatch, load("healthy"))
    spec = DrillSpec("kill", "broker:2")
    with pytest.raises(RuntimeError, match="kill refused"):
        cluster.runner(spec, fails=BrokerAction.KILL).run()
    assert cluster.order()[-4:] == [
        "record kill broker 2",
        "act kill 2",
        "workload.stop 5",  # stopped without waiting long for its in-flight messages
        "observer.stop",
    ]


def test_a_node_not_restored_is_said_reported_and_the_workload_still_audited(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster = Cluster(monkeypatch, load("healthy"))
    report = cluster.runner(DrillSpec("pause", "broker:2"), fails=BrokerAction.RESUME).run()
    assert cluster.order().count("act resume 2") == RESTORE_ATTEMPTS
    (line,) = report.not_restored
    assert line.startswith("broker 2 was NOT restored (resume failed 3 times")
    assert line in cluster.said()
    assert not report.settled  # not waited for: a node left down cannot settle
    assert cluster.order()[-3:] == ["workload.stop 10.0", "read_back {0: 5}", "observer.stop"]


def test_a_drill_not_confirmed_starts_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = Cluster(monkeypatch, load("healthy"))
    with pytest.raises(NotConfirmed, match="drill on broker 2: not confirmed"):
        cluster.runner(DrillSpec("kill", "broker:2"), confirm=False).run()
    assert cluster.order() == [
        "observer.start",
        "read_broker_config 2",
        "confirm 2",
        "observer.stop",
    ]


@pytest.mark.parametrize(
    ("first", "error"),
    [
        ("zk_unreachable", "the cluster is not reachable (or the topic is missing): ZooKeeper "),
        (None, "no data from the cluster"),
        ("broker_down", "broker 2 is not up (down)"),
    ],
)
def test_a_cluster_not_ready_is_said_and_nothing_starts(
    monkeypatch: pytest.MonkeyPatch, first: str | None, error: str
) -> None:
    cluster = Cluster(monkeypatch, load(first) if first else None)
    with pytest.raises(DrillError) as raised:
        cluster.runner(DrillSpec("kill", "broker:2")).run()
    assert str(raised.value).startswith(error)
    assert cluster.order() == ["observer.start", "observer.stop"]


def test_the_high_watermark_is_asked_again_while_a_new_leader_catches_up() -> None:
    """Just after an election the leader answers OFFSET_NOT_AVAILABLE ("Leader high watermark
    is not caught up", seen in CI): asked again, not a drill that fails at its start."""
    import time

    from confluent_kafka import KafkaError, KafkaException, TopicPartition

    from kconsole.drills.verify import _high_watermark

    class Leader:
        calls = 0

        def get_watermark_offsets(self, tp: object, timeout: float) -> tuple[int, int]:
            self.calls += 1
            if self.calls < 3:
                raise KafkaException(KafkaError(KafkaError.OFFSET_NOT_AVAILABLE))
            return 0, 42

    leader = Leader()
    assert _high_watermark(leader, TopicPartition("t", 0), time.monotonic() + 5) == 42
    assert leader.calls == 3

    class Refuses:
        def get_watermark_offsets(self, tp: object, timeout: float) -> tuple[int, int]:
            raise KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))

    with pytest.raises(KafkaException):
        _high_watermark(Refuses(), TopicPartition("t", 0), time.monotonic() + 5)


def test_the_fault_waits_for_the_clusters_first_throughput_reading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past the warm-up, with no throughput reading yet (a busy machine: the observer's first
    two log-end readings took longer than the warm-up), the fault waits for one, at most
    WARMUP_READING_S: without it the cluster's dip was "not measured" (seen in CI)."""
    healthy = load("healthy")
    cluster = Cluster(monkeypatch, healthy)
    spec = DrillSpec("kill", "broker:2", duration_s=30, restore_after_s=10, warmup_s=2)
    runner = cluster.runner(spec, after=healthy)
    runner._landed.clear()
    waited: list[float | None] = []

    class Reads(threading.Condition):
        def wait(self, timeout: float | None = None) -> bool:
            waited.append(timeout)
            cluster.clock.now += 0.7  # the second reading comes
            runner._landed.append((cluster.clock.now, 100.0, False))
            return True

    runner._changed = Reads()
    runner._warm_up(SimpleNamespace(snap=None))  # type: ignore[arg-type]
    assert len(waited) == 1 and waited[0] == runner_mod.WARMUP_READING_S
    runner._changed = Reads()
    runner._warm_up(SimpleNamespace(snap=None))  # type: ignore[arg-type]
    assert len(waited) == 1  # a reading already there: no wait
