"""Shared test set-up: a SIGTERM (a CI time-out, a killed job) becomes KeyboardInterrupt, so
pytest still runs fixture teardown and stops every process the tests started."""

from __future__ import annotations

import logging
import os
import signal
import tempfile


def _sigterm_to_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


signal.signal(signal.SIGTERM, _sigterm_to_interrupt)
logging.getLogger("kazoo").setLevel(logging.CRITICAL)

# Nothing a test runs writes into the developer's own state dir (the audit log, job runs,
# console logs): every test process, and every kconsole it starts, gets one of its own.
if not os.environ.get("KCONSOLE_TEST_STATE_DIR"):
    os.environ["KCONSOLE_TEST_STATE_DIR"] = tempfile.mkdtemp(prefix="kconsole-test-state-")
os.environ["KCONSOLE_STATE_DIR"] = os.environ["KCONSOLE_TEST_STATE_DIR"]
