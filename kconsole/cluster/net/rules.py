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
    action: str = DROP

    def spec(self, tag: str, node: str) -> list[str]:
        """The rule as iptables takes it after `-A CHAIN` (or -C, -D), with its comment."""
        return [*self.match, "-m", "comment", "--comment", comment(tag, node), "-j", self.action]


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
