"""A drill's timeline on disk: the events and the measurements as JSON (for tools) and as
Markdown (for the incident or drill report). Headless: the console and the CLI share it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kconsole.drills.measure import Measurement
from kconsole.faults import fault_names
from kconsole.timeline import Event, EventKind

# How far before the fault an export starts: what led up to it (a restore still settling, a
# leader moving back), without every event the console kept since it started.
LEAD_S = 10.0


@dataclass(frozen=True)
class ClusterIdentity:
    """Which cluster a timeline is of: how kconsole reached it and what it called itself."""

    bootstrap: str
    cluster_id: str | None  # None: no broker has told it yet
    zookeeper: str = ""  # "" when the console watched no ZooKeeper

    @property
    def mode(self) -> str:
        """How kconsole read it: ZooKeeper watches plus the Admin API, or the Admin API only."""
        if self.zookeeper:
            return f"ZooKeeper mode (ZooKeeper {self.zookeeper})"
        return "no ZooKeeper given: Admin API only"

    def line(self) -> str:
        """'Cluster id abc, bootstrap h:p, ZooKeeper mode (ZooKeeper h:p).'"""
        cid = self.cluster_id or "unknown (no broker answered)"
        return f"Cluster id {cid}, bootstrap {self.bootstrap}, {self.mode}."

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "mode": self.mode}


def iso(ts: float) -> str:
    """UTC ISO 8601 with milliseconds: 2025-11-21T08:00:01.250+00:00."""
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="milliseconds")


def latest_fault(events: Sequence[Event]) -> Event | None:
    """The most recent ACTION event that took a broker away (one of the faults; the heals,
    start and resume, are restores)."""
    faults = [e for e in events if e.kind is EventKind.ACTION and e.new in fault_names()]
    return max(faults, key=lambda e: e.ts) if faults else None


def _jsonable(value: object) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    return str(value)


def event_record(e: Event, fault: Event | None) -> dict[str, Any]:
    """One event as exported: ISO time, seconds relative to the fault, and its fields."""
    return {
        "time": iso(e.ts),
        "ts": e.ts,
        "since_fault_s": None if fault is None else round(e.ts - fault.ts, 3),
        "kind": e.kind.value,
        "text": e.text,
        "broker": e.broker,
        "topic": e.topic,
        "partition": e.partition,
        "old": _jsonable(e.old),
        "new": _jsonable(e.new),
    }


def window(
    events: Sequence[Event], fault: Event | None, lead_s: float | None
) -> tuple[list[Event], float | None]:
    """The events exported, oldest first, and where they start: `lead_s` before the fault
    (None: all of them, and no start)."""
    ordered = sorted(events, key=lambda e: e.ts)
    if fault is None or lead_s is None:
        return ordered, None
    start = fault.ts - lead_s
    return [e for e in ordered if e.ts >= start], start


def timeline_document(
    events: Sequence[Event],
    measurements: Sequence[Measurement],
    fault: Event | None,
    *,
    cluster: ClusterIdentity | None = None,
    lead_s: float | None = LEAD_S,
) -> dict[str, Any]:
    """The JSON document: the cluster, the fault, the events from `lead_s` before it (oldest
    first) and the measurements."""
    kept, start = window(events, fault, lead_s)
    return {
        "cluster": None if cluster is None else cluster.to_dict(),
        "fault": None if fault is None else event_record(fault, fault),
        "events_from": None if start is None else iso(start),
        "events_left_out": len(events) - len(kept),
        "events": [event_record(e, fault) for e in kept],
        "measurements": [m.to_dict() for m in measurements],
    }


def _cell(value: object) -> str:
    # A Markdown table cell: pipes escaped, line breaks folded.
    return str(value).replace("|", "\\|").replace("\n", " ")


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _relative(e: Event, fault: Event | None) -> str:
    return "" if fault is None else f"{e.ts - fault.ts:+.3f}"


def timeline_markdown(
    events: Sequence[Event],
    measurements: Sequence[Measurement],
    fault: Event | None,
    *,
    cluster: ClusterIdentity | None = None,
    lead_s: float | None = LEAD_S,
) -> str:
    """The Markdown report: heading, the cluster, measurements table, events table."""
    kept, start = window(events, fault, lead_s)
    title = f"Drill timeline: {fault.text}" if fault is not None else "Cluster timeline"
    out = [f"# {title}", ""]
    if cluster is not None:
        out += [cluster.line(), ""]
    if fault is not None:
        out += [f"Fault at {iso(fault.ts)} (relative times below are seconds from it).", ""]
    out += ["## Measurements", ""]
    if measurements:
        # The note column only when some measurement has one: an empty column says nothing.
        noted = any(m.note for m in measurements)
        head = "| measurement | seconds | predicted |" + (" note |" if noted else "")
        out += [head, "|---|---:|---|" + ("---|" if noted else "")]
        out += [
            f"| {_cell(m.name)} | {_seconds(m.seconds)} | {_cell(m.predicted)} |"
            + (f" {_cell(m.note)} |" if noted else "")
            for m in measurements
        ]
    else:
        out.append("No drill to measure (no stop, kill or pause on the timeline).")
    out += ["", "## Events", ""]
    if start is not None:
        earlier = len(events) - len(kept)
        out += [
            f"From {lead_s:g} s before the fault ({iso(start)})"
            + (f"; {earlier} earlier event(s) left out." if earlier else "; nothing earlier kept.")
            + "",
            "",
        ]
    if kept:
        out += ["| time (UTC) | s from fault | kind | event |", "|---|---:|---|---|"]
        out += [
            f"| {iso(e.ts)} | {_relative(e, fault)} | {e.kind.value} | {_cell(e.text)} |"
            for e in kept
        ]
    else:
        out.append("No events.")
    return "\n".join(out) + "\n"


def _stem(events: Sequence[Event], fault: Event | None) -> str:
    if fault is not None:
        at = datetime.fromtimestamp(fault.ts, tz=UTC).strftime("%Y%m%dT%H%M%SZ")
        what = str(fault.new or "action")
        return f"drill-{at}-{what}-broker-{fault.broker}"
    last = max((e.ts for e in events), default=datetime.now(tz=UTC).timestamp())
    return "timeline-" + datetime.fromtimestamp(last, tz=UTC).strftime("%Y%m%dT%H%M%SZ")


def export_timeline(
    events: Sequence[Event],
    measurements: Sequence[Measurement],
    directory: Path,
    *,
    fault: Event | None = None,
    cluster: ClusterIdentity | None = None,
    lead_s: float | None = LEAD_S,
) -> tuple[Path, Path]:
    """Write the timeline as JSON and Markdown into `directory`; return (json, markdown).

    `fault` defaults to the latest stop / kill / pause on the timeline; the events start
    `lead_s` before it (all of them without a fault). Files are named after the fault, so
    exporting the same drill again brings its files up to date.
    """
    fault = fault if fault is not None else latest_fault(events)
    directory.mkdir(parents=True, exist_ok=True)
    stem = _stem(events, fault)
    json_path, md_path = directory / f"{stem}.json", directory / f"{stem}.md"
    document = timeline_document(events, measurements, fault, cluster=cluster, lead_s=lead_s)
    json_path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    md_path.write_text(
        timeline_markdown(events, measurements, fault, cluster=cluster, lead_s=lead_s),
        encoding="utf-8",
    )
    return json_path, md_path
