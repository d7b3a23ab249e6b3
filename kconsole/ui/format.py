"""How values look on screen: ages, clock times, id lists and the few colours the console uses.

Colours are few and mean one thing each: red is broken, amber is degraded, green is healthy,
blue is worth knowing, violet is in motion, grey is secondary.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from rich.style import Style
from rich.text import Text

from kconsole.models import BrokerState

BAD = Style(color="#ff6b6b", bold=True)
WARN = Style(color="#f0b429")
GOOD = Style(color="#5fd787")
NOTE = Style(color="#7aa2f7")
MOVING = Style(color="#c792ea")
DIM = Style(color="#8a8f98")
PLAIN = Style()
BOLD = Style(bold=True)
ACTION = Style(color="#f0b429", bold=True)  # something the user did (stop broker 2, …)

BROKER_STATE_STYLE = {
    BrokerState.UP: GOOD,
    BrokerState.DOWN: BAD,
    BrokerState.UNREACHABLE: BAD,
    BrokerState.PAUSED: WARN,
    BrokerState.UNKNOWN: WARN,  # not asked: not known to be down
}

FLAG_STYLE = {
    "offline": BAD,
    "under-min-isr": BAD,
    "under-replicated": WARN,
    "not-preferred": NOTE,
    "reassigning": MOVING,
    "deleting": DIM,
    "creating": DIM,
}

# Weights for "worst first" ordering: one offline partition outranks any number of milder flags.
FLAG_WEIGHT = {
    "offline": 16,
    "under-min-isr": 8,
    "under-replicated": 4,
    "not-preferred": 2,
    "reassigning": 1,
}

SEVERITY_STYLE = {"bad": Style(color="#ff6b6b"), "good": GOOD, "info": NOTE}

# Keys normalised: the Admin API says STABLE / PREPARING_REBALANCE, Kafka's tools say Stable.
GROUP_STATE_STYLE = {
    "STABLE": GOOD,
    "PREPARINGREBALANCE": WARN,
    "COMPLETINGREBALANCE": WARN,
    "ASSIGNING": WARN,
    "RECONCILING": WARN,
    "NOTREADY": WARN,  # a streams group whose topology cannot run yet (KIP-1071)
    "EMPTY": DIM,
    "DEAD": BAD,
    "UNKNOWN": DIM,
}

NONE = "—"


def group_state_style(state: str) -> Style:
    """The colour of a consumer group state, however the source spells it."""
    return GROUP_STATE_STYLE.get(state.replace("_", "").upper(), PLAIN)


def age(seconds: float | None) -> str:
    """A compact age: 0s, 42s, 3m05s, 2h07m, 3d04h."""
    if seconds is None:
        return NONE
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m}m{s:02d}s"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h}h{m:02d}m"
    d, h = divmod(h, 24)
    return f"{d}d{h:02d}h"


def interval(seconds: float) -> str:
    """A refresh interval: 1s, 0.5s, 2m00s."""
    if seconds < 60 and seconds != int(seconds):
        return f"{seconds:g}s"
    return age(seconds)


def clock_time(ts: float) -> str:
    """Local wall-clock time with milliseconds: 14:03:07.250."""
    whole = int(ts)
    ms = round((ts - whole) * 1000)
    if ms == 1000:
        whole, ms = whole + 1, 0
    return time.strftime("%H:%M:%S", time.localtime(whole)) + f".{ms:03d}"


def ids(values: Iterable[int]) -> str:
    """Broker ids as 1,2,3."""
    return ",".join(map(str, values))


def count(n: int | None) -> str:
    """A number with thousands separators, or a dash."""
    return NONE if n is None else f"{n:,}"


def cell(value: object, style: Style | str = "") -> Text:
    """A single-line table cell; plain Text, never parsed as markup (group ids may hold '[')."""
    return Text(str(value), style=style, no_wrap=True, overflow="ellipsis", end="")


def same(a: Text, b: Text) -> bool:
    """Text equality that also compares the base style (Text.__eq__ ignores it)."""
    return a.plain == b.plain and a.style == b.style and a.spans == b.spans
