"""Drills on KRaft: what a fault of controllers is expected to do (from the cluster's own
quorum and fencing settings), the metadata freeze as the drill saw it, and the measurements.

Pure functions over snapshots and events, like measure.py; the runner feeds them.
"""

from __future__ import annotations

from collections.abc import Sequence

from kconsole.drills.measure import Measurement, measure
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
    if fault == "pause":
        how = "paused (SIGSTOP): the others see it only by its silence"
    elif fault == "kill":
        how = "killed (SIGKILL)"
    else:
        how = "stopped (SIGTERM: a leader resigns at once)"
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
    if fault == "stop":
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
    """METADATA_FROZEN when the quorum stops answering with a leader, METADATA_UNFROZEN when a
    leader answers again (KRaft only). A failed read is a failed read: the text says no leader
    ANSWERED, with the reason, and never names the last one seen as leader."""
    if new.mode is not ClusterMode.KRAFT:
        return None

    def frozen(s: ClusterSnapshot | None) -> bool:
        q = s.quorum if s is not None else None
        return q is None or q.stale or q.leader_id is None

    was, now = frozen(old), frozen(new)
    if old is None or was == now:
        return None
    q = new.quorum
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
    froze = first(EventKind.METADATA_FROZEN, fault.ts)
    thawed = (
        first(EventKind.METADATA_UNFROZEN, froze.ts if froze is not None else fault.ts)
        if froze is not None
        else None
    )
    if majority_lost:
        out.append(
            Measurement(
                "fault -> metadata frozen (no quorum leader answers)",
                None if froze is None else froze.ts - fault.ts,
                "at once to a few seconds: the leader is gone or resigns "
                f"(fetch timeout {_s(cfg.fetch_timeout_ms)}) and no majority can elect another; "
                "seen after kconsole's read timed out on every controller that does not answer",
                froze.text if froze is not None else "a quorum leader answered all along",
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
                    None if end is None else end - froze.ts,
                    "from the fault to the restore, plus the election",
                    f"from {froze.ts - fault.ts:+.2f} s to "
                    + (f"{end - fault.ts:+.2f} s" if end is not None else "the end (never thawed)")
                    + " from the fault",
                )
            )
            window = [
                e
                for e in after
                if froze.ts < e.ts < (thawed.ts if thawed is not None else float("inf"))
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
        out += measure(before, events, fault=fault, target=targets[0], restore=restore, config=cfg)
    return out, notes
