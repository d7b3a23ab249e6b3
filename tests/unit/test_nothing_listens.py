"""A fresh client whose every bootstrap address refuses fails at once (nothing_listens), and
`kconsole describe` (ClusterObserver.read_once) says why for each source instead of waiting
out each client's timeout; an address that accepts, or one this cannot try, changes nothing.
Nothing answering is said as the cluster not reached (exit 2), with how to start the local
cluster when it is that one."""

from __future__ import annotations

import dataclasses
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from kconsole.cli import main
from kconsole.cluster.kraft.quorum import QuorumReader
from kconsole.cluster.kraft.spec import KRaftSpec
from kconsole.cluster.local.spec import LocalClusterSpec
from kconsole.cluster.security.clients import nothing_listens
from kconsole.commands.local_hint import start_hint
from kconsole.config import Settings
from kconsole.errors import ClusterError
from kconsole.models import SourceName
from kconsole.observer.threads import ClusterObserver
from tests.integration.conftest import pick_ports


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


@pytest.mark.parametrize("mode", ["zookeeper", "kraft"])
def test_describe_says_the_local_cluster_is_not_running_and_how_to_start_it(
    tmp_path: Path, mode: str
) -> None:
    """Nothing answers at the local cluster's addresses and none of its processes runs (a
    ZooKeeper-mode one: its ZooKeeper does not answer either; a KRaft one: no quorum):
    `describe` says the cluster cannot be reached and how to start it, says the controller
    is unknown (not "none"), and exits 2 -- at once, not after the clients' timeouts."""
    zk_port, base_port = pick_ports(3)
    spec: LocalClusterSpec | KRaftSpec
    if mode == "kraft":
        spec = KRaftSpec(base_port=base_port, controller_base_port=base_port + 10)
        zookeeper = ""
    else:
        spec = LocalClusterSpec(zk_port=zk_port, base_port=base_port)
        zookeeper = spec.zk_connect
    state_dir = tmp_path / "local"
    state_dir.mkdir()
    (state_dir / "cluster.json").write_text(spec.to_json())
    env = {"KCONSOLE_CLUSTER_DIR": str(state_dir), "KCONSOLE_STATE_DIR": str(tmp_path / "home")}
    flags = ["--bootstrap", spec.bootstrap, "--zookeeper", zookeeper, "--backend", "local"]
    t0 = time.monotonic()
    res = CliRunner().invoke(main, [*flags, "describe"], env=env)
    took = time.monotonic() - t0
    assert res.exit_code == 2, res.output
    assert took < 5.0, took
    hint = f"the local cluster in {state_dir} is not running: start it with `kconsole cluster up`"
    lines = res.stdout.splitlines()
    assert lines[2].startswith("cannot reach the cluster (never answered): nothing listens at")
    assert lines[2].endswith(hint)
    assert "controller: unknown (cannot reach the cluster)" in res.stdout
    assert "NONE" not in res.stdout and "no active controller" not in res.stdout
    assert (
        f"error: cannot reach the cluster (never answered): nothing listens at {spec.bootstrap}"
        in (res.stderr)
    )
    # --json: the same, for scripts (the brokers' processes are stopped: down, by the backend)
    res = CliRunner().invoke(main, [*flags, "describe", "--json"], env=env)
    assert res.exit_code == 2, res.output
    snap = json.loads(res.stdout)
    assert snap["start_hint"] == hint
    assert {b["state"] for b in snap["brokers"]} == {"down"}
    assert snap["controller"]["id"] is None


def test_the_default_addresses_with_no_local_cluster_made_say_cluster_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KCONSOLE_STATE_DIR", str(tmp_path))  # the default cluster dir is here
    settings = Settings()
    assert settings.is_default_local
    hint = start_hint(settings)
    assert hint.startswith("no local cluster runs here: start one with `kconsole cluster up`")
    assert "`make console`" in hint
    assert start_hint(dataclasses.replace(settings, bootstrap="kafka.example:9092")) == ""


def test_a_live_poll_says_nothing_listens_and_asks_for_the_start_hint() -> None:
    """The console's Admin API poll (not read_once): a failure while every bootstrap address
    refuses is said as "nothing listens", not as the client's transport failure, and the
    command layer's start hint is asked for and carried in the snapshot."""
    dead = f"127.0.0.1:{_closed_port()}"
    observer = ClusterObserver(
        Settings(bootstrap=dead, zookeeper=""), start_hint=lambda: "start it with `x up`"
    )
    reader = observer._reader()
    try:
        observer._poll_admin(reader, publish=False)
    finally:
        reader.close()
    health = observer.builder.health[SourceName.ADMIN]
    assert not health.ok and not health.refused
    assert health.error == f"nothing listens at {dead} (connection refused)"
    assert observer._publish(publish=False).start_hint == "start it with `x up`"
