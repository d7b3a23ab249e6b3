"""The observer: live ClusterSnapshots of one cluster, from every source.

Two modules, one concern each: `builder` turns the sources' latest states into an immutable
ClusterSnapshot (pure: no threads, no I/O), `threads` runs the sources and publishes each
snapshot with its events (ClusterObserver). Importers keep using `kconsole.observer`, the name
the import-linter contracts in pyproject.toml hold.
"""

from kconsole.observer.builder import SnapshotBuilder
from kconsole.observer.builder import _same_where_equal as _same_where_equal  # for tests
from kconsole.observer.threads import GROUPS_HOLD_S, ClusterObserver, OnUpdate, StatesFn

__all__ = ["GROUPS_HOLD_S", "ClusterObserver", "OnUpdate", "SnapshotBuilder", "StatesFn"]
