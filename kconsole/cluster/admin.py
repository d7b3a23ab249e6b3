"""Admin API reads: cluster metadata, topic and broker configs (consumer groups: groups.py).

Every call has a short timeout, so an unhealthy cluster makes a poll fail quickly (and the
console mark its panes stale) instead of hanging. librdkafka's own log lines go to Python
logging, never to the terminal the console draws on.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from kconsole.cluster import metadata
from kconsole.cluster.groups.reader import GroupReader
from kconsole.cluster.metadata import AdminPartition, Metadata
from kconsole.cluster.security import denied, kafka_python
from kconsole.cluster.security.clients import (
    RDKAFKA_LOG,
    admin_config,
    client_config,
    kafka_python_config,
    raise_if_auth_failed,
)
from kconsole.errors import ClusterError
from kconsole.models import BrokerConfig

log = logging.getLogger(__name__)
KP_BACKOFF_S = 10.0
# ListPartitionReassignments waits this long for its broker: it is asked in the metadata poll,
# and a broker that does not answer (paused) must not hold the leaders and ISRs for long.
REASSIGN_TIMEOUT_S = 2.0
# The metadata read's attempts (s); the last one gets whatever is left of the timeout.
METADATA_ATTEMPTS_S = (1.0, 1.5, 2.5)
_TIMED_OUT = frozenset({KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT})
# The metadata read undecoded (see kconsole.cluster.metadata): how long its broker may take
# (a healthy one answers 10,000 partitions in tens of ms) and, after it failed, how long the
# poll reads through librdkafka instead (a paused broker is then not asked every second).
RAW_TIMEOUT_S = 1.0
RAW_BACKOFF_S = 5.0

__all__ = ["AdminPartition", "AdminReader", "AdminState", "TopicConfigs"]


@dataclass(frozen=True)
class AdminState:
    """What the Admin API said, as of `read_at`."""

    read_at: float
    cluster_id: str | None
    controller: int | None
    nodes: dict[int, tuple[str, int, str | None]]  # id -> host, port, rack
    # None: not read (ZooKeeper serves the partitions; read_cluster's `topic_names`).
    topics: dict[str, tuple[AdminPartition, ...]] | None = field(default_factory=dict)
    min_isr: dict[str, int] = field(default_factory=dict)


@dataclass
class TopicConfigs:
    """Racks and min.insync.replicas as last read (kafka-python), and when they were all read
    again: one per observer, shared by its readers (one per thread), so what one thread's
    refresh read, another's poll uses."""

    racks: dict[int, str | None] = field(default_factory=dict)
    min_isr: dict[str, int] = field(default_factory=dict)
    read_at: float = 0.0  # monotonic


class AdminReader:
    """Blocking reads for the pollers (one instance per poller thread)."""

    def __init__(
        self, config: dict[str, Any], timeout_s: float = 5.0, configs: TopicConfigs | None = None
    ):
        self.timeout_s = timeout_s
        self.admin = AdminClient(admin_config(config, timeout_s))
        self.config = dict(config)
        self.groups = GroupReader(self.config, timeout_s)
        """Consumer groups with lag (kafka-python for everything a dead broker would stall)."""
        self.configs = configs if configs is not None else TopicConfigs()
        self._kp: Any = None
        self._kp_failures = 0
        self._kp_backoff_until = 0.0
        self._kp_error = ""
        self._known_servers: list[str] = []
        self._reassign_node: int | None = None  # the broker ListPartitionReassignments asks
        self._md: Metadata | None = None  # the last metadata read undecoded, and its broker
        self._md_node: int | None = None
        self._raw_off_until = 0.0  # monotonic; after a failed undecoded read
        self._raw_refused = ""  # why the metadata is never read undecoded (no such version)
        self._md_answered = False  # the last metadata read answered

    def read_cluster(
        self,
        config_refresh_s: float = 30.0,
        *,
        topic_names: Sequence[str] | None = None,
        refresh_stale: bool = True,
        avoid: Collection[int] = (),
    ) -> AdminState:
        """Brokers, controller and every topic's partitions; min.insync.replicas per topic.

        The metadata is one Metadata request: read undecoded through kafka-python and decoded
        only when it changed (`_read_metadata`), else through librdkafka. Everything else
        (racks, topic and broker configs) is asked with kafka-python: librdkafka's admin requests
        (DescribeCluster, DescribeConfigs) aborted the whole process when a broker went away
        mid-request (`rd_kafka_admin_response_parse: Assertion rko_result failed`, seen when
        a drill stopped the controller; see README, Libraries and why).

        With `topic_names` (ZooKeeper serves the partitions and names the topics), the
        partitions are not read: the brokers, the controller and the cluster id come from one
        DescribeCluster (kafka-python), whose cost does not grow with the partitions (the
        whole metadata of 2,000 partitions, every second, was a third of the idle console's
        CPU). `topics` is None then. If that request fails, the whole metadata is read.

        `avoid`: brokers not to ask for the metadata read undecoded (fenced: one cut off from
        the quorum answers with what it knew then; paused).

        With `refresh_stale=False` the racks and min.insync.replicas older than
        `config_refresh_s` are not read again here (only those of new brokers and topics):
        the caller does it with `refresh_configs` after it has used the metadata. They are
        kafka-python requests to any broker, and a paused one holds them for the timeout."""
        if topic_names is not None:
            try:
                return self._read_brokers(config_refresh_s, topic_names, refresh_stale)
            except ClusterError as exc:
                log.debug("DescribeCluster: %s; reading the whole metadata", exc)
        md = self._read_metadata(avoid)
        self._known_servers = [f"{h}:{p}" for h, p in md.brokers.values() if h]
        stale = refresh_stale and time.monotonic() - self.configs.read_at > config_refresh_s
        if stale or set(md.brokers) - set(self.configs.racks):
            self._read_racks()
        nodes = {
            bid: (host or "?", port, self.configs.racks.get(bid))
            for bid, (host, port) in md.brokers.items()
        }
        min_isr = self._min_isr_of(sorted(md.topics), stale)
        return AdminState(time.time(), md.cluster_id, md.controller, nodes, md.topics, min_isr)

    def _read_metadata(self, avoid: Collection[int] = ()) -> Metadata:
        """The whole metadata: one answer read undecoded and decoded only when it differs from
        the last one (see kconsole.cluster.metadata), the same `topics` object when it does
        not, so nothing is built again downstream. Through librdkafka (`_metadata`) when that
        read fails (then for RAW_BACKOFF_S) or the cluster answers no such version."""
        now = time.monotonic()
        # Only after a read that answered: on a cluster that is down, kafka-python's bootstrap
        # would wait out its own timeout before librdkafka's read failed the same way.
        if (
            self._md_answered
            and not self._raw_refused
            and now >= max(self._raw_off_until, self._kp_backoff_until)
        ):
            try:
                return self._read_undecoded(avoid)
            except Exception as exc:
                log.debug("metadata read undecoded (broker %s): %s", self._md_node, exc)
                self._md_node = None  # the next one asks another broker
                self._raw_off_until = time.monotonic() + RAW_BACKOFF_S
        self._md_answered = False
        md = metadata.from_librdkafka(self._metadata())
        self._md_answered = True
        return md

    def _read_undecoded(self, avoid: Collection[int]) -> Metadata:
        """The broker that answered last is asked again (its answer's bytes are then the same
        while nothing changes), unless it is to be avoided."""
        kp = self._kafka_python()
        node = self._md_node if self._md_node not in avoid else None
        if node is None:
            node = kafka_python.least_loaded_node(kp)
            if node is None or node in avoid:
                known = self._md.brokers if self._md is not None else {}
                node = min((b for b in known if b not in avoid), default=None)
            if node is None:
                raise ClusterError("no broker to ask but fenced or paused ones")
        version, body = kafka_python.metadata_answer(
            kp, node, int(RAW_TIMEOUT_S * 1000), metadata.RAW_MAX_VERSION
        )
        if version < metadata.RAW_MIN_VERSION:
            self._raw_refused = f"the cluster answers Metadata v{version} only"
            raise ClusterError(self._raw_refused)
        key, answered = metadata.fingerprint(body)
        controller = answered if answered >= 0 else None
        last = self._md
        if last is not None and last.key == key:
            md = last if last.controller == controller else replace(last, controller=controller)
        else:
            md = metadata.from_answer(kafka_python.decode_metadata(version, body), key)
        self._md, self._md_node = md, node
        return md

    def _metadata(self) -> Any:
        """librdkafka's Metadata, asked of a broker of its own choosing, in attempts of growing
        length (METADATA_ATTEMPTS_S, within `timeout_s` in all). A paused broker keeps its
        connection open and never answers, and the client that sent it a request keeps sending
        the next ones there (measured in the KRaft bench: three attempts, 5 s, all held). So an
        attempt that timed out is followed by one on a new client: it bootstraps afresh, and a
        broker that does not answer the handshake is never "up" for it. Such a broker costs
        the poll about a second, not the whole timeout."""
        start = time.monotonic()
        deadline = start + self.timeout_s
        last = len(METADATA_ATTEMPTS_S) - 1
        for i, share in enumerate(METADATA_ATTEMPTS_S):
            left = deadline - time.monotonic()
            wait = left if i == last else min(share, left)
            try:
                return self.admin.list_topics(timeout=max(wait, 0.05))
            except KafkaException as exc:
                self.admin.poll(0)  # serves error_cb: a refused login is said as such
                raise_if_auth_failed(self.config.get("bootstrap.servers", ""), start)
                err = exc.args[0] if exc.args else None
                timed_out = isinstance(err, KafkaError) and err.code() in _TIMED_OUT
                if not timed_out or deadline - time.monotonic() <= 0.05:
                    raise
                log.debug("metadata attempt of %.1f s timed out; a new client asks again", wait)
                self.admin = AdminClient(admin_config(self.config, self.timeout_s))
        raise AssertionError("unreachable")  # the last attempt returns or raises

    def _read_brokers(
        self, config_refresh_s: float, topic_names: Sequence[str], refresh_stale: bool = True
    ) -> AdminState:
        desc = self._kp_call("describe_cluster")
        brokers = desc.get("brokers") or ()
        if not brokers:
            raise ClusterError("DescribeCluster named no broker")
        nodes = {
            int(b["broker_id"]): (str(b.get("host") or "?"), int(b.get("port") or 0), b.get("rack"))
            for b in brokers
        }
        self.configs.racks = {bid: rack for bid, (_h, _p, rack) in nodes.items()}
        self._known_servers = [f"{h}:{p}" for h, p, _r in nodes.values() if h != "?"]
        controller = desc.get("controller_id")
        controller = int(controller) if controller is not None and int(controller) >= 0 else None
        stale = refresh_stale and time.monotonic() - self.configs.read_at > config_refresh_s
        min_isr = self._min_isr_of(sorted(topic_names), stale)
        return AdminState(time.time(), desc.get("cluster_id"), controller, nodes, None, min_isr)

    def refresh_configs(self, topics: Sequence[str], config_refresh_s: float = 30.0) -> None:
        """Racks and min.insync.replicas of `topics` read again when older than
        `config_refresh_s` (see read_cluster's `refresh_stale`); kept as they were when the
        brokers do not answer."""
        if time.monotonic() - self.configs.read_at <= config_refresh_s:
            return
        self._read_racks()
        self._read_min_isr(sorted(topics))
        self.configs.read_at = time.monotonic()

    def _min_isr_of(self, topics: list[str], stale: bool) -> dict[str, int]:
        """min.insync.replicas of `topics`: read for new topics, and all again when stale."""
        if set(topics) - set(self.configs.min_isr) or stale:
            self._read_min_isr(topics)
            self.configs.read_at = time.monotonic()
        wanted = set(topics)
        # a copy: another thread's reader may be adding topics to it meanwhile
        return {t: v for t, v in dict(self.configs.min_isr).items() if t in wanted}

    def _kafka_python(self) -> Any:
        """The kafka-python admin client for configs and racks (created on first use). It
        bootstraps from every broker the metadata named, not only the configured ones: in a
        drill the one bootstrap server may be the broker that is down."""
        if self._kp is None:
            conf = kafka_python_config(self.config, self.timeout_s)
            servers = [s.strip() for s in str(conf.get("bootstrap_servers", "")).split(",")]
            conf["bootstrap_servers"] = ",".join(
                dict.fromkeys([*self._known_servers, *(s for s in servers if s)])
            )
            self._kp = kafka_python.admin_client(conf)
        return self._kp

    def _kp_call(self, fn: str, *args: Any, **kwargs: Any) -> Any:
        """Call kafka-python. After a failure it is not asked again for KP_BACKOFF_S (a broker
        that went away costs the poll one timeout, not one per call), and after three in a row
        the client is replaced. Failures raise ClusterError."""
        now = time.monotonic()
        if now < self._kp_backoff_until:
            raise ClusterError(f"{fn}: not asked ({self._kp_error}; retrying shortly)")
        try:
            result = getattr(self._kafka_python(), fn)(*args, **kwargs)
        except Exception as exc:
            self._kp_failures += 1
            self._kp_error = str(exc) or type(exc).__name__
            self._kp_backoff_until = time.monotonic() + KP_BACKOFF_S
            if self._kp_failures >= 3:
                self._close_kp()
            raise ClusterError(f"{fn}: {self._kp_error}") from exc
        self._kp_failures = 0
        return result

    def _close_kp(self) -> None:
        kp, self._kp = self._kp, None
        if kp is not None:
            with contextlib.suppress(Exception):
                kp.close()

    def _read_racks(self) -> None:
        try:
            desc = self._kp_call("describe_cluster")
        except ClusterError as exc:
            log.debug("racks: %s", exc)
            return  # keep what we had: racks are a label, not a health figure
        self.configs.racks = {int(b["broker_id"]): b.get("rack") for b in desc.get("brokers", ())}

    def _read_min_isr(self, topics: list[str]) -> None:
        if not topics:
            return
        from kafka.admin import ConfigResource, ConfigResourceType

        resources = [
            ConfigResource(ConfigResourceType.TOPIC, t, ["min.insync.replicas"]) for t in topics
        ]
        try:
            answer = self._kp_call("describe_configs", resources, config_filter="all")
        except ClusterError as exc:
            log.debug("min.insync.replicas: %s", exc)
            return  # keep what we had; the partitions pane then shows no min-ISR flag
        for topic, configs in answer.get("topic", {}).items():
            try:
                self.configs.min_isr[topic] = int(configs["min.insync.replicas"]["value"])
            except (KeyError, ValueError, TypeError):
                continue

    def read_elr(
        self, topics: list[str]
    ) -> dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...]]]:
        """KRaft (KIP-966): (eligible leader replicas, last known ELR) of every partition of
        `topics`, from DescribeTopicPartitions (paged); an empty list comes back as None."""
        out: dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...]]] = {}
        cursor = None
        for _page in range(1000):
            answer = self._kp_call("describe_topic_partitions", topics, 2000, cursor)
            for t in answer.get("topics") or ():
                for p in t.get("partitions") or ():
                    out[(str(t["name"]), int(p["partition_index"]))] = (
                        tuple(int(r) for r in p.get("eligible_leader_replicas") or ()),
                        tuple(int(r) for r in p.get("last_known_elr") or ()),
                    )
            cursor = answer.get("next_cursor")
            if not cursor:
                break
        return out

    def read_reassignments(self, brokers: Sequence[int]) -> kafka_python.Reassignments:
        """KRaft: every running reassignment (replicas, adding, removing per partition), from
        one ListPartitionReassignments, as Kafka's kafka-topics reads them: the metadata has no
        adding or removing replicas there. Asked of the broker that answered last if it is
        among `brokers` (those up), else the first of them; when it fails, the next call asks
        the next one. ClusterError saying why (an ACL refusal as AuthorizationDenied)."""
        ids = list(brokers)
        if not ids:
            raise ClusterError("ListPartitionReassignments: no broker is up to ask")
        node = self._reassign_node if self._reassign_node in ids else ids[0]
        try:
            answer = kafka_python.list_reassignments_at(
                self._kafka_python(), node, int(REASSIGN_TIMEOUT_S * 1000)
            )
        except Exception as exc:
            self._reassign_node = ids[(ids.index(node) + 1) % len(ids)]
            refused = denied.authorization_error(type(exc).__name__)
            if refused is not None:
                raise denied.denied(refused, "ListPartitionReassignments") from exc
            raise ClusterError(
                f"ListPartitionReassignments (broker {node}): {str(exc) or type(exc).__name__}"
            ) from exc
        self._reassign_node = node
        return answer

    def read_broker_config(self, broker_id: int) -> dict[str, str]:
        """The effective configuration of one broker (DescribeConfigs, asked of that broker)."""
        from kafka.admin import ConfigResource, ConfigResourceType

        res = ConfigResource(ConfigResourceType.BROKER, str(broker_id), None)
        answer = self._kp_call("describe_configs", [res], config_filter="all")
        entries = answer.get("broker", {}).get(str(broker_id), {})
        return {name: str(e["value"]) for name, e in entries.items() if e.get("value") is not None}

    def read_broker_settings(self, broker_ids: list[int]) -> BrokerConfig:
        """The prediction settings from the first of `broker_ids` that answers."""
        last: Exception | None = None
        for bid in broker_ids:
            try:
                return BrokerConfig.from_configs(self.read_broker_config(bid), bid)
            except Exception as exc:  # that broker is down: ask the next one
                last = exc
        raise ClusterError(f"no broker described its configuration: {last}")

    def close(self) -> None:
        """Release the kafka-python clients (the librdkafka one goes with the object)."""
        self.groups.close()
        self._close_kp()


def reachable(host: str, port: int, timeout: float = 0.5) -> bool:
    """True when a TCP connection to host:port opens (a paused JVM's port still accepts)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            # Nothing listening on a local port in the ephemeral range: the kernel can pick
            # that same port as our source port and connect the socket to itself.
            return s.getsockname() != s.getpeername()
    except OSError:
        return False


def probe_cluster_id(config: dict[str, Any], timeout_s: float = 1.5) -> str | None:
    """The cluster id from one metadata request, or None when no broker answered in time."""
    servers = [hp.strip() for hp in str(config.get("bootstrap.servers", "")).split(",")]
    hosts = [hp.rpartition(":") for hp in servers if ":" in hp]
    if not any(p.isdigit() and reachable(h.strip("[]"), int(p), 0.3) for h, _, p in hosts):
        return None  # nothing listens: do not wait for librdkafka's timeout
    conf: dict[str, Any] = {**client_config(config), "logger": RDKAFKA_LOG}
    admin = AdminClient(conf)
    try:
        return admin.list_topics(timeout=timeout_s).cluster_id
    except Exception:
        return None
