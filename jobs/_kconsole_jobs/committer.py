"""The consumer-group commit: each batch's end offsets copied to the job's group, for observers
(needs confluent_kafka; the job makes a Committer only when it is importable)."""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable

from .confluent import Consumer, KafkaException, TopicPartition, kafka_reason


class Committer(threading.Thread):
    """Commits end offsets to the job's consumer group, so the console's groups pane (log end -
    committed) shows how far behind the job is. Spark's Kafka source never commits offsets (its
    checkpoint is the truth); this copy is for observers. A plain consumer that never joins the
    group commits them (the group stays empty, so nothing is rebalanced), on its own thread so a
    slow coordinator never delays progress reports."""

    def __init__(
        self,
        args: argparse.Namespace,
        warn: Callable[[str], None],
        on_commit: Callable[[dict[tuple[str, int], int]], None] | None = None,
    ):
        super().__init__(daemon=True, name="group-commit")
        self.args = args
        self._warn = warn
        self._on_commit = on_commit  # told each commit the group acknowledged
        self._cond = threading.Condition()
        self._pending: dict[tuple[str, int], int] | None = None
        self._done: dict[tuple[str, int], int] = {}
        self._closing = False
        conf = {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group_id,
            "enable.auto.commit": False,
            "log_level": 2,
        }
        conf.update(dict(args.admin_option))
        self._consumer = Consumer(conf)

    def offer(self, end: dict[tuple[str, int], int]) -> None:
        """The newest end offsets to commit (replaces any not committed yet)."""
        with self._cond:
            self._pending = dict(end)
            self._cond.notify()

    def run(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._closing:
                    self._cond.wait()
                end, self._pending = self._pending, None
                closing = self._closing
            if end is not None and end != self._done:
                tps = [TopicPartition(t, p, off) for (t, p), off in sorted(end.items())]
                try:
                    self._consumer.commit(offsets=tps, asynchronous=False)
                    self._done = end
                    if self._on_commit is not None:
                        self._on_commit(end)
                except KafkaException as exc:
                    self._warn(
                        f"could not commit offsets to group {self.args.group_id}: "
                        f"{kafka_reason(exc)}"
                    )
            if closing and self._pending is None:
                self._consumer.close()
                return

    def close(self, timeout: float) -> None:
        """Commit what is pending, close the consumer; wait at most `timeout` seconds."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        self.join(timeout)
