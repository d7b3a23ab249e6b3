"""Which cluster and which incarnation of the topic a checkpoint belongs to, so that a job never
resumes one from elsewhere without saying so.

Spark's checkpoint holds offsets but not whose they are: a checkpoint written on a cluster that
was since recreated, or for a topic that was deleted and created again, resumes at offsets that
mean nothing there. So kconsole writes its own record beside the checkpoint directory (which is
Spark's): `<checkpoint>.kconsole.json` with the cluster id and each topic's Kafka topic id (a new
one for every incarnation of a topic). On a start the job compares that record with the cluster
it is connected to. A checkpoint from another cluster or topic incarnation, or one with no record
(written before kconsole kept one), is not resumed: the job fails with the way out,
--fresh-checkpoint, which moves the old checkpoint aside (nothing is deleted) and starts anew.

Spark's layout read here: `offsets/<batch>` (written when a batch is planned: a version line, a
metadata line, then one JSON line per source, {topic: {partition: offset}}) and `commits/<batch>`
(written when it is done). A restart re-runs a planned batch that has no commit, so it reads from
the end offsets of the newest committed batch; `sources/0/0` holds the offsets the first batch
started from.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

SUFFIX = ".kconsole.json"


@dataclass(frozen=True)
class Identity:
    """The cluster and the topics' incarnations a run reads (None where it could not be read)."""

    cluster_id: str | None
    topic_ids: dict[str, str | None] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"cluster_id": self.cluster_id, "topic_ids": dict(self.topic_ids)}


def record_path(checkpoint: str) -> str:
    """kconsole's record beside a checkpoint directory."""
    return os.path.abspath(checkpoint).rstrip(os.sep) + SUFFIX


def read_record(checkpoint: str) -> dict[str, Any] | None:
    """The identity recorded beside the checkpoint; None when there is none or it is unreadable."""
    try:
        with open(record_path(checkpoint), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_record(checkpoint: str, identity: Identity, job: str, bootstrap: str) -> None:
    """Record (atomically) whose checkpoint this is: written when a run starts one."""
    path = record_path(checkpoint)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = {
        **identity.as_json(),
        "job": job,
        "bootstrap": bootstrap,
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2)
    os.replace(tmp, path)


def _batches(directory: str) -> list[int]:
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return sorted(int(n) for n in names if n.isdigit())


def has_progress(checkpoint: str) -> bool:
    """Whether Spark would resume anything from this checkpoint (offsets planned or a source's
    initial offsets written): a missing or empty one starts from --starting-offsets."""
    ck = os.path.abspath(checkpoint)
    if _batches(os.path.join(ck, "offsets")):
        return True
    return any(
        _batches(os.path.join(ck, "sources", s)) for s in _listdir(os.path.join(ck, "sources"))
    )


def _listdir(directory: str) -> list[str]:
    try:
        return sorted(os.listdir(directory))
    except OSError:
        return []


def _offset_lines(path: str) -> dict[str, dict[str, int]]:
    """The {topic: {partition: offset}} lines of an offsets file (other lines are skipped)."""
    out: dict[str, dict[str, int]] = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return out
    for line in text.replace("\0", "").splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        for topic, parts in data.items():
            if isinstance(parts, dict) and all(isinstance(v, int) for v in parts.values()):
                out.setdefault(str(topic), {}).update({str(p): int(v) for p, v in parts.items()})
    return out


def resume_point(checkpoint: str) -> tuple[int | None, dict[str, dict[str, int]]]:
    """(newest committed batch, the offsets a restart reads from): the end offsets of that batch,
    or the source's initial offsets when no batch was committed (batch None)."""
    ck = os.path.abspath(checkpoint)
    planned = set(_batches(os.path.join(ck, "offsets")))
    committed = [b for b in _batches(os.path.join(ck, "commits")) if b in planned]
    if committed:
        batch = committed[-1]
        return batch, _offset_lines(os.path.join(ck, "offsets", str(batch)))
    initial: dict[str, dict[str, int]] = {}
    for s in _listdir(os.path.join(ck, "sources")):
        for b in _batches(os.path.join(ck, "sources", s))[:1]:
            for t, parts in _offset_lines(os.path.join(ck, "sources", s, str(b))).items():
                initial.setdefault(t, {}).update(parts)
    return None, initial


def mismatch(recorded: dict[str, Any] | None, here: Identity, topics: list[str]) -> str | None:
    """Why the checkpoint is not this cluster's and these topics' (None: it is, as far as both
    sides could be read)."""
    if recorded is None:
        return (
            f"there is no record beside it ({SUFFIX}) of the cluster and topic it was written "
            "for (a checkpoint from before kconsole kept one), so it may be another cluster's "
            "or an earlier incarnation of the topic's"
        )
    then = recorded.get("cluster_id")
    if then and here.cluster_id and then != here.cluster_id:
        return (
            f"it was written on cluster {then} (at {recorded.get('bootstrap', '?')}, recorded "
            f"{recorded.get('recorded_at', '?')}), and this is cluster {here.cluster_id}"
        )
    raw = recorded.get("topic_ids")
    ids: dict[str, Any] = raw if isinstance(raw, dict) else {}
    for topic in topics:
        was, now = ids.get(topic), here.topic_ids.get(topic)
        if was and now and was != now:
            return (
                f"it was written for topic {topic} with topic id {was} (recorded "
                f"{recorded.get('recorded_at', '?')}), and {topic} here has id {now}: the topic "
                "was deleted and created again since"
            )
        if topic not in ids:
            return f"it was written for other topics ({', '.join(sorted(ids)) or 'none'})"
    return None


def out_of_range(
    offsets: dict[str, dict[str, int]], ranges: dict[tuple[str, int], tuple[int, int]]
) -> list[str]:
    """Each partition whose resume offset is outside the log as it is now: beyond its end (the
    log was truncated) or below its start (records deleted before the job read them)."""
    out = []
    for topic, parts in sorted(offsets.items()):
        for p, off in sorted(parts.items(), key=lambda kv: int(kv[0])):
            rng = ranges.get((topic, int(p)))
            if rng is None or off < 0:  # -1/-2: Spark's latest/earliest, not an offset
                continue
            start, end = rng
            if off > end:
                out.append(
                    f"{topic}/{p}: checkpoint offset {off:,} is beyond the log end {end:,} "
                    f"(the log was truncated: {off - end:,} offsets gone)"
                )
            elif off < start:
                out.append(
                    f"{topic}/{p}: checkpoint offset {off:,} is below the log start {start:,} "
                    f"(offsets {off:,}-{start - 1:,} were deleted before the job read them)"
                )
    return out


def move_aside(checkpoint: str) -> str:
    """Rename the checkpoint (and kconsole's record beside it) to `<checkpoint>.old-<time>`;
    returns the new path. Nothing is deleted."""
    ck = os.path.abspath(checkpoint).rstrip(os.sep)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    dest = f"{ck}.old-{stamp}"
    n = 1
    while os.path.exists(dest) or os.path.exists(dest + SUFFIX):
        n += 1
        dest = f"{ck}.old-{stamp}-{n}"
    if os.path.exists(ck):
        os.rename(ck, dest)
    if os.path.exists(ck + SUFFIX):
        os.rename(ck + SUFFIX, dest + SUFFIX)
    return dest


def offsets_text(offsets: dict[str, dict[str, int]]) -> str:
    """{topic: {partition: offset}} in one line, partitions in order."""
    return json.dumps(
        {t: {p: o for p, o in sorted(parts.items(), key=lambda kv: int(kv[0]))}
         for t, parts in sorted(offsets.items())},
        separators=(", ", ": "),
    )  # fmt: skip
