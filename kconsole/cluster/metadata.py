"""The cluster's metadata as the Admin poll uses it, from either client: librdkafka's
`list_topics`, or one Metadata answer read undecoded (kafka-python), with the fingerprint
that says whether that answer differs from the last one without decoding it.

On 10,000 partitions, decoding the whole metadata every second (librdkafka's objects, then
ours, then the snapshot's partitions built and compared again) was half of an idle console's
CPU (bench/RESULTS.md, kraft-10k). One broker's answer is the same bytes from one poll to the
next while nothing changed, except for one field: the controller id, which a KRaft broker
picks at random among the live brokers for every answer (clients do not reach the
controllers). So the poll compares the bytes with that field left out, reads that field
alone, and decodes only an answer that differs: a leader, an ISR, a broker, a topic, anything
the answer carries.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, NamedTuple

# The Metadata versions whose answer `fingerprint` reads: not flexible (v9+ has compact
# strings and tagged fields), with throttle_time_ms (v3+) and cluster_id (v2+). Kafka 4 still
# answers v4..v8; the request asks for at most RAW_MAX_VERSION.
RAW_MIN_VERSION = 3
RAW_MAX_VERSION = 8

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class AdminPartition(NamedTuple):
    """One partition as the metadata says (a tuple: 10,000 of them are made for every answer
    that changed, three times faster than a frozen dataclass)."""

    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class Metadata:
    """One metadata answer: brokers (id -> host, port), the controller id it named, and every
    topic's partitions in partition order (topics whose own error left them without
    partitions are left out). `key`: the answer's fingerprint (None when read through
    librdkafka, which hands on no bytes)."""

    cluster_id: str | None
    controller: int | None
    brokers: dict[int, tuple[str, int]]
    topics: dict[str, tuple[AdminPartition, ...]]
    key: bytes | None = None


def fingerprint(body: bytes) -> tuple[bytes, int]:
    """A Metadata answer's body (v3..v8, after the response header) without its controller id,
    and that id. ValueError when the body is shorter than its own lengths say."""
    try:
        pos = 4  # throttle_time_ms
        (count,) = _I32.unpack_from(body, pos)
        pos += 4
        for _ in range(count):
            pos += 4  # node_id
            (host,) = _I16.unpack_from(body, pos)
            pos += 2 + max(host, 0) + 4  # host, port
            (rack,) = _I16.unpack_from(body, pos)
            pos += 2 + max(rack, 0)
        (cluster,) = _I16.unpack_from(body, pos)
        pos += 2 + max(cluster, 0)
        (controller,) = _I32.unpack_from(body, pos)
    except struct.error as exc:
        raise ValueError(f"a Metadata answer cut short ({len(body)} bytes): {exc}") from exc
    return body[4:pos] + body[pos + 4 :], controller


def from_answer(response: Any, key: bytes | None) -> Metadata:
    """Metadata from a decoded MetadataResponse (kafka-python's field names)."""
    topics: dict[str, tuple[AdminPartition, ...]] = {}
    for t in response.topics:
        if t.error_code and not t.partitions:
            continue
        topics[t.name] = tuple(
            AdminPartition(
                p.partition_index, p.leader_id, tuple(p.replica_nodes), tuple(p.isr_nodes)
            )
            for p in sorted(t.partitions, key=lambda p: p.partition_index)
        )
    controller = response.controller_id
    return Metadata(
        response.cluster_id,
        controller if controller >= 0 else None,
        {b.node_id: (b.host, b.port) for b in response.brokers},
        topics,
        key,
    )


def from_librdkafka(md: Any) -> Metadata:
    """Metadata from librdkafka's ClusterMetadata (`list_topics`)."""
    topics: dict[str, tuple[AdminPartition, ...]] = {}
    for name, t in md.topics.items():
        if t.error is not None and not t.partitions:
            continue
        topics[name] = tuple(
            AdminPartition(p.id, p.leader, tuple(p.replicas), tuple(p.isrs))
            for p in sorted(t.partitions.values(), key=lambda p: p.id)
        )
    controller = md.controller_id
    return Metadata(
        md.cluster_id,
        controller if controller >= 0 else None,
        {b.id: (b.host, b.port) for b in md.brokers.values()},
        topics,
    )
