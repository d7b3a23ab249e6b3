"""Snapshot -> table rows. Pure functions (no widgets), so what each pane shows is easy to test.

Every builder returns rows in display order as {row key: cells}; the first cell of each row is a
KeyCell so a table can re-order its rows by key with DataTable.sort.
"""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text

from kconsole.models import (
    Broker,
    BrokerState,
    ClusterMode,
    ClusterSnapshot,
    Group,
    GroupPartition,
    GroupRate,
    LagStatus,
    Partition,
    Rate,
    aligned_changes,
)
from kconsole.rates import rate_text, topic_loads, trend_text
from kconsole.timeline import Event, EventKind
from kconsole.ui import format as fmt

Rows = dict[str, list[Text]]
Columns = tuple[tuple[str, str], ...]  # (column key, label)


class KeyCell(Text):
    """A first-column cell that carries its row's key."""

    __slots__ = ("row_key",)

    def __init__(self, text: str, style: Style | str = "", *, row_key: str) -> None:
        super().__init__(text, style=style, no_wrap=True, overflow="ellipsis", end="")
        self.row_key = row_key


class LoggedEvent(NamedTuple):
    """An event as the console keeps it: numbered in arrival order, for a stable row key (a
    tuple: a failover on 10,000 partitions logs as many at once)."""

    seq: int
    event: Event


# -- brokers ----------------------------------------------------------------------------------
BROKER_COLUMNS: Columns = (
    ("id", "id"),
    ("address", "address"),
    ("rack", "rack"),
    ("state", "state"),
    ("leads", "leads"),
    ("hosts", "hosts"),
    ("urp", "URP"),
)


# On KRaft: what each node is, whether the controller fences it, and the controllers too.
KRAFT_BROKER_COLUMNS: Columns = (
    ("id", "id"),
    ("role", "role"),
    ("state", "state"),
    ("fencing", "fencing"),
    ("address", "address"),
    ("rack", "rack"),
    ("leads", "leads"),
    ("hosts", "hosts"),
    ("urp", "URP"),
)


def broker_columns(snap: ClusterSnapshot | None) -> Columns:
    """The brokers pane's columns for this snapshot's mode (with the records in to what each
    leads, once rates are measured)."""
    columns = (
        KRAFT_BROKER_COLUMNS
        if snap is not None and snap.mode is ClusterMode.KRAFT
        else (BROKER_COLUMNS)
    )
    if snap is None or snap.rates is None:
        return columns
    i = [k for k, _ in columns].index("leads") + 1
    return (*columns[:i], RATE_COLUMN, *columns[i:])


RATE_COLUMN = ("rate", "in/s")
"""Records in per second: to a partition, or to the partitions a broker leads."""
RATE_WIDTH = 8  # "12,345/s": the column's width whatever the figure (rows are not re-measured)


def rate_cell(rate: Rate | None, now: float) -> Text:
    """A records/s cell: dim until a whole window is in, amber when unknown (with its age) or
    when some of a sum is unknown; "…" before the second reading."""
    text = rate_text(rate, now)
    if rate is None or rate.per_s is None:
        return fmt.cell(text, fmt.DIM if text == "…" else fmt.WARN)
    if rate.partial:
        return fmt.cell(text, fmt.WARN)
    return fmt.cell(text, "" if rate.full else fmt.DIM)


def _with_rates(snap: ClusterSnapshot, rows: Rows) -> Rows:
    """broker_rows' rows with the in/s cell after the leads (controllers: a dash)."""
    if snap.rates is None:
        return rows
    i = [k for k, _ in broker_columns(snap)].index("rate")
    out: Rows = {}
    for key, cells in rows.items():
        b = snap.broker(int(key))
        rate = snap.broker_records(b.id) if b is not None and b.in_cluster else None
        cell = rate_cell(rate, snap.taken_at) if rate is not None else fmt.cell(fmt.NONE, fmt.DIM)
        out[key] = [*cells[:i], cell, *cells[i:]]
    return out


def controller_ids(snap: ClusterSnapshot) -> list[int]:
    """The quorum's voters that are controllers only (a combined node is a broker row)."""
    if snap.quorum is None:
        return []
    out = []
    for vid in snap.quorum.voter_ids:
        b = snap.broker(vid)
        if b is None or (b.roles and "broker" not in b.roles):
            out.append(vid)
    return sorted(out)


def broker_rows(snap: ClusterSnapshot | None) -> Rows:
    """One row per broker, by id; the controller's id carries a star. On KRaft the quorum's
    controllers follow the brokers, and the star is the quorum leader's."""
    if snap is None:
        return {}
    if snap.mode is ClusterMode.KRAFT:
        return _with_rates(snap, kraft_broker_rows(snap))
    rows: Rows = {}
    for b in sorted(snap.brokers, key=lambda b: b.id):
        is_controller = snap.controller.id == b.id
        rows[str(b.id)] = [
            KeyCell(f"{b.id} ★" if is_controller else str(b.id), row_key=str(b.id)),
            fmt.cell(b.address, "") if b.port else fmt.cell(fmt.NONE, fmt.DIM),
            fmt.cell(b.rack or fmt.NONE, fmt.DIM if b.rack is None else ""),
            state_cell(snap, b),
            *count_cells(snap, b),
        ]
    return _with_rates(snap, rows)


def state_cell(snap: ClusterSnapshot, b: Broker) -> Text:
    """A broker's state; "· cut" while a network fault is in force on it (its process runs:
    the state alone would say "up" while nobody, or some, can reach it)."""
    if snap.net_fault(b.id) is not None:
        return fmt.cell(f"{b.state.value} · cut", fmt.BAD)
    return fmt.cell(b.state.value, fmt.BROKER_STATE_STYLE.get(b.state, fmt.PLAIN))


def count_cells(snap: ClusterSnapshot, b: Broker) -> list[Text]:
    """A broker's leads, hosts and URP cells; "?" while not asked (no count is known)."""
    if b.state is BrokerState.UNKNOWN or snap.never_answered:
        return [fmt.cell("?", fmt.DIM)] * 3
    urp = snap.under_replicated_on(b.id)
    return [
        fmt.cell(snap.led_by(b.id)),
        fmt.cell(snap.hosted_by(b.id)),
        fmt.cell(urp, fmt.WARN if urp else fmt.DIM),
    ]


def kraft_broker_rows(snap: ClusterSnapshot) -> Rows:
    """KRAFT_BROKER_COLUMNS rows: every broker, then every controller that is no broker."""
    leader = snap.quorum.leader_id if snap.quorum is not None else None
    voters = set(snap.quorum.voter_ids) if snap.quorum is not None else set()
    rows: Rows = {}
    dash = fmt.cell(fmt.NONE, fmt.DIM)
    for b in sorted(snap.brokers, key=lambda b: b.id):
        if b.roles and "broker" not in b.roles:
            continue  # a controller registered as one: listed with the controllers below
        combined = "controller" in b.roles or b.id in voters  # only controllers vote
        rows[str(b.id)] = [
            KeyCell(f"{b.id} ★" if b.id == leader else str(b.id), row_key=str(b.id)),
            fmt.cell("combined" if combined else "broker", fmt.NOTE if combined else ""),
            state_cell(snap, b),
            fencing_cell(b),
            fmt.cell(b.address, "") if b.port else dash,
            fmt.cell(b.rack or fmt.NONE, fmt.DIM if b.rack is None else ""),
            *count_cells(snap, b),
        ]
    for cid in controller_ids(snap):
        r = snap.quorum.replica(cid) if snap.quorum is not None else None
        address = f"{r.host}:{r.port}" if r is not None and r.host and r.port else None
        is_leader = cid == leader
        state = fmt.cell("leader" if is_leader else "voter", fmt.GOOD if is_leader else "")
        health = snap.controller_status(cid)
        if health is not None and health.state is not None and not health.up:
            # down / paused / unreachable, as a broker is shown (the reason: describe, events)
            state = fmt.cell(
                health.state.value, fmt.BROKER_STATE_STYLE.get(health.state, fmt.PLAIN)
            )
        elif (health is not None and health.state is None) or (
            snap.quorum is not None and snap.quorum.error
        ):  # as last read (or not fetching yet): not known to be so
            state = fmt.cell(state.plain + "?", fmt.WARN)
        if snap.net_fault(cid) is not None:
            state = fmt.cell(f"{state.plain} · cut", fmt.BAD)
        rows[str(cid)] = [
            KeyCell(f"{cid} ★" if is_leader else str(cid), row_key=str(cid)),
            fmt.cell("controller", fmt.NOTE),
            state,
            dash,
            fmt.cell(address, "") if address else dash,
            dash,
            dash,
            dash,
            dash,
        ]
    return rows


# A narrow brokers pane (80x24 on KRaft) drops or shortens these first, in this order, until
# the table fits: id, role, state, leads and URP stay.
SHORT_ROLES = {"controller": "ctrl", "combined": "b+ctrl"}


def _table_width(columns: Columns, rows: Rows) -> int:
    """Cells a DataTable needs for these columns: the widest cell or label, padded 1 + 1."""
    widths = [cell_len(label) for _, label in columns]
    for cells in rows.values():
        widths = [max(w, c.cell_len) for w, c in zip(widths, cells, strict=False)]
    return sum(w + 2 for w in widths)


def _without(columns: Columns, rows: Rows, key: str) -> tuple[Columns, Rows]:
    keys = [k for k, _ in columns]
    if key not in keys:
        return columns, rows
    i = keys.index(key)
    return columns[:i] + columns[i + 1 :], {k: v[:i] + v[i + 1 :] for k, v in rows.items()}


def _fold_fencing(columns: Columns, rows: Rows) -> tuple[Columns, Rows]:
    """The fencing column folded into the state: a broker up but fenced reads `fenced` (a
    paused or down one keeps its state: that is why it is fenced)."""
    keys = [k for k, _ in columns]
    if "fencing" not in keys or "state" not in keys:
        return columns, rows
    f, st = keys.index("fencing"), keys.index("state")
    folded = {}
    for key, cells in rows.items():
        cells = list(cells)
        if cells[f].plain == "fenced" and cells[st].plain == "up":
            cells[st] = cells[f]
        folded[key] = cells
    return _without(columns, folded, "fencing")


def _short_roles(columns: Columns, rows: Rows) -> tuple[Columns, Rows]:
    keys = [k for k, _ in columns]
    if "role" not in keys:
        return columns, rows
    r = keys.index("role")
    out = {}
    for key, cells in rows.items():
        cells = list(cells)
        short = SHORT_ROLES.get(cells[r].plain)
        if short is not None:
            cells[r] = fmt.cell(short, cells[r].style)
        out[key] = cells
    return columns, out


def fit_broker_table(columns: Columns, rows: Rows, width: int | None) -> tuple[Columns, Rows]:
    """The brokers table in `width` cells (None: as wide as it needs): the rack goes first,
    then the address, the fencing (folded into the state), the long role names and the hosted
    count, each only while the table is still too wide; id, role, state, leads and URP stay."""
    steps = (
        lambda c, r: _without(c, r, "rack"),
        lambda c, r: _without(c, r, "address"),
        _fold_fencing,
        _short_roles,
        lambda c, r: _without(c, r, "hosts"),
    )
    for step in steps:
        if width is None or _table_width(columns, rows) <= width:
            break
        columns, rows = step(columns, rows)
    return columns, rows


def fencing_cell(b: Broker) -> Text:
    """fenced (red) / unfenced (green); a dash when not reported."""
    if b.fenced is None:
        return fmt.cell(fmt.NONE, fmt.DIM)
    return fmt.cell("fenced", fmt.BAD) if b.fenced else fmt.cell("unfenced", fmt.GOOD)


# -- partitions -------------------------------------------------------------------------------
PARTITION_COLUMNS: Columns = (
    ("topic", "topic"),
    ("partition", "part"),
    ("leader", "leader"),
    ("replicas", "replicas"),
    ("isr", "ISR"),
    ("flags", "flags"),
)

# KIP-966 (KRaft): shown only when the snapshot reports them for some partition.
ELR_COLUMNS: Columns = (
    ("elr", "ELR"),
    ("last_elr", "last known ELR"),
)


def has_elr(snap: ClusterSnapshot | None) -> bool:
    """Whether any partition reports its eligible leader replicas (or the last known ones)."""
    if snap is None or snap.mode is ClusterMode.ZOOKEEPER:
        return False
    return any(p.elr is not None or p.last_known_elr is not None for p in snap.partitions)


def partition_columns(elr: bool, rates: bool = False) -> Columns:
    """The partitions table's columns, with the ELR ones (after the ISR: they matter when it
    is short, and the flags then are long) or without; with records in per second before the
    flags once rates are measured."""
    columns = (
        PARTITION_COLUMNS
        if not elr
        else (PARTITION_COLUMNS[:5] + ELR_COLUMNS + PARTITION_COLUMNS[5:])
    )
    if rates:
        columns = (*columns[:-1], RATE_COLUMN, columns[-1])
    return columns


SortKey = Callable[[ClusterSnapshot, Partition], Any]

PARTITION_SORTS: dict[str, SortKey] = {
    "topic": lambda s, p: (p.topic, p.partition),
    "partition": lambda s, p: (p.partition, p.topic),
    "leader": lambda s, p: (p.leader, p.topic, p.partition),
    "replicas": lambda s, p: (p.replicas, p.topic, p.partition),
    "isr": lambda s, p: (len(p.isr), p.isr, p.topic, p.partition),
    # Busiest first; unknown ones last.
    "rate": lambda s, p: (-_per_s(s, p), p.topic, p.partition),
    # Worst first, so the ascending default of this column is the useful one.
    "flags": lambda s, p: (
        -sum(fmt.FLAG_WEIGHT.get(f, 1) for f in s.flags(p)),
        p.topic,
        p.partition,
    ),
}


def _per_s(snap: ClusterSnapshot, p: Partition) -> float:
    if snap.rates is None:
        return -1.0
    per_s = snap.rates.records(p.topic, p.partition).per_s
    return -1.0 if per_s is None else per_s


@dataclass(frozen=True)
class PartitionView:
    """Which partitions the table shows, and in what order."""

    text: str = ""
    unhealthy_only: bool = False
    show_internal: bool = False
    sort: str = "topic"
    reverse: bool = False

    def shows(self, snap: ClusterSnapshot, p: Partition) -> bool:
        """Whether `p` passes the topic filter and the toggles."""
        if not self.show_internal and snap.is_internal(p.topic):
            return False
        if self.text and self.text.lower() not in p.topic.lower():
            return False
        return not (self.unhealthy_only and not snap.unhealthy(p))

    def describe(self) -> str:
        """A short summary for the pane title, e.g. 'sort leader ↓ · /orders · unhealthy'."""
        parts = []
        if self.sort != "topic" or self.reverse:
            parts.append(f"sort {self.sort} {'↓' if self.reverse else '↑'}")
        if self.text:
            parts.append(f"/{self.text}")
        if self.unhealthy_only:
            parts.append("unhealthy only")
        if self.show_internal:
            parts.append("+internal")
        return " · ".join(parts)


def visible_partitions(snap: ClusterSnapshot | None, view: PartitionView) -> list[Partition]:
    """The partitions `view` shows, in its order."""
    if snap is None:
        return []
    sort_key = PARTITION_SORTS.get(view.sort, PARTITION_SORTS["topic"])
    shown = [p for p in snap.partitions if view.shows(snap, p)]
    return sorted(shown, key=lambda p: sort_key(snap, p), reverse=view.reverse)


@dataclass(frozen=True)
class PartitionCounts:
    """What the partitions pane's title counts: every partition, the ones shown, and of all of
    them the offline and the unhealthy ones."""

    total: int = 0
    shown: int = 0
    offline: int = 0
    unhealthy: int = 0


def partition_health(
    snap: ClusterSnapshot, p: Partition, flags: Sequence[str] | None = None
) -> tuple[int, int]:
    """(offline, unhealthy) of one partition, as 0/1 for counting (`flags`: its flags, when
    already known)."""
    if flags is None:
        flags = snap.flags(p)
    return int("offline" in flags), int(bool(flags))


def count_partitions(snap: ClusterSnapshot | None, view: PartitionView) -> PartitionCounts:
    """The title's counts, from scratch (one pass over every partition)."""
    if snap is None:
        return PartitionCounts()
    offline = unhealthy = shown = 0
    for p in snap.partitions:
        o, u = partition_health(snap, p)
        offline, unhealthy = offline + o, unhealthy + u
        shown += view.shows(snap, p)
    return PartitionCounts(len(snap.partitions), shown, offline, unhealthy)


Pair = tuple[Partition | None, Partition | None]


def changed_partitions(old: Sequence[Partition], new: Sequence[Partition]) -> list[Pair]:
    """(before, after) for every partition that differs between two snapshots' partitions
    (None: absent on that side). Snapshots list partitions sorted, and the observer keeps an
    unchanged partition the same object, so this is mostly identity checks."""
    aligned = aligned_changes(old, new)
    if aligned is not None:
        return list(aligned)
    before = {(p.topic, p.partition): p for p in old}
    after = {(p.topic, p.partition): p for p in new}
    pairs: list[Pair] = [(before.get(k), p) for k, p in after.items() if before.get(k) != p]
    pairs.extend((p, None) for k, p in before.items() if k not in after)
    return pairs


def snapshot_changes(old: ClusterSnapshot, new: ClusterSnapshot) -> list[Pair]:
    """changed_partitions of two snapshots: only the partitions the observer built again when
    `new` was built right after `old` (ClusterSnapshot.changed_partitions)."""
    aligned = new.changed_partitions(old)
    if aligned is not None:
        return list(aligned)
    return changed_partitions(old.partitions, new.partitions)


def partition_rows(snap: ClusterSnapshot | None, view: PartitionView) -> Rows:
    """One row per visible partition, keyed topic/partition."""
    if snap is None:
        return {}
    return {p.key: partition_cells(snap, p) for p in visible_partitions(snap, view)}


def partition_cells(snap: ClusterSnapshot, p: Partition, elr: bool = False) -> list[Text]:
    """One partition's cells (with `elr`, its ELR and last known ELR too)."""
    flags = snap.flags(p)
    # A leader that is gone still has its id written down; "offline" says it serves nothing.
    if p.leader < 0:
        leader = fmt.cell("none", fmt.BAD)
    else:
        leader = fmt.cell(p.leader, fmt.BAD if "offline" in flags else "")
    isr_style: Style = fmt.PLAIN
    if not p.isr or snap.under_min_isr(p):
        isr_style = fmt.BAD
    elif p.under_replicated:
        isr_style = fmt.WARN
    cells = [
        KeyCell(p.topic, row_key=p.key),
        fmt.cell(p.partition),
        leader,
        _replicas(p),
        fmt.cell(fmt.ids(p.isr) or fmt.NONE, isr_style),
        _flags(flags),
    ]
    if elr:  # before the flags, as partition_columns puts them
        cells[5:5] = [_id_list(p.elr, fmt.NOTE), _id_list(p.last_known_elr, fmt.WARN)]
    if snap.rates is not None:
        cells.insert(-1, rate_cell(snap.rates.records(p.topic, p.partition), snap.taken_at))
    return cells


def _id_list(ids: tuple[int, ...] | None, style: Style) -> Text:
    """Replica ids, or a dash for none (empty, or not reported for this partition)."""
    return fmt.cell(fmt.ids(ids), style) if ids else fmt.cell(fmt.NONE, fmt.DIM)


@functools.lru_cache(maxsize=4096)
def _ids_width(ids: tuple[int, ...]) -> int:
    """The width of fmt.ids(ids): a cluster's replica lists are a few hundred distinct tuples
    at most, measured again for every changed row of a failover (thousands at once)."""
    return len(fmt.ids(ids))


def partition_widths(
    snap: ClusterSnapshot, p: Partition, flags: Sequence[str] | None = None, elr: bool = False
) -> tuple[int, ...]:
    """The cell widths of partition_cells(snap, p, elr), without building the cells: what
    every row of a big table is measured by (tests hold the two to the same widths). `flags`:
    the partition's flags, when already known."""
    none = cell_len(fmt.NONE)
    base: tuple[int, ...] = (
        cell_len(p.topic),
        len(str(p.partition)),
        4 if p.leader < 0 else len(str(p.leader)),  # "none"
        _ids_width(p.replicas) if p.replicas else none,
        _ids_width(p.isr) if p.isr else none,
        len(" ".join(snap.flags(p) if flags is None else flags)),
    )
    if elr:
        base = (
            *base[:5],
            _ids_width(p.elr) if p.elr else none,
            _ids_width(p.last_known_elr) if p.last_known_elr else none,
            base[5],
        )
    if snap.rates is not None:
        base = (*base[:-1], RATE_WIDTH, base[-1])
    return base


def _replicas(p: Partition) -> Text:
    # Replicas outside the ISR in amber, ones being added in violet: the lagging ones stand out.
    out = Text(no_wrap=True, overflow="ellipsis", end="")
    for i, r in enumerate(p.replicas):
        if i:
            out.append(",")
        style = fmt.MOVING if r in p.adding else (fmt.PLAIN if r in p.isr else fmt.WARN)
        out.append(str(r), style)
    if not p.replicas:
        out.append(fmt.NONE, fmt.DIM)
    return out


def _flags(flags: Sequence[str]) -> Text:
    out = Text(no_wrap=True, overflow="ellipsis", end="")
    for i, f in enumerate(flags):
        if i:
            out.append(" ")
        out.append(f, fmt.FLAG_STYLE.get(f, fmt.PLAIN))
    return out


# -- consumer groups --------------------------------------------------------------------------
# Lag right after the state: on a narrow terminal it is the column that must stay visible.
GROUP_COLUMNS: Columns = (
    ("group", "group"),
    ("state", "state"),
    ("lag", "lag"),
    ("members", "members"),
    ("assignor", "assignor"),
    ("note", "note"),
)


# The group's protocol after the lag, shown only when some group says which (Kafka 3.8+):
# classic, consumer (KIP-848), share (KIP-932) or streams (KIP-1071).
TYPED_GROUP_COLUMNS: Columns = (*GROUP_COLUMNS[:3], ("type", "type"), *GROUP_COLUMNS[3:])


def has_group_types(groups: Sequence[Group]) -> bool:
    """Whether any group says what type it is."""
    return any(g.group_type for g in groups)


GROUP_RATE_COLUMNS: Columns = (("status", "status"), ("trend", "trend"))
"""After the lag once rates are measured: the group judged over the window, the lag's trend."""


def group_columns(groups: Sequence[Group], rates: bool = False) -> Columns:
    """The groups pane's columns: with the type column when any group has a type; once rates
    are measured, the status right after the name and the lag after it, then the trend, then
    the state (the verdict and the figure first: at 80x24 the pane has room for three)."""
    columns = TYPED_GROUP_COLUMNS if has_group_types(groups) else GROUP_COLUMNS
    if rates:  # group, status, lag, trend, state, (type,) ...
        status, trend = GROUP_RATE_COLUMNS
        group, state, lag, *rest = columns
        columns = (group, status, lag, trend, state, *rest)
    return columns


def status_cell(gr: GroupRate | None) -> Text:
    """A group's (or a partition's) status as Burrow would say it."""
    if gr is None:
        return fmt.cell("…", fmt.DIM)
    return fmt.cell(gr.status.value, LAG_STATUS_STYLE.get(gr.status, fmt.PLAIN))


LAG_STATUS_STYLE = {
    LagStatus.OK: fmt.GOOD,
    LagStatus.WARNING: fmt.WARN,
    LagStatus.STALLED: fmt.BAD,
    LagStatus.STOPPED: fmt.BAD,
    LagStatus.UNKNOWN: fmt.WARN,
    LagStatus.PENDING: fmt.DIM,
}


def group_rows(snap: ClusterSnapshot | None) -> Rows:
    """One row per consumer group, by group id. Ages are measured to the snapshot's time."""
    if snap is None:
        return {}
    typed = has_group_types(snap.groups)
    r = snap.rates
    return {
        g.group_id: group_row(
            g,
            snap.taken_at,
            typed=typed,
            rates=r is not None,
            rate=r.group(g.group_id) if r else None,
        )
        for g in sorted(snap.groups, key=lambda g: g.group_id)
    }


def group_row(
    g: Group,
    now: float,
    name_width: int | None = None,
    *,
    typed: bool = False,
    rates: bool = False,
    rate: GroupRate | None = None,
) -> list[Text]:
    """One group's cells; only a group with carried figures (`g.oldest`) depends on `now`.
    With `name_width` (a narrow pane) the id is elided in the middle to fit it and a
    rebalancing state is shortened, so that the state (with `rates`, the status) and the lag
    stay in view. With `typed` the cells of TYPED_GROUP_COLUMNS (the group's type after its
    lag, or with `rates` after its state)."""
    state = g.state
    if name_width is not None:
        state = SHORT_GROUP_STATES.get(state_key(state), state)
    cells = [
        KeyCell(elide_middle(g.group_id, name_width), row_key=g.group_id),
        fmt.cell(state, fmt.group_state_style(g.state)),
        group_lag(g, now),
        fmt.cell(g.members),
        fmt.cell(g.assignor or fmt.NONE, "" if g.assignor else fmt.DIM),
        fmt.cell(g.lag_na, fmt.DIM) if g.lag_na and not g.error else _group_note(g),
    ]
    if typed:
        kind = g.group_type.lower()
        cells.insert(3, fmt.cell(kind or fmt.NONE, fmt.NOTE if kind == "share" else fmt.DIM))
    if rates:  # group, status, lag, trend, state, ...: as group_columns says
        trend = trend_text(rate)
        style = fmt.WARN if rate is not None and rate.trend == "growing" else ""
        name, state_cell, lag, *rest = cells
        trend_cell = fmt.cell(trend or fmt.NONE, style or fmt.DIM)
        cells = [name, status_cell(rate), lag, trend_cell, state_cell, *rest]
    return cells


def _group_note(g: Group) -> Text:
    """What could not be read, else why the total lag leaves partitions out."""
    if g.error:
        return fmt.cell(g.error, fmt.WARN)
    return fmt.cell(g.lag_note, fmt.DIM)


SHORT_GROUP_STATES = {"PREPARINGREBALANCE": "Rebalance", "COMPLETINGREBALANCE": "Rebalance"}
"""A narrow groups pane's state words (the group screen says which rebalance phase)."""


def state_key(state: str) -> str:
    """A group state as SHORT_GROUP_STATES spells it, however the source does."""
    return state.replace("_", "").upper()


def elide_middle(text: str, width: int | None) -> str:
    """`text` in at most `width` cells, its middle replaced by "…" (group ids differ at both
    ends: spark-kafka-source-…-driver-0)."""
    if width is None or cell_len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    head = width // 2
    tail = width - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail else "")


def group_lag(g: Group, now: float) -> Text:
    """The group's lag, never made up: "?" when nothing is known, "+ ?" when partitions are
    left out, "(12s old)" when figures are carried from an earlier poll; "n/a" when the group has
    no lag (`lag_na` says why)."""
    if g.lag_na and g.lag is None:
        return fmt.cell(LAG_NA, fmt.DIM)
    if g.lag_unknown:
        return fmt.cell(UNKNOWN, fmt.WARN)
    lag = g.lag
    if lag is None:
        # Read, and none of it committed: how far behind depends on where it will start.
        return fmt.cell(UNKNOWN, fmt.WARN) if g.uncommitted else _lag(None)
    text = fmt.count(lag)
    if g.lag_left_out():
        text += " + ?"
    oldest = g.oldest
    if oldest is not None:
        text += f" ({fmt.age(now - oldest)} old)"
    return fmt.cell(text, fmt.WARN) if g.lag_partial else _lag(lag)


GROUP_PARTITION_COLUMNS: Columns = (
    ("topic", "topic"),
    ("partition", "part"),
    ("committed", "committed"),
    ("log_end", "log end"),
    ("lag", "lag"),
    ("owner", "owner"),
)
# A share group (KIP-932) commits nothing: its partitions have a start offset (below it every
# record is delivered for good) and the lag its coordinator reports, as kafka-share-groups says.
SHARE_PARTITION_COLUMNS: Columns = (
    *GROUP_PARTITION_COLUMNS[:2],
    ("committed", "start offset"),
    *GROUP_PARTITION_COLUMNS[3:],
)


GROUP_PARTITION_RATE_COLUMNS: Columns = (
    ("consumed", "out/s"),
    ("produced", "in/s"),
    ("status", "status"),
)
"""After the lag once rates are measured: the partition's consumption, production, status."""


def group_partition_columns(group: Group | None, rated: bool = False) -> Columns:
    """The group screen's columns: a share group's start offset where others' commit is; with
    `rated`, each partition's rates and status after the lag."""
    columns = GROUP_PARTITION_COLUMNS
    if group is not None and group.group_type == "share":
        columns = SHARE_PARTITION_COLUMNS
    if rated:
        columns = (*columns[:5], *GROUP_PARTITION_RATE_COLUMNS, *columns[5:])
    return columns


def group_partition_rows(
    group: Group | None,
    now: float | None = None,
    rate: GroupRate | None = None,
    rated: bool = False,
) -> Rows:
    """One row per partition the group has offsets for, by topic/partition; carried figures
    say how old they are at `now`; with `rated`, the cells of GROUP_PARTITION_RATE_COLUMNS
    from `rate` after the lag."""
    if group is None:
        return {}
    judged = {(r.topic, r.partition): r for r in rate.partitions} if rate is not None else {}
    at = now if now is not None else 0.0
    rows: Rows = {}
    for gp in sorted(group.partitions, key=lambda gp: (gp.topic, gp.partition)):
        key = f"{gp.topic}/{gp.partition}"
        rows[key] = [
            KeyCell(gp.topic, row_key=key),
            fmt.cell(gp.partition),
            _offset(gp.committed, gp.committed_known),
            _offset(gp.log_end, gp.log_end is not None),
            _partition_lag(gp, now),
            _owner(gp),
        ]
        if rated:
            r = judged.get((gp.topic, gp.partition))
            rows[key][5:5] = [
                rate_cell(r.consumed if r else None, at),
                rate_cell(r.produced if r else None, at),
                fmt.cell(r.status.value, LAG_STATUS_STYLE.get(r.status, fmt.PLAIN))
                if r is not None
                else fmt.cell("…", fmt.DIM),
            ]
    return rows


UNKNOWN = "?"
LAG_NA = "n/a"


def _offset(value: int | None, known: bool) -> Text:
    if not known:
        return fmt.cell(UNKNOWN, fmt.WARN)
    return fmt.cell(fmt.count(value), fmt.DIM if value is None else "")


def _partition_lag(gp: GroupPartition, now: float | None) -> Text:
    if gp.lag_unknown:
        return fmt.cell(UNKNOWN, fmt.WARN)
    if gp.as_of is not None and gp.lag is not None:
        age = f" ({fmt.age(now - gp.as_of)} old)" if now is not None else " (old)"
        return fmt.cell(fmt.count(gp.lag) + age, fmt.WARN)
    return _lag(gp.lag)


def _owner(gp: GroupPartition) -> Text:
    return fmt.cell(gp.owner or "unassigned", "" if gp.owner else fmt.DIM)


def _lag(lag: int | None) -> Text:
    return fmt.cell(fmt.count(lag), fmt.DIM if lag is None else (fmt.WARN if lag else fmt.GOOD))


# -- topics -----------------------------------------------------------------------------------
def topic_columns(sized: bool) -> Columns:
    """The topics view's columns (bytes/s only where the cluster gives log sizes)."""
    return (
        ("topic", "topic"),
        ("partitions", "parts"),
        ("records", "in/s"),
        *((("bytes", "bytes/s"),) if sized else ()),
        ("skew", "skew"),
        ("urp", "URP"),
        ("offline", "offline"),
    )


def topic_rows(snap: ClusterSnapshot | None) -> Rows:
    """One row per topic (internal ones too), the busiest first (unknown ones last)."""
    if snap is None:
        return {}
    now = snap.taken_at
    sized = snap.rates is not None and not snap.rates.bytes_note
    loads = topic_loads(snap, internal=True)
    loads.sort(key=lambda t: (-_known(t.records), t.name))
    out: Rows = {}
    for t in loads:
        skew = fmt.cell(fmt.NONE, fmt.DIM)
        if t.skew is not None:
            hot = " HOT" if t.hot else ""
            skew = fmt.cell(f"{t.skew:.1f}x p{t.hottest}{hot}", fmt.WARN if t.hot else "")
        cells = [
            KeyCell(t.name, fmt.DIM if snap.is_internal(t.name) else "", row_key=t.name),
            fmt.cell(t.partitions),
            rate_cell(t.records, now) if t.records is not None else fmt.cell("-", fmt.DIM),
            skew,
            fmt.cell(t.under_replicated, fmt.WARN if t.under_replicated else fmt.DIM),
            fmt.cell(t.offline, fmt.BAD if t.offline else fmt.DIM),
        ]
        if sized:
            cells.insert(3, _bytes_cell(t.bytes, now))
        out[t.name] = cells
    return out


def _known(rate: Rate | None) -> float:
    """A rate for ordering: unknown after every known one."""
    return -1.0 if rate is None or rate.per_s is None else rate.per_s


def _bytes_cell(rate: Rate | None, now: float) -> Text:
    text = rate_text(rate, now, "B")
    if rate is None or rate.per_s is None:
        return fmt.cell(text, fmt.DIM if text == "…" else fmt.WARN)
    return fmt.cell(text, fmt.WARN if rate.partial else ("" if rate.full else fmt.DIM))


# -- events -----------------------------------------------------------------------------------
EVENT_COLUMNS: Columns = (
    ("time", "time"),
    ("kind", "kind"),
    ("text", "event"),
)


def event_cells(le: LoggedEvent) -> list[Text]:
    """One event's row (the events pane keeps them newest first)."""
    action = le.event.kind is EventKind.ACTION
    style = fmt.ACTION if action else fmt.SEVERITY_STYLE.get(le.event.severity, fmt.PLAIN)
    key = str(le.seq)
    return [
        KeyCell(fmt.clock_time(le.event.ts), fmt.DIM, row_key=key),
        fmt.cell(le.event.kind.value, style),
        fmt.cell(le.event.text, fmt.ACTION if action else ""),
    ]


def event_widths(le: LoggedEvent) -> tuple[int, ...]:
    """The cell widths of event_cells(le), without building the cells."""
    return (CLOCK_WIDTH, cell_len(le.event.kind.value), cell_len(le.event.text))


# A narrow events pane: the time to the second and the event, wrapped onto further lines (the
# text names the kind: "ISR shrank", "leader 3 -> 2"; its colour is the kind's).
NARROW_EVENT_COLUMNS: Columns = (
    ("time", "time"),
    ("text", "event"),
)
SHORT_CLOCK_WIDTH = len("14:03:07")


def event_lines(le: LoggedEvent, width: int) -> list[str]:
    """The event's text in lines of at most `width` cells (broken at spaces where it can)."""
    return textwrap.wrap(
        le.event.text, max(width, 8), break_on_hyphens=False, drop_whitespace=True
    ) or [""]


# The kind column's width in a wrapped pane: its widest kind, so the text's width (and with it
# every event's lines) does not change as events come.
KIND_WIDTH = max(cell_len(k.value) for k in EventKind)


def wrapped_event_cells(le: LoggedEvent, line: int, text: str) -> list[Text]:
    """Line `line` of an event in a pane with the kind column: the time and the kind on its
    first line only, the text wrapped below itself."""
    action = le.event.kind is EventKind.ACTION
    text_cell = fmt.cell(text, fmt.ACTION if action else "")
    if line:
        return [fmt.cell(""), fmt.cell(""), text_cell]
    style = fmt.ACTION if action else fmt.SEVERITY_STYLE.get(le.event.severity, fmt.PLAIN)
    return [
        fmt.cell(fmt.clock_time(le.event.ts), fmt.DIM),
        fmt.cell(le.event.kind.value, style),
        text_cell,
    ]


def narrow_event_cells(le: LoggedEvent, line: int, text: str) -> list[Text]:
    """Line `line` of an event in a narrow pane: the time on its first line only."""
    action = le.event.kind is EventKind.ACTION
    style = fmt.ACTION if action else fmt.SEVERITY_STYLE.get(le.event.severity, fmt.PLAIN)
    clock = fmt.clock_time(le.event.ts)[:SHORT_CLOCK_WIDTH] if line == 0 else ""
    return [fmt.cell(clock, fmt.DIM), fmt.cell(text, style)]


CLOCK_WIDTH = len("14:03:07.250")  # fmt.clock_time
