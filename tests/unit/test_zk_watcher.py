"""The ZooKeeper watcher's reading path: kconsole's kazoo handler answers as kazoo's own does, and
states that change during a burst join its reads (the controller and brokers are read at once)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from types import SimpleNamespace

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
    """Answers every state read at once with the partition's own number as its leader, and
    names broker 2 the controller."""

    def __init__(self, late: frozenset[str] = frozenset()) -> None:
        self.asked: list[str] = []
        self.late = late

    def get(self, path: str, watch: object = None) -> tuple[bytes, object]:
        assert path == "/controller", path
        return b'{"brokerid": 2}', SimpleNamespace(ctime=1_000)

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
    watcher._reader = zkmod.ZkReader(_FakeZk())  # type: ignore[arg-type]
    for path in (state("t", 0), state("t", 1), "/brokers/topics/u", state("t", 2)):
        watcher._queue.put(path)
    assert watcher._more_states() == [("t", 0), ("t", 1)]
    assert watcher._held == ["/brokers/topics/u"]  # read first on the next turn of the loop
    assert watcher._more_states() == []  # the burst ends; t/2 waits behind the topic
    assert watcher._queue.get_nowait() == state("t", 2)


def test_the_controller_is_read_and_shown_in_the_middle_of_a_burst(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A new controller (or a broker leaving) during a burst of 20 state reads is read after
    the first answer and published with the one state read so far, not after all 20."""
    monkeypatch.setattr(zkmod, "WINDOW", 4)
    published: list[tuple[int | None, int]] = []

    def on_change(st: zkmod.ZkState | None, _error: str) -> None:
        assert st is not None
        published.append((st.controller, len(st.states)))

    watcher = zkmod.ZkWatcher("localhost:1", on_change)
    zk = _FakeZk()
    watcher._reader = zkmod.ZkReader(zk)  # type: ignore[arg-type]
    watcher._queue.put("/controller")  # its watch fired after the burst began
    watcher._reader.read_paths([state("t", p) for p in range(20)], more=watcher._more_states)
    assert published == [(2, 1)]
    assert watcher._held == [] and len(watcher._reader.states) == 20


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


class _CountingZk(_FakeZk):
    """Also counts the reads in flight (asked, answer not taken yet)."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = 0
        self.most_in_flight = 0

    def get_async(self, path: str, watch: object = None) -> _Answer:
        answer = super().get_async(path, watch)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        real_get = answer.get

        def get(timeout: float | None = None) -> tuple[bytes, None]:
            self.in_flight -= 1
            return real_get(timeout)

        answer.get = get  # type: ignore[method-assign]
        return answer


def test_states_on_screen_are_read_first_also_when_they_join_mid_burst(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A burst asks the rows on screen first; one that changes while 20 others wait is asked
    before them (only WINDOW reads are in flight, so it does not queue behind all of them)."""
    monkeypatch.setattr(zkmod, "WINDOW", 4)
    zk = _CountingZk()
    reader = zkmod.ZkReader(zk)  # type: ignore[arg-type]
    burst = [state("t", p) for p in range(20)]
    on_screen = {("t", 15), ("t", 3), ("s", 0)}
    later = [[("u", 1), ("s", 0)]]
    reader.read_paths(
        burst, more=lambda: later.pop(0) if later else [], first=on_screen.__contains__
    )
    asked = zk.asked
    assert asked[:2] == [state("t", 3), state("t", 15)]  # on screen, in the burst's order
    # s/0 joined after the first answer: asked right after the window's first reads.
    assert asked.index(state("s", 0)) == 4
    assert asked[-1] == state("u", 1)  # not on screen: after every state that was waiting
    assert sorted(asked) == sorted([*burst, state("s", 0), state("u", 1)])
    assert zk.most_in_flight == 4


def test_the_group_poll_waits_for_a_burst_to_be_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """wait_quiet returns only once no batch is being read (and QUIET_S has passed since one
    was), at its timeout, or when the watcher stops."""
    import threading

    monkeypatch.setattr(zkmod, "QUIET_S", 0.0)
    watcher = zkmod.ZkWatcher("localhost:1", lambda _state, _error: None)
    watcher.wait_quiet(10)  # nothing being read: at once
    watcher._idle.clear()  # a burst is being read
    returned = threading.Event()
    waiter = threading.Thread(target=lambda: (watcher.wait_quiet(30), returned.set()))
    waiter.start()
    waiter.join(0.2)
    assert not returned.is_set()  # still reading: the poll waits
    watcher._idle.set()
    waiter.join(5)
    assert returned.is_set()
    watcher._idle.clear()
    watcher.wait_quiet(0.01)  # the timeout bounds the wait
    waiter = threading.Thread(target=lambda: watcher.wait_quiet(30))
    waiter.start()
    watcher.stop()  # never started: stop only releases the waiter
    waiter.join(5)
    assert not waiter.is_alive()


class _ElectionZk:
    """/controller and /controller_epoch as ZooKeeper holds them after an election: both
    written by one transaction (zxid 40); the epoch was 1 at zxid 10 before it."""

    def __init__(self) -> None:
        self.epoch = (b"1", SimpleNamespace(mzxid=10))
        self.asked: list[str] = []

    def get(self, path: str, watch: object = None) -> tuple[bytes, object]:
        self.asked.append(path)
        if path == "/controller_epoch":
            return self.epoch
        assert path == "/controller", path
        return b'{"brokerid": 3}', SimpleNamespace(ctime=2_000, czxid=40)


def test_a_new_controller_is_never_shown_with_its_predecessors_epoch() -> None:
    """Seen on a compose cluster: the /controller watch was read first and the console said
    "controller is broker 3, epoch 1 (was broker 1)" before "epoch 2". A /controller newer
    than the epoch read makes the reader read the epoch again at once."""
    zk = _ElectionZk()
    reader = zkmod.ZkReader(zk)  # type: ignore[arg-type]
    reader.read_controller_epoch()  # the old epoch, read before the election
    assert reader.controller_epoch == 1
    zk.epoch = (b"2", SimpleNamespace(mzxid=40))  # the election's transaction
    reader.read_path("/controller")  # its watch fired first
    assert (reader.controller, reader.controller_epoch) == (3, 2)
    assert zk.asked == ["/controller_epoch", "/controller", "/controller_epoch"]
    zk.asked.clear()
    reader.read_path("/controller")  # nothing newer: no extra read
    assert zk.asked == ["/controller"]
