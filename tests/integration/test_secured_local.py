"""The secured local clusters, for real: `--security sasl-scram` and `--security ssl --mtls`.

Each is started once for this module (on free ports, in a temporary state dir, always torn
down), and checked as a client sees it: the cluster's own credentials produce and read back
acknowledged records, kconsole's readers (confluent-kafka's Admin API, kafka-python's group
reads) get through, a client without them is refused, and no secret is on a command line or in
a file of the cluster's other than the one meant to hold it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from kconsole.cli.main import main as cli
from kconsole.cluster import reaper
from kconsole.cluster.local import LocalCluster, LocalClusterSpec
from kconsole.cluster.procs import ProcState
from kconsole.cluster.settings import TEST_TOPIC
from tests.integration.conftest import pick_ports

pytestmark = pytest.mark.integration

MODES = {"sasl-scram": {"security": "sasl-scram"}, "ssl-mtls": {"security": "ssl", "mtls": True}}


@pytest.fixture(scope="module", params=list(MODES))
def secured(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    zk_port, base_port = pick_ports(3)
    spec = LocalClusterSpec(zk_port=zk_port, base_port=base_port, **MODES[request.param])
    local = LocalCluster(tmp_path_factory.mktemp(f"secured-{request.param}"), spec)
    watchdog = reaper.start_reaper(local.state_dir)
    try:
        local.up(timeout=240)
        yield local
    finally:
        local.down(timeout=20)
        watchdog.terminate()
        watchdog.wait(10)
        left = [p.name for p in local.status().processes if p.state is not ProcState.STOPPED]
        assert not left, f"processes left running after down: {left}"


def test_the_clusters_credentials_produce_and_read_back(secured: LocalCluster) -> None:
    config = {"bootstrap.servers": secured.spec.bootstrap, **secured.client_config()}
    producer = Producer({**config, "acks": "all", "enable.idempotence": True})
    acked: list[tuple[bytes, bytes]] = []

    def on_delivery(err: object, msg: object) -> None:
        assert err is None, err
        acked.append((msg.key(), msg.value()))  # type: ignore[attr-defined]

    run = uuid.uuid4().hex[:8]
    for i in range(20):
        producer.produce(TEST_TOPIC, value=f"{run}-{i}", key=f"k{i % 4}", on_delivery=on_delivery)
    assert producer.flush(30) == 0
    assert len(acked) == 20
    consumer = Consumer({**config, "group.id": f"secured-{run}", "auto.offset.reset": "earliest"})
    consumer.subscribe([TEST_TOPIC])
    seen: set[bytes] = set()
    try:
        for _ in range(300):
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None and msg.value().startswith(run.encode()):
                seen.add(msg.value())
            if len(seen) == 20:
                break
    finally:
        consumer.close()
    assert seen == {v for _, v in acked}


def test_kconsole_reaches_it_with_no_security_flags(secured: LocalCluster, tmp_path: Path) -> None:
    """The cluster's own client settings apply when the bootstrap is its: `describe` reads it
    through both client libraries (the Admin API with confluent-kafka, the groups with
    kafka-python) and `produce` sends acknowledged records, with no -X given."""
    args = ["--bootstrap", secured.spec.bootstrap, "--zookeeper", secured.spec.zk_connect]
    env = {"KCONSOLE_CLUSTER_DIR": str(secured.state_dir), "KCONSOLE_STATE_DIR": str(tmp_path)}
    runner = CliRunner()
    res = runner.invoke(cli, [*args, "--backend", "none", "describe", "--json"], env=env)
    assert res.exit_code == 0, res.output
    snap = json.loads(res.output)
    sources = {s["name"]: s for s in snap["sources"]}
    assert sources["admin"]["ok"] and sources["groups"]["ok"], sources
    assert {b["id"] for b in snap["brokers"]} == {1, 2, 3}
    assert any(p["topic"] == TEST_TOPIC for p in snap["partitions"])
    sent = runner.invoke(
        cli, [*args, "produce", "-t", TEST_TOPIC, "-k", "k", "-v", "v", "-n", "3"], env=env
    )
    assert sent.exit_code == 0, sent.output
    assert "sent 3, acked 3, failed 0" in sent.output


def test_a_client_without_them_is_refused(secured: LocalCluster) -> None:
    errors: list[str] = []
    plain = AdminClient(
        {"bootstrap.servers": secured.spec.bootstrap, "error_cb": lambda e: errors.append(str(e))}
    )
    with pytest.raises(KafkaException):
        plain.list_topics(timeout=3)
    if secured.spec.mtls:  # TLS with the CA but no certificate of its own
        no_cert = {
            k: v
            for k, v in secured.client_config().items()
            if not k.startswith(("ssl.key", "ssl.cert"))
        }
        admin = AdminClient({"bootstrap.servers": secured.spec.bootstrap, **no_cert})
        with pytest.raises(KafkaException):
            admin.list_topics(timeout=3)


def test_no_secret_on_a_command_line_or_in_the_clusters_files(secured: LocalCluster) -> None:
    if secured.spec.security != "sasl-scram":
        key = (secured.security_files().dir / "ca.key").read_text()
        holders = [
            p
            for p in secured.state_dir.rglob("*")
            if p.is_file() and key in p.read_text(errors="replace")
        ]
        assert holders == [secured.security_files().ca_key]
        return
    files = secured.security_files()
    client = files.client_password.read_text().strip()
    broker = files.broker_password.read_text().strip()
    for proc in psutil.process_iter(["cmdline"]):
        line = " ".join(proc.info["cmdline"] or ())
        assert client not in line and broker not in line, (
            f"a secret on pid {proc.pid}'s command line"
        )
    client_holders, broker_holders = [], []
    for path in secured.state_dir.rglob("*"):
        # every file but Kafka's preallocated, all-zero index files
        if path.is_file() and path.suffix not in (".index", ".timeindex"):
            text = path.read_text(errors="replace")
            if client in text:
                client_holders.append(path)
            if broker in text:
                broker_holders.append(path)
    assert client_holders == [files.client_password]  # ZooKeeper keeps only its hash
    assert set(broker_holders) == {
        files.broker_password,
        *(secured.proc_dir(f"broker-{b}") / "server.properties" for b in (1, 2, 3)),
    }
    for path in broker_holders:
        assert path.stat().st_mode & 0o077 == 0, f"{path} is readable by others"
