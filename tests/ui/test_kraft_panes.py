"""The panes on a KRaft cluster: the quorum, the header, brokers with fencing and the
controllers, and the columns that come only when the snapshot has them (ELR, group type)."""

from __future__ import annotations

import dataclasses

from textual.widgets._footer import FooterKey

from kconsole.commands import Commands
from kconsole.models import (
    Broker,
    ClusterMode,
    ClusterSnapshot,
    FeatureLevel,
    Features,
    Group,
    Partition,
    QuorumReplica,
)
from kconsole.ui import format as fmt
from kconsole.ui import rows
from kconsole.ui.quorum import node_kind, quorum_lines, quorum_view
from kconsole.ui.widgets.footer import MORE, KeyBar
from kconsole.ui.widgets.panes import header_text
from kconsole.ui.widgets.table import KeyedTable
from kconsole.ui.widgets.tables import GroupsTable, PartitionsTable
from tests.ui import builders as B
from tests.ui import kraft_fakes as K
from tests.ui.conftest import FakeControl, feed, new_app, settle


def lines(snap: ClusterSnapshot, width: int = 62, height: int = 12) -> list[str]:
    return quorum_view(snap, snap.taken_at, width, height).text.plain.split("\n")


def row_of(table_lines: list[str], node_id: int) -> list[str]:
    """The cells of the quorum table's line for `node_id` (split on runs of spaces)."""
    for line in table_lines:
        cells = line.replace("★", "").split()
        if cells and cells[0] == str(node_id):
            return cells
    raise AssertionError(f"no line for {node_id} in {table_lines}")


class TestQuorumPane:
    """What the quorum pane says, from recorded DescribeQuorum answers."""

    def test_healthy_names_leader_epoch_and_hw_and_every_replica(self) -> None:
        snap = K.healthy()
        view = quorum_view(snap, snap.taken_at, 62, 12)
        assert view.title == "Quorum ★ 1003 · epoch 1 · HW 116"
        assert not view.alert and not view.stale
        shown = lines(snap)
        # Kafka reports no election time: led already at kconsole's first reading, epoch 1
        assert shown[0] == "seen leading for 2m05s · was —"
        assert shown[1].split() == ["id", "role", "node", "LEO", "lag", "fetch", "caught", "up"]
        # voters then observers, each by id; the leader starred
        assert [ln.split()[0] for ln in shown[2:]] == ["1001", "1002", "★", "1", "2", "3"]
        assert row_of(shown, 1003)[:3] == ["1003", "voter", "controller"]
        assert row_of(shown, 2)[:5] == ["2", "observer", "broker", "116", "0"]

    def test_lagging_voter_shows_its_lag_and_ages_in_amber(self) -> None:
        snap = K.lagging_voter()
        view = quorum_view(snap, snap.taken_at, 62, 12)
        assert row_of(lines(snap), 1001)[3:] == ["117", "14", "6s", "7s"]
        lagging = next(ln for ln in view.text.split("\n") if "1001" in ln.plain)
        for word in ("14", "6s", "7s"):
            start = lagging.plain.index(f" {word}") + 1
            styles = [s.style for s in lagging.spans if s.start <= start < s.end]
            assert fmt.WARN in styles, (word, lagging.spans)

    def test_no_leader_is_an_alarm_with_the_last_figures_and_their_age(self) -> None:
        snap = K.no_leader(lost_for=6.0)
        view = quorum_view(snap, snap.taken_at, 62, 14)
        assert view.alert and view.stale
        assert "NO LEADER" in view.title
        shown = view.text.plain.split("\n")
        assert shown[0] == "NO QUORUM LEADER"
        assert shown[1] == "for 6s · was 1003 · epoch 1"
        assert shown[3].startswith("read 6s ago: no controller leads (127.0.0.1:19193 not the")
        assert row_of(shown, 3)[3:5] == ["158", "1"]  # the last figures read

    def test_a_stale_read_says_its_age_and_why_and_never_looks_fresh(self) -> None:
        snap = K.stale_quorum(age=12.0)
        view = quorum_view(snap, snap.taken_at + 3, 62, 12)
        assert view.stale and not view.alert
        first = view.text.split("\n")[0]
        assert first.plain.startswith("read 15s ago: " + K.STALE_ERROR[:20])
        assert [s.style for s in first.spans] == [fmt.WARN]
        # The lags and ages are those of the read, in amber, not green
        leader_line = next(ln for ln in view.text.split("\n") if "1001" in ln.plain)
        assert not any(s.style == fmt.GOOD for s in leader_line.spans)

    def test_unknown_figures_are_question_marks_never_zero(self) -> None:
        snap = K.healthy()
        assert snap.quorum is not None
        blank = QuorumReplica(1002, True)  # nothing reported for it
        q = dataclasses.replace(snap.quorum, voters=(*snap.quorum.voters[:1], blank))
        shown = lines(dataclasses.replace(snap, quorum=q))
        assert row_of(shown, 1002)[3:] == ["—", "?", "?", "?"]

    def test_not_read_yet(self) -> None:
        snap = dataclasses.replace(K.healthy(), quorum=None)
        view = quorum_view(snap, snap.taken_at)
        assert view.text.plain.startswith("not read yet")

    def test_a_short_pane_says_how_many_lines_it_left_out(self) -> None:
        snap = K.stale_quorum()
        shown = lines(snap, 36, 7)
        assert len(shown) == 7
        assert shown[-1] == "… 2 more"
        assert quorum_lines(snap, snap.taken_at) == 9

    def test_a_narrow_pane_drops_node_and_leo_before_lag_and_ages(self) -> None:
        shown = lines(K.healthy(), 36, 12)
        assert shown[1].split() == ["id", "role", "lag", "fetch", "caught"]
        assert all(len(ln) <= 36 for ln in shown)

    def test_node_kind(self) -> None:
        snap = K.healthy()
        assert node_kind(snap, QuorumReplica(1001, True)) == "controller"
        assert node_kind(snap, QuorumReplica(2, False)) == "broker"
        assert node_kind(snap, QuorumReplica(2, True)) == "combined"
        assert node_kind(snap, QuorumReplica(77, False)) == ""  # neither a broker nor a voter
        both = dataclasses.replace(snap.brokers[0], roles=("broker", "controller"))
        mixed = dataclasses.replace(snap, brokers=(both, *snap.brokers[1:]))
        assert node_kind(mixed, QuorumReplica(1, False)) == "combined"


class TestHeader:
    """The mode and the feature levels in the header."""

    def header(self, snap: ClusterSnapshot, compact: bool = False, tight: int = 0) -> str:
        return header_text(
            snap, snap.taken_at, 1.0, 2.0, "kconsole", compact=compact, tight=tight
        ).plain

    def test_kraft_says_its_mode_metadata_version_and_quorum_kind(self) -> None:
        snap = K.healthy()
        long = self.header(snap)
        assert "KRaft metadata.version 4.4-IV2 kraft.version 1 (dynamic quorum)" in long
        assert "quorum ok 0s" in long and "ZooKeeper" not in long
        assert "KRaft 4.4-IV2 dynamic quorum" in self.header(snap, tight=1)
        assert "KRaft 4.4-IV2 dynamic │" in self.header(snap, compact=True, tight=2)

    def test_the_long_form_gives_every_other_feature_level(self) -> None:
        """As recorded, the levels kafka-features describe gives for a new Kafka 4.4 cluster, in
        its order (by name); the shorter forms leave them out (the sources' health first)."""
        snap = K.healthy()
        levels = "eligible.leader.replicas 1 group 1 share 2 streams 1 transaction 2"
        assert f"(dynamic quorum) {levels} │" in self.header(snap)
        assert "share 2" not in self.header(snap, tight=1)
        off = dataclasses.replace(snap.features, others=(FeatureLevel("share.version", 0),))
        assert "(dynamic quorum) share 0 │" in self.header(dataclasses.replace(snap, features=off))

    def test_unread_features_are_question_marks(self) -> None:
        snap = dataclasses.replace(K.healthy(), features=None)
        assert "metadata.version ? kraft.version ?" in self.header(snap)
        level = dataclasses.replace(K.healthy(), features=Features(metadata_version_level=33))
        assert "metadata.version level 33 kraft.version ?" in self.header(level)
        static = dataclasses.replace(K.healthy(), features=Features("3.9-IV0", 21, 0))
        assert "KRaft 3.9-IV0 static quorum" in self.header(static, tight=1)

    def test_zookeeper_header_is_unchanged(self) -> None:
        snap = B.healthy()
        assert "KRaft" not in self.header(snap) and "mode" not in self.header(snap)
        assert self.header(snap).startswith(" kconsole │ cluster ")

    def test_some_form_fits_80_columns_whatever_the_quorum(self) -> None:
        from kconsole.ui.widgets.panes import HEADER_FORMS

        for snap in (K.healthy(), K.stale_quorum(), K.no_leader(), K.fenced_broker()):
            widths = [len(self.header(snap, compact=c, tight=t).rstrip()) for c, t in HEADER_FORMS]
            assert min(widths) <= 80, widths
            assert widths == sorted(widths, reverse=True), widths  # each shorter than before

    def test_unknown_mode_says_so(self) -> None:
        snap = dataclasses.replace(B.healthy(), mode=ClusterMode.UNKNOWN)
        assert "mode ?" in self.header(snap)


class TestBrokerRows:
    """The brokers pane on KRaft: fencing, and the controllers listed after the brokers."""

    def test_fenced_broker_and_controllers(self) -> None:
        snap = K.fenced_broker()
        assert rows.broker_columns(snap) == rows.KRAFT_BROKER_COLUMNS
        shown = {k: [c.plain for c in v] for k, v in rows.broker_rows(snap).items()}
        assert list(shown) == ["1", "2", "3", "1001", "1002", "1003"]
        assert shown["3"][:5] == ["3", "broker", "paused", "fenced", "127.0.0.1:19094"]
        assert shown["1"][3] == "unfenced"
        assert shown["1003"][:5] == ["1003 ★", "controller", "leader", "—", "127.0.0.1:19194"]
        assert shown["1001"][2] == "voter"
        assert rows.controller_ids(snap) == [1001, 1002, 1003]

    def test_a_killed_controller_is_down_in_its_row_and_the_title(self) -> None:
        from kconsole.ui.screens.main import _brokers_title

        snap = K.killed_voter()
        shown = {k: [c.plain for c in v] for k, v in rows.broker_rows(snap).items()}
        assert shown["1001"][:3] == ["1001", "controller", "down"]
        assert [shown[str(i)][2] for i in (1002, 1003)] == ["voter", "leader"]
        assert "3 controllers[/][dim],[/] [$error]1 down[/]" in _brokers_title(snap)
        paused = {k: [c.plain for c in v] for k, v in rows.broker_rows(K.lagging_voter()).items()}
        assert paused["1001"][2] == "paused"
        assert "1 down" not in _brokers_title(K.healthy())

    def test_a_stale_quorum_marks_the_controllers_state_unsure(self) -> None:
        shown = {k: [c.plain for c in v] for k, v in rows.broker_rows(K.stale_quorum()).items()}
        assert [shown[str(i)][2] for i in (1001, 1002, 1003)] == ["voter?", "voter?", "leader?"]
        assert shown["1"][2] == "up"  # brokers come from the Admin API, which answers

    def test_fencing_and_unknown_fencing(self) -> None:
        assert rows.fencing_cell(Broker(1, "h", 1, fenced=True)).plain == "fenced"
        assert rows.fencing_cell(Broker(1, "h", 1, fenced=False)).plain == "unfenced"
        assert rows.fencing_cell(Broker(1, "h", 1)).plain == fmt.NONE

    def test_a_combined_node_is_one_broker_row(self) -> None:
        snap = K.healthy()
        assert snap.quorum is not None
        voters = tuple(
            dataclasses.replace(v, id=i) for v, i in zip(snap.quorum.voters, (1, 2, 3), strict=True)
        )
        q = dataclasses.replace(snap.quorum, voters=voters, observers=(), leader_id=2)
        combined = dataclasses.replace(snap, quorum=q)
        shown = {k: [c.plain for c in v] for k, v in rows.broker_rows(combined).items()}
        assert list(shown) == ["1", "2", "3"]
        assert shown["2"][:2] == ["2 ★", "combined"]

    def test_zookeeper_rows_are_unchanged(self) -> None:
        snap = B.healthy()
        assert rows.broker_columns(snap) == rows.BROKER_COLUMNS
        assert [len(v) for v in rows.broker_rows(snap).values()] == [7, 7, 7]


def with_elr(snap: ClusterSnapshot) -> ClusterSnapshot:
    """`snap` with ELR reported: partition 0 with [3] eligible, the others empty."""
    parts = tuple(
        dataclasses.replace(p, elr=(3,) if p.partition == 0 else (), last_known_elr=())
        for p in snap.partitions
    )
    return dataclasses.replace(snap, partitions=parts)


class TestOptionalColumns:
    """ELR and group-type columns only when the snapshot has them."""

    def test_elr_columns_only_when_reported(self) -> None:
        assert not rows.has_elr(K.healthy())  # ELR None everywhere, as recorded
        assert not rows.has_elr(with_elr(B.healthy()))  # ZooKeeper mode never has them
        snap = with_elr(K.healthy())
        assert rows.has_elr(snap)
        p = snap.partitions[0]
        cells = rows.partition_cells(snap, p, elr=True)
        keys = [k for k, _ in rows.partition_columns(True)]
        assert keys[4:7] == ["isr", "elr", "last_elr"]
        assert [c.plain for c in cells[5:7]] == ["3", fmt.NONE]
        assert rows.partition_widths(snap, p, elr=True) == tuple(c.cell_len for c in cells)
        assert len(rows.partition_cells(snap, p)) == len(rows.PARTITION_COLUMNS)

    def test_group_type_column_only_when_a_group_has_a_type(self) -> None:
        plain = Group("g", "Stable", 1)
        typed = dataclasses.replace(plain, group_type="consumer")
        assert rows.group_columns([plain]) == rows.GROUP_COLUMNS
        assert rows.group_columns([plain, typed]) == rows.TYPED_GROUP_COLUMNS
        cells = [c.plain for c in rows.group_row(typed, 0.0, typed=True)]
        keys = [k for k, _ in rows.TYPED_GROUP_COLUMNS]
        assert dict(zip(keys, cells, strict=True))["type"] == "consumer"
        assert [c.plain for c in rows.group_row(plain, 0.0, typed=True)][3] == fmt.NONE

    async def test_columns_come_and_go_with_the_snapshot(self) -> None:
        """In the running console: ELR and type columns appear when a snapshot has them and
        go when one does not; the brokers pane switches to its KRaft columns and back."""
        app = new_app()
        async with app.run_test(size=(160, 48)) as pilot:
            partitions = app.screen.query_one(PartitionsTable)
            groups = app.screen.query_one(GroupsTable)
            brokers = app.screen.query_one("#brokers", KeyedTable)
            base = K.healthy()
            feed(app, base)
            await settle(pilot)
            assert [k for k, _ in partitions.columns] == [k for k, _ in rows.PARTITION_COLUMNS]
            assert [k for k, _ in brokers.shown_columns] == [
                k for k, _ in rows.KRAFT_BROKER_COLUMNS
            ]
            assert brokers.row_keys == ["1", "2", "3", "1001", "1002", "1003"]
            typed = (Group("orders", "Stable", 2, group_type="consumer"),)
            feed(app, dataclasses.replace(with_elr(base), taken_at=base.taken_at + 1, groups=typed))
            await settle(pilot)
            assert [k for k, _ in partitions.columns][5:7] == ["elr", "last_elr"]
            assert partitions.get_cell("test-topic/0", "elr").plain == "3"
            assert "type" in [k for k, _ in groups.shown_columns]
            assert groups.get_cell("orders", "type").plain == "consumer"
            feed(app, dataclasses.replace(B.healthy(), taken_at=base.taken_at + 2))
            await settle(pilot)
            assert "elr" not in [k for k, _ in partitions.columns]
            assert "type" not in [k for k, _ in groups.shown_columns]
            assert [k for k, _ in brokers.shown_columns] == [k for k, _ in rows.BROKER_COLUMNS]
            assert brokers.row_keys == ["1", "2", "3"]


async def test_key_bar_fits_80_columns_on_kraft() -> None:
    """80x24 on KRaft: every key in the bar whole and inside it, "? more" at the end."""
    app = new_app(commands=Commands(FakeControl()))
    async with app.run_test(size=(80, 24)) as pilot:
        feed(app, K.healthy(), K.fenced_broker())
        await settle(pilot)
        bar = app.screen.query_one(KeyBar)
        for pane in ("2", "1", "3"):
            await pilot.press(pane)
            await settle(pilot)
            keys = list(bar.query_children(FooterKey))
            for key in keys:
                whole = len(key.render().plain) + key.styles.gutter.width
                assert key.region.width == whole, key.description
                assert bar.region.contains_region(key.region), key.description
            help_key = next(k for k in keys if k.key_display == "?")
            assert help_key.description == MORE
        assert app.screen.has_class("-kraft")


def test_partitions_of_a_recorded_answer_keep_elr_as_reported() -> None:
    """The fake's partitions keep the recording's None (not reported): no ELR column."""
    parts = K.partitions_from(K.recorded("fenced_broker")["describe_topic_partitions"])
    assert all(isinstance(p, Partition) and p.elr is None for p in parts)
    assert [p.isr for p in parts] == [(2, 1), (1, 2), (1, 2), (1, 2)]


class TestLeaderSince:
    """Kafka reports no election time: the pane says how long kconsole has seen the leader,
    and "elected … ago" only for an election it saw."""

    def test_an_election_kconsole_saw(self) -> None:
        snap = K.healthy()
        q = snap.quorum
        assert q is not None
        seen = dataclasses.replace(
            q, leader_seen_since=snap.taken_at - 3, leader_seen_elected=True, previous_leader=1001
        )
        assert lines(dataclasses.replace(snap, quorum=seen))[0] == "elected 3s ago · was 1001"

    def test_a_leader_of_a_later_epoch_seen_first_has_an_unknown_predecessor(self) -> None:
        snap = K.healthy()
        q = snap.quorum
        assert q is not None
        later = dataclasses.replace(q, leader_epoch=4)
        assert lines(dataclasses.replace(snap, quorum=later))[0] == (
            "seen leading for 2m05s · was ?"
        )
