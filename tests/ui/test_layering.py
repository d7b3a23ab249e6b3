"""kconsole.source (the Observer contract) is importable without Textual."""

from __future__ import annotations

import subprocess
import sys


def test_source_does_not_import_textual() -> None:
    code = "import sys, kconsole.source; sys.exit(3 if 'textual' in sys.modules else 0)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr or "kconsole.source imports textual"
