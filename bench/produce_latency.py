"""Single-record produce latency (issue 26): the console's produce dialog (its second and later
sends) and `kconsole produce` beside a plain warm confluent-kafka producer, and beside a new
producer per send (what every send paid before the dialog kept its producer open).

    .venv/bin/python bench/produce_latency.py [--sends 10] [--cli-sends 3] [--rounds 3]
        [--json out]

Starts its own throw-away 3-broker cluster on free ports (bench/_cluster.py) and takes it down
after. Every side sends one record of 100 bytes with the key bench-key to test-topic (4
partitions, RF 3, min.insync.replicas 2), acks=all, with the product's producer settings
(kconsole.cluster.produce.send.producer_config: idempotent, linger.ms 5, murmur2_random). Each
round runs every side, the order reversed on every other round:

  - plain warm: one Producer made before the round and used for one untimed record first (its
    producer id acquired, its connections up); then `sends` records, each produce() then
    flush(). send -> outcome: from produce() to flush()'s return.
  - plain new: a new Producer per record (made, produce(), flush()), the way the dialog and the
    CLI sent before; send -> outcome from before the Producer is made.
  - dialog: the real app headless (Textual run_test, the command layer as kconsole builds it,
    its audit log written), the produce dialog opened on the topic and the key; its first send
    once the dialog says its producer is ready, untimed; then `sends` sends of one record
    (ctrl+s's action). send -> outcome: from the action to the dialog's "finished" (the
    door's checks, the send, the audit line and the screen's messages included).
  - cli: `kconsole produce -t test-topic -k bench-key -v VALUE` as a fresh process, `cli-sends`
    times; send -> outcome is the process's wall time (interpreter start, imports, the topic's
    limits, the cluster read and the trace included).

latency: librdkafka's own produce() -> delivery report time of the record (Message.latency(),
what the dialog's row and the CLI's line show). The target (issue 26): the dialog's later sends
within 2 x + 20 ms of the plain warm producer, send -> outcome, medians of the same rounds.
--json writes every send as {side, round, latency_ms, wall_ms[, note]}.
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

from _cluster import describe_ports, temporary_cluster, to_stderr
from _common import code_revision, load
from confluent_kafka import Producer

from kconsole.cluster.produce.api import DEFAULT_MAX_MESSAGE_BYTES
from kconsole.cluster.produce.send import producer_config
from kconsole.cluster.settings import TEST_TOPIC
from kconsole.commands import Commands
from kconsole.config import Settings
from kconsole.observer import ClusterObserver
from kconsole.ui.app import make_app
from kconsole.ui.screens.produce import ProduceScreen

KEY = b"bench-key"
VALUE = b"x" * 100
SIDES = ("plain-warm", "plain-new", "dialog", "cli")
NAMES = {
    "plain-warm": "plain producer, warm",
    "plain-new": "plain producer, new per send",
    "dialog": "console dialog, later sends",
    "dialog-first": "console dialog, first send",
    "cli": "kconsole produce (process)",
}
TIMEOUT_S = 60.0


def one(producer: Producer) -> tuple[float, float]:
    """(latency ms, produce -> flush ms) of one record through `producer`."""
    got: list[Any] = []
    t0 = time.monotonic()
    producer.produce(TEST_TOPIC, VALUE, KEY, on_delivery=lambda err, msg: got.append((err, msg)))
    producer.flush(TIMEOUT_S)
    wall = (time.monotonic() - t0) * 1000
    if not got or got[0][0] is not None:
        raise RuntimeError(f"a plain send was not acked: {got}")
    return got[0][1].latency() * 1000, wall


def plain_warm(settings: Settings, sends: int) -> list[dict[str, Any]]:
    conf = producer_config(settings, acks="all", max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES)
    producer = Producer(conf)
    one(producer)  # untimed: the id, the metadata, the connection to the leader
    rows = []
    for _ in range(sends):
        lat, wall = one(producer)
        rows.append({"side": "plain-warm", "latency_ms": lat, "wall_ms": wall})
    producer.flush(TIMEOUT_S)
    return rows


def plain_new(settings: Settings, sends: int) -> list[dict[str, Any]]:
    conf = producer_config(settings, acks="all", max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES)
    rows = []
    for _ in range(sends):
        t0 = time.monotonic()
        producer = Producer(conf)
        lat, _ = one(producer)
        wall = (time.monotonic() - t0) * 1000
        rows.append({"side": "plain-new", "latency_ms": lat, "wall_ms": wall})
    return rows


async def dialog(settings: Settings, sends: int) -> list[dict[str, Any]]:
    from textual.widgets import TextArea

    commands = Commands.for_settings(settings, None, control_reason="bench", origin="console")
    app = make_app(ClusterObserver(settings), commands=commands, settings=settings)
    app.animation_level = "none"
    rows: list[dict[str, Any]] = []
    async with app.run_test(size=(140, 40)):
        screen = ProduceScreen(topic=TEST_TOPIC, key=KEY.decode())
        await app.push_screen(screen)
        screen.query_one("#value", TextArea).text = VALUE.decode()
        deadline = time.monotonic() + TIMEOUT_S
        while screen.prepared is None or not screen.prepared.ready:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the dialog's producer was not ready: {screen.prepared}")
            await asyncio.sleep(0.01)
        for i in range(sends + 1):
            t0 = time.monotonic()
            screen.action_send()
            while screen.sending:
                if time.monotonic() - t0 > TIMEOUT_S:
                    raise RuntimeError("the dialog's send did not finish")
                await asyncio.sleep(0.001)
            wall = (time.monotonic() - t0) * 1000
            result = screen.last_result
            if result is None or not result.ok or result.acked[0].latency_s is None:
                raise RuntimeError(f"the dialog's send was not acked: {result}")
            side = "dialog" if i else "dialog-first"
            rows.append(
                {"side": side, "latency_ms": result.acked[0].latency_s * 1000, "wall_ms": wall}
            )
    return rows


_CLI_LATENCY = re.compile(r"^  #1 key \S+ -> \S+@\d+  ([\d.]+) ms$", re.MULTILINE)


def cli(settings: Settings, sends: int, env: dict[str, str], config: Path) -> list[dict[str, Any]]:
    kconsole = str(Path(sys.executable).with_name("kconsole"))
    cmd = [
        kconsole, "--config", str(config), "-b", settings.bootstrap, "-z", settings.zookeeper,
        "--backend", "none", "produce", "-t", TEST_TOPIC, "-k", KEY.decode(), "-v",
        VALUE.decode(),
    ]  # fmt: skip
    rows = []
    for _ in range(sends):
        t0 = time.monotonic()
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=TIMEOUT_S, env=env,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        wall = (time.monotonic() - t0) * 1000
        m = _CLI_LATENCY.search(done.stdout)
        if done.returncode != 0 or m is None:
            raise RuntimeError(f"kconsole produce exited {done.returncode}: {done.stdout[-600:]}")
        notes = [ln for ln in done.stdout.splitlines() if ln.startswith("note: the record took")]
        row = {"side": "cli", "latency_ms": float(m.group(1)), "wall_ms": wall}
        if notes:
            row["note"] = notes[0]
        rows.append(row)
    return rows


def run(sends: int, cli_sends: int, rounds: int) -> tuple[list[dict[str, Any]], str]:
    rows: list[dict[str, Any]] = []
    with temporary_cluster("kc-bench-latency-", up_timeout=240, progress=to_stderr) as (
        local,
        tmp,
    ):
        os.environ["KCONSOLE_STATE_DIR"] = str(tmp / "state")  # the audit log goes here
        env = {k: v for k, v in os.environ.items() if not k.startswith("KCONSOLE_")}
        env["KCONSOLE_STATE_DIR"] = os.environ["KCONSOLE_STATE_DIR"]
        if "KCONSOLE_CACHE_DIR" in os.environ:
            env["KCONSOLE_CACHE_DIR"] = os.environ["KCONSOLE_CACHE_DIR"]
        config = tmp / "config.toml"
        config.write_text("")
        spec = local.spec
        settings = Settings(bootstrap=spec.bootstrap, zookeeper=spec.zk_connect, backend="none")
        # Every broker hands out a producer id once before anything is timed (a broker's
        # first InitProducerId can answer COORDINATOR_LOAD_IN_PROGRESS and retry 500 ms later).
        for port in spec.broker_ports().values():
            plain_warm(Settings(bootstrap=f"{spec.host}:{port}", backend="none"), 1)
        for r in range(1, rounds + 1):
            order = list(SIDES) if r % 2 else list(reversed(SIDES))
            for side in order:
                if side == "plain-warm":
                    got = plain_warm(settings, sends)
                elif side == "plain-new":
                    got = plain_new(settings, cli_sends)
                elif side == "dialog":
                    got = asyncio.run(dialog(settings, sends))
                else:
                    got = cli(settings, cli_sends, env, config)
                for row in got:
                    row["round"] = r
                rows += got
                lat = statistics.median(x["latency_ms"] for x in got if x["side"] == side)
                to_stderr(f"round {r} {side:<10}: median latency {lat:.1f} ms")
        ports = describe_ports(spec)
    return rows, ports


def med(rows: list[dict[str, Any]], side: str, key: str) -> float:
    return statistics.median(r[key] for r in rows if r["side"] == side)


def report(rows: list[dict[str, Any]], args: argparse.Namespace, ports: str) -> str:
    cmd = "python bench/produce_latency.py " + shlex.join(sys.argv[1:])
    out = [
        f"`{cmd.strip()}` · code: {code_revision()} · load {load()} · its own 3-broker cluster "
        f"({ports}) · one record of {len(VALUE)} B to {TEST_TOPIC}, acks=all (idempotent), "
        f"{args.rounds} rounds",
        "",
        "| side | sends | latency ms: median (min-max) | send -> outcome ms: median (min-max) |",
        "|---|---:|---:|---:|",
    ]
    for side in ("plain-warm", "dialog", "dialog-first", "cli", "plain-new"):
        got = [r for r in rows if r["side"] == side]
        if not got:
            continue
        lat = [r["latency_ms"] for r in got]
        wall = [r["wall_ms"] for r in got]
        out.append(
            f"| {NAMES[side]} | {len(got)} | {statistics.median(lat):.1f} "
            f"({min(lat):.1f}-{max(lat):.1f}) | {statistics.median(wall):.1f} "
            f"({min(wall):.1f}-{max(wall):.1f}) |"
        )
    plain = med(rows, "plain-warm", "wall_ms")
    target = 2 * plain + 20
    dialog_ms = med(rows, "dialog", "wall_ms")
    out += [
        "",
        f"Target: the dialog's later sends, send -> outcome, within 2 x + 20 ms of the plain "
        f"warm producer's: {dialog_ms:.1f} ms against 2 x {plain:.1f} + 20 = {target:.1f} ms: "
        f"**{'met' if dialog_ms <= target else 'missed'}**.",
        "",
        "latency: librdkafka's produce() -> delivery report of the record (what the dialog's row "
        "and the CLI's line show). send -> outcome: plain, produce() to flush()'s return (a new "
        "producer: from before it is made); dialog, the send action to the dialog's finish "
        "(the door's checks, the audit line, the screen's messages); CLI, the process's wall "
        "time (interpreter start, imports, the topic's limits, the cluster read, the trace).",
    ]
    notes = [r["note"] for r in rows if r.get("note")]
    if notes:
        out += ["", f"The CLI said where the time went in {len(notes)} of its sends, e.g.:", ""]
        out.append(f"    {notes[0]}")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sends", type=int, default=10, help="timed sends per round (warm sides)")
    ap.add_argument("--cli-sends", type=int, default=3, help="per round: CLI, new producer")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", type=Path, help="also write every send here (bench/suite.py)")
    args = ap.parse_args()
    rows, ports = run(args.sends, args.cli_sends, args.rounds)
    if args.json is not None:
        args.json.write_text(json.dumps(rows))
    print(report(rows, args, ports))


if __name__ == "__main__":
    main()
