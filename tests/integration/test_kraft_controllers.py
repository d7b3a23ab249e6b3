"""A killed KRaft controller shown down, on the real KRaft cluster of the run (conftest.py's
`kraft_healthy`: 3 controllers + 3 brokers, Kafka 4.4.0), held against Kafka's own
`kafka-metadata-quorum describe --replication`; and shown back up once started again.

The quorum leader is the one killed: the new leader has never had a fetch from it, so Kafka's
tool reports its log end offset -1 (a killed follower keeps its last one, with a growing lag).
Two observers watch: one with the local backend, as `kconsole` on its own cluster (the process
state says "down" at once), one with nothing but the quorum, as against a cluster kconsole did
not start (no fetch for longer than controller.quorum.fetch.timeout.ms: "unreachable")."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from kconsole.cluster.kraft.cluster import KRaftCluster
from kconsole.commands import Commands
from kconsole.config import Settings
from kconsole.describe import render_text
from kconsole.models import BrokerState, ClusterMode, ClusterSnapshot
from kconsole.observer import ClusterObserver
from kconsole.timeline import Event, EventKind
from tests.integration.kraft_support import metadata_quorum_tool, quorum_whole, restart_node
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

# A stopped process is read every 0.25 s and a quorum every 0.4 s: "down" within seconds.
DOWN_WITHIN_S = 10.0
# The election (~2 s) + controller.quorum.fetch.timeout.ms (2 s) watched + polls, on a busy box.
UNREACHABLE_WITHIN_S = 30.0


class Watcher:
    """A live observer's latest snapshot and every event, as the console receives them."""

    def __init__(self, observer: ClusterObserver):
        self.observer = observer
        self.lock = threading.Lock()
        self.snap: ClusterSnapshot | None = None
        self.events: list[Event] = []

    def __call__(self, snap: ClusterSnapshot, events: tuple[Event, ...]) -> None:
        with self.lock:
            self.snap = snap
            self.events.extend(events)

    def state(self, cid: int) -> BrokerState | None:
        with self.lock:
            c = self.snap.controller_status(cid) if self.snap is not None else None
        return c.state if c is not None else None

    def all_up(self, ids: list[int]) -> bool:
        return all(self.state(c) is BrokerState.UP for c in ids)

    def kinds(self, kind: EventKind, cid: int) -> list[Event]:
        with self.lock:
            return [e for e in self.events if e.kind is kind and e.broker == cid]


def _describe_json(cluster: KRaftCluster) -> dict[str, Any]:
    """`kconsole describe --json` as a user runs it against this cluster (no backend: the
    test cluster is not in kconsole's own state dir)."""
    done = subprocess.run(
        [sys.executable, "-m", "kconsole", "-b", cluster.spec.bootstrap, "-z", "", "describe",
         "--json"],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.stdout.strip(), done.stderr[-2000:]
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def _replication(cluster: KRaftCluster) -> dict[int, list[str]]:
    """Kafka's `describe --replication`: node id -> its row (NodeId DirectoryId LogEndOffset
    Lag LastFetchTimestamp LastCaughtUpTimestamp Status)."""
    out = metadata_quorum_tool(cluster, "describe", "--replication")
    rows = [ln.split() for ln in out.splitlines()[1:] if ln.strip()]
    return {int(r[0]): r for r in rows}


def test_a_killed_controller_is_shown_down_then_back(kraft_healthy: KRaftCluster) -> None:
    cluster = kraft_healthy
    spec = cluster.spec
    wait_until(lambda: quorum_whole(cluster), 120, "the quorum whole")
    ids = sorted(spec.controller_ids)
    settings = Settings(bootstrap=spec.bootstrap, zookeeper="")
    door = Commands.for_settings(settings, cluster_dir=cluster.state_dir, origin="console")
    controller_states = door.controller_states()
    assert controller_states is not None and set(controller_states()) == set(ids)
    backed = Watcher(
        ClusterObserver(
            settings, proc_states=door.broker_states(), controller_states=controller_states
        )
    )
    bare = Watcher(ClusterObserver(settings))
    started: list[Watcher] = []
    try:
        for w in (backed, bare):
            w.observer.start(w)
            started.append(w)
        for w in (backed, bare):
            wait_until(lambda w=w: w.all_up(ids), 60, "every controller up")  # type: ignore[misc]
        # Opening the console is no change: no leader event (the metadata's random
        # "controller" never feeds the quorum leader's "was").
        for w in (backed, bare):
            with w.lock:
                assert not [e for e in w.events if e.kind is EventKind.CONTROLLER_CHANGED]
                assert w.snap is not None and w.snap.quorum is not None
                assert not w.snap.quorum.leader_seen_elected  # it led before we looked
        # describe on a healthy cluster: the first sighting is not the election time.
        first = _describe_json(cluster)
        assert first["mode"] == ClusterMode.KRAFT.value
        q0 = first["quorum"]
        assert q0["leader_seen_since"] is not None and q0["leader_seen_elected"] is False
        assert first["controller"]["since"] is None
        assert {c["id"]: c["state"] for c in first["controllers"]} == {c: "up" for c in ids}

        with backed.lock:
            assert backed.snap is not None
            leader = backed.snap.controller.id
        assert leader in ids
        name = f"controller-{leader}"
        killed = time.time()
        cluster.process(name).signal(signal.SIGKILL)
        try:
            wait_until(
                lambda: backed.state(leader) is BrokerState.DOWN, DOWN_WITHIN_S, "shown down"
            )
            down_after = time.time() - killed
            wait_until(
                lambda: bare.state(leader) is BrokerState.UNREACHABLE,
                UNREACHABLE_WITHIN_S,
                "shown unreachable from the quorum alone",
            )
            unreachable_after = time.time() - killed
            # Kafka's own tool agrees: the new leader has had no fetch from it.
            rows = wait_until(
                lambda: (r := _replication(cluster)).get(leader, [""] * 3)[2] == "-1" and r,
                60,
                "kafka-metadata-quorum: LogEndOffset -1",
            )
            new_leader = next(int(r[0]) for r in rows.values() if r[-1] == "Leader")
            assert new_leader != leader
            with backed.lock:
                assert backed.snap is not None
                reason = backed.snap.controller_status(leader).reason  # type: ignore[union-attr]
                text = render_text(backed.snap)
            assert reason == "process not running"
            assert "controllers: 3, 1 down" in text
            with bare.lock:
                assert bare.snap is not None
                bare_reason = bare.snap.controller_status(leader).reason  # type: ignore[union-attr]
                q = bare.snap.quorum
            assert f"no fetch reached leader {new_leader} since its election" in bare_reason
            # an election kconsole saw: its time is known (within a poll)
            assert q is not None and q.leader_seen_elected and q.previous_leader == leader
            downs = backed.kinds(EventKind.CONTROLLER_DOWN, leader)
            assert downs and downs[0].text == f"controller {leader} is down: process not running"
            assert bare.kinds(EventKind.CONTROLLER_DOWN, leader)
            # `kconsole describe --json` with no backend: unreachable, with the reason.
            shown = _describe_json(cluster)
            mine = next(c for c in shown["controllers"] if c["id"] == leader)
            assert mine["state"] == "unreachable", mine
            assert "since its election" in mine["reason"]
            print(
                f"\ncontroller {leader} killed: down (backend) after {down_after:.2f} s, "
                f"unreachable (quorum only) after {unreachable_after:.2f} s"
            )
            with bare.lock:
                for e in bare.events:
                    print(f"  quorum only, +{e.ts - killed:.2f} s: {e.kind.value} {e.text}")
        finally:
            restart_node(cluster, name)
        back = time.time()
        for w in (backed, bare):
            wait_until(lambda w=w: w.all_up(ids), 60, "every controller up again")  # type: ignore[misc]
            assert w.kinds(EventKind.CONTROLLER_UP, leader)
        print(f"controller {leader} back up in both observers {time.time() - back:.2f} s later")
        assert {c["id"]: c["state"] for c in _describe_json(cluster)["controllers"]} == {
            c: "up" for c in ids
        }
    finally:
        for w in started:
            w.observer.stop()
