"""The acked-loss checker on hand-made timelines: it must catch loss, duplicates and reordering
exactly, and say what acks=0 and unknown outcomes do and do not prove."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from kconsole.drills.audit import (
    Acked,
    AuditResult,
    Consumed,
    Duplicate,
    Failed,
    Lost,
    Moved,
    OrderViolation,
    Pending,
    Window,
    check,
    longest_gap,
)
from kconsole.drills.workload import Workload
from kconsole.faults.process import PAGE_CACHE_NOTE, PAUSE_NOTE
from tests.waiting import wait_until


def acked(key: str, seq: int, partition: int, offset: int, at: float) -> Acked:
    return Acked(key, seq, partition, offset, sent_at=at - 0.01, acked_at=at)


def read(key: str, seq: int, partition: int, offset: int) -> Consumed:
    return Consumed(key, seq, partition, offset)


def clean_run() -> tuple[list[Acked], list[Consumed]]:
    """k0 on partition 0 and k1 on partition 1, three messages each, acked once a second."""
    a = [acked(k, s, p, s, at=1.0 + s) for k, p in (("k0", 0), ("k1", 1)) for s in range(3)]
    return a, [read(x.key, x.seq, x.partition, x.offset) for x in a]


class TestCleanRun:
    def test_everything_read_back_once_is_ok(self) -> None:
        """A run where every acked record is read once, in order, passes."""
        a, c = clean_run()
        r = check(a, [], c, send_times=(0.5, 3.5))
        assert r.ok
        assert (r.acked, r.read_back, r.consumed) == (6, 6, 6)
        assert r.lost == r.duplicates == r.order_violations == r.moved == ()
        assert r.failed_by_code == {} and r.unknown == 0 and r.unaccounted == 0
        assert "**OK:** all 6 acknowledged messages were read back." in r.markdown()

    def test_overlapping_reads_of_one_offset_are_not_duplicates(self) -> None:
        """Reading the same (partition, offset) twice is the reader, not the log."""
        a, c = clean_run()
        r = check(a, [], c + c[:2], send_times=(0.5, 3.5))
        assert r.duplicates == () and r.order_violations == () and r.consumed == 6


class TestLossDuplicatesOrder:
    def run(self) -> AuditResult:
        a, c = clean_run()
        # Loss: k0 seq 1 (acked at partition 0 offset 1) was never read.
        c = [x for x in c if (x.key, x.seq) != ("k0", 1)]
        # Duplicate: k1 seq 2 stored again at offset 3, right after itself (no reordering).
        c.append(read("k1", 2, 1, 3))
        # Order violation: k2 seq 0 stored after seq 1 on partition 2.
        a += [acked("k2", 0, 2, 1, at=1.5), acked("k2", 1, 2, 0, at=1.6)]
        c += [read("k2", 1, 2, 0), read("k2", 0, 2, 1)]
        return check(a, [], c, send_times=(0.5, 3.5))

    def test_gap_is_reported_exactly(self) -> None:
        """The acked-but-unread record is reported with its acked partition and offset."""
        r = self.run()
        assert not r.ok
        assert r.lost == (Lost("k0", 1, 0, 1),)
        assert r.acked == 8 and r.read_back == 7

    def test_duplicate_is_reported_exactly(self) -> None:
        r = self.run()
        assert r.duplicates == (Duplicate("k1", 2, ((1, 2), (1, 3))),)

    def test_order_violation_is_reported_exactly(self) -> None:
        r = self.run()
        assert r.order_violations == (OrderViolation("k2", 2, 1, 0, after_seq=1, after_offset=0),)

    def test_markdown_says_loss_and_lists_it(self) -> None:
        md = self.run().markdown()
        assert "**LOSS:** 1 of 8 acknowledged messages were never read back." in md
        assert "- key=k0, seq=1, partition=0, offset=1" in md
        assert PAGE_CACHE_NOTE not in md  # a caveat of the fault, given by the drill

    def test_to_dict_is_json(self) -> None:
        d = json.loads(json.dumps(self.run().to_dict()))
        assert d["ok"] is False
        assert d["lost"] == [{"key": "k0", "seq": 1, "partition": 0, "offset": 1}]
        assert d["duplicates"][0]["positions"] == [[1, 2], [1, 3]]
        w = d["longest_no_success"]
        assert (w["start"], w["end"], w["seconds"], w["from_origin_s"]) == (2.0, 3.0, 1.0, 1.5)
        assert d["origin"] == {"name": "the start of sending", "at": 0.5}

    def test_duplicate_that_went_back_is_also_an_order_violation(self) -> None:
        """Without idempotence a retry can land after a later seq: both findings."""
        a = [acked("k0", 0, 0, 0, 1.0), acked("k0", 1, 0, 1, 1.1)]
        c = [read("k0", 0, 0, 0), read("k0", 1, 0, 1), read("k0", 0, 0, 2)]
        r = check(a, [], c, send_times=(0.0, 2.0))
        assert r.duplicates == (Duplicate("k0", 0, ((0, 0), (0, 2))),)
        assert r.order_violations == (OrderViolation("k0", 0, 2, 0, 1, 1),)
        assert r.ok

    def test_acked_position_that_did_not_hold(self) -> None:
        """Read back, but only at another offset than the one acked: moved, not lost."""
        a = [acked("k0", 0, 0, 5, 1.0)]
        r = check(a, [], [read("k0", 0, 0, 7)], send_times=(0.0, 2.0))
        assert r.ok and r.moved == (Moved("k0", 0, (0, 5), ((0, 7),)),)


class TestNoSuccessWindow:
    def test_largest_gap_between_acks(self) -> None:
        """Acks at 1, 2, 2.5, 7, 8 while sending from 0.5 to 9: the outage is 2.5 -> 7."""
        assert longest_gap([2.0, 1.0, 2.5, 7.0, 8.0], (0.5, 9.0)) == Window(2.5, 7.0)
        assert Window(2.5, 7.0).seconds == pytest.approx(4.5)

    def test_edges_count(self) -> None:
        """Nothing succeeded after the last ack until sending stopped; same before the first."""
        assert longest_gap([1.0, 1.5], (0.5, 9.0)) == Window(1.5, 9.0)
        assert longest_gap([8.0, 8.5], (0.5, 9.0)) == Window(0.5, 8.0)

    def test_no_success_at_all_is_the_whole_run(self) -> None:
        assert longest_gap([], (0.5, 9.0)) == Window(0.5, 9.0)

    def test_send_times_may_be_every_send(self) -> None:
        """Any sequence of send times works: min and max are the edges."""
        assert longest_gap([4.0], [3.0, 1.0, 6.0, 2.0]) == Window(1.0, 4.0)

    def test_through_check_and_markdown(self) -> None:
        a = [acked("k0", i, 0, i, at=t) for i, t in enumerate([1.0, 2.0, 2.5, 7.0, 8.0])]
        c = [read(x.key, x.seq, 0, x.offset) for x in a]
        r = check(a, [], c, send_times=(0.5, 9.0))
        assert r.longest_no_success == Window(2.5, 7.0)
        assert "4.50 s (+2.00 s to +6.50 s from the start of sending)" in r.markdown()

    def test_counted_from_the_fault_when_given(self) -> None:
        """A drill's report counts every figure from its fault: the window too, named so, with
        a sign (the pause drill of issue 26: the fault 2 s into the workload)."""
        a = [acked("k0", i, 0, i, at=t) for i, t in enumerate([1.0, 2.0, 2.5, 7.0, 8.0])]
        c = [read(x.key, x.seq, 0, x.offset) for x in a]
        r = check(
            a,
            [],
            c,
            send_times=(0.5, 9.0),
            origin=2.5,
            origin_name="the fault",
            caveats=[PAUSE_NOTE],
        )
        md = r.markdown()
        assert "| longest window with no successful send | 4.50 s (+0.00 s to +4.50 s from " in md
        assert "from the fault) |" in md
        assert PAUSE_NOTE in md and PAGE_CACHE_NOTE not in md
        w = r.to_dict()["longest_no_success"]
        assert (w["from_origin_s"], w["to_origin_s"]) == (0.0, 4.5)
        early = check(a[:1], [], c[:1], send_times=(0.5, 9.0), origin=2.5, origin_name="the fault")
        assert "(-1.50 s to +6.50 s from the fault)" in early.markdown()


class TestFailuresAndUnknown:
    def test_failures_grouped_by_code(self) -> None:
        """Failed sends are counted per KafkaError name; one that is in the log anyway is noted."""
        f = [
            Failed("k0", 1, "NOT_ENOUGH_REPLICAS", 0, 1.0, 1.1),
            Failed("k0", 2, "NOT_ENOUGH_REPLICAS", 0, 1.2, 1.3),
            Failed("k1", 1, "_MSG_TIMED_OUT", None, 1.0, 31.0),
            Failed("k1", 2, "REQUEST_TIMED_OUT", 1, 1.4, 31.4),
        ]
        a = [acked("k0", 0, 0, 0, 0.9), acked("k1", 0, 1, 0, 0.9)]
        c = [read("k0", 0, 0, 0), read("k1", 0, 1, 0), read("k1", 1, 1, 1)]
        r = check(a, f, c, send_times=(0.5, 2.0))
        assert r.failed_by_code == {
            "NOT_ENOUGH_REPLICAS": 2,
            "REQUEST_TIMED_OUT": 1,
            "_MSG_TIMED_OUT": 1,
        }
        assert r.failed == 4 and r.failed_read_back == 1 and r.ok and r.unaccounted == 0
        assert "4 (NOT_ENOUGH_REPLICAS 2, REQUEST_TIMED_OUT 1, _MSG_TIMED_OUT 1)" in r.markdown()

    def test_unknown_outcome_is_never_acked(self) -> None:
        """Sends without a report are counted apart; missing ones are not called lost."""
        a = [acked("k0", 0, 0, 0, 1.0)]
        u = [Pending("k0", 1, 1.5), Pending("k0", 2, 1.6)]
        c = [read("k0", 0, 0, 0), read("k0", 1, 0, 1)]
        r = check(a, [], c, send_times=(0.5, 2.0), unknown=u)
        assert r.ok and r.acked == 1 and r.unknown == 2 and r.unknown_read_back == 1
        assert any("never as acknowledged" in n for n in r.notes)

    def test_records_nobody_sent_are_unaccounted(self) -> None:
        r = check([], [], [read("k9", 0, 0, 0)], send_times=(0.0, 1.0))
        assert r.unaccounted == 1


class TestAcksZero:
    def run(self) -> AuditResult:
        a = [acked("k0", s, 0, -1, at=1.0 + s) for s in range(3)]
        return check(
            a, [], [read("k0", 0, 0, 10), read("k0", 2, 0, 11)], send_times=(0.5, 3.5), acks="0"
        )

    def test_missing_is_unconfirmed_not_lost(self) -> None:
        """With acks=0 nothing was promised: a missing message is not an acked loss."""
        r = self.run()
        assert not r.acknowledged and r.ok
        assert r.lost == ()
        assert r.unconfirmed_missing == (Lost("k0", 1, 0, -1),)
        assert r.moved == ()  # offset -1 is "no position", not a position that moved

    def test_markdown_says_sends_are_not_acknowledged(self) -> None:
        md = self.run().markdown()
        assert "acks=0: sends are not acknowledged" in md
        assert "sent (not acknowledged) | 3 |" in md
        assert "**No verdict on loss:**" in md and "**OK:**" not in md

    def test_bad_acks_value(self) -> None:
        with pytest.raises(ValueError):
            check([], [], [], send_times=(0.0, 1.0), acks="2")  # type: ignore[arg-type]


class TestWorkloadWithoutBroker:
    def test_messages_without_report_are_unknown_never_acked(self) -> None:
        """Nothing listens: every sent message ends as unknown outcome after a bounded stop."""
        wl = Workload({"bootstrap.servers": "127.0.0.1:9"}, "t", acks="all", rate=200, keys=4)
        wl.start(ready_timeout_s=0.5)
        wait_until(lambda: wl.counters().sent >= 20, 10, "20 sends")
        res = wl.stop(flush_timeout_s=0.5)
        assert res.finished and res.acked == () and res.failed == ()
        assert res.sent >= 20 and len(res.unknown) == res.sent
        seqs = sorted((u.key, u.seq) for u in res.unknown)
        assert seqs[:2] == [("k0", 0), ("k0", 1)]
        assert any("unknown outcome" in n for n in res.notes)
        assert res.ready_s is None and any("not ready" in n for n in res.notes)

    def test_bad_arguments(self) -> None:
        with pytest.raises(ValueError):
            Workload({}, "t", acks="2")  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            Workload({}, "t", rate=0)


def test_drills_never_import_textual() -> None:
    code = (
        "import sys, kconsole.drills.audit, kconsole.drills.workload, kconsole.drills.verify; "
        "sys.exit(3 if 'textual' in sys.modules else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr or "kconsole.drills imports textual"


class _Metadata:
    def __init__(self, topics: dict[str, object]) -> None:
        self.topics = topics


class _Topic:
    def __init__(self, partitions: dict[int, object], error: object = None) -> None:
        self.partitions = partitions
        self.error = error


class _LateMetadataConsumer:
    """Answers as a broker that has not had the topic's metadata yet, `unknown_for` times."""

    def __init__(self, unknown_for: int, code: int | None = None) -> None:
        from confluent_kafka import KafkaError

        self.asked = 0
        self.unknown_for = unknown_for
        self.code = KafkaError.UNKNOWN_TOPIC_OR_PART if code is None else code

    def list_topics(self, topic: str, timeout: float) -> _Metadata:
        from confluent_kafka import KafkaError

        self.asked += 1
        if self.asked <= self.unknown_for:
            return _Metadata({topic: _Topic({}, KafkaError(self.code))})
        return _Metadata({topic: _Topic({1: None, 0: None})})


def test_partitions_of_asks_again_while_the_topic_is_still_unknown() -> None:
    from kconsole.drills.verify import partitions_of

    consumer = _LateMetadataConsumer(unknown_for=2)
    assert partitions_of(consumer, "t", 5.0) == [0, 1]  # type: ignore[arg-type]
    assert consumer.asked == 3


def test_partitions_of_gives_up_at_its_deadline_and_at_once_on_other_errors() -> None:
    from confluent_kafka import KafkaError, KafkaException

    from kconsole.drills.verify import partitions_of

    never = _LateMetadataConsumer(unknown_for=10**6)
    t0 = time.monotonic()
    with pytest.raises(KafkaException) as exc:
        partitions_of(never, "t", 0.3)  # type: ignore[arg-type]
    assert exc.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert time.monotonic() - t0 >= 0.3 and never.asked >= 2
    denied = _LateMetadataConsumer(unknown_for=1, code=KafkaError.TOPIC_AUTHORIZATION_FAILED)
    with pytest.raises(KafkaException):
        partitions_of(denied, "t", 5.0)  # type: ignore[arg-type]
    assert denied.asked == 1


class _Msg:
    def __init__(self, partition: int, offset: int, value: bytes) -> None:
        self._p, self._o, self._v = partition, offset, value

    def error(self) -> None:
        return None

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._o

    def value(self) -> bytes:
        return self._v


class _LogConsumer:
    """A consumer over a fixed log per partition, as after a truncation: the offset the
    producer was told (acks=1) now holds a record the new leader took meanwhile."""

    def __init__(self, logs: dict[int, list[bytes]]) -> None:
        self.logs = logs
        self.pos: dict[int, int] = {}

    def list_topics(self, topic: str, timeout: float) -> _Metadata:
        return _Metadata({topic: _Topic(dict.fromkeys(self.logs))})

    def assign(self, tps: list[object]) -> None:
        self.pos = {tp.partition: 0 for tp in tps}  # type: ignore[attr-defined]

    def get_watermark_offsets(self, tp: object, timeout: float) -> tuple[int, int]:
        return 0, len(self.logs[tp.partition])  # type: ignore[attr-defined]

    def consume(self, num_messages: int, timeout: float) -> list[_Msg]:
        out = []
        for p, log in self.logs.items():
            while self.pos[p] < len(log) and len(out) < num_messages:
                out.append(_Msg(p, self.pos[p], log[self.pos[p]]))
                self.pos[p] += 1
        if not out:
            time.sleep(min(timeout, 0.01))
        return out

    def close(self) -> None:
        pass


def test_read_back_does_not_wait_for_an_acked_record_whose_offset_it_read_past(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The negative control's read-back: records acknowledged by a leader alone and truncated
    are not waited for to the deadline once their offsets hold other records; one acknowledged
    beyond what the log holds is still waited for (the end may move)."""
    import json

    from kconsole.drills import verify
    from kconsole.drills.audit import Acked

    def rec(key: str, seq: int, run: str = "r1") -> bytes:
        return json.dumps({"run": run, "key": key, "seq": seq}).encode()

    # Partition 0: k0/0 at 0, then offset 1 was k0/1 (acked by the cut leader) and now holds
    # k1/0 from the new leader. Partition 1 is fine.
    logs = {0: [rec("k0", 0), rec("k1", 0), rec("k0", 2)], 1: [rec("k2", 0)]}
    acked = [
        Acked("k0", 0, 0, 0, 0.0, 0.0),
        Acked("k0", 1, 0, 1, 0.0, 0.0),  # truncated: offset 1 was read past
        Acked("k1", 0, 0, 1, 0.0, 0.0),
        Acked("k0", 2, 0, 2, 0.0, 0.0),
        Acked("k2", 0, 1, 0, 0.0, 0.0),
    ]
    monkeypatch.setattr(verify, "Consumer", lambda conf: _LogConsumer(logs))
    back = verify.read_back({}, "t", "r1", timeout_s=5, until=acked)
    assert back.complete and back.missing_until == 0, back
    assert back.elapsed_s < 2.5  # not the deadline
    assert {(c.key, c.seq) for c in back.records} == {("k0", 0), ("k1", 0), ("k0", 2), ("k2", 0)}

    # Acknowledged at offset 3, the log holds 3 records: not read past, waited for.
    later = [*acked, Acked("k0", 3, 0, 3, 0.0, 0.0)]
    monkeypatch.setattr(verify, "Consumer", lambda conf: _LogConsumer(logs))
    back = verify.read_back({}, "t", "r1", timeout_s=1, until=later)
    assert not back.complete and back.missing_until == 1 and back.unfinished == ()
    assert back.elapsed_s >= 1 and back.not_waited == 1  # k0/1, read past

    # The same once the end has stood still for `still_s`: the log was truncated below it.
    monkeypatch.setattr(verify, "Consumer", lambda conf: _LogConsumer(logs))
    back = verify.read_back({}, "t", "r1", timeout_s=10, until=later, still_s=1)
    assert back.complete and back.missing_until == 0 and back.not_waited == 2
    assert 1 <= back.elapsed_s < 5
