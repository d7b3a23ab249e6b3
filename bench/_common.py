"""What every benchmark records beside its numbers: the code it measured and the load."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from confluent_kafka import ElectionType, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def code_revision(paths: tuple[str, ...] = ("kconsole",)) -> str:
    """The code this run measured: HEAD, plus any uncommitted changes under `paths`."""
    root = str(Path(__file__).resolve().parents[1])
    try:
        git = ["git", "-C", root]
        sha = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            [*git, "status", "--porcelain", "--", *paths],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    dirty = [line[3:] for line in status.splitlines() if line.strip()]
    return f"git {sha}" + (f" + uncommitted changes in {', '.join(dirty)}" if dirty else "")


def load() -> str:
    """The 1-minute load average: the machine is shared, and the brokers run on it too."""
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "?"


# -- cluster set-up shared by the scripts that start their own cluster ----------------------------
def create_topics(
    bootstrap: str, names: list[str], partitions: int, rf: int, say: Callable[[str], None]
) -> list[str]:
    """Create `names` (an existing one is fine), a few at a time: the controller writes every
    partition's znodes, and a big batch times out."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    for i in range(0, len(names), 5):
        batch = names[i : i + 5]
        futs = admin.create_topics(
            [NewTopic(n, partitions, rf) for n in batch], request_timeout=120
        )
        for fut in futs.values():
            try:
                fut.result(timeout=150)
            except KafkaException as exc:
                if "TOPIC_ALREADY_EXISTS" not in str(exc):
                    raise
        say(f"created {batch[0]}..{batch[-1]}")
    return names


def elect_preferred(
    bootstrap: str,
    partitions: list[TopicPartition] | None = None,
    timeout: float = 60.0,
    config: Mapping[str, str] | None = None,
) -> None:
    """Preferred-leader election for `partitions` (None: every partition), asked again until
    it succeeds or `timeout`; ELECTION_NOT_NEEDED is success. `config`: the cluster's client
    settings (a secured cluster's LocalCluster.client_config())."""
    # No keyword arguments: confluent-kafka 2.16.1's elect_leaders raises SystemError on them;
    # socket.timeout.ms sets the request and operation timeouts instead.
    admin = AdminClient(
        {
            "bootstrap.servers": bootstrap,
            "log_level": 0,
            "socket.timeout.ms": 15000,
            **(config or {}),
        }
    )
    deadline = time.monotonic() + timeout
    while True:
        try:
            res = admin.elect_leaders(ElectionType.PREFERRED, partitions).result(timeout=30)
            errors = [
                e for e in res.values() if e is not None and "NOT_NEEDED" not in str(e).upper()
            ]
            if not errors:
                return
        except KafkaException as exc:
            errors = [exc]
        if time.monotonic() > deadline:
            raise RuntimeError(f"preferred leader election failed: {errors[:3]}")
        time.sleep(0.5)
