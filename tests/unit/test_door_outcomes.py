"""The command layer logs what really happened: a group tail is done once the group has assigned
it partitions (failed when it never does), job runs stopped at exit are each a job.stop, and
every done line carries the counts of what the command did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kconsole.cluster.reassign.elect import ElectResult
from kconsole.cluster.reassign.outcome import CancelOutcome, Ongoing
from kconsole.cluster.reassign.record import MoveBook, MoveRecord
from kconsole.cluster.tail import StartAt, TailError
from kconsole.commands import AuditLog, Commands
from kconsole.config import Settings
from kconsole.errors import ClusterError
from kconsole.jobs.manager import JobManager
from kconsole.jobs.runs import JobState
from tests.unit.test_jobs import write_fake


class FakeTail:
    """A TailSource whose group join succeeds with `assigned` or fails with `join_error`."""

    def __init__(self, assigned: list[int], join_error: str = "") -> None:
        self.assigned, self.join_error = assigned, join_error
        self.positions: tuple[Any, ...] = ()
        self.paused = False
        self.opened = self.joined = self.closed = False

    def open(self) -> tuple[Any, ...]:
        self.opened = True
        return ()

    def join(self, timeout_s: float | None = None) -> list[int]:
        if self.join_error:
            raise TailError(self.join_error)
        self.joined = True
        return self.assigned

    def poll(self, timeout_s: float = 0.2, max_records: int = 500) -> list[Any]:
        return []

    def pause(self) -> None: ...
    def resume(self) -> None: ...

    def close(self) -> None:
        self.closed = True


def door_with(tail: FakeTail, log: AuditLog) -> Commands:
    return Commands(None, audit=log, tailer=lambda *_a: tail)


class TestGroupTail:
    """tail.group is logged when the join's outcome is known, with what it got."""

    def test_done_only_after_the_group_assigned_partitions(self, tmp_path: Path) -> None:
        log = AuditLog(tmp_path / "audit.jsonl")
        tail = FakeTail([0, 2])
        door_with(tail, log).open_tail("test-topic", None, StartAt("end"), "g1")
        assert tail.opened and tail.joined and not tail.closed
        (entry,) = log.entries()
        assert (entry["command"], entry["outcome"]) == ("tail.group", "done")
        assert entry["result"] == {"assigned_partitions": [0, 2]}

    def test_a_join_that_fails_is_failed_and_closes_the_tail(self, tmp_path: Path) -> None:
        log = AuditLog(tmp_path / "audit.jsonl")
        tail = FakeTail([], join_error="group 'g1' assigned no partitions of test-topic")
        with pytest.raises(TailError):
            door_with(tail, log).open_tail("test-topic", None, StartAt("end"), "g1")
        assert tail.closed
        (entry,) = log.entries()
        assert entry["outcome"] == "failed" and "assigned no partitions" in entry["error"]

    def test_without_a_group_nothing_is_logged_and_nothing_joins(self, tmp_path: Path) -> None:
        log = AuditLog(tmp_path / "audit.jsonl")
        tail = FakeTail([0])
        source = door_with(tail, log).open_tail("test-topic", 1, StartAt("end"), None)
        assert source is tail and tail.opened and not tail.joined
        assert list(log.entries()) == []


class TestJobsAtExit:
    """What the console does on exit, and `jobs start --attach` after Ctrl-C."""

    def test_each_attached_run_is_stopped_through_the_door(self, tmp_path: Path) -> None:
        jobs = write_fake(tmp_path / "jobs").parent
        manager = JobManager(tmp_path / "state", Settings(), jobs_directory=jobs)
        log = AuditLog(tmp_path / "audit.jsonl")
        door = Commands(None, audit=log, jobs=manager)
        attached = [door.start_job("fake", {"topic": f"t{n}"}) for n in range(2)]
        detached = door.start_job("fake", {"topic": "t2"}, detached=True)
        try:
            stopped = door.stop_attached_jobs(timeout_s=10)
            assert sorted(r.run_id for r in stopped if not isinstance(r, ClusterError)) == sorted(
                r.run_id for r in attached
            )
            assert all(manager.get(r.run_id).state is JobState.STOPPED for r in attached)
            assert manager.get(detached.run_id).active  # detached runs outlive the console
            stops = [e for e in log.entries() if e["command"] == "job.stop"]
            assert sorted(e["target"] for e in stops) == sorted(r.run_id for r in attached)
            assert all(e["outcome"] == "done" and e["result"]["state"] == "stopped" for e in stops)
            starts = [e for e in log.entries() if e["command"] == "job.start"]
            assert all(e["result"]["run_id"] and e["result"]["pid"] for e in starts)
        finally:
            manager.stop(detached.run_id, timeout_s=10)

    def test_read_only_stops_nothing_it_did_not_start(self, tmp_path: Path) -> None:
        manager = JobManager(tmp_path / "state", Settings())
        door = Commands(None, audit=None, jobs=manager, read_only=True)
        assert door.stop_attached_jobs() == []


class Client:
    """A reassignment client answering per partition (None: accepted)."""

    def __init__(self, answer: dict[tuple[str, int], str | None]) -> None:
        self.answer = answer

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_exc: object) -> None: ...

    def ongoing(self) -> list[Ongoing]:
        return []

    def elect(self, kind: str, partitions: Any) -> list[ElectResult]:
        return [
            ElectResult("t", 0, "not needed", ""),
            ElectResult("t", 1, "not needed", ""),
            ElectResult("t", 2, "elected", ""),
        ]

    def cancel(self, partitions: Any, **_kw: Any) -> CancelOutcome:
        return CancelOutcome(self.answer, reordered=(("t", 0),), throttles_removed=("broker:1",))


class TestCounts:
    """A done line says what the command did, not only that it ran."""

    def test_cancel_counts_what_kafka_refused(self, tmp_path: Path) -> None:
        log = AuditLog(tmp_path / "audit.jsonl")
        answer = {("t", 0): None, ("t", 1): "NO_REASSIGNMENT_IN_PROGRESS"}
        door = Commands(None, audit=log, reassigner=lambda: Client(answer), moves_dir=tmp_path)  # type: ignore[arg-type,return-value]
        door.reassign_cancel([("t", 0), ("t", 1)], confirm=lambda _p, e: e == "cancel")
        (entry,) = log.entries()
        assert entry["outcome"] == "done"
        assert entry["result"] == {
            "accepted": 1,
            "refused_by_kafka": 1,
            "reordered": 1,
            "throttles_removed": 1,
            "throttles_kept": 0,
        }

    def test_an_election_counts_each_outcome(self, tmp_path: Path) -> None:
        """Not "done, 3 partitions" when two needed nothing."""
        log = AuditLog(tmp_path / "audit.jsonl")
        door = Commands(None, audit=log, reassigner=lambda: Client({}))  # type: ignore[arg-type,return-value]
        door.elect("preferred", [("t", 0), ("t", 1), ("t", 2)], confirm=lambda _p, e: e == "t")
        (entry,) = log.entries()
        assert entry["args"] == {"partitions": 3}
        assert entry["result"] == {"elected": 1, "not needed": 2, "not possible": 0}

    def test_only_what_changes_is_sent_and_counted(self, tmp_path: Path) -> None:
        """A plan of 4 partitions of which 1 moves starts 1 (not "started: 4"); a plan with no
        change is refused before anything is sent or any throttle set."""
        from kconsole.commands.reassign import PlanRejected
        from kconsole.reassign.plan import Move, Plan
        from tests.unit.snapshots import load

        snap = load("healthy")
        sent: list[Any] = []

        class Moving(Client):
            last_throttle_plan = None

            def execute(self, moves: Any, current: Any, throttle_bps: Any = None) -> Any:
                sent.append(list(moves))
                return {(t, p): None for t, p, _ in moves}

        log = AuditLog(tmp_path / "audit.jsonl")
        door = Commands(None, audit=log, reassigner=lambda: Moving({}), moves_dir=tmp_path)  # type: ignore[arg-type,return-value]
        current = Plan.current(snap, [(p.topic, p.partition) for p in snap.partitions
                                      if p.topic == "test-topic"])  # fmt: skip
        one = Move("test-topic", 0, tuple(reversed(current.moves[0].replicas)))
        plan = Plan((one, *current.moves[1:]))
        out = door.reassign_execute(plan, snap, confirm=lambda _p, e: e == "test-topic")
        assert list(out) == [("test-topic", 0)] and sent == [[("test-topic", 0, one.replicas)]]
        entry = list(log.entries())[-1]
        assert entry["args"]["partitions"] == 4 and entry["args"]["changed"] == 1
        assert entry["result"] == {"accepted": 1, "refused_by_kafka": 0}
        with pytest.raises(PlanRejected, match="nothing would move"):
            door.reassign_execute(current, snap, confirm=lambda _p, e: True)
        assert len(sent) == 1

    def test_a_missing_backend_is_refused_with_what_is_missing(self, tmp_path: Path) -> None:
        door = Commands(None, audit=AuditLog(tmp_path / "audit.jsonl"))
        assert "PySpark jobs are not available" in door.refusal("job.start")
        assert "no cluster connection" in door.refusal("produce")
        assert "cluster connection" in door.refusal("reassign.execute")
        assert "broker control is not available" in door.refusal("broker.stop")
        with pytest.raises(ClusterError, match="PySpark jobs are not available"):
            door.start_job("fake")
        (entry,) = door.audit.entries()  # type: ignore[union-attr]
        assert (entry["command"], entry["outcome"]) == ("job.start", "refused")


class TestMoveBook:
    """What kconsole wrote down when it started a move is used only while that move runs."""

    def test_only_a_record_of_the_move_running_is_used(self, tmp_path: Path) -> None:
        from kconsole.commands.reassign import _still_running

        book = MoveBook(tmp_path, "cluster-a")
        book.add([
            MoveRecord("t", 0, (1, 2, 3), (2, 3, 4), 1.0, 1000, (1, 2, 3, 4), (1, 2, 3), (4,)),
            MoveRecord("t", 1, (1, 2, 3), (2, 3, 4), 1.0),
            MoveRecord("t", 2, (1, 2, 3), (2, 3, 4), 1.0),
        ])  # fmt: skip
        ongoing = [
            Ongoing("t", 0, (2, 3, 4, 1), (4,), (1,)),  # the recorded move
            Ongoing("t", 1, (3, 4, 1, 2), (3, 4), (1, 2)),  # moved again since, elsewhere
        ]  # t/2: finished
        valid = _still_running(book, ongoing)
        assert list(valid) == [("t", 0)] and valid[("t", 0)].throttle_bps == 1000
        assert list(MoveBook(tmp_path, "cluster-a").load()) == [("t", 0)]

    def test_a_partition_moved_again_keeps_its_first_original_order(self, tmp_path: Path) -> None:
        book = MoveBook(tmp_path, "c")
        book.add([MoveRecord("t", 0, (1, 2, 3), (2, 3, 4), 1.0)])
        book.add([MoveRecord("t", 0, (2, 3, 4), (3, 4, 1), 2.0)])
        (r,) = book.load().values()
        assert r.original == (1, 2, 3) and r.target == (3, 4, 1)
        book.drop([("t", 0)])
        assert not book.path.exists()
