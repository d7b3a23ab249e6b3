"""What the secured-cluster tests share: acknowledged records produced and read back with a
cluster's own client settings."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer

from kconsole.cluster.settings import TEST_TOPIC


def produce_and_read_back(config: dict[str, Any], group_prefix: str, count: int = 20) -> None:
    """`count` records produced (acks=all, idempotent) to the test topic with `config` (the
    bootstrap servers and the cluster's client settings), then read back by a consumer group of
    the same settings: every acknowledged record is read."""
    producer = Producer({**config, "acks": "all", "enable.idempotence": True})
    acked: list[bytes] = []

    def on_delivery(err: object, msg: object) -> None:
        assert err is None, err
        acked.append(msg.value())  # type: ignore[attr-defined]

    run = uuid.uuid4().hex[:8]
    for i in range(count):
        producer.produce(TEST_TOPIC, value=f"{run}-{i}", key=f"k{i % 4}", on_delivery=on_delivery)
    assert producer.flush(30) == 0
    assert len(acked) == count
    group = f"{group_prefix}-{run}"
    consumer = Consumer({**config, "group.id": group, "auto.offset.reset": "earliest"})
    consumer.subscribe([TEST_TOPIC])
    seen: set[bytes] = set()
    try:
        for _ in range(300):  # at most 60 s
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None and msg.value().startswith(run.encode()):
                seen.add(msg.value())
            if len(seen) == count:
                break
    finally:
        consumer.close()
    assert seen == set(acked)


def files_holding(root: Path, texts: list[str]) -> dict[str, list[Path]]:
    """Per text, the files below `root` that hold it (every file but Kafka's preallocated,
    all-zero index files)."""
    found: dict[str, list[Path]] = {t: [] for t in texts}
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix not in (".index", ".timeindex"):
            content = path.read_text(errors="replace")
            for t in texts:
                if t in content:
                    found[t].append(path)
    return found
