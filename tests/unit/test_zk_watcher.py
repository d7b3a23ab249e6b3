"""The ZooKeeper watcher's reading path: kconsole's kazoo handler answers as kazoo's own does, and
states that change during a burst join its reads (the controller and brokers still first)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from kazoo.handlers.utils import selector_select

from kconsole.cluster import zk as zkmod


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def test_ready_sockets_are_the_ones_kazoo_would_report(pair: tuple[socket.socket, ...]) -> None:
    a, b = pair
    handler = zkmod._SelectHandler()
    assert handler.select([a, b], [], [], 0) == selector_select([a, b], [], [], 0) == ([], [], [])
    b.send(b"x")
    assert handler.select([a, b], [], [], 0) == selector_select([a, b], [], [], 0) == ([a], [], [])
    assert handler.select([a], [b], [], 0) == selector_select([a], [b], [], 0) == ([a], [b], [])


def test_a_descriptor_select_cannot_take_falls_back_to_kazoos_way(
    monkeypatch: pytest.MonkeyPatch, pair: tuple[socket.socket, ...]
) -> None:
    a, b = pair
    b.send(b"x")

    def too_high(*_args: object) -> None:
        raise ValueError("filedescriptor out of range in select()")

    monkeypatch.setattr(zkmod.select, "select", too_high)
    assert zkmod._SelectHandler().select([a], [], [], 0) == ([a], [], [])


def test_clients_get_the_handler() -> None:
    client = zkmod.zk_client("127.0.0.1:1")
    try:
        assert isinstance(client.handler, zkmod._SelectHandler)
    finally:
        client.close()


class _Answer:
    def __init__(self, data: bytes, late: bool = False) -> None:
        self.data = data
        self.late = late  # not in before a wait times out

    def wait(self, timeout: float | None = None) -> bool:
        if self.late and timeout is not None:
            time.sleep(timeout)
        return False

    def get(self, timeout: float | None = None) -> tuple[bytes, None]:
        return self.data, None


class _FakeZk:
    """Answers every state read at once with the partition's own number as its leader."""

    def __init__(self, late: frozenset[str] = frozenset()) -> None:
        self.asked: list[str] = []
        self.late = late

    def get_async(self, path: str, watch: object = None) -> _Answer:
        self.asked.append(path)
        return _Answer(b'{"leader": %d, "isr": [1]}' % int(path.split("/")[-2]), path in self.late)


def state(topic: str, p: int) -> str:
    return f"/brokers/topics/{topic}/partitions/{p}/state"


def test_states_that_change_during_a_burst_join_its_reads() -> None:
    zk = _FakeZk()
    reader = zkmod.ZkReader(zk)  # type: ignore[arg-type]
    later = [[("t", 7), ("u", 1)], [], [("t", 0)]]  # t/0 changed again meanwhile
    reader.read_paths([state("t", 0), state("t", 1)], more=lambda: later.pop(0) if later else [])
    assert zk.asked == [state("t", 0), state("t", 1), state("t", 7), state("u", 1), state("t", 0)]
    assert list(reader.states) == [("t", 0), ("t", 1), ("t", 7), ("u", 1)]
    assert reader.states[("t", 7)] == {"leader": 7, "isr": [1]}


def test_a_burst_takes_states_from_the_queue_until_another_path_comes() -> None:
    watcher = zkmod.ZkWatcher("localhost:1", lambda _state, _error: None)
    for path in (state("t", 0), state("t", 1), "/controller", state("t", 2)):
        watcher._queue.put(path)
    assert watcher._more_states() == [("t", 0), ("t", 1)]
    assert watcher._held == ["/controller"]  # read first on the next turn of the loop
    assert watcher._more_states() == []  # the burst ends; t/2 waits behind the controller
    assert watcher._queue.get_nowait() == state("t", 2)


def test_what_was_read_is_shown_while_zookeeper_is_slow_to_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(zkmod, "SLICE_S", 0.02)
    reader = zkmod.ZkReader(_FakeZk(late=frozenset({state("t", 1)})))  # type: ignore[arg-type]
    slices: list[list[tuple[str, int]]] = []
    reader.read_paths(
        [state("t", 0), state("t", 1)], on_slice=lambda: slices.append(list(reader.states))
    )
    assert slices == [[("t", 0)]]  # shown before the late answer came
    assert list(reader.states) == [("t", 0), ("t", 1)]
