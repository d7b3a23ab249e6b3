"""Where kconsole keeps its cache (jars) and state (local clusters), per user, and where the
files it ships beside its code are (the Spark jobs, the compose files)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP = "kconsole"


def cache_dir() -> Path:
    """Per-user cache: resolved jars. Override with KCONSOLE_CACHE_DIR."""
    override = os.environ.get("KCONSOLE_CACHE_DIR")
    return Path(override) if override else Path(platformdirs.user_cache_dir(APP))


def state_dir() -> Path:
    """Per-user state: local clusters, job checkpoints. Override with KCONSOLE_STATE_DIR."""
    override = os.environ.get("KCONSOLE_STATE_DIR")
    return Path(override) if override else Path(platformdirs.user_state_dir(APP))


def default_cluster_dir() -> Path:
    """State directory of the default embedded local cluster."""
    return state_dir() / "clusters" / "local"


def bundled(name: str) -> Path:
    """A folder kconsole ships with its code: `jobs` (the Spark jobs) or `compose` (the compose
    files and image recipes). In a checkout kconsole/bundled/NAME is a link to the repository's
    top-level NAME/; an installed kconsole (pipx, uv tool, pip) has the files themselves there."""
    return (Path(__file__).parent / "bundled" / name).resolve()
