"""Keyed counts: how many records each key had in each event-time window, from a Kafka topic.

    python jobs/keyed_counts.py --topic test-topic --window 10 --watermark 30
    spark-submit --master spark://HOST:7077 \\
        --packages org.apache.spark:spark-sql-kafka-0-10_2.13:<spark version> \\
        jobs/keyed_counts.py --bootstrap kafka1:9092 --topic test-topic

Event time is the Kafka record's timestamp (CreateTime: when the producer made it). Counts are
per (tumbling window, key), with a watermark: records more than --watermark seconds older than
the newest event time seen are dropped, and the state of windows behind the watermark is freed.

Output mode. `update` (default): every micro-batch writes the new count of each (window, key)
it changed, so a count shows up one trigger after its record arrived; a window's count is
revised while its records keep arriving, and the last record per (window, key) is the current
count (the output topic reads like a changelog: a compacted topic would keep exactly those).
`append`: each (window, key) is written once, final, when the watermark passes the window's
end — exact, but only after window + watermark seconds and only once newer records move the
watermark. The console wants live numbers, hence update.

Sinks, both written from foreachBatch (one micro-batch = one write to each):
- the output Kafka topic (--output-topic, default test-topic-counts; created when missing):
  key "<key>@<window start>", value JSON {window_start, window_end, key, count, batch};
- a readable sink: one JSON-lines file per batch in --output-dir (batch-000000012.jsonl), each
  replaced whole, so a batch that is re-run after a crash overwrites its own file.
A sample of each batch's rows is also printed as an "output" line on stdout.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _kconsole_jobs as common

NAME = "keyed_counts"
_TS = "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"  # the session time zone is UTC


def build_parser() -> Any:
    """The job's options: the common ones plus windowing and outputs."""
    p = common.parser(NAME, common.summary(__doc__), topic="test-topic", starting_offsets="latest")
    p.add_argument("--window", type=float, default=10.0, help="window length, seconds")
    p.add_argument(
        "--watermark", type=float, default=30.0, help="how late (seconds) a record may be"
    )
    p.add_argument(
        "--output-mode", choices=["update", "append"], default="update", help="see the docstring"
    )
    p.add_argument(
        "--output-topic", default="test-topic-counts", help="Kafka topic for the counts ('' = none)"
    )
    p.add_argument("--show", type=int, default=10, help="rows per batch echoed on stdout")
    return p


def check(job: common.Job) -> None:
    parts = job.check_kafka([job.args.topic])
    if job.args.output_topic:
        job.ensure_topic(job.args.output_topic, parts.get(job.args.topic, 1))


def start(job: common.Job) -> Any:
    from pyspark.sql import functions as F

    a = job.args
    counts = (
        job.source()
        .select(F.col("key").cast("string").alias("key"), F.col("timestamp").alias("event_time"))
        .withWatermark("event_time", f"{a.watermark} seconds")
        .groupBy(F.window("event_time", f"{a.window} seconds"), "key")
        .count()
        .select(
            F.date_format("window.start", _TS).alias("window_start"),
            F.date_format("window.end", _TS).alias("window_end"),
            "key",
            "count",
        )
    )
    kafka_opts = job.kafka_options()

    def sink(batch: Any, batch_id: int) -> None:
        t0 = time.monotonic()
        batch.persist()
        try:
            rows = [r.asDict() for r in batch.collect()]
            t1 = time.monotonic()
            if rows and a.output_topic:
                (
                    batch.select(
                        F.concat_ws("@", F.coalesce("key", F.lit("")), "window_start").alias("key"),
                        F.to_json(
                            F.struct(
                                "window_start",
                                "window_end",
                                "key",
                                "count",
                                F.lit(batch_id).alias("batch"),
                            )
                        ).alias("value"),
                    )
                    .write.format("kafka")
                    .options(**kafka_opts)
                    .option("topic", a.output_topic)
                    .save()
                )
            t2 = time.monotonic()
        finally:
            batch.unpersist()
        if rows:
            common.write_jsonl(job.output_dir, batch_id, rows)
        rows.sort(key=lambda r: (r["window_start"], -r["count"], r["key"] or ""))
        took = {"count": t1 - t0, "kafka": t2 - t1, "file": time.monotonic() - t2}
        job.emit(
            "output",
            batchId=batch_id,
            rows=len(rows),
            sinkMs={k: round(v * 1000) for k, v in took.items()},
            sample=rows[: max(0, a.show)],
        )

    writer = (
        counts.writeStream.outputMode(a.output_mode)
        .foreachBatch(sink)
        .option("checkpointLocation", a.checkpoint)
        .queryName(NAME)
    )
    return job.trigger(writer).start()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return common.Job(NAME, args).run(start, check)


if __name__ == "__main__":
    sys.exit(main())
