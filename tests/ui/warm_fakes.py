"""A producer kept open, without librdkafka: what the produce dialog's session sees of the real
WarmProducer (made, warmed, its id, closed), so that no screen test ever connects anywhere."""

from __future__ import annotations

import threading

from kconsole.cluster.produce.outcome import ProducerClosed
from kconsole.cluster.produce.send import WarmProducer

PRODUCER_ID = 4242  # the id the fake's broker hands out


class FakeWarm(WarmProducer):
    """WarmProducer's state machine as the real one goes through it on a healthy cluster:
    made (start), ready with an id once warmed, closed once. Every one made is in `made`."""

    made: list[FakeWarm] = []
    lock_made = threading.Lock()

    def start(self) -> None:
        if self.created_at is not None:
            return
        self.created_at = self.clock()
        with FakeWarm.lock_made:
            FakeWarm.made.append(self)

    @property
    def usable(self) -> bool:
        return self.created_at is not None and not self.spent and self.closed is None

    def warm(self, topic: str | None, timeout_s: float = 10.0) -> bool:
        self.start()
        if self.ready_at is None:
            self.ready_at = self.clock()
            self.producer_id = PRODUCER_ID
        return True

    def close(self, timeout_s: float = 5.0) -> ProducerClosed:
        if self.closed is None:
            self.closed = ProducerClosed(self.lock.locked(), False, True)
        return self.closed
