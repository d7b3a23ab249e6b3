"""Summarise a py-spy profile of the console: the share of samples per thread (threads of one
name together) and of some of the console's parts (inclusive: a sample counts for a part when
the part is anywhere on its stack).

    pip install py-spy      # not a dependency of kconsole
    .venv/bin/python bench/terminal.py --topics 20 --partitions 100 --groups 200 --runs 3 \\
        --idle 6 &
    py-spy record --format raw -r 200 --threads --nonblocking -o prof.raw \\
        -p <the console's pid: pgrep -f "bin/python .*kconsole -b 127.0.0.1:26092">
    .venv/bin/python bench/profile_summary.py prof.raw

The raw format is one line per distinct stack: "thread (pid): name;frame;frame;... count".
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

# Part of the console -> a piece of a frame's text that marks it.
PARTS = {
    "Textual's compositor drawing changed lines (Compositor.render_update)": "render_update",
    "applying snapshots to the panes (apply_snapshot)": "apply_snapshot",
    "reading state znodes (ZkReader._read_states_parallel)": "_read_states_parallel",
    "building snapshots (SnapshotBuilder.build)": "build (kconsole/observer/builder.py",
    "diffing them into events (timeline.diff)": "diff (kconsole/timeline.py",
    "the consumer-group poll (_poll_groups)": "_poll_groups",
    "the Admin poll (_poll_admin)": "_poll_admin",
    "the key bar (KeyBar)": "kconsole/ui/widgets/footer.py",
}


def summarise(lines: list[str]) -> tuple[int, Counter[str], Counter[str]]:
    total = 0
    threads: Counter[str] = Counter()
    parts: Counter[str] = Counter()
    for line in lines:
        if not line.strip():
            continue
        stack, _, count = line.rstrip("\n").rpartition(" ")
        n = int(count)
        total += n
        frames = stack.split(";")
        name = re.sub(r"^thread \(\d+\): ", "", frames[0])
        name = re.sub(r"\s*\(?0x[0-9a-f]+\)?", "", name)
        threads[name] += n
        for part, needle in PARTS.items():
            if any(needle in f for f in frames[1:]):
                parts[part] += n
    return total, threads, parts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw", type=Path, help="py-spy record --format raw output")
    ap.add_argument("--threads", type=int, default=10, help="how many threads to list")
    args = ap.parse_args()
    total, threads, parts = summarise(args.raw.read_text().splitlines())
    print(f"{total:,} samples\n\n| where | share of samples |\n|---|---:|")
    for name, n in threads.most_common(args.threads):
        print(f"| thread {name} | {100 * n / total:.1f} % |")
    for part, n in parts.most_common():
        print(f"| {part} | {100 * n / total:.1f} % |")


if __name__ == "__main__":
    main()
