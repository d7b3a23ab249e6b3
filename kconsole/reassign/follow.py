"""Following a running reassignment, headless: every poll, read Kafka's running reassignments
and the replicas' log sizes through a read-only reader, turn them into Progress, and hand each
reading on. The reassignment screen runs it on a thread and only receives what it hands on."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from kconsole.errors import ClusterError
from kconsole.models import ClusterSnapshot
from kconsole.reassign.progress import Progress, Sizes, read_progress


class Reader(Protocol):
    """One open read-only connection (kconsole.commands.views.ReassignReader)."""

    def __enter__(self) -> Reader: ...
    def __exit__(self, *_exc: object) -> None: ...
    def ongoing(self) -> list[Any]: ...
    def log_sizes(self) -> dict[tuple[str, int, int], int]: ...
    def throttles(self) -> dict[str, dict[str, str]]: ...


def broker_throttle(throttles: dict[str, dict[str, str]]) -> int | None:
    """The replication throttle set on the brokers (the highest rate, if they differ)."""
    rates = [
        int(v)
        for key, values in throttles.items()
        if key.startswith("broker:")
        for v in values.values()
        if v.isdigit()
    ]
    return max(rates) if rates else None


# (progress or None when the reading failed, the sizes read, the error) -> None
Emit = Callable[[Progress | None, Sizes, str], None]


def follow_progress(
    open_reader: Callable[[], Reader],
    keys: Iterable[tuple[str, int]],
    snapshot: Callable[[], ClusterSnapshot | None],
    emit: Emit,
    *,
    stop: threading.Event,
    poll_s: float,
    timer: Callable[[], float],
    cancelled: Callable[[], bool] = lambda: False,
    throttle_bps: int | None = None,
) -> Progress | None:
    """Read until every partition of `keys` is done (or `stop` / `cancelled`); a failed
    reading is handed on as its error and the next poll tries again. The last progress.
    `throttle_bps` None: the one set on the brokers, read with the first reading (a rate is
    never shown above it)."""
    watched = tuple(sorted(set(keys)))
    previous: Progress | None = None
    last = 0.0
    throttle_known = throttle_bps is not None
    while not cancelled() and not stop.is_set():
        try:
            with open_reader() as reader:
                if not throttle_known:
                    throttle_bps, throttle_known = broker_throttle(reader.throttles()), True
                ongoing, sizes = reader.ongoing(), reader.log_sizes()
            now = timer()
            elapsed = now - last if previous is not None else None
            previous = read_progress(
                ongoing, watched, snapshot(), sizes, previous, elapsed, throttle_bps
            )
            last = now
            emit(previous, sizes, "")
            if previous.done:
                return previous
        except Exception as exc:  # keep following: the next reading may work
            emit(None, {}, error_text(exc))
        stop.wait(poll_s)
    return previous


def error_text(exc: BaseException) -> str:
    """What a failed reading says: a ClusterError's message, else the exception's type too."""
    return exc.message if isinstance(exc, ClusterError) else f"{type(exc).__name__}: {exc}"
