"""Broker actions as the console tracks them, and the latest drill drawn as a time chart.

Pure functions over events and snapshots (no widgets): the timeline screen renders their
results, the tests check them directly.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.style import Style
from rich.table import Table
from rich.text import Text

from kconsole.cluster.values import BrokerAction, NetLinks
from kconsole.drills.kraft import measure_drill
from kconsole.drills.measure import Frame, Measurement, Replay
from kconsole.faults import primitive
from kconsole.models import BrokerConfig, ClusterMode, ClusterSnapshot
from kconsole.timeline import Event, EventKind
from kconsole.ui import format as fmt
from kconsole.ui.rows import Columns, KeyCell, LoggedEvent, Rows

ACTION_ROW = fmt.ACTION


@dataclass
class ActionRun:
    """One broker action started from the console. Updated on the app's loop only."""

    action: BrokerAction
    broker_id: int
    event: Event  # the ACTION event put on the timeline before the backend was called
    before: ClusterSnapshot | None  # the snapshot just before it (what measure() replays over)
    ok: bool | None = None  # None while the backend is still working on it
    outcome: str = ""
    links: NetLinks | None = None  # a partition's sides


@dataclass(frozen=True)
class Drill:
    """A destructive action and, if it came, the start / resume that undid it."""

    fault: Event
    target: int
    before: ClusterSnapshot
    restore: Event | None = None
    links: NetLinks | None = None  # a partition's sides

    def measurements(
        self, events: Sequence[Event], config: BrokerConfig | None = None
    ) -> list[Measurement]:
        """The drill's measurements (on KRaft a controller's are the quorum's)."""
        return measure_drill(
            self.before,
            events,
            fault=self.fault,
            targets=(self.target,),
            restore=self.restore,
            cfg=config or BrokerConfig(),
            stays=self.links is not None
            and not self.links.cuts_membership(self.before.mode is ClusterMode.KRAFT),
        )[0]


def latest_drill(runs: Sequence[ActionRun]) -> Drill | None:
    """The most recent fault (stop, kill, pause, ...) that did not fail, with its restore
    if any."""
    for i in range(len(runs) - 1, -1, -1):
        run = runs[i]
        if not primitive(run.action).destructive or run.ok is False or run.before is None:
            continue
        restore = next(
            (
                later.event
                for later in runs[i + 1 :]
                if later.broker_id == run.broker_id
                and not primitive(later.action).destructive  # a heal: start, resume
                and later.ok is not False
            ),
            None,
        )
        return Drill(run.event, run.broker_id, run.before, restore, run.links)
    return None


# -- the chart --------------------------------------------------------------------------------
def drill_window(drill: Drill, events: Sequence[Event], now: float) -> tuple[float, float]:
    """(start, end) of the chart: a little before the fault until now (or the last event)."""
    end = max([now, drill.fault.ts + 1.0, *(e.ts for e in events if e.ts >= drill.fault.ts)])
    lead = max(1.0, 0.05 * (end - drill.fault.ts))
    return drill.fault.ts - lead, end


def frames(
    drill: Drill, events: Iterable[Event], start: float, end: float, columns: int
) -> list[list[Frame]]:
    """For each of `columns` equal time slices of [start, end], every state the cluster was
    in during it (the state at its start, then one per event inside it)."""
    replay = Replay.of(drill.before)
    # Events up to the snapshot are already in it; later ones move the replay on.
    pending = sorted(
        (e for e in events if e.ts > drill.before.taken_at and e.kind is not EventKind.ACTION),
        key=lambda e: e.ts,
    )
    step = (end - start) / columns
    out: list[list[Frame]] = []
    i = 0
    while i < len(pending) and pending[i].ts <= start:
        replay.apply(pending[i])
        i += 1
    for c in range(columns):
        upto = start + (c + 1) * step
        seen = [replay.frame()]
        while i < len(pending) and pending[i].ts <= upto:
            # One snapshot's events share a timestamp: apply them together, or a broker that
            # left would look like it took its partitions offline before they moved.
            ts = pending[i].ts
            while i < len(pending) and pending[i].ts == ts:
                replay.apply(pending[i])
                i += 1
            seen.append(replay.frame())
        out.append(seen)
    return out


BROKER_MARK = {
    "up": ("━", fmt.GOOD),
    "down": ("█", fmt.BAD),
    "paused": ("▒", fmt.WARN),
    "unreachable": ("░", fmt.BAD),
}
_WORST = ("down", "unreachable", "paused", "up")
_BARS = "▁▂▃▄▅▆▇█"
LABEL = 12
TAIL = 8


def _worst(states: Iterable[str]) -> str:
    present = set(states)
    return next((s for s in _WORST if s in present), "up")


def _bar(n: int, peak: int) -> str:
    if n <= 0 or peak <= 0:
        return "·"
    return _BARS[min(len(_BARS) - 1, math.ceil(n / peak * len(_BARS)) - 1)]


def _tick_step(span: float, columns: int) -> float:
    # About one labelled tick per 12 columns, on a round number of seconds.
    want = span / max(1, columns // 12)
    for step in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600):
        if step >= want:
            return float(step)
    return 3600.0 * math.ceil(want / 3600)


def _seconds_label(s: float) -> str:
    if s == 0:
        return "0"
    sign = "+" if s > 0 else "-"
    s = abs(s)
    return f"{sign}{s:g}s" if s < 60 else f"{sign}{fmt.age(s)}"


def drill_chart(drill: Drill, events: Sequence[Event], now: float, width: int) -> Text:
    """The drill as rows across time: each broker, the controller, offline and
    under-replicated partitions, with the fault and restore marked above."""
    columns = max(10, width - LABEL - TAIL)
    start, end = drill_window(drill, events, now)
    slices = frames(drill, events, start, end, columns)
    step = (end - start) / columns

    def column_of(ts: float) -> int:
        return min(columns - 1, max(0, int((ts - start) / step)))

    lines: list[Text] = []

    # Markers: where the fault and the restore happened.
    marks = Text(" " * columns)
    for event, style in ((drill.fault, fmt.BAD), (drill.restore, fmt.GOOD)):
        if event is None:
            continue
        col = column_of(event.ts)
        label = f"▼ {event.new} {event.broker}"
        label = label[: columns - col]
        marks = marks[:col] + Text(label, style) + marks[col + len(label) :]
    lines.append(Text.assemble(" " * LABEL, marks))

    last = slices[-1][-1]
    for bid in sorted({b.id for b in drill.before.brokers}):
        row = Text()
        for seen in slices:
            mark, style = BROKER_MARK.get(
                _worst(f.brokers.get(bid, "down") for f in seen), ("?", fmt.DIM)
            )
            row.append(mark, style)
        state = last.brokers.get(bid, "down")
        tail_style = BROKER_MARK.get(state, ("", fmt.DIM))[1]
        lines.append(_row(f"broker {bid}", row, Text(state, tail_style)))

    # The controller's id where it changes, a line while it stays, red while there is none.
    values = [
        None if None in ids else ids[-1]
        for ids in ([f.controller for f in seen] for seen in slices)
    ]
    row = Text()
    c = 0
    while c < columns:
        value = values[c]
        if value is None:
            row.append("█", fmt.BAD)
            c += 1
        elif c == 0 or values[c - 1] != value:
            run = 1
            while c + run < columns and values[c + run] == value:
                run += 1
            label = str(value)[:run]
            row.append(label, Style(color="#f0b429", bold=True))
            c += len(label)
        else:
            row.append("─", fmt.NOTE)
            c += 1
    controller = last.controller
    lines.append(
        _row(
            "controller",
            row,
            Text("none", fmt.BAD) if controller is None else Text(f"★ {controller}", "bold"),
        )
    )

    for label, pick, style in (
        ("offline", lambda f: f.offline, fmt.BAD),
        ("under-repl.", lambda f: f.under_replicated, fmt.WARN),
    ):
        peaks = [max(pick(f) for f in seen) for seen in slices]
        peak = max(peaks)
        row = Text()
        for n in peaks:
            row.append(_bar(n, peak), style if n else fmt.DIM)
        lines.append(_row(label, row, Text(f"max {peak}", style if peak else fmt.DIM)))

    # Time axis: seconds from the fault at round intervals, written into the line.
    tick = _tick_step(end - start, columns)
    axis = "─" * columns
    t = math.ceil((start - drill.fault.ts) / tick) * tick
    free = 0  # first column a label may start at (labels keep a gap between them)
    while drill.fault.ts + t <= end:
        col = column_of(drill.fault.ts + t)
        label = _seconds_label(t)
        if col >= free and col + len(label) <= columns:
            axis = axis[:col] + label + axis[col + len(label) :]
            free = col + len(label) + 2
        t += tick
    lines.append(_row("from fault", Text(axis, fmt.DIM), Text("")))
    return Text("\n").join(lines)


def _row(label: str, chart: Text, tail: Text) -> Text:
    return Text.assemble(
        Text(label[: LABEL - 1].ljust(LABEL), fmt.DIM), chart, " ", tail[: TAIL - 1]
    )


# -- measurements and events ------------------------------------------------------------------
COMPACT_BELOW = 110


def _took(m: Measurement) -> Text:
    if m.seconds is None:
        return Text("not yet", fmt.WARN)
    return Text(f"{m.seconds:.1f} s", "bold")


def measurement_table(measurements: Sequence[Measurement], width: int = 200) -> Table:
    """The measurements: what, how long it took, what the configuration predicts.

    Below COMPACT_BELOW columns each takes two lines, the prediction cut to fit: an 80x24
    terminal then shows most of them next to the chart (the export has every word).
    """
    if width < COMPACT_BELOW:
        compact = Table.grid(padding=(0, 1), expand=True)
        compact.add_column(justify="right", no_wrap=True, width=7)
        compact.add_column(no_wrap=True, overflow="ellipsis", ratio=1)
        for m in measurements:
            text = Text(m.name, no_wrap=True, overflow="ellipsis")
            text.append(
                f"\n{m.note}" if m.note else f"\npredicted {m.predicted}",
                fmt.WARN if m.note else fmt.DIM,
            )
            compact.add_row(_took(m), text)
        return compact
    table = Table(
        box=None, padding=(0, 1), expand=True, show_edge=False, header_style=Style(bold=True)
    )
    table.add_column("measured", ratio=5)
    table.add_column("took", justify="right", no_wrap=True, width=7)
    table.add_column("predicted", ratio=6, style=fmt.DIM)
    for m in measurements:
        name = Text(m.name)
        if m.note:
            name.append(f"\n{m.note}", fmt.WARN)
        table.add_row(name, _took(m), m.predicted)
    return table


TIMELINE_COLUMNS: Columns = (
    ("time", "time"),
    ("rel", "from fault"),
    ("kind", "kind"),
    ("text", "event"),
)


def timeline_rows(events: Iterable[LoggedEvent], fault: Event | None) -> Rows:
    """One row per event, oldest first; user actions stand out."""
    rows: Rows = {}
    for le in sorted(events, key=lambda le: (le.event.ts, le.seq)):
        e, key = le.event, str(le.seq)
        action = e.kind is EventKind.ACTION
        rel = fmt.NONE if fault is None else f"{e.ts - fault.ts:+.1f} s"
        style = ACTION_ROW if action else fmt.SEVERITY_STYLE.get(e.severity, fmt.PLAIN)
        rows[key] = [
            KeyCell(fmt.clock_time(e.ts), ACTION_ROW if action else fmt.DIM, row_key=key),
            fmt.cell(rel, ACTION_ROW if action else fmt.DIM),
            fmt.cell(e.kind.value, style),
            fmt.cell(e.text, ACTION_ROW if action else ""),
        ]
    return rows
