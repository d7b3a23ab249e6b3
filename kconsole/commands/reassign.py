"""Reassignment and leader-election commands (the Commands methods behind reassign.* and
elect.*), through the same door: read-only first, then the plan is checked against the cluster
(every problem at once, nothing sent), then the typed confirmation, then Kafka."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kconsole.commands.door import Confirm, Door
from kconsole.errors import ClusterError, Refused
from kconsole.models import ClusterSnapshot

if TYPE_CHECKING:
    from kconsole.cluster.reassign import ElectResult, ReassignClient
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
        then set the throttle (if any) and start the reassignment. Per partition: None when
        Kafka accepted it, else the error."""
        from kconsole.reassign.plan import validate

        problems = [p.message for p in validate(plan, snapshot, allow_rf_change=allow_rf_change)]
        current = {
            (p.topic, p.partition): p.replicas
            for p in snapshot.partitions
            if any((m.topic, m.partition) == (p.topic, p.partition) for m in plan.moves)
        }
        word = confirmation_word(plan) if plan.moves else ""

        def run() -> dict[tuple[str, int], str | None]:
            if problems:
                raise PlanRejected(problems)
            moves = [(m.topic, m.partition, m.replicas) for m in plan.moves]
            with self._client() as c:
                return c.execute(moves, current, throttle_bps=throttle_bps)

        return self._run(
            "reassign.execute",
            _target((m.topic, m.partition) for m in plan.moves),
            {"partitions": len(plan.moves), "throttle_bps": throttle_bps, "plan": plan.to_json()},
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
    ) -> dict[tuple[str, int], str | None]:
        """Cancel running reassignments (None: all): Kafka returns them to their original
        replicas. Confirmed by typing 'cancel'."""
        parts = None if partitions is None else sorted(set(partitions))

        def run() -> dict[tuple[str, int], str | None]:
            with self._client() as c:
                return c.cancel(parts)

        return self._run(
            "reassign.cancel",
            _target(parts),
            {"partitions": None if parts is None else len(parts)},
            run,
            confirm=confirm,
            expected="cancel",
            prompt=f"cancel the reassignment of {_target(parts)}? Type 'cancel' to confirm",
            result=_accepted,
        )

    def reassign_unthrottle(self, topics: Iterable[str], brokers: Iterable[int]) -> list[str]:
        """Remove the replication throttles from `topics` and `brokers` (as --verify does), then
        read them back: the throttles that were set and are now gone (ClusterError naming the
        ones that remain; the audit line has both counts)."""
        from kconsole.cluster.throttles import throttles_of

        ts, bs = sorted(set(topics)), sorted(set(brokers))
        args: dict[str, object] = {"topics": ts, "brokers": bs}
        # read back: every throttle that was set is gone (else ClusterError, logged failed)

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
            args,
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
