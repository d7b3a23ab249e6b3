"""Sequence checker: gaps, duplicates and per-key order violations in the drill workload's
messages, found by Spark, with state that survives a restart.

    python jobs/sequence_checker.py --topic test-topic --checkpoint /tmp/seq-ck
    spark-submit --packages org.apache.spark:spark-sql-kafka-0-10_2.13:<spark version> \\
        jobs/sequence_checker.py --bootstrap kafka1:9092 --topic test-topic

The drill workload (kconsole/drills/workload.py) sends JSON values {"run", "key", "seq", "ts"}:
per run and key, seq counts 0, 1, 2, ... Records of other shapes are ignored. Per (run, key)
the job keeps: the highest seq seen, the ranges of seqs below it not seen yet, and per
partition the highest seq read there. Each record, in (partition, offset) order, is then:

- above the highest + 1: a **gap** (the seqs in between are missing so far);
- a seq that was missing: **late** (a gap closes; in the same partition it is also an order
  violation, below);
- at or below the highest and not missing: a **duplicate** (seen before at another offset);
- below the highest seq already read in its partition: an **order** violation.

Duplicates and order violations are exactly what kconsole's drill audit
(kconsole/drills/audit.py) calls duplicates and per-key order violations; a gap is the
streaming form of its "lost": missing *so far* (a late record may still fill it). The first
record of a key sets its baseline: seqs before it are not reported (the job may start mid-run).

Why applyInPandasWithState: the per-key state lives in Spark's state store, which is versioned
with every micro-batch inside the checkpoint. A restarted job (same --checkpoint) continues
from the last committed batch with exactly that state and those offsets, so nothing is read
twice and nothing found before is reported again. A foreachBatch with its own side file could
drift from the offsets it belongs to after a crash; Spark's plain aggregations cannot express
"in offset order". Keys idle for --state-timeout seconds are dropped (a finished run's keys).

Findings go to stdout ("finding" lines, and a "findings" summary per batch) and to a readable
sink: one JSON-lines file per batch in --output-dir, replaced whole if a batch is re-run.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _kconsole_jobs as common

NAME = "sequence_checker"
FINDING_FIELDS = (
    "run",
    "key",
    "kind",
    "seq",
    "seq_to",
    "partition",
    "offset",
    "after_seq",
    "after_offset",
)
OUTPUT_SCHEMA = (
    "run STRING, key STRING, kind STRING, seq LONG, seq_to LONG, partition INT, offset LONG, "
    "after_seq LONG, after_offset LONG"
)
STATE_SCHEMA = "state STRING"


def new_state() -> dict[str, Any]:
    """Per (run, key): lowest/highest seq seen, missing [lo, hi] ranges, per-partition top."""
    return {"low": None, "high": None, "missing": [], "top": {}}


def step(st: dict[str, Any], seq: int, partition: int, offset: int) -> list[dict[str, Any]]:
    """Apply one record to the state; return its findings (pure, so it is unit-tested)."""
    out: list[dict[str, Any]] = []

    def finding(kind: str, **kw: Any) -> None:
        out.append(
            {
                "kind": kind,
                "seq": seq,
                "seq_to": None,
                "partition": partition,
                "offset": offset,
                "after_seq": None,
                "after_offset": None,
                **kw,
            }
        )

    top = st["top"].get(str(partition))
    if top is not None and seq < top[0]:
        finding("order", after_seq=top[0], after_offset=top[1])
    if top is None or seq > top[0]:
        st["top"][str(partition)] = [seq, offset]

    low, high, missing = st["low"], st["high"], st["missing"]
    if high is None:
        st["low"] = st["high"] = seq
    elif seq > high:
        if seq > high + 1:
            missing.append([high + 1, seq - 1])
            finding("gap", seq=high + 1, seq_to=seq - 1)
        st["high"] = seq
    elif seq < low:
        if seq < low - 1:
            missing.insert(0, [seq + 1, low - 1])
            finding("gap", seq=seq + 1, seq_to=low - 1)
        st["low"] = seq
    else:
        for i, (lo, hi) in enumerate(missing):
            if lo <= seq <= hi:
                pieces = [[lo, seq - 1]] if lo < seq else []
                pieces += [[seq + 1, hi]] if seq < hi else []
                missing[i : i + 1] = pieces
                finding("late")
                break
        else:
            finding("duplicate")
    return out


def make_check_group(timeout_ms: int) -> Any:
    """The applyInPandasWithState function: one (run, key), this batch's records, its state."""

    def check_group(key: tuple[Any, ...], pdfs: Iterator[Any], state: Any) -> Iterator[Any]:
        import pandas as pd

        if state.hasTimedOut:
            state.remove()
            return
        st = json.loads(state.get[0]) if state.exists else new_state()
        batch = pd.concat(list(pdfs)).sort_values(["partition", "offset"])
        found: list[dict[str, Any]] = []
        for seq, part, off in zip(batch["seq"], batch["partition"], batch["offset"], strict=True):
            found.extend(step(st, int(seq), int(part), int(off)))
        state.update((json.dumps(st, separators=(",", ":")),))
        state.setTimeoutDuration(timeout_ms)
        if found:
            run, k = key
            yield pd.DataFrame(
                [{"run": run, "key": k, **f} for f in found], columns=list(FINDING_FIELDS)
            ).astype(_DTYPES)

    return check_group


_DTYPES = {
    "seq": "int64",
    "seq_to": "Int64",
    "partition": "int32",
    "offset": "int64",
    "after_seq": "Int64",
    "after_offset": "Int64",
}


def build_parser() -> Any:
    """The job's options: the common ones plus the run filter and limits."""
    p = common.parser(
        NAME, common.summary(__doc__), topic="test-topic", starting_offsets="earliest"
    )
    p.add_argument("--run", default=None, help="check only this workload run id")
    p.add_argument(
        "--state-timeout", type=float, default=3600.0, help="drop a key idle this many seconds"
    )
    p.add_argument(
        "--max-reported", type=int, default=200, help="finding lines per batch on stdout"
    )
    return p


def check(job: common.Job) -> None:
    job.check_kafka([job.args.topic])


def start(job: common.Job) -> Any:
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout

    a = job.args
    # A processing-time timeout would otherwise run a batch on every trigger just to look for
    # idle keys; idle keys are dropped when data arrives instead.
    job.spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "false")
    msg = F.from_json(F.col("value").cast("string"), "run STRING, key STRING, seq LONG")
    records = (
        job.source()
        .select(msg.alias("m"), "partition", "offset")
        .select("m.run", "m.key", "m.seq", "partition", "offset")
        .where(F.col("run").isNotNull() & F.col("key").isNotNull() & F.col("seq").isNotNull())
    )
    if a.run:
        records = records.where(F.col("run") == a.run)
    findings = records.groupBy("run", "key").applyInPandasWithState(
        make_check_group(int(a.state_timeout * 1000)),
        OUTPUT_SCHEMA,
        STATE_SCHEMA,
        "append",
        GroupStateTimeout.ProcessingTimeTimeout,
    )

    def sink(batch: Any, batch_id: int) -> None:
        rows = sorted(
            (r.asDict() for r in batch.collect()),
            key=lambda r: (r["run"], r["key"], r["partition"], r["offset"], r["kind"]),
        )
        if not rows:
            return
        common.write_jsonl(job.output_dir, batch_id, rows)
        for r in rows[: max(0, a.max_reported)]:
            job.emit("finding", batchId=batch_id, **r)
        counts: dict[str, int] = {}
        for r in rows:
            counts[r["kind"]] = counts.get(r["kind"], 0) + 1
        job.emit("findings", batchId=batch_id, counts=counts, total=len(rows))

    writer = (
        findings.writeStream.outputMode("append")
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
