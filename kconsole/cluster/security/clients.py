"""Configuration of kconsole's own Kafka clients, built in one place.

Every producer kconsole creates (the produce command, the drill workload) comes from
`producer_config`, every consumer that must stay out of consumer groups (the verifier, a
tail without a group) from `groupless_consumer_config`, every librdkafka admin client from
`admin_config`, and every kafka-python admin client's arguments from `kafka_python_config`.
The security settings in them come from one translation, kconsole.cluster.security.translate (which
also resolves secrets from the environment and from files, each time a client is made).
librdkafka's log lines go to the `kconsole.rdkafka` Python logger, never to the terminal, with
every known secret scrubbed from them.
"""

from __future__ import annotations

import logging
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaError, KafkaException, Producer

from kconsole import secrets
from kconsole.cluster.security import translate as security
from kconsole.errors import AuthenticationFailed, ConfigError, config_error

if TYPE_CHECKING:  # the cluster layer does not depend on the settings module at run time
    from kconsole.config import Settings

# Every librdkafka client logs here: librdkafka never prints to the terminal.
RDKAFKA_LOG = logging.getLogger("kconsole.rdkafka")
RDKAFKA_LOG.addFilter(secrets.ScrubFilter())

# librdkafka's codes for a refused login or TLS handshake: waiting does not mend them.
AUTH_ERROR_CODES = frozenset(
    {KafkaError._AUTHENTICATION, KafkaError._SSL, KafkaError.SASL_AUTHENTICATION_FAILED}
)
# A TLS alert the broker sent (OpenSSL's words): with TLS 1.3 a broker that refuses the
# client's certificate says so after the client's side of the handshake is done, and
# librdkafka reports it as a transport error ("Receive failed: ... alert bad certificate").
_TLS_ALERT = re.compile(
    r"(?:ssl/tls|sslv3|tlsv1[0-9]*) alert (?P<alert>[a-z ]+?)(?:: SSL alert number (?P<n>\d+))?"
    r"(?=$|[:;,)])"
)
# What the alerts about the client's certificate mean to the person who configured it.
_CERT_ALERTS = {
    "bad certificate": "the broker requires a client certificate it accepts",
    "certificate required": "the broker requires a client certificate",
    "certificate unknown": "the broker does not accept the client certificate",
    "unknown ca": "the broker does not trust the CA of the client certificate",
    "certificate expired": "the client certificate has expired",
    "certificate revoked": "the client certificate was revoked",
}
_BROKER_TEXT = re.compile(r"^(?P<proto>[a-z_]+)://(?P<addr>[^/\s]+)/\S*: (?P<rest>.*)$", re.S)
_AFTER = re.compile(r"\s*\(after \d+ms in state [A-Z_]+(, \d+ identical error\(s\) suppressed)?\)")
# What a metadata request fails with while no broker has answered it yet.
_NOT_YET = frozenset({KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT})
_auth_lock = threading.Lock()
# Per cluster (servers_key of its bootstrap list): when, and what, it last refused.
_auth_seen: dict[str, tuple[float, str]] = {}

# Delivery-report errors of records purged at the end of a bounded flush: their outcome is
# unknown (they may have reached the broker), never a failure.
PURGED = frozenset({KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT})


def nothing_listens(servers: str, timeout: float = 1.0) -> str | None:
    """Why a fresh client that knows only `servers` ("host:port,...") can reach none of them:
    every address refused the TCP connection (nothing listens there). None when one accepted,
    did not answer within `timeout`, or could not be tried (a name, a form this does not read):
    the client then tries as it would have, and waits out its own timeout if it must.

    A fresh client can only bootstrap from these addresses, so where all of them refuse it
    would retry for its whole timeout (seconds) to fail the same way."""
    addresses = []
    for item in servers.split(","):
        host, sep, digits = item.strip().rpartition(":")
        if not sep or not host or not digits.isdigit():
            return None
        addresses.append((host.strip("[]"), int(digits)))
    if not addresses:
        return None
    for host, port in addresses:
        try:
            with socket.create_connection((host, port), timeout=timeout) as s:
                # A local port in the ephemeral range with nothing listening: the kernel can
                # connect the socket to itself. Anything else accepted: someone listens.
                if s.getsockname() != s.getpeername():
                    return None
        except ConnectionRefusedError:
            continue
        except OSError:
            return None
    return f"nothing listens at {servers} (connection refused)"


def auth_text(raw: str) -> str:
    """A person's sentence for librdkafka's text of a refused login or TLS handshake, which
    names the broker first: 'sasl_plaintext://HOST:PORT/ID: SASL authentication error: ...'."""
    raw = _AFTER.sub("", secrets.scrub(raw)).strip()
    m = _BROKER_TEXT.match(raw)
    if m is None:
        return f"authentication failed: {raw}"
    addr, rest = m["addr"], m["rest"]
    if rest.startswith("SASL authentication error: "):
        return f"authentication failed at broker {addr}: {sasl_detail(rest.partition(': ')[2])}"
    if rest.startswith("SSL handshake failed"):
        detail = rest.partition(": ")[2] or rest
        return f"TLS handshake with broker {addr} failed: {detail}"
    if (alert := _TLS_ALERT.search(rest)) is not None:
        said = alert.group(0).split(": SSL alert number")[0]
        said += f" (SSL alert number {alert['n']})" if alert["n"] else ""
        meaning = _CERT_ALERTS.get(alert["alert"].strip())
        if meaning is None:
            return f"TLS handshake with broker {addr} failed: {said}"
        return (
            f"TLS handshake with broker {addr} failed: {said}: {meaning} "
            "(ssl.certificate.location, ssl.key.location)"
        )
    return f"authentication failed at broker {addr}: {rest}"


# The alerts that refuse a client (not, say, one about a connection closing mid-drill).
_REFUSING_ALERTS = frozenset(
    {
        *_CERT_ALERTS,
        "handshake failure",
        "access denied",
        "protocol version",
        "insufficient security",
    }
)


# The broker's words for a wrong password (Kafka's SaslServerAuthenticator), said shorter.
_INVALID_CREDENTIALS = re.compile(
    r"Authentication failed during authentication due to invalid credentials with SASL "
    r"mechanism (?P<mechanism>\S+)"
)


def sasl_detail(text: str) -> str:
    """The broker's reason for a refused SASL login, as short as it can be said whole
    ('invalid credentials (SASL mechanism SCRAM-SHA-512)'): it is shown in pane borders."""
    return _INVALID_CREDENTIALS.sub(r"invalid credentials (SASL mechanism \g<mechanism>)", text)


def is_tls_alert(text: str) -> bool:
    """True when librdkafka's error text carries a TLS alert by which the broker refused the
    client (its certificate, its protocol), whatever the error's code."""
    alert = _TLS_ALERT.search(text)
    return alert is not None and alert["alert"].strip() in _REFUSING_ALERTS


def servers_key(servers: object) -> str:
    """One spelling of a bootstrap list ("h:p,h:p", or a list of them), for the refusals."""
    items = servers.split(",") if isinstance(servers, str) else list(servers or ())  # type: ignore[call-overload]
    return ",".join(sorted(str(s).strip() for s in items if str(s).strip()))


def note_auth_failure(servers: object, text: str) -> None:
    """Remember the latest refused login at the cluster of `servers` (a sentence, secrets
    scrubbed), for auth_failure."""
    with _auth_lock:
        _auth_seen[servers_key(servers)] = (time.monotonic(), secrets.scrub(text))


def auth_failure(servers: object, since: float) -> str | None:
    """What the cluster of `servers` refused of kconsole's credentials at or after `since`
    (monotonic)."""
    with _auth_lock:
        seen = _auth_seen.get(servers_key(servers))
    return seen[1] if seen is not None and seen[0] >= since else None


def rdkafka_error_cb(servers: object) -> Callable[[KafkaError], None]:
    """An error_cb for a librdkafka client of the cluster of `servers`: a refused login or TLS
    handshake is remembered (auth_failure); librdkafka retries the rest itself."""
    key = servers_key(servers)

    def on_error(err: KafkaError) -> None:
        code = err.code()
        if code in AUTH_ERROR_CODES or (code == KafkaError._TRANSPORT and is_tls_alert(err.str())):
            note_auth_failure(key, auth_text(err.str()))

    return on_error


def raise_if_auth_failed(servers: object, since: float) -> None:
    """AuthenticationFailed, if the cluster refused kconsole's credentials since `since`."""
    if (text := auth_failure(servers, since)) is not None:
        raise AuthenticationFailed(text)


def metadata(
    client: Any, servers: str, topic: str | None, timeout_s: float, *, slice_s: float = 0.5
) -> Any:
    """`client.list_topics(topic)` (a librdkafka Producer or AdminClient) within `timeout_s`,
    asked in slices of `slice_s`, so that a refused login or TLS handshake ends the wait at
    once, as AuthenticationFailed, rather than as a transport failure at the timeout."""
    start = time.monotonic()
    deadline = start + timeout_s
    while True:
        left = deadline - time.monotonic()
        try:
            return client.list_topics(topic, timeout=max(0.05, min(slice_s, left)))
        except KafkaException as exc:
            client.poll(0)  # serves error_cb
            raise_if_auth_failed(servers, start)
            err = exc.args[0] if exc.args else None
            waiting = isinstance(err, KafkaError) and err.code() in _NOT_YET
            if not waiting or time.monotonic() >= deadline - 0.05:
                raise


def diagnose_auth(settings_or_config: Settings | Mapping[str, Any], timeout_s: float = 3.0) -> None:
    """AuthenticationFailed if the cluster refuses kconsole's login or TLS handshake, as a
    fresh librdkafka client sees it within `timeout_s` (it stops at the first answer either
    way). For a failure seen through a client that cannot say why itself (a consumer, whose
    callbacks only its poll serves, or kafka-python's TLS handshake): a secured cluster that
    did not answer is asked once more, so the error names the refusal, not a timeout."""
    conf = {**client_config(settings_or_config), "logger": RDKAFKA_LOG}
    if not security.security(conf).sasl and not security.security(conf).tls:
        return
    if nothing_listens(str(conf.get("bootstrap.servers", "")), 0.5):
        return
    servers = str(conf.get("bootstrap.servers", ""))
    probe = Producer(conf)
    try:
        metadata(probe, servers, None, timeout_s)
    except KafkaException:
        return
    finally:
        probe.purge()


def client_config(settings_or_config: Settings | Mapping[str, Any]) -> dict[str, Any]:
    """librdkafka properties from Settings (bootstrap + -X) or a dict of them: secrets resolved,
    checked and translated (kconsole.cluster.security.translate.librdkafka_config); a new dict."""
    if isinstance(settings_or_config, Mapping):
        conf = security.librdkafka_config(settings_or_config)
    else:
        conf = security.librdkafka_config(
            settings_or_config.kafka_config(), settings_or_config.client_origin
        )
    conf.setdefault("error_cb", rdkafka_error_cb(conf.get("bootstrap.servers", "")))
    return conf


def admin_config(
    settings_or_config: Settings | Mapping[str, Any], timeout_s: float
) -> dict[str, Any]:
    """A librdkafka AdminClient (metadata only: see kconsole.cluster.admin) whose socket
    timeout is `timeout_s`, unless the configuration sets its own."""
    conf: dict[str, Any] = {"logger": RDKAFKA_LOG, "socket.timeout.ms": int(timeout_s * 1000)}
    conf.update(client_config(settings_or_config))
    return conf


def check_client_properties(client: Mapping[str, str], origin: Mapping[str, str]) -> None:
    """Refuse client properties librdkafka would refuse (an unknown name, a bad value), every
    one at once and each with where it came from (`origin`: "-X", "[client] in FILE", ...), before
    anything starts: a client made with them later would fail in a thread, far from the cause.
    Secrets are resolved first (a missing variable or file is said, with the property), and
    the settings must be ones every client of kconsole can use
    (kconsole.cluster.security.translate). ConfigError says it, never a secret's value."""

    def refusal(conf: Mapping[str, str]) -> str:
        try:
            # No bootstrap servers: librdkafka checks the configuration and connects nowhere.
            Producer({"bootstrap.servers": "", "logger": RDKAFKA_LOG, **conf})
        except (KafkaException, ValueError, TypeError) as exc:
            err = exc.args[0] if exc.args else exc
            return secrets.scrub(str(err.str() if hasattr(err, "str") else err))
        return ""

    ours = security.problems(client, origin)
    if ours:
        # With them, librdkafka's own word on the properties the translation does not read.
        rest = {
            k: v
            for k, v in client.items()
            if k not in security.TRANSLATED_KEYS
            and not k.startswith(security.ZOOKEEPER_PREFIX)
            and not k.endswith(secrets.FILE_SUFFIX)
            and "${" not in str(v)
        }
        theirs = [
            f"{k} (from {origin.get(k, 'the settings')}): {why}"
            for k, v in sorted(rest.items())
            if (why := refusal({k: v})) and not why.startswith("Failed to create")
        ]
        raise config_error(ours + theirs)
    client = security.librdkafka_config(client, origin)

    together = refusal(client) if client else ""
    if not together:
        return
    # A name or a value refused on its own; else the set does not go together (SASL without
    # its user, a mechanism this librdkafka lacks): said as librdkafka says it, with them all.
    bad = [
        (k, why)
        for k, v in sorted(client.items())
        if (why := refusal({k: v})) and not why.startswith("Failed to create")
    ]
    if bad:
        problems = [f"{k} (from {origin.get(k, 'the settings')}): {why}" for k, why in bad]
        lines = problems
    else:
        given = ", ".join(f"{k} (from {origin.get(k, 'the settings')})" for k in sorted(client))
        problems = [f"client properties: {together}; given: {given}"]
        lines = [together, f"given: {given}"]
    raise ConfigError(
        "librdkafka refuses these client properties; nothing was started:\n"
        + "\n".join(f"  {line}" for line in lines),
        problems=problems,
    )


def kafka_python_config(
    config: Mapping[str, Any], timeout_s: float, *, client_id: str = "kconsole-groups"
) -> dict[str, Any]:
    """kafka-python client arguments for a librdkafka configuration (`client_id` unless the
    configuration names its own): kconsole.cluster.security.translate.kafka_python_args, with
    timeouts."""
    out: dict[str, Any] = {"request_timeout_ms": int(timeout_s * 1000)}
    out.update(security.kafka_python_args(config))
    out.setdefault("client_id", client_id)
    # kafka-python waits 30 s for a first broker by default, whatever the request timeout:
    # with nothing answering, a read must fail in its own time, not half a minute later.
    out.setdefault("bootstrap_timeout_ms", int(max(1.0, timeout_s) * 1000))
    return out


def producer_config(
    settings_or_config: Settings | Mapping[str, Any],
    *,
    acks: str,
    linger_ms: int = 5,
    message_timeout_ms: int = 30000,
    request_timeout_ms: int | None = None,
    compression: str | None = None,
    retries: int | None = None,
    max_message_bytes: int | None = None,
    stats_cb: Callable[[str], None] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A keyed producer that puts keys where Java producers do, idempotent with acks=all.

    `request_timeout_ms` None: the message timeout, at most 30 s. `compression`, `retries`
    and `max_message_bytes` None leave librdkafka's defaults (no compression; retry until the
    message timeout; a 1000000-byte message limit). `stats_cb` turns on statistics every
    100 ms. `extra` is applied last and overrides anything.
    """
    conf = client_config(settings_or_config)
    conf.update(
        {
            "logger": RDKAFKA_LOG,
            "acks": acks,
            # Idempotence needs acks=all; with it, retries cannot duplicate or reorder.
            "enable.idempotence": acks == "all",
            # Java's default partitioner: keys land where Java producers put them.
            "partitioner": "murmur2_random",
            "linger.ms": linger_ms,
            "message.timeout.ms": message_timeout_ms,
            "request.timeout.ms": request_timeout_ms or min(30000, message_timeout_ms),
        }
    )
    if compression is not None:
        conf["compression.type"] = compression
    if retries is not None:
        # A few retries, not librdkafka's "forever until message.timeout.ms": a record that
        # keeps failing (NOT_ENOUGH_REPLICAS) then reports the broker's error, not a generic
        # _MSG_TIMED_OUT. Idempotence keeps retries free of duplicates.
        conf["retries"] = retries
        conf["retry.backoff.ms"] = 100
    if max_message_bytes is not None:
        conf["message.max.bytes"] = message_max_bytes(max_message_bytes)
    if stats_cb is not None:
        conf["statistics.interval.ms"] = 100
        conf["stats_cb"] = stats_cb
    conf.update(extra or {})
    return conf


def message_max_bytes(max_message_bytes: int) -> int:
    """librdkafka's message.max.bytes for a topic whose max.message.bytes is this: its own
    limit (1000000 by default) must not refuse what the topic accepts."""
    return max(1_000_000, max_message_bytes + 1024)


def groupless_consumer_config(settings_or_config: Settings | Mapping[str, Any]) -> dict[str, Any]:
    """Consumer properties that can never join, rebalance or commit for a real group.

    The consumer must assign() its partitions, never subscribe(). librdkafka insists on a
    group.id, so a unique throw-away one is set; with assign() and no commits it never exists
    on the broker.
    """
    conf = client_config(settings_or_config)
    conf.update(
        {
            "logger": RDKAFKA_LOG,
            "group.id": f"kconsole-verify-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": False,
        }
    )
    return conf
