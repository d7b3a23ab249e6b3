"""The throw-away local cluster of the benchmarks that start their own.

    with temporary_cluster("kc-bench-x-") as (cluster, tmp):
        ...  # cluster: a running LocalCluster; tmp: its temporary dir, for the script's files

Ports are picked free below the kernel's ephemeral range (see LocalClusterSpec), in a block of
their own: away from the defaults (22181, 19092-) and from the integration tests' (24181-,
29092-), so a developer's cluster or a test run is never touched. The cluster is always taken
down, by the pids it recorded; a reaper process does it if the script dies first (a timeout's
SIGKILL from bench/suite.py, say).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kconsole.cluster.errors import PortInUse
from kconsole.cluster.local.cluster import (
    LocalCluster,
    LocalClusterSpec,
    check_port_free,
    ephemeral_port_range,
)
from kconsole.cluster.reaper import wait_for_exit
from kconsole.cluster.settings import HOST
from kconsole.cluster.values import ProcState

# The first block tried, then one every STEP above it: brokers take base, base + 1, ...
ZK_PORT, BASE_PORT, STEP, BLOCKS = 23181, 21092, 100, 10


def _free(port: int) -> bool:
    try:
        check_port_free(HOST, port, "")  # the check the cluster itself makes before it starts
    except PortInUse:
        return False
    return True


def free_ports(brokers: int, prefer: tuple[int, int] | None = None) -> tuple[int, int]:
    """A ZooKeeper port and a broker base port, all currently free: `prefer` if it is."""
    low, _high = ephemeral_port_range()
    blocks = [(ZK_PORT + i * STEP, BASE_PORT + i * STEP) for i in range(BLOCKS)]
    for zk, base in [prefer, *blocks] if prefer else blocks:
        ports = [zk, *range(base, base + brokers)]
        if zk not in ports[1:] and max(ports) < low and all(_free(p) for p in ports):
            return zk, base
    raise RuntimeError(f"no free block of ports below {low} for a {brokers}-broker cluster")


def to_stderr(msg: str) -> None:
    """A progress line, on stderr: stdout is the report (bench/suite.py keeps it)."""
    print(msg, file=sys.stderr, flush=True)


def describe_ports(spec: LocalClusterSpec) -> str:
    """'ZooKeeper 23181, brokers 21092-21094': what a report says of the cluster's ports."""
    ports = list(spec.broker_ports().values())
    return f"ZooKeeper {spec.zk_port}, brokers {ports[0]}-{ports[-1]}"


@contextmanager
def temporary_cluster(
    prefix: str,
    *,
    brokers: int = 3,
    prefer: tuple[int, int] | None = None,
    up_timeout: float = 180.0,
    down_timeout: float = 30.0,
    create_topic: bool = True,
    progress: Callable[[str], None] | None = None,
    security: str = "plaintext",
    mtls: bool = False,
) -> Iterator[tuple[LocalCluster, Path]]:
    """A running cluster in a new temporary dir (and that dir), taken down and removed after.
    `security` / `mtls` as LocalClusterSpec's (its secrets and certificates in that dir; a
    client of the cluster sets `cluster.client_config()`)."""
    say = progress or (lambda _msg: None)
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        zk_port, base_port = free_ports(brokers, prefer)
        spec = LocalClusterSpec(
            brokers=brokers, zk_port=zk_port, base_port=base_port, security=security, mtls=mtls
        )
        cluster = LocalCluster(Path(tmp) / "cluster", spec)
        reaper = _start_reaper(cluster, Path(tmp))
        try:
            t = time.monotonic()
            cluster.up(timeout=up_timeout, create_topic=create_topic, progress=progress)
            secured = "" if security == "plaintext" else f", {security}{' + mTLS' * mtls}"
            say(f"cluster up in {time.monotonic() - t:.1f} s ({describe_ports(spec)}{secured})")
            yield cluster, Path(tmp)
        finally:
            try:
                say(f"cluster down: {', '.join(cluster.down(timeout=down_timeout))}")
            finally:
                reaper.terminate()
                reaper.wait(10)
            left = [p.name for p in cluster.status().processes if p.state is not ProcState.STOPPED]
            if left:  # not raised: that would hide the error the body may be raising
                print(f"cluster processes left running after down: {left}", file=sys.stderr)


def _start_reaper(cluster: LocalCluster, tmp: Path) -> subprocess.Popen[bytes]:
    """This file run as a script: it waits for our process to end, then takes the cluster down."""
    return subprocess.Popen(
        [sys.executable, __file__, str(os.getpid()), str(cluster.state_dir), str(tmp)],
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # outlives a signal sent to our process group
    )


def _reap(pid: int, state_dir: Path, tmp: Path) -> None:
    """Once `pid` is gone, stop what it left running (by the recorded pids) and remove `tmp`."""
    wait_for_exit(pid)
    LocalCluster(state_dir).down(timeout=20)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    _reap(int(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
