"""KRaft reads for the observer: the metadata quorum (DescribeQuorum), the finalized features
(ApiVersions) and the registered brokers with their fencing (DescribeCluster with fenced
brokers, Kafka 4.0+). Asked of the brokers with kafka-python (they forward DescribeQuorum to
the controllers), or with `bootstrap_controller` of the controllers directly (KIP-919), so the
quorum can be read while every broker is down.

The parsers are pure functions of the answers as dicts (what kafka-python's to_dict() gives):
the unit tests feed them answers recorded from a real cluster (tests/fixtures/kraft/).
Never imports Textual.
"""

from __future__ import annotations

import base64
import contextlib
import uuid
from collections.abc import Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from kconsole.cluster.security import kafka_python
from kconsole.cluster.security.clients import kafka_python_config, nothing_listens
from kconsole.errors import ClusterError
from kconsole.models import FeatureLevel, Features, Quorum, QuorumReplica

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
# metadata.version feature levels -> the name Kafka prints, as MetadataVersion.values() of the
# 4.4.0 jars lists them (featureLevel(), version()).
# Levels not listed are shown as "level N" (a newer Kafka than this table).
_MV_NAMES = {
    7: "3.3-IV3",
    8: "3.4-IV0",
    9: "3.5-IV0",
    10: "3.5-IV1",
    11: "3.5-IV2",
    12: "3.6-IV0",
    13: "3.6-IV1",
    14: "3.6-IV2",
    15: "3.7-IV0",
    16: "3.7-IV1",
    17: "3.7-IV2",
    18: "3.7-IV3",
    19: "3.7-IV4",
    20: "3.8-IV0",
    21: "3.9-IV0",
    22: "4.0-IV0",
    23: "4.0-IV1",
    24: "4.0-IV2",
    25: "4.0-IV3",
    26: "4.1-IV0",
    27: "4.1-IV1",
    28: "4.2-IV0",
    29: "4.2-IV1",
    30: "4.3-IV0",
    31: "4.4-IV0",
    32: "4.4-IV1",
    33: "4.4-IV2",
    34: "4.5-IV0",
}


class NotKRaft(ClusterError):
    """The brokers answered, but without the KRaft APIs: a ZooKeeper-mode cluster."""


class NoQuorumLeader(ClusterError):
    """Every controller known was asked directly and none leads (see
    QuorumReader._quorum_from_controllers): the metadata is frozen."""


class QuorumUnanswered(ClusterError):
    """The controllers were asked directly and none answered as leader, but one that did not
    answer may lead: the quorum is unknown (its message says what each controller said)."""


NOT_LEADER_OR_FOLLOWER = 6


def _partition_error(answer: Mapping[str, Any]) -> int:
    """The error code of the __cluster_metadata partition in a DescribeQuorum answer (0: none
    or no partition)."""
    try:
        return int(answer["topics"][0]["partitions"][0].get("error_code") or 0)
    except (KeyError, IndexError, TypeError, AttributeError):
        return 0


@dataclass(frozen=True)
class BrokerRegistration:
    """One registered broker as DescribeCluster (with fenced brokers) lists it."""

    id: int
    host: str
    port: int
    rack: str | None
    fenced: bool


def _seconds(ms: Any) -> float | None:
    value = int(ms if ms is not None else -1)
    return value / 1000.0 if value >= 0 else None


def quorum_of(answer: Mapping[str, Any], read_at: float) -> Quorum:
    """A Quorum from a DescribeQuorumResponse as a dict. ClusterError when the partition
    reports an error (NOT_LEADER_OR_FOLLOWER from a controller that is not the leader)."""
    if answer.get("error_code"):
        raise ClusterError(f"DescribeQuorum: error code {answer['error_code']}")
    try:
        part = answer["topics"][0]["partitions"][0]
    except (KeyError, IndexError, TypeError) as exc:
        raise ClusterError("DescribeQuorum: no __cluster_metadata partition in the answer") from exc
    if part.get("error"):  # kafka-python's admin client puts the error's text here
        raise ClusterError(f"DescribeQuorum: {part['error']}")
    if part.get("error_code"):
        raise ClusterError(f"DescribeQuorum: {_error_name(int(part['error_code']))}")
    endpoints: dict[int, tuple[str, int]] = {}
    for node in answer.get("nodes") or ():
        for listener in node.get("listeners") or ():
            endpoints.setdefault(
                int(node["node_id"]), (str(listener["host"]), int(listener["port"]))
            )

    def replicas(key: str, voter: bool) -> tuple[QuorumReplica, ...]:
        out = []
        for r in part.get(key) or ():
            rid = int(r["replica_id"])
            host, port = endpoints.get(rid, (None, None))
            leo = int(r.get("log_end_offset", -1))
            directory = _kafka_uuid(r.get("replica_directory_id"))
            out.append(
                QuorumReplica(
                    rid,
                    voter,
                    leo if leo >= 0 else None,
                    _seconds(r.get("last_fetch_timestamp")),
                    _seconds(r.get("last_caught_up_timestamp")),
                    str(directory) if directory else None,
                    host,
                    port,
                )
            )
        return tuple(sorted(out, key=lambda q: q.id))

    leader = int(part.get("leader_id", -1))
    epoch = int(part.get("leader_epoch", -1))
    hwm = int(part.get("high_watermark", -1))
    return Quorum(
        leader if leader >= 0 else None,
        epoch if epoch >= 0 else None,
        hwm if hwm >= 0 else None,
        replicas("current_voters", True),
        replicas("observers", False),
        read_at=read_at,
    )


def _kafka_uuid(value: Any) -> str | None:
    """A directory id as Kafka prints it (URL-safe base64 of the 16 bytes, no padding);
    kafka-python gives a UUID. None for the zero UUID (not reported)."""
    if not value:
        return None
    try:
        raw = uuid.UUID(str(value)).bytes
    except ValueError:
        return str(value)
    if raw == bytes(16):
        return None
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def features_of(answer: Mapping[str, Any], read_at: float) -> Features:
    """Features from kafka-python's describe_features() ({name: {'supported': (min, max),
    'finalized': (min, max)}})."""

    def level(name: str) -> int | None:
        fin = (answer.get(name) or {}).get("finalized")
        return int(fin[1]) if fin else None

    mv = level(METADATA_VERSION)
    name = None if mv is None else _MV_NAMES.get(mv, f"level {mv}")
    # As kafka-features describe: every supported feature, 0 when it is not finalized.
    others = tuple(
        FeatureLevel(str(f), level(str(f)) or 0)
        for f in sorted(answer)
        if f not in (METADATA_VERSION, KRAFT_VERSION)
    )
    return Features(name, mv, level(KRAFT_VERSION), read_at, others)


def registrations_of(answer: Mapping[str, Any]) -> dict[int, BrokerRegistration]:
    """Every registered broker from kafka-python's describe_cluster() (fenced ones too)."""
    out = {}
    for b in answer.get("brokers") or ():
        bid = int(b["broker_id"])
        out[bid] = BrokerRegistration(
            bid,
            str(b.get("host") or "?"),
            int(b.get("port") or 0),
            b.get("rack"),
            bool(b.get("is_fenced", False)),
        )
    return out


def _error_name(code: int) -> str:
    from kafka import errors

    return f"{errors.for_code(code).__name__} (error code {code})"


def _not_kraft(exc: BaseException) -> bool:
    name = type(exc).__name__
    return "IncompatibleBrokerVersion" in name or "UnsupportedVersion" in name


# When the brokers cannot describe the quorum, each controller is asked directly within this
# (a controller answers DescribeQuorum in milliseconds; a paused one never does).
DIRECT_TIMEOUT_S = 1.0
# read_registrations' DescribeCluster to one broker (a healthy one answers in ms; one that does
# not is left for the next)
REGISTRATIONS_TIMEOUT_S = 1.0


def _ask_quorum(
    nodes: list[tuple[str, int]], timeout_s: float
) -> list[tuple[tuple[str, int], Any]]:
    """DescribeQuorum of each node: its answer, or the exception it raised. One node is asked
    on this thread (its connection kept for the next poll); several are asked at once, each on
    a connection of its own, closed after, so a paused one costs one timeout, not one each."""
    if len(nodes) == 1:
        host, port = nodes[0]
        try:
            return [(nodes[0], kafka_python.describe_quorum_at(host, port, timeout_s))]
        except Exception as exc:
            return [(nodes[0], exc)]

    def ask(node: tuple[str, int]) -> Any:
        try:
            return kafka_python.describe_quorum_at(node[0], node[1], timeout_s)
        except Exception as exc:
            return exc
        finally:
            kafka_python.close_connections()  # this worker thread's

    with ThreadPoolExecutor(
        max_workers=len(nodes), thread_name_prefix="kconsole-quorum-ask"
    ) as pool:
        return list(zip(nodes, pool.map(ask, nodes), strict=True))


class QuorumReader:
    """Blocking KRaft reads for the observer's quorum poller (one instance per thread)."""

    def __init__(
        self,
        config: dict[str, Any],
        bootstrap_controller: str = "",
        timeout_s: float = 3.0,
    ):
        self.config = dict(config)
        self.timeout_s = timeout_s
        self.controllers = [
            (h.strip("[]"), int(p))
            for hp in bootstrap_controller.split(",")
            if hp.strip()
            for h, _, p in [hp.strip().rpartition(":")]
        ]
        self._leader_first: tuple[str, int] | None = None
        self._learned: list[tuple[str, int]] = []  # controllers a controller named
        self._voters: list[tuple[str, int]] = []  # the voters the last answer named
        self._kp: Any = None
        # read_registrations: the last answer, the broker that gave it, and whether the
        # cluster has DescribeCluster v2 (None: not known yet)
        self._registrations: dict[int, BrokerRegistration] = {}
        self._registrations_node: int | None = None
        self._registrations_v2: bool | None = None

    def _admin(self) -> Any:
        if self._kp is None:
            # A new client bootstraps from the configured brokers alone: when every one of
            # them refuses, it would only wait out bootstrap_timeout_ms to fail the same way.
            why = nothing_listens(str(self.config.get("bootstrap.servers", "")))
            if why is not None:
                raise ClusterError(why)
            conf = kafka_python_config(self.config, self.timeout_s, client_id="kconsole-quorum")
            # kafka-python waits 30 s for a first broker by default: a poll must fail fast.
            conf["bootstrap_timeout_ms"] = int(self.timeout_s * 1000)
            self._kp = kafka_python.admin_client(conf)
        return self._kp

    def _call(self, fn: str, *args: Any) -> Any:
        try:
            return getattr(self._admin(), fn)(*args)
        except Exception as exc:
            if _not_kraft(exc):
                raise NotKRaft(f"{fn}: the brokers have no KRaft API ({exc})") from exc
            self._close_admin()  # a client that met a dead broker bootstraps afresh next time
            raise ClusterError(f"{fn}: {str(exc) or type(exc).__name__}") from exc

    def read_quorum(self, now: float) -> Quorum:
        """The quorum as its leader describes it: from the controllers when given, else
        through the brokers -- and when the brokers cannot say, from the voters the last answer
        named, asked directly. NoQuorumLeader when every voter was asked and none leads."""
        if self.controllers:
            quorum = self._quorum_from_controllers(now)
        else:
            try:
                quorum = quorum_of(self._call("describe_metadata_quorum"), now)
            except NotKRaft:
                raise
            except ClusterError as exc:
                if not self._voters:
                    raise
                quorum = self._quorum_from_controllers(now, why=str(exc))
        self._voters = [(r.host, r.port) for r in quorum.voters if r.host and r.port]
        return quorum

    def _quorum_from_controllers(self, now: float, why: str = "") -> Quorum:
        """Asked of the controllers given (or the voters the last answer named), and of those
        they name (DescribeCluster to a controller, KIP-919): one bootstrap controller that is
        not the leader is enough, as with Kafka's own `--bootstrap-controller`. The leader that
        answered last is asked first, alone: one request on a kept connection a poll while it
        leads. The others are asked all at once, so paused ones cost one timeout in all; when
        the brokers could not say (`why`), everyone is asked at once, within DIRECT_TIMEOUT_S.

        No leader is concluded only from answers: every controller (as the last quorum or a
        controller named them) answered NOT_LEADER_OR_FOLLOWER or refused the connection (no
        process listens: it cannot lead), and at least one answered. One that does not answer
        in time (paused, or out of reach) may still lead: then the quorum is unknown, not
        leaderless."""
        errors: list[str] = [why] if why else []
        timeout = min(self.timeout_s, DIRECT_TIMEOUT_S) if why else self.timeout_s
        not_leader: list[tuple[str, int]] = []
        refused: list[str] = []
        asked: set[tuple[str, int]] = set()
        for round_ in range(2):
            order = [hp for hp in self._controller_order() if hp not in asked]
            batches = [order] if why else [order[:1], order[1:]]
            for batch in batches:
                if not batch:
                    continue
                asked.update(batch)
                for (host, port), answer in _ask_quorum(batch, timeout):
                    where = f"{host}:{port}"
                    if isinstance(answer, ConnectionRefusedError):
                        refused.append(where)
                        errors.append(f"{where}: connection refused")
                    elif isinstance(answer, BaseException):
                        errors.append(f"{where}: {str(answer) or type(answer).__name__}")
                    elif _partition_error(answer) == NOT_LEADER_OR_FOLLOWER:
                        not_leader.append((host, port))
                        errors.append(f"{where}: not the leader")
                    else:
                        try:
                            quorum = quorum_of(answer, now)
                        except ClusterError as exc:
                            errors.append(f"{where}: {exc}")
                            continue
                        self._leader_first = (host, port)
                        return quorum
            # Who the others are, asked of one that answered (only when none is known yet).
            if (
                round_
                or self._voters
                or self._learned
                or not self._learn_controllers(not_leader, errors)
            ):
                break
        # Every controller: those the last answer or a controller named, not only those given.
        known = set(self._voters) | set(self._learned)
        if known and known <= asked and not_leader and len(not_leader) + len(refused) == len(asked):
            raise NoQuorumLeader(
                f"no controller leads ({', '.join(f'{h}:{p}' for h, p in not_leader)} not the "
                "leader" + (f"; {', '.join(refused)} not running" if refused else "") + ")"
            )
        raise QuorumUnanswered(
            "no controller answered as quorum leader (" + "; ".join(errors) + ")"
        )

    def _controller_order(self) -> list[tuple[str, int]]:
        order = list(dict.fromkeys([*self.controllers, *self._learned, *self._voters]))
        if self._leader_first in order:
            order.remove(self._leader_first)
            order.insert(0, self._leader_first)
        return order

    def _learn_controllers(self, alive: list[tuple[str, int]], errors: list[str]) -> bool:
        """Every controller and the active one, from the first of `alive` (controllers that
        just answered) that describes them; the active one is asked first from now on. False
        when none did."""
        for host, port in alive:
            try:
                answer = kafka_python.describe_controllers_at(host, port, self.timeout_s)
            except Exception as exc:
                errors.append(f"{host}:{port}: DescribeCluster: {str(exc) or type(exc).__name__}")
                continue
            if answer.get("error_code"):
                why = _error_name(answer["error_code"])
                errors.append(f"{host}:{port}: DescribeCluster: {why}")
                continue
            nodes = {
                int(b["broker_id"]): (str(b["host"]), int(b["port"]))
                for b in answer.get("brokers") or ()
            }
            self._learned = list(nodes.values())
            leader = nodes.get(int(answer.get("controller_id", -1)))
            if leader is not None:
                self._leader_first = leader
            return bool(nodes)
        return False

    def read_registrations(self, avoid: Collection[int] = ()) -> dict[int, BrokerRegistration]:
        """Registered brokers and their fencing (DescribeCluster through the brokers), asked of
        the broker that answered last, else of the lowest known id not in `avoid` (paused:
        left to pick, kafka-python asked a paused broker and waited out its timeout, 8 s
        before a fencing reached the screen in a bench). A broker that fails is not asked
        next time; REGISTRATIONS_TIMEOUT_S each. Before any answer (or on a cluster without
        DescribeCluster v2), kafka-python's own pick."""
        known = [b for b in sorted(self._registrations) if b not in avoid]
        node = self._broker_to_ask(known)
        if node is None or self._registrations_v2 is False:
            return self._remember(registrations_of(self._call("describe_cluster")), None)
        try:
            answer = kafka_python.describe_cluster_at(
                self._admin(), node, int(REGISTRATIONS_TIMEOUT_S * 1000)
            )
        except Exception as exc:
            if kafka_python.is_unsupported(exc):
                self._registrations_v2 = False
                return self._remember(registrations_of(self._call("describe_cluster")), None)
            self._registrations_node = known[(known.index(node) + 1) % len(known)]  # the next
            raise ClusterError(
                f"describe_cluster (broker {node}): {str(exc) or type(exc).__name__}"
            ) from exc
        return self._remember(registrations_of(answer), node)

    def _broker_to_ask(self, known: list[int]) -> int | None:
        """Of the brokers `known` (registered, none to avoid, by id): the one that answered
        the registrations last, else the lowest; None when none is known."""
        if self._registrations_node in known:
            return self._registrations_node
        return known[0] if known else None

    def _remember(
        self, found: dict[int, BrokerRegistration], node: int | None
    ) -> dict[int, BrokerRegistration]:
        self._registrations = found
        if node is not None:
            self._registrations_node = node
        return found

    def read_features(self, now: float, avoid: Collection[int] = ()) -> Features:
        """The finalized features (ApiVersions), asked of the broker that answered the
        registrations last, else of the lowest known id not in `avoid`, within
        REGISTRATIONS_TIMEOUT_S: left to pick, kafka-python asked a paused broker and waited
        out its timeout, the quorum poll held back meanwhile. Before any registrations were
        read, kafka-python's own pick."""
        node = self._broker_to_ask([b for b in sorted(self._registrations) if b not in avoid])
        if node is None:
            return features_of(self._call("describe_features"), now)
        try:
            answer = kafka_python.describe_features_at(
                self._admin(), node, int(REGISTRATIONS_TIMEOUT_S * 1000)
            )
        except Exception as exc:
            raise ClusterError(
                f"describe_features (broker {node}): {str(exc) or type(exc).__name__}"
            ) from exc
        return features_of(answer, now)

    def close(self) -> None:
        """Everything this reader holds open (call it from the poller's own thread)."""
        kafka_python.close_connections()
        self._close_admin()

    def _close_admin(self) -> None:
        kp, self._kp = self._kp, None
        if kp is not None:
            with contextlib.suppress(Exception):
                kp.close()
