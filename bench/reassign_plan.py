"""The reassignment planner on synthetic clusters: time to propose, validate and diff, and how
many replicas the proposal moves against the minimum.

    .venv/bin/python bench/reassign_plan.py [--runs 5]

No cluster needed. Writes bench/results/reassign_plan.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import code_revision, load

from kconsole.models import Broker, ClusterSnapshot, Partition, Topic
from kconsole.reassign import diff, drain, generate, validate


def cluster(topics: int, per_topic: int, on: int, brokers: int) -> ClusterSnapshot:
    """`topics` x `per_topic` partitions, RF 3, placed round-robin on brokers 1..`on` of
    `brokers`."""
    parts = [
        Partition(f"t{t}", p, r[0], r, r)
        for t in range(topics)
        for p in range(per_topic)
        for r in [tuple(((p + t + k) % on) + 1 for k in range(3))]
    ]
    return ClusterSnapshot(
        taken_at=0.0,
        brokers=tuple(Broker(i, "h", 9000 + i) for i in range(1, brokers + 1)),
        partitions=tuple(parts),
        topics=tuple(Topic(f"t{t}", min_isr=2) for t in range(topics)),
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    rows = []
    for size in (1_000, 10_000):
        per_topic = 100
        topics = size // per_topic
        snap = cluster(topics, per_topic, on=6, brokers=9)
        names = [f"t{t}" for t in range(topics)]
        gen, check, drains = [], [], []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            plan = generate(snap, names, list(range(1, 10)))
            t1 = time.perf_counter()
            problems = validate(plan, snap)
            d = diff(plan, snap)
            t2 = time.perf_counter()
            drained = drain(snap, 1)
            t3 = time.perf_counter()
            gen.append(t1 - t0)
            check.append(t2 - t1)
            drains.append(t3 - t2)
        replicas = 3 * size
        # Balanced within one, the 6 old brokers keep q each, and r of them one more.
        q, r = divmod(replicas, 9)
        minimum = replicas - 6 * q - min(r, 6)
        rows.append(
            f"| {size:,} | {statistics.median(gen) * 1000:.0f} ({min(gen) * 1000:.0f}-"
            f"{max(gen) * 1000:.0f}) | {statistics.median(check) * 1000:.0f} | "
            f"{statistics.median(drains) * 1000:.0f} | {d.moved_replicas:,} | {minimum:,} | "
            f"{len(problems)} | {len(drained.moves):,} |"
        )
    out = Path(__file__).parent / "results" / "reassign_plan.md"
    text = "\n".join(
        [
            f"Command: `.venv/bin/python bench/reassign_plan.py --runs {args.runs}` "
            f"({code_revision()}, load {load()}; no cluster needed).",
            "",
            "RF-3 partitions on brokers 1-6 of 9, proposed onto all 9 (`generate`), then "
            "`validate` + `diff`, and `drain` of broker 1. Times in ms, median (min-max) of "
            f"{args.runs} runs.",
            "",
            "| partitions | generate ms | validate + diff ms | drain ms | replicas moved "
            "| minimum | problems | drain moves |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|",
            *rows,
            "",
        ]
    )
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
