"""The console when it could not ask the cluster: nothing answers (the local cluster is not
running), or the cluster refused the login or the TLS handshake. The header says so first, the
brokers are unknown (never down) and the controller unknown (never "no active controller").

The snapshots are built by the observer's own SnapshotBuilder from what the sources said in
real runs (nothing listening at the default addresses; a wrong SCRAM password and a missing
client certificate on the local secured clusters)."""

from __future__ import annotations

from collections.abc import Callable

from kconsole.cluster.values import ProcState
from kconsole.models import BrokerState, ClusterSnapshot, SourceName
from kconsole.observer import SnapshotBuilder
from tests.ui.builders import T0
from tests.ui.conftest import feeding, new_app

WIDE = (160, 48)
SMALL = (80, 24)
SnapCompare = Callable[..., bool]

NOTHING = "nothing listens at 127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094 (connection refused)"
HINT = (
    "no local cluster runs here: start one with `kconsole cluster up` (or, in a source "
    "checkout, `make console`: it starts it and opens the console)"
)
SASL = (
    "authentication failed at broker 127.0.0.1:30301: invalid credentials (SASL mechanism "
    "SCRAM-SHA-512)"
)
TLS = (
    "TLS handshake with broker 127.0.0.1:30322 failed: ssl/tls alert bad certificate (SSL "
    "alert number 42): the broker requires a client certificate it accepts "
    "(ssl.certificate.location, ssl.key.location)"
)


def nothing_answers() -> ClusterSnapshot:
    """`kconsole` with no cluster running: every source refused the connection."""
    b = SnapshotBuilder(use_zookeeper=True)
    b.health[SourceName.ZOOKEEPER].failure("ZooKeeper 127.0.0.1:22181 unreachable, retrying")
    b.health[SourceName.ADMIN].failure(NOTHING)
    b.health[SourceName.GROUPS].failure(NOTHING)
    b.start_hint = HINT
    return b.build(T0)


def refused(why: str, zookeeper: bool = False) -> ClusterSnapshot:
    """The local cluster's brokers (running) refused the login: every source says so."""
    b = SnapshotBuilder(use_zookeeper=zookeeper)
    b.proc_states = dict.fromkeys((1, 2, 3), ProcState.RUNNING)
    if zookeeper:
        b.health[SourceName.ZOOKEEPER].failure("ZooKeeper 127.0.0.1:22181 unreachable, retrying")
    else:
        b.quorum_failed(why, refused=True)
    b.health[SourceName.ADMIN].failure(why, refused=True)
    b.health[SourceName.GROUPS].failure(why, refused=True)
    return b.build(T0)


def test_the_fakes_are_what_the_observer_builds() -> None:
    snap = refused(SASL, zookeeper=True)
    assert [br.state for br in snap.brokers] == [BrokerState.UNKNOWN] * 3
    assert snap.controller.id is None and snap.refused == SASL == snap.unreached
    assert nothing_answers().unreached == NOTHING and nothing_answers().brokers == ()


class TestNotAsked:
    """The main screen while the cluster cannot be asked."""

    def test_nothing_answers_wide(self, snap_compare: SnapCompare) -> None:
        """No cluster running: CANNOT REACH THE CLUSTER, how to start it, no controller alarm."""
        run = feeding(nothing_answers())
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=run)

    def test_nothing_answers_80x24(self, snap_compare: SnapCompare) -> None:
        """No cluster running, on an 80x24 terminal."""
        run = feeding(nothing_answers())
        assert snap_compare(new_app(), terminal_size=SMALL, run_before=run)

    def test_login_refused_wide(self, snap_compare: SnapCompare) -> None:
        """A wrong SCRAM password: LOGIN REFUSED, the brokers unknown, the broker and the
        mechanism named."""
        run = feeding(refused(SASL, zookeeper=True))
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=run)

    def test_tls_refused_80x24(self, snap_compare: SnapCompare) -> None:
        """No client certificate for an mTLS cluster, on an 80x24 terminal."""
        run = feeding(refused(TLS))
        assert snap_compare(new_app(), terminal_size=SMALL, run_before=run)
