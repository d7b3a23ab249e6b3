"""What a person types to plan a reassignment: topics and partitions, broker ids, a replica list
edited by hand, a throttle and a replication factor. Each parser returns the value or raises a
PlanError saying what is wrong with the text; nothing here knows the cluster.

Numbers are ASCII digits only: Python's int() also reads other scripts' digits ("٣") and
str.isdigit() also passes superscripts ("²") that int() then refuses.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from kconsole.reassign.plan import Key, PlanError

MAX_ID = 2**31 - 1  # broker ids, partitions and replication factors are 32-bit in Kafka
MAX_THROTTLE = 2**63 - 1  # a long, in bytes per second
_DIGITS = re.compile(r"[0-9]+")
_SEPARATORS = re.compile(r"[,\s]+")
_THROTTLE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([kmg]?)(?:i?b)?(?:/s)?", re.IGNORECASE)
_UNITS = {"": 1, "k": 1000, "m": 1000**2, "g": 1000**3}
_THOUSANDS = re.compile(r"[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?\s*[kmgKMG]?(?:i?[bB])?(?:/s)?")


def _number(item: str) -> int | None:
    """`item` as a non-negative 32-bit number, None when it is not one."""
    if not _DIGITS.fullmatch(item) or len(item.lstrip("0")) > 10 or int(item) > MAX_ID:
        return None
    return int(item)


def parse_targets(text: str) -> list[str | Key]:
    """'orders, test-topic/2' -> ['orders', ('test-topic', 2)] (topic names hold no '/')."""
    out: list[str | Key] = []
    for item in _SEPARATORS.split(text.strip()):
        if not item:
            continue
        topic, slash, part = item.rpartition("/")
        number = _number(part)
        if not slash:
            out.append(item)
        elif topic and number is not None:
            out.append((topic, number))
        else:
            raise PlanError(f"{item!r}: write a topic, or topic/partition (e.g. orders/3)")
    return out


def parse_ids(text: str, what: str = "broker ids") -> tuple[int, ...]:
    """'1, 2 3' -> (1, 2, 3); anything but whole numbers is an error naming it."""
    items = [x for x in _SEPARATORS.split(text.strip()) if x]
    ids = [_number(x) for x in items]
    bad = [x for x, i in zip(items, ids, strict=True) if i is None]
    if bad:
        raise PlanError(f"{what} must be whole numbers separated by commas, not {bad[0]!r}")
    return tuple(i for i in ids if i is not None)


def parse_replicas(text: str, brokers: Collection[int] | None = None) -> tuple[int, ...]:
    """A replica list typed by hand: at least one broker, none twice (the first leads), each
    one of `brokers` when given. Every problem is named at once."""
    items = [x for x in _SEPARATORS.split(text.strip()) if x]
    bad = [x for x in items if _number(x) is None]
    replicas = tuple(n for n in (_number(x) for x in items) if n is not None)
    problems = []
    if bad:
        problems.append(f"not broker ids: {', '.join(repr(x) for x in bad)}")
    twice = sorted({b for b in replicas if replicas.count(b) > 1})
    if twice:
        problems.append(f"listed twice: {', '.join(map(str, twice))}")
    if brokers is not None:
        unknown = sorted({b for b in replicas if b not in brokers})
        if unknown:
            known = ", ".join(map(str, sorted(brokers))) or "none"
            problems.append(f"no such broker: {', '.join(map(str, unknown))} (brokers: {known})")
    if problems:
        raise PlanError("; ".join(problems))
    if not replicas:
        raise PlanError("type at least one broker id (the first is the preferred leader)")
    return replicas


def parse_throttle(text: str) -> int | None:
    """Bytes/s: '' -> None, '50M' -> 50,000,000 (k, M, G: powers of 1000)."""
    t = text.strip().replace("_", "")
    if not t:
        return None
    if "," in t:  # a thousands separator, or a mistake ("1,2,4" is not 124 B/s)
        if not _THOUSANDS.fullmatch(t):
            raise PlanError(
                f"throttle must be one number of bytes/s (e.g. 50000000, 50,000,000 or 50M), "
                f"not {text.strip()!r}"
            )
        t = t.replace(",", "")
    m = _THROTTLE.fullmatch(t)
    if m is None:
        raise PlanError(f"throttle must be bytes/s (e.g. 50000000 or 50M), not {text.strip()!r}")
    rate = float(m.group(1)) * _UNITS[m.group(2).lower()]  # inf for hundreds of digits
    if rate > MAX_THROTTLE:
        raise PlanError(f"throttle {text.strip()!r} is too large (at most {MAX_THROTTLE} B/s)")
    return int(rate)


def parse_rf(text: str) -> int | None:
    """'' -> None (keep each topic's), else a replication factor of at least 1."""
    t = text.strip()
    if not t:
        return None
    rf = _number(t)
    if rf is None or rf < 1:
        raise PlanError(f"replication factor must be a whole number of at least 1, not {t!r}")
    return rf
