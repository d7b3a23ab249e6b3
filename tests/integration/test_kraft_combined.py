"""A real local KRaft cluster of 3 combined nodes (process.roles=broker,controller), once for
this module: the quorum, the brokers and test-topic, then down."""

from __future__ import annotations

import time
from collections.abc import Iterator

import psutil
import pytest

from kconsole.cluster import kraft_probes
from kconsole.cluster.kraft import KRaftCluster, KRaftUpTimes
from kconsole.cluster.procs import ProcState
from kconsole.cluster.settings import TEST_TOPIC
from tests.integration.kraft_support import running_kraft


@pytest.fixture(scope="module")
def combined(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[KRaftCluster, KRaftUpTimes]]:
    yield from running_kraft(tmp_path_factory, combined=True)


def test_combined_nodes_are_voters_and_unfenced_brokers(
    combined: tuple[KRaftCluster, KRaftUpTimes],
) -> None:
    cluster, _ = combined
    quorum = cluster.quorum()
    assert quorum is not None
    assert quorum.voter_ids == [1, 2, 3]
    assert quorum.leader_id in (1, 2, 3)
    assert cluster.broker_fencing() == {1: False, 2: False, 3: False}
    with kraft_probes.broker_admin(cluster.spec.bootstrap) as admin:
        parts = kraft_probes.topic_partitions(admin, TEST_TOPIC)
    assert parts is not None and len(parts) == 4
    assert all(sorted(p.isr) == [1, 2, 3] for p in parts)


def test_a_combined_node_is_stopped_and_started_as_one(
    combined: tuple[KRaftCluster, KRaftUpTimes],
) -> None:
    """`stop N` on a combined node stops its broker and its controller (the quorum leader
    here); `start controller:N` names the same node, and returns once the new process is both
    unfenced and back in the quorum."""
    from click.testing import CliRunner

    from kconsole.cli import main as cli
    from tests.waiting import wait_until

    cluster, _ = combined
    quorum = cluster.quorum()
    assert quorum is not None
    leader = quorum.leader_id
    old_pid = cluster.process(f"node-{leader}").pid
    base = ["--bootstrap", cluster.spec.bootstrap, "cluster", "--state-dir", str(cluster.state_dir)]
    res = CliRunner().invoke(cli, [*base, "stop", str(leader), "--yes"])
    assert res.exit_code == 0, res.output
    assert f"node {leader} (broker+controller) stopped" in res.output
    assert cluster.process(f"node-{leader}").state() is ProcState.STOPPED

    def new_leader() -> bool:
        q = cluster.quorum(timeout_s=1.0)
        return q is not None and q.leader_id != leader

    wait_until(new_leader, 60, "another node to lead the quorum")
    res = CliRunner().invoke(cli, [*base, "start", f"controller:{leader}"])
    assert res.exit_code == 0, res.output
    assert "registered and unfenced" in res.output and "back in the quorum" in res.output
    assert cluster.process(f"node-{leader}").pid not in (None, old_pid)
    assert cluster.broker_fencing()[leader] is False


def test_combined_down_stops_every_node_on_sigterm(
    combined: tuple[KRaftCluster, KRaftUpTimes],
) -> None:
    cluster, _ = combined
    pids = [n.pid for n in cluster.status().nodes]
    t0 = time.monotonic()
    assert sorted(cluster.down(timeout=20)) == ["node-1", "node-2", "node-3"]
    took = time.monotonic() - t0
    assert all(n.state is ProcState.STOPPED for n in cluster.status().nodes)
    alive = [p for p in pids if p is not None and psutil.pid_exists(p)
             and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]  # fmt: skip
    assert not alive
    # Stopped together they exit on SIGTERM; one by one the last node lost its majority and
    # waited for the 20 s kill.
    assert took < 15, f"down took {took:.1f} s"
