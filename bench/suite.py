"""Every benchmark in one command, writing bench/RESULTS.md (and charts beside it).

    make bench                                  # = .venv/bin/python bench/suite.py
    .venv/bin/python bench/suite.py --smoke --out /tmp/r.md   # small sizes, no cluster

Sections (each is also a script of its own in bench/):
  scale      synthetic 1k / 10k / 50k partitions: build, diff, apply, longest frame, RSS
  idle       the UI's idle cost, headless, observer at the real cadence
  terminal   real terminal (tmux) on a real cluster: start-up, idle CPU, change -> screen
             (controller, broker down, leader, ISR)
  terminal-scale  the same with 2,000 more partitions and 200 consumer groups
  terminal-scale-nice  the same again with the brokers' JVMs at nice 10: how much of change ->
             screen is the brokers taking the console's CPU on this small machine (no targets)
  failover   graceful stop of a partition leader: ZooKeeper's time and the screen's
  network    a partition leader isolated by a network fault: Kafka's time and the screen's
  secured-failover  the same through a SASL/SCRAM and an mTLS cluster (5 stops each)
  compose-failover  the same on the docker compose cluster (docker stop / docker kill), plus
             `compose up -d` to a healthy cluster and the console's and containers' idle cost
  kraft-failover  a KRaft cluster of its own (3 controllers + 3 brokers): idle CPU, RSS, and
             change -> screen minus Kafka's own time for a killed active controller and a
             paused broker (fenced, leaders moved, ISR shrunk)
  kraft-scale  the same with 2,000 more partitions
  kraft-10k  rates on, 10,000 more partitions (RF 2): first frame, idle, leader change, RSS,
             ListOffsets requests per read
  produce    bulk produce, the console's path vs a plain confluent-kafka loop
  produce-latency  one record: the dialog's later sends and the CLI vs a plain warm producer
  tail       the tail view from the beginning of 201,000 records: counts, catch-up, event-loop lag
  describe   `kconsole describe --json` vs kafka-topics / kafka-consumer-groups (and kcat)
  start      `kconsole cluster up` warm (and cold with --cold)
  spark      the keyed-counts job on local[2] (about 6 minutes; --no-spark leaves it out)

Every figure is the median of several runs with its spread; comparisons are ratios of runs
made side by side in the same minute. --smoke runs scale and idle at small sizes and checks the
harness end to end (the test suite does this); its numbers mean nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from _common import code_revision, load  # noqa: E402

NOT_MET = "NOT-MET.md"  # beside RESULTS.md: the analysis of the missed figures
BROKERS_NICE = 10  # the terminal-scale-nice section's niceness for the brokers' JVMs


@dataclass
class Figure:
    """One measured figure: its runs, and the target it is held to (if any)."""

    name: str
    unit: str
    values: list[float]
    target: float | None = None
    higher_is_better: bool = False
    stat: str = "median"  # or "max" (a p99 of a handful of runs is their max)
    note: str = ""

    @property
    def value(self) -> float:
        return max(self.values) if self.stat == "max" else statistics.median(self.values)

    def verdict(self) -> str:
        if self.target is None:
            return ""
        ok = self.value >= self.target if self.higher_is_better else self.value <= self.target
        if ok:
            return "met"
        off = self.value / self.target if self.target else float("inf")
        return (
            f"**missed** ({off:.1f}x)" if not self.higher_is_better else f"**missed** ({off:.2f})"
        )


@dataclass
class Section:
    title: str
    figures: list[Figure] = field(default_factory=list)
    text: str = ""  # Markdown: a script's own report, tables, chart links
    error: str = ""


def fmt(v: float) -> str:
    if v != v:  # nan
        return "?"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}"


# -- sections ------------------------------------------------------------------------------------
def section_scale(smoke: bool, charts: Path) -> Section:
    import scale

    sizes = [100, 200] if smoke else [1000, 10000, 50000]
    runs = 1 if smoke else 3
    results = scale.run(sizes, runs)
    s = Section("Scale: synthetic snapshots (no cluster)")
    keys = list(results[sizes[0]][0])
    lines = ["| figure | " + " | ".join(f"{n:,} partitions" for n in sizes) + " |"]
    lines.append("|---|" + "---:|" * len(sizes))
    for key in keys:
        cells = []
        for n in sizes:
            vals = [r[key] for r in results[n]]
            cells.append(f"{fmt(statistics.median(vals))} ({fmt(min(vals))}-{fmt(max(vals))})")
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    s.text = (
        f"Median (min-max) of {runs} runs per size; each run a fresh app, headless 160x48.\n\n"
        + "\n".join(lines)
    )
    at = 10000 if 10000 in results else sizes[-1]
    r = results[at]
    label = f"{at:,} partitions"
    for key, target in (
        ("apply: unchanged poll (ms CPU)", 100.0),
        ("apply: one leader moved (ms CPU)", 100.0),
        ("apply: 1/3 of leaders moved (ms CPU)", 100.0),
        ("longest frame: one leader moved (ms)", 100.0),
        ("longest frame: 1/3 of leaders moved (ms)", 100.0),
        ("key: tab to the next pane (ms CPU)", None),
        ("longest frame: tab (ms)", 100.0),
        ("apply: first snapshot (ms CPU)", None),
        ("RSS after (MiB)", 250.0),
    ):
        s.figures.append(Figure(f"{label}: {key}", "", [x[key] for x in r], target))
    chart = plot_scale(results, charts / "scale.png")
    if chart:
        s.text += f"\n\n![scale curve]({chart})"
    return s


def plot_scale(results: dict[int, list[dict[str, float]]], path: Path) -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return ""
    sizes = sorted(results)
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    for key in results[sizes[0]][0]:
        if not key.startswith("apply:"):
            continue
        ys = [statistics.median(r[key] for r in results[n]) for n in sizes]
        ax.plot(sizes, ys, marker="o", label=key.removeprefix("apply: ").removesuffix(" (ms CPU)"))
    ax.axhline(100, color="grey", linestyle="--", linewidth=0.8, label="target 100 ms")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("partitions")
    ax.set_ylabel("main-thread CPU until idle (ms)")
    ax.set_title("Applying a snapshot: cost by size and by what changed")
    ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return os.path.relpath(path, ARGS_OUT_DIR[0])


def section_idle(smoke: bool, charts: Path) -> Section:
    import idle

    vals = idle.run(2.0 if smoke else 20.0, 1 if smoke else 3)
    s = Section("Idle, headless (observer at the real cadence, nothing changing)")
    s.figures.append(Figure("idle: UI main thread, headless", "% of a core", vals, 2.0))
    s.text = "Runs: " + ", ".join(f"{v:.2f} %" for v in vals)
    return s


def script(name: str, *args: str, timeout: float = 3600) -> tuple[str, Path]:
    """Run bench/<name> with --json into a temp file; its stdout (a Markdown report) and the
    JSON path."""
    out = Path(tempfile.mkdtemp(prefix="kc-bench-")) / f"{name}.json"
    cmd = [sys.executable, str(HERE / name), *args]
    if "--json" not in args and name not in ("cluster_start.py", "jobs_keyed_counts.py"):
        cmd += ["--json", str(out)]
    print(f"[bench] {shlex.join(cmd[1:])}", file=sys.stderr, flush=True)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"{name} exited {done.returncode}: {done.stderr.strip()[-800:]}")
    # The report names no path of this machine: the repo root and the temp dir are elided.
    text = done.stdout.replace(str(out.parent), "<tmp>").replace(f"{ROOT}/", "")
    text = re.sub(re.escape(tempfile.gettempdir()) + r"/[^\s/`]+", "<tmp>", text)  # --out dirs
    return text, out


LATENCIES = (  # terminal.py's JSON key, the figure's name
    ("controller_ms", "controller change -> screen (znode ctime -> pane)"),
    ("broker_down_ms", "broker down -> screen (znode deleted -> brokers pane)"),
    ("leader_ms", "leader change -> screen (state znode mtime -> row)"),
    ("isr_ms", "ISR shrink -> screen (state znode mtime -> row)"),
)


def terminal_text(data: dict[str, Any]) -> str:
    """The figures' runs, then every broker stop: when ZooKeeper and the screen showed each
    change (ms after the stop call; the broker down from ZooKeeper's closeSession)."""
    info = dict(data.get("info", {}))
    stops = info.pop("runs", [])
    runs = {k: [round(x, 3) for x in v] for k, v in data.items() if isinstance(v, list)}
    lines = [
        "Runs (leader and ISR: one value per changed test-topic row, several per broker stop): "
        + json.dumps(runs),
        "",
        "Set-up: " + json.dumps(info),
        "",
        "| stop | broker | stop call returned | change | ZooKeeper | screen | change -> screen |",
        "|---|---:|---:|---|---:|---:|---:|",
    ]
    for r in stops:
        for what, zk, screen in r.get("changes", []):
            lines.append(
                f"| {r['run']} | {r['stopped']} | {r['returned_ms']} ms | {what} | {zk} ms | "
                f"{screen} ms | {screen - zk} ms |"
            )
    return "\n".join(lines)


def section_terminal(smoke: bool, charts: Path) -> Section:
    _out, path = script("terminal.py", "--runs", "5", "--idle", "30")
    data = json.loads(path.read_text())
    s = Section("Real terminal (tmux, 160x48) on a real 3-broker cluster")
    s.figures += [
        Figure("start-up: launch -> first complete frame", "s", data["startup_s"], 1.5),
        Figure("idle: console process, real terminal", "% of a core", data["idle_cpu_pct"], 2.0),
    ]
    for key, name in LATENCIES:
        if data.get(key):
            s.figures += [
                Figure(name, "ms", data[key], 100.0),
                Figure(f"{name}, p99 (max of runs)", "ms", data[key], 300.0, stat="max"),
            ]
    s.figures += busy_figures(data, "")
    s.text = terminal_text(data)
    plot_latency(data, 100.0, charts / "terminal_latency.png", s)
    return s


def section_terminal_scale(smoke: bool, charts: Path) -> Section:
    return terminal_scale(charts, nice=0)


def section_terminal_scale_nice(smoke: bool, charts: Path) -> Section:
    return terminal_scale(charts, nice=BROKERS_NICE)


def terminal_scale(charts: Path, nice: int) -> Section:
    """The terminal section on 2,014 partitions and 200 groups. With `nice`, the brokers' JVMs
    run at that niceness: the same measurement with the console's CPU not taken by the brokers
    (as where they run on other machines); its figures are held to no target."""
    topics, partitions, groups = 20, 100, 200
    _out, path = script(
        "terminal.py", "--runs", "5", "--idle", "15" if nice else "30", "--topics", str(topics),
        "--partitions", str(partitions), "--groups", str(groups), "--nice-brokers", str(nice),
    )  # fmt: skip
    data = json.loads(path.read_text())
    total = data.get("info", {}).get("partitions", "?")
    s = Section(
        f"Real terminal (tmux, 160x48) on a 3-broker cluster with {total} partitions "
        f"({topics} x {partitions} + test-topic + offsets, RF 3) and {groups} consumer groups"
        + (f", the brokers at nice {nice}" if nice else "")
    )
    label = f"{topics * partitions // 1000}k partitions, {groups} groups" + (
        f", brokers at nice {nice}" if nice else ""
    )
    target = None if nice else 200.0
    s.figures += [
        Figure(f"{label}: start-up -> first complete frame", "s", data["startup_s"]),
        Figure(f"{label}: start-up -> all groups listed", "s", data["startup_groups_s"]),
        Figure(
            f"{label}: idle, console process", "% of a core", data["idle_cpu_pct"],
            None if nice else 3.0,
        ),
    ]  # fmt: skip
    for key, name in LATENCIES:
        if data.get(key):
            s.figures += [
                Figure(f"{label}: {name}", "ms", data[key], target),
                Figure(f"{label}: {name}, p99 (max of runs)", "ms", data[key], stat="max"),
            ]
    s.figures += busy_figures(data, f"{label}: ")
    if data.get("zk_reads_kconsole_ms"):
        s.figures += [
            Figure(
                f"{label}: re-read every partition state from ZooKeeper (kazoo's own handler)",
                "ms", data["zk_reads_kazoo_ms"],
            ),
            Figure(
                f"{label}: re-read every partition state from ZooKeeper (kconsole's handler)",
                "ms", data["zk_reads_kconsole_ms"],
            ),
        ]  # fmt: skip
    if data.get("zk_reads_reader_ms"):
        s.figures.append(
            Figure(
                f"{label}: re-read every partition state through the console's reader "
                "(its window of reads in flight, JSON decoded)",
                "ms", data["zk_reads_reader_ms"],
            )
        )  # fmt: skip
    if data.get("zk_reads_reader_all_ms"):
        s.figures.append(
            Figure(
                f"{label}: re-read every partition state through the console's reader "
                "(every read in flight at once, JSON decoded)",
                "ms", data["zk_reads_reader_all_ms"],
            )
        )  # fmt: skip
    s.text = terminal_text(data)
    chart = f"terminal_scale_nice{nice}_latency.png" if nice else "terminal_scale_latency.png"
    plot_latency(data, 200.0, charts / chart, s)
    return s


def busy_figures(data: dict[str, list[float]], label: str) -> list[Figure]:
    """How busy the machine was in the 2 s after each stop (terminal.py BUSY_S): the cluster's
    own processes and the console, in % of one core (this machine has os.cpu_count() cores)."""
    out = []
    for key, name in (
        ("failover_cluster_cpu_pct", "2 s after a stop: ZooKeeper + brokers"),
        ("failover_console_cpu_pct", "2 s after a stop: console"),
    ):
        if data.get(key):
            out.append(
                Figure(f"{label}{name} (of {os.cpu_count()} cores)", "% of a core", data[key])
            )
    return out


def plot_latency(data: dict[str, list[float]], target: float, path: Path, s: Section) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    series = [(name.split(" (")[0], data[key]) for key, name in LATENCIES if data.get(key)]
    if not series:
        return
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.7 * len(series)), dpi=110)
    # `vert` is deprecated from Matplotlib 3.11 on; `orientation` is new in 3.10.
    sideways = (
        {"orientation": "horizontal"}
        if tuple(int(x) for x in matplotlib.__version__.split(".")[:2]) >= (3, 10)
        else {"vert": False}
    )
    ax.boxplot([v for _, v in series], widths=0.5, **sideways)
    for i, (_, values) in enumerate(series, start=1):
        ax.scatter(values, [i] * len(values), color="C1", zorder=3, s=12)
    ax.axvline(target, color="grey", linestyle="--", linewidth=0.8, label=f"target {target:.0f}")
    ax.set_yticks(range(1, len(series) + 1), [name for name, _ in series], fontsize=8)
    ax.set_xlabel("ms from ZooKeeper's time of the change to the screen showing it")
    ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    s.text += f"\n\n![change -> screen]({os.path.relpath(path, ARGS_OUT_DIR[0])})"


def leader_stop_figures(runs: list[dict[str, Any]], label: str = "") -> list[Figure]:
    """console_failover.py's stop runs: Kafka's own time, the screen's, and kconsole's share
    (screen - ZooKeeper, held to 100 ms)."""
    zk = [r["zk_s"] * 1000 for r in runs]
    screen = [r["screen_s"] * 1000 for r in runs]
    own = [b - a for a, b in zip(zk, screen, strict=True)]
    return [
        Figure(f"{label}leader stop: Kafka's own time (stop -> ZooKeeper names new leaders)",
               "ms", zk),
        Figure(f"{label}leader stop: stop -> new leaders on screen", "ms", screen),
        Figure(f"{label}leader stop: kconsole's share (screen - ZooKeeper)", "ms", own, 100.0),
    ]  # fmt: skip


def section_failover(smoke: bool, charts: Path) -> Section:
    out, path = script("console_failover.py", "--runs", "5", "--kill-runs", "0")
    s = Section("Failover observed: graceful stop of a partition leader (headless console)")
    s.figures += leader_stop_figures(json.loads(path.read_text()))
    s.text = out
    return s


def section_network(smoke: bool, charts: Path) -> Section:
    """A network fault (isolate, iptables) on a partition leader: fault -> new leaders on the
    screen, Kafka's own time (its session expiry, then the election) subtracted."""
    out, path = script(
        "console_failover.py", "--runs", "0", "--kill-runs", "0", "--isolate-runs", "5"
    )
    runs = json.loads(path.read_text())
    zk = [r["zk_s"] * 1000 for r in runs]
    screen = [r["screen_s"] * 1000 for r in runs]
    own = [b - a for a, b in zip(zk, screen, strict=True)]
    s = Section("Network fault observed: a partition leader isolated (iptables, headless console)")
    s.figures += [
        Figure("isolate: Kafka's own time (fault -> ZooKeeper names new leaders)", "ms", zk),
        Figure("isolate: fault -> new leaders on screen", "ms", screen),
        Figure("isolate: kconsole's share (screen - ZooKeeper)", "ms", own, 250.0),
    ]
    s.text = out
    return s


SECURED = (("sasl-scram", "SASL/SCRAM"), ("ssl-mtls", "mTLS"))  # console_failover.py --security


def section_secured_failover(smoke: bool, charts: Path) -> Section:
    s = Section(
        "Failover observed through a secured cluster: graceful stop of a partition leader, "
        "SASL/SCRAM and mTLS (headless console)"
    )
    parts = [
        "Method: the failover section's measurement (bench/console_failover.py, the same code) "
        "on a local 3-broker ZooKeeper-mode cluster started secured, once per mode, 5 leader "
        "stops (SIGTERM, controlled shutdown) each: `--security sasl-scram` (SASL_PLAINTEXT "
        "listeners, SCRAM-SHA-512, the ACL authorizer) and `--security ssl-mtls` (TLS "
        "listeners, hostname verified, a client certificate required). The console's settings "
        "get the cluster's client settings as `kconsole` gives them (with_local_security), so "
        "the observer's Admin API metadata polls and group reads go through SASL or TLS; the "
        "bench's own preferred-leader elections use the cluster's client config. ZooKeeper "
        "(the brokers' and the console's watches, and Kafka's own time, read from a kazoo "
        "watch of the partition state znodes) is plaintext in both modes. kconsole's share is "
        "screen - ZooKeeper, held to 100 ms as in the failover section."
    ]
    for mode, name in SECURED:
        out, path = script(
            "console_failover.py", "--security", mode, "--runs", "5", "--kill-runs", "0"
        )
        s.figures += leader_stop_figures(json.loads(path.read_text()), f"{name}, ")
        parts.append(f"### {name} (`--security {mode}`)\n\n{out.strip()}")
    s.text = "\n\n".join(parts)
    return s


def section_compose_failover(smoke: bool, charts: Path) -> Section:
    out, path = script(
        "console_failover.py", "--compose", "--runs", "5", "--kill-runs", "3",
        "--idle", "30", "--idle-runs", "3",
    )  # fmt: skip
    data = json.loads(path.read_text())
    s = Section(
        "Failover observed on the docker compose cluster: docker stop / docker kill of a "
        "partition leader (headless console)"
    )
    for action, what in (("stop", "docker stop"), ("kill", "docker kill")):
        runs = [r for r in data["runs"] if r["action"] == action]
        if not runs:
            continue
        zk = [r["zk_s"] * 1000 for r in runs]
        screen = [r["screen_s"] * 1000 for r in runs]
        own = [b - a for a, b in zip(zk, screen, strict=True)]
        s.figures += [
            Figure(f"compose, leader {what}: Kafka's own time ({action} -> ZooKeeper names "
                   "new leaders)", "ms", zk),
            Figure(f"compose, leader {what}: {action} -> new leaders on screen", "ms", screen),
            Figure(f"compose, leader {what}: kconsole's share (screen - ZooKeeper)", "ms", own,
                   100.0 if action == "stop" else None),
        ]  # fmt: skip
    s.figures.append(
        Figure("compose: `up -d` -> brokers healthy, test-topic created, ISR full", "s",
               [data["up_s"]])
    )  # fmt: skip
    idle = data.get("idle")
    if idle:
        cores = f"(of {os.cpu_count()} cores)"
        s.figures += [
            Figure(f"compose: idle, console process (all threads) {cores}", "% of a core",
                   idle["console_cpu_pct"]),
            Figure("compose: console RSS", "MiB", [idle["console_rss_mib"]]),
            Figure(f"compose: idle, all containers (engine stats) {cores}", "% of a core",
                   [sum(c["cpu_pct"] for c in idle["containers"].values())]),
            Figure("compose: all containers' memory (usage - inactive file)", "MiB",
                   [sum(c["mem_mib"] for c in idle["containers"].values())]),
        ]  # fmt: skip
    s.text = (
        "Method: bench/console_failover.py --compose brings compose/docker-compose.yml up as a "
        "project of its own (bench/_compose.py: free host ports in 25000-25999, `down -v` "
        "always, a reaper process if the script dies) and times `up -d` until every broker "
        "container is healthy, the one-shot topic creator has exited 0 and ZooKeeper has every "
        "broker registered and test-topic's ISR full. The real console then runs headless on "
        "the live ClusterObserver, its broker states read from the engine as against any "
        "compose project; each run stops (docker stop: SIGTERM, controlled shutdown) or kills "
        "(docker kill: SIGKILL) the leader of test-topic/0 through kconsole's "
        "DockerBrokerControl and times, from the call, ZooKeeper naming new leaders (a kazoo "
        "watch of our own), the observer, the app's snapshot and the partitions table's leader "
        "cells (polled every 10 ms); the broker is started again (docker start, after a kill "
        "once its ZooKeeper session expired; done when it registered), ISR and preferred "
        "leaders restored and the screen settled before the next run. The per-run logic is the "
        "local failover section's, shared. Then, nothing changing, the console process's CPU "
        "(every thread) in three 10 s windows, and each container's CPU and memory over the "
        "same time from the engine's stats API.\n\n" + out
    )
    return s


KRAFT_CHANGES = (  # kraft_failover.py's change names, the figure's name
    ("quorum leader", "quorum leader change (kill the active controller) -> brokers pane"),
    ("broker fenced", "broker fenced (pause a broker) -> brokers pane"),
    ("leader change", "leader change (paused leader fenced) -> partitions row"),
    ("ISR shrink", "ISR shrink (paused broker fenced) -> partitions row"),
)


def kraft_section(title: str, label: str, args: list[str], p50: float, p99: float | None,
                  idle_target: float, rss_target: float = 250.0,
                  first_frame: float | None = None) -> Section:  # fmt: skip
    """A kraft_failover.py run: per change, the console's share (screen - what a client asking
    every 20 ms saw), its median against `p50` and its max against `p99`; idle CPU and RSS."""
    out, path = script("kraft_failover.py", *args)
    data = json.loads(path.read_text())
    s = Section(title)
    s.figures += [
        Figure(f"{label}: idle, console process (all threads)", "% of a core",
               data["idle_cpu_pct"], idle_target),
        Figure(f"{label}: RSS", "MiB", data["rss_mib"], rss_target, stat="max"),
    ]  # fmt: skip
    if data.get("first_frame_s") is not None:
        s.figures.append(Figure(f"{label}: start -> first complete frame (with rates)", "s",
                                [data["first_frame_s"]], first_frame))  # fmt: skip
    reads = [r for window in data.get("requests", []) for r in window if r[0] == "ListOffsets"]
    if reads:
        # One ListOffsets per leader in each read, whatever the partitions: requests per read.
        s.figures.append(Figure(f"{label}: ListOffsets requests per offsets read", "requests",
                                [float(r[1]) for r in reads], 3.0, stat="max"))  # fmt: skip
    for what, name in KRAFT_CHANGES:
        changes = [c for r in data["runs"] for c in r["changes"] if c["what"] == what]
        if not changes:
            continue
        kafka = [c["kafka_ms"] for c in changes]
        own = [c["screen_ms"] - c["kafka_ms"] for c in changes]
        s.figures += [
            Figure(f"{label}: {what}: Kafka's own time (20 ms poller)", "ms", kafka),
            Figure(f"{label}: {name}, screen - Kafka", "ms", own, p50),
            Figure(f"{label}: {name}, screen - Kafka, p99 (max of runs)", "ms", own, p99,
                   stat="max"),
        ]  # fmt: skip
    s.text = out
    return s


def section_kraft_failover(smoke: bool, charts: Path) -> Section:
    return kraft_section(
        "KRaft: change -> screen on a 3-controller + 3-broker cluster (headless console)",
        "KRaft", ["--kills", "5", "--pauses", "5", "--idle", "30", "--idle-runs", "3"],
        250.0, 1000.0, 3.0,
    )  # fmt: skip


def section_kraft_scale(smoke: bool, charts: Path) -> Section:
    return kraft_section(
        "KRaft: change -> screen with 2,000 more partitions (20 x 100, RF 3)",
        "KRaft 2k partitions",
        ["--kills", "3", "--pauses", "3", "--idle", "30", "--idle-runs", "2", "--topics", "20",
         "--partitions", "100"],
        1000.0, None, 5.0,
    )  # fmt: skip


def section_kraft_10k(smoke: bool, charts: Path) -> Section:
    # RF 2: three brokers on this 2-core, 24 GB machine carry 20,000 replicas (RF 3 would be
    # 30,000 logs, 10,000 a broker); see bench/RESULTS.md. Brokers get 1 GiB of heap: with
    # kconsole's 512 MiB two of three such clusters ran out of it within minutes.
    return kraft_section(
        "KRaft: rates on, 10,000 more partitions (100 x 100, RF 2)",
        "KRaft 10k partitions",
        ["--kills", "3", "--pauses", "3", "--idle", "30", "--idle-runs", "2", "--topics", "100",
         "--partitions", "100", "--rf", "2", "--timeout", "180",
         "--broker-heap", "-Xmx1g -Xms1g"],
        1000.0, None, 5.0, 300.0, None,
    )  # fmt: skip


def section_produce(smoke: bool, charts: Path) -> Section:
    count = 200_000
    out, path = script("produce_throughput.py", "--count", str(count), "--runs", "3")
    rows = json.loads(path.read_text())
    s = Section(
        "Bulk produce: the console's dialog and `kconsole produce` vs a plain confluent-kafka "
        "loop and Kafka's producer perf tool"
    )
    rate = {
        (r["acks"], r["size"], r["side"], r["run"]): r["acked"] / r["seconds"]
        for r in rows
        if r["seconds"] > 0
    }
    # The dialog's own send path, timed as the plain loop is (first produce to the end of the
    # flush: the plain loop also reads the topic's limits and makes its producer untimed).
    rate.update({
        (r["acks"], r["size"], "console-path", r["run"]): r["acked"] / r["produce_seconds"]
        for r in rows
        if r["side"] == "console" and r.get("produce_seconds")
    })  # fmt: skip
    cells = list(dict.fromkeys((r["acks"], r["size"]) for r in rows))
    runs = sorted({r["run"] for r in rows})
    names = {"console": "console dialog, send to finished (topic check, audit)",
             "console-path": "console dialog's send path", "cli": "CLI", "plain": "plain loop",
             "perf": "perf tool"}  # fmt: skip
    # Ratios of rounds measured side by side (same cell, same run). Targets: the send paths
    # against the plain loop, timed alike; the rest is for information.
    pairs = (("console-path", "plain", 0.9), ("cli", "plain", 0.9), ("console", "plain", None),
             ("console-path", "perf", None), ("cli", "perf", None))  # fmt: skip
    for acks, size in cells:
        for num, den, target in pairs:
            vals = [
                rate[(acks, size, num, k)] / rate[(acks, size, den, k)]
                for k in runs
                if (acks, size, num, k) in rate and (acks, size, den, k) in rate
            ]
            if vals:
                s.figures.append(
                    Figure(
                        f"produce: {names[num]} / {names[den]}, {count // 1000}k x {size:,} B, "
                        f"acks={acks}",
                        "ratio",
                        vals,
                        target,
                        higher_is_better=True,
                    )
                )
    s.text = out
    return s


def section_produce_latency(smoke: bool, charts: Path) -> Section:
    out, path = script("produce_latency.py", "--sends", "10", "--cli-sends", "3", "--rounds", "3")
    rows = json.loads(path.read_text())
    s = Section(
        "Single-record produce latency: the console's dialog and `kconsole produce` beside a "
        "plain warm confluent-kafka producer"
    )

    def values(side: str, key: str) -> list[float]:
        return [r[key] for r in rows if r["side"] == side]

    plain = statistics.median(values("plain-warm", "wall_ms"))
    figures = (
        ("plain-warm", "wall_ms", "plain warm producer, produce -> flush", None),
        ("dialog", "wall_ms", "console dialog, later sends, send -> finished", 2 * plain + 20),
        ("dialog", "latency_ms", "console dialog, later sends, record latency", None),
        ("dialog-first", "latency_ms", "console dialog, first send, record latency", None),
        ("cli", "latency_ms", "kconsole produce, record latency", None),
        ("cli", "wall_ms", "kconsole produce, process wall time", None),
        ("plain-new", "latency_ms", "plain producer new per send, record latency", None),
    )
    for side, key, name, target in figures:
        if vals := values(side, key):
            note = "target: 2 x the plain warm producer's + 20 ms" if target else ""
            s.figures.append(Figure(f"produce one record: {name}", "ms", vals, target, note=note))
    s.text = out
    return s


def section_tail(smoke: bool, charts: Path) -> Section:
    out, path = script("tail_catchup.py", "--runs", "3")
    rows = json.loads(path.read_text())
    s = Section("Tail from the beginning of 201,000 records: the console's tail view catching up")
    for key, name in (
        ("first_count_s", "first count and rate on screen"),
        ("caught_up_s", "caught up, every record counted"),
        ("meanwhile_to_row_s", "record written meanwhile: acked -> its row"),
        ("loop_lag_max_s", "longest event-loop lag"),
    ):
        vals = [r[key] for r in rows if key in r]
        if len(vals) < len(rows):
            raise RuntimeError(f"{name}: not reached in {len(rows) - len(vals)} run(s)")
        s.figures.append(Figure(f"tail 201k: {name}", "s", vals, None))
    s.text = out
    return s


def section_describe(smoke: bool, charts: Path) -> Section:
    out, path = script("describe_tools.py", "--runs", "5")
    data = json.loads(path.read_text())
    s = Section("One-shot describe: kconsole vs Kafka's own tools (same jars, same cluster)")
    ours = data["kconsole describe --json"]
    for name, vals in data.items():
        s.figures.append(Figure(f"describe: {name}", "s", vals))
    topics = data["kafka-topics --describe"]
    groups = data["kafka-consumer-groups --describe --all-groups"]
    both = [a + b for a, b in zip(topics, groups, strict=True)]
    s.figures.append(
        Figure("describe: kconsole / (kafka-topics + kafka-consumer-groups)", "ratio",
               [a / b for a, b in zip(ours, both, strict=True)])
    )  # fmt: skip
    if "kcat -L" in data:
        s.figures.append(
            Figure("describe: kconsole / kcat -L", "ratio",
                   [a / b for a, b in zip(ours, data["kcat -L"], strict=True)])
        )  # fmt: skip
    s.text = out + (
        "" if "kcat -L" in data else "\nkcat is not installed on this machine: not compared."
    )
    return s


def section_start(smoke: bool, charts: Path) -> Section:
    out, _ = script("cluster_start.py", "--runs", "3", *(["--cold"] if ARGS_COLD[0] else []))
    return Section("`kconsole cluster up` / `down`", text=out)


def section_spark(smoke: bool, charts: Path) -> Section:
    out, _ = script(
        "jobs_keyed_counts.py", "--duration", "60", "--triggers", "1", "--backlog", "200000",
        "--out", str(Path(tempfile.mkdtemp()) / "jobs.md"),
    )  # fmt: skip
    return Section("Spark keyed-counts job (local[2])", text=out)


SECTIONS: dict[str, Callable[[bool, Path], Section]] = {
    "scale": section_scale,
    "idle": section_idle,
    "terminal": section_terminal,
    "terminal-scale": section_terminal_scale,
    "terminal-scale-nice": section_terminal_scale_nice,
    "failover": section_failover,
    "network": section_network,
    "secured-failover": section_secured_failover,
    "compose-failover": section_compose_failover,
    "kraft-failover": section_kraft_failover,
    "kraft-scale": section_kraft_scale,
    "kraft-10k": section_kraft_10k,
    "produce": section_produce,
    "produce-latency": section_produce_latency,
    "tail": section_tail,
    "describe": section_describe,
    "start": section_start,
    "spark": section_spark,
}
SMOKE = ("scale", "idle")
ARGS_OUT_DIR: list[Path] = [ROOT / "bench"]
ARGS_COLD: list[bool] = [False]


# -- the report -----------------------------------------------------------------------------------
def machine() -> str:
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        java = subprocess.run(
            ["java", "-version"], capture_output=True, text=True, timeout=20
        ).stderr.splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        java = "?"
    mem = psutil.virtual_memory().total / 2**30
    return (
        f"{os.cpu_count()} cores ({model}), {mem:.0f} GiB; {platform.system()} "
        f"{platform.release()}; Python {platform.python_version()}; {java}"
    )


def report(
    sections: list[Section], argv: list[str], started: str, load0: str, out_dir: Path = HERE
) -> str:
    out = [
        "# kconsole benchmarks",
        "",
        f"- command: `{shlex.join(['python', 'bench/suite.py', *argv])}` (`make bench` runs it)",
        f"- date: {started} UTC; code: {code_revision()}",
        f"- machine: {machine()}",
        f"- load average (1 min): {load0} at start, {load()} at end; the Kafka brokers and "
        "ZooKeeper of the cluster sections run on the same machine",
        "",
        "## Targets",
        "",
        "| figure | median (min-max) | runs | target | |",
        "|---|---:|---:|---:|---|",
    ]
    for s in sections:
        for f in s.figures:
            stat = "max " if f.stat == "max" else ""
            shown = f"{stat}{fmt(f.value)} ({fmt(min(f.values))}-{fmt(max(f.values))}) {f.unit}"
            target = ""
            if f.target is not None:
                target = f"{'≥' if f.higher_is_better else '≤'} {fmt(f.target)}"
            out.append(f"| {f.name} | {shown} | {len(f.values)} | {target} | {f.verdict()} |")
        if s.error:
            out.append(f"| {s.title} | not measured: {s.error} | | | |")
    missed = sum(f.verdict().startswith("**missed") for s in sections for f in s.figures)
    if missed and (HERE / NOT_MET).exists():
        link = os.path.relpath(HERE / NOT_MET, out_dir)
        out += [
            "",
            f"Missed: {missed}. What the profiles show for them and why they are not met on "
            f"this machine: [{NOT_MET}]({link}) (written by hand from the profiles, with its "
            "own date, code and commands; compare them with the ones above).",
        ]
    for s in sections:
        out += ["", f"## {s.title}", ""]
        out.append(s.text.strip() if not s.error else f"Not measured: {s.error}")
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="small sizes, no cluster: the harness")
    ap.add_argument("--only", help=f"comma-separated sections of {','.join(SECTIONS)}")
    ap.add_argument("--no-spark", action="store_true", help="leave the Spark section out")
    ap.add_argument("--cold", action="store_true", help="also a cold `cluster up`")
    ap.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    args = ap.parse_args()
    out = args.out.resolve()
    ARGS_OUT_DIR[0] = out.parent
    ARGS_COLD[0] = args.cold
    charts = out.parent / ("charts" if out.parent != HERE else "results/charts")
    names = (
        args.only.split(",")
        if args.only
        else list(SMOKE)
        if args.smoke
        else [n for n in SECTIONS if n != "spark" or not args.no_spark]
    )
    unknown = [n for n in names if n not in SECTIONS]
    if unknown:
        raise SystemExit(f"unknown section(s): {', '.join(unknown)}")
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    load0 = load()
    sections = []
    for name in names:
        t0 = time.monotonic()
        print(f"[bench] {name} …", file=sys.stderr, flush=True)
        try:
            sections.append(SECTIONS[name](args.smoke, charts))
        except Exception as exc:  # one broken section must not lose the others' results
            why = " ".join(f"{type(exc).__name__}: {exc}".split())[-600:]
            sections.append(Section(name, error=why))
        print(f"[bench] {name}: {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
    out.write_text(report(sections, sys.argv[1:], started, load0, out.parent))
    print(f"[bench] wrote {out}", file=sys.stderr)
    if any(s.error for s in sections):
        sys.exit(1)


if __name__ == "__main__":
    main()
