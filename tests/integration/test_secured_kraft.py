"""The secured local KRaft cluster, for real: `--mode kraft --security sasl-scram`.

Started once for this module (3 controllers + 3 brokers, on free ports, in a temporary state
dir, always torn down by the pids it recorded) and checked as a client sees it: the SCRAM users
created when the storage was formatted produce and read back acknowledged records, `kconsole
describe` reads the brokers, the groups and the metadata quorum with no -X, a plaintext client
and a wrong password are refused, a user with no ACL is denied (the StandardAuthorizer runs),
and no secret is on a command line or in a file of the cluster's other than the ones meant to
hold it. (`--security ssl --mtls` was checked by hand; a second cluster would double the cost.)
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from kconsole.cli.main import main as cli
from kconsole.cluster.kraft.cluster import KRaftCluster
from kconsole.cluster.local.security import read_secret
from kconsole.cluster.settings import TEST_TOPIC
from tests.integration.kraft_support import running_kraft
from tests.integration.secured_support import files_holding, produce_and_read_back
from tests.waiting import wait_until

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KRaftCluster]:
    gen = running_kraft(tmp_path_factory, combined=False, security="sasl-scram")
    cluster, _times = next(gen)
    try:
        yield cluster
    finally:
        next(gen, None)  # down, and the check that no node is left alive


def _config(cluster: KRaftCluster) -> dict[str, str]:
    return {"bootstrap.servers": cluster.spec.bootstrap, **cluster.client_config()}


def test_the_scram_users_made_at_format_time_produce_and_read_back(
    secured: KRaftCluster,
) -> None:
    produce_and_read_back(_config(secured), "kraft")


def test_describe_reads_the_quorum_with_no_security_flags(
    secured: KRaftCluster, tmp_path: Path
) -> None:
    """with_local_security finds the KRaft cluster's settings: the Admin API (confluent-kafka),
    the groups and the quorum (kafka-python, through the brokers) all answer."""
    env = {"KCONSOLE_CLUSTER_DIR": str(secured.state_dir), "KCONSOLE_STATE_DIR": str(tmp_path)}
    res = CliRunner().invoke(
        cli,
        ["--bootstrap", secured.spec.bootstrap, "--backend", "none", "describe", "--json"],
        env=env,
    )
    assert res.exit_code == 0, res.output
    snap = json.loads(res.output)
    sources = {s["name"]: s for s in snap["sources"]}
    assert all(sources[n]["ok"] for n in ("admin", "groups", "quorum")), sources
    assert snap["mode"] == "kraft"
    assert {b["id"] for b in snap["brokers"]} == {1, 2, 3}
    assert not any(b["fenced"] for b in snap["brokers"])
    quorum = snap["quorum"]
    assert quorum["leader_id"] in secured.spec.controller_ids
    assert sorted(v["id"] for v in quorum["voters"]) == secured.spec.controller_ids
    assert sorted(o["id"] for o in quorum["observers"]) == [1, 2, 3]


def test_a_client_without_the_credentials_is_refused(secured: KRaftCluster) -> None:
    plain = AdminClient({"bootstrap.servers": secured.spec.bootstrap, "log_level": 0})
    with pytest.raises(KafkaException):
        plain.list_topics(timeout=3)
    wrong = {**secured.client_config(), "sasl.password": "not-the-password"}
    admin = AdminClient({"bootstrap.servers": secured.spec.bootstrap, "log_level": 0, **wrong})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=3)


def test_a_user_with_no_acl_is_denied(secured: KRaftCluster) -> None:
    """The authorizer runs: a SCRAM user the super user `kconsole` adds logs in and is shown no
    topic (allow.everyone.if.no.acl.found=false)."""
    user, password = f"nobody-{uuid.uuid4().hex[:6]}", uuid.uuid4().hex
    admin = AdminClient(_config(secured))
    upsert = UserScramCredentialUpsertion(
        user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), password.encode()
    )
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(timeout=30)
    nobody = {**secured.client_config(), "sasl.username": user, "sasl.password": password}
    nobody_admin = AdminClient({"bootstrap.servers": secured.spec.bootstrap, **nobody})

    def sees() -> set[str]:
        return set(nobody_admin.list_topics(timeout=5).topics)

    # A new credential reaches every broker through the metadata log: logged in, shown nothing.
    wait_until(lambda: sees() == set(), 30, f"{user} to log in", interval=0.3)
    assert TEST_TOPIC in set(admin.list_topics(timeout=5).topics)


def test_running_reassignments_not_listable_are_said_unknown(
    secured: KRaftCluster, tmp_path: Path
) -> None:
    """A user allowed to describe the topics but not the cluster (ListPartitionReassignments
    needs DESCRIBE on it), the quorum read from the controllers: `describe` shows the
    partitions, and says the running reassignments were denied and adding/removing replicas
    are unknown -- not that nothing moves."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    user, password = f"topics-{uuid.uuid4().hex[:6]}", uuid.uuid4().hex
    admin = AdminClient(_config(secured))
    upsert = UserScramCredentialUpsertion(
        user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), password.encode()
    )
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(timeout=30)
    acl = AclBinding(ResourceType.TOPIC, "*", ResourcePatternType.LITERAL, f"User:{user}", "*",
                     AclOperation.DESCRIBE, AclPermissionType.ALLOW)  # fmt: skip
    for future in admin.create_acls([acl]).values():
        future.result(timeout=30)
    conf = {**secured.client_config(), "sasl.username": user, "sasl.password": password}
    args = [f"-X{k}={v}" for k, v in sorted(conf.items())]
    env = {"KCONSOLE_STATE_DIR": str(tmp_path)}

    def described() -> dict | None:
        res = CliRunner().invoke(
            cli,
            ["--bootstrap", secured.spec.bootstrap, "--bootstrap-controller",
             secured.spec.quorum_bootstrap, "--backend", "none", "-z", "", *args,
             "describe", "--json"],
            env=env,
        )  # fmt: skip
        if res.exit_code != 0:
            return None
        snap: dict = json.loads(res.output)
        return snap if any(p["topic"] == TEST_TOPIC for p in snap["partitions"]) else None

    # The credential and the ACL reach every broker through the metadata log.
    snap = wait_until(described, 60, f"{user} to see {TEST_TOPIC}", interval=0.5)
    assert snap["mode"] == "kraft", snap["sources"]
    source = next(s for s in snap["sources"] if s["name"] == "admin")
    assert source["ok"], source
    assert "running reassignments not read (denied by the cluster's ACLs" in source["error"]
    assert "may not DESCRIBE the cluster (list partition reassignments" in source["error"]
    assert source["error"].endswith("adding/removing replicas unknown"), source


def test_no_secret_on_a_command_line_or_in_the_clusters_files(secured: KRaftCluster) -> None:
    files = secured.security_files()
    client = read_secret(files.client_password, "client")
    broker = read_secret(files.broker_password, "broker")
    for proc in psutil.process_iter(["cmdline"]):
        line = " ".join(proc.info["cmdline"] or ())
        assert client not in line and broker not in line, f"a secret on pid {proc.pid}'s line"
        assert "--add-scram" not in line and "saltedpassword" not in line, proc.pid
    found = files_holding(secured.state_dir, [client, broker, "saltedpassword"])
    client_holders, broker_holders = found[client], found[broker]
    scram_holders = found["saltedpassword"]
    assert client_holders == [files.client_password]  # the controllers keep only its keys
    assert set(broker_holders) == {
        files.broker_password,
        *(secured.proc_dir(f"broker-{b}") / "server.properties" for b in (1, 2, 3)),
    }
    for path in broker_holders:
        assert path.stat().st_mode & 0o077 == 0, f"{path} is readable by others"
    assert scram_holders == []  # the format's argument file is gone
    assert not list(secured.state_dir.glob("*.args"))


def test_cluster_status_says_the_security(secured: KRaftCluster, tmp_path: Path) -> None:
    res = CliRunner().invoke(
        cli,
        ["cluster", "--state-dir", str(secured.state_dir), "status"],
        env={"KCONSOLE_STATE_DIR": str(tmp_path)},
    )
    assert res.exit_code == 0, res.output
    assert "security:    sasl-scram (SASL_PLAINTEXT, SCRAM-SHA-512): user kconsole" in res.output
    assert "quorum:      leader " in res.output


def test_a_wrong_password_is_said_at_once_and_no_broker_is_down(
    secured: KRaftCluster, tmp_path: Path
) -> None:
    """`-X sasl.password=...` alone adds to the local cluster's settings (the error names the
    broker and SCRAM-SHA-512, not a transport failure); `describe` says the brokers could not
    be asked within 6 s, exits 2, and shows every broker unknown (their processes run), the
    controller unknown -- never down, never "none". Last in this module: a refusal is
    remembered for a few seconds by the servers it came from (kafka_python.AUTH_HOLD_S)."""
    env = {"KCONSOLE_CLUSTER_DIR": str(secured.state_dir), "KCONSOLE_STATE_DIR": str(tmp_path)}
    argv = ["--bootstrap", secured.spec.bootstrap, "--zookeeper", ""]
    argv += ["-X", "sasl.password=not-the-password"]
    runner = CliRunner()
    took = []
    outs = []
    for extra in (["--json"], []):
        t0 = time.monotonic()
        res = runner.invoke(cli, [*argv, "describe", *extra], env=env)
        took.append(time.monotonic() - t0)
        assert res.exit_code == 2, res.output
        assert "Traceback" not in res.output, res.output
        outs.append(res)
    print(f"describe with a wrong password (KRaft): {max(took):.2f} s")
    assert max(took) < 6.0, took
    snap = json.loads(outs[0].stdout)
    states = {b["id"]: b["state"] for b in snap["brokers"]}
    assert states == {1: "unknown", 2: "unknown", 3: "unknown"}, states
    assert snap["controller"]["id"] is None and snap["quorum"] is None
    sources = {s["name"]: s for s in snap["sources"]}
    assert all(sources[n]["refused"] for n in ("admin", "groups", "quorum")), sources
    text = outs[1].output
    first = text.splitlines()[2]
    assert first.startswith("the brokers could not be asked: authentication failed at broker "), (
        text
    )
    assert "invalid credentials (SASL mechanism SCRAM-SHA-512)" in first
    assert "controller: unknown (the brokers could not be asked)" in text
    assert " down" not in text and "NONE" not in text and "transport failure" not in text
    assert "not-the-password" not in text
