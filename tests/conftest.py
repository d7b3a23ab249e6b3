"""Shared test set-up: a SIGTERM (a CI time-out, a killed job) becomes KeyboardInterrupt, so
pytest still runs fixture teardown and stops every process the tests started."""

from __future__ import annotations

import logging
import signal


def _sigterm_to_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


signal.signal(signal.SIGTERM, _sigterm_to_interrupt)
logging.getLogger("kazoo").setLevel(logging.CRITICAL)
