"""Apply, verify and heal a cluster's network faults (isolate, for now).

Isolating a node: its JVM is moved into a cgroup v2 directory of its own
(<cgroup2>/kconsole/TAG/NODE, checked in /proc/PID/cgroup), the fault is recorded in the state
dir, and rules go into the cluster's own chain KCONSOLE-TAG, jumped to from OUTPUT by one rule:
drop what the node's cgroup sends, what anyone sends to its listener ports and what it answers
from them, and what it sends on connections it opened before the move. Every rule carries the
comment kconsole:TAG[:NODE]; nothing else on the machine is matched, no policy changes, and only
our chain is ever flushed. The outcome is said only after every rule was read back.

Healing deletes the node's rules (then, when none is left, the jump and the chain), moves the
process back to the cgroup it came from and removes our directories."""

from __future__ import annotations

import fcntl
import os
import shlex
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from kconsole.cluster.errors import ClusterError
from kconsole.cluster.net import host, record, watchdog
from kconsole.cluster.net.record import NodeFault, involved
from kconsole.cluster.net.rules import (
    CGROUP_ROOT,
    HOOK,
    Cut,
    Peer,
    append_rule,
    cgroup_path,
    chain_name,
    check_rule,
    cluster_tag,
    comment,
    delete_chain,
    delete_rule,
    flush_chain,
    insert_jump,
    iptables,
    isolate_rules,
    jump_spec,
    list_chain,
    new_chain,
    partition_rules,
    sub_chain,
)
from kconsole.cluster.values import SIDES, NetLinks

T = TypeVar("T")


@dataclass(frozen=True)
class NetNode:
    """A node as a network fault sees it: its process and the ports it listens on."""

    name: str  # its process name in the state dir: broker-2, controller-1001
    label: str  # how the user reads it: broker 2
    pid: int
    ports: tuple[int, ...]
    host: str  # the address it listens on (127.0.0.1)


@dataclass(frozen=True)
class Links:
    """What a partition cuts a node from: `peers` (nodes of the cluster), with `clients`
    every process that is not one of `nodes` (all the cluster's running nodes), and `one_way`
    only what the node sends. `words`: the sides as the user named them."""

    peers: tuple[NetNode, ...]
    nodes: tuple[NetNode, ...]
    clients: bool = False
    one_way: bool = False
    words: str = ""
    rate: int | None = None  # slow: bytes per second each way (None: cut)

    @property
    def fault(self) -> str:
        """The fault these links make: slow (a rate) or partition."""
        return "slow" if self.rate is not None else "partition"


def links_for(
    me: NetNode,
    links: NetLinks,
    nodes: list[NetNode],
    groups: dict[str, list[str] | str],
    resolve: Callable[[str], str],
) -> Links:
    """The partition `links` names, for node `me`: `nodes` are the cluster's running nodes,
    `groups` the node names each role side stands for (a side missing from it is refused with
    its message: `groups[side]` a str), `resolve` the node name of a node side (ClusterError
    when there is none). Stopped nodes are not on any side (they send nothing)."""
    running = {n.name: n for n in nodes}
    names: list[str] = []
    for side in links.sides:
        if side == "clients":
            continue
        if side in SIDES:
            group = groups.get(side)
            if not isinstance(group, list):
                raise ClusterError(str(group))
            names += group
        else:
            name = resolve(side)
            if name == me.name:
                raise ClusterError(f"partition {me.label} from itself? ({side!r} is {me.label})")
            if name not in running:
                raise ClusterError(f"--from {side}: it is not running (nothing to cut)")
            names.append(name)
    peers = tuple(running[n] for n in dict.fromkeys(names) if n in running and n != me.name)
    clients = "clients" in links.sides
    if not peers and not clients:
        raise ClusterError(f"partition {me.label} {links.words}: no running node is on that side")
    return Links(peers, tuple(nodes), clients, links.one_way, links.words, links.rate)


class NetFaults:
    """The network faults of the local cluster in `state_dir`."""

    def __init__(self, state_dir: Path):
        self.state_dir = Path(state_dir)
        self.tag = cluster_tag(self.state_dir)
        self.chain = chain_name(self.tag)

    def in_force(self) -> dict[str, NodeFault]:
        """The faults recorded as in force, by node name."""
        return record.load(self.state_dir)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """One kconsole process at a time changes this cluster's rules (a lock on its state dir,
        so that nothing new is written there)."""
        fd = os.open(self.state_dir, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    # -- isolate ----------------------------------------------------------------------------
    def isolate(self, node: NetNode, guard: int | None = None) -> str:
        """Cut `node` off from everyone, and everyone from it; what was done, once verified.
        With `guard` (a drill's pid), a watchdog heals it if that process ends first."""
        host.refuse_if_missing(f"isolate {node.label}")
        with self._locked():
            faults = self.in_force()
            self._refuse_held([node], faults)
            specs = self._guarded(node.name, lambda: self._apply(node, faults), guard)
        ports = ", ".join(map(str, node.ports))
        guarded = f"; healed by a watchdog if process {guard} ends first" if guard else ""
        return (
            f"{node.label} isolated (its traffic and traffic to its port"
            f"{'s' if len(node.ports) > 1 else ''} {ports} dropped: {len(specs)} rules in "
            f"{self.chain}{guarded})"
        )

    def _guarded(self, name: str, apply: Callable[[], T], guard: int | None) -> T:
        """`apply` node `name`'s fault (under the lock): undone when it fails half-way; with
        `guard`, a watchdog heals it if that process ends first."""
        try:
            done = apply()
        except BaseException as exc:
            try:  # undo whatever was done
                self._heal_locked(name, self.in_force().get(name))
            except Exception as undo:
                raise ClusterError(
                    f"{exc}; undoing it failed too: {undo} (run `kconsole cluster heal --all`)"
                ) from exc
            raise
        if guard is not None:
            faults = self.in_force()
            pid = watchdog.start(guard, self.state_dir, name)
            faults[name] = replace(faults[name], guard=guard, watchdog=pid)
            record.save(self.state_dir, self.tag, faults)
        return done

    @staticmethod
    def _refuse_held(nodes: list[NetNode], faults: dict[str, NodeFault]) -> None:
        """ClusterError when a node in `nodes` is held by a fault in force (its own, or one
        that moved it into our cgroups): one network fault per node at a time."""
        for node in nodes:
            for fault in faults.values():
                if node.name in involved(fault):
                    since = time.strftime("%H:%M:%S", time.localtime(fault.since))
                    whose = "" if fault.node == node.name else f" on {fault.node}"
                    raise ClusterError(
                        f"{node.label} is already in a network fault ({fault.fault}{whose}, "
                        f"since {since}); heal it first"
                    )

    # -- partition --------------------------------------------------------------------------
    def partition(self, node: NetNode, links: Links, guard: int | None = None) -> str:
        """Cut `node` off from `links` only (both directions unless one-way); what was done,
        once verified. With `guard`, a watchdog heals it if that process ends first."""
        host.refuse_if_missing(f"{links.fault} {node.label}")
        if not links.peers and not links.clients:
            raise ClusterError(f"{links.fault} {node.label} from what? (nothing on the other side)")
        with self._locked():
            faults = self.in_force()
            movers = self._movers(node, links)
            self._refuse_held(movers, faults)
            specs = self._guarded(
                node.name, lambda: self._apply_partition(node, links, movers, faults), guard
            )
        guarded = f"; healed by a watchdog if process {guard} ends first" if guard else ""
        rules = f"{specs} rules in {self.chain}"
        if links.rate is not None:
            way = f"what exceeds {links.rate:,} B/s each way is dropped"
            return f"{node.label} slowed {links.words} ({way}: {rules}{guarded})"
        way = "what it sends only" if links.one_way else "both ways"
        return f"{node.label} partitioned {links.words} ({way}: {rules}{guarded})"

    @staticmethod
    def _movers(node: NetNode, links: Links) -> list[NetNode]:
        """The nodes moved into our cgroups: the node and its peers (with clients: every node,
        so that a socket outside the cluster's cgroups is a client's)."""
        out = [node, *links.peers]
        if links.clients:
            out += [n for n in links.nodes if n.name not in {m.name for m in out}]
        return out

    def _move_in(self, root: Path, node: NetNode) -> tuple[str, str]:
        """Move `node` into its cgroup of ours; (ours, where it was)."""
        origin = host.cgroup_of(node.pid)
        if origin is None:
            raise ClusterError(f"{node.label} (pid {node.pid}) is not running")
        ours = cgroup_path(self.tag, node.name)
        (root / ours).mkdir(parents=True, exist_ok=True)
        host.move(node.pid, root / ours)
        if host.cgroup_of(node.pid) != f"/{ours}":
            raise ClusterError(
                f"{node.label} (pid {node.pid}) did not move to cgroup /{ours} "
                f"(it is in {host.cgroup_of(node.pid)})"
            )
        return ours, origin

    def _apply_partition(
        self, node: NetNode, links: Links, movers: list[NetNode], faults: dict[str, NodeFault]
    ) -> int:
        """Move, record, add the rules, read them back; how many rules."""
        root = host.cgroup2_mount()
        assert root is not None  # refuse_if_missing said so before
        # Recorded before the first move: a crash half-way leaves what to move back.
        faults[node.name] = NodeFault(
            node.name, links.fault, node.pid, time.time(), cgroup_path(self.tag, node.name),
            host.cgroup_of(node.pid) or "/", links=links.words,
        )  # fmt: skip
        record.save(self.state_dir, self.tag, faults)
        moved: dict[str, list[str]] = {}
        origin = "/"
        for m in movers:
            ours, was = self._move_in(root, m)
            if m.name == node.name:
                origin = was
            else:
                moved[m.name] = [ours, was]
            faults[node.name] = replace(faults[node.name], origin=origin, moved=dict(moved))
            record.save(self.state_dir, self.tag, faults)
        # Listed after the moves: a connection opened since is in its node's cgroup already.
        owners = {
            end: n.name
            for n in links.nodes
            if n.name != node.name
            for end in host.local_ends(n.pid)
        }
        conns = tuple(
            (c, owners.get((c.remote_ip, c.remote_port), "")) for c in host.tcp_ends(node.pid)
        )
        cut = Cut(
            node.name, node.host, node.ports,
            tuple(Peer(p.name, p.ports) for p in links.peers),
            clients=links.clients, one_way=links.one_way, conns=conns, rate=links.rate,
        )  # fmt: skip
        main, own = partition_rules(self.tag, cut)
        specs = [r.spec(self.tag, node.name) for r in main]
        own_specs = [r.spec(self.tag, node.name) for r in own]
        chain = sub_chain(self.tag, node.name) if own else ""
        faults[node.name] = replace(
            faults[node.name], rules=specs, chain=chain, chain_rules=own_specs
        )
        record.save(self.state_dir, self.tag, faults)  # before any rule
        if not host.holds(list_chain(self.tag)):
            host.must(new_chain(self.tag))
        if chain:
            host.must(iptables("-N", chain))
            for spec in own_specs:
                host.must(iptables("-A", chain, *spec))
        for spec in specs:
            host.must(append_rule(self.tag, spec))
        if not host.holds(check_rule(HOOK, jump_spec(self.tag))):
            host.must(insert_jump(self.tag))
        absent = [s for s in specs if not host.holds(check_rule(self.chain, s))]
        absent += [s for s in own_specs if not host.holds(check_rule(chain, s))]
        if absent or not host.holds(check_rule(HOOK, jump_spec(self.tag))):
            what = f"{len(absent)} of its rules" if absent else f"the jump from {HOOK}"
            raise ClusterError(f"partitioning {node.label}: {what} not found when read back")
        listed = len(self._node_lines(node.name)) + len(self._lines_of(chain))
        if listed != len(specs) + len(own_specs):
            raise ClusterError(
                f"partitioning {node.label}: {listed} rules of it are listed, "
                f"not {len(specs) + len(own_specs)}"
            )
        return listed

    def _apply(self, node: NetNode, faults: dict[str, NodeFault]) -> list[list[str]]:
        """Move, record, add the rules, read them back; the rules' specs."""
        root = host.cgroup2_mount()
        assert root is not None  # refuse_if_missing said so before
        ours, origin = self._move_in(root, node)
        # Listed after the move: a connection opened since is in the node's cgroup already.
        conns = host.tcp_conns(node.pid, node.ports)
        rules = isolate_rules(self.tag, node.name, node.host, node.ports, tuple(conns))
        specs = [r.spec(self.tag, node.name) for r in rules]
        faults[node.name] = NodeFault(
            node.name, "isolate", node.pid, time.time(), ours, origin, specs
        )
        record.save(self.state_dir, self.tag, faults)  # before any rule: a crash leaves a record
        if not host.holds(list_chain(self.tag)):
            host.must(new_chain(self.tag))
        for spec in specs:
            host.must(append_rule(self.tag, spec))
        if not host.holds(check_rule(HOOK, jump_spec(self.tag))):
            host.must(insert_jump(self.tag))
        # Read back: every rule is there, the jump too, and no other rule of this node.
        absent = [s for s in specs if not host.holds(check_rule(self.chain, s))]
        if absent or not host.holds(check_rule(HOOK, jump_spec(self.tag))):
            what = f"{len(absent)} of its rules" if absent else f"the jump from {HOOK}"
            raise ClusterError(f"isolating {node.label}: {what} not found when read back")
        listed = len(self._node_lines(node.name))
        if listed != len(specs):
            raise ClusterError(
                f"isolating {node.label}: {self.chain} lists {listed} rules of it, not {len(specs)}"
            )
        return specs

    # -- heal -------------------------------------------------------------------------------
    def heal(self, name: str, label: str) -> str:
        """End the network fault on node `name`; what was done, once verified."""
        faults = self.in_force()
        if name not in faults and not host.is_root():
            return f"{label}: no network fault recorded in {self.state_dir} (nothing to heal)"
        host.refuse_if_missing(f"heal {label}")
        with self._locked():
            fault = self.in_force().get(name)
            said = self._heal_locked(name, fault)
        return (
            f"{label} healed ({said})"
            if said
            else f"{label}: no network fault in force (nothing to heal)"
        )

    def heal_all(self) -> list[str]:
        """End every network fault of this cluster, and remove its chain and cgroups; one line
        per thing removed ([] when there was nothing: then nothing needs root)."""
        faults = self.in_force()
        root = host.cgroup2_mount()
        leftover_cgroup = root is not None and (root / cgroup_path(self.tag)).exists()
        if not faults and not leftover_cgroup and not (host.is_root() and host.iptables_found()):
            return []
        host.refuse_if_missing("heal the network faults")
        out = []
        with self._locked():
            for name, fault in self.in_force().items():
                said = self._heal_locked(name, fault)
                out.append(f"{name} healed ({said})")
            # Whatever no record names (a crash between two steps): the chains are ours.
            if host.holds(list_chain(self.tag)) or self._sub_chains():
                n = len(self._chain_lines())
                self._remove_chain()
                out.append(f"{self.chain} removed ({n} unrecorded rules)")
            if root is not None and (root / cgroup_path(self.tag)).exists():
                self._remove_cgroups(root, cgroup_path(self.tag), "/")
                out.append(f"cgroup /{cgroup_path(self.tag)} removed")
        return out

    def _heal_locked(self, name: str, fault: NodeFault | None) -> str:
        """Remove node `name`'s rules, its cgroup, its record; what was removed ('' nothing)."""
        done = []
        lines = self._node_lines(name)
        for line in lines:
            host.must(delete_rule(self.chain, shlex.split(line)[2:]))
        if lines:
            done.append(f"{len(lines)} rules removed from {self.chain}")
        chain = fault.chain if fault is not None and fault.chain else sub_chain(self.tag, name)
        if self._chain_exists(chain):
            n = len(self._lines_of(chain))
            host.must(iptables("-F", chain))
            host.must(iptables("-X", chain))
            done.append(f"{chain} removed ({n} rules)")
        if host.holds(list_chain(self.tag)) and not self._chain_lines():
            self._remove_chain()
            done.append(f"the chain and its jump from {HOOK} removed")
        root = host.cgroup2_mount()
        ours = fault.cgroup if fault is not None else cgroup_path(self.tag, name)
        origin = fault.origin if fault is not None else "/"
        if root is not None and (root / ours).exists():
            self._remove_cgroups(root, ours, origin)
            done.append(f"back in cgroup {origin}")
        for other, (theirs, was) in (fault.moved if fault is not None else {}).items():
            if root is not None and (root / theirs).exists():
                self._remove_cgroups(root, theirs, was)
                done.append(f"{other} back in cgroup {was}")
        if fault is not None:
            if fault.watchdog is not None and fault.watchdog != os.getpid():
                watchdog.stop(fault.watchdog)  # healed first: nothing left for it to do
            faults = self.in_force()
            faults.pop(name, None)
            record.save(self.state_dir, self.tag, faults)
            done.append(f"{fault.fault} for {time.time() - fault.since:.1f} s")
        # Read back: nothing of the node is left.
        if self._node_lines(name):
            raise ClusterError(f"healing {name}: rules of it are still in {self.chain}")
        if root is not None and (root / ours).exists():
            raise ClusterError(f"healing {name}: cgroup /{ours} is still there")
        return "; ".join(done)

    def _chain_lines(self) -> list[str]:
        """The rules of our chain as `iptables -S` lists them ([] when it is not there)."""
        return self._lines_of(self.chain)

    @staticmethod
    def _lines_of(chain: str) -> list[str]:
        """The rules of `chain` as `iptables -S` lists them ([] when it is not there)."""
        if not chain:
            return []
        done = host.run(iptables("-S", chain))
        if done.returncode != 0:
            return []
        return [ln for ln in done.stdout.splitlines() if ln.startswith(f"-A {chain} ")]

    @staticmethod
    def _chain_exists(chain: str) -> bool:
        return bool(chain) and host.holds(iptables("-S", chain))

    def _sub_chains(self) -> list[str]:
        """The nodes' own chains of this cluster that exist (KCONSOLE-TAG-*)."""
        done = host.run(iptables("-S"))
        if done.returncode != 0:
            return []
        prefix = f"-N {self.chain}-"
        return [ln[3:] for ln in done.stdout.splitlines() if ln.startswith(prefix)]

    def _node_lines(self, name: str) -> list[str]:
        """The rules of our chain that carry node `name`'s comment."""
        mine = comment(self.tag, name)
        return [ln for ln in self._chain_lines() if _comment_of(ln) == mine]

    def _remove_chain(self) -> None:
        """The jump from OUTPUT (by its exact spec, every copy), then our chain: flushed and
        deleted. Nothing else is touched."""
        while host.holds(check_rule(HOOK, jump_spec(self.tag))):
            host.must(delete_rule(HOOK, jump_spec(self.tag)))
        if host.holds(list_chain(self.tag)):
            host.must(flush_chain(self.tag))
            host.must(delete_chain(self.tag))
        for chain in self._sub_chains():  # nothing jumps to them now
            host.must(iptables("-F", chain))
            host.must(iptables("-X", chain))

    @staticmethod
    def _remove_cgroups(root: Path, ours: str, origin: str) -> None:
        """Move every process under root/ours back to `origin`, remove ours (deepest first),
        then its parents of ours that are left empty (kconsole/TAG, kconsole)."""
        back = root / origin.lstrip("/")
        top = root / ours
        dirs = sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
        for d in [*dirs, top]:
            for pid in host.members(d):
                with suppress(OSError):  # it exited meanwhile
                    host.move(pid, back)
            try:
                d.rmdir()
            except OSError as exc:
                raise ClusterError(f"cannot remove cgroup {d}: {exc}") from exc
        parent = top.parent
        while parent != root and parent.is_relative_to(root / CGROUP_ROOT):
            try:
                parent.rmdir()
            except OSError:
                break  # another node's or another cluster's directory is still in it
            parent = parent.parent


def _comment_of(line: str) -> str | None:
    """The comment of a rule as `iptables -S` lists it."""
    words = shlex.split(line)
    for i, w in enumerate(words[:-1]):
        if w == "--comment":
            return words[i + 1]
    return None
