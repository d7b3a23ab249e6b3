"""read_topic_limits against the real cluster: max.message.bytes is read with kafka-python (as
every config kconsole reads; librdkafka's DescribeConfigs once aborted the process), and when
it cannot be read the default stands, with the source saying why."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kconsole.cluster.local.cluster import LocalCluster
from kconsole.cluster.produce import api as pr
from kconsole.cluster.security import kafka_python
from kconsole.cluster.settings import TEST_TOPIC
from kconsole.config import Settings

pytestmark = pytest.mark.integration

LIMIT = 200_000


@pytest.fixture
def small_topic(healthy: LocalCluster) -> Iterator[str]:
    """A fresh 3-partition topic with max.message.bytes=200000; deleted afterwards."""
    admin = AdminClient({"bootstrap.servers": healthy.spec.bootstrap})
    name = f"limits-{secrets.token_hex(3)}"
    new = NewTopic(name, 3, 3, config={"max.message.bytes": str(LIMIT)})
    admin.create_topics([new])[name].result(timeout=30)
    try:
        healthy.wait_metadata_everywhere(name, time.monotonic() + 30)
        yield name
    finally:
        admin.delete_topics([name], operation_timeout=30)[name].result(timeout=40)


def test_the_topics_own_limit_is_read(healthy: LocalCluster, small_topic: str) -> None:
    """A topic's max.message.bytes override is what validation holds records to."""
    settings = Settings(bootstrap=healthy.spec.bootstrap)
    limits = pr.read_topic_limits(settings, small_topic)
    assert limits == pr.TopicLimits(small_topic, True, 3, LIMIT, "topic")
    pr.validate(small_topic, limits=limits, records=[(b"k", b"x" * (LIMIT - 200), ())])
    with pytest.raises(pr.ProduceError, match=rf"at most {LIMIT:,} \(max.message.bytes, topic\)"):
        pr.validate(small_topic, limits=limits, records=[(b"k", b"x" * LIMIT, ())])


def test_an_inherited_limit_is_the_brokers(healthy: LocalCluster) -> None:
    """test-topic sets none: its effective value is the broker's message.max.bytes."""
    limits = pr.read_topic_limits(Settings(bootstrap=healthy.spec.bootstrap), TEST_TOPIC)
    assert limits == pr.TopicLimits(TEST_TOPIC, True, 4, pr.DEFAULT_MAX_MESSAGE_BYTES, "topic")


def test_a_missing_topic_is_reported(healthy: LocalCluster) -> None:
    limits = pr.read_topic_limits(Settings(bootstrap=healthy.spec.bootstrap), "no-such-topic-x")
    assert limits == pr.TopicLimits("no-such-topic-x", False)


def test_an_unreadable_limit_falls_back_to_the_default_and_says_why(
    healthy: LocalCluster, small_topic: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The metadata answers but DescribeConfigs cannot be asked: the default, and why."""
    from kafka.errors import KafkaTimeoutError

    def unreachable(conf: object) -> None:
        raise KafkaTimeoutError("no broker answered")

    monkeypatch.setattr(kafka_python, "admin_client", unreachable)
    limits = pr.read_topic_limits(Settings(bootstrap=healthy.spec.bootstrap), small_topic)
    assert (limits.exists, limits.partitions) == (True, 3)
    assert limits.max_message_bytes == pr.DEFAULT_MAX_MESSAGE_BYTES
    assert limits.max_message_bytes_source.startswith("default, as the topic's could not be read")
    assert "no broker answered" in limits.max_message_bytes_source


def test_no_cluster_is_a_clear_error() -> None:
    """Nothing listens: a ProduceError naming the address, not a crash."""
    with pytest.raises(pr.ProduceError, match=r"cannot read metadata from 127\.0\.0\.1:1"):
        pr.read_topic_limits(Settings(bootstrap="127.0.0.1:1"), TEST_TOPIC, timeout_s=2)
