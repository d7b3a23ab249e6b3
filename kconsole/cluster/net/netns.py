"""Network faults inside each node's own network namespace: the docker backend's.

A container has a network namespace of its own, with its own address on the project's network,
so a fault needs no cgroup and no port matching there: its rules go into two chains of ours in
the node's namespace, KCONSOLE-TAG-in (jumped to from INPUT) and KCONSOLE-TAG-out (from
OUTPUT), run with the host's iptables under `nsenter --target PID --net` (the image needs no
iptables). Nothing of the host, of another container or of another project is matched, no
policy changes, and only our chains are ever flushed.

The rules are their own record: the two jump rules carry, in their comment, the fault, since
when and the links it cuts, so whoever reads the namespace (`kconsole drill heal`, the console,
the watchdog of a drill killed before its restore) knows what is in force; removing the
container removes them with it. The outcome is said only after every rule was read back."""

from __future__ import annotations

import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass

from kconsole.cluster.errors import ClusterError
from kconsole.cluster.net import host
from kconsole.cluster.net.faults import NetNode
from kconsole.cluster.net.rules import DROP, LOCK_WAIT_S, TABLE, comment, limit

RETURN = "RETURN"
# What of ours a namespace holds: (jumps, chains, rules), each as `iptables -S` words.
Read = tuple[list[list[str]], list[str], list[list[str]]]
HOOKS = (("INPUT", "in", "-s", "-i"), ("OUTPUT", "out", "-d", "-o"))


@dataclass(frozen=True)
class NsFault:
    """A fault in force, as its jump rules say."""

    node: str
    fault: str  # isolate, partition
    since: float  # epoch seconds
    links: str  # "from zookeeper, brokers (one way)"; "" for isolate
    rules: int
    guard: int | None = None  # the drill's process a watchdog heals it after

    def described(self) -> str:
        """In words, as the local cluster's record says it: 'partition from … since 10:47:03'."""
        at = time.strftime("%H:%M:%S", time.localtime(self.since))
        what = f"{self.fault} {self.links}" if self.links else self.fault
        return f"{what} since {at} ({self.rules} rules)"


def chain(tag: str, way: str) -> str:
    """Our chain for one direction in a node's namespace (way: in, out)."""
    return f"KCONSOLE-{tag}-{way}"


def in_ns(pid: int, *args: str) -> list[str]:
    """An iptables command line run in process `pid`'s network namespace."""
    return ["nsenter", "--target", str(pid), "--net", "iptables", "-w", str(LOCK_WAIT_S),
            "-t", TABLE, *args]  # fmt: skip


def fault_rules(
    me: NetNode,
    *,
    isolate: bool = False,
    peers: Sequence[NetNode] = (),
    nodes: Sequence[NetNode] = (),
    clients: bool = False,
    one_way: bool = False,
    rate: int | None = None,
    tag: str = "",
) -> dict[str, list[list[str]]]:
    """The matches (and targets) of a fault's rules, by way (in, out), without comments:
    isolate drops everything but loopback; a partition drops what comes from (in) and goes to
    (out) each peer's address; with `clients`, also everything that is not a node of `nodes`
    (the cluster's nodes) nor loopback. `one_way`: only what the node sends. `rate` (slow):
    the same matches drop only what exceeds that many bytes/s, a hashlimit bucket per way
    (named from `tag`; hashlimit's buckets are the namespace's own)."""
    out: dict[str, list[list[str]]] = {"in": [], "out": []}
    for _hook, way, addr, dev in HOOKS:
        if one_way and way == "in":
            continue
        if isolate:
            out[way].append(["!", dev, "lo", "-j", DROP])
            continue
        over = list(limit(tag, me.name, way[0], rate)) if rate else []
        out[way] += [[addr, p.host, *over, "-j", DROP] for p in peers]
        if clients:
            cut = {p.name for p in peers} | {me.name}
            out[way] += [[addr, n.host, "-j", RETURN] for n in nodes if n.name not in cut]
            out[way].append(["!", dev, "lo", *over, "-j", DROP])
    return out


def jump_comment(
    tag: str, node: str, fault: str, since: float, links: str, guard: int | None
) -> str:
    """The jump rules' comment: our tag and the node, then what the fault is (iptables keeps
    256 characters of a comment)."""
    text = f"{comment(tag, node)} {fault} since={since:.3f}"
    text += f" guard={guard}" if guard is not None else ""
    return (text + (f" {links}" if links else ""))[:255]


def parse_jump(node: str, text: str, rules: int) -> NsFault:
    """A jump rule's comment as jump_comment wrote it."""
    words = text.split()
    fault = words[1] if len(words) > 1 else "?"
    values: dict[str, str] = {}
    rest = words[2:]
    while rest and "=" in rest[0] and rest[0].split("=", 1)[0] in ("since", "guard"):
        key, _, value = rest.pop(0).partition("=")
        values[key] = value
    try:
        since = float(values.get("since", "0"))
        guard = int(values["guard"]) if "guard" in values else None
    except ValueError:
        since, guard = 0.0, None
    return NsFault(node, fault, since, " ".join(rest), rules, guard)


class NsFaults:
    """The network faults of one compose project, by the tag that names it."""

    def __init__(self, tag: str):
        self.tag = tag

    def apply(
        self,
        node: NetNode,
        fault: str,
        links: str,
        matches: dict[str, list[list[str]]],
        guard: int | None = None,
    ) -> int:
        """Add `node`'s fault: its chains, their rules, then the jumps; read back. How many
        rules (the jumps not counted). Undone when it fails half-way."""
        host.refuse_if_missing(f"{fault} {node.label}", in_container=True)
        held = self.in_force([node])
        if node.name in held:
            f = held[node.name]
            at = time.strftime("%H:%M:%S", time.localtime(f.since))
            raise ClusterError(
                f"{node.label} is already in a network fault ({f.fault}, since {at}); heal it first"
            )
        mine = comment(self.tag, node.name)
        note = jump_comment(self.tag, node.name, fault, time.time(), links, guard)
        try:
            self._remove(node)  # whatever an earlier crash left: the chains are ours
            for hook, way, _a, _d in HOOKS:
                name = chain(self.tag, way)
                host.must(in_ns(node.pid, "-N", name))
                for m in matches.get(way, []):
                    host.must(in_ns(node.pid, "-A", name, *_commented(m, mine)))
                host.must(in_ns(node.pid, "-I", hook, "1", *self._jump(way, note)))
            found, _chains, rules = self._read(node)
            listed, jumps = len(rules), len(found)
            want = sum(len(v) for v in matches.values())
            if listed != want or jumps != len(HOOKS):
                raise ClusterError(
                    f"{fault} {node.label}: {listed} of {want} rules and {jumps} of "
                    f"{len(HOOKS)} jumps found when read back"
                )
        except BaseException as exc:
            try:
                self._remove(node)
            except Exception as undo:
                raise ClusterError(
                    f"{exc}; undoing it failed too: {undo} (run `kconsole drill heal --all`)"
                ) from exc
            raise
        return listed

    def heal(self, node: NetNode) -> str:
        """Remove `node`'s fault (its jumps, then its chains); what was removed, read back
        ('' when there was nothing)."""
        read = self._read(node)
        jumps, chains, _rules = read
        if not jumps and not chains:
            return ""
        host.refuse_if_missing(f"heal {node.label}", in_container=True)
        held = parse_jump(node.name, _comment(jumps[0]), 0) if jumps else None
        n = self._remove(node, read)
        jumps, chains, _rules = self._read(node)
        if jumps or chains:
            raise ClusterError(f"healing {node.label}: rules of ours are still in its namespace")
        for_s = f"; {held.fault} for {time.time() - held.since:.1f} s" if held else ""
        return f"{n} rules and the jumps from INPUT and OUTPUT removed in its namespace{for_s}"

    def in_force(self, nodes: Sequence[NetNode]) -> dict[str, NsFault]:
        """The faults the nodes' namespaces hold, by node name (read from the jump rules; one
        nsenter per node)."""
        out = {}
        for node in nodes:
            jumps, _chains, rules = self._read(node)
            if jumps:
                out[node.name] = parse_jump(node.name, _comment(jumps[0]), len(rules))
        return out

    # -- the namespace ----------------------------------------------------------------------
    def _jump(self, way: str, note: str) -> list[str]:
        return ["-m", "comment", "--comment", note, "-j", chain(self.tag, way)]

    @staticmethod
    def _listing(node: NetNode) -> list[list[str]]:
        """Every rule and chain of the node's namespace's filter table, as `iptables -S` lists
        them, split into words (one nsenter)."""
        done = host.run(in_ns(node.pid, "-S"))
        if done.returncode != 0:
            raise ClusterError(
                f"cannot list {node.label}'s rules in its namespace: "
                + (done.stderr or done.stdout).strip()
            )
        return [shlex.split(line) for line in done.stdout.splitlines() if line.strip()]

    def _jumps(self, listing: list[list[str]]) -> list[list[str]]:
        """Our jump rules in a listing (hook first: INPUT ..., OUTPUT ...)."""
        ours = {chain(self.tag, way) for _h, way, _a, _d in HOOKS}
        return [
            w[1:]
            for w in listing
            if len(w) > 3 and w[0] == "-A" and w[1] in ("INPUT", "OUTPUT") and w[-1] in ours
            and w[-2] == "-j"
        ]  # fmt: skip

    def _chains(self, listing: list[list[str]]) -> list[str]:
        ours = {chain(self.tag, way) for _h, way, _a, _d in HOOKS}
        return [w[1] for w in listing if len(w) == 2 and w[0] == "-N" and w[1] in ours]

    def _rules(self, listing: list[list[str]]) -> list[list[str]]:
        ours = {chain(self.tag, way) for _h, way, _a, _d in HOOKS}
        return [w for w in listing if len(w) > 2 and w[0] == "-A" and w[1] in ours]

    def _read(self, node: NetNode) -> Read:
        """(jumps, chains, rules) of ours in the node's namespace, from one listing."""
        listing = self._listing(node)
        return self._jumps(listing), self._chains(listing), self._rules(listing)

    def _remove(self, node: NetNode, read: Read | None = None) -> int:
        """Our jumps (each by its exact spec as listed), then our chains; the rules removed.
        `read`: the namespace as just read (else it is read here)."""
        jumps, chains, rules = read or self._read(node)
        for hook, *spec in jumps:
            host.must(in_ns(node.pid, "-D", hook, *spec))
        for name in chains:
            host.must(in_ns(node.pid, "-F", name))
            host.must(in_ns(node.pid, "-X", name))
        return len(rules)


def _comment(words: list[str]) -> str:
    """The comment of a rule split into words ('' when it has none)."""
    return words[words.index("--comment") + 1] if "--comment" in words[:-1] else ""


def _commented(match: list[str], note: str) -> list[str]:
    """A rule's match with our comment before its target."""
    at = match.index("-j")
    return [*match[:at], "-m", "comment", "--comment", note, *match[at:]]
