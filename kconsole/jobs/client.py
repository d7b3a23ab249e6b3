"""Kafka client properties for a job: librdkafka's (kconsole's -X) translated for Spark's Java
client, and secrets redacted from whatever is written down (job.json, argv)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any


def java_kafka_options(client: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """librdkafka client properties (kconsole's -X) as Java client properties for Spark's
    Kafka source and sink; returns (translated, names it could not translate)."""
    out: dict[str, str] = {}
    left: list[str] = []
    c = dict(client)
    for same in ("security.protocol", "sasl.mechanism", "client.id"):
        if same in c:
            out[same] = c.pop(same)
    if "sasl.mechanisms" in c:
        out["sasl.mechanism"] = c.pop("sasl.mechanisms")
    user, password = c.pop("sasl.username", None), c.pop("sasl.password", None)
    if user is not None and password is not None:
        mech = out.get("sasl.mechanism", "PLAIN").upper()
        module = (
            "org.apache.kafka.common.security.scram.ScramLoginModule"
            if mech.startswith("SCRAM")
            else "org.apache.kafka.common.security.plain.PlainLoginModule"
        )
        out["sasl.jaas.config"] = (
            f'{module} required username="{_jaas(user)}" password="{_jaas(password)}";'
        )
    if "ssl.ca.location" in c:
        out["ssl.truststore.type"] = "PEM"
        out["ssl.truststore.location"] = c.pop("ssl.ca.location")
    if c.pop("enable.ssl.certificate.verification", "true").lower() == "false":
        out["ssl.endpoint.identification.algorithm"] = ""
    left = sorted(c)
    return out, left


def _jaas(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


_SECRET = re.compile(r"password|secret|jaas|token|key\.pem|ssl\.key", re.I)


def redacted(options: Mapping[str, Any]) -> dict[str, Any]:
    """Options with secret-looking values (and KEY=VALUE items) replaced by ***."""
    out: dict[str, Any] = {}
    for k, v in options.items():
        if isinstance(v, list | tuple):
            out[k] = [_redact_kv(str(i)) for i in v]
        else:
            out[k] = "***" if _SECRET.search(k) else v
    return out


def redacted_argv(argv: list[str]) -> list[str]:
    """A command line with secret-looking KEY=VALUE arguments redacted."""
    return [_redact_kv(a) for a in argv]


def _redact_kv(item: str) -> str:
    key, sep, _value = item.partition("=")
    return f"{key}=***" if sep and _SECRET.search(key) else item
