"""A client property librdkafka refuses is named, with where it came from, before anything
starts: `kconsole` exits 2 instead of a traceback (or a console whose sources never answer)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kconsole.cli import main
from kconsole.cluster.security.clients import check_client_properties
from kconsole.config import ConfigError, load_settings


def run(args: list[str], tmp_path: Path, config: str = "") -> tuple[int, str]:
    env = {"KCONSOLE_STATE_DIR": str(tmp_path / "state"), "KCONSOLE_CONFIG": ""}
    if config:
        (tmp_path / "c.toml").write_text(config)
        env["KCONSOLE_CONFIG"] = str(tmp_path / "c.toml")
    res = CliRunner().invoke(main, ["--zookeeper", "", *args], env=env)
    return res.exit_code, res.output


class TestClientProperties:
    """Every refused property at once, each with its origin; exit 2; nothing started."""

    def test_an_unknown_property_from_the_flag(self, tmp_path: Path) -> None:
        code, out = run(["-X", "foo.bar=1", "describe"], tmp_path)
        assert code == 2, out
        assert 'foo.bar (from -X): No such configuration property: "foo.bar"' in out
        assert "Traceback" not in out

    def test_a_bad_value_from_a_config_file_and_one_from_a_profile(self, tmp_path: Path) -> None:
        config = (
            '[client]\n"security.protocol" = "BOGUS"\n'
            '[clusters.prod]\nbootstrap = "127.0.0.1:9"\n'
            '[clusters.prod.client]\n"no.such" = "1"\n'
        )
        code, out = run(["--cluster", "prod", "describe"], tmp_path, config)
        assert code == 2, out
        assert f"security.protocol (from [client] in {tmp_path / 'c.toml'})" in out
        assert "'BOGUS' is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL" in out
        assert f"no.such (from [clusters.prod.client] in {tmp_path / 'c.toml'})" in out

    def test_the_console_does_not_start_either(self, tmp_path: Path) -> None:
        code, out = run(["-X", "foo.bar=1"], tmp_path)  # no subcommand: the console
        assert code == 2 and "nothing was started" in out, out

    def test_good_properties_pass_and_a_set_that_does_not_go_together_is_said(self) -> None:
        sasl = ("security.protocol=SASL_SSL", "sasl.mechanism=SCRAM-SHA-512")
        settings = load_settings(client_props=(*sasl, "sasl.username=u", "sasl.password=p"), env={})
        check_client_properties(settings.client, settings.client_origin)
        no_user = load_settings(client_props=sasl, env={})
        with pytest.raises(ConfigError) as caught:
            check_client_properties(no_user.client, no_user.client_origin)
        assert caught.value.problems == (
            "sasl.username (from the settings): SASL SCRAM-SHA-512 needs sasl.username",
            "sasl.password (from the settings): SASL SCRAM-SHA-512 needs sasl.password "
            "(or sasl.password_file)",
        )
        with pytest.raises(
            ConfigError, match=r'compression\.type \(from -X\): Invalid value "nope"'
        ):
            check_client_properties({"compression.type": "nope"}, {"compression.type": "-X"})
