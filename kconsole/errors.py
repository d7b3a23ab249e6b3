"""The one error type every layer raises: a message a person can act on."""

from __future__ import annotations

from collections.abc import Sequence


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


class ConfigError(ClusterError):
    """The configuration is broken; the message says where and how. `problems` holds each
    problem on its own (`NAME (from ORIGIN): WHAT`); the message lists them all, one a line."""

    def __init__(self, message: str, *, problems: Sequence[str] = ()):
        super().__init__(message)
        self.problems = tuple(problems) or (message,)


def config_error(problems: Sequence[str]) -> ConfigError:
    """One ConfigError saying every problem in `problems`, one a line."""
    head = "a problem" if len(problems) == 1 else f"{len(problems)} problems"
    lines = "\n".join(f"  {p}" for p in problems)
    return ConfigError(
        f"{head} in the configuration; nothing was started:\n{lines}", problems=problems
    )


class Refused(ClusterError):
    """The command layer refused an action before it did anything (the audit log says so)."""


class ReadOnlyError(Refused):
    """A modifying action was refused because kconsole runs read-only."""


class NotConfirmed(Refused):
    """A destructive action was not confirmed."""


class AuthenticationFailed(ClusterError):
    """The cluster refused kconsole's credentials (SASL) or its TLS handshake; the message
    names the broker and, for SASL, the mechanism. Waiting does not mend it."""


class AuthorizationDenied(ClusterError):
    """The cluster's authorizer denied an operation on a resource (ACLs); the message says
    which operation on which resource, and as whom."""
