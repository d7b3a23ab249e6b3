"""A real local KRaft cluster of 3 combined nodes (process.roles=broker,controller), brought up
once for this module the way a user does it — `kconsole cluster up --mode kraft --combined` —
then: the quorum, the brokers and test-topic, status, a node stopped and started as one, and
`down --purge` leaving no process and no state dir."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kconsole.cluster.kraft import probes as kraft_probes
from kconsole.cluster.kraft.cluster import KRaftCluster
from kconsole.cluster.settings import TEST_TOPIC
from kconsole.cluster.values import ProcState
from tests.integration.kraft_support import pick_kraft_ports, start_kraft_reaper
from tests.integration.test_kraft_cli import gone, kc
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def combined(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KRaftCluster]:
    base, ctl = pick_kraft_ports(3, 3)
    d = tmp_path_factory.mktemp("kraft-combined") / "state"
    reaper = start_kraft_reaper(d)
    try:
        t0 = time.monotonic()
        code, out = kc(d, "up", "--mode", "kraft", "--combined", "--base-port", str(base),
                       "--controller-port", str(ctl), "--timeout", "300")  # fmt: skip
        print(f"\ncluster up --mode kraft --combined took {time.monotonic() - t0:.1f} s")
        assert code == 0, out
        assert "KRaft mode, 3 combined broker+controller nodes" in out
        yield KRaftCluster(d)
    finally:
        if d.exists():
            KRaftCluster(d).down(timeout=20)
        reaper.terminate()
        reaper.wait(10)


def test_combined_nodes_are_voters_and_unfenced_brokers(combined: KRaftCluster) -> None:
    quorum = combined.quorum()
    assert quorum is not None
    assert quorum.voter_ids == [1, 2, 3]
    assert quorum.leader_id in (1, 2, 3)
    assert combined.broker_fencing() == {1: False, 2: False, 3: False}
    with kraft_probes.broker_admin(combined.spec.bootstrap) as admin:
        parts = kraft_probes.topic_partitions(admin, TEST_TOPIC)
    assert parts is not None and len(parts) == 4
    assert all(sorted(p.isr) == [1, 2, 3] for p in parts)


def test_status_and_up_again(combined: KRaftCluster) -> None:
    """status --json: combined, the leader one of the nodes, all running; `up` without
    --mode takes the cluster's own mode and has nothing to start."""
    code, out = kc(combined.state_dir, "status", "--json")
    assert code == 0, out
    data = json.loads(out)
    assert data["combined"] is True
    assert data["quorum"]["leader"] in (1, 2, 3)
    assert [n["state"] for n in data["nodes"]] == ["running"] * 3
    code, out = kc(combined.state_dir, "up")
    assert code == 0, out
    assert "nothing to start" in out


def test_a_combined_node_is_stopped_and_started_as_one(combined: KRaftCluster) -> None:
    """`stop N` on a combined node stops its broker and its controller (the quorum leader
    here); `start controller:N` names the same node, and returns once the new process is both
    unfenced and back in the quorum."""
    quorum = combined.quorum()
    assert quorum is not None
    leader = quorum.leader_id
    old_pid = combined.process(f"node-{leader}").pid
    code, out = kc(combined, "stop", str(leader), "--yes")
    assert code == 0, out
    assert f"node {leader} (broker+controller) stopped" in out
    assert combined.process(f"node-{leader}").state() is ProcState.STOPPED

    def new_leader() -> bool:
        q = combined.quorum(timeout_s=1.0)
        return q is not None and q.leader_id != leader

    wait_until(new_leader, 60, "another node to lead the quorum")
    code, out = kc(combined, "start", f"controller:{leader}")
    assert code == 0, out
    assert "registered and unfenced" in out and "back in the quorum" in out
    assert combined.process(f"node-{leader}").pid not in (None, old_pid)
    assert combined.broker_fencing()[leader] is False


def test_down_purge_stops_every_node_on_sigterm(combined: KRaftCluster) -> None:
    """Last: `down --purge` stops the three nodes together (one by one, the last would have
    lost its majority and waited for the 20 s kill) and removes the state dir."""
    d: Path = combined.state_dir
    pids = [n.pid for n in combined.status().nodes if n.pid]
    assert len(pids) == 3
    t0 = time.monotonic()
    code, out = kc(d, "down", "--purge", "--yes")
    took = time.monotonic() - t0
    assert code == 0, out
    assert "stopped node-1, node-2, node-3" in out
    assert all(gone(p) for p in pids)
    assert not d.exists()
    assert took < 15, f"down took {took:.1f} s"
