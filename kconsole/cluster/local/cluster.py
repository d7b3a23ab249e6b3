"""The embedded local cluster: ZooKeeper + N Kafka brokers as JVM processes kconsole starts.

LocalCluster brings the cluster up (idempotently) and down, waits until it is ready, stops and
starts ZooKeeper alone, and stops, kills, pauses, resumes and starts single brokers. It builds on:

    spec           LocalClusterSpec and the server.properties / zoo.cfg it renders
    state_dir      LocalClusterDir: the state directory's layout, config files and processes
    probes         readiness probes: ZooKeeper reads, `ruok`, port checks
    status         ClusterStatus of every process
    security       what a security mode sets; credentials makes its passwords, users, certificates

kconsole.cluster.local.control builds LocalBrokerControl (the BrokerControl) on LocalCluster.

Every name callers import from here is re-exported, so `kconsole.cluster.local.cluster` stays the
one place to import the local cluster from.
"""

from __future__ import annotations

import logging
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from kconsole.cluster import jars
from kconsole.cluster.errors import ClusterError
from kconsole.cluster.local.credentials import ensure_scram_users
from kconsole.cluster.local.probes import (
    Registration,
    check_port_free,
    fresh_registrations,
    partitions_fully_in_sync,
    port_owner,
    read_registrations,
    wait_for,
    zk_ruok,
)
from kconsole.cluster.local.security import SASL_SCRAM
from kconsole.cluster.local.spec import (
    LOG4J_PROPERTIES,
    ZK_PREFIX,
    LocalClusterSpec,
    broker_properties,
    broker_session_timeout_ms,
    ephemeral_port_range,
    parse_set_options,
    render_properties,
    session_expiry_bound_s,
    zookeeper_properties,
)
from kconsole.cluster.local.state_dir import LocalClusterDir
from kconsole.cluster.local.status import ClusterStatus, ProcessStatus, read_status
from kconsole.cluster.net.faults import links_for
from kconsole.cluster.procs import ManagedProcess, PidRecord, wait_reaped
from kconsole.cluster.settings import TEST_TOPIC, TEST_TOPIC_PARTITIONS, TEST_TOPIC_RF
from kconsole.cluster.values import NetLinks, ProcState

__all__ = [
    "LOG4J_PROPERTIES",
    "ZK_PREFIX",
    "BrokerStart",
    "ClusterStatus",
    "LocalCluster",
    "LocalClusterSpec",
    "ProcessStatus",
    "Progress",
    "Registration",
    "UpResult",
    "broker_properties",
    "check_port_free",
    "ephemeral_port_range",
    "parse_set_options",
    "partitions_fully_in_sync",
    "port_owner",
    "render_properties",
    "with_spec_changes",
    "zk_ruok",
    "zookeeper_properties",
]

Progress = Callable[[str], None]

log = logging.getLogger(__name__)

# Beyond the computed bound, how long a previous session's registration may take to go away
# (a busy ZooKeeper) before start says something else holds the broker id.
EXPIRY_MARGIN_S = 10.0
# How often progress repeats "still waiting" while a previous session expires.
PROGRESS_EVERY_S = 2.0
# How long a stop waits for the parent of a process that exited to reap it (so that no
# `[java] <defunct>` is left when the command returns): a process kconsole started in this
# process is reaped at once; one whose `cluster up` has returned belongs to init, which may reap
# orphans only every second or so; past this, the stop returns anyway (the process is gone).
REAP_WAIT_S = 5.0


@dataclass
class UpResult:
    started: list[str] = field(default_factory=list)
    already_running: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)
    topic_created: bool = False
    controller: int | None = None
    elapsed_s: float = 0.0


@dataclass(frozen=True)
class BrokerStart:
    """What start_broker did: the wait for a previous session, then the start."""

    broker_id: int
    pid: int | None
    waited_s: float = 0.0  # for the previous process's registration to expire
    stale_owner: int | None = None  # the session that held /brokers/ids/<id> before the start
    started_s: float = 0.0  # from the spawn until its own registration (or the spawn only)
    owner: int | None = None  # the new process's session; None when not waited for

    @property
    def elapsed_s(self) -> float:
        return self.waited_s + self.started_s

    @property
    def message(self) -> str:
        """One line saying what really happened."""
        b = self.broker_id
        waited = ""
        if self.stale_owner is not None:
            waited = (
                f"waited {self.waited_s:.1f} s for broker {b}'s previous ZooKeeper session "
                f"(0x{self.stale_owner:x}, not shut down cleanly) to expire; "
            )
        if self.owner is None:
            return f"{waited}broker {b} started (pid {self.pid}); not waiting for it to register"
        return (
            f"{waited}broker {b} started (pid {self.pid}) and registered in ZooKeeper after "
            f"{self.started_s:.1f} s (session 0x{self.owner:x})"
        )


class LocalCluster(LocalClusterDir):
    """A local ZooKeeper + Kafka cluster in `state_dir`. Every signal goes to a pid we recorded."""

    # -- status ---------------------------------------------------------------------------
    def status(self, zk_timeout: float = 3.0) -> ClusterStatus:
        """Every process's state, pid, port, and whether ZooKeeper lists it."""
        return read_status(self, zk_timeout)

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
        running = [n for n in self._all_names() if self.process(n).state() is not ProcState.STOPPED]
        if saved and saved != self.spec and running and not self._adds_brokers_only(saved):
            raise ClusterError(
                f"the cluster in {self.state_dir} is running with another configuration; "
                "run `kconsole cluster down` first (adding brokers is fine while it runs)"
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
        self.refuse_if_isolated(to_start)
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
            brokers = [name for name in to_start if name != "zookeeper"]
            with self.zk_client_until(deadline) as zk:
                # A broker that died without deregistering (killed, or a machine that went
                # down with ZooKeeper, whose sessions survive a restart) would find its id
                # taken and exit: wait for those registrations to expire first.
                stale = self._stale_owners(zk, [_broker_id(n) for n in brokers], deadline)
                self._wait_stale_expired(zk, stale, say)
                if self.spec.security == SASL_SCRAM and brokers:
                    live = [n for n in result.already_running + result.resumed if n != "zookeeper"]
                    made = ensure_scram_users(zk, self.security_files(), overwrite=not live)
                    if made:
                        say(f"SCRAM users {', '.join(made)} written to ZooKeeper")
                for name in brokers:
                    say(f"starting {name} on port {self.port_of(name)}")
                    self._spawn(name, lib)
                    started.append(name)
                say("waiting for every broker to register and a controller to be elected")
                result.controller = self._wait_registered(zk, deadline, started, stale)
            if create_topic:
                result.topic_created = self._ensure_test_topic(deadline, say)
        except BaseException:
            records = []
            for name in reversed(started):
                proc = self.process(name)
                records.append(proc.record())
                if not proc.terminate(timeout=5.0):
                    proc.kill()
            self._wait_reaped(records)
            raise
        result.started = started
        result.elapsed_s = time.monotonic() - t0
        return result

    def _adds_brokers_only(self, saved: LocalClusterSpec) -> bool:
        """Whether this spec only adds brokers to `saved`, leaving every existing process's
        configuration exactly as it is (so they can keep running, e.g. to drain one)."""
        if (
            self.spec.brokers < saved.brokers
            or replace(saved, brokers=self.spec.brokers) != self.spec
        ):
            return False
        data = Path("/")  # the data dir is the same on both sides; only the rest may differ
        same_zk = zookeeper_properties(saved, data) == zookeeper_properties(self.spec, data)
        files = self.security_files()
        return same_zk and all(
            broker_properties(saved, b, data, files) == broker_properties(self.spec, b, data, files)
            for b in saved.broker_ids
        )

    def _wait_zookeeper(self, deadline: float, started: list[str]) -> None:
        while True:
            self._fail_if_exited(started)
            if zk_ruok(self.spec.host, self.spec.zk_port):
                return
            if time.monotonic() > deadline:
                raise self._timeout_error("ZooKeeper to answer", ["zookeeper"])
            time.sleep(0.1)

    def _wait_registered(
        self, zk: object, deadline: float, started: list[str], stale: dict[int, int]
    ) -> int:
        """Wait until every broker is registered, those in `stale` by a new session, and a
        controller is elected; its id."""
        expected = set(self.spec.broker_ids)
        missing: set[int] = expected
        while True:
            self._fail_if_exited(started)
            read = self.poll_zk(
                lambda: (read_registrations(zk), self.read_controller(zk)), deadline
            )
            if read is None:
                continue
            missing = expected - fresh_registrations(read[0], stale)
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

    def _stale_owners(self, zk: object, broker_ids: list[int], deadline: float) -> dict[int, int]:
        """The sessions still holding the registrations of brokers about to be started (none of
        them runs, so each is a previous process's that did not deregister), by broker id."""
        while (regs := self.poll_zk(lambda: read_registrations(zk), deadline)) is None:
            pass
        return {bid: regs[bid].owner for bid in broker_ids if bid in regs}

    def _wait_stale_expired(self, zk: object, stale: dict[int, int], say: Progress) -> float:
        """Wait until the registrations in `stale` are gone (ZooKeeper expired the sessions of
        processes that died without deregistering), saying so and how long it may take.
        Returns seconds waited; raises ClusterError when one outlives its session timeout."""
        if not stale:
            return 0.0
        t0 = time.monotonic()
        bound = t0 + max(session_expiry_bound_s(self.spec, b) for b in stale)
        deadline = bound + EXPIRY_MARGIN_S
        ids = ", ".join(map(str, sorted(stale)))
        sessions = ", ".join(f"0x{o:x}" for _b, o in sorted(stale.items()))
        next_say = t0
        waiting = set(stale)
        while True:
            now = time.monotonic()
            if now >= next_say:
                left = max(bound - now, 0.0)
                if next_say == t0:
                    say(
                        f"broker {ids} is still registered in ZooKeeper by the previous "
                        f"process's session ({sessions}); waiting for it to expire "
                        f"(at most {left:.0f} s)"
                    )
                else:
                    say(f"still waiting for session {sessions} to expire ({left:.0f} s left)")
                next_say = now + PROGRESS_EVERY_S
            regs = self.poll_zk(lambda: read_registrations(zk), deadline)
            if regs is not None:
                waiting = {b for b in waiting if b in regs}
                if not waiting:
                    waited = time.monotonic() - t0
                    say(f"the previous session expired after {waited:.1f} s")
                    return waited
            if time.monotonic() > deadline:
                b = min(waiting)
                owner = port_owner(self.port_of(f"broker-{b}"))
                on_port = f"; its port is held by {owner}" if owner else ""
                raise ClusterError(
                    f"broker {b} is still registered in ZooKeeper {time.monotonic() - t0:.0f} s "
                    f"later, longer than its session timeout "
                    f"({broker_session_timeout_ms(self.spec, b) / 1000:.0f} s) allows: another "
                    f"process with broker.id {b} may be running{on_port}; not starting it"
                )
            time.sleep(0.05)

    def _ensure_test_topic(self, deadline: float, say: Progress) -> bool:
        """Create test-topic if missing, then wait until every partition has a full ISR."""
        rf = min(TEST_TOPIC_RF, self.spec.brokers)
        return self.create_topic(TEST_TOPIC, TEST_TOPIC_PARTITIONS, rf, deadline, say)

    def create_topic(
        self,
        name: str,
        partitions: int,
        rf: int,
        deadline: float,
        say: Progress | None = None,
    ) -> bool:
        """Create `name` if missing (asked again while a controller settles), then wait until
        every replica is in ISR and every broker serves it. True when it was created here."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient, NewTopic

        # log_level 0: brokers still binding their ports are expected here, not worth printing.
        admin = AdminClient(
            {
                "bootstrap.servers": self.spec.bootstrap,
                "socket.timeout.ms": 5000,
                "log_level": 0,
                **self.client_config(),
            }
        )
        created = False
        while True:
            try:
                md = admin.list_topics(timeout=5)
                if name not in md.topics:
                    if say is not None:
                        say(f"creating {name} ({partitions} partitions, RF {rf})")
                    fut = admin.create_topics([NewTopic(name, partitions, rf)], request_timeout=15)[
                        name
                    ]
                    fut.result(timeout=20)
                    created = True
                break
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                if getattr(err, "name", lambda: "")() == "TOPIC_ALREADY_EXISTS":
                    break
                if time.monotonic() > deadline:
                    raise ClusterError(f"could not create {name}: {exc}") from exc
                time.sleep(0.5)
        self.wait_isr_full(name, deadline)
        self.wait_metadata_everywhere(name, deadline)
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
                    {
                        "bootstrap.servers": f"{self.spec.host}:{port}",
                        "log_level": 0,
                        **self.client_config(),
                    }
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
        # First the network faults: no rule of this cluster's outlives it.
        unhealed = self.heal_network()
        stopped: list[str] = []
        records: list[PidRecord | None] = []
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
            records.append(proc.record())
            if not proc.terminate(timeout):
                proc.kill()
            stopped.append(proc.name)
        zk = self.zookeeper
        if zk.state() is not ProcState.STOPPED:
            records.append(zk.record())
            if not zk.terminate(timeout=10.0):
                zk.kill()
            stopped.append("zookeeper")
        self._wait_reaped(records)  # all at once: the brokers' went while the next ones stopped
        if unhealed is not None:  # its record stays: no purge
            raise self.unhealed(unhealed, stopped)
        if purge and self.state_dir.exists():
            shutil.rmtree(self.state_dir)
        return stopped

    @staticmethod
    def _wait_reaped(records: list[PidRecord | None]) -> None:
        """Return once the stopped processes in `records` are reaped, or after REAP_WAIT_S."""
        for rec in wait_reaped(records, REAP_WAIT_S):
            log.warning("pid %d exited but its parent has not reaped it yet", rec.pid)

    def _controller_or_none(self) -> int | None:
        if self.zookeeper.state() is not ProcState.RUNNING:
            return None
        try:
            with self.zk_client(2.0) as zk:
                return self.read_controller(zk)
        except ClusterError:
            return None

    # -- ZooKeeper control ---------------------------------------------------------------
    def stop_zookeeper(self, timeout: float = 15.0) -> float:
        """SIGTERM ZooKeeper (the pid we recorded); the brokers keep running, cut off from it.
        Returns seconds until the process exited."""
        proc = self.zookeeper
        if proc.state() is ProcState.STOPPED:
            raise ClusterError("cannot stop ZooKeeper: it is not running")
        rec = proc.record()
        t0 = time.monotonic()
        if not proc.terminate(timeout):
            raise ClusterError(
                f"ZooKeeper did not exit within {timeout:.0f} s of SIGTERM",
                log_lines=self.log_tail("zookeeper", 15),
            )
        took = time.monotonic() - t0
        self._wait_reaped([rec])
        return took

    def start_zookeeper(self, *, timeout: float = 60.0) -> float:
        """Start a stopped ZooKeeper with its existing zoo.cfg and data dir and wait until it
        answers `ruok` (its sessions, the brokers' among them, survive a short outage).
        Returns seconds taken."""
        proc = self.zookeeper
        if proc.state() is not ProcState.STOPPED:
            raise ClusterError(f"ZooKeeper is already {proc.state().value}")
        if not (self.proc_dir("zookeeper") / "zoo.cfg").exists():
            raise ClusterError("ZooKeeper has no configuration; use `kconsole cluster up`")
        check_port_free(self.spec.host, self.spec.zk_port, "zookeeper")
        t0 = time.monotonic()
        self._spawn("zookeeper", jars.ensure_kafka_jars(self.spec.kafka_version))
        self._wait_zookeeper(t0 + timeout, ["zookeeper"])
        return time.monotonic() - t0

    # -- per-broker control ---------------------------------------------------------------
    def stop_broker(self, broker_id: int, timeout: float = 60.0) -> float:
        """SIGTERM: controlled shutdown. Returns seconds until the process exited."""
        proc = self._running(broker_id, "stop")
        rec = proc.record()
        t0 = time.monotonic()
        if not proc.terminate(timeout):
            raise ClusterError(
                f"broker {broker_id} did not exit within {timeout:.0f} s of SIGTERM; "
                f"use `kconsole cluster kill {broker_id}`",
                log_lines=self.log_tail(f"broker-{broker_id}", 15),
            )
        took = time.monotonic() - t0
        self._wait_reaped([rec])
        return took

    def kill_broker(self, broker_id: int) -> float:
        """SIGKILL: no controlled shutdown; noticed when its ZooKeeper session expires."""
        proc = self._running(broker_id, "kill")
        rec = proc.record()
        t0 = time.monotonic()
        proc.kill()
        took = time.monotonic() - t0
        self._wait_reaped([rec])
        return took

    def pause_broker(self, broker_id: int) -> None:
        """SIGSTOP: the JVM freezes with its sockets open."""
        proc = self.broker(broker_id)
        state = proc.state()
        if state is ProcState.STOPPED:
            raise ClusterError(f"broker {broker_id} is not running")
        if state is ProcState.PAUSED:
            raise ClusterError(f"broker {broker_id} is already paused")
        proc.signal(signal.SIGSTOP)
        wait_for(lambda: proc.state() is ProcState.PAUSED, 5.0)

    def resume_broker(self, broker_id: int) -> None:
        """SIGCONT a paused broker."""
        proc = self.broker(broker_id)
        if proc.state() is not ProcState.PAUSED:
            raise ClusterError(f"broker {broker_id} is not paused ({proc.state().value})")
        proc.signal(signal.SIGCONT)
        wait_for(lambda: proc.state() is ProcState.RUNNING, 5.0)

    def isolate_broker(self, broker_id: int, guard: int | None = None) -> str:
        """Cut the broker off the network: what it sends and what is sent to its port are
        dropped (kconsole.cluster.net); what was done, read back."""
        self.broker(broker_id)
        name = f"broker-{broker_id}"
        label = f"broker {broker_id}"
        node = self.net_node(name, label, [self.port_of(name)], self.spec.host, "isolate")
        return self.net_faults().isolate(node, guard)

    def partition_broker(self, broker_id: int, links: NetLinks, guard: int | None = None) -> str:
        """Cut the broker off from `links` only (ZooKeeper, the other brokers, clients, named
        brokers); what was done, read back."""
        self.broker(broker_id)
        name = f"broker-{broker_id}"
        me = self.net_node(
            name, f"broker {broker_id}", [self.port_of(name)], self.spec.host, "partition"
        )
        brokers = [f"broker-{b}" for b in self.known_broker_ids()]
        every = [("zookeeper", "ZooKeeper", [self.spec.zk_port])] + [
            (b, b.replace("-", " "), [self.port_of(b)]) for b in brokers
        ]
        groups: dict[str, list[str] | str] = {
            "zookeeper": ["zookeeper"],
            "brokers": brokers,
            "quorum": "this local cluster runs in ZooKeeper mode: it has no quorum "
            "(--from zookeeper cuts a broker from ZooKeeper)",
        }

        def resolve(side: str) -> str:
            kind, sep, num = side.partition(":")
            if kind == "controller":
                raise ClusterError(
                    f"--from {side}: this local cluster runs in ZooKeeper mode: it has no "
                    "controller nodes (--from zookeeper, or a broker id)"
                )
            bid = int(num if sep else kind)
            if f"broker-{bid}" not in brokers:
                raise ClusterError(f"--from {side}: no broker {bid} in this cluster")
            return f"broker-{bid}"

        nodes = self.running_net_nodes(every, self.spec.host)
        return self.net_faults().partition(me, links_for(me, links, nodes, groups, resolve), guard)

    def heal_broker(self, broker_id: int) -> str:
        """End the broker's network fault; what was removed, read back."""
        self.broker(broker_id)
        return self.net_faults().heal(f"broker-{broker_id}", f"broker {broker_id}")

    def start_broker(
        self,
        broker_id: int,
        *,
        wait: bool = True,
        timeout: float = 90.0,
        progress: Progress | None = None,
    ) -> BrokerStart:
        """Start a stopped broker with its existing config and data dir.

        If the broker's previous process died without deregistering (SIGKILL), its
        registration stays until ZooKeeper expires that session, and a broker started before
        then finds its id taken and exits: so wait for that first, through `progress`. Then
        start, and with `wait`, wait until the new process itself is registered (a session
        other than the previous one). Raises ClusterError when it exits or never registers."""
        say = progress or (lambda _msg: None)
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
        self.refuse_if_isolated([name])
        check_port_free(self.spec.host, self.port_of(name), name)
        lib = jars.ensure_kafka_jars(self.spec.kafka_version)
        t0 = time.monotonic()
        with self.zk_client_until(t0 + timeout) as zk:
            stale = self._stale_owners(zk, [broker_id], t0 + timeout)
            waited = self._wait_stale_expired(zk, stale, say)
            if stale:
                check_port_free(self.spec.host, self.port_of(name), name)
                say(f"starting {name} on port {self.port_of(name)}")
            t1 = time.monotonic()
            pid = self._spawn(name, lib)
            start = BrokerStart(broker_id, pid, waited, stale.get(broker_id))
            if not wait:
                return replace(start, started_s=time.monotonic() - t1)
            owner = self._wait_own_registration(zk, broker_id, stale, t1 + timeout)
            return replace(start, started_s=time.monotonic() - t1, owner=owner)

    def _wait_own_registration(
        self, zk: object, broker_id: int, stale: dict[int, int], deadline: float
    ) -> int:
        """Wait until the broker just started is registered by a session of its own (not the
        one in `stale`) while its process runs; that session id."""
        name = f"broker-{broker_id}"
        while True:
            self._fail_if_exited([name])
            regs = self.poll_zk(lambda: read_registrations(zk), deadline)
            if regs is not None and broker_id in fresh_registrations(regs, stale):
                # Registered, and still running after that read: the registration is its own.
                self._fail_if_exited([name])
                return regs[broker_id].owner
            if time.monotonic() > deadline:
                raise self._timeout_error(f"broker {broker_id} to register", [name])
            time.sleep(0.05)

    def _running(self, broker_id: int, verb: str) -> ManagedProcess:
        proc = self.broker(broker_id)
        if proc.state() is ProcState.STOPPED:
            raise ClusterError(f"cannot {verb} broker {broker_id}: it is not running")
        return proc


def _broker_id(name: str) -> int:
    return int(name.split("-", 1)[1])


def with_spec_changes(cluster: LocalCluster, **changes: object) -> LocalClusterSpec:
    """The cluster's spec with some fields replaced (validated)."""
    return replace(cluster.spec, **changes)  # type: ignore[arg-type]
