"""Re-reading every partition state from ZooKeeper, as the console's watcher does when a broker
stops on a big cluster (every state node changes): pipelined kazoo reads with a watch, through
kazoo's own threading handler and through kconsole's (one select() call per wait), all requests
in flight at once; and the console's own reader (ZkReader.read_paths: at most WINDOW requests in
flight, so that a row on screen can go ahead of the others waiting) and the same reader with
every request in flight at once, alternating.

    .venv/bin/python bench/zk_reads.py --zk localhost:22181 [--rounds 8] [--window N]

bench/terminal.py runs it on its 2,000-partition cluster (make bench, "terminal-scale").
Prints, per handler, the wall time and the process CPU time of each round, in ms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from kazoo.client import KazooClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kconsole.cluster import zk as zkmod
from kconsole.cluster.zk import ZkReader, zk_client


def state_paths(client: KazooClient) -> list[str]:
    return [
        f"/brokers/topics/{t}/partitions/{p}/state"
        for t in client.get_children("/brokers/topics")
        for p in client.get_children(f"/brokers/topics/{t}/partitions")
    ]


def one_round(client: KazooClient, paths: list[str]) -> tuple[float, float]:
    """(wall ms, process CPU ms) to read every path, all requests in flight at once."""
    c0, t0 = time.process_time(), time.perf_counter()
    futures = [client.get_async(p, watch=lambda _event: None) for p in paths]
    for fut in futures:
        fut.get(timeout=30)
    return (time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000


def reader_round(
    client: KazooClient, paths: list[str], window: int | None = None
) -> tuple[float, float]:
    """The same through the console's reader, which also decodes each state's JSON; with
    `window`, that many reads in flight instead of the reader's WINDOW."""
    reader = ZkReader(client, watch=lambda _event: None)
    kept = zkmod.WINDOW
    zkmod.WINDOW = window or kept
    try:
        c0, t0 = time.process_time(), time.perf_counter()
        reader.read_paths(paths)
    finally:
        zkmod.WINDOW = kept
    assert len(reader.states) == len(paths), "the reader missed states"
    return (time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000


def timings(
    hosts: str, rounds: int, window: int | None = None
) -> tuple[int, dict[str, list[float]]]:
    """(partition states read, each side's ms per round as '<side>_wall_ms' and '<side>_cpu_ms')."""
    clients = {
        "kazoo": KazooClient(hosts=hosts),  # kazoo's own SequentialThreadingHandler
        "kconsole": zk_client(hosts),
    }
    out: dict[str, list[float]] = {}
    try:
        for c in clients.values():
            c.start(timeout=30)
        paths = state_paths(clients["kconsole"])
        sides = {
            "kazoo": lambda: one_round(clients["kazoo"], paths),
            "kconsole": lambda: one_round(clients["kconsole"], paths),
            "reader": lambda: reader_round(clients["kconsole"], paths, window),
            "reader_all_in_flight": lambda: reader_round(clients["kconsole"], paths, len(paths)),
        }
        for name in sides:
            out[f"{name}_wall_ms"], out[f"{name}_cpu_ms"] = [], []
        for _ in range(rounds):
            for name, side in sides.items():  # alternating: the same moment for each
                wall, cpu = side()
                out[f"{name}_wall_ms"].append(wall)
                out[f"{name}_cpu_ms"].append(cpu)
    finally:
        for c in clients.values():
            c.stop()
            c.close()
    return len(paths), out


def run(hosts: str, rounds: int, window: int | None = None) -> dict[str, int | list[float]]:
    """The report's figures: 'paths' (partition states read), then timings()' lists."""
    paths, out = timings(hosts, rounds, window)
    return {"paths": paths, **out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zk", default="localhost:22181")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--window", type=int, help="the reader's reads in flight (its WINDOW)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    out = run(args.zk, args.rounds, args.window)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    print(f"{out['paths']} partition states, {args.rounds} rounds each, median (min-max):")
    for key, values in out.items():
        if isinstance(values, list):
            print(f"  {key}: {statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f})")


if __name__ == "__main__":
    main()
