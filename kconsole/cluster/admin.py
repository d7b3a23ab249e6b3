"""Admin API reads: cluster metadata, topic configs and consumer groups with lag.

Every call has a short timeout, so an unhealthy cluster makes a poll fail quickly (and the
console mark its panes stale) instead of hanging. librdkafka's own log lines go to Python
logging, never to the terminal the console draws on.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import time
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    ConfigResource,
    OffsetSpec,
)

from kconsole.models import Group, GroupPartition

RDKAFKA_LOG = logging.getLogger("kconsole.rdkafka")


@dataclass(frozen=True)
class AdminPartition:
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class AdminState:
    """What the Admin API said, as of `read_at`."""

    read_at: float
    cluster_id: str | None
    controller: int | None
    nodes: dict[int, tuple[str, int, str | None]]  # id -> host, port, rack
    topics: dict[str, tuple[AdminPartition, ...]] = field(default_factory=dict)
    min_isr: dict[str, int] = field(default_factory=dict)


class AdminReader:
    """Blocking reads for the pollers (one instance per poller thread)."""

    def __init__(self, config: dict[str, Any], timeout_s: float = 5.0):
        self.timeout_s = timeout_s
        conf: dict[str, Any] = {"logger": RDKAFKA_LOG, "socket.timeout.ms": int(timeout_s * 1000)}
        conf.update(config)
        self.admin = AdminClient(conf)
        self.config = dict(config)
        self._kadmin: Any = None  # kafka-python admin client, for committed offsets
        self._min_isr: dict[str, int] = {}
        self._min_isr_at = 0.0

    def read_cluster(self, config_refresh_s: float = 30.0) -> AdminState:
        """Brokers, controller and every topic's partitions; min.insync.replicas per topic."""
        md = self.admin.list_topics(timeout=self.timeout_s)
        try:
            desc = self.admin.describe_cluster(request_timeout=self.timeout_s).result(
                timeout=self.timeout_s + 1
            )
            nodes = {n.id: (n.host, n.port, n.rack) for n in desc.nodes}
            controller = desc.controller.id if desc.controller is not None else None
            cluster_id = desc.cluster_id
        except KafkaException:
            nodes = {b.id: (b.host, b.port, None) for b in md.brokers.values()}
            controller = md.controller_id if md.controller_id >= 0 else None
            cluster_id = md.cluster_id
        topics = {}
        for name, t in md.topics.items():
            if t.error is not None and not t.partitions:
                continue
            topics[name] = tuple(
                AdminPartition(p.id, p.leader, tuple(p.replicas), tuple(p.isrs))
                for p in sorted(t.partitions.values(), key=lambda p: p.id)
            )
        if (
            set(topics) - set(self._min_isr)
            or time.monotonic() - self._min_isr_at > config_refresh_s
        ):
            self._read_min_isr(sorted(topics))
        min_isr = {t: v for t, v in self._min_isr.items() if t in topics}
        return AdminState(time.time(), cluster_id, controller, nodes, topics, min_isr)

    def _read_min_isr(self, topics: list[str]) -> None:
        if not topics:
            return
        resources = [ConfigResource(ConfigResource.Type.TOPIC, t) for t in topics]
        futures = self.admin.describe_configs(resources, request_timeout=self.timeout_s)
        for res, fut in futures.items():
            try:
                entries = fut.result(timeout=self.timeout_s + 1)
                self._min_isr[res.name] = int(entries["min.insync.replicas"].value)
            except (KafkaException, KeyError, ValueError, TypeError):
                continue  # keep what we had; the partitions pane then shows no min-ISR flag
        self._min_isr_at = time.monotonic()

    def read_broker_config(self, broker_id: int) -> dict[str, str]:
        """The effective configuration of one broker (DescribeConfigs)."""
        res = ConfigResource(ConfigResource.Type.BROKER, str(broker_id))
        entries = self.admin.describe_configs([res], request_timeout=self.timeout_s)[res].result(
            timeout=self.timeout_s + 1
        )
        return {name: e.value for name, e in entries.items() if e.value is not None}

    def read_groups(self) -> list[Group]:
        """Every consumer group with members, assignor and per-partition committed / end / lag."""
        listing = self.admin.list_consumer_groups(request_timeout=self.timeout_s).result(
            timeout=self.timeout_s + 1
        )
        if listing.errors and not listing.valid:
            raise KafkaException(listing.errors[0])
        ids = sorted(g.group_id for g in listing.valid)
        if not ids:
            return []
        described = self.admin.describe_consumer_groups(ids, request_timeout=self.timeout_s)
        committed = self.committed_offsets(ids)
        descs: dict[str, Any] = {}
        for gid in ids:
            try:
                descs[gid] = described[gid].result(timeout=self.timeout_s + 1)
            except KafkaException:
                descs[gid] = None
        owners: dict[str, dict[tuple[str, int], str]] = {}
        for gid, d in descs.items():
            owners[gid] = {}
            for m in d.members if d else []:
                for tp in m.assignment.topic_partitions:
                    owners[gid][(tp.topic, tp.partition)] = f"{m.client_id}@{m.host.lstrip('/')}"
        all_tps = {tp for gid in ids for tp in (*committed[gid], *owners[gid])}
        ends = self.log_end_offsets(all_tps)
        groups = []
        for gid in ids:
            d = descs[gid]
            tps = sorted(set(committed[gid]) | set(owners[gid]))
            groups.append(
                Group(
                    group_id=gid,
                    state=_state_name(d.state) if d else "UNKNOWN",
                    members=len(d.members) if d else 0,
                    assignor=(d.partition_assignor or "") if d else "",
                    coordinator=d.coordinator.id if d and d.coordinator else None,
                    partitions=tuple(
                        GroupPartition(
                            t,
                            p,
                            committed[gid].get((t, p)),
                            ends.get((t, p)),
                            owners[gid].get((t, p)),
                        )
                        for t, p in tps
                    ),
                )
            )
        return groups

    def committed_offsets(self, ids: list[str]) -> dict[str, dict[tuple[str, int], int | None]]:
        """Each group's committed offsets ({} for a group that could not be read).

        Read with kafka-python, not librdkafka: librdkafka's admin ListConsumerGroupOffsets
        crashes the whole process (SIGSEGV in rd_kafka_cgrp_op, called from
        rd_kafka_handle_OffsetFetch on an admin client, which has no consumer group) when the
        group's coordinator goes away mid-request -- that is, when a broker is stopped during a
        drill, exactly when the console is needed. Found with gdb on the CI suite.
        """
        out: dict[str, dict[tuple[str, int], int | None]] = {}
        for gid in ids:
            try:
                client = self._group_client()
                res = client.list_group_offsets([gid]).get(gid, {})
                out[gid] = {
                    (tp.topic, tp.partition): None if om.offset < 0 else om.offset
                    for tp, om in res.items()
                }
            except Exception:  # unreachable, coordinator moving, ...: unknown this round
                out[gid] = {}
                self._drop_group_client()
        return out

    def _group_client(self) -> Any:
        if self._kadmin is None:
            from kafka.admin import KafkaAdminClient

            self._kadmin = KafkaAdminClient(**kafka_python_config(self.config, self.timeout_s))
        return self._kadmin

    def _drop_group_client(self) -> None:
        client, self._kadmin = self._kadmin, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()

    def close(self) -> None:
        """Release the kafka-python client (the librdkafka one goes with the object)."""
        self._drop_group_client()

    def log_end_offsets(self, tps: set[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """Latest offsets (log end / high watermark) of many partitions in one request set."""
        if not tps:
            return {}
        req = {TopicPartition(t, p): OffsetSpec.latest() for t, p in tps}
        futs = self.admin.list_offsets(req, request_timeout=self.timeout_s)
        out = {}
        for tp, fut in futs.items():
            try:
                out[(tp.topic, tp.partition)] = fut.result(timeout=self.timeout_s + 1).offset
            except KafkaException:
                continue
        return out


# librdkafka property -> kafka-python argument (the security settings users pass with -X).
_KAFKA_PYTHON = {
    "bootstrap.servers": "bootstrap_servers",
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    "client.id": "client_id",
}


def kafka_python_config(config: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """kafka-python client arguments for a librdkafka configuration."""
    out: dict[str, Any] = {"request_timeout_ms": int(timeout_s * 1000)}
    for key, value in config.items():
        name = _KAFKA_PYTHON.get(key)
        if name is None:
            continue
        out[name] = value.upper() if name == "security_protocol" else value
    out.setdefault("client_id", "kconsole-groups")
    return out


def _state_name(state: Any) -> str:
    name = getattr(state, "name", None) or str(state)
    return name.replace("ConsumerGroupState.", "").upper()


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
    conf: dict[str, Any] = {**config, "logger": RDKAFKA_LOG}
    admin = AdminClient(conf)
    try:
        return admin.list_topics(timeout=timeout_s).cluster_id
    except Exception:
        return None
