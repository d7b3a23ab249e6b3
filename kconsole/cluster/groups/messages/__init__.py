"""ConsumerGroupDescribe (API key 69, KIP-848), ShareGroupDescribe (API key 77, KIP-932),
StreamsGroupDescribe (API key 89, KIP-1071) and DescribeShareGroupOffsets (API key 90, KIP-932 /
KIP-1226) as kafka-python protocol classes.

kafka-python 3.0 builds each protocol class from Kafka's own JSON message schema
(`class X(ApiMessage, load_json=<module>)` reads `X.json` from that module's package) but ships
no schema for these APIs. The JSON files next to this module are Kafka 4.4.0's, copied
unchanged (with their Apache license header) from kafka-clients-4.4.0.jar
(`common/message/`, the same files as apache/kafka clients/src/main/resources/common/message/).
kafka-python then encodes, decodes and negotiates their versions (ApiVersions) as it does for
its own messages, and they go through its client like any other request.

ConsumerGroupDescribe: v0 (Kafka 3.7+, on by default from 4.0), v1 adds MemberType (KIP-1099).
ShareGroupDescribe: v1 only (v0 was the early access of Kafka 4.0, removed in 4.1); kafka-python
counts every schema from version 0, so the reader asks with min_version=1 and a broker that offers
only v0 is not asked.
StreamsGroupDescribe: v0 (Kafka 4.1+; streams groups GA in 4.2), v1 adds the topology description
and the assignor name. DescribeShareGroupOffsets: v0 (Kafka 4.1+) gives each share partition's
start offset, v1 (Kafka 4.4, KIP-1226) also its lag as the coordinator works it out.
"""

from __future__ import annotations

import sys
from typing import Any

from kafka.protocol.api_message import ApiMessage

_HERE: Any = sys.modules[__name__]


class ConsumerGroupDescribeRequest(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class ConsumerGroupDescribeResponse(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class ShareGroupDescribeRequest(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class ShareGroupDescribeResponse(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class StreamsGroupDescribeRequest(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class StreamsGroupDescribeResponse(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class DescribeShareGroupOffsetsRequest(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


class DescribeShareGroupOffsetsResponse(ApiMessage, load_json=_HERE):  # type: ignore[call-arg]
    pass


__all__ = [
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse",
    "DescribeShareGroupOffsetsRequest",
    "DescribeShareGroupOffsetsResponse",
    "ShareGroupDescribeRequest",
    "ShareGroupDescribeResponse",
    "StreamsGroupDescribeRequest",
    "StreamsGroupDescribeResponse",
]
