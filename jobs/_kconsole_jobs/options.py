"""A job's options: the command line every job shares (each job adds its own), and the client
properties kconsole hands over in a file only the user can read."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile

DEFAULT_BOOTSTRAP = os.environ.get(
    "KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094"
)


def key_value(text: str) -> tuple[str, str]:
    """argparse type for KEY=VALUE options."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


# kconsole.jobs.specs recognises this type by its name (a float option): keep the name.
def positive_or_zero(text: str) -> float:
    value = float(text)
    if not value >= 0:  # NaN too
        raise argparse.ArgumentTypeError(f"must be >= 0, not {text}")
    return value


def summary(doc: str | None) -> str:
    """The first paragraph of a docstring, on one line."""
    return " ".join((doc or "").strip().split("\n\n")[0].split())


def parser(
    job: str, description: str, *, topic: str, starting_offsets: str
) -> argparse.ArgumentParser:
    """The options every job takes; the job adds its own."""
    p = argparse.ArgumentParser(
        prog=f"{job}.py",
        description=description,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--bootstrap", default=DEFAULT_BOOTSTRAP, help="Kafka bootstrap servers")
    p.add_argument("--topic", default=topic, help="topic to read")
    p.add_argument(
        "--starting-offsets",
        default=starting_offsets,
        help="earliest, latest, or Spark's JSON form; only for a new checkpoint",
    )
    p.add_argument(
        "--trigger",
        type=positive_or_zero,
        default=2.0,
        help="seconds between micro-batches (0: each batch starts when the last one ends)",
    )
    p.add_argument(
        "--checkpoint",
        default=os.path.join(tempfile.gettempdir(), "kconsole-jobs", job, "checkpoint"),
        help="checkpoint dir: offsets and state; a restart with the same dir resumes",
    )
    p.add_argument(
        "--fresh-checkpoint",
        action="store_true",
        help="move an existing checkpoint aside (renamed, not deleted) and start anew from "
        "--starting-offsets; needed when it belongs to another cluster or topic incarnation",
    )
    p.add_argument(
        "--output-dir",
        default=None,
        help="readable sink: one JSON-lines file per batch (default: beside the checkpoint)",
    )
    p.add_argument(
        "--master",
        default=None,
        help="Spark master: local[*] (default), local[2], spark://HOST:PORT; under "
        "spark-submit its --master applies",
    )
    p.add_argument(
        "--group-id",
        default=f"kconsole-job-{job.replace('_', '-')}",
        help="consumer group the end offset of each batch is committed to ('' = none)",
    )
    p.add_argument(
        "--max-offsets-per-trigger", type=int, default=None, help="cap on records per batch"
    )
    p.add_argument("--shuffle-partitions", type=int, default=4, help="spark.sql.shuffle.partitions")
    p.add_argument(
        "--fail-on-data-loss",
        choices=["true", "false"],
        default="true",
        help="fail when offsets were deleted before they were read (Spark's failOnDataLoss)",
    )
    p.add_argument(
        "-X",
        "--kafka-option",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Java Kafka client property for Spark's source and sink (SASL, SSL), e.g. "
        "security.protocol=SASL_SSL; repeatable",
    )
    p.add_argument(
        "--admin-option",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="librdkafka property for the driver's checks and group commit; repeatable",
    )
    p.add_argument(
        "--conf",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Spark configuration, e.g. spark.ui.enabled=true; repeatable",
    )
    p.add_argument(
        "--jars",
        default=None,
        help="comma-separated connector jars (default: kconsole's cache when run with python)",
    )
    p.add_argument("--log-level", default="WARN", help="Spark's log level (to stderr)")
    p.add_argument(
        "--available-now",
        action="store_true",
        help="process what is in the topic now, then finish",
    )
    p.add_argument(
        "--preflight-timeout",
        type=float,
        default=10.0,
        help="seconds to wait for Kafka when checking it before starting Spark",
    )
    p.add_argument(
        "--stop-grace",
        type=float,
        default=10.0,
        help="on SIGTERM, seconds to let a running batch finish before stopping",
    )
    # Internal: kconsole passes its pid so an attached job stops when the console is gone.
    p.add_argument("--stop-with-parent", type=int, default=None, help=argparse.SUPPRESS)
    return p


def client_from_env(args: argparse.Namespace) -> list[str]:
    """Client properties kconsole hands over in a file only the user can read, named by
    KCONSOLE_JOB_CLIENT_FILE (kept off the command line and the environment, as they may hold
    secrets): merged under the command line's -X / --admin-option / --conf. The file is removed
    once read. Returns warnings."""
    path = os.environ.pop("KCONSOLE_JOB_CLIENT_FILE", "")
    if not path:
        return []
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as exc:
        return [f"the client properties in {path} could not be read: {type(exc).__name__}"]
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
    if not isinstance(data, dict):
        return [f"the client properties in {path} are not a JSON object: ignored"]
    args.kafka_option = list((data.get("kafka") or {}).items()) + list(args.kafka_option)
    args.admin_option = list((data.get("admin") or {}).items()) + list(args.admin_option)
    jvm = " ".join(f"-D{k}={v}" for k, v in (data.get("jvm") or {}).items())
    if jvm:
        given = dict(args.conf)
        for which in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
            given[which] = f"{given[which]} {jvm}" if given.get(which) else jvm
        args.conf = list(given.items())
    left = data.get("untranslated") or []
    if left:
        return [f"client properties not passed to Spark's Kafka client: {', '.join(left)}"]
    return []
