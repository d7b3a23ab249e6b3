"""Reassignment and leader-election commands (the Commands methods behind reassign.* and
elect.*), through the same door: read-only first, then the plan is checked against the cluster
(every problem at once, nothing sent), then the typed confirmation, then Kafka."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kconsole import paths
from kconsole.cluster.reassign.outcome import Ongoing
from kconsole.cluster.reassign.record import MoveBook, MoveRecord
from kconsole.commands.door import Confirm, Door
from kconsole.errors import ClusterError, Refused
from kconsole.models import ClusterSnapshot

if TYPE_CHECKING:
    from kconsole.cluster.reassign.client import CancelOutcome, ElectResult, ReassignClient
    from kconsole.reassign.plan import Plan

ClientFactory = Callable[[], "ReassignClient"]


class PlanRejected(Refused):
    """The plan was checked against the cluster and refused; nothing was sent."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(
            f"the plan was refused, nothing was sent ({len(problems)} problem"
            + ("s" if len(problems) != 1 else "")
            + "):\n"
            + "\n".join(f"  - {p}" for p in problems)
        )
        self.problems = problems


def confirmation_word(plan: Plan) -> str:
    """What the user types to confirm `plan`: its topic's name, or the number of partitions
    when it spans several topics."""
    topics = sorted({m.topic for m in plan.moves})
    return topics[0] if len(topics) == 1 else str(len(plan.moves))


def election_confirmation(
    kind: str, partitions: Iterable[tuple[str, int]] | None
) -> tuple[str, str]:
    """(the word to type, the question) for an election: 'unclean', loudly, for an unclean one;
    the topic's name (or 'elect' for several topics or all) for a preferred one."""
    if kind not in ("preferred", "unclean"):
        raise ClusterError(f"election kind must be preferred or unclean, not {kind!r}")
    parts = None if partitions is None else sorted(set(partitions))
    target = _target(parts)
    if kind == "unclean":
        return "unclean", (
            f"UNCLEAN leader election for {target}: a replica that is NOT in sync may become "
            "leader, and acknowledged records it never received are LOST for good.\n"
            "Type 'unclean' to confirm"
        )
    word = parts[0][0] if parts and len({t for t, _ in parts}) == 1 else "elect"
    return word, f"elect the preferred leaders of {target}? Type {word!r} to confirm"


def _target(partitions: Iterable[tuple[str, int]] | None) -> str:
    if partitions is None:
        return "all partitions"
    parts = sorted(set(partitions))
    shown = ", ".join(f"{t}/{p}" for t, p in parts[:6])
    return shown + (f" and {len(parts) - 6} more" if len(parts) > 6 else "")


@dataclass(kw_only=True)
class ReassignCommands(Door):
    """The reassignment and election half of Commands; it alone holds the read-write client."""

    reassigner: ClientFactory | None = None
    """Opens a reassignment / election client (None: no cluster connection to act on)."""
    moves_dir: Path | None = None
    """Where the moves kconsole started are written down (None: <state dir>/reassignments)."""

    def move_book(self) -> MoveBook:
        """The moves kconsole started on this cluster (kconsole.cluster.reassign.record)."""
        cid = None
        if self.cluster_id is not None:
            with contextlib.suppress(Exception):
                cid = self.cluster_id()
        directory = self.moves_dir or paths.state_dir() / "reassignments"
        return MoveBook(directory, cid or self.bootstrap or "unknown")

    def missing_backend(self, name: str) -> str:
        if name.startswith(("reassign.", "elect.")) and self.reassigner is None:
            return "reassigning and electing leaders need a cluster connection"
        return super().missing_backend(name)

    def _client(self) -> ReassignClient:
        assert self.reassigner is not None  # refuse() said so before any caller got here
        return self.reassigner()

    def reassign_execute(
        self,
        plan: Plan,
        snapshot: ClusterSnapshot,
        *,
        confirm: Confirm | None,
        throttle_bps: int | None = None,
        allow_rf_change: bool = False,
        preview: str = "",
    ) -> dict[tuple[str, int], str | None]:
        """Check `plan` against `snapshot`, confirm (the topic name or the partition count),
        then set the throttle (if any) and start the reassignment of the partitions whose
        replicas it changes (the others are left alone: nothing is sent, no throttle set).
        Per partition started: None when Kafka accepted it, else the error. What was started
        is written down (MoveBook) for cancel and for the screen."""
        from kconsole.cluster.reassign.record import records_for
        from kconsole.reassign.plan import validate

        problems = [p.message for p in validate(plan, snapshot, allow_rf_change=allow_rf_change)]
        current = {
            (p.topic, p.partition): p.replicas
            for p in snapshot.partitions
            if any((m.topic, m.partition) == (p.topic, p.partition) for m in plan.moves)
        }
        moves = [
            (m.topic, m.partition, m.replicas)
            for m in plan.moves
            if tuple(m.replicas) != tuple(current.get((m.topic, m.partition), ()))
        ]
        if not problems and not moves:
            problems = ["nothing would move: every partition of the plan is on those replicas"]
        word = confirmation_word(plan) if plan.moves else ""

        def run() -> dict[tuple[str, int], str | None]:
            if problems:
                raise PlanRejected(problems)
            book = self.move_book()
            with self._client() as c:
                _still_running(book, c.ongoing())  # forget the finished ones
                out = c.execute(moves, current, throttle_bps=throttle_bps)
                tp = c.last_throttle_plan
            started = [m for m in moves if out.get((m[0], m[1]), "no answer") is None]
            book.add(
                records_for(
                    started,
                    current,
                    throttle_bps if tp is not None else None,
                    tp.brokers if tp is not None else (),
                    tp.leader if tp is not None else {},
                    tp.follower if tp is not None else {},
                    time.time(),
                )
            )
            return out

        return self._run(
            "reassign.execute",
            _target((m.topic, m.partition) for m in plan.moves),
            {
                "partitions": len(plan.moves),
                "changed": len(moves),
                "throttle_bps": throttle_bps,
                "plan": plan.to_json(),
            },
            run,
            # An invalid plan is refused before anyone is asked to confirm it.
            confirm=confirm if not problems else (lambda _p, _e: True),
            expected=word,
            prompt=(preview + "\n" if preview else "")
            + f"Type {word!r} to start moving these replicas",
            result=_accepted,
        )

    def reassign_cancel(
        self,
        partitions: Iterable[tuple[str, int]] | None,
        *,
        confirm: Confirm | None,
    ) -> CancelOutcome:
        """Cancel running reassignments (None: all), confirmed by typing 'cancel'. Kafka
        returns each partition to its original replicas; the door then puts those kconsole
        started back in their original order and removes the throttles the cancelled moves
        needed, and only those (ReassignClient.cancel)."""
        parts = None if partitions is None else sorted(set(partitions))

        def run() -> CancelOutcome:
            book = self.move_book()
            with self._client() as c:
                records = _still_running(book, c.ongoing())
                out = c.cancel(
                    parts,
                    original={k: r.original for k, r in records.items()},
                    throttled_by={
                        k: (r.throttle_bps, r.throttle_brokers) for k, r in records.items()
                    },
                )
            # Cancelled, or no longer running (finished, or cancelled by someone else).
            book.drop(k for k, err in out.errors.items() if err is None or "NO_REASSIGNMENT" in err)
            return out

        return self._run(
            "reassign.cancel",
            _target(parts),
            {"partitions": None if parts is None else len(parts)},
            run,
            confirm=confirm,
            expected="cancel",
            prompt=f"cancel the reassignment of {_target(parts)}? Type 'cancel' to confirm",
            result=lambda out: {
                **_accepted(out.errors),
                "reordered": len(out.reordered),
                "throttles_removed": len(out.throttles_removed),
                "throttles_kept": len(out.throttles_kept),
            },
        )

    def reassign_unthrottle(self, topics: Iterable[str], brokers: Iterable[int]) -> list[str]:
        """Remove the replication throttles from `topics` and `brokers` (as --verify does), then
        read them back: the throttles that were set and are now gone (ClusterError naming the
        ones that remain; the audit line has both counts)."""
        from kconsole.cluster.reassign.throttles import throttles_of

        ts, bs = sorted(set(topics)), sorted(set(brokers))

        def run() -> list[str]:
            with self._client() as c:
                was = throttles_of(c.throttles(), ts)
                c.remove_throttles(ts, bs)
                remain = c.throttles_left(ts)
            if remain:
                raise ClusterError(f"throttles remain on {', '.join(remain)}")
            return was

        return self._run(
            "reassign.unthrottle",
            f"topics {', '.join(ts) or '-'}, brokers {', '.join(map(str, bs)) or '-'}",
            {"topics": ts, "brokers": bs},
            run,
            result=lambda removed: {"removed": len(removed), "remain": 0},
        )

    def elect(
        self,
        kind: str,
        partitions: Iterable[tuple[str, int]] | None,
        *,
        confirm: Confirm | None,
    ) -> list[ElectResult]:
        """Preferred (or, loudly confirmed, unclean) leader election for `partitions` (None:
        every partition). Per partition: elected, not needed, not possible and why."""
        parts = None if partitions is None else sorted(set(partitions))
        target = _target(parts)
        expected, prompt = election_confirmation(kind, parts)

        def run() -> list[ElectResult]:
            with self._client() as c:
                return c.elect(kind, parts)

        return self._run(
            f"elect.{kind}",
            target,
            {"partitions": None if parts is None else len(parts)},
            run,
            confirm=confirm,
            expected=expected,
            prompt=prompt,
            result=lambda results: {
                outcome: sum(r.outcome == outcome for r in results)
                for outcome in ("elected", "not needed", "not possible")
            },
        )


def _accepted(per_partition: dict[tuple[str, int], str | None]) -> dict[str, int]:
    """What Kafka did with each partition of a reassignment request, counted."""
    refused = sum(err is not None for err in per_partition.values())
    return {"accepted": len(per_partition) - refused, "refused_by_kafka": refused}


def _still_running(book: MoveBook, ongoing: Iterable[Ongoing]) -> dict[tuple[str, int], MoveRecord]:
    """The recorded moves that are still the ones running: the controller lists the partition
    and moves it to the recorded target. The others (finished, cancelled elsewhere, or moved
    again by someone else since) are forgotten: their original order is no longer the one to
    go back to."""
    running = {(o.topic, o.partition): o for o in ongoing}
    records = book.load()
    valid = {
        k: r for k, r in records.items() if k in running and set(running[k].target) == set(r.target)
    }
    book.drop(k for k in records if k not in valid)
    return valid
