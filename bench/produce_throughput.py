"""Bulk-produce throughput from the console's produce dialog against a plain confluent-kafka
producer loop, on the same cluster in the same run.

    .venv/bin/python bench/produce_throughput.py [--count 200000] [--size 100] [--runs 3]

Starts its own throw-away 3-broker cluster (ZooKeeper 25181, brokers 25092-25094) in a temporary
dir, and always takes it down again. Both sides send `count` copies of one keyed record of
`size` bytes to test-topic with the same producer settings (acks=all, idempotence, linger.ms 5,
murmur2 partitioner: kconsole.cluster.produce.producer_config), alternating, `runs` times each:

  - plain: Producer.produce() in a loop (poll(0) each, BufferError -> poll and retry), a
    delivery callback that only counts, then flush();
  - console: the real app headless (Textual run_test) with the live observer, the produce
    dialog filled in and sent (ctrl+s); the time is from the send to the dialog's "finished"
    (every record accounted for, per-record Delivery objects, tally and progress messages).

Throughput = acked records / elapsed; prints a Markdown table and the ratio console / plain.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import code_revision, load
from confluent_kafka import Producer

from kconsole.cluster.local import LocalCluster, LocalClusterSpec
from kconsole.cluster.produce import producer_config
from kconsole.cluster.settings import TEST_TOPIC
from kconsole.commands import Commands
from kconsole.config import Settings
from kconsole.observer import ClusterObserver
from kconsole.ui.app import make_app
from kconsole.ui.screens.produce import ProduceScreen

ZK_PORT = 25181
BASE_PORT = 25092


def plain_loop(settings: Settings, count: int, value: bytes) -> tuple[int, float]:
    conf = producer_config(settings, acks="all")
    producer = Producer(conf)
    acked = 0

    def on_delivery(err: object, _msg: object) -> None:
        nonlocal acked
        if err is None:
            acked += 1

    # Both sides start from a fresh producer and pay its connection set-up.
    t0 = time.monotonic()
    for _ in range(count):
        while True:
            try:
                producer.produce(TEST_TOPIC, key=b"bench-key", value=value, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    producer.flush(60)
    return acked, time.monotonic() - t0


async def console_send(settings: Settings, count: int, value: bytes) -> tuple[int, float]:
    app = make_app(ClusterObserver(settings), commands=Commands(None), settings=settings)
    app.animation_level = "none"
    async with app.run_test(size=(140, 40)) as pilot:
        screen = ProduceScreen(topic=TEST_TOPIC, key="bench-key")
        await app.push_screen(screen)
        screen.query_one("#count").value = str(count)  # type: ignore[attr-defined]
        screen.query_one("#value").text = value.decode()  # type: ignore[attr-defined]
        await pilot.pause()
        t0 = time.monotonic()
        screen.action_send()
        while screen.sending:
            await asyncio.sleep(0.005)
        elapsed = time.monotonic() - t0
        result = screen.last_result
        assert result is not None, "the send was refused"
        return len(result.acked), elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", type=Path, help="also write every run here (bench/suite.py)")
    args = ap.parse_args()
    value = b"x" * args.size
    rows: list[tuple[str, int, int, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        spec = LocalClusterSpec(brokers=3, zk_port=ZK_PORT, base_port=BASE_PORT)
        local = LocalCluster(Path(tmp), spec)
        try:
            local.up(timeout=240)
            settings = Settings(bootstrap=spec.bootstrap, zookeeper=spec.zk_connect, backend="none")
            plain_loop(settings, 1000, value)  # warm the brokers up (log segments, JIT)
            for run in range(1, args.runs + 1):
                acked, took = plain_loop(settings, args.count, value)
                rows.append(("plain", run, acked, took))
                print(f"plain   run {run}: {acked} acked in {took:.2f} s", file=sys.stderr)
                acked, took = asyncio.run(console_send(settings, args.count, value))
                rows.append(("console", run, acked, took))
                print(f"console run {run}: {acked} acked in {took:.2f} s", file=sys.stderr)
        finally:
            local.down(timeout=30)
    if args.json is not None:
        args.json.write_text(
            json.dumps([{"side": s, "run": r, "acked": a, "seconds": t} for s, r, a, t in rows])
        )
    cmd = "python bench/produce_throughput.py " + shlex.join(sys.argv[1:])
    print(f"`{cmd.strip()}` · code: {code_revision()} · load {load()} · "
          f"{args.count:,} records of {args.size} B, acks=all, one key")  # fmt: skip
    print()
    print("| side | run | acked | seconds | records/s |")
    print("|---|---:|---:|---:|---:|")
    for side, run, acked, took in rows:
        print(f"| {side} | {run} | {acked:,} | {took:.2f} | {acked / took:,.0f} |")
    med = {
        side: statistics.median(a / t for s, _r, a, t in rows if s == side)
        for side in ("plain", "console")
    }
    print()
    print(f"median records/s: plain {med['plain']:,.0f}, console {med['console']:,.0f}; "
          f"ratio console / plain = **{med['console'] / med['plain']:.2f}**")  # fmt: skip


if __name__ == "__main__":
    main()
