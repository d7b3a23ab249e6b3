"""The drill timeline: the latest drill as a chart, its measurements next to what the
configuration predicts, and every event. Live, and exportable (e)."""

from __future__ import annotations

from typing import ClassVar

from rich.console import RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Static

from kconsole.drills.export import ClusterIdentity, export_timeline
from kconsole.drills.measure import Measurement
from kconsole.ui import format as fmt
from kconsole.ui.context import state, subscribe
from kconsole.ui.drill import TIMELINE_COLUMNS, Drill, drill_chart, measurement_table, timeline_rows
from kconsole.ui.widgets.footer import KeyBar
from kconsole.ui.widgets.panes import Pane
from kconsole.ui.widgets.table import KeyedTable

NO_DRILL = (
    "No drill yet. Stop, kill or pause a broker (s / k / p on the Brokers pane, C for the "
    "controller, L on a partition for its leader); its timeline and measurements show here."
)


class TimelineTable(KeyedTable):
    """Every event the console kept, oldest first, with seconds from the drill's fault."""

    COLUMNS = TIMELINE_COLUMNS


class DrillChart(Widget):
    """The latest drill across time, drawn for the widget's width."""

    DEFAULT_CSS = """
    DrillChart {
        height: auto;
    }
    """

    def render(self) -> Text:
        view = state(self)
        drill = view.latest_drill()
        if drill is None:
            return Text(NO_DRILL, fmt.DIM)
        width = self.size.width or self.app.size.width
        chart = drill_chart(drill, view.timeline_events(), view.now, width)
        chart.no_wrap = True
        chart.overflow = "crop"
        return chart


class DrillMeasurements(Widget):
    """The latest drill's measurements, laid out for the widget's width."""

    DEFAULT_CSS = """
    DrillMeasurements {
        height: auto;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.measurements: list[Measurement] = []

    def render(self) -> RenderableType:
        width = self.size.width or self.app.size.width
        return measurement_table(self.measurements, width)


def drill_summary(drill: Drill | None, now: float) -> Text:
    """'▼ stop broker 2 at 08:00:01.000 (29s ago) · restored by start broker 2 at +19.0 s'."""
    if drill is None:
        return Text(" no drill yet", fmt.DIM)
    fault = drill.fault
    out = Text.assemble(
        " ",
        (f"▼ {fault.text}", fmt.BAD),
        (" at ", fmt.DIM),
        fmt.clock_time(fault.ts),
        (f" ({fmt.age(now - fault.ts)} ago)", fmt.DIM),
        (" · ", fmt.DIM),
        no_wrap=True,
        overflow="ellipsis",
    )
    if drill.restore is None:
        out.append(f"not restored yet (t on broker {drill.target} starts it)", fmt.WARN)
    else:
        out.append(f"▼ {drill.restore.text}", fmt.GOOD)
        out.append(f" at {drill.restore.ts - fault.ts:+.1f} s", fmt.DIM)
    return out


class TimelineScreen(Screen[None]):
    """The latest drill: chart, measurements and the events, following the cluster live."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,T", "close", "Back", id="close-timeline"),
        Binding(
            "e",
            "export",
            "Export",
            tooltip="Write the timeline and measurements as JSON and Markdown",
            id="export-timeline",
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._placed = False

    def compose(self) -> ComposeResult:
        yield Static(id="timeline-summary")
        with VerticalScroll(id="timeline-top"):
            yield DrillChart(id="timeline-chart")
            yield DrillMeasurements(id="timeline-measurements")
        with Pane(title="Events", id="timeline-events-pane"):
            yield TimelineTable(id="timeline-events")
        yield KeyBar()

    def on_mount(self) -> None:
        subscribe(self, "events", self.redraw, init=True)
        subscribe(self, "now", self.tick, init=False)
        self.query_one(TimelineTable).focus()

    def tick(self) -> None:
        """The clock moved: the chart's window and the 'ago' grow."""
        view = state(self)
        self.query_one("#timeline-summary", Static).update(
            drill_summary(view.latest_drill(), view.now)
        )
        self.query_one(DrillChart).refresh(layout=True)

    def redraw(self) -> None:
        """Re-derive everything from the app's timeline and actions."""
        view = state(self)
        drill = view.latest_drill()
        self.tick()
        measurements = view.drill_measurements(drill)
        panel = self.query_one(DrillMeasurements)
        panel.display = bool(measurements)
        panel.measurements = measurements
        panel.refresh(layout=True)
        table = self.query_one(TimelineTable)
        table.sync(timeline_rows(view.timeline, drill.fault if drill else None))
        pane = self.query_one("#timeline-events-pane")
        pane.border_title = f"Events [dim]{len(view.timeline)}[/]"
        if not self._placed and table.row_count:
            # Open at the fault, where the story starts; afterwards the cursor is the user's.
            self._placed = True
            at = next(
                (le.seq for le in view.timeline if drill and le.event == drill.fault),
                None,
            )
            row = table.get_row_index(str(at)) if at is not None else table.row_count - 1
            table.move_cursor(row=row, scroll=True)

    def action_close(self) -> None:
        """Back to the main screen."""
        self.dismiss()

    def action_export(self) -> None:
        """Write the timeline as JSON and Markdown."""
        view = state(self)
        drill = view.latest_drill()
        settings, snap = view.settings, view.snapshot
        cluster = ClusterIdentity(
            settings.bootstrap if settings else "unknown",
            snap.cluster_id if snap else None,
            settings.zookeeper if settings else "",
        )
        try:
            json_path, md_path = export_timeline(
                view.timeline_events(),
                view.drill_measurements(drill),
                view.export_dir,
                fault=drill.fault if drill else None,
                cluster=cluster,
            )
        except OSError as exc:
            self.notify(f"export failed: {exc}", severity="error", markup=False)
            return
        self.notify(f"{json_path}\n{md_path}", title="timeline exported", markup=False)
