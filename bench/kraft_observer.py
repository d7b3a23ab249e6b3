"""The observer on a KRaft cluster: how fast it finds the mode, its idle CPU, and how long a
killed quorum leader takes to reach a published snapshot.

    .venv/bin/python bench/kraft_observer.py --state-dir DIR [--kills 3] [--idle 30]

DIR holds a running local KRaft cluster (dedicated controllers) that kconsole started: the bench
kills its active controller (SIGKILL, by the pid the cluster recorded) and starts it again,
`--kills` times, waiting (deadlines) until the quorum is whole after each. The observer runs
with the default ZooKeeper connect string (nothing answers there) and the cluster's brokers.

Per kill it prints: kill -> a 50 ms poller asking the controllers directly sees the new leader
(Kafka's own election, as seen from outside) and kill -> the observer publishes it; the
difference is what the observer adds.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kconsole.cluster import jars
from kconsole.cluster.kraft.cluster import KRaftCluster
from kconsole.config import Settings
from kconsole.models import ClusterMode, ClusterSnapshot
from kconsole.observer import ClusterObserver
from kconsole.timeline import Event


def wait(cond: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.05)
    raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--idle", type=float, default=30.0)
    args = parser.parse_args()
    cluster = KRaftCluster(args.state_dir)
    spec = cluster.spec
    snaps: list[tuple[float, ClusterSnapshot]] = []
    lock = threading.Lock()

    def on_update(snap: ClusterSnapshot, _events: tuple[Event, ...]) -> None:
        with lock:
            snaps.append((time.monotonic(), snap))

    def latest() -> ClusterSnapshot | None:
        with lock:
            return snaps[-1][1] if snaps else None

    obs = ClusterObserver(Settings(bootstrap=spec.bootstrap))  # default ZooKeeper, not there
    started = time.monotonic()
    obs.start(on_update)
    try:
        wait(lambda: (s := latest()) is not None and s.mode is ClusterMode.KRAFT, 60, "KRaft")
        kraft_s = next(t for t, s in snaps if s.mode is ClusterMode.KRAFT) - started
        print(f"mode kraft published {kraft_s:.2f} s after start (default ZooKeeper given)")
        time.sleep(3)  # let the first full reads settle before measuring the idle cost
        cpu0, wall0 = time.process_time(), time.monotonic()
        time.sleep(args.idle)
        cpu = time.process_time() - cpu0
        wall = time.monotonic() - wall0
        print(f"idle: {cpu:.2f} s CPU in {wall:.1f} s = {100 * cpu / wall:.1f} % of one core")
        lib = jars.ensure_kafka_jars(spec.kafka_version)
        for run in range(args.kills):
            snap = latest()
            assert snap is not None and snap.quorum is not None
            old, epoch = snap.quorum.leader_id, snap.quorum.leader_epoch or 0
            name = f"controller-{old}"
            seen_direct: list[float] = []

            def direct(old: int | None = old, seen_direct: list[float] = seen_direct) -> None:
                ports = list(spec.controller_ports().values())
                from kconsole.cluster.kraft import probes as kraft_probes

                end = time.monotonic() + 60
                while time.monotonic() < end:
                    q = kraft_probes.quorum_from_controllers(spec.host, ports, 0.5)
                    if q is not None and q.leader_id != old:
                        seen_direct.append(time.monotonic())
                        return
                    time.sleep(0.05)

            poller = threading.Thread(target=direct, daemon=True)
            poller.start()
            killed = time.monotonic()
            cluster.process(name).signal(signal.SIGKILL)

            def published(
                old: int | None = old, epoch: int = epoch, killed: float = killed
            ) -> float | None:
                with lock:
                    for t, s in snaps:
                        c = s.controller
                        if t >= killed and c.id not in (None, old) and (c.epoch or 0) > epoch:
                            return t
                return None

            t_pub = wait(published, 60, "a new leader in a published snapshot")
            poller.join(60)
            t_direct = seen_direct[0] - killed if seen_direct else float("nan")
            print(
                f"kill {run + 1}: leader {old} killed; direct poller saw a new leader after "
                f"{t_direct:.2f} s, observer published it after {t_pub - killed:.2f} s "
                f"(observer adds {t_pub - killed - t_direct:.2f} s)"
            )
            wait(lambda n=name: cluster.process(n).wait_exit(0.1), 30, f"{name} gone")
            cluster._start([spec.node(name)], lib)
            wait(
                lambda: (
                    (q := cluster.quorum(1.0)) is not None
                    and all((v.log_end_offset or -1) >= q.high_watermark - 100 for v in q.voters)
                ),
                120,
                "the quorum whole again",
            )
    finally:
        obs.stop()


if __name__ == "__main__":
    main()
