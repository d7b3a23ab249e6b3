"""The jobs screen: the PySpark jobs there are, their runs with live progress, start and stop.

The app polls the JobManager on a thread (every second) and keeps `job_runs` and `job_logs`;
this screen only renders them. Starting and stopping go through the app to the command layer in
thread workers, so a JVM starting or a graceful stop never blocks the screen.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Checkbox, DataTable, Input, Label, Select, Sparkline, Static

from kconsole.jobs import JobRun, JobSpec, JobState
from kconsole.models import ClusterSnapshot
from kconsole.ui import format as fmt
from kconsole.ui.context import actions, state, subscribe
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
    ("group lag", "lag"),
    ("started", "started"),
)


def group_lag(snapshot: ClusterSnapshot | None, group_id: str | None) -> int | None:
    """The consumer-groups pane's lag of the job's group (log end - committed)."""
    if snapshot is None or not group_id:
        return None
    group = next((g for g in snapshot.groups if g.group_id == group_id), None)
    return group.lag if group is not None else None


def _num(value: float | int | None, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def run_cells(run: JobRun, snapshot: ClusterSnapshot | None) -> tuple[Text | str, ...]:
    p = run.latest
    lag = group_lag(snapshot, run.group_id)
    behind = run.offsets_behind
    agree = lag is None or behind is None or lag == behind
    return (
        run.run_id,
        Text(run.state.value + (" (detached)" if run.detached else ""), STATE_STYLE[run.state]),
        "-" if p is None else str(p.batch_id),
        "-" if p is None else _num(p.input_rows_per_second),
        "-" if p is None else _num(p.processed_rows_per_second),
        "-" if p is None else _num(p.batch_duration_ms),
        Text(_num(behind), fmt.WARN if behind else fmt.PLAIN),
        Text(_num(lag), fmt.PLAIN if agree else fmt.NOTE),
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
                specs.border_subtitle = "enter or n starts one"
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
            yield Static(id="job-log")
        yield KeyBar()

    def on_mount(self) -> None:
        specs = self.query_one("#job-specs", DataTable)
        specs.add_column("job", key="job")
        specs.add_column("what it does", key="what")
        runs = self.query_one("#job-runs", DataTable)
        for label, key in RUN_COLUMNS:
            runs.add_column(label, key=key)
        view = state(self)
        view.show_job_logs = True
        if actions(self).jobs_available:
            actions(self).poll_jobs()  # the log tails now, not a second from now
        for spec in view.job_specs():
            what = spec.description.partition(": ")[2] or spec.description
            specs.add_row(Text(spec.name, fmt.BOLD), what, key=spec.name)
        subscribe(self, "job_runs", self.redraw, init=True)
        subscribe(self, "snapshot", self.redraw, init=False)
        (runs if runs.row_count else specs).focus()

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
        wanted = [r.run_id for r in runs]
        current = [str(k.value) for k in table.rows]
        if current != wanted:
            table.clear()
            for run in runs:
                table.add_row(*run_cells(run, view.snapshot), key=run.run_id)
            if selected is not None and selected.run_id in wanted:
                table.move_cursor(row=wanted.index(selected.run_id), animate=False)
        else:
            for run in runs:
                for (_, col), value in zip(RUN_COLUMNS, run_cells(run, view.snapshot), strict=True):
                    table.update_cell(run.run_id, col, value)
        active = sum(1 for r in runs if r.active)
        set_border(
            self.query_one("#job-runs-pane"),
            title=f"Runs [dim]{len(runs)}[/]"
            + (f" · [$success]{active} active[/]" if active else ""),
        )
        self._detail()

    @on(DataTable.RowHighlighted, "#job-runs")
    def _run_highlighted(self) -> None:
        self._detail()

    def _detail(self) -> None:
        view = state(self)
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
            self.query_one("#job-log", Static).update("")
            return
        set_border(pane, title=f"Run [b]{run.run_id}[/] · {run.job}")
        self.query_one("#job-summary", Static).update(run_summary(run, view.snapshot, view.clock()))
        for row in self.query(".job-chart"):
            row.display = True
        rates = [p.processed_rows_per_second or 0.0 for p in run.history]
        behind = [float(p.offsets_behind or 0) for p in run.history]
        self._chart("#job-rate", rates, "rows/s")
        self._chart("#job-behind", behind, "offsets")
        log = view.job_logs.get(run.run_id, ())
        text = Text()
        if run.error:
            text.append("why it failed: ", fmt.BAD)
            text.append(run.error + "\n", fmt.BAD)
        for w in run.warnings:
            text.append(f"warning: {w}\n", fmt.WARN)
        if run.finding_counts:
            found = ", ".join(f"{k} {v:,}" for k, v in sorted(run.finding_counts.items()))
            text.append(f"findings: {found}\n", fmt.WARN)
        text.append(f"log ({run.log_path.name}, newest last):\n", fmt.DIM)
        for line in log:
            text.append(line[:300] + "\n", fmt.DIM)
        self.query_one("#job-log", Static).update(text)

    def _chart(self, selector: str, data: list[float], unit: str) -> None:
        chart = self.query_one(selector, Sparkline)
        chart.data = data
        chart.styles.width = max(1, min(len(data), 60))
        rng = self.query_one(f"{selector}-range", Static)
        if data:
            rng.update(
                Text.assemble(
                    (f" now {data[-1]:,.0f}", "bold"),
                    (f"  max {max(data):,.0f} {unit}  last {len(data)} batches", fmt.DIM),
                )
            )
        else:
            rng.update(Text(" no progress yet", fmt.DIM))

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
                actions(self).request_job_start(spec.name, options, detached)

        self.app.push_screen(StartJobDialog(spec, view.job_option_defaults(spec)), chosen)

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
        text.append(_num(p.offsets_behind), fmt.WARN if p.offsets_behind else fmt.GOOD)
        lag = group_lag(snapshot, run.group_id)
        if lag is not None:
            text.append(" · group lag ", fmt.DIM)
            text.append(_num(lag), fmt.WARN if lag else fmt.GOOD)
    elif run.active:
        text.append(" · no batch yet (the JVM and Spark session start first)", fmt.DIM)
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

    def __init__(self, spec: JobSpec, defaults: dict[str, Any]) -> None:
        super().__init__()
        self.spec = spec
        self.defaults = defaults

    def compose(self) -> ComposeResult:
        with Vertical(id="start-job-dialog") as dialog:
            dialog.border_title = f"Start {self.spec.name}"
            dialog.border_subtitle = "ctrl+s starts · escape cancels"
            yield Static(Text(self.spec.description, fmt.DIM), id="start-job-what")
            with VerticalScroll(id="start-job-options"):
                for opt in self.spec.options:
                    value = self.defaults.get(opt.name, opt.default)
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
                                tooltip=opt.help,
                            )
            yield Checkbox(
                "detached (keeps running after the console exits)", compact=True, id="detached"
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

    @on(Input.Submitted)
    def action_start(self) -> None:
        """Start with these options."""
        self.dismiss((self.options(), self.query_one("#detached", Checkbox).value))

    def action_cancel(self) -> None:
        """Start nothing."""
        self.dismiss(None)
