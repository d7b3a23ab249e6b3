"""A canary password never shows: not in the settings' repr, not in an error message, a log
record, the audit log, `describe --json`, a job's command line, environment, job.json or log,
nor in any file kconsole writes, except the 0600 secret file meant for the job (removed once the
job has read it). The password comes from the environment in one profile and from a file in the
other; it goes through config loading, the translation for all four kinds of clients, a job's
launch (a fake job: no Spark) and the error paths. (The full-session canary against a SASL
cluster is issue 29's integration test.)"""

from __future__ import annotations

import io
import json
import logging
import os
import secrets as token
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from click.testing import CliRunner

from kconsole import secrets
from kconsole.cli import main
from kconsole.cluster.security import translate as security
from kconsole.cluster.security.clients import (
    check_client_properties,
    groupless_consumer_config,
    kafka_python_config,
    producer_config,
)
from kconsole.commands.auditlog import AuditLog
from kconsole.config import ConfigError, Settings, load_settings
from kconsole.jobs import JobState
from kconsole.jobs import manager as job_manager
from kconsole.jobs.manager import JobManager
from tests.unit.test_jobs import write_fake
from tests.waiting import wait_until

CANARY = f"kc-canary-{token.token_hex(8)}"
CONFIG = """
[clusters.from_env]
bootstrap = "127.0.0.1:9"
zookeeper = ""
[clusters.from_env.client]
"security.protocol" = "SASL_SSL"
"sasl.mechanism" = "SCRAM-SHA-512"
"sasl.username" = "ops"
"sasl.password" = "${KC_CANARY_PASSWORD}"
"zookeeper.auth" = "digest:ops:${KC_CANARY_PASSWORD}"

[clusters.from_file]
bootstrap = "127.0.0.1:9"
zookeeper = ""
[clusters.from_file.client]
"security.protocol" = "SASL_PLAINTEXT"
"sasl.mechanism" = "PLAIN"
"sasl.username" = "ops"
"sasl.password_file" = "PASSWORD_FILE"
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A config file with both profiles, the password file (0600), the state dir, and a log
    that catches every record any logger makes."""
    password_file = tmp_path / "secret" / "kafka-password"
    password_file.parent.mkdir()
    password_file.write_text(CANARY + "\n")
    password_file.chmod(0o600)
    config = tmp_path / "config.toml"
    config.write_text(CONFIG.replace("PASSWORD_FILE", str(password_file)))
    monkeypatch.setenv("KC_CANARY_PASSWORD", CANARY)
    monkeypatch.setenv("KCONSOLE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("KCONSOLE_CONFIG", str(config))
    yield tmp_path


@pytest.fixture
def records() -> Iterator[list[logging.LogRecord]]:
    """Every log record, of every logger, at every level, as made (before any filter)."""
    caught: list[logging.LogRecord] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            caught.append(record)

    root = logging.getLogger()
    handler, level = Catch(logging.DEBUG), root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield caught
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def settings_for(profile: str) -> Settings:
    return load_settings(cluster=profile, check_client=check_client_properties)


def assert_no_canary(text: str, where: str) -> None:
    assert CANARY not in text, f"the canary shows in {where}"


def files_with_the_canary(root: Path, allowed: set[Path]) -> list[Path]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and path not in allowed and CANARY.encode() in path.read_bytes():
            found.append(path)
    return found


@pytest.mark.parametrize("profile", ["from_env", "from_file"])
def test_the_canary_never_shows(
    profile: str,
    home: Path,
    records: list[logging.LogRecord],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if profile == "from_file":  # the password is in the file only, not in the environment
        monkeypatch.delenv("KC_CANARY_PASSWORD")
    # -- config loading ------------------------------------------------------------------------
    settings = settings_for(profile)
    assert_no_canary(repr(settings), "repr(settings)")
    assert_no_canary(str(settings), "str(settings)")
    assert_no_canary(repr(settings.client), "the client properties as given")

    # -- the translation for all four kinds of clients: the secret reaches each client --------
    raw = settings.kafka_config()
    rdkafka = producer_config(settings, acks="all")
    assert rdkafka["sasl.password"] == CANARY
    assert groupless_consumer_config(settings)["sasl.password"] == CANARY
    kp = kafka_python_config(raw, 1.0)
    assert kp["sasl_plain_password"] == CANARY
    spark = security.spark_kafka_options(raw, settings.client_origin)
    assert f'password="{CANARY}"' in spark.options["kafka.sasl.jaas.config"]
    if profile == "from_env":
        assert security.kazoo_args(raw) == {"auth_data": [("digest", f"ops:{CANARY}")]}
    # ... and none of them shows it.
    assert_no_canary(repr(spark), "repr(SparkKafka)")
    assert_no_canary(repr(security.security(raw)), "repr(Security)")
    assert_no_canary(repr(secrets.masked(rdkafka)), "the masked librdkafka properties")

    # -- error paths ---------------------------------------------------------------------------
    bad = {**settings.client, "sasl.mechanism": "SCRAM-SHA-1", "compression.type": "nope"}
    with pytest.raises(ConfigError) as caught:
        check_client_properties(bad, settings.client_origin)
    assert "'SCRAM-SHA-1' is not one of" in str(caught.value)
    assert 'compression.type (from the settings): Invalid value "nope"' in str(caught.value)
    assert_no_canary(str(caught.value), "a refused mechanism's error")
    assert_no_canary(repr(caught.value), "a refused mechanism's error (repr)")
    missing = {**settings.client, "ssl.key.password_file": str(home / "nope")}
    missing.pop("sasl.password", None)
    with pytest.raises(ConfigError) as caught:
        security.librdkafka_config(missing)
    assert f"cannot read the secret file {home / 'nope'}" in str(caught.value)
    assert_no_canary(str(caught.value), "a missing secret file's error")
    monkeypatch.delenv("KC_CANARY_PASSWORD", raising=False)
    if profile == "from_env":
        with pytest.raises(ConfigError) as caught:
            settings_for(profile)
        assert "KC_CANARY_PASSWORD is not set" in str(caught.value)
        # what the CLI prints for it, and for a mechanism it refuses
    res = CliRunner().invoke(main, ["--cluster", profile, "describe"])
    assert res.exit_code == 2, res.output  # a config error, or nothing reachable
    assert_no_canary(res.output, "the CLI's error")
    if profile == "from_env":
        monkeypatch.setenv("KC_CANARY_PASSWORD", CANARY)
    res = CliRunner().invoke(
        main, ["--cluster", profile, "-X", "sasl.mechanism=SCRAM-SHA-1", "describe"]
    )
    assert res.exit_code == 2 and "SCRAM-SHA-1" in res.output, res.output
    assert_no_canary(res.output, "the CLI's error for a refused mechanism")

    # -- describe --json (nothing listens at 127.0.0.1:9) ---------------------------------------
    res = CliRunner().invoke(main, ["--cluster", profile, "describe", "--json"])
    assert res.exit_code == 2, res.output
    json.loads(res.stdout)
    assert_no_canary(res.output, "describe --json")

    # -- the audit log, even when a command's arguments or error carry the secret --------------
    audit = AuditLog(home / "state" / "audit.jsonl")
    audit.append(
        command="jobs.start",
        target="keyed_counts",
        args={"-X": [f"sasl.password={CANARY}"], "note": f"with {CANARY} inside"},
        outcome="failed",
        error=f"the broker said {CANARY}",
    )
    assert_no_canary(audit.path.read_text(), "the audit log")

    # -- a log record that carries it is scrubbed by every kconsole handler ---------------------
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(secrets.ScrubFilter())
    logging.getLogger("kconsole.test").addHandler(handler)
    try:
        logging.getLogger("kconsole.test").error("connect failed: %s", f"password={CANARY}")
    finally:
        logging.getLogger("kconsole.test").removeHandler(handler)
    assert "connect failed: password=***" in out.getvalue()
    records[:] = [r for r in records if r.name != "kconsole.test"]

    # -- a job's launch (a fake job, no Spark) -----------------------------------------------
    handed: list[dict[str, Any]] = []
    real_write = job_manager.write_client_file

    def spy(path: Path, payload: Any) -> None:
        real_write(path, payload)
        handed.append(
            {
                "path": path,
                "mode": stat.S_IMODE(path.stat().st_mode),
                "has_it": CANARY in path.read_text(),
            }
        )

    monkeypatch.setattr(job_manager, "write_client_file", spy)
    manager = JobManager(
        home / "state", settings, jobs_directory=write_fake(home / "jobs").parent, history=5
    )
    run = manager.start("fake", {"topic": "t"})
    try:
        wait_until(lambda: manager.get(run.run_id).state is JobState.RUNNING, 20, "running")
        proc = psutil.Process(run.pid)
        assert_no_canary(" ".join(proc.cmdline()), "the job's command line (ps)")
        assert_no_canary(json.dumps(proc.environ()), "the job's environment")
        assert_no_canary(repr(run), "repr(JobRun)")
        # The secret file was meant for the job: only the user could read it, and it is gone.
        assert handed == [{"path": run.run_dir / "client.json", "mode": 0o600, "has_it": True}]
        wait_until(lambda: not (run.run_dir / "client.json").exists(), 10, "read and removed")
    finally:
        manager.stop(run.run_id, timeout_s=5)
    assert not (run.run_dir / "client.json").exists()

    # -- every file written, every log record -------------------------------------------------
    user_file = home / "secret" / "kafka-password"
    assert files_with_the_canary(home, {user_file}) == []
    for record in records:
        assert_no_canary(record.getMessage(), f"a log record of {record.name}")
    assert os.environ.get("KCONSOLE_JOB_CLIENT_FILE") is None
