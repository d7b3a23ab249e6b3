"""Readiness probes of the local cluster: ZooKeeper clients and reads, and port checks.

ZooKeeper is what the local cluster asks whether brokers registered, who the controller is and
whether every replica is in sync; the port checks explain a port that is already taken.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import TypeVar

import psutil

from kconsole.cluster.errors import ClusterError, PortInUse

T = TypeVar("T")


# --------------------------------------------------------------------------------------------
# ZooKeeper
# --------------------------------------------------------------------------------------------


@contextmanager
def zk_client(zk_connect: str, timeout: float = 5.0) -> Iterator[object]:
    """A short-lived kazoo client (connection errors raise ClusterError)."""
    from kazoo.client import KazooClient
    from kazoo.retry import KazooRetry

    # The session outlives a busy moment (ZooKeeper allows 4-40 s); only the wait for the
    # first connection is `timeout`. A dropped connection is re-established by kazoo.
    client = KazooClient(
        hosts=zk_connect,
        timeout=15.0,
        connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0),
    )
    # Not client.start(timeout): on a time-out it stops the client, which waits for the
    # connection attempt to give up (the 15 s session timeout), so a ZooKeeper port that
    # accepts and never answers made a 3 s probe take 15 s. The client is closed aside instead.
    try:
        connected = client.start_async().wait(timeout) and client.connected
    except Exception as exc:
        _close_aside(client)
        raise ClusterError(f"ZooKeeper at {zk_connect} is unreachable: {exc}") from exc
    if not connected:
        _close_aside(client)
        raise ClusterError(
            f"ZooKeeper at {zk_connect} is unreachable: no answer within {timeout:g} s"
        )
    try:
        yield client
    finally:
        client.stop()
        client.close()


def _close_aside(client: object) -> None:
    """Stop and close a kazoo client that never connected, on a daemon thread of its own."""

    def close() -> None:
        with suppress(Exception):
            client.stop()  # type: ignore[attr-defined]
            client.close()  # type: ignore[attr-defined]

    threading.Thread(target=close, name="zk-close", daemon=True).start()


@contextmanager
def zk_client_until(zk_connect: str, deadline: float, attempt_s: float = 5.0) -> Iterator[object]:
    """A kazoo client, connecting in short attempts until `deadline`.

    One long attempt is fragile: kazoo uses the session timeout as its connect and read
    timeout, so a single handshake stalled by a ZooKeeper still starting up would use up
    the whole wait without ever retrying.
    """
    while True:
        try:
            ctx = zk_client(zk_connect, attempt_s)
            client = ctx.__enter__()
            break
        except ClusterError:
            if time.monotonic() + 0.5 > deadline:
                raise
            time.sleep(0.5)
    try:
        yield client
    finally:
        ctx.__exit__(None, None, None)


def poll_zk(read: Callable[[], T], deadline: float) -> T | None:
    """`read()`, or None after a transient ZooKeeper error (the caller polls again);
    the error is raised once `deadline` has passed."""
    from kazoo.exceptions import ConnectionLoss, OperationTimeoutError, SessionExpiredError

    try:
        return read()
    except (ConnectionLoss, OperationTimeoutError, SessionExpiredError):
        if time.monotonic() > deadline:
            raise
        time.sleep(0.2)
        return None


def read_registered(client: object) -> set[int]:
    """The broker ids registered in ZooKeeper (/brokers/ids)."""
    ids = client.get_children("/brokers/ids") if client.exists("/brokers/ids") else []  # type: ignore[attr-defined]
    return {int(i) for i in ids}


@dataclass(frozen=True)
class Registration:
    """A broker's /brokers/ids/<id> znode: who created it and when."""

    broker_id: int
    owner: int  # ephemeralOwner: the id of the ZooKeeper session that created it
    ctime_ms: int  # creation time, ZooKeeper's clock (epoch ms)


def read_registrations(client: object) -> dict[int, Registration]:
    """Every broker registration in ZooKeeper, by broker id."""
    out: dict[int, Registration] = {}
    for bid in read_registered(client):
        stat = client.exists(f"/brokers/ids/{bid}")  # type: ignore[attr-defined]
        if stat is not None:  # None: it went away since the listing
            out[bid] = Registration(bid, int(stat.ephemeralOwner), int(stat.ctime))
    return out


def fresh_registrations(
    registrations: Mapping[int, Registration], stale: Mapping[int, int]
) -> set[int]:
    """The broker ids registered by a session other than their `stale` one.

    A SIGKILLed broker's registration stays until ZooKeeper expires its session; it is the
    dead process's, not a sign that a broker started since then is up. `stale` maps a broker id
    to the session that owned its registration before the start (absent: it had none)."""
    return {bid for bid, reg in registrations.items() if stale.get(bid) != reg.owner}


def read_controller(client: object) -> int | None:
    """The controller's broker id (/controller), or None when there is none."""
    if not client.exists("/controller"):  # type: ignore[attr-defined]
        return None
    data, _ = client.get("/controller")  # type: ignore[attr-defined]
    try:
        return int(json.loads(data)["brokerid"])
    except (ValueError, KeyError, TypeError):
        return None


def partitions_fully_in_sync(zk: object, topic: str) -> bool:
    """True when every partition of `topic` has a leader and ISR == replicas (from ZooKeeper)."""
    path = f"/brokers/topics/{topic}"
    if not zk.exists(path):  # type: ignore[attr-defined]
        return False
    data, _ = zk.get(path)  # type: ignore[attr-defined]
    assignment = json.loads(data).get("partitions", {})
    if not assignment:
        return False
    for p, replicas in assignment.items():
        state_path = f"{path}/partitions/{p}/state"
        if not zk.exists(state_path):  # type: ignore[attr-defined]
            return False
        sdata, _ = zk.get(state_path)  # type: ignore[attr-defined]
        state = json.loads(sdata)
        if state.get("leader", -1) < 0 or sorted(state.get("isr", [])) != sorted(replicas):
            return False
    return True


def zk_ruok(host: str, port: int, timeout: float = 1.0) -> bool:
    """True when ZooKeeper answers the `ruok` four-letter word with `imok`."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(b"ruok")
            return s.recv(16) == b"imok"
    except OSError:
        return False


# --------------------------------------------------------------------------------------------
# Ports and processes
# --------------------------------------------------------------------------------------------


def check_port_free(host: str, port: int, name: str) -> None:
    """Raise PortInUse if something already listens on host:port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            owner = port_owner(port)
            by = f" by {owner}" if owner else ""
            raise PortInUse(
                f"port {port} on {host}, needed by {name}, is already in use{by} ({exc.strerror}). "
                "Stop that process, or give the cluster other ports "
                "(--zk-port / --base-port)."
            ) from exc


def port_owner(port: int) -> str:
    """Best effort: 'pid 123 (java)' listening on `port`, or '' if it cannot be told."""
    try:
        for conn in psutil.net_connections(kind="tcp"):
            listening = conn.status == psutil.CONN_LISTEN
            if conn.laddr and conn.laddr.port == port and listening and conn.pid:
                try:
                    return f"pid {conn.pid} ({psutil.Process(conn.pid).name()})"
                except psutil.Error:
                    return f"pid {conn.pid}"
    except (psutil.Error, OSError):
        pass
    return ""


def wait_for(cond: Callable[[], bool], timeout: float) -> bool:
    """Poll `cond` every 20 ms until it is true or `timeout` seconds passed; its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()
