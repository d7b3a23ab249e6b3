"""Why acknowledged records were lost: per partition, who led it when the fault began, who
led it after, and the truncation that dropped them when the old leader came back as a follower
(each replica's own log says when it truncated, to which offset, for which leader epoch).
Jepsen's finding, shown on the drill's own records: a leader cut off while producers still
reach it acknowledges writes alone (acks=1), another replica is elected, and the old leader
truncates those writes when it rejoins."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from kconsole.cluster.logs import Truncation
from kconsole.drills.audit import Lost
from kconsole.drills.workload import Acked
from kconsole.models import ClusterSnapshot
from kconsole.timeline import Event, EventKind


def explain_losses(
    topic: str,
    acks: str,
    lost: Sequence[Lost],
    acked: Sequence[Acked],
    before: ClusterSnapshot,
    events: Sequence[Event],
    truncated: Sequence[Truncation],
    *,
    fault_ts: float,
    origin: float,
) -> list[str]:
    """One line per partition that lost acknowledged records, saying why as far as the
    cluster showed it (`origin`: the fault on the workload's clock, `fault_ts` on the wall
    clock)."""
    by_part: dict[int, list[Lost]] = defaultdict(list)
    for rec in lost:
        by_part[rec.partition].append(rec)
    acked_at = {(a.key, a.seq): a.acked_at - origin for a in acked}
    out = []
    for part, recs in sorted(by_part.items()):
        offsets = sorted(r.offset for r in recs)
        times = sorted(t for r in recs if (t := acked_at.get((r.key, r.seq))) is not None)
        line = f"{topic}/{part}: {len(recs)} acknowledged record(s) lost, offsets {offsets[0]}"
        line += f" to {offsets[-1]}" if len(offsets) > 1 else ""
        if times:
            line += f", acknowledged {_rel(times[0])} to {_rel(times[-1])} after the fault"
        p = before.partition(topic, part)
        old = p.leader if p is not None else None
        if old is None or old < 0:
            out.append(line + ". Its leader when the fault began is not known.")
            continue
        line += f". Broker {old} led it when the fault began"
        moved = next(
            (
                e
                for e in events
                # a leader change, or (read as offline first) the partition back online
                if e.kind in (EventKind.LEADER_CHANGED, EventKind.PARTITION_ONLINE)
                and e.topic == topic
                and e.partition == part
                and e.ts >= fault_ts
                and isinstance(e.new, int)
                and e.new >= 0
                and e.new != old
            ),
            None,
        )
        if moved is not None:
            line += (
                f"; broker {moved.new} was elected leader {_rel(moved.ts - fault_ts)} after the "
                f"fault while broker {old}, cut off, went on acknowledging writes alone "
                f"(acks={acks}: the leader's own write is enough)"
            )
        cut = next(
            (
                t
                for t in truncated
                if t.topic == topic and t.partition == part and t.broker == old
                and t.ts >= fault_ts and t.offset <= offsets[-1]
            ),
            None,
        )  # fmt: skip
        if cut is not None:
            line += (
                f"; when broker {old} rejoined as broker {cut.leader}'s follower "
                f"{_rel(cut.ts - fault_ts)} after the fault it truncated its log to offset "
                f"{cut.offset} (the end of leader epoch {cut.leader_epoch}): its log had "
                f"reached at least offset {offsets[-1] + 1}, and everything it had taken from "
                f"offset {cut.offset} on was dropped"
            )
            if offsets[0] < cut.offset:
                line += (
                    f" (the {sum(1 for o in offsets if o < cut.offset)} lost below that offset "
                    "were overwritten otherwise: not explained by this truncation)"
                )
        elif moved is None:
            line += "; no leader change and no truncation of it was seen: the cause is not known"
        else:
            line += "; its truncation was not found in broker logs (not a local cluster?)"
        out.append(line + ".")
    return out


def _rel(seconds: float) -> str:
    return f"{seconds:+.1f} s"
