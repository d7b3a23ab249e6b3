"""What a person types to plan a reassignment: topics and partitions, broker ids, a replica list
edited by hand, a throttle and a replication factor. Each parser returns the value or raises a
PlanError saying what is wrong with the text; nothing here knows the cluster.

Numbers are ASCII digits only: Python's int() also reads other scripts' digits ("٣") and
str.isdigit() also passes superscripts ("²") that int() then refuses.
"""

from __future__ import annotations

import re

from kconsole.reassign.plan import Key, PlanError

MAX_ID = 2**31 - 1  # broker ids, partitions and replication factors are 32-bit in Kafka
MAX_THROTTLE = 2**63 - 1  # a long, in bytes per second
_DIGITS = re.compile(r"[0-9]+")
_SEPARATORS = re.compile(r"[,\s]+")
_THROTTLE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([kmg]?)(?:i?b)?(?:/s)?", re.IGNORECASE)
_UNITS = {"": 1, "k": 1000, "m": 1000**2, "g": 1000**3}


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


def parse_replicas(text: str) -> tuple[int, ...]:
    """A replica list typed by hand: at least one broker, none twice (the first leads)."""
    replicas = parse_ids(text, "replicas")
    if not replicas:
        raise PlanError("type at least one broker id (the first is the preferred leader)")
    twice = sorted({b for b in replicas if replicas.count(b) > 1})
    if twice:
        raise PlanError(f"broker {twice[0]} is listed twice in {text.strip()!r}")
    return replicas


def parse_throttle(text: str) -> int | None:
    """Bytes/s: '' -> None, '50M' -> 50,000,000 (k, M, G: powers of 1000)."""
    t = text.strip().replace("_", "").replace(",", "")
    if not t:
        return None
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
