"""The secured local cluster's pieces: SCRAM credentials as Kafka stores them, the secret files,
the broker and client settings. The real brokers accepting them: tests/integration/
test_secured_local.py."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from kconsole.cluster.errors import ClusterError
from kconsole.cluster.local.credentials import (
    ensure_certificates,
    ensure_passwords,
    ensure_scram_users,
)
from kconsole.cluster.local.security import (
    BROKER_USER,
    CLIENT_USER,
    SecurityFiles,
    client_properties,
    scram_credential,
    security_summary,
    zk_credential_text,
)
from kconsole.cluster.local.spec import LocalClusterSpec, broker_properties
from kconsole.cluster.security.translate import librdkafka_config


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_scram_credential_is_rfc_5802_with_sha_512() -> None:
    salt = bytes(range(32))
    cred = scram_credential("pencil", salt=salt, iterations=4096)
    salted = hashlib.pbkdf2_hmac("sha512", b"pencil", salt, 4096)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha512).digest()
    assert base64.b64decode(str(cred["stored_key"])) == hashlib.sha512(client_key).digest()
    server_key = hmac.new(salted, b"Server Key", hashlib.sha512).digest()
    assert base64.b64decode(str(cred["server_key"])) == server_key
    assert base64.b64decode(str(cred["salt"])) == salt
    assert zk_credential_text(cred) == (
        f"salt={cred['salt']},stored_key={cred['stored_key']},"
        f"server_key={cred['server_key']},iterations=4096"
    )
    assert "pencil" not in json.dumps(cred)
    # a new salt each time: two users with one password do not share a stored key
    assert scram_credential("pencil")["stored_key"] != scram_credential("pencil")["stored_key"]


def test_passwords_are_made_once_and_only_the_user_reads_them(tmp_path: Path) -> None:
    files = SecurityFiles(tmp_path)
    ensure_passwords(files)
    assert mode(files.dir) == 0o700
    assert mode(files.client_password) == mode(files.broker_password) == 0o600
    first = files.client_password.read_text()
    ensure_passwords(files)
    assert files.client_password.read_text() == first
    assert files.client_password.read_text() != files.broker_password.read_text()


def test_a_password_file_of_the_users_own_is_read_never_copied(tmp_path: Path) -> None:
    own = tmp_path / "mine"
    own.write_text("canary-7f3a\n")
    files = SecurityFiles(tmp_path / "state", str(own))
    ensure_passwords(files)
    assert files.client_password == own
    assert not (files.dir / "client-password").exists()
    assert not any("canary-7f3a" in p.read_text() for p in files.dir.iterdir())
    own.write_text("")
    with pytest.raises(ClusterError, match="is empty"):
        ensure_passwords(files)


class FakeZk:
    def __init__(self) -> None:
        self.nodes: dict[str, bytes] = {}

    def exists(self, path: str) -> object | None:
        return object() if path in self.nodes else None

    def create(self, path: str, data: bytes, makepath: bool = False) -> None:
        assert makepath and path not in self.nodes
        self.nodes[path] = data

    def set(self, path: str, data: bytes) -> None:
        self.nodes[path] = data


def test_scram_users_are_written_as_kafka_configs_writes_them(tmp_path: Path) -> None:
    files = SecurityFiles(tmp_path)
    ensure_passwords(files)
    zk = FakeZk()
    assert ensure_scram_users(zk, files, overwrite=False) == [CLIENT_USER, BROKER_USER]
    doc = json.loads(zk.nodes[f"/config/users/{CLIENT_USER}"])
    assert doc["version"] == 1 and list(doc["config"]) == ["SCRAM-SHA-512"]
    fields = dict(item.split("=", 1) for item in doc["config"]["SCRAM-SHA-512"].split(","))
    assert set(fields) == {"salt", "stored_key", "server_key", "iterations"}
    password = files.client_password.read_text().strip()
    salted = hashlib.pbkdf2_hmac(
        "sha512", password.encode(), base64.b64decode(fields["salt"]), int(fields["iterations"])
    )
    client_key = hmac.new(salted, b"Client Key", hashlib.sha512).digest()
    assert base64.b64decode(fields["stored_key"]) == hashlib.sha512(client_key).digest()
    assert not any(password.encode() in data for data in zk.nodes.values())
    # brokers running: an existing credential stays (they would not see a change)
    before = dict(zk.nodes)
    assert ensure_scram_users(zk, files, overwrite=False) == []
    assert zk.nodes == before
    assert ensure_scram_users(zk, files, overwrite=True) == [CLIENT_USER, BROKER_USER]
    assert zk.nodes != before


def test_sasl_brokers_listen_and_talk_to_each_other_with_scram(tmp_path: Path) -> None:
    spec = LocalClusterSpec(security="sasl-scram")
    files = SecurityFiles(tmp_path)
    ensure_passwords(files)
    props = broker_properties(spec, 2, tmp_path / "data", files)
    assert props["listeners"] == "SASL_PLAINTEXT://127.0.0.1:19093"
    assert props["advertised.listeners"] == "SASL_PLAINTEXT://127.0.0.1:19093"
    assert props["listener.security.protocol.map"] == "SASL_PLAINTEXT:SASL_PLAINTEXT"
    assert props["inter.broker.listener.name"] == "SASL_PLAINTEXT"
    assert "security.inter.broker.protocol" not in props  # Kafka refuses both
    assert props["sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert props["sasl.mechanism.inter.broker.protocol"] == "SCRAM-SHA-512"
    jaas = props["listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config"]
    assert f'username="{BROKER_USER}"' in jaas
    assert files.client_password.read_text().strip() not in json.dumps(props)
    with pytest.raises(ClusterError, match="need its secrets"):
        broker_properties(spec, 2, tmp_path)


def test_ssl_brokers_use_pem_stores_and_require_a_certificate_with_mtls(tmp_path: Path) -> None:
    files = SecurityFiles(tmp_path)
    props = broker_properties(LocalClusterSpec(security="ssl", mtls=True), 1, tmp_path, files)
    assert props["listeners"] == "SSL://127.0.0.1:19092"
    assert props["inter.broker.listener.name"] == "SSL"
    assert props["ssl.keystore.type"] == props["ssl.truststore.type"] == "PEM"
    assert props["ssl.keystore.location"] == str(files.broker_keystore)
    assert props["ssl.truststore.location"] == str(files.ca_cert)
    assert props["ssl.client.auth"] == "required"
    no_mtls = broker_properties(LocalClusterSpec(security="ssl"), 1, tmp_path, files)
    assert no_mtls["ssl.client.auth"] == "none"


def test_clients_get_the_password_by_its_file(tmp_path: Path) -> None:
    files = SecurityFiles(tmp_path)
    ensure_passwords(files)
    props = client_properties("sasl-scram", False, files)
    assert props == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": CLIENT_USER,
        "sasl.password_file": str(files.client_password),
    }
    resolved = librdkafka_config(props)
    assert resolved["sasl.password"] == files.client_password.read_text().strip()
    assert "sasl.password_file" not in resolved
    assert "password in" in security_summary("sasl-scram", False, files)
    assert files.client_password.read_text().strip() not in security_summary(
        "sasl-scram", False, files
    )
    ssl: dict[str, Any] = client_properties("ssl", True, files)
    assert ssl == {
        "security.protocol": "SSL",
        "ssl.ca.location": str(files.ca_cert),
        "ssl.certificate.location": str(files.client_cert),
        "ssl.key.location": str(files.client_key),
    }
    assert client_properties("plaintext", False, files) == {}


def test_the_spec_says_what_it_cannot_do() -> None:
    with pytest.raises(ClusterError, match="--mtls needs --security ssl"):
        LocalClusterSpec(security="sasl-scram", mtls=True)
    with pytest.raises(ClusterError, match="--security must be one of"):
        LocalClusterSpec(security="kerberos")
    spec = LocalClusterSpec(security="ssl", mtls=True)
    assert LocalClusterSpec.from_json(spec.to_json()) == spec
    # a cluster.json written before security existed is a plaintext cluster
    old = json.loads(LocalClusterSpec().to_json())
    for key in ("security", "mtls", "password_file"):
        old.pop(key)
    assert LocalClusterSpec.from_json(json.dumps(old)).security == "plaintext"


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")
def test_every_certificate_file_is_readable_by_the_user_only(tmp_path: Path) -> None:
    """Issue 35 #13: ca.pem, broker.crt and client.crt were 0644 while the README says every
    file in the security directory is 0600. They are made so (openssl runs with umask 077), and
    a directory made by an earlier kconsole is put right on the next start."""
    files = SecurityFiles(tmp_path)
    made = ensure_certificates(files, "127.0.0.1", mtls=True)
    assert set(made) >= {"ca.pem", "ca.key", "broker.pem", "client.crt", "client.key"}

    def modes() -> dict[str, int]:
        return {p.name: stat.S_IMODE(p.stat().st_mode) for p in files.dir.iterdir()}

    assert {"ca.pem", "broker.crt", "client.crt"} <= modes().keys()
    assert modes() == dict.fromkeys(modes(), 0o600), modes()
    assert stat.S_IMODE(files.dir.stat().st_mode) == 0o700
    for name in ("ca.pem", "broker.crt", "client.crt"):
        (files.dir / name).chmod(0o644)  # as an earlier kconsole left them
    assert ensure_certificates(files, "127.0.0.1", mtls=True) == []  # nothing made again
    assert modes() == dict.fromkeys(modes(), 0o600), modes()
