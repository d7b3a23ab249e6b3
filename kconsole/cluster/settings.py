"""The reference topology and the drill-friendly broker settings.

One place for the facts that the embedded local cluster, the compose file and the console's
defaults must agree on (tests check that compose/docker-compose.yml matches these).
"""

from __future__ import annotations

from kconsole.defaults import (  # noqa: F401  (re-exported: the topology in one place)
    BROKER_BASE_PORT,
    DEFAULT_BROKERS,
    HOST,
    ZK_PORT,
    broker_port,
    default_bootstrap,
)

KAFKA_VERSION = "3.9.2"
ZOOKEEPER_VERSION = "3.8.4"  # what kafka_2.13:3.9.2 depends on
# The newest complete Kafka 4.x release (kafka_2.13, kafka-tools and log4j2 all resolve), the
# default of a KRaft cluster; KAFKA_VERSION stays the default of the ZooKeeper one.
KRAFT_KAFKA_VERSION = "4.4.0"


TEST_TOPIC = "test-topic"
TEST_TOPIC_PARTITIONS = 4
TEST_TOPIC_RF = 3

BROKER_HEAP = "-Xmx512m -Xms512m"
ZOOKEEPER_HEAP = "-Xmx256m -Xms256m"

ZK_TICK_TIME_MS = 2000  # session timeouts are clamped to 2..20 x tickTime


def drill_settings(brokers: int) -> dict[str, str]:
    """Broker settings for failover drills, shared by the local cluster and compose.

    Internal topics get RF 3 (min ISR 2) where there are enough brokers, so a drill that stops
    one broker never makes the group coordinator or transactions unavailable.
    """
    rf = str(min(3, brokers))
    min_isr = str(min(2, brokers))
    return {
        "min.insync.replicas": min_isr,
        "default.replication.factor": rf,
        "offsets.topic.replication.factor": rf,
        "offsets.topic.num.partitions": "10",
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": min_isr,
        "zookeeper.session.timeout.ms": "6000",
        "replica.lag.time.max.ms": "10000",
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "false",
        "unclean.leader.election.enable": "false",
        "auto.leader.rebalance.enable": "true",
        "leader.imbalance.check.interval.seconds": "30",
        "controlled.shutdown.enable": "true",
        # A broker whose leaders cannot move (the last replica in sync) retries controlled
        # shutdown 3 times; Kafka's 5 s backoff would make every such stop hang for 15 s.
        "controlled.shutdown.retry.backoff.ms": "1000",
        "num.partitions": "1",
        "log.retention.hours": "24",
        "log.segment.bytes": "67108864",
    }
