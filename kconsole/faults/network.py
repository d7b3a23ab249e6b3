"""The network faults: isolate a node, or partition it from some of the others (zookeeper,
quorum, brokers, clients or named nodes), both healed by heal. The process keeps running; the
local cluster's backends drop its packets with iptables rules in the cluster's own chain,
matching the node's cgroup and ports (kconsole.cluster.net, docs/network-faults.md). The docker
backend makes all three with iptables rules in the node's own container's network namespace
(kconsole.cluster.docker.netfaults)."""

from __future__ import annotations

from kconsole.cluster.values import BrokerAction, ProcState
from kconsole.faults.kind import FaultKind, Primitive
from kconsole.faults.process import NODE_TARGETS, SESSION

ISOLATE_NOTE = (
    "An isolate cuts TCP (IPv4) to and from the node with iptables; the process keeps running "
    "and keeps what it holds, so the drill shows timeouts, elections and a zombie's return, "
    "not what a crash would lose."
)

ISOLATE = Primitive(
    BrokerAction.ISOLATE,
    destructive=True,
    summary="isolate a broker (iptables: drop its traffic and traffic to its ports)",
    what="cut off the network: nothing it sends arrives, nothing reaches its ports",
    how="iptables DROP, the process keeps running, asks first",
    words="network partition cut iptables netsplit",
    cli_help="Isolate a node (iptables drops what it sends and what is sent to its ports; the "
    "process keeps running). Needs root, iptables and a cgroup v2 hierarchy.",
    docker="",  # no docker verb: see docker_net
    docker_net="iptables rules in the node's container's own network namespace, made with "
    "nsenter (needs the engine on this machine, and root)",
    controller_what="cut off the network: the other voters and the brokers lose it",
)
HEAL = Primitive(
    BrokerAction.HEAL,
    destructive=False,
    summary="heal a node's network fault (remove its iptables rules)",
    what="remove the node's network rules: its traffic flows again",
    how="removes kconsole's rules for it",
    words="unisolate reconnect network restore",
    cli_help="Heal a node's network fault (remove kconsole's rules for it, read back).",
    docker="",
    docker_net="removes kconsole's rules from the node's container's network namespace",
)

ISOLATE_FAULT = FaultKind(
    "isolate",
    apply=ISOLATE,
    heal=HEAL,
    signal="iptables DROP of its traffic and of traffic to its ports (needs root)",
    done="isolated (its packets dropped): the others see it only by its silence",
    leaves=ProcState.RUNNING,  # the process runs; only its packets are dropped
    graceful=False,
    # It cannot heartbeat: ZooKeeper expires its session (KRaft: the controller fences it);
    # the leaders it follows drop it from their ISRs after replica.lag.time.max.ms when that
    # comes first.
    bounded_by=(*SESSION, "replica.lag.time.max.ms"),
    caveat=ISOLATE_NOTE,
    restart="",  # a heal starts nothing
    rejoin="about a second: once healed, its ZooKeeper client reconnects, finds its session "
    "expired and registers again (no JVM start, no log recovery)",
    targets=NODE_TARGETS,
)


PARTITION_NOTE = (
    "A partition cuts only the links named (TCP, IPv4) with iptables; the node and everything "
    "else keep running. What it loses depends on the sides: cut from ZooKeeper or the quorum it "
    "is expired or fenced and may act as a zombie until it learns the new epoch; cut from its "
    "followers while producers reach it, acks=1 writes it acknowledges alone are lost when "
    "another replica led meanwhile."
)

PARTITION = Primitive(
    BrokerAction.PARTITION,
    destructive=True,
    summary="partition a node from some of the others (iptables: only those links)",
    what="cut only the links named: the rest of its traffic flows",
    how="iptables DROP of the named links, the process keeps running, asks first",
    words="network partition split brain zombie cut links iptables netsplit",
    cli_help="Partition a node from some of the others: --from zookeeper, quorum, brokers, "
    "clients or named nodes (iptables drops only those links, both ways unless --one-way; the "
    "process keeps running). Needs root, iptables and a cgroup v2 hierarchy.",
    docker="",  # no docker verb: see docker_net
    docker_net="iptables rules in the node's container's own network namespace, made with "
    "nsenter (needs the engine on this machine, and root)",
    controller_what="cut only the links named from the other nodes",
)

PARTITION_FAULT = FaultKind(
    "partition",
    apply=PARTITION,
    heal=HEAL,
    signal="iptables DROP of its links to --from only (needs root)",
    done="partitioned (the links named are cut): the others on them see only its silence",
    leaves=ProcState.RUNNING,
    graceful=False,
    bounded_by=(*SESSION, "replica.lag.time.max.ms"),
    caveat=PARTITION_NOTE,
    restart="",
    rejoin="about a second: once healed, its links carry traffic again; a node whose session "
    "expired registers again, a leader that was replaced truncates to the new leader's log",
    targets=NODE_TARGETS,
    needs_links=True,
)


SLOW_NOTE = (
    "A slow fault drops what exceeds a rate (bytes per second, each way) on the links named, "
    "with iptables' hashlimit: a policer, not a queue, so TCP sees losses and backs off. No "
    "latency is added (this kernel has no netem). The node keeps running and stays a member. "
    "A follower falls behind only where what it must fetch exceeds the rate, and the lowest "
    "rate is 64 KiB/s: hashlimit charges a packet at most a second of the rate, and a loopback "
    "packet carries up to 64 KiB, so a lower cap would not hold."
)

SLOW = Primitive(
    BrokerAction.SLOW,
    destructive=True,
    summary="slow a node's links to some of the others (iptables hashlimit: a rate cap)",
    what="cap its links named at a rate: what exceeds it is dropped",
    how="iptables hashlimit on the named links, the process keeps running, asks first",
    words="slow bandwidth throttle rate lag follower hashlimit",
    cli_help="Slow a node's links to some of the others to --rate bytes per second each way "
    "(--from, default: the other brokers; iptables hashlimit drops what exceeds it, no latency "
    "is added). A follower that cannot keep up drops out of the ISR after "
    "replica.lag.time.max.ms. Needs root, iptables and a cgroup v2 hierarchy.",
    docker="",  # no docker verb: see docker_net
    docker_net="iptables hashlimit rules in the node's container's own network namespace, "
    "made with nsenter (needs the engine on this machine, and root)",
    controller_what="cap its links named at a rate",
)

SLOW_FAULT = FaultKind(
    "slow",
    apply=SLOW,
    heal=HEAL,
    signal="iptables hashlimit: its links to --from (default: the brokers) capped at "
    "--slow-rate bytes/s (needs root)",
    done="slowed (its links named capped at a rate): it falls behind, it is not gone",
    leaves=ProcState.RUNNING,
    graceful=False,
    bounded_by=("replica.lag.time.max.ms",),
    caveat=SLOW_NOTE,
    restart="",
    rejoin="seconds: once healed, its links carry their full rate and it catches up",
    targets=NODE_TARGETS,
    needs_links=True,
)
