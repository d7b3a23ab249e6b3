"""kconsole installed as a tool (pipx, uv tool, pip) is the whole tool: the wheel carries the
Spark jobs and the compose files, and a job runs from it, outside any checkout.

The wheel is built from this checkout and installed into a new virtualenv in a temporary folder;
the commands run from another temporary folder, so nothing of the checkout is on their path.
The new venv takes kconsole's dependencies (pyspark, confluent-kafka, ...) from the test's own
environment through a path file, so the test does not download half a gigabyte again: only
kconsole itself comes from the wheel, which the first test checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kconsole.cluster.local.cluster import LocalCluster
from tests.integration.jobs_support import QUICK_JVM, new_topic, produce

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The bin/ folder of a new venv with kconsole installed from a wheel of this checkout."""
    base = tmp_path_factory.mktemp("installed")
    wheels = base / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)],
        check=True,
        timeout=300,
    )
    (wheel,) = wheels.glob("kconsole-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    # From outside the checkout and without PYTHONPATH: pip must not take the checkout's
    # kconsole.egg-info for an installed kconsole.
    subprocess.run(
        [venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
        check=True,
        timeout=300,
        cwd=base,
        env=_clean_env(),
    )
    # The dependencies from this environment; its own .pth files (kconsole's editable install
    # among them) are not read from a folder a path file names.
    out = subprocess.run(
        [
            venv / "bin" / "python",
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    site = Path(out.stdout.strip())
    (site / "kconsole_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    yield venv / "bin"


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def run(tool: Path, *args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """A command of the installed venv, from `cwd`, without this checkout on its path."""
    env = _clean_env()
    env["PATH"] = f"{tool}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(
        list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def test_the_installed_package_is_the_wheels_not_the_checkouts(tool: Path, tmp_path: Path) -> None:
    """kconsole, its jobs and its compose files come from the venv, not from this checkout."""
    code = (
        "import json, kconsole, kconsole.paths as p; "
        "print(json.dumps([kconsole.__file__, str(p.bundled('jobs')), str(p.bundled('compose'))]))"
    )
    out = run(tool, str(tool / "python"), "-c", code, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    package, jobs, compose = (Path(p) for p in json.loads(out.stdout))
    venv = tool.parent.resolve()
    for path in (package, jobs, compose):
        assert path.resolve().is_relative_to(venv), f"{path} is not in the installed venv"
        assert not path.resolve().is_relative_to(ROOT), f"{path} comes from the checkout"
    assert (jobs / "keyed_counts.py").is_file()
    assert (jobs / "_kconsole_jobs" / "job.py").is_file()
    assert (compose / "docker-compose.yml").is_file()
    assert (compose / "docker-compose.kraft.yml").is_file()
    assert os.access(compose / "kafka-image" / "kafka-entrypoint", os.X_OK)


def test_jobs_list_names_the_shipped_jobs(tool: Path, tmp_path: Path) -> None:
    """`kconsole jobs list` of the installed tool lists both Spark jobs."""
    out = run(tool, "kconsole", "jobs", "list", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    names = [line.split()[0] for line in out.stdout.splitlines() if line[:1].isalpha()]
    assert names == ["keyed-counts", "sequence-checker"], out.stdout


def test_a_job_runs_from_the_installed_tool(
    tool: Path, tmp_path: Path, cluster: LocalCluster
) -> None:
    """keyed-counts from the installed tool reads every record of a topic and counts them."""
    topic = new_topic(cluster, "installed")
    keys = [f"k{i % 5}" for i in range(60)]
    # One timestamp, the start of the current 10 s window: every record falls in one window.
    # (Not a fixed old date: the topic's retention would delete such records, whose timestamps
    # are older than retention.ms, before the job reads them.)
    window_start = int(time.time() // 10) * 10_000
    produce(cluster, topic, ((k, b"v", window_start) for k in keys))
    out_dir = tmp_path / "out"
    job = run(
        tool,
        "kconsole",
        "-b",
        cluster.spec.bootstrap,
        "-z",
        "",
        "jobs",
        "start",
        "keyed-counts",
        "--attach",
        *("-o", f"topic={topic}", "-o", "starting-offsets=earliest", "-o", "available-now=true"),
        *("-o", "output-topic=", "-o", "group-id=", "-o", f"output-dir={out_dir}"),
        *("-o", f"checkpoint={tmp_path / 'checkpoint'}", "-o", "master=local[2]"),
        *("-o", "shuffle-partitions=2", "-o", "conf=spark.driver.memory=512m"),
        *("-o", f"conf=spark.driver.extraJavaOptions={QUICK_JVM}"),
        cwd=tmp_path,
        timeout=400,
    )
    assert job.returncode == 0, job.stdout + job.stderr
    assert "state: finished" in job.stdout, job.stdout
    counted: dict[str, int] = {}
    for batch in out_dir.glob("*.json*"):
        for line in batch.read_text().splitlines():
            row = json.loads(line)
            counted[row["key"]] = max(counted.get(row["key"], 0), row["count"])
    assert counted == {f"k{i}": 12 for i in range(5)}, job.stdout
