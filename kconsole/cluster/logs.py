"""A process's log, read: the last whole lines of a text file. Apart from kconsole.cluster.procs
(which sends signals), so the command line that prints a log imports nothing that acts."""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path


def tail_lines(path: Path, lines: int) -> list[str]:
    """The last `lines` whole lines of a text file, read from the end.

    Only whole lines: a JVM writing its log flushes a buffer at a time, so the end of the file
    can hold the first half of a line (shown whole by the next read), and a read that starts
    inside the file starts inside a line."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            block = min(size, max(8192, lines * 400))
            fh.seek(size - block)
            data = fh.read(block)
    except OSError:
        return []
    end = data.rfind(b"\n")
    if end < 0:
        return []
    start = data.find(b"\n") + 1 if block < size else 0
    return data[start : end + 1].decode("utf-8", "replace").splitlines()[-lines:]


# Kafka's log4j layout: "[2026-12-06 13:34:25,193] INFO [Controller id=3] Resigned (...)"
_RESIGNED = re.compile(
    r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\] INFO \[Controller id=(\d+)\] Resigned\b"
)


def log_time(stamp: str, millis: str) -> float:
    """A log4j time stamp (local time, as the JVM on this machine wrote it) in epoch seconds."""
    return time.mktime(time.strptime(stamp, "%Y-%m-%d %H:%M:%S")) + int(millis) / 1000


def resignations(lines: list[str], since: float) -> list[tuple[float, int]]:
    """(when, controller id) of each "[Controller id=N] Resigned" line at or after `since`: a
    ZooKeeper-mode controller giving up the role (on a controlled shutdown, or when it finds
    its ZooKeeper session expired: a zombie that learned of the new epoch)."""
    out = []
    for line in lines:
        m = _RESIGNED.match(line)
        if m is not None:
            ts = log_time(m.group(1), m.group(2))
            if ts >= since:
                out.append((ts, int(m.group(3))))
    return out


# A follower's fetcher truncating its log to the leader's end for its epoch (KIP-101):
# "[ReplicaFetcher replicaId=2, leaderId=3, fetcherId=0] Truncating partition test-topic-0 with
# TruncationState(offset=3465, completed=true) due to leader epoch and offset
# EpochEndOffset(errorCode=0, partition=0, leaderEpoch=2, endOffset=3465)"
_TRUNCATED = re.compile(
    r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\] INFO \[ReplicaFetcher "
    r"replicaId=(\d+), leaderId=(\d+), fetcherId=\d+\] Truncating partition (\S+)-(\d+) with "
    r"TruncationState\(offset=(\d+), completed=\w+\) due to leader epoch and offset "
    r"EpochEndOffset\(errorCode=\d+, partition=\d+, leaderEpoch=(\d+), endOffset=-?\d+\)"
)


@dataclass(frozen=True)
class Truncation:
    """A replica truncated to its leader's log end for the leader's epoch, as its log says."""

    ts: float
    broker: int  # the replica that truncated
    leader: int  # the leader it was to follow
    topic: str
    partition: int
    offset: int  # its log ends here after the truncation
    leader_epoch: int


def truncations(lines: list[str], since: float) -> list[Truncation]:
    """The truncations (KIP-101, by leader epoch) the log `lines` show at or after `since`."""
    out = []
    for line in lines:
        m = _TRUNCATED.match(line)
        if m is None:
            continue
        ts = log_time(m.group(1), m.group(2))
        if ts >= since:
            out.append(
                Truncation(
                    ts,
                    int(m.group(3)),
                    int(m.group(4)),
                    m.group(5),
                    int(m.group(6)),
                    int(m.group(7)),
                    int(m.group(8)),
                )
            )
    return out
