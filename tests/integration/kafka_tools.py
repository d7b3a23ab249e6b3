"""Kafka's own command-line tools (from the jars kconsole resolved), as the reference to compare
kconsole's view with."""

from __future__ import annotations

import re
import subprocess

from kconsole.cluster import jars
from kconsole.cluster.kraft.cluster import KRaftCluster
from kconsole.cluster.local.cluster import LocalCluster

# A tool's JVM lives a second or two: C1 only, the serial collector and no perf-data file
# cut its CPU by a quarter to a third (measured on ConfigCommand and TopicCommand against the
# test cluster: 1.5 -> 0.95 s and 1.1 -> 0.8 s), which every one of the many tool runs pays on
# a 2-core machine shared with the cluster's JVMs.
TOOL_JVM = ["-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:-UsePerfData"]

_PART = re.compile(
    r"Topic:\s*(\S+)\s+Partition:\s*(\d+)\s+Leader:\s*(-?\d+|none)\s+Replicas:\s*([\d,]*)\s+"
    r"Isr:\s*([\d,]*)"
)


def run_tool(
    cluster: LocalCluster | KRaftCluster, main_class: str, *args: str, timeout: float = 120
) -> str:
    lib = jars.ensure_kafka_jars(cluster.spec.kafka_version)
    proc = subprocess.run(
        [jars.java_executable(), *TOOL_JVM, "-cp", f"{lib}/*", main_class, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-2000:])
    return proc.stdout


def topic_describe(
    cluster: LocalCluster | KRaftCluster, topic: str
) -> dict[int, tuple[int, tuple, tuple]]:
    """kafka-topics --describe: partition -> (leader, replicas, isr)."""
    out = run_tool(
        cluster,
        "org.apache.kafka.tools.TopicCommand",
        "--bootstrap-server",
        cluster.spec.bootstrap,
        "--describe",
        "--topic",
        topic,
    )
    parts = {}
    for m in _PART.finditer(out):
        leader = -1 if m.group(3) == "none" else int(m.group(3))
        ids = lambda s: tuple(int(x) for x in s.split(",") if x)  # noqa: E731
        parts[int(m.group(2))] = (leader, ids(m.group(4)), ids(m.group(5)))
    assert parts, out
    return parts
