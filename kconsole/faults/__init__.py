"""Faults, each declared once (kconsole.faults.kind): what it targets, the primitive each
backend applies and the one that heals it, whether it is destructive, the settings that bound
its effect, and its label, key and help. Everything that names faults reads these lists.

The network faults (isolate and partition, healed by heal) are in network.py.
A new fault kind is a module beside process.py declaring its FaultKind (and any new Primitive,
which each backend then implements), added to FAULT_KINDS below."""

from __future__ import annotations

from kconsole.cluster.values import BrokerAction
from kconsole.faults.kind import FaultKind, Primitive
from kconsole.faults.network import (
    HEAL,
    ISOLATE,
    ISOLATE_FAULT,
    PARTITION,
    PARTITION_FAULT,
    SLOW,
    SLOW_FAULT,
)
from kconsole.faults.process import (
    KILL,
    KILL_FAULT,
    PAUSE,
    PAUSE_FAULT,
    RESUME,
    START,
    STOP,
    STOP_FAULT,
)

__all__ = [
    "FAULT_KINDS",
    "PRIMITIVES",
    "FaultKind",
    "Primitive",
    "fault_kind",
    "fault_names",
    "fault_of",
    "keyed",
    "keyed_words",
    "primitive",
]

FAULT_KINDS: tuple[FaultKind, ...] = (
    STOP_FAULT,
    KILL_FAULT,
    PAUSE_FAULT,
    ISOLATE_FAULT,
    PARTITION_FAULT,
    SLOW_FAULT,
)
# Every primitive a backend implements, in the order keys, choosers and commands list them.
PRIMITIVES: tuple[Primitive, ...] = (
    STOP,
    KILL,
    PAUSE,
    RESUME,
    START,
    ISOLATE,
    PARTITION,
    SLOW,
    HEAL,
)


def fault_names() -> tuple[str, ...]:
    """The names --fault takes, in the order they are listed."""
    return tuple(k.name for k in FAULT_KINDS)


def fault_kind(name: str) -> FaultKind:
    """The fault called `name` (KeyError names the faults there are)."""
    for kind in FAULT_KINDS:
        if kind.name == name:
            return kind
    raise KeyError(f"{name!r} is not a fault ({', '.join(fault_names())})")


def fault_of(action: BrokerAction | str) -> FaultKind | None:
    """The fault whose primitive `action` is (None: a heal, or no fault's)."""
    return next((k for k in FAULT_KINDS if k.apply.action.value == str(action)), None)


def primitive(action: BrokerAction | str) -> Primitive:
    """How every surface names `action`."""
    return next(p for p in PRIMITIVES if p.action.value == str(action))


def keyed() -> tuple[Primitive, ...]:
    """The primitives that have a key on the brokers pane and in the chooser, in key order."""
    return tuple(p for p in PRIMITIVES if p.key)


def keyed_words() -> str:
    """'stop, kill, pause or start': what the keys do, for the help that lists them."""
    names = [p.name for p in keyed()]
    return ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else "".join(names)
