"""KRaftCluster.down's wait for the controllers sent SIGTERM together: the last nodes, once
the quorum has lost its majority, are killed after a short grace, not after the whole timeout
(a fresh-clone run saw `down --purge` of a combined cluster take 30.2 s instead of ~5)."""

from __future__ import annotations

import time

import pytest

from kconsole.cluster.kraft import cluster as kraft
from kconsole.cluster.values import ProcState


class FakeProc:
    """Exits by itself `after` seconds from now (None: never, it waits for a quorum)."""

    def __init__(self, after: float | None):
        self.exit_at = None if after is None else time.monotonic() + after
        self.killed_at: float | None = None

    def state(self) -> ProcState:
        done = self.killed_at is not None or (
            self.exit_at is not None and time.monotonic() >= self.exit_at
        )
        return ProcState.STOPPED if done else ProcState.RUNNING

    def kill(self) -> None:
        self.killed_at = time.monotonic()


def test_the_last_node_without_a_majority_is_killed_after_the_grace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(kraft, "LAST_NODES_GRACE_S", 0.3)
    first, second, last = FakeProc(0.0), FakeProc(0.1), FakeProc(None)
    t0 = time.monotonic()
    kraft.KRaftCluster._wait_controllers_down([first, second, last], 3, timeout=30.0)  # type: ignore[list-item]
    took = time.monotonic() - t0
    assert first.killed_at is None and second.killed_at is None  # they exited by themselves
    assert last.killed_at is not None
    assert 0.3 <= took < 5.0  # the grace after the majority was lost, not the 30 s timeout


def test_nodes_that_keep_a_majority_get_the_whole_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kraft, "LAST_NODES_GRACE_S", 2.0)
    slow = [FakeProc(0.5), FakeProc(0.6), FakeProc(0.7)]  # a majority runs until 0.6 s
    kraft.KRaftCluster._wait_controllers_down(slow, 3, timeout=30.0)  # type: ignore[arg-type]
    # the last exits 0.1 s after the majority is gone, well inside the grace: none killed
    assert [p.killed_at for p in slow] == [None, None, None]
    stuck = [FakeProc(None), FakeProc(None), FakeProc(None)]
    t0 = time.monotonic()
    kraft.KRaftCluster._wait_controllers_down(stuck, 3, timeout=0.4)  # type: ignore[arg-type]
    assert all(p.killed_at is not None for p in stuck)
    assert 0.4 <= time.monotonic() - t0 < 5.0
