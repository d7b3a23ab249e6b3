"""Headless layers never import Textual (checked in a fresh interpreter per module)."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest


def _modules(package: str) -> list[str]:
    """The package and every module under it, in its subpackages too (kconsole.cluster.local.*)."""
    mod = importlib.import_module(package)
    return [package, *(m.name for m in pkgutil.walk_packages(mod.__path__, f"{package}."))]


HEADLESS = [
    "kconsole.paths",
    "kconsole.errors",
    "kconsole.secrets",
    "kconsole.defaults",
    "kconsole.models",
    "kconsole.timeline",
    "kconsole.config",
    "kconsole.observer",
    "kconsole.source",
    "kconsole.describe",
    "kconsole.impact",
    *_modules("kconsole.cluster"),
    *_modules("kconsole.drills"),
    *_modules("kconsole.jobs"),
    *_modules("kconsole.commands"),
]


@pytest.mark.parametrize("module", HEADLESS)
def test_module_does_not_import_textual(module: str) -> None:
    code = f"import sys, {module}; sys.exit(3 if 'textual' in sys.modules else 0)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr or f"{module} imports textual"
