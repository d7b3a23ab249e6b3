"""The jobs screen: the PySpark jobs there are, their runs with live progress, start and stop.

The app polls the JobManager on a thread (every second) and keeps `job_runs` and `job_logs`;
this screen only renders them. Starting and stopping go through the app to the command layer in
thread workers, so a JVM starting or a graceful stop never blocks the screen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Checkbox, DataTable, Input, Label, Select, Sparkline, Static

from kconsole.jobs import JobProgress, JobRun, JobSpec, JobState
from kconsole.jobs.specs import value_problem
from kconsole.models import ClusterSnapshot
from kconsole.ui import format as fmt
from kconsole.ui.context import actions, state, subscribe
from kconsole.ui.messages import LogNote
from kconsole.ui.widgets.footer import KeyBar
from kconsole.ui.widgets.panes import set_border

STATE_STYLE = {
    JobState.STARTING: fmt.NOTE,
    JobState.RUNNING: fmt.GOOD,
    JobState.STOPPING: fmt.WARN,
    JobState.STOPPED: fmt.DIM,
    JobState.FAILED: fmt.BAD,
    JobState.FINISHED: fmt.DIM,
}
RUN_COLUMNS = (
    ("run", "run"),
    ("state", "state"),
    ("batch", "batch"),
    ("in rows/s", "in"),
    ("done rows/s", "done"),
    ("batch ms", "batch_ms"),
    ("behind", "behind"),
    ("run lag", "lag"),
    ("started", "started"),
)


# The runs table in less room: the columns kept, and how run ids are written (full; "job
# …HHMMSS-xxxx"; "…HHMMSS-xxxx"), the first that fits is shown. The start time is in the run
# id, so it goes first; what a run is doing now (state, rows/s done, offsets behind) stays.
RUN_LAYOUTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("run", "state", "batch", "in", "done", "batch_ms", "behind", "lag", "started"), "full"),
    (("run", "state", "batch", "in", "done", "batch_ms", "behind", "lag"), "full"),
    (("run", "state", "batch", "done", "batch_ms", "behind", "lag"), "full"),
    (("run", "state", "batch", "done", "behind", "lag"), "full"),
    (("run", "state", "batch", "done", "behind", "lag"), "job"),
    (("run", "state", "done", "behind", "lag"), "job"),
    (("run", "state", "done", "behind"), "job"),
    (("run", "state", "done", "behind"), "tail"),
)
_LABELS = {key: label for label, key in RUN_COLUMNS}
_RUN_ID = re.compile(r"(?P<job>.+)-(?P<date>\d{8})-(?P<tail>\d{6}-\w+)")


def short_run_id(run: JobRun, style: str) -> str:
    """The run id as a layout writes it: whole, or without its date (and its job)."""
    m = _RUN_ID.fullmatch(run.run_id)
    if style == "full" or m is None:
        return run.run_id
    return f"{m['job']} …{m['tail']}" if style == "job" else f"…{m['tail']}"


def layout_cells(
    run: JobRun, snapshot: ClusterSnapshot | None, layout: tuple[tuple[str, ...], str]
) -> list[Text | str]:
    """A run's cells in `layout`'s columns."""
    keys, style = layout
    cells = dict(zip((key for _, key in RUN_COLUMNS), run_cells(run, snapshot), strict=True))
    cells["run"] = short_run_id(run, style)
    return [cells[k] for k in keys]


def layout_width(
    runs: list[JobRun], snapshot: ClusterSnapshot | None, layout: tuple[tuple[str, ...], str]
) -> int:
    """Cells the runs table needs in `layout`: each column's widest cell or label, padded."""
    widths = [len(_LABELS[k]) for k in layout[0]]
    for run in runs:
        cells = layout_cells(run, snapshot, layout)
        widths = [max(w, Text(c).cell_len if isinstance(c, str) else c.cell_len)
                  for w, c in zip(widths, cells, strict=True)]  # fmt: skip
    return sum(w + 2 for w in widths)


def fit_runs(
    runs: list[JobRun], snapshot: ClusterSnapshot | None, width: int
) -> tuple[tuple[str, ...], str]:
    """The first of RUN_LAYOUTS that fits in `width` cells (the last when none does)."""
    for layout in RUN_LAYOUTS:
        if layout_width(runs, snapshot, layout) <= width:
            return layout
    return RUN_LAYOUTS[-1]


# The jobs pane's hint, and the one it says when narrow (80 columns: 21 cells).
START_HINT = "enter or n starts one"
SHORT_START_HINT = "n starts one"


@dataclass(frozen=True)
class RunLag:
    """A run's own lag: per partition the log end now (as the groups pane last read it) - the
    offset this run last committed, summed. `why` says why it is unknown (`value` None) or
    what the sum leaves out."""

    value: int | None
    why: str = ""


def run_lag(run: JobRun, snapshot: ClusterSnapshot | None) -> RunLag:
    """The run's lag from its own commits. The group is shared by every run of the job (and
    keeps a past run's offsets), so its lag is not this run's: a run that committed nothing
    has no lag figure, whatever the group says."""
    if not run.group_id:
        return RunLag(None)
    if run.committed is None:
        return RunLag(None, f"this run committed no offsets to group {run.group_id}")
    group = (
        next((g for g in snapshot.groups if g.group_id == run.group_id), None) if snapshot else None
    )
    if group is None:
        return RunLag(None, f"group {run.group_id} not read by the groups pane (yet)")
    ends = {(p.topic, p.partition): p.log_end for p in group.partitions}
    known = {tp: end for tp in run.committed if (end := ends.get(tp)) is not None}
    unread = sorted(f"{t}/{p}" for t, p in run.committed if (t, p) not in known)
    why = f"log end not read for {', '.join(unread)}" if unread else ""
    if not known:
        return RunLag(None, why)
    return RunLag(sum(max(0, end - run.committed[tp]) for tp, end in known.items()), why)


def _lag_cell(run: JobRun, lag: RunLag) -> Text:
    """`-` with no group (or before a starting run's first batch), `?` when unknown, `+ ?`
    when partitions are left out; read at another moment than behind (when the groups pane
    polls, not as the batch ended), so the two differ by what arrived between."""
    if not run.group_id or (lag.value is None and run.active and run.latest is None):
        return Text("-")
    if lag.value is None:
        return Text("?", fmt.WARN)
    return Text(_num(lag.value) + (" + ?" if lag.why else ""), fmt.WARN if lag.why else fmt.PLAIN)


def _num(value: float | int | None, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


CHART_BATCHES = 60  # one bar per batch: the newest this many
OUTLIER = 4.0  # a rate this many times the window's median is drawn at the top, not scaled to


def rate_scale(values: list[float]) -> tuple[list[float], float, int]:
    """The newest CHART_BATCHES rates as drawn: the scale's top is the highest rate that is not
    an outlier, and outliers are clipped to it, so one batch cannot flatten the others. A run's
    first batch is always left out of the scale: it carries the JVM's warm-up and whatever
    waited since the last checkpoint (32,313 rows/s beside 400-500 made those look like 0).
    Returns (the values drawn, the top, how many were clipped)."""
    window = values[-CHART_BATCHES:]
    scaled = window[1:] if len(values) <= CHART_BATCHES and len(window) > 1 else window
    nonzero = sorted(v for v in scaled if v > 0)
    median = nonzero[len(nonzero) // 2] if nonzero else 0.0
    kept = [v for v in scaled if not median or v <= OUTLIER * median]
    top = max(kept) if kept else max(window, default=0.0)
    clipped = sum(1 for v in window if v > top)
    return [min(v, top) for v in window], top, clipped


def what_it_does(spec: JobSpec) -> str:
    """The job's one-line description without its name ("Keyed counts: how many ...")."""
    return spec.description.partition(": ")[2] or spec.description


def _behind_cell(p: JobProgress | None) -> Text:
    """Offsets behind as the batch ended: `?` when the job could not read the log ends (never
    0), `-` before the first batch."""
    if p is None:
        return Text("-")
    if p.offsets_behind is None:
        return Text("?" if p.behind_unknown else "-", fmt.WARN)
    return Text(_num(p.offsets_behind), fmt.WARN if p.offsets_behind else fmt.PLAIN)


def run_cells(run: JobRun, snapshot: ClusterSnapshot | None) -> tuple[Text | str, ...]:
    p = run.latest
    return (
        run.run_id,
        Text(run.state.value + (" (detached)" if run.detached else ""), STATE_STYLE[run.state]),
        "-" if p is None else str(p.batch_id),
        "-" if p is None else _num(p.input_rows_per_second),
        "-" if p is None else _num(p.processed_rows_per_second),
        "-" if p is None else _num(p.batch_duration_ms),
        _behind_cell(p),
        _lag_cell(run, run_lag(run, snapshot)),
        fmt.clock_time(run.started_at)[:8] if run.started_at else "-",
    )


class JobsScreen(Screen[None]):
    """PySpark Structured Streaming jobs: start them, watch them, stop them."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "new_run", "Start a job", id="jobs-start"),
        Binding("s", "stop_run", "Stop the run", id="jobs-stop"),
        Binding("escape", "back", "Back", id="jobs-back"),
    ]

    def compose(self) -> ComposeResult:
        with Horizontal(id="jobs-top"):
            with Vertical(id="job-specs-pane", classes="pane") as specs:
                specs.border_title = "Jobs"
                specs.border_subtitle = START_HINT
                yield DataTable(cursor_type="row", id="job-specs")
            with Vertical(id="job-runs-pane", classes="pane") as runs:
                runs.border_title = "Runs"
                runs.border_subtitle = "s stops the selected run"
                yield DataTable(cursor_type="row", id="job-runs")
        with Vertical(id="job-detail", classes="pane"):
            yield Static(id="job-summary")
            with Horizontal(classes="job-chart"):
                yield Label("processed rows/s ", classes="job-chart-label")
                yield Sparkline([], id="job-rate")
                yield Static(id="job-rate-range", classes="job-chart-range")
            with Horizontal(classes="job-chart"):
                yield Label("offsets behind   ", classes="job-chart-label")
                yield Sparkline([], id="job-behind")
                yield Static(id="job-behind-range", classes="job-chart-range")
            yield Static(id="job-notes")
            with VerticalScroll(id="job-log-scroll"):
                yield Static(id="job-log")
        yield KeyBar()

    def __init__(self) -> None:
        super().__init__()
        # What the user last asked for per job (options, detached): the dialog reopens with it.
        self._typed: dict[str, tuple[dict[str, Any], bool]] = {}
        # A start the user asked for: (job, the runs there were); its run is selected on arrival.
        self._awaited: tuple[str, set[str]] | None = None
        self._shown: str | None = None  # the run the detail pane shows
        self._known: set[str] = set()  # the runs listed so far (one new among them: selected)
        self.fitted_width = 0  # the jobs table's width "what it does" was last fitted to
        self._layout = RUN_LAYOUTS[0]  # the runs table's columns and run ids, as fitted
        # Opened before the first read of the runs came back (later under load): the jobs
        # table has the focus only for want of runs, and the runs table takes it when that
        # read lists some.
        self._runs_awaited = False

    def on_mount(self) -> None:
        specs = self.query_one("#job-specs", DataTable)
        specs.add_column("job", key="job")
        runs = self.query_one("#job-runs", DataTable)
        for key in self._layout[0]:
            runs.add_column(_LABELS[key], key=key)
        view = state(self)
        view.show_job_logs = True
        if actions(self).jobs_available:
            actions(self).poll_jobs()  # the log tails now, not a second from now
        for spec in view.job_specs():
            specs.add_row(Text(spec.name, fmt.BOLD), key=spec.name)
        subscribe(self, "job_runs", self.redraw, init=True)
        subscribe(self, "snapshot", self.redraw, init=False)
        (runs if runs.row_count else specs).focus()
        self._runs_awaited = not view.jobs_read

    def on_unmount(self) -> None:
        state(self).show_job_logs = False

    # -- rendering ----------------------------------------------------------------------------
    @property
    def selected_run(self) -> JobRun | None:
        table = self.query_one("#job-runs", DataTable)
        if not table.row_count:
            return None
        try:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        except Exception:
            return None
        return next((r for r in state(self).job_runs if r.run_id == key), None)

    def redraw(self) -> None:
        view = state(self)
        runs = list(reversed(view.job_runs))  # newest first
        table = self.query_one("#job-runs", DataTable)
        selected = self.selected_run
        self._fit(runs)  # the columns may change: then the rows are added again below
        wanted = [r.run_id for r in runs]
        current = [str(k.value) for k in table.rows]
        if current != wanted:
            table.clear()
            for run in runs:
                table.add_row(*layout_cells(run, view.snapshot, self._layout), key=run.run_id)
            started = self._started_run(runs)
            # A run that appeared while the screen is open (started from the command line, or
            # by another console): selected, as one started here is (newest first).
            arrived = [r for r in wanted if r not in self._known] if self._known else []
            self._known = set(wanted)
            if started is not None:  # the run the user just started: show it
                table.move_cursor(row=wanted.index(started.run_id), animate=False)
                table.focus()
            elif arrived:
                table.move_cursor(row=wanted.index(arrived[0]), animate=False)
            elif selected is not None and selected.run_id in wanted:
                table.move_cursor(row=wanted.index(selected.run_id), animate=False)
            if self._runs_awaited and wanted and self.focused is self.query_one("#job-specs"):
                table.focus()
        else:
            for run in runs:
                cells = layout_cells(run, view.snapshot, self._layout)
                for col, value in zip(self._layout[0], cells, strict=True):
                    table.update_cell(run.run_id, col, value, update_width=True)
        if view.jobs_read:
            self._runs_awaited = False
        active = sum(1 for r in runs if r.active)
        set_border(
            self.query_one("#job-runs-pane"),
            title=f"Runs [dim]{len(runs)}[/]"
            + (f" · [$success]{active} active[/]" if active else ""),
        )
        self._detail()

    def _started_run(self, runs: list[JobRun]) -> JobRun | None:
        """The run of the start the user asked for, once it is listed (then no longer awaited)."""
        if self._awaited is None:
            return None
        job, before = self._awaited
        new = next((r for r in runs if r.job == job and r.run_id not in before), None)
        if new is not None:
            self._awaited = None
        return new

    @on(DataTable.RowHighlighted)
    def _row_highlighted(self) -> None:
        self._detail()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        if isinstance(event.widget, DataTable):
            self._detail()

    def on_resize(self, event: events.Resize) -> None:
        self.call_after_refresh(self.redraw)

    def _fit(self, runs: list[JobRun]) -> None:
        """Share the screen's width between the two tables by what they hold: the runs table
        gets all its columns when it can (else the first of RUN_LAYOUTS that fits), the jobs
        table the rest, up to what it needs to say whole what each job does (elided with '…'
        where it has room for a useful part of it; at 80 columns it has none: the detail pane
        shows it whole while the jobs table has the focus)."""
        width = self.size.width
        specs = state(self).job_specs()
        if not width:
            return
        snapshot = state(self).snapshot
        chrome = 3  # a pane's border, and a column for a vertical scrollbar
        name_width = max(len("job"), *(len(sp.name) for sp in specs))
        what_width = max((len(what_it_does(sp)) for sp in specs), default=0)
        least = max(name_width + 2 + chrome, len(SHORT_START_HINT) + 6)
        whole = name_width + what_width + 4 + chrome
        runs_need = layout_width(runs, snapshot, RUN_LAYOUTS[0]) + chrome
        room = whole if width >= whole + runs_need else max(least, width - runs_need)
        pane = self.query_one("#job-specs-pane")
        if pane.styles.width is None or pane.styles.width.value != room:
            pane.styles.width = room
            pane.border_subtitle = START_HINT if room >= len(START_HINT) + 6 else SHORT_START_HINT
        layout = fit_runs(runs, snapshot, width - room - chrome)
        if layout != self._layout:
            self._layout = layout
            table = self.query_one("#job-runs", DataTable)
            table.clear(columns=True)
            for key in layout[0]:
                table.add_column(_LABELS[key], key=key)
        self._fit_what_it_does(specs, name_width, room - chrome - name_width - 4)
        self.fitted_width = room - 2

    def _fit_what_it_does(self, specs: list[JobSpec], name_width: int, room: int) -> None:
        """'what it does' elided to `room` cells, or left out with less than 16."""
        table = self.query_one("#job-specs", DataTable)
        if not specs:
            return
        has = "what" in table.columns
        if room < 16:
            if has:
                table.remove_column("what")
            return
        if not has:
            table.add_column("what it does", key="what")
        for spec in specs:
            what = what_it_does(spec)
            shown = what if len(what) <= room else what[: room - 1].rstrip() + "…"
            if str(table.get_cell(spec.name, "what")) != shown:
                table.update_cell(spec.name, "what", Text(shown, fmt.DIM), update_width=True)

    def _focused_spec(self) -> JobSpec | None:
        """The job under the cursor while the jobs table has the focus."""
        table = self.query_one("#job-specs", DataTable)
        if self.focused is not table or not table.row_count:
            return None
        name = str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
        return next((sp for sp in state(self).job_specs() if sp.name == name), None)

    def _spec_detail(self, spec: JobSpec) -> None:
        """What the job under the cursor does, whole, and how to start it."""
        set_border(self.query_one("#job-detail"), title=f"Job [b]{spec.name}[/]")
        text = Text()
        text.append(spec.description + "\n\n")
        text.append("enter or n: its options, then ctrl+s starts it", fmt.DIM)
        self.query_one("#job-summary", Static).update(text)
        for row in self.query(".job-chart"):
            row.display = False
        self._show_log(None, Text(), Text())

    def _show_log(self, run_id: str | None, notes: Text, log: Text) -> None:
        """The notes above the log, and the log, kept scrolled to its newest line (unless the
        user scrolled it) and scrolled there again when another run is shown."""
        self.query_one("#job-notes", Static).update(notes)
        self.query_one("#job-notes").display = bool(notes.plain)
        scroll = self.query_one("#job-log-scroll", VerticalScroll)
        follow = run_id != self._shown or scroll.scroll_y >= scroll.max_scroll_y
        self._shown = run_id
        self.query_one("#job-log", Static).update(log)
        if follow:
            scroll.call_after_refresh(scroll.scroll_end, animate=False)

    def _detail(self) -> None:
        view = state(self)
        spec = self._focused_spec()
        if spec is not None:
            self._spec_detail(spec)
            return
        run = self.selected_run
        pane = self.query_one("#job-detail")
        if run is None:
            set_border(pane, title="Run")
            self.query_one("#job-summary", Static).update(
                Text("no runs yet: pick a job on the left and press enter", fmt.DIM)
            )
            for chart in ("#job-rate", "#job-behind"):
                self.query_one(chart, Sparkline).data = []
            for row in self.query(".job-chart"):
                row.display = False
            self._show_log(None, Text(), Text())
            return
        set_border(pane, title=f"Run [b]{run.run_id}[/] · {run.job}")
        self.query_one("#job-summary", Static).update(run_summary(run, view.snapshot, view.clock()))
        for row in self.query(".job-chart"):
            row.display = True
        rates = [p.processed_rows_per_second or 0.0 for p in run.history]
        # A batch whose behind could not be read is left out of the chart, not drawn as 0.
        recent = run.history[-CHART_BATCHES:]
        behind = [float(p.offsets_behind) for p in recent if p.offsets_behind is not None]
        self._chart("#job-rate", rates, "rows/s", clip=True)
        self._chart("#job-behind", behind, "offsets", unknown=len(recent) - len(behind))
        log = view.job_logs.get(run.run_id)
        notes = Text()
        if run.error:
            notes.append("why it failed: ", fmt.BAD)
            notes.append(run.error + "\n", fmt.BAD)
        for w in run.warnings:
            notes.append(f"warning: {w}\n", fmt.WARN)
        if run.finding_counts:
            found = ", ".join(f"{k} {v:,}" for k, v in sorted(run.finding_counts.items()))
            notes.append(f"findings: {found}\n", fmt.WARN)
        notes.rstrip()
        text = Text()
        text.append(f"log ({run.log_path.name}, newest last):", fmt.DIM)
        if log is None:
            text.append("\nreading it…", fmt.DIM)
        elif not log:
            text.append("\n(empty)", fmt.DIM)
        for line in log or ():
            text.append("\n" + line[:300], fmt.WARN if isinstance(line, LogNote) else fmt.DIM)
        self._show_log(run.run_id, notes, text)

    def _chart(
        self, selector: str, data: list[float], unit: str, *, clip: bool = False, unknown: int = 0
    ) -> None:
        chart = self.query_one(selector, Sparkline)
        rng = self.query_one(f"{selector}-range", Static)
        if not data:
            chart.data = []
            chart.styles.width = 1
            if unknown:
                rng.update(Text(f" unknown for all {unknown} batches", fmt.WARN))
            else:
                rng.update(Text(" no progress yet", fmt.DIM))
            return
        if clip:
            shown, top, clipped = rate_scale(data)
        else:
            shown = data[-CHART_BATCHES:]
            top, clipped = max(shown), 0
        chart.data = shown
        chart.styles.width = len(shown)
        text = Text.assemble(
            (f" now {data[-1]:,.0f}", "bold"), (f"  max {top:,.0f} {unit}", fmt.DIM)
        )
        if clipped:
            peak = max(data[-CHART_BATCHES:])
            text.append(
                f" ({clipped} batch{'es' if clipped > 1 else ''} above it, up to {peak:,.0f})",
                fmt.NOTE,
            )
        text.append(f"  last {len(shown)} batches", fmt.DIM)
        if unknown:
            text.append(f"  ({unknown} unknown, left out)", fmt.WARN)
        rng.update(text)

    # -- actions ------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        door = actions(self)
        if action == "new_run":
            return True if door.jobs_available and door.commands is not None else None
        if action == "stop_run":
            run = self.selected_run
            return True if run is not None and run.active and door.jobs_available else None
        return True

    @on(DataTable.RowSelected, "#job-specs")
    def _spec_selected(self) -> None:
        self.action_new_run()

    def action_new_run(self) -> None:
        """Start the job under the cursor (its options first)."""
        view = state(self)
        if not actions(self).jobs_available or actions(self).commands is None:
            return
        table = self.query_one("#job-specs", DataTable)
        if not table.row_count:
            self.notify("no jobs found", severity="warning")
            return
        name = str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
        spec = next(s for s in view.job_specs() if s.name == name)

        def chosen(result: tuple[dict[str, Any], bool] | None) -> None:
            if result is not None:
                options, detached = result
                self._typed[spec.name] = result
                self._awaited = (spec.name, {r.run_id for r in view.job_runs})
                actions(self).request_job_start(spec.name, options, detached)

        given, detached = self._typed.get(spec.name, ({}, False))
        dialog = StartJobDialog(spec, view.job_option_defaults(spec), given, detached)
        self.app.push_screen(dialog, chosen)

    def action_stop_run(self) -> None:
        """Stop the selected run: SIGTERM (graceful), SIGKILL after the timeout."""
        run = self.selected_run
        if run is not None and run.active:
            actions(self).request_job_stop(run.run_id)

    def action_back(self) -> None:
        """Back to the main screen (runs go on)."""
        self.dismiss()


def run_summary(run: JobRun, snapshot: ClusterSnapshot | None, now: float) -> Text:
    text = Text()
    text.append(run.state.value, STATE_STYLE[run.state] + fmt.BOLD)
    if run.detached:
        text.append(" (detached: keeps running after the console exits)", fmt.DIM)
    text.append(f" · pid {run.pid or '-'}", fmt.DIM)
    end = run.ended_at if run.ended_at and not run.active else now
    if run.started_at:
        text.append(f" · for {fmt.age(max(0.0, end - run.started_at))}", fmt.DIM)
    if run.exit_code is not None:
        text.append(f" · exit code {run.exit_code}", fmt.DIM)
    text.append("\n")
    if run.topic:
        text.append("topic ", fmt.DIM)
        text.append(run.topic)
    if run.group_id:
        text.append(" · commits to group ", fmt.DIM)
        text.append(run.group_id)
    p = run.latest
    if p is not None:
        text.append(" · batch ", fmt.DIM)
        text.append(str(p.batch_id))
        text.append(f" ({p.input_rows:,} rows, {_num(p.batch_duration_ms)} ms)", fmt.DIM)
        text.append(" · behind ", fmt.DIM)
        if p.offsets_behind is None and p.behind_unknown:
            text.append(f"? ({p.behind_unknown})", fmt.WARN)
        else:
            text.append(_num(p.offsets_behind), fmt.WARN if p.offsets_behind else fmt.GOOD)
    elif run.active:
        text.append(" · no batch yet (the JVM and Spark session start first)", fmt.DIM)
    if run.group_id and not (run.active and p is None):
        lag = run_lag(run, snapshot)
        text.append(" · run lag ", fmt.DIM)
        if lag.value is None:
            text.append(f"? ({lag.why})" if lag.why else "?", fmt.WARN)
        else:
            text.append(_num(lag.value), fmt.WARN if lag.value or lag.why else fmt.GOOD)
            if lag.why:
                text.append(f" + ? ({lag.why})", fmt.WARN)
    note = run.checkpoint_note
    if note is not None and note.status == "refused" and run.error:
        text.append("\ncheckpoint: not resumed (why and the way out: below)", fmt.BAD)
    elif note is not None:
        text.append(f"\ncheckpoint: {note.message}", fmt.WARN if note.out_of_range else fmt.DIM)
    return text


class StartJobDialog(ModalScreen[tuple[dict[str, Any], bool] | None]):
    """A job's options (prefilled), and whether to run it detached."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "start", "Start", id="start-job"),
        Binding("escape", "cancel", "Cancel", id="start-job-cancel"),
    ]

    def __init__(
        self,
        spec: JobSpec,
        defaults: dict[str, Any],
        given: dict[str, Any] | None = None,
        detached: bool = False,
    ) -> None:
        """`given`: what the user asked for last time (shown instead of the defaults)."""
        super().__init__()
        self.spec = spec
        self.defaults = defaults
        self.given = dict(given or {})
        self.detached = detached

    def compose(self) -> ComposeResult:
        with Vertical(id="start-job-dialog") as dialog:
            dialog.border_title = f"Start {self.spec.name}"
            dialog.border_subtitle = "ctrl+s starts · escape cancels"
            yield Static(Text(self.spec.description, fmt.DIM), id="start-job-what")
            with VerticalScroll(id="start-job-options"):
                for opt in self.spec.options:
                    value = self.given.get(opt.name, self.defaults.get(opt.name, opt.default))
                    with Horizontal(classes="job-option"):
                        yield Label(opt.name, classes="job-option-name")
                        if opt.kind == "flag":
                            yield Checkbox(
                                opt.help[:60], value=bool(value), compact=True, id=f"opt-{opt.name}"
                            )
                        elif opt.kind == "choice":
                            yield Select(
                                [(c, c) for c in opt.choices],
                                value=str(value) if value is not None else opt.choices[0],
                                allow_blank=False,
                                compact=True,
                                id=f"opt-{opt.name}",
                            )
                        else:
                            shown = ",".join(value) if isinstance(value, list) else value
                            placeholder = opt.help[:70]
                            if opt.name == "checkpoint":
                                placeholder = "default: kept per job and topic (resumes)"
                            elif opt.name == "output-dir":
                                placeholder = "default: inside the run's directory"
                            yield Input(
                                "" if shown is None else str(shown),
                                placeholder=placeholder,
                                compact=True,
                                id=f"opt-{opt.name}",
                                tooltip=f"{opt.help} ({opt.form})",
                            )
                    yield Static(id=f"err-{opt.name}", classes="job-option-error")
            yield Checkbox(
                "detached (keeps running after the console exits)",
                value=self.detached,
                compact=True,
                id="detached",
            )
            yield Static(id="start-job-error")
        yield KeyBar()

    def on_mount(self) -> None:
        first = self.query("#start-job-options Input")
        if first:
            first.first().focus()

    def options(self) -> dict[str, Any]:
        """Only what differs from the prefilled values (the manager fills in the rest)."""
        out: dict[str, Any] = {}
        for opt in self.spec.options:
            widget = self.query_one(f"#opt-{opt.name}")
            before = self.defaults.get(opt.name, opt.default)
            if isinstance(widget, Checkbox):
                value: Any = widget.value
            elif isinstance(widget, Select):
                value = str(widget.value)
            else:
                assert isinstance(widget, Input)
                raw = widget.value.strip()
                if opt.kind == "list":
                    value = [v.strip() for v in raw.split(",") if v.strip()]
                else:
                    value = raw
                if isinstance(before, list):
                    before = list(before)
                elif before is not None:
                    before = str(before)
                else:
                    before = ""
            if value != before:
                out[opt.name] = value
        return out

    def problems(self, options: dict[str, Any]) -> dict[str, str]:
        """What is wrong with each option given, by the job's own parser, in words."""
        found = {name: value_problem(self.spec, name, v) for name, v in options.items()}
        return {name: problem for name, problem in found.items() if problem}

    @on(Input.Changed)
    @on(Select.Changed)
    @on(Checkbox.Changed)
    def _recheck(self) -> None:
        """An option said to be wrong is checked again as it changes: its note goes once the
        value is right (and the line below with it once none is left), or says what is wrong
        now. Options not said to be wrong are left alone while being typed."""
        shown = [o.name for o in self.spec.options if self.query_one(f"#err-{o.name}").display]
        if not shown:
            return
        problems = self.problems(self.options())
        for name in shown:
            note = self.query_one(f"#err-{name}", Static)
            problem = problems.get(name)
            note.update(Text(f"↑ {problem}", fmt.BAD) if problem else "")
            note.display = problem is not None
        left = [name for name in shown if name in problems]
        error = self.query_one("#start-job-error", Static)
        error.update(
            Text(f"not started: fix {', '.join(left)} (see beside it)", fmt.BAD) if left else ""
        )

    @on(Input.Submitted)
    def action_start(self) -> None:
        """Start with these options, or, if any is wrong, say which and how, beside it (the
        dialog stays open with everything typed)."""
        options = self.options()
        problems = self.problems(options)
        for opt in self.spec.options:
            note = self.query_one(f"#err-{opt.name}", Static)
            problem = problems.get(opt.name)
            note.update(Text(f"↑ {problem}", fmt.BAD) if problem else "")
            note.display = problem is not None
        error = self.query_one("#start-job-error", Static)
        if problems:
            names = ", ".join(problems)
            error.update(Text(f"not started: fix {names} (see beside it)", fmt.BAD))
            first = self.query_one(f"#opt-{next(iter(problems))}")
            first.focus()
            first.scroll_visible(animate=False)
            return
        error.update("")
        self.dismiss((options, self.query_one("#detached", Checkbox).value))

    def action_cancel(self) -> None:
        """Start nothing."""
        self.dismiss(None)
