"""with_local_security: a secured local cluster's client settings join the settings only when
the settings name no security of their own and their bootstrap is that cluster's."""

from __future__ import annotations

from pathlib import Path

from kconsole.cluster.local_spec import LocalClusterSpec
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


def test_the_users_own_settings_win_whole(tmp_path: Path) -> None:
    d = saved(tmp_path, security="ssl", mtls=True)
    mine = Settings(cluster_dir=d, client={"security.protocol": "SSL", "ssl.ca.location": "/x"})
    assert with_local_security(mine) == mine
    other = Settings(cluster_dir=d, bootstrap="kafka.example:9092")
    assert with_local_security(other) == other  # not this cluster
    (tmp_path / "p").mkdir()
    plain = Settings(cluster_dir=saved(tmp_path / "p"))
    assert with_local_security(plain) == plain
    assert with_local_security(Settings(cluster_dir=tmp_path / "nothing")).client == {}
