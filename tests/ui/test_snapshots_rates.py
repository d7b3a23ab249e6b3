"""How fast the cluster moves, on screen (issue 38), fed a snapshot recorded from the local
cluster (`kconsole describe --json --sample 30` with a producer at 2,000 records/s and four
groups: one draining its backlog, one falling behind, one whose member stopped fetching, and
groups with no member left) : tests/fixtures/snapshots/rates.json."""

from __future__ import annotations

from dataclasses import replace

from kconsole.models import ClusterSnapshot, LagStatus, Rate
from tests.ui.conftest import feeding, keys_then, load, new_app
from tests.ui.pilots import SMALL, SnapCompare
from tests.ui.test_snapshots import open_group

WIDE = (160, 48)


def rated() -> ClusterSnapshot:
    return load("rates")


def test_the_recording_holds_every_status() -> None:
    """The fixture is what the snapshots below are about: each status Burrow names."""
    r = rated().rates
    assert r is not None
    statuses = {g.status for g in r.groups}
    assert {LagStatus.OK, LagStatus.WARNING, LagStatus.STALLED, LagStatus.STOPPED} <= statuses
    assert any(g.trend == "draining" and g.catch_up_s for g in r.groups)


class TestRates:
    def test_rates_columns_wide(self, snap_compare: SnapCompare) -> None:
        """160 columns: in/s per broker and per partition; the groups' status and trend."""
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=feeding(rated()))

    def test_rates_columns_80x24(self, snap_compare: SnapCompare) -> None:
        """80x24: the same columns, the groups' status beside the lag."""
        assert snap_compare(new_app(), terminal_size=SMALL, run_before=feeding(rated()))

    def test_topics_view(self, snap_compare: SnapCompare) -> None:
        """v: one row per topic, the busiest first, with bytes/s and skew."""
        run = keys_then([rated()], "v")
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=run)

    def test_topics_view_80x24(self, snap_compare: SnapCompare) -> None:
        run = keys_then([rated()], "v")
        assert snap_compare(new_app(), terminal_size=SMALL, run_before=run)

    def test_group_trend(self, snap_compare: SnapCompare) -> None:
        """A group's screen: status with its reason, consumed against produced, the trend and
        each partition's rates."""
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=open_group(rated()))

    def test_unknown_rates_say_so_with_their_age(self, snap_compare: SnapCompare) -> None:
        """A leader that did not answer: its partitions' rates are "?" with the age of their
        last reading, the broker's and the topic's sums "at least" (≥), never 0."""
        snap = rated()
        assert snap.rates is not None
        lost = next(p for p in snap.partitions if p.topic == "test-topic")
        unknown = Rate(
            None, window_s=30.0, as_of=snap.taken_at - 12, reason=f"leader {lost.leader}: timed out"
        )
        parts = tuple(
            replace(r, records=unknown) if (r.topic, r.partition) == (lost.topic, lost.partition)
            else r
            for r in snap.rates.partitions
        )  # fmt: skip
        snap = replace(snap, rates=replace(snap.rates, partitions=parts))
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=feeding(snap))
