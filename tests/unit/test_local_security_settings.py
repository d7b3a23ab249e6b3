"""with_local_security: a secured local cluster's client settings join the settings when their
bootstrap is that cluster's; a property the user gives adds to them (replacing the cluster's of
that name), unless it names another security.protocol."""

from __future__ import annotations

from pathlib import Path

from kconsole.cluster.local.spec import LocalClusterSpec
from kconsole.commands.local_security import with_local_security
from kconsole.config import Settings


def saved(tmp_path: Path, **spec: object) -> Path:
    (tmp_path / "cluster.json").write_text(LocalClusterSpec(**spec).to_json())  # type: ignore[arg-type]
    return tmp_path


def test_a_sasl_local_cluster_is_reached_with_no_flags(tmp_path: Path) -> None:
    d = saved(tmp_path, security="sasl-scram")
    out = with_local_security(Settings(cluster_dir=d))
    assert out.client == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "kconsole",
        "sasl.password_file": str(d / "security" / "client-password"),
    }
    assert out.client_origin["sasl.username"] == f"the local cluster in {d} (sasl-scram)"
    assert "the local cluster in" in out.source


def test_a_users_property_adds_to_the_clusters_and_replaces_its_own(tmp_path: Path) -> None:
    """-X given for the local cluster adds to its settings: a key of the user's replaces the
    cluster's of that name (a password replaces the password *file*), the rest stay."""
    d = saved(tmp_path, security="sasl-scram")
    mine = Settings(cluster_dir=d, client={"sasl.password": "wrong"})
    out = with_local_security(mine)
    assert out.client == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "kconsole",
        "sasl.password": "wrong",
    }
    assert "sasl.password_file" not in out.client_origin
    assert out.client_origin["sasl.username"] == f"the local cluster in {d} (sasl-scram)"
    # librdkafka's other name of the mechanism replaces it too
    other = with_local_security(Settings(cluster_dir=d, client={"sasl.mechanisms": "PLAIN"}))
    assert "sasl.mechanism" not in other.client and other.client["sasl.mechanisms"] == "PLAIN"


def test_a_ca_of_the_users_keeps_the_clusters_client_certificate(tmp_path: Path) -> None:
    d = saved(tmp_path, security="ssl", mtls=True)
    mine = Settings(cluster_dir=d, client={"security.protocol": "SSL", "ssl.ca.location": "/x"})
    out = with_local_security(mine)
    assert out.client == {
        "security.protocol": "SSL",
        "ssl.ca.location": "/x",
        "ssl.certificate.location": str(d / "security" / "client.crt"),
        "ssl.key.location": str(d / "security" / "client.key"),
    }


def test_the_users_own_settings_win_whole_when_they_name_another_protocol(
    tmp_path: Path,
) -> None:
    d = saved(tmp_path, security="ssl", mtls=True)
    mine = Settings(cluster_dir=d, client={"security.protocol": "SASL_SSL", "sasl.username": "u"})
    assert with_local_security(mine) == mine  # another way in: nothing of the cluster's joins
    other = Settings(cluster_dir=d, bootstrap="kafka.example:9092")
    assert with_local_security(other) == other  # not this cluster
    (tmp_path / "p").mkdir()
    plain = Settings(cluster_dir=saved(tmp_path / "p"))
    assert with_local_security(plain) == plain
    assert with_local_security(Settings(cluster_dir=tmp_path / "nothing")).client == {}
