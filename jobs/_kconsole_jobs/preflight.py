"""Kafka checked from the driver before Spark starts: is the cluster reachable, do the input
topics exist, and the output topic created when missing. With confluent_kafka when it is
importable; without it only the reachability of the bootstrap servers is checked."""

from __future__ import annotations

import argparse
import socket
from collections.abc import Callable
from typing import Any

from .confluent import HAVE_CONFLUENT_KAFKA, AdminClient, KafkaException, NewTopic, kafka_reason
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


def _connects(host_port: str, timeout: float = 3.0) -> bool:
    host, _, port = host_port.strip().rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False
