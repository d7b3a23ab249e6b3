"""Errors raised by the cluster layer, carrying what a person needs to act on them."""

from __future__ import annotations

from kconsole.errors import ClusterError

__all__ = ["ClusterError", "PortInUse", "ToolMissing"]


class ToolMissing(ClusterError):
    """Java or Maven is not installed."""


class PortInUse(ClusterError):
    """A port the cluster needs is already taken by another process."""
