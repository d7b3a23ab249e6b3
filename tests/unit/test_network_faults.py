"""Issue 37, isolate: the rules as exact iptables command lines, the tag and comments, the
refusal before any effect when root, iptables or the cgroup v2 hierarchy is missing, and the
record in the state dir that lets another process heal. The machine is replaced by a fake that
keeps iptables' chains and the cgroups' memberships the way the kernel does (tests/integration/
test_network_faults.py runs the real ones)."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from kconsole.cluster.errors import ClusterError
from kconsole.cluster.net import host, record
from kconsole.cluster.net.faults import NetFaults, NetNode
from kconsole.cluster.net.rules import (
    Conn,
    append_rule,
    chain_name,
    cluster_tag,
    comment,
    insert_jump,
    isolate_rules,
    jump_spec,
)

TAG = "abcd1234"
HYBRID = """tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0
cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0
"""


def test_the_tag_is_short_stable_and_names_the_chain_and_comments(tmp_path: Path) -> None:
    tag = cluster_tag(tmp_path / "c")
    assert tag == cluster_tag(tmp_path / "x" / ".." / "c") and len(tag) == 8
    assert tag != cluster_tag(tmp_path / "d")
    assert chain_name(tag) == f"KCONSOLE-{tag}" and len(chain_name(tag)) <= 28
    assert (
        comment(tag) == f"kconsole:{tag}" and comment(tag, "broker-2") == f"kconsole:{tag}:broker-2"
    )


def test_isolate_rules_are_exact_command_lines() -> None:
    conn = Conn("127.0.0.1", 40100, "127.0.0.1", 30081)
    rules = isolate_rules(TAG, "broker-2", "127.0.0.1", (30093,), (conn,))
    argv = [append_rule(TAG, r.spec(TAG, "broker-2")) for r in rules]
    head = ["iptables", "-w", "5", "-t", "filter", "-A", "KCONSOLE-abcd1234", "-p", "tcp"]
    tail = ["-m", "comment", "--comment", "kconsole:abcd1234:broker-2", "-j", "DROP"]
    assert argv == [
        [*head, "-m", "cgroup", "--path", "kconsole/abcd1234/broker-2", *tail],
        [*head, "-d", "127.0.0.1", "--dport", "30093", *tail],
        [*head, "-s", "127.0.0.1", "--sport", "30093", *tail],
        [
            *head,
            "-s",
            "127.0.0.1",
            "--sport",
            "40100",
            "-d",
            "127.0.0.1",
            "--dport",
            "30081",
            *tail,
        ],
    ]
    assert insert_jump(TAG) == [
        "iptables", "-w", "5", "-t", "filter", "-I", "OUTPUT", "1",
        "-m", "comment", "--comment", "kconsole:abcd1234", "-j", "KCONSOLE-abcd1234",
    ]  # fmt: skip
    # A KRaft combined node listens on two ports: both are cut.
    two = isolate_rules(TAG, "node-1", "127.0.0.1", (30091, 30191))
    assert [r.match[-1] for r in two] == [
        "kconsole/abcd1234/node-1",
        "30091",
        "30091",
        "30191",
        "30191",
    ]


def test_the_cgroup2_mount_is_read_from_the_mounts() -> None:
    assert host.cgroup2_mount(HYBRID) == Path("/sys/fs/cgroup/unified")
    assert host.cgroup2_mount("cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0\n") == Path(
        "/sys/fs/cgroup"
    )
    assert host.cgroup2_mount("cgroup2 /sys/fs/cgroup cgroup2 ro,nosuid 0 0\n") is None
    assert host.cgroup2_mount("cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n") is None


class FakeMachine:
    """iptables (its chains, -N -A -C -D -I -S -F -X as the real one answers them) and the
    cgroup v2 hierarchy (a process in exactly one cgroup; a directory removable once empty)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.chains: dict[str, list[list[str]]] = {"OUTPUT": [], "INPUT": [], "FORWARD": []}
        self.cgroups: dict[int, str] = {}
        self.calls: list[list[str]] = []

    def run(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        self.calls.append(argv)
        assert argv[:5] == ["iptables", "-w", "5", "-t", "filter"], argv

        def done(code: int = 0, out: str = "", err: str = "") -> subprocess.CompletedProcess[str]:
            return subprocess.CompletedProcess(argv, code, out, err)

        if argv[5:] == ["-S"]:  # the whole table: policies, then chains, then rules
            builtin = ("INPUT", "FORWARD", "OUTPUT")
            lines = [f"-P {c} ACCEPT" for c in builtin]
            lines += [f"-N {c}" for c in self.chains if c not in builtin]
            lines += [f"-A {c} {shlex.join(r)}" for c, rs in self.chains.items() for r in rs]
            return done(out="\n".join(lines) + "\n")
        op, chain, *rest = argv[5:]

        if op == "-N":
            if chain in self.chains:
                return done(1, err="iptables: Chain already exists.")
            self.chains[chain] = []
            return done()
        if chain not in self.chains:
            return done(1, err=f"iptables: No chain/target/match by that name ({chain}).")
        rules = self.chains[chain]
        if op == "-A":
            rules.append(rest)
        elif op == "-I":
            rules.insert(int(rest[0]) - 1, rest[1:])
        elif op == "-C":
            return done(0 if rest in rules else 1)
        elif op == "-D":
            if rest not in rules:
                return done(
                    1, err="iptables: Bad rule (does a matching rule exist in that chain?)."
                )
            rules.remove(rest)
        elif op == "-S":
            lines = [f"-N {chain}", *(f"-A {chain} {shlex.join(r)}" for r in rules)]
            return done(out="\n".join(lines) + "\n")
        elif op == "-F":
            rules.clear()
        elif op == "-X":
            if rules or any(r[-1] == chain for rs in self.chains.values() for r in rs):
                return done(1, err="iptables: Directory not empty.")
            del self.chains[chain]
        return done()

    def move(self, pid: int, cgroup_dir: Path) -> None:
        assert cgroup_dir.is_dir(), cgroup_dir
        rel = cgroup_dir.relative_to(self.root)
        self.cgroups[pid] = "/" + str(rel) if str(rel) != "." else "/"

    def members(self, cgroup_dir: Path) -> list[int]:
        rel = "/" + str(cgroup_dir.relative_to(self.root))
        return [pid for pid, path in self.cgroups.items() if path == rel]

    def kconsole_rules(self) -> list[str]:
        return [
            shlex.join(r) for rs in self.chains.values() for r in rs if "kconsole:" in shlex.join(r)
        ]


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeMachine:
    fake = FakeMachine(tmp_path / "cgroup2")
    fake.root.mkdir()
    fake.cgroups[4242] = "/"
    monkeypatch.setattr(host, "is_root", lambda: True)
    monkeypatch.setattr(host, "iptables_found", lambda: True)
    monkeypatch.setattr(host, "cgroup2_mount", lambda mounts=None: fake.root)
    monkeypatch.setattr(host, "run", fake.run)
    monkeypatch.setattr(host, "move", fake.move)
    monkeypatch.setattr(host, "members", fake.members)
    monkeypatch.setattr(host, "cgroup_of", lambda pid: fake.cgroups.get(pid))
    conns = [Conn("127.0.0.1", 40100, "127.0.0.1", 30081)]  # its ZooKeeper session
    monkeypatch.setattr(host, "tcp_conns", lambda pid, listening: conns)
    return fake


def node(pid: int = 4242) -> NetNode:
    return NetNode("broker-2", "broker 2", pid, (30093,), "127.0.0.1")


def test_isolate_moves_records_adds_reads_back_and_heal_undoes_all(
    machine: FakeMachine, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    net = NetFaults(state)
    said = net.isolate(node())
    assert said == (
        f"broker 2 isolated (its traffic and traffic to its port 30093 dropped: 4 rules in "
        f"{net.chain})"
    )
    assert machine.cgroups[4242] == f"/kconsole/{net.tag}/broker-2"
    assert machine.chains["OUTPUT"] == [jump_spec(net.tag)]
    assert len(machine.chains[net.chain]) == 4
    assert all(comment(net.tag, "broker-2") in r for r in machine.chains[net.chain])
    # The record: which node, since when, its cgroups, its rules (another process heals).
    (fault,) = record.load(state).values()
    assert (fault.node, fault.fault, fault.pid, fault.origin) == ("broker-2", "isolate", 4242, "/")
    assert fault.rules == machine.chains[net.chain] and fault.since > 0
    with pytest.raises(ClusterError, match="already in a network fault"):
        net.isolate(node())

    healed = NetFaults(state).heal("broker-2", "broker 2")
    assert healed.startswith("broker 2 healed (4 rules removed from KCONSOLE-")
    assert "back in cgroup /" in healed
    assert machine.kconsole_rules() == [] and net.chain not in machine.chains
    assert machine.cgroups[4242] == "/"
    assert not (machine.root / "kconsole").exists()
    assert not record.record_path(state).exists()
    assert NetFaults(state).heal("broker-2", "broker 2") == (
        "broker 2: no network fault in force (nothing to heal)"
    )


def test_heal_of_one_node_keeps_the_others_and_heal_all_removes_everything(
    machine: FakeMachine, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    machine.cgroups[5151] = "/"
    net = NetFaults(state)
    net.isolate(node())
    net.isolate(NetNode("broker-3", "broker 3", 5151, (30094,), "127.0.0.1"))
    net.heal("broker-2", "broker 2")
    assert list(record.load(state)) == ["broker-3"]
    assert len(machine.chains[net.chain]) == 4 and machine.chains["OUTPUT"] == [jump_spec(net.tag)]
    assert machine.cgroups == {4242: "/", 5151: f"/kconsole/{net.tag}/broker-3"}
    # An unrecorded rule left by a crash is removed with the chain: the chain is ours.
    machine.chains[net.chain].append(
        ["-p", "tcp", "-m", "comment", "--comment", comment(net.tag), "-j", "DROP"]
    )
    lines = NetFaults(state).heal_all()
    assert lines[0].startswith("broker-3 healed (4 rules removed")
    assert lines[1] == f"{net.chain} removed (1 unrecorded rules)"
    assert machine.kconsole_rules() == [] and set(machine.chains) == {"OUTPUT", "INPUT", "FORWARD"}
    assert machine.cgroups == {4242: "/", 5151: "/"} and not (machine.root / "kconsole").exists()
    assert NetFaults(state).heal_all() == []


def test_a_failure_half_way_undoes_what_was_done(
    machine: FakeMachine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    real = machine.run

    def no_cgroup_match(argv: list[str]) -> subprocess.CompletedProcess[str]:
        if "cgroup" in argv and "-A" in argv:
            return subprocess.CompletedProcess(
                argv, 2, "", "iptables v1.8.9: Couldn't load match `cgroup'"
            )
        return real(argv)

    monkeypatch.setattr(host, "run", no_cgroup_match)
    with pytest.raises(ClusterError, match="Couldn't load match `cgroup'"):
        NetFaults(state).isolate(node())
    assert machine.kconsole_rules() == [] and NetFaults(state).chain not in machine.chains
    assert machine.cgroups[4242] == "/" and not (machine.root / "kconsole").exists()
    assert record.load(state) == {}


@pytest.mark.parametrize(
    ("probe", "said"),
    [
        ("is_root", "root"),
        ("iptables_found", "the iptables command"),
        ("cgroup2_mount", "a cgroup v2 hierarchy"),
    ],
)
def test_refused_before_any_effect_when_something_is_missing(
    probe: str, said: str, machine: FakeMachine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    monkeypatch.setattr(host, probe, lambda *a: None if probe == "cgroup2_mount" else False)
    with pytest.raises(ClusterError, match=f"cannot isolate broker 2: network faults need {said}"):
        NetFaults(state).isolate(node())
    assert machine.calls == [] and machine.cgroups == {4242: "/"}
    assert list(state.iterdir()) == [] and list(machine.root.iterdir()) == []


def test_nothing_recorded_needs_nothing(
    machine: FakeMachine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cluster down` heals first: with no fault recorded and no root, it asks nothing."""
    state = tmp_path / "state"
    state.mkdir()
    monkeypatch.setattr(host, "is_root", lambda: False)
    assert NetFaults(state).heal_all() == []
    assert NetFaults(state).heal("broker-2", "broker 2").endswith("(nothing to heal)")
    assert machine.calls == []


def test_an_isolate_drill_predicts_like_a_silent_fault_and_a_heal_starts_nothing() -> None:
    """Isolated, a broker cannot heartbeat: gone when its session expires (like a kill), out
    of the ISRs after replica.lag.time.max.ms when that comes first (like a pause); healed, it
    starts no JVM: it registers again once its client finds its session expired."""
    from kconsole.drills.measure import measure
    from kconsole.models import BrokerConfig
    from kconsole.timeline import EventKind
    from tests.unit.test_impact_measure import _before, _ev, _registered

    fault = _ev(200.0, EventKind.ACTION, broker=3, new="isolate")
    short_lag = BrokerConfig(session_timeout_ms=20000, replica_lag_time_max_ms=10000)
    m = {x.name: x for x in measure(_before(), [fault], fault=fault, target=3, config=short_lag)}
    assert "replica.lag.time.max.ms" in m["fault -> out of every ISR it was in (2)"].predicted
    assert "when its session expires" in m["fault -> broker gone from ZooKeeper"].predicted
    healed = _registered("isolate", "heal", left=True)
    assert healed.seconds == pytest.approx(1.6)
    assert healed.predicted.startswith("about a second: once healed, its ZooKeeper client")
    early = _registered("isolate", "heal", left=False)
    assert early.note == "it never left ZooKeeper (healed before its session expired)"


def test_the_docker_backend_says_a_slow_fault_needs_a_rate_before_asking_the_engine() -> None:
    from kconsole.cluster.docker.control import DockerBrokerControl
    from kconsole.cluster.values import BrokerAction, NetLinks

    class NoEngine:
        def __getattr__(self, name: str) -> object:
            raise AssertionError(f"the engine was asked ({name})")

    control = DockerBrokerControl(NoEngine(), project="kconsole")
    with pytest.raises(ClusterError, match="a slow fault its rate too"):
        control.act(BrokerAction.SLOW, 2, links=NetLinks.parse("brokers"))
    with pytest.raises(ClusterError, match="names what it cuts the node from"):
        control.act(BrokerAction.PARTITION, 2)


def _ns_node(name: str, ip: str) -> object:
    from kconsole.cluster.net.faults import NetNode

    return NetNode(name, name.replace("-", " "), 100, (), ip)


def test_a_container_fault_matches_addresses_in_its_own_namespace() -> None:
    """The docker backend's rules (kconsole.cluster.net.netns): a partition drops what comes
    from and goes to each peer's address; clients are everything that is not another node nor
    loopback; one-way only what the node sends; isolate everything but loopback."""
    from kconsole.cluster.net.netns import fault_rules

    me, zk, b1, b3 = (
        _ns_node(n, ip)
        for n, ip in [("broker-2", "10.0.0.3"), ("zookeeper", "10.0.0.2"),
                      ("broker-1", "10.0.0.5"), ("broker-3", "10.0.0.4")]
    )  # fmt: skip
    nodes = [me, zk, b1, b3]
    assert fault_rules(me, peers=[zk]) == {  # type: ignore[arg-type]
        "in": [["-s", "10.0.0.2", "-j", "DROP"]],
        "out": [["-d", "10.0.0.2", "-j", "DROP"]],
    }
    assert fault_rules(me, peers=[zk, b1], one_way=True) == {  # type: ignore[arg-type]
        "in": [],
        "out": [["-d", "10.0.0.2", "-j", "DROP"], ["-d", "10.0.0.5", "-j", "DROP"]],
    }
    clients = fault_rules(me, peers=[zk], nodes=nodes, clients=True)  # type: ignore[arg-type]
    assert clients["in"] == [
        ["-s", "10.0.0.2", "-j", "DROP"],  # the peer cut
        ["-s", "10.0.0.5", "-j", "RETURN"],  # the other nodes are not clients
        ["-s", "10.0.0.4", "-j", "RETURN"],
        ["!", "-i", "lo", "-j", "DROP"],  # the rest: the gateway the host's clients come from
    ]
    assert clients["out"][-1] == ["!", "-o", "lo", "-j", "DROP"]
    slow = fault_rules(me, peers=[b1], rate=65_536, tag="abcd1234")  # type: ignore[arg-type]
    assert slow["out"] == [
        ["-d", "10.0.0.5", "-m", "hashlimit", "--hashlimit-above", "65536b/s",
         "--hashlimit-burst", "65536b", "--hashlimit-name", "kcabcd12b2o", "-j", "DROP"],
    ]  # fmt: skip
    assert slow["in"][0][:2] == ["-s", "10.0.0.5"] and "kcabcd12b2i" in slow["in"][0]
    assert fault_rules(me, isolate=True) == {  # type: ignore[arg-type]
        "in": [["!", "-i", "lo", "-j", "DROP"]],
        "out": [["!", "-o", "lo", "-j", "DROP"]],
    }


def test_a_container_fault_is_recorded_in_its_jump_rules() -> None:
    """The namespace's rules are their own record: what, since when, whose watchdog, links."""
    from kconsole.cluster.net.netns import jump_comment, parse_jump

    text = jump_comment("abcd1234", "broker-2", "partition", 1796574060.924, "from zookeeper", 77)
    assert (
        text == "kconsole:abcd1234:broker-2 partition since=1796574060.924 guard=77 from zookeeper"
    )
    fault = parse_jump("broker-2", text, 6)
    assert (fault.fault, fault.since, fault.guard, fault.links, fault.rules) == (
        "partition", 1796574060.924, 77, "from zookeeper", 6,
    )  # fmt: skip
    assert fault.described().startswith("partition from zookeeper since ")
    bare = parse_jump("broker-1", jump_comment("abcd1234", "broker-1", "isolate", 5.0, "", None), 2)
    assert (bare.fault, bare.guard, bare.links) == ("isolate", None, "")
    assert len(jump_comment("t", "n", "partition", 1.0, "x" * 400, 1)) == 255  # iptables' limit


def test_cluster_down_heals_first_and_stops_anyway_when_it_cannot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both modes' down heal before they stop anything; a heal that fails does not keep the
    processes running, but down says so, and keeps the record (no purge)."""
    from kconsole.cluster.kraft.cluster import KRaftCluster
    from kconsole.cluster.local.cluster import LocalCluster

    calls: list[Path] = []

    def heal_all(self: NetFaults) -> list[str]:
        calls.append(self.state_dir)
        return []

    monkeypatch.setattr(NetFaults, "heal_all", heal_all)
    LocalCluster(tmp_path / "zk").down()
    KRaftCluster(tmp_path / "kraft").down()
    assert calls == [tmp_path / "zk", tmp_path / "kraft"]

    def broken(self: NetFaults) -> list[str]:
        raise ClusterError("iptables said no")

    monkeypatch.setattr(NetFaults, "heal_all", broken)
    state = tmp_path / "zk"
    state.mkdir()
    with pytest.raises(
        ClusterError,
        match="stopped nothing, but the network faults are not all healed: iptables said no",
    ):
        LocalCluster(state).down(purge=True)
    assert state.exists()  # its record would be there: not purged


def test_a_node_with_a_network_fault_in_force_is_not_started(tmp_path: Path) -> None:
    """Started, it would find its ports still cut and never register: said before, instead of
    a start that times out (start, and up, of both modes ask this first)."""
    from kconsole.cluster.local.cluster import LocalCluster

    state = tmp_path / "zk"
    state.mkdir()
    fault = record.NodeFault("broker-2", "isolate", 4242, 1.0e9, "kconsole/x/broker-2", "/", [])
    record.save(state, "x", {"broker-2": fault})
    cluster = LocalCluster(state)
    cluster.refuse_if_isolated(["broker-1", "broker-3"])  # the others start
    with pytest.raises(ClusterError, match="cannot start broker-2: a network fault is in force"):
        cluster.refuse_if_isolated(["broker-1", "broker-2"])


def test_a_guarded_fault_gets_a_watchdog_that_its_heal_stops(
    machine: FakeMachine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kconsole.cluster.net import watchdog

    started: list[tuple[int, Path, str]] = []
    stopped: list[int] = []
    monkeypatch.setattr(watchdog, "start", lambda g, d, n: started.append((g, d, n)) or 777)
    monkeypatch.setattr(watchdog, "stop", stopped.append)
    state = tmp_path / "state"
    state.mkdir()
    said = NetFaults(state).isolate(node(), guard=555)
    assert said.endswith("; healed by a watchdog if process 555 ends first)")
    assert started == [(555, state, "broker-2")]
    fault = record.load(state)["broker-2"]
    assert (fault.guard, fault.watchdog) == (555, 777)
    NetFaults(state).heal("broker-2", "broker 2")
    assert stopped == [777]


def test_the_console_reads_resignations_only_while_a_fault_is_in_force_and_a_minute_after() -> None:
    """ZooKeeper mode, live: the brokers' logs are read for controller resignations while a
    network fault is in force and for a minute after the last heal (every 2 s, not at each
    0.25 s backend poll); a resignation found becomes a CONTROLLER_RESIGNED event at the time its
    log says, once."""
    from kconsole.config import Settings
    from kconsole.observer import ClusterObserver
    from kconsole.timeline import EventKind, diff

    now = [1000.0]
    faults: dict[int, str] = {}
    asked: list[float] = []
    logged: list[tuple[float, int]] = []

    def read(since: float) -> list[tuple[float, int]]:
        asked.append(since)
        return [r for r in logged if r[0] >= since]

    obs = ClusterObserver(
        Settings(bootstrap="127.0.0.1:1", zookeeper=""),
        clock=lambda: now[0],
        net_faults=lambda: dict(faults),
        resignations=read,
    )
    assert obs._read_proc_states() is False and asked == []  # no fault: no log is read
    faults[1] = "partition from zookeeper since 10:00:00 (2 rules)"
    before = obs.builder.build(now[0])
    assert obs._read_proc_states() is True and asked == [999.0]
    now[0] += 1.0
    obs._read_proc_states()
    assert asked == [999.0]  # read again only 2 s after
    del faults[1]  # healed; the zombie resigns a second later
    now[0] += 1.5
    logged.append((1002.8, 1))
    assert obs._read_proc_states() is True and asked == [999.0, 999.0]
    after = obs.builder.build(now[0])
    resigned = [e for e in diff(before, after) if e.kind is EventKind.CONTROLLER_RESIGNED]
    assert [(e.ts, e.broker) for e in resigned] == [(1002.8, 1)]
    assert [e.kind for e in diff(after, obs.builder.build(now[0] + 1))] == []  # once
    now[0] += 61.0  # a minute after the heal: the watch ends
    n = len(asked)
    assert obs._read_proc_states() is False and len(asked) == n
