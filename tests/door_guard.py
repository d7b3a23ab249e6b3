"""The door, checked while every test runs: each modifying method of a backend (broker control,
the local cluster, the job manager, the reassignment client, the producer, a group tail's join,
the drill runner) is wrapped so that a call whose nearest kconsole caller is not in
kconsole.commands is recorded as a violation, and tests/conftest.py fails the test that made it.

"Nearest kconsole caller" skips the backends' own modules (a LocalBrokerControl calling its
LocalCluster, the drill runner calling the act callback the door gave it). A call that reaches
test or bench code first is the test's own set-up (a fixture starting the cluster), not the
product's: allowed.
"""

from __future__ import annotations

import functools
import importlib
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

# (module, class or None for a function, method names): what changes a cluster, a process or
# a container. tests/unit/test_door_guard.py checks every one still exists.
GUARDED: tuple[tuple[str, str | None, tuple[str, ...]], ...] = (
    ("kconsole.cluster.local.control", "LocalBrokerControl", ("act",)),
    ("kconsole.cluster.docker.control", "DockerBrokerControl", ("act",)),
    ("kconsole.cluster.kraft.control", "KRaftNodeControl", ("act",)),
    (
        "kconsole.cluster.kraft.cluster",
        "KRaftCluster",
        (
            "up",
            "down",
            "ensure_topic",
            "stop_node",
            "kill_node",
            "pause_node",
            "resume_node",
            "start_node",
        ),
    ),
    (
        "kconsole.cluster.local.cluster",
        "LocalCluster",
        (
            "up",
            "down",
            "create_topic",
            "stop_zookeeper",
            "start_zookeeper",
            "stop_broker",
            "kill_broker",
            "pause_broker",
            "resume_broker",
            "start_broker",
        ),
    ),
    ("kconsole.jobs.manager", "JobManager", ("start", "stop", "stop_attached")),
    (
        "kconsole.cluster.reassign.client",
        "ReassignClient",
        ("execute", "cancel", "remove_throttles", "elect"),
    ),
    ("kconsole.cluster.produce.send", None, ("produce_records",)),
    # a producer kept open: made (it asks a broker for a producer id) and closed
    ("kconsole.cluster.produce.send", "WarmProducer", ("start", "close")),
    ("kconsole.cluster.tailer", "Tailer", ("join",)),
    ("kconsole.drills.runner", "DrillRunner", ("run",)),
)

# Frames in these packages are the backends themselves, calling each other.
BACKENDS = ("kconsole.cluster.", "kconsole.jobs.", "kconsole.drills.")
DOOR = "kconsole.commands."


@dataclass(frozen=True)
class Violation:
    target: str  # e.g. JobManager.stop_attached
    caller: str  # module.function:line of the first kconsole frame outside the backends

    def __str__(self) -> str:
        return f"{self.target} called from {self.caller}, not through kconsole.commands"


_lock = threading.Lock()
violations: list[Violation] = []
_installed = False


def caller_outside_door(frame: FrameType | None) -> str | None:
    """The first kconsole frame outward from `frame` that is neither a backend nor the door,
    as module.function:line (None: the door was reached, or test code was reached first)."""
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if module.startswith(DOOR):
            return None
        if module.startswith("kconsole.") and not module.startswith(BACKENDS):
            return f"{module}.{frame.f_code.co_name}:{frame.f_lineno}"
        if not module.startswith("kconsole."):
            return None  # a test, a fixture, bench: their own set-up
        frame = frame.f_back
    return None


def _wrap(target: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        where = caller_outside_door(sys._getframe(1))
        if where is not None:
            with _lock:
                violations.append(Violation(target, where))
        return fn(*args, **kwargs)

    guarded.__kconsole_guarded__ = True  # type: ignore[attr-defined]
    return guarded


def install() -> None:
    """Wrap every GUARDED method (once per process)."""
    global _installed
    if _installed:
        return
    for module_name, cls_name, names in GUARDED:
        module = importlib.import_module(module_name)
        owner: Any = getattr(module, cls_name) if cls_name else module
        for name in names:
            label = f"{cls_name}.{name}" if cls_name else f"{module_name}.{name}"
            setattr(owner, name, _wrap(label, getattr(owner, name)))
    _installed = True


def take() -> list[Violation]:
    """The violations recorded since the last take()."""
    with _lock:
        out = list(violations)
        violations.clear()
    return out
