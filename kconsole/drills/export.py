"""A drill's timeline on disk: the events and the measurements as JSON (for tools) and as
Markdown (for the incident or drill report). Headless: the console and the CLI share it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kconsole.drills.measure import Measurement
from kconsole.timeline import Event, EventKind

# ACTION events whose `new` names one of these are faults; start / resume are restores.
FAULTS = ("stop", "kill", "pause")


def iso(ts: float) -> str:
    """UTC ISO 8601 with milliseconds: 2025-11-21T08:00:01.250+00:00."""
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="milliseconds")


def latest_fault(events: Sequence[Event]) -> Event | None:
    """The most recent ACTION event that took a broker away (stop, kill, pause)."""
    faults = [e for e in events if e.kind is EventKind.ACTION and e.new in FAULTS]
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


def timeline_document(
    events: Sequence[Event], measurements: Sequence[Measurement], fault: Event | None
) -> dict[str, Any]:
    """The JSON document: the fault, every event (oldest first) and the measurements."""
    ordered = sorted(events, key=lambda e: e.ts)
    return {
        "fault": None if fault is None else event_record(fault, fault),
        "events": [event_record(e, fault) for e in ordered],
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
    events: Sequence[Event], measurements: Sequence[Measurement], fault: Event | None
) -> str:
    """The Markdown report: heading, measurements table, events table."""
    ordered = sorted(events, key=lambda e: e.ts)
    title = f"Drill timeline: {fault.text}" if fault is not None else "Cluster timeline"
    out = [f"# {title}", ""]
    if fault is not None:
        out += [f"Fault at {iso(fault.ts)} (relative times below are seconds from it).", ""]
    out += ["## Measurements", ""]
    if measurements:
        out += ["| measurement | seconds | predicted | note |", "|---|---:|---|---|"]
        out += [
            f"| {_cell(m.name)} | {_seconds(m.seconds)} | {_cell(m.predicted)} | {_cell(m.note)} |"
            for m in measurements
        ]
    else:
        out.append("No drill to measure (no stop, kill or pause on the timeline).")
    out += ["", "## Events", ""]
    if ordered:
        out += ["| time (UTC) | s from fault | kind | event |", "|---|---:|---|---|"]
        out += [
            f"| {iso(e.ts)} | {_relative(e, fault)} | {e.kind.value} | {_cell(e.text)} |"
            for e in ordered
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
) -> tuple[Path, Path]:
    """Write the timeline as JSON and Markdown into `directory`; return (json, markdown).

    `fault` defaults to the latest stop / kill / pause on the timeline. Files are named after
    the fault, so exporting the same drill again brings its files up to date.
    """
    fault = fault if fault is not None else latest_fault(events)
    directory.mkdir(parents=True, exist_ok=True)
    stem = _stem(events, fault)
    json_path, md_path = directory / f"{stem}.json", directory / f"{stem}.md"
    document = timeline_document(events, measurements, fault)
    json_path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    md_path.write_text(timeline_markdown(events, measurements, fault), encoding="utf-8")
    return json_path, md_path
