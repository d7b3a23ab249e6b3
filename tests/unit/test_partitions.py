"""Issue 37, partition: what a partition cuts (--from, --one-way) as exact iptables rules, the
moves and record that let another process heal it, the blast radius by side, and the drill's
proof: the zombie controller's resignation and the truncation that lost acks=1 writes, read
from Kafka's own log lines (tests/fixtures/logs, recorded from a real partition drill). The
machine is the fake of tests/unit/test_network_faults.py (its real counterpart:
tests/integration/test_network_faults.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kconsole.cluster.errors import ClusterError
from kconsole.cluster.logs import resignations, truncations
from kconsole.cluster.net import host, record
from kconsole.cluster.net.faults import Links, NetFaults, NetNode, links_for
from kconsole.cluster.net.rules import (
    Conn,
    Cut,
    Peer,
    Rule,
    conn_mark,
    partition_rules,
    slow_mark,
    sub_chain,
)
from kconsole.cluster.values import BrokerAction, NetLinks
from kconsole.drills.audit import Lost
from kconsole.drills.losses import explain_losses
from kconsole.drills.measure import STAYS, measure, zombie_measurements
from kconsole.drills.spec import DrillError, DrillSpec
from kconsole.drills.workload import Acked
from kconsole.impact import Impact, blast_radius, partition_lines
from kconsole.timeline import Event, EventKind
from tests.ui.builders import healthy
from tests.unit.test_network_faults import FakeMachine, machine  # noqa: F401 (fixture)

TAG = "abcd1234"
LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "partition_heal.log"
ZK = NetNode("zookeeper", "ZooKeeper", 100, (30181,), "127.0.0.1")
B1 = NetNode("broker-1", "broker 1", 101, (30092,), "127.0.0.1")
B2 = NetNode("broker-2", "broker 2", 102, (30093,), "127.0.0.1")
B3 = NetNode("broker-3", "broker 3", 103, (30094,), "127.0.0.1")


def test_from_is_parsed_and_a_wrong_side_is_said() -> None:
    links = NetLinks.parse(" ZooKeeper, broker:2 ,zookeeper", one_way=True)
    assert links.sides == ("zookeeper", "broker:2") and links.one_way
    assert links.words == "from zookeeper, broker:2, one way"
    assert NetLinks.parse("controller:1001,3").sides == ("controller:1001", "3")
    for bad in ("", " , ", "zk", "broker:x", "brokers;clients"):
        with pytest.raises(ValueError, match="--from"):
            NetLinks.parse(bad)


def test_a_partition_drill_needs_from_and_other_faults_refuse_it() -> None:
    with pytest.raises(DrillError, match="--fault partition cuts only some links"):
        DrillSpec(fault="partition", target="controller")
    with pytest.raises(DrillError, match="--from and --one-way are a partition's"):
        DrillSpec(fault="stop", target="controller", links=NetLinks.parse("zookeeper"))
    assert DrillSpec("partition", "controller", links=NetLinks.parse("brokers")).links


def spec_lines(rules: list[Rule]) -> list[str]:
    return [" ".join(r.match) + " -> " + r.action for r in rules]


def test_both_ways_from_a_peer_cuts_new_and_open_connections_in_both_directions() -> None:
    fetch = Conn("127.0.0.1", 40100, "127.0.0.1", 30094)  # its fetch from broker 3's port
    accepted = Conn("127.0.0.1", 30093, "127.0.0.1", 41200)  # broker 3's fetch from it
    client = Conn("127.0.0.1", 30093, "127.0.0.1", 50000)  # a producer's
    cut = Cut(
        "broker-2", "127.0.0.1", (30093,), (Peer("broker-3", (30094,)),),
        conns=((fetch, "broker-3"), (accepted, "broker-3"), (client, "")),
    )  # fmt: skip
    main, own = partition_rules(TAG, cut)
    me, peer = f"kconsole/{TAG}/broker-2", f"kconsole/{TAG}/broker-3"
    tcp = "-p tcp"
    assert spec_lines(main) == [
        f"{tcp} -m cgroup --path {me} -d 127.0.0.1 --dport 30094 -> DROP",
        f"{tcp} -m cgroup --path {peer} -d 127.0.0.1 --dport 30093 -> DROP",
        f"{tcp} -s 127.0.0.1 --sport 40100 -d 127.0.0.1 --dport 30094 -> DROP",
        f"{tcp} -s 127.0.0.1 --sport 30094 -d 127.0.0.1 --dport 40100 -> DROP",
        f"{tcp} -s 127.0.0.1 --sport 30093 -d 127.0.0.1 --dport 41200 -> DROP",
        f"{tcp} -s 127.0.0.1 --sport 41200 -d 127.0.0.1 --dport 30093 -> DROP",
    ]  # the producer's connection is not on a side that is cut
    assert own == []


def test_one_way_drops_only_what_the_node_sends_and_marks_what_it_answers() -> None:
    fetch = Conn("127.0.0.1", 40100, "127.0.0.1", 30094)
    cut = Cut(
        "broker-2", "127.0.0.1", (30093,), (Peer("broker-3", (30094,)),), one_way=True,
        conns=((fetch, "broker-3"),),
    )  # fmt: skip
    main, _ = partition_rules(TAG, cut)
    lines = spec_lines(main)
    mark = conn_mark(TAG)
    assert mark == "0xabcd0000/0xffff0000"  # the high 16 bits only
    assert lines[1].endswith(f"--dport 30093 -> CONNMARK --set-xmark {mark}")
    assert lines[2].endswith("--sport 40100 -d 127.0.0.1 --dport 30094 -> DROP")
    assert not any("--sport 30094" in ln for ln in lines)  # the peer's packets flow
    assert lines[-1] == f"-p tcp -s 127.0.0.1 --sport 30093 -m connmark --mark {mark} -> DROP"
    assert main[1].spec(TAG, "broker-2")[-4:] == ["-j", "CONNMARK", "--set-xmark", mark]


def test_from_clients_goes_through_the_nodes_own_chain_where_the_clusters_own_return() -> None:
    node_conn = Conn("127.0.0.1", 30093, "127.0.0.1", 41200)  # broker 3, opened before its move
    client = Conn("127.0.0.1", 30093, "127.0.0.1", 50000)
    cut = Cut(
        "broker-2", "127.0.0.1", (30093,), (), clients=True,
        conns=((node_conn, "broker-3"), (client, "")),
    )  # fmt: skip
    main, own = partition_rules(TAG, cut)
    chain = sub_chain(TAG, "broker-2")
    assert chain == f"KCONSOLE-{TAG}-b2" and len(sub_chain(TAG, "controller-1001")) <= 28
    assert spec_lines(main) == [
        "-p tcp -s 127.0.0.1 --sport 30093 -d 127.0.0.1 --dport 50000 -> DROP",
        "-p tcp -s 127.0.0.1 --sport 50000 -d 127.0.0.1 --dport 30093 -> DROP",
        f"-p tcp -m cgroup ! --path kconsole/{TAG} -d 127.0.0.1 --dport 30093 -> {chain}",
    ]
    assert [" ".join(r.match) + " -> " + r.action for r in own] == [
        "-p tcp -s 127.0.0.1 --sport 41200 -d 127.0.0.1 --dport 30093 -> RETURN",
        "-p tcp -> DROP",
    ]


@pytest.fixture
def net(machine: FakeMachine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> NetFaults:  # noqa: F811
    (machine.root / "user.slice").mkdir()
    for n in (ZK, B1, B2, B3):
        machine.cgroups[n.pid] = "/user.slice"
    ends = {B3.pid: {("127.0.0.1", 41200)}, ZK.pid: {("127.0.0.1", 30181)}}
    monkeypatch.setattr(host, "local_ends", lambda pid: ends.get(pid, set()))
    conns = [
        Conn("127.0.0.1", 40100, "127.0.0.1", 30181),
        Conn("127.0.0.1", 30093, "127.0.0.1", 41200),
    ]
    monkeypatch.setattr(host, "tcp_ends", lambda pid: conns if pid == B2.pid else [])
    state = tmp_path / "state"
    state.mkdir()
    return NetFaults(state)


def links(sides: str, one_way: bool = False, rate: int | None = None) -> Links:
    return links_for(
        B2,
        NetLinks.parse(sides, one_way, rate),
        [ZK, B1, B2, B3],
        {
            "zookeeper": ["zookeeper"],
            "brokers": ["broker-1", "broker-3"],
            "quorum": "no quorum here",
        },
        lambda side: f"broker-{side.rpartition(':')[2]}",
    )


def test_the_sides_are_resolved_and_nonsense_refused() -> None:
    assert [p.name for p in links("brokers,zookeeper").peers] == [
        "broker-1",
        "broker-3",
        "zookeeper",
    ]
    assert links("clients").clients and not links("clients").peers
    assert [p.name for p in links("broker:3").peers] == ["broker-3"]
    with pytest.raises(ClusterError, match="no quorum here"):
        links("quorum")
    with pytest.raises(ClusterError, match="from itself"):
        links("2")


def test_partition_moves_each_side_records_and_heal_puts_everyone_back(
    net: NetFaults,
    machine: FakeMachine,  # noqa: F811
) -> None:
    said = net.partition(B2, links("zookeeper,broker:3"))
    assert said.startswith("broker 2 partitioned from zookeeper, broker:3 (both ways: ")
    assert {pid: machine.cgroups[pid] for pid in (100, 102, 103)} == {
        100: f"/kconsole/{net.tag}/zookeeper",
        102: f"/kconsole/{net.tag}/broker-2",
        103: f"/kconsole/{net.tag}/broker-3",
    }
    assert machine.cgroups[101] == "/user.slice"  # not on a side: not moved
    (fault,) = record.load(net.state_dir).values()
    assert fault.fault == "partition" and fault.links == "from zookeeper, broker:3"
    assert fault.origin == "/user.slice"
    assert set(fault.moved) == {"zookeeper", "broker-3"}
    assert fault.rules == machine.chains[net.chain]
    # its ZooKeeper session and broker 3's fetch are cut by exact rules, both ways
    flat = [" ".join(r) for r in fault.rules]
    assert any("--sport 40100 -d 127.0.0.1 --dport 30181" in r for r in flat)
    assert any("--sport 41200 -d 127.0.0.1 --dport 30093" in r for r in flat)
    assert "partition from zookeeper, broker:3 since" in record.described(fault)
    # One fault per node: broker 3 is held by this one.
    with pytest.raises(
        ClusterError, match=r"broker 3 is already in a network fault \(partition on broker-2"
    ):
        net.isolate(B3)
    healed = net.heal("broker-2", "broker 2")
    assert "zookeeper back in cgroup /user.slice" in healed and "broker-3 back in" in healed
    assert all(machine.cgroups[n.pid] == "/user.slice" for n in (ZK, B1, B2, B3))
    assert machine.kconsole_rules() == [] and not (machine.root / "kconsole").exists()
    assert record.load(net.state_dir) == {}


def test_a_partition_from_clients_makes_and_removes_its_own_chain(
    net: NetFaults,
    machine: FakeMachine,  # noqa: F811
) -> None:
    net.partition(B2, links("clients", one_way=True))
    chain = sub_chain(net.tag, "broker-2")
    assert machine.chains[chain][-1][:2] == ["-p", "tcp"]
    assert machine.chains[chain][-1][-4:] == ["-j", "CONNMARK", "--set-xmark", conn_mark(net.tag)]
    # every node is moved: a socket outside the cluster's cgroups is a client's
    assert all(machine.cgroups[n.pid].startswith(f"/kconsole/{net.tag}/") for n in (ZK, B1, B2, B3))
    lines = NetFaults(net.state_dir).heal_all()
    assert lines[0].startswith("broker-2 healed (") and f"{chain} removed (" in lines[0]
    assert chain not in machine.chains and net.chain not in machine.chains


def test_resignations_and_truncations_are_read_from_kafkas_own_lines() -> None:
    lines = LOGS.read_text().splitlines()
    t = time.mktime(time.strptime("2026-12-06 13:34:25", "%Y-%m-%d %H:%M:%S")) + 0.193
    assert resignations(lines, 0) == [(pytest.approx(t), 3)]
    assert resignations(lines, t + 1) == []
    found = truncations(lines, 0)  # the high-watermark one is not a truncation by epoch
    assert [
        (x.broker, x.leader, x.topic, x.partition, x.offset, x.leader_epoch) for x in found
    ] == [
        (2, 3, "test-topic", 0, 3465, 2),
        (2, 1, "test-topic", 3, 576, 2),
    ]


def test_every_loss_is_explained_by_leader_and_truncation() -> None:
    before = healthy()  # test-topic/0 led by broker 2
    lines = LOGS.read_text().splitlines()
    cut = truncations(lines, 0)[0]
    fault_ts = cut.ts - 13.0
    origin = 1000.0  # the fault on the workload's clock
    lost = [Lost("k1", s, 0, 3465 + s) for s in range(5)]
    acked = [
        Acked("k1", s, 0, 3465 + s, origin + 0.1 * s, origin + 0.1 * s + 0.01) for s in range(5)
    ]
    moved = Event(fault_ts + 6.0, EventKind.PARTITION_ONLINE, "test-topic/0 is online, leader 3",
                  3, "test-topic", 0, old=-1, new=3)  # fmt: skip
    (line,) = explain_losses(
        "test-topic", "1", lost, acked, before, [moved], [cut], fault_ts=fault_ts, origin=origin
    )
    assert line.startswith("test-topic/0: 5 acknowledged record(s) lost, offsets 3465 to 3469")
    assert "acknowledged +0.0 s to +0.4 s after the fault" in line
    assert "Broker 2 led it when the fault began" in line
    assert "broker 3 was elected leader +6.0 s after the fault" in line and "acks=1" in line
    assert "rejoined as broker 3's follower +13.0 s after the fault" in line
    assert "truncated its log to offset 3465 (the end of leader epoch 2)" in line
    assert "reached at least offset 3470" in line
    # Nothing seen: said so, not guessed.
    (unknown,) = explain_losses(
        "test-topic", "1", lost, acked, before, [], [], fault_ts=fault_ts, origin=origin
    )
    assert "the cause is not known" in unknown


def test_the_zombie_is_measured_from_its_successor_to_its_resignation() -> None:
    heal = Event(100.0, EventKind.ACTION, "heal broker 3", 3, new="heal")
    elected = Event(92.0, EventKind.CONTROLLER_CHANGED, "controller is broker 1", 1, old=3, new=1)
    resigned = Event(101.5, EventKind.CONTROLLER_RESIGNED, "controller 3 resigned", 3)
    zombie, learned = zombie_measurements([elected, heal, resigned], heal, [resigned])
    assert zombie.name == "zombie controller 3: controller 1 elected -> 3 resigned"
    assert zombie.seconds == pytest.approx(9.5) and "until the heal" in zombie.predicted
    assert learned.name == "heal -> controller 3 resigned" and learned.seconds == pytest.approx(1.5)
    # A resignation with nobody in its place (a controlled shutdown) is no zombie.
    assert zombie_measurements([heal, resigned], heal, [resigned]) == []


def zk_lines(impact: Impact, *sides: str, reaches_controller: bool = True) -> list[str]:
    return partition_lines(
        impact,
        sides,
        kraft=False,
        session_timeout_ms=6000,
        replica_lag_ms=10000,
        reaches_controller=reaches_controller,
    )


def test_the_blast_radius_follows_the_sides() -> None:
    snap = healthy()  # broker 2 leads test-topic/0, controller 1
    impact = blast_radius(snap, BrokerAction.PARTITION, 2)
    zk = zk_lines(impact, "zookeeper")
    assert any("lose their leader and elect" in ln for ln in zk)
    assert "ZooKeeper expires its session (zookeeper.session.timeout.ms = 6000 ms)" in zk[-1]
    cut = zk_lines(impact, "brokers", reaches_controller=False)
    assert not any("elect" in ln for ln in cut)
    assert "AlterPartition" in cut[0] and "until the heal" in cut[0]
    reach = partition_lines(
        impact, ("brokers",), kraft=True, session_timeout_ms=None, replica_lag_ms=10000
    )
    assert "NOT_ENOUGH_REPLICAS" in reach[0]
    assert zk_lines(impact, "clients") == [
        "its clients lose it (the cluster sees nothing): producers and consumers of the "
        "partitions it leads fail until it is healed, no leader moves"
    ]


def test_a_partition_that_keeps_the_node_a_member_predicts_it_stays() -> None:
    """Cut from the brokers only, it stays registered and keeps its leaderships: the drill
    predicts that (not a session expiry), and measures what happened against it."""
    before = healthy()
    fault = Event(before.taken_at, EventKind.ACTION, "partition broker 2", 2, new="partition")
    heal = Event(before.taken_at + 15, EventKind.ACTION, "heal broker 2", 2, new="heal")
    stays = {m.name: m for m in measure(before, [fault, heal], fault=fault, target=2,
                                         restore=heal, stays=True)}  # fmt: skip
    gone = stays["fault -> broker gone from ZooKeeper"]
    assert gone.seconds is None and gone.predicted == STAYS
    led = next(m for n, m in stays.items() if n.startswith("fault -> every partition it led"))
    assert led.predicted == STAYS
    isr = next(m for n, m in stays.items() if n.startswith("fault -> out of every ISR"))
    assert isr.predicted.startswith("10-15 s where a leader it is cut from drops it")
    left = {m.name: m for m in measure(before, [fault, heal], fault=fault, target=2, restore=heal)}
    assert "session expires" in left["fault -> broker gone from ZooKeeper"].predicted
    assert NetLinks.parse("brokers").cuts_membership(kraft=False) is False
    assert NetLinks.parse("zookeeper,brokers").cuts_membership(kraft=False) is True
    assert NetLinks.parse("controller:1001").cuts_membership(kraft=True) is True
    assert NetLinks.parse("brokers,clients").cuts_membership(kraft=True) is False


def test_slow_caps_each_direction_at_the_rate_with_one_bucket_each() -> None:
    """slow: the partition's matches, each dropping only what exceeds the rate; what the node
    sends shares one hashlimit bucket, what it receives another. A new connection is marked
    with the node's own mark, and the answers on it (from a listening port, whose sockets keep
    the listener's cgroup) are held to the rate of their way too."""
    fetch = Conn("127.0.0.1", 40100, "127.0.0.1", 30094)
    cut = Cut(
        "broker-2", "127.0.0.1", (30093,), (Peer("broker-3", (30094,)),), rate=65_536,
        conns=((fetch, "broker-3"),),
    )  # fmt: skip
    main, own = partition_rules(TAG, cut)
    mark = slow_mark(TAG, "broker-2")
    assert own == []
    marks = [r for r in main if r.action.startswith("CONNMARK")]
    drops = [r for r in main if r.action == "DROP"]
    assert len(marks) + len(drops) == len(main)
    # the node's new connections to the peer's port and the peer's to the node's: marked
    assert [r.action for r in marks] == [f"CONNMARK --set-xmark {mark}"] * 2
    assert [r.match[r.match.index("--dport") + 1] for r in marks] == ["30094", "30093"]
    limits = [r.match[r.match.index("hashlimit") - 1 :] for r in drops]
    assert all("--hashlimit-above" in m and "65536b/s" in m for m in limits)
    assert all(m[m.index("--hashlimit-burst") + 1] == "65536b" for m in limits)
    names = [m[m.index("--hashlimit-name") + 1] for m in limits]
    # the peer's answers on the node's new connection in, the node's new connection out, a
    # peer's new connection in, the node's answers on it out, the fetch out, its answers in
    assert names == [
        "kcabcd12b2i", "kcabcd12b2o", "kcabcd12b2i", "kcabcd12b2o", "kcabcd12b2o", "kcabcd12b2i",
    ]  # fmt: skip
    answers = [r.match for r in drops if "connmark" in r.match]
    assert [(m[m.index("--sport") + 1], m[m.index("--mark") + 1]) for m in answers] == [
        ("30094", mark),  # the peer answers from its port: what the node receives
        ("30093", mark),  # the node answers from its own: what it sends
    ]
    assert all("cgroup" not in m for m in answers)
    assert all(len(n) <= 15 for n in names)
    # a node's own mark: two slowed nodes never share one, nor the one-way cuts' mark
    assert mark != slow_mark(TAG, "broker-3") and mark != conn_mark(TAG)
    assert mark.endswith("0000/0xffff0000")
    assert NetLinks.parse("brokers", rate=65_536).words == "from brokers at 65,536 B/s"
    assert NetLinks.parse("brokers", rate=65_536).cuts_membership(kraft=False) is False
    with pytest.raises(ValueError, match="bytes per second"):
        NetLinks.parse("brokers", rate=10)
    # below a 64 KiB packet a second the cap would not hold: refused, and why
    with pytest.raises(ValueError, match=r"65,536 to .* not 2,000 .*64 KiB through whole"):
        NetLinks.parse("brokers", rate=2000)
    with pytest.raises(ValueError, match="both ways"):
        NetLinks.parse("brokers", one_way=True, rate=65_536)
    with pytest.raises(DrillError, match="--slow-rate"):
        DrillSpec("slow", "broker:2", links=NetLinks.parse("brokers"))
    with pytest.raises(DrillError, match="--slow-rate"):
        DrillSpec("partition", "broker:2", links=NetLinks.parse("brokers", rate=65_536))


def test_a_slow_fault_from_clients_marks_what_reaches_the_node_from_outside() -> None:
    """slow from clients: what comes from outside the cluster's cgroups is marked in the node's
    own chain before its rate is checked, so the node's answers to clients are held too."""
    cut = Cut("broker-2", "127.0.0.1", (30093,), (), clients=True, rate=65_536)
    main, own = partition_rules(TAG, cut)
    mark = slow_mark(TAG, "broker-2")
    assert [r.action for r in own] == [f"CONNMARK --set-xmark {mark}", "DROP"]
    assert "kcabcd12b2i" in own[-1].match
    answer = [r for r in main if "connmark" in r.match]
    assert len(answer) == 1 and "kcabcd12b2o" in answer[0].match


def test_a_slow_fault_is_recorded_as_slow_and_healed_like_the_others(
    net: NetFaults,
    machine: FakeMachine,  # noqa: F811
) -> None:
    said = net.partition(B2, links("brokers", rate=65_536))
    assert said.startswith("broker 2 slowed from brokers at 65,536 B/s (what exceeds 65,536 B/s")
    (fault,) = record.load(net.state_dir).values()
    assert fault.fault == "slow" and "slow from brokers at 65,536 B/s since" in record.described(
        fault
    )
    assert net.heal("broker-2", "broker 2").startswith("broker 2 healed (")
    assert machine.kconsole_rules() == []
