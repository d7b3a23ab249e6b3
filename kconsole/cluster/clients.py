"""Configuration of kconsole's own Kafka clients, built in one place.

Every producer kconsole creates (the produce command, the drill workload) comes from
`producer_config`, every consumer that must stay out of consumer groups (the verifier, a
tail without a group) from `groupless_consumer_config`, every librdkafka admin client from
`admin_config`, and every kafka-python admin client's arguments from `kafka_python_config`.
The security settings in them come from one translation, kconsole.cluster.security (which also
resolves secrets from the environment and from files, each time a client is made).
librdkafka's log lines go to the `kconsole.rdkafka` Python logger, never to the terminal, with
every known secret scrubbed from them.
"""

from __future__ import annotations

import logging
import socket
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaError, KafkaException, Producer

from kconsole import secrets
from kconsole.cluster import security
from kconsole.errors import ConfigError, config_error

if TYPE_CHECKING:  # the cluster layer does not depend on the settings module at run time
    from kconsole.config import Settings

# Every librdkafka client logs here: librdkafka never prints to the terminal.
RDKAFKA_LOG = logging.getLogger("kconsole.rdkafka")
RDKAFKA_LOG.addFilter(secrets.ScrubFilter())

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


def client_config(settings_or_config: Settings | Mapping[str, Any]) -> dict[str, Any]:
    """librdkafka properties from Settings (bootstrap + -X) or a dict of them: secrets resolved,
    checked and translated (kconsole.cluster.security.librdkafka_config); a new dict."""
    if isinstance(settings_or_config, Mapping):
        return security.librdkafka_config(settings_or_config)
    return security.librdkafka_config(
        settings_or_config.kafka_config(), settings_or_config.client_origin
    )


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
    the settings must be ones every client of kconsole can use (kconsole.cluster.security).
    ConfigError says it, never a secret's value."""

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
    configuration names its own): kconsole.cluster.security.kafka_python_args, with timeouts."""
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
