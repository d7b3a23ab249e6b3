"""Waiting for a condition with a deadline: the only way tests wait for a cluster."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(cond: Callable[[], T], timeout: float, what: str, interval: float = 0.1) -> T:
    """Poll `cond` until it returns a truthy value; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last_exc: Exception | None = None
    while True:
        try:
            value = cond()
            if value:
                return value
        except Exception as exc:  # conditions may fail while the cluster changes
            last_exc = exc
        if time.monotonic() > deadline:
            extra = f" (last error: {last_exc!r})" if last_exc else ""
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}{extra}")
        time.sleep(interval)
