"""Load the snapshots recorded from a real cluster (tests/fixtures/record_snapshots.py)."""

from __future__ import annotations

import json
from pathlib import Path

from kconsole.models import ClusterSnapshot

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "snapshots"
FIXED_NOW = 1_800_000_000.0


def load(name: str) -> ClusterSnapshot:
    return ClusterSnapshot.from_dict(json.loads((FIXTURES / f"{name}.json").read_text()))
