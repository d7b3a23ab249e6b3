"""One-shot describe: `kconsole describe --json` against Kafka's own tools from the same jars
(kafka-topics --describe, kafka-consumer-groups --describe --all-groups) and kcat's metadata
listing when kcat is installed, on the same cluster, side by side.

    .venv/bin/python bench/describe_tools.py [--runs 5] [--topics 20] [--groups 20] [--json out]

Starts its own throw-away 3-broker cluster on free ports (bench/_cluster.py) and always takes
it down again; creates `--topics` topics of 100 partitions (RF 3) and `--groups` consumer
groups with committed offsets, so there is something to describe. Each tool runs as a fresh
process (start-up included, as a user runs it); the runs alternate.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _cluster import temporary_cluster
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kconsole.cluster import jars


def timed(cmd: list[str], env: dict[str, str] | None = None) -> float:
    t0 = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    took = time.monotonic() - t0
    if done.returncode != 0:
        raise RuntimeError(f"{cmd[0]} … exited {done.returncode}: {done.stderr[-500:]}")
    return took


def populate(bootstrap: str, topics: int, groups: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = [f"bench-{i:02d}" for i in range(topics)]
    for fut in admin.create_topics([NewTopic(n, 100, 3) for n in names]).values():
        fut.result(120)
    prod = Producer({"bootstrap.servers": bootstrap})
    for n in names:
        for i in range(200):
            prod.produce(n, key=str(i).encode(), value=b"x")
    prod.flush(60)
    for g in range(groups):
        c = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": f"bench-group-{g:03d}",
             "auto.offset.reset": "earliest", "enable.auto.commit": False}
        )  # fmt: skip
        c.subscribe([names[g % len(names)]])
        got = 0
        deadline = time.monotonic() + 60
        while got < 20 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got += 1
        c.commit(asynchronous=False)
        c.close()


def run(runs: int, topics: int, groups: int) -> dict[str, list[float]]:
    kconsole = str(Path(sys.executable).with_name("kconsole"))
    out: dict[str, list[float]] = {}
    with temporary_cluster("kc-bench-describe-") as (cluster, _tmp):
        spec = cluster.spec
        populate(spec.bootstrap, topics, groups)
        lib = jars.ensure_kafka_jars(spec.kafka_version)
        java = [jars.java_executable(), "-Xmx256m", "-cp", f"{lib}/*"]
        tools = {
            "kconsole describe --json": [
                kconsole, "-b", spec.bootstrap, "-z", spec.zk_connect, "--backend", "none",
                "describe", "--json",
            ],
            "kafka-topics --describe": [
                *java, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server",
                spec.bootstrap, "--describe",
            ],
            "kafka-consumer-groups --describe --all-groups": [
                *java, "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
                "--bootstrap-server", spec.bootstrap, "--describe", "--all-groups",
            ],
        }  # fmt: skip
        if shutil.which("kcat"):
            tools["kcat -L"] = ["kcat", "-b", spec.bootstrap, "-L"]
        for _ in range(runs):
            for name, cmd in tools.items():
                out.setdefault(name, []).append(timed(cmd))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--topics", type=int, default=20)
    ap.add_argument("--groups", type=int, default=20)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    out = run(args.runs, args.topics, args.groups)
    if args.json:
        args.json.write_text(json.dumps(out))
    print("| tool | median s | min-max |")
    print("|---|---:|---|")
    for name, vals in out.items():
        print(f"| {name} | {statistics.median(vals):.2f} | {min(vals):.2f}-{max(vals):.2f} |")


if __name__ == "__main__":
    main()
