"""Where replicas go: Kafka's placement for a new topic, bent to move as little as possible.

`kafka_replicas` is AdminUtils' assignment (rack-unaware, or rack-aware over the
rack-alternated broker list). `balance` starts from the replicas that may stay, takes away
only what balance needs, fills the gaps (Kafka's placement breaking ties) and then orders
each list so that preferred leaders are balanced too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

from kconsole.models import BrokerState, ClusterSnapshot, Partition
from kconsole.reassign.plan import Key, Move, Plan, PlanError, original_replicas, p_key, topic_rf

Slots = list[int | None]


def rack_alternated(brokers: Iterable[int], racks: Mapping[int, str]) -> list[int]:
    """Kafka's getRackAlternatedBrokerList: one broker from each rack (sorted) in turn."""
    by_rack: dict[str, list[int]] = {}
    for b in sorted(brokers):
        by_rack.setdefault(racks[b], []).append(b)
    groups = [by_rack[r] for r in sorted(by_rack)]
    return [g[i] for i in range(max(map(len, groups), default=0)) for g in groups if i < len(g)]


def kafka_replicas(
    index: int,
    rf: int,
    brokers: Sequence[int],
    racks: Mapping[int, str] | None = None,
    *,
    start_index: int = 0,
    replica_shift: int = 0,
) -> list[int]:
    """The replicas Kafka gives partition `index` of a new topic (AdminUtils, fixed start).

    `brokers` is the broker array Kafka walks: sorted ids, or the rack-alternated list when
    `racks` is given (then every broker needs a rack).
    """
    n = len(brokers)
    first = (index + start_index) % n
    shift = replica_shift + index // n  # Kafka bumps the shift each time the index wraps
    if n == 1:
        return [brokers[first]]

    def at(k: int, s: int) -> int:
        return brokers[(first + 1 + (s + k) % (n - 1)) % n]

    if not racks:
        return [brokers[first]] + [at(j, shift) for j in range(min(rf, n) - 1)]
    num_racks = len({racks[b] for b in brokers})
    out = [brokers[first]]
    used_racks = {racks[brokers[first]]}
    k = 0
    while len(out) < min(rf, n):
        b = at(k, shift * num_racks)
        k += 1
        rack_ok = racks[b] not in used_racks or len(used_racks) == num_racks
        if rack_ok and b not in out:
            out.append(b)
            used_racks.add(racks[b])
    return out


class _State:
    """Replica lists being built, with per-broker counts kept up to date."""

    def __init__(self, brokers: Sequence[int], racks: Mapping[int, str] | None) -> None:
        self.racks = racks
        self.order = rack_alternated(brokers, racks) if racks else sorted(brokers)
        self.rank = {b: i for i, b in enumerate(self.order)}
        self.num_racks = len(set(racks.values())) if racks else 0
        self.slots: dict[Key, Slots] = {}
        self.load: Counter[int] = Counter({b: 0 for b in self.order})
        self.leads: Counter[int] = Counter({b: 0 for b in self.order})  # slot 0 holders

    def need(self, rf: int) -> int:
        return min(rf, self.num_racks)

    def spread(self, replicas: Iterable[int | None]) -> int:
        return len({self.racks[b] for b in replicas if b is not None}) if self.racks else 0

    def rack_dup(self, slots: Slots, b: int) -> bool:
        racks = self.racks or {}
        return b in racks and any(o is not None and o != b and racks[o] == racks[b] for o in slots)

    def drop(self, key: Key, b: int) -> None:
        s = self.slots[key]
        self.leads[b] -= s.index(b) == 0
        s[s.index(b)] = None
        self.load[b] -= 1

    def put(self, key: Key, pos: int, b: int) -> None:
        self.slots[key][pos] = b
        self.load[b] += 1
        self.leads[b] += pos == 0


def balance(
    parts: Sequence[tuple[Key, tuple[int, ...], int]],
    brokers: Sequence[int],
    racks: Mapping[int, str] | None = None,
) -> dict[Key, tuple[int, ...]]:
    """New replica lists for `parts` ((key, current replicas, rf)) over `brokers`.

    Replica and preferred-leader counts end within one of each other over `brokers` (racks
    permitting); replicas that may stay stay unless balance needs them elsewhere.
    """
    st = _State(brokers, racks)
    ideal = {key: kafka_replicas(i, rf, st.order, racks) for i, (key, _, rf) in enumerate(parts)}
    current = {key: cur for key, cur, _ in parts}
    rf_of = {key: rf for key, _, rf in parts}
    for key, cur, _rf in parts:  # 1. keep what may stay, where it is
        slots: Slots = []
        for b in cur:
            slots.append(b if b in st.rank and b not in slots else None)
        st.slots[key] = slots
        st.load.update(b for b in slots if b is not None)
    for key, _, rf in parts:  # 2. too many replicas (lower RF), or racks that cannot spread
        s = st.slots[key]
        while sum(b is not None for b in s) > rf or (
            st.racks and st.spread(s) + rf - sum(b is not None for b in s) < st.need(rf)
        ):
            over = sum(b is not None for b in s) > rf
            cands = [b for b in s if b is not None and (over or st.rack_dup(s, b))]
            st.drop(
                key,
                max(
                    cands, key=lambda b: (st.rack_dup(s, b), s.index(b) > 0, st.load[b], s.index(b))
                ),
            )
        while len(s) > rf and None in s:  # drop the last gaps
            del s[len(s) - 1 - s[::-1].index(None)]
        s.extend([None] * (rf - len(s)))
    st.leads.update(s[0] for s in st.slots.values() if s and s[0] is not None)
    total = sum(rf_of.values())
    q, r = divmod(total, len(st.order))  # every broker's share: q, or q + 1 for r of them
    # Who keeps the bigger shares: the fullest brokers, of those the ones leading the fewest.
    by_kept = sorted(st.order, key=lambda b: (-st.load[b], st.leads[b], st.rank[b]))
    lead_max = -(-len(st.slots) // len(st.order))
    cap = {b: q + (1 if i < r else 0) for i, b in enumerate(by_kept)}
    for b in by_kept:  # 3. take from brokers above their share, spreading the gaps
        while st.load[b] > cap[b]:
            too_many_leads = st.leads[b] > lead_max  # then b gives up leading first
            ranked = sorted(
                (k for k, s in st.slots.items() if b in s),
                key=lambda k: (
                    (st.slots[k].index(b) == 0) != too_many_leads,
                    st.slots[k].count(None),
                    not st.rack_dup(st.slots[k], b),
                    b in ideal[k],
                ),
            )
            for k in ranked:
                if st.load[b] <= cap[b] or (st.leads[b] > lead_max) != too_many_leads:
                    break
                if _refillable(st, cap, k, b):
                    st.drop(k, b)
            else:  # no room elsewhere for the rest (racks): moving would only churn
                break
    for key in current:  # 4. fill the gaps: racks first, then shares, then Kafka's choice
        s = st.slots[key]
        for pos in [i for i, b in enumerate(s) if b is None]:
            pick = _fill_key(st, key, pos, ideal[key], divmod(total, len(st.order)))
            st.put(key, pos, min((b for b in st.order if b not in s), key=pick))
    _even_replicas(st, current)
    return _order_leaders(st, current)


def _refillable(st: _State, cap: Mapping[int, int], key: Key, b: int) -> bool:
    """Whether a broker below its share could take `b`'s place in `key`, racks kept."""
    s = st.slots[key]
    rest = [x for x in s if x is not None and x != b]
    need, gaps = st.need(len(s)), s.count(None)
    return any(
        st.load[c] < cap[c] and c not in s and st.spread([*rest, c]) + gaps >= need
        for c in st.order
    )


def _over(count: Mapping[int, int], b: int, share: tuple[int, int]) -> bool:
    """Whether one more on `b` breaks `share` (q each, q + 1 for at most r of them)."""
    q, r = share
    return count[b] > q or (count[b] == q and sum(1 for c in count.values() if c > q) >= r)


def _fill_key(
    st: _State, key: Key, pos: int, ideal: list[int], share: tuple[int, int]
) -> Callable[[int], tuple[bool, bool, bool, int, int, int]]:
    """Sort key for the broker that fills gap `pos` of `key`: best first."""
    racks = st.racks or {}
    used = {racks[b] for b in st.slots[key] if b is not None and b in racks}
    lead_share = divmod(len(st.slots), len(st.order))

    def rank(b: int) -> tuple[bool, bool, bool, int, int, int]:
        rack_taken = b in racks and racks[b] in used and len(used) < st.num_racks
        lead_over = pos == 0 and _over(st.leads, b, lead_share)
        pref = ideal.index(b) if b in ideal else len(ideal)
        return (rack_taken, _over(st.load, b, share), lead_over, pref, st.load[b], st.rank[b])

    return rank


def _even_replicas(st: _State, current: Mapping[Key, tuple[int, ...]]) -> None:
    """Move replicas from the fullest to the emptiest broker until within one (racks kept)."""
    for _ in range(sum(st.load.values()) * len(st.order) + 1):
        moved = False
        for a in sorted(st.order, key=lambda b: (-st.load[b], st.rank[b])):
            for b in sorted(st.order, key=lambda b: (st.load[b], st.rank[b])):
                if st.load[a] - st.load[b] < 2:
                    break
                options = []
                for k, s in st.slots.items():
                    if a in s and b not in s:
                        after = [b if x == a else x for x in s]
                        if st.spread(after) >= min(st.spread(s), st.need(len(s))):
                            options.append((a in current[k], s.index(a) == 0, k))
                if options:
                    k = min(options)[2]
                    pos = st.slots[k].index(a)
                    st.drop(k, a)
                    st.put(k, pos, b)
                    moved = True
                    break
            if moved:
                break
        if not moved:
            return


def _order_leaders(
    st: _State, current: Mapping[Key, tuple[int, ...]]
) -> dict[Key, tuple[int, ...]]:
    """Pick each partition's preferred leader among its replicas so counts end within one.

    Starts from the list's first replica (the current leader when it stays) and shifts
    leadership along the shortest chain of partitions from an overloaded broker; when no
    chain exists, a replica of the overloaded broker moves to one that leads few.
    """
    lists = {k: [b for b in s if b is not None] for k, s in st.slots.items()}
    leader = {k: lst[0] for k, lst in lists.items() if lst}
    leads: Counter[int] = Counter({b: 0 for b in st.order})
    leads.update(leader.values())
    for _ in range(len(leader) * len(st.order) + 1):
        top = max(leads.values(), default=0)
        path = None
        for a in [b for b in st.order if leads[b] == top]:
            path = _chain(a, top - 2, leader, lists, leads)
            if path:
                break
        if not path:
            path = _lead_by_move(st, current, top, leader, lists, leads)
        if not path:
            break
        for k, new in path:
            leads[leader[k]] -= 1
            leads[new] += 1
            leader[k] = new
    out = {}
    for k, lst in lists.items():
        if lst:
            lst.remove(leader[k])
            lst.insert(0, leader[k])
        out[k] = tuple(lst)
    return out


def _lead_by_move(
    st: _State,
    current: Mapping[Key, tuple[int, ...]],
    top: int,
    leader: Mapping[Key, int],
    lists: Mapping[Key, list[int]],
    leads: Mapping[int, int],
) -> list[tuple[Key, int]] | None:
    """Move a replica a -> y of a partition `a` leads (y leading two fewer); when y holds as
    many replicas as a, a follower of y moves back to a elsewhere, so loads stay balanced."""

    def swap(k: Key, old: int, new: int, *, check: bool = True) -> bool:
        after = [new if x == old else x for x in lists[k]]
        if check and st.spread(after) < min(st.spread(lists[k]), st.need(len(after))):
            return False
        pos = st.slots[k].index(old)
        st.drop(k, old)
        st.put(k, pos, new)
        lists[k][lists[k].index(old)] = new
        return True

    for a in [b for b in st.order if leads[b] == top]:
        for y in sorted(st.order, key=lambda b: (leads[b], st.load[b], st.rank[b])):
            if leads[y] > top - 2:
                break
            back = [
                k
                for k, b in sorted(leader.items())
                if b != y and y in lists[k] and a not in lists[k]
            ]
            if st.load[y] >= st.load[a] and not back:
                continue
            led = [k for k, b in leader.items() if b == a and y not in lists[k]]
            for k in sorted(led, key=lambda k: (a in current[k], k)):  # new replicas first
                if not swap(k, a, y):
                    continue
                if st.load[y] - st.load[a] < 2 or any(swap(k2, y, a) for k2 in back):
                    return [(k, y)]
                swap(k, y, a, check=False)  # undo: no way back for the load
    return None


def _chain(
    start: int,
    limit: int,
    leader: Mapping[Key, int],
    lists: Mapping[Key, list[int]],
    leads: Mapping[int, int],
) -> list[tuple[Key, int]] | None:
    """Shortest chain start -> ... -> y (leads[y] <= limit) of leadership handovers."""
    led: dict[int, list[Key]] = {}
    for k, b in leader.items():
        led.setdefault(b, []).append(k)
    parent: dict[int, tuple[int, Key] | None] = {start: None}
    frontier = [start]
    while frontier:
        nxt = []
        for x in frontier:
            for k in sorted(led.get(x, [])):
                for y in lists[k]:
                    if y in parent:
                        continue
                    parent[y] = (x, k)
                    if leads[y] <= limit:
                        path = []
                        node: int = y
                        while (step := parent[node]) is not None:
                            path.append((step[1], node))
                            node = step[0]
                        return path
                    nxt.append(y)
        frontier = nxt
    return None


# -- the two planners ---------------------------------------------------------------------------


def _rack_map(
    snapshot: ClusterSnapshot, brokers: Iterable[int], racks: Mapping[int, str | None] | None
) -> dict[int, str] | None:
    """Racks of `brokers`, or None (rack-unaware) unless every one of them has a rack.

    Kafka refuses rack-aware placement when only some brokers have a rack; kconsole then
    places as if there were no racks.
    """
    known = racks if racks is not None else {b.id: b.rack for b in snapshot.brokers}
    out = {b: known.get(b) for b in brokers}
    if not out or any(v is None for v in out.values()):
        return None
    return {b: v for b, v in out.items() if v is not None}


def _resolve(
    snapshot: ClusterSnapshot,
    targets: Iterable[str | tuple[str, int]],
    index: Mapping[Key, Partition],
) -> list[Key]:
    by_topic: dict[str, list[Key]] = {}
    for k in sorted(index):
        by_topic.setdefault(k[0], []).append(k)
    keys: list[Key] = []
    for t in targets:
        if isinstance(t, str):
            if t not in by_topic:
                raise PlanError(f"topic {t} does not exist")
            keys.extend(by_topic[t])
        else:
            topic, partition = t
            if (topic, partition) not in index:
                if topic not in by_topic:
                    raise PlanError(f"topic {topic} does not exist")
                raise PlanError(f"{topic}/{partition}: partition {partition} does not exist")
            keys.append((topic, partition))
    if not keys:
        raise PlanError("nothing to plan: no topic or partition was given")
    return sorted(set(keys))


def generate(
    snapshot: ClusterSnapshot,
    targets: Iterable[str | tuple[str, int]],
    brokers: Sequence[int],
    *,
    replication_factor: int | None = None,
    racks: Mapping[int, str | None] | None = None,
) -> Plan:
    """A plan putting `targets` (topics, or (topic, partition)) on `brokers`.

    Placement follows Kafka's for a new topic, but a partition keeps the replicas that may
    stay: only what the target brokers, the replication factor, rack spread and balance
    (replica and preferred-leader counts within one over `brokers`) need is moved. Every
    target is in the plan, changed or not.
    """
    index = {p_key(p): p for p in snapshot.partitions}
    target = list(dict.fromkeys(brokers))
    if not target:
        raise PlanError("no target brokers given")
    known = {b.id for b in snapshot.brokers}
    unknown = [b for b in target if b not in known]
    if unknown:
        ids = ", ".join(str(b) for b in sorted(known)) or "none"
        raise PlanError(f"broker {unknown[0]} does not exist (brokers: {ids})")
    keys = _resolve(snapshot, targets, index)
    if replication_factor is not None and replication_factor < 1:
        raise PlanError(f"replication factor must be at least 1, got {replication_factor}")
    rf_of = topic_rf(index[k] for k in keys)
    parts = []
    for key in keys:
        rf = replication_factor if replication_factor is not None else rf_of[key[0]]
        if rf > len(target):
            ids = ", ".join(str(b) for b in target)
            raise PlanError(
                f"{key[0]} needs {rf} brokers for replication factor {rf}, "
                f"but only {len(target)} {'is' if len(target) == 1 else 'are'} given ({ids})"
            )
        parts.append((key, original_replicas(index[key]), rf))
    placed = balance(parts, target, _rack_map(snapshot, target, racks))
    return Plan(tuple(Move(k[0], k[1], placed[k]) for k in keys))


def drain(
    snapshot: ClusterSnapshot,
    broker: int,
    *,
    brokers: Sequence[int] | None = None,
    racks: Mapping[int, str | None] | None = None,
) -> Plan:
    """A plan moving every replica off `broker` (internal topics too), keeping RF.

    Each replacement takes the drained replica's place in the list, so the leadership order
    stays; it is the broker among `brokers` (default: every other broker that is up) on a
    rack the partition lacks, with the fewest replicas (the fewest preferred leaderships
    when it takes the first place).
    """
    hosting = sorted((p for p in snapshot.partitions if broker in original_replicas(p)), key=p_key)
    if snapshot.broker(broker) is None and not hosting:
        ids = ", ".join(str(b.id) for b in snapshot.brokers) or "none"
        raise PlanError(f"broker {broker} does not exist (brokers: {ids})")
    if brokers is None:
        pool = [b.id for b in snapshot.brokers if b.id != broker and b.state is BrokerState.UP]
    else:
        pool = [b for b in dict.fromkeys(brokers) if b != broker]
    rack_of = _rack_map(snapshot, pool, racks) or {}
    load: Counter[int] = Counter({b: 0 for b in pool})
    leads: Counter[int] = Counter({b: 0 for b in pool})
    for p in snapshot.partitions:
        reps = original_replicas(p)
        load.update(b for b in reps if b in load)
        if reps and reps[0] in leads:
            leads[reps[0]] += 1
    moves = []
    for p in hosting:
        reps = original_replicas(p)
        pos = reps.index(broker)
        others = [b for b in pool if b not in reps]
        if not others:
            have = ", ".join(str(b) for b in sorted(pool)) or "none"
            raise PlanError(
                f"cannot drain broker {broker}: {p.key} has replication factor {len(reps)} "
                f"and no other broker can take its replica (available: {have})"
            )
        used = {rack_of[b] for b in reps if b != broker and b in rack_of}

        def rank(b: int, pos: int = pos, used: set[str] = used) -> tuple[bool, int, int, int]:
            return (rack_of.get(b) in used, leads[b] if pos == 0 else 0, load[b], b)

        new = min(others, key=rank)
        load[new] += 1
        if pos == 0:
            leads[new] += 1
        moves.append(Move(p.topic, p.partition, (*reps[:pos], new, *reps[pos + 1 :])))
    return Plan(tuple(moves))
