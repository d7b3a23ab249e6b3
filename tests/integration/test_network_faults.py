"""Issue 37, isolate on the real local clusters with real iptables: a ZooKeeper-mode leader
isolated leaves ZooKeeper (its session expires: it cannot heartbeat) and every ISR it was in,
its rules are in our chain only, and after the heal it registers again with every ISR full; on
KRaft the isolated broker is fenced and unfenced after the heal; a drill isolating a leader
under acks=all loses nothing. After every test, pass or fail, nothing of kconsole's is left:
no rule with a kconsole: comment, no KCONSOLE- chain, no cgroup."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import TypeVar

import psutil
import pytest
from kazoo.client import KazooClient

from kconsole.cluster.kraft.cluster import KRaftCluster
from kconsole.cluster.kraft.control import KRaftNodeControl
from kconsole.cluster.kraft.probes import (
    broker_admin,
    broker_fencing,
    quorum_from_controllers,
)
from kconsole.cluster.local.cluster import LocalCluster
from kconsole.cluster.local.control import LocalBrokerControl
from kconsole.cluster.local.spec import session_expiry_bound_s
from kconsole.cluster.net.rules import chain_name, cluster_tag
from kconsole.cluster.settings import TEST_TOPIC
from kconsole.cluster.values import BrokerAction, NetLinks, ProcState
from kconsole.commands import Commands, yes
from kconsole.drills.spec import DrillSpec
from kconsole.timeline import EventKind
from tests.integration.conftest import controller, partition_state, registered
from tests.integration.kraft_support import quorum_whole
from tests.integration.net_support import kconsole_rules, left_behind, skip_without_network_faults
from tests.integration.test_observer import settings_for
from tests.waiting import wait_until

pytestmark = pytest.mark.integration


C = TypeVar("C", LocalCluster, KRaftCluster)


def nothing_left(cluster: C) -> Iterator[C]:
    """The body of a fixture: `cluster`, and after the test, pass or fail, whatever it left is
    healed (the machine is never left cut) and the test fails when anything was left, or is
    left after that."""
    skip_without_network_faults()
    yield cluster
    left = left_behind(cluster.state_dir)
    if left:
        cluster.net_faults().heal_all()
    assert left_behind(cluster.state_dir) == [], "kconsole's network rules outlived the heal"
    assert left == [], f"the test left network rules behind: {left}"


@pytest.fixture
def zk_net(healthy: LocalCluster) -> Iterator[LocalCluster]:
    """The shared ZooKeeper-mode cluster, healthy, with nothing of kconsole's network rules
    left after the test (set up after `healthy`, so torn down before its restore)."""
    yield from nothing_left(healthy)


@pytest.fixture
def kraft_net(kraft_healthy: KRaftCluster) -> Iterator[KRaftCluster]:
    yield from nothing_left(kraft_healthy)


def leader_not_controller(zk: KazooClient, brokers: list[int]) -> tuple[int, int]:
    """(broker, partition): a broker that leads a test-topic partition and is not the
    controller (isolating the controller too would also elect another: another test)."""
    ctl = controller(zk)
    for p in range(3):
        leader = int(partition_state(zk, TEST_TOPIC, p)["leader"])
        if leader != ctl and leader in brokers:
            return leader, p
    raise AssertionError("every test-topic partition is led by the controller")


def fencing_of(cluster: KRaftCluster, b: int) -> bool | None:
    """Whether the controllers have broker `b` fenced, asked of the other brokers: a client
    bootstrapped with a cut one too waits for its connection to time out whenever it picks it."""
    others = ",".join(
        f"{cluster.spec.host}:{port}"
        for bid, port in cluster.spec.broker_ports().items()
        if bid != b
    )
    with broker_admin(others, 2000, cluster.kafka_python_security()) as admin:
        return broker_fencing(admin).get(b)


def still_talks() -> bool:
    """A TCP connection on loopback that is not the cluster's works (the machine's other
    traffic is never touched)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        got: list[bytes] = []

        def answer() -> None:
            conn, _ = server.accept()
            with conn:
                got.append(conn.recv(16))
                conn.sendall(b"pong")

        t = threading.Thread(target=answer, daemon=True)
        t.start()
        with socket.create_connection(("127.0.0.1", port), timeout=3) as c:
            c.sendall(b"ping")
            reply = c.recv(16)
        t.join(3)
        return got == [b"ping"] and reply == b"pong"


def test_isolate_a_zookeeper_mode_leader_then_heal(zk_net: LocalCluster, zk: KazooClient) -> None:
    cluster = zk_net
    control = LocalBrokerControl(cluster)
    b, p = leader_not_controller(zk, cluster.spec.broker_ids)
    tag = cluster_tag(cluster.state_dir)
    chain = chain_name(tag)
    port = cluster.port_of(f"broker-{b}")
    t0 = time.monotonic()
    said = control.act(BrokerAction.ISOLATE, b)
    applied_s = time.monotonic() - t0
    assert re.fullmatch(
        rf"broker {b} isolated \(its traffic and traffic to its port {port} dropped: "
        rf"(\d+) rules in {chain}\)",
        said,
    ), said
    rules = kconsole_rules(cluster.state_dir)
    # One jump from OUTPUT, our chain, and every other kconsole rule in our chain, each
    # carrying the node's tag: nothing of ours anywhere else.
    jumps = [ln for ln in rules if ln.startswith("-A OUTPUT ")]
    assert len(jumps) == 1 and f"kconsole:{tag}" in jumps[0] and jumps[0].endswith(f"-j {chain}")
    ours = [ln for ln in rules if ln.startswith(f"-A {chain} ")]
    assert len(ours) == int(re.findall(r"(\d+) rules", said)[0]) >= 3
    assert all(f"kconsole:{tag}:broker-{b}" in ln and ln.endswith("-j DROP") for ln in ours)
    assert set(rules) == {f":{chain} - [0:0]", *jumps, *ours}, rules
    assert still_talks()
    # It cannot heartbeat: ZooKeeper expires its session, the controller moves its leadership
    # and takes it out of every ISR. Its process runs all along.
    bound = session_expiry_bound_s(cluster.spec, b)
    wait_until(lambda: b not in registered(zk), bound + 10, f"broker {b} to leave ZooKeeper")
    gone_s = time.monotonic() - t0
    state = wait_until(
        lambda: (
            (s := partition_state(zk, TEST_TOPIC, p))["leader"] != b and b not in s["isr"] and s
        ),
        30,
        f"test-topic/{p} led by another broker, without {b} in its ISR",
    )
    moved_s = time.monotonic() - t0
    assert control.states()[b] is ProcState.RUNNING
    assert len(state["isr"]) == 2
    print(
        f"\nisolate broker {b}: applied in {applied_s:.2f} s, gone from ZooKeeper after "
        f"{gone_s:.1f} s (session expiry bound {bound:.1f} s), test-topic/{p} led by "
        f"{state['leader']} without it after {moved_s:.1f} s"
    )

    t1 = time.monotonic()
    healed = control.act(BrokerAction.HEAL, b)
    assert healed.startswith(f"broker {b} healed ({len(ours)} rules removed from {chain}"), healed
    assert kconsole_rules(cluster.state_dir) == [] and left_behind(cluster.state_dir) == []
    wait_until(lambda: b in registered(zk), 60, f"broker {b} to register again")
    back_s = time.monotonic() - t1
    cluster.wait_isr_full(TEST_TOPIC, time.monotonic() + 90)
    print(f"heal broker {b}: registered again after {back_s:.1f} s, ISRs full after "
          f"{time.monotonic() - t1:.1f} s")  # fmt: skip
    assert control.act(BrokerAction.HEAL, b).endswith("(nothing to heal)")


def test_cluster_down_heals_first(zk_net: LocalCluster) -> None:
    """`cluster down` heals every rule of the cluster before it stops anything: here its
    first step, heal_all, run alone on an isolated broker."""
    cluster = zk_net
    control = LocalBrokerControl(cluster)
    control.act(BrokerAction.ISOLATE, 3)
    assert kconsole_rules(cluster.state_dir)
    healed = cluster.net_faults().heal_all()
    assert healed[0].startswith("broker-3 healed (")
    assert left_behind(cluster.state_dir) == []
    assert cluster.net_faults().in_force() == {}


def test_drill_isolate_a_leader_loses_nothing_with_acks_all(
    zk_net: LocalCluster, zk: KazooClient
) -> None:
    """`drill run --fault isolate` through the door: the leader leaves ZooKeeper when its
    session expires, the heal brings it back, no acknowledged record is lost."""
    cluster = zk_net
    b, _ = leader_not_controller(zk, cluster.spec.broker_ids)
    spec = DrillSpec(
        fault="isolate",
        target=f"broker:{b}",
        acks="all",
        duration_s=16,
        restore_after_s=12,
        settle_timeout_s=90,
        wait_preferred=False,
        rate=150,
        warmup_s=1.5,
    )
    door = Commands(LocalBrokerControl(cluster), settings=settings_for(cluster))
    report = door.drill_run(spec, yes)
    print("\n" + "\n".join(f"{m.name}: {m.seconds} (predicted {m.predicted}) {m.note}"
                           for m in report.measurements))  # fmt: skip
    assert report.ok, report.audit.markdown()
    assert report.audit.acked > 100 and not report.audit.lost
    assert report.settled and not report.not_restored
    kinds = [(e.kind, e.broker) for e in report.events]
    actions = [i for i, e in enumerate(report.events) if e.kind is EventKind.ACTION]
    assert [report.events[i].new for i in actions] == ["isolate", "heal"]
    left = kinds.index((EventKind.BROKER_LEFT, b))
    joined = kinds.index((EventKind.BROKER_JOINED, b))
    assert actions[0] < left < actions[1] < joined
    gone = next(m for m in report.measurements if m.name.startswith("fault -> broker gone"))
    assert gone.seconds is not None and "session expires" in gone.predicted
    back = next(m for m in report.measurements if m.name.startswith("restore -> broker registered"))
    assert back.seconds is not None and "once healed" in back.predicted
    assert any("iptables" in n for n in report.audit.notes)


def test_isolate_a_kraft_broker_fences_it_then_heal(kraft_net: KRaftCluster) -> None:
    cluster = kraft_net
    control = KRaftNodeControl(cluster)
    b = cluster.spec.broker_ids[-1]
    node = cluster.node_of(b)
    chain = chain_name(cluster_tag(cluster.state_dir))

    def fenced() -> bool | None:
        return fencing_of(cluster, b)

    t0 = time.monotonic()
    said = control.act(BrokerAction.ISOLATE, b)
    assert said.startswith(f"broker {b} isolated (") and chain in said, said
    wait_until(lambda: fenced() is True, 60, f"broker {b} fenced")
    fenced_s = time.monotonic() - t0
    # By its session's timeout (broker.session.timeout.ms, 9 s): not before.
    assert 7.0 < fenced_s < 40.0, fenced_s
    assert cluster.process(node.name).state() is ProcState.RUNNING
    t1 = time.monotonic()
    healed = control.act(BrokerAction.HEAL, b)
    assert healed.startswith(f"broker {b} healed (") and kconsole_rules(cluster.state_dir) == []
    wait_until(lambda: fenced() is False, 60, f"broker {b} unfenced")
    print(f"\nKRaft isolate broker {b}: fenced after {fenced_s:.1f} s; unfenced "
          f"{time.monotonic() - t1:.1f} s after the heal")  # fmt: skip


def test_isolate_the_active_kraft_controller_elects_another(kraft_net: KRaftCluster) -> None:
    """The quorum leader cut off: the other voters elect one of them with a higher epoch; after
    the heal the old leader is a follower again and the quorum whole."""
    cluster = kraft_net
    control = KRaftNodeControl(cluster)
    q = cluster.quorum()
    assert q is not None and q.leader_id is not None
    leader, epoch = q.leader_id, q.leader_epoch
    ports = cluster.spec.controller_ports()
    others = [port for nid, port in ports.items() if nid != leader]
    t0 = time.monotonic()
    said = control.act(BrokerAction.ISOLATE, leader)
    assert said.startswith(f"controller {leader} isolated (") and str(ports[leader]) in said

    def new_leader() -> tuple[int, int] | None:
        q2 = quorum_from_controllers(cluster.spec.host, others, 1.0)
        if q2 is None or q2.leader_id in (None, leader):
            return None
        return q2.leader_id, q2.leader_epoch

    now, new_epoch = wait_until(new_leader, 60, "another quorum leader")
    elected_s = time.monotonic() - t0
    assert new_epoch > epoch
    assert control.act(BrokerAction.HEAL, leader).startswith(f"controller {leader} healed (")
    wait_until(lambda: quorum_whole(cluster), 90, "the quorum whole, the old leader following")
    print(f"\nKRaft isolate quorum leader {leader}: controller {now} leads (epoch {epoch} -> "
          f"{new_epoch}) after {elected_s:.1f} s")  # fmt: skip


def test_a_fault_held_by_a_killed_process_is_healed_by_its_watchdog(zk_net: LocalCluster) -> None:
    """A drill holds its fault with its own pid as guard: SIGKILLed before its restore, the
    watchdog heals the node all the same (a fault outlives nothing)."""
    cluster = zk_net
    code = (
        "import os, signal\n"
        "from kconsole.cluster.local.cluster import LocalCluster\n"
        f"c = LocalCluster({str(cluster.state_dir)!r})\n"
        "print(c.isolate_broker(3, guard=os.getpid()), flush=True)\n"
        "signal.pause()  # holds the fault until the test SIGKILLs it\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        said = holder.stdout.readline() if holder.stdout else ""
        assert f"healed by a watchdog if process {holder.pid} ends first" in said, said
        fault = cluster.net_faults().in_force()["broker-3"]
        assert fault.guard == holder.pid and fault.watchdog is not None
        assert kconsole_rules(cluster.state_dir)
        holder.kill()
        holder.wait(10)
        t0 = time.monotonic()
        wait_until(lambda: left_behind(cluster.state_dir) == [], 30, "the watchdog's heal")
        print(f"\nwatchdog healed broker 3 {time.monotonic() - t0:.2f} s after its holder died")
        assert cluster.net_faults().in_force() == {}
        wait_until(lambda: not psutil.pid_exists(fault.watchdog or 0), 10, "the watchdog gone")
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)


# -- partition (issue 37: some links only) ------------------------------------------------------
def partition_drill(target: str, sides: str, acks: str, restore_after: float) -> DrillSpec:
    return DrillSpec(
        fault="partition",
        target=target,
        acks=acks,  # type: ignore[arg-type]
        duration_s=restore_after + 4,
        restore_after_s=restore_after,
        settle_timeout_s=90,
        wait_preferred=False,
        rate=150,
        warmup_s=1.5,
        links=NetLinks.parse(sides),
    )


def test_the_controller_cut_from_zookeeper_is_a_zombie_until_the_heal(
    zk_net: LocalCluster, zk: KazooClient
) -> None:
    """ZooKeeper mode: the controller partitioned from ZooKeeper keeps running and keeps
    answering its clients; ZooKeeper expires its session, another broker becomes controller at a
    higher epoch, and the old one resigns only after the heal, when it reaches ZooKeeper again
    and finds its session expired (its own log says so). acks=all: nothing acknowledged is lost."""
    cluster = zk_net
    old = controller(zk)
    epoch = int(zk.get("/controller_epoch")[0])
    door = Commands(LocalBrokerControl(cluster), settings=settings_for(cluster))
    report = door.drill_run(partition_drill("controller", "zookeeper", "all", 12), yes)
    print("\n" + "\n".join(f"{m.name}: {m.seconds} (predicted {m.predicted})"
                           for m in report.measurements))  # fmt: skip
    assert report.ok and report.audit.acked > 100, report.audit.markdown()
    assert report.settled and not report.not_restored
    heal = next(e for e in report.events if e.kind is EventKind.ACTION and e.new == "heal")
    changed = next(e for e in report.events if e.kind is EventKind.CONTROLLER_CHANGED)
    resigned = [e for e in report.events if e.kind is EventKind.CONTROLLER_RESIGNED]
    assert changed.old == old and changed.new != old and changed.ts < heal.ts
    assert int(zk.get("/controller_epoch")[0]) > epoch
    # The zombie: it resigned after the heal, not when its successor was elected.
    assert [e.broker for e in resigned] == [old] and resigned[0].ts > heal.ts
    zombie = next(m for m in report.measurements if m.name.startswith(f"zombie controller {old}"))
    assert zombie.seconds is not None and zombie.seconds > 0
    learned = next(m for m in report.measurements if m.name == f"heal -> controller {old} resigned")
    assert learned.seconds is not None and 0 < learned.seconds < 15


def test_the_negative_control_a_cut_leader_with_acks_1_loses_and_says_why(
    zk_net: LocalCluster, zk: KazooClient
) -> None:
    """Jepsen's case: a leader cut from ZooKeeper and its followers while producers still reach
    it acknowledges acks=1 writes alone, another replica is elected, and the old leader truncates
    them when it rejoins. The audit must find the loss (a checker that never finds any proves
    nothing) and say why, per partition."""
    cluster = zk_net
    b, p = leader_not_controller(zk, cluster.spec.broker_ids)
    door = Commands(LocalBrokerControl(cluster), settings=settings_for(cluster))
    spec = partition_drill(f"leader:{TEST_TOPIC}/{p}", "zookeeper,brokers", "1", 12)
    report = door.drill_run(spec, yes)
    print("\n" + "\n".join(report.explained))
    assert report.audit.lost, "acks=1 and a cut leader: the audit found no loss"
    assert not report.ok and report.settled
    # The read-back ended once the truncated offsets were read past or beyond an end standing
    # still, not at its deadline waiting for records that cannot come.
    assert not [n for n in report.notes if n.startswith("read-back")], report.notes
    lost_parts = sorted({r.partition for r in report.audit.lost})
    assert len(report.explained) == len(lost_parts)
    for part, line in zip(lost_parts, report.explained, strict=True):
        assert line.startswith(f"{TEST_TOPIC}/{part}: ") and f"Broker {b} led it" in line, line
        assert f"when broker {b} rejoined" in line and "truncated its log to offset" in line, line


def test_a_leader_cut_from_its_followers_keeps_its_role_and_acks_all_fails_not_loses(
    zk_net: LocalCluster, zk: KazooClient
) -> None:
    """Cut from the other brokers only, a leader stays registered (ZooKeeper still reaches it):
    no leader moves, and it cannot even shrink its ISR, since that goes through the controller
    (AlterPartition), another broker it is cut from (seen here: the shrink was committed only
    after the heal). acks=all writes to its partitions stall until the heal rather than being
    acknowledged by the leader alone. Nothing acknowledged is lost."""
    cluster = zk_net
    b, p = leader_not_controller(zk, cluster.spec.broker_ids)
    door = Commands(LocalBrokerControl(cluster), settings=settings_for(cluster))
    report = door.drill_run(partition_drill(f"leader:{TEST_TOPIC}/{p}", "brokers", "all", 15), yes)
    assert report.ok and report.audit.acked > 100, report.audit.markdown()
    # Its sends stall until the heal: acknowledged once the followers are back, never by the
    # leader alone (more than replica.lag.time.max.ms: no ISR shrink let them through).
    waits = report.audit.longest_wait
    print(f"\nlongest wait for an ack by partition: {waits}; failed {report.audit.failed_by_code}")
    assert waits[p] > 12.0, waits
    assert any("AlterPartition" in line for line in report.impact), report.impact
    gone = next(m for m in report.measurements if m.name.startswith("fault -> broker gone"))
    assert gone.seconds is None and gone.predicted.startswith("never: it stays a member"), gone
    heal = next(e for e in report.events if e.kind is EventKind.ACTION and e.new == "heal")
    assert (EventKind.BROKER_LEFT, b) not in [(e.kind, e.broker) for e in report.events]
    before_heal = [
        e
        for e in report.events
        if e.kind is EventKind.ISR_SHRANK
        and (e.topic, e.partition) == (TEST_TOPIC, p)
        and e.ts < heal.ts
    ]
    assert before_heal == [], before_heal
    assert not [
        e
        for e in report.events
        if e.kind is EventKind.LEADER_CHANGED
        and (e.topic, e.partition) == (TEST_TOPIC, p)
        and e.ts < heal.ts
    ]


def connects(port: int, timeout: float = 2.0) -> bool:
    """Whether this process (a client) can open a TCP connection to `port` on loopback."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def test_a_broker_cut_from_clients_only_and_one_way_from_zookeeper(
    zk_net: LocalCluster, zk: KazooClient
) -> None:
    """From clients: this process cannot reach the broker, the other brokers still can (its
    follower fetches go on: no ISR loses it) and it stays registered. One way from ZooKeeper:
    what it sends is dropped only, and that alone expires its session."""
    cluster = zk_net
    control = LocalBrokerControl(cluster)
    b = 3
    port = cluster.port_of(f"broker-{b}")
    said = control.act(BrokerAction.PARTITION, b, links=NetLinks.parse("clients"))
    assert said.startswith(f"broker {b} partitioned from clients (both ways: "), said
    rules = kconsole_rules(cluster.state_dir)
    chain = chain_name(cluster_tag(cluster.state_dir))
    assert any(ln.startswith(f"-A {chain} ") and ln.endswith(f"-j {chain}-b{b}") for ln in rules)
    assert not connects(port) and connects(cluster.port_of("broker-1"))
    assert still_talks()
    # Followers fetch on: after replica.lag.time.max.ms it is still in every ISR it was in.
    deadline = time.monotonic() + 12
    while time.monotonic() < deadline:
        assert b in registered(zk)
        assert all(b in partition_state(zk, TEST_TOPIC, q)["isr"] for q in range(4))
        time.sleep(0.5)  # observing a window in which nothing must change
    healed = control.act(BrokerAction.HEAL, b)
    assert f"{chain}-b{b} removed" in healed and kconsole_rules(cluster.state_dir) == [], healed
    assert connects(port)

    said = control.act(BrokerAction.PARTITION, b, links=NetLinks.parse("zookeeper", one_way=True))
    assert "what it sends only" in said, said
    assert any("CONNMARK" in ln for ln in kconsole_rules(cluster.state_dir))
    bound = session_expiry_bound_s(cluster.spec, b)
    wait_until(lambda: b not in registered(zk), bound + 10, f"broker {b} to leave ZooKeeper")
    control.act(BrokerAction.HEAL, b)
    wait_until(lambda: b in registered(zk), 60, f"broker {b} to register again")
    cluster.wait_isr_full(TEST_TOPIC, time.monotonic() + 90)


def test_a_kraft_broker_cut_from_the_quorum_is_fenced_then_unfenced(
    kraft_net: KRaftCluster,
) -> None:
    """KRaft: a broker partitioned from the controllers (its heartbeats dropped) is fenced after
    broker.session.timeout.ms while the other brokers and clients still reach it; unfenced
    after the heal."""
    cluster = kraft_net
    control = KRaftNodeControl(cluster)
    b = cluster.spec.broker_ids[0]

    def fenced() -> bool | None:
        return fencing_of(cluster, b)

    t0 = time.monotonic()
    said = control.act(BrokerAction.PARTITION, b, links=NetLinks.parse("quorum"))
    assert said.startswith(f"broker {b} partitioned from quorum (both ways: "), said
    assert connects(cluster.spec.broker_ports()[b])  # clients still reach it
    wait_until(lambda: fenced() is True, 60, f"broker {b} fenced")
    fenced_s = time.monotonic() - t0
    assert 5.0 < fenced_s < 40.0, fenced_s
    assert control.act(BrokerAction.HEAL, b).startswith(f"broker {b} healed (")
    wait_until(lambda: fenced() is False, 60, f"broker {b} unfenced")
    print(f"\nKRaft partition broker {b} from the quorum: fenced after {fenced_s:.1f} s")


def test_a_slow_follower_drops_out_of_the_isr_and_back(
    zk_net: LocalCluster, zk: KazooClient
) -> None:
    """slow: a follower whose links to the other brokers carry 65,536 B/s (the lowest rate)
    cannot keep up with a workload of 2,000 msg/s of 1 KiB (well over 500 kB/s for it to
    replicate); its leaders drop it from their ISRs once it has not caught up for
    replica.lag.time.max.ms (as the drill predicts), it stays registered all along, and after
    the heal it catches up and is back in every ISR. acks=all: nothing acknowledged is lost."""
    cluster = zk_net
    b, _ = leader_not_controller(zk, cluster.spec.broker_ids)
    followed = [q for q in range(4) if int(partition_state(zk, TEST_TOPIC, q)["leader"]) != b]
    assert followed, "it leads every test-topic partition"
    spec = DrillSpec(
        fault="slow",
        target=f"broker:{b}",
        acks="all",
        duration_s=34,
        restore_after_s=30,
        settle_timeout_s=90,
        wait_preferred=False,
        rate=2000,
        message_bytes=1024,
        warmup_s=1.5,
        links=NetLinks.parse("brokers", rate=65_536),
    )
    door = Commands(LocalBrokerControl(cluster), settings=settings_for(cluster))
    report = door.drill_run(spec, yes)
    assert report.ok and report.settled, report.audit.markdown()
    heal = next(e for e in report.events if e.kind is EventKind.ACTION and e.new == "heal")
    dropped = [
        e
        for e in report.events
        if e.kind is EventKind.ISR_SHRANK
        and e.topic == TEST_TOPIC
        and e.partition in followed
        and b not in list(e.new or ())  # type: ignore[call-overload]
        and e.ts < heal.ts
    ]
    print(f"\nslow broker {b}: out of {len(dropped)} followed ISR(s) before the heal, after "
          f"{[round(e.ts - report.fault_at, 1) for e in dropped]} s")  # fmt: skip
    assert dropped, "a follower capped at 65,536 B/s stayed in every ISR"
    assert all(e.ts - report.fault_at >= 9.0 for e in dropped)  # replica.lag.time.max.ms 10 s
    assert (EventKind.BROKER_LEFT, b) not in [(e.kind, e.broker) for e in report.events]
    out = next(m for m in report.measurements if m.name.startswith("fault -> out of every ISR"))
    assert out.predicted.startswith("more than 10 s where the traffic"), out.predicted
    assert all(b in partition_state(zk, TEST_TOPIC, q)["isr"] for q in range(4))
