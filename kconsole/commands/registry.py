"""Every action that changes anything, registered in one place.

The console's keys, the command palette and the CLI reach a backend's modifying methods only
through a `Commands` method named here; tests enumerate this registry (read-only refuses each
one with no side effect) and every binding and CLI subcommand (each that mutates maps to one).
"""

from __future__ import annotations

from dataclasses import dataclass

from kconsole.faults import PRIMITIVES


@dataclass(frozen=True)
class CommandSpec:
    name: str
    summary: str
    destructive: bool  # needs a typed confirmation (TUI) or --yes (CLI)
    method: str  # the Commands method that runs it
    verb: str  # "refusing to <verb> <target>"


_SPECS = [
    # Each fault's primitive and each heal (kconsole.faults): broker.stop, broker.kill, ...
    *(
        CommandSpec(f"broker.{p.name}", p.summary, p.destructive, "broker", p.name)
        for p in PRIMITIVES
    ),
    CommandSpec(
        "cluster.up", "start the local cluster", False, "cluster_up", "start the local cluster in"
    ),
    CommandSpec(
        "cluster.down",
        "stop every process of the local cluster",
        False,
        "cluster_down",
        "stop the local cluster in",
    ),
    CommandSpec(
        "cluster.purge",
        "stop the local cluster and delete its data",
        True,
        "cluster_down",
        "delete the local cluster in",
    ),
    CommandSpec("produce", "write records to a topic", False, "produce", "produce to"),
    CommandSpec(
        "tail.group", "tail a topic as a member of a consumer group", False, "open_tail", "tail"
    ),
    CommandSpec("job.start", "start a PySpark job", False, "start_job", "start job"),
    CommandSpec("job.stop", "stop a PySpark job run", False, "stop_job", "stop job run"),
    CommandSpec(
        "reassign.execute",
        "move partition replicas (AlterPartitionReassignments)",
        True,
        "reassign_execute",
        "reassign",
    ),
    CommandSpec(
        "reassign.cancel",
        "cancel running reassignments (back to the original replicas)",
        True,
        "reassign_cancel",
        "cancel the reassignment of",
    ),
    CommandSpec(
        "reassign.unthrottle",
        "remove the replication throttles a reassignment set",
        False,
        "reassign_unthrottle",
        "remove the replication throttles of",
    ),
    CommandSpec(
        "elect.preferred",
        "elect the preferred replica as leader",
        True,
        "elect",
        "elect preferred leaders for",
    ),
    CommandSpec(
        "elect.unclean",
        "elect any live replica as leader (acknowledged data can be lost)",
        True,
        "elect",
        "run an UNCLEAN leader election for",
    ),
    CommandSpec(
        "drill.run",
        "run a failover drill (workload + broker fault)",
        True,
        "drill_run",
        "run a drill on",
    ),
]

REGISTRY: dict[str, CommandSpec] = {spec.name: spec for spec in _SPECS}


def spec(name: str) -> CommandSpec:
    """The registered command `name` (KeyError names the registry)."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"{name!r} is not a registered command ({', '.join(REGISTRY)})") from None
