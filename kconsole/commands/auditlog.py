"""The audit log: one JSON line per modifying command, done, refused or failed.

Append-only at `<state dir>/audit.jsonl` (KCONSOLE_STATE_DIR moves it). Each line is written
with one write() on an O_APPEND descriptor, so lines from several kconsole processes never
interleave. Secrets (passwords, tokens, keys) in the arguments are masked before writing, and
every secret value kconsole has resolved (kconsole.secrets) is scrubbed from the whole entry.
"""

from __future__ import annotations

import getpass
import json
import os
import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kconsole import paths, secrets
from kconsole.errors import ClusterError

OUTCOMES = ("done", "refused", "failed")
MASK = "***"
_SECRET = re.compile(r"pass(word)?|secret|token|credential|jaas|(^|[._-])key($|[._-]|store)", re.I)
FIELDS = (
    "time",
    "user",
    "principal",
    "cluster_id",
    "bootstrap",
    "command",
    "target",
    "args",
    "outcome",
    "result",
    "error",
    "origin",
)


def default_path() -> Path:
    """Where the audit log lives: <state dir>/audit.jsonl."""
    return paths.state_dir() / "audit.jsonl"


def mask(value: Any, key: str = "") -> Any:
    """`value` with every secret-looking entry replaced by ***, recursively."""
    if key and _SECRET.search(key) and value not in (None, "", [], {}):
        return MASK
    if isinstance(value, Mapping):
        return {str(k): mask(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [mask(v) for v in value]
    if isinstance(value, str) and "=" in value:  # KEY=VALUE items, e.g. -X or job options
        k = value.partition("=")[0]
        if _SECRET.search(k):
            return f"{k}={MASK}"
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry (containers): the uid says who
        return f"uid {os.getuid()}"


class AuditLog:
    """Appends entries to, and reads them from, one JSON-lines file."""

    def __init__(self, path: Path | None = None) -> None:
        self._path = path

    @property
    def path(self) -> Path:
        """The file (resolved late: KCONSOLE_STATE_DIR may be set after construction)."""
        return self._path or default_path()

    def append(
        self,
        *,
        command: str,
        target: str,
        args: Mapping[str, Any],
        outcome: str,
        error: str = "",
        result: Mapping[str, Any] | None = None,
        cluster_id: str | None = None,
        bootstrap: str = "",
        origin: str = "",
        principal: str | None = None,
    ) -> dict[str, Any]:
        """Write one entry; raises ClusterError when the log cannot be written. `result`: what
        a command that was done really did (counts read back from the cluster or the
        process), beside the arguments it was asked with. `principal`: who the cluster knows
        kconsole as (the SASL user, the certificate subject), beside the OS user."""
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}")
        entry = {
            "time": datetime.now(tz=UTC).isoformat(timespec="milliseconds"),
            "user": _user(),
            "principal": secrets.scrub(principal) if principal else None,
            "cluster_id": cluster_id,
            "bootstrap": bootstrap,
            "command": command,
            "target": target,
            "args": secrets.scrub_any(mask(dict(args))),
            "outcome": outcome,
            "result": secrets.scrub_any(mask(dict(result))) if result else None,
            "error": secrets.scrub(error) if error else None,
            "origin": origin,
        }
        line = (json.dumps(entry, default=str, ensure_ascii=False) + "\n").encode()
        path = self.path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        except OSError as exc:
            raise ClusterError(f"cannot write the audit log {path}: {exc}") from exc
        return entry

    def entries(self) -> Iterator[dict[str, Any]]:
        """Every entry, oldest first (a line that is not JSON is reported, not skipped)."""
        try:
            fh = open(self.path, encoding="utf-8")  # noqa: SIM115 (closed below)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise ClusterError(f"cannot read the audit log {self.path}: {exc}") from exc
        with fh:
            for no, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:
                    yield {"outcome": "?", "error": f"line {no} is not JSON", "command": "?"}
