"""Why a job failed, said so a person can act on it: JobFailure for the job's own checks, and
a line or two (with a hint for the common cases) for Spark's errors."""

from __future__ import annotations

import re


class JobFailure(Exception):
    """A failure with a reason a person can act on (reported as the failed state's reason)."""


_PY_ERROR = re.compile(r"^(?:[\w.]+\.)?\w*(?:Error|Exception): .+")


def failure_reason(exc: BaseException) -> str:
    """What went wrong, in a line or two: a Python error inside Spark (a traceback relayed by
    the JVM) by its last line, a Java one by its first lines; hints for the common ones."""
    text = str(exc).strip() or type(exc).__name__
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    py_errors = [ln for ln in lines if _PY_ERROR.match(ln) and not ln.startswith("at ")]
    if "Traceback (most recent call last)" in text and py_errors:
        head = py_errors[-1][:600]
    else:
        head = " ".join(lines[:3])[:600]
    hints = [
        (
            r"Failed to find (the )?data source: kafka",
            "the Kafka connector jars are missing: run 'kconsole jobs fetch' or pass "
            "--packages " + coordinate_hint(),
        ),
        ("JAVA_GATEWAY_EXITED", "Java could not start (is Java installed? see the log)"),
        ("UnknownTopicOrPartition", "a topic does not exist"),
    ]
    for needle, hint in hints:
        if re.search(needle, text):
            return f"{hint}: {head}"
    return head


def coordinate_hint() -> str:
    """The connector's Maven coordinate for the installed pyspark (a placeholder without it)."""
    try:
        import pyspark

        return f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark.__version__}"
    except ImportError:
        return "org.apache.spark:spark-sql-kafka-0-10_2.13:<your Spark version>"
