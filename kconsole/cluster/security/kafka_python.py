"""Every use of kafka-python's private APIs, in one place.

Tested with kafka-python 3.0.12; pyproject.toml pins the 3.0 line (>=3.0.12,<3.1), and
tests/integration/test_kafka_python_adapter.py calls each function here against the real
cluster, so an upgrade that changes what they rely on fails there, not on a user's screen.

What they rely on, beyond kafka-python's public API:

- `KafkaAdminClient.__init__` starts the client's IO thread before it bootstraps, and `close()`
  does nothing until bootstrap succeeded: after a failed bootstrap `admin_client` closes
  `admin._client` and stops `admin._net` itself.
- `KafkaAdminClient._manager.run(coroutine_fn, *args)`: runs a coroutine on the client's IO
  thread and waits for its result.
- `KafkaAdminClient._manager.send(request, node_id=, request_timeout_ms=)`: one request to one
  chosen broker, as an awaitable (only awaited on the IO thread).
- `KafkaAdminClient._find_coordinator_ids(keys)` / `_find_coordinator_id(key)`: coroutines
  answering group id -> coordinator broker id from the client's cache, asking (one batched
  FindCoordinator v4+) only for the groups it does not know.
- `KafkaAdminClient._list_partition_offsets_request(specs, isolation_level)`: a static method
  building a ListOffsetsRequest from {TopicPartition: OffsetSpec}.
- `KafkaAdminClient._manager.send` called for several requests before any is awaited
  (`log_ends_by_leader`, `describe_each_at`): they are all in flight at once.
- `kafka.errors.IncompatibleBrokerVersion`: what `_manager.send` fails with when the broker's
  ApiVersions offer no version of the request's API this client can send (no ConsumerGroupDescribe
  before Kafka 3.7, no ShareGroupDescribe v1 before 4.1).
- `kafka.net.sasl.oauth.AbstractTokenProvider`: what `sasl_oauth_token_provider` must be an
  instance of (kafka-python has no client-credentials provider of its own).
- `MetadataRequest` subclassed (`init=False`) with its own `with_header`, whose
  `kafka.protocol.api_header.RequestHeader` subclass answers `get_response_class()` with an
  object whose `parse_header(buffer)` / `decode(buffer)` the protocol parser calls: the
  answer's body is handed on undecoded (`metadata_answer`). `KafkaAdminClient._manager.
  least_loaded_node()`: which broker the client would ask.
- `kafka.protocol.api_message.ApiMessage` subclassed with `load_json=` (kconsole.cluster.
  groups.messages): a protocol class from a JSON message schema kafka-python does not ship.
- Protocol response fields: ListPartitionReassignmentsResponse `error_code`, `error_message`,
  `topics[].name`, `.partitions[].partition_index`, `.replicas`, `.adding_replicas`,
  `.removing_replicas`; ListOffsetsResponse `topics[].name`, `.partitions[].partition_index`,
  `.error_code`, `.offset`; ElectLeadersResponse (what `elect_leaders(raise_errors=False)`
  returns) `error_code`, `replica_election_results[].topic`, `.partition_result[].partition_id`,
  `.error_code`.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
import weakref
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from kconsole import secrets
from kconsole.cluster.security import clients
from kconsole.errors import AuthenticationFailed

TP = tuple[str, int]
# Per leader: {(topic, partition): (error code, offset)}, or what the request failed with.
LogEnds = dict[int, dict[TP, tuple[int, int]] | BaseException]


def oauth_token_provider(creds: Any) -> Any:
    """A kafka-python OAUTHBEARER token provider getting its tokens with the client-credentials
    grant (kconsole.cluster.security.translate.ClientCredentialsTokens, standard library only) for
    `creds` (an OAuthClientCredentials)."""
    from kafka.net.sasl.oauth import AbstractTokenProvider

    from kconsole.cluster.security.translate import ClientCredentialsTokens

    class _ClientCredentials(AbstractTokenProvider):
        def __init__(self) -> None:
            super().__init__()
            self.tokens = ClientCredentialsTokens(creds)

        def __repr__(self) -> str:
            return repr(self.tokens)

        def token(self) -> str:
            return self.tokens.token()

    return _ClientCredentials()


# How long a refused login (any client of kconsole's, at the same bootstrap servers) answers
# for kafka-python without a new bootstrap: a fixed password file is tried after at most this.
AUTH_HOLD_S = 5.0


def admin_client(conf: Mapping[str, Any]) -> Any:
    """A bootstrapped KafkaAdminClient; when bootstrap fails, nothing of it is left running
    (its IO thread stopped) and the error is raised."""
    from kafka.admin import KafkaAdminClient

    # Two steps, so the half-built client can be cleaned up after a failed bootstrap.
    servers = conf.get("bootstrap_servers", "")
    start = time.monotonic()
    # A cluster that refused these credentials a moment ago refuses them again: kafka-python
    # would try every broker until its bootstrap timeout (seconds) to fail the same way.
    if (refused := clients.auth_failure(servers, start - AUTH_HOLD_S)) is not None:
        raise AuthenticationFailed(refused)
    admin = KafkaAdminClient.__new__(KafkaAdminClient)
    try:
        admin.__init__(**conf)
    except BaseException as exc:
        refused = auth_refusal(admin, start)
        with contextlib.suppress(Exception):
            admin._client.close()
        with contextlib.suppress(Exception):
            admin._net.stop()
        if refused:  # the bootstrap failed because a broker refused the login: say that
            clients.note_auth_failure(servers, refused)
            raise AuthenticationFailed(refused) from exc
        raise
    return admin


def auth_refusal(admin: Any, since: float) -> str:
    """Why a broker refused the client's login or TLS handshake at or after `since`, with the
    broker's address; "" when none did. kafka-python does not raise it from a bootstrap (it
    tries another broker, then times out): its connection manager logs each failed bootstrap
    connection (logger kafka.net.manager, "Bootstrap connection to %s failed: %s"), and
    _BootstrapRefusals notes the refused ones; a connection after the bootstrap keeps its
    refusal in `_manager._auth_failures` (node id -> the error)."""
    manager = getattr(admin, "_manager", None)
    found = [
        (node_id, exc) for node_id, exc in (getattr(manager, "_auth_failures", None) or {}).items()
    ]
    with _refusals_lock:
        found += [(n, e) for t, n, e in _refusals if t >= since]
    for node_id, exc in found:
        addr = str(node_id)
        with contextlib.suppress(Exception):
            cluster = manager.cluster  # type: ignore[union-attr]
            node = cluster._bootstrap_brokers.get(node_id) or cluster.broker_metadata(node_id)
            addr = f"{node.host}:{node.port}"
        text = str(exc)
        if "Handshake failed" in text:
            detail = text.partition("Handshake failed: ")[2] or text
            return secrets.scrub(f"TLS handshake with broker {addr} failed: {detail}")
        detail = text.partition("SaslAuthenticationFailedError: ")[2] or text
        detail = clients.sasl_detail(detail)
        return secrets.scrub(f"authentication failed at broker {addr}: {detail}")
    return ""


class _BootstrapRefusals(logging.Filter):
    """Notes each bootstrap connection a broker refused (SASL or TLS), from kafka-python's own
    log record; lets every record through."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        if str(record.msg).startswith("Bootstrap connection to") and len(args) >= 2:
            exc = args[1]
            if not isinstance(exc, BaseException):
                return True
            name = type(exc).__name__
            if name == "SaslAuthenticationFailedError" or "Handshake failed" in str(exc):
                with _refusals_lock:
                    _refusals.append((time.monotonic(), args[0], exc))
                    del _refusals[:-8]
        return True


_refusals_lock = threading.Lock()
_refusals: list[tuple[float, Any, BaseException]] = []
logging.getLogger("kafka.net.manager").addFilter(_BootstrapRefusals())


def group_coordinators(admin: Any, group_ids: Sequence[str]) -> dict[str, int]:
    """Each group's coordinator broker id. Known ones come from the client's cache, the rest
    from one batched FindCoordinator, which fails as a whole on any one group's error."""
    found = admin._manager.run(admin._find_coordinator_ids, list(group_ids))
    return {gid: int(found[gid]) for gid in group_ids}


def group_coordinator(admin: Any, group_id: str) -> int:
    """One group's coordinator broker id (cached, else one FindCoordinator)."""
    return int(admin._manager.run(admin._find_coordinator_id, group_id))


class NotAwaited(Exception):
    """A request's answer that was no longer waited for: its broker was paused meanwhile."""


# How often a wait for an answer asks whether its broker has been paused meanwhile.
GIVE_UP_CHECK_MS = 200


def log_ends_by_leader(
    admin: Any,
    by_leader: Mapping[int, Sequence[TP]],
    timeout_ms: int,
    give_up: Callable[[], Collection[int]] | None = None,
) -> LogEnds:
    """Log-end offsets asked of the given leaders: one ListOffsets (latest, read_uncommitted)
    per leader, all sent before any answer is awaited. Per leader its answer
    {tp: (error code, offset)} or the exception its request failed with; raises only when
    the IO thread itself fails. `give_up` (called on the IO thread: it must only read) names
    the brokers known to be paused now: an answer still awaited from one of them is given up
    (NotAwaited) instead of waiting out `timeout_ms` -- a reading in flight when a leader is
    paused would otherwise hold every partition's figure back for the whole timeout."""
    result: LogEnds = admin._manager.run(_ask_log_ends, admin, by_leader, timeout_ms, give_up)
    return result


async def _answer_of(
    admin: Any, leader: int, future: Any, give_up: Callable[[], Collection[int]] | None
) -> Any:
    """`future`'s answer; with `give_up`, asked every GIVE_UP_CHECK_MS while it has not come
    whether `leader` is paused now (NotAwaited then)."""
    if give_up is None:
        return await future
    while True:
        try:
            return await admin._manager.wait_for(future, GIVE_UP_CHECK_MS)
        except Exception:
            if future.is_done:
                return await future  # answered or failed meanwhile: its own outcome
            if leader in give_up():
                raise NotAwaited(f"broker {leader} paused: its answer not awaited") from None


def list_groups_at(
    admin: Any,
    brokers: Sequence[int],
    timeout_ms: int,
    give_up: Callable[[], Collection[int]] | None = None,
) -> dict[int, list[dict[str, Any]] | BaseException]:
    """ListGroups asked of each broker in `brokers`, all in flight at once (kafka-python's
    list_groups asks them one after the other, a paused one holding the rest for its whole
    timeout): per broker its groups (kafka-python's dicts: group_id, protocol_type,
    group_state, group_type) or the exception its request failed with. `give_up` as for
    log_ends_by_leader."""
    out: dict[int, list[dict[str, Any]] | BaseException] = admin._manager.run(
        _ask_list_groups, admin, list(brokers), timeout_ms, give_up
    )
    return out


async def _ask_list_groups(
    admin: Any,
    brokers: list[int],
    timeout_ms: int,
    give_up: Callable[[], Collection[int]] | None,
) -> dict[int, list[dict[str, Any]] | BaseException]:
    pending = []
    for broker in brokers:
        try:  # a broker the client's metadata does not know fails here, not when awaited
            request = admin._list_groups_request()
            pending.append(
                (
                    broker,
                    admin._manager.send(request, node_id=broker, request_timeout_ms=timeout_ms),
                )
            )
        except Exception as exc:
            pending.append((broker, exc))
    out: dict[int, list[dict[str, Any]] | BaseException] = {}
    for broker, future in pending:
        if isinstance(future, BaseException):
            out[broker] = future
            continue
        try:
            response = await _answer_of(admin, broker, future, give_up)
            out[broker] = list(admin._list_groups_process_response(response))
        except Exception as exc:
            out[broker] = exc
    return out


async def _ask_log_ends(
    admin: Any,
    by_leader: Mapping[int, Sequence[TP]],
    timeout_ms: int,
    give_up: Callable[[], Collection[int]] | None = None,
) -> LogEnds:
    from kafka import TopicPartition
    from kafka.admin import OffsetSpec

    pending = []
    for leader, tps in by_leader.items():
        asked = tuple(tps)
        mine = _LOG_END_REQUESTS.setdefault(admin, {})
        made = mine.get(leader)
        if made is not None and made[0] == asked:
            request = made[1]  # the same partitions as last time: the same request
        else:
            request = admin._list_partition_offsets_request(
                {TopicPartition(t, p): OffsetSpec.LATEST for t, p in asked},
                0,  # read_uncommitted
            )
            mine[leader] = (asked, request)
        send = admin._manager.send(request, node_id=leader, request_timeout_ms=timeout_ms)
        pending.append((leader, send))
    out: LogEnds = {}
    for leader, future in pending:
        try:
            response = await _answer_of(admin, leader, future, give_up)
        except Exception as exc:
            out[leader] = exc
            continue
        out[leader] = {
            (topic.name, part.partition_index): (int(part.error_code), int(part.offset))
            for topic in response.topics
            for part in topic.partitions
        }
    return out


# Per client, per leader the partitions last asked and the ListOffsets request made for them:
# building it anew for the same 3,000+ partitions every reading was a tenth of the groups
# poll's CPU on 10,000 partitions. A request object is sent again as it is (kafka-python
# encodes it, with a new header, at each send), only by its own client's IO thread.
_LOG_END_REQUESTS: weakref.WeakKeyDictionary[Any, dict[int, tuple[tuple[TP, ...], Any]]] = (
    weakref.WeakKeyDictionary()
)


def log_sizes_at(
    admin: Any, brokers: Sequence[int], timeout_ms: int
) -> dict[int, dict[TP, int] | BaseException]:
    """Per broker its partitions' log sizes in bytes (the current log of every replica it
    holds, future ones left out), from one DescribeLogDirs (all topics) per broker, all sent
    before any answer is awaited; or what the request failed with (a log dir's own error
    too). Raises only when the IO thread itself fails."""
    result: dict[int, dict[TP, int] | BaseException] = admin._manager.run(
        _ask_log_sizes, admin, brokers, timeout_ms
    )
    return result


async def _ask_log_sizes(
    admin: Any, brokers: Sequence[int], timeout_ms: int
) -> dict[int, dict[TP, int] | BaseException]:
    import kafka.errors
    from kafka.protocol.admin import DescribeLogDirsRequest

    pending: list[tuple[int, Any]] = []
    for broker in brokers:
        try:
            send = admin._manager.send(
                DescribeLogDirsRequest(topics=None), node_id=broker, request_timeout_ms=timeout_ms
            )
        except Exception as exc:
            pending.append((broker, exc))
            continue
        pending.append((broker, send))
    out: dict[int, dict[TP, int] | BaseException] = {}
    for broker, future in pending:
        if isinstance(future, BaseException):
            out[broker] = future
            continue
        try:
            response = await future
        except Exception as exc:
            out[broker] = exc
            continue
        code = int(getattr(response, "error_code", 0) or 0)
        if code:
            out[broker] = kafka.errors.for_code(code)()
            continue
        sizes: dict[TP, int] = {}
        for result in response.results:
            if int(result.error_code or 0):
                continue  # an offline log dir: its partitions are not sized here
            for topic in result.topics:
                for part in topic.partitions:
                    if not part.is_future_key:
                        sizes[(str(topic.name), int(part.partition_index))] = int(
                            part.partition_size
                        )
        out[broker] = sizes
    return out


def describe_at(
    admin: Any,
    request: Any,
    node_id: int,
    timeout_ms: int,
    give_up: Callable[[], Collection[int]] | None = None,
) -> list[dict[str, Any]]:
    """One group-describe request (ConsumerGroupDescribe / ShareGroupDescribe, from
    kconsole.cluster.groups.messages) sent to one broker, its group coordinator: the answer's
    `groups` as dicts (the response's to_dict()). Raises what the request failed with; when the
    broker supports no version of the API, `kafka.errors.IncompatibleBrokerVersion`; NotAwaited
    when `give_up` (as for log_ends_by_leader) names the broker while its answer is due."""
    response = admin._manager.run(_send_or_give_up, admin, request, node_id, timeout_ms, give_up)
    return list(response.to_dict()["groups"])


async def _send_or_give_up(
    admin: Any,
    request: Any,
    node_id: int,
    timeout_ms: int,
    give_up: Callable[[], Collection[int]] | None,
) -> Any:
    future = admin._manager.send(request, node_id=node_id, request_timeout_ms=timeout_ms)
    return await _answer_of(admin, node_id, future, give_up)


async def _send(admin: Any, request: Any, node_id: int, timeout_ms: int) -> Any:
    return await admin._manager.send(request, node_id=node_id, request_timeout_ms=timeout_ms)


def describe_cluster_at(admin: Any, node_id: int, timeout_ms: int) -> dict[str, Any]:
    """DescribeCluster with fenced brokers (v2, KIP-1073) sent to broker `node_id`, as
    `describe_cluster()` answers it (a dict: "brokers" with "broker_id", "host", "port", "rack",
    "is_fenced"; "controller_id", "cluster_id"), but to a broker of the caller's choosing: left
    to pick, kafka-python may ask a paused one and wait out the whole timeout. Raises what the
    request failed with (a top-level error as its kafka-python error class;
    IncompatibleBrokerVersion before Kafka 4.0)."""
    import kafka.errors
    from kafka.protocol.admin import DescribeClusterRequest

    request = DescribeClusterRequest(
        include_cluster_authorized_operations=False, include_fenced_brokers=True, min_version=2
    )
    response = admin._manager.run(_send, admin, request, node_id, timeout_ms)
    code = int(response.error_code or 0)
    if code:
        raise kafka.errors.for_code(code)(response.error_message)
    answer: dict[str, Any] = response.to_dict()
    return answer


def describe_features_at(admin: Any, node_id: int, timeout_ms: int) -> dict[str, Any]:
    """The features (ApiVersions v3, KIP-584) as broker `node_id` gives them, in the shape of
    kafka-python's `describe_features()` ({name: {"supported": (min, max), "finalized": (min,
    max), "finalized_epoch": n}}), but of a broker of the caller's choosing: left to pick,
    kafka-python sent it to a paused broker and the quorum poll waited out its whole timeout
    (3 s, fencing and quorum changes held back meanwhile)."""
    import kafka.errors
    from kafka.protocol.metadata import ApiVersionsRequest

    config = admin._manager.config
    request = ApiVersionsRequest(
        client_software_name=config["client_software_name"],
        client_software_version=config["client_software_version"],
        min_version=3,
    )
    response = admin._manager.run(_send, admin, request, node_id, timeout_ms)
    code = int(response.error_code or 0)
    if code:
        raise kafka.errors.for_code(code)(f"ApiVersions failed: {response}")
    epoch = response.finalized_features_epoch
    epoch = epoch if epoch is not None and epoch >= 0 else None
    out: dict[str, dict[str, Any]] = {}
    for f in response.supported_features or ():
        out.setdefault(f.name, {})["supported"] = (f.min_version, f.max_version)
    for f in response.finalized_features or ():
        entry = out.setdefault(f.name, {})
        entry["finalized"] = (f.min_version_level, f.max_version_level)
        entry["finalized_epoch"] = epoch
    return out


def least_loaded_node(admin: Any) -> int | None:
    """The broker kafka-python would ask next (an idle connection first), None if it knows
    none."""
    node = admin._manager.least_loaded_node()
    return int(node) if node is not None else None


def metadata_answer(
    admin: Any, node_id: int, timeout_ms: int, max_version: int
) -> tuple[int, bytes]:
    """One Metadata request (every topic, at most version `max_version`) sent to broker
    `node_id`: its version and its answer's body, not decoded (kafka-python decodes 10,000
    partitions in about 20 ms; comparing the bytes costs next to nothing). Raises what the
    request failed with."""
    request = _raw_metadata_request()(
        topics=None,
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
        max_version=max_version,
    )
    answer: tuple[int, bytes] = admin._manager.run(_send, admin, request, node_id, timeout_ms)
    return answer


def decode_metadata(version: int, body: bytes) -> Any:
    """A body `metadata_answer` handed on, decoded (a MetadataResponse)."""
    from kafka.protocol.metadata import MetadataResponse

    return MetadataResponse[version].decode(body)


@functools.cache
def _raw_metadata_request() -> Any:
    """The request class, made on first use (kafka-python is imported lazily)."""
    from kafka.protocol.api_header import RequestHeader
    from kafka.protocol.metadata import MetadataRequest, MetadataResponse

    class Undecoded:
        def __init__(self, version: int) -> None:
            self.version = version

        def parse_header(self, buffer: Any) -> Any:
            return MetadataResponse[self.version].parse_header(buffer)

        def decode(self, buffer: Any) -> tuple[int, bytes]:
            return self.version, bytes(buffer.read())

    class UndecodedHeader(RequestHeader, init=False):  # type: ignore[call-arg]
        __slots__ = ()

        def get_response_class(self) -> Undecoded:
            return Undecoded(self.request_api_version)

    class UndecodedMetadataRequest(MetadataRequest, init=False):  # type: ignore[call-arg]
        __slots__ = ()

        def with_header(self, correlation_id: int = 0, client_id: str = "kafka-python") -> None:
            # `_header` is a slot of kafka-python's ApiMessage, which mypy does not see
            self._header = UndecodedHeader(  # type: ignore[misc]
                request_api_key=self.API_KEY,
                request_api_version=self.API_VERSION,
                correlation_id=correlation_id,
                client_id=client_id,
            )

    return UndecodedMetadataRequest


# Per partition being reassigned: (replicas, adding, removing), as ListPartitionReassignments
# lists them.
Reassignments = dict[TP, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]


def list_reassignments_at(admin: Any, node_id: int, timeout_ms: int) -> Reassignments:
    """Every running reassignment, from one ListPartitionReassignments (all partitions) sent to
    broker `node_id`: on KRaft any broker forwards it to the active controller, so a broker
    known to be up is asked, not the metadata's "controller" (a random broker there, perhaps
    the one that is down). Raises what the request failed with; a refusal (the top-level
    error, e.g. CLUSTER_AUTHORIZATION_FAILED) as kafka-python's error class."""
    import kafka.errors
    from kafka.protocol.admin import ListPartitionReassignmentsRequest

    request = ListPartitionReassignmentsRequest(timeout_ms=timeout_ms, topics=None)
    response = admin._manager.run(_send, admin, request, node_id, timeout_ms)
    code = int(response.error_code or 0)
    if code:
        raise kafka.errors.for_code(code)(response.error_message or "")
    return {
        (str(topic.name), int(part.partition_index)): (
            tuple(int(b) for b in part.replicas),
            tuple(int(b) for b in part.adding_replicas),
            tuple(int(b) for b in part.removing_replicas),
        )
        for topic in response.topics
        for part in topic.partitions
    }


def describe_each_at(
    admin: Any, requests: Sequence[tuple[Any, int]], timeout_ms: int
) -> list[list[dict[str, Any]] | BaseException]:
    """Several group requests (as describe_at), each to its broker, all sent before any answer
    is awaited: per request, in order, its answer's `groups` as dicts or what it failed with.
    Raises only when the IO thread itself fails."""
    result: list[list[dict[str, Any]] | BaseException] = admin._manager.run(
        _send_each, admin, requests, timeout_ms
    )
    return result


async def _send_each(
    admin: Any, requests: Sequence[tuple[Any, int]], timeout_ms: int
) -> list[list[dict[str, Any]] | BaseException]:
    pending: list[Any] = []
    for request, node in requests:
        try:  # a broker the client's metadata does not know fails here, not when awaited
            pending.append(
                admin._manager.send(request, node_id=node, request_timeout_ms=timeout_ms)
            )
        except Exception as exc:
            pending.append(exc)
    out: list[list[dict[str, Any]] | BaseException] = []
    for future in pending:
        if isinstance(future, BaseException):
            out.append(future)
            continue
        try:
            response = await future
        except Exception as exc:
            out.append(exc)
            continue
        out.append(list(response.to_dict()["groups"]))
    return out


def is_unsupported(exc: BaseException) -> bool:
    """The broker supports no version of the API asked (kafka-python's check against its
    ApiVersions, or the broker's own UNSUPPORTED_VERSION answer)."""
    import kafka.errors

    return isinstance(
        exc, (kafka.errors.IncompatibleBrokerVersion, kafka.errors.UnsupportedVersionError)
    )


def election_codes(response: Any) -> tuple[int, list[tuple[str, int, int]]]:
    """An ElectLeadersResponse (`elect_leaders(..., raise_errors=False)`) as its top-level
    error code and (topic, partition, error code) per partition."""
    top = int(getattr(response, "error_code", 0) or 0)
    parts = [
        (str(topic.topic), int(p.partition_id), int(p.error_code))
        for topic in response.replica_election_results
        for p in topic.partition_result
    ]
    return top, parts


def describe_quorum_at(host: str, port: int, timeout_s: float) -> dict[str, Any]:
    """DescribeQuorum (v2) of `__cluster_metadata` sent over a plain socket to one node, as a
    dict (DescribeQuorumResponse.to_dict()). Works on a controller, where KafkaAdminClient
    cannot bootstrap (controllers do not answer MetadataRequest); only the quorum leader answers
    with data, the others with NOT_LEADER_OR_FOLLOWER in the partition's error_code."""
    from kafka.protocol.admin import DescribeQuorumRequest

    topic_cls = DescribeQuorumRequest.TopicData
    request = DescribeQuorumRequest[2](
        topics=[
            topic_cls(
                topic_name="__cluster_metadata",
                partitions=[topic_cls.PartitionData(partition_index=0)],
            )
        ]
    )
    return _ask_at(host, port, request, timeout_s)


def describe_controllers_at(host: str, port: int, timeout_s: float) -> dict[str, Any]:
    """DescribeCluster (v1, endpoint type 2: controllers, KIP-919) sent to one controller: every
    controller's id, host and port as "brokers", and the active controller (the quorum leader)
    as "controller_id" -- how Kafka's own tools find the leader from one bootstrap controller."""
    from kafka.protocol.admin import DescribeClusterRequest

    request = DescribeClusterRequest[1](
        include_cluster_authorized_operations=False, endpoint_type=2
    )
    return _ask_at(host, port, request, timeout_s)


_conns = threading.local()  # (host, port) -> an open socket, per thread (each poller's own)


def _ask_at(host: str, port: int, request: Any, timeout_s: float) -> dict[str, Any]:
    """One request to `host:port`, its answer as a dict (`to_dict()`).

    The connection stays open for this thread's next request to the same node (the quorum
    poller asks the leader every 0.4 s: a new TCP connection each time was most of its cost).
    A kept connection the node closed (it restarted) is dropped and the request sent once more
    on a new one; any other failure (a timeout: the node may be paused) raises at once.
    Relies on `kafka.protocol.parser.KafkaProtocol` (send_request / send_bytes /
    receive_bytes) and the versioned message classes."""
    import socket

    key = (host, port)
    kept: dict[tuple[str, int], socket.socket] = _conns.__dict__.setdefault("socks", {})
    sock = kept.pop(key, None)
    if sock is not None:
        try:
            result = _exchange(sock, host, port, request, timeout_s)
        except ConnectionError:  # closed or reset by the other side: ask on a new one
            sock.close()
        except BaseException:
            sock.close()
            raise
        else:
            kept[key] = sock
            return result
    sock = socket.create_connection((host, port), timeout=timeout_s)
    try:
        result = _exchange(sock, host, port, request, timeout_s)
    except BaseException:
        sock.close()
        raise
    kept[key] = sock
    return result


def close_connections() -> None:
    """Close the connections this thread kept open (its poller is stopping)."""
    kept = _conns.__dict__.pop("socks", {})
    for sock in kept.values():
        sock.close()


def _exchange(sock: Any, host: str, port: int, request: Any, timeout_s: float) -> dict[str, Any]:
    from kafka.protocol.parser import KafkaProtocol

    sock.settimeout(timeout_s)
    proto = KafkaProtocol(client_id="kconsole")
    proto.send_request(request)
    sock.sendall(proto.send_bytes())
    while True:
        data = sock.recv(65536)
        if not data:
            raise ConnectionError(f"{host}:{port} closed the connection")
        responses = proto.receive_bytes(data)
        if responses:
            result: dict[str, Any] = responses[0][1].to_dict()
            return result
