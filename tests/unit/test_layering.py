"""Headless layers never import Textual (checked in a fresh interpreter per module)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import kconsole.cluster

HEADLESS = [
    "kconsole.paths",
    "kconsole.commands",
    "kconsole.models",
    "kconsole.timeline",
    "kconsole.config",
    "kconsole.observer",
    "kconsole.source",
    "kconsole.describe",
    "kconsole.impact",
    "kconsole.jobs",
    "kconsole.drills.audit",
    "kconsole.drills.export",
    "kconsole.drills.measure",
    "kconsole.drills.runner",
    "kconsole.drills.verify",
    "kconsole.drills.workload",
    *[f"kconsole.cluster.{m.name}" for m in pkgutil.iter_modules(kconsole.cluster.__path__)],
]


@pytest.mark.parametrize("module", HEADLESS)
def test_module_does_not_import_textual(module: str) -> None:
    code = f"import sys, {module}; sys.exit(3 if 'textual' in sys.modules else 0)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr or f"{module} imports textual"
