"""Bulk-produce throughput, the matrix: the console's produce dialog and `kconsole produce`
against a plain confluent-kafka loop and Kafka's own producer perf tool, per acks setting and
record size, on the same cluster in the same minute.

    .venv/bin/python bench/produce_throughput.py [--acks 1,all] [--sizes 100,1024]
        [--count 200000] [--runs 3] [--sides plain,console,cli,perf] [--json out]

Starts its own throw-away 3-broker cluster on free ports in a temporary dir (bench/_cluster.py),
and always takes it down again. Each cell (acks x value size) gets a fresh topic of one
partition, RF 3 (min.insync.replicas 2), so that every side writes to the same single leader:
the keyed sides send one key, and the perf tool sends null keys, which a multi-partition topic
would spread over every leader. The topic is deleted when its cell is done. Per cell: a warm-up
(1,000 records from a producer bootstrapped at each broker in turn, so each broker has handed
out a producer id before anything is timed), then `runs` rounds of every side, the order
reversed on every other round:

  - plain: Producer.produce() in a loop (poll(0) each, BufferError -> poll and retry), a
    delivery callback that only counts, then flush(); the producer configuration is the
    product's own (kconsole.cluster.produce.send.producer_config with the topic's max.message.bytes,
    as the dialog and the CLI build it). Timed from the first produce() to the end of flush().
  - console: the real app headless (Textual run_test), the produce dialog filled in (topic, key,
    value, count, and the Acks select set as a user sets it) and sent (ctrl+s's action); the
    time is from the send to the dialog's "finished" (every record accounted for). It includes
    what the dialog does before producing: the topic's limits (read by the dialog's produce
    session, or reused if it read them less than 30 s ago), validation, the producer the
    session keeps (made when the dialog opened, or now if it is not yet), and the audit-log
    entry after it (produce_seconds: produce_records' own part, as the CLI reports it).
  - cli: `kconsole produce -t T -k bench-key -v VALUE -n COUNT --acks A` as a fresh process.
    The time is the CLI's own send time, from its summary line ("sent N, acked M, ..., R msg/s":
    N / R, R being sent / elapsed of produce_records, from the first produce to the end of the
    flush); process start, the topic check and the key trace are outside it. The process's wall
    time is recorded beside it (wall_seconds).
  - perf: Kafka's org.apache.kafka.tools.ProducerPerformance (kafka-producer-perf-test) from
    the jars kconsole downloads (kafka-tools is in kconsole/cluster/maven/kafka.pom.xml), a fresh
    JVM (-Xmx512m) each time: --num-records COUNT --record-size SIZE --throughput -1
    --producer-props bootstrap.servers=.. acks=A linger.ms=5 batch.size=1000000
    enable.idempotence=(A == all) compression.type=none. Its time is from its own summary line
    ("N records sent, X records/sec ...": N / X; the tool times from before its first send to
    the end of producer.close(), so JVM start-up and producer creation are outside it and JIT
    warm-up is inside). It sends null keys and a random payload of SIZE bytes; the other sides
    send the key bench-key (9 bytes) and SIZE bytes of "x". Wall time is recorded beside it.

Producer settings: every kconsole side and the plain loop use librdkafka with linger.ms 5,
murmur2_random, no compression, idempotence with acks=all only, retries 5 (backoff 100 ms),
message.max.bytes from the topic, and librdkafka's defaults otherwise (batch.size 1,000,000 bytes,
batch.num.messages 10,000). The Java producer gets linger.ms 5 and batch.size 1,000,000 to match
(its defaults are 0 ms and 16,384 bytes), idempotence as above, and its defaults otherwise.

Throughput = acked records / seconds; prints a Markdown report (every run, then per cell the
medians and the ratios console / plain, CLI / plain, console / perf tool, CLI / perf tool, each
the median of per-round ratios). --json writes every run as {side, acks, size, run, count,
acked, seconds[, produce_seconds][, wall_seconds]} for bench/suite.py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _cluster import temporary_cluster
from _common import code_revision, load
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient

from kconsole.cluster import jars
from kconsole.cluster.local.cluster import LocalCluster, LocalClusterSpec
from kconsole.cluster.produce.api import read_topic_limits
from kconsole.cluster.produce.send import producer_config
from kconsole.commands import Commands
from kconsole.config import Settings
from kconsole.observer import ClusterObserver
from kconsole.ui.app import make_app
from kconsole.ui.screens.produce import ProduceScreen

KEY = "bench-key"
SIDES = ("plain", "console", "cli", "perf")
SIDE_NAMES = {
    "plain": "plain loop",
    "console": "console dialog",
    "cli": "kconsole produce",
    "perf": "perf tool",
}
# The Java producer's settings beside acks (see the module docstring).
PERF_PROPS = {"linger.ms": "5", "batch.size": "1000000", "compression.type": "none"}
SEND_TIMEOUT_S = 600.0  # one side's send of `count` records, however slow the machine


class Row(dict[str, Any]):
    """One measured run: side, acks, size, run, count, acked, seconds (produce_seconds,
    wall_seconds)."""

    @property
    def rate(self) -> float:
        return self["acked"] / self["seconds"] if self["seconds"] > 0 else 0.0


# -- the sides -------------------------------------------------------------------------------------
def plain_loop(
    settings: Settings, topic: str, count: int, value: bytes, acks: str
) -> tuple[int, float]:
    limits = read_topic_limits(settings, topic)
    conf = producer_config(settings, acks=acks, max_message_bytes=limits.max_message_bytes)
    producer = Producer(conf)
    acked = 0
    key = KEY.encode()

    def on_delivery(err: object, _msg: object) -> None:
        nonlocal acked
        if err is None:
            acked += 1

    t0 = time.monotonic()
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, key=key, value=value, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    producer.flush(60)
    return acked, time.monotonic() - t0


async def console_send(
    settings: Settings, topic: str, count: int, value: bytes, acks: str
) -> tuple[int, float, float]:
    """(acked, the dialog's time from send to finish, produce_records' own part of it)."""
    from textual.widgets import Input, Select, TextArea

    # The console's own command layer (Commands.for_settings, as kconsole's main builds it):
    # the audit-log entry and its cluster id are part of the dialog's path.
    commands = Commands.for_settings(settings, None, control_reason="bench", origin="console")
    app = make_app(ClusterObserver(settings), commands=commands, settings=settings)
    app.animation_level = "none"
    async with app.run_test(size=(140, 40)) as pilot:
        screen = ProduceScreen(topic=topic, key=KEY)
        await app.push_screen(screen)
        screen.query_one("#count", Input).value = str(count)
        screen.query_one("#value", TextArea).text = value.decode()
        screen.query_one("#acks", Select).value = acks
        await pilot.pause()
        request = screen.form_request()
        assert (request.acks, request.count) == (acks, count), request
        t0 = time.monotonic()
        screen.action_send()
        deadline = t0 + SEND_TIMEOUT_S
        while screen.sending:
            if time.monotonic() > deadline:
                screen.action_back()  # stop sending; what was sent is still accounted for
                raise RuntimeError(f"the dialog's send did not finish in {SEND_TIMEOUT_S:.0f} s")
            await asyncio.sleep(0.005)
        elapsed = time.monotonic() - t0
        result = screen.last_result
        assert result is not None, "the send was refused"
        assert result.acks == acks, result.acks
        return result.acked_n, elapsed, result.elapsed_s


# With acks=0 nothing is acked: "sent N (acks=0: not confirmed)", every record sent counted.
_CLI_SUMMARY = re.compile(
    r"^sent (\d+)(?:, acked (\d+)| \(acks=0: not confirmed\)), failed (\d+).*, unknown (\d+), "
    r"(\d+) msg/s",
    re.MULTILINE,
)


def cli_send(
    settings: Settings, topic: str, count: int, value: bytes, acks: str, env: dict[str, str],
    config: Path,
) -> tuple[int, float, float]:  # fmt: skip
    """(acked, the CLI's own send time, the process's wall time)."""
    kconsole = str(Path(sys.executable).with_name("kconsole"))
    cmd = [
        kconsole, "--config", str(config), "-b", settings.bootstrap, "-z", settings.zookeeper,
        "--backend", "none", "produce", "-t", topic, "-k", KEY, "-v", value.decode(),
        "-n", str(count), "--acks", acks,
    ]  # fmt: skip
    t0 = time.monotonic()
    done = subprocess.run(
        cmd, capture_output=True, text=True, timeout=SEND_TIMEOUT_S + 60, env=env,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    wall = time.monotonic() - t0
    m = _CLI_SUMMARY.search(done.stdout)
    if done.returncode not in (0, 2) or m is None:
        raise RuntimeError(
            f"kconsole produce exited {done.returncode}: {(done.stdout + done.stderr)[-800:]}"
        )
    sent, rate = int(m.group(1)), int(m.group(5))
    acked = int(m.group(2)) if m.group(2) is not None else sent - int(m.group(3)) - int(m.group(4))
    if rate <= 0:
        raise RuntimeError(f"kconsole produce reported no rate: {m.group(0)}")
    return acked, sent / rate, wall


# The total (interval lines have no percentiles); %f follows the JVM's locale: 1.5 or 1,5.
_PERF_SUMMARY = re.compile(r"^(\d+) records sent, ([\d.,]+) records/sec .*50th", re.MULTILINE)


def perf_tool(
    bootstrap: str, topic: str, count: int, size: int, acks: str, lib: Path
) -> tuple[int, float, float]:
    """(acked, the tool's own send time, the JVM's wall time)."""
    props = {
        "bootstrap.servers": bootstrap,
        "acks": acks,
        "enable.idempotence": "true" if acks == "all" else "false",
        **PERF_PROPS,
    }
    cmd = [
        jars.java_executable(), "-Xmx512m", "-cp", f"{lib}/*",
        "org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
        "--num-records", str(count), "--record-size", str(size), "--throughput", "-1",
        "--producer-props", *(f"{k}={v}" for k, v in props.items()),
    ]  # fmt: skip
    t0 = time.monotonic()
    done = subprocess.run(
        cmd, capture_output=True, text=True, timeout=SEND_TIMEOUT_S + 60,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    wall = time.monotonic() - t0
    found = _PERF_SUMMARY.findall(done.stdout)
    if done.returncode != 0 or not found:
        raise RuntimeError(
            f"ProducerPerformance exited {done.returncode}: {(done.stdout + done.stderr)[-800:]}"
        )
    sent, rate = int(found[-1][0]), float(found[-1][1].replace(",", "."))
    if rate <= 0:
        raise RuntimeError(f"ProducerPerformance reported no rate: {found[-1]}")
    return sent, sent / rate, wall


# -- the cluster -----------------------------------------------------------------------------------
def create_topic(local: LocalCluster, name: str, timeout: float = 120.0) -> None:
    """One partition, RF 3; returns once every replica is in ISR and every broker serves it."""
    local.create_topic(name, 1, 3, time.monotonic() + timeout)


def warm_up(spec: LocalClusterSpec, topic: str, value: bytes, acks: str) -> None:
    """1,000 records from a producer bootstrapped at each broker in turn: the partition's first
    segment is written, and with acks=all each broker has handed out a producer id once (a
    broker's first idempotent InitProducerId can answer COORDINATOR_LOAD_IN_PROGRESS, and the
    retry would land in whichever side came first)."""
    for port in spec.broker_ports().values():
        one = Settings(bootstrap=f"{spec.host}:{port}", zookeeper=spec.zk_connect, backend="none")
        plain_loop(one, topic, 1000, value, acks)


def delete_topic(bootstrap: str, name: str) -> None:
    """Drop a finished cell's topic so the logs do not pile up (the files go in the background)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    try:
        admin.delete_topics([name], request_timeout=15)[name].result(20)
    except KafkaException as exc:
        print(f"could not delete {name}: {exc}", file=sys.stderr)


# -- the matrix ------------------------------------------------------------------------------------
def run(
    acks_list: list[str], sizes: list[int], count: int, runs: int, sides: list[str]
) -> list[Row]:
    rows: list[Row] = []
    with temporary_cluster("kc-bench-produce-", up_timeout=240, create_topic=False) as (local, tmp):
        # The audit log of the console's and the CLI's sends goes here, not to the user's.
        os.environ["KCONSOLE_STATE_DIR"] = str(tmp / "state")
        env = {k: v for k, v in os.environ.items() if not k.startswith("KCONSOLE_")}
        env["KCONSOLE_STATE_DIR"] = os.environ["KCONSOLE_STATE_DIR"]
        if "KCONSOLE_CACHE_DIR" in os.environ:
            env["KCONSOLE_CACHE_DIR"] = os.environ["KCONSOLE_CACHE_DIR"]
        config = tmp / "config.toml"  # no user config (profiles, -X, read-only) applies
        config.write_text("")
        spec = local.spec
        settings = Settings(bootstrap=spec.bootstrap, zookeeper=spec.zk_connect, backend="none")
        lib = jars.ensure_kafka_jars(spec.kafka_version) if "perf" in sides else Path()
        for acks in acks_list:
            for size in sizes:
                topic = f"bench-produce-acks{acks}-{size}"
                create_topic(local, topic)
                value = b"x" * size
                warm_up(spec, topic, value, acks)
                for r in range(1, runs + 1):
                    order = sides if r % 2 else list(reversed(sides))
                    for side in order:
                        row = Row(side=side, acks=acks, size=size, run=r, count=count)
                        if side == "plain":
                            row["acked"], row["seconds"] = plain_loop(
                                settings, topic, count, value, acks
                            )
                        elif side == "console":
                            acked, took, inner = asyncio.run(
                                console_send(settings, topic, count, value, acks)
                            )
                            row.update(acked=acked, seconds=took, produce_seconds=inner)
                        elif side == "cli":
                            row["acked"], row["seconds"], row["wall_seconds"] = cli_send(
                                settings, topic, count, value, acks, env, config
                            )
                            row["produce_seconds"] = row["seconds"]
                        else:
                            row["acked"], row["seconds"], row["wall_seconds"] = perf_tool(
                                spec.bootstrap, topic, count, size, acks, lib
                            )
                        rows.append(row)
                        print(
                            f"acks={acks} {size} B run {r} {side:<7}: {row['acked']} acked "
                            f"in {row['seconds']:.2f} s ({row.rate:,.0f}/s)",
                            file=sys.stderr,
                            flush=True,
                        )
                delete_topic(spec.bootstrap, topic)
    return rows


def ratios(rows: list[Row], acks: str, size: int, num: str, den: str) -> list[float]:
    """num / den throughput of each round that measured both, for one cell."""
    rate = {(r["side"], r["run"]): r.rate for r in rows if (r["acks"], r["size"]) == (acks, size)}
    return [
        rate[(num, k)] / rate[(den, k)]
        for s, k in sorted(rate)
        if s == den and (num, k) in rate and rate[(den, k)] > 0
    ]


RATIOS = (("console", "plain"), ("cli", "plain"), ("console", "perf"), ("cli", "perf"))


def report(rows: list[Row], args: argparse.Namespace) -> str:
    cmd = "python bench/produce_throughput.py " + shlex.join(sys.argv[1:])
    out = [
        f"`{cmd.strip()}` · code: {code_revision()} · load {load()} · "
        f"{args.count:,} records per run, acks {args.acks}, values of {args.sizes} bytes, "
        f"one partition (RF 3) per cell",
        "",
        "| acks | value | side | run | acked | seconds | records/s | produce_records s | wall s |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        inner, wall = (f"{r[k]:.2f}" if k in r else "" for k in ("produce_seconds", "wall_seconds"))
        out.append(
            f"| {r['acks']} | {r['size']:,} B | {SIDE_NAMES[r['side']]} | {r['run']} | "
            f"{r['acked']:,} | {r['seconds']:.2f} | {r.rate:,.0f} | {inner} | {wall} |"
        )
    sides = [s for s in SIDES if any(r["side"] == s for r in rows)]
    pairs = [(a, b) for a, b in RATIOS if a in sides and b in sides]
    out += [
        "",
        "Per cell: median records/s of each side, and the median of the per-round ratios.",
        "",
        "| acks | value | "
        + " | ".join(SIDE_NAMES[s] for s in sides)
        + " | "
        + " | ".join(f"{a} / {b}" for a, b in pairs)
        + " |",
        "|---|---:|" + "---:|" * (len(sides) + len(pairs)),
    ]
    cells = list(dict.fromkeys((r["acks"], r["size"]) for r in rows))
    for acks, size in cells:
        meds = []
        for s in sides:
            rates = [r.rate for r in rows if (r["side"], r["acks"], r["size"]) == (s, acks, size)]
            meds.append(f"{statistics.median(rates):,.0f}" if rates else "")
        rats = []
        for a, b in pairs:
            vals = ratios(rows, acks, size, a, b)
            rats.append(f"**{statistics.median(vals):.2f}**" if vals else "")
        out.append(f"| {acks} | {size:,} B | " + " | ".join(meds + rats) + " |")
    out += [
        "",
        "Times: plain from the first produce() to the end of flush(); console from the send "
        "to the dialog's finish (topic check and audit log included; its producer is the one "
        "the dialog keeps); CLI its "
        "own send time (first produce to end of flush); perf tool its own (before the first "
        "send to the end of close(); a cold JVM's JIT included). produce_records s: kconsole's "
        "producing function's own time (first produce to end of flush), for the console the "
        "part of its time after the topic check; wall s: the whole process.",
    ]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--acks", default="1,all", help="comma-separated: 1, all (0 works too)")
    ap.add_argument("--sizes", default="100,1024", help="comma-separated value sizes (bytes)")
    ap.add_argument("--count", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument(
        "--sides", default=",".join(SIDES), help="comma-separated of " + ",".join(SIDES)
    )
    ap.add_argument("--json", type=Path, help="also write every run here (bench/suite.py)")
    args = ap.parse_args()
    acks_list = [a.strip() for a in args.acks.split(",") if a.strip()]
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    sides = [s.strip() for s in args.sides.split(",") if s.strip()]
    bad = [a for a in acks_list if a not in ("0", "1", "all")]
    bad += [s for s in sides if s not in SIDES] + [str(n) for n in sizes if n < 1]
    if bad or not acks_list or not sizes or not sides:
        ap.error(f"--acks / --sizes / --sides: {', '.join(bad) or 'empty'}")
    rows = run(acks_list, sizes, args.count, args.runs, sides)
    if args.json is not None:
        args.json.write_text(json.dumps(rows))
    print(report(rows, args))


if __name__ == "__main__":
    main()
