"""How fast the cluster moves, from offsets read over a sliding window.

The observer reads every partition's log-end offset once per groups poll (one ListOffsets per
leader, the same requests that give the groups' lag), its leader's log size where the cluster
gives sizes (DescribeLogDirs, one per broker) and each group's committed offsets, and hands
each reading here with the time it was taken. From them:

- records in per partition: the log-end offset's rise over the window / the time it spans;
- bytes in per partition: the same of its leader's log size;
- per group and partition: the committed offset's rate (consumption) against the log end's
  (production), and a status judged over the window the way Burrow does (`judge`).

Nothing is made up: a counter whose latest reading failed is unknown, with the reason and the
time of its last good reading; one that went backwards (a log truncated, a topic deleted and
made again, a group's offsets reset) starts again from that reading and says so, never a
negative rate; until a whole window is in, the figure says how much it covers.

Pure computation (no Kafka, no Textual): tests feed it recorded readings.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kconsole.models import (
    UNREAD_RATE,
    ClusterSnapshot,
    Group,
    GroupPartitionRate,
    GroupRate,
    LagStatus,
    Partition,
    Rate,
    Rates,
    sum_rates,
)

WINDOW_S = 30.0
"""The window rates and statuses are judged over (Burrow's default is ten commits)."""

HISTORY = 300
"""Readings of a group's total lag kept for its trend chart (ten minutes at 2 s polls)."""

TP = tuple[str, int]


class Series:
    """Readings of one counter that only rises (a group's committed offset): (time, value),
    oldest first, the oldest the newest one at or before the window's start (so a full window
    is spanned exactly). Many counters read at once are Readings."""

    __slots__ = ("error", "note", "points", "what", "why")

    def __init__(self, what: str = "offset", why: str = "") -> None:
        self.what = what  # what went back, said when it does ("log end", "log size", ...)
        self.why = why  # and what makes it do so
        self.points: deque[tuple[float, int]] = deque()
        self.error = ""  # why the latest reading failed ("" : it did not)
        self.note = ""  # what reset it (offsets went back ...)

    def add(self, t: float, value: int, window: float) -> None:
        pts = self.points
        if pts and value < pts[-1][1]:
            why = f" ({self.why})" if self.why else ""
            self.note = f"{self.what} went back from {pts[-1][1]:,} to {value:,}{why}"
            pts.clear()
        pts.append((t, value))
        self.error = ""
        while len(pts) > 2 and pts[1][0] <= t - window:
            pts.popleft()

    def fail(self, why: str) -> None:
        self.error = why

    def rate(self, window: float) -> Rate:
        pts = self.points
        as_of = pts[-1][0] if pts else None
        if self.error:
            return Rate(None, window_s=window, as_of=as_of, reason=self.error)
        if len(pts) < 2:
            why = f"{self.note}; measuring again" if self.note else "one reading so far"
            return Rate(None, window_s=window, as_of=as_of, reason=why)
        (t0, v0), (t1, v1) = pts[0], pts[-1]
        span = t1 - t0
        if span <= 0:
            return Rate(None, window_s=window, as_of=as_of, reason="one reading so far")
        note = self.note if self.note and span < window else ""
        return Rate((v1 - v0) / span, span, window, as_of, note)


Reading = tuple[float, Mapping[TP, int], Mapping[TP, str]]  # (time, values, why unread)


class Readings:
    """Readings of many counters taken at once (every partition's log end, or log size), oldest
    first: the oldest kept is the newest at or before the window's start, so a full window is
    spanned exactly. Each reading's dicts are kept as given (never changed after): a figure is
    worked out only when asked, and a snapshot of them costs a tuple."""

    def __init__(self, window: float, what: str, why: str):
        self.window = window
        self.what, self.why = what, why  # said when a counter goes back
        self.list: deque[Reading] = deque()
        # Per counter, the reading from which it counts again (it went back, or another
        # broker's log is read), and why.
        self.resets: dict[TP, tuple[float, str]] = {}
        self.sources: dict[TP, int] = {}  # which broker each value was read from (sizes)
        self._view: _View | None = None  # the last view, until the next reading

    def add(
        self,
        t: float,
        values: Mapping[TP, int],
        errors: Mapping[TP, str],
        sources: Mapping[TP, int] | None = None,
    ) -> None:
        self._view = None
        if self.list:
            last = self.list[-1][1]
            for tp, v in values.items():
                was = last.get(tp)
                if was is not None and v < was:
                    why = f" ({self.why})" if self.why else ""
                    self.resets[tp] = (t, f"{self.what} went back from {was:,} to {v:,}{why}")
        if sources is not None:
            for tp, broker in sources.items():
                if self.sources.get(tp, broker) != broker:
                    self.resets[tp] = (t, f"measured from broker {broker} since it leads")
                self.sources[tp] = broker
        self.list.append((t, values, errors))
        while len(self.list) > 2 and self.list[1][0] <= t - self.window:
            self.list.popleft()
        oldest = self.list[0][0]
        if self.resets and any(at < oldest for at, _ in self.resets.values()):
            self.resets = {tp: r for tp, r in self.resets.items() if r[0] >= oldest}

    def view(self) -> _View:
        """The readings as they are now: the same object until the next reading (what is
        worked out from it, per partition and summed, is then worked out once)."""
        if self._view is None:
            self._view = _View(tuple(self.list), dict(self.resets), self.window)
        return self._view


@dataclass(frozen=True)
class _View:
    """The readings as of one moment (what a snapshot's rates are worked out from)."""

    readings: tuple[Reading, ...]
    resets: dict[TP, tuple[float, str]]
    window: float
    # each partition's figure, once worked out (a view is shared by every snapshot until the
    # next reading)
    _rates: dict[TP, Rate] = field(default_factory=dict, compare=False, repr=False)

    def rate(self, tp: TP) -> Rate:
        r = self._rates.get(tp)
        if r is None:
            r = self._rates[tp] = self._work_out(tp)
        return r

    def _work_out(self, tp: TP) -> Rate:
        w = self.window
        if not self.readings:
            return UNREAD_RATE
        t1, values, errors = self.readings[-1]
        if tp not in values:
            as_of = next((t for t, v, _ in reversed(self.readings) if tp in v), None)
            return Rate(None, window_s=w, as_of=as_of, reason=errors.get(tp, "not read"))
        since, note = self.resets.get(tp, (None, ""))
        base: tuple[float, int] | None = None
        for t, vals, _ in self.readings:
            if (since is not None and t < since) or tp not in vals:
                continue
            if t <= t1 - w or base is None:
                base = (t, vals[tp])
            if t > t1 - w:
                break
        if base is None or base[0] >= t1:
            why = f"{note}; measuring again" if note else "one reading so far"
            return Rate(None, window_s=w, as_of=t1, reason=why)
        span = t1 - base[0]
        return Rate((values[tp] - base[1]) / span, span, w, t1, note if span < w else "")

    def totals(self, groups: Mapping[Any, Sequence[TP]]) -> dict[Any, Rate]:
        """The sum of each group's rates: one subtraction per counter that counts over the
        same readings as the others (the usual case), its own rate otherwise."""
        if not self.readings:
            return {k: sum_rates([UNREAD_RATE] * len(v)) if v else sum_rates(()) for k, v in
                    groups.items()}  # fmt: skip
        w = self.window
        t1, last, _ = self.readings[-1]
        base = self.readings[0]
        for r in self.readings:
            if r[0] <= t1 - w:
                base = r
        t0, first, _ = base
        span = t1 - t0
        out = {}
        resets = self.resets
        for key, tps in groups.items():
            if not tps:
                out[key] = sum_rates(())
                continue
            if span > 0 and resets.keys().isdisjoint(tps):
                try:  # every counter in both readings (the usual case): summed in C
                    total = sum(map(last.__getitem__, tps)) - sum(map(first.__getitem__, tps))
                except KeyError:
                    pass
                else:
                    out[key] = Rate(total / span, span, w, t1)
                    continue
            # Those that count from elsewhere (reset, not in both readings) take their own
            # figure; the rest are still summed in C. During a failover every partition that
            # changed leader has its log size reset.
            if span <= 0:
                own = list(tps)
            else:
                own = [tp for tp in tps if tp in resets or tp not in last or tp not in first]
            mine = set(own)
            rest = [tp for tp in tps if tp not in mine]
            fast = []
            if rest:
                total = sum(map(last.__getitem__, rest)) - sum(map(first.__getitem__, rest))
                fast = [Rate(total / span, span, w, t1)]
            out[key] = _merge(fast, [self.rate(tp) for tp in own], len(tps))
        return out


def _merge(fast: list[Rate], slow: list[Rate], n: int) -> Rate:
    """sum_rates of the fast sum and the slow ones, counting the counters as `n`."""
    total = sum_rates([*fast, *slow])
    unknown = sum(1 for r in slow if r.per_s is None)
    if unknown and total.per_s is not None:
        why = next(r.reason for r in slow if r.per_s is None)
        return replace(total, reason=f"{unknown} of {n} not known: {why}", partial=True)
    return total


class _Source:
    """A snapshot's RateSource: the log ends' and sizes' readings as of one moment."""

    def __init__(self, keys: list[TP], ends: _View, sizes: _View):
        self._keys, self.ends, self.sizes = keys, ends, sizes
        self._records: dict[TP, Rate] = {}
        self._bytes: dict[TP, Rate] = {}
        self._key_set: set[TP] | None = None
        self.sums: list[Any] = []  # the snapshots' sums of these figures (Rates._sums)

    def partition_keys(self) -> list[TP]:
        return self._keys

    def has(self, tp: TP) -> bool:
        if self._key_set is None:
            self._key_set = set(self._keys)
        return tp in self._key_set

    def records(self, tp: TP) -> Rate:
        r = self._records.get(tp)
        if r is None:
            r = self._records[tp] = self.ends.rate(tp)
        return r

    def bytes(self, tp: TP) -> Rate:
        r = self._bytes.get(tp)
        if r is None:
            r = self._bytes[tp] = self.sizes.rate(tp)
        return r

    def totals(self, groups: dict[Any, list[TP]], sizes: bool) -> dict[Any, Rate]:
        return (self.sizes if sizes else self.ends).totals(groups)


@dataclass
class _GroupTrack:
    """Readings of one group: per partition (time, committed, log end), and its total lag."""

    parts: dict[TP, deque[tuple[float, int, int]]] = field(default_factory=dict)
    committed: dict[TP, Series] = field(default_factory=dict)
    history: deque[tuple[float, int]] = field(default_factory=lambda: deque(maxlen=HISTORY))
    counted: frozenset[TP] = frozenset()  # the partitions `history`'s totals add up


class RateBook:
    """Every counter's readings; `rates()` works out the figures as of the latest."""

    def __init__(self, window_s: float = WINDOW_S):
        self.window_s = window_s
        self.ends = Readings(window_s, "log end", "truncated, or the topic made again")
        self.sizes = Readings(window_s, "log size", "old segments deleted")
        self.keys: list[TP] = []
        self.groups: dict[str, _GroupTrack] = {}
        self.taken_at = 0.0
        self.bytes_note = "not read yet"
        self.recent: Rate | None = None
        self._source: _Source | None = None

    # -- readings ---------------------------------------------------------------------------
    def read_ends(
        self, t: float, ends: Mapping[TP, int], errors: Mapping[TP, str], partitions: Iterable[TP]
    ) -> None:
        """One reading of the log-end offsets of `partitions` (every partition of the cluster:
        the others are forgotten), at `t`."""
        keys = sorted(partitions)
        last = self.ends.list[-1] if self.ends.list else None
        self.ends.add(t, ends, {tp: errors.get(tp, "log end not read") for tp in keys
                                if tp not in ends})  # fmt: skip
        self.keys = keys
        self.taken_at = t
        self.recent = _recent(last, self.ends.list[-1])

    def read_sizes(
        self,
        t: float,
        sizes: Mapping[TP, tuple[int, int]],
        errors: Mapping[TP, str],
        note: str = "",
    ) -> None:
        """One reading of the log sizes, per partition (broker read from, bytes); `note`: why
        the cluster gives none at all (bytes/s are then not shown)."""
        self.bytes_note = note
        if note:
            self.sizes = Readings(self.window_s, "log size", "old segments deleted")
            return
        self.sizes.add(
            t,
            {tp: size for tp, (_, size) in sizes.items()},
            {tp: errors.get(tp, "log size not read") for tp in self.keys if tp not in sizes},
            {tp: broker for tp, (broker, _) in sizes.items()},
        )

    def read_groups(self, t: float, groups: Sequence[Group]) -> None:
        """One reading of the groups' committed offsets (and the log ends read with them)."""
        keep = {g.group_id for g in groups}
        for gid in [gid for gid in self.groups if gid not in keep]:
            del self.groups[gid]
        horizon = t - self.window_s
        for g in groups:
            track = self.groups.setdefault(g.group_id, _GroupTrack())
            seen = set()
            for gp in g.partitions:
                tp = (gp.topic, gp.partition)
                seen.add(tp)
                s = track.committed.get(tp)
                if s is None:
                    s = track.committed[tp] = Series("committed offset", "reset")
                pts = track.parts.setdefault(tp, deque())
                fresh = gp.as_of is None and gp.committed_known
                if not fresh or gp.share:
                    s.fail("committed offset not read" if not gp.committed_known else "carried")
                    continue
                if gp.committed is None:
                    s.fail("nothing committed")
                    pts.clear()
                    continue
                s.add(t, gp.committed, self.window_s)
                if gp.log_end is None:
                    continue
                if pts and gp.committed < pts[-1][1]:
                    pts.clear()  # offsets reset: judged again from here
                pts.append((t, gp.committed, gp.log_end))
                while len(pts) > 2 and pts[1][0] <= horizon:
                    pts.popleft()
            for tp in [tp for tp in track.parts if tp not in seen]:
                del track.parts[tp]
                track.committed.pop(tp, None)
            if g.lag is not None and g.lag_read_whole:
                # The total counts the partitions with a committed offset: when that set
                # changes (a first commit), the total jumps; its trend starts again.
                counted = frozenset(
                    (p.topic, p.partition) for p in g.partitions if p.lag is not None
                )
                if counted != track.counted:
                    track.history.clear()
                    track.counted = counted
                track.history.append((t, g.lag))

    # -- figures ----------------------------------------------------------------------------
    def rates(self, groups: Sequence[Group] = ()) -> Rates:
        """The figures as of the latest readings (a partition's worked out when asked);
        `groups` (the latest, with their states and members) for the judgements."""
        ends, sizes = self.ends.view(), self.sizes.view()
        source = self._source
        if (
            source is None
            or source.ends is not ends
            or source.sizes is not sizes
            or source._keys is not self.keys
        ):  # new readings: else the same source, and what it worked out, serves again
            source = self._source = _Source(self.keys, ends, sizes)
        return Rates(
            window_s=self.window_s,
            taken_at=self.taken_at,
            groups=tuple(self._group_rate(g, source) for g in groups if g.group_id in self.groups),
            bytes_note=self.bytes_note,
            recent=self.recent,
            source=source,
            _sums=source.sums,
        )

    def _group_rate(self, g: Group, source: _Source) -> GroupRate:
        track = self.groups[g.group_id]
        w = self.window_s
        rows = []
        for gp in sorted(g.partitions, key=lambda gp: (gp.topic, gp.partition)):
            tp = (gp.topic, gp.partition)
            s = track.committed.get(tp)
            consumed = s.rate(w) if s is not None else UNREAD_RATE
            produced = source.records(tp)
            if gp.lag_unknown or gp.carried:
                status, reason = LagStatus.UNKNOWN, _unread(gp.committed_known, gp.log_end)
            elif gp.committed is None:
                status, reason = LagStatus.OK, "nothing committed: no lag to judge"
            else:
                status, reason = judge(list(track.parts.get(tp, ())), w, g.members)
            rows.append(GroupPartitionRate(*tp, status, reason, consumed, produced))
        worst = max(rows, key=lambda r: r.status.severity, default=None)
        if worst is None:
            status, reason = LagStatus.OK, "no partitions"
        else:
            status = worst.status
            same = sum(1 for r in rows if r.status is status)
            where = f"{worst.topic}/{worst.partition}"
            more = f" (and {same - 1} more)" if same > 1 else ""
            reason = f"{where}{more}: {worst.reason}"
        end = track.history[-1][0] if track.history else 0.0
        slope = _slope([(t, float(v)) for t, v in track.history if t >= end - w])
        trend, catch_up = _trend(slope, g.lag, sum_rates([r.produced for r in rows]))
        return GroupRate(
            g.group_id,
            status,
            reason,
            trend,
            catch_up,
            slope,
            sum_rates([r.consumed for r in rows]),
            sum_rates([r.produced for r in rows]),
            tuple(rows),
            tuple(track.history),
        )


def _recent(last: Reading | None, now: Reading) -> Rate | None:
    """Records landed in every partition between the last two readings, a second: at least
    that much when some partition was not read in both (or went back)."""
    if last is None or now[0] <= last[0]:
        return None
    before, after = last[1], now[1]
    total, missing = 0, 0
    for tp, v in after.items():
        was = before.get(tp)
        if was is None or v < was:
            missing += 1
        else:
            total += v - was
    missing += len(now[2])
    dt = now[0] - last[0]
    why = f"{missing} partition(s) not read twice running" if missing else ""
    return Rate(total / dt, dt, dt, now[0], why, partial=bool(missing))


def _unread(committed_known: bool, log_end: int | None) -> str:
    if not committed_known:
        return "committed offset not read this time"
    if log_end is None:
        return "log end not read this time"
    return "figures carried from an earlier reading"


def judge(
    points: Sequence[tuple[float, int, int]], window: float, members: int
) -> tuple[LagStatus, str]:
    """One group partition's status from its readings (time, committed, log end), oldest
    first, as Burrow's evaluator judges a window of commits:

    1. lag 0 at any reading of the window: OK (it caught up);
    2. the committed offset did not move over the whole window and lag is above 0: STOPPED
       when the group has no member (nobody will commit), else STALLED (members, but the
       offset is stuck: a consumer wedged, or committing the same offset);
    3. the offset moved and the lag grew over the window (its slope above the noise, and
       higher at the end than at the start): WARNING;
    4. otherwise OK.
    Until a whole window is in: PENDING, saying how much is.

    Burrow sees each commit with its time; OffsetFetch gives only the offset, so "no
    commits at all" is read from the group having no member. Burrow calls lag growing only
    when it rose at every commit; a consumer that commits every few seconds makes the lag a
    saw-tooth, so the slope over the window is judged instead."""
    if not points:
        return LagStatus.PENDING, "no reading with a committed offset and a log end yet"
    t_end, c_end, e_end = points[-1]
    lag_end = max(0, e_end - c_end)
    t0 = points[0][0]
    span = t_end - t0
    lags = [max(0, e - c) for _, c, e in points]
    if any(lag == 0 for lag in lags):
        return LagStatus.OK, "caught up within the window" if lag_end else "no lag"
    if span < window - 1e-6:
        return LagStatus.PENDING, f"judged once {window:.0f} s are read ({span:.0f} s so far)"
    c0 = points[0][1]
    if c_end == c0:
        stuck = f"committed offset {c_end:,} has not moved for {span:.0f} s; lag {lag_end:,}"
        if members == 0:
            return LagStatus.STOPPED, f"no member consumes: {stuck}"
        return LagStatus.STALLED, f"{members} member(s), but {stuck}"
    slope = _slope([(t, float(lag)) for (t, _, _), lag in zip(points, lags, strict=True)])
    produced = (e_end - points[0][2]) / span
    consumed = (c_end - c0) / span
    if slope is not None and slope > _noise(produced) and lag_end > lags[0]:
        return LagStatus.WARNING, (
            f"lag grew {lags[0]:,} -> {lag_end:,} in {span:.0f} s "
            f"(consuming {consumed:,.0f}/s, produced {produced:,.0f}/s)"
        )
    return LagStatus.OK, f"consuming {consumed:,.0f}/s, produced {produced:,.0f}/s"


def _noise(produced_per_s: float) -> float:
    """Lag slope below which a lag is steady: 1 record/s, or 2 % of the production rate (a
    consumer that commits every few seconds makes the lag a saw-tooth)."""
    return max(1.0, 0.02 * abs(produced_per_s))


def _slope(points: Sequence[tuple[float, float]]) -> float | None:
    """Least-squares slope of (t, value) per second; None for fewer than 2 distinct times."""
    n = len(points)
    if n < 2:
        return None
    mt = sum(t for t, _ in points) / n
    mv = sum(v for _, v in points) / n
    den = sum((t - mt) ** 2 for t, _ in points)
    if den <= 0:
        return None
    return sum((t - mt) * (v - mv) for t, v in points) / den


def _trend(slope: float | None, lag: int | None, produced: Rate) -> tuple[str, float | None]:
    """growing / draining / steady from the lag's slope, and while draining the time to catch
    up at that pace."""
    if slope is None or lag is None:
        return "", None
    noise = _noise(produced.per_s or 0.0)
    if slope > noise:
        return "growing", None
    if slope < -noise:
        return "draining", (lag / -slope) if lag > 0 else 0.0
    return "steady", None


# -- reading the figures (the console's cells and `describe`) -----------------------------------
HOT_SKEW = 2.0
"""A topic whose busiest partition takes this many times the mean is flagged hot."""
HOT_MIN_PER_S = 10.0
"""... once the busiest one takes at least this many records a second (below, noise)."""


def per_s_text(value: float, unit: str = "") -> str:
    """1,234/s; 3.5/s below 10; with `unit` "B" bytes in B, KiB, MiB or GiB."""
    if unit == "B":
        for name, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if abs(value) >= size:
                return f"{value / size:,.1f} {name}/s"
        return f"{value:,.0f} B/s"
    if abs(value) < 10 and value != int(value):
        return f"{value:.1f}/s"
    return f"{value:,.0f}/s"


def rate_text(rate: Rate | None, now: float, unit: str = "", *, why: bool = False) -> str:
    """A rate as a cell says it: "2,001/s"; "≥2,001/s" when some of a sum is unknown; "…"
    before a second reading; "?" with the age of its last reading when unknown (never 0). With
    `why`, the reason too and how much of the window a short figure covers."""
    if rate is None:
        return "-"
    if rate.per_s is None:
        if rate.reason in ("one reading so far", "not read yet") and not why:
            return "…"
        age = f" {_age(now - rate.as_of)}" if rate.as_of is not None else ""
        return f"?{age}" + (f" ({rate.reason})" if why and rate.reason else "")
    text = ("≥" if rate.partial else "") + per_s_text(rate.per_s, unit)
    if why:
        notes = []
        if rate.window_s and rate.span_s < rate.window_s - 1e-6:
            notes.append(f"over {rate.span_s:.0f} s of {rate.window_s:.0f}")
        if rate.reason:
            notes.append(rate.reason)
        if notes:
            text += f" ({'; '.join(notes)})"
    return text


def duration_text(seconds: float | None) -> str:
    """4m10s, 12s, 1h05m; "-" for none."""
    if seconds is None:
        return "-"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def _age(seconds: float) -> str:
    return duration_text(max(0.0, seconds))


def trend_text(g: GroupRate | None) -> str:
    """ "draining, 4m10s to catch up", "growing +120/s", "steady"; "" when not known."""
    if g is None or not g.trend:
        return ""
    if g.trend == "draining":
        return f"draining, {duration_text(g.catch_up_s)} to catch up"
    if g.trend == "growing" and g.lag_per_s is not None:
        return f"growing +{per_s_text(g.lag_per_s)}"
    return g.trend


@dataclass(frozen=True)
class TopicLoad:
    """One topic's row of the topics view."""

    name: str
    partitions: int
    records: Rate | None
    bytes: Rate | None
    skew: float | None  # busiest partition / mean (None: not known, or no traffic)
    hottest: int | None  # that partition
    under_replicated: int
    offline: int

    @property
    def hot(self) -> bool:
        total = self.records.per_s if self.records is not None else None
        busiest = (total or 0.0) / max(1, self.partitions) * (self.skew or 0.0)
        return (self.skew or 0.0) >= HOT_SKEW and busiest >= HOT_MIN_PER_S


def topic_loads(snap: ClusterSnapshot, internal: bool = False) -> list[TopicLoad]:
    """One TopicLoad per topic (internal ones only with `internal`), by name."""
    by_topic: dict[str, list[Partition]] = {}
    for p in snap.partitions:
        by_topic.setdefault(p.topic, []).append(p)
    out = []
    for name in sorted(by_topic):
        if not internal and snap.is_internal(name):
            continue
        parts = by_topic[name]
        skew = hottest = None
        if snap.rates is not None:
            known = [
                (r.per_s, p.partition)
                for p in parts
                if (r := snap.rates.records(p.topic, p.partition)).per_s is not None
            ]
            if known and len(known) == len(parts):
                mean = sum(v for v, _ in known) / len(known)
                top, hottest = max(known)
                skew = top / mean if mean > 0 else None
                if skew is None:
                    hottest = None
        out.append(
            TopicLoad(
                name,
                len(parts),
                snap.topic_records(name),
                snap.topic_bytes(name)
                if snap.rates is not None and not snap.rates.bytes_note
                else None,
                skew,
                hottest,
                sum(1 for p in parts if p.under_replicated),
                sum(1 for p in parts if snap.is_offline(p)),
            )
        )
    return out
