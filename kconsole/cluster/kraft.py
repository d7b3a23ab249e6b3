"""A local KRaft cluster: its state directory, storage formatting and lifecycle.

    cluster.json                  the spec (mode "kraft", topology, ports, version, cluster id,
                                  the controllers' directory ids)
    log4j2.xml                    shared by every process (log4j.properties on Kafka 3.9)
    controller-N/ broker-N/ (or node-N/ when combined)
        server.properties data/ server.log stdout.log format.log node.pid

`up` formats every node's storage once (in parallel), starts the controllers, waits for a
quorum leader (asked of the controllers directly), starts the brokers, waits until every
broker is registered and unfenced, then creates test-topic. `down` stops brokers before
controllers, only the processes whose pid files this cluster wrote.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kconsole.cluster import jars, kraft_probes
from kconsole.cluster.errors import ClusterError
from kconsole.cluster.kraft_probes import QuorumState
from kconsole.cluster.kraft_spec import (
    KRaftNode,
    KRaftSpec,
    format_args,
    log_config_flag,
    node_properties,
)
from kconsole.cluster.local_dir import _JVM_FLAGS
from kconsole.cluster.local_spec import render_properties
from kconsole.cluster.procs import ManagedProcess, PidRecord, ProcState, tail_lines, wait_reaped
from kconsole.cluster.settings import (
    BROKER_HEAP,
    TEST_TOPIC,
    TEST_TOPIC_PARTITIONS,
    TEST_TOPIC_RF,
)

Progress = Callable[[str], None]
CONTROLLER_HEAP = "-Xmx256m -Xms256m"
FORMAT_HEAP = "-Xmx128m"
REAP_WAIT_S = 5.0
TEST_TOPIC_MIN_ISR = 2  # set on the topic itself, whatever the cluster default


@dataclass(frozen=True)
class KRaftUpTimes:
    """Seconds each stage of `up` took (what the README and the report quote)."""

    format_s: float
    quorum_leader_s: float  # from the controllers' launch
    brokers_unfenced_s: float  # from the controllers' launch
    test_topic_s: float
    total_s: float


@dataclass(frozen=True)
class KRaftNodeStatus:
    name: str
    node_id: int
    roles: tuple[str, ...]
    state: ProcState
    pid: int | None


@dataclass(frozen=True)
class KRaftStatus:
    nodes: list[KRaftNodeStatus]
    quorum: QuorumState | None


class KRaftCluster:
    """The files and processes of a local KRaft cluster in `state_dir`."""

    def __init__(self, state_dir: Path, spec: KRaftSpec | None = None):
        self.state_dir = Path(state_dir)
        saved = self._load_spec()
        self.spec = saved if saved is not None and spec is None else spec or KRaftSpec()
        if saved is not None and spec is not None and saved.cluster_id:
            # A formatted cluster keeps its identity; a new spec only changes what it may.
            self.spec = KRaftSpec.from_json(saved.to_json())
        self._procs: dict[str, ManagedProcess] = {}

    # -- layout ---------------------------------------------------------------------------
    @property
    def spec_file(self) -> Path:
        return self.state_dir / "cluster.json"

    def _load_spec(self) -> KRaftSpec | None:
        try:
            return KRaftSpec.from_json(self.spec_file.read_text())
        except FileNotFoundError:
            return None
        except (ValueError, TypeError) as exc:
            raise ClusterError(f"{self.spec_file} is not a valid cluster spec: {exc}") from exc

    def proc_dir(self, name: str) -> Path:
        return self.state_dir / name

    def process(self, name: str) -> ManagedProcess:
        if name not in self._procs:
            d = self.proc_dir(name)
            self._procs[name] = ManagedProcess(name, d / "node.pid", d / "stdout.log")
        return self._procs[name]

    def log_tail(self, name: str, lines: int = 30) -> list[str]:
        out = tail_lines(self.proc_dir(name) / "server.log", lines)
        jvm = [ln for ln in tail_lines(self.proc_dir(name) / "stdout.log", lines) if ln.strip()]
        jvm = [ln for ln in jvm if not ln.startswith("=== kconsole:")]
        return out + (["-- stdout.log --", *jvm] if jvm else [])

    # -- configuration --------------------------------------------------------------------
    def write_configs(self) -> None:
        """Write cluster.json (with a generated cluster id once), the log config and every
        server.properties."""
        self.spec = self.spec.with_ids()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.spec_file.write_text(self.spec.to_json() + "\n")
        name, content, _ = log_config_flag(self.spec, self.state_dir)
        (self.state_dir / name).write_text(content)
        for node in self.spec.nodes():
            d = self.proc_dir(node.name)
            (d / "data").mkdir(parents=True, exist_ok=True)
            props = node_properties(self.spec, node, d / "data")
            (d / "server.properties").write_text(render_properties(props))

    def _jvm(self, node: KRaftNode, heap: str) -> list[str]:
        d = self.proc_dir(node.name)
        _, _, log_flag = log_config_flag(self.spec, self.state_dir)
        return [
            jars.java_executable(),
            *heap.split(),
            *_JVM_FLAGS,
            log_flag,
            f"-Dkafka.logs.dir={d}",
            f"-Dkconsole.process={node.name}@{self.state_dir}",
        ]

    @staticmethod
    def _env() -> dict[str, str]:
        env = dict(os.environ)
        for var in ("KAFKA_OPTS", "KAFKA_HEAP_OPTS", "JVMFLAGS", "CLASSPATH"):
            env.pop(var, None)
        return env

    def is_formatted(self, node: KRaftNode) -> bool:
        return (self.proc_dir(node.name) / "data" / "meta.properties").exists()

    def format_storage(self, lib: Path, timeout: float = 120.0) -> float:
        """Format every node not formatted yet, all at once; seconds it took."""
        start = time.monotonic()
        running: list[tuple[KRaftNode, subprocess.Popen[bytes], Path]] = []
        for node in self.spec.nodes():
            if self.is_formatted(node):
                continue
            d = self.proc_dir(node.name)
            argv = [*self._jvm(node, FORMAT_HEAP), "-cp", f"{lib}{os.sep}*"]
            argv += [
                "kafka.tools.StorageTool",
                *format_args(self.spec, node, d / "server.properties"),
            ]
            out = d / "format.log"
            with open(out, "wb") as f:
                popen = subprocess.Popen(
                    argv, cwd=d, env=self._env(), stdin=subprocess.DEVNULL, stdout=f, stderr=f
                )
            running.append((node, popen, out))
        deadline = start + timeout
        failed: list[tuple[KRaftNode, Path, int | None]] = []
        for node, popen, out in running:
            try:
                code: int | None = popen.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                popen.kill()
                popen.wait()
                code = None
            if code != 0:
                failed.append((node, out, code))
        if failed:
            node, out, code = failed[0]
            raise ClusterError(
                f"formatting the storage of {node.name} failed "
                + (f"(exit {code})" if code is not None else f"(no exit within {timeout:.0f} s)"),
                log_lines=tail_lines(out, 20),
                log_path=str(out),
            )
        return time.monotonic() - start

    # -- lifecycle ------------------------------------------------------------------------
    def up(self, *, timeout: float = 180.0, say: Progress | None = None) -> KRaftUpTimes:
        """Bring the whole cluster up (what is already running is left alone)."""
        report = say or (lambda _msg: None)
        start = time.monotonic()
        deadline = start + timeout
        lib = jars.ensure_kafka_jars(self.spec.kafka_version)
        self.write_configs()
        report("formatting storage")
        format_s = self.format_storage(lib, timeout=max(1.0, deadline - time.monotonic()))
        nodes = self.spec.nodes()
        controllers = [n for n in nodes if n.is_controller]
        brokers_only = [n for n in nodes if not n.is_controller]
        launched = time.monotonic()
        self._start(controllers, lib)
        report("waiting for a quorum leader")
        self.wait_quorum_leader(deadline, [n.name for n in controllers])
        leader_s = time.monotonic() - launched
        self._start(brokers_only, lib)
        report("waiting for every broker to be registered and unfenced")
        self.wait_brokers_unfenced(deadline, [n.name for n in nodes])
        unfenced_s = time.monotonic() - launched
        topic_start = time.monotonic()
        report(f"creating {TEST_TOPIC}")
        self.ensure_topic(
            TEST_TOPIC,
            TEST_TOPIC_PARTITIONS,
            TEST_TOPIC_RF,
            deadline,
            configs={"min.insync.replicas": str(TEST_TOPIC_MIN_ISR)},
        )
        now = time.monotonic()
        return KRaftUpTimes(format_s, leader_s, unfenced_s, now - topic_start, now - start)

    def _start(self, nodes: list[KRaftNode], lib: Path) -> None:
        for node in nodes:
            proc = self.process(node.name)
            if proc.state() is not ProcState.STOPPED:
                continue
            heap = BROKER_HEAP if node.is_broker else CONTROLLER_HEAP
            d = self.proc_dir(node.name)
            argv = [*self._jvm(node, heap), "-cp", f"{lib}{os.sep}*"]
            argv += ["kafka.Kafka", str(d / "server.properties")]
            proc.spawn(argv, cwd=d, env=self._env())

    def _fail_if_exited(self, names: list[str]) -> None:
        for name in names:
            proc = self.process(name)
            if proc.state() is ProcState.STOPPED:
                code = proc.exit_code()
                raise ClusterError(
                    f"{name} exited during start-up"
                    + (f" with exit code {code}" if code is not None else ""),
                    log_lines=self.log_tail(name, 25),
                    log_path=str(self.proc_dir(name) / "server.log"),
                )

    def _timeout(self, what: str, name: str) -> ClusterError:
        return ClusterError(
            f"timed out waiting for {what}",
            log_lines=self.log_tail(name, 20),
            log_path=str(self.proc_dir(name) / "server.log"),
        )

    def quorum(self, timeout_s: float = 2.0) -> QuorumState | None:
        """The quorum as its leader describes it (None: no leader answers)."""
        ports = list(self.spec.controller_ports().values())
        return kraft_probes.quorum_from_controllers(self.spec.host, ports, timeout_s)

    def wait_quorum_leader(self, deadline: float, names: list[str]) -> QuorumState:
        while True:
            self._fail_if_exited(names)
            state = self.quorum(timeout_s=1.0)
            if state is not None and state.voter_ids == sorted(self.spec.controller_ids):
                return state
            if time.monotonic() > deadline:
                raise self._timeout("a quorum leader", names[0])
            time.sleep(0.2)

    def broker_fencing(self, timeout_ms: int = 3000) -> dict[int, bool]:
        with kraft_probes.broker_admin(self.spec.bootstrap, timeout_ms) as admin:
            return kraft_probes.broker_fencing(admin)

    def wait_brokers_unfenced(self, deadline: float, names: list[str]) -> dict[int, bool]:
        want = set(self.spec.broker_ids)
        while True:
            self._fail_if_exited(names)
            try:
                fencing = self.broker_fencing()
                if set(fencing) >= want and not any(fencing[b] for b in want):
                    return fencing
            except Exception:  # brokers still binding their ports: ask again
                pass
            if time.monotonic() > deadline:
                raise self._timeout("every broker to be registered and unfenced", names[-1])
            time.sleep(0.2)

    def ensure_topic(
        self,
        name: str,
        partitions: int,
        rf: int,
        deadline: float,
        configs: dict[str, str] | None = None,
    ) -> bool:
        """Create `name` if missing, then wait until every partition has a full ISR. True when
        created here."""
        created = False
        with kraft_probes.broker_admin(self.spec.bootstrap) as admin:
            while True:
                try:
                    if kraft_probes.topic_partitions(admin, name) is None:
                        admin.create_topics(
                            {
                                name: {
                                    "num_partitions": partitions,
                                    "replication_factor": rf,
                                    "configs": dict(configs or {}),
                                }
                            },
                            timeout_ms=15000,
                        )
                        created = True
                    parts = kraft_probes.topic_partitions(admin, name)
                    if (
                        parts
                        and len(parts) == partitions
                        and all(len(p.isr) == rf and p.leader >= 0 for p in parts)
                    ):
                        return created
                except Exception as exc:
                    if (
                        "TopicAlreadyExists" not in type(exc).__name__
                        and time.monotonic() > deadline
                    ):
                        raise ClusterError(f"could not create {name}: {exc}") from exc
                if time.monotonic() > deadline:
                    raise ClusterError(f"timed out waiting for a full ISR on {name}")
                time.sleep(0.3)

    def status(self) -> KRaftStatus:
        nodes = []
        for node in self.spec.nodes():
            proc = self.process(node.name)
            nodes.append(
                KRaftNodeStatus(node.name, node.node_id, node.roles, proc.state(), proc.pid)
            )
        running = any(n.state is ProcState.RUNNING for n in nodes if "controller" in n.roles)
        return KRaftStatus(nodes, self.quorum(timeout_s=1.0) if running else None)

    def down(self, *, purge: bool = False, timeout: float = 30.0) -> list[str]:
        """Stop the brokers one at a time, then every controller at once (SIGTERM; SIGKILL
        for what has not exited after `timeout`); the names stopped. Only pids this cluster
        recorded are signalled.

        Brokers go one by one while the quorum is whole, so each controlled shutdown is
        answered at once. Controllers (and combined nodes) go together: stopped one by one,
        the last ones lose their majority, and a combined node's broker half then waits for a
        controlled shutdown that can no longer commit until it is killed.
        """
        stopped: list[str] = []
        records: list[PidRecord | None] = []
        nodes = self.spec.nodes()
        brokers_only = [n for n in nodes if not n.is_controller]
        controllers = [n for n in nodes if n.is_controller]
        for node in brokers_only:
            proc = self.process(node.name)
            if proc.state() is ProcState.STOPPED:
                continue
            records.append(proc.record())
            if not proc.terminate(timeout):
                proc.kill()
            stopped.append(node.name)
        signalled = []
        for node in controllers:
            proc = self.process(node.name)
            if proc.state() is ProcState.STOPPED:
                continue
            records.append(proc.record())
            proc.signal(signal.SIGTERM)
            proc.signal(signal.SIGCONT)  # a paused process cannot act on SIGTERM
            signalled.append(proc)
            stopped.append(node.name)
        deadline = time.monotonic() + timeout
        for proc in signalled:
            if not proc.wait_exit(max(0.0, deadline - time.monotonic())):
                proc.kill()
        wait_reaped(records, REAP_WAIT_S)
        if purge and self.state_dir.exists():
            shutil.rmtree(self.state_dir)
        return stopped
