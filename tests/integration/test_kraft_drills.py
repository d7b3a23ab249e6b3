"""Whole drills on the real KRaft cluster (the shared `kraft` session cluster, restored by
`kraft_healthy`): the quorum leader killed, and the quorum majority lost. Both under an
acks=all workload; no acknowledged record may be lost, and the report says what the quorum did,
measured."""

from __future__ import annotations

import pytest

from kconsole.cluster.kraft.cluster import KRaftCluster
from kconsole.cluster.kraft.control import KRaftNodeControl
from kconsole.commands import Commands, yes
from kconsole.config import Settings
from kconsole.drills.spec import DrillReport, DrillSpec
from kconsole.timeline import EventKind

pytestmark = pytest.mark.integration


def run(cluster: KRaftCluster, fault: str, target: str, restore_after: float) -> DrillReport:
    spec = DrillSpec(
        fault=fault,
        target=target,
        acks="all",
        duration_s=restore_after + 4,  # the warm-up and the restore fit in the workload
        restore_after_s=restore_after,
        settle_timeout_s=120,
        wait_preferred=False,
        rate=150,
        warmup_s=1.5,
    )
    settings = Settings(
        bootstrap=cluster.spec.bootstrap,
        zookeeper="",
        bootstrap_controller=cluster.spec.quorum_bootstrap,
    )
    door = Commands(KRaftNodeControl(cluster), settings=settings)
    return door.drill_run(spec, yes)


def measured(report: DrillReport, name: str) -> tuple[float | None, str]:
    m = next(m for m in report.measurements if m.name == name)
    return m.seconds, m.note


def test_kill_the_active_controller(kraft_healthy: KRaftCluster) -> None:
    """SIGKILL of the quorum leader: another voter leads with a higher epoch, measured from
    the fault; 0 acknowledged records lost; the controller restarted and the quorum whole."""
    report = run(kraft_healthy, "kill", "active-controller", restore_after=6)
    old = report.target_broker
    assert old in kraft_healthy.spec.controller_ids
    assert report.ok, report.audit.markdown()
    assert report.audit.acked > 100
    assert report.settled
    held, _ = measured(report, "fault -> restore")
    assert held is not None and abs(held - 6) < 0.5, held  # from the fault (issue 35 #10)
    took, said = measured(report, "fault -> new quorum leader")
    assert took is not None and 0 < took < 30, said
    changed = [
        e
        for e in report.events
        if e.kind is EventKind.CONTROLLER_CHANGED and e.ts > report.fault_at
    ]
    assert changed, [e.text for e in report.events]
    new = changed[0]
    assert new.new in kraft_healthy.spec.controller_ids and new.new != old
    assert new.old == old and ", epoch " in new.text
    assert new.text == said
    md = report.markdown()
    assert f"kill controller {old}" in md and "fault -> new quorum leader" in md
    assert "controller.quorum.fetch.timeout.ms = " in md  # the prediction, read from the cluster
    print(f"\nkill of quorum leader {old}: {said} after {took:.2f} s")


def test_quorum_majority_lost_then_restored(kraft_healthy: KRaftCluster) -> None:
    """Two of three controllers paused (the leader first; a pause, not a kill: no JVM start
    in the test's time): metadata frozen, said with its
    start and end, no quorum leader named meanwhile and no leader or ISR change committed;
    produce with acks=all goes on (every ISR stays whole: no broker was touched); after the
    restore a leader is elected and 0 acknowledged records were lost."""
    report = run(kraft_healthy, "pause", "quorum-majority", restore_after=8)
    md = report.markdown()
    assert len(report.targets) == 2 and report.targets[0] == report.target_broker
    assert set(report.targets) <= set(kraft_healthy.spec.controller_ids)
    assert report.ok, report.audit.markdown()
    assert report.settled
    # --restore-after counts from the fault, not from the two pauses' return (issue 35 #10)
    held, _ = measured(report, "fault -> restore")
    assert held == report.restored_after_s and held is not None and abs(held - 8) < 0.5, held
    restore = [e for e in report.events if e.kind is EventKind.ACTION][1]
    froze = [e for e in report.events if e.kind is EventKind.METADATA_FROZEN]
    thawed = [e for e in report.events if e.kind is EventKind.METADATA_UNFROZEN]
    assert froze and froze[0].ts > report.fault_at, [e.text for e in report.events]
    assert froze[0].ts < restore.ts
    assert (
        thawed
        and thawed[-1].ts > restore.ts
        and thawed[-1].new in kraft_healthy.spec.controller_ids
    )
    assert "no quorum leader answers" in froze[0].text
    frozen_s, span = measured(report, "metadata frozen for")
    assert frozen_s is not None and frozen_s > 0, span
    back_s, _ = measured(report, "restore -> quorum leader again")
    assert back_s is not None and back_s >= 0
    # The freeze the restore ended, dated from the last answer of a leader that commits (not
    # from the read that waited out the paused controllers): it covers fault -> restore and
    # its three figures add up (issue 35: it once lasted 1.15 s of an 8 s fault).
    froze_s, _ = measured(report, "fault -> metadata frozen (no quorum leader answers)")
    assert froze_s is not None and froze_s < 2.0 and held < froze_s + frozen_s, (froze_s, span)
    assert froze_s + frozen_s == pytest.approx(held + back_s, abs=0.01), span
    # Nothing committed while frozen: no leader or ISR change; and no quorum leader named
    # while the majority was paused (after the resume one is elected and named before its
    # first commit ends the freeze: the thaw waits for its high watermark).
    during = [e for e in report.events if froze[0].ts < e.ts < thawed[-1].ts]
    committed = {EventKind.LEADER_CHANGED, EventKind.ISR_SHRANK, EventKind.ISR_EXPANDED}
    assert not [e.text for e in during if e.kind in committed]
    named = [e for e in during if e.kind is EventKind.CONTROLLER_CHANGED]
    assert not [e.text for e in named if e.ts < restore.ts]
    # Produce kept working: never half the fault's 8 s without an acknowledged send.
    assert report.audit.acked > 100
    gap = report.audit.longest_no_success
    assert gap is None or gap.seconds < 4, gap
    assert "quorum MAJORITY is lost" in md and "metadata frozen" in md
    print(f"\nquorum majority lost: metadata frozen {frozen_s:.2f} s ({span}); {report.what}")


def test_quorum_majority_stopped_then_started(kraft_healthy: KRaftCluster) -> None:
    """Two of three controllers stopped (SIGTERM, the leader first), as in issue 35: the
    leader resigns at once and the voters left may elect one of them while the other target
    is still stopping, a leader that commits nothing (its high watermark unknown). Metadata is
    frozen from the fault until a leader commits after the restore: no thaw before the
    restore, the freeze covers fault -> restore, and its three figures add up."""
    report = run(kraft_healthy, "stop", "quorum-majority", restore_after=8)
    assert report.ok, report.audit.markdown()
    assert report.settled
    held, _ = measured(report, "fault -> restore")
    froze_s, _ = measured(report, "fault -> metadata frozen (no quorum leader answers)")
    frozen_s, span = measured(report, "metadata frozen for")
    back_s, _ = measured(report, "restore -> quorum leader again")
    assert held is not None and froze_s is not None, report.measurements
    assert frozen_s is not None and back_s is not None, report.measurements
    assert froze_s < 2.0 and held < froze_s + frozen_s, (froze_s, span)
    assert froze_s + frozen_s == pytest.approx(held + back_s, abs=0.01), span
    restore_at = report.fault_at + held
    thawed = [e for e in report.events if e.kind is EventKind.METADATA_UNFROZEN]
    assert thawed and all(e.ts > restore_at for e in thawed), [e.text for e in report.events]
    # A leader named while frozen (from the snapshot that showed the freeze on) is said as one
    # that committed nothing; one named between the fault and the freeze may have committed.
    froze_at = next(
        e.ts
        for e in report.events
        if e.kind is EventKind.METADATA_FROZEN and e.ts >= report.fault_at
    )
    named = [
        e
        for e in report.events
        if e.kind is EventKind.CONTROLLER_CHANGED and froze_at <= e.ts < thawed[0].ts
    ]
    said = " ".join(report.notes)
    assert all(e.text in said for e in named), (named, report.notes)
    print(
        f"\nquorum majority stopped: frozen at +{froze_s:.2f} s for {frozen_s:.2f} s, restore "
        f"at +{held:.2f} s, leader again {back_s:.2f} s later; {len(named)} lone leader(s)"
    )
