"""kconsole.cluster.produce.api without a cluster: partitioner, validation, input parsing, trace."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kconsole.cluster.produce.api import (
    DEFAULT_MAX_MESSAGE_BYTES,
    Delivery,
    ProduceError,
    ProduceResult,
    Tally,
    TopicLimits,
    build_request,
    check_topic_name,
    decode_text,
    parse_header,
    parse_line,
    partition_for,
    record_size,
    trace,
    validate,
)
from tests.unit.snapshots import load

# Kafka's own test vectors for Utils.murmur2 (clients/src/test/java/org/apache/kafka/common/
# utils/UtilsTest.java, testMurmur2), as signed Java ints. The partition is
# (hash & 0x7fffffff) % n, computed here from those constants, not from kafka-python.
JAVA_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize("key", list(JAVA_MURMUR2))
@pytest.mark.parametrize("n", [1, 3, 4, 7, 12, 50])
def test_partition_for_matches_java(key: bytes, n: int) -> None:
    assert partition_for(key, n) == (JAVA_MURMUR2[key] & 0x7FFFFFFF) % n


def test_partition_for_known_values_on_four_partitions() -> None:
    # Spelled out so a change of formula shows up as concrete numbers.
    got = {k: partition_for(k, 4) for k in JAVA_MURMUR2}
    assert got == {
        b"21": 0,
        b"foobar": 2,
        b"a-little-bit-long-string": 0,
        b"a-little-bit-longer-string": 3,
        b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": 1,
        b"abc": 3,
    }


def test_null_key_has_no_fixed_partition() -> None:
    assert partition_for(None, 4) is None


def test_empty_key_is_not_null() -> None:
    assert partition_for(b"", 4) is not None


def test_partition_for_rejects_no_partitions() -> None:
    with pytest.raises(ValueError):
        partition_for(b"k", 0)


@pytest.mark.parametrize(
    "name, ok",
    [
        ("test-topic", True),
        ("a", True),
        ("A.b_c-9", True),
        ("x" * 249, True),
        ("x" * 250, False),
        ("", False),
        (".", False),
        ("..", False),
        ("...", True),
        ("has space", False),
        ("slash/topic", False),
        ("ümlaut", False),
        ("colon:topic", False),
    ],
)
def test_topic_name_rules(name: str, ok: bool) -> None:
    if ok:
        check_topic_name(name)
    else:
        with pytest.raises(ProduceError, match="invalid topic name"):
            check_topic_name(name)


LIMITS = TopicLimits("t", True, 4, DEFAULT_MAX_MESSAGE_BYTES, "topic")


def test_size_limit() -> None:
    fits = b"x" * (DEFAULT_MAX_MESSAGE_BYTES - record_size(b"k", b""))
    validate("t", limits=LIMITS, records=[(b"k", fits, [])])
    with pytest.raises(ProduceError, match=r"too large.*1,048,588"):
        validate("t", limits=LIMITS, records=[(b"k", fits + b"x", [])])


def test_size_counts_headers() -> None:
    value = b"x" * (DEFAULT_MAX_MESSAGE_BYTES - record_size(b"k", b""))
    with pytest.raises(ProduceError, match="too large"):
        validate("t", limits=LIMITS, records=[(b"k", value, [("h", b"v")])])


def test_size_limit_of_the_topic() -> None:
    small = TopicLimits("t", True, 4, 1000, "topic")
    with pytest.raises(ProduceError, match="record 2 is too large"):
        validate("t", limits=small, records=[(None, b"a", []), (None, b"x" * 1000, [])])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"count": 0}, "count must be at least 1"),
        ({"count": 10_000_000}, "too many"),
        ({"rate": 0}, "rate must be"),
        ({"rate": -5.0}, "rate must be"),
        ({"acks": "2"}, "acks must be"),
        ({"compression": "brotli"}, "compression"),
        ({"partition": -1}, "partition must be"),
        ({"partition": 4, "limits": LIMITS}, "partition 4 does not exist"),
        ({"limits": TopicLimits("t", False)}, "does not exist"),
    ],
)
def test_validation_errors(kwargs: dict, match: str) -> None:
    kwargs.setdefault("limits", None)
    with pytest.raises(ProduceError, match=match):
        validate("t", **kwargs)


def test_validation_passes() -> None:
    validate("t", limits=LIMITS, records=[(b"k", b"v", [])], count=5, rate=10, partition=3)


@pytest.mark.parametrize(
    "line, sep, expected",
    [
        ("k:v\n", ":", ("k", "v")),
        ("k:v:w", ":", ("k", "v:w")),
        (":v", ":", ("", "v")),
        ("k:", ":", ("k", "")),
        ("no separator", ":", (None, "no separator")),
        ("k\tv\r\n", "\t", ("k", "v")),
        ("k::v", "::", ("k", "v")),
        ("k:v", None, (None, "k:v")),
    ],
)
def test_parse_line(line: str, sep: str | None, expected: tuple) -> None:
    assert parse_line(line, sep) == expected


def test_decode_text() -> None:
    assert decode_text("ok é".encode(), "x") == "ok é"
    with pytest.raises(ProduceError, match="stdin line 3 is not valid UTF-8 \\(byte 2"):
        decode_text(b"ab\xff", "stdin line 3")


def test_parse_header() -> None:
    assert parse_header("a=b=c") == ("a", b"b=c")
    with pytest.raises(ProduceError, match="key=value"):
        parse_header("novalue")


# -- trace on snapshots recorded from a real cluster ----------------------------------------------
def _key_for(partition: int, n: int = 4) -> bytes:
    return next(k for i in range(1000) if partition_for(k := f"k{i}".encode(), n) == partition)


def test_trace_healthy() -> None:
    snap = load("healthy")
    key = _key_for(2)
    t = trace(snap, "test-topic", key)
    assert (t.partition, t.leader, t.isr, t.min_isr) == (2, 2, (2, 1, 3), 2)
    assert t.warnings == ()
    assert "test-topic/2 -> leader 2" in t.describe()


def test_trace_unknown_topic() -> None:
    t = trace(load("healthy"), "nope", b"k")
    assert t.partition is None
    assert t.warnings == ("topic 'nope' does not exist",)


def test_trace_under_min_isr() -> None:
    snap = load("broker_down")
    # broker_down: test-topic ISRs of 2 with min ISR 2 (fine); shrink them to the leader alone.
    t = trace(snap, "test-topic", _key_for(0))
    assert t.isr == (3, 1) and t.warnings == ()
    shrunk = replace(
        snap,
        partitions=tuple(
            replace(p, isr=(p.leader,)) if p.topic == "test-topic" else p for p in snap.partitions
        ),
    )
    t = trace(shrunk, "test-topic", _key_for(0))
    assert len(t.warnings) == 1
    assert "under min ISR" in t.warnings[0] and "NOT_ENOUGH_REPLICAS" in t.warnings[0]


def test_trace_offline_partition() -> None:
    snap = load("offline_partition")
    t = trace(snap, "audit-log", _key_for(1, 3))
    assert t.partition == 1 and t.leader == -1
    assert any("offline" in w for w in t.warnings)
    healthy_one = trace(snap, "audit-log", _key_for(0, 3))
    assert healthy_one.warnings == ()


def test_trace_null_key_reports_topic_wide() -> None:
    t = trace(load("offline_partition"), "audit-log", None)
    assert t.partition is None and t.num_partitions == 3
    assert t.warnings == ("partitions 1 offline (no leader)",)
    assert "sticky" in t.describe()


def test_trace_explicit_partition() -> None:
    t = trace(load("healthy"), "test-topic", b"whatever", partition=3)
    assert t.partition == 3 and t.leader == 3
    t = trace(load("healthy"), "test-topic", b"k", partition=9)
    assert "does not exist" in t.warnings[0]


def test_result_accounting() -> None:
    ds = (
        Delivery(0, b"a", 0, 10, 0.002),
        Delivery(1, b"a", 0, 11, 0.004),
        Delivery(2, b"b", 1, None, 1.0, "NOT_ENOUGH_REPLICAS", "x"),
        Delivery(3, b"b", None, None, None, "UNKNOWN", "no report"),
    )
    r = ProduceResult("t", "all", 4, ds, 2.0)
    assert len(r.acked) == 2 and len(r.failed) == 1 and len(r.unknown) == 1
    assert r.failed_by_code == {"NOT_ENOUGH_REPLICAS": 1}
    assert not r.ok and r.rate == 2.0
    assert r.latency() == pytest.approx({"p50": 4.0, "p99": 4.0, "max": 4.0})


# -- the dialog's form ------------------------------------------------------------------------
def _form(**kw: str) -> dict[str, str]:
    base = {"topic": "test-topic", "key": "k", "value": "v"}
    base.update(kw)
    return base


def test_build_request_defaults() -> None:
    req = build_request(**_form())
    assert (req.topic, req.key, req.value, req.count, req.rate) == (
        "test-topic",
        b"k",
        b"v",
        1,
        None,
    )
    assert (req.acks, req.compression, req.partition, req.headers) == ("all", None, None, ())
    assert list(req.records()) == [(b"k", b"v", ())]


def test_build_request_fields() -> None:
    req = build_request(
        **_form(key="", headers="a=1, b = two ,c="),
        count="1_000",
        rate="250.5",
        acks="1",
        compression="zstd",
        partition="3",
    )
    assert req.key is None  # an empty key field is a null key
    assert req.headers == (("a", b"1"), ("b", b" two"), ("c", b""))
    assert (req.count, req.rate, req.acks, req.compression, req.partition) == (
        1000, 250.5, "1", "zstd", 3,
    )  # fmt: skip


def test_records_stop_early() -> None:
    req = build_request(**_form(), count="100")
    seen: list[object] = []
    for r in req.records(lambda: len(seen) >= 7):
        seen.append(r)
    assert len(seen) == 64  # stop() is asked every 64 records


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"topic": "bad topic"}, "invalid topic name 'bad topic': ' ' not allowed"),
        ({"topic": ""}, "invalid topic name: it is empty"),
        ({"count": "0"}, "count must be at least 1, not 0"),
        ({"count": "-3"}, "count must be at least 1, not -3"),
        ({"count": "lots"}, "count must be a whole number, not 'lots'"),
        ({"count": "2000000"}, "too many"),
        ({"rate": "0"}, "rate must be in"),
        ({"rate": "-1"}, "rate must be in"),
        ({"rate": "fast"}, "rate must be a number"),
        ({"partition": "-1"}, "partition must be >= 0"),
        ({"partition": "x"}, "partition must be a whole number"),
        ({"key": "caf\udce9"}, "the key is not valid UTF-8 text .*b'\\\\xe9'"),
        ({"value": "\udcff"}, "the value is not valid UTF-8 text"),
        ({"headers": "novalue"}, "headers are key=value"),
        ({"headers": "h=\udc80"}, "header 'h' is not valid UTF-8"),
        ({"value": "{not json", "value_mode": "json"}, "the value is not valid JSON"),
        ({"value": "", "value_mode": "file"}, "give the path of the file"),
        ({"value": "/nonexistent/x.bin", "value_mode": "file"}, "cannot read /nonexistent"),
    ],
)
def test_build_request_refuses(kw: dict[str, str], match: str) -> None:
    with pytest.raises(ProduceError, match=match):
        build_request(**_form(**kw))


def test_build_request_json_and_file(tmp_path: Path) -> None:
    req = build_request(**_form(value='{"a": [1, 2]}', value_mode="json"))
    assert req.value == b'{"a": [1, 2]}'  # sent as typed
    blob = tmp_path / "blob.bin"
    blob.write_bytes(bytes(range(256)))
    req = build_request(**_form(value=str(blob), value_mode="file"))
    assert req.value == bytes(range(256))  # raw bytes: any content


def test_tally() -> None:
    now = [10.0]
    tally = Tally(5, clock=lambda: now[0])
    for d in (
        Delivery(0, b"a", 0, 1, 0.010),
        Delivery(1, b"a", 0, 2, 0.030),
        Delivery(2, b"b", 1, None, 0.5, "NOT_ENOUGH_REPLICAS", "x"),
        Delivery(3, b"b", 1, None, 0.5, "NOT_ENOUGH_REPLICAS", "x"),
        Delivery(4, b"c", None, None, None, "UNKNOWN", "no report"),
    ):
        tally.add(d)
    now[0] = 12.0
    assert tally.view().latency_ms == {}  # progress needs no sort of every latency
    v = tally.view(latency=True)
    assert (v.total, v.acked, v.failed, v.unknown, v.done) == (
        5, 2, {"NOT_ENOUGH_REPLICAS": 2}, 1, 5,
    )  # fmt: skip
    assert v.rate == 2.5
    assert v.latency_ms == pytest.approx({"p50": 30.0, "p99": 30.0, "max": 30.0})


def test_trace_checks_the_record_size() -> None:
    """Issue 26 item 9: the size the send checks is checked in the trace too."""
    snap = load("healthy")
    limit = DEFAULT_MAX_MESSAGE_BYTES
    over = trace(snap, "test-topic", b"k", record_bytes=limit + 1, max_message_bytes=limit)
    assert over.warnings == (
        f"record too large: about {limit + 1:,} bytes with overhead, but test-topic accepts at "
        f"most {limit:,} (max.message.bytes, topic): a send would be refused",
    )
    fits = trace(snap, "test-topic", b"k", record_bytes=limit, max_message_bytes=limit)
    assert fits.warnings == () and not fits.size_unchecked
    unknown = trace(snap, "test-topic", None, record_bytes=limit + 1, max_message_bytes=None)
    assert unknown.size_unchecked and not any("too large" in w for w in unknown.warnings)
    # The null key's topic-wide trace checks it too; a missing topic has nothing to check.
    assert (
        "record too large"
        in trace(
            snap, "test-topic", None, record_bytes=limit + 1, max_message_bytes=limit
        ).warnings[-1]
    )
    assert trace(snap, "no-such", b"k", record_bytes=1, max_message_bytes=0).record_bytes is None


# -- the producer kept open (kconsole.commands.produce) -------------------------------------------
def _session(read_only: bool = False, limits: TopicLimits | None = None) -> tuple[Any, list[Any]]:
    from kconsole.commands import Commands
    from kconsole.commands.produce import ProduceSession
    from kconsole.config import Settings
    from tests.ui.warm_fakes import FakeWarm

    FakeWarm.made = []
    reads: list[str] = []
    commands = Commands(None, read_only=read_only, settings=Settings(), audit=None)
    session = ProduceSession(commands, FakeWarm, clock=Clock())
    answer = limits or TopicLimits("test-topic", True, 4, DEFAULT_MAX_MESSAGE_BYTES, "topic")

    def read(settings: Any, topic: str, timeout_s: float = 10.0) -> TopicLimits:
        reads.append(topic)
        return answer

    session.read_limits_from = read
    return session, reads


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_session_keeps_one_producer(monkeypatch: pytest.MonkeyPatch) -> None:
    from kconsole.cluster.produce import request as produce_request
    from tests.ui.warm_fakes import FakeWarm

    session, reads = _session()
    monkeypatch.setattr(produce_request, "read_topic_limits", session.read_limits_from)
    assert session.spent  # nothing made yet
    state = session.prepare("test-topic", "all", None)
    assert state.ready and state.producer_id is not None and state.limits is not None
    assert not session.spent
    assert len(FakeWarm.made) == 1 and session.made == 1
    first = FakeWarm.made[0]
    # The same settings: the same producer; the limits are not read again while fresh.
    assert session.producer("all", None, DEFAULT_MAX_MESSAGE_BYTES) is first
    assert session.prepare("test-topic", "all", None).ready and reads == ["test-topic"]
    # Other acks or codec: a new one, the old one closed.
    second = session.producer("1", "lz4", DEFAULT_MAX_MESSAGE_BYTES)
    assert second is not first and first.closed is not None and second.acks == "1"
    # A spent producer (a fatal error, a send that lost records) is replaced too.
    second.spent = "a send left 1 records without an outcome"
    assert session.spent  # the dialog makes the next one at once
    third = session.producer("1", "lz4", DEFAULT_MAX_MESSAGE_BYTES)
    assert third is not second and session.made == 3
    # Topic limits that map to the same librdkafka message.max.bytes share one; one that
    # needs a larger message.max.bytes does not.
    small = session.producer("1", "lz4", 1000)
    assert small is not third and session.producer("1", "lz4", 5000) is small
    assert session.producer("1", "lz4", DEFAULT_MAX_MESSAGE_BYTES) is not small
    assert session.made == 5
    # Limits older than LIMITS_MAX_AGE_S are read again.
    from kconsole.commands.produce import LIMITS_MAX_AGE_S

    session.clock.now += LIMITS_MAX_AGE_S + 1
    session.prepare("test-topic", "1", "lz4")
    assert reads == ["test-topic", "test-topic"]
    closed = session.close()
    assert closed.closed and third.closed is not None
    with pytest.raises(ProduceError, match="closed"):
        session.producer("1", "lz4", DEFAULT_MAX_MESSAGE_BYTES)


def test_session_read_only_makes_no_producer(monkeypatch: pytest.MonkeyPatch) -> None:
    from kconsole.cluster.produce import request as produce_request
    from tests.ui.warm_fakes import FakeWarm

    session, reads = _session(read_only=True)
    monkeypatch.setattr(produce_request, "read_topic_limits", session.read_limits_from)
    state = session.prepare("test-topic")
    assert state.refused.startswith("read-only") and not state.ready
    assert FakeWarm.made == [] and reads == []  # nothing made, nothing even read


def test_where_the_time_went() -> None:
    from kconsole.cli.produce import where_the_time_went
    from kconsole.cluster.produce.outcome import ProducerTiming

    def one(latency_s: float, timing: ProducerTiming | None) -> ProduceResult:
        d = Delivery(0, b"k", 2, 7, latency_s)
        return ProduceResult("test-topic", "all", 1, (d,), latency_s, producer=timing)

    waited = ProducerTiming(True, 0.01, 1.05, 1.012, 3)
    note = where_the_time_went(one(1.059, waited))
    assert note.startswith("the record took 1,059 ms: 1,012 ms waiting for the new producer's id")
    assert "then 47 ms to the broker's acknowledgement" in note
    warm = ProducerTiming(True, 2.0, 0.1, 0.0, 3)
    note = where_the_time_went(one(0.9, warm))
    assert note.startswith("the record took 900 ms from send to the broker's acknowledgement")
    assert "already had its id" in note
    assert where_the_time_went(one(0.05, waited)) == ""  # quick: nothing to say
    many = ProduceResult("t", "all", 2, (Delivery(0, None, 0, 1, 1.0),) * 2, 1.0)
    assert where_the_time_went(many) == ""  # a single record only


def test_a_producer_in_use_is_not_closed_under_its_send() -> None:
    """Acks changed while a send still goes through the kept producer: the session makes a new
    one for the next send and closes the old one only once that send is over (a close would
    purge the send's records in flight)."""
    from kconsole.cluster.produce.send import WarmProducer
    from kconsole.commands import Commands
    from kconsole.commands.produce import ProduceSession
    from kconsole.config import Settings
    from tests.waiting import wait_until

    # No broker there: the producers are made (librdkafka connects in the background) and
    # nothing is ever sent.
    commands = Commands(None, settings=Settings(bootstrap="127.0.0.1:1"), audit=None)
    session = ProduceSession(commands, WarmProducer)
    old = session.producer("all", None, DEFAULT_MAX_MESSAGE_BYTES)
    try:
        with old.lock:  # as a send holds it
            new = session.producer("1", None, DEFAULT_MAX_MESSAGE_BYTES)
            assert new is not old and old.closed is None
        wait_until(lambda: old.closed is not None, 10, "the old producer closed after the send")
        assert old.closed is not None and old.closed.closed and not old.closed.purged
    finally:
        session.close(1.0)
        old.close(1.0)


def test_a_timed_out_record_is_unknown_not_failed() -> None:
    """librdkafka times a record out whether or not it was sent; one sent before its timeout may
    be in the log. So _MSG_TIMED_OUT is an unknown outcome; a broker's refusal stays failed."""
    from confluent_kafka import KafkaError

    from kconsole.cluster.produce.send import _failure

    timed_out = _failure(3, b"k", 1, 30.0, KafkaError(KafkaError._MSG_TIMED_OUT, "timed out"))
    assert timed_out.error == "UNKNOWN" and not timed_out.acked
    assert "may or may not be in the log" in timed_out.reason
    refused = _failure(4, b"k", 1, 0.1, KafkaError(KafkaError.NOT_ENOUGH_REPLICAS, "few"))
    assert refused.error == "NOT_ENOUGH_REPLICAS"
