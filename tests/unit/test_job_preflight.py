"""The job's preflight says at once that nothing listens at the bootstrap addresses (every one
refused the connection), instead of letting its client retry them for the whole timeout; any
other answer leaves the check to the client, as before."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "jobs"))

from _kconsole_jobs.preflight import _all_refused  # noqa: E402


@pytest.fixture
def listening() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_every_address_refused_is_said() -> None:
    why = _all_refused(f"127.0.0.1:{closed_port()},127.0.0.1:{closed_port()}")
    assert why == "connection refused at every bootstrap address (nothing listens there)"


def test_one_listening_address_leaves_it_to_the_client(listening: int) -> None:
    assert _all_refused(f"127.0.0.1:{closed_port()},127.0.0.1:{listening}") == ""


@pytest.mark.parametrize("servers", ["", "broker", "127.0.0.1:x", "no-such-host.invalid:9092"])
def test_what_cannot_be_tried_is_left_to_the_client(servers: str) -> None:
    assert _all_refused(servers) == ""
