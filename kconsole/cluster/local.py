"""The embedded local cluster: ZooKeeper + N Kafka brokers as JVM processes kconsole starts.

State lives in one directory per cluster:

    cluster.json                  the spec (brokers, racks, ports, overrides, Kafka version)
    log4j.properties              shared by every process
    zookeeper/zoo.cfg data/ server.log stdout.log zookeeper.pid
    broker-N/server.properties data/ server.log stdout.log broker.pid
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TypeVar

import psutil

from kconsole.cluster import jars
from kconsole.cluster.errors import ClusterError, PortInUse
from kconsole.cluster.procs import ManagedProcess, ProcState, tail_lines
from kconsole.cluster.settings import (
    BROKER_BASE_PORT,
    BROKER_HEAP,
    DEFAULT_BROKERS,
    HOST,
    KAFKA_VERSION,
    TEST_TOPIC,
    TEST_TOPIC_PARTITIONS,
    TEST_TOPIC_RF,
    ZK_PORT,
    ZK_TICK_TIME_MS,
    ZOOKEEPER_HEAP,
    broker_port,
    drill_settings,
)

Progress = Callable[[str], None]
T = TypeVar("T")

ZK_PREFIX = "zk:"
_JVM_FLAGS = [
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
]

LOG4J_PROPERTIES = """\
# Written by kconsole. One rolling server.log per process; JVM output goes to stdout.log.
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.RollingFileAppender
log4j.appender.file.File=${kafka.logs.dir}/server.log
log4j.appender.file.MaxFileSize=20MB
log4j.appender.file.MaxBackupIndex=3
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.kafka.network.RequestChannel$=WARN
log4j.logger.state.change.logger=INFO
log4j.logger.kafka.controller=INFO
log4j.logger.kafka.authorizer.logger=WARN
"""


# --------------------------------------------------------------------------------------------
# The spec and the configuration files it renders (pure functions, unit-tested)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LocalClusterSpec:
    """What a local cluster is: broker count, racks, ports, version and setting overrides."""

    brokers: int = DEFAULT_BROKERS
    racks: int = 0
    zk_port: int = ZK_PORT
    base_port: int = BROKER_BASE_PORT
    host: str = HOST
    kafka_version: str = KAFKA_VERSION
    overrides: dict[str, str] = field(default_factory=dict)
    zk_overrides: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 1 <= self.brokers <= 32:
            raise ClusterError(f"--brokers must be between 1 and 32, not {self.brokers}")
        if not 0 <= self.racks <= self.brokers:
            raise ClusterError(f"--racks must be between 0 and the broker count, not {self.racks}")
        for port in (self.zk_port, self.base_port, self.base_port + self.brokers - 1):
            if not 1024 <= port <= 65535:
                raise ClusterError(f"port {port} is outside 1024..65535")
        if self.zk_port in self.broker_ports().values():
            raise ClusterError(f"ZooKeeper port {self.zk_port} collides with a broker port")
        low, high = ephemeral_port_range()
        for port in (self.zk_port, *self.broker_ports().values()):
            if low <= port <= high:
                raise ClusterError(
                    f"port {port} is inside this machine's ephemeral port range ({low}-{high}): "
                    "while a broker is stopped, a client retrying it can be given that very "
                    "port and connect to itself, and the broker then cannot start again. "
                    f"Use ports below {low} (the defaults are 22181 and 19092-)."
                )

    @property
    def broker_ids(self) -> list[int]:
        return list(range(1, self.brokers + 1))

    def broker_ports(self) -> dict[int, int]:
        return {i: broker_port(i, self.base_port) for i in self.broker_ids}

    @property
    def zk_connect(self) -> str:
        return f"{self.host}:{self.zk_port}"

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{self.host}:{p}" for p in self.broker_ports().values())

    def rack_of(self, broker_id: int) -> str | None:
        return f"rack-{(broker_id - 1) % self.racks + 1}" if self.racks else None

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> LocalClusterSpec:
        data = json.loads(text)
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


def parse_set_options(items: list[str] | tuple[str, ...]) -> tuple[dict[str, str], dict[str, str]]:
    """Split `--set key=value` items into broker and ZooKeeper (`zk:key=value`) overrides."""
    broker: dict[str, str] = {}
    zk: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key or any(c.isspace() for c in key):
            raise ClusterError(f"--set expects key=value (or zk:key=value), got {item!r}")
        if "\n" in value:
            raise ClusterError(f"--set value for {key} must be a single line")
        if key.startswith(ZK_PREFIX):
            zk[key[len(ZK_PREFIX) :]] = value
        else:
            broker[key] = value
    return broker, zk


def broker_properties(spec: LocalClusterSpec, broker_id: int, data_dir: Path) -> dict[str, str]:
    """The server.properties of one broker, as a dict (overrides applied last)."""
    port = spec.broker_ports()[broker_id]
    props = {
        "broker.id": str(broker_id),
        "listeners": f"PLAINTEXT://{spec.host}:{port}",
        "advertised.listeners": f"PLAINTEXT://{spec.host}:{port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "zookeeper.connect": spec.zk_connect,
        "zookeeper.connection.timeout.ms": "18000",
        "log.dirs": str(data_dir),
        "num.network.threads": "2",
        "num.io.threads": "4",
        "num.recovery.threads.per.data.dir": "1",
        "background.threads": "4",
    }
    rack = spec.rack_of(broker_id)
    if rack:
        props["broker.rack"] = rack
    props.update(drill_settings(spec.brokers))
    props.update(spec.overrides)
    return props


def zookeeper_properties(spec: LocalClusterSpec, data_dir: Path) -> dict[str, str]:
    """zoo.cfg as a dict. maxSessionTimeout is 20 x tickTime, so 6 s broker sessions fit."""
    props = {
        "tickTime": str(ZK_TICK_TIME_MS),
        "dataDir": str(data_dir),
        "clientPort": str(spec.zk_port),
        "clientPortAddress": spec.host,
        "maxClientCnxns": "0",
        "admin.enableServer": "false",
        "4lw.commands.whitelist": "ruok,srvr,stat,mntr",
        "autopurge.snapRetainCount": "3",
        "autopurge.purgeInterval": "1",
    }
    props.update(spec.zk_overrides)
    return props


def render_properties(props: dict[str, str]) -> str:
    """A Java properties file, keys in insertion order."""
    lines = ["# Written by kconsole; regenerated on every `kconsole cluster up`."]
    lines += [f"{k}={v}" for k, v in props.items()]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# Status
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProcessStatus:
    name: str  # "zookeeper" or "broker-N"
    broker_id: int | None
    state: ProcState
    pid: int | None
    port: int
    registered: bool | None  # in ZooKeeper's /brokers/ids; None when ZooKeeper is unreachable
    log: Path


@dataclass(frozen=True)
class ClusterStatus:
    state_dir: Path
    spec: LocalClusterSpec
    processes: list[ProcessStatus]
    controller: int | None
    zk_error: str = ""

    @property
    def any_running(self) -> bool:
        return any(p.state is not ProcState.STOPPED for p in self.processes)


@dataclass
class UpResult:
    started: list[str] = field(default_factory=list)
    already_running: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)
    topic_created: bool = False
    controller: int | None = None
    elapsed_s: float = 0.0


# --------------------------------------------------------------------------------------------
# The cluster
# --------------------------------------------------------------------------------------------


class LocalCluster:
    """A local ZooKeeper + Kafka cluster in `state_dir`. Every signal goes to a pid we recorded."""

    def __init__(self, state_dir: Path, spec: LocalClusterSpec | None = None):
        self.state_dir = Path(state_dir)
        saved = self._load_spec()
        self.spec = spec or saved or LocalClusterSpec()
        self._procs: dict[str, ManagedProcess] = {}

    # -- layout ---------------------------------------------------------------------------
    @property
    def spec_file(self) -> Path:
        return self.state_dir / "cluster.json"

    def _load_spec(self) -> LocalClusterSpec | None:
        try:
            return LocalClusterSpec.from_json(self.spec_file.read_text())
        except FileNotFoundError:
            return None
        except (ValueError, TypeError) as exc:
            raise ClusterError(f"{self.spec_file} is not a valid cluster spec: {exc}") from exc

    def proc_dir(self, name: str) -> Path:
        return self.state_dir / name

    def process(self, name: str) -> ManagedProcess:
        """The ManagedProcess for "zookeeper" or "broker-N" (one object per name)."""
        if name not in self._procs:
            d = self.proc_dir(name)
            pid_name = "zookeeper.pid" if name == "zookeeper" else "broker.pid"
            self._procs[name] = ManagedProcess(name, d / pid_name, d / "stdout.log")
        return self._procs[name]

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
        for bid in self.spec.broker_ids:
            bdir = self.proc_dir(f"broker-{bid}")
            (bdir / "data").mkdir(parents=True, exist_ok=True)
            props = broker_properties(self.spec, bid, bdir / "data")
            (bdir / "server.properties").write_text(render_properties(props))

    def _argv(self, name: str, lib: Path) -> list[str]:
        d = self.proc_dir(name)
        heap = ZOOKEEPER_HEAP if name == "zookeeper" else BROKER_HEAP
        argv = [jars.java_executable(), *heap.split(), *_JVM_FLAGS]
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

    # -- readiness probes -----------------------------------------------------------------
    @contextmanager
    def zk_client(self, timeout: float = 5.0) -> Iterator[object]:
        """A short-lived kazoo client (connection errors raise ClusterError)."""
        from kazoo.client import KazooClient
        from kazoo.retry import KazooRetry

        # The session outlives a busy moment (ZooKeeper allows 4-40 s); only the wait for the
        # first connection is `timeout`. A dropped connection is re-established by kazoo.
        client = KazooClient(
            hosts=self.spec.zk_connect,
            timeout=15.0,
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0),
        )
        try:
            client.start(timeout=timeout)
        except Exception as exc:
            with suppress(Exception):
                client.stop()
                client.close()
            raise ClusterError(
                f"ZooKeeper at {self.spec.zk_connect} is unreachable: {exc}"
            ) from exc
        try:
            yield client
        finally:
            client.stop()
            client.close()

    @contextmanager
    def zk_client_until(self, deadline: float, attempt_s: float = 5.0) -> Iterator[object]:
        """A kazoo client, connecting in short attempts until `deadline`.

        One long attempt is fragile: kazoo uses the session timeout as its connect and read
        timeout, so a single handshake stalled by a ZooKeeper still starting up would use up
        the whole wait without ever retrying.
        """
        while True:
            try:
                ctx = self.zk_client(attempt_s)
                client = ctx.__enter__()
                break
            except ClusterError:
                if time.monotonic() + 0.5 > deadline:
                    raise
                time.sleep(0.5)
        try:
            yield client
        finally:
            ctx.__exit__(None, None, None)

    @staticmethod
    def poll_zk(read: Callable[[], T], deadline: float) -> T | None:
        """`read()`, or None after a transient ZooKeeper error (the caller polls again);
        the error is raised once `deadline` has passed."""
        from kazoo.exceptions import ConnectionLoss, OperationTimeoutError, SessionExpiredError

        try:
            return read()
        except (ConnectionLoss, OperationTimeoutError, SessionExpiredError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
            return None

    @staticmethod
    def read_registered(client: object) -> set[int]:
        ids = client.get_children("/brokers/ids") if client.exists("/brokers/ids") else []  # type: ignore[attr-defined]
        return {int(i) for i in ids}

    @staticmethod
    def read_controller(client: object) -> int | None:
        if not client.exists("/controller"):  # type: ignore[attr-defined]
            return None
        data, _ = client.get("/controller")  # type: ignore[attr-defined]
        try:
            return int(json.loads(data)["brokerid"])
        except (ValueError, KeyError, TypeError):
            return None

    # -- status ---------------------------------------------------------------------------
    def status(self, zk_timeout: float = 3.0) -> ClusterStatus:
        """Every process's state, pid, port, and whether ZooKeeper lists it."""
        registered: set[int] | None = None
        controller: int | None = None
        zk_error = ""
        if self.zookeeper.state() is ProcState.RUNNING or not self.spec_file.exists():
            try:
                with self.zk_client(zk_timeout) as zk:
                    registered = self.read_registered(zk)
                    controller = self.read_controller(zk)
            except ClusterError as exc:
                zk_error = exc.message
        else:
            zk_error = f"ZooKeeper is {self.zookeeper.state().value}"
        procs = [
            ProcessStatus(
                "zookeeper",
                None,
                self.zookeeper.state(),
                self.zookeeper.pid,
                self.spec.zk_port,
                None,
                self.log_path("zookeeper"),
            )
        ]
        for bid in self.known_broker_ids():
            p = self.process(f"broker-{bid}")
            procs.append(
                ProcessStatus(
                    f"broker-{bid}",
                    bid,
                    p.state(),
                    p.pid,
                    broker_port(bid, self.spec.base_port),
                    None if registered is None else bid in registered,
                    self.log_path(f"broker-{bid}"),
                )
            )
        return ClusterStatus(self.state_dir, self.spec, procs, controller, zk_error)

    # -- up / down ------------------------------------------------------------------------
    def up(
        self,
        *,
        timeout: float = 120.0,
        create_topic: bool = True,
        progress: Progress | None = None,
    ) -> UpResult:
        """Start whatever is not running, wait until ready, create test-topic. Idempotent.

        On failure every process this call started is stopped again, and the error carries the
        log lines that explain it.
        """
        say = progress or (lambda _msg: None)
        t0 = time.monotonic()
        deadline = t0 + timeout
        result = UpResult()
        lib = jars.ensure_kafka_jars(self.spec.kafka_version)
        jars.java_executable()  # fail early and clearly when Java is missing
        names = ["zookeeper", *[f"broker-{i}" for i in self.spec.broker_ids]]
        # Refuse a spec change under running processes: their configs would silently differ.
        saved = self._load_spec()
        if (
            saved
            and saved != self.spec
            and any(self.process(n).state() is not ProcState.STOPPED for n in self._all_names())
        ):
            raise ClusterError(
                f"the cluster in {self.state_dir} is running with another configuration; "
                "run `kconsole cluster down` first"
            )
        to_start: list[str] = []
        for name in names:
            state = self.process(name).state()
            if state is ProcState.RUNNING:
                result.already_running.append(name)
            elif state is ProcState.PAUSED:
                self.process(name).signal(signal.SIGCONT)
                result.resumed.append(name)
            else:
                to_start.append(name)
        for name in to_start:
            check_port_free(self.spec.host, self.port_of(name), name)
        self.write_configs()
        started: list[str] = []
        try:
            if "zookeeper" in to_start:
                say(f"starting ZooKeeper on {self.spec.zk_connect}")
                self._spawn("zookeeper", lib)
                started.append("zookeeper")
            self._wait_zookeeper(deadline, started)
            for name in to_start:
                if name != "zookeeper":
                    say(f"starting {name} on port {self.port_of(name)}")
                    self._spawn(name, lib)
                    started.append(name)
            say("waiting for every broker to register and a controller to be elected")
            result.controller = self._wait_registered(deadline, started)
            if create_topic:
                result.topic_created = self._ensure_test_topic(deadline, say)
        except BaseException:
            for name in reversed(started):
                proc = self.process(name)
                if not proc.terminate(timeout=5.0):
                    proc.kill()
            raise
        result.started = started
        result.elapsed_s = time.monotonic() - t0
        return result

    def _all_names(self) -> list[str]:
        return ["zookeeper", *[f"broker-{i}" for i in self.known_broker_ids()]]

    def _spawn(self, name: str, lib: Path) -> None:
        env = dict(os.environ)
        for var in ("KAFKA_OPTS", "KAFKA_HEAP_OPTS", "JVMFLAGS", "CLASSPATH"):
            env.pop(var, None)
        self.process(name).spawn(self._argv(name, lib), cwd=self.proc_dir(name), env=env)

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

    def _wait_zookeeper(self, deadline: float, started: list[str]) -> None:
        while True:
            self._fail_if_exited(started)
            if zk_ruok(self.spec.host, self.spec.zk_port):
                return
            if time.monotonic() > deadline:
                raise self._timeout_error("ZooKeeper to answer", ["zookeeper"])
            time.sleep(0.1)

    def _wait_registered(self, deadline: float, started: list[str]) -> int:
        expected = set(self.spec.broker_ids)
        missing: set[int] = expected
        with self.zk_client_until(deadline) as zk:
            while True:
                self._fail_if_exited(started)
                read = self.poll_zk(
                    lambda: (self.read_registered(zk), self.read_controller(zk)), deadline
                )
                if read is None:
                    continue
                missing = expected - read[0]
                controller = read[1]
                if not missing and controller is not None:
                    return controller
                if time.monotonic() > deadline:
                    what = (
                        f"brokers {sorted(missing)} to register in ZooKeeper"
                        if missing
                        else "a controller to be elected"
                    )
                    names = [f"broker-{min(missing)}"] if missing else started
                    raise self._timeout_error(what, names)
                time.sleep(0.1)

    def _ensure_test_topic(self, deadline: float, say: Progress) -> bool:
        """Create test-topic if missing, then wait until every partition has a full ISR."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient, NewTopic

        rf = min(TEST_TOPIC_RF, self.spec.brokers)
        # log_level 0: brokers still binding their ports are expected here, not worth printing.
        admin = AdminClient(
            {"bootstrap.servers": self.spec.bootstrap, "socket.timeout.ms": 5000, "log_level": 0}
        )
        created = False
        while True:
            try:
                md = admin.list_topics(timeout=5)
                if TEST_TOPIC not in md.topics:
                    say(f"creating {TEST_TOPIC} ({TEST_TOPIC_PARTITIONS} partitions, RF {rf})")
                    fut = admin.create_topics(
                        [NewTopic(TEST_TOPIC, TEST_TOPIC_PARTITIONS, rf)], request_timeout=15
                    )[TEST_TOPIC]
                    fut.result(timeout=20)
                    created = True
                break
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                if getattr(err, "name", lambda: "")() == "TOPIC_ALREADY_EXISTS":
                    break
                if time.monotonic() > deadline:
                    raise ClusterError(f"could not create {TEST_TOPIC}: {exc}") from exc
                time.sleep(0.5)
        self.wait_isr_full(TEST_TOPIC, deadline)
        self.wait_metadata_everywhere(TEST_TOPIC, deadline)
        return created

    def wait_metadata_everywhere(self, topic: str, deadline: float) -> None:
        """Wait until every broker serves `topic` with a leader for each partition.

        ZooKeeper shows the new topic before the controller's UpdateMetadata reaches every
        broker; a client sent to a lagging broker would get UNKNOWN_TOPIC_OR_PART.
        """
        from confluent_kafka.admin import AdminClient

        pending = dict(self.spec.broker_ports())
        while pending:
            for bid, port in list(pending.items()):
                # A client bootstrapped with one broker asks that broker first.
                admin = AdminClient(
                    {"bootstrap.servers": f"{self.spec.host}:{port}", "log_level": 0}
                )
                try:
                    md = admin.list_topics(topic, timeout=3).topics.get(topic)
                except Exception:
                    md = None
                if (
                    md is not None
                    and md.error is None
                    and md.partitions
                    and all(p.leader >= 0 for p in md.partitions.values())
                ):
                    del pending[bid]
            if pending and time.monotonic() > deadline:
                raise ClusterError(
                    f"timed out waiting for brokers {sorted(pending)} to serve {topic} metadata"
                )
            if pending:
                time.sleep(0.1)

    def wait_isr_full(self, topic: str, deadline: float) -> None:
        """Wait until every partition of `topic` has a leader and all replicas in ISR."""
        with self.zk_client_until(deadline) as zk:
            while True:
                if self.poll_zk(lambda: partitions_fully_in_sync(zk, topic), deadline):
                    return
                if time.monotonic() > deadline:
                    raise ClusterError(f"timed out waiting for every {topic} replica to be in ISR")
                time.sleep(0.1)

    def down(self, *, purge: bool = False, timeout: float = 30.0) -> list[str]:
        """Stop every broker, then ZooKeeper.

        Brokers go one at a time, the controller last: each controlled shutdown then talks to a
        live controller and takes well under a second, where stopping all at once makes them
        retry against a controller that is itself going away. A broker that does not exit within
        `timeout` is killed.
        """
        stopped: list[str] = []
        order = [
            b
            for b in self.known_broker_ids()
            if self.process(f"broker-{b}").state() is not ProcState.STOPPED
        ]
        ctl = self._controller_or_none()
        if ctl in order:
            order = [b for b in order if b != ctl] + [ctl]
        for bid in order:
            proc = self.process(f"broker-{bid}")
            if not proc.terminate(timeout):
                proc.kill()
            stopped.append(proc.name)
        zk = self.zookeeper
        if zk.state() is not ProcState.STOPPED:
            if not zk.terminate(timeout=10.0):
                zk.kill()
            stopped.append("zookeeper")
        if purge and self.state_dir.exists():
            shutil.rmtree(self.state_dir)
        return stopped

    def _controller_or_none(self) -> int | None:
        if self.zookeeper.state() is not ProcState.RUNNING:
            return None
        try:
            with self.zk_client(2.0) as zk:
                return self.read_controller(zk)
        except ClusterError:
            return None

    # -- per-broker control ---------------------------------------------------------------
    def stop_broker(self, broker_id: int, timeout: float = 60.0) -> float:
        """SIGTERM: controlled shutdown. Returns seconds until the process exited."""
        proc = self._running(broker_id, "stop")
        t0 = time.monotonic()
        if not proc.terminate(timeout):
            raise ClusterError(
                f"broker {broker_id} did not exit within {timeout:.0f} s of SIGTERM; "
                f"use `kconsole cluster kill {broker_id}`",
                log_lines=self.log_tail(f"broker-{broker_id}", 15),
            )
        return time.monotonic() - t0

    def kill_broker(self, broker_id: int) -> float:
        """SIGKILL: no controlled shutdown; noticed when its ZooKeeper session expires."""
        proc = self._running(broker_id, "kill")
        t0 = time.monotonic()
        proc.kill()
        return time.monotonic() - t0

    def pause_broker(self, broker_id: int) -> None:
        """SIGSTOP: the JVM freezes with its sockets open."""
        proc = self.broker(broker_id)
        state = proc.state()
        if state is ProcState.STOPPED:
            raise ClusterError(f"broker {broker_id} is not running")
        if state is ProcState.PAUSED:
            raise ClusterError(f"broker {broker_id} is already paused")
        proc.signal(signal.SIGSTOP)
        _wait_for(lambda: proc.state() is ProcState.PAUSED, 5.0)

    def resume_broker(self, broker_id: int) -> None:
        """SIGCONT a paused broker."""
        proc = self.broker(broker_id)
        if proc.state() is not ProcState.PAUSED:
            raise ClusterError(f"broker {broker_id} is not paused ({proc.state().value})")
        proc.signal(signal.SIGCONT)
        _wait_for(lambda: proc.state() is ProcState.RUNNING, 5.0)

    def start_broker(self, broker_id: int, *, wait: bool = True, timeout: float = 90.0) -> float:
        """Start a stopped broker with its existing config and data dir; optionally wait until
        it is registered in ZooKeeper. Returns seconds taken."""
        name = f"broker-{broker_id}"
        proc = self.broker(broker_id)
        if proc.state() is not ProcState.STOPPED:
            raise ClusterError(f"broker {broker_id} is already {proc.state().value}")
        if self.zookeeper.state() is not ProcState.RUNNING:
            raise ClusterError("ZooKeeper is not running; use `kconsole cluster up`")
        if not (self.proc_dir(name) / "server.properties").exists():
            raise ClusterError(
                f"broker {broker_id} has no configuration; use `kconsole cluster up`"
            )
        check_port_free(self.spec.host, self.port_of(name), name)
        t0 = time.monotonic()
        self._spawn(name, jars.ensure_kafka_jars(self.spec.kafka_version))
        if wait:
            deadline = t0 + timeout
            with self.zk_client_until(deadline) as zk:
                while broker_id not in (
                    self.poll_zk(lambda: self.read_registered(zk), deadline) or set()
                ):
                    self._fail_if_exited([name])
                    if time.monotonic() > deadline:
                        raise self._timeout_error(f"broker {broker_id} to register", [name])
                    time.sleep(0.05)
        return time.monotonic() - t0

    def _running(self, broker_id: int, verb: str) -> ManagedProcess:
        proc = self.broker(broker_id)
        if proc.state() is ProcState.STOPPED:
            raise ClusterError(f"cannot {verb} broker {broker_id}: it is not running")
        return proc


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def ephemeral_port_range() -> tuple[int, int]:
    """The OS range for outgoing connections' local ports (Linux; IANA's range elsewhere)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 49152, 65535


def _wait_for(cond: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


def port_owner(port: int) -> str:
    """Best effort: 'pid 123 (java)' listening on `port`, or '' if it cannot be told."""
    try:
        for conn in psutil.net_connections(kind="tcp"):
            listening = conn.status == psutil.CONN_LISTEN
            if conn.laddr and conn.laddr.port == port and listening and conn.pid:
                try:
                    return f"pid {conn.pid} ({psutil.Process(conn.pid).name()})"
                except psutil.Error:
                    return f"pid {conn.pid}"
    except (psutil.Error, OSError):
        pass
    return ""


def check_port_free(host: str, port: int, name: str) -> None:
    """Raise PortInUse if something already listens on host:port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            owner = port_owner(port)
            by = f" by {owner}" if owner else ""
            raise PortInUse(
                f"port {port} on {host}, needed by {name}, is already in use{by} ({exc.strerror}). "
                "Stop that process, or give the cluster other ports "
                "(--zk-port / --base-port)."
            ) from exc


def zk_ruok(host: str, port: int, timeout: float = 1.0) -> bool:
    """True when ZooKeeper answers the `ruok` four-letter word with `imok`."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(b"ruok")
            return s.recv(16) == b"imok"
    except OSError:
        return False


def partitions_fully_in_sync(zk: object, topic: str) -> bool:
    """True when every partition of `topic` has a leader and ISR == replicas (from ZooKeeper)."""
    path = f"/brokers/topics/{topic}"
    if not zk.exists(path):  # type: ignore[attr-defined]
        return False
    data, _ = zk.get(path)  # type: ignore[attr-defined]
    assignment = json.loads(data).get("partitions", {})
    if not assignment:
        return False
    for p, replicas in assignment.items():
        state_path = f"{path}/partitions/{p}/state"
        if not zk.exists(state_path):  # type: ignore[attr-defined]
            return False
        sdata, _ = zk.get(state_path)  # type: ignore[attr-defined]
        state = json.loads(sdata)
        if state.get("leader", -1) < 0 or sorted(state.get("isr", [])) != sorted(replicas):
            return False
    return True


def with_spec_changes(cluster: LocalCluster, **changes: object) -> LocalClusterSpec:
    """The cluster's spec with some fields replaced (validated)."""
    return replace(cluster.spec, **changes)  # type: ignore[arg-type]
