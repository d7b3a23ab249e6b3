"""The one error type every layer raises: a message a person can act on."""

from __future__ import annotations


class ClusterError(Exception):
    """A failure with a clear message and, where it helps, the relevant log lines."""

    def __init__(self, message: str, *, log_lines: list[str] | None = None, log_path: str = ""):
        super().__init__(message)
        self.message = message
        self.log_lines = log_lines or []
        self.log_path = log_path

    def __str__(self) -> str:
        if not self.log_lines:
            return self.message
        where = f" ({self.log_path})" if self.log_path else ""
        tail = "\n".join(f"  | {line}" for line in self.log_lines)
        return f"{self.message}\nLast log lines{where}:\n{tail}"


class Refused(ClusterError):
    """The command layer refused an action before it did anything (the audit log says so)."""


class ReadOnlyError(Refused):
    """A modifying action was refused because kconsole runs read-only."""


class NotConfirmed(Refused):
    """A destructive action was not confirmed."""
