"""What a job writes: the JSON-lines protocol on stdout (and the progress lines in it), its log
on stderr, and the readable sink (one JSON-lines file per batch)."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any


class Emitter:
    """One JSON object per line on the real stdout; fd 1 is pointed at stderr, so nothing else
    (the JVM, py4j, libraries) can write into the protocol."""

    def __init__(self, job: str):
        self.job = job
        self._lock = threading.Lock()
        sys.stdout.flush()
        self._out = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
        os.dup2(2, 1)
        sys.stdout = sys.stderr

    def emit(self, kind: str, /, **fields: Any) -> None:
        line = json.dumps(
            {"type": kind, "job": self.job, "ts": time.time(), **fields}, default=jsonable
        )
        with self._lock:
            self._out.write(line + "\n")
            self._out.flush()


def log(message: str) -> None:
    """A line for the job's log (stderr)."""
    print(f"{time.strftime('%H:%M:%S')} kconsole-job: {message}", file=sys.stderr, flush=True)


def progress_line(p: dict[str, Any]) -> dict[str, Any]:
    """The fields of a StreamingQueryProgress kconsole reads, plus what Spark left behind when
    it planned the batch: per partition Spark's latestOffset (the log end it read then) - the
    batch's end, summed. That is 0 whenever a batch takes all there was (no
    --max-offsets-per-trigger), however much arrived since: the job's "behind"
    (offsetsBehindLatest) is measured against the log end after the batch, by Job."""
    end: dict[str, dict[str, int]] = {}
    latest: dict[str, dict[str, int]] = {}
    behind: int | None = None
    metrics: dict[str, Any] = {}
    for src in p.get("sources") or []:
        e, lt = _offsets(src.get("endOffset")), _offsets(src.get("latestOffset"))
        for t, parts in e.items():
            end.setdefault(t, {}).update(parts)
        for t, parts in lt.items():
            latest.setdefault(t, {}).update(parts)
        if e and lt:
            behind = (behind or 0) + sum(
                max(0, lt.get(t, {}).get(part, off) - off)
                for t, parts in e.items()
                for part, off in parts.items()
            )
        metrics.update(src.get("metrics") or {})
    state_ops = p.get("stateOperators") or []
    return {
        "batchId": p.get("batchId"),
        "timestamp": p.get("timestamp"),
        "numInputRows": p.get("numInputRows", 0),
        "inputRowsPerSecond": _num(p.get("inputRowsPerSecond")),
        "processedRowsPerSecond": _num(p.get("processedRowsPerSecond")),
        "batchDuration": p.get("batchDuration"),
        "durationMs": p.get("durationMs") or {},
        "offsetsBehindAtPlan": behind,
        "endOffset": end,
        "latestOffset": latest,
        "sourceMetrics": metrics,
        "watermark": (p.get("eventTime") or {}).get("watermark"),
        "stateRows": sum(op.get("numRowsTotal", 0) for op in state_ops) if state_ops else None,
        "queryId": p.get("id"),
        "runId": p.get("runId"),
    }


def _offsets(raw: Any) -> dict[str, dict[str, int]]:
    """Kafka offsets as Spark reports them (a JSON string {topic: {partition: offset}})."""
    if raw is None:
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    if not isinstance(raw, dict):
        return {}
    return {
        t: {str(k): int(v) for k, v in parts.items()}
        for t, parts in raw.items()
        if isinstance(parts, dict)
    }


def _num(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if v == v and v not in (float("inf"), float("-inf")) else None  # NaN, inf -> null


def as_dict(progress: Any) -> dict[str, Any] | None:
    """lastProgress is a dict in some pyspark versions and an object with .json in others."""
    if progress is None:
        return None
    if isinstance(progress, dict):
        return progress
    raw = getattr(progress, "json", None)
    if raw is not None:
        return json.loads(raw() if callable(raw) else raw)
    return None


def write_jsonl(directory: str, batch_id: int, rows: list[dict[str, Any]]) -> str:
    """The readable sink: one file per batch, replaced atomically, so a re-run batch (after a
    crash) overwrites its own file instead of adding a second copy."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"batch-{batch_id:09d}.jsonl")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, default=jsonable) + "\n")
    os.replace(tmp, path)
    return path


def jsonable(value: Any) -> Any:
    """JSON for what Spark rows hold besides plain values: timestamps as ISO 8601."""
    iso = getattr(value, "isoformat", None)
    return iso() if callable(iso) else str(value)
