"""Shared test set-up: a SIGTERM (a CI time-out, a killed job) becomes KeyboardInterrupt, so
pytest still runs fixture teardown and stops every process the tests started."""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import signal
import tempfile


def _sigterm_to_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


signal.signal(signal.SIGTERM, _sigterm_to_interrupt)
logging.getLogger("kazoo").setLevel(logging.CRITICAL)

# Nothing a test runs writes into the developer's own state dir (the audit log, job runs,
# console logs): every test process, and every kconsole it starts, gets one of its own.
# The process that made it removes it when it exits (the tests' own subprocesses inherit it).
if not os.environ.get("KCONSOLE_TEST_STATE_DIR"):
    os.environ["KCONSOLE_TEST_STATE_DIR"] = tempfile.mkdtemp(prefix="kconsole-test-state-")
    atexit.register(shutil.rmtree, os.environ["KCONSOLE_TEST_STATE_DIR"], ignore_errors=True)
os.environ["KCONSOLE_STATE_DIR"] = os.environ["KCONSOLE_TEST_STATE_DIR"]

# The test clusters' JVMs compile with C1 only: the suite starts Kafka and ZooKeeper JVMs some
# 70 times, and each start costs about a third less CPU (a ZooKeeper-mode broker: 2.9 -> 2.0 s),
# on a 2-core machine. They serve the tests' small loads as well (kconsole.cluster.local.state_dir).
os.environ.setdefault("KCONSOLE_LOCAL_JVM_OPTS", "-XX:TieredStopAtLevel=1")


# The door, checked in every test (tests/door_guard.py): a backend's modifying method called by
# kconsole code outside kconsole.commands fails the test that did it.
from collections.abc import Iterator  # noqa: E402

import pytest  # noqa: E402

from tests import door_guard  # noqa: E402

door_guard.install()


@pytest.fixture(autouse=True)
def _the_door_holds() -> Iterator[None]:
    door_guard.take()
    yield
    found = door_guard.take()
    if found:
        pytest.fail(
            "an action went around the command layer:\n" + "\n".join(f"  {v}" for v in found),
            pytrace=False,
        )
