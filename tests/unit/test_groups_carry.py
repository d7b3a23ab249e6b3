"""Consumer-group figures during faults: carried with their age or unknown, never made up."""

from __future__ import annotations

from dataclasses import replace

from kconsole.cluster.groups.reader import carry_forward
from kconsole.models import Group, GroupPartition
from kconsole.ui.rows import group_lag, group_partition_rows

T0 = 1_700_000_000.0


def _group(*parts: GroupPartition, error: str = "", state: str = "STABLE") -> Group:
    return Group("billing", state, 1, "range", 2, tuple(parts), error=error)


def _gp(p: int, committed: int | None, log_end: int | None, known: bool = True) -> GroupPartition:
    return GroupPartition("t", p, committed, log_end, "c@h", committed_known=known)


def test_unread_committed_offsets_are_carried_with_when_they_were_read() -> None:
    before = _group(_gp(0, 100, 500), _gp(1, 200, 600))
    # Coordinator moving: no committed offsets and no assignment came back at all.
    now = _group(error="coordinator moving", state="UNKNOWN")
    (g,) = carry_forward([before], T0, [now])
    assert [(p.partition, p.committed, p.log_end, p.as_of) for p in g.partitions] == [
        (0, 100, 500, T0),
        (1, 200, 600, T0),
    ]
    assert g.state == "STABLE" and g.as_of == T0 and g.lag == 800 and g.lag_partial


def test_a_carried_figure_keeps_its_first_read_time_across_polls() -> None:
    before = _group(_gp(0, 100, 500))
    (g1,) = carry_forward([before], T0, [_group(error="x", state="UNKNOWN")])
    (g2,) = carry_forward([g1], T0 + 2, [_group(error="x", state="UNKNOWN")])
    assert g2.partitions[0].as_of == T0 and g2.oldest == T0


def test_fresh_log_end_with_carried_committed_offset() -> None:
    before = _group(_gp(0, 100, 500))
    (g,) = carry_forward([before], T0, [_group(_gp(0, None, 900, known=False), error="x")])
    p = g.partitions[0]
    assert (p.committed, p.log_end, p.as_of, p.lag) == (100, 900, T0, 800)


def test_nothing_known_is_unknown_never_zero() -> None:
    (g,) = carry_forward([], T0, [_group(_gp(0, None, None, known=False), error="down")])
    assert g.lag is None and g.lag_unknown
    assert group_lag(g, T0).plain == "?"
    row = group_partition_rows(g, T0)["t/0"]
    assert [c.plain for c in row[2:5]] == ["?", "?", "?"]


def test_a_missing_log_end_is_never_a_zero_lag() -> None:
    """The reported bug: ListOffsets' -1001 / missing answers summed as lag 0."""
    fresh = _group(_gp(0, 5000, None), _gp(1, 100, 400), error="log end unknown")
    (g,) = carry_forward([], None, [fresh])
    assert g.lag == 300 and g.lag_partial
    assert group_lag(g, T0).plain == "300 + ?"


def test_a_healthy_poll_replaces_carried_figures() -> None:
    carried = _group(GroupPartition("t", 0, 100, 500, as_of=T0))
    (g,) = carry_forward([carried], T0 + 2, [_group(_gp(0, 450, 520))])
    assert g.partitions[0].as_of is None and not g.lag_partial and g.lag == 70
    assert group_lag(g, T0 + 2).plain == "70"


def test_age_is_shown_next_to_a_carried_total() -> None:
    (g,) = carry_forward([_group(_gp(0, 100, 500))], T0, [_group(error="x", state="UNKNOWN")])
    assert group_lag(g, T0 + 42).plain == "400 (42s old)"


def test_nothing_committed_is_not_an_unread_figure_but_not_a_total_either() -> None:
    """Read, and nothing committed (Kafka's `-`): not unknown, but the total is "?" (where a
    consumer starts decides how far behind it is), with the reason."""
    g = _group(_gp(0, None, 500))
    assert g.lag is None and not g.lag_unknown and g.lag_partial
    assert group_lag(g, T0).plain == "?"
    assert g.lag_left_out() == {"t/0": "no committed offset"}
    assert group_partition_rows(g, T0)["t/0"][4].plain == "—"


def test_a_total_that_leaves_out_uncommitted_partitions_says_so() -> None:
    """Issue 35, item 11: 1,403 from the committed partitions, two assigned partitions with
    nothing committed: `1,403 + ?`, the note saying which and why; Kafka's `-` per partition."""
    g = _group(_gp(0, 100, 1000), _gp(1, 0, 503), _gp(2, None, 700), _gp(3, None, 0))
    assert g.lag == 1403 and g.lag_partial and not g.lag_unknown
    assert group_lag(g, T0).plain == "1,403 + ?"
    assert g.lag_left_out() == {"t/2": "no committed offset", "t/3": "no committed offset"}
    assert g.lag_note == "lag leaves out 2 of 4 partitions: no committed offset"
    rows = group_partition_rows(g, T0)
    assert [rows[f"t/{p}"][4].plain for p in range(4)] == ["900", "503", "—", "—"]
    from kconsole.ui.rows import group_row

    assert group_row(g, T0)[-1].plain == g.lag_note


def test_a_share_group_has_no_uncommitted_partitions() -> None:
    """A share group commits nothing by design: its lag is n/a, not a partial total."""
    g = replace(_group(_gp(0, None, 500)), lag_na="share group")
    assert g.uncommitted == () and not g.lag_partial and g.lag_note == ""
    assert group_lag(g, T0).plain == "n/a"


def test_describe_and_json_say_the_total_is_partial() -> None:
    """`kconsole describe` prints `1403 + ?` and the reason; --json carries the total, that
    it is partial and which partitions it leaves out, and still loads back."""
    import json

    from kconsole.describe import render_text
    from kconsole.models import ClusterSnapshot

    g = _group(_gp(0, 100, 1000), _gp(1, 0, 503), _gp(2, None, 700), _gp(3, None, 0))
    snap = ClusterSnapshot(T0, groups=(g, replace(g, group_id="empty", partitions=())))
    text = render_text(snap, now=T0)
    row = next(ln for ln in text.splitlines() if ln.startswith("billing"))
    assert row.split()[-3:] == ["1403", "+", "?"]
    assert "  billing: lag leaves out 2 of 4 partitions: no committed offset" in text
    data = json.loads(snap.to_json())
    assert data["groups"][0]["lag"] == 1403 and data["groups"][0]["lag_partial"] is True
    assert data["groups"][0]["lag_left_out"] == {
        "t/2": "no committed offset",
        "t/3": "no committed offset",
    }
    assert data["groups"][1]["lag"] is None and data["groups"][1]["lag_partial"] is False
    assert ClusterSnapshot.from_dict(data).groups == snap.groups
