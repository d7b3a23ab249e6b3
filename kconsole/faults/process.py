"""The process faults: stop, kill and pause a node's process (or container), healed by start
and resume. Each backend applies the primitives: the local cluster with SIGTERM, SIGKILL,
SIGSTOP / SIGCONT and a new process; docker compose with docker stop, kill, pause / unpause and
start."""

from __future__ import annotations

from kconsole.cluster.values import BrokerAction, ProcState
from kconsole.faults.kind import FaultKind, Primitive

# The --target forms a node fault takes (kconsole.drills.spec.resolve_targets reads them).
NODE_TARGETS = (
    "controller",
    "active-controller",
    "controller:ID",
    "quorum-majority",
    "broker:ID",
    "leader:TOPIC/PARTITION",
)
SESSION = ("zookeeper.session.timeout.ms", "broker.session.timeout.ms")

PAGE_CACHE_NOTE = (
    "A process kill does not drop the OS page cache, so these drills do not show "
    "power-loss behaviour."
)
PAUSE_NOTE = (
    "A pause freezes the process and keeps everything it holds (its memory, the OS page "
    "cache): the drill shows timeouts and elections, not what a crash would lose."
)
# A node started again: what the restore waits for before it is registered again.
START_UP_AFTER_KILL = "JVM start-up and log recovery after the kill: a few seconds here"
START_UP_AFTER_STOP = "JVM start-up (a clean shutdown leaves no log to recover): a few seconds here"

STOP = Primitive(
    BrokerAction.STOP,
    destructive=True,
    summary="stop a broker (SIGTERM, controlled shutdown)",
    what="controlled shutdown: leadership moves away first",
    how="controlled shutdown, asks first",
    words="shutdown sigterm halt",
    cli_help="Stop a node gracefully (SIGTERM: a broker's controlled shutdown).",
    docker="stop",
    key="s",
    label="Stop",
    controller_what="SIGTERM: the controller shuts down (no partitions to move)",
    tooltip="Stop the selected broker: controlled shutdown (asks first)",
)
KILL = Primitive(
    BrokerAction.KILL,
    destructive=True,
    summary="kill a broker (SIGKILL)",
    what="no shutdown at all: the process dies at once",
    how="SIGKILL, no shutdown, asks first",
    words="sigkill crash",
    cli_help="Kill a node (SIGKILL: no controlled shutdown).",
    docker="kill",
    key="k",
    label="Kill",
    tooltip="Kill the selected broker: no shutdown (asks first)",
)
PAUSE = Primitive(
    BrokerAction.PAUSE,
    destructive=True,
    summary="pause a broker (SIGSTOP)",
    what="freeze the process, sockets stay open",
    how="SIGSTOP, sockets stay open, asks first",
    words="freeze sigstop hang",
    cli_help="Pause a node (SIGSTOP: frozen with its connections open).",
    docker="pause",
    key="p",
    label="Pause/resume",
    tooltip="Pause the selected broker (asks first), or resume it",
)
RESUME = Primitive(
    BrokerAction.RESUME,
    destructive=False,
    summary="resume a paused broker (SIGCONT)",
    what="unfreeze the paused process",
    how="SIGCONT",
    words="unpause unfreeze sigcont",
    cli_help="Resume a paused node (SIGCONT).",
    docker="unpause",
)
START = Primitive(
    BrokerAction.START,
    destructive=False,
    summary="start a stopped broker",
    what="start the stopped broker again",
    how="starts the stopped process",
    words="restart bring back up",
    cli_help="Start a stopped node (same config and data); wait until it is back "
    "(registered; KRaft: unfenced, a controller back in the quorum and caught up).",
    docker="start",
    key="t",
    label="Start",
    controller_what="start the stopped controller again",
    tooltip="Start the selected broker",
)

STOP_FAULT = FaultKind(
    "stop",
    apply=STOP,
    heal=START,
    signal="SIGTERM (controlled shutdown)",
    done="stopped (SIGTERM: a leader resigns at once)",
    leaves=ProcState.STOPPED,
    graceful=True,
    bounded_by=("controlled.shutdown.enable",),
    caveat=PAGE_CACHE_NOTE,
    restart=START_UP_AFTER_STOP,
    targets=NODE_TARGETS,
)
KILL_FAULT = FaultKind(
    "kill",
    apply=KILL,
    heal=START,
    signal="SIGKILL",
    done="killed (SIGKILL)",
    leaves=ProcState.STOPPED,
    graceful=False,
    bounded_by=SESSION,
    caveat=PAGE_CACHE_NOTE,
    restart=START_UP_AFTER_KILL,
    targets=NODE_TARGETS,
)
PAUSE_FAULT = FaultKind(
    "pause",
    apply=PAUSE,
    heal=RESUME,
    signal="SIGSTOP",
    done="paused (SIGSTOP): the others see it only by its silence",
    leaves=ProcState.PAUSED,
    graceful=False,
    # Frozen with its sockets open: the followers drop it from their ISRs after
    # replica.lag.time.max.ms when that comes before the session's expiry.
    bounded_by=(*SESSION, "replica.lag.time.max.ms"),
    caveat=PAUSE_NOTE,
    restart="",  # a resumed process starts nothing
    # Its ZooKeeper client reconnects, finds its session expired and registers anew.
    rejoin="about a second: the resumed process finds its session expired and "
    "registers again (no JVM start, no log recovery)",
    repeat_heals=True,
    targets=NODE_TARGETS,
)
