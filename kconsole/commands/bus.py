"""The one door every modifying action goes through, from the CLI and the console alike.

Each method is a command of the registry (kconsole.commands.registry). In this order, before
any side effect: read-only refuses it (with the reason: which flag, variable or config entry),
a missing backend refuses it, a destructive one needs its typed confirmation; then it runs. Every
outcome — done, refused, failed — is appended to the audit log. Nothing else calls a backend's
modifying methods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from kconsole.cluster.control import BrokerAction, BrokerControl
from kconsole.cluster.produce import ProduceResult, Record, produce_records
from kconsole.commands.auditlog import AuditLog
from kconsole.commands.reassign import ReassignCommands
from kconsole.commands.registry import spec as command_spec
from kconsole.config import Settings
from kconsole.errors import ClusterError, NotConfirmed, ReadOnlyError, Refused

if TYPE_CHECKING:
    from kconsole.cluster.local import LocalCluster, UpResult
    from kconsole.cluster.tail import StartAt, TailFactory, TailSource
    from kconsole.drills.runner import DrillReport, DrillSpec
    from kconsole.jobs import JobManager, JobRun

T = TypeVar("T")

# Asked with a prompt and the answer expected; True only when the user typed exactly that.
Confirm = Callable[[str, str], bool]


def yes(_prompt: str, _expected: str) -> bool:
    """The confirmation of `--yes`: already given."""
    return True


@dataclass
class Commands(ReassignCommands):
    """Modifying actions, guarded and audited (reassignment and elections: commands/reassign)."""

    control: BrokerControl | None
    read_only: bool = False
    control_reason: str = ""  # why `control` is None, shown where actions are disabled
    read_only_reason: str = ""  # who asked for read-only, shown in every refusal
    audit: AuditLog | None = field(default_factory=AuditLog)
    bootstrap: str = ""
    cluster_id: Callable[[], str | None] | None = None  # asked lazily, for the audit log
    origin: str = "cli"  # cli | console: who asked, for the audit log

    @classmethod
    def for_settings(
        cls,
        settings: Settings,
        control: BrokerControl | None = None,
        *,
        control_reason: str = "",
        origin: str = "cli",
        cluster_id: Callable[[], str | None] | None = None,
        audit: AuditLog | None = None,
    ) -> Commands:
        """The command layer for `settings`: their read-only decision and bootstrap."""
        if cluster_id is None:
            from kconsole.cluster.admin import probe_cluster_id

            cluster_id = _cached(lambda: probe_cluster_id(settings.kafka_config()))
        return cls(
            control,
            read_only=settings.read_only,
            control_reason=control_reason,
            read_only_reason=settings.read_only_reason,
            audit=audit or AuditLog(),
            bootstrap=settings.bootstrap,
            cluster_id=cluster_id,
            origin=origin,
        )

    # -- the door -----------------------------------------------------------------------------
    def refusal(self, name: str) -> str:
        """Why command `name` would be refused right now ('' when it would run)."""
        command_spec(name)
        if self.read_only:
            why = self.read_only_reason or "read-only mode"
            return f"read-only mode ({why})" if why != "read-only mode" else why
        if (name.startswith("broker.") or name == "drill.run") and self.control is None:
            return "broker control is not available: " + (
                self.control_reason
                or "kconsole did not start this cluster and no docker compose project was found"
            )
        return ""

    def refuse(self, name: str, target: str, args: Mapping[str, Any] | None = None) -> None:
        """Raise (and log) the refusal of `name` on `target`, if it would be refused."""
        why = self.refusal(name)
        if not why:
            return
        verb = command_spec(name).verb
        exc: ClusterError
        if self.read_only:
            exc = ReadOnlyError(f"{why}: refusing to {verb} {target}")
        else:
            exc = ClusterError(why)
        self._log(name, target, args or {}, "refused", exc.message)
        raise exc

    def _run(
        self,
        name: str,
        target: str,
        args: Mapping[str, Any],
        do: Callable[[], T],
        *,
        confirm: Confirm | None = None,
        expected: str | None = None,
        prompt: str = "",
    ) -> T:
        """Refuse, confirm, run and log command `name`. A destructive command with
        `expected=None` asks for its confirmation inside `do` (it raises NotConfirmed)."""
        spec = command_spec(name)
        self.refuse(name, target, args)
        question = prompt or f"{spec.summary}: {target}?"
        if (
            spec.destructive
            and expected is not None
            and (confirm is None or not confirm(question, expected))
        ):
            exc = NotConfirmed(f"{name} {target}: not confirmed")
            self._log(name, target, args, "refused", exc.message)
            raise exc
        try:
            result = do()
        except Refused as exc:  # e.g. a drill not confirmed, a plan that does not fit
            self._log(name, target, args, "refused", exc.message)
            raise
        except BaseException as exc:
            self._log(name, target, args, "failed", f"{type(exc).__name__}: {exc}")
            raise
        self._log(name, target, args, "done")
        return result

    def _log(
        self, name: str, target: str, args: Mapping[str, Any], outcome: str, error: str = ""
    ) -> None:
        if self.audit is None:
            return
        cid = None
        if self.cluster_id is not None:
            try:
                cid = self.cluster_id()
            except Exception:
                cid = None
        self.audit.append(
            command=name,
            target=target,
            args=args,
            outcome=outcome,
            error=error,
            cluster_id=cid,
            bootstrap=self.bootstrap,
            origin=self.origin,
        )

    # -- availability, for keys that are shown disabled with a reason --------------------------
    def broker_actions_available(self) -> tuple[bool, str]:
        """(available, reason) for broker actions, for disabling keys with a clear reason."""
        why = self.refusal("broker.stop")
        return not why, why

    def writes_available(self) -> tuple[bool, str]:
        """(available, reason) for actions that write data (produce, start a job)."""
        why = self.refusal("produce")
        return not why, why

    # -- commands -----------------------------------------------------------------------------
    def broker(
        self, action: BrokerAction, broker_id: int, confirm: Confirm | None, *, via: str = ""
    ) -> str:
        """Run a broker action. Destructive ones need `confirm(prompt, broker id)`."""
        control = self.control
        return self._run(
            f"broker.{action.value}",
            f"broker {broker_id}",
            {"via": via} if via else {},
            lambda: control.act(action, broker_id),  # type: ignore[union-attr]
            confirm=confirm,
            expected=str(broker_id),
            prompt=f"{action.value} broker {broker_id}? Type the broker id to confirm",
        )

    def cluster_up(self, local: LocalCluster, **options: Any) -> UpResult:
        """Start the local cluster's processes that are not running (see LocalCluster.up)."""
        args = {k: v for k, v in options.items() if k != "progress"}
        return self._run("cluster.up", str(local.state_dir), args, lambda: local.up(**options))

    def cluster_down(
        self, local: LocalCluster, *, purge: bool = False, confirm: Confirm | None = None
    ) -> list[str]:
        """Stop the local cluster; with `purge` also delete its data (typed confirmation: the
        state dir's name)."""
        return self._run(
            "cluster.purge" if purge else "cluster.down",
            str(local.state_dir),
            {"purge": purge},
            lambda: local.down(purge=purge),
            confirm=confirm,
            expected=local.state_dir.name,
            prompt=f"delete every broker's data in {local.state_dir}? Type "
            f"{local.state_dir.name!r} to confirm",
        )

    def produce(
        self, settings: Settings, topic: str, records: Iterable[Record], **options: Any
    ) -> ProduceResult:
        """Send `records` to `topic` (see produce_records for `options`)."""
        args = {
            k: options[k]
            for k in ("acks", "rate", "partition", "compression")
            if options.get(k) is not None
        }
        if isinstance(records, list | tuple):
            args["records"] = len(records)
        return self._run(
            "produce", topic, args, lambda: produce_records(settings, topic, records, **options)
        )

    def open_tail(
        self,
        factory: TailFactory,
        topic: str,
        partition: int | None,
        start: StartAt,
        group: str | None,
    ) -> TailSource:
        """A tail of `topic`. Without a group it changes nothing (no command); with one it
        joins that group and commits: command tail.group, refused before anything joins."""
        if not group:
            return factory(topic, partition, start, None)
        return self._run(
            "tail.group",
            f"{topic} as group {group}",
            {"group": group, "partition": partition, "start": start.describe()},
            lambda: factory(topic, partition, start, group),
        )

    def start_job(
        self,
        manager: JobManager,
        job: str,
        options: Mapping[str, Any] | None = None,
        detached: bool = False,
    ) -> JobRun:
        """Start a PySpark job (it reads Kafka and may write an output topic)."""
        return self._run(
            "job.start",
            job,
            {"options": dict(options or {}), "detached": detached},
            lambda: manager.start(job, options or {}, detached=detached),
        )

    def stop_job(self, manager: JobManager, run_id: str, timeout_s: float = 20.0) -> JobRun:
        """Stop a job run: SIGTERM, then SIGKILL after `timeout_s`."""
        return self._run("job.stop", run_id, {}, lambda: manager.stop(run_id, timeout_s=timeout_s))

    def drill_run(
        self,
        settings: Settings,
        spec: DrillSpec,
        confirm: Confirm | None,
        progress: Callable[[str], None] | None = None,
    ) -> DrillReport:
        """A whole drill. Refused read-only before anything starts; the runner asks `confirm`
        (with the blast radius, expecting the broker id) before its workload writes a record."""
        from dataclasses import asdict

        from kconsole.drills.runner import DrillRunner

        control = self.control

        def act(action: BrokerAction, broker_id: int) -> str:
            return self.broker(action, broker_id, yes, via="drill.run")

        def run() -> DrillReport:
            assert control is not None
            return DrillRunner(
                settings, control, spec, progress=progress, act=act, confirm=confirm or _never
            ).run()

        return self._run("drill.run", spec.target, asdict(spec), run)


def _never(_prompt: str, _expected: str) -> bool:
    return False


def _cached(fetch: Callable[[], str | None]) -> Callable[[], str | None]:
    """`fetch` asked until it answers once, then that answer."""
    found: list[str] = []

    def get() -> str | None:
        if not found:
            value = fetch()
            if value:
                found.append(value)
        return found[0] if found else None

    return get
