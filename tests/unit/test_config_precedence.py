"""load_settings, exactly: which file and which cluster entry, precedence per value, where the
settings came from, why read-only, and the order and wording of every problem."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from kconsole import config
from kconsole.config import ConfigError, load_settings
from kconsole.errors import config_error


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture
def default_cfg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The per-user config file's location, here under tmp_path (not there until written)."""
    path = tmp_path / "default" / "config.toml"
    path.parent.mkdir()
    monkeypatch.setattr(config, "default_config_path", lambda: path)
    return path


class TestWhichFile:
    """--config > KCONSOLE_CONFIG > the default location (when it exists) > none."""

    def test_the_default_location_is_read_when_it_exists(self, default_cfg: Path) -> None:
        assert load_settings(env={}).source == "defaults"
        _write(default_cfg, 'bootstrap = "dflt:1"\n')
        s = load_settings(env={})
        assert s.bootstrap == "dflt:1" and s.source == f"defaults < {default_cfg}"

    def test_a_broken_default_file_says_where_it_was_found(self, default_cfg: Path) -> None:
        _write(default_cfg, "bootstrap = ")
        with pytest.raises(ConfigError) as err:
            load_settings(env={})
        (problem,) = err.value.problems
        assert problem.startswith(
            f"{default_cfg} (from the default location): the config file is not valid TOML: "
        )

    def test_the_variable_then_the_flag_win(self, tmp_path: Path, default_cfg: Path) -> None:
        _write(default_cfg, 'bootstrap = "dflt:1"\n')
        by_env = _write(tmp_path / "env.toml", 'bootstrap = "env:1"\n')
        by_flag = _write(tmp_path / "flag.toml", 'bootstrap = "flag:1"\n')
        env = {"KCONSOLE_CONFIG": str(by_env)}
        assert load_settings(env=env).bootstrap == "env:1"
        assert load_settings(env=env, config_path=by_flag).bootstrap == "flag:1"
        # an empty variable is not set: the default location again
        assert load_settings(env={"KCONSOLE_CONFIG": ""}).bootstrap == "dflt:1"


class TestWhichCluster:
    """--cluster > KCONSOLE_CLUSTER > `cluster` in the file; the entry over the top level."""

    TEXT = (
        'cluster = "a"\nbootstrap = "top:1"\nrefresh = 3\n'
        '[clusters.a]\nbootstrap = "a:1"\n[clusters.b]\nbootstrap = "b:1"\nrefresh = 4\n'
        '[clusters.c]\nbootstrap = "c:1"\n'
    )

    def test_precedence(self, tmp_path: Path) -> None:
        cfg = _write(tmp_path / "c.toml", self.TEXT)
        s = load_settings(config_path=cfg, env={})
        assert (s.cluster_name, s.bootstrap, s.refresh_s) == ("a", "a:1", 3.0)
        assert s.source == f"defaults < {cfg} < clusters.a"
        env = {"KCONSOLE_CLUSTER": "b"}
        s = load_settings(config_path=cfg, env=env)
        assert (s.cluster_name, s.bootstrap, s.refresh_s) == ("b", "b:1", 4.0)
        s = load_settings(config_path=cfg, env=env, cluster="c")
        assert (s.cluster_name, s.bootstrap, s.refresh_s) == ("c", "c:1", 3.0)
        # an empty variable is not set
        assert load_settings(config_path=cfg, env={"KCONSOLE_CLUSTER": ""}).cluster_name == "a"

    def test_no_entry_no_name(self, tmp_path: Path) -> None:
        cfg = _write(tmp_path / "c.toml", 'bootstrap = "top:1"\n[clusters.a]\nbootstrap = "a:1"\n')
        s = load_settings(config_path=cfg, env={})
        assert (s.cluster_name, s.bootstrap, s.source) == ("", "top:1", f"defaults < {cfg}")

    def test_an_unknown_name_without_a_config_file(self) -> None:
        with pytest.raises(ConfigError) as err:
            load_settings(env={}, cluster="prod")
        assert err.value.problems == (
            "--cluster: no cluster named 'prod' (no config file); known: none",
        )

    def test_an_unknown_name_in_a_file_without_entries(self, tmp_path: Path) -> None:
        cfg = _write(tmp_path / "c.toml", 'bootstrap = "top:1"\n')
        with pytest.raises(ConfigError) as err:
            load_settings(config_path=cfg, env={}, cluster="prod")
        assert err.value.problems == (f"--cluster: no cluster named 'prod' in {cfg}; known: none",)

    def test_a_file_that_cannot_be_read_is_the_only_problem(self, tmp_path: Path) -> None:
        missing = tmp_path / "nope.toml"
        with pytest.raises(ConfigError) as err:
            load_settings(config_path=missing, env={}, cluster="prod")
        assert err.value.problems == (f"{missing} (from --config): the config file does not exist",)

    def test_the_files_own_unknown_name_is_said_once(self, tmp_path: Path) -> None:
        cfg = _write(tmp_path / "c.toml", 'cluster = "nope"\n[clusters.a]\nbootstrap = "a:1"\n')
        with pytest.raises(ConfigError) as err:
            load_settings(config_path=cfg, env={})
        assert err.value.problems == (f"cluster (from {cfg}): 'nope' names no [clusters.*] entry",)

    def test_an_entry_that_is_no_table_is_unknown_too(self, tmp_path: Path) -> None:
        cfg = _write(tmp_path / "c.toml", "[clusters]\na = 3\n")
        with pytest.raises(ConfigError) as err:
            load_settings(config_path=cfg, env={}, cluster="a")
        assert err.value.problems == (
            f"clusters.a (from {cfg}): must be a table ([clusters.a]), not the integer 3",
            f"--cluster: no cluster named 'a' in {cfg}; known: none",
        )

    def test_a_broken_entry_named_by_the_flag_is_not_unknown(self, tmp_path: Path) -> None:
        """The entry's bad key is the problem; the name itself is fine."""
        cfg = _write(tmp_path / "c.toml", "[clusters.a]\nrefresh = 0\n")
        with pytest.raises(ConfigError) as err:
            load_settings(config_path=cfg, env={}, cluster="a")
        assert err.value.problems == (
            f"clusters.a.refresh (from {cfg}): must be between 0.1 and 3600 seconds, not 0",
        )


class TestPrecedencePerValue:
    """flags > KCONSOLE_* > [clusters.NAME] > the file's top level > defaults."""

    def test_every_layer(self, tmp_path: Path) -> None:
        cfg = _write(
            tmp_path / "c.toml",
            'bootstrap = "top:1"\nzookeeper = "ztop:1"\nbackend = "local"\nrefresh = 3\n'
            'group_refresh = 5\ncluster_dir = "/top"\n'
            '[clusters.x]\nbootstrap = "x:1"\nbackend = "docker"\ngroup_refresh = 6\n'
            'cluster_dir = "/x"\n',
        )
        base = load_settings(config_path=cfg, env={}, cluster="x")
        assert (base.bootstrap, base.zookeeper, base.backend) == ("x:1", "ztop:1", "docker")
        assert (base.refresh_s, base.group_refresh_s, base.cluster_dir) == (3.0, 6.0, Path("/x"))
        assert base.bootstrap_controller == ""
        env = {
            "KCONSOLE_BOOTSTRAP": "env:1",
            "KCONSOLE_ZOOKEEPER": "zenv:1",
            "KCONSOLE_BOOTSTRAP_CONTROLLER": "cenv:1",
            "KCONSOLE_BACKEND": "none",
            "KCONSOLE_CLUSTER_DIR": "/env",
        }
        s = load_settings(config_path=cfg, env=env, cluster="x")
        assert (s.bootstrap, s.zookeeper, s.bootstrap_controller) == ("env:1", "zenv:1", "cenv:1")
        assert (s.backend, s.cluster_dir, s.refresh_s) == ("none", Path("/env"), 3.0)
        s = load_settings(
            config_path=cfg,
            env=env,
            cluster="x",
            bootstrap="f:1",
            zookeeper="zf:1",
            bootstrap_controller="cf:1",
            backend="auto",
            refresh=7.0,
            group_refresh=8.0,
            cluster_dir=Path("/flag"),
        )
        assert (s.bootstrap, s.zookeeper, s.bootstrap_controller) == ("f:1", "zf:1", "cf:1")
        assert (s.backend, s.cluster_dir) == ("auto", Path("/flag"))
        assert (s.refresh_s, s.group_refresh_s) == (7.0, 8.0)

    def test_empty_variables(self) -> None:
        """An empty KCONSOLE_ZOOKEEPER is "no ZooKeeper"; an empty KCONSOLE_CLUSTER_DIR is not
        set; an empty KCONSOLE_BOOTSTRAP is refused."""
        s = load_settings(env={"KCONSOLE_ZOOKEEPER": "", "KCONSOLE_CLUSTER_DIR": ""})
        assert s.zookeeper == "" and s.source == "defaults < KCONSOLE_ZOOKEEPER"
        assert s.cluster_dir == config.Settings().cluster_dir
        with pytest.raises(ConfigError) as err:
            load_settings(env={"KCONSOLE_BOOTSTRAP": ""})
        assert err.value.problems == (
            'KCONSOLE_BOOTSTRAP: must not be empty: servers like "host:9092,host2:9092"',
        )

    def test_client_properties(self, tmp_path: Path) -> None:
        cfg = _write(
            tmp_path / "c.toml",
            '[client]\n"a" = "top"\n"b" = "top"\n"c" = true\n'
            '[clusters.x.client]\n"b" = "x"\n"d" = 5\n',
        )
        s = load_settings(config_path=cfg, env={}, cluster="x", client_props=("d=flag", "e=f"))
        assert s.client == {"a": "top", "b": "x", "c": "true", "d": "flag", "e": "f"}
        assert s.client_origin == {
            "a": f"[client] in {cfg}",
            "b": f"[clusters.x.client] in {cfg}",
            "c": f"[client] in {cfg}",
            "d": "-X",
            "e": "-X",
        }

    def test_where_the_settings_came_from(self, tmp_path: Path) -> None:
        cfg = _write(tmp_path / "c.toml", '[clusters.x]\nbootstrap = "x:1"\n')
        env = {
            "COMPOSE_PROJECT_NAME": "lab",
            "KCONSOLE_BACKEND": "docker",
            "KCONSOLE_BOOTSTRAP": "env:1",
            "KCONSOLE_CLUSTER_DIR": "/env",
            "KCONSOLE_READ_ONLY": "1",
        }
        s = load_settings(config_path=cfg, env=env, cluster="x")
        assert s.source == (
            f"defaults < COMPOSE_PROJECT_NAME < {cfg} < clusters.x < KCONSOLE_BOOTSTRAP"
            " < KCONSOLE_BACKEND < KCONSOLE_CLUSTER_DIR"
        )
        s = load_settings(config_path=cfg, env=env, cluster="x", read_only=True)
        assert s.source.endswith(" < KCONSOLE_CLUSTER_DIR < flags")
        assert load_settings(env={}, client_props=("a=b",)).source == "defaults < flags"
        # a read_only=False flag is no flag
        assert load_settings(env={}, read_only=False).source == "defaults"


class TestReadOnlyReasons:
    def test_every_reason_in_order(self, tmp_path: Path) -> None:
        cfg = _write(
            tmp_path / "c.toml",
            'read_only = true\n[clusters.x]\nbootstrap = "h:1"\nread_only = true\n'
            '[clusters.twin]\nbootstrap = " H:1 ,o:2"\nread_only = true\n'
            '[clusters.rw]\nbootstrap = "h:1"\n',
        )
        s = load_settings(
            config_path=cfg, env={"KCONSOLE_READ_ONLY": "yes"}, cluster="x", read_only=True
        )
        assert s.read_only
        assert s.read_only_reason == (
            f"read_only in {cfg}; cluster 'x' is read_only in {cfg}; KCONSOLE_READ_ONLY; "
            f"--read-only; cluster 'twin' (same servers) is read_only in {cfg}"
        )

    def test_an_entry_cannot_switch_it_off(self, tmp_path: Path) -> None:
        cfg = _write(tmp_path / "c.toml", "read_only = true\n[clusters.x]\nread_only = false\n")
        s = load_settings(config_path=cfg, env={}, cluster="x")
        assert s.read_only and s.read_only_reason == f"read_only in {cfg}"

    def test_no_servers_shared_no_reason(self, tmp_path: Path) -> None:
        cfg = _write(tmp_path / "c.toml", '[clusters.p]\nbootstrap = "p:1"\nread_only = true\n')
        s = load_settings(config_path=cfg, env={}, bootstrap="q:1")
        assert not s.read_only and s.read_only_reason == ""


class TestProblemOrder:
    """The file, the cluster name, variables, Compose's variable, KCONSOLE_READ_ONLY, flags, -X,
    secrets, then the client check."""

    def test_order(self, tmp_path: Path) -> None:
        cfg = _write(tmp_path / "c.toml", 'bootstrap = "b"\n')
        env = {
            "KCONSOLE_BACKEND": "k9s",
            "COMPOSE_PROJECT_NAME": "Bad",
            "KCONSOLE_READ_ONLY": "on",
        }
        with pytest.raises(ConfigError) as err:
            load_settings(
                config_path=cfg,
                env=env,
                cluster="nope",
                backend="x",
                client_props=("broken", "sasl.password=${NOT_SET_ANYWHERE}"),
            )
        problems = list(err.value.problems)
        assert problems[:6] == [
            f"bootstrap (from {cfg}): 'b' is not HOST:PORT",
            f"--cluster: no cluster named 'nope' in {cfg}; known: none",
            "KCONSOLE_BACKEND: must be one of auto, local, docker, none, not 'k9s'",
            "COMPOSE_PROJECT_NAME: 'Bad' is not a docker compose project name: only lowercase "
            "letters, digits, dashes and underscores, starting with a letter or a digit",
            "KCONSOLE_READ_ONLY: must be 1, true or yes (or 0, false, no, empty), not 'on'",
            "--backend: must be one of auto, local, docker, none, not 'x'",
        ]
        assert problems[6] == "-X: expects key=value, got 'broken'"
        (secret,) = problems[7:]
        assert "sasl.password" in secret and "NOT_SET_ANYWHERE is not set" in secret


class TestClientCheck:
    """`check_client` runs only on resolvable client properties; alone, its error is raised as
    it is; with other problems, its problems join them, last."""

    def check(self, calls: list[dict[str, str]]) -> config.ClientCheck:
        def check_client(props: Mapping[str, str], origin: Mapping[str, str]) -> None:
            calls.append(dict(props))
            if "bad" in props:
                raise config_error([f"bad (from {origin['bad']}): not a property"])

        return check_client

    def test_alone_it_is_raised_as_it_is(self) -> None:
        calls: list[dict[str, str]] = []
        with pytest.raises(ConfigError) as err:
            load_settings(env={}, client_props=("bad=1",), check_client=self.check(calls))
        assert err.value.problems == ("bad (from -X): not a property",)
        assert str(err.value) == (
            "a problem in the configuration; nothing was started:\n  bad (from -X): not a property"
        )
        assert calls == [{"bad": "1"}]

    def test_with_others_it_comes_last(self) -> None:
        calls: list[dict[str, str]] = []
        with pytest.raises(ConfigError) as err:
            load_settings(
                env={}, refresh=0.0, client_props=("bad=1",), check_client=self.check(calls)
            )
        assert err.value.problems == (
            "--refresh: must be between 0.1 and 3600 seconds, not 0.0",
            "bad (from -X): not a property",
        )

    def test_not_called_without_properties_or_with_unresolved_secrets(self) -> None:
        calls: list[dict[str, str]] = []
        load_settings(env={}, check_client=self.check(calls))
        assert calls == []
        with pytest.raises(ConfigError) as err:
            load_settings(
                env={},
                client_props=("bad=1", "sasl.password=${NOT_SET_ANYWHERE}"),
                check_client=self.check(calls),
            )
        assert calls == [] and len(err.value.problems) == 1
        s = load_settings(env={}, client_props=("acks=all",), check_client=self.check(calls))
        assert calls == [{"acks": "all"}] and s.client == {"acks": "all"}
