"""What screens and widgets may use of the console: the state they read and subscribe to, and
the actions they send. Both are implemented by KConsoleApp, but nothing below the app imports
it: screens and widgets see these two contracts only, so the app can change inside without
every screen reaching into it. mypy holds both ways: screens use only what the contracts
declare, and kconsole.ui.app checks that KConsoleApp is both (`_holds_the_contracts`).

Nothing here can act on the cluster by itself: the state holds data and read-only views; the
one way to change anything is `commands`, the command layer.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from textual.dom import DOMNode

from kconsole.cluster.values import BrokerAction, NetLinks
from kconsole.commands import Commands
from kconsole.commands.views import JobsView, ReassignView
from kconsole.config import Settings
from kconsole.drills.measure import Measurement
from kconsole.jobs.runs import JobRun
from kconsole.jobs.specs import JobSpec
from kconsole.models import ClusterSnapshot
from kconsole.timeline import Event

if TYPE_CHECKING:
    from kconsole.ui.drill import Drill
    from kconsole.ui.rows import LoggedEvent


class ConsoleState(Protocol):
    """The snapshot store: read it, and `subscribe` to its reactives (snapshot, events,
    job_runs, now)."""

    snapshot: ClusterSnapshot | None
    events: tuple[LoggedEvent, ...]
    job_runs: tuple[JobRun, ...]
    jobs_read: bool
    now: float
    timeline: deque[LoggedEvent]
    lag_history: dict[str, deque[int]]
    job_logs: dict[str, tuple[str, ...]]
    show_job_logs: bool
    refresh_s: float
    group_refresh_s: float
    title: str
    settings: Settings | None
    jobs_view: JobsView | None
    reassign_view: ReassignView | None
    clock: Callable[[], float]

    @property
    def export_dir(self) -> Path: ...
    def timeline_events(self) -> list[Event]: ...
    def latest_drill(self) -> Drill | None: ...
    def drill_measurements(self, drill: Drill | None = None) -> list[Measurement]: ...
    def job_specs(self) -> list[JobSpec]: ...
    def job_option_defaults(self, spec: JobSpec) -> dict[str, object]: ...
    def key_action(self, action: BrokerAction, broker_id: int) -> BrokerAction: ...
    def check_broker_action(self, action: str) -> bool | None: ...


class ConsoleActions(Protocol):
    """The command bus and the console's flows around it (confirmations, workers, outcomes)."""

    commands: Commands | None

    @property
    def jobs_available(self) -> bool: ...
    def request_broker_action(
        self,
        action: BrokerAction,
        broker_id: int,
        role: str | None = None,
        links: NetLinks | None = None,
    ) -> None: ...
    def choose_network_fault(self, broker_id: int) -> None: ...
    def choose_broker_action(self, broker_id: int, role: str) -> None: ...
    def refuse_broker_action(self, action: BrokerAction, broker_id: int) -> None: ...
    def action_broker_actions_unavailable(self) -> None: ...
    def request_job_start(self, job: str, options: dict[str, object], detached: bool) -> None: ...
    def request_job_stop(self, run_id: str) -> None: ...
    def poll_jobs(self) -> Any: ...
    def refresh_observer(self) -> None: ...
    def choose_election(self, topic: str, partition: int) -> None: ...
    def request_election(self, kind: str, partitions: list[tuple[str, int]]) -> None: ...
    def open_reassign(
        self,
        topics: list[str] | None = None,
        partition: tuple[str, int] | None = None,
        drain: int | None = None,
    ) -> None: ...


def state(node: DOMNode) -> ConsoleState:
    """The console's state, as `node` may use it (widgets read it; they fetch nothing)."""
    return cast(ConsoleState, node.app)


def actions(node: DOMNode) -> ConsoleActions:
    """The console's actions, as `node` may send them."""
    return cast(ConsoleActions, node.app)


def subscribe(node: DOMNode, name: str, callback: Callable[[], Any], *, init: bool = True) -> None:
    """Call `callback` whenever the state's reactive `name` changes (and now, with `init`)."""
    node.watch(node.app, name, callback, init=init)
