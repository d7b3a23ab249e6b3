"""Settings: precedence, validation and clear errors for broken configs."""

from __future__ import annotations

from pathlib import Path

import pytest

from kconsole.config import ConfigError, Settings, load_settings


def test_defaults_point_at_the_local_cluster(tmp_path: Path) -> None:
    s = load_settings(env={}, config_path=None, cluster_dir=tmp_path)
    assert s.bootstrap == "127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094"
    assert s.zookeeper == "127.0.0.1:22181"
    assert s.refresh_s == 1.0 and s.group_refresh_s == 2.0
    assert s.is_default_local


def test_file_env_and_flags_in_order(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        'bootstrap = "file:9092"\nzookeeper = "zkfile:2181"\nrefresh = 5\nread_only = true\n'
        '[client]\n"security.protocol" = "SASL_SSL"\n'
        '"enable.ssl.certificate.verification" = false\n'
    )
    s = load_settings(
        config_path=cfg,
        env={"KCONSOLE_ZOOKEEPER": "zkenv:2181"},
        bootstrap="flag:9092",
        client_props=("sasl.mechanism=PLAIN",),
    )
    assert s.bootstrap == "flag:9092"  # flag beats file
    assert s.zookeeper == "zkenv:2181"  # env beats file
    assert s.refresh_s == 5.0 and s.read_only
    assert s.client == {
        "security.protocol": "SASL_SSL",
        "enable.ssl.certificate.verification": "false",
        "sasl.mechanism": "PLAIN",
    }
    conf = s.kafka_config(**{"group.id": "x"})
    assert conf["bootstrap.servers"] == "flag:9092" and conf["sasl.mechanism"] == "PLAIN"
    assert conf["group.id"] == "x"


def test_no_zookeeper(tmp_path: Path) -> None:
    assert load_settings(env={}, zookeeper="").zookeeper == ""


@pytest.mark.parametrize(
    "content, message",
    [
        ("bootstrap = ", "not valid TOML"),
        ('bootstap = "x:1"', "unknown key 'bootstap'"),
        ("refresh = 'fast'", "refresh has the wrong type"),
        ('bootstrap = "nohostport"', "not HOST:PORT"),
        ('backend = "k8s"', "backend must be one of"),
        ("refresh = 0", "between 0.1 and 3600"),
    ],
)
def test_broken_config_file(tmp_path: Path, content: str, message: str) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(content)
    with pytest.raises(ConfigError, match=message) as err:
        load_settings(config_path=cfg, env={})
    assert (
        str(cfg) in str(err.value)
        or "HOST:PORT" in message
        or "between" in message
        or "backend" in message
    )


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(config_path=tmp_path / "nope.toml", env={})


def test_bad_client_property() -> None:
    with pytest.raises(ConfigError, match="-X expects key=value"):
        load_settings(env={}, client_props=("security.protocol",))


def test_settings_validate_zookeeper_chroot() -> None:
    assert Settings(zookeeper="a:1,b:2/kafka").zookeeper == "a:1,b:2/kafka"
    with pytest.raises(ConfigError):
        Settings(zookeeper="a")
