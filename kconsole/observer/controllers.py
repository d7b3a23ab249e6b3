"""KRaft controllers' health, a pure rule (no I/O): whether each quorum voter is up, from what
the backend knows of its process and from the fetches the quorum leader reports.

A killed voter stays a voter in DescribeQuorum (its log end offset -1 after an election, its
lag growing): the quorum alone never says "down". So, in this order:
  - the backend (local JVMs, docker) says its process is stopped / paused: down / paused;
  - the quorum was not read this time: not known (its last figures are old);
  - the leader: up (it answered as leader);
  - the leader's last fetch from it is older than controller.quorum.fetch.timeout.ms (the
    time after which a follower itself gives up on its leader): unreachable;
  - the leader reports no fetch from it at all (none since this leader was elected), and
    kconsole has watched this leader longer than that timeout: unreachable; watched for
    less (an election a moment ago, or a single reading): not known yet;
  - else up.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from kconsole.cluster.values import ProcState
from kconsole.models import BrokerState, ControllerStatus, Quorum

# Kafka's default controller.quorum.fetch.timeout.ms, when no broker's settings were read.
DEFAULT_FETCH_TIMEOUT_S = 2.0
FETCH_TIMEOUT_SETTING = "controller.quorum.fetch.timeout.ms"


def controller_statuses(
    quorum: Quorum | None,
    ids: Iterable[int],
    processes: Mapping[int, ProcState],
    fetch_timeout_s: float | None,
    now: float,
) -> tuple[ControllerStatus, ...]:
    """The health of each controller in `ids` (see the module docstring); `processes`: the
    backend's process states by node id (empty: no backend), `fetch_timeout_s`: the
    cluster's controller.quorum.fetch.timeout.ms in seconds (None: not read, Kafka's default
    is assumed), `now`: this reading's time (for how long kconsole has seen the leader)."""
    return tuple(
        controller_status(quorum, cid, processes.get(cid), fetch_timeout_s, now)
        for cid in sorted(set(ids))
    )


def controller_status(
    quorum: Quorum | None,
    cid: int,
    process: ProcState | None,
    fetch_timeout_s: float | None,
    now: float,
) -> ControllerStatus:
    """One controller's health (see controller_statuses)."""
    if process is ProcState.STOPPED:
        return ControllerStatus(cid, BrokerState.DOWN, "process not running")
    if process is ProcState.PAUSED:
        return ControllerStatus(cid, BrokerState.PAUSED, "process paused")
    if quorum is None:
        return ControllerStatus(cid, None, "quorum not read yet")
    if quorum.error:
        return ControllerStatus(cid, None, f"quorum not read: {quorum.error}")
    if quorum.leader_id == cid:
        return ControllerStatus(cid, BrokerState.UP)
    r = quorum.replica(cid)
    if r is None or not r.voter:
        return ControllerStatus(cid, None, "not a voter in the quorum's last answer")
    timeout = DEFAULT_FETCH_TIMEOUT_S if fetch_timeout_s is None else fetch_timeout_s
    limit = f"{FETCH_TIMEOUT_SETTING} {timeout * 1000:.0f}" + (
        " assumed" if fetch_timeout_s is None else ""
    )
    age = quorum.fetch_age(r)
    if age is not None:
        if age > timeout:
            why = f"no fetch reached leader {quorum.leader_id} for {age:.1f} s (over {limit})"
            return ControllerStatus(cid, BrokerState.UNREACHABLE, why)
        return ControllerStatus(cid, BrokerState.UP)
    # No fetch since this leader was elected: dead, unless the election was a moment ago.
    seen = quorum.leader_seen_since
    watched = None if seen is None else now - seen
    if watched is not None and watched > timeout:
        why = (
            f"no fetch reached leader {quorum.leader_id} since its election "
            f"(log end offset -1; leader watched {watched:.1f} s, over {limit})"
        )
        return ControllerStatus(cid, BrokerState.UNREACHABLE, why)
    return ControllerStatus(
        cid, None, f"no fetch reported by leader {quorum.leader_id} yet (log end offset -1)"
    )


def with_last_known(
    statuses: tuple[ControllerStatus, ...], memory: dict[int, BrokerState]
) -> tuple[ControllerStatus, ...]:
    """`statuses`, each unknown one with the state it last had (`memory`, by id, which this
    updates with every known one)."""
    out = []
    for c in statuses:
        if c.state is not None:
            memory[c.id] = c.state
            out.append(c)
        else:
            out.append(replace(c, last_known=memory.get(c.id)))
    return tuple(out)
