"""confluent_kafka, when it is importable (it is in kconsole's venv; plain spark-submit may lack
it): the driver's pre-flight checks, topic creation and group commit use it, and do without."""

from __future__ import annotations

__all__ = [
    "HAVE_CONFLUENT_KAFKA",
    "AdminClient",
    "Consumer",
    "KafkaException",
    "NewTopic",
    "OffsetSpec",
    "TopicCollection",
    "TopicPartition",
    "kafka_reason",
]

try:  # optional: pre-flight checks, topic creation and the consumer-group commit
    from confluent_kafka import Consumer, KafkaException, TopicCollection, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

    HAVE_CONFLUENT_KAFKA = True
except ImportError:  # plain spark-submit without kconsole's venv: the names exist, unused
    HAVE_CONFLUENT_KAFKA = False
    Consumer = AdminClient = NewTopic = OffsetSpec = TopicCollection = TopicPartition = None  # type: ignore[assignment,misc]
    KafkaException = Exception  # type: ignore[assignment,misc]


def kafka_reason(exc: Exception) -> str:
    """A KafkaException's own description (its KafkaError's str), else the exception's text."""
    describe = getattr(exc.args[0] if exc.args else None, "str", None)  # a KafkaError
    return str(describe()) if callable(describe) else str(exc)
