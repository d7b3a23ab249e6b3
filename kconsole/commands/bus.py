"""The command layer: the one door every modifying action goes through, from the CLI and the
console alike, and the only holder of the backends that act.

Each method is a command of the registry (kconsole.commands.registry) and runs through
`Door._run` (kconsole.commands.door): read-only first, then a missing backend, then the typed
confirmation, then the effect, then the audit line with the real outcome. Commands owns its
backends — broker control, the job manager, the reassignment / election client, the tail
factory, the local cluster — and callers pass data and get outcomes; screens and CLI commands
read through the views of kconsole.commands.views. Nothing else calls a backend's modifying
methods (tests/conftest.py's guard fails any test in which something does).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kconsole.cluster.control import BrokerControl
from kconsole.cluster.values import BrokerAction, NetLinks
from kconsole.commands.auditlog import AuditLog
from kconsole.commands.door import Confirm, never, yes
from kconsole.commands.reassign import ClientFactory, ReassignCommands
from kconsole.commands.views import BrokerStates, JobsView, KRaftView, LocalView, ReassignView
from kconsole.config import Settings
from kconsole.errors import ClusterError

if TYPE_CHECKING:
    from kconsole.cluster.kraft.cluster import KRaftCluster, KRaftUpTimes
    from kconsole.cluster.kraft.spec import KRaftSpec
    from kconsole.cluster.local.cluster import LocalCluster, UpResult
    from kconsole.cluster.local.spec import LocalClusterSpec
    from kconsole.cluster.produce.request import ProduceRequest, Record
    from kconsole.cluster.produce.send import ProduceResult
    from kconsole.cluster.tail import StartAt, TailFactory, TailSource
    from kconsole.commands.produce import ProduceSession, WarmFactory
    from kconsole.drills.spec import DrillReport, DrillSpec
    from kconsole.jobs.manager import JobManager
    from kconsole.jobs.runs import JobRun

__all__ = ["Commands", "Confirm", "yes"]

# (the control, or None and why not), asked once, when a command first needs it
ControlFactory = Callable[[], "tuple[BrokerControl | None, str]"]
# the local cluster, with the spec to start it with (None: the saved one, in its own mode)
LocalFactory = Callable[["LocalClusterSpec | KRaftSpec | None"], "LocalCluster | KRaftCluster"]

JOIN_TIMEOUT_S = 30.0  # a group tail's join: the group's rebalance must finish within this

# The lines of each broker's log the console reads for a resignation while a network fault is
# in force (a drill's report reads more, once, at its end).
LIVE_LOG_LINES = 3000


@dataclass
class Commands(ReassignCommands):
    """Modifying actions, guarded and audited (reassignment and elections: commands/reassign),
    and the backends they act through."""

    control: BrokerControl | None = None
    control_reason: str = ""  # why `control` is None, shown where actions are disabled
    control_factory: ControlFactory | None = None  # picks `control` when first needed
    settings: Settings | None = None  # the cluster produce and drills write to
    jobs: JobManager | None = None
    tailer: TailFactory | None = None
    cluster_dir: Path | None = None  # where the local cluster cluster.up / cluster.down act on is
    local_cluster: LocalFactory | None = None  # opens it there (with a spec for cluster.up)
    warm_factory: WarmFactory | None = None  # makes produce sessions' producers (None: the real)
    _control_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def for_settings(
        cls,
        settings: Settings,
        control: BrokerControl | None = None,
        *,
        control_reason: str = "",
        backend: str | None = None,
        cluster_dir: Path | None = None,
        jobs_state_dir: Path | None = None,
        jobs: JobManager | None = None,
        origin: str = "cli",
        cluster_id: Callable[[], str | None] | None = None,
        audit: AuditLog | None = None,
    ) -> Commands:
        """The command layer for `settings`, with every backend they call for: broker control
        (given, or picked by `backend`, default the settings' choice, when first needed), the
        job manager (`jobs`, or one in `jobs_state_dir`), the reassignment client, tails, and
        the local cluster in `cluster_dir` (default the settings' one)."""
        from kconsole.cluster.tailer import tail_factory
        from kconsole.jobs.manager import JobManager

        if cluster_id is None:
            from kconsole.cluster.admin import probe_cluster_id

            cluster_id = _cached(lambda: probe_cluster_id(settings.kafka_config()))
        from kconsole.cluster.security.translate import principal

        who = _cached(lambda: principal(settings.kafka_config(), settings.client_origin))
        cdir = cluster_dir or settings.cluster_dir
        factory: ControlFactory | None = None
        if control is None and not control_reason:
            factory = _control_factory(settings, backend, cdir)
        return cls(
            control,
            control_reason=control_reason,
            control_factory=factory,
            read_only=settings.read_only,
            read_only_reason=settings.read_only_reason,
            audit=audit or AuditLog(),
            bootstrap=settings.bootstrap,
            cluster_id=cluster_id,
            principal=who,
            origin=origin,
            settings=settings,
            jobs=jobs or JobManager(jobs_state_dir, settings),
            reassigner=reassign_factory(settings),
            tailer=tail_factory(settings),
            cluster_dir=cdir,
            local_cluster=partial(_local_cluster, cdir),
        )

    # -- the backends, and what may be read of them ---------------------------------------------
    def _control(self) -> BrokerControl | None:
        with self._control_lock:
            if self.control is None and self.control_factory is not None:
                factory, self.control_factory = self.control_factory, None
                self.control, why = factory()
                if self.control is None:
                    self.control_reason = why
            return self.control

    def missing_backend(self, name: str) -> str:
        if (name.startswith("broker.") or name == "drill.run") and self._control() is None:
            return "broker control is not available: " + (
                self.control_reason
                or "kconsole did not start this cluster and no docker compose project was found"
            )
        if name.startswith("job.") and self.jobs is None:
            return "PySpark jobs are not available here (no job manager)"
        if name in ("produce", "drill.run") and self.settings is None:
            return "no cluster connection to write to"
        if name == "tail.group" and self.tailer is None:
            return "tailing is not available: no cluster connection"
        if name.startswith("cluster.") and self.local_cluster is None:
            return "no local cluster state dir"
        return super().missing_backend(name)

    @property
    def can_tail(self) -> bool:
        """Whether tails can be opened (a cluster connection to read from)."""
        return self.tailer is not None

    def broker_states(self) -> BrokerStates | None:
        """How to read each broker's process state (None: no broker control)."""
        control = self._control()
        return control.states if control is not None else None

    def node_states(self) -> BrokerStates | None:
        """How to read each node's process state, KRaft controllers included (None: no
        control; a control without controllers: its brokers')."""
        control = self._control()
        if control is None:
            return None
        states = getattr(control, "node_states", None)
        return states if callable(states) else control.states

    def controller_states(self) -> BrokerStates | None:
        """How to read each KRaft controller's process state, the controllers that are no
        brokers (None: no control, or one without controllers)."""
        control = self._control()
        states = getattr(control, "controller_states", None) if control is not None else None
        return states if callable(states) else None

    def network_faults(self) -> Callable[[], dict[int, str]] | None:
        """How to read the network faults in force, node id -> in words (None: a control
        without network faults)."""
        control = self._control()
        read = getattr(control, "network_faults", None) if control is not None else None
        return read if callable(read) else None

    def controller_resignations(self) -> Callable[[float], list[tuple[float, int]]] | None:
        """How to read the controller resignations the brokers' logs show since a time, the
        last LIVE_LOG_LINES of each (None: a control that cannot read the brokers' logs)."""
        control = self._control()
        read = getattr(control, "controller_resignations", None) if control is not None else None
        if not callable(read):
            return None
        return lambda since: read(since, lines=LIVE_LOG_LINES)

    def resolve_node(self, text: str) -> int | None:
        """The node id `text` names as the broker control knows its nodes (the docker backend
        on a KRaft project: `2`, `controller:1001`; ClusterError naming them when it is none);
        None when the control names brokers by their id alone, or there is none."""
        control = self._control()
        resolve = getattr(control, "resolve_node", None)
        return resolve(text) if callable(resolve) else None

    def start_hint(self) -> str:
        """How to start the cluster when it is the local one and not running ("" otherwise):
        for the console and `describe` while nothing answers (kconsole.commands.local_hint)."""
        from kconsole.commands.local_hint import start_hint

        return start_hint(self.settings, self.cluster_dir) if self.settings is not None else ""

    def jobs_view(self) -> JobsView | None:
        """The job runs, read-only (None: no job manager)."""
        return JobsView(self.jobs) if self.jobs is not None else None

    def reassign_view(self) -> ReassignView | None:
        """Running reassignments, log sizes and throttles, read-only (None: no connection)."""
        return ReassignView(self.reassigner) if self.reassigner is not None else None

    def local_view(self) -> LocalView | KRaftView:
        """The local cluster's status and logs, in the mode it was created in (ClusterError:
        its state dir is unusable)."""
        from kconsole.cluster.kraft.cluster import KRaftCluster

        local = self._local()
        return KRaftView(local) if isinstance(local, KRaftCluster) else LocalView(local)

    def _local(
        self, spec: LocalClusterSpec | KRaftSpec | None = None
    ) -> LocalCluster | KRaftCluster:
        if self.local_cluster is None:
            raise ClusterError("no local cluster state dir")
        return self.local_cluster(spec)

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
        self,
        action: BrokerAction,
        broker_id: int,
        confirm: Confirm | None,
        *,
        via: str = "",
        progress: Callable[[str], None] | None = None,
        links: NetLinks | None = None,
    ) -> str:
        """Run a broker action. Destructive ones need `confirm(prompt, broker id)`; `progress`
        hears about a long wait inside it (a start after a kill waits for the old session);
        `links`: what a partition cuts the node from."""

        def act() -> str:
            control = self._control()
            assert control is not None  # refuse() said so before
            if links is not None:
                return control.act(action, broker_id, progress=progress, links=links)
            return control.act(action, broker_id, progress=progress)

        target = self._node_label(broker_id)
        detail: dict[str, Any] = {"via": via} if via else {}
        if links is not None:
            detail.update({"from": list(links.sides), "one_way": links.one_way})
        return self._run(
            f"broker.{action.value}",
            target,
            detail,
            act,
            confirm=confirm,
            expected=str(broker_id),
            prompt=f"{action.value} {target}{' ' + links.words if links else ''}? "
            f"Type {broker_id} to confirm",
            result=lambda said: {"said": said},
        )

    def _node_label(self, node_id: int) -> str:
        """What the audit log and the prompt call node `node_id`: 'broker 2', or on a local
        KRaft cluster 'controller 1001' / 'node 1 (broker+controller)'."""
        label = getattr(self._control(), "label", None)
        if label is not None:
            try:
                return str(label(node_id))
            except ClusterError:
                pass  # not a node of it: the action itself says so
        return f"broker {node_id}"

    def cluster_up(
        self, spec: LocalClusterSpec | KRaftSpec | None = None, **options: Any
    ) -> UpResult | KRaftUpTimes:
        """Start the local cluster's processes that are not running, with `spec` (None: the
        saved one, in its mode); see LocalCluster.up and KRaftCluster.up for `options`. A spec
        of the other mode than the saved cluster's is refused (ClusterError says how to go
        on)."""
        args = {k: v for k, v in options.items() if k != "progress"}
        target = str(self.cluster_dir or "the local cluster")
        self.refuse("cluster.up", target, args)  # before the state dir is even read
        return self._run(
            "cluster.up",
            target,
            args,
            lambda: self._local(spec).up(**options),
            result=lambda up: {
                "started": list(up.started),
                "resumed": list(up.resumed),
                "already_running": list(up.already_running),
            },
        )

    def cluster_down(self, *, purge: bool = False, confirm: Confirm | None = None) -> list[str]:
        """Stop the local cluster; with `purge` also delete its data (typed confirmation: the
        state dir's name)."""
        name = "cluster.purge" if purge else "cluster.down"
        target = str(self.cluster_dir or "the local cluster")
        self.refuse(name, target, {"purge": purge})
        local = self._local()
        return self._run(
            name,
            target,
            {"purge": purge},
            lambda: local.down(purge=purge),
            confirm=confirm,
            expected=local.state_dir.name,
            prompt=f"delete every broker's data in {local.state_dir}? Type "
            f"{local.state_dir.name!r} to confirm",
            result=lambda stopped: {"stopped": stopped},
        )

    def produce(self, topic: str, records: Iterable[Record], **options: Any) -> ProduceResult:
        """Send `records` to `topic` (see produce_records for `options`)."""
        from kconsole.cluster.produce.send import produce_records

        args = {
            k: options[k]
            for k in ("acks", "rate", "partition", "compression")
            if options.get(k) is not None
        }
        if isinstance(records, list | tuple):
            args["records"] = len(records)
        settings = self.settings
        return self._run(
            "produce",
            topic,
            args,
            lambda: produce_records(settings, topic, records, **options),  # type: ignore[arg-type]
            result=produce_counts,
        )

    def produce_session(self, message_timeout_ms: int = 30000) -> ProduceSession:
        """A producer kept open across sends (the dialog's): see kconsole.commands.produce.
        Whoever asks for it closes it."""
        from kconsole.commands.produce import ProduceSession

        return ProduceSession(self, self.warm_factory, message_timeout_ms=message_timeout_ms)

    def produce_request(
        self,
        request: ProduceRequest,
        records: Iterable[Record],
        *,
        session: ProduceSession | None = None,
        **options: Any,
    ) -> ProduceResult:
        """A form's send: refused read-only first, then the topic's limits are read and the
        request checked against them (ProduceError, nothing sent), then `produce`. With a
        `session`, its limits (read a while ago at most) and its producer kept open."""
        from kconsole.cluster.produce.request import FORM_NAMES, read_topic_limits, validate

        self.refuse("produce", request.topic)
        assert self.settings is not None  # refuse() said so before
        if session is not None:
            limits = session.read_limits(request.topic)
        else:
            limits = read_topic_limits(self.settings, request.topic)
        validate(
            request.topic,
            limits=limits,
            records=[request.record],
            count=request.count,
            rate=request.rate,
            partition=request.partition,
            acks=request.acks,
            compression=request.compression,
            names=FORM_NAMES,
        )
        if session is not None:
            # Ready: its id acquired, or the cluster's refusal known (a new producer, after one
            # the ACLs refused, would otherwise meet that refusal in the middle of the send).
            options["warm"] = session.producer_ready(
                request.topic, request.acks, request.compression, limits.max_message_bytes
            )
        return self.produce(
            request.topic,
            records,
            acks=request.acks,
            rate=request.rate,
            compression=request.compression,
            partition=request.partition,
            max_message_bytes=limits.max_message_bytes,
            **options,
        )

    def open_tail(
        self, topic: str, partition: int | None, start: StartAt, group: str | None
    ) -> TailSource:
        """An open tail of `topic` (its positions resolved). Without a group it changes nothing
        (no command); with one it joins that group and commits: command tail.group, refused
        before anything joins and logged done only once the group has assigned it partitions."""
        if self.tailer is None:
            raise ClusterError("tailing is not available: no cluster connection")
        if not group:
            source = self.tailer(topic, partition, start, None)
            try:
                source.open()
            except BaseException:
                source.close()
                raise
            return source
        factory = self.tailer
        args: dict[str, Any] = {"group": group, "partition": partition, "start": start.describe()}

        def join() -> TailSource:
            source = factory(topic, partition, start, group)
            try:
                source.open()
                assigned[:] = source.join(JOIN_TIMEOUT_S)
            except BaseException:
                source.close()
                raise
            return source

        assigned: list[int] = []
        return self._run(
            "tail.group",
            f"{topic} as group {group}",
            args,
            join,
            result=lambda _source: {"assigned_partitions": list(assigned)},
        )

    def start_job(
        self, job: str, options: Mapping[str, Any] | None = None, detached: bool = False
    ) -> JobRun:
        """Start a PySpark job (it reads Kafka and may write an output topic)."""
        jobs = self.jobs
        return self._run(
            "job.start",
            job,
            {"options": dict(options or {}), "detached": detached},
            lambda: jobs.start(job, options or {}, detached=detached),  # type: ignore[union-attr]
            result=lambda run: {"run_id": run.run_id, "pid": run.pid},
        )

    def stop_job(self, run_id: str, timeout_s: float = 20.0, *, why: str = "") -> JobRun:
        """Stop a job run: SIGTERM, then SIGKILL after `timeout_s`."""
        jobs = self.jobs
        return self._run(
            "job.stop",
            run_id,
            {"why": why} if why else {},
            lambda: jobs.stop(run_id, timeout_s=timeout_s),  # type: ignore[union-attr]
            result=lambda run: {"state": run.state.value, "exit_code": run.exit_code},
        )

    def stop_attached_jobs(self, timeout_s: float = 20.0) -> list[JobRun | ClusterError]:
        """Stop every run started here without detached (the console's exit, the end of
        `jobs start --attach`), all at once, each as its own job.stop: per run the stopped run,
        or the error that stopped it from stopping."""
        if self.jobs is None:
            return []
        run_ids = self.jobs.attached_run_ids()
        out: dict[str, JobRun | ClusterError] = {}

        def stop(run_id: str) -> None:
            try:
                out[run_id] = self.stop_job(run_id, timeout_s, why="attached run, at exit")
            except ClusterError as exc:
                out[run_id] = exc
            except Exception as exc:  # logged as failed by the door; said, not raised
                out[run_id] = ClusterError(f"{run_id}: {type(exc).__name__}: {exc}")

        threads = [threading.Thread(target=stop, args=(r,)) for r in run_ids]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return [out[r] for r in run_ids]

    def drill_run(
        self,
        spec: DrillSpec,
        confirm: Confirm | None,
        progress: Callable[[str], None] | None = None,
    ) -> DrillReport:
        """A whole drill. Refused read-only before anything starts; the runner asks `confirm`
        (with the blast radius, expecting the broker id) before its workload writes a record."""
        from dataclasses import asdict

        from kconsole.drills.runner import DrillRunner

        def act(action: BrokerAction, broker_id: int) -> str:
            links = spec.links if action in (BrokerAction.PARTITION, BrokerAction.SLOW) else None
            return self.broker(action, broker_id, yes, via="drill.run", links=links)

        def run() -> DrillReport:
            control, settings = self._control(), self.settings
            assert control is not None and settings is not None  # refuse() said so before
            return DrillRunner(
                settings, control, spec, progress=progress, act=act, confirm=confirm or never
            ).run()

        return self._run(
            "drill.run",
            spec.target,
            asdict(spec),
            run,
            result=lambda report: {
                "target_broker": report.target_broker,
                "acked": report.audit.acked,
                "lost": len(report.audit.lost),
                "duplicates": len(report.audit.duplicates),
                "settled": report.settled,
                "restored": report.restored,
                "not_restored": report.not_restored,
            },
        )


def reassign_factory(settings: Settings) -> ClientFactory:
    """ReassignClient(settings) each call (kafka-python is imported on first use)."""

    def factory() -> Any:
        from kconsole.cluster.reassign.client import ReassignClient

        return ReassignClient(settings)

    return factory


def _local_cluster(
    state_dir: Path, spec: LocalClusterSpec | KRaftSpec | None
) -> LocalCluster | KRaftCluster:
    from kconsole.cluster.backends import open_local

    return open_local(state_dir, spec)


def _control_factory(settings: Settings, backend: str | None, cluster_dir: Path) -> ControlFactory:
    """Picks the broker control when a command first needs it: `backend` (default the
    settings' choice) over the cluster the settings point at, or the local one in
    `cluster_dir`."""

    def pick() -> tuple[BrokerControl | None, str]:
        from kconsole.cluster.backends import choose_backend

        return choose_backend(
            replace(settings, backend=backend or settings.backend, cluster_dir=cluster_dir),
            project=settings.compose_project,
        )

    return pick


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


def produce_counts(r: ProduceResult) -> dict[str, Any]:
    """What a send's audit line carries: its real counts. With acks=0 no record is
    acknowledged, so none is counted as acked; a send stopped early says what stopped it."""
    counts: dict[str, Any] = {"sent": r.sent}
    if r.acks == "0":
        counts["not_confirmed"] = r.acked_n  # sent with no broker's word on them
    else:
        counts["acked"] = r.acked_n
    counts.update(failed=r.failed_n, unknown=r.unknown_n)
    if r.stopped:
        counts["stopped_by"] = r.stopped
    return counts
