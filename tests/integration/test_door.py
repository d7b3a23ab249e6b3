"""Read-only refuses every registered command with no side effect, on the real cluster: no
record on any topic, no consumer group joined or moved, no process signalled, no file written.

RECIPES runs each registered command as its callers do; a command added to the registry
without a recipe here fails `test_every_command_has_a_recipe`.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from confluent_kafka.admin import AdminClient, ConfigResource

from kconsole.cli import main
from kconsole.cluster.backends import LocalBrokerControl
from kconsole.cluster.local.cluster import LocalCluster
from kconsole.cluster.settings import TEST_TOPIC
from kconsole.cluster.tail import StartAt
from kconsole.cluster.values import BrokerAction, NetLinks
from kconsole.commands import REGISTRY, AuditLog, Commands, ReadOnlyError, yes
from kconsole.config import Settings
from kconsole.drills.spec import DrillSpec
from kconsole.drills.verify import end_offsets
from kconsole.jobs import JobRun
from kconsole.jobs.manager import JobManager
from kconsole.observer import ClusterObserver
from kconsole.reassign.plan import Move, Plan
from tests.integration.conftest import on_preferred_leaders
from tests.integration.net_support import kconsole_rules
from tests.unit.test_door import CLI_ARGS, MUTATING_CLI
from tests.unit.test_jobs import write_fake
from tests.waiting import wait_until

pytestmark = pytest.mark.integration
GROUP = "door-test-group"


@dataclass
class World:
    cluster: LocalCluster
    settings: Settings
    jobs: JobManager
    run: JobRun  # a run of a fake job, active, for job.stop
    tmp: Path


def settings_for(cluster: LocalCluster) -> Settings:
    return Settings(bootstrap=cluster.spec.bootstrap, zookeeper=cluster.spec.zk_connect)


RECIPES: dict[str, Callable[[Commands, World], Any]] = {
    "broker.stop": lambda c, w: c.broker(BrokerAction.STOP, 2, yes),
    "broker.kill": lambda c, w: c.broker(BrokerAction.KILL, 2, yes),
    "broker.pause": lambda c, w: c.broker(BrokerAction.PAUSE, 2, yes),
    "broker.resume": lambda c, w: c.broker(BrokerAction.RESUME, 2, yes),
    "broker.start": lambda c, w: c.broker(BrokerAction.START, 2, yes),
    "broker.isolate": lambda c, w: c.broker(BrokerAction.ISOLATE, 2, yes),
    "broker.partition": lambda c, w: c.broker(
        BrokerAction.PARTITION, 2, yes, links=NetLinks.parse("zookeeper")
    ),
    "broker.slow": lambda c, w: c.broker(
        BrokerAction.SLOW, 2, yes, links=NetLinks.parse("brokers", rate=65_536)
    ),
    "broker.heal": lambda c, w: c.broker(BrokerAction.HEAL, 2, yes),
    "cluster.up": lambda c, w: c.cluster_up(timeout=30),
    "cluster.down": lambda c, w: c.cluster_down(),
    "cluster.purge": lambda c, w: c.cluster_down(purge=True, confirm=yes),
    "produce": lambda c, w: c.produce(TEST_TOPIC, [(b"k", b"v", [])] * 10),
    "tail.group": lambda c, w: c.open_tail(TEST_TOPIC, None, StartAt("beginning"), GROUP),
    "job.start": lambda c, w: c.start_job("fake", {"topic": TEST_TOPIC}),
    "job.stop": lambda c, w: c.stop_job(w.run.run_id),
    "drill.run": lambda c, w: c.drill_run(
        DrillSpec(fault="kill", target="broker:2", duration_s=13), yes
    ),
    "reassign.execute": lambda c, w: c.reassign_execute(
        Plan((Move(TEST_TOPIC, 0, (3, 1, 2)),)),
        ClusterObserver(w.settings).read_once(),
        confirm=yes,
        throttle_bps=1000,
    ),
    "reassign.cancel": lambda c, w: c.reassign_cancel(None, confirm=yes),
    "reassign.unthrottle": lambda c, w: c.reassign_unthrottle([TEST_TOPIC], [1, 2, 3]),
    "elect.preferred": lambda c, w: c.elect("preferred", None, confirm=yes),
    "elect.unclean": lambda c, w: c.elect("unclean", [(TEST_TOPIC, 0)], confirm=yes),
}

THROTTLE_KEYS = (
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
)


def throttles(admin: AdminClient, brokers: list[int]) -> dict[str, dict[str, str]]:
    """The throttle settings on every broker and on test-topic (set by a reassignment)."""
    resources = [ConfigResource("broker", str(b)) for b in brokers]
    resources.append(ConfigResource("topic", TEST_TOPIC))
    out = {}
    for resource in resources:  # librdkafka takes one broker resource per call
        for res, fut in admin.describe_configs([resource], request_timeout=10).items():
            entries = fut.result()
            out[f"{res.restype}:{res.name}"] = {
                k: e.value for k, e in entries.items() if k in THROTTLE_KEYS and e.value
            }
    return out


def settled(w: World) -> None:
    """Every partition led by its preferred replica (see on_preferred_leaders)."""
    on_preferred_leaders(w.cluster)


def observe(w: World) -> dict[str, Any]:
    """Everything a modifying command could have changed."""
    admin = AdminClient({"bootstrap.servers": w.cluster.spec.bootstrap})
    topics = sorted(t for t in admin.list_topics(timeout=10).topics if not t.startswith("__"))
    groups = admin.list_consumer_groups(request_timeout=10).result()
    sd = w.cluster.state_dir
    files = {
        str(p.relative_to(sd)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sd.rglob("*")
        if p.is_file() and p.suffix in {".properties", ".cfg", ".json", ".pid"}
        and not {"logs", "data"} & set(p.parts)
    }  # fmt: skip
    metadata = admin.list_topics(timeout=10)
    assignment = {
        (t, p.id): (p.leader, tuple(p.replicas))
        for t, tm in metadata.topics.items()
        for p in tm.partitions.values()
    }
    return {
        "assignment": assignment,
        "throttles": throttles(admin, sorted(metadata.brokers)),
        # Read until every leader answers: metadata may still be settling after an election.
        "records": wait_until(
            lambda: {t: end_offsets(w.settings, t, timeout_s=5) for t in topics}, 30, "end offsets"
        ),
        "groups": sorted(g.group_id for g in groups.valid),
        "processes": [(p.name, p.state, p.pid) for p in w.cluster.status().processes],
        "files": files,
        "dirs": sorted(p.name for p in sd.iterdir()),
        "runs": [(r.run_id, r.state, r.pid) for r in w.jobs.runs()],
        "network rules": kconsole_rules(w.cluster.state_dir),  # an isolate refused adds none
    }


@pytest.fixture(scope="module")
def world(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("door")
    settings = settings_for(cluster)
    jobs = JobManager(tmp / "jobs-state", settings, jobs_directory=write_fake(tmp / "jobs").parent)
    # The group coordinator's topic is created by the first group lookup: have it exist before
    # the first observation, or it would appear between two of them.
    admin = AdminClient({"bootstrap.servers": cluster.spec.bootstrap})
    # Creating __consumer_offsets (50 partitions) took over 30 s with the machine at load 25.
    admin.describe_consumer_groups(["door-warm-up"])["door-warm-up"].result(timeout=90)
    cluster.wait_metadata_everywhere("__consumer_offsets", time.monotonic() + 60)
    run = jobs.start("fake", {"topic": TEST_TOPIC})
    try:
        yield World(cluster, settings, jobs, run, tmp)
    finally:
        jobs.stop(run.run_id, timeout_s=10)
        assert not jobs.get(run.run_id).active


def test_every_command_has_a_recipe() -> None:
    assert set(RECIPES) == set(REGISTRY)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_read_only_refuses_with_no_side_effect(
    name: str, world: World, healthy: LocalCluster, tmp_path: Path
) -> None:
    wait_until(lambda: world.jobs.get(world.run.run_id).active, 20, "the fake job running")
    log = AuditLog(tmp_path / "audit.jsonl")
    door = Commands.for_settings(
        Settings(
            bootstrap=world.settings.bootstrap,
            zookeeper=world.settings.zookeeper,
            read_only=True,
            read_only_reason="--read-only",
        ),
        LocalBrokerControl(world.cluster),
        cluster_dir=world.cluster.state_dir,
        jobs=world.jobs,
        audit=log,
    )
    settled(world)
    before = observe(world)
    with pytest.raises(ReadOnlyError, match=r"read-only mode \(--read-only\): refusing to"):
        RECIPES[name](door, world)
    assert observe(world) == before
    (entry,) = log.entries()
    assert (entry["command"], entry["outcome"]) == (name, "refused")
    assert entry["cluster_id"]  # asked of the real cluster
    assert entry["bootstrap"] == world.settings.bootstrap


@pytest.mark.parametrize("path", sorted(MUTATING_CLI))
def test_cli_read_only_refuses_with_no_side_effect(
    path: str, world: World, healthy: LocalCluster, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    args = [
        a.replace("{dir}/jobs", str(world.jobs.state_dir.parent)).replace(
            "{dir}", str(world.cluster.state_dir)
        )
        for a in CLI_ARGS[path]
    ]
    if path == "jobs stop":
        args[-1] = world.run.run_id
    if path == "drill run":
        args[args.index("--report") + 1] = str(tmp_path / "r.json")
    settled(world)
    before = observe(world)
    res = CliRunner().invoke(
        main,
        ["--read-only", "-b", world.settings.bootstrap, "-z", world.settings.zookeeper, *args],
        env={"KCONSOLE_STATE_DIR": str(state), "KCONSOLE_JOBS_DIR": str(world.tmp / "jobs")},
    )
    assert res.exit_code == 4, res.output
    assert observe(world) == before
    assert not (tmp_path / "r.json").exists()
    entries = list(AuditLog(state / "audit.jsonl").entries())
    assert [(e["command"], e["outcome"]) for e in entries] == [(MUTATING_CLI[path], "refused")]
