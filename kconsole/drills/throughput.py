"""Throughput through a fault: when it dipped, how low, how long until it recovered.

Two series are measured. The workload's: its acknowledgements counted in half-second buckets
(the producer's own delivery reports, on its clock). The cluster's: records landed in every
partition between two readings of the log ends (the observer's rates, every groups poll), which
counts every producer, not only the drill's. Each against its own rate before the fault.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from kconsole.drills.measure import Measurement

BUCKET_S = 0.5
DIP_BELOW = 0.8  # a dip: under 80 % of the rate before the fault
BACK_AT = 0.9  # recovered: back to 90 % of it ...
BACK_FOR = 2  # ... for this many readings in a row


@dataclass(frozen=True)
class Dip:
    """A series through a fault (times in seconds from the fault)."""

    before: float  # the rate before the fault (median of its readings), a second
    dipped_at: float | None  # None: it never fell under DIP_BELOW of `before`
    lowest: float | None
    lowest_at: float | None
    recovered_at: float | None  # None: not back by the end of the series
    end: float  # the last reading

    @property
    def lasted(self) -> float | None:
        if self.dipped_at is None or self.recovered_at is None:
            return None
        return self.recovered_at - self.dipped_at


def dip(points: Sequence[tuple[float, float]]) -> Dip | None:
    """The dip in `points` ((seconds from the fault, rate), oldest first): None when there is
    no reading before the fault or none after it, or the rate before it was 0."""
    before = [v for t, v in points if t < 0]
    after = [(t, v) for t, v in points if t >= 0]
    if not before or not after:
        return None
    base = statistics.median(before)
    if base <= 0:
        return None
    end = after[-1][0]
    start = next((i for i, (_, v) in enumerate(after) if v < DIP_BELOW * base), None)
    if start is None:
        return Dip(base, None, None, None, None, end)
    back = None
    for i in range(start + 1, len(after) - BACK_FOR + 1):
        if all(v >= BACK_AT * base for _, v in after[i : i + BACK_FOR]):
            back = i
            break
    span = after[start : back if back is not None else len(after)]
    low_t, low = min(span, key=lambda p: p[1])
    return Dip(
        base,
        after[start][0],
        low,
        low_t,
        after[back][0] if back is not None else None,
        end,
    )


def acked_rates(
    acked_at: Sequence[float], origin: float, until: float
) -> list[tuple[float, float]]:
    """Acknowledgements a second, per BUCKET_S, from the workload's ack times (its clock);
    times in seconds from `origin` (the fault on that clock), bucket starts, up to `until`."""
    if not acked_at:
        return []
    first = min(acked_at)
    counts: dict[int, int] = {}
    for t in acked_at:
        counts[int((t - first) // BUCKET_S)] = counts.get(int((t - first) // BUCKET_S), 0) + 1
    last = int((until - first) // BUCKET_S)
    # The last bucket is cut short by the end of sending: left out, not a dip.
    return [(first + i * BUCKET_S - origin, counts.get(i, 0) / BUCKET_S) for i in range(last)]


def measurements(
    workload: Sequence[tuple[float, float]],
    cluster: Sequence[tuple[float, float]],
    partial: int = 0,
) -> list[Measurement]:
    """The report's throughput rows: the workload's dip and the cluster's (`partial`: how many
    of its readings left out partitions whose log end was not read, their leader down)."""
    out = []
    for name, points, unit in (
        ("workload throughput dip", workload, "acks"),
        ("cluster throughput dip", cluster, "records"),
    ):
        d = dip(points)
        if d is None:
            out.append(
                Measurement(
                    name,
                    None,
                    "",
                    f"not measured: no readings of {unit} a second both before and after the fault",
                )
            )
            continue
        note = describe(d, unit)
        if unit == "records" and partial:
            note += (
                f" ({partial} of {len(points)} readings without the partitions whose log end "
                "could not be read: their leader down or cut off)"
            )
        out.append(Measurement(name, d.lasted, "", note))
    return out


def describe(d: Dip, unit: str) -> str:
    """'2,000 acks/s before; under 80 % from +0.5 s, lowest 0/s at +1.0 s; back to 90 % at
    +6.5 s'."""
    head = f"{d.before:,.0f} {unit}/s before"
    if d.dipped_at is None:
        return f"{head}; never under {DIP_BELOW:.0%} of it (to +{d.end:.1f} s)"
    low = f"lowest {d.lowest:,.0f}/s at +{d.lowest_at:.1f} s" if d.lowest is not None else ""
    back = (
        f"back to {BACK_AT:.0%} at +{d.recovered_at:.1f} s"
        if d.recovered_at is not None
        else f"not back to {BACK_AT:.0%} by +{d.end:.1f} s"
    )
    return f"{head}; under {DIP_BELOW:.0%} from +{d.dipped_at:.1f} s, {low}; {back}"
