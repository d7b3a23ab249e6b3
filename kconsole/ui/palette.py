"""The command palette's console commands: every action of the console, whatever pane has focus,
each saying what it acts on ("Stop broker 2", "Stop the controller (broker 1)").

Textual's palette offers the focused widget's bindings only (and matches their descriptions):
on the partitions pane "stop" found nothing, although C stops the controller from there. Here
each action is listed by what a user would type, with words besides its title ("restart",
"drill", "sigkill") that find it too. The palette only offers: each command calls the same
method as its key, so confirmation, read-only refusal and the audit log stay the command
layer's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.dom import DOMNode
from textual.screen import ModalScreen, Screen

from kconsole.cluster.values import BrokerAction
from kconsole.faults import FAULT_KINDS, keyed, keyed_words, primitive
from kconsole.models import BrokerState, ClusterSnapshot, Partition
from kconsole.ui.context import actions, state
from kconsole.ui.screens.group import GroupScreen
from kconsole.ui.screens.main import MainScreen
from kconsole.ui.widgets.tables import PartitionsTable


@dataclass(frozen=True)
class Command:
    """One palette entry."""

    title: str
    help: str
    run: Callable[[], object]
    words: str = ""
    likely: bool = True
    """False for an action the shown state makes unlikely (start an up broker): listed
    below the likely ones that match as well."""


class ConsoleCommands(Provider):
    """Every console action (see the module docstring)."""

    async def discover(self) -> Hits:
        for command in commands(self.screen):
            yield DiscoveryHit(command.title, command.run, help=command.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for command in commands(self.screen):
            score = matcher.match(command.title)
            if score <= 0 and command.words:
                score = matcher.match(command.words) / 2  # below a title that matches
            if not command.likely:
                score *= 0.6
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(command.title),
                    command.run,
                    text=command.title,
                    help=command.help,
                )


def commands(screen: Screen[object]) -> list[Command]:
    """The console commands offered on `screen`: everything on the main screen; on another
    full screen the broker and controller actions, refresh and help (what opens a screen is
    offered from the main screen only, so screens do not pile up); none on a dialog."""
    if isinstance(screen, ModalScreen):
        return []
    main = screen if isinstance(screen, MainScreen) else None
    out = [*_broker_commands(screen, drain=main is not None)]
    if main is not None:
        out.extend(_partition_commands(main))
        out.extend(_main_commands(main))
    out.extend(_app_commands(screen, main))
    return out


def _brokers_available(screen: DOMNode) -> tuple[bool, str]:
    door = actions(screen).commands
    if door is None:
        return False, "the console only observes"
    return door.broker_actions_available()


def _broker_commands(screen: Screen[object], *, drain: bool) -> Iterator[Command]:
    """Stop / kill / pause or resume / start / drain each broker, and the controller."""
    console = actions(screen)
    if console.commands is None:
        return  # no command layer: the broker keys are hidden too
    snap = state(screen).snapshot
    if snap is None:
        return
    available, reason = _brokers_available(screen)
    refused = "" if available else f"unavailable ({reason}): says why · "
    controller = snap.controller.id
    if controller is not None:
        chooser = partial(console.choose_broker_action, controller, "controller")
        yield Command(
            f"Controller actions (broker {controller})",
            f"{refused}choose: {keyed_words()} the controller",
            chooser,
        )
        for action in _faults(screen, controller):
            yield Command(
                f"{action.value.capitalize()} the controller (broker {controller})",
                f"{refused}{primitive(action).how}",
                partial(console.request_broker_action, action, controller, "controller"),
                primitive(action).words,
            )
    else:
        yield Command(
            "Controller actions: there is no active controller",
            "no broker is the controller now",
            partial(screen.notify, "there is no active controller", severity="warning"),
        )
    for broker in sorted(snap.brokers, key=lambda b: b.id):
        role = " (the controller)" if broker.id == controller else ""
        what = f"broker {broker.id} is {broker.state.value}"
        up = broker.state is BrokerState.UP
        heals = _heals()
        for action in (*_faults(screen, broker.id), *heals):
            # A fault is likely on a broker that is up, a heal on one that is not (a paused
            # broker's p is its resume, and a paused broker is not up).
            likely = primitive(action).destructive is up
            yield Command(
                f"{action.value.capitalize()} broker {broker.id}{role}",
                f"{refused}{what} · {primitive(action).how}",
                partial(console.request_broker_action, action, broker.id),
                primitive(action).words,
                likely,
            )
        if not drain:
            continue
        yield Command(
            f"Drain broker {broker.id}{role}",
            f"move every replica off broker {broker.id}: propose, check, then execute",
            partial(console.open_reassign, drain=broker.id),
            "decommission evacuate move replicas reassign",
        )


def _heals() -> tuple[BrokerAction, ...]:
    """The heals the palette lists per broker: those with a key (t: start), and the heal of
    each fault that has no key of its own (a network fault's heal), which no key reaches."""
    keyed_heals = [p.action for p in keyed() if not p.destructive]
    unkeyed = [k.heal.action for k in FAULT_KINDS if not k.apply.key]
    return tuple(dict.fromkeys([*keyed_heals, *unkeyed]))


def _faults(screen: DOMNode, broker_id: int) -> tuple[BrokerAction, ...]:
    """What each fault's key does to `broker_id` now (p on a paused broker: resume)."""
    # A partition needs the sides it cuts (--from): `kconsole cluster partition` and drills.
    return tuple(
        state(screen).key_action(k.apply.action, broker_id)
        for k in FAULT_KINDS
        if not k.needs_links
    )


def _selected(main: MainScreen) -> Partition | None:
    table = main.query_one(PartitionsTable)
    key = table.cursor_key
    return table.item(key) if key else None


def _partition_commands(main: MainScreen) -> Iterator[Command]:
    """What acts on the partition under the partitions table's cursor (saying which)."""
    table = main.query_one(PartitionsTable)
    snap = state(main).snapshot
    p = _selected(main)
    console = actions(main)
    if p is None:
        where = " (select a partition first)"
        key = topic = ""
    else:
        key, topic = p.key, p.topic
        where = ""
    if console.commands is not None and snap is not None:
        yield from _leader_commands(main, snap, p)
    yield Command(
        f"Elect preferred leaders{where or f': {key}, its topic or all off-preferred'}",
        "preferred leader election: choose the scope, then type the word shown",
        partial(table.action_elect, "preferred"),
        "preferred leader election rebalance leadership",
    )
    yield Command(
        f"Unclean leader election{where or f' for {key}'}",
        "only for an offline partition: a replica out of the ISR may lead (data can be lost)",
        partial(table.action_elect, "unclean"),
        "offline recover data loss",
    )
    yield Command(
        f"Reassign{where or f' topic {topic} (from {key})'}",
        "the reassignment screen: propose, check, execute, follow",
        table.action_reassign,
        "move partitions replicas replication factor",
    )
    on = f" {topic}" if topic else " (choose the topic in the dialog)"
    yield Command(
        f"Produce to{on}",
        "keyed messages with a partition trace",
        main.action_produce,
        "send write messages",
    )
    yield Command(
        f"Tail{on}",
        "follow the topic's records, without a consumer group",
        main.action_tail,
        "follow consume read records",
    )


def _leader_commands(
    main: MainScreen, snap: ClusterSnapshot, p: Partition | None
) -> Iterator[Command]:
    console = actions(main)
    table = main.query_one(PartitionsTable)
    if p is None or p.leader < 0:
        why = "select a partition first" if p is None else f"{p.key} has no leader"
        yield Command(
            f"Leader actions ({why})",
            f"{keyed_words()} the leader of the selected partition",
            table.action_leader_actions,
            keyed_words().replace(",", "").replace(" or ", " "),
        )
        return
    role = f"leader of {p.key}"
    available, reason = _brokers_available(main)
    refused = "" if available else f"unavailable ({reason}): says why · "
    yield Command(
        f"Leader actions for {p.key} (broker {p.leader})",
        f"{refused}choose: {keyed_words()} the partition's leader",
        table.action_leader_actions,
    )
    for action in _faults(main, p.leader):
        yield Command(
            f"{action.value.capitalize()} the leader of {p.key} (broker {p.leader})",
            f"{refused}{primitive(action).how}",
            partial(console.request_broker_action, action, p.leader, role),
            primitive(action).words,
        )


def _main_commands(main: MainScreen) -> Iterator[Command]:
    """The main screen's views, panes and groups."""
    view = main.partitions.view
    yield Command("Filter partitions by topic", "as you type; escape clears it", main.action_filter)
    if view.text:
        yield Command(f"Clear the topic filter ({view.text})", "", main.action_clear_filter)
    yield Command(
        "Show all partitions" if view.unhealthy_only else "Show only unhealthy partitions",
        "offline, under min ISR, under-replicated, not on the preferred leader, reassigning",
        main.action_toggle_unhealthy,
    )
    yield Command(
        "Hide internal topics" if view.show_internal else "Show internal topics",
        "__consumer_offsets and the like",
        main.action_toggle_internal,
    )
    sort = f"now by {view.sort}"
    yield Command("Sort partitions by the next column", sort, main.action_cycle_sort)
    yield Command("Reverse the partitions' sort", "", main.action_reverse_sort)
    for pane in ("brokers", "partitions", "groups", "events"):
        yield Command(f"Go to the {pane} pane", "", partial(main.action_focus_pane, pane), "focus")
    snap = state(main).snapshot
    for group in sorted(snap.groups if snap else (), key=lambda g: g.group_id):
        yield Command(
            f"Open consumer group {group.group_id}",
            "per-partition committed offset, log end, lag and owner, with a lag trend",
            partial(_open_group, main, group.group_id),
            "lag consumer",
        )


def _open_group(main: MainScreen, group_id: str) -> None:
    main.app.push_screen(GroupScreen(group_id))


def _app_commands(screen: Screen[object], main: MainScreen | None) -> Iterator[Command]:
    """The screens the main screen opens, and the console itself."""
    app = screen.app
    if main is not None:
        yield Command(
            "Jobs: PySpark streaming jobs",
            "start, watch progress, stop",
            main.action_jobs,
            "spark pyspark streaming start stop runs",
        )
        yield Command(
            "Drill timeline",
            "the latest stop / kill / pause: chart per broker, measurements, events; export",
            main.action_timeline,
            "measurements chart failover export",
        )
    yield Command(
        "Refresh: poll every source now", "", partial(app.run_action, "refresh"), "reload"
    )
    yield Command("Help: every key", "", partial(app.run_action, "help"), "keys")
