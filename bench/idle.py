"""Idle cost of the console's UI, headless, with an observer that publishes at the real cadence
(an Admin poll every second, a group poll every two) and nothing changing but the sources' ages.

    .venv/bin/python bench/idle.py [--seconds 20] [--runs 3]

Prints the main thread's CPU (the Textual loop: everything but the observer's own threads) as
a percentage of one core. bench/terminal.py measures the whole process in a real terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kconsole.models import ClusterSnapshot, SourceName
from kconsole.timeline import Event
from kconsole.ui.app import make_app

FIXTURE = Path(__file__).resolve().parents[1] / "tests/fixtures/snapshots/group_lag.json"


class CadenceObserver:
    """Publishes the recorded snapshot as the real observer would on an unchanged cluster."""

    def __init__(self, snap: ClusterSnapshot) -> None:
        self.snap = snap
        self._stop = threading.Event()
        self.published = 0

    def start(self, on_update: Callable[[ClusterSnapshot, tuple[Event, ...]], None]) -> None:
        def loop() -> None:
            seq, tick = 0, 0
            while not self._stop.wait(1.0):
                tick += 1
                now = time.time()
                sources = tuple(
                    dataclasses.replace(s, updated_at=now)
                    if s.name is not SourceName.GROUPS or tick % 2 == 0
                    else s
                    for s in self.snap.sources
                )
                seq += 1
                snap = dataclasses.replace(self.snap, taken_at=now, seq=seq, sources=sources)
                self.snap = snap
                on_update(snap, ())
                self.published += 1

        threading.Thread(target=loop, daemon=True, name="bench-observer").start()

    def stop(self) -> None:
        self._stop.set()

    def refresh(self) -> None:
        pass


async def one_run(seconds: float) -> float:
    snap = ClusterSnapshot.from_dict(json.loads(FIXTURE.read_text()))
    observer = CadenceObserver(snap)
    app = make_app(observer)
    async with app.run_test(size=(160, 48)) as pilot:
        # The first snapshot applied (it comes a second after the start), widths settled.
        deadline = time.monotonic() + 30
        while app.snapshot is None:
            assert time.monotonic() < deadline, "no snapshot applied in 30 s"
            await asyncio.sleep(0.05)
        await pilot.pause()
        t0, w0 = time.thread_time(), time.monotonic()
        await asyncio.sleep(seconds)
        used, wall = time.thread_time() - t0, time.monotonic() - w0
    assert observer.published >= seconds - 1, "the observer did not publish"
    return 100 * used / wall


def run(seconds: float, runs: int) -> list[float]:
    return [asyncio.run(one_run(seconds)) for _ in range(runs)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    vals = run(args.seconds, args.runs)
    print(f"main thread CPU, % of one core: median {statistics.median(vals):.2f} "
          f"({min(vals):.2f}-{max(vals):.2f}), runs {vals}")  # fmt: skip


if __name__ == "__main__":
    main()
