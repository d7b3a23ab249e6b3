"""kconsole's iptables rules, as data: the tag that names a cluster, its chain, the comment each
rule carries, and a fault's rule set (a list of (match, action) in the cluster's own chain).
Nothing here runs anything: kconsole.cluster.net.host does, with these argv lists."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

TABLE = "filter"
# Every packet a local process sends passes OUTPUT, loopback packets included (they pass INPUT
# after it): one jump from there reaches every packet of a local cluster, whose nodes all
# listen on 127.0.0.1.
HOOK = "OUTPUT"
# DROP, not REJECT --reject-with tcp-reset: a cut network answers nothing, so the peers find
# out by their own timeouts (sessions, request timeouts, replica lag), as in a real partition.
# A reset would tell them at once and drill a different failure.
DROP = "DROP"
# Wait this long for the xtables lock held by another iptables run.
LOCK_WAIT_S = 5
CGROUP_ROOT = "kconsole"  # our directory under the cgroup v2 hierarchy


def cluster_tag(state_dir: Path) -> str:
    """A short tag, stable for one cluster: from its state dir's absolute path."""
    return hashlib.sha256(str(Path(state_dir).resolve()).encode()).hexdigest()[:8]


def chain_name(tag: str) -> str:
    """The cluster's own chain (iptables allows 28 characters; this is 17)."""
    return f"KCONSOLE-{tag}"


def comment(tag: str, node: str = "") -> str:
    """What every rule of the cluster carries: 'kconsole:TAG' (a node's: 'kconsole:TAG:NODE')."""
    return f"kconsole:{tag}" + (f":{node}" if node else "")


def cgroup_path(tag: str, node: str = "") -> str:
    """The node's cgroup, relative to the cgroup v2 root, as `-m cgroup --path` takes it."""
    return f"{CGROUP_ROOT}/{tag}" + (f"/{node}" if node else "")


@dataclass(frozen=True)
class Rule:
    """One rule of a fault: what it matches, and what is done to those packets."""

    match: tuple[str, ...]
    action: str = DROP  # DROP, RETURN, a chain of ours, or "CONNMARK --set-xmark M/MASK"

    def spec(self, tag: str, node: str) -> list[str]:
        """The rule as iptables takes it after `-A CHAIN` (or -C, -D), with its comment."""
        return [
            *self.match,
            "-m",
            "comment",
            "--comment",
            comment(tag, node),
            "-j",
            *self.action.split(),
        ]


@dataclass(frozen=True)
class Conn:
    """A TCP connection a node had open before it was moved to its cgroup (IPv4)."""

    local_ip: str
    local_port: int
    remote_ip: str
    remote_port: int


def isolate_rules(
    tag: str, node: str, host: str, ports: tuple[int, ...], conns: tuple[Conn, ...] = ()
) -> list[Rule]:
    """Isolate `node`: drop what it sends (its cgroup), what anyone sends to its listener
    `ports` on `host` and what it answers from them, and what it sends on the connections it
    opened before it was moved (a socket keeps the cgroup it was created in)."""
    rules = [Rule(("-p", "tcp", "-m", "cgroup", "--path", cgroup_path(tag, node)))]
    for port in ports:
        rules.append(Rule(("-p", "tcp", "-d", host, "--dport", str(port))))
        # Its answers on connections accepted before the move (an accepted socket is the
        # listener's child, in the listener's cgroup).
        rules.append(Rule(("-p", "tcp", "-s", host, "--sport", str(port))))
    for c in conns:
        rules.append(
            Rule(
                (
                    "-p",
                    "tcp",
                    "-s",
                    c.local_ip,
                    "--sport",
                    str(c.local_port),
                    "-d",
                    c.remote_ip,
                    "--dport",
                    str(c.remote_port),
                )
            )
        )
    return rules


def sub_chain(tag: str, node: str) -> str:
    """A node's own chain under the cluster's (a partition from its clients needs RETURNs, which
    must end only that fault's rules): KCONSOLE-TAG-b2, -c1001, -n1, -zk (at most 28)."""
    short = {"broker": "b", "controller": "c", "node": "n"}
    kind, _, num = node.partition("-")
    return f"{chain_name(tag)}-{short.get(kind, kind[:2])}{num}"[:28]


def conn_mark(tag: str) -> str:
    """The connection mark of the cluster's one-way cuts, as VALUE/MASK: the high 16 bits only
    (from the tag), so the low bits any other user of connection marks keeps are untouched."""
    return f"0x{int(tag[:4], 16) or 1:04x}0000/0xffff0000"


def slow_mark(tag: str, node: str) -> str:
    """The connection mark of a node's slow links (its connections opened while the fault is
    in force), as conn_mark's: a node's own, so two slowed nodes' marks never mix, and never
    the cluster's one-way mark."""
    value = int(hashlib.sha256(f"{tag}:{node}".encode()).hexdigest()[:4], 16) or 1
    if value == (int(tag[:4], 16) or 1):
        value ^= 1
    return f"0x{value:04x}0000/0xffff0000"


def _conn_match(src_port: int, dst_port: int, host_ip: str) -> tuple[str, ...]:
    return (
        "-p",
        "tcp",
        "-s",
        host_ip,
        "--sport",
        str(src_port),
        "-d",
        host_ip,
        "--dport",
        str(dst_port),
    )


@dataclass(frozen=True)
class Peer:
    """A node on the other side of a partition: its cgroup (ours, once moved) and ports."""

    name: str
    ports: tuple[int, ...]


@dataclass(frozen=True)
class Cut:
    """What a partition cuts: `node` (listening on `ports` at `host`) from `peers` and, with
    `clients`, from every process that is not a node of the cluster; `one_way`: only what the
    node sends is dropped. `conns`: the node's connections open before the moves, each with
    the node that holds its other end ("" a client's), as (Conn, owner)."""

    node: str
    host: str
    ports: tuple[int, ...]
    peers: tuple[Peer, ...]
    clients: bool = False
    one_way: bool = False
    conns: tuple[tuple[Conn, str], ...] = ()
    rate: int | None = None  # slow: what exceeds this many bytes/s each way is dropped


def limit(tag: str, node: str, way: str, rate: int) -> tuple[str, ...]:
    """A hashlimit match: packets over `rate` bytes/s of node's `way` ('o' what it sends, 'i'
    what it receives). Every rule of one way shares the one bucket its name gives (a hashlimit
    without a mode keeps one entry per name). The bucket holds a second of the rate, and the
    burst is one refill of it. hashlimit charges a packet at most a full bucket, so a rate
    below the largest packet would let one such packet through whole each second: the
    values.MIN_RATE floor is that packet (64 KiB, loopback's and a segmentation offload's)."""
    kind, _, num = node.partition("-")
    name = f"kc{tag[:6]}{kind[:1]}{num}{way}"[:15]  # hashlimit names: 15 characters at most
    return (
        "-m", "hashlimit", "--hashlimit-above", f"{rate}b/s",
        "--hashlimit-burst", f"{rate}b", "--hashlimit-name", name,
    )  # fmt: skip


def partition_rules(tag: str, cut: Cut) -> tuple[list[Rule], list[Rule]]:
    """The rules of a partition: (in the cluster's chain, in the node's own chain).

    New connections are told apart by the cgroup of the socket that sends (every node on
    either side is moved into its own cgroup first): the node's to a peer's ports, a peer's to
    the node's ports. Connections opened before the moves keep their old cgroup: each gets an
    exact rule per direction cut. One-way: the node's packets only; what a peer or client
    sends to the node's ports marks the connection, and the node's answers on a marked
    connection are dropped. Clients: what reaches the node's ports from a socket outside the
    cluster's cgroups goes through the node's own chain, where the cluster's own connections
    opened before the moves RETURN and the rest is dropped (or marked). Slow (`cut.rate`): the
    same matches, each dropping only what exceeds the rate (a bucket per direction); a new
    connection is marked too, so the answers on it (sent from a listening port, whose sockets
    keep the listener's cgroup) are held to the rate as well."""
    me = cgroup_path(tag, cut.node)
    mark = conn_mark(tag)
    cut_in = f"CONNMARK --set-xmark {mark}" if cut.one_way else DROP  # to the node's ports
    # slow: over the rate only (what the node sends, what it receives: a bucket each)
    out_ = limit(tag, cut.node, "o", cut.rate) if cut.rate else ()
    in_ = limit(tag, cut.node, "i", cut.rate) if cut.rate else ()
    slow = slow_mark(tag, cut.node) if cut.rate else ""
    tcp = ("-p", "tcp")
    main: list[Rule] = []
    own: list[Rule] = []

    def answers(port: int, over: tuple[str, ...]) -> Rule:
        """What port sends on a slow connection (one of the node's, marked)."""
        return Rule(
            (*tcp, "-s", cut.host, "--sport", str(port), "-m", "connmark", "--mark", slow, *over)
        )

    for peer in cut.peers:
        them = cgroup_path(tag, peer.name)
        for port in peer.ports:  # the node's new connections to the peer
            match = (*tcp, "-m", "cgroup", "--path", me, "-d", cut.host, "--dport", str(port))
            if slow:
                main += [Rule(match, f"CONNMARK --set-xmark {slow}"), answers(port, in_)]
            main.append(Rule((*match, *out_)))
        for port in cut.ports:  # the peer's new connections to the node
            match = (*tcp, "-m", "cgroup", "--path", them, "-d", cut.host, "--dport", str(port))
            if slow:
                main.append(Rule(match, f"CONNMARK --set-xmark {slow}"))
            main.append(Rule((*match, *in_), cut_in))
    if slow:  # the node's answers on the connections marked to it
        main += [answers(port, out_) for port in cut.ports]
    names = {p.name for p in cut.peers}
    for conn, owner in cut.conns:
        if (owner in names) or (cut.clients and not owner):
            sent = _conn_match(conn.local_port, conn.remote_port, conn.local_ip)
            main.append(Rule((*sent, *out_)))
            if not cut.one_way:
                got = _conn_match(conn.remote_port, conn.local_port, conn.remote_ip)
                main.append(Rule((*got, *in_)))
    if cut.clients:
        chain = sub_chain(tag, cut.node)
        outside = ("-m", "cgroup", "!", "--path", cgroup_path(tag))
        for port in cut.ports:
            main.append(Rule((*tcp, *outside, "-d", cut.host, "--dport", str(port)), chain))
        for conn, owner in cut.conns:
            if owner:  # a node's connection opened before its move: not a client's
                back = _conn_match(conn.remote_port, conn.local_port, conn.remote_ip)
                own.append(Rule(back, "RETURN"))
        if slow:
            own.append(Rule(tcp, f"CONNMARK --set-xmark {slow}"))
        own.append(Rule((*tcp, *in_), cut_in))
    if cut.one_way:
        for port in cut.ports:
            answer = (*tcp, "-s", cut.host, "--sport", str(port), "-m", "connmark", "--mark", mark)
            main.append(Rule(answer))
    return main, own


def iptables(*args: str) -> list[str]:
    """An iptables command line on our table."""
    return ["iptables", "-w", str(LOCK_WAIT_S), "-t", TABLE, *args]


def jump_spec(tag: str) -> list[str]:
    """The one rule in OUTPUT that sends packets through the cluster's chain."""
    return ["-m", "comment", "--comment", comment(tag), "-j", chain_name(tag)]


def new_chain(tag: str) -> list[str]:
    return iptables("-N", chain_name(tag))


def append_rule(tag: str, spec: list[str]) -> list[str]:
    return iptables("-A", chain_name(tag), *spec)


def check_rule(chain: str, spec: list[str]) -> list[str]:
    return iptables("-C", chain, *spec)


def delete_rule(chain: str, spec: list[str]) -> list[str]:
    return iptables("-D", chain, *spec)


def insert_jump(tag: str) -> list[str]:
    """First in OUTPUT: our chain only drops (it never accepts), so being first changes the
    verdict of no packet it does not match, and no earlier ACCEPT can let the cut through."""
    return iptables("-I", HOOK, "1", *jump_spec(tag))


def list_chain(tag: str) -> list[str]:
    return iptables("-S", chain_name(tag))


def flush_chain(tag: str) -> list[str]:
    return iptables("-F", chain_name(tag))


def delete_chain(tag: str) -> list[str]:
    return iptables("-X", chain_name(tag))
