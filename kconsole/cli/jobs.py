"""`kconsole jobs ...`: PySpark Structured Streaming jobs as background processes."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from kconsole.cli.common import commands, fail
from kconsole.cli.common import follow as follow_file
from kconsole.cli.main import main
from kconsole.cluster import jars
from kconsole.commands.views import JobsView
from kconsole.errors import ClusterError
from kconsole.jobs.progress import JobProgress
from kconsole.jobs.runs import JobRun
from kconsole.jobs.specs import available_jobs


@main.group()
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where runs and checkpoints live (default: the per-user state dir, KCONSOLE_STATE_DIR).",
)
@click.pass_context
def jobs(ctx: click.Context, state_dir: Path | None) -> None:
    """PySpark Structured Streaming jobs (jobs/*.py) as background processes.

    A job started here is detached: it keeps running after this command returns, until
    `kconsole jobs stop RUN_ID` (or `start --attach`, which stops it on Ctrl-C).
    """
    ctx.obj["jobs_state_dir"] = state_dir


def _runs(ctx: click.Context) -> JobsView:
    """The job runs in this invocation's state dir, read-only."""
    view = commands(ctx).jobs_view()
    assert view is not None  # the command layer of the CLI always has a job manager
    return view


@jobs.command("list")
@click.option("-v", "--verbose", is_flag=True, help="Also every option with its default.")
def jobs_list(verbose: bool) -> None:
    """The jobs there are, with their options."""
    try:
        specs = available_jobs()
    except ClusterError as exc:
        fail(exc)
    for spec in specs:
        click.echo(f"{spec.name:<18} {spec.description}")
        if verbose:
            for o in spec.options:
                default = "" if o.default in (None, [], "") else f" (default {o.default})"
                click.echo(f"    --opt {o.name}=...  {o.help}{default}")
    if not verbose:
        click.echo("(kconsole jobs list -v: every option; they are the scripts' own flags)")


@jobs.command("fetch")
def jobs_fetch() -> None:
    """Resolve Spark's Kafka connector for the installed pyspark into the cache (Maven, once)."""
    try:
        found = jars.ensure_spark_kafka_jars()
    except ClusterError as exc:
        fail(exc)
    click.echo(f"Spark Kafka connector ({jars.spark_kafka_coordinate()}): {found[0].parent}")
    for path in found:
        click.echo(f"  {path.name}")


def _parse_job_options(items: tuple[str, ...]) -> dict[str, str | list[str]]:
    out: dict[str, str | list[str]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ClusterError(f"--opt expects KEY=VALUE, got {item!r}")
        key = key.strip()
        if key in out:  # repeated: a list option such as conf or kafka-option
            prev = out[key]
            out[key] = [*(prev if isinstance(prev, list) else [prev]), value]
        else:
            out[key] = value
    return out


@jobs.command("start")
@click.argument("job")
@click.option(
    "--opt",
    "-o",
    "opts",
    multiple=True,
    metavar="KEY=VALUE",
    help="A job option, e.g. -o topic=test-topic -o trigger=1 (see jobs list -v). Repeatable.",
)
@click.option(
    "--detach/--attach",
    default=True,
    help="Detached (default): return at once, the job keeps running. Attached: print its "
    "progress here and stop it on Ctrl-C.",
)
@click.pass_context
def jobs_start(ctx: click.Context, job: str, opts: tuple[str, ...], detach: bool) -> None:
    """Start JOB in the background and print its run id."""
    door = commands(ctx)
    try:
        options = _parse_job_options(opts)
        run = door.start_job(job, options, detached=detach)
    except ClusterError as exc:
        fail(exc)
    click.echo(f"started {run.run_id} (pid {run.pid})")
    click.echo(f"  progress: {run.progress_path}")
    click.echo(f"  log:      {run.log_path}")
    if detach:
        click.echo(f"stop it with: kconsole jobs stop {run.run_id}")
        return
    view = door.jobs_view()
    assert view is not None
    try:
        _follow_run(view, run.run_id)
    except KeyboardInterrupt:
        click.echo("stopping ...")
    finally:
        # Through the door: each stop is a job.stop in the audit log, refused read-only.
        for final in door.stop_attached_jobs():
            if isinstance(final, ClusterError):
                click.echo(f"could not stop: {final.message}")
                continue
            click.echo(_run_summary(final))
            if final.error:
                click.echo(f"  reason: {final.error}")


def _follow_run(manager: JobsView, run_id: str) -> None:
    shown = -1.0
    state = None
    note = None
    while True:
        run = manager.get(run_id)
        if run.state != state:
            state = run.state
            click.echo(f"state: {state.value}")
        if run.checkpoint_note is not None and run.checkpoint_note != note:
            note = run.checkpoint_note
            click.echo(f"checkpoint: {note.message}")
        for p in run.history:
            if p.ts > shown:
                shown = p.ts
                click.echo(_progress_text(p))
        if not run.active:
            return
        time.sleep(0.5)


def _progress_text(p: JobProgress) -> str:
    rate = "-" if p.processed_rows_per_second is None else f"{p.processed_rows_per_second:.0f}"
    took = "-" if p.batch_duration_ms is None else f"{p.batch_duration_ms} ms"
    return f"  batch {p.batch_id}: {p.input_rows} rows in {took}, {rate} rows/s, {_behind_text(p)}"


def _behind_text(p: JobProgress) -> str:
    """The batch's offsets behind (the log end after it - its end), or unknown with why."""
    if p.offsets_behind is None:
        return f"behind unknown ({p.behind_unknown or 'not reported'})"
    return f"behind {p.offsets_behind} after it"


def _run_summary(run: JobRun) -> str:
    return f"{run.run_id}: {run.state.value}" + (
        f" (exit {run.exit_code})" if run.exit_code is not None else ""
    )


@jobs.command("stop")
@click.argument("run_id")
@click.option("--timeout", type=float, default=20.0, show_default=True, help="Then SIGKILL.")
@click.pass_context
def jobs_stop(ctx: click.Context, run_id: str, timeout: float) -> None:
    """Stop a run: SIGTERM (the query stops cleanly), SIGKILL after --timeout."""
    try:
        run = commands(ctx).stop_job(run_id, timeout_s=timeout)
    except ClusterError as exc:
        fail(exc)
    click.echo(_run_summary(run))


@jobs.command("status")
@click.argument("run_id", required=False)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--limit", type=int, default=20, show_default=True, help="The newest N runs.")
@click.pass_context
def jobs_status(ctx: click.Context, run_id: str | None, as_json: bool, limit: int) -> None:
    """Runs: state, pid, the newest batch, rows per second, offsets behind, and why it failed."""
    manager = _runs(ctx)
    try:
        runs = [manager.get(run_id)] if run_id else manager.runs()[-limit:]
    except ClusterError as exc:
        fail(exc)
    if as_json:
        click.echo(json.dumps([_run_json(r) for r in runs], indent=2, default=str))
        return
    if not runs:
        click.echo("no job runs yet (kconsole jobs start JOB)")
        return
    click.echo(
        f"{'run':<40} {'state':<9} {'pid':>7} {'batch':>6} {'rows/s':>8} {'behind':>8}  started"
    )
    for r in runs:
        p = r.latest
        rate = p.processed_rows_per_second if p else None
        click.echo(
            f"{r.run_id:<40} {r.state.value:<9} {r.pid or '-':>7} "
            f"{p.batch_id if p else '-':>6} {'-' if rate is None else f'{rate:.0f}':>8} "
            f"{'-' if r.offsets_behind is None else r.offsets_behind:>8}  "
            f"{time.strftime('%H:%M:%S', time.localtime(r.started_at))}"
        )
        note = r.checkpoint_note
        if note is not None and not (note.status == "refused" and r.error):  # else the reason
            click.echo(f"    checkpoint: {note.message}")
        if r.latest is not None and r.latest.offsets_behind is None:
            click.echo(f"    {_behind_text(r.latest)}")
        if r.error:
            click.echo(f"    reason: {r.error}")
        for w in r.warnings:
            click.echo(f"    warning: {w}")
        if r.finding_counts:
            click.echo(f"    findings: {r.finding_counts}")


def _run_json(run: JobRun) -> dict[str, object]:
    p = run.latest
    return {
        "run_id": run.run_id,
        "job": run.job,
        "state": run.state.value,
        "pid": run.pid,
        "detached": run.detached,
        "started_at": run.started_at,
        "ended_at": run.ended_at,
        "exit_code": run.exit_code,
        "error": run.error,
        "options": run.options,
        "topic": run.topic,
        "group_id": run.group_id,
        # what this run committed to the group (None: nothing), not what the group holds now
        "committed": None
        if run.committed is None
        else {f"{t}/{part}": off for (t, part), off in sorted(run.committed.items())},
        "checkpoint": run.checkpoint,
        "checkpoint_status": None
        if run.checkpoint_note is None
        else {
            "status": run.checkpoint_note.status,
            "message": run.checkpoint_note.message,
            "offsets": {f"{t}/{p}": o for (t, p), o in run.checkpoint_note.offsets.items()},
            "after_batch": run.checkpoint_note.batch,
            "out_of_range": list(run.checkpoint_note.out_of_range),
            "moved_to": run.checkpoint_note.moved_to,
        },
        "output_dir": run.output_dir,
        "log": run.log_path,
        "progress": run.progress_path,
        "warnings": list(run.warnings),
        "findings": run.finding_counts,
        "latest": None
        if p is None
        else {
            "batch_id": p.batch_id,
            "input_rows": p.input_rows,
            "input_rows_per_second": p.input_rows_per_second,
            "processed_rows_per_second": p.processed_rows_per_second,
            "batch_duration_ms": p.batch_duration_ms,
            "offsets_behind": p.offsets_behind,
            "offsets_behind_unknown": p.behind_unknown,
            "offsets_behind_at": p.behind_at,
            "log_end_offsets": {f"{t}/{part}": off for (t, part), off in p.log_end_offsets.items()},
            "offsets_behind_at_plan": p.behind_at_plan,
            "end_offsets": {f"{t}/{part}": off for (t, part), off in p.end_offsets.items()},
        },
    }


@jobs.command("logs")
@click.argument("run_id")
@click.option("-n", "--lines", type=int, default=50, show_default=True)
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines (Ctrl-C ends).")
@click.pass_context
def jobs_logs(ctx: click.Context, run_id: str, lines: int, follow: bool) -> None:
    """Print a run's log (Spark's and Kafka's stderr)."""
    manager = _runs(ctx)
    try:
        run = manager.get(run_id)
    except ClusterError as exc:
        fail(exc)
    for line in manager.log_tail(run.run_id, lines):
        click.echo(line)
    if follow:
        follow_file(run.log_path)
