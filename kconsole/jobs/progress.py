"""What a job reports: its stdout is one JSON object per line (state, checkpoint, progress,
output, finding, findings, warning), its stderr is Spark's and Kafka's log. Parsing both, never
trusting either: anything that is not a well-formed line is skipped."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class JobProgress:
    """One StreamingQueryProgress as the job reported it."""

    ts: float  # when the job emitted it (epoch seconds)
    batch_id: int
    input_rows: int
    input_rows_per_second: float | None
    processed_rows_per_second: float | None
    batch_duration_ms: int | None
    # Per partition the log end right after the batch - the batch's end offset, summed: what
    # the job's group lag is once it has committed that end. None when it could not be read.
    offsets_behind: int | None
    end_offsets: dict[tuple[str, int], int]
    latest_offsets: dict[tuple[str, int], int] = field(default_factory=dict)  # Spark's, at plan
    behind_at: float | None = None  # when the log ends were read (epoch seconds)
    behind_unknown: str | None = None  # why offsets_behind is None
    log_end_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    # What Spark left for later when it planned the batch (its latestOffset - end): 0 unless
    # max-offsets-per-trigger capped the batch, whatever arrived since.
    behind_at_plan: int | None = None
    duration_ms: dict[str, int] = field(default_factory=dict)
    timestamp: str = ""  # Spark's trigger time, ISO 8601
    watermark: str | None = None
    state_rows: int | None = None


@dataclass(frozen=True)
class CheckpointNote:
    """What the job did with its checkpoint when it started: `status` is new (none yet),
    resuming (this cluster's and topic incarnation's), fresh (the old one moved aside by
    fresh-checkpoint), refused (another cluster's or topic incarnation's, or of unknown origin:
    the run fails with the way out) or unverified (resumed, but could not be checked)."""

    status: str
    message: str  # one line for a person, e.g. "resuming from checkpoint: offsets {...}"
    path: str = ""
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)  # where it resumes
    batch: int | None = None  # the newest committed batch it resumes after
    out_of_range: tuple[str, ...] = ()  # resume offsets beyond a log's end / below its start
    moved_to: str | None = None  # where fresh-checkpoint moved the old one


def parse_checkpoint_line(data: dict[str, Any]) -> CheckpointNote | None:
    """A "checkpoint" line (already parsed by parse_line) as a CheckpointNote."""
    if data.get("type") != "checkpoint" or not isinstance(data.get("status"), str):
        return None
    try:
        return CheckpointNote(
            status=data["status"],
            message=str(data.get("message") or data["status"]),
            path=str(data.get("path") or ""),
            offsets=_flat_offsets(data.get("offsets")),
            batch=_int(data.get("batch")),
            out_of_range=tuple(str(x) for x in data.get("outOfRange") or ()),
            moved_to=str(data["movedTo"]) if data.get("movedTo") else None,
        )
    except (TypeError, ValueError, AttributeError):
        return None


def parse_line(line: str | bytes) -> dict[str, Any] | None:
    """One JSON object from a job's stdout, or None for anything else."""
    if isinstance(line, bytes):
        line = line.decode("utf-8", "replace")
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        data = json.loads(line)
    except ValueError:
        return None
    return data if isinstance(data, dict) and isinstance(data.get("type"), str) else None


def parse_progress_line(line: str | bytes) -> JobProgress | None:
    """A progress line as JobProgress; None for other lines and garbage."""
    data = parse_line(line)
    if data is None or data["type"] != "progress":
        return None
    try:
        return JobProgress(
            ts=float(data.get("ts") or 0.0),
            batch_id=int(data["batchId"]),
            input_rows=int(data.get("numInputRows") or 0),
            input_rows_per_second=_float(data.get("inputRowsPerSecond")),
            processed_rows_per_second=_float(data.get("processedRowsPerSecond")),
            batch_duration_ms=_int(data.get("batchDuration")),
            offsets_behind=_int(data.get("offsetsBehindLatest")),
            end_offsets=_flat_offsets(data.get("endOffset")),
            latest_offsets=_flat_offsets(data.get("latestOffset")),
            behind_at=_float(data.get("behindAt")),
            behind_unknown=str(data["behindUnknown"]) if data.get("behindUnknown") else None,
            log_end_offsets=_flat_offsets(data.get("logEndOffset")),
            behind_at_plan=_int(data.get("offsetsBehindAtPlan")),
            duration_ms={
                str(k): int(v)
                for k, v in (data.get("durationMs") or {}).items()
                if isinstance(v, int | float)
            },
            timestamp=str(data.get("timestamp") or ""),
            watermark=data.get("watermark"),
            state_rows=_int(data.get("stateRows")),
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def parse_commit_line(data: dict[str, Any]) -> dict[tuple[str, int], int] | None:
    """A "commit" line (already parsed by parse_line): the offsets the run committed to its
    group; None for other lines and garbage."""
    if data.get("type") != "commit" or not isinstance(data.get("offsets"), dict):
        return None
    try:
        return _flat_offsets(data["offsets"])
    except (TypeError, ValueError, AttributeError):
        return None


def _flat_offsets(raw: Any) -> dict[tuple[str, int], int]:
    if not isinstance(raw, dict):
        return {}
    out = {}
    for topic, parts in raw.items():
        if isinstance(parts, dict):
            for p, off in parts.items():
                out[(str(topic), int(p))] = int(off)
    return out


def _float(v: Any) -> float | None:
    try:
        return None if v is None else float(v)
    except (TypeError, ValueError):
        return None


def _int(v: Any) -> int | None:
    try:
        return None if v is None else int(v)
    except (TypeError, ValueError):
        return None


_PY_ERROR = re.compile(r"^(?:[\w.]+\.)?\w*(?:Error|Exception): \S")
_LOG_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"JAVA_HOME is not set|java: (command )?not found|bin/java: No such file"),
        "Java is missing: install Java 17 or set JAVA_HOME",
    ),
    (re.compile(r"Java is not installed"), "Java is missing: install Java 17 or set JAVA_HOME"),
    (
        re.compile(r"JAVA_GATEWAY_EXITED|Java gateway process exited"),
        "Java could not start (see the log)",
    ),
    (
        re.compile(r"Failed to find (the )?data source: kafka"),
        "the Kafka connector jars are missing (kconsole jobs fetch)",
    ),
]


# What the JVM prints when it refuses its own options (Spark's driver JVM is started by
# spark-submit with spark.driver.memory as -Xmx and spark.driver.extraJavaOptions as they are).
_JVM_HEAP = re.compile(r"Invalid maximum heap size: -Xmx(\S*)")
_JVM_REFUSED = re.compile(
    r"^(Invalid \w+ (heap|stack) size: \S+|Unrecognized VM option '.*'|Unrecognized option: "
    r"\S+|Too small (maximum|initial) heap|Improperly specified VM option '.*')"
)
_GATEWAY = re.compile(r"JAVA_GATEWAY_EXITED|Java gateway process exited|Java could not start")


def jvm_start_error(lines: Iterable[str]) -> str | None:
    """Why Spark's JVM refused to start, from the lines it printed before exiting ('Invalid
    maximum heap size: -Xmx1zz'), said as the Spark setting that caused it; None if it did not
    print one. The job itself sees only that Java exited."""
    for ln in lines:
        s = ln.strip()
        heap = _JVM_HEAP.search(s)
        if heap:
            return (
                f"Spark could not start: spark.driver.memory={heap.group(1)} is not a valid size "
                f"(a number with k, m or g, e.g. 1g; the JVM said: {s[:200]})"
            )
        if _JVM_REFUSED.match(s):
            if s.startswith("Too small"):
                return (
                    f"Spark could not start: spark.driver.memory is too small (the JVM said: {s})"
                )
            return (
                "Spark could not start: the JVM refused an option from spark.driver.memory or "
                f"spark.driver.extraJavaOptions (the JVM said: {s[:200]})"
            )
    return None


def explain_failure(reported: str | None, log_lines: Iterable[str]) -> str | None:
    """Why a run failed: the job's own reason, unless it only says Java exited and the log
    names the JVM's real cause; without a reason, what the log says."""
    lines = list(log_lines)
    if not reported or _GATEWAY.search(reported):
        exact = jvm_start_error(lines)
        if exact is not None:
            return exact
    return reported or extract_error(lines)


def extract_error(lines: Iterable[str]) -> str | None:
    """The reason a job failed, from its log: the JVM's refusal of its options, a known cause,
    then the job's own 'failed' line, then the last Python error, then the first Java exception
    or ERROR line."""
    lines = [ln.rstrip() for ln in lines if ln.strip()]
    jvm = jvm_start_error(lines)
    if jvm is not None:
        return jvm
    for pattern, what in _LOG_PATTERNS:
        hit = next((ln for ln in lines if pattern.search(ln)), None)
        if hit is not None:
            return f"{what}: {hit.strip()[:300]}"
    own = [ln for ln in lines if "kconsole-job: failed" in ln]
    if own:
        return own[-1].split("kconsole-job: failed", 1)[1].strip()[:600] or None
    py = [ln.strip() for ln in lines if _PY_ERROR.match(ln.strip())]
    if py:
        return py[-1][:600]
    for ln in lines:
        s = ln.strip()
        if s.startswith("at ") or s.startswith("..."):
            continue
        if " ERROR " in s or "Exception" in s or s.startswith("Error"):
            return s[:600]
    return None
