"""One real local KRaft cluster per test run (dedicated: the session fixture `kraft` in
conftest.py) or per module (combined), on free ports of its own, always torn down by
the pids it recorded (a reaper process does it if pytest itself dies)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from kconsole.cluster import reaper
from kconsole.cluster.kraft.cluster import KRaftCluster, KRaftUpTimes
from kconsole.cluster.kraft.spec import KRaftSpec
from kconsole.cluster.values import ProcState
from tests.integration.conftest import _free, port_offsets
from tests.waiting import wait_until


def pick_kraft_ports(brokers: int, controllers: int) -> tuple[int, int]:
    """A broker base port and a controller base port, all currently free, below the ephemeral
    range and away from the ZooKeeper-mode test cluster's (24181+, 29092+)."""
    for offset in port_offsets():
        base, ctl = 25092 + offset, 25192 + offset
        ports = [base + i for i in range(brokers)] + [ctl + i for i in range(controllers)]
        if all(_free(p) for p in ports):
            return base, ctl
    raise RuntimeError("no free block of ports for the KRaft test cluster")


def start_kraft_reaper(state_dir: Path) -> subprocess.Popen[bytes]:
    """Stops the KRaft cluster in `state_dir` (by the pids it recorded) if this pytest process
    dies before its fixture's teardown; terminate it after a normal down."""
    return reaper.start_reaper(state_dir)


def running_kraft(
    tmp_path_factory: pytest.TempPathFactory, *, combined: bool, **spec_fields: Any
) -> Iterator[tuple[KRaftCluster, KRaftUpTimes]]:
    """The body of a module-scoped fixture: the cluster up, then down whatever happened.
    `spec_fields`: the rest of its KRaftSpec (security=..., mtls=...)."""
    base, ctl = pick_kraft_ports(3, 3)
    spec = KRaftSpec(combined=combined, base_port=base, controller_base_port=ctl, **spec_fields)
    cluster = KRaftCluster(tmp_path_factory.mktemp("kraft"), spec)
    reaper = start_kraft_reaper(cluster.state_dir)
    pids: list[int] = []
    try:
        times = cluster.up(timeout=180)
        print(f"\nKRaft cluster up ({'combined' if combined else 'dedicated'}): {times}")
        yield cluster, times
    finally:
        pids = [n.pid for n in cluster.status().nodes if n.pid]
        cluster.down(timeout=20)
        reaper.terminate()
        reaper.wait(10)
    # Down leaves nothing: every node recorded stopped, and no pid it had still alive.
    left = [n.name for n in cluster.status().nodes if n.state is not ProcState.STOPPED]
    assert not left, f"KRaft nodes left running after down: {left}"
    alive = [p for p in pids if psutil.pid_exists(p)
             and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]  # fmt: skip
    assert not alive, f"KRaft processes still alive after down: {alive}"


def restore_kraft(cluster: KRaftCluster, timeout: float = 240.0) -> None:
    """Every node running (paused ones resumed, stopped ones started and verified back), a
    quorum leader with every controller a voter, and every broker registered and unfenced;
    fails the test after `timeout` seconds."""
    for node in cluster.spec.nodes():  # controllers first: a broker needs a quorum to unfence
        state = cluster.process(node.name).state()
        if state is ProcState.PAUSED:
            cluster.resume_node(node.name)
        elif state is ProcState.STOPPED:
            cluster.start_node(node.name, timeout=timeout)
    wait_until(
        lambda: all(s is ProcState.RUNNING for s in cluster.node_states().values()),
        timeout,
        "every KRaft node running",
    )

    def quorum_whole() -> bool:
        q = cluster.quorum(timeout_s=2.0)
        return q is not None and q.voter_ids == sorted(cluster.spec.controller_ids)

    wait_until(quorum_whole, timeout, "a quorum leader and every controller a voter")
    want = {b: False for b in cluster.spec.broker_ids}
    wait_until(lambda: cluster.broker_fencing() == want, timeout, "every broker unfenced")


def metadata_quorum_tool(cluster: KRaftCluster, *args: str, timeout: float = 120) -> str:
    """Kafka's own `kafka-metadata-quorum --bootstrap-controller ... ARGS`, run from the jars
    the cluster runs on (MetadataQuorumCommand in kafka-tools)."""
    from kconsole.cluster import jars
    from tests.integration.kafka_tools import TOOL_JVM

    lib = jars.ensure_kafka_jars(cluster.spec.kafka_version)
    argv = [
        jars.java_executable(),
        "-Xmx128m",
        *TOOL_JVM[1:],  # kafka_tools: a short-lived JVM's quick flags
        "-cp",
        f"{lib}{os.sep}*",
        "org.apache.kafka.tools.MetadataQuorumCommand",
        "--bootstrap-controller",
        cluster.spec.quorum_bootstrap,
        *args,
    ]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def quorum_whole(cluster: KRaftCluster) -> bool:
    """A leader, every controller a voter, and every voter fetching (a voter the leader has
    not heard from since it was elected reports log end -1)."""
    q = cluster.quorum(timeout_s=1.0)
    return (
        q is not None
        and q.voter_ids == sorted(cluster.spec.controller_ids)
        and all(v.log_end_offset >= 0 for v in q.voters)
    )


def restart_node(cluster: KRaftCluster, name: str, timeout: float = 180) -> None:
    """Start one stopped node of the cluster again (KRaftCluster's own start of a node list)
    and wait until the quorum is whole and every broker unfenced."""
    from kconsole.cluster import jars
    from tests.waiting import wait_until

    proc = cluster.process(name)
    wait_until(lambda: proc.state() is ProcState.STOPPED, 30, f"{name} to be gone")
    cluster._start([cluster.spec.node(name)], jars.ensure_kafka_jars(cluster.spec.kafka_version))
    wait_until(lambda: quorum_whole(cluster), timeout, "the quorum whole again", interval=0.5)
    wait_until(
        lambda: not any(cluster.broker_fencing().values()),
        timeout,
        "every broker unfenced",
        interval=0.5,
    )
