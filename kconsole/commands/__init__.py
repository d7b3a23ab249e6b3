"""The command layer: the one door for every modifying action (see bus.py and registry.py)."""

from kconsole.commands.auditlog import AuditLog
from kconsole.commands.bus import Commands
from kconsole.commands.door import Confirm, never, yes
from kconsole.commands.registry import REGISTRY, CommandSpec
from kconsole.errors import NotConfirmed, ReadOnlyError

__all__ = [
    "REGISTRY",
    "AuditLog",
    "CommandSpec",
    "Commands",
    "Confirm",
    "NotConfirmed",
    "ReadOnlyError",
    "never",
    "yes",
]
