"""The reassignment screen's parts that need no screen: reading the bar, the table's rows, the
status lines, the verification and the plan files. Nothing here touches
a widget or the cluster."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from rich.console import Group
from rich.text import Text

from kconsole.cluster.reassign.outcome import CancelOutcome
from kconsole.models import ClusterSnapshot
from kconsole.reassign.plan import Move, Plan, PlanDiff, Problem, validate
from kconsole.reassign.progress import PartitionProgress, Progress, human_bytes
from kconsole.ui import format as fmt
from kconsole.ui.rows import Columns, KeyCell

Key = tuple[str, int]

COLUMNS: Columns = (
    ("partition", "partition"),
    ("current", "current"),
    ("proposed", "proposed"),
    ("add", "+add"),
    ("remove", "-remove"),
    ("leader", "leader"),
    ("copies", "copies"),
    ("state", "state"),
)


def up_brokers(snap: ClusterSnapshot, exclude: int | None = None) -> tuple[int, ...]:
    """Every broker that is up, by id (the default targets)."""
    return tuple(sorted(b.id for b in snap.brokers if b.state.value == "up" and b.id != exclude))


def targeted(snap: ClusterSnapshot, targets: Iterable[str | Key], drain: int | None) -> list[Key]:
    """The partitions the bar names (or those on the drained broker), sorted."""
    if drain is not None:
        return sorted((p.topic, p.partition) for p in snap.partitions if drain in p.replicas)
    wanted = list(targets)
    topics = {t for t in wanted if isinstance(t, str)}
    keys = {t for t in wanted if isinstance(t, tuple)}
    return sorted(
        (p.topic, p.partition)
        for p in snap.partitions
        if p.topic in topics or (p.topic, p.partition) in keys
    )


def with_move(plan: Plan, move: Move) -> Plan:
    """`plan` with `move` in place of the partition's own (or added)."""
    others = [m for m in plan.moves if m.key != move.key]
    return Plan(tuple(sorted([*others, move], key=lambda m: m.key)))


def sizes_by_partition(sizes: Mapping[tuple[str, int, int], int]) -> dict[Key, int]:
    """Each partition's size: its largest replica (what a new replica has to copy)."""
    out: dict[Key, int] = {}
    for (topic, part, _broker), size in sizes.items():
        out[(topic, part)] = max(size, out.get((topic, part), 0))
    return out


def default_plan_path(state_dir: Path, now: float) -> Path:
    """<state dir>/plans/reassign-<UTC timestamp>.json."""
    return state_dir / "plans" / f"reassign-{time.strftime('%Y%m%d-%H%M%S', time.gmtime(now))}.json"


def rollback_path(path: Path) -> Path:
    """plan.json -> plan.rollback.json, beside it."""
    return path.with_name(path.stem + ".rollback.json")


def write_plan(plan: Plan, snap: ClusterSnapshot, path: Path) -> Path:
    """Write `plan` to `path` and its rollback (the assignment now) beside it; OSError on
    failure. Returns the rollback's path."""
    known = {(p.topic, p.partition) for p in snap.partitions}
    rollback = Plan.current(snap, [m.key for m in plan.moves if m.key in known])
    back = rollback_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(plan.to_json() + "\n")
    back.write_text(rollback.to_json() + "\n")
    return back


# -- formatting ---------------------------------------------------------------------------------
def n_of(n: int, word: str) -> str:
    """'1 partition', '2 partitions'."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def throttle_text(bps: int) -> str:
    """'50,000,000 B/s (47.7 MiB/s)': exactly what Kafka gets, and its size."""
    return f"{bps:,} B/s ({size(bps)}/s)"


def size(n: float | None) -> str:
    """Bytes in binary units, as the CLI prints them: 512 B, 1.5 KiB, 3.2 GiB."""
    return human_bytes(n)


def running_text(left: int | None, rate: float | None, eta: float | None) -> str:
    """'1.2 MiB left · 200.0 KiB/s · ETA 6s' (unknowns said as such)."""
    parts = [f"{size(left)} left" if left is not None else "size unknown"]
    parts.append(f"{size(rate)}/s" if rate is not None else "measuring rate")
    if eta is not None:
        parts.append(f"ETA {fmt.age(eta)}")
    return " · ".join(parts)


def _ids(values: Iterable[int], sign: str = "") -> Text:
    s = fmt.ids(values)
    return fmt.cell(sign + s if s else fmt.NONE, fmt.DIM if not s else "")


def _state(
    key: Key, unchanged: bool, reassigning: bool, pp: PartitionProgress | None, proposal: bool
) -> Text:
    if pp is not None and not pp.done:
        return fmt.cell("reassigning: " + running_text(pp.left, pp.rate, pp.eta_s), fmt.MOVING)
    if pp is not None:
        if unchanged:
            return fmt.cell("done", fmt.GOOD)
        return fmt.cell("ended, not as proposed (cancelled?)", fmt.WARN)
    if reassigning:
        return fmt.cell("reassigning (reading its progress…)", fmt.MOVING)
    if not proposal:
        return fmt.cell("current", fmt.DIM)
    return fmt.cell("unchanged", fmt.DIM) if unchanged else fmt.cell("will move", fmt.NOTE)


def partition_rows(
    d: PlanDiff, snap: ClusterSnapshot, progress: Progress | None, proposal: bool
) -> dict[str, list[Text]]:
    """One row per partition of the diff, keyed topic/partition. Without a proposal the rows
    show the current assignment only."""
    running = {(p.topic, p.partition): p for p in progress.partitions} if progress else {}
    moving = {(p.topic, p.partition) for p in snap.partitions if p.reassigning}
    rows: dict[str, list[Text]] = {}
    for m in d.moves:
        key = f"{m.topic}/{m.partition}"
        now = str(m.leader_now) if m.leader_now >= 0 else "none"
        if not proposal:
            cells = [_ids(()), _ids(()), _ids(()), fmt.cell(now), fmt.cell(fmt.NONE, fmt.DIM)]
        else:
            changes = m.leader_after != m.leader_now and not m.unchanged
            leader = f"{now} → {m.leader_after}" if changes else now
            copies = size(m.copy_bytes) if m.added else fmt.NONE
            cells = [
                fmt.cell(fmt.ids(m.proposed) or fmt.NONE, "" if m.unchanged else fmt.BOLD),
                _ids(m.added, "+"),
                _ids(m.removed, "-"),
                fmt.cell(leader, fmt.WARN if changes else ""),
                fmt.cell(copies, fmt.DIM if not m.added else ""),
            ]
        state = _state(m.key, m.unchanged, m.key in moving, running.get(m.key), proposal)
        rows[key] = [KeyCell(key, row_key=key), fmt.cell(fmt.ids(m.current)), *cells, state]
    return rows


def totals_text(d: PlanDiff, throttle: int | None) -> Text:
    """'2 of 4 partitions move · 2 replicas added, 2 removed · 1 leader change · …'."""
    text = Text()
    text.append(f"{d.partitions_changed} of {n_of(len(d.moves), 'partition')} move", fmt.BOLD)
    removed = sum(len(m.removed) for m in d.moves)
    text.append(f" · {n_of(d.moved_replicas, 'replica')} added, {removed} removed", fmt.PLAIN)
    text.append(f" · {n_of(d.leader_changes, 'leader change')}", fmt.PLAIN)
    text.append(f" · {size(d.total_copy_bytes)} to copy", fmt.PLAIN)
    if throttle is None:
        text.append(" · no throttle", fmt.DIM)
    else:
        text.append(f" · throttle {throttle_text(throttle)}", fmt.PLAIN)
    return text


def problems_text(problems: Iterable[Problem]) -> Text:
    """Every validation problem, one line each, in red."""
    lines = [f"✗ {p.message}" for p in problems]
    return Text("\n".join(lines), fmt.BAD)


def progress_text(p: Progress) -> Text:
    """'reassigning 2 of 4 partitions: 1.2 MiB left · 200.0 KiB/s · ETA 6s'."""
    if p.done:
        return Text(
            "✓ done: none of these partitions is being reassigned any more · v verifies "
            "and removes the throttles",
            fmt.GOOD,
        )
    running = sum(1 for x in p.partitions if not x.done)
    return Text(
        f"reassigning {running} of {n_of(len(p.partitions), 'partition')}: "
        + running_text(p.left, p.rate, p.eta_s),
        fmt.MOVING,
    )


def status(
    plan: Plan | None,
    snap: ClusterSnapshot,
    d: PlanDiff,
    running: Progress | None,
    poll_error: str,
    throttle: int | None,
    allow_rf_change: bool,
    bad_throttle: str = "",
) -> Group:
    """Below the table: the progress (while following one), else every validation problem of
    the plan against `snap`, else its totals; a throttle field that does not read as one."""
    lines: list[Text] = []
    if bad_throttle:
        lines.append(Text(f"✗ {bad_throttle}", fmt.BAD))
    if running is not None:
        lines.append(progress_text(running))
    if poll_error:
        lines.append(Text(f"progress: {poll_error}", fmt.WARN))
    if plan is None:
        lines.append(
            Text("no proposal yet: g proposes one from the bar, i imports a plan file", fmt.DIM)
        )
    elif running is None or running.done:
        problems = validate(plan, snap, allow_rf_change=allow_rf_change)
        lines.append(problems_text(problems) if problems else totals_text(d, throttle))
    return Group(*lines)


def outcome_text(kind: str, result: Mapping[Key, str | None] | CancelOutcome) -> Text:
    """'started moving 3 of 4 partitions', then each partition Kafka refused and why; a
    cancel also says which partitions got their order back and which throttles went."""
    errors = result.errors if isinstance(result, CancelOutcome) else result
    ok = [k for k, err in errors.items() if err is None]
    failed = sorted((k, err) for k, err in errors.items() if err is not None)
    verb = "started moving" if kind == "execute" else "cancelled the reassignment of"
    lines = [f"{verb} {len(ok)} of {n_of(len(errors), 'partition')}"]
    lines += [f"  {t}/{p}: {err}" for (t, p), err in failed]
    if isinstance(result, CancelOutcome):
        if result.reordered:
            keys = ", ".join(f"{t}/{p}" for t, p in result.reordered)
            lines.append(f"back in their original replica order: {keys}")
        if result.order_unknown:
            lines.append(
                f"{n_of(len(result.order_unknown), 'partition')} not started here: "
                "the order Kafka left is kept"
            )
        lines.append(
            "throttles removed: " + (", ".join(result.throttles_removed) or "none was set")
        )
        lines += [f"throttle kept: {x}" for x in result.throttles_kept]
    return Text("\n".join(lines), fmt.BAD if failed else fmt.GOOD)


def preview_lines(d: PlanDiff, throttle: int | None, limit: int = 8) -> list[str]:
    """What executing moves, for the confirmation (and the audit log's prompt)."""
    changed = d.changed
    removed = sum(len(m.removed) for m in changed)
    lines = [
        f"{n_of(len(changed), 'partition')} to move: +{n_of(d.moved_replicas, 'replica')} added, "
        f"-{removed} removed",
        f"{n_of(d.leader_changes, 'leader change')} · {size(d.total_copy_bytes)} to copy",
        "throttle: "
        + (
            f"{throttle_text(throttle)} per broker"
            if throttle is not None
            else "none (replication runs unthrottled)"
        ),
    ]
    for m in changed[:limit]:
        lines.append(f"  {m.topic}/{m.partition}: {fmt.ids(m.current)} → {fmt.ids(m.proposed)}")
    if len(changed) > limit:
        lines.append(f"  … and {len(changed) - limit} more")
    return lines


# -- verification -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Verified:
    pending: tuple[str, ...]  # one line per partition not complete
    moves: int

    @property
    def complete(self) -> bool:
        return not self.pending


def verify(plan: Plan, snap: ClusterSnapshot) -> Verified:
    """Every move in place (the replicas, in order) and in sync, as --verify checks it."""
    parts = {(p.topic, p.partition): p for p in snap.partitions}
    pending = []
    for m in plan.moves:
        p, name = parts.get(m.key), f"{m.topic}/{m.partition}"
        if p is None:
            pending.append(f"{name}: does not exist")
        elif p.reassigning:
            pending.append(f"{name}: still being reassigned")
        elif p.replicas != m.replicas:
            pending.append(f"{name}: replicas {fmt.ids(p.replicas)}, plan {fmt.ids(m.replicas)}")
        elif not set(m.replicas) <= set(p.isr):
            pending.append(f"{name}: in place, not all in sync (ISR {fmt.ids(p.isr)})")
    return Verified(tuple(pending), len(plan.moves))
