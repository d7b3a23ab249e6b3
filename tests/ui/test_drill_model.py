"""The drill model without widgets: which action is the latest drill, the chart's replay, and
the export's files."""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path

import pytest

from kconsole.cluster.values import BrokerAction
from kconsole.drills.export import ClusterIdentity, export_timeline, latest_fault
from kconsole.drills.measure import Measurement
from kconsole.models import BrokerState
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

    @pytest.mark.parametrize("fault", ["pause", "kill"])
    def test_offline_is_what_the_snapshots_said_and_the_events_say(self, fault: str) -> None:
        """The sequence recorded in a pause drill (bench/results/drills/pause.md): broker 1
        leaves ZooKeeper at +5.900 s, its partitions get new leaders 21 ms later, one snapshot
        in between. Paused, that snapshot has no offline partition, and the chart drew 4
        (issue 26: 'offline max 5' with no event). Killed, its leader is gone: offline, and
        the events say so, then online again."""
        gone = BrokerState.PAUSED if fault == "pause" else BrokerState.UNREACHABLE
        before = B.healthy()
        hit = dataclasses.replace(before, taken_at=B.T0 + 1.183, brokers=B.brokers(b1=gone))
        left = dataclasses.replace(
            hit,
            taken_at=B.T0 + 6.900,
            brokers=tuple(
                dataclasses.replace(
                    b,
                    registered=False,
                    state=BrokerState.PAUSED if fault == "pause" else BrokerState.DOWN,
                )
                if b.id == 1
                else b
                for b in hit.brokers
            ),
        )
        moved = dataclasses.replace(
            left,
            taken_at=B.T0 + 6.921,
            partitions=tuple(B.without(p, 1) for p in left.partitions),
        )
        snaps = [before, hit, left, moved]
        action = Event(B.T0 + 1, EventKind.ACTION, f"{fault} broker 1", broker=1, new=fault)
        events = [action, *(e for a, z in itertools.pairwise(snaps) for e in diff(a, z))]
        drill = Drill(action, 1, before)
        seen = [f for column in frames(drill, events, B.T0, B.T0 + 8, 800) for f in column]
        said = [sum(s.is_offline(p) for p in s.partitions) for s in snaps]
        assert max(f.offline for f in seen) == max(said)
        offline = [e for e in events if e.kind is EventKind.PARTITION_OFFLINE]
        online = [e for e in events if e.kind is EventKind.PARTITION_ONLINE]
        led = sum(p.leader == 1 for p in before.partitions)
        if fault == "pause":
            assert max(said) == 0 and not offline and not online
        else:
            assert max(said) == led == len(offline) == len(online) > 0
            assert offline[0].text.endswith("is offline (its leader, broker 1, is down)")
        measured = {m.name: m.seconds for m in drill.measurements(events)}
        assert measured[f"fault -> every partition it led ({led}) has a leader again"] == (
            pytest.approx(5.921)
        )

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
        # No measurement has a note: no note column (issue 26: it was empty in every row).
        assert "| measurement | seconds | predicted |\n" in md
        assert "| fault -> broker gone from ZooKeeper | 2.50 | < 1 s |\n" in md
        assert "broker 1 \\| left" in md  # a pipe cannot break the table

    def test_a_note_brings_its_column(self, tmp_path: Path) -> None:
        fault = Event(B.T0 + 1, EventKind.ACTION, "stop broker 1", broker=1, new="stop")
        measured = [
            Measurement("fault -> broker gone from ZooKeeper", 2.5, "< 1 s"),
            Measurement("fault -> out of every ISR", None, "< 1 s", "still in 2 ISR(s)"),
        ]
        _json, md_path = export_timeline([fault], measured, tmp_path)
        md = md_path.read_text()
        assert "| measurement | seconds | predicted | note |" in md
        assert "| fault -> broker gone from ZooKeeper | 2.50 | < 1 s |  |" in md
        assert "| fault -> out of every ISR | — | < 1 s | still in 2 ISR(s) |" in md

    def test_starts_shortly_before_the_fault_and_names_the_cluster(self, tmp_path: Path) -> None:
        """Events from LEAD_S (10 s) before the fault on, the rest counted as left out; the
        cluster named by its id, bootstrap and mode (issue 26: 256 s of events before it)."""
        fault = Event(B.T0 + 300, EventKind.ACTION, "kill broker 2", broker=2, new="kill")
        old = Event(B.T0 + 44, EventKind.BROKER_JOINED, "broker 3 joined", broker=3)
        near = Event(B.T0 + 291, EventKind.LEADER_CHANGED, "t/0 leader 1 -> 2", topic="t")
        cluster = ClusterIdentity("127.0.0.1:19092", "Yq3kP", "127.0.0.1:22181")
        json_path, md_path = export_timeline([old, near, fault], [], tmp_path, cluster=cluster)
        doc = json.loads(json_path.read_text())
        assert [e["text"] for e in doc["events"]] == ["t/0 leader 1 -> 2", "kill broker 2"]
        assert doc["events_left_out"] == 1
        assert doc["events_from"] == "2025-11-21T08:04:50.000+00:00"
        assert doc["cluster"] == {
            "bootstrap": "127.0.0.1:19092",
            "cluster_id": "Yq3kP",
            "zookeeper": "127.0.0.1:22181",
            "mode": "ZooKeeper mode (ZooKeeper 127.0.0.1:22181)",
        }
        md = md_path.read_text()
        assert md.startswith(
            "# Drill timeline: kill broker 2\n\nCluster id Yq3kP, bootstrap 127.0.0.1:19092, "
            "ZooKeeper mode (ZooKeeper 127.0.0.1:22181).\n"
        )
        assert "From 10 s before the fault (2025-11-21T08:04:50.000+00:00); 1 earlier" in md
        assert "broker 3 joined" not in md and "| -9.000 | leader-changed |" in md
        unknown = ClusterIdentity("h:1", None)
        assert unknown.line() == (
            "Cluster id unknown (no broker answered), bootstrap h:1, "
            "no ZooKeeper given: Admin API only."
        )

    def test_without_a_fault(self, tmp_path: Path) -> None:
        left = Event(B.T0, EventKind.BROKER_LEFT, "broker 1 left the cluster", broker=1)
        json_path, md_path = export_timeline([left], [], tmp_path)
        assert json_path.name == "timeline-20251121T080000Z.json"
        doc = json.loads(json_path.read_text())
        assert doc["fault"] is None and doc["events"][0]["since_fault_s"] is None
        assert "No drill to measure" in md_path.read_text()
