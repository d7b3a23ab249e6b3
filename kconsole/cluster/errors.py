"""Errors raised by the cluster layer, carrying what a person needs to act on them."""

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


class ToolMissing(ClusterError):
    """Java or Maven is not installed."""


class PortInUse(ClusterError):
    """A port the cluster needs is already taken by another process."""
