"""The secured local clusters, for real: `--security sasl-scram` and `--security ssl --mtls`.

Each is started once for this module (on free ports, in a temporary state dir, always torn
down), and checked as a client sees it: the cluster's own credentials produce and read back
acknowledged records, kconsole's readers (confluent-kafka's Admin API, kafka-python's group
reads) get through, a client without them is refused, and no secret is on a command line or in
a file of the cluster's other than the one meant to hold it.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from click.testing import CliRunner
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from kconsole.cli.main import log_to_file
from kconsole.cli.main import main as cli
from kconsole.cluster import reaper
from kconsole.cluster.local.cluster import LocalCluster, LocalClusterSpec
from kconsole.cluster.settings import TEST_TOPIC
from kconsole.cluster.values import ProcState
from tests.integration.conftest import pick_ports
from tests.integration.secured_support import files_holding, produce_and_read_back

pytestmark = pytest.mark.integration

MODES = {"sasl-scram": {"security": "sasl-scram"}, "ssl-mtls": {"security": "ssl", "mtls": True}}


# The SASL cluster's client password: a canary that must never show (see the session test).
CANARY = f"canary-{uuid.uuid4().hex}"


@pytest.fixture(scope="module", params=list(MODES))
def secured(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    zk_port, base_port = pick_ports(3)
    mode = dict(MODES[request.param])
    if mode["security"] == "sasl-scram":  # the password from the user's own file
        password_file = tmp_path_factory.mktemp("user") / "kafka-password"
        password_file.write_text(CANARY + "\n")
        password_file.chmod(0o600)
        mode["password_file"] = str(password_file)
    spec = LocalClusterSpec(zk_port=zk_port, base_port=base_port, **mode)
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
    produce_and_read_back(config, "secured")


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
        key = secured.security_files().ca_key.read_text()
        assert files_holding(secured.state_dir, [key])[key] == [secured.security_files().ca_key]
        return
    files = secured.security_files()
    client = files.client_password.read_text().strip()
    broker = files.broker_password.read_text().strip()
    for proc in psutil.process_iter(["cmdline"]):
        line = " ".join(proc.info["cmdline"] or ())
        assert client not in line and broker not in line, (
            f"a secret on pid {proc.pid}'s command line"
        )
    found = files_holding(secured.state_dir, [client, broker])
    client_holders, broker_holders = found[client], found[broker]
    assert client == CANARY  # the user's own file, outside the state dir
    assert client_holders == []  # ZooKeeper keeps only its hash
    assert set(broker_holders) == {
        files.broker_password,
        *(secured.proc_dir(f"broker-{b}") / "server.properties" for b in (1, 2, 3)),
    }
    for path in broker_holders:
        assert path.stat().st_mode & 0o077 == 0, f"{path} is readable by others"


# -- a whole session through it -----------------------------------------------------------------
def secrets_of(secured: LocalCluster) -> list[str]:
    """What must never show: the client's password (the canary) and the brokers' (SASL), or
    the client's private key (TLS: a line of its body, which no certificate holds)."""
    files = secured.security_files()
    if secured.spec.security == "sasl-scram":
        return [CANARY, files.broker_password.read_text().strip()]
    body = [ln for ln in files.client_key.read_text().splitlines() if not ln.startswith("-----")]
    return [body[len(body) // 2]]


def holders(text: str, secrets: list[str]) -> list[str]:
    return [s[:12] + "..." for s in secrets if s in text]


async def test_a_whole_session_through_it(
    secured: LocalCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a user works with no security flags: the console (its panes, a tail with a group),
    describe, produce, a drill (a broker stopped and restarted), a reassignment and a Spark job,
    all through the cluster's SASL/SCRAM or mutual TLS. Then the secrets are searched for in
    everything kconsole showed or wrote and in every process's command line: none is there."""
    from kconsole.commands import Commands
    from kconsole.commands.local_security import with_local_security
    from kconsole.config import load_settings
    from kconsole.observer import ClusterObserver
    from kconsole.ui.app import make_app
    from kconsole.ui.screens.tail import TailScreen
    from tests import tables
    from tests.integration.jobs_support import QUICK_JVM
    from tests.integration.test_console_live import until
    from tests.waiting import wait_until

    home = tmp_path / "home"  # kconsole's state dir: audit log, drill reports, job runs
    env = {"KCONSOLE_CLUSTER_DIR": str(secured.state_dir), "KCONSOLE_STATE_DIR": str(home)}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    args = ["--bootstrap", secured.spec.bootstrap, "--zookeeper", secured.spec.zk_connect]
    secrets = secrets_of(secured)
    shown: list[str] = []  # every output and screen
    runner = CliRunner()

    def kconsole(*argv: str, code: int = 0) -> str:
        res = runner.invoke(cli, [*args, *argv], env=env)
        shown.append(res.output)
        assert res.exit_code == code, f"kconsole {' '.join(argv)}: {res.output}"
        return res.output

    run = uuid.uuid4().hex[:6]
    settings = with_local_security(load_settings(bootstrap=secured.spec.bootstrap, env=env))
    assert settings.client, "the local cluster's security settings applied"
    # a Spark job reads the topic from the start through the same security: started first, its
    # JVM starting while the console, describe, produce and the reassignment run
    started = kconsole(
        "jobs", "start", "keyed-counts", "-o", f"topic={TEST_TOPIC}",
        "-o", "starting-offsets=earliest", "-o", "output-topic=", "-o", "master=local[2]",
        "-o", "shuffle-partitions=2", "-o", "trigger=0.5", "-o", "stop-grace=5",
        "-o", "conf=spark.driver.memory=512m",
        "-o", f"conf=spark.driver.extraJavaOptions={QUICK_JVM}",
    )  # fmt: skip
    run_id = started.split()[1]
    jobs = Commands.for_settings(settings).jobs_view()
    assert jobs is not None
    try:
        # describe and produce
        snap = json.loads(kconsole("describe", "--json"))
        assert all(s["ok"] for s in snap["sources"] if s["name"] in ("admin", "groups")), snap
        sent = kconsole("produce", "-t", TEST_TOPIC, "-k", f"s-{run}", "-v", run, "-n", "20")
        assert "sent 20, acked 20, failed 0" in sent

        # the console: live panes, then a tail that joins a group and reads what was produced;
        # its log where the kconsole command puts it
        root = logging.getLogger()
        kept = (list(root.handlers), root.level)
        log_to_file(home / "kconsole.log")
        try:
            door = Commands.for_settings(settings, origin="console")
            app = make_app(
                ClusterObserver(settings, proc_states=door.broker_states()), commands=door,
                settings=settings,
            )  # fmt: skip
            app.animation_level = "none"
            group = f"session-{run}"
            async with app.run_test(size=(160, 48)) as pilot:
                await until(
                    lambda: tables.table(app.screen, "partitions").row_count >= 4, 30, "rows"
                )
                await until(
                    lambda: all(
                        tables.table(app.screen, "brokers").get_cell(b, "state").plain == "up"
                        for b in "123"
                    ),
                    30,
                    "brokers 1-3 up",
                )
                shown.append(app.export_screenshot())
                await app.push_screen(TailScreen(topic=TEST_TOPIC, start="beginning", group=group))
                tail = app.screen
                assert isinstance(tail, TailScreen)
                await until(
                    lambda: tail.received >= 20 or tail.state == "failed", 60, "the records"
                )
                assert tail.state == "live", tail.error
                await pilot.pause()
                shown.append(app.export_screenshot())
                tail.dismiss()
                await pilot.pause()
        finally:
            for handler in list(root.handlers):
                root.removeHandler(handler)
                handler.close()
            for handler in kept[0]:
                root.addHandler(handler)
            root.setLevel(kept[1])
        assert (home / "kconsole.log").exists()  # searched for the secrets below

        # a reassignment: a new topic's two partitions move off broker 1, through kafka-python
        moves = f"moves-{run}"
        admin = AdminClient(
            {"bootstrap.servers": secured.spec.bootstrap, **secured.client_config()}
        )
        new_topic = NewTopic(moves, 2, replica_assignment=[[1, 2], [2, 1]])
        admin.create_topics([new_topic])[moves].result(30)
        plan = tmp_path / "plan.json"
        plan.write_text(
            json.dumps(
                {
                    "version": 1,
                    "partitions": [
                        {"topic": moves, "partition": 0, "replicas": [2, 3]},
                        {"topic": moves, "partition": 1, "replicas": [3, 2]},
                    ],
                }
            )
        )
        kconsole("reassign", "execute", "--plan", str(plan), "--yes", "--wait", "--timeout", "60")
        placed = admin.list_topics(moves, timeout=10).topics[moves].partitions
        assert {p: placed[p].replicas for p in placed} == {0: [2, 3], 1: [3, 2]}

        # the job, started first, has read the records meanwhile
        wait_until(
            lambda: (
                sum(p.input_rows or 0 for p in jobs.get(run_id).history) >= 20
                or not jobs.get(run_id).active
            ),
            120,
            "the job to read the records",
        )
        job = jobs.get(run_id)
        assert job.active, f"the job ended: {job.error}"
        for proc in psutil.process_iter(["cmdline"]):  # the job's JVM included
            line = " ".join(proc.info["cmdline"] or ())
            assert not holders(line, secrets), f"a secret on pid {proc.pid}'s command line"
    finally:
        kconsole("jobs", "stop", run_id)
    shown.append(kconsole("jobs", "logs", run_id, "-n", "400"))

    # a drill: a broker stopped, then started again; no acknowledged record lost
    report = home / "drill.json"
    kconsole(
        "--backend", "local", "drill", "run", "--fault", "stop", "--target", "broker:2",
        "--duration", "5", "--restore-after", "2", "--no-wait-preferred", "--rate", "100",
        "--yes", "--report", str(report),
    )  # fmt: skip
    drill = json.loads(report.read_text())
    assert drill["ok"] is True and drill["audit"]["acked"] > 0, drill

    shown.append(kconsole("audit", "-n", "50"))

    # who did it, as the cluster knows kconsole
    audit = [json.loads(line) for line in (home / "audit.jsonl").read_text().splitlines()]
    want = "User:kconsole" if secured.spec.security == "sasl-scram" else "User:CN="
    assert audit and all(e["principal"].startswith(want) for e in audit), audit

    # the canary: nowhere on screen, in an output, in a file kconsole wrote, or on a command line
    for text in shown:
        assert not holders(text, secrets), "a secret shown"
    allowed = {secured.security_files().broker_password, secured.security_files().client_key}
    allowed |= {secured.proc_dir(f"broker-{b}") / "server.properties" for b in (1, 2, 3)}
    for root in (home, secured.state_dir):
        for secret, paths in files_holding(root, secrets).items():
            leaked = [p for p in paths if p not in allowed]
            assert not leaked, f"{secret[:12]}... in {leaked}"


def test_a_refusal_says_what_was_refused(secured: LocalCluster, tmp_path: Path) -> None:
    """A user the ACLs allow only to read is told which operation on which resource was
    denied to whom; a wrong password is an authentication error naming the mechanism and the
    broker. Neither is a stack trace or a wait for a timeout."""
    if secured.spec.security != "sasl-scram":
        pytest.skip("users and ACLs are the SASL cluster's")
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": secured.spec.bootstrap, **secured.client_config()})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
    upsert = UserScramCredentialUpsertion("reader", info, b"reader-password")
    for done in admin.alter_user_scram_credentials([upsert]).values():
        done.result(30)
    reads = [
        AclBinding(ResourceType.TOPIC, TEST_TOPIC, ResourcePatternType.LITERAL, "User:reader",
                   "*", op, AclPermissionType.ALLOW)
        for op in (AclOperation.READ, AclOperation.DESCRIBE)
    ]  # fmt: skip
    for done in admin.create_acls(reads).values():
        done.result(30)
    (tmp_path / "reader").write_text("reader-password\n")
    (tmp_path / "wrong").write_text("not-the-password\n")
    runner = CliRunner()

    def as_user(user: str, password_file: Path, *argv: str) -> str:
        flags = [
            "--bootstrap", secured.spec.bootstrap, "--zookeeper", "",
            "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=SCRAM-SHA-512",
            "-X", f"sasl.username={user}", "-X", f"sasl.password_file={password_file}",
        ]  # fmt: skip
        res = runner.invoke(
            cli, [*flags, *argv], env={"KCONSOLE_STATE_DIR": str(tmp_path / "home")}
        )
        assert res.exit_code != 0, res.output
        assert "Traceback" not in res.output, res.output
        return res.output

    reader = tmp_path / "reader"
    produced = as_user("reader", reader, "produce", "-t", TEST_TOPIC, "-k", "k", "-v", "v")
    assert "denied by the cluster's ACLs: User:reader may not IDEMPOTENT_WRITE the cluster" in (
        produced
    )
    listed = as_user("reader", reader, "reassign", "list")
    assert "User:reader may not DESCRIBE the cluster (list partition reassignments" in listed
    elected = as_user("reader", reader, "elect", "--preferred", "--all", "--yes")
    assert "User:reader may not ALTER the cluster (elect leaders" in elected
    wrong = as_user("kconsole", tmp_path / "wrong", "produce", "-t", TEST_TOPIC, "-v", "v")
    assert "authentication failed at broker 127.0.0.1:" in wrong, wrong
    assert "SCRAM-SHA-512" in wrong
    assert "not-the-password" not in wrong


# -- a refused login, said as one (after every test that logs in: a refusal is remembered for a
# -- few seconds by the servers it came from, kconsole.cluster.security.kafka_python.AUTH_HOLD_S)
NOT_ASKED_S = 6.0  # the longest `describe` may take to say the cluster refused it


def _describe_refused(argv: list[str], env: dict[str, str]) -> tuple[dict[str, Any], str, float]:
    """`kconsole ARGV describe --json` and `describe`: (the JSON, the text, the slower's
    seconds). Both exit 2 (not asked) with no traceback."""
    runner = CliRunner()
    took = 0.0
    outs = []
    for extra in (["--json"], []):
        t0 = time.monotonic()
        res = runner.invoke(cli, [*argv, "describe", *extra], env=env)
        took = max(took, time.monotonic() - t0)
        assert res.exit_code == 2, res.output
        assert "Traceback" not in res.output, res.output
        outs.append(res)
    return json.loads(outs[0].stdout), outs[1].output, took


def test_a_wrong_password_or_no_client_certificate_is_said_at_once(
    secured: LocalCluster, tmp_path: Path
) -> None:
    """A wrong SCRAM password given as `-X sasl.password=...` alone (the local cluster's other
    settings kept: the error is an authentication one, naming the broker and the mechanism), or
    mutual TLS without a client certificate (the broker's TLS alert said): `describe` says the
    brokers could not be asked and why, within NOT_ASKED_S, exits 2, and shows no broker down --
    with ZooKeeper, its registrations; without, every broker unknown and the controller too."""
    bootstrap = secured.spec.bootstrap
    home = {"KCONSOLE_STATE_DIR": str(tmp_path / "home")}
    if secured.spec.security == "sasl-scram":
        env = {**home, "KCONSOLE_CLUSTER_DIR": str(secured.state_dir)}
        flags = ["-X", "sasl.password=not-the-password"]
        want = "authentication failed at broker 127.0.0.1:"
        said = "invalid credentials (SASL mechanism SCRAM-SHA-512)"
    else:  # a client with the CA only: not this cluster's settings (they hold the certificate)
        env = {**home, "KCONSOLE_CLUSTER_DIR": str(tmp_path / "no-local-cluster")}
        ca = secured.security_files().ca_cert
        flags = ["-X", "security.protocol=SSL", "-X", f"ssl.ca.location={ca}"]
        want = "TLS handshake with broker 127.0.0.1:"
        said = "alert bad certificate"
    times = {}
    for zk in (secured.spec.zk_connect, ""):
        argv = ["--bootstrap", bootstrap, "--zookeeper", zk, *flags]
        snap, text, took = _describe_refused(argv, env)
        times[zk or "no ZooKeeper"] = took
        assert took < NOT_ASKED_S, f"describe took {took:.1f} s"
        lines = text.splitlines()
        assert lines[2].startswith(f"the brokers could not be asked: {want}"), text
        assert said in lines[2], text
        assert "Broker transport failure" not in text and "Unable to bootstrap" not in text
        assert f"error: the brokers could not be asked: {want}" in text  # stderr
        sources = {s["name"]: s for s in snap["sources"]}
        assert sources["admin"]["refused"] and sources["groups"]["refused"], sources
        states = {b["id"]: b["state"] for b in snap["brokers"]}
        assert "down" not in states.values(), states
        if zk:  # ZooKeeper answers: its registrations and its controller
            assert states == {1: "up", 2: "up", 3: "up"}, states
            assert snap["controller"]["id"] in (1, 2, 3)
        else:
            assert set(states.values()) <= {"unknown"}, states
            assert snap["controller"]["id"] is None
            assert "controller: unknown (the brokers could not be asked)" in text
            assert "NONE" not in text
        assert "not-the-password" not in text
        assert snap["start_hint"] == ""  # the cluster runs: nothing to start
    print(
        f"describe, {secured.spec.security}: "
        + ", ".join(f"{k} {v:.2f} s" for k, v in times.items())
    )
