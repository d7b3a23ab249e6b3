"""A job's readable sink: one JSON-lines file per micro-batch in the run's output/ dir."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any


def read_output_dir(directory: Path) -> list[dict[str, Any]]:
    """Rows of a job's readable sink (batch-*.jsonl), in batch order, each with its batch id."""
    rows: list[dict[str, Any]] = []
    for path in sorted(directory.glob("batch-*.jsonl")):
        batch = int(path.stem.split("-", 1)[1])
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rows.append({**json.loads(line), "_batch": batch})
    return rows


def latest_counts(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str | None], int]:
    """Keyed counts' current count per (window start, key): the last update wins."""
    out: dict[tuple[str, str | None], int] = {}
    for r in rows:
        out[(str(r["window_start"]), r.get("key"))] = int(r["count"])
    return out
