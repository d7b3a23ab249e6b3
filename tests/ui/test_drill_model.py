"""The drill model without widgets: which action is the latest drill, the chart's replay, and
the export's files."""

from __future__ import annotations

import json
from pathlib import Path

from kconsole.cluster.control import BrokerAction
from kconsole.drills.export import export_timeline, latest_fault
from kconsole.drills.measure import Measurement
from kconsole.timeline import Event, EventKind, diff
from kconsole.ui.drill import ActionRun, Drill, drill_chart, frames, latest_drill
from tests.ui import builders as B


def run(action: BrokerAction, broker: int, ts: float, ok: bool | None = True) -> ActionRun:
    text = f"{action.value} broker {broker}"
    event = Event(ts, EventKind.ACTION, text, broker=broker, new=action.value)
    return ActionRun(action, broker, event, B.healthy(ts - 1), ok=ok)


class TestLatestDrill:
    """The latest stop / kill / pause that did not fail, and the start / resume that undid it."""

    def test_none_without_a_fault(self) -> None:
        assert latest_drill([run(BrokerAction.START, 1, B.T0)]) is None

    def test_restore_is_the_next_start_of_that_broker(self) -> None:
        runs = [
            run(BrokerAction.KILL, 1, B.T0),
            run(BrokerAction.START, 2, B.T0 + 5),  # another broker
            run(BrokerAction.START, 1, B.T0 + 9, ok=False),  # failed
            run(BrokerAction.START, 1, B.T0 + 20),
        ]
        drill = latest_drill(runs)
        assert drill is not None
        assert (drill.fault.ts, drill.target) == (B.T0, 1)
        assert drill.restore is not None and drill.restore.ts == B.T0 + 20

    def test_failed_fault_is_skipped(self) -> None:
        runs = [run(BrokerAction.PAUSE, 3, B.T0), run(BrokerAction.STOP, 2, B.T0 + 5, ok=False)]
        drill = latest_drill(runs)
        assert drill is not None and drill.target == 3 and drill.restore is None


class TestChart:
    """The chart replays the events over the snapshot taken before the fault."""

    def drill(self) -> tuple[Drill, list[Event]]:
        before, down = B.healthy(), B.broker_down(B.T0 + 7)
        fault = Event(B.T0 + 1, EventKind.ACTION, "kill broker 1", broker=1, new="kill")
        return Drill(fault, 1, before), [fault, *diff(before, down)]

    def test_one_snapshot_is_one_step(self) -> None:
        """Broker 1 leaving and its partitions moving share a timestamp: no false offline."""
        drill, events = self.drill()
        columns = frames(drill, events, B.T0, B.T0 + 10, 10)
        seen = [f for column in columns for f in column]
        assert max(f.offline for f in seen) == 0
        assert columns[0][-1].brokers[1] == "up" and columns[-1][-1].brokers[1] == "down"
        assert columns[-1][-1].controller == 2
        assert columns[-1][-1].under_replicated == len(B.partitions())

    def test_rows_fit_the_width(self) -> None:
        drill, events = self.drill()
        for width in (80, 160):
            lines = drill_chart(drill, events, B.T0 + 10, width).plain.splitlines()
            assert len(lines) == 8  # markers, 3 brokers, controller, offline, URP, axis
            assert all(len(line) <= width for line in lines), width
            assert lines[0].strip().startswith("▼ kill 1")
            assert lines[4].startswith("controller  1") and "2" in lines[4][13:]


class TestExport:
    """JSON and Markdown files, with times relative to the fault."""

    def test_files(self, tmp_path: Path) -> None:
        fault = Event(B.T0 + 1, EventKind.ACTION, "stop broker 1", broker=1, new="stop")
        left = Event(B.T0 + 3.5, EventKind.BROKER_LEFT, "broker 1 | left", broker=1)
        measured = [Measurement("fault -> broker gone from ZooKeeper", 2.5, "< 1 s")]
        assert latest_fault([left, fault]) == fault
        json_path, md_path = export_timeline([left, fault], measured, tmp_path / "out")
        assert json_path.name == "drill-20251121T080001Z-stop-broker-1.json"
        doc = json.loads(json_path.read_text())
        assert [e["since_fault_s"] for e in doc["events"]] == [0.0, 2.5]
        assert doc["events"][1]["time"] == "2025-11-21T08:00:03.500+00:00"
        assert doc["measurements"][0]["seconds"] == 2.5
        md = md_path.read_text()
        assert "| fault -> broker gone from ZooKeeper | 2.50 | < 1 s |  |" in md
        assert "broker 1 \\| left" in md  # a pipe cannot break the table

    def test_without_a_fault(self, tmp_path: Path) -> None:
        left = Event(B.T0, EventKind.BROKER_LEFT, "broker 1 left the cluster", broker=1)
        json_path, md_path = export_timeline([left], [], tmp_path)
        assert json_path.name == "timeline-20251121T080000Z.json"
        doc = json.loads(json_path.read_text())
        assert doc["fault"] is None and doc["events"][0]["since_fault_s"] is None
        assert "No drill to measure" in md_path.read_text()
