"""`kconsole describe`: one snapshot as plain text, for scripts and for reading in a log."""

from __future__ import annotations

import time

from kconsole.models import BrokerState, ClusterMode, ClusterSnapshot, Group, Quorum, Rates
from kconsole.rates import rate_text, topic_loads, trend_text


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*headers).rstrip(), *(fmt.format(*r).rstrip() for r in rows)]


def not_asked(snap: ClusterSnapshot, now: float | None = None) -> str:
    """Why the cluster could not be asked, as one sentence: nothing of it answers (with how
    long since it last did, and how to start it when it is the local one), or it refused the
    login or the TLS handshake; "" when it was asked."""
    if snap.refused:
        return f"the brokers could not be asked: {snap.refused}"
    if not snap.unreached:
        return ""
    now = time.time() if now is None else now
    last = snap.last_answer
    since = "never answered" if last is None else f"last answered {max(0.0, now - last):.1f}s ago"
    hint = f"; {snap.start_hint}" if snap.start_hint else ""
    return f"cannot reach the cluster ({since}): {snap.unreached}{hint}"


def render_text(snap: ClusterSnapshot, now: float | None = None) -> str:
    """Brokers, controller, partitions with flags, groups with lag, and source health."""
    now = time.time() if now is None else now
    out = [f"cluster {snap.cluster_id or '?'}", f"mode {snap.mode.value}"]
    why = not_asked(snap, now)
    if why:
        out.append(why)
    f = snap.features
    if f is not None:
        out.append(
            f"features: metadata.version {f.metadata_version or '?'}"
            + (
                f" (level {f.metadata_version_level})"
                if f.metadata_version_level is not None
                else ""
            )
            + f", kraft.version {f.kraft_version if f.kraft_version is not None else '?'}"
            + "".join(f", {o.name} {o.level}" for o in f.others)
        )
    for s in snap.sources:
        age = s.age(now)
        state = (
            ("ok" + (f", degraded: {s.error}" if s.error else "")) if s.ok else f"STALE ({s.error})"
        )
        out.append(
            f"  {s.name.value:<10} {state}" + (f", data {age:.1f}s old" if age is not None else "")
        )
    c = snap.controller
    out.append("")
    if snap.mode is ClusterMode.KRAFT:
        out += _quorum(snap.quorum, now)
        out += _controllers(snap)
    elif c.id is None and (snap.unreached or snap.never_answered):
        # Nothing answered: who controls the cluster is not known, which is not "no one".
        asked = "the brokers could not be asked" if snap.refused else "cannot reach the cluster"
        out.append(f"controller: unknown ({asked})")
    elif c.id is None:
        out.append("controller: NONE (no active controller)")
    else:
        prev = f", previous {c.previous}" if c.previous is not None else ""
        out.append(
            f"controller: broker {c.id}, epoch {c.epoch if c.epoch is not None else '?'}" + prev
        )
    out.append("")
    kraft = snap.mode is ClusterMode.KRAFT
    out += _table(
        ["broker", "address", "rack", "state", "leads", "replicas", "urp"],
        [
            [
                str(b.id) + (" *" if b.id == c.id else ""),
                b.address,
                b.rack or "-",
                b.state.value + (" fenced" if kraft and b.fenced else ""),
                *(
                    ["?", "?", "?"]  # not asked: no count is known, not 0
                    if b.state is BrokerState.UNKNOWN or snap.never_answered
                    else [
                        str(snap.led_by(b.id)),
                        str(snap.hosted_by(b.id)),
                        str(snap.under_replicated_on(b.id)),
                    ]
                ),
            ]
            for b in snap.brokers
        ],
    )
    out.append("")
    headers = ["topic", "partition", "leader", "replicas", "isr"]
    # As kafka-topics --describe: the replicas of a partition being reassigned are the old and
    # the new ones, with those being added and removed said apart (only while one moves).
    moving = any(p.reassigning for p in snap.partitions)
    r = snap.rates
    sized = r is not None and not r.bytes_note
    out += _table(
        [*headers, *(["adding", "removing"] if moving else []), *(["elr"] if kraft else []),
         *(["records/s"] if r else []), *(["bytes/s"] if sized else []), "flags"],
        [
            [
                p.topic,
                str(p.partition),
                str(p.leader) if p.leader >= 0 else "none",
                ",".join(map(str, p.replicas)),
                ",".join(map(str, p.isr)),
                *([_ids(p.adding), _ids(p.removing)] if moving else []),
                *([_ids(p.elr)] if kraft else []),
                *([rate_text(r.records(p.topic, p.partition), now)] if r else []),
                *([rate_text(r.bytes(p.topic, p.partition), now, "B")] if r and sized else []),
                " ".join(snap.flags(p)),
            ]
            for p in snap.partitions
        ],
    )  # fmt: skip
    if r is not None:
        out += _rates(snap, r, now)
    out.append("")
    typed = any(g.group_type for g in snap.groups)  # ListGroups v5 (Kafka 3.8+) says it
    out += _table(
        ["group", *(["type"] if typed else []), "state", "members", "assignor", "lag"],
        [
            [
                g.group_id,
                *([g.group_type or "?"] if typed else []),
                g.state,
                str(g.members),
                g.assignor or "-",
                _group_lag(g),
            ]
            for g in snap.groups
        ],
    )
    out += [f"  {g.group_id}: {g.lag_note}" for g in snap.groups if g.lag_note]
    if r is not None and snap.groups:
        out += _group_rates(snap, r, now)
    return "\n".join(out)


def _rates(snap: ClusterSnapshot, r: Rates, now: float) -> list[str]:
    """The topics' and the brokers' load over the window."""
    sized = not r.bytes_note
    out = [
        "",
        f"rates over the last {r.window_s:.0f} s"
        + (f" (bytes/s: {r.bytes_note})" if r.bytes_note else ""),
    ]
    loads = topic_loads(snap, internal=True)
    out += _table(
        ["topic", "partitions", "records/s", *(["bytes/s"] if sized else []), "skew", "urp",
         "offline"],
        [
            [
                t.name,
                str(t.partitions),
                rate_text(t.records, now, why=True),
                *([rate_text(t.bytes, now, "B")] if sized else []),
                (f"{t.skew:.1f}x p{t.hottest}" + (" HOT" if t.hot else ""))
                if t.skew is not None else "-",
                str(t.under_replicated),
                str(t.offline),
            ]
            for t in loads
        ],
    )  # fmt: skip
    out.append("")
    out += _table(
        ["broker", "leads", "records/s in"],
        [
            [str(b.id), str(snap.led_by(b.id)), rate_text(snap.broker_records(b.id), now)]
            for b in snap.brokers
        ],
    )
    return out


def _group_rates(snap: ClusterSnapshot, r: Rates, now: float) -> list[str]:
    """Each group's consumption against production, its lag's trend and its status, with the
    reason (judged over the window as Burrow does)."""
    out = [""]
    rows = []
    reasons = []
    for g in snap.groups:
        gr = r.group(g.group_id)
        if gr is None:
            continue
        rows.append(
            [
                g.group_id,
                gr.status.value,
                rate_text(gr.consumed, now),
                rate_text(gr.produced, now),
                trend_text(gr) or "-",
            ]
        )
        reasons.append(f"  {g.group_id}: {gr.status.value}: {gr.reason}")
    out += _table(["group", "status", "consumed/s", "produced/s", "lag trend"], rows)
    return out + reasons


def _group_lag(g: Group) -> str:
    """The total as the console shows it: "+ ?" when it leaves partitions out, "?" when
    nothing is known or nothing committed, never 0 for what was not read."""
    lag = g.lag
    if lag is None:
        if g.lag_na:
            return "n/a"
        return "?" if g.lag_unknown or g.uncommitted else "-"
    return f"{lag}" + (" + ?" if g.lag_left_out() else "")


def _ids(ids: tuple[int, ...] | None) -> str:
    if ids is None:
        return "?"
    return ",".join(map(str, ids)) or "-"


def controllers_summary(snap: ClusterSnapshot) -> str:
    """'3, 1 down, 1 unknown': how many controllers (quorum voters), and how many of them
    are in each state that is not up."""
    counts: dict[str, int] = {}
    for c in snap.controllers:
        if not c.up:
            name = c.state.value if c.state is not None else "unknown"
            counts[name] = counts.get(name, 0) + 1
    return ", ".join([str(len(snap.controllers)), *(f"{n} {s}" for s, n in counts.items())])


def _controllers(snap: ClusterSnapshot) -> list[str]:
    """KRaft: each controller's health, and why when it is not up (or not known)."""
    if not snap.controllers:
        return []
    leader = snap.quorum.leader_id if snap.quorum is not None else None
    rows = [
        [
            str(c.id) + (" *" if c.id == leader else ""),
            c.state.value if c.state is not None else "unknown",
            c.reason or "-",
        ]
        for c in snap.controllers
    ]
    return ["", f"controllers: {controllers_summary(snap)}", *_table(["id", "state", "why"], rows)]


def _quorum(q: Quorum | None, now: float) -> list[str]:
    """The metadata quorum: leader, epoch, high watermark, then every voter and observer."""
    if q is None:
        return ["quorum: not read"]
    age = f", read {max(0.0, now - q.read_at):.1f}s ago" if q.read_at is not None else ""
    stale = f" STALE ({q.error})" if q.error else ""
    if q.leader_id is None:
        head = "quorum: NO LEADER"
    else:
        prev = f", previous {q.previous_leader}" if q.previous_leader is not None else ""
        epoch = q.leader_epoch if q.leader_epoch is not None else "?"
        head = f"quorum: leader controller {q.leader_id}, epoch {epoch}{prev}"
        if q.leader_seen_since is not None:
            led = max(0.0, now - q.leader_seen_since)
            head += (
                f", elected {led:.1f}s ago (seen)"
                if q.leader_seen_elected
                else ", election time not known (Kafka does not report it)"
            )
    hwm = q.high_watermark if q.high_watermark is not None else "?"
    out = [f"{head}, high watermark {hwm}{age}{stale}"]
    lagging = q.lagging_voters()
    rows = []
    for r in (*q.voters, *q.observers):
        if r.id == q.leader_id:
            status = "leader"
        elif r.voter:
            status = "lagging" if r.id in lagging else "follower"
        else:
            status = "observer"
        lag = r.lag(q.high_watermark)
        caught = q.caught_up_age(r)
        rows.append(
            [
                str(r.id),
                status,
                str(r.log_end_offset) if r.log_end_offset is not None else "?",
                str(lag) if lag is not None else "?",
                f"{caught:.1f}s" if caught is not None else "?",
            ]
        )
    out += _table(["node", "status", "log end", "lag", "caught up ago"], rows)
    return out
