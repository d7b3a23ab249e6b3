"""Partition reassignment, replication throttles and leader election, through the Admin API.

Plain data in and out: a move is (topic, partition, target replicas). Throttles are set the way
Kafka's own kafka-reassign-partitions tool sets them (ReassignPartitionsCommand:
calculateProposedMoveMap, calculateLeaderThrottles, calculateFollowerThrottles,
modifyReassignmentThrottle), and removed the way its --verify does once a reassignment is done.
Election results are built in kconsole.cluster.reassign.elect (ElectResult is re-exported here).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import kafka.errors as kerrors

# kafka-python: confluent-kafka's elect_leaders raised SystemError on keyword args in kconsole.
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType
from kafka.structs import TopicPartition

from kconsole.cluster.reassign.elect import ELECTION_TYPES, ElectResult, elect_results, error_text
from kconsole.cluster.reassign.outcome import CancelOutcome, Ongoing
from kconsole.cluster.reassign.throttles import throttles_of
from kconsole.cluster.security import denied, kafka_python
from kconsole.cluster.security.clients import kafka_python_config
from kconsole.config import Settings
from kconsole.errors import ClusterError

__all__ = [
    "THROTTLE_RATE_KEYS",
    "THROTTLE_REPLICA_KEYS",
    "CancelOutcome",
    "ElectResult",
    "Ongoing",
    "ReassignClient",
    "ReassignError",
    "ThrottlePlan",
    "throttle_plan",
]

log = logging.getLogger(__name__)

THROTTLE_RATE_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
THROTTLE_REPLICA_KEYS = (
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
)

Move = tuple[str, int, tuple[int, ...]]
TP = tuple[str, int]

# Errors a request can fail with when a broker or the controller does not answer (kafka-python
# raises RuntimeError when it cannot find the active controller).
_IO_ERRORS = (kerrors.KafkaError, OSError, RuntimeError)


class ReassignError(ClusterError):
    """A reassignment, throttle or election request could not be made at all."""


# -- the throttle plan (pure; checked against ReassignPartitionsCommand) --------------------


@dataclass(frozen=True)
class ThrottlePlan:
    brokers: tuple[int, ...]  # get both rate keys
    leader: dict[str, str]  # topic -> leader.replication.throttled.replicas
    follower: dict[str, str]  # topic -> follower.replication.throttled.replicas


def throttle_plan(
    moves: Sequence[Move], current: Mapping[TP, Sequence[int]], ongoing: Sequence[Ongoing] = ()
) -> ThrottlePlan:
    """What kafka-reassign-partitions --execute --throttle sets for `moves`.

    As calculateProposedMoveMap: every partition being reassigned now (`ongoing`) moves from
    its replicas minus those being added (sources) to the added ones (destinations); each new
    move's sources are the ongoing sources if it is already moving, else its current replicas,
    and its destinations the target replicas not among the sources. Leader throttles list
    every source, follower throttles every destination ("partition:broker", per topic, over
    the whole move map); the rate goes on every source and destination broker."""
    sources: dict[TP, set[int]] = {}
    dests: dict[TP, set[int]] = {}
    for o in ongoing:
        tp = (o.topic, o.partition)
        sources[tp] = set(o.replicas) - set(o.adding)
        dests[tp] = set(o.adding)
    for topic, partition, replicas in moves:
        tp = (topic, partition)
        if tp not in sources:
            if not current.get(tp):
                raise ReassignError(f"no current replicas known for {topic}/{partition}")
            sources[tp] = set(current[tp])
        dests[tp] = set(replicas) - sources[tp]
    leader: dict[str, list[tuple[int, int]]] = defaultdict(list)
    follower: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for (topic, partition), srcs in sources.items():
        leader[topic] += [(partition, b) for b in srcs]
        follower[topic] += [(partition, b) for b in dests[(topic, partition)] - srcs]

    def joined(pairs: list[tuple[int, int]]) -> str:
        return ",".join(f"{p}:{b}" for p, b in sorted(set(pairs)))

    brokers: set[int] = set().union(*sources.values(), *dests.values())
    return ThrottlePlan(
        tuple(sorted(brokers)),
        {t: joined(leader[t]) for t in sorted(leader)},
        {t: joined(follower.get(t, [])) for t in sorted(leader)},
    )


# -- the client ------------------------------------------------------------------------------


# The requests behind the admin calls made here (denied.NEEDS says what each needs).
_REQUESTS = {
    "list_partition_reassignments": "ListPartitionReassignments",
    "alter_partition_reassignments": "AlterPartitionReassignments",
    "elect_leaders": "ElectLeaders",
    "describe_configs": "DescribeConfigs",
    "alter_configs": "AlterConfigs",
}


class ReassignClient:
    """Blocking reassignment / throttle / election calls; one kafka-python admin client,
    connected on first use and dropped (to reconnect next time) when a call fails on I/O."""

    def __init__(self, settings: Settings, timeout_s: float = 10.0):
        self.timeout_s = timeout_s
        conf = kafka_python_config(
            settings.kafka_config(), timeout_s, client_id="kconsole-reassign"
        )
        conf["bootstrap_timeout_ms"] = int(timeout_s * 1000)
        conf["reconnect_backoff_max_ms"] = 1000
        self._conf = conf
        self._settings = settings
        self._admin: Any = None
        self.last_unreachable: list[int] = []
        self.last_throttle_plan: ThrottlePlan | None = None  # what the last execute set

    def __enter__(self) -> ReassignClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        admin, self._admin = self._admin, None
        if admin is not None:
            with contextlib.suppress(Exception):
                admin.close()

    def _client(self) -> Any:
        if self._admin is None:
            try:
                self._admin = kafka_python.admin_client(self._conf)
            except _IO_ERRORS as exc:
                raise ReassignError(
                    f"cannot reach the cluster at {self._conf.get('bootstrap_servers')}: {exc}"
                ) from exc
        return self._admin

    def _call(self, what: str, fn: str, *args: Any, **kwargs: Any) -> Any:
        """admin.fn(*args, **kwargs); an I/O failure becomes a ReassignError about `what`."""
        admin = self._client()
        try:
            return getattr(admin, fn)(*args, **kwargs)
        except kerrors.BrokerResponseError as exc:  # it answered, and said no
            raise self._refusal(fn, exc) from exc
        except _IO_ERRORS as exc:
            self.close()
            raise ReassignError(f"{what}: {exc}") from exc

    def _refusal(self, fn: str, err: Any) -> ClusterError:
        """Kafka's no to admin.fn: an ACL refusal says which operation was denied to whom."""
        name = denied.authorization_error(getattr(err, "message", ""))
        if name is not None:
            return denied.denied_to(self._settings, name, _REQUESTS.get(fn, fn))
        return ReassignError(f"Kafka refused {fn}: {error_text(err)}")

    def _brokers(self) -> list[int]:
        desc = self._call("cannot read the brokers", "describe_cluster")
        return sorted(int(b["broker_id"]) for b in desc.get("brokers", ()))

    # -- reassignments ---------------------------------------------------------------------

    def ongoing(self) -> list[Ongoing]:
        """Every reassignment the controller is running, by topic and partition."""
        res = self._call(
            "cannot reach the controller to list reassignments", "list_partition_reassignments"
        )
        return sorted(
            (
                Ongoing(
                    tp.topic,
                    tp.partition,
                    tuple(r["replicas"]),
                    tuple(r["adding_replicas"]),
                    tuple(r["removing_replicas"]),
                )
                for tp, r in res.items()
            ),
            key=lambda o: (o.topic, o.partition),
        )

    def execute(
        self,
        moves: Sequence[Move],
        current: Mapping[TP, tuple[int, ...]],
        throttle_bps: int | None = None,
    ) -> dict[TP, str | None]:
        """Start the reassignment of `moves`; with `throttle_bps`, set the replication
        throttles first (and start nothing if that fails). Per partition: None when Kafka
        accepted it, else its error."""
        targets: dict[TP, list[int]] = {}
        for topic, partition, replicas in moves:
            if not replicas or not all(isinstance(b, int) for b in replicas):
                raise ReassignError(f"{topic}/{partition}: the target replicas must be broker ids")
            targets[(topic, partition)] = list(replicas)
        self.last_throttle_plan = None
        if not targets:
            return {}
        if throttle_bps is not None:
            if throttle_bps < 0:
                raise ReassignError("the throttle must be at least 0 bytes/s")
            plan = throttle_plan(moves, current, self.ongoing())
            self._set_throttles(plan, throttle_bps)
            self._await_broker_rates(plan.brokers, throttle_bps)
            self.last_throttle_plan = plan
        return self._alter({TopicPartition(t, p): r for (t, p), r in targets.items()})

    def replicas(self, partitions: Iterable[TP]) -> dict[TP, tuple[int, ...]]:
        """The replicas of `partitions` now, in their order (from the brokers' metadata)."""
        wanted = sorted(set(partitions))
        topics = sorted({t for t, _ in wanted})
        if not topics:
            return {}
        described = self._call("cannot read the topics", "describe_topics", topics)
        out: dict[TP, tuple[int, ...]] = {}
        for t in described:
            for p in t.get("partitions") or ():
                key = (t["name"], int(p["partition_index"]))
                if key in wanted:
                    out[key] = tuple(int(b) for b in p["replica_nodes"])
        return out

    def cancel(
        self,
        partitions: Iterable[TP] | None = None,
        *,
        original: Mapping[TP, Sequence[int]] | None = None,
        throttled_by: Mapping[TP, tuple[int | None, Sequence[int]]] | None = None,
        settle_s: float = 30.0,
    ) -> CancelOutcome:
        """Cancel reassignments (None: every running one): Kafka puts each partition back on
        its original replicas. Then, past what Kafka's own --cancel does:

        - a partition whose `original` order is known (kconsole started the move) is put back
          in that order, so its preferred leader is the one it had (the set is the same:
          nothing is copied);
        - the throttles the cancelled moves needed are removed, and only those: the cancelled
          partitions' entries in their topics' throttled-replica lists (the entries of a move
          still running stay), and the rate on the brokers the moves involved, unless a
          reassignment still running involves that broker too or (`throttled_by`: the rate
          and brokers kconsole set) the rate is not the one set for the move."""
        before = {(o.topic, o.partition): o for o in self.ongoing()}
        parts = sorted(before) if partitions is None else sorted(set(partitions))
        if not parts:
            return CancelOutcome({})
        errors = self._alter({TopicPartition(t, p): None for t, p in parts})
        done = [k for k, err in errors.items() if err is None]
        after = self._settle(done, settle_s)
        reordered, unknown = self._restore_order(done, original or {}, settle_s)
        removed, kept = self._remove_move_throttles(done, before, after, throttled_by or {})
        return CancelOutcome(errors, reordered, unknown, tuple(removed), tuple(kept))

    def _settle(self, parts: Sequence[TP], timeout_s: float) -> list[Ongoing]:
        """Wait until none of `parts` is being reassigned; the reassignments still running."""
        deadline = time.monotonic() + timeout_s
        while True:
            running = self.ongoing()
            if not {(o.topic, o.partition) for o in running} & set(parts):
                return running
            if time.monotonic() >= deadline:
                busy = sorted({(o.topic, o.partition) for o in running} & set(parts))
                raise ReassignError(
                    "the controller still lists a reassignment of "
                    + ", ".join(f"{t}/{p}" for t, p in busy)
                    + f" {timeout_s:.0f} s after it was cancelled"
                )
            time.sleep(0.2)

    def _restore_order(
        self, parts: Sequence[TP], original: Mapping[TP, Sequence[int]], timeout_s: float
    ) -> tuple[tuple[TP, ...], tuple[TP, ...]]:
        unknown = tuple(k for k in parts if k not in original)
        known = [k for k in parts if k in original]
        now = self.replicas(known)
        reorder = {
            k: list(original[k])
            for k in known
            if k in now and set(now[k]) == set(original[k]) and now[k] != tuple(original[k])
        }
        if not reorder:
            return (), unknown
        errors = self._alter({TopicPartition(t, p): r for (t, p), r in reorder.items()})
        ok = [k for k, err in errors.items() if err is None]
        self._settle(ok, timeout_s)
        return tuple(sorted(ok)), unknown

    def _remove_move_throttles(
        self,
        parts: Sequence[TP],
        before: Mapping[TP, Ongoing],
        still_running: Sequence[Ongoing],
        throttled_by: Mapping[TP, tuple[int | None, Sequence[int]]],
    ) -> tuple[list[str], list[str]]:
        if not parts:
            return [], []
        set_now = self.throttles()
        removed: list[str] = []
        kept: list[str] = []
        resources = []
        by_topic: dict[str, set[int]] = defaultdict(set)
        for t, p in parts:
            if throttled_by.get((t, p), (0, ()))[0] is not None:  # kconsole set none for it
                by_topic[t].add(p)
        for topic, cancelled in sorted(by_topic.items()):
            values = set_now.get(f"topic:{topic}", {})
            ops: dict[str, tuple[Any, str | None]] = {}
            for key in THROTTLE_REPLICA_KEYS:
                value = values.get(key, "")
                if not value:
                    continue
                if value.strip() == "*":
                    kept.append(f"topic:{topic} {key}=* (every replica: set by hand, not a move)")
                    continue
                entries = [e.strip() for e in value.split(",") if e.strip()]
                keep = [e for e in entries if _partition_of(e) not in cancelled]
                if keep == entries:
                    continue
                gone = ",".join(e for e in entries if e not in keep)
                removed.append(f"topic:{topic} {key.split('.')[0]} {gone}")
                ops[key] = (
                    (AlterConfigOp.SET, ",".join(keep)) if keep else (AlterConfigOp.DELETE, None)
                )
            if ops:
                resources.append(ConfigResource(ConfigResourceType.TOPIC, topic, ops))
        busy = {b for o in still_running for b in o.replicas}
        involved: dict[int, set[int | None]] = defaultdict(set)  # broker -> the rates set
        for tp in parts:
            if tp in throttled_by:
                rate, brokers = throttled_by[tp]
                for b in brokers:
                    involved[b].add(rate)
            elif tp in before:
                for b in before[tp].replicas:
                    involved[b].add(None)  # not kconsole's: the rate it had is not known
        for broker in sorted(involved):
            values = set_now.get(f"broker:{broker}", {})
            if not values:
                continue
            if broker in busy:
                kept.append(f"broker:{broker} (a reassignment still running uses it)")
                continue
            ours = {str(r) for r in involved[broker] if r is not None}
            if ours and not set(values.values()) <= ours:
                kept.append(
                    f"broker:{broker} ({', '.join(sorted(set(values.values())))} B/s, not the "
                    f"{', '.join(sorted(ours))} B/s the move set)"
                )
                continue
            delete = {k: (AlterConfigOp.DELETE, None) for k in THROTTLE_RATE_KEYS}
            resources.append(ConfigResource(ConfigResourceType.BROKER, str(broker), delete))
            removed.append(f"broker:{broker}")
        self._alter_configs("remove the cancelled moves' throttles", resources)
        return removed, kept

    def _alter(self, request: dict[TopicPartition, list[int] | None]) -> dict[TP, str | None]:
        res = self._call(
            "cannot reach the controller to alter reassignments",
            "alter_partition_reassignments",
            request,
        )
        out: dict[TP, str | None] = {}
        for tp in request:
            if tp not in res:
                out[(tp.topic, tp.partition)] = "NO_RESPONSE: the controller did not answer for it"
            else:
                err = res[tp]
                out[(tp.topic, tp.partition)] = None if err is None else error_text(err)
        return out

    # -- log sizes -------------------------------------------------------------------------

    def log_sizes(self) -> dict[tuple[str, int, int], int]:
        """(topic, partition, broker) -> bytes on disk, from DescribeLogDirs on every broker.
        Brokers that do not answer are skipped and listed in `last_unreachable`; a replica
        being moved between log dirs (future replica) is not counted twice."""
        topics = self._call("cannot read the topics", "describe_topics")
        wanted = {
            t["name"]: [p["partition_index"] for p in t.get("partitions", ())]
            for t in topics
            if t.get("partitions")
        }
        out: dict[tuple[str, int, int], int] = {}
        unreachable: list[int] = []
        for broker in self._brokers():
            try:
                answer = self._client().describe_log_dirs(topic_partitions=wanted, brokers=[broker])
            except _IO_ERRORS as exc:
                log.info("describe_log_dirs on broker %s failed: %s", broker, exc)
                unreachable.append(broker)
                continue
            for entry in answer:
                for ld in entry["log_dirs"]:
                    if ld.get("error_code", 0):
                        continue  # an offline log dir
                    for t in ld["topics"]:
                        for p in t["partitions"]:
                            if not p.get("is_future_key"):
                                out[(t["name"], p["partition_index"], broker)] = p["partition_size"]
        self.last_unreachable = unreachable
        return out

    # -- throttles -------------------------------------------------------------------------

    def _set_throttles(self, plan: ThrottlePlan, rate: int) -> None:
        topic_res = []
        for topic in plan.leader:
            configs = {THROTTLE_REPLICA_KEYS[0]: (AlterConfigOp.SET, plan.leader[topic])}
            configs[THROTTLE_REPLICA_KEYS[1]] = (AlterConfigOp.SET, plan.follower[topic])
            topic_res.append(ConfigResource(ConfigResourceType.TOPIC, topic, configs))
        rates = {k: (AlterConfigOp.SET, str(rate)) for k in THROTTLE_RATE_KEYS}
        broker_res = [
            ConfigResource(ConfigResourceType.BROKER, str(b), dict(rates)) for b in plan.brokers
        ]
        self._alter_configs("set the replication throttles", topic_res + broker_res)

    def _await_broker_rates(
        self, brokers: Sequence[int], rate: int, interval_s: float = 0.25
    ) -> None:
        """Read the brokers' rate keys back until every one of `brokers` shows `rate`. In
        ZooKeeper mode a broker applies a dynamic config change when ZooKeeper notifies it, so
        a move started at once could run unthrottled for a moment (and a read right after the
        change can miss it: seen on broker 3 with one core busy). Raises, starting nothing,
        if a broker has not applied it within the client's timeout."""
        want = dict.fromkeys(THROTTLE_RATE_KEYS, str(rate))
        deadline = time.monotonic() + self.timeout_s
        while True:
            now = self.throttles()
            behind = [b for b in brokers if now.get(f"broker:{b}") != want]
            if not behind:
                return
            if time.monotonic() >= deadline:
                names = ", ".join(str(b) for b in behind)
                raise ReassignError(
                    f"the throttle of {rate} B/s is written but broker(s) {names} had not applied "
                    f"it after {self.timeout_s:g} s; no reassignment was started (the throttle "
                    "stays written: run the execute again to start it)"
                )
            time.sleep(interval_s)

    def remove_throttles(self, topics: Iterable[str], brokers: Iterable[int]) -> None:
        """Delete the four throttle keys from `topics` and `brokers` (as --verify does once
        the reassignment is complete)."""
        delete = {k: (AlterConfigOp.DELETE, None) for k in THROTTLE_REPLICA_KEYS}
        resources = [
            ConfigResource(ConfigResourceType.TOPIC, t, dict(delete)) for t in sorted(set(topics))
        ]
        delete_rates = {k: (AlterConfigOp.DELETE, None) for k in THROTTLE_RATE_KEYS}
        resources += [
            ConfigResource(ConfigResourceType.BROKER, str(b), dict(delete_rates))
            for b in sorted(set(brokers))
        ]
        self._alter_configs("remove the replication throttles", resources)

    def _alter_configs(self, what: str, resources: list[Any]) -> None:
        if not resources:
            return
        res = self._call(
            f"cannot {what}",
            "alter_configs",
            resources,
            raise_on_unknown=False,
            incremental=True,
        )
        failed = [
            f"{kind} {name}: {result}"
            for kind, by_name in sorted(res.items())
            for name, result in sorted(by_name.items())
            if result != "OK"
        ]
        if failed:
            raise ReassignError(f"could not {what}: " + "; ".join(failed))

    def throttles_left(
        self, topics: Iterable[str], timeout_s: float = 15.0, interval_s: float = 0.5
    ) -> list[str]:
        """After remove_throttles: the keys ("broker:N", "topic:T") of every broker and of
        `topics` still throttled. In ZooKeeper mode a broker applies a dynamic config change
        when ZooKeeper notifies it, so a read right after the removal can still show the old
        value: read again until nothing is left or `timeout_s` has passed."""
        topics = list(topics)
        deadline = time.monotonic() + timeout_s
        while True:
            mine = throttles_of(self.throttles(), topics)
            if not mine or time.monotonic() >= deadline:
                return mine
            time.sleep(interval_s)

    def throttles(self) -> dict[str, dict[str, str]]:
        """The throttles set now: {"broker:1": {rate keys}, "topic:T": {replica keys}}, only
        brokers and topics with a non-empty value. Brokers that do not answer are skipped (and
        listed in `last_unreachable`)."""
        out: dict[str, dict[str, str]] = {}
        unreachable: list[int] = []
        for broker in self._brokers():
            res = ConfigResource(ConfigResourceType.BROKER, str(broker), list(THROTTLE_RATE_KEYS))
            try:
                answer = self._client().describe_configs([res])
            except _IO_ERRORS as exc:
                log.info("describe_configs on broker %s failed: %s", broker, exc)
                unreachable.append(broker)
                continue
            values = _values(answer.get("broker", {}).get(str(broker), {}), THROTTLE_RATE_KEYS)
            if values:
                out[f"broker:{broker}"] = values
        self.last_unreachable = unreachable
        topics = sorted(self._call("cannot read the topics", "list_topics"))
        if topics:
            resources = [
                ConfigResource(ConfigResourceType.TOPIC, t, list(THROTTLE_REPLICA_KEYS))
                for t in topics
            ]
            answer = self._call("cannot read the topic configs", "describe_configs", resources)
            for topic, configs in sorted(answer.get("topic", {}).items()):
                values = _values(configs, THROTTLE_REPLICA_KEYS)
                if values:
                    out[f"topic:{topic}"] = values
        return out

    # -- leader election -------------------------------------------------------------------

    def elect(self, kind: str, partitions: Iterable[TP] | None) -> list[ElectResult]:
        """Preferred or unclean leader election for `partitions` (None: every partition).
        Per partition: elected, not needed, or not possible and why."""
        if kind not in ELECTION_TYPES:
            raise ReassignError(f"election kind must be preferred or unclean, not {kind!r}")
        wanted: dict[str, list[int]] | None = None
        if partitions is not None:
            wanted = {}
            for topic, partition in sorted(set(partitions)):
                wanted.setdefault(topic, []).append(partition)
            if not wanted:
                return []
        response = self._call(
            "cannot reach the controller to elect leaders",
            "elect_leaders",
            ELECTION_TYPES[kind],
            wanted,
            raise_errors=False,
        )
        code, partition_codes = kafka_python.election_codes(response)
        top = kerrors.for_code(code)
        if top is not kerrors.NoError:
            if denied.authorization_error(top.message) is not None:
                raise self._refusal("elect_leaders", top)
            raise ReassignError(f"the leader election was refused: {error_text(top)}")
        return elect_results(kind, partition_codes)


def _partition_of(entry: str) -> int | None:
    """The partition of a throttled-replica entry "partition:broker"."""
    head = entry.split(":", 1)[0].strip()
    return int(head) if head.isdigit() else None


def _values(configs: Mapping[str, Any], keys: Iterable[str]) -> dict[str, str]:
    """The non-empty values of `keys` in one resource's describe_configs answer."""
    out = {}
    for key in keys:
        value = (configs.get(key) or {}).get("value")
        if value not in (None, ""):
            out[key] = str(value)
    return out
