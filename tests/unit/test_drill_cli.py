"""`kconsole drill run` without a cluster: what it refuses before anything starts, what it
keeps out of its output, and what its report says (issue 26, items 5 and 21)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from kconsole.cli import main as cli
from kconsole.drills.audit import Acked, Consumed, check
from kconsole.drills.export import ClusterIdentity
from kconsole.drills.spec import DrillReport, DrillSpec
from kconsole.drills.verify import _parse
from kconsole.drills.workload import padded
from kconsole.faults.process import PAGE_CACHE_NOTE, PAUSE_NOTE
from kconsole.timeline import Event, EventKind


def test_a_restore_after_the_workload_ends_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--duration 5 --restore-after 10` was accepted without a word (the workload silently ran
    longer). Now it is refused with the reason and the way out, and nothing is written."""
    monkeypatch.setenv("KCONSOLE_STATE_DIR", str(tmp_path / "state"))
    report = tmp_path / "r" / "pause.json"
    result = CliRunner().invoke(
        cli,
        [
            "--bootstrap",
            "127.0.0.1:1",
            "--zookeeper",
            "",
            "drill",
            "run",
            "--fault",
            "pause",
            "--target",
            "broker:1",
            "--duration",
            "5",
            "--restore-after",
            "10",
            "--yes",
            "--report",
            str(report),
        ],
    )
    assert result.exit_code == 1, result.output
    assert (
        "error: --restore-after 10 s does not fit in --duration 5 s: the fault comes 2 s after "
        "the workload starts, so the workload would end before the restore. Give --duration "
        "more than 12 s" in result.output
    )
    assert not report.parent.exists()


def test_kafka_pythons_log_lines_go_to_the_log_file(tmp_path: Path) -> None:
    """kafka-python logs a request a paused broker does not answer as an ERROR: four such
    lines leaked into `drill run`'s output. They now go to kconsole.log in the state dir;
    kconsole's own errors still reach the terminal."""
    script = textwrap.dedent(
        """
        import logging
        from kconsole.cli.main import _library_log, _quiet_libraries
        _quiet_libraries()
        _library_log()
        logging.getLogger("kafka.net.transport").error(
            "<KafkaConnection node_id=2>: Abort (RequestTimedOutError)"
        )
        logging.getLogger("kconsole.x").error("our own error")
        """
    )
    state = tmp_path / "state"
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={"KCONSOLE_STATE_DIR": str(state), "PATH": ""},
        timeout=60,
        check=True,
    )
    assert "RequestTimedOutError" not in done.stderr + done.stdout
    assert "ERROR kconsole.x: our own error" in done.stderr
    log = (state / "kconsole.log").read_text()
    assert (
        "ERROR kafka.net.transport: <KafkaConnection node_id=2>: Abort (RequestTimedOutError)"
        in log
    )


def test_the_report_counts_from_the_fault_and_says_what_a_pause_is() -> None:
    """The pause report of issue 26: one origin (the fault), named; no empty '## Audit' heading
    before the audit's own; the caveat of a pause, not of a kill; the cluster named."""
    fault = Event(1000.0, EventKind.ACTION, "pause broker 1", broker=1, new="pause")
    resume = Event(1010.0, EventKind.ACTION, "resume broker 1", broker=1, new="resume")
    acked = [Acked("k0", i, 0, i, t - 0.01, t) for i, t in enumerate([0.5, 1.85, 8.15, 9.0])]
    read = [Consumed(a.key, a.seq, 0, a.offset) for a in acked]
    # Workload clock: sending from 0.0 to 10.0, the fault at 2.0 (the warm-up).
    audit = check(
        acked,
        [],
        read,
        send_times=(0.0, 10.0),
        origin=2.0,
        origin_name="the fault",
        caveats=[PAUSE_NOTE],
    )
    spec = DrillSpec("pause", "broker:1", duration_s=30, restore_after_s=10)
    report = DrillReport(
        spec,
        1,
        False,
        "2026-11-26T06:00:00+00:00",
        fault.ts,
        ["pause: ..."],
        [],
        audit,
        [fault, resume],
        True,
        cluster=ClusterIdentity("127.0.0.1:19092", "Ft2Qc7m1", "127.0.0.1:22181"),
    )
    md = report.markdown()
    assert "## Audit\n" not in md and md.count("## Acked-message audit (acks=all)") == 1
    assert "Times are counted from the fault (1970-01-01T00:16:40.000+00:00)" in md
    assert "| longest window with no successful send | 6.30 s (-0.15 s to +6.15 s from " in md
    assert PAUSE_NOTE in md and PAGE_CACHE_NOTE not in md
    assert "Cluster id Ft2Qc7m1, bootstrap 127.0.0.1:19092, ZooKeeper mode" in md
    doc = report.to_dict()
    assert doc["cluster"]["cluster_id"] == "Ft2Qc7m1"
    assert doc["audit"]["origin"] == {"name": "the fault", "at": 2.0}


def test_help_names_the_kraft_targets() -> None:
    """--help lists the KRaft targets next to the broker ones."""
    result = CliRunner().invoke(cli, ["drill", "run", "--help"], terminal_width=200)
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    for target in ("active-controller", "controller:ID", "quorum-majority", "broker:ID"):
        assert target in text


@pytest.mark.parametrize("size", [0, 60, 86, 87, 97, 98, 1024, 65_536])
def test_a_padded_value_is_the_size_asked_and_read_back_like_any_other(size: int) -> None:
    """--message-bytes: the drill's value is padded to exactly that many bytes (when longer than
    the record itself and its empty "pad" field), and the read-back parses it as it parses an
    unpadded one (the run, the key and the sequence number)."""
    record = {"run": "abcdef123456", "key": "k7", "seq": 1234, "ts": 1796590000.123456}
    plain = json.dumps(record)
    value = padded(record, size)
    with_field = len(json.dumps({**record, "pad": ""}))
    if size <= len(plain):
        assert value == plain
    else:
        assert len(value.encode()) == max(size, with_field)
    assert _parse(value.encode(), "abcdef123456", 2, 9) == Consumed("k7", 1234, 2, 9)
    assert _parse(value.encode(), "another-run", 2, 9) is None
