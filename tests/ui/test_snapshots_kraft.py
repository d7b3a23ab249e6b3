"""What the console looks like on a KRaft cluster, fed snapshots built from a real KRaft
cluster's recorded answers (tests/ui/kraft_fakes.py)."""

from __future__ import annotations

from collections.abc import Callable

from tests.ui import kraft_fakes as K
from tests.ui.conftest import feeding, keys_then, new_app

WIDE = (160, 48)
SMALL = (80, 24)
SnapCompare = Callable[..., bool]


class TestQuorum:
    """The quorum pane, the KRaft header and the brokers pane, in each state of a drill."""

    def test_healthy_wide(self, snap_compare: SnapCompare) -> None:
        """Every voter and observer caught up; the header says KRaft, 4.4-IV2, dynamic."""
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=feeding(K.healthy()))

    def test_healthy_80x24(self, snap_compare: SnapCompare) -> None:
        """A healthy quorum on an 80x24 terminal: leader, epoch and HW in the pane's title."""
        assert snap_compare(new_app(), terminal_size=SMALL, run_before=feeding(K.healthy()))

    def test_lagging_voter_wide(self, snap_compare: SnapCompare) -> None:
        """Controller 1001 paused: its lag, last fetch and last caught-up age in amber."""
        snaps = K.healthy(), K.lagging_voter()
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=feeding(*snaps))

    def test_lagging_voter_80x24(self, snap_compare: SnapCompare) -> None:
        """A lagging voter on an 80x24 terminal."""
        snaps = K.healthy(), K.lagging_voter()
        assert snap_compare(new_app(), terminal_size=SMALL, run_before=feeding(*snaps))

    def test_no_leader_wide(self, snap_compare: SnapCompare) -> None:
        """The majority lost: NO QUORUM LEADER in red, the last figures with their age."""
        snaps = K.healthy(), K.no_leader()
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=feeding(*snaps))

    def test_no_leader_80x24(self, snap_compare: SnapCompare) -> None:
        """No leader on an 80x24 terminal."""
        snaps = K.healthy(), K.no_leader()
        assert snap_compare(new_app(), terminal_size=SMALL, run_before=feeding(*snaps))

    def test_killed_voter_wide(self, snap_compare: SnapCompare) -> None:
        """Controller 1001 killed: its row down in red, the title "3 controllers, 1 down",
        and the event saying so (process not running)."""
        snaps = K.healthy(), K.killed_voter()
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=feeding(*snaps))

    def test_killed_voter_80x24(self, snap_compare: SnapCompare) -> None:
        """A killed controller on an 80x24 terminal."""
        snaps = K.healthy(), K.killed_voter()
        assert snap_compare(new_app(), terminal_size=SMALL, run_before=feeding(*snaps))

    def test_stale_read_wide(self, snap_compare: SnapCompare) -> None:
        """The quorum could not be read for 12 s: its figures with that age and the reason."""
        snaps = K.healthy(), K.stale_quorum()
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=feeding(*snaps))

    def test_stale_read_80x24(self, snap_compare: SnapCompare) -> None:
        """A stale quorum read on an 80x24 terminal."""
        snaps = K.healthy(), K.stale_quorum()
        assert snap_compare(new_app(), terminal_size=SMALL, run_before=feeding(*snaps))

    def test_fenced_broker_wide(self, snap_compare: SnapCompare) -> None:
        """Broker 3 paused and fenced: fenced in the brokers pane, out of every ISR, and an
        observer falling behind in the quorum pane."""
        snaps = K.healthy(), K.fenced_broker()
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=feeding(*snaps))

    def test_fenced_broker_80x24(self, snap_compare: SnapCompare) -> None:
        """A fenced broker on an 80x24 terminal."""
        snaps = K.healthy(), K.fenced_broker()
        assert snap_compare(new_app(), terminal_size=SMALL, run_before=feeding(*snaps))

    def test_elr_and_group_types_wide(self, snap_compare: SnapCompare) -> None:
        """Brokers 2 and 3 fenced: ISR [1] under min ISR, ELR [3]; the groups' types."""
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=feeding(K.elr_groups()))

    def test_elr_and_group_types_80x24(self, snap_compare: SnapCompare) -> None:
        """ELR and group types on an 80x24 terminal."""
        assert snap_compare(new_app(), terminal_size=SMALL, run_before=feeding(K.elr_groups()))


class TestNewGroupProtocols:
    """The four group types of Kafka 4.4 as read from a Kafka 4.4 cluster: a classic, a
    consumer-protocol (KIP-848), a share (KIP-932) and a streams group (KIP-1071), each with its
    type, state, members and lag: the share group's lag as its coordinator reports it
    (KIP-1226), the streams group's from its committed offsets like a consumer group's."""

    def test_groups_pane_wide(self, snap_compare: SnapCompare) -> None:
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=feeding(K.new_groups()))

    def test_groups_pane_80x24(self, snap_compare: SnapCompare) -> None:
        run = keys_then([K.new_groups()], "3")
        assert snap_compare(new_app(), terminal_size=SMALL, run_before=run)

    def test_share_group_screen(self, snap_compare: SnapCompare) -> None:
        """Enter on the share group: its members' partitions, each with its start offset and
        the lag its coordinator reports (kafka-share-groups --describe's figures)."""
        run = keys_then([K.new_groups()], "3", "down", "down", "enter")
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=run)

    def test_streams_group_screen(self, snap_compare: SnapCompare) -> None:
        """Enter on the streams group: the partitions its member's tasks read, committed
        offset, log end and lag as kafka-streams-groups --describe --offsets printed them."""
        run = keys_then([K.new_groups()], "3", "down", "down", "down", "enter")
        assert snap_compare(new_app(), terminal_size=WIDE, run_before=run)
