"""The keyed-counts job on local[2]: produce-to-result latency and rows per second.

    .venv/bin/python bench/jobs_keyed_counts.py [--rate 100] [--duration 60] [--triggers 0,1]
        [--backlog 500000] [--out bench/results/jobs_keyed_counts.md]

Starts its own throw-away 3-broker cluster on free ports in a temporary dir (bench/_cluster.py),
and always takes it and every job it started down again. The job runs as the console runs
it (JobManager: a background `python jobs/keyed_counts.py` process), with --master local[2],
2 shuffle partitions, 10 s windows, update output mode, writing to an output topic.

1. Latency, once per trigger interval: with the job running (starting at latest), a producer
   sends `--rate` records/s over 50 keys for `--duration` s, each stamped with its send time
   (event time). A consumer on the output topic records when each (window, key) count arrives.
   The first --warmup seconds of load (default 30) are not measured. A record's
   produce-to-result latency: from its send to the first output record whose count
   for its (window, key) includes it (the n-th record of a (window, key) is in when a count
   >= n arrives).
2. Rows per second: `--backlog` records are produced first, then a fresh run (earliest, at most
   100,000 records per micro-batch, trigger 0) works through them; the job's own progress gives
   processedRowsPerSecond per batch, and the wall time from the first to the last batch gives
   the overall rate.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil
from _cluster import describe_ports, temporary_cluster, to_stderr
from _common import code_revision, load
from confluent_kafka import OFFSET_END, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kconsole.config import Settings
from kconsole.jobs import JobRun, JobState
from kconsole.jobs.manager import JobManager

KEYS = 50
WINDOW_MS = 10_000
SPARK = {
    "master": "local[2]",
    "shuffle-partitions": "2",
    "window": "10",
    "watermark": "30",
    "stop-grace": "5",
}


def window_of(ts_ms: int) -> str:
    start = ts_ms - ts_ms % WINDOW_MS
    return datetime.fromtimestamp(start / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 3)])[name].result(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        md = admin.list_topics(name, timeout=5).topics.get(name)
        if md and md.error is None and all(p.leader >= 0 for p in md.partitions.values()):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{name} has no leaders")


def wait_for(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise RuntimeError(f"timed out waiting for {what}")


def running(manager: JobManager, run: JobRun) -> JobRun:
    """Wait until the run finished its first batch (JVM up, query planned)."""

    def ready() -> bool:
        r = manager.get(run.run_id)
        if not r.active:
            raise RuntimeError(f"job ended: {r.state.value} {r.error}")
        return r.latest is not None

    wait_for(ready, 240, "the job's first batch")
    return manager.get(run.run_id)


class OutputReader(threading.Thread):
    """Reads the output topic from its current end: (arrival time, window, key, count)."""

    def __init__(self, bootstrap: str, topic: str):
        super().__init__(daemon=True)
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-reader"})
        md = self.c.list_topics(topic, timeout=10).topics[topic]
        self.c.assign([TopicPartition(topic, p, OFFSET_END) for p in md.partitions])
        self.seen: list[tuple[float, str, str, int]] = []
        self.stop = threading.Event()
        self.ready = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            m = self.c.poll(0.05)
            self.ready.set()  # the first poll resolved OFFSET_END
            if m is None or m.error() or (value := m.value()) is None:
                continue
            v = json.loads(value)
            self.seen.append((time.time(), v["window_start"], v["key"], int(v["count"])))
        self.c.close()


def latency_run(
    manager: JobManager,
    bootstrap: str,
    topic: str,
    trigger: str,
    rate: float,
    duration: float,
    warmup: float,
) -> dict[str, float]:
    out_topic = f"{topic}-counts"
    run = manager.start(
        "keyed-counts",
        {
            **SPARK,
            "topic": topic,
            "trigger": trigger,
            "starting-offsets": "latest",
            "output-topic": out_topic,
            "checkpoint": str(manager.state_dir / f"ck-latency-{trigger}"),
        },
    )
    try:
        running(manager, run)
        producer = Producer(
            {"bootstrap.servers": bootstrap, "linger.ms": 1, "partitioner": "murmur2_random"}
        )
        # Warm-up: the same load, not measured (the first batches of a fresh JVM are slow).
        t0 = time.time()
        n = 0
        while time.time() - t0 < warmup:
            time.sleep(max(0.0, t0 + n / rate - time.time()))
            producer.produce(topic, key=f"warm{n % KEYS}", value=b"1")
            producer.poll(0)
            n += 1
        producer.flush(30)
        reader = OutputReader(bootstrap, out_topic)
        reader.start()
        reader.ready.wait(10)
        sent: dict[tuple[str, str], list[float]] = defaultdict(list)
        measured_from = len(manager.get(run.run_id).history)
        t0 = time.time()
        n = 0
        while time.time() - t0 < duration:
            due = t0 + n / rate
            now = time.time()
            if due > now:
                time.sleep(due - now)
            key = f"key{n % KEYS}"
            now = time.time()
            ts = int(now * 1000)
            producer.produce(topic, key=key, value=b"1", timestamp=ts)
            sent[(window_of(ts), key)].append(now)
            producer.poll(0)
            n += 1
        producer.flush(30)
        total = sum(len(v) for v in sent.values())

        def complete() -> bool:
            best: dict[tuple[str, str], int] = {}
            for _t, w, k, c in list(reader.seen):
                best[(w, k)] = max(best.get((w, k), 0), c)
            return all(best.get(wk, 0) >= len(v) for wk, v in sent.items())

        wait_for(complete, 120, "every record's count in the output topic")
        reader.stop.set()
        reader.join(5)
        latencies = []
        arrivals = sorted(reader.seen)
        for (w, k), times in sent.items():
            counted = 0
            for at, w2, k2, c in arrivals:
                if (w2, k2) != (w, k) or c <= counted:
                    continue
                latencies += [at - times[i] for i in range(counted, min(c, len(times)))]
                counted = c
        assert len(latencies) == total, (len(latencies), total)
        r = manager.get(run.run_id)
        batches = [p for p in r.history[measured_from:] if p.input_rows]
        return {
            "records": total,
            "p50": statistics.median(latencies),
            "p90": statistics.quantiles(latencies, n=10)[-1],
            "p95": statistics.quantiles(latencies, n=20)[-1],
            "p99": statistics.quantiles(latencies, n=100)[-1],
            "max": max(latencies),
            "batch_ms": statistics.median(p.batch_duration_ms or 0 for p in batches),
            "batches": len(batches),
        }
    finally:
        manager.stop(run.run_id, timeout_s=30)


def throughput_run(manager: JobManager, bootstrap: str, topic: str, backlog: int) -> dict[str, Any]:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 50,
            "batch.size": 1_000_000,
            "compression.type": "lz4",
            "partitioner": "murmur2_random",
        }
    )
    t = time.monotonic()
    for i in range(backlog):
        while True:
            try:
                producer.produce(topic, key=f"key{i % KEYS}", value=b"1")
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
    producer.flush(120)
    produced_s = time.monotonic() - t
    run = manager.start(
        "keyed-counts",
        {
            **SPARK,
            "topic": topic,
            "trigger": "0",
            "starting-offsets": "earliest",
            "max-offsets-per-trigger": "100000",
            "output-topic": f"{topic}-counts",
            "checkpoint": str(manager.state_dir / "ck-throughput"),
        },
    )
    try:

        def done() -> bool:
            r = manager.get(run.run_id)
            if not r.active:
                raise RuntimeError(f"job ended: {r.state.value} {r.error}")
            return r.latest is not None and sum(r.latest.end_offsets.values()) >= backlog

        wait_for(done, 900, "the backlog to be processed")
        r = manager.get(run.run_id)
        batches = [p for p in r.history if p.input_rows]
        first_start = batches[0].ts - (batches[0].batch_duration_ms or 0) / 1000
        wall = batches[-1].ts - first_start
        return {
            "backlog": backlog,
            "produce_s": produced_s,
            "batches": len(batches),
            "per_batch": [
                (p.batch_id, p.input_rows, p.batch_duration_ms, p.processed_rows_per_second)
                for p in batches
            ],
            "overall": sum(p.input_rows for p in batches) / wall,
            "wall": wall,
        }
    finally:
        manager.stop(run.run_id, timeout_s=30)


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")  # so the cluster and the jobs are stopped


def main() -> None:
    signal.signal(signal.SIGTERM, _interrupt)
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=float, default=100.0)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--warmup", type=float, default=30.0, help="seconds of load not measured")
    ap.add_argument("--triggers", default="0,1")
    ap.add_argument("--backlog", type=int, default=500_000)
    ap.add_argument("--out", type=Path, default=Path("bench/results/jobs_keyed_counts.md"))
    args = ap.parse_args()
    load_start = load()
    rev = code_revision(("kconsole", "jobs"))
    lat: dict[str, dict[str, float]] = {}
    with temporary_cluster("kc-bench-jobs-", progress=to_stderr) as (cluster, tmp):
        spec = cluster.spec
        ports = describe_ports(spec)
        manager = JobManager(tmp / "state", Settings(bootstrap=spec.bootstrap, zookeeper=""))
        try:
            for trigger in args.triggers.split(","):
                topic = f"bench-lat-{trigger.replace('.', '_')}"
                create_topic(spec.bootstrap, topic, 4)
                print(f"latency, trigger {trigger} s ...", file=sys.stderr)
                lat[trigger] = latency_run(
                    manager, spec.bootstrap, topic, trigger, args.rate, args.duration, args.warmup
                )
                print(lat[trigger], file=sys.stderr)
            create_topic(spec.bootstrap, "bench-backlog", 4)
            print(f"throughput, {args.backlog} records ...", file=sys.stderr)
            thr = throughput_run(manager, spec.bootstrap, "bench-backlog", args.backlog)
            print(thr, file=sys.stderr)
        finally:
            for job in manager.runs():
                if job.active:
                    manager.stop(job.run_id, timeout_s=30)
            left = [job.run_id for job in manager.runs() if job.state is not JobState.STOPPED]
            print(f"runs not stopped: {left}", file=sys.stderr)
    mem = psutil.virtual_memory().total / 2**30
    cmd = "`.venv/bin/python bench/jobs_keyed_counts.py" + (
        "" if sys.argv[1:] == [] else " " + " ".join(sys.argv[1:])
    )
    lines = [
        f"command: {cmd}`  ",
        f"code: {rev}  ",
        f"load average (1 min): {load_start} at start, {load()} at end  ",
        f"machine: {os.cpu_count()} cores, {mem:.0f} GiB; 3 brokers (512 MB heap) on the same "
        f"machine, {ports}; input topics 4 partitions x RF3.  ",
        "job: keyed-counts via JobManager, --master local[2], 2 shuffle partitions, 10 s windows, "
        "30 s watermark, update mode, output topic + JSON-lines sink.",
        "",
        f"### Produce-to-result latency ({args.rate:.0f} records/s over {KEYS} keys, "
        f"{args.duration:.0f} s, after {args.warmup:.0f} s of the same load unmeasured)",
        "",
        "| trigger | records | p50 (s) | p90 (s) | p95 (s) | p99 (s) | max (s) | batches "
        "| median batch (ms) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for trig, r in lat.items():
        label = "0 (back to back)" if float(trig) == 0 else f"{trig} s"
        lines.append(
            f"| {label} | {r['records']:.0f} | {r['p50']:.2f} | {r['p90']:.2f} | {r['p95']:.2f} "
            f"| {r['p99']:.2f} "
            f"| {r['max']:.2f} | {r['batches']:.0f} | {r['batch_ms']:.0f} |"
        )
    lines += [
        "",
        f"### Rows per second ({thr['backlog']:,} records of backlog, at most 100,000 a batch, "
        "trigger 0)",
        "",
        f"overall: **{thr['overall']:,.0f} rows/s** ({thr['wall']:.1f} s from the first batch's "
        f"start to the last one's end); producing the backlog took {thr['produce_s']:.1f} s.",
        "",
        "| batch | rows | duration (ms) | processedRowsPerSecond |",
        "|---|---|---|---|",
    ]
    for bid, rows, ms, rps in thr["per_batch"]:
        lines.append(f"| {bid} | {rows:,} | {ms} | {rps:,.0f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
