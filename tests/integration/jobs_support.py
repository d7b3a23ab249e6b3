"""Helpers for the Spark job tests: topics of their own, records with chosen keys and
timestamps, a job manager that stops whatever it started, and small-Spark options."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kconsole.cluster.local.cluster import LocalCluster
from kconsole.config import Settings
from kconsole.jobs import JobRun
from kconsole.jobs.manager import JobManager

# A test's JVM lives a minute: compiled by C1 only and with the serial collector, a job's
# start-up and first batch cost about 40 % less CPU (measured: 15-17 s instead of 28 s for
# keyed-counts, 20 s instead of 31 s for sequence-checker, on the 2-core test machine).
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

# Small Spark: two local cores, two shuffle partitions, short triggers (the machine has 2 cores
# and the brokers run on it too).
SMALL_SPARK = {
    "master": "local[2]",
    "shuffle-partitions": "2",
    "trigger": "0.5",
    "stop-grace": "5",
    "conf": ["spark.driver.memory=512m", f"spark.driver.extraJavaOptions={QUICK_JVM}"],
}


def settings_for(cluster: LocalCluster) -> Settings:
    return Settings(bootstrap=cluster.spec.bootstrap, zookeeper="")


def new_topic(cluster: LocalCluster, prefix: str, partitions: int = 2) -> str:
    """A fresh topic (replication 3) only this test uses."""
    name = f"{prefix}-{secrets.token_hex(3)}"
    admin = AdminClient({"bootstrap.servers": cluster.spec.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 3)])[name].result(timeout=30)
    # Every broker must know it (the controller tells them one by one): a client sent to one
    # that does not yet would hear UNKNOWN_TOPIC_OR_PART.
    cluster.wait_metadata_everywhere(name, time.monotonic() + 30)
    return name


def produce(
    cluster: LocalCluster,
    topic: str,
    records: Iterable[tuple[str, str | bytes, int | None]],
) -> int:
    """Send (key, value, timestamp ms or None) records with acks=all, in order; returns the
    count. Keys go where the Java client would put them (murmur2)."""
    p = Producer(
        {
            "bootstrap.servers": cluster.spec.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "partitioner": "murmur2_random",
        }
    )
    errors: list[str] = []
    n = 0
    for key, value, ts in records:
        kwargs: dict[str, Any] = {"key": key.encode(), "value": value}
        if ts is not None:
            kwargs["timestamp"] = ts
        p.produce(
            topic, on_delivery=lambda err, _m: errors.append(str(err)) if err else None, **kwargs
        )
        n += 1
    assert p.flush(30) == 0, "records left unsent"
    assert not errors, errors
    return n


def workload_record(run: str, key: str, seq: int) -> tuple[str, str, None]:
    """A record shaped like the drill workload's."""
    return key, json.dumps({"run": run, "key": key, "seq": seq, "ts": time.time()}), None


def read_topic(
    cluster: LocalCluster, topic: str, timeout: float = 30.0
) -> list[tuple[str, dict[str, Any]]]:
    """Every (key, JSON value) in the topic, from the beginning to the current end."""
    c = Consumer(
        {
            "bootstrap.servers": cluster.spec.bootstrap,
            "group.id": f"test-reader-{secrets.token_hex(3)}",
            "enable.auto.commit": False,
        }
    )
    try:
        md = c.list_topics(topic, timeout=10).topics[topic]
        ends = {}
        for p in md.partitions:
            _lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            ends[p] = hi
        c.assign([TopicPartition(topic, p, 0) for p in md.partitions])
        out: list[tuple[str, dict[str, Any]]] = []
        pos = dict.fromkeys(ends, 0)
        deadline = time.monotonic() + timeout
        while any(pos[p] < ends[p] for p in ends) and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            pos[m.partition()] = m.offset() + 1
            out.append((m.key().decode(), json.loads(m.value())))
        return out
    finally:
        c.close()


@contextmanager
def job_manager(state_dir: Path, settings: Settings) -> Iterator[JobManager]:
    """A JobManager whose runs are all stopped at the end, with a check that no process of
    theirs is left, whatever happened in the test."""
    manager = JobManager(state_dir, settings)
    try:
        yield manager
    finally:
        pids = {r.pid for r in manager.runs() if r.pid}
        for run in manager.runs():
            if run.active:
                manager.stop(run.run_id, timeout_s=30)
        left = [pid for pid in pids if _ours_alive(manager, pid)]
        assert not left, f"job processes left running: {left}"


def _ours_alive(manager: JobManager, pid: int) -> bool:
    for run in manager.runs():
        if run.pid == pid and run.active:
            return True
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE and any(
            "jobs/" in a for a in psutil.Process(pid).cmdline()
        )
    except psutil.Error:
        return False


def describe(run: JobRun, manager: JobManager) -> str:
    """Enough of a run to understand a failed wait: state, reason, newest progress, log tail."""
    tail = "\n".join(manager.log_tail(run.run_id, 25))
    return (
        f"{run.run_id} {run.state.value} error={run.error!r} latest={run.latest}\n"
        f"warnings={run.warnings}\nlog tail:\n{tail}"
    )
