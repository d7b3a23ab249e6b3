"""`kconsole cluster ...` on a real local KRaft cluster (Kafka 4.x): status, logs, and stop /
kill / pause / resume / start of brokers and controllers through the CLI (the door), on the
shared cluster of the run (`kraft_healthy` starts again whatever a test left stopped); the
console's broker control on it; and one `cluster up --mode kraft --combined` of its own."""

from __future__ import annotations

import json
import time
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from kconsole.cli import main as cli
from kconsole.cluster.kraft.cluster import KRaftCluster
from kconsole.cluster.values import BrokerAction, ProcState
from kconsole.commands import Commands, yes
from kconsole.commands.auditlog import default_path
from kconsole.config import Settings
from tests.waiting import wait_until

pytestmark = pytest.mark.integration


def kc(cluster: KRaftCluster | Path, *args: str) -> tuple[int, str]:
    """`kconsole cluster --state-dir DIR ARGS` with the cluster's own bootstrap."""
    state_dir = cluster if isinstance(cluster, Path) else cluster.state_dir
    bootstrap = [] if isinstance(cluster, Path) else ["--bootstrap", cluster.spec.bootstrap]
    res = CliRunner().invoke(cli, [*bootstrap, "cluster", "--state-dir", str(state_dir), *args])
    return res.exit_code, res.output


def last_audit(command: str, target: str) -> dict[str, object]:
    lines = [json.loads(line) for line in default_path().read_text().splitlines()]
    mine = [x for x in lines if x["command"] == command and x["target"] == target]
    assert mine, f"no audit line for {command} {target}"
    return mine[-1]


def gone(pid: int) -> bool:
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


class TestStatusAndLogs:
    def test_status_json_lists_every_node_and_the_quorum(self, kraft_healthy: KRaftCluster) -> None:
        """Every node with its roles, pid and place in the quorum; the leader is a controller."""
        code, out = kc(kraft_healthy, "status", "--json")
        assert code == 0, out
        data = json.loads(out)
        pids = {n.name: n.pid for n in kraft_healthy.status().nodes}
        assert [(n["name"], n["roles"], n["state"]) for n in data["nodes"]] == [
            *((f"controller-{i}", ["controller"], "running") for i in (1001, 1002, 1003)),
            *((f"broker-{i}", ["broker"], "running") for i in (1, 2, 3)),
        ]
        assert {n["name"]: n["pid"] for n in data["nodes"]} == pids
        assert data["quorum"]["leader"] in (1001, 1002, 1003)
        assert data["quorum"]["epoch"] > 0
        assert data["quorum"]["voters"] == [1001, 1002, 1003]
        places = {n["cli_name"]: n["quorum"] for n in data["nodes"]}
        assert places[f"controller:{data['quorum']['leader']}"] == "leader"
        assert [places[b] for b in ("1", "2", "3")] == ["observer"] * 3

    def test_logs_of_a_controller(self, kraft_healthy: KRaftCluster) -> None:
        path = kraft_healthy.proc_dir("controller-1002") / "server.log"
        code, out = kc(kraft_healthy, "logs", "controller:1002", "-n", "15")
        assert code == 0, out
        shown = out.splitlines()
        log = path.read_text(errors="replace").splitlines()
        assert len(shown) == 15
        assert any(log[i : i + 15] == shown for i in range(len(log) - 14))
        assert any("QuorumController id=1002" in line for line in log)


class TestNodeControl:
    """Each verb through the CLI; each outcome checked against the processes and the quorum."""

    def test_stop_and_start_the_quorum_leader(self, kraft_healthy: KRaftCluster) -> None:
        """The active controller stopped: its process gone, another controller leads; started
        again: a new process, fetching from the leader and caught up since it started."""
        quorum = kraft_healthy.quorum()
        assert quorum is not None
        leader = quorum.leader_id
        name = f"controller-{leader}"
        old_pid = kraft_healthy.process(name).pid
        assert old_pid is not None
        code, out = kc(kraft_healthy, "stop", f"controller:{leader}", "--yes")
        assert code == 0, out
        assert f"controller {leader} stopped" in out
        assert gone(old_pid)
        assert last_audit("broker.stop", f"controller {leader}")["outcome"] == "done"

        def other_leader() -> bool:
            q = kraft_healthy.quorum(timeout_s=1.0)
            return q is not None and q.leader_id != leader

        wait_until(other_leader, 60, "another controller to lead the quorum")
        since_ms = int(time.time() * 1000)
        code, out = kc(kraft_healthy, "start", f"controller:{leader}", "--yes")
        assert code == 0, out
        assert f"controller {leader} started" in out and "back in the quorum" in out
        new_pid = kraft_healthy.process(name).pid
        assert new_pid is not None and new_pid != old_pid
        q = kraft_healthy.quorum()
        assert q is not None
        voter = q.voter(leader)
        assert voter is not None and voter.last_fetch_ms >= since_ms
        line = last_audit("broker.start", f"controller {leader}")
        assert line["outcome"] == "done"
        assert "back in the quorum" in str(line["result"])

    def test_kill_then_start_a_broker_at_once(self, kraft_healthy: KRaftCluster) -> None:
        """Started right after a kill (its old registration not yet timed out), the start
        returns only once the new process is unfenced."""
        old_pid = kraft_healthy.process("broker-2").pid
        assert old_pid is not None
        code, out = kc(kraft_healthy, "kill", "2", "--yes")
        assert code == 0, out
        assert "broker 2 killed (SIGKILL" in out
        assert gone(old_pid)
        code, out = kc(kraft_healthy, "start", "2")  # a start asks no confirmation
        assert code == 0, out
        assert "broker 2 started" in out and "registered and unfenced" in out
        new_pid = kraft_healthy.process("broker-2").pid
        assert new_pid is not None and new_pid != old_pid
        assert kraft_healthy.broker_fencing()[2] is False
        assert last_audit("broker.kill", "broker 2")["outcome"] == "done"

    def test_pause_and_resume_a_controller(self, kraft_healthy: KRaftCluster) -> None:
        quorum = kraft_healthy.quorum()
        assert quorum is not None
        follower = next(i for i in (1001, 1002, 1003) if i != quorum.leader_id)
        proc = kraft_healthy.process(f"controller-{follower}")
        code, out = kc(kraft_healthy, "pause", f"controller:{follower}", "--yes")
        assert code == 0, out
        assert proc.state() is ProcState.PAUSED
        code, out = kc(kraft_healthy, "resume", f"controller:{follower}")
        assert code == 0, out
        assert f"controller {follower} resumed" in out
        assert proc.state() is ProcState.RUNNING

    def test_kill_without_confirmation_is_refused(self, kraft_healthy: KRaftCluster) -> None:
        code, out = kc(kraft_healthy, "kill", "controller:1001")
        assert code == 1
        assert "not confirmed" in out
        assert kraft_healthy.process("controller-1001").state() is ProcState.RUNNING


def test_the_consoles_broker_control_acts_on_kraft_brokers(kraft_healthy: KRaftCluster) -> None:
    """The command layer the console gets for this cluster's bootstrap picks the KRaft nodes'
    control (the same BrokerControl protocol as the ZooKeeper-mode cluster's): its broker
    states are the brokers', and a stop and a start through it are the real ones."""
    settings = Settings(bootstrap=kraft_healthy.spec.bootstrap, zookeeper="")
    door = Commands.for_settings(settings, cluster_dir=kraft_healthy.state_dir, origin="console")
    states = door.broker_states()
    assert states is not None
    assert states() == {1: ProcState.RUNNING, 2: ProcState.RUNNING, 3: ProcState.RUNNING}
    said = door.broker(BrokerAction.STOP, 3, yes)
    assert said.startswith("broker 3 stopped (controlled shutdown")
    assert states()[3] is ProcState.STOPPED
    said = door.broker(BrokerAction.START, 3, None)
    assert "registered and unfenced" in said
    assert kraft_healthy.broker_fencing()[3] is False


def test_a_broker_stop_without_a_quorum_is_refused_at_once(kraft_healthy: KRaftCluster) -> None:
    """With two of three controllers stopped there is no quorum leader, and a broker's
    controlled shutdown would wait minutes for one: the stop is refused, saying to start a
    controller or kill, and the broker keeps running. (The fixture starts the controllers.)"""
    for ctl in (1002, 1003):
        code, out = kc(kraft_healthy, "stop", f"controller:{ctl}", "--yes")
        assert code == 0, out
    wait_until(lambda: kraft_healthy.quorum(timeout_s=1.0) is None, 60, "no quorum leader")
    t0 = time.monotonic()
    code, out = kc(kraft_healthy, "stop", "2", "--yes")
    assert code == 1
    assert "no controller answers as quorum leader" in out
    assert "kconsole cluster kill 2" in out
    assert time.monotonic() - t0 < 30
    assert kraft_healthy.process("broker-2").state() is ProcState.RUNNING
    assert last_audit("broker.stop", "broker 2")["outcome"] == "failed"
    # The console says there is no leader (not the last one, stale): the controller left
    # answers NOT_LEADER_OR_FOLLOWER, the two stopped ones refuse the connection.
    from kconsole.observer import ClusterObserver

    spec = kraft_healthy.spec
    given = f"{spec.host}:{spec.controller_ports()[1001]}"  # the one still running
    settings = Settings(bootstrap=spec.bootstrap, zookeeper="", bootstrap_controller=given)
    snap = ClusterObserver(settings).read_once()
    assert snap.quorum is not None and snap.quorum.leader_id is None, snap.quorum
    assert snap.controller.id is None
    stopped = ", ".join(f"{spec.host}:{spec.controller_ports()[c]}" for c in (1002, 1003))
    assert (
        snap.quorum.error == f"no controller leads ({given} not the leader; {stopped} not running)"
    )
