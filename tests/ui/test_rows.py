"""What the panes would show, computed without running the app."""

from __future__ import annotations

import dataclasses

from kconsole.models import ClusterSnapshot, Controller, Partition, SourceHealth, SourceName
from kconsole.timeline import Event, EventKind
from kconsole.ui import format as fmt
from kconsole.ui import rows
from kconsole.ui.rows import PartitionView
from kconsole.ui.widgets.panes import controller_text, header_text, pane_source, stale_text
from tests.ui import builders as B
from tests.unit.snapshots import load


class TestFormat:
    """Ages, clock times and state colours."""

    def test_age(self) -> None:
        assert [fmt.age(s) for s in (None, -1, 0.4, 59, 65, 3600 * 2 + 7 * 60, 86400 * 3)] == [
            "—",
            "0s",
            "0s",
            "59s",
            "1m05s",
            "2h07m",
            "3d00h",
        ]

    def test_clock_time_is_local_with_millis(self) -> None:
        assert fmt.clock_time(B.T0 + 7.25) == "08:00:07.250"
        assert fmt.clock_time(B.T0 + 0.9996) == "08:00:01.000"

    def test_group_state_spellings(self) -> None:
        assert fmt.group_state_style("PREPARING_REBALANCE") == fmt.WARN
        assert fmt.group_state_style("PreparingRebalance") == fmt.WARN
        assert fmt.group_state_style("whatever") == fmt.PLAIN


class TestPartitionRows:
    """Partition rows: filters, order, and odd leaders."""

    def test_default_hides_internal_and_orders_by_topic(self) -> None:
        snap = B.healthy()
        keys = list(rows.partition_rows(snap, PartitionView()))
        assert keys == [f"test-topic/{p}" for p in range(4)]

    def test_flags_sort_puts_worst_first(self) -> None:
        snap = B.offline_partition()
        keys = list(rows.partition_rows(snap, PartitionView(sort="flags")))
        assert keys[0] == "audit-log/1"

    def test_offline_leader(self) -> None:
        snap = B.offline_partition()
        cells = rows.partition_rows(snap, PartitionView())["audit-log/1"]
        assert cells[2].plain == "none"
        assert "offline" in cells[5].plain

    def test_empty_replicas(self) -> None:
        snap = ClusterSnapshot(taken_at=B.T0, partitions=(Partition("t", 0, -1, (), ()),))
        cells = rows.partition_rows(snap, PartitionView())["t/0"]
        assert [c.plain for c in cells[2:5]] == ["none", "—", "—"]

    def test_view_describes_itself(self) -> None:
        view = PartitionView(text="ord", unhealthy_only=True, sort="leader", reverse=True)
        assert view.describe() == "sort leader ↓ · /ord · unhealthy only"


class TestPanes:
    """Header, controller and stale markers."""

    def test_header_compact_fits_80(self) -> None:
        text = header_text(B.zk_unreachable(), B.T0 + 120, 1.0, 2.0, "kconsole", compact=True)
        assert len(text.plain) <= 80
        assert "STALE 12s" in text.plain

    def test_header_without_snapshot_or_sources(self) -> None:
        assert "waiting" in header_text(None, 0, 1, 2, "k", compact=False).plain
        bare = header_text(ClusterSnapshot(taken_at=B.T0), B.T0, 1, 2, "k", compact=False)
        assert "ZooKeeper —" in bare.plain and "cluster ?" in bare.plain

    def test_controller_lost(self) -> None:
        snap = dataclasses.replace(B.healthy(), controller=Controller(None, 5, B.T0 - 8, 3))
        assert controller_text(snap, B.T0).plain.splitlines() == [
            "NO ACTIVE CONTROLLER",
            "for 8s",
            "was broker 3",
            "last epoch 5",
        ]

    def test_zookeeper_then_admin(self) -> None:
        snap = B.healthy()
        names = (SourceName.ZOOKEEPER, SourceName.ADMIN)
        assert pane_source(snap, names) == snap.source(SourceName.ZOOKEEPER)
        admin = tuple(s for s in snap.sources if s.name is SourceName.ADMIN)
        admin_only = dataclasses.replace(snap, sources=admin)
        assert pane_source(admin_only, names) == snap.source(SourceName.ADMIN)
        assert pane_source(dataclasses.replace(snap, sources=()), names) is None

    def test_stale_text(self) -> None:
        health = SourceHealth(SourceName.GROUPS, False, B.T0 - 12, "timed out")
        assert stale_text(health, B.T0) == "STALE 12s: timed out"
        assert stale_text(dataclasses.replace(health, updated_at=None), B.T0) == (
            "STALE: timed out"
        )


class TestNarrowPanes:
    """What a narrow groups or events pane shows (80x24: 30 and 46 columns)."""

    def test_elide_middle_keeps_both_ends(self) -> None:
        assert rows.elide_middle("orders-verifier", None) == "orders-verifier"
        assert rows.elide_middle("orders-verifier", 15) == "orders-verifier"
        assert rows.elide_middle("spark-kafka-source-2b7e4c1a-driver-0", 9) == "spar…er-0"
        assert rows.elide_middle("abcdef", 4) == "ab…f"
        assert rows.elide_middle("abcdef", 1) == "…"

    def test_narrow_group_row_keeps_its_key_state_and_lag(self) -> None:
        g = B.group("console-consumer-48213", (12, 3, 0, 0), state="PreparingRebalance")
        cells = rows.group_row(g, B.T0, name_width=9)
        assert [c.plain for c in cells[:3]] == ["cons…8213", "Rebalance", "15"]
        assert isinstance(cells[0], rows.KeyCell) and cells[0].row_key == g.group_id
        assert cells[1].style == fmt.group_state_style("PreparingRebalance")
        wide = rows.group_row(g, B.T0)
        assert [c.plain for c in wide[:3]] == [g.group_id, "PreparingRebalance", "15"]

    def test_event_lines_wrap_whole_words_and_lose_nothing(self) -> None:
        text = "__consumer_offsets/0 ISR expanded: +2 -> [1,2,3]"
        le = rows.LoggedEvent(1, Event(B.T0, EventKind.ISR_EXPANDED, text))
        lines = rows.event_lines(le, 31)
        assert lines == ["__consumer_offsets/0 ISR", "expanded: +2 -> [1,2,3]"]
        assert " ".join(lines) == text and all(len(line) <= 31 for line in lines)
        first = rows.narrow_event_cells(le, 0, lines[0])
        second = rows.narrow_event_cells(le, 1, lines[1])
        assert [c.plain for c in first] == ["08:00:00", lines[0]]
        assert [c.plain for c in second] == ["", lines[1]]
        assert first[1].style == fmt.SEVERITY_STYLE["good"]  # the kind's colour, on the text

    def test_wrapped_event_keeps_its_kind_column(self) -> None:
        """Issue 35 #13: at 160 columns events were cut (`(was controller …`); they wrap under
        their own text, the time and kind on the first line only."""
        text = "quorum leader is controller 1001, epoch 2 (was controller 1003)"
        le = rows.LoggedEvent(1, Event(B.T0, EventKind.CONTROLLER_CHANGED, text))
        lines = rows.event_lines(le, 40)
        assert " ".join(lines) == text and len(lines) == 2
        first = rows.wrapped_event_cells(le, 0, lines[0])
        second = rows.wrapped_event_cells(le, 1, lines[1])
        assert [c.plain for c in first] == ["08:00:00.000", "controller-changed", lines[0]]
        assert [c.plain for c in second] == ["", "", lines[1]]
        assert max(len(k.value) for k in EventKind) == rows.KIND_WIDTH


class TestBrokersFit:
    """Issue 35 #13: at 80x24 the KRaft brokers pane cut the address to `1` and hid leads,
    hosts and URP. Lower-value columns give way first; id, role, state, leads, URP stay."""

    def test_kraft_at_80x24_keeps_what_matters(self) -> None:
        from tests.ui import kraft_fakes as K

        snap = K.fenced_broker()
        full = rows.broker_columns(snap)
        columns, cells = rows.fit_broker_table(full, rows.broker_rows(snap), 37)
        assert [k for k, _ in columns] == ["id", "role", "state", "leads", "urp"]
        assert rows._table_width(columns, cells) <= 37
        assert [cells["1001"][1].plain, cells["1"][1].plain] == ["ctrl", "broker"]
        # a paused broker stays paused (that is why it is fenced)
        assert cells["3"][2].plain == "paused"

    def test_a_broker_up_but_fenced_reads_fenced_once_the_column_goes(self) -> None:
        columns: rows.Columns = (("id", "id"), ("state", "state"), ("fencing", "fencing"))
        cells = {
            "1": [fmt.cell("1"), fmt.cell("up"), fmt.cell("fenced", fmt.BAD)],
            "2": [fmt.cell("2"), fmt.cell("up"), fmt.cell("unfenced", fmt.GOOD)],
        }
        shown, out = rows._fold_fencing(columns, cells)
        assert [k for k, _ in shown] == ["id", "state"]
        assert [out["1"][1].plain, out["2"][1].plain] == ["fenced", "up"]
        assert out["1"][1].style == fmt.BAD

    def test_only_what_does_not_fit_goes(self) -> None:
        snap = load("healthy")
        full = rows.broker_columns(snap)
        every = rows.broker_rows(snap)
        assert rows.fit_broker_table(full, every, None)[0] == full
        wide = rows._table_width(full, every)
        assert rows.fit_broker_table(full, every, wide)[0] == full  # fits: all of it
        less = rows.fit_broker_table(full, every, wide - 1)[0]
        assert [k for k, _ in less] == ["id", "address", "state", "leads", "hosts", "urp"]
        least = rows.fit_broker_table(full, every, 10)[0]
        assert [k for k, _ in least] == ["id", "state", "leads", "urp"]
