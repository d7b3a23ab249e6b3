"""Drills on KRaft: what a fault of controllers is expected to do (from the cluster's own
quorum and fencing settings), the metadata freeze as the drill saw it, and the measurements.

Pure functions over snapshots and events, like measure.py; the runner feeds them.
"""

from __future__ import annotations

from collections.abc import Sequence

from kconsole.drills.measure import Measurement, measure
from kconsole.faults import fault_kind
from kconsole.models import BrokerConfig, ClusterMode, ClusterSnapshot
from kconsole.timeline import Event, EventKind


def _s(ms: int | None) -> str:
    return "?" if ms is None else f"{ms / 1000:g} s"


def quorum_timers(cfg: BrokerConfig) -> str:
    """The quorum settings the predictions come from, as read from the cluster."""
    if cfg.election_timeout_ms is None or cfg.fetch_timeout_ms is None:
        return (
            "quorum timers NOT read from the cluster: Kafka's defaults assumed, "
            "controller.quorum.election.timeout.ms = 1000, controller.quorum.fetch.timeout.ms "
            "= 2000"
        )
    return (
        f"controller.quorum.election.timeout.ms = {cfg.election_timeout_ms}, "
        f"controller.quorum.fetch.timeout.ms = {cfg.fetch_timeout_ms}"
    )


def election_bound_s(cfg: BrokerConfig) -> float:
    """About when the followers of a dead quorum leader have elected another: the fetch
    timeout (they notice) plus one election timeout (at most, randomised)."""
    return ((cfg.fetch_timeout_ms or 2000) + (cfg.election_timeout_ms or 1000)) / 1000


def prediction_lines(
    snap: ClusterSnapshot, fault: str, targets: Sequence[int], cfg: BrokerConfig
) -> list[str]:
    """What a fault of controller `targets` does, in words (brokers go through impact.py)."""
    q = snap.quorum
    voters = q.voter_ids if q is not None else ()
    leader = q.leader_id if q is not None else None
    left = [v for v in voters if v not in targets]
    names = ", ".join(f"controller {t}" for t in targets)
    how = fault_kind(fault).done
    out = [f"{names} {how}; {len(left)} of {len(voters)} voters stay ({quorum_timers(cfg)})"]
    if len(left) * 2 <= len(voters):
        out += [
            "the quorum MAJORITY is lost: no quorum leader can be elected, no metadata change "
            "commits (no leader change, no ISR change, no new topic, no fencing or unfencing)",
            "brokers keep serving with the metadata they have: produce to existing partitions "
            "with acks=all keeps working where the ISR is whole and its leader up",
            "after the restore a majority is back: a leader is elected within about "
            f"{election_bound_s(cfg):g} s of the voters answering, and metadata moves again",
        ]
    elif leader in targets:
        out.append(
            f"controller {leader} is the QUORUM LEADER: the other voters elect another within "
            f"~{election_bound_s(cfg):g} s (fetch timeout {_s(cfg.fetch_timeout_ms)} + "
            f"election timeout {_s(cfg.election_timeout_ms)}); metadata changes wait until "
            "then, brokers keep serving"
        )
    else:
        out.append(
            f"not the quorum leader (controller {leader}): no election; the quorum keeps a "
            "majority, nothing clients see changes"
        )
    return out


def broker_fencing_line(fault: str, broker: int, cfg: BrokerConfig) -> str:
    """On KRaft a broker that stops heartbeating is fenced, not expired from ZooKeeper."""
    if fault_kind(fault).graceful:
        return (
            f"stop: broker {broker} shuts down in a controlled way (leadership moves first), "
            "then it is fenced"
        )
    return (
        f"{fault}: no controlled shutdown; the controller fences broker {broker} after "
        f"broker.session.timeout.ms = {cfg.session_timeout_ms} ms without a heartbeat "
        f"(every {cfg.heartbeat_interval_ms} ms), then its partitions' leaders move"
    )


def frozen_event(old: ClusterSnapshot | None, new: ClusterSnapshot) -> Event | None:
    """METADATA_FROZEN when no quorum leader that commits answers, METADATA_UNFROZEN when one
    does again (KRaft only). A failed read is a failed read: the text says no leader ANSWERED,
    with the reason, and never names the last one seen as leader.

    A leader whose high watermark is unknown (-1 in DescribeQuorum) has committed nothing in
    its epoch: no majority of voters has fetched from it. Metadata does not move under it. Seen
    on a stopped majority: the resigning leader hands over to a voter that is itself stopping,
    which votes, goes, and leaves a leader without a majority until it resigns (issue 35).

    A METADATA_FROZEN carries in `old` when a leader that commits last answered (epoch
    seconds): the freeze began after it, however long the read that saw it took (a paused
    controller holds a read for its whole timeout)."""
    if new.mode is not ClusterMode.KRAFT:
        return None

    def frozen(s: ClusterSnapshot | None) -> bool:
        q = s.quorum if s is not None else None
        return q is None or q.stale or q.leader_id is None or q.high_watermark is None

    was, now = frozen(old), frozen(new)
    if old is None or was == now:
        return None
    q = new.quorum
    last_q = old.quorum
    answered = last_q.read_at if last_q is not None and last_q.read_at else old.taken_at
    if now and q is not None and not q.stale and q.leader_id is not None:
        epoch = f", epoch {q.leader_epoch}" if q.leader_epoch is not None else ""
        return Event(
            new.taken_at,
            EventKind.METADATA_FROZEN,
            f"quorum leader controller {q.leader_id}{epoch} has committed nothing (high "
            "watermark unknown: no majority fetches from it): metadata frozen",
            old=answered,
        )
    if now:
        why = (q.error if q is not None and q.error else "no leader") or "no leader"
        # A failed read takes its timeouts: the last answer with a leader says how much
        # earlier the freeze may have begun.
        last = (
            f"; a leader last answered {new.taken_at - q.read_at:.1f} s before"
            if q is not None and q.read_at is not None
            else ""
        )
        return Event(
            new.taken_at,
            EventKind.METADATA_FROZEN,
            f"no quorum leader answers ({why}{last}): metadata frozen",
            old=answered,
        )
    assert q is not None
    epoch = f", epoch {q.leader_epoch}" if q.leader_epoch is not None else ""
    return Event(
        new.taken_at,
        EventKind.METADATA_UNFROZEN,
        f"quorum leader is controller {q.leader_id}{epoch}: metadata moves again",
        q.leader_id,
        new=q.leader_id,
    )


def frozen_spans(events: Sequence[Event]) -> list[tuple[Event, Event | None]]:
    """Each METADATA_FROZEN of `events` (in time order) with the METADATA_UNFROZEN that ended
    it (None: still frozen at the end)."""
    spans: list[tuple[Event, Event | None]] = []
    froze: Event | None = None
    for e in events:
        if e.kind is EventKind.METADATA_FROZEN and froze is None:
            froze = e
        elif e.kind is EventKind.METADATA_UNFROZEN and froze is not None:
            spans.append((froze, e))
            froze = None
    return spans + ([(froze, None)] if froze is not None else [])


def measurements(
    before: ClusterSnapshot,
    events: Sequence[Event],
    *,
    fault: Event,
    targets: Sequence[int],
    restore: Event | None,
    cfg: BrokerConfig,
) -> tuple[list[Measurement], list[str]]:
    """Durations of a drill on controllers, and notes on what committed while frozen."""
    after = sorted((e for e in events if e.ts >= fault.ts), key=lambda e: e.ts)
    q = before.quorum
    voters = q.voter_ids if q is not None else ()
    majority_lost = (len(voters) - len(targets)) * 2 <= len(voters)
    out: list[Measurement] = []
    notes: list[str] = []
    leader = q.leader_id if q is not None else None

    def first(kind: EventKind, since: float, pred: object = None) -> Event | None:
        return next(
            (
                e
                for e in after
                if e.kind is kind and e.ts >= since and (pred is None or pred(e))  # type: ignore[operator]
            ),
            None,
        )

    if not majority_lost and leader in targets:
        new = first(
            EventKind.CONTROLLER_CHANGED,
            fault.ts,
            lambda e: isinstance(e.new, int) and e.new not in targets,
        )
        out.append(
            Measurement(
                "fault -> new quorum leader",
                None if new is None else new.ts - fault.ts,
                f"~{election_bound_s(cfg):g} s: fetch timeout + election timeout "
                f"({quorum_timers(cfg)})",
                new.text if new is not None else "no other controller led while watched",
            )
        )
    spans = frozen_spans(after)
    # The freeze the drill is about is the one the restore ended: a thaw before the restore is
    # not the majority back (a leader named then, as on a stopped majority, committed nothing
    # or had a voter that was still going). Measured from that freeze, the three figures add up:
    # fault -> frozen + frozen for = fault -> restore + restore -> leader again.
    froze, thawed = next(
        (
            (f, t)
            for f, t in spans
            if restore is not None and f.ts <= restore.ts and (t is None or t.ts >= restore.ts)
        ),
        spans[0] if spans else (None, None),
    )
    earlier = [(f, t) for f, t in spans if froze is not None and f.ts < froze.ts]
    # When it began: after the last answer of a leader that commits (carried by the event),
    # not when the read that saw it returned (a paused controller holds it for its timeout).
    began = froze.ts if froze is not None else fault.ts
    if froze is not None and isinstance(froze.old, int | float):
        began = min(froze.ts, max(fault.ts, float(froze.old)))
    seen = (
        f"no quorum leader that commits answered after {began - fault.ts:+.2f} s; seen at "
        f"{froze.ts - fault.ts:+.2f} s: "
        if froze is not None and froze.ts - began >= 0.005
        else ""
    )
    if majority_lost:
        out.append(
            Measurement(
                "fault -> metadata frozen (no quorum leader answers)",
                None if froze is None else began - fault.ts,
                "at once: the leader is stopped, killed or paused, or resigns, and no majority "
                "can elect another (kconsole sees it when its read of the controllers returns: "
                "a paused one holds it for its timeout)",
                (seen + froze.text if froze is not None else "a quorum leader answered all along")
                + "".join(
                    f"; also frozen from {f.ts - fault.ts:+.2f} s to {t.ts - fault.ts:+.2f} s, "
                    f"ended by: {t.text}"
                    for f, t in earlier
                    if t is not None
                ),
            )
        )
        if restore is not None:
            back = first(EventKind.METADATA_UNFROZEN, restore.ts)
            out.append(
                Measurement(
                    "restore -> quorum leader again",
                    None if back is None else back.ts - restore.ts,
                    f"JVM start of the controllers, then an election (~{election_bound_s(cfg):g} s)"
                    if str(restore.new or "") == "start"
                    else f"an election once they answer (~{election_bound_s(cfg):g} s)",
                    back.text if back is not None else "no leader answered while watched",
                )
            )
        if froze is not None:
            end = thawed.ts if thawed is not None else None
            out.append(
                Measurement(
                    "metadata frozen for",
                    None if end is None else end - began,
                    "from the fault to the restore, plus the election",
                    f"from {began - fault.ts:+.2f} s to "
                    + (f"{end - fault.ts:+.2f} s" if end is not None else "the end (never thawed)")
                    + " from the fault",
                )
            )
            window = [
                e
                for e in after
                if froze.ts <= e.ts < (thawed.ts if thawed is not None else float("inf"))
                and e.kind
                in (
                    EventKind.LEADER_CHANGED,
                    EventKind.ISR_SHRANK,
                    EventKind.ISR_EXPANDED,
                    EventKind.BROKER_FENCED,
                    EventKind.BROKER_UNFENCED,
                )
            ]
            notes.append(
                f"while metadata was frozen kconsole saw {len(window)} leader, ISR or fencing "
                "change(s)" + (": " + "; ".join(e.text for e in window[:5]) if window else "")
            )
            named = [
                e
                for e in after
                if e.kind is EventKind.CONTROLLER_CHANGED
                # the snapshot that showed the freeze counts: a leader named in it is one
                # whose high watermark was unknown (it committed nothing)
                and froze.ts <= e.ts < (thawed.ts if thawed is not None else float("inf"))
            ]
            if named:
                notes.append(
                    "quorum leader(s) named while metadata was frozen, committing nothing "
                    "(high watermark unknown: no majority fetched from them): "
                    + "; ".join(f"{e.text} at {e.ts - fault.ts:+.2f} s" for e in named[:5])
                )
    elif restore is not None:
        back = first(EventKind.VOTER_CAUGHT_UP, restore.ts, lambda e: e.broker in targets) or first(
            EventKind.CONTROLLER_CHANGED, restore.ts
        )
        if back is not None:
            out.append(
                Measurement(
                    "restore -> controller back in the quorum",
                    back.ts - restore.ts,
                    "JVM start, then it fetches the log it missed",
                    back.text,
                )
            )
    return out, notes


def measure_drill(
    before: ClusterSnapshot,
    events: Sequence[Event],
    *,
    fault: Event,
    targets: Sequence[int],
    restore: Event | None,
    cfg: BrokerConfig,
    stays: bool = False,
) -> tuple[list[Measurement], list[str]]:
    """The measurements of a drill on any nodes: the quorum's when a voter was hit, a broker's
    when the (first) target is a broker; a combined node gets both."""
    q = before.quorum if before.mode is ClusterMode.KRAFT else None
    out: list[Measurement] = []
    notes: list[str] = []
    voter = q is not None and any(t in q.voter_ids for t in targets)
    if voter:
        out, notes = measurements(
            before, events, fault=fault, targets=targets, restore=restore, cfg=cfg
        )
    if targets and (not voter or before.broker(targets[0]) is not None):
        out += measure(
            before,
            events,
            fault=fault,
            target=targets[0],
            restore=restore,
            config=cfg,
            stays=stays,
        )
    return out, notes
