"""`kconsole describe`: one snapshot as plain text, for scripts and for reading in a log."""

from __future__ import annotations

import time

from kconsole.models import ClusterSnapshot


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*headers).rstrip(), *(fmt.format(*r).rstrip() for r in rows)]


def render_text(snap: ClusterSnapshot, now: float | None = None) -> str:
    """Brokers, controller, partitions with flags, groups with lag, and source health."""
    now = time.time() if now is None else now
    out = [f"cluster {snap.cluster_id or '?'}"]
    for s in snap.sources:
        age = s.age(now)
        state = "ok" if s.ok else f"STALE ({s.error})"
        out.append(
            f"  {s.name.value:<10} {state}" + (f", data {age:.1f}s old" if age is not None else "")
        )
    c = snap.controller
    out.append("")
    if c.id is None:
        out.append("controller: NONE (no active controller)")
    else:
        prev = f", previous {c.previous}" if c.previous is not None else ""
        out.append(
            f"controller: broker {c.id}, epoch {c.epoch if c.epoch is not None else '?'}" + prev
        )
    out.append("")
    out += _table(
        ["broker", "address", "rack", "state", "leads", "replicas", "urp"],
        [
            [
                str(b.id) + (" *" if b.id == c.id else ""),
                b.address,
                b.rack or "-",
                b.state.value,
                str(snap.led_by(b.id)),
                str(snap.hosted_by(b.id)),
                str(snap.under_replicated_on(b.id)),
            ]
            for b in snap.brokers
        ],
    )
    out.append("")
    out += _table(
        ["topic", "partition", "leader", "replicas", "isr", "flags"],
        [
            [
                p.topic,
                str(p.partition),
                str(p.leader) if p.leader >= 0 else "none",
                ",".join(map(str, p.replicas)),
                ",".join(map(str, p.isr)),
                " ".join(snap.flags(p)),
            ]
            for p in snap.partitions
        ],
    )
    out.append("")
    out += _table(
        ["group", "state", "members", "assignor", "lag"],
        [
            [
                g.group_id,
                g.state,
                str(g.members),
                g.assignor or "-",
                str(g.lag) if g.lag is not None else "-",
            ]
            for g in snap.groups
        ],
    )
    return "\n".join(out)
