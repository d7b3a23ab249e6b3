"""The one command layer every modifying action goes through, from the CLI and the console alike.

It enforces read-only mode and confirmation; widgets and CLI commands never call a backend's
modifying methods directly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kconsole.cluster.control import BrokerAction, BrokerControl
from kconsole.cluster.errors import ClusterError
from kconsole.cluster.produce import ProduceResult, Record, produce_records
from kconsole.config import Settings

if TYPE_CHECKING:
    from kconsole.jobs import JobManager, JobRun


class ReadOnlyError(ClusterError):
    """A modifying action was refused because kconsole runs read-only."""


class NotConfirmed(ClusterError):
    """A destructive action was not confirmed."""


# Asked with the target's name; returns True only when the user confirmed by typing it.
Confirm = Callable[[str, str], bool]


@dataclass
class Commands:
    """Modifying actions, guarded."""

    control: BrokerControl | None
    read_only: bool = False
    control_reason: str = ""  # why `control` is None, shown where actions are disabled

    def broker_actions_available(self) -> tuple[bool, str]:
        """(available, reason) for broker actions, for disabling keys with a clear reason."""
        if self.read_only:
            return False, "read-only mode"
        if self.control is None:
            return False, self.control_reason or "no broker control backend"
        return True, ""

    def writes_available(self) -> tuple[bool, str]:
        """(available, reason) for actions that write data (produce, start a job)."""
        if self.read_only:
            return False, "read-only mode"
        return True, ""

    def produce(
        self, settings: Settings, topic: str, records: Iterable[Record], **options: Any
    ) -> ProduceResult:
        """Send `records` to `topic` (see produce_records for `options`); refused read-only."""
        if self.read_only:
            raise ReadOnlyError(f"read-only mode: refusing to produce to {topic}")
        return produce_records(settings, topic, records, **options)

    def broker(self, action: BrokerAction, broker_id: int, confirm: Confirm | None) -> str:
        """Run a broker action. Destructive ones need `confirm(prompt, expected_answer)`."""
        if self.read_only:
            raise ReadOnlyError(f"read-only mode: refusing to {action.value} broker {broker_id}")
        if self.control is None:
            raise ClusterError(
                "broker control is not available: "
                + (
                    self.control_reason
                    or "kconsole did not start this cluster and no docker compose project was found"
                )
            )
        if action.destructive:
            prompt = f"{action.value} broker {broker_id}? Type the broker id to confirm"
            if confirm is None or not confirm(prompt, str(broker_id)):
                raise NotConfirmed(f"{action.value} broker {broker_id}: not confirmed")
        return self.control.act(action, broker_id)

    def start_job(
        self,
        manager: JobManager,
        job: str,
        options: Mapping[str, Any] | None = None,
        detached: bool = False,
    ) -> JobRun:
        """Start a PySpark job (it reads Kafka and may write an output topic); refused
        read-only."""
        if self.read_only:
            raise ReadOnlyError(f"read-only mode: refusing to start job {job}")
        return manager.start(job, options or {}, detached=detached)

    def stop_job(self, manager: JobManager, run_id: str, timeout_s: float = 20.0) -> JobRun:
        """Stop a job run: allowed read-only too (it ends a process of ours, not the cluster)."""
        return manager.stop(run_id, timeout_s=timeout_s)
