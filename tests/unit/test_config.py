"""Settings: precedence, validation and clear errors for broken configs."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kconsole.cli import main
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
    "content, problem",
    [
        ("bootstrap = ", "{cfg} (from --config): the config file is not valid TOML"),
        ('bootstap = "x:1"', "bootstap (from {cfg}): unknown key (known: backend, bootstrap,"),
        (
            "bootstrap = 12",
            'bootstrap (from {cfg}): must be a string like "host:9092,host2:9092", '
            "not the integer 12",
        ),
        (
            "refresh = 'fast'",
            "refresh (from {cfg}): must be a number of seconds like 1.0, not the string 'fast'",
        ),
        ("read_only = 1", "read_only (from {cfg}): must be true or false, not the integer 1"),
        ('bootstrap = "nohostport"', "bootstrap (from {cfg}): 'nohostport' is not HOST:PORT"),
        (
            'bootstrap = "host:notaport"',
            "bootstrap (from {cfg}): 'host:notaport' is not HOST:PORT: the port must be a number "
            "from 1 to 65535",
        ),
        (
            'zookeeper = "zk:99999"',
            "zookeeper (from {cfg}): 'zk:99999' is not HOST:PORT: the port must be a number "
            "from 1 to 65535",
        ),
        (
            'backend = "k8s"',
            "backend (from {cfg}): must be one of auto, local, docker, none, not 'k8s'",
        ),
        ("refresh = 0", "refresh (from {cfg}): must be between 0.1 and 3600 seconds, not 0"),
        (
            "[clusters.prod]\ngroup_refresh = 9999",
            "clusters.prod.group_refresh (from {cfg}): must be between 0.1 and 3600 seconds, "
            "not 9999",
        ),
        ("[client]\nx = [1]", 'client."x" (from {cfg}): must be a string, a number or true/false'),
        ('cluster = "nope"', "cluster (from {cfg}): 'nope' names no [clusters.*] entry"),
    ],
)
def test_a_broken_config_file_names_the_file_and_the_key(
    tmp_path: Path, content: str, problem: str
) -> None:
    """Issue 26 item 23: each problem says which key of which file, and what it must be."""
    cfg = tmp_path / "c.toml"
    cfg.write_text(content)
    with pytest.raises(ConfigError) as err:
        load_settings(config_path=cfg, env={})
    want = problem.format(cfg=cfg)
    assert [p for p in err.value.problems if p.startswith(want)], err.value.problems
    assert str(err.value).startswith("a problem in the configuration; nothing was started:\n  ")


def test_every_problem_is_reported_at_once_with_its_origin(tmp_path: Path) -> None:
    """Issue 26 item 23: the file's keys, a [clusters.*] entry, variables and flags, one a line."""
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        'bootstrap = 12\nzookeeper = "zk:99999"\nbackend = "k8s"\nrefresh = 0\n'
        '[clusters.prod]\nbootstrap = "host:notaport"\n'
    )
    env = {
        "KCONSOLE_BOOTSTRAP": "a:1,b",
        "KCONSOLE_ZOOKEEPER": "zk",
        "KCONSOLE_BACKEND": "k9s",
        "KCONSOLE_READ_ONLY": "on",
    }
    with pytest.raises(ConfigError) as err:
        load_settings(
            config_path=cfg,
            env=env,
            cluster="prod",
            refresh=0.0,
            group_refresh=1e9,
            zookeeper="zk:0",
            client_props=("broken",),
        )
    assert list(err.value.problems) == [
        f'bootstrap (from {cfg}): must be a string like "host:9092,host2:9092", not the integer 12',
        f"zookeeper (from {cfg}): 'zk:99999' is not HOST:PORT: the port must be a number "
        "from 1 to 65535",
        f"backend (from {cfg}): must be one of auto, local, docker, none, not 'k8s'",
        f"refresh (from {cfg}): must be between 0.1 and 3600 seconds, not 0",
        f"clusters.prod.bootstrap (from {cfg}): 'host:notaport' is not HOST:PORT: the port must "
        "be a number from 1 to 65535",
        "KCONSOLE_BOOTSTRAP: 'b' is not HOST:PORT",
        "KCONSOLE_ZOOKEEPER: 'zk' is not HOST:PORT",
        "KCONSOLE_BACKEND: must be one of auto, local, docker, none, not 'k9s'",
        "KCONSOLE_READ_ONLY: must be 1, true or yes (or 0, false, no, empty), not 'on'",
        "--zookeeper: 'zk:0' is not HOST:PORT: the port must be a number from 1 to 65535",
        "--refresh: must be between 0.1 and 3600 seconds, not 0.0",
        "--group-refresh: must be between 0.1 and 3600 seconds, not 1000000000.0",
        "-X: expects key=value, got 'broken'",
    ]
    lines = str(err.value).splitlines()
    assert lines[0] == "13 problems in the configuration; nothing was started:"
    assert lines[1:] == [f"  {p}" for p in err.value.problems]


def test_an_unknown_cluster_name_says_who_asked(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('[clusters.prod]\nbootstrap = "p:1"\n')
    with pytest.raises(ConfigError) as err:
        load_settings(config_path=cfg, env={"KCONSOLE_CLUSTER": "nope"})
    assert err.value.problems == (
        f"KCONSOLE_CLUSTER: no cluster named 'nope' in {cfg}; known: prod",
    )


def test_the_read_only_variable_is_read_or_refused() -> None:
    for on in ("1", "true", "YES", " yes "):
        assert load_settings(env={"KCONSOLE_READ_ONLY": on}).read_only
    for off in ("", "0", "false", "No"):
        assert not load_settings(env={"KCONSOLE_READ_ONLY": off}).read_only


def test_a_missing_config_file_says_who_named_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigError) as err:
        load_settings(config_path=missing, env={})
    assert err.value.problems == (f"{missing} (from --config): the config file does not exist",)
    with pytest.raises(ConfigError) as err:
        load_settings(env={"KCONSOLE_CONFIG": str(missing)})
    assert err.value.problems == (
        f"{missing} (from KCONSOLE_CONFIG): the config file does not exist",
    )


def test_bad_client_property() -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(env={}, client_props=("security.protocol", "=x", "acks=all"))
    assert err.value.problems == (
        "-X: expects key=value, got 'security.protocol'",
        "-X: expects key=value, got '=x'",
    )


def test_settings_made_directly_say_every_problem() -> None:
    with pytest.raises(ConfigError) as err:
        Settings(bootstrap="a", backend="x", refresh_s=0)
    assert err.value.problems == (
        "bootstrap: 'a' is not HOST:PORT",
        "backend: must be one of auto, local, docker, none, not 'x'",
        "refresh: must be between 0.1 and 3600 seconds, not 0",
    )


def test_settings_validate_zookeeper_chroot() -> None:
    assert Settings(zookeeper="a:1,b:2/kafka").zookeeper == "a:1,b:2/kafka"
    with pytest.raises(ConfigError):
        Settings(zookeeper="a")


class TestCommandLine:
    """`kconsole` (the console) and its subcommands say every problem, exit 2, start nothing."""

    def test_a_refused_configuration_does_not_move_the_log(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A library line logged after a refused configuration (a client of an earlier
        invocation still retrying) goes to the log file that was in place, never into the state
        dir the refused configuration named: it made that dir in a CI run ("nothing started")."""
        import logging

        from kconsole.cli.main import _library_log, _quiet_libraries

        before, refused = tmp_path / "before", tmp_path / "refused"
        monkeypatch.setenv("KCONSOLE_STATE_DIR", str(before))
        _quiet_libraries()
        _library_log()
        cfg = tmp_path / "c.toml"
        cfg.write_text('backend = "k8s"\n')
        env = {"KCONSOLE_STATE_DIR": str(refused), "KCONSOLE_CONFIG": str(cfg)}
        monkeypatch.setenv("KCONSOLE_STATE_DIR", str(refused))
        res = CliRunner().invoke(main, ["cluster", "status"], env=env)
        assert res.exit_code == 2, res.output
        logging.getLogger("kafka.cluster").warning("No node available for metadata refresh")
        assert not refused.exists()
        assert "No node available" in (before / "kconsole.log").read_text()

    @pytest.mark.parametrize("args", [[], ["describe"], ["cluster", "status"]])
    def test_every_problem_exit_2_nothing_started(self, tmp_path: Path, args: list[str]) -> None:
        cfg = tmp_path / "c.toml"
        cfg.write_text('bootstrap = 12\nbackend = "k8s"\n')
        state = tmp_path / "state"
        env = {"KCONSOLE_STATE_DIR": str(state), "KCONSOLE_CONFIG": str(cfg)}
        res = CliRunner().invoke(main, ["--refresh", "0", "-X", "foo.bar=1", *args], env=env)
        assert res.exit_code == 2, res.output
        assert res.output.splitlines() == [
            "error: 4 problems in the configuration; nothing was started:",
            f'  bootstrap (from {cfg}): must be a string like "host:9092,host2:9092", '
            "not the integer 12",
            f"  backend (from {cfg}): must be one of auto, local, docker, none, not 'k8s'",
            "  --refresh: must be between 0.1 and 3600 seconds, not 0.0",
            '  foo.bar (from -X): No such configuration property: "foo.bar"',
        ]
        assert not state.exists()  # no console log, no audit line, no cluster dir


class TestComposeProject:
    """The docker backend's compose project: --compose-project > KCONSOLE_COMPOSE_PROJECT >
    compose_project in the config file > COMPOSE_PROJECT_NAME (Compose's own) > kconsole."""

    def test_precedence(self, tmp_path: Path) -> None:
        cfg = tmp_path / "c.toml"
        cfg.write_text('compose_project = "from-file"\n[clusters.lab]\ncompose_project = "lab"\n')
        compose = {"COMPOSE_PROJECT_NAME": "from_compose"}
        both = {**compose, "KCONSOLE_COMPOSE_PROJECT": "from-env"}
        assert load_settings(env={}).compose_project == "kconsole"
        assert load_settings(env=compose).compose_project == "from_compose"
        assert "COMPOSE_PROJECT_NAME" in load_settings(env=compose).source
        assert load_settings(env=compose, config_path=cfg).compose_project == "from-file"
        lab = load_settings(env=compose, config_path=cfg, cluster="lab")
        assert lab.compose_project == "lab"
        assert load_settings(env=both, config_path=cfg).compose_project == "from-env"
        flagged = load_settings(env=both, config_path=cfg, compose_project="from-flag")
        assert flagged.compose_project == "from-flag"
        assert load_settings(env={}, compose_project="0lab").compose_project == "0lab"

    def test_compose_project_name_is_under_a_config_file_without_the_key(
        self, tmp_path: Path
    ) -> None:
        cfg = tmp_path / "c.toml"
        cfg.write_text('backend = "docker"\n')
        s = load_settings(env={"COMPOSE_PROJECT_NAME": "lab"}, config_path=cfg)
        assert s.compose_project == "lab" and s.backend == "docker"

    @pytest.mark.parametrize("name", ["Kafka", "-lab", "_lab", "lab.1", "lab 1", "läb", ""])
    def test_invalid_names_are_refused_as_compose_refuses_them(self, name: str) -> None:
        with pytest.raises(ConfigError) as err:
            load_settings(env={}, compose_project=name)
        (problem,) = err.value.problems
        if name:
            assert problem == (
                f"--compose-project: {name!r} is not a docker compose project name: only "
                "lowercase letters, digits, dashes and underscores, starting with a letter or "
                "a digit"
            )
        else:
            assert problem == (
                "--compose-project: must not be empty: a docker compose project name like "
                '"kconsole"'
            )

    def test_every_origin_is_named(self, tmp_path: Path) -> None:
        cfg = tmp_path / "c.toml"
        cfg.write_text(
            'compose_project = "Lab"\n[clusters.x]\ncompose_project = 3\n'
            '[clusters.y]\ncompose_project = "y.z"\n'
        )
        with pytest.raises(ConfigError) as err:
            load_settings(
                config_path=cfg,
                env={"KCONSOLE_COMPOSE_PROJECT": "-env"},
                compose_project="Flag",
            )
        assert list(err.value.problems) == [
            f"compose_project (from {cfg}): 'Lab' is not a docker compose project name: only "
            "lowercase letters, digits, dashes and underscores, starting with a letter or a digit",
            f'clusters.x.compose_project (from {cfg}): must be a string like "kconsole" (a '
            "docker compose project name), not the integer 3",
            f"clusters.y.compose_project (from {cfg}): 'y.z' is not a docker compose project "
            "name: only lowercase letters, digits, dashes and underscores, starting with a "
            "letter or a digit",
            "KCONSOLE_COMPOSE_PROJECT: '-env' is not a docker compose project name: only "
            "lowercase letters, digits, dashes and underscores, starting with a letter or a digit",
            "--compose-project: 'Flag' is not a docker compose project name: only lowercase "
            "letters, digits, dashes and underscores, starting with a letter or a digit",
        ]

    def test_an_invalid_compose_project_name_is_refused_only_when_used(self) -> None:
        bad = {"COMPOSE_PROJECT_NAME": "My Project"}
        with pytest.raises(ConfigError) as err:
            load_settings(env=bad)
        assert err.value.problems == (
            "COMPOSE_PROJECT_NAME: 'My Project' is not a docker compose project name: only "
            "lowercase letters, digits, dashes and underscores, starting with a letter or a digit",
        )
        assert load_settings(env=bad, compose_project="lab").compose_project == "lab"
        over = {**bad, "KCONSOLE_COMPOSE_PROJECT": "lab"}
        assert load_settings(env=over).compose_project == "lab"
        # an empty one is not set (as Compose reads it)
        assert load_settings(env={"COMPOSE_PROJECT_NAME": ""}).compose_project == "kconsole"

    def test_settings_made_directly_check_it(self) -> None:
        assert Settings(compose_project="lab_2-x").compose_project == "lab_2-x"
        with pytest.raises(ConfigError) as err:
            Settings(compose_project="Lab")
        assert err.value.problems == (
            "compose_project: 'Lab' is not a docker compose project name: only lowercase "
            "letters, digits, dashes and underscores, starting with a letter or a digit",
        )

    def test_the_command_line_refuses_a_bad_one(self, tmp_path: Path) -> None:
        state = tmp_path / "state"
        env = {"KCONSOLE_STATE_DIR": str(state), "KCONSOLE_CONFIG": ""}
        res = CliRunner().invoke(main, ["--compose-project", "Kafka Lab", "describe"], env=env)
        assert res.exit_code == 2, res.output
        assert res.output.splitlines() == [
            "error: a problem in the configuration; nothing was started:",
            "  --compose-project: 'Kafka Lab' is not a docker compose project name: only "
            "lowercase letters, digits, dashes and underscores, starting with a letter or a digit",
        ]
        assert not state.exists()
