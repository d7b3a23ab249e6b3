"""Produce keyed messages, with a key -> partition -> leader trace and per-record delivery.

Where a key goes is computed exactly as the Java client's default partitioner does it
(murmur2 of the key bytes, Java-compatible, from kafka-python), and the producer is configured
with librdkafka's `murmur2_random` partitioner so the records really land there. Validation runs
before anything is sent: a bad topic name, a missing topic, an oversized record, a silly count or
rate, or undecodable text input are errors with nothing written.

Outcomes come only from delivery reports, as in the drill workload: acked when librdkafka
reports success, failed with the error's name, and whatever still has no report when the bounded
flush ends is an unknown outcome, never counted as acked.

The pieces live in their own modules; this one gathers them, so `kconsole.cluster.produce.api` is
the one name callers need:

    trace     partition_for, the key -> partition -> leader Trace
    request   parsing user input, ProduceRequest from a form, validation, TopicLimits
    outcome   what a send did (Delivery, ProduceResult) and its live Tally

Sending itself (kconsole.cluster.produce.send: produce_records) is not gathered here: only the
command layer sends (Commands.produce), so screens and CLI commands that import this module
cannot reach the producer through it.
"""

from __future__ import annotations

from kconsole.cluster.produce.outcome import (
    Delivery,
    OnProgress,
    ProduceResult,
    StopSending,
    Tally,
    TallyView,
    latency_summary,
)
from kconsole.cluster.produce.request import (
    ACKS_CHOICES,
    COMPRESSIONS,
    DEFAULT_MAX_MESSAGE_BYTES,
    MAX_COUNT,
    MAX_RATE,
    RECORD_OVERHEAD,
    SMALL_SEND,
    VALUE_MODES,
    Header,
    ProduceError,
    ProduceRequest,
    Record,
    TopicLimits,
    build_request,
    check_topic_name,
    decode_text,
    encode_text,
    parse_header,
    parse_headers,
    parse_line,
    read_topic_limits,
    record_size,
    validate,
)
from kconsole.cluster.produce.trace import Trace, partition_for, trace
from kconsole.cluster.security.clients import RDKAFKA_LOG

__all__ = [
    "ACKS_CHOICES",
    "COMPRESSIONS",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "MAX_COUNT",
    "MAX_RATE",
    "RDKAFKA_LOG",
    "RECORD_OVERHEAD",
    "SMALL_SEND",
    "VALUE_MODES",
    "Delivery",
    "Header",
    "OnProgress",
    "ProduceError",
    "ProduceRequest",
    "ProduceResult",
    "Record",
    "StopSending",
    "Tally",
    "TallyView",
    "TopicLimits",
    "Trace",
    "build_request",
    "check_topic_name",
    "decode_text",
    "encode_text",
    "latency_summary",
    "parse_header",
    "parse_headers",
    "parse_line",
    "partition_for",
    "read_topic_limits",
    "record_size",
    "trace",
    "validate",
]
