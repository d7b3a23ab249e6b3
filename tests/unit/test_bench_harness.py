"""The benchmark harness (`make bench`), run small: it must run end to end and write a report
with every figure and its target. No timing is asserted here (bench/RESULTS.md holds those)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from suite import NOT_MET, Figure, Section, report  # noqa: E402


def test_smoke_run_writes_the_report(tmp_path: Path) -> None:
    out = tmp_path / "RESULTS.md"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "suite.py"), "--smoke", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    text = out.read_text()
    assert "## Targets" in text and "- machine: " in text and "- command: " in text
    rows = [line for line in text.splitlines() if line.startswith("| 200 partitions: ")]
    names = {line.split("|")[1].strip() for line in rows}
    assert "200 partitions: apply: one leader moved (ms CPU)" in names
    assert "200 partitions: RSS after (MiB)" in names
    for line in rows:  # every figure has a number and, when it has a target, a verdict
        cells = [c.strip() for c in line.split("|")]
        assert re.match(r"[\d.,]+ \(", cells[2]), line
        assert (cells[4] == "") == (cells[5] == ""), line
    assert re.search(r"\| idle: UI main thread, headless \| [\d.]+ ", text)
    assert (tmp_path / "charts" / "scale.png").stat().st_size > 1000
    assert "![scale curve](charts/scale.png)" in text


def test_a_broken_section_is_reported_and_fails_the_run(tmp_path: Path) -> None:
    out = tmp_path / "RESULTS.md"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "suite.py"), "--only", "nope", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode != 0 and "unknown section" in done.stderr


def test_verdicts() -> None:
    assert Figure("a", "ms", [50, 80, 300], 100).verdict() == "met"  # the median
    assert Figure("a", "ms", [50, 80, 300], 100, stat="max").verdict() == "**missed** (3.0x)"
    assert (
        Figure("r", "", [0.5, 0.6, 0.7], 0.9, higher_is_better=True)
        .verdict()
        .startswith("**missed**")
    )
    assert Figure("r", "", [0.95], 0.9, higher_is_better=True).verdict() == "met"
    assert Figure("n", "", [1.0]).verdict() == ""


def test_a_missed_target_links_to_the_analysis() -> None:
    """RESULTS.md says by how much a target is missed, and points to why (bench/NOT-MET.md)."""
    assert (ROOT / "bench" / NOT_MET).exists()
    missed = Section("s", figures=[Figure("slow", "ms", [250.0, 300.0], 200.0)])
    text = report([missed], [], "2026-01-01 00:00", "0.1")
    assert "| slow | 275 (250-300) ms | 2 | ≤ 200 | **missed** (1.4x) |" in text
    assert "Missed: 1. What the profiles show for them" in text
    assert f"]({NOT_MET})" in text
    met = Section("s", figures=[Figure("fast", "ms", [50.0], 200.0)])
    assert NOT_MET not in report([met], [], "2026-01-01 00:00", "0.1")
