"""The Spark side of a job: the SparkSession (in local mode with the connector jars from
kconsole's cache), the Kafka source, the trigger. Under spark-submit its own --master, --jars
and --packages apply and are not overridden."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .errors import JobFailure, coordinate_hint

# Set by spark-submit for the Python driver it launches: then spark-submit's own --master,
# --jars and --packages apply and the job does not override them.
UNDER_SPARK_SUBMIT = "PYSPARK_GATEWAY_PORT" in os.environ
_REDACT = r"(?i)secret|password|token|access[.]?key|jaas|keystore\.key"


def build_session(name: str, master: str | None, args: argparse.Namespace) -> Any:
    """The SparkSession; in local mode with the connector jars from kconsole's cache."""
    if not UNDER_SPARK_SUBMIT and not os.environ.get("JAVA_HOME") and not _which("java"):
        raise JobFailure("Java is not installed: no java on PATH and JAVA_HOME is not set")
    from pyspark.sql import SparkSession

    b = SparkSession.builder.appName(f"kconsole-{name}")
    if master:
        b = b.master(master)
    if args.jars is not None:
        if args.jars:
            b = b.config("spark.jars", args.jars)
    elif not UNDER_SPARK_SUBMIT:
        jars, packages = _connector()
        if jars:
            b = b.config("spark.jars", ",".join(jars))
        else:
            b = b.config("spark.jars.packages", packages)
    conf = {
        "spark.sql.shuffle.partitions": str(args.shuffle_partitions),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        # Secrets in the Kafka options never reach the log or a plan string: Spark redacts
        # options and settings whose name or value matches these (its defaults, plus the JAAS
        # config's and the PEM key's names).
        "spark.redaction.regex": _REDACT,
        "spark.sql.redaction.options.regex": f"(?i)url|{_REDACT.removeprefix('(?i)')}",
    }
    if master and master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        conf["spark.driver.host"] = "127.0.0.1"
        conf["spark.driver.bindAddress"] = "127.0.0.1"
    if not UNDER_SPARK_SUBMIT:
        # Python workers (local executors, and standalone ones on this machine) run the
        # driver's Python unless told otherwise: it has pandas and pyarrow.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf.update(dict(args.conf))
    for k, v in conf.items():
        b = b.config(k, v)
    return b.getOrCreate()


def kafka_options(args: argparse.Namespace) -> dict[str, str]:
    """Options for Spark's Kafka source and sink: bootstrap plus -X properties."""
    opts = {"kafka.bootstrap.servers": args.bootstrap}
    opts.update({f"kafka.{k}": v for k, v in args.kafka_option})
    return opts


def source(spark: Any, args: argparse.Namespace) -> Any:
    """The Kafka topic as a streaming DataFrame (key, value, topic, partition, offset,
    timestamp, ...)."""
    r = (
        spark.readStream.format("kafka")
        .options(**kafka_options(args))
        .option("subscribe", args.topic)
        .option("startingOffsets", args.starting_offsets)
        .option("failOnDataLoss", args.fail_on_data_loss)
    )
    if args.max_offsets_per_trigger:
        r = r.option("maxOffsetsPerTrigger", str(args.max_offsets_per_trigger))
    return r.load()


def trigger(writer: Any, args: argparse.Namespace) -> Any:
    """The writer with the job's trigger: --available-now, else every --trigger seconds."""
    if args.available_now:
        return writer.trigger(availableNow=True)
    return writer.trigger(processingTime=f"{args.trigger} seconds")


def _connector() -> tuple[list[str], str]:
    """(cached jar paths, Maven coordinate): the jars from kconsole's cache when kconsole is
    importable (resolved with Maven on first use), else only the coordinate for Spark to fetch."""
    try:
        from kconsole.cluster import jars
    except ImportError:
        return [], coordinate_hint()
    inst = jars.pyspark_install()
    return [str(p) for p in jars.ensure_spark_kafka_jars(inst)], jars.spark_kafka_coordinate(inst)


def _which(name: str) -> str | None:
    import shutil

    return shutil.which(name)
