"""A local cluster's state directory: its layout, configuration files and JVM processes.

    cluster.json                  the spec (brokers, racks, ports, overrides, Kafka version)
    log4j.properties              shared by every process
    zookeeper/zoo.cfg data/ server.log stdout.log zookeeper.pid
    broker-N/server.properties data/ server.log stdout.log broker.pid

LocalClusterDir knows where everything is, writes the configuration, spawns a process and
explains one that died; kconsole.cluster.local.cluster.LocalCluster builds the lifecycle on it.
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, suppress
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from kconsole.cluster import jars
from kconsole.cluster.errors import ClusterError
from kconsole.cluster.local import probes as local_probes
from kconsole.cluster.local.credentials import ensure_certificates, ensure_passwords
from kconsole.cluster.local.security import SASL_SCRAM, SSL, SecurityFiles, client_properties
from kconsole.cluster.local.spec import (
    LOG4J_PROPERTIES,
    LocalClusterSpec,
    broker_properties,
    render_properties,
    zookeeper_properties,
)
from kconsole.cluster.logs import tail_lines
from kconsole.cluster.net.faults import NetFaults, NetNode
from kconsole.cluster.net.record import involved
from kconsole.cluster.procs import ManagedProcess
from kconsole.cluster.security.translate import librdkafka_config
from kconsole.cluster.settings import BROKER_HEAP, ZOOKEEPER_HEAP, broker_port
from kconsole.cluster.values import ProcState

T = TypeVar("T")

_JVM_FLAGS = [
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
]
JVM_OPTS_ENV = "KCONSOLE_LOCAL_JVM_OPTS"


def jvm_flags() -> list[str]:
    """The JVM flags of every node of a local cluster (both modes), then the words of
    $KCONSOLE_LOCAL_JVM_OPTS: e.g. `-XX:TieredStopAtLevel=1` (C1 only) starts a broker on about
    a third less CPU and serves slower under full load -- what the test suite, which starts
    brokers some 70 times, sets."""
    return [*_JVM_FLAGS, *shlex.split(os.environ.get(JVM_OPTS_ENV, ""))]


def private_file(path: Path) -> None:
    """`path` exists, readable by the user only (what is written to it later stays so)."""
    path.touch(mode=0o600)
    path.chmod(0o600)


class _Spec(Protocol):
    @property
    def security(self) -> str: ...
    @property
    def mtls(self) -> bool: ...
    @property
    def password_file(self) -> str: ...

    def to_json(self) -> str: ...


S = TypeVar("S", bound=_Spec)


class StateDir(Generic[S]):
    """A local cluster's state directory, whichever its mode: the spec saved as cluster.json
    and one folder per process, holding its pid file and its logs."""

    PID_FILE = "node.pid"
    spec: S  # set by each mode's __init__

    def __init__(self, state_dir: Path, load: Callable[[str], S]):
        self.state_dir = Path(state_dir)
        self._load = load
        self._procs: dict[str, ManagedProcess] = {}

    # -- layout ---------------------------------------------------------------------------
    @property
    def spec_file(self) -> Path:
        return self.state_dir / "cluster.json"

    def _load_spec(self) -> S | None:
        try:
            return self._load(self.spec_file.read_text())
        except FileNotFoundError:
            return None
        except (ValueError, TypeError) as exc:
            raise ClusterError(f"{self.spec_file} is not a valid cluster spec: {exc}") from exc

    def proc_dir(self, name: str) -> Path:
        return self.state_dir / name

    # -- security (kconsole.cluster.local.security) -----------------------------------------
    def security_files(self) -> SecurityFiles:
        """Where this cluster's secrets and certificates are."""
        return SecurityFiles(self.state_dir, self.spec.password_file)

    def client_properties(self) -> dict[str, str]:
        """What a client of this cluster sets (librdkafka names; a password by its file)."""
        return client_properties(self.spec.security, self.spec.mtls, self.security_files())

    def client_config(self) -> dict[str, str]:
        """client_properties() as librdkafka takes them, the password read from its file: for
        this cluster's own clients (the test topic, the readiness checks), never written."""
        return dict(librdkafka_config(self.client_properties()))

    @staticmethod
    def write_server_properties(conf: Path, props: dict[str, str], *, secret: bool) -> None:
        """A node's server.properties; readable by the user only when it holds a `secret`
        (the brokers' own password)."""
        if secret:
            private_file(conf)
        conf.write_text(render_properties(props))

    def pid_file_name(self, name: str) -> str:
        return self.PID_FILE

    # -- network faults (kconsole.cluster.net) ----------------------------------------------
    def net_faults(self) -> NetFaults:
        """The network faults of this cluster: tagged by its state dir, recorded in it."""
        return NetFaults(self.state_dir)

    def heal_network(self) -> ClusterError | None:
        """Heal every network fault of this cluster (`down` does it first, so that no rule
        outlives the cluster); the error when that failed (the caller stops the processes
        anyway and then says so: the record stays, for `cluster heal --all`)."""
        try:
            self.net_faults().heal_all()
        except ClusterError as exc:
            return exc
        return None

    def unhealed(self, error: ClusterError, stopped: list[str]) -> ClusterError:
        """What `down` says when its heal failed: stopped, but the rules are still there."""
        return ClusterError(
            f"stopped {', '.join(stopped) or 'nothing'}, but the network faults are not all "
            f"healed: {error.message} (`kconsole cluster heal --all` as root ends them; "
            f"{self.state_dir} keeps their record)"
        )

    def refuse_if_isolated(self, names: list[str], verb: str = "start") -> None:
        """ClusterError when a node in `names` has a network fault in force: started, it would
        find its ports still cut and never come back."""
        faults = self.net_faults().in_force()
        held = {n: f for f in faults.values() for n in involved(f)}
        cut = [n for n in names if n in held]
        if cut:
            fault = held[cut[0]]
            raise ClusterError(
                f"cannot {verb} {', '.join(cut)}: a network fault is in force on "
                f"{'it' if len(cut) == 1 else 'them'} ({fault.fault} of {fault.node}, since "
                f"{time.strftime('%H:%M:%S', time.localtime(fault.since))}): started, it "
                "would be outside the fault's cut; `kconsole cluster heal` ends it first"
            )

    def net_node(self, name: str, label: str, ports: list[int], host: str, verb: str) -> NetNode:
        """Node `name` as a network fault acts on it (ClusterError when it is not running)."""
        proc = self.process(name)
        pid = proc.pid
        if pid is None or proc.state() is ProcState.STOPPED:
            raise ClusterError(f"cannot {verb} {label}: it is not running")
        return NetNode(name, label, pid, tuple(ports), host)

    def running_net_nodes(
        self, every: list[tuple[str, str, list[int]]], host: str
    ) -> list[NetNode]:
        """The nodes of `every` (name, label, ports) whose process runs (or is paused)."""
        out = []
        for name, label, ports in every:
            proc = self.process(name)
            if proc.pid is not None and proc.state() is not ProcState.STOPPED:
                out.append(NetNode(name, label, proc.pid, tuple(ports), host))
        return out

    def process(self, name: str) -> ManagedProcess:
        """The ManagedProcess of the node `name` (one object per name)."""
        if name not in self._procs:
            d = self.proc_dir(name)
            self._procs[name] = ManagedProcess(name, d / self.pid_file_name(name), d / "stdout.log")
        return self._procs[name]


class LocalClusterDir(StateDir[LocalClusterSpec]):
    """The files and processes of a local ZooKeeper + Kafka cluster in `state_dir`."""

    def __init__(self, state_dir: Path, spec: LocalClusterSpec | None = None):
        super().__init__(state_dir, LocalClusterSpec.from_json)
        saved = self._load_spec()
        self.spec = spec or saved or LocalClusterSpec()

    def pid_file_name(self, name: str) -> str:
        return "zookeeper.pid" if name == "zookeeper" else "broker.pid"

    @property
    def zookeeper(self) -> ManagedProcess:
        return self.process("zookeeper")

    def broker(self, broker_id: int) -> ManagedProcess:
        if broker_id not in self.known_broker_ids():
            raise ClusterError(
                f"broker {broker_id} is not part of this cluster "
                f"(brokers: {', '.join(map(str, self.known_broker_ids()))})"
            )
        return self.process(f"broker-{broker_id}")

    def known_broker_ids(self) -> list[int]:
        """Brokers of the spec plus any with a directory here (from an earlier, larger spec)."""
        ids = set(self.spec.broker_ids)
        if self.state_dir.exists():
            for d in self.state_dir.glob("broker-*"):
                with suppress(ValueError):
                    ids.add(int(d.name.split("-", 1)[1]))
        return sorted(ids)

    def log_path(self, name: str) -> Path:
        return self.proc_dir(name) / "server.log"

    def log_tail(self, name: str, lines: int = 30) -> list[str]:
        """Last lines of a process's server.log, then of its JVM output if that has news."""
        out = tail_lines(self.log_path(name), lines)
        jvm = [ln for ln in tail_lines(self.proc_dir(name) / "stdout.log", lines) if ln.strip()]
        jvm = [ln for ln in jvm if not ln.startswith("=== kconsole:")]
        return out + (["-- stdout.log --", *jvm] if jvm else [])

    # -- configuration --------------------------------------------------------------------
    def write_configs(self) -> None:
        """Write cluster.json, log4j.properties, zoo.cfg and every server.properties."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.spec_file.write_text(self.spec.to_json() + "\n")
        (self.state_dir / "log4j.properties").write_text(LOG4J_PROPERTIES)
        zk_dir = self.proc_dir("zookeeper")
        (zk_dir / "data").mkdir(parents=True, exist_ok=True)
        (zk_dir / "zoo.cfg").write_text(
            render_properties(zookeeper_properties(self.spec, zk_dir / "data"))
        )
        files = self.security_files()
        if self.spec.security == SASL_SCRAM:
            ensure_passwords(files)
        elif self.spec.security == SSL:
            ensure_certificates(files, self.spec.host, self.spec.mtls)
        for bid in self.spec.broker_ids:
            bdir = self.proc_dir(f"broker-{bid}")
            (bdir / "data").mkdir(parents=True, exist_ok=True)
            props = broker_properties(self.spec, bid, bdir / "data", files)
            self.write_server_properties(
                bdir / "server.properties", props, secret=self.spec.security == SASL_SCRAM
            )

    def _argv(self, name: str, lib: Path) -> list[str]:
        d = self.proc_dir(name)
        heap = ZOOKEEPER_HEAP if name == "zookeeper" else BROKER_HEAP
        argv = [jars.java_executable(), *heap.split(), *jvm_flags()]
        argv += [
            f"-Dlog4j.configuration=file:{self.state_dir / 'log4j.properties'}",
            f"-Dkafka.logs.dir={d}",
            # Marks the process as ours in `ps`; identity is still checked by pid + start time.
            f"-Dkconsole.process={name}@{self.state_dir}",
        ]
        if name == "zookeeper":
            argv += ["-Dzookeeper.admin.enableServer=false"]
            main, conf = "org.apache.zookeeper.server.quorum.QuorumPeerMain", d / "zoo.cfg"
        else:
            main, conf = "kafka.Kafka", d / "server.properties"
        return [*argv, "-cp", f"{lib}{os.sep}*", main, str(conf)]

    def port_of(self, name: str) -> int:
        if name == "zookeeper":
            return self.spec.zk_port
        return broker_port(int(name.split("-")[1]), self.spec.base_port)

    def _all_names(self) -> list[str]:
        return ["zookeeper", *[f"broker-{i}" for i in self.known_broker_ids()]]

    def _spawn(self, name: str, lib: Path) -> int:
        """Start `name`'s JVM; its pid."""
        env = dict(os.environ)
        for var in ("KAFKA_OPTS", "KAFKA_HEAP_OPTS", "JVMFLAGS", "CLASSPATH"):
            env.pop(var, None)
        return self.process(name).spawn(self._argv(name, lib), cwd=self.proc_dir(name), env=env)

    def _fail_if_exited(self, started: list[str]) -> None:
        for name in started:
            proc = self.process(name)
            if proc.state() is ProcState.STOPPED:
                code = proc.exit_code()
                how = f" with exit code {code}" if code is not None else ""
                raise ClusterError(
                    f"{name} exited during start-up{how}",
                    log_lines=self.log_tail(name, 25),
                    log_path=str(self.log_path(name)),
                )

    def _timeout_error(self, what: str, names: list[str]) -> ClusterError:
        name = names[-1] if names else "zookeeper"
        return ClusterError(
            f"timed out waiting for {what}",
            log_lines=self.log_tail(name, 20),
            log_path=str(self.log_path(name)),
        )

    # -- ZooKeeper ------------------------------------------------------------------------
    def zk_client(self, timeout: float = 5.0) -> AbstractContextManager[object]:
        """A short-lived kazoo client (connection errors raise ClusterError)."""
        return local_probes.zk_client(self.spec.zk_connect, timeout)

    def zk_client_until(
        self, deadline: float, attempt_s: float = 5.0
    ) -> AbstractContextManager[object]:
        """A kazoo client, connecting in short attempts until `deadline`."""
        return local_probes.zk_client_until(self.spec.zk_connect, deadline, attempt_s)

    @staticmethod
    def poll_zk(read: Callable[[], T], deadline: float) -> T | None:
        """`read()`, or None after a transient ZooKeeper error (the caller polls again);
        the error is raised once `deadline` has passed."""
        return local_probes.poll_zk(read, deadline)

    @staticmethod
    def read_registered(client: object) -> set[int]:
        return local_probes.read_registered(client)

    @staticmethod
    def read_controller(client: object) -> int | None:
        return local_probes.read_controller(client)
