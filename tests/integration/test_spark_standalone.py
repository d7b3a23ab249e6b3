"""The --master path: keyed-counts on a real standalone Spark master + worker, both started
from the pyspark installation (bin/spark-class), not in local mode."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from kconsole.cluster import jars
from kconsole.cluster.local.cluster import LocalCluster
from kconsole.jobs import JobState, latest_counts
from tests.integration.jobs_support import (
    QUICK_JVM,
    describe,
    job_manager,
    new_topic,
    produce,
    settings_for,
)
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def _free_ports(n: int, start: int = 27000, stop: int = 32000) -> list[int]:
    """n free ports below the ephemeral range (so a worker's own connections cannot take them)."""
    found: list[int] = []
    for port in range(start, stop):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        found.append(port)
        if len(found) == n:
            return found
    raise RuntimeError("not enough free ports")


def _json(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return json.loads(resp.read())


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process group we created for it (the worker's executors too), then
    SIGKILL; only ever our own pids."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    except ProcessLookupError:
        pass


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A master and one worker (2 cores, 1 GiB) on 127.0.0.1, free ports below 32768."""
    spark_class = str(jars.pyspark_install().spark_class())
    work = tmp_path_factory.mktemp("spark-standalone")
    m_port, m_ui, w_port, w_ui = _free_ports(4)
    env = dict(
        os.environ,
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_WORKER_DIR=str(work / "work"),
        SPARK_DAEMON_JAVA_OPTS=QUICK_JVM,  # the master's and the worker's JVMs
    )
    procs: list[subprocess.Popen[bytes]] = []

    def spawn(name: str, *args: str) -> subprocess.Popen[bytes]:
        log = open(work / f"{name}.log", "wb")  # noqa: SIM115 - the process keeps it open
        proc = subprocess.Popen(
            [spark_class, *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        procs.append(proc)
        return proc

    try:
        spawn(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", str(m_port), "--webui-port", str(m_ui),
        )  # fmt: skip
        master_url = f"spark://127.0.0.1:{m_port}"
        spawn(
            "worker",
            "org.apache.spark.deploy.worker.Worker",
            master_url,
            "--host", "127.0.0.1", "--port", str(w_port), "--webui-port", str(w_ui),
            "--cores", "2", "--memory", "1g", "--work-dir", str(work / "work"),
        )  # fmt: skip
        ui = f"http://127.0.0.1:{m_ui}/json/"
        wait_until(
            lambda: (
                _json(ui).get("aliveworkers", 0) >= 1 or any(p.poll() is not None for p in procs)
            ),
            120,
            "the standalone worker to register",
        )
        assert all(p.poll() is None for p in procs), (work / "master.log").read_text()[-3000:]
        yield {"master": master_url, "ui": ui, "logs": work}
    finally:
        for proc in reversed(procs):
            _stop(proc)
        left = [p.pid for p in procs if psutil.pid_exists(p.pid) and p.poll() is None]
        assert not left, f"spark processes left: {left}"


def test_keyed_counts_on_a_standalone_master(
    cluster: LocalCluster, standalone: dict[str, Any], tmp_path: Path
) -> None:
    """The job registers with the master, its executors on the worker do the counting, and
    the result is the same as in local mode."""
    topic = new_topic(cluster, "sa")
    base = (int(time.time() * 1000) // 10_000) * 10_000 - 60_000
    records = [("x", b"1", base + i) for i in range(7)] + [
        ("y", b"1", base + 50 + i) for i in range(3)
    ]
    produce(cluster, topic, records)
    with job_manager(tmp_path / "state", settings_for(cluster)) as manager:
        run = manager.start(
            "keyed-counts",
            {
                "master": standalone["master"],
                "topic": topic,
                "starting-offsets": "earliest",
                "output-topic": "",
                "trigger": "0.5",
                "shuffle-partitions": "2",
                "stop-grace": "5",
                "conf": [
                    "spark.driver.host=127.0.0.1",
                    "spark.driver.bindAddress=127.0.0.1",
                    "spark.executor.memory=512m",
                    "spark.cores.max=2",
                    f"spark.driver.extraJavaOptions={QUICK_JVM}",
                    f"spark.executor.extraJavaOptions={QUICK_JVM}",
                ],
            },
        )
        day = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(base / 1000)) + ".000Z"
        expected = {(day, "x"): 7, (day, "y"): 3}
        wait_until(
            lambda: (
                latest_counts(manager.read_output(run.run_id)) == expected
                or not manager.get(run.run_id).active
            ),
            240,
            "the counts from the standalone cluster",
        )
        got = manager.get(run.run_id)
        assert latest_counts(manager.read_output(run.run_id)) == expected, describe(got, manager)
        # Not local mode: the master lists the application, running on the worker's executors.
        apps = _json(standalone["ui"]).get("activeapps", [])
        assert any(a.get("name") == "kconsole-keyed_counts" for a in apps), apps
        running = [
            json.loads(ln)
            for ln in got.progress_path.read_text().splitlines()
            if '"state": "running"' in ln
        ]
        assert running and running[0]["master"] == standalone["master"]
        stopped = manager.stop(run.run_id, timeout_s=30)
        assert stopped.state is JobState.STOPPED and stopped.exit_code == 0, describe(
            stopped, manager
        )
    wait_until(
        lambda: not _json(standalone["ui"]).get("activeapps"),
        60,
        "the application to leave the master",
    )
