"""The whole test suite as two pytest processes at once: what `make test` runs (and CI).

Most of the integration tests' time is Kafka's own timers, not CPU: a ZooKeeper session that has
to expire, a drill holding its fault for seconds, an ISR that shrinks after
replica.lag.time.max.ms. Run one after the other they took 33 minutes on a fresh clone with a
core busy; two halves, each with the clusters of its own tests, wait at the same time.

- Half A: the integration tests of the shared ZooKeeper-mode cluster (HALF_A, below; the network
  faults' module too, which also starts the KRaft cluster it needs) and tests/unit.
- Half B: everything else under tests/ (the KRaft, secured and docker clusters' tests, and
  tests/ui). A new test file is in B unless it is listed here, so no test is ever left out.

Each half starts only the clusters its tests ask for (once per run, as always), on free ports of
its own (tests/integration/conftest.py: port_offsets), under a base temp dir of its own. Its
output goes to a file and is printed whole when both have ended, so the log reads as two runs.
The exit status is 0 only when both halves passed: a failure, an error, an interruption and a
half that ran no test (pytest's exit code 5) all fail the run. Extra arguments go to both halves
(`python scripts/test.py -x`). Ctrl-C or SIGTERM interrupts both; pytest then tears its fixtures
down (every cluster it started is stopped by its PID) before the runner exits."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parent.parent
# The shared ZooKeeper-mode cluster's integration tests (tests/integration/conftest.py: cluster,
# healthy, four), and the jobs on it.
HALF_A = [
    "tests/integration/test_chaos.py",
    "tests/integration/test_console_drill.py",
    "tests/integration/test_console_live.py",
    "tests/integration/test_door.py",
    "tests/integration/test_drills.py",
    "tests/integration/test_jobs.py",
    "tests/integration/test_jobs_console.py",
    "tests/integration/test_kafka_python_adapter.py",
    "tests/integration/test_local_cluster.py",
    "tests/integration/test_network_faults.py",
    "tests/integration/test_observer.py",
    "tests/integration/test_produce.py",
    "tests/integration/test_produce_console.py",
    "tests/integration/test_produce_limits.py",
    "tests/integration/test_produce_warm.py",
    "tests/integration/test_reassign.py",
    "tests/integration/test_reassign_client.py",
    "tests/integration/test_spark_standalone.py",
    "tests/integration/test_tail.py",
    "tests/integration/test_workload.py",
    "tests/unit",
]


def halves(extra: list[str], base: Path) -> dict[str, list[str]]:
    """The two pytest command lines."""
    missing = [p for p in HALF_A if not (ROOT / p).exists()]
    if missing:
        raise SystemExit(f"scripts/test.py: half A names what is not there: {missing}")
    pytest = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
    ignored = [f"--ignore={p}" for p in HALF_A]
    return {
        "A": [*pytest, f"--basetemp={base / 'a'}", *extra, *HALF_A],
        "B": [*pytest, f"--basetemp={base / 'b'}", *extra, *ignored, "tests"],
    }


def main(argv: list[str]) -> int:
    base = Path(tempfile.mkdtemp(prefix="kconsole-tests-"))
    logs = {name: base / f"half-{name}.log" for name in ("A", "B")}
    procs: dict[str, subprocess.Popen[bytes]] = {}

    def interrupt(signum: int, _frame: FrameType | None) -> None:
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGINT)

    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGINT, interrupt)
    started = time.monotonic()
    for name, cmd in halves(argv, base).items():
        print(f"[test] half {name}: {' '.join(cmd[1:])}", flush=True)
        with logs[name].open("wb") as out:
            procs[name] = subprocess.Popen(
                cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
    ended: dict[str, tuple[int, float]] = {}
    while len(ended) < len(procs):
        for name, p in procs.items():
            if name not in ended and p.poll() is not None:
                ended[name] = (p.returncode, time.monotonic() - started)
                print(f"[test] half {name} ended: exit {p.returncode} after "
                      f"{ended[name][1] / 60:.1f} min", flush=True)  # fmt: skip
        time.sleep(1.0)
    for name in procs:
        print(f"\n[test] ===== half {name} =====", flush=True)
        sys.stdout.buffer.write(logs[name].read_bytes())
        sys.stdout.flush()
    print()
    for name, (code, secs) in ended.items():
        last = _summary(logs[name])
        print(f"[test] half {name}: exit {code} in {secs / 60:.1f} min: {last}")
    ok = all(code == 0 for code, _ in ended.values())
    print(f"[test] {'passed' if ok else 'FAILED'}: the whole suite in "
          f"{(time.monotonic() - started) / 60:.1f} min")  # fmt: skip
    if ok:
        shutil.rmtree(base, ignore_errors=True)
    else:
        print(f"[test] the halves' logs and temp dirs are kept in {base}")
    return 0 if ok else 1


def _summary(log: Path) -> str:
    """pytest's last line ("=== 1 failed, 900 passed in 612.00s ==="), stripped of its =s."""
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    return lines[-1].strip("= ") if lines else "(no output)"


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main(sys.argv[1:]))
