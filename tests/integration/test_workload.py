"""The drill workload, the verifying consumer and the audit against the real cluster: on a
healthy cluster every acked record is read back exactly once, in order, on the partition
Java's murmur2 partitioner picks."""

from __future__ import annotations

from collections import Counter

import pytest
from kafka.partitioner.default import murmur2

from kconsole.cluster.local.cluster import LocalCluster
from kconsole.cluster.settings import TEST_TOPIC, TEST_TOPIC_PARTITIONS
from kconsole.config import Settings
from kconsole.drills.audit import Acks, check
from kconsole.drills.verify import end_offsets, read_back
from kconsole.drills.workload import Workload, WorkloadResult
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

RATE = 200.0


def settings_for(cluster: LocalCluster) -> Settings:
    return Settings(
        bootstrap=cluster.spec.bootstrap,
        zookeeper=cluster.spec.zk_connect,
        cluster_dir=cluster.state_dir,
    )


def run(settings: Settings, acks: Acks, acked_target: int) -> WorkloadResult:
    wl = Workload(settings, TEST_TOPIC, acks=acks, rate=RATE, keys=16)
    wl.start()
    try:
        wait_until(lambda: wl.counters().acked >= acked_target, 60, f"{acked_target} acks")
    finally:
        result = wl.stop(flush_timeout_s=15)
    return result


def java_partition(key: str, partitions: int) -> int:
    return (murmur2(key.encode()) & 0x7FFFFFFF) % partitions


def test_acks_all_every_acked_record_read_back_once_in_order(healthy: LocalCluster) -> None:
    settings = settings_for(healthy)
    before = end_offsets(settings, TEST_TOPIC)
    assert sorted(before) == list(range(TEST_TOPIC_PARTITIONS))

    result = run(settings, "all", acked_target=int(RATE * 3))

    assert result.finished and result.error is None
    # start() waited for the producer id, so start-up is not part of the no-success window.
    assert result.ready_s is not None and not result.notes
    assert result.failed == () and result.unknown == ()
    assert len(result.acked) == result.sent >= RATE * 3
    # Scheduled by absolute time: the count matches the rate over the sending time.
    sending_s = result.stopped_at - result.started_at
    assert result.sent == pytest.approx(RATE * sending_s, rel=0.05, abs=3)

    rb = read_back(
        settings,
        TEST_TOPIC,
        result.run_id,
        start_offsets=before,
        timeout_s=30,
        until=result.acked,
    )
    assert rb.complete, rb
    seen = Counter((c.key, c.seq) for c in rb.records)
    assert seen == Counter({(a.key, a.seq): 1 for a in result.acked})
    # The offsets the producer was told are the ones the records are at.
    assert {(c.key, c.seq): (c.partition, c.offset) for c in rb.records} == {
        (a.key, a.seq): (a.partition, a.offset) for a in result.acked
    }

    audit = check(
        result.acked,
        result.failed,
        rb.records,
        send_times=result.send_times,
        unknown=result.unknown,
        acks=result.acks,
    )
    assert audit.ok, audit.markdown()
    assert (audit.acked, audit.read_back) == (len(result.acked), len(result.acked))
    assert audit.duplicates == audit.order_violations == audit.moved == ()
    assert audit.failed_by_code == {} and audit.unknown == 0 and audit.unaccounted == 0
    assert audit.longest_no_success is not None and audit.longest_no_success.seconds < 1.0

    # Per-key sequences start at 0 and have no gaps: every send was acked.
    for key, count in Counter(a.key for a in result.acked).items():
        assert sorted(a.seq for a in result.acked if a.key == key) == list(range(count))
    # Keys land where Java's default (murmur2) partitioner puts them.
    for a in result.acked:
        assert a.partition == java_partition(a.key, TEST_TOPIC_PARTITIONS), a


def test_acks_zero_reports_sent_not_acknowledged(healthy: LocalCluster) -> None:
    settings = settings_for(healthy)
    before = end_offsets(settings, TEST_TOPIC)
    result = run(settings, "0", acked_target=int(RATE))

    assert not result.acknowledged
    assert result.acked and {a.offset for a in result.acked} == {-1}  # librdkafka: no offset
    assert any("acks=0" in n for n in result.notes)

    rb = read_back(settings, TEST_TOPIC, result.run_id, start_offsets=before, timeout_s=30)
    audit = check(result.acked, result.failed, rb.records, send_times=result.send_times, acks="0")
    assert audit.lost == ()  # nothing was promised, so nothing can be called lost
    assert "acks=0: sends are not acknowledged" in audit.markdown()
    for c in rb.records:
        assert c.partition == java_partition(c.key, TEST_TOPIC_PARTITIONS), c
