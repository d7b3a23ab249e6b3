"""A secured local KRaft cluster: the node settings of each security mode, the SCRAM users
given to StorageTool at format time (in a 0600 java argument file, never on a command line),
and kconsole reaching the cluster with no flags."""

from __future__ import annotations

import base64
import hashlib
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kconsole.cluster import jars
from kconsole.cluster.errors import ClusterError
from kconsole.cluster.kraft import cluster as kraft
from kconsole.cluster.kraft.cluster import KRaftCluster
from kconsole.cluster.kraft.spec import (
    KRaftSpec,
    format_args,
    java_argfile,
    node_properties,
    scram_arguments,
)
from kconsole.cluster.local.credentials import ensure_passwords
from kconsole.cluster.local.security import SecurityFiles, read_secret
from kconsole.commands.local_security import with_local_security
from kconsole.config import Settings

REAL_POPEN = subprocess.Popen


def secured(tmp_path: Path, **spec: Any) -> KRaftCluster:
    cluster = KRaftCluster(tmp_path / "k", KRaftSpec(**spec))
    cluster.write_configs()
    return cluster


def props(cluster: KRaftCluster, name: str) -> dict[str, str]:
    text = (cluster.proc_dir(name) / "server.properties").read_text()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def test_sasl_brokers_listen_with_scram_and_the_controllers_stay_plaintext(tmp_path: Path) -> None:
    cluster = secured(tmp_path, security="sasl-scram")
    broker = props(cluster, "broker-2")
    assert broker["listeners"] == "SASL_PLAINTEXT://127.0.0.1:19093"
    assert broker["listener.security.protocol.map"] == (
        "CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT"
    )
    assert broker["inter.broker.listener.name"] == "SASL_PLAINTEXT"
    assert broker["sasl.mechanism.inter.broker.protocol"] == "SCRAM-SHA-512"
    password = read_secret(cluster.security_files().broker_password, "broker")
    assert (
        f'username="kconsole-broker" password="{password}"'
        in (broker["listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config"])
    )
    assert broker["authorizer.class.name"].endswith("StandardAuthorizer")
    assert broker["super.users"] == "User:kconsole-broker;User:kconsole"
    assert broker["allow.everyone.if.no.acl.found"] == "false"
    ctl = props(cluster, "controller-1001")
    assert ctl["listeners"] == "CONTROLLER://127.0.0.1:19192"
    assert "sasl.jaas.config" not in " ".join(ctl)  # no password on a controller
    # What reaches the PLAINTEXT controller listener (brokers, other controllers) is trusted.
    assert ctl["super.users"] == "User:kconsole-broker;User:kconsole;User:ANONYMOUS"
    assert ctl["authorizer.class.name"] == broker["authorizer.class.name"]
    # Only the files holding the brokers' password are private.
    for node in cluster.spec.nodes():
        mode = (cluster.proc_dir(node.name) / "server.properties").stat().st_mode
        assert (mode & 0o077 == 0) == node.is_broker, node.name


def test_combined_nodes_hold_both_listeners_and_the_password(tmp_path: Path) -> None:
    cluster = secured(tmp_path, combined=True, security="sasl-scram")
    node = props(cluster, "node-1")
    assert node["listeners"] == "SASL_PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19192"
    assert "User:ANONYMOUS" in node["super.users"].split(";")
    assert (cluster.proc_dir("node-1") / "server.properties").stat().st_mode & 0o077 == 0


def test_ssl_brokers_use_the_pem_stores_with_no_authorizer(tmp_path: Path) -> None:
    spec = KRaftSpec(security="ssl", mtls=True)
    files = SecurityFiles(tmp_path)
    broker = node_properties(spec, spec.node("broker-1"), Path("/d"), files)
    assert broker["listeners"] == "SSL://127.0.0.1:19092"
    assert broker["inter.broker.listener.name"] == "SSL"
    assert broker["ssl.keystore.location"] == str(files.broker_keystore)
    assert broker["ssl.client.auth"] == "required"
    assert "authorizer.class.name" not in broker  # as in the ZooKeeper mode's ssl
    ctl = node_properties(spec, spec.node("controller-1001"), Path("/d"), files)
    assert not any(k.startswith("ssl.") for k in ctl)


def test_a_secured_spec_needs_its_files_and_checks_its_options() -> None:
    spec = KRaftSpec(security="sasl-scram")
    with pytest.raises(ClusterError, match="secrets"):
        node_properties(spec, spec.node("broker-1"), Path("/d"))
    with pytest.raises(ClusterError, match="--mtls needs --security ssl"):
        KRaftSpec(security="sasl-scram", mtls=True)
    old = KRaftSpec().with_ids().to_json().replace('"security": "plaintext",', "")
    assert KRaftSpec.from_json(old).security == "plaintext"  # a spec saved before security


def test_scram_arguments_carry_the_salted_password_never_the_password(tmp_path: Path) -> None:
    files = SecurityFiles(tmp_path)
    ensure_passwords(files)
    args = scram_arguments(files)
    assert [a.split(",")[0] for a in args] == [
        "SCRAM-SHA-512=[name=kconsole",
        "SCRAM-SHA-512=[name=kconsole-broker",
    ]
    passwords = {
        "kconsole": read_secret(files.client_password, "c"),
        "kconsole-broker": read_secret(files.broker_password, "b"),
    }
    for arg in args:
        assert arg.endswith(",iterations=4096]")
        fields = dict(f.split("=", 1) for f in arg[len("SCRAM-SHA-512=[") : -1].split(","))
        password = passwords[fields["name"]]
        assert password not in arg
        salted = hashlib.pbkdf2_hmac(
            "sha512", password.encode(), base64.b64decode(fields["salt"]), 4096
        )
        assert base64.b64decode(fields["saltedpassword"]) == salted
    spec = KRaftSpec().with_ids()
    ctl = format_args(spec, spec.node("controller-1001"), Path("c"), args)
    assert ctl.count("--add-scram") == 2
    broker = format_args(spec, spec.node("broker-1"), Path("b"), args)
    assert "--add-scram" not in broker  # the controllers write the first metadata


def test_java_argfile_quotes_every_argument() -> None:
    text = java_argfile(["Main", "a b", 'q"uote', "back\\slash", "line\nend", ""])
    assert text.splitlines() == [
        '"Main"',
        '"a b"',
        '"q\\"uote"',
        '"back\\\\slash"',
        '"line\\nend"',
        '""',
    ]


class FakeJava:
    """Stands in for subprocess.Popen in kconsole.cluster.kraft.cluster: records each command line
    and the argument file it names (its mode and content, read while the 'JVM' runs), and answers
    as the format launcher does."""

    def __init__(self) -> None:
        self.argvs: list[list[str]] = []
        self.argfiles: list[tuple[Path, int, str]] = []

    def __call__(self, argv: list[str], **kwargs: Any) -> Any:
        self.argvs.append(list(argv))
        path = Path(argv[-1].removeprefix("@"))
        self.argfiles.append((path, stat.S_IMODE(path.stat().st_mode), path.read_text()))
        groups = path.read_text().count("--kconsole-next") + 1
        out = kwargs["stdout"]
        for i in range(groups):
            out.write(f"kconsole-format {i} 0\n".encode())
        out.flush()
        for line in path.read_text().splitlines():  # "formatted": what is_formatted looks for
            if line.endswith('server.properties"'):
                conf = Path(line.strip('"'))
                (conf.parent / "data" / "meta.properties").write_text("x=1\n")
        return REAL_POPEN(["true"])


def fake_java(monkeypatch: pytest.MonkeyPatch) -> FakeJava:
    """Every JVM kconsole starts is the fake (java found at once)."""
    fake = FakeJava()
    monkeypatch.setattr(kraft.subprocess, "Popen", fake)
    monkeypatch.setattr(jars, "java_executable", lambda: "java")
    return fake


def test_the_scram_users_reach_storagetool_through_a_private_file_then_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = secured(tmp_path, security="sasl-scram")
    fake = fake_java(monkeypatch)
    cluster.format_storage(tmp_path / "lib")
    assert len(fake.argvs) == 1  # every node in one JVM
    files = cluster.security_files()
    secrets = [read_secret(files.client_password, "c"), read_secret(files.broker_password, "b")]
    (argv,) = fake.argvs
    line = " ".join(argv)
    assert "--add-scram" not in line and "saltedpassword" not in line
    assert not any(s in line for s in secrets)
    path, mode, content = fake.argfiles[0]
    assert argv[-1] == f"@{path}" and path.parent == cluster.state_dir
    assert mode == 0o600
    assert content.count("--add-scram") == 6  # two users on each of three controllers
    assert not any(s in content for s in secrets)
    assert not path.exists()  # removed once the JVM exited
    assert not list(cluster.state_dir.glob("*.args"))
    for node in cluster.spec.nodes():  # StorageTool prints the users' keys there
        log = cluster.proc_dir(node.name) / "format.log"
        assert stat.S_IMODE(log.stat().st_mode) == 0o600


def test_a_jvm_per_node_gets_an_argfile_each_removed_even_when_the_start_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = secured(tmp_path, security="sasl-scram")
    fake = fake_java(monkeypatch)
    nodes = cluster.spec.nodes()
    deadline = kraft.time.monotonic() + 30
    assert cluster._format_each(nodes, tmp_path / "lib", deadline) == []
    assert len(fake.argfiles) == 6
    for (path, mode, content), argv in zip(fake.argfiles, fake.argvs, strict=True):
        assert mode == 0o600 and not path.exists()
        assert content.startswith('"kafka.tools.StorageTool"\n"format"')
        assert "--add-scram" not in " ".join(argv)
    assert sum("--add-scram" in c for _, _, c in fake.argfiles) == 3  # the controllers'

    def no_java(argv: list[str], **kwargs: Any) -> Any:
        raise FileNotFoundError("java")

    monkeypatch.setattr(kraft.subprocess, "Popen", no_java)
    with pytest.raises(FileNotFoundError):
        cluster._format_in_one_jvm(nodes, tmp_path / "lib", deadline)
    assert not list(cluster.state_dir.glob("*.args"))


def test_a_plaintext_cluster_is_formatted_with_no_scram_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = secured(tmp_path)
    fake = fake_java(monkeypatch)
    cluster.format_storage(tmp_path / "lib")
    assert "--add-scram" not in fake.argfiles[0][2]
    assert not (cluster.state_dir / "security").exists()


def test_a_formatted_cluster_keeps_its_security(tmp_path: Path) -> None:
    """The SCRAM users exist only from the format: a security (or password file) change asked
    of a formatted cluster is refused, not half applied."""
    state = tmp_path / "k"
    state.mkdir()
    (state / "cluster.json").write_text(KRaftSpec().with_ids().to_json())
    cluster = KRaftCluster(state, KRaftSpec(security="sasl-scram"))
    with pytest.raises(ClusterError, match="security='plaintext'"):
        cluster._refuse_other_topology()


def test_kconsole_reaches_a_secured_kraft_cluster_with_no_flags(tmp_path: Path) -> None:
    spec = KRaftSpec(security="sasl-scram").with_ids()
    (tmp_path / "cluster.json").write_text(spec.to_json())
    out = with_local_security(Settings(cluster_dir=tmp_path, bootstrap=spec.bootstrap))
    assert out.client == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "kconsole",
        "sasl.password_file": str(tmp_path / "security" / "client-password"),
    }
    assert out.client_origin["sasl.username"] == f"the local cluster in {tmp_path} (sasl-scram)"
    mtls = KRaftSpec(security="ssl", mtls=True).with_ids()
    (tmp_path / "cluster.json").write_text(mtls.to_json())
    out = with_local_security(Settings(cluster_dir=tmp_path, bootstrap=mtls.bootstrap))
    assert out.client["security.protocol"] == "SSL"
    assert out.client["ssl.certificate.location"] == str(tmp_path / "security" / "client.crt")
    (tmp_path / "cluster.json").write_text(KRaftSpec().with_ids().to_json())
    plain = Settings(cluster_dir=tmp_path, bootstrap=spec.bootstrap)
    assert with_local_security(plain) == plain
