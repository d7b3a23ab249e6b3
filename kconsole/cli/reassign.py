"""`kconsole reassign ...` and `kconsole elect`: plans in kafka-reassign-partitions JSON, executed,
watched, verified and cancelled through the command layer."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kconsole.cli.common import commands, confirmation, fail
from kconsole.cli.main import main
from kconsole.cluster.reassign.throttles import throttles_of
from kconsole.config import Settings
from kconsole.errors import ClusterError
from kconsole.models import ClusterSnapshot
from kconsole.reassign.progress import human_bytes

if TYPE_CHECKING:
    from kconsole.cluster.reassign.outcome import CancelOutcome
    from kconsole.commands.views import ReassignReader
    from kconsole.reassign.plan import Plan, PlanDiff


def _snapshot(settings: Settings) -> ClusterSnapshot:
    from kconsole.observer import ClusterObserver

    snap = ClusterObserver(settings).read_once()
    if not snap.partitions:
        errors = "; ".join(h.error for h in snap.sources if not h.ok) or "no partitions"
        raise ClusterError(f"cannot read the cluster's assignment: {errors}")
    return snap


def _reader() -> ReassignReader:
    """A read-only reassignment reader on this invocation's cluster (changes: the door)."""
    view = commands(click.get_current_context()).reassign_view()
    assert view is not None  # the CLI's command layer always has a cluster connection
    return view.open()


def _sizes() -> dict[tuple[str, int], int]:
    """Each partition's size (its largest replica), for the data a move copies."""
    try:
        with _reader() as c:
            per_replica = c.log_sizes()
    except ClusterError:
        return {}
    sizes: dict[tuple[str, int], int] = {}
    for (topic, part, _broker), size in per_replica.items():
        sizes[(topic, part)] = max(size, sizes.get((topic, part), 0))
    return sizes


def describe_diff(d: PlanDiff) -> list[str]:
    """Current vs proposed, one line per partition, then the totals."""
    lines = [f"{'partition':<28} {'current':<12} {'proposed':<12} {'+add':<8} {'-remove':<8} "
             f"{'leader':<8} copies"]  # fmt: skip
    for m in d.moves:
        if m.unchanged:
            continue
        leader = f"{m.leader_now}->{m.leader_after}" if m.leader_now != m.leader_after else "="
        lines.append(
            f"{m.topic + '/' + str(m.partition):<28} {','.join(map(str, m.current)):<12} "
            f"{','.join(map(str, m.proposed)):<12} {','.join(map(str, m.added)) or '-':<8} "
            f"{','.join(map(str, m.removed)) or '-':<8} {leader:<8} {human_bytes(m.copy_bytes)}"
        )
    lines.append(
        f"{d.partitions_changed} partition(s) change, {d.moved_replicas} replica(s) move, "
        f"{d.leader_changes} leader change(s), {human_bytes(d.total_copy_bytes)} to copy"
    )
    return lines


def _show_and_write(
    settings: Settings, snap: ClusterSnapshot, plan: Plan, out: Path | None
) -> None:
    """Print current vs proposed, then write the plan and its rollback (or print the plan)."""
    from kconsole.reassign.plan import Plan, diff

    for line in describe_diff(diff(plan, snap, _sizes())):
        click.echo(line, err=out is None)
    _write_plan(plan, Plan.current(snap, [(m.topic, m.partition) for m in plan.moves]), out)


def cancel_lines(out: CancelOutcome) -> list[str]:
    """What a cancel did, for the terminal: per partition, the order, the throttles."""
    lines = [f"  {t}/{p}: {err or 'cancelled'}" for (t, p), err in sorted(out.errors.items())]
    lines += [f"  {t}/{p}: back in its original replica order" for t, p in out.reordered]
    lines += [
        f"  {t}/{p}: order kept as Kafka left it (kconsole did not start this move)"
        for t, p in out.order_unknown
    ]
    lines += [f"  throttle removed: {x}" for x in out.throttles_removed]
    lines += [f"  throttle kept: {x}" for x in out.throttles_kept]
    lines.append(
        f"cancelled: {len(out.cancelled)} partition(s), {len(out.reordered)} reordered, "
        f"{len(out.throttles_removed)} throttle(s) removed"
    )
    return lines


def _write_plan(plan: Plan, rollback: Plan, out: Path | None) -> None:
    if out is None:
        click.echo(plan.to_json())
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(plan.to_json() + "\n")
    back = out.with_name(out.stem + ".rollback.json")
    back.write_text(rollback.to_json() + "\n")
    click.echo(f"plan: {out}\nrollback (the current assignment): {back}")


def _read_plan(path: Path) -> Plan:
    from kconsole.reassign.plan import Plan

    try:
        text = path.read_text()
    except OSError as exc:
        raise ClusterError(f"cannot read the plan {path}: {exc}") from exc
    except UnicodeDecodeError:
        raise ClusterError(f"cannot read the plan {path}: it is not UTF-8 text") from None
    return Plan.from_json(text)


@main.group()
def reassign() -> None:
    """Partition reassignment, interchangeable with kafka-reassign-partitions (same JSON)."""


@reassign.command()
@click.option("--topics", required=True, metavar="T[,T..]", help="Topics to place anew.")
@click.option("--brokers", "broker_list", required=True, metavar="1,2,3", help="Target brokers.")
@click.option("--rf", type=int, default=None, help="A new replication factor (default: keep).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.pass_context
def generate(
    ctx: click.Context, topics: str, broker_list: str, rf: int | None, out: Path | None
) -> None:
    """Propose a placement on BROKERS (Kafka's own, rack-aware), moving as little as possible."""
    from kconsole.reassign.fields import parse_ids
    from kconsole.reassign.placement import generate as propose

    settings: Settings = ctx.obj["settings"]
    try:
        brokers = parse_ids(broker_list, "--brokers")  # a typo fails before the cluster is read
        snap = _snapshot(settings)
        names = [t.strip() for t in topics.split(",") if t.strip()]
        plan = propose(snap, names, brokers, replication_factor=rf)
        _show_and_write(settings, snap, plan, out)
    except ClusterError as exc:
        fail(exc)


@reassign.command()
@click.option("--broker", type=int, required=True, help="The broker to empty.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.pass_context
def drain(ctx: click.Context, broker: int, out: Path | None) -> None:
    """Propose moving every replica off BROKER (keeping each partition's replication factor)."""
    from kconsole.reassign.placement import drain as propose_drain

    settings: Settings = ctx.obj["settings"]
    try:
        snap = _snapshot(settings)
        _show_and_write(settings, snap, propose_drain(snap, broker), out)
    except ClusterError as exc:
        fail(exc)


@reassign.command()
@click.option("--plan", "plan_path", type=click.Path(path_type=Path), required=True)
@click.option(
    "--throttle",
    type=int,
    default=None,
    metavar="BYTES_PER_S",
    help="Replication throttle while the replicas copy (removed by verify).",
)
@click.option("--allow-rf-change", is_flag=True, help="Accept a new replication factor.")
@click.option("--wait", is_flag=True, help="Print progress until done, then verify.")
@click.option("--timeout", type=float, default=3600.0, show_default=True, help="With --wait.")
@click.option("--yes", "assume_yes", is_flag=True, help="Do not ask (needed without a terminal).")
@click.pass_context
def execute(
    ctx: click.Context,
    plan_path: Path,
    throttle: int | None,
    allow_rf_change: bool,
    wait: bool,
    timeout: float,
    assume_yes: bool,
) -> None:
    """Start the reassignment in PLAN (checked first: every problem is listed, nothing sent)."""
    settings: Settings = ctx.obj["settings"]
    door = commands(ctx)
    try:
        door.refuse("reassign.execute", str(plan_path))
        from kconsole.reassign.plan import diff

        if throttle is not None and throttle <= 0:
            raise ClusterError("--throttle must be a positive number of bytes per second")
        plan = _read_plan(plan_path)
        snap = _snapshot(settings)
        preview = "\n".join(describe_diff(diff(plan, snap, _sizes())))
        result = door.reassign_execute(
            plan,
            snap,
            confirm=confirmation(assume_yes),
            throttle_bps=throttle,
            allow_rf_change=allow_rf_change,
            preview=preview,
        )
    except ClusterError as exc:
        fail(exc)
    refused = {tp: err for tp, err in result.items() if err}
    for (topic, part), err in sorted(refused.items()):
        click.echo(f"  {topic}/{part}: {err}", err=True)
    click.echo(
        f"started: {len(result) - len(refused)} partition(s)"
        + (f", refused by Kafka: {len(refused)}" if refused else "")
        + (f", throttle {throttle} B/s" if throttle else "")
    )
    if refused:
        sys.exit(1)
    if wait:
        _watch(settings, plan, timeout, throttle)
        sys.exit(_verify(ctx, plan))


def _watch(settings: Settings, plan: Plan, timeout: float, throttle: int | None = None) -> None:
    from kconsole.reassign.progress import Progress, progress

    watched = [(m.topic, m.partition) for m in plan.moves]
    deadline = time.monotonic() + timeout
    last: Progress | None = None
    last_at = time.monotonic()
    while time.monotonic() < deadline:
        snap = _snapshot(settings)
        with _reader() as c:
            ongoing = [
                (o.topic, o.partition, o.replicas, o.adding, o.removing) for o in c.ongoing()
            ]
            sizes = c.log_sizes()
        now = time.monotonic()
        leaders = {(p.topic, p.partition): p.leader for p in snap.partitions}
        isr = {(p.topic, p.partition): p.isr for p in snap.partitions}
        last = progress(
            ongoing, watched, leaders, isr, sizes, last, now - last_at if last else None, throttle
        )
        last_at = now
        running = [p for p in last.partitions if not p.done]
        eta = "?" if last.eta_s is None else f"{last.eta_s:.0f} s"
        rate = "?" if last.rate is None else f"{human_bytes(int(last.rate))}/s"
        click.echo(
            f"  {len(watched) - len(running)}/{len(watched)} done, {human_bytes(last.left)} left, "
            f"{rate}, eta {eta}"
        )
        if last.done:
            return
        time.sleep(2.0)  # the polling interval of a progress display
    raise SystemExit(f"error: not done after {timeout:.0f} s (kconsole reassign list)")


def _verify(ctx: click.Context, plan: Plan) -> int:
    """0 when every move is in place and in sync and the throttles are gone (removed here)."""
    settings: Settings = ctx.obj["settings"]
    snap = _snapshot(settings)
    parts = {(p.topic, p.partition): p for p in snap.partitions}
    pending = []
    for m in plan.moves:
        p = parts.get((m.topic, m.partition))
        if p is None:
            pending.append(f"{m.topic}/{m.partition}: does not exist")
        elif p.adding or p.removing:
            pending.append(f"{m.topic}/{m.partition}: still being reassigned")
        elif tuple(p.replicas) != tuple(m.replicas):
            pending.append(
                f"{m.topic}/{m.partition}: replicas {list(p.replicas)}, plan {list(m.replicas)}"
            )
        elif not set(m.replicas) <= set(p.isr):
            pending.append(f"{m.topic}/{m.partition}: not all in sync (ISR {list(p.isr)})")
    for line in pending:
        click.echo(f"  {line}")
    if pending:
        click.echo(f"not complete: {len(pending)} of {len(plan.moves)} partition(s)")
        return 1
    topics = {m.topic for m in plan.moves}
    brokers = [b.id for b in snap.brokers]
    with _reader() as c:
        left = c.throttles()
    mine = throttles_of(left, topics)
    if mine:
        try:  # the door reads them back: done means none is left
            removed = commands(ctx).reassign_unthrottle(topics, brokers)
        except ClusterError as exc:
            click.echo(f"complete, but the throttles stay: {exc}")
            return 1
        click.echo(f"throttles removed: {', '.join(removed)}")
    click.echo(f"complete: {len(plan.moves)} partition(s) in place and in sync")
    return 0


@reassign.command()
@click.option("--plan", "plan_path", type=click.Path(path_type=Path), required=True)
@click.pass_context
def verify(ctx: click.Context, plan_path: Path) -> None:
    """Exit 0 only when PLAN is in place, in sync, and its throttles are removed.

    Stricter than Kafka's own --verify, which exits 0 whatever it finds and only prints which
    partitions are not done yet: here a plan not (yet) applied exits 1, so a script can wait
    on it (`until kconsole reassign verify --plan p.json; do sleep 5; done`)."""
    try:
        plan = _read_plan(plan_path)
        sys.exit(_verify(ctx, plan))
    except ClusterError as exc:
        fail(exc)


@reassign.command()
@click.option("--plan", "plan_path", type=click.Path(path_type=Path), default=None)
@click.option("--all", "cancel_all", is_flag=True, help="Every running reassignment.")
@click.option("--yes", "assume_yes", is_flag=True, help="Do not ask (needed without a terminal).")
@click.pass_context
def cancel(ctx: click.Context, plan_path: Path | None, cancel_all: bool, assume_yes: bool) -> None:
    """Cancel running reassignments: the partitions return to their original replicas.

    Past Kafka's own --cancel: a move kconsole started is put back in its original replica
    order (the same set, so nothing is copied, and the preferred leader is the one it had),
    and only the throttles the cancelled moves needed are removed (a throttle another running
    move uses stays). Kafka's --cancel leaves the order the controller chose and clears the
    broker throttles everywhere."""
    try:
        if (plan_path is None) == (not cancel_all):
            raise ClusterError("give --plan FILE or --all")
        parts = None
        if plan_path is not None:
            parts = [(m.topic, m.partition) for m in _read_plan(plan_path).moves]
        result = commands(ctx).reassign_cancel(parts, confirm=confirmation(assume_yes))
    except ClusterError as exc:
        fail(exc)
    for line in cancel_lines(result):
        click.echo(line)


@reassign.command("list")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def list_(ctx: click.Context, as_json: bool) -> None:
    """Running reassignments: replicas, adding, removing."""
    try:
        with _reader() as c:
            ongoing = c.ongoing()
    except ClusterError as exc:
        fail(exc)
    if as_json:
        click.echo(json.dumps([o.__dict__ for o in ongoing], indent=2, default=list))
        return
    if not ongoing:
        click.echo("no reassignment is running")
    for o in ongoing:
        click.echo(
            f"{o.topic}/{o.partition}: replicas {list(o.replicas)}, adding {list(o.adding)}, "
            f"removing {list(o.removing)}"
        )


@main.command()
@click.option("--preferred", "kind", flag_value="preferred", help="The preferred replica leads.")
@click.option(
    "--unclean",
    "kind",
    flag_value="unclean",
    help="Any live replica leads an offline partition: acknowledged data can be LOST.",
)
@click.option("--topic", default=None)
@click.option("--partition", type=int, default=None)
@click.option("--all", "every", is_flag=True, help="Every partition.")
@click.option("--json", "as_json", is_flag=True)
@click.option("--yes", "assume_yes", is_flag=True, help="Do not ask (needed without a terminal).")
@click.pass_context
def elect(
    ctx: click.Context,
    kind: str | None,
    topic: str | None,
    partition: int | None,
    every: bool,
    as_json: bool,
    assume_yes: bool,
) -> None:
    """Leader election: per partition, elected / not needed / not possible and why."""
    settings: Settings = ctx.obj["settings"]
    try:
        if kind is None:
            raise ClusterError("give --preferred or --unclean")
        if every == (topic is not None):
            raise ClusterError("give --topic T [--partition P] or --all")
        parts: list[tuple[str, int]] | None = None
        if topic is not None:
            snap = _snapshot(settings)
            parts = [
                (p.topic, p.partition)
                for p in snap.partitions
                if p.topic == topic and (partition is None or p.partition == partition)
            ]
            if not parts:
                what = f"{topic}/{partition}" if partition is not None else f"topic {topic}"
                raise ClusterError(f"{what} does not exist")
        results = commands(ctx).elect(kind, parts, confirm=confirmation(assume_yes))
    except ClusterError as exc:
        fail(exc)
    rows: list[dict[str, Any]] = [r.__dict__ for r in results]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for r in results:
        click.echo(
            f"  {r.topic}/{r.partition}: {r.outcome}" + (f" ({r.reason})" if r.reason else "")
        )
    counts = {o: sum(1 for r in results if r.outcome == o) for o in ("elected", "not needed",
                                                                      "not possible")}  # fmt: skip
    click.echo(", ".join(f"{v} {k}" for k, v in counts.items()))
