"""Kafka client properties for a job: kconsole's (librdkafka's, -X) translated for Spark's Java
client and the driver's librdkafka clients (kconsole.cluster.security.translate), handed to the job
in a file only the user can read (never on its command line, in its environment, job.json or log),
and secrets redacted from whatever is written down (job.json, argv)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kconsole.cluster.security import translate as security

# The run's secret file (in its run directory, mode 0600): the job reads and removes it at
# start, and the manager removes it when the run has ended, whatever happened.
CLIENT_FILE = "client.json"
CLIENT_FILE_ENV = "KCONSOLE_JOB_CLIENT_FILE"


def job_client(
    client: Mapping[str, str], origin: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """What a job gets of kconsole's client properties (kconsole.cluster.security.translate): the
    librdkafka properties for the driver's checks and group commit ("admin"), the Java client
    properties for Spark's Kafka source and sink without their `kafka.` prefix ("kafka"), the
    JVM system properties they need ("jvm") and the properties with no Java translation
    ("untranslated"). Secrets are resolved: this goes only into the run's secret file."""
    spark = security.spark_kafka_options(client, origin)
    return {
        "admin": dict(security.librdkafka_config(client, origin)),
        "kafka": {k.removeprefix("kafka."): v for k, v in spark.options.items()},
        "jvm": dict(spark.jvm_properties),
        "untranslated": list(spark.untranslated),
    }


def write_client_file(path: Path, payload: Mapping[str, Any]) -> None:
    """Write `payload` (job_client) to `path`, readable and writable by this user only, from
    its creation on (never a moment with wider permissions)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(payload, f)


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
