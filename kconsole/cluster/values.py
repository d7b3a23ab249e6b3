"""Values every layer names: what a backend can do to a node (BrokerAction) and the state it
sees a node's process in (ProcState). Data only, apart from the modules that act, so a screen
or a command line that names an action or a state imports nothing that acts."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class BrokerAction(StrEnum):
    """A primitive a backend applies to one node's process or container. The faults built on
    them (and the restores that undo them) are declared in kconsole.faults."""

    STOP = "stop"  # graceful: SIGTERM / docker stop, controlled shutdown
    KILL = "kill"  # SIGKILL / docker kill
    PAUSE = "pause"  # SIGSTOP / docker pause
    RESUME = "resume"  # SIGCONT / docker unpause
    START = "start"
    # Network faults (kconsole.cluster.net): the process runs, its packets are dropped.
    ISOLATE = "isolate"  # iptables: what it sends and what is sent to its ports
    PARTITION = "partition"  # iptables: only its links to some (NetLinks)
    SLOW = "slow"  # iptables hashlimit: its links to some carry at most a rate (NetLinks.rate)
    HEAL = "heal"  # remove its rules


class ProcState(StrEnum):
    """A node's process (or container) as its backend sees it."""

    RUNNING = "running"
    PAUSED = "paused"
    STOPPED = "stopped"


# The sides a partition names by their role (a node is named as the commands name it: 2,
# broker:2, controller:1001).
SIDES = ("zookeeper", "quorum", "brokers", "clients")
# A slow link's rate, bytes per second. The floor is the largest packet a link hands iptables
# (64 KiB: loopback's MTU, and a TCP segmentation offload's size on a container's link):
# hashlimit charges a packet at most one second of the rate, so under that a link would carry
# one such packet a second whatever the rate said (measured: at 2,000 B/s a follower with
# about 30 kB/s to replicate stayed in one of its three ISRs for all 20 s of the fault).
MIN_RATE, MAX_RATE = 65_536, 1_000_000_000


@dataclass(frozen=True)
class NetLinks:
    """What a partition cuts a node from, as the user said it: `sides` (each one of SIDES or a
    node) and `one_way` (only what the node sends is dropped)."""

    sides: tuple[str, ...]
    one_way: bool = False
    rate: int | None = None  # a slow fault's: bytes per second each way (None: cut)

    @classmethod
    def parse(cls, text: str, one_way: bool = False, rate: int | None = None) -> NetLinks:
        """`--from zookeeper,broker:2` as given (ValueError says what is wrong)."""
        sides = tuple(dict.fromkeys(w.strip().lower() for w in text.split(",") if w.strip()))
        if not sides:
            raise ValueError(
                f"--from names what to cut the node from: {', '.join(SIDES)} or a node "
                "(2, broker:2, controller:1001), comma-separated"
            )
        for side in sides:
            kind, sep, num = side.partition(":")
            if side in SIDES or (not sep and kind.isdigit()):
                continue
            if sep and kind in ("broker", "controller") and num.isdigit():
                continue
            raise ValueError(
                f"--from: {side!r} is not {', '.join(SIDES)} or a node (2, broker:2, "
                "controller:1001)"
            )
        if rate is not None and not MIN_RATE <= rate <= MAX_RATE:
            raise ValueError(
                f"--rate is bytes per second, {MIN_RATE:,} to {MAX_RATE:,}, not {rate:,} "
                "(iptables lets a packet of up to 64 KiB through whole once a second: a lower "
                "rate would not hold)"
            )
        if rate is not None and one_way:
            raise ValueError("--one-way is a partition's: a slow link is slow both ways")
        return cls(sides, one_way, rate)

    def cuts_membership(self, kraft: bool) -> bool:
        """Whether the node is cut from what keeps it a member of the cluster: ZooKeeper (its
        session), or on KRaft the quorum (its heartbeats; a named controller counts). Else it
        stays registered and unfenced, and keeps every leadership it has. A slow link (a rate)
        cuts nothing."""
        if self.rate is not None:
            return False
        if kraft:
            return "quorum" in self.sides or any(s.startswith("controller:") for s in self.sides)
        return "zookeeper" in self.sides

    @property
    def words(self) -> str:
        """'from zookeeper, broker:2' (', one way' when so)."""
        said = "from " + ", ".join(self.sides) + (", one way" if self.one_way else "")
        return said + (f" at {self.rate:,} B/s" if self.rate is not None else "")
