"""What a fault is, as data: the primitives a backend applies to a node (Primitive) and the
faults built on them (FaultKind), with every word the console, the command line, the drill and
its report say about them. Declarations only: nothing here acts."""

from __future__ import annotations

from dataclasses import dataclass

from kconsole.cluster.values import BrokerAction, ProcState


@dataclass(frozen=True)
class Primitive:
    """One thing a backend does to one node (every backend implements each: the local cluster
    with a signal, docker compose with a docker verb), and how each surface names it."""

    action: BrokerAction
    destructive: bool  # takes a running node away: confirmed first (typed id, or --yes)
    summary: str  # the command registry and the audit log: "stop a broker (SIGTERM, ...)"
    what: str  # the dialogs: what it does to the node
    how: str  # the palette: how, and whether it asks first
    words: str  # the palette: other words that find it
    cli_help: str  # `kconsole cluster <name>`'s first sentence
    docker: str  # the docker verb that applies it to a node's container
    # A network fault on the docker backend: how it is made there ("": not there, or no
    # network fault).
    docker_net: str = ""
    key: str = ""  # the key on the brokers pane and in the chooser ("": reached another way)
    label: str = ""  # the key's label in the footer
    tooltip: str = ""  # the key's tooltip on the brokers pane
    # What it does to a KRaft node that is a controller only ("": the same as to a broker).
    controller_what: str = ""

    @property
    def name(self) -> str:
        """The name the command line, the registry ("broker.<name>") and events use."""
        return self.action.value


@dataclass(frozen=True)
class FaultKind:
    """A fault a drill or a key applies to a node, and the primitive that heals it.

    Everything that names faults reads the list of these (kconsole.faults.FAULT_KINDS): the
    drill's --fault choices and its runner, the timeline's measurements and export, the
    command registry and confirmation, the keys, the palette and the dialogs."""

    name: str  # --fault NAME; the `new` of the drill's ACTION event
    apply: Primitive
    heal: Primitive
    signal: str  # what it is, for --fault's help: "SIGTERM (controlled shutdown)"
    done: str  # the node as the KRaft prediction says it: "stopped (SIGTERM: ...)"
    leaves: ProcState  # the state the node is left in until healed
    # The node announces its going (controlled shutdown: leadership moves and it leaves every
    # ISR at once) rather than being noticed by a timeout.
    graceful: bool
    # The broker settings that bound how long the others take to notice (the blast radius,
    # the KRaft fencing line and the drill's predictions read the values of these).
    bounded_by: tuple[str, ...]
    caveat: str  # what a drill with it cannot show (the audit's caveat)
    restart: str  # predicted restore -> registered again, when healing restarts the node
    # predicted restore -> registered again, when healing restarts nothing (restart == "")
    rejoin: str = ""
    # Its key on a node already left so (paused) heals it instead (p pauses and resumes).
    repeat_heals: bool = False
    targets: tuple[str, ...] = ()  # the --target forms it takes
    # It cuts some links only: applied with the sides to cut (--from; NetLinks), so no key and
    # no palette entry reaches it without them.
    needs_links: bool = False

    def action_for(self, state: ProcState | None) -> BrokerAction:
        """The primitive its key applies to a node in `state` (a paused node's p: resume)."""
        if self.repeat_heals and state is self.leaves:
            return self.heal.action
        return self.apply.action
