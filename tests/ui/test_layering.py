"""The Observer contract, the drill export and the drill model are importable without Textual
(each checked in a fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module", ["kconsole.source", "kconsole.drills.export", "kconsole.ui.drill"]
)
def test_does_not_import_textual(module: str) -> None:
    code = f"import sys, {module}; sys.exit(3 if 'textual' in sys.modules else 0)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr or f"{module} imports textual"
