"""`kconsole produce` against the real local cluster, with Kafka's own console producer as the
reference for where keys land."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from confluent_kafka import Consumer, KafkaException, TopicPartition
from kazoo.client import KazooClient

from kconsole.cli import main
from kconsole.cluster import jars
from kconsole.cluster.local.cluster import LocalCluster
from kconsole.cluster.produce.api import partition_for
from kconsole.cluster.settings import TEST_TOPIC, TEST_TOPIC_PARTITIONS
from kconsole.config import Settings
from kconsole.drills.verify import end_offsets, verifier_config
from tests.integration.conftest import partition_state, registered
from tests.integration.kafka_tools import TOOL_JVM
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

JAVA_PRODUCER = "kafka.tools.ConsoleProducer"  # kafka_2.13-3.9.x; moved to tools in 4.0


def _settings(cluster: LocalCluster) -> Settings:
    return Settings(bootstrap=cluster.spec.bootstrap, zookeeper=cluster.spec.zk_connect)


def _cli(cluster: LocalCluster, *args: str, stdin: bytes | None = None) -> Result:
    base = ["--bootstrap", cluster.spec.bootstrap, "--zookeeper", cluster.spec.zk_connect]
    return CliRunner().invoke(main, [*base, "produce", *args], input=stdin)


def ends(cluster: LocalCluster, topic: str = TEST_TOPIC, timeout: float = 30.0) -> dict[int, int]:
    """Every partition's high watermark. A partition whose leader just moved (the preferred-
    leader rebalance runs every 30 s) answers NOT_LEADER until the client's metadata catches
    up: ask again until the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return end_offsets(_settings(cluster), topic)
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _read(
    cluster: LocalCluster, topic: str, start: Mapping[int, int]
) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """(partition, offset, key, value) from `start` to the high watermarks: assign, no group."""
    end = ends(cluster, topic)
    consumer = Consumer(verifier_config(_settings(cluster)))
    out = []
    try:
        todo = {p for p in end if end[p] > start.get(p, 0)}
        consumer.assign([TopicPartition(topic, p, start.get(p, 0)) for p in todo])
        while todo:
            msg = consumer.poll(10.0)
            assert msg is not None, f"nothing more to read, still waiting for {todo}"
            if msg.error():
                continue
            p, off = msg.partition(), msg.offset()
            assert p is not None and off is not None
            out.append((p, off, msg.key(), msg.value()))
            if off + 1 >= end[p]:
                todo.discard(p)
    finally:
        consumer.close()
    return out


def assert_nothing_sent(cluster: LocalCluster, start: Mapping[int, int], marker: str) -> None:
    """No record from `start` on carries `marker`. (Comparing high watermarks is not enough:
    just after leadership moved, say by the preferred-leader rebalance, a new leader can
    report a stale one.)"""
    m = marker.encode()
    found = [
        (p, off)
        for p, off, key, value in _read(cluster, TEST_TOPIC, start)
        if m in (value or b"") or m in (key or b"")
    ]
    assert not found, f"records with {marker!r} were written: {found}"


def _java_console_produce(cluster: LocalCluster, topic: str, lines: list[str]) -> None:
    """Kafka's console producer with parse.key (as run_tool, but fed through stdin)."""
    lib = jars.ensure_kafka_jars(cluster.spec.kafka_version)
    proc = subprocess.run(
        [
            jars.java_executable(),
            *TOOL_JVM,
            "-cp",
            f"{lib}/*",
            JAVA_PRODUCER,
            "--bootstrap-server",
            cluster.spec.bootstrap,
            "--topic",
            topic,
            "--property",
            "parse.key=true",
            "--property",
            "key.separator=:",
            "--producer-property",
            "acks=all",
        ],
        input="".join(f"{line}\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_keys_land_where_the_java_producer_puts_them(healthy: LocalCluster) -> None:
    run = uuid.uuid4().hex[:8]
    keys = [f"key-{i}-{run}" for i in range(40)] + ["21", "foobar", "a-little-bit-long-string"]
    start = ends(healthy)
    res = _cli(
        healthy,
        "--topic",
        TEST_TOPIC,
        "--key-separator",
        ":",
        stdin="".join(f"{k}:kconsole-{run}\n" for k in keys).encode(),
    )
    assert res.exit_code == 0, res.output
    _java_console_produce(healthy, TEST_TOPIC, [f"{k}:java-{run}" for k in keys])

    where: dict[str, dict[str, int]] = {"kconsole": {}, "java": {}}
    for p, _off, key, value in _read(healthy, TEST_TOPIC, start):
        if value and value.endswith(run.encode()) and key is not None:
            where[value.decode().split("-")[0]][key.decode()] = p
    assert set(where["kconsole"]) == set(keys) == set(where["java"])
    assert where["kconsole"] == where["java"]
    assert where["kconsole"] == {k: partition_for(k.encode(), TEST_TOPIC_PARTITIONS) for k in keys}
    assert len(set(where["kconsole"].values())) == TEST_TOPIC_PARTITIONS  # keys do spread


def test_bulk_acks_all_in_order_per_key(healthy: LocalCluster) -> None:
    n, run = 500, uuid.uuid4().hex[:8]
    start = ends(healthy)
    lines = "".join(f"k{i % 7}-{run}:{i}\n" for i in range(n))
    res = _cli(healthy, "--topic", TEST_TOPIC, "--acks", "all", "-K", ":", stdin=lines.encode())
    assert res.exit_code == 0, res.output
    assert f"sent {n}, acked {n}, failed 0" in res.output
    assert "p99" in res.output
    seqs: dict[bytes, list[int]] = defaultdict(list)
    for p, _off, key, value in _read(healthy, TEST_TOPIC, start):
        if key is not None and key.endswith(run.encode()):
            assert p == partition_for(key, TEST_TOPIC_PARTITIONS)
            seqs[key].append(int(value or b"-1"))
    assert sum(len(v) for v in seqs.values()) == n
    for key, got in seqs.items():
        assert got == sorted(got), f"{key!r} out of order"
        assert len(set(got)) == len(got), f"{key!r} duplicated"


def test_under_min_isr_warns_then_fails(healthy: LocalCluster, zk: KazooClient) -> None:
    try:
        for bid in (2, 3):
            healthy.stop_broker(bid)
        wait_until(lambda: registered(zk) == {1}, 30, "only broker 1 registered")
        wait_until(
            lambda: all(
                partition_state(zk, TEST_TOPIC, p)["isr"] == [1]
                for p in range(TEST_TOPIC_PARTITIONS)
            ),
            30,
            "ISR shrunk to broker 1",
        )
        res = _cli(healthy, "--topic", TEST_TOPIC, "--key", "k1", "--value", "must-fail")
        out = res.output
        assert res.exit_code == 2, out
        assert "under min ISR" in out
        assert "NOT_ENOUGH_REPLICAS" in out.split("FAILED")[1], out
        # The warning came before the attempt.
        assert out.index("under min ISR") < out.index("FAILED")
    finally:
        for bid in (2, 3):
            if bid not in registered(zk):
                healthy.start_broker(bid, wait=False)


@pytest.mark.parametrize(
    "args, stdin, message",
    [
        (["--topic", "bad topic!", "--value", "{m}"], None, "invalid topic name"),
        (["--topic", "..", "--value", "{m}"], None, "invalid topic name"),
        (["--topic", "no-such-topic-xyz", "--value", "{m}"], None, "does not exist"),
        (["--topic", TEST_TOPIC, "--value", "{m}", "--count", "0"], None, "at least 1"),
        (["--topic", TEST_TOPIC, "--value", "{m}", "--count", "99999999"], None, "too many"),
        (["--topic", TEST_TOPIC, "--value", "{m}", "--rate", "0"], None, "rate must be"),
        (["--topic", TEST_TOPIC, "--value", "{m}", "--partition", "4"], None, "does not exist"),
        (["--topic", TEST_TOPIC, "-K", ":"], b"k:{m}\nk:\xff\xfe\n", "line 2 is not valid UTF-8"),
        (["--topic", TEST_TOPIC, "--value", "{m}", "--header", "nohdr"], None, "key=value"),
        (["--topic", TEST_TOPIC], b"", "no records"),
    ],
)
def test_bad_input_sends_nothing(
    healthy: LocalCluster, args: list[str], stdin: bytes | None, message: str
) -> None:
    marker = f"refused-{uuid.uuid4().hex[:10]}"
    before = ends(healthy)
    args = [a.replace("{m}", marker) for a in args]
    stdin = stdin.replace(b"{m}", marker.encode()) if stdin is not None else None
    res = _cli(healthy, *args, stdin=stdin)
    assert res.exit_code == 1, res.output
    assert "error:" in res.output and message in res.output, res.output
    assert_nothing_sent(healthy, before, marker)


def test_too_large_value_is_refused(healthy: LocalCluster, tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    marker = f"too-big-{uuid.uuid4().hex[:10]}"
    big.write_bytes(marker.encode() + b"x" * 1048588)
    before = ends(healthy)
    res = _cli(healthy, "--topic", TEST_TOPIC, "--file", str(big))
    assert res.exit_code == 1, res.output
    assert "too large" in res.output and "1,048,588" in res.output
    assert_nothing_sent(healthy, before, marker)
    # Just under the limit goes through (librdkafka's own smaller default does not refuse it).
    big.write_bytes(b"y" * 1_040_000)
    res = _cli(healthy, "--topic", TEST_TOPIC, "--file", str(big), "--compression", "lz4")
    assert res.exit_code == 0, res.output


def test_bulk_path_accounts_for_every_record(healthy: LocalCluster) -> None:
    """The bulk path (no object per acked record: a tally counted as reports arrive, progress
    ticks, reports served once per 64 sends) accounts for every record, and every one is in
    the log exactly once; the detailed path (each outcome handed on) gives each record its own
    report, in send order, at the offset where it is in the log."""
    from kconsole.cluster.produce import api as pr
    from kconsole.cluster.produce.send import produce_records

    n, run = 20_000, uuid.uuid4().hex[:8]
    settings = Settings(bootstrap=healthy.spec.bootstrap, zookeeper="", backend="none")
    start = ends(healthy)
    tally = pr.Tally(n)
    ticks: list[int] = []
    records = ((f"k{i % 13}-{run}".encode(), str(i).encode(), ()) for i in range(n))
    result = produce_records(
        settings,
        TEST_TOPIC,
        records,
        acks="all",
        tally=tally,
        on_tick=lambda: ticks.append(tally.view().done),
        tick_s=0.001,
    )
    assert result.sent == n and result.acked_n == n and result.ok
    assert result.deliveries == () and result.unknown_n == 0 and result.failed_n == 0
    assert len(result.latencies_s) == n and result.latency()["max"] > 0
    assert tally.acked == n
    assert ticks and ticks == sorted(ticks) and ticks[-1] <= n  # progress only goes up
    seen = sorted(
        int(value or b"-1")
        for _p, _off, key, value in _read(healthy, TEST_TOPIC, start)
        if key is not None and key.endswith(run.encode())
    )
    assert seen == list(range(n))  # each record once

    m, run = 300, uuid.uuid4().hex[:8]
    start = ends(healthy)
    heard: list[pr.Delivery] = []
    records = ((f"k{i % 13}-{run}".encode(), str(i).encode(), ()) for i in range(m))
    result = produce_records(settings, TEST_TOPIC, records, acks="all", on_progress=heard.append)
    assert result.ok and result.acked_n == m
    assert [d.index for d in result.deliveries] == list(range(m))
    assert sorted(d.index for d in heard) == list(range(m))
    at = {(d.partition, d.offset): int(d.index) for d in result.deliveries}
    found = 0
    for p, off, key, value in _read(healthy, TEST_TOPIC, start):
        if key is not None and key.endswith(run.encode()):
            assert at[(p, off)] == int(value or b"-1")  # the report named this very record
            found += 1
    assert found == m


def _audit() -> list[dict]:
    """The audit log's lines (every kconsole these tests run writes into the same state dir)."""
    path = Path(os.environ["KCONSOLE_STATE_DIR"]) / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _audited_produce(since: int) -> dict:
    """The one produce line the audit log got after its first `since` lines."""
    (entry,) = [e for e in _audit()[since:] if e["command"] == "produce"]
    return entry


def _count_marked(cluster: LocalCluster, start: Mapping[int, int], marker: str) -> int:
    m = marker.encode()
    return sum(1 for *_, value in _read(cluster, TEST_TOPIC, start) if value == m)


def test_acks_0_says_sent_not_acked(healthy: LocalCluster) -> None:
    """Issue 35 #17: with acks=0 no broker acknowledges anything, yet the summary said `sent 2,
    acked 2`. It says the records went out unconfirmed, and so does the audit line."""
    marker = f"acks0-{uuid.uuid4().hex[:8]}"
    start, audited = ends(healthy), len(_audit())
    res = _cli(healthy, "--topic", TEST_TOPIC, "-k", "a", "-v", marker, "-n", "2", "--acks", "0")
    assert res.exit_code == 0, res.output
    summary = next(line for line in res.output.splitlines() if line.startswith("sent "))
    assert summary.startswith("sent 2 (acks=0: not confirmed), failed 0, unknown 0,"), summary
    assert "acked" not in summary
    result = _audited_produce(audited)["result"]
    assert result == {"sent": 2, "not_confirmed": 2, "failed": 0, "unknown": 0}
    # Not confirmed is not lost: on a healthy cluster both are in the log.
    wait_until(lambda: _count_marked(healthy, start, marker) == 2, 30, "both records in the log")


def test_sigterm_stops_a_background_send_with_its_summary(healthy: LocalCluster) -> None:
    """Issue 35 #17: a background `produce --rate 200` stopped by SIGTERM printed nothing (and
    logged nothing). It stops sending, accounts for what it sent, prints the summary, writes the
    audit line with the real counts and exits 143 (as a process the signal ended)."""
    marker = f"sigterm-{uuid.uuid4().hex[:8]}"
    start, audited = ends(healthy), len(_audit())
    cmd = [
        sys.executable, "-m", "kconsole",
        "--bootstrap", healthy.spec.bootstrap, "--zookeeper", healthy.spec.zk_connect,
        "produce", "-t", TEST_TOPIC, "-k", "bg", "-v", marker,
        "-n", "100000", "--rate", "200", "--acks", "all",
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        # sending: the topic grows (200 msg/s: a second's worth)
        wait_until(
            lambda: sum(ends(healthy).values()) - sum(start.values()) >= 200,
            60,
            "the background send to be under way",
        )
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, out
    stopped = re.search(r"^stopped by SIGTERM after ([\d,]+) of 100,000 records$", out, re.M)
    assert stopped is not None, out
    n = int(stopped.group(1).replace(",", ""))
    assert 200 <= n < 100_000
    assert f"\nsent {n}, acked {n}, failed 0, unknown 0, " in out, out
    assert _audited_produce(audited)["result"] == {
        "sent": n,
        "acked": n,
        "failed": 0,
        "unknown": 0,
        "stopped_by": "SIGTERM",
    }
    assert _count_marked(healthy, start, marker) == n  # every one it counted, and no other
