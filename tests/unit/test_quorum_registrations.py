"""QuorumReader.read_registrations: DescribeCluster (with fenced brokers) asked of a broker of
kconsole's choosing, never a paused or fenced one it was told to avoid: left to pick,
kafka-python asked a paused broker and waited out its timeout (a fencing reached the screen
8 s late in the KRaft bench)."""

from __future__ import annotations

from typing import Any

import pytest

from kconsole.cluster.kraft import quorum as quorum_mod
from kconsole.cluster.kraft.quorum import QuorumReader
from kconsole.cluster.security import kafka_python
from kconsole.errors import ClusterError


def _answer(fenced: tuple[int, ...] = ()) -> dict[str, Any]:
    return {
        "cluster_id": "c1",
        "controller_id": 1,
        "brokers": [
            {"broker_id": b, "host": f"broker-{b}", "port": 9091 + b, "rack": None,
             "is_fenced": b in fenced}
            for b in (1, 2, 3)
        ],
    }  # fmt: skip


class _Brokers:
    def __init__(self, monkeypatch: pytest.MonkeyPatch, reader: QuorumReader) -> None:
        self.asked: list[int | None] = []  # None: kafka-python's own pick
        self.fail: dict[int, BaseException] = {}
        self.answer = _answer()
        monkeypatch.setattr(reader, "_admin", lambda: object())
        monkeypatch.setattr(reader, "_call", self.call)
        monkeypatch.setattr(kafka_python, "describe_cluster_at", self.at)

    def call(self, fn: str, *args: Any) -> Any:
        assert fn == "describe_cluster"
        self.asked.append(None)
        return self.answer

    def at(self, _admin: Any, node: int, timeout_ms: int) -> dict[str, Any]:
        assert timeout_ms == int(quorum_mod.REGISTRATIONS_TIMEOUT_S * 1000)
        self.asked.append(node)
        if node in self.fail:
            raise self.fail[node]
        return self.answer


def test_a_paused_or_fenced_broker_is_not_asked_and_one_that_fails_is_left_for_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reader = QuorumReader({"bootstrap.servers": "127.0.0.1:9"})
    brokers = _Brokers(monkeypatch, reader)
    assert set(reader.read_registrations()) == {1, 2, 3}  # nobody known: kafka-python picks
    reader.read_registrations()
    reader.read_registrations(avoid={1})  # paused
    assert brokers.asked == [None, 1, 2]
    import kafka.errors

    brokers.fail[2] = kafka.errors.KafkaTimeoutError("timed out")
    with pytest.raises(ClusterError, match="broker 2"):
        reader.read_registrations(avoid={1})
    brokers.answer = _answer(fenced=(1,))
    regs = reader.read_registrations(avoid={1})
    assert brokers.asked[-1] == 3 and regs[1].fenced and not regs[3].fenced


def test_a_cluster_without_describe_cluster_v2_is_asked_as_kafka_python_asks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import kafka.errors

    reader = QuorumReader({"bootstrap.servers": "127.0.0.1:9"})
    brokers = _Brokers(monkeypatch, reader)
    reader.read_registrations()
    brokers.fail = dict.fromkeys((1, 2, 3), kafka.errors.IncompatibleBrokerVersion("no v2"))
    assert set(reader.read_registrations()) == {1, 2, 3}
    reader.read_registrations()
    assert brokers.asked == [None, 1, None, None]  # tried once, then never again


def test_features_are_asked_of_the_broker_the_registrations_came_from(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The features read, every 30 s, went to kafka-python's pick: a paused broker, the
    quorum poll then waiting out a 3 s timeout (fencing held back from the screen). Now the
    broker that answered the registrations, never one to avoid, within the same 1 s."""
    import kafka.errors

    reader = QuorumReader({"bootstrap.servers": "127.0.0.1:9"})
    brokers = _Brokers(monkeypatch, reader)
    asked: list[int | None] = []
    answer = {"metadata.version": {"supported": (1, 27), "finalized": (27, 27)}}

    def features_at(_admin: Any, node: int, timeout_ms: int) -> dict[str, Any]:
        assert timeout_ms == int(quorum_mod.REGISTRATIONS_TIMEOUT_S * 1000)
        asked.append(node)
        if node == 1:
            raise kafka.errors.KafkaTimeoutError("timed out")
        return answer

    def call(fn: str, *args: Any) -> Any:
        if fn == "describe_features":
            asked.append(None)
            return answer
        return brokers.call(fn, *args)

    monkeypatch.setattr(reader, "_call", call)
    monkeypatch.setattr(kafka_python, "describe_features_at", features_at)
    assert reader.read_features(1.0).metadata_version_level == 27  # none known: kafka-python's
    reader.read_registrations()
    reader.read_registrations(avoid={1})  # broker 1 paused: broker 2 answered
    assert reader.read_features(2.0, avoid={1}).read_at == 2.0
    with pytest.raises(ClusterError, match="broker 1"):  # 2 paused now: the lowest other
        reader.read_features(3.0, avoid={2})
    assert asked == [None, 2, 1]
