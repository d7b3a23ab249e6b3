"""What every kconsole Structured Streaming job shares: its options, the Spark session, the Kafka
source, progress as JSON lines on stdout, the consumer-group commit and a graceful stop.

Only the standard library and pyspark are needed, so a job runs under plain `spark-submit` as
well as under `python jobs/<job>.py`. When confluent_kafka is importable (it is in kconsole's
venv) the driver also checks Kafka and the topic before starting Spark, creates a missing output
topic, and commits each batch's end offsets to a consumer group.

A job script puts its own directory first on sys.path and does `import _kconsole_jobs as
common`; everything it uses is re-exported here. The package runs on the driver only: the
functions Spark ships to executors are the scripts' own. By concern:

    options     the common command line, client properties from the environment
    spark       the SparkSession, the Kafka source, the trigger
    preflight   Kafka checked before Spark starts, the output topic created
    emitter     the stdout protocol, progress lines, the log, the readable sink
    committer   each batch's end offsets committed to the job's consumer group
    checkpoint  whose checkpoint it is (cluster id, topic ids), what a restart resumes from
    job         Job: the run that ties them together; watch_parent
    errors      JobFailure and failure reasons;  confluent: the optional confluent_kafka

The stdout protocol (one JSON object per line, nothing else on stdout):

    {"type": "state", "state": "starting|running|stopping|stopped|failed|finished", ...}
    {"type": "checkpoint", "status": "new|resuming|fresh|refused|unverified", "message": ...}
    {"type": "progress", "batchId": 7, "numInputRows": 120, "offsetsBehindLatest": 41, ...}
    {"type": "commit", "group": "...", "offsets": {"topic": {"0": 1204}}}   (acknowledged)
    {"type": "warning", "message": "..."}
    plus job-specific lines ("output", "finding", "findings")

Everything else — Spark's and Kafka's logging, the JVM's output — goes to stderr.
"""

from __future__ import annotations

from .confluent import HAVE_CONFLUENT_KAFKA
from .emitter import Emitter, jsonable, log, progress_line, write_jsonl
from .errors import JobFailure
from .job import Job, watch_parent
from .options import DEFAULT_BOOTSTRAP, key_value, parser, positive_or_zero, summary
from .spark import UNDER_SPARK_SUBMIT

__all__ = [
    "DEFAULT_BOOTSTRAP",
    "HAVE_CONFLUENT_KAFKA",
    "UNDER_SPARK_SUBMIT",
    "Emitter",
    "Job",
    "JobFailure",
    "jsonable",
    "key_value",
    "log",
    "parser",
    "positive_or_zero",
    "progress_line",
    "summary",
    "watch_parent",
    "write_jsonl",
]
