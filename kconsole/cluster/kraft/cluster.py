"""A local KRaft cluster: its state directory, storage formatting and lifecycle.

    cluster.json                  the spec (mode "kraft", topology, ports, version, security,
                                  cluster id, the controllers' directory ids)
    log4j2.xml                    shared by every process (log4j.properties on Kafka 3.9)
    security/                     a secured cluster's passwords or certificates (0700; as in
                                  the ZooKeeper mode, kconsole.cluster.local.security)
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
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from kconsole.cluster import jars
from kconsole.cluster.errors import ClusterError
from kconsole.cluster.kraft import probes as kraft_probes
from kconsole.cluster.kraft.probes import QuorumState
from kconsole.cluster.kraft.spec import (
    KRaftNode,
    KRaftSpec,
    format_args,
    java_argfile,
    log_config_flag,
    node_properties,
    scram_arguments,
)
from kconsole.cluster.local.credentials import ensure_certificates, ensure_passwords
from kconsole.cluster.local.probes import check_port_free
from kconsole.cluster.local.security import SASL_SCRAM, SSL
from kconsole.cluster.local.state_dir import StateDir, jvm_flags, private_file
from kconsole.cluster.logs import tail_lines
from kconsole.cluster.net.faults import links_for
from kconsole.cluster.procs import ManagedProcess, PidRecord, wait_reaped
from kconsole.cluster.security import translate as security
from kconsole.cluster.settings import (
    BROKER_HEAP,
    TEST_TOPIC,
    TEST_TOPIC_PARTITIONS,
    TEST_TOPIC_RF,
)
from kconsole.cluster.values import NetLinks, ProcState

Progress = Callable[[str], None]
CONTROLLER_HEAP = "-Xmx256m -Xms256m"
FORMAT_HEAP = "-Xmx128m"
# A short-lived JVM: C1 only and the serial collector halve its CPU (measured: 2.3 -> 1.25 s).
FORMAT_JVM_FLAGS = [
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-XX:-UsePerfData",
    "-Djava.awt.headless=true",
]
FORMAT_LAUNCHER_NAME = "FormatStorage.java"
FORMAT_NEXT = "--kconsole-next"
# Run with `java -cp LIB FormatStorage.java LOG ARGS... --kconsole-next LOG ARGS...`: each
# group is one node's format.log and its StorageTool arguments. StorageTool.execute (Kafka
# 3.9 and 4.x) is found by reflection, so compiling this needs nothing from the classpath.
FORMAT_LAUNCHER = """\
// Written by kconsole: formats the storage of several KRaft nodes in one JVM.
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;

public class FormatStorage {
    public static void main(String[] argv) throws Exception {
        Method execute = Class.forName("kafka.tools.StorageTool")
            .getMethod("execute", String[].class, PrintStream.class);
        List<List<String>> groups = new ArrayList<>();
        List<String> current = new ArrayList<>();
        for (String arg : argv) {
            if (arg.equals("--kconsole-next")) {
                groups.add(current);
                current = new ArrayList<>();
            } else {
                current.add(arg);
            }
        }
        groups.add(current);
        for (int i = 0; i < groups.size(); i++) {
            List<String> group = groups.get(i);
            int code;
            try (PrintStream out = new PrintStream(new FileOutputStream(group.get(0)), true)) {
                try {
                    String[] args = group.subList(1, group.size()).toArray(new String[0]);
                    code = (Integer) execute.invoke(null, args, out);
                } catch (InvocationTargetException e) {
                    out.println("Error: " + e.getCause());
                    e.getCause().printStackTrace(out);
                    code = 1;
                }
            }
            System.out.println("kconsole-format " + i + " " + code);
        }
        System.exit(0);
    }
}
"""
REAP_WAIT_S = 5.0
# `down`: how long the last nodes, once the quorum has lost its majority, may take to exit by
# themselves before SIGKILL (they are flushing, or waiting for a quorum that is gone).
LAST_NODES_GRACE_S = 3.0
# The same for dedicated controllers (no broker half to flush): a follower left alone exits in a
# few tenths of a second; the leader left alone resigns to voters that are gone and waits 5 s
# (Kafka's own bound) for a successor that cannot be elected, which LAST_NODES_GRACE_S never
# reached either: it was always killed, 3 s after the others had gone.
LAST_CONTROLLERS_GRACE_S = 1.0
QUORUM_GRACE_S = 6.0  # how long a broker stop waits for a quorum leader before refusing
TEST_TOPIC_MIN_ISR = 2  # set on the topic itself, whatever the cluster default


@dataclass(frozen=True)
class KRaftUpTimes:
    """Seconds each stage of `up` took (what the README and the report quote), and which
    nodes it started, found running, or resumed."""

    format_s: float
    quorum_leader_s: float  # from the controllers' launch
    brokers_unfenced_s: float  # from the controllers' launch
    test_topic_s: float
    total_s: float
    started: tuple[str, ...] = ()
    already_running: tuple[str, ...] = ()
    resumed: tuple[str, ...] = ()
    topic_created: bool = False


@dataclass(frozen=True)
class NodeStart:
    """What start_node verified: the new process, and when it was back in its roles."""

    name: str
    roles: tuple[str, ...]
    pid: int
    unfenced_s: float | None = None  # broker role: registered and unfenced, from the spawn
    in_quorum_s: float | None = None  # controller role: fetching and caught up, from the spawn
    quorum_leader: int | None = None
    lag: int | None = None  # records behind the leader when it was seen caught up

    @property
    def message(self) -> str:
        """One line saying what was verified."""
        parts = [f"{node_label(self.name)} started (pid {self.pid})"]
        if self.unfenced_s is not None:
            parts.append(f"registered and unfenced after {self.unfenced_s:.1f} s")
        if self.in_quorum_s is not None:
            if self.quorum_leader is not None and self.quorum_leader == _node_id(self.name):
                parts.append(f"quorum leader after {self.in_quorum_s:.1f} s")
            else:
                parts.append(
                    f"back in the quorum after {self.in_quorum_s:.1f} s (fetching from leader "
                    f"{self.quorum_leader} and caught up since it started; {self.lag} "
                    "record(s) behind at that read)"
                )
        return ", ".join(parts)


def _node_id(name: str) -> int:
    return int(name.rsplit("-", 1)[1])


def node_label(name: str) -> str:
    """controller-1001 -> 'controller 1001', broker-2 -> 'broker 2', node-1 -> 'node 1
    (broker+controller)'."""
    kind, _, num = name.rpartition("-")
    return f"node {num} (broker+controller)" if kind == "node" else f"{kind} {num}"


# What a broker logs once the controller has unfenced it (BrokerLifecycleManager): read from
# the new process's own log, so an old registration still unfenced (a killed broker's, until
# its session times out) is never taken for the new process's.
UNFENCED_LINE = "The broker has been unfenced"


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
    spec: KRaftSpec = field(default_factory=KRaftSpec)
    quorum_error: str | None = None  # why `quorum` is None


class KRaftCluster(StateDir[KRaftSpec]):
    """The files and processes of a local KRaft cluster in `state_dir`."""

    def __init__(self, state_dir: Path, spec: KRaftSpec | None = None):
        super().__init__(state_dir, KRaftSpec.from_json)
        self._asked = spec
        saved = self._load_spec()
        self.spec = saved if saved is not None and spec is None else spec or KRaftSpec()
        if saved is not None and spec is not None and saved.cluster_id:
            # A formatted cluster keeps its identity; a new spec only changes what it may.
            self.spec = KRaftSpec.from_json(saved.to_json())

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
        files = self.security_files()
        if self.spec.security == SASL_SCRAM:
            ensure_passwords(files)
        elif self.spec.security == SSL:
            ensure_certificates(files, self.spec.host, self.spec.mtls)
        for node in self.spec.nodes():
            d = self.proc_dir(node.name)
            (d / "data").mkdir(parents=True, exist_ok=True)
            props = node_properties(self.spec, node, d / "data", files)
            self.write_server_properties(
                d / "server.properties",
                props,
                secret=self.spec.security == SASL_SCRAM and node.is_broker,
            )

    def kafka_python_security(self) -> dict[str, object]:
        """client_properties() as kafka-python arguments (the probes' admin clients)."""
        return dict(security.kafka_python_args(self.client_properties()))

    def _jvm(self, node: KRaftNode, heap: str) -> list[str]:
        d = self.proc_dir(node.name)
        _, _, log_flag = log_config_flag(self.spec, self.state_dir)
        return [
            jars.java_executable(),
            *heap.split(),
            *jvm_flags(),
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
        """Format every node not formatted yet; seconds it took.

        All of them in one JVM (FORMAT_LAUNCHER, run by Java's source launcher: StorageTool's
        `execute` once per node), which costs a fifth of the CPU of a JVM per node (measured:
        2.6 s against 14 s for 6 nodes) -- what a cluster's first start waits for on a busy
        machine. A node the launcher did not get to (no compiler in this Java, a crash) is
        formatted by a JVM of its own, in parallel, as before."""
        start = time.monotonic()
        deadline = start + timeout
        todo = [n for n in self.spec.nodes() if not self.is_formatted(n)]
        if todo:
            codes = self._format_in_one_jvm(todo, lib, deadline)
            failed: list[tuple[KRaftNode, Path, int | None]] = [
                (n, self.proc_dir(n.name) / "format.log", c) for n, c in codes.items() if c
            ]
            if not failed:
                rest = [n for n in todo if n not in codes]
                failed = self._format_each(rest, lib, deadline)
            if failed:
                node, out, code = failed[0]
                raise ClusterError(
                    f"formatting the storage of {node.name} failed "
                    + (
                        f"(exit {code})"
                        if code is not None
                        else f"(no exit within {timeout:.0f} s)"
                    ),
                    log_lines=_error_first(out, 20),
                    log_path=str(out),
                )
        return time.monotonic() - start

    def _format_argv(self, lib: Path) -> list[str]:
        _, _, log_flag = log_config_flag(self.spec, self.state_dir)
        return [
            jars.java_executable(),
            *FORMAT_HEAP.split(),
            *FORMAT_JVM_FLAGS,
            log_flag,
            f"-Dkafka.logs.dir={self.state_dir}",
            "-cp",
            f"{lib}{os.sep}*",
        ]

    def _format_in_one_jvm(
        self, nodes: list[KRaftNode], lib: Path, deadline: float
    ) -> dict[KRaftNode, int]:
        """Format `nodes` in one JVM; each node's exit code as the launcher reported it (a
        node missing from the answer was not attempted)."""
        launcher = self.state_dir / FORMAT_LAUNCHER_NAME
        launcher.write_text(FORMAT_LAUNCHER)
        scram = self._scram_arguments(nodes)
        args = [str(launcher)]
        for i, node in enumerate(nodes):
            d = self.proc_dir(node.name)
            if i:
                args.append(FORMAT_NEXT)
            args += [
                str(d / "format.log"),
                *format_args(self.spec, node, d / "server.properties", scram),
            ]
        if scram:
            # StorageTool prints the bootstrap records, the users' stored and server keys
            # among them: the logs are kept private like the rest of the secrets.
            for node in nodes:
                private_file(self.proc_dir(node.name) / "format.log")
        out = self.state_dir / "format.log"
        with self._argfile(args) as argfile, open(out, "wb") as f:
            popen = subprocess.Popen(
                [*self._format_argv(lib), f"@{argfile}"],
                cwd=self.state_dir,
                env=self._env(),
                stdin=subprocess.DEVNULL,
                stdout=f,
                stderr=subprocess.STDOUT,
            )
            try:
                popen.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                popen.kill()
                popen.wait()
        codes: dict[KRaftNode, int] = {}
        for line in out.read_text(errors="replace").splitlines():
            words = line.split()
            if len(words) == 3 and words[0] == "kconsole-format" and words[1].isdigit():
                codes[nodes[int(words[1])]] = int(words[2]) if words[2].lstrip("-").isdigit() else 1
        return codes

    def _format_each(
        self, nodes: list[KRaftNode], lib: Path, deadline: float
    ) -> list[tuple[KRaftNode, Path, int | None]]:
        """Format `nodes` with a JVM each, all at once; the ones that failed."""
        scram = self._scram_arguments(nodes)
        running: list[tuple[KRaftNode, subprocess.Popen[bytes], Path]] = []
        failed: list[tuple[KRaftNode, Path, int | None]] = []
        # Each argument file is removed only after its JVM exited (java reads it at launch).
        with ExitStack() as argfiles:
            for node in nodes:
                d = self.proc_dir(node.name)
                args = [
                    "kafka.tools.StorageTool",
                    *format_args(self.spec, node, d / "server.properties", scram),
                ]
                argfile = argfiles.enter_context(self._argfile(args))
                out = d / "format.log"
                if scram:
                    private_file(out)
                with open(out, "wb") as f:
                    popen = subprocess.Popen(
                        [*self._format_argv(lib), f"@{argfile}"],
                        cwd=d,
                        env=self._env(),
                        stdin=subprocess.DEVNULL,
                        stdout=f,
                        stderr=f,
                    )
                running.append((node, popen, out))
            for node, popen, out in running:
                try:
                    code: int | None = popen.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    popen.kill()
                    popen.wait()
                    code = None
                if code != 0:
                    failed.append((node, out, code))
        return failed

    def _scram_arguments(self, nodes: list[KRaftNode]) -> list[str] | None:
        """The SCRAM users to create, when a sasl-scram cluster's controller is formatted."""
        if self.spec.security != SASL_SCRAM or not any(n.is_controller for n in nodes):
            return None
        return scram_arguments(self.security_files())

    @contextmanager
    def _argfile(self, args: list[str]) -> Iterator[Path]:
        """`args` in a java argument file only the user can read (`java @FILE`), removed on
        exit: the format arguments carry the SCRAM users' salted passwords, which must not
        be on a command line (`ps` shows every process's to everyone)."""
        fd, name = tempfile.mkstemp(prefix=".format-", suffix=".args", dir=self.state_dir)
        path = Path(name)
        try:
            with os.fdopen(fd, "w") as f:  # mkstemp: created 0600
                f.write(java_argfile(args))
            yield path
        finally:
            path.unlink(missing_ok=True)

    # -- lifecycle ------------------------------------------------------------------------
    def up(
        self,
        *,
        timeout: float = 180.0,
        say: Progress | None = None,
        progress: Progress | None = None,
        create_topic: bool = True,
    ) -> KRaftUpTimes:
        """Bring the whole cluster up: resume what is paused, start what is stopped (what is
        already running is left alone), wait for a quorum leader and every broker unfenced,
        create test-topic. On failure every process this call started is stopped again."""
        report = say or progress or (lambda _msg: None)
        start = time.monotonic()
        deadline = start + timeout
        self._refuse_other_topology()
        lib = jars.ensure_kafka_jars(self.spec.kafka_version)
        nodes = self.spec.nodes()
        running, resumed, to_start = [], [], []
        for node in nodes:
            proc = self.process(node.name)
            state = proc.state()
            if state is ProcState.RUNNING:
                running.append(node.name)
            elif state is ProcState.PAUSED:
                proc.signal(signal.SIGCONT)
                resumed.append(node.name)
            else:
                to_start.append(node)
        self.refuse_if_isolated([n.name for n in to_start])
        for node in to_start:
            for port in self._ports(node):
                check_port_free(self.spec.host, port, node.name)
        self.write_configs()
        report("formatting storage")
        format_s = self.format_storage(lib, timeout=max(1.0, deadline - time.monotonic()))
        controllers = [n for n in to_start if n.is_controller]
        brokers_only = [n for n in to_start if not n.is_controller]
        started = [n.name for n in to_start]
        launched = time.monotonic()
        try:
            if controllers:
                report("starting " + ", ".join(n.name for n in controllers))
            self._start(controllers, lib)
            report("waiting for a quorum leader")
            self.wait_quorum_leader(deadline, [n.name for n in nodes if n.is_controller])
            leader_s = time.monotonic() - launched
            if brokers_only:
                report("starting " + ", ".join(n.name for n in brokers_only))
            self._start(brokers_only, lib)
            report("waiting for every broker to be registered and unfenced")
            self.wait_brokers_unfenced(deadline, [n.name for n in nodes])
            unfenced_s = time.monotonic() - launched
            topic_start = time.monotonic()
            created = False
            if create_topic:
                report(f"creating {TEST_TOPIC} (or checking it)")
                created = self.ensure_topic(
                    TEST_TOPIC,
                    TEST_TOPIC_PARTITIONS,
                    min(TEST_TOPIC_RF, self.spec.brokers),
                    deadline,
                    configs={
                        "min.insync.replicas": str(min(TEST_TOPIC_MIN_ISR, self.spec.brokers))
                    },
                )
        except BaseException:
            self._stop_started(started)
            raise
        now = time.monotonic()
        return KRaftUpTimes(
            format_s,
            leader_s,
            unfenced_s,
            now - topic_start,
            now - start,
            started=tuple(started),
            already_running=tuple(running),
            resumed=tuple(resumed),
            topic_created=created,
        )

    def _refuse_other_topology(self) -> None:
        """A formatted cluster keeps its topology, ports and version: asking for others is an
        error that says how to go on, not a silent reuse of the old ones."""
        asked, saved = self._asked, self._load_spec()
        if asked is None or saved is None or not saved.cluster_id:
            return
        fields = (
            "combined",
            "brokers",
            "controllers",
            "base_port",
            "controller_base_port",
            "overrides",
            # the SCRAM users are created when the storage is formatted, from these
            "security",
            "password_file",
        )
        differ = [f for f in fields if getattr(asked, f) != getattr(saved, f)]
        if asked.kafka_version != saved.kafka_version:
            differ.append("kafka_version")
        if differ:
            had = ", ".join(f"{f}={getattr(saved, f)!r}" for f in differ)
            raise ClusterError(
                f"the local KRaft cluster in {self.state_dir} was created with {had}; it keeps "
                "that. Use it as it is (`kconsole cluster up` without those options), or "
                "remove it first with `kconsole cluster down --purge`"
            )

    def _stop_started(self, names: list[str]) -> None:
        records = []
        for name in reversed(names):
            proc = self.process(name)
            records.append(proc.record())
            if not proc.terminate(timeout=10.0):
                proc.kill()
        wait_reaped(records, REAP_WAIT_S)

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

    def node_named(self, name: str) -> KRaftNode:
        """The node `name` of this cluster (ClusterError listing them when there is none)."""
        for node in self.spec.nodes():
            if node.name == name:
                return node
        names = ", ".join(n.name for n in self.spec.nodes())
        raise ClusterError(f"{name} is not a node of this cluster (nodes: {names})")

    def node_of(self, node_id: int) -> KRaftNode:
        """The node with id `node_id` (ids are unique across roles)."""
        for node in self.spec.nodes():
            if node.node_id == node_id:
                return node
        raise ClusterError(
            f"no node with id {node_id} in this cluster (brokers {self.spec.broker_ids}, "
            f"controllers {self.spec.controller_ids})"
        )

    def node_states(self) -> dict[str, ProcState]:
        """Every node's process state, by name."""
        return {n.name: self.process(n.name).state() for n in self.spec.nodes()}

    # -- per-node control -----------------------------------------------------------------
    def _running_proc(self, name: str, verb: str) -> ManagedProcess:
        self.node_named(name)
        proc = self.process(name)
        if proc.state() is ProcState.STOPPED:
            raise ClusterError(f"cannot {verb} {node_label(name)}: it is not running")
        return proc

    def stop_node(self, name: str, timeout: float = 60.0) -> float:
        """SIGTERM (a broker's controlled shutdown; a controller resigns); seconds until the
        process was gone. ClusterError when it has not exited within `timeout`."""
        proc = self._running_proc(name, "stop")
        node = self.node_named(name)
        if node.is_broker and not self._quorum_leader_within(QUORUM_GRACE_S):
            # Its controlled shutdown asks the quorum leader to move its leaders away and
            # waits minutes for an answer that cannot come.
            raise ClusterError(
                f"not stopping {node_label(name)}: no controller answers as quorum leader (a "
                "majority of the controllers is down, or an election is under way), so its "
                "controlled shutdown would hang until it times out. Start a controller first, "
                f"or stop it without a controlled shutdown: `kconsole cluster kill "
                f"{_cli_name(node)}`"
            )
        rec = proc.record()
        t0 = time.monotonic()
        if not proc.terminate(timeout):
            raise ClusterError(
                f"{node_label(name)} did not exit within {timeout:.0f} s of SIGTERM (a broker's "
                "controlled shutdown waits for a quorum leader); it is still running: use "
                f"`kconsole cluster kill {_cli_name(self.node_named(name))}`",
                log_lines=self.log_tail(name, 15),
            )
        took = time.monotonic() - t0
        wait_reaped([rec], REAP_WAIT_S)
        return took

    def _quorum_leader_within(self, seconds: float) -> bool:
        """Whether a quorum leader answers within `seconds` (an election after a leader was
        lost takes about controller.quorum.fetch.timeout.ms, 2 s)."""
        deadline = time.monotonic() + seconds
        while self.quorum(timeout_s=1.0) is None:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)
        return True

    def kill_node(self, name: str) -> float:
        """SIGKILL; seconds until the process was gone."""
        proc = self._running_proc(name, "kill")
        rec = proc.record()
        t0 = time.monotonic()
        if not proc.kill():
            raise ClusterError(f"{node_label(name)} is still there 10 s after SIGKILL")
        took = time.monotonic() - t0
        wait_reaped([rec], REAP_WAIT_S)
        return took

    def pause_node(self, name: str) -> None:
        """SIGSTOP: the JVM freezes with its sockets open."""
        proc = self._running_proc(name, "pause")
        if proc.state() is ProcState.PAUSED:
            raise ClusterError(f"{node_label(name)} is already paused")
        proc.signal(signal.SIGSTOP)
        if not _wait(lambda: proc.state() is ProcState.PAUSED, 5.0):
            raise ClusterError(f"{node_label(name)} is not shown stopped 5 s after SIGSTOP")

    def resume_node(self, name: str) -> None:
        """SIGCONT a paused node."""
        self.node_named(name)
        proc = self.process(name)
        if proc.state() is not ProcState.PAUSED:
            raise ClusterError(f"{node_label(name)} is not paused ({proc.state().value})")
        proc.signal(signal.SIGCONT)
        if not _wait(lambda: proc.state() is ProcState.RUNNING, 5.0):
            raise ClusterError(f"{node_label(name)} is still shown stopped 5 s after SIGCONT")

    def isolate_node(self, name: str, guard: int | None = None) -> str:
        """Cut the node off the network: what it sends and what is sent to its ports (broker
        and controller) are dropped (kconsole.cluster.net); what was done, read back."""
        node = self.node_named(name)
        label = node_label(name)
        net = self.net_node(name, label, self._ports(node), self.spec.host, "isolate")
        return self.net_faults().isolate(net, guard)

    def partition_node(self, name: str, links: NetLinks, guard: int | None = None) -> str:
        """Cut the node off from `links` only (the quorum's controllers, the other brokers,
        clients, named nodes); what was done, read back."""
        node = self.node_named(name)
        host_ip = self.spec.host
        me = self.net_node(name, node_label(name), self._ports(node), host_ip, "partition")
        others = [n for n in self.spec.nodes() if n.name != name]
        every = [(n.name, node_label(n.name), self._ports(n)) for n in self.spec.nodes()]
        groups: dict[str, list[str] | str] = {
            "quorum": [n.name for n in others if n.is_controller],
            "brokers": [n.name for n in others if n.is_broker],
            "zookeeper": "this local cluster runs in KRaft mode: it has no ZooKeeper "
            "(--from quorum cuts a node from the controllers)",
        }

        def resolve(side: str) -> str:
            return self.spec.resolve_node(side).name

        nodes = self.running_net_nodes(every, host_ip)
        return self.net_faults().partition(me, links_for(me, links, nodes, groups, resolve), guard)

    def heal_node(self, name: str) -> str:
        """End the node's network fault; what was removed, read back."""
        self.node_named(name)
        return self.net_faults().heal(name, node_label(name))

    def start_node(self, name: str, *, timeout: float = 120.0) -> NodeStart:
        """Start a stopped node with its configuration and data, and verify it is back: a
        broker registered and unfenced (its own log says so, and the cluster's metadata
        agrees), a controller fetching from the quorum leader and caught up since it started.
        ClusterError when it exits or is not back within `timeout`."""
        node = self.node_named(name)
        proc = self.process(name)
        if proc.state() is not ProcState.STOPPED:
            raise ClusterError(f"{node_label(name)} is already {proc.state().value}")
        d = self.proc_dir(name)
        if not (d / "server.properties").exists() or not self.is_formatted(node):
            raise ClusterError(
                f"{node_label(name)} has no formatted storage; use `kconsole cluster up`"
            )
        self.refuse_if_isolated([name])
        for port in self._ports(node):
            check_port_free(self.spec.host, port, name)
        lib = jars.ensure_kafka_jars(self.spec.kafka_version)
        log = d / "server.log"
        offset = log.stat().st_size if log.exists() else 0
        wall_ms = int(time.time() * 1000)
        t0 = time.monotonic()
        deadline = t0 + timeout
        self._start([node], lib)
        pid = proc.pid
        if pid is None:
            self._fail_if_exited([name])
            raise ClusterError(f"{node_label(name)} did not start")
        out = NodeStart(name, node.roles, pid)
        unfenced_s = in_quorum_s = None
        leader = lag = None
        while (node.is_broker and unfenced_s is None) or (
            node.is_controller and in_quorum_s is None
        ):
            self._fail_if_exited([name])
            now = time.monotonic() - t0
            if node.is_controller and in_quorum_s is None:
                found = self._back_in_quorum(node.node_id, wall_ms)
                if found is not None:
                    in_quorum_s, leader, lag = now, found[0], found[1]
            if node.is_broker and unfenced_s is None and self._unfenced_since(node, log, offset):
                unfenced_s = now
            if time.monotonic() > deadline:
                what = (
                    "to be registered and unfenced"
                    if node.is_broker and unfenced_s is None
                    else "to fetch from the quorum leader and catch up"
                )
                raise ClusterError(
                    f"{node_label(name)} started (pid {pid}) but was not seen {what} within "
                    f"{timeout:.0f} s; it is still running",
                    log_lines=self.log_tail(name, 20),
                    log_path=str(log),
                )
            time.sleep(0.2)
        return replace(
            out, unfenced_s=unfenced_s, in_quorum_s=in_quorum_s, quorum_leader=leader, lag=lag
        )

    def _ports(self, node: KRaftNode) -> list[int]:
        ports = []
        if node.is_broker:
            ports.append(self.spec.broker_ports()[node.node_id])
        if node.is_controller:
            ports.append(self.spec.controller_ports()[node.node_id])
        return ports

    def _back_in_quorum(self, node_id: int, since_ms: int) -> tuple[int, int] | None:
        """(leader, lag) once the quorum leader says `node_id` fetched from it and was caught
        up after `since_ms` (or `node_id` leads); None until then."""
        return kraft_probes.back_in_quorum(self.quorum(timeout_s=1.0), node_id, since_ms)

    def _unfenced_since(self, node: KRaftNode, log: Path, offset: int) -> bool:
        """Whether the broker logged its unfencing after `offset` of its log and the cluster's
        metadata has it registered and unfenced."""
        try:
            with open(log, "rb") as fh:
                size = fh.seek(0, os.SEEK_END)
                fh.seek(offset if size >= offset else 0)  # a rolled log starts again
                if UNFENCED_LINE.encode() not in fh.read():
                    return False
        except OSError:
            return False
        try:
            return self.broker_fencing(timeout_ms=2000).get(node.node_id) is False
        except Exception:  # another broker paused or stopping: ask again
            return False

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
        with kraft_probes.broker_admin(
            self.spec.bootstrap, timeout_ms, self.kafka_python_security()
        ) as admin:
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
        with kraft_probes.broker_admin(
            self.spec.bootstrap, security=self.kafka_python_security()
        ) as admin:
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
        running = [n for n in nodes if n.state is ProcState.RUNNING and "controller" in n.roles]
        if not running:
            return KRaftStatus(nodes, None, self.spec, "no controller is running")
        quorum = self.quorum(timeout_s=1.0)
        why = None
        if quorum is None:
            why = (
                f"no controller answered as quorum leader ({len(running)} of "
                f"{len(self.spec.controller_ids)} controllers running: an election under way, "
                "or no majority)"
            )
        return KRaftStatus(nodes, quorum, self.spec, why)

    def down(self, *, purge: bool = False, timeout: float = 30.0) -> list[str]:
        """Stop the brokers one at a time, then every controller at once (SIGTERM; SIGKILL
        for what has not exited after `timeout`); the names stopped. Only pids this cluster
        recorded are signalled.

        Brokers go one by one while the quorum is whole, so each controlled shutdown is
        answered at once. Controllers (and combined nodes) go together: stopped one by one,
        the last ones lose their majority, and a combined node's broker half then waits for a
        controlled shutdown that can no longer commit until it is killed.
        """
        # First the network faults: no rule of this cluster's outlives it.
        unhealed = self.heal_network()
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
        combined = any(n.is_broker for n in controllers)
        grace = LAST_NODES_GRACE_S if combined else LAST_CONTROLLERS_GRACE_S
        self._wait_controllers_down(signalled, len(controllers), timeout, grace)
        wait_reaped(records, REAP_WAIT_S)
        if unhealed is not None:  # its record stays: no purge
            raise self.unhealed(unhealed, stopped)
        if purge and self.state_dir.exists():
            shutil.rmtree(self.state_dir)
        return stopped

    @staticmethod
    def _wait_controllers_down(
        signalled: list[ManagedProcess], voters: int, timeout: float,
        grace: float = LAST_NODES_GRACE_S,
    ) -> None:  # fmt: skip
        """Wait for the controllers (and combined nodes) sent SIGTERM together to exit; SIGKILL
        what has not after `timeout`. Once fewer than a majority of the voters run, the rest
        wait for a quorum that is gone (a combined node's broker half for its controlled
        shutdown, which can no longer commit): they get `grace` to exit by themselves, then
        SIGKILL, not the whole timeout. Which node loses its majority depends only on which
        exits first, so without this a `down` took 5 s or 30 s by luck."""
        deadline = time.monotonic() + timeout
        majority = voters // 2 + 1
        lost_at: float | None = None
        while True:
            alive = [p for p in signalled if p.state() is not ProcState.STOPPED]
            now = time.monotonic()
            if not alive:
                return
            if lost_at is None and len(alive) < majority:
                lost_at = now
            if now >= deadline or (lost_at is not None and now - lost_at >= grace):
                for proc in alive:
                    proc.kill()
                return
            time.sleep(0.05)


def _wait(cond: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _cli_name(node: KRaftNode) -> str:
    """How `kconsole cluster stop|kill|...` names `node`: a broker (or combined node) by its
    id, a dedicated controller as controller:ID."""
    return str(node.node_id) if node.is_broker else f"controller:{node.node_id}"


def _error_first(path: Path, lines: int) -> list[str]:
    """The last `lines` lines of a tool's output, after its first `Error` line when that one
    is further up (a stack trace would push the reason out of the tail)."""
    tail = tail_lines(path, lines)
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            first = next((ln.rstrip("\n") for ln in fh if ln.startswith("Error")), None)
    except OSError:
        return tail
    return tail if first is None or first in tail else [first, "...", *tail]
