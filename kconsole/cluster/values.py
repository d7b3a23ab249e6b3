"""Values every layer names: what a backend can do to a node (BrokerAction) and the state it
sees a node's process in (ProcState). Data only, apart from the modules that act, so a screen
or a command line that names an action or a state imports nothing that acts."""

from __future__ import annotations

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
    HEAL = "heal"  # remove its rules


class ProcState(StrEnum):
    """A node's process (or container) as its backend sees it."""

    RUNNING = "running"
    PAUSED = "paused"
    STOPPED = "stopped"
