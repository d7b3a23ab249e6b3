"""A fresh client whose every bootstrap address refuses fails at once (nothing_listens), and
`kconsole describe` (ClusterObserver.read_once) says why for each source instead of waiting
out each client's timeout; an address that accepts, or one this cannot try, changes nothing."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from kconsole.cluster.clients import nothing_listens
from kconsole.cluster.quorum import QuorumReader
from kconsole.config import Settings
from kconsole.errors import ClusterError
from kconsole.models import SourceName
from kconsole.observer.threads import ClusterObserver


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again: nothing listens there


@pytest.fixture
def listening() -> Iterator[int]:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    try:
        yield int(s.getsockname()[1])
    finally:
        s.close()


def test_every_address_refusing_is_named(listening: int) -> None:
    dead = f"127.0.0.1:{_closed_port()},127.0.0.1:{_closed_port()}"
    why = nothing_listens(dead)
    assert why is not None and dead in why and "refused" in why
    # One address that accepts is enough for the client to try as before.
    assert nothing_listens(f"{dead},127.0.0.1:{listening}") is None


@pytest.mark.parametrize("servers", ["", "localhost", "PLAINTEXT://:", "127.0.0.1:x"])
def test_what_it_cannot_read_is_left_to_the_client(servers: str) -> None:
    assert nothing_listens(servers) is None


def test_a_fresh_quorum_client_fails_at_once_when_every_broker_refuses() -> None:
    reader = QuorumReader({"bootstrap.servers": f"127.0.0.1:{_closed_port()}"})
    t0 = time.monotonic()
    with pytest.raises(ClusterError, match="nothing listens"):
        reader.read_quorum(1.0)
    assert time.monotonic() - t0 < 2.0  # not kafka-python's 3 s bootstrap time-out


def test_describe_with_nothing_listening_says_why_without_waiting() -> None:
    dead = f"127.0.0.1:{_closed_port()}"
    observer = ClusterObserver(Settings(bootstrap=dead, zookeeper=dead))
    t0 = time.monotonic()
    snap = observer.read_once()
    assert time.monotonic() - t0 < 3.0  # the clients' timeouts were 3 + 5 + 5 + 5 s
    health = {s.name: s for s in snap.sources}
    for name in (SourceName.ZOOKEEPER, SourceName.ADMIN, SourceName.GROUPS):
        assert not health[name].ok
        assert "nothing listens" in (health[name].error or ""), health[name]
