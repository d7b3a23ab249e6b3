"""The quorum poller's connections to a controller: kept open between polls (one TCP
connection, not 2.5 a second), dropped and made again when the controller closed it, and never
asked twice when it timed out (a paused leader must cost one timeout, not two)."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from kconsole.cluster.security import kafka_python


class FakeSocket:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """create_connection and the exchange, faked: `answers` is what each exchange does."""
    state: dict[str, Any] = {"made": [], "answers": [], "used": []}

    def connect(address: tuple[str, int], timeout: float) -> FakeSocket:
        sock = FakeSocket()
        state["made"].append(sock)
        return sock

    def exchange(sock: FakeSocket, host: str, port: int, request: Any, t: float) -> Any:
        state["used"].append(sock)
        answer = state["answers"].pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    monkeypatch.setattr(socket, "create_connection", connect)
    monkeypatch.setattr(kafka_python, "_exchange", exchange)
    kafka_python.close_connections()
    yield state
    kafka_python.close_connections()


def test_one_connection_serves_every_poll(wire: dict[str, Any]) -> None:
    wire["answers"] = [{"n": 1}, {"n": 2}, {"n": 3}]
    got = [kafka_python._ask_at("h", 1, None, 1.0)["n"] for _ in range(3)]
    assert got == [1, 2, 3]
    assert len(wire["made"]) == 1 and wire["used"] == wire["made"] * 3


def test_a_connection_the_node_closed_is_made_again(wire: dict[str, Any]) -> None:
    wire["answers"] = [{"n": 1}, ConnectionResetError(104, "reset"), {"n": 2}]
    kafka_python._ask_at("h", 1, None, 1.0)
    assert kafka_python._ask_at("h", 1, None, 1.0) == {"n": 2}
    first, second = wire["made"]
    assert first.closed and not second.closed


def test_a_timeout_raises_at_once_and_drops_the_connection(wire: dict[str, Any]) -> None:
    wire["answers"] = [{"n": 1}, TimeoutError("timed out"), {"n": 2}]
    kafka_python._ask_at("h", 1, None, 1.0)
    with pytest.raises(TimeoutError):
        kafka_python._ask_at("h", 1, None, 1.0)
    assert len(wire["made"]) == 1 and wire["made"][0].closed  # not asked twice
    assert kafka_python._ask_at("h", 1, None, 1.0) == {"n": 2}  # the next poll: a new one
    assert len(wire["made"]) == 2


def test_each_node_has_its_own_and_close_closes_them(wire: dict[str, Any]) -> None:
    wire["answers"] = [{"n": 1}, {"n": 2}]
    kafka_python._ask_at("h", 1, None, 1.0)
    kafka_python._ask_at("h", 2, None, 1.0)
    assert len(wire["made"]) == 2
    kafka_python.close_connections()
    assert all(s.closed for s in wire["made"])
