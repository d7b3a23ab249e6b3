"""The KRaft metadata quorum as the Controller pane shows it on a KRaft cluster. Pure functions
(no widgets): the pane's title, its lines and whether it is an alarm, for a given size.

A quorum read that failed keeps its last figures: they are shown with their age and the reason,
never as fresh. Ages (last fetch, last caught up) are the leader's, at the time of the read.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text

from kconsole.models import ClusterSnapshot, Quorum, QuorumReplica
from kconsole.ui import format as fmt

# controller.quorum.fetch.timeout.ms (2 s by default): a voter not heard from for longer is the
# one an election is about to be held without.
FETCH_LATE_S = 2.0
UNKNOWN = "?"


@dataclass(frozen=True)
class QuorumView:
    """What the pane shows: its border title (markup), its content, and whether it alarms."""

    title: str
    text: Text
    alert: bool = False
    stale: bool = False


def node_kind(snap: ClusterSnapshot, replica: QuorumReplica) -> str:
    """controller / broker / combined where the snapshot says so; '' when it does not."""
    b = snap.broker(replica.id)
    if b is not None and b.roles and "broker" not in b.roles:
        return b.roles[0]
    if b is not None:  # a broker: if it votes (only controllers vote) it is a combined node
        return "combined" if replica.voter or "controller" in b.roles else "broker"
    # An observer that is no registered broker is not known here.
    return "controller" if replica.voter else ""


def _age(at: float | None, ts: float | None) -> str | None:
    if at is None or ts is None:
        return None
    return fmt.age(at - ts)


@dataclass(frozen=True)
class _Column:
    label: str
    short: str
    right: bool = False


_COLUMNS = {
    "id": _Column("id", "id"),
    "role": _Column("role", "role"),
    "node": _Column("node", "node"),
    "leo": _Column("LEO", "LEO", right=True),
    "lag": _Column("lag", "lag", right=True),
    "fetch": _Column("fetch", "fetch"),
    "caught": _Column("caught up", "caught"),
}
# Dropped in this order when the pane is too narrow: what the brokers pane also says, then the
# figure the lag is worked out from.
_DROP_ORDER = ("node", "leo", "caught")


def _cells(snap: ClusterSnapshot, q: Quorum, r: QuorumReplica) -> dict[str, Text]:
    """One replica's cells by column."""
    leader = q.leader_id == r.id
    at = q.read_at if q.read_at is not None else snap.taken_at
    lag = r.lag(q.high_watermark)
    fetch = _age(at, r.last_fetch_at)
    caught = _age(at, r.last_caught_up_at)
    fetch_s = None if r.last_fetch_at is None else at - r.last_fetch_at
    caught_s = None if r.last_caught_up_at is None else at - r.last_caught_up_at
    stale = bool(q.error)

    def timed(text: str | None, seconds: float | None) -> Text:
        if text is None:
            return fmt.cell(fmt.NONE if leader else UNKNOWN, fmt.DIM if leader else fmt.WARN)
        late = seconds is not None and seconds > FETCH_LATE_S and not leader
        return fmt.cell(text, fmt.WARN if late or stale else fmt.PLAIN)

    if lag is None:
        lag_cell = fmt.cell(UNKNOWN, fmt.WARN)
    else:
        style: Style = fmt.WARN if lag or stale else fmt.GOOD
        lag_cell = fmt.cell(fmt.count(lag), style)
    kind = node_kind(snap, r)
    ident = Text(no_wrap=True, end="")
    ident.append("★ " if leader else "  ", "bold #f0b429")
    ident.append(str(r.id), fmt.BOLD if leader else fmt.PLAIN)
    leo = r.log_end_offset
    return {
        "id": ident,
        "role": fmt.cell("voter" if r.voter else "observer", fmt.PLAIN if r.voter else fmt.DIM),
        "role_short": fmt.cell("voter" if r.voter else "obs", fmt.PLAIN if r.voter else fmt.DIM),
        "node": fmt.cell(kind or fmt.NONE, fmt.DIM),
        "leo": fmt.cell(fmt.count(leo), fmt.WARN if leo is None or stale else fmt.PLAIN),
        "lag": lag_cell,
        "fetch": timed(fetch, fetch_s),
        "caught": timed(caught, caught_s),
    }


def _table(rows: list[dict[str, Text]], width: int) -> list[Text]:
    """The replicas as aligned lines in at most `width` cells: a header line, then one per
    replica. Columns are dropped (_DROP_ORDER) until the rest fits."""
    keys = list(_COLUMNS)
    short = False

    def cell(r: dict[str, Text], k: str) -> Text:
        return r.get(f"{k}_short", r[k]) if short else r[k]

    while True:
        widths = {
            k: max(
                [cell_len(_COLUMNS[k].short if short else _COLUMNS[k].label)]
                + [cell(r, k).cell_len for r in rows]
            )
            for k in keys
        }
        total = sum(widths.values()) + 2 * (len(keys) - 1)
        if total <= width:
            break
        if not short:
            short = True
            continue
        droppable = [k for k in _DROP_ORDER if k in keys]
        if not droppable:
            break
        keys.remove(droppable[0])
    lines = []
    header = Text(no_wrap=True, overflow="ellipsis", end="")
    for i, k in enumerate(keys):
        col = _COLUMNS[k]
        label = col.short if short else col.label
        pad = " " * (widths[k] - cell_len(label))
        last = i == len(keys) - 1
        shown = pad + label if col.right else (label if last else label + pad)
        header.append(("  " if i else "") + shown, fmt.DIM)
    lines.append(header)
    for r in rows:
        line = Text(no_wrap=True, overflow="ellipsis", end="")
        for i, k in enumerate(keys):
            value = cell(r, k)
            pad = " " * (widths[k] - value.cell_len)
            if i:
                line.append("  ")
            if _COLUMNS[k].right:
                line.append(pad)
                line.append_text(value)
            else:
                line.append_text(value)
                if i < len(keys) - 1:
                    line.append(pad)
        lines.append(line)
    return lines


def quorum_view(
    snap: ClusterSnapshot | None, now: float, width: int = 60, height: int = 12
) -> QuorumView:
    """The quorum pane for a content area of `width` x `height` cells."""
    if snap is None:
        return QuorumView("Quorum", Text("waiting…", fmt.DIM))
    q = snap.quorum
    if q is None:
        return QuorumView(
            "Quorum", Text.assemble(("not read yet", fmt.WARN), ("\n(DescribeQuorum)", fmt.DIM))
        )
    stale = bool(q.error)
    read_age = None if q.read_at is None else fmt.age(now - q.read_at)
    hw = fmt.count(q.high_watermark) if q.high_watermark is not None else UNKNOWN
    epoch = UNKNOWN if q.leader_epoch is None else str(q.leader_epoch)
    head: list[Text] = []  # what goes above the table, most important first
    if q.leader_id is None:
        title = "Quorum [b]NO LEADER[/]"
        lines = [Text("NO QUORUM LEADER", fmt.BOLD)]
        detail = []
        if q.leader_seen_since is not None:
            # Since the loss kconsole saw, or (none at its first reading) at least that long.
            seen = "for" if q.leader_seen_elected else "seen for"
            detail.append(f"{seen} {fmt.age(now - q.leader_seen_since)}")
        if q.previous_leader is not None:
            detail.append(f"was {q.previous_leader}")
        if q.leader_epoch is not None:
            detail.append(f"epoch {epoch}")
        if detail:
            lines.append(Text(" · ".join(detail)))
        lines.append(Text("metadata frozen (brokers serve on)"))
        if stale:
            lines.append(_stale_line(q, read_age))
        replicas = _replicas(q)
        if replicas and len(lines) + 2 <= height:  # the last figures read, under the alarm
            lines.extend(_table([_cells(snap, q, r) for r in replicas], width))
        return QuorumView(title, _joined(_fit(lines, height)), alert=True, stale=stale)
    title = f"Quorum ★ {q.leader_id} · epoch {epoch} · HW {hw}"
    if stale:
        head.append(_stale_line(q, read_age))
    since = [_since(q, now)] if q.leader_seen_since is not None else []
    since.append(_was(q))
    replicas = _replicas(q)
    rows = [_cells(snap, q, r) for r in replicas]
    table = _table(rows, width) if replicas else [Text("no voters reported", fmt.WARN)]
    # The since line only when everything else fits with it.
    if len(head) + 1 + len(table) <= height:
        head.append(Text(" · ".join(since), fmt.DIM))
    return QuorumView(title, _joined(_fit(head + table, height)), stale=stale)


def _since(q: Quorum, now: float) -> str:
    """How long the leader has led, as far as kconsole knows: Kafka reports no election
    time, so it is the election kconsole saw (within a poll), or at least since kconsole
    first saw it lead."""
    assert q.leader_seen_since is not None
    age = fmt.age(now - q.leader_seen_since)
    return f"elected {age} ago" if q.leader_seen_elected else f"seen leading for {age}"


def _was(q: Quorum) -> str:
    """The leader before: the one kconsole saw; none before the first election (epoch 1);
    else not known (it led already when kconsole first looked)."""
    if q.previous_leader is not None:
        return f"was {q.previous_leader}"
    if q.leader_seen_elected or q.leader_epoch == 1:
        return "was —"
    return "was ?"


def quorum_lines(snap: ClusterSnapshot, now: float) -> int:
    """How many lines the quorum pane has to show, given room (a wide pane)."""
    return len(quorum_view(snap, now, width=200, height=100).text.plain.split("\n"))


def _fit(lines: list[Text], height: int) -> list[Text]:
    """At most `height` lines: the last one says how many more there are."""
    if len(lines) <= height or height < 2:
        return lines
    hidden = len(lines) - (height - 1)
    return [*lines[: height - 1], Text(f"… {hidden} more", fmt.DIM)]


def _replicas(q: Quorum) -> list[QuorumReplica]:
    """Voters, then observers, each by id."""
    return [*sorted(q.voters, key=lambda r: r.id), *sorted(q.observers, key=lambda r: r.id)]


def _stale_line(q: Quorum, read_age: str | None) -> Text:
    """'read 12s ago: <why the latest read failed>' (figures as of then)."""
    when = f"read {read_age} ago" if read_age is not None else "never read"
    return Text(f"{when}: {q.error}", fmt.WARN, no_wrap=True, overflow="ellipsis", end="")


def _joined(lines: list[Text]) -> Text:
    """Lines as one text that never wraps (a line too long is cut with an ellipsis)."""
    return Text("\n", no_wrap=True, overflow="ellipsis", end="").join(lines)
