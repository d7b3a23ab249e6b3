"""The job side of the secret file: a job takes its client properties from the file kconsole
names (KCONSOLE_JOB_CLIENT_FILE), under its own command-line ones, removes the file once read,
and gives the JVM the system properties the Java client needs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

from kconsole.jobs.client import job_client, write_client_file

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "jobs"))

from _kconsole_jobs.options import client_from_env  # noqa: E402


def test_the_job_reads_its_client_file_and_removes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "client.json"
    client = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.client.id": "kc",
        "sasl.oauthbearer.client.secret": "s3cret",
        "sasl.oauthbearer.token.endpoint.url": "https://idp/t",
    }
    write_client_file(path, job_client(client))
    assert path.stat().st_mode & 0o777 == 0o600
    monkeypatch.setenv("KCONSOLE_JOB_CLIENT_FILE", str(path))
    args = argparse.Namespace(
        kafka_option=[("client.id", "mine")],
        admin_option=[],
        conf=[("spark.driver.extraJavaOptions", "-Dx=1")],
    )
    assert client_from_env(args) == []
    assert not path.exists()
    kafka = dict(args.kafka_option)
    assert kafka["sasl.oauthbearer.token.endpoint.url"] == "https://idp/t"
    assert 'clientSecret="s3cret"' in kafka["sasl.jaas.config"]
    assert kafka["client.id"] == "mine"  # the command line's own come last, and win
    assert dict(args.admin_option)["sasl.oauthbearer.client.secret"] == "s3cret"
    allowed = "-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=https://idp/t"
    assert dict(args.conf) == {
        "spark.driver.extraJavaOptions": f"-Dx=1 {allowed}",
        "spark.executor.extraJavaOptions": allowed,
    }


def test_the_file_is_created_private_or_not_at_all(tmp_path: Path) -> None:
    path = tmp_path / "client.json"
    path.write_text("{}")
    with pytest.raises(FileExistsError):  # never written through an existing file or link
        write_client_file(path, {"admin": {}})
