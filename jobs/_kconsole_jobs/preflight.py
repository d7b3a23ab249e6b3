"""Kafka checked from the driver before Spark starts: is the cluster reachable, do the input
topics exist, and the output topic created when missing. With confluent_kafka when it is
importable; without it only the reachability of the bootstrap servers is checked."""

from __future__ import annotations

import argparse
import socket
from collections.abc import Callable
from typing import Any

from .checkpoint import Identity
from .confluent import (
    HAVE_CONFLUENT_KAFKA,
    AdminClient,
    KafkaException,
    NewTopic,
    OffsetSpec,
    TopicCollection,
    TopicPartition,
    kafka_reason,
)
from .emitter import log
from .errors import JobFailure


class Preflight:
    """The driver's checks of Kafka, with one admin client made on first use."""

    def __init__(self, args: argparse.Namespace, warn: Callable[[str], None]):
        self.args = args
        self._warn = warn
        self._admin: Any = None

    def admin(self) -> Any:
        if not HAVE_CONFLUENT_KAFKA:
            return None
        if self._admin is None:
            conf = {"bootstrap.servers": self.args.bootstrap, "log_level": 2}
            conf.update(dict(self.args.admin_option))
            self._admin = AdminClient(conf)
        return self._admin

    def check_kafka(self, topics: list[str]) -> dict[str, int]:
        """Fail fast when Kafka is unreachable or a topic is missing: Spark's source would wait
        for a missing topic forever and retry an unreachable cluster for minutes.
        Returns partitions per existing topic (empty without confluent_kafka)."""
        admin = self.admin()
        if admin is None:
            if not any(_connects(hp) for hp in self.args.bootstrap.split(",")):
                raise JobFailure(f"Kafka is unreachable: no connection to {self.args.bootstrap}")
            self._warn("confluent_kafka is not installed: topics not checked, no group commit")
            return {}
        refused = _all_refused(self.args.bootstrap)
        if refused:
            # librdkafka would retry them for the whole preflight timeout to say the same
            raise JobFailure(f"Kafka is unreachable at {self.args.bootstrap}: {refused}")
        try:
            md = admin.list_topics(timeout=self.args.preflight_timeout)
        except KafkaException as exc:
            raise JobFailure(
                f"Kafka is unreachable at {self.args.bootstrap}: {kafka_reason(exc)}"
            ) from exc
        parts = {t: len(m.partitions) for t, m in md.topics.items() if m.error is None}
        for topic in topics:
            if topic not in parts:
                raise JobFailure(
                    f"topic {topic!r} does not exist on {self.args.bootstrap} (topics are not "
                    "auto-created on kconsole clusters); create it or choose another with --topic"
                )
        return parts

    def ensure_topic(self, topic: str, partitions: int) -> None:
        """Create `topic` when missing (replication min(3, brokers)); fail clearly otherwise."""
        admin = self.admin()
        if admin is None:
            return  # Spark's sink reports a missing topic itself
        md = admin.list_topics(timeout=self.args.preflight_timeout)
        if topic in md.topics and md.topics[topic].error is None:
            return
        rf = min(3, len(md.brokers))
        futs = admin.create_topics([NewTopic(topic, partitions, rf)], request_timeout=15)
        try:
            futs[topic].result(timeout=20)
            log(f"created output topic {topic} ({partitions} partitions, replication {rf})")
        except KafkaException as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise JobFailure(
                    f"cannot create output topic {topic!r}: {kafka_reason(exc)}"
                ) from exc

    def identity(self, topics: list[str]) -> Identity:
        """The cluster id and each topic's Kafka topic id (a new one each time a topic is
        created); None for what could not be read."""
        admin = self.admin()
        if admin is None:
            return Identity(None, dict.fromkeys(topics))
        timeout = self.args.preflight_timeout
        try:
            cluster_id = admin.list_topics(timeout=timeout).cluster_id or None
        except KafkaException as exc:
            raise JobFailure(
                f"Kafka is unreachable at {self.args.bootstrap}: {kafka_reason(exc)}"
            ) from exc
        ids: dict[str, str | None] = {}
        futs = admin.describe_topics(TopicCollection(topics), request_timeout=timeout)
        for topic in topics:
            try:
                ids[topic] = str(futs[topic].result(timeout=timeout).topic_id)
            except Exception as exc:  # KafkaException, or a timeout of the future
                why = kafka_reason(exc) or type(exc).__name__
                self._warn(f"could not read the topic id of {topic}: {why}")
                ids[topic] = None
        return Identity(cluster_id, ids)

    def log_ranges(self, topics: list[str]) -> dict[tuple[str, int], tuple[int, int]]:
        """(log start, log end) of every partition of `topics` that could be read."""
        admin = self.admin()
        if admin is None:
            return {}
        md = admin.list_topics(timeout=self.args.preflight_timeout)
        tps = [(t, p) for t in topics if t in md.topics for p in md.topics[t].partitions]
        return log_ranges(admin, tps, self.args.preflight_timeout)


def log_ranges(
    admin: Any, tps: list[tuple[str, int]], timeout: float
) -> dict[tuple[str, int], tuple[int, int]]:
    """(log start, log end) per partition; partitions whose answer failed are left out."""
    starts, _ = log_offsets(admin, tps, "earliest", timeout)
    ends, _ = log_offsets(admin, tps, "latest", timeout)
    return {tp: (starts[tp], ends[tp]) for tp in tps if tp in starts and tp in ends}


def log_offsets(
    admin: Any, tps: list[tuple[str, int]], which: str, timeout: float
) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], str]]:
    """The earliest or latest offset of each partition, from one ListOffsets per leader, and
    why for those that could not be read."""
    if not tps:
        return {}, {}
    spec = OffsetSpec.earliest() if which == "earliest" else OffsetSpec.latest()
    found: dict[tuple[str, int], int] = {}
    errors: dict[tuple[str, int], str] = {}
    try:
        futs = admin.list_offsets(
            {TopicPartition(t, p): spec for t, p in tps}, request_timeout=timeout
        )
    except KafkaException as exc:
        return {}, dict.fromkeys(tps, kafka_reason(exc))
    for tp, fut in futs.items():
        key = (tp.topic, tp.partition)
        try:
            found[key] = fut.result(timeout=timeout).offset
        except Exception as exc:  # this partition's answer (no leader, a timeout)
            errors[key] = kafka_reason(exc) or type(exc).__name__
    return found, errors


def _all_refused(servers: str, timeout: float = 1.0) -> str:
    """Why no client can bootstrap from `servers` when every address refused the TCP connection
    (nothing listens there); "" when one accepted, did not answer within `timeout`, or could not
    be tried (a name that does not resolve, a form this does not read): the client then tries
    and waits as it always has."""
    addresses = []
    for item in servers.split(","):
        host, sep, port = item.strip().rpartition(":")
        if not sep or not host or not port.isdigit():
            return ""
        addresses.append((host.strip("[]"), int(port)))
    if not addresses:
        return ""
    for address in addresses:
        try:
            with socket.create_connection(address, timeout=timeout) as s:
                # A local port in the ephemeral range nobody listens on can connect the socket
                # to itself; anything else accepted means someone listens.
                if s.getsockname() != s.getpeername():
                    return ""
        except ConnectionRefusedError:
            continue
        except OSError:
            return ""
    return "connection refused at every bootstrap address (nothing listens there)"


def _connects(host_port: str, timeout: float = 3.0) -> bool:
    host, _, port = host_port.strip().rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False
