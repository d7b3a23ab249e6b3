"""The tail view from the beginning of a large topic: how soon its status moves, how long it
takes to catch up, how soon a record written meanwhile is on screen, and how responsive the
screen stays meanwhile.

    .venv/bin/python bench/tail_catchup.py [--records 201000] [--runs 3] [--json out]

Starts its own throw-away 3-broker cluster on free ports in a temporary dir (bench/_cluster.py),
and always takes it down again. One topic of 4 partitions (RF 3) is filled with `records`
keyed records of ~80 bytes. Each run: the real app headless (Textual run_test) with the command
layer the kconsole command builds, the tail view pushed on that topic from the beginning; one
record is produced (acks=all) 1 s after the push. Measured, from the push:

  - first count: the status line first shows a record count above 0 and a rate;
  - caught up: it says "at the end" with every record counted;
  - meanwhile -> row: from the extra record's acknowledgement to its row in the table;
  - loop lag: the longest the app's event loop was late for a 50 ms timer during the run (a
    key press waits about that long).

Prints a Markdown report (every run, then the medians).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _cluster import temporary_cluster, to_stderr  # noqa: E402
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from textual.widgets import DataTable  # noqa: E402

from kconsole.cluster.local.cluster import LocalCluster  # noqa: E402
from kconsole.commands import Commands  # noqa: E402
from kconsole.config import Settings  # noqa: E402
from kconsole.observer import ClusterObserver  # noqa: E402
from kconsole.ui.app import make_app  # noqa: E402
from kconsole.ui.screens.tail import TailScreen  # noqa: E402

TOPIC = "tail-bench"


def fill(cluster: LocalCluster, n: int) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.spec.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 4, 3)])[TOPIC].result(timeout=30)
    cluster.wait_metadata_everywhere(TOPIC, time.monotonic() + 30)
    p = Producer({"bootstrap.servers": cluster.spec.bootstrap, "linger.ms": 20})
    for i in range(n):
        while True:
            try:
                p.produce(TOPIC, key=f"key-{i % 1000}", value=f'{{"n": {i}, "pad": "{"x" * 50}"}}')
                break
            except BufferError:
                p.poll(0.05)
    if p.flush(120):
        raise RuntimeError("the backlog was not all acknowledged")


async def one_run(cluster: LocalCluster, expected: int, run: int) -> dict[str, Any]:
    settings = Settings(bootstrap=cluster.spec.bootstrap, zookeeper=cluster.spec.zk_connect)
    door = Commands.for_settings(settings, control_reason="bench", audit=None)
    app = make_app(ClusterObserver(settings), commands=door, settings=settings)
    app.animation_level = "none"
    out: dict[str, Any] = {"run": run}
    async with app.run_test(size=(140, 40)):
        while app.snapshot is None:
            await asyncio.sleep(0.05)
        t0 = time.monotonic()
        await app.push_screen(TailScreen(topic=TOPIC, start="beginning"))
        tail = app.screen
        assert isinstance(tail, TailScreen)
        table = tail.query_one("#tail-records", DataTable)
        producer = Producer({"bootstrap.servers": cluster.spec.bootstrap, "acks": "all"})
        acked: list[tuple[float, str]] = []
        lag = 0.0
        while time.monotonic() - t0 < 120:  # a record never shown ends the run as "never"
            before = time.monotonic()
            await asyncio.sleep(0.05)
            now = time.monotonic()
            lag = max(lag, now - before - 0.05)
            status = str(tail.status_text())
            shown = re.search(r"· ([0-9,]+) records · [0-9,]+/s", status)
            if "first_count_s" not in out and shown and int(shown[1].replace(",", "")) > 0:
                out["first_count_s"] = now - t0
            if now - t0 >= 1.0 and "sent" not in out:
                out["sent"] = True
                producer.produce(
                    TOPIC,
                    key="meanwhile",
                    value=f"meanwhile {run}",
                    on_delivery=lambda err, msg: acked.append(
                        (time.monotonic(), f"{msg.partition()}:{msg.offset()}")
                    ),
                )
            producer.poll(0)
            if "caught_up_s" not in out and "at the end" in status and tail.received >= expected:
                out["caught_up_s"] = now - t0
            if acked and acked[0][1] in table.rows and "meanwhile_to_row_s" not in out:
                out["meanwhile_to_row_s"] = now - acked[0][0]
            if "meanwhile_to_row_s" in out and "caught_up_s" in out:
                break
        out["loop_lag_max_s"] = lag
        out["received"] = tail.received
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=201_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = []
    with temporary_cluster("kc-bench-tail-", progress=to_stderr) as (cluster, _tmp):
        t = time.monotonic()
        fill(cluster, args.records)
        to_stderr(f"{args.records:,} records written in {time.monotonic() - t:.1f} s")
        for run in range(1, args.runs + 1):
            # Each run reads the backlog plus the records written by the runs before it.
            row = asyncio.run(one_run(cluster, args.records + run, run))
            to_stderr(f"run {run}: {row}")
            rows.append(row)
    names = (
        ("first_count_s", "first count and rate on screen (s)"),
        ("caught_up_s", "caught up, every record counted (s)"),
        ("meanwhile_to_row_s", "record written meanwhile: acked -> its row (s)"),
        ("loop_lag_max_s", "longest event-loop lag during the run (s)"),
    )
    print(f"Tail from the beginning of {args.records:,} records (4 partitions):\n")
    print("| run | " + " | ".join(label for _, label in names) + " |")
    print("|---|" + "---|" * len(names))
    for row in rows:
        cells = [f"{row[k]:.2f}" if k in row else "never" for k, _ in names]
        print(f"| {row['run']} | " + " | ".join(cells) + " |")
    medians = [
        f"{statistics.median(r[k] for r in rows):.2f}" if all(k in r for r in rows) else "?"
        for k, _ in names
    ]
    print("| median | " + " | ".join(medians) + " |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
