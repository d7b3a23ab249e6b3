"""confluent_kafka, when it is importable (it is in kconsole's venv; plain spark-submit may lack
it): the driver's pre-flight checks, topic creation and group commit use it, and do without."""

from __future__ import annotations

__all__ = [
    "HAVE_CONFLUENT_KAFKA",
    "AdminClient",
    "Consumer",
    "KafkaException",
    "NewTopic",
    "TopicPartition",
    "kafka_reason",
]

try:  # optional: pre-flight checks, topic creation and the consumer-group commit
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    HAVE_CONFLUENT_KAFKA = True
except ImportError:  # plain spark-submit without kconsole's venv
    HAVE_CONFLUENT_KAFKA = False


def kafka_reason(exc: Exception) -> str:
    """A KafkaException's own description (its KafkaError's str), else the exception's text."""
    describe = getattr(exc.args[0] if exc.args else None, "str", None)  # a KafkaError
    return str(describe()) if callable(describe) else str(exc)
