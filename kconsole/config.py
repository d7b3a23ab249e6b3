"""Settings: where the cluster is, how to talk to it, and how kconsole behaves.

Precedence: command-line flags > environment (KCONSOLE_*) > config file > defaults. The config
file is TOML, by default `config.toml` in the per-user config dir (`kconsole --config PATH`):

    bootstrap = "broker1:9093,broker2:9093"
    zookeeper = "zk1:2181"          # "" to run without ZooKeeper
    read_only = true
    refresh = 1.0                   # seconds between cluster-data polls
    group_refresh = 2.0             # seconds between consumer-group polls
    backend = "auto"                # auto | local | docker | none
    compose_project = "kconsole"    # the docker backend's compose project (docker compose -p)

    [client]                        # librdkafka properties, e.g. SASL/SSL
    "security.protocol" = "SASL_SSL"
    "sasl.mechanism" = "SCRAM-SHA-512"
    "sasl.username" = "ops"
    "sasl.password" = "${KAFKA_PASSWORD}"   # from the environment, or from a file:
    # "sasl.password_file" = "~/.config/kconsole/kafka-password"
    "ssl.ca.location" = "/etc/kafka/ca.pem"

    [clusters.prod]                 # a named cluster: `kconsole --cluster prod`
    bootstrap = "prod1:9093,prod2:9093"
    read_only = true                # also applies whenever the bootstrap names one of these

The compose project the docker backend acts on is, in that order: --compose-project,
KCONSOLE_COMPOSE_PROJECT, `compose_project` in the config file, Compose's own
COMPOSE_PROJECT_NAME, else "kconsole".

Client property values may name environment variables (`"${VAR}"`), and the secret ones
(sasl.password, sasl.oauthbearer.client.secret, ssl.key.password, ...) may be read from a file
(`"<key>_file" = PATH`): see kconsole.secrets. Their values never show in Settings' repr.

Read-only is decided once, here, with the reason (which flag, variable or file said so); the
command layer refuses every modifying action with that reason.

Every value is checked where it comes from, and every problem is reported at once, each with
the value's name and origin: `clusters.prod.refresh (from FILE): must be ...`,
`KCONSOLE_BOOTSTRAP: 'h:x' is not HOST:PORT ...`, `--refresh: must be ...`.
"""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import platformdirs

from kconsole import paths, secrets
from kconsole.defaults import HOST, ZK_PORT, default_bootstrap
from kconsole.errors import ConfigError, config_error

BACKENDS = ("auto", "local", "docker", "none")
# kconsole.cluster.docker.control.DEFAULT_PROJECT, as Compose -p
DEFAULT_COMPOSE_PROJECT = "kconsole"
# A Compose project name, as Compose checks one given with -p or COMPOSE_PROJECT_NAME.
_COMPOSE_PROJECT = re.compile(r"[a-z0-9][a-z0-9_-]*")
_PORT = re.compile(r"[0-9]{1,5}")  # ASCII digits only: int() also reads "٣" (and "²" breaks it)
_READ_ONLY_ON = ("1", "true", "yes")
_READ_ONLY_OFF = ("", "0", "false", "no")
# What each key of the config file must hold, as a type error says it.
_EXPECTED = {
    "bootstrap": 'a string like "host:9092,host2:9092"',
    "zookeeper": 'a string like "host:2181" ("" for none)',
    "read_only": "true or false",
    "refresh": "a number of seconds like 1.0",
    "group_refresh": "a number of seconds like 2.0",
    "rate_window": "a number of seconds like 30",
    "backend": f"one of {', '.join(map(json.dumps, BACKENDS))}",
    "compose_project": 'a string like "kconsole" (a docker compose project name)',
    "cluster_dir": 'a string like "~/kafka/local" (a directory)',
    "client": 'a table of librdkafka properties like {"security.protocol" = "SSL"}',
    "cluster": "a string naming a [clusters.NAME] entry",
    "clusters": "a table of [clusters.NAME] tables",
}


class _Problems:
    """The problems found so far, each with the value's name and where it came from."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, name: str, origin: str, what: str) -> None:
        self.lines.append(
            f"{name}: {what}" if name == origin else f"{name} (from {origin}): {what}"
        )

    def raise_any(self) -> None:
        if self.lines:
            raise config_error(self.lines)


@dataclass(frozen=True)
class Settings:
    bootstrap: str = default_bootstrap()
    zookeeper: str = f"{HOST}:{ZK_PORT}"  # "" = no ZooKeeper (Admin API only)
    client: dict[str, str] = field(default_factory=dict)  # -X key=value (librdkafka)
    backend: str = "auto"
    cluster_dir: Path = field(default_factory=paths.default_cluster_dir)
    read_only: bool = False
    read_only_reason: str = ""  # who asked for read-only: a flag, a variable, a config entry
    cluster_name: str = ""  # the [clusters.NAME] entry in use, if any
    refresh_s: float = 1.0
    group_refresh_s: float = 2.0
    source: str = "defaults"  # where the settings came from, for the header and errors
    # where each client property came from ("-X", "[client] in FILE", ...), for errors
    client_origin: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    # KRaft (KIP-919): controllers to read the metadata quorum from directly ("" = through
    # the brokers), so it is known while every broker is down. Last: positional construction
    # keeps its order.
    bootstrap_controller: str = ""
    # The docker compose project whose broker containers the docker backend acts on.
    compose_project: str = DEFAULT_COMPOSE_PROJECT
    # The window rates and groups' statuses are judged over (kconsole.rates), in seconds.
    rate_window_s: float = 30.0

    def __post_init__(self) -> None:
        found = _Problems()
        for key, value in (
            ("bootstrap", self.bootstrap),
            ("zookeeper", self.zookeeper),
            ("bootstrap_controller", self.bootstrap_controller),
            ("backend", self.backend),
            ("compose_project", self.compose_project),
            ("refresh", self.refresh_s),
            ("group_refresh", self.group_refresh_s),
            ("rate_window", self.rate_window_s),
        ):
            for what in value_problems(key, value):
                found.add(key, key, what)
        found.raise_any()

    def __repr__(self) -> str:
        # Secrets never show: the client properties' secret values are masked.
        shown = {f.name: getattr(self, f.name) for f in fields(self) if f.repr}
        shown["client"] = secrets.masked(self.client)
        return f"Settings({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

    def kafka_config(self, **extra: Any) -> dict[str, Any]:
        """The cluster's client properties as the user gave them (bootstrap.servers and the
        client table and -X), secrets not resolved: kconsole.cluster.security.translate resolves and
        translates them for each client."""
        conf: dict[str, Any] = {"bootstrap.servers": self.bootstrap}
        conf.update(self.client)
        conf.update(extra)
        return conf

    @property
    def is_default_local(self) -> bool:
        """True when pointed at the embedded local cluster's addresses."""
        return self.bootstrap == default_bootstrap()


def value_problems(key: str, value: Any) -> list[str]:
    """What is wrong with `value` for the setting `key` (a config file key: bootstrap,
    zookeeper, backend, compose_project, refresh, group_refresh), each as a phrase; empty when
    it is fine."""
    if key in ("refresh", "group_refresh"):
        if not 0.1 <= _seconds(value) <= 3600:
            return [f"must be between 0.1 and 3600 seconds, not {_shown(value, kind=False)}"]
        return []
    if key == "rate_window":
        if not 5 <= _seconds(value) <= 3600:
            return [f"must be between 5 and 3600 seconds, not {_shown(value, kind=False)}"]
        return []
    if key == "backend":
        if value not in BACKENDS:
            return [f"must be one of {', '.join(BACKENDS)}, not {value!r}"]
        return []
    if key == "compose_project":
        what = compose_project_problem(value)
        return [what] if what else []
    if key == "bootstrap" and not value.strip():
        return ['must not be empty: servers like "host:9092,host2:9092"']
    if key in ("zookeeper", "bootstrap_controller") and not value:
        return []
    hosts = value.split("/")[0] if key == "zookeeper" else value  # ZooKeeper's chroot
    return [what for hp in hosts.split(",") if (what := _host_port_problem(hp.strip()))]


def compose_project_problem(name: str) -> str:
    """What is wrong with `name` as a docker compose project name, as Compose checks it
    ("" when it is fine)."""
    if not name:
        return 'must not be empty: a docker compose project name like "kconsole"'
    if not _COMPOSE_PROJECT.fullmatch(name):
        return (
            f"{_shown(name, kind=False)} is not a docker compose project name: only lowercase "
            "letters, digits, dashes and underscores, starting with a letter or a digit"
        )
    return ""


def _host_port_problem(hp: str) -> str:
    host, sep, port = hp.rpartition(":")
    if not sep or not host:
        return f"{hp!r} is not HOST:PORT"
    if not _PORT.fullmatch(port) or not 0 < int(port) < 65536:
        return f"{hp!r} is not HOST:PORT: the port must be a number from 1 to 65535"
    return ""


def default_config_path() -> Path:
    return Path(platformdirs.user_config_dir(paths.APP)) / "config.toml"


def parse_client_props(items: list[str] | tuple[str, ...]) -> dict[str, str]:
    """`-X key=value` items (librdkafka properties) as a dict; ConfigError names every item
    that is not key=value."""
    found = _Problems()
    out = _client_props(items, found)
    found.raise_any()
    return out


def _client_props(items: list[str] | tuple[str, ...], found: _Problems) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            found.add("-X", "-X", f"expects key=value, got {item!r}")
        else:
            out[key.strip()] = value
    return out


_CLUSTER_KEYS: dict[str, Any] = {
    "bootstrap": str,
    "zookeeper": str,
    "read_only": bool,
    "refresh": (int, float),
    "group_refresh": (int, float),
    "rate_window": (int, float),
    "backend": str,
    "compose_project": str,
    "cluster_dir": str,
    "client": dict,
}
_FILE_KEYS: dict[str, Any] = {**_CLUSTER_KEYS, "cluster": str, "clusters": dict}


def _check_table(
    path: Path, where: str, data: dict[str, Any], known: dict[str, Any], found: _Problems
) -> dict[str, Any]:
    """The keys of one table (the top level or a [clusters.NAME]) whose values are good; every
    other one is added to `found`, named by its dotted key (`where` + key) and the file."""
    origin = str(path)
    good: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{where}{key}"
        if key not in known:
            found.add(name, origin, f"unknown key (known: {', '.join(sorted(known))})")
            continue
        if not isinstance(value, known[key]) or (
            isinstance(value, bool) and known[key] is not bool
        ):
            found.add(name, origin, f"must be {_EXPECTED[key]}, not {_shown(value)}")
            continue
        if key == "client":
            value = _check_client_table(origin, name, value, found)
        elif key == "cluster_dir":
            try:
                value = _expand(value)
            except ValueError as exc:
                found.add(name, origin, str(exc))
                continue
        elif key not in ("read_only", "cluster", "clusters"):
            problems = value_problems(key, value)
            for what in problems:
                found.add(name, origin, what)
            if problems:
                continue
        good[key] = value
    return good


def _check_client_table(
    origin: str, name: str, table: dict[str, Any], found: _Problems
) -> dict[str, Any]:
    good = {}
    for prop, value in table.items():
        if isinstance(value, str | int | float | bool):
            good[prop] = value
        else:
            what = f"must be a string, a number or true/false, not {_shown(value)}"
            found.add(f"{name}.{json.dumps(prop, ensure_ascii=False)}", origin, what)
    return good


def _shown(value: Any, *, kind: bool = True) -> str:
    """A TOML value for a message: its kind (`kind`) and the value, shortened when long."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}" if kind else str(value).lower()
    if isinstance(value, str | int | float):
        text = repr(value) if isinstance(value, str) else str(value)
        if len(text) > 40:
            text = f"{text[:20]}…({len(text)} characters)"
        if not kind:
            return text
        return {str: "the string", int: "the integer", float: "the number"}[type(value)] + (
            f" {text}"
        )
    if isinstance(value, list | dict):
        return "an array" if isinstance(value, list) else "a table"
    return f"the date/time {value.isoformat()}"


def load_file(path: Path) -> dict[str, Any]:
    """Read and check a TOML config file: its good keys; ConfigError says every unknown key,
    wrong type and bad value."""
    found = _Problems()
    data = _read_file(path, str(path), found)
    found.raise_any()
    return data or {}


def _read_file(path: Path, path_from: str, found: _Problems) -> dict[str, Any] | None:
    """The config file's good keys (its [clusters.*] tables, each with its good keys), or
    None when it cannot be read; every problem is added to `found`. `path_from` says who named
    the file."""
    name = str(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        found.add(name, path_from, "the config file does not exist")
        return None
    except (OSError, UnicodeDecodeError) as exc:
        found.add(name, path_from, f"cannot read the config file: {exc}")
        return None
    except tomllib.TOMLDecodeError as exc:
        found.add(name, path_from, f"the config file is not valid TOML: {exc}")
        return None
    except ValueError:  # an integer of thousands of digits
        found.add(name, path_from, "a number in the config file is too long to read")
        return None
    except RecursionError:
        found.add(name, path_from, "arrays or tables in the config file are nested too deeply")
        return None
    good = _check_table(path, "", data, _FILE_KEYS, found)
    profiles: dict[str, dict[str, Any]] = {}
    for profile, table in good.get("clusters", {}).items():
        if not isinstance(table, dict):
            what = f"must be a table ([clusters.{profile}]), not {_shown(table)}"
            found.add(f"clusters.{profile}", name, what)
            continue
        profiles[profile] = _check_table(path, f"clusters.{profile}.", table, _CLUSTER_KEYS, found)
    if "clusters" in good:
        good["clusters"] = profiles
    named = data.get("clusters")
    if "cluster" in good and good["cluster"] not in (named if isinstance(named, dict) else {}):
        found.add("cluster", name, f"{good['cluster']!r} names no [clusters.*] entry")
    return good


def _apply_table(settings: Settings, data: dict[str, Any], origin: str = "") -> Settings:
    """`settings` with the keys of one checked config table (top level or a [clusters.NAME]);
    `origin` names the table for the client properties it sets."""
    return replace(
        settings,
        bootstrap=data.get("bootstrap", settings.bootstrap),
        zookeeper=data.get("zookeeper", settings.zookeeper),
        read_only=data.get("read_only", settings.read_only),
        refresh_s=_seconds(data.get("refresh", settings.refresh_s)),
        group_refresh_s=_seconds(data.get("group_refresh", settings.group_refresh_s)),
        rate_window_s=_seconds(data.get("rate_window", settings.rate_window_s)),
        backend=data.get("backend", settings.backend),
        compose_project=data.get("compose_project", settings.compose_project),
        cluster_dir=data.get("cluster_dir", settings.cluster_dir),
        client={
            **settings.client,
            **{
                k: str(v).lower() if isinstance(v, bool) else str(v)
                for k, v in data.get("client", {}).items()
            },
        },
        client_origin={
            **settings.client_origin,
            **{k: origin for k in data.get("client", {})},
        },
    )


def _seconds(value: float) -> float:
    """A config number as seconds; one too large for a float is infinite (refused)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _expand(cluster_dir: str) -> Path:
    try:
        return Path(cluster_dir).expanduser()
    except RuntimeError:  # ~name of no user
        user = cluster_dir.split("/")[0]
        raise ValueError(f"{cluster_dir!r}: no home directory for {user}") from None


def _servers(bootstrap: str) -> set[str]:
    return {hp.strip().lower() for hp in bootstrap.split(",") if hp.strip()}


ClientCheck = Callable[[Mapping[str, str], Mapping[str, str]], None]

# The KCONSOLE_* variables that set a value, each with the setting it sets (checked as that key).
_VARIABLES = {
    "KCONSOLE_BOOTSTRAP": "bootstrap",
    "KCONSOLE_ZOOKEEPER": "zookeeper",
    "KCONSOLE_BOOTSTRAP_CONTROLLER": "bootstrap_controller",
    "KCONSOLE_BACKEND": "backend",
    "KCONSOLE_COMPOSE_PROJECT": "compose_project",
}


@dataclass
class _Merge:
    """The settings merged so far, where they came from, who asked for read-only, the problems."""

    settings: Settings = field(default_factory=Settings)
    sources: list[str] = field(default_factory=lambda: ["defaults"])
    reasons: list[str] = field(default_factory=list)
    found: _Problems = field(default_factory=_Problems)

    def good(self, name: str, key: str, value: Any) -> bool:
        """Whether `value` is good for the setting `key`; if not, `name` says its problems."""
        problems = value_problems(key, value)
        for what in problems:
            self.found.add(name, name, what)
        return not problems


def load_settings(
    *,
    config_path: Path | None = None,
    cluster: str | None = None,
    bootstrap: str | None = None,
    zookeeper: str | None = None,
    client_props: tuple[str, ...] = (),
    backend: str | None = None,
    compose_project: str | None = None,
    read_only: bool | None = None,
    refresh: float | None = None,
    group_refresh: float | None = None,
    cluster_dir: Path | None = None,
    bootstrap_controller: str | None = None,
    env: dict[str, str] | None = None,
    check_client: ClientCheck | None = None,
) -> Settings:
    """Merge defaults, the config file (its top level, then the chosen [clusters.NAME]),
    KCONSOLE_* variables and flags, in that order. Read-only only ever gets switched on: by any
    of them, or by a [clusters.*] entry marked read_only whose servers the bootstrap names.

    Every value is checked where it comes from; ConfigError says every problem at once, each
    with the value's name and origin. `check_client` (kconsole.cluster.security.clients'
    check_client_properties) checks the client properties too, and its problems join the rest.
    """
    env = dict(os.environ) if env is None else env
    merge = _Merge()
    path, path_from = _config_file(config_path, env)
    read = _apply_file(merge, path, path_from)
    data = read or {}
    name, name_from = _cluster_name(cluster, env, data, path)
    profiles: dict[str, dict[str, Any]] = data.get("clusters", {})
    readable = path is None or read is not None
    _apply_cluster(merge, profiles, name, name_from, path, readable=readable)
    configured = "compose_project" in data or "compose_project" in profiles.get(name, {})
    project_given = compose_project is not None or "KCONSOLE_COMPOSE_PROJECT" in env
    _apply_variables(merge, env, compose_project_set=configured or project_given)
    _apply_read_only_variable(merge, env)
    _apply_flags(
        merge,
        bootstrap=bootstrap,
        zookeeper=zookeeper,
        bootstrap_controller=bootstrap_controller,
        backend=backend,
        compose_project=compose_project,
        refresh=refresh,
        group_refresh=group_refresh,
        read_only=read_only,
        cluster_dir=cluster_dir,
        client_props=client_props,
    )
    _check_client(merge, env, check_client)
    merge.found.raise_any()
    return _decide_read_only(merge, profiles, name, path)


def _config_file(config_path: Path | None, env: Mapping[str, str]) -> tuple[Path | None, str]:
    """The config file (--config, KCONSOLE_CONFIG, the default location when there, else none)."""
    if config_path is not None:
        return config_path, "--config"
    if env.get("KCONSOLE_CONFIG"):
        return Path(env["KCONSOLE_CONFIG"]), "KCONSOLE_CONFIG"
    if default_config_path().exists():
        return default_config_path(), "the default location"
    return None, "--config"


def _apply_file(merge: _Merge, path: Path | None, path_from: str) -> dict[str, Any] | None:
    """Apply the config file's top level; return its good keys (None: no file, or unreadable)."""
    if path is None:
        return None
    read = _read_file(path, path_from, merge.found)
    data = read or {}
    merge.settings = _apply_table(merge.settings, data, f"[client] in {path}")
    if data.get("read_only"):
        merge.reasons.append(f"read_only in {path}")
    merge.sources.append(str(path))
    return read


def _cluster_name(
    cluster: str | None, env: Mapping[str, str], data: dict[str, Any], path: Path | None
) -> tuple[str, str]:
    """The [clusters.NAME] asked for and who asked: --cluster, KCONSOLE_CLUSTER, else the file."""
    if cluster:
        return cluster, "--cluster"
    if env.get("KCONSOLE_CLUSTER"):
        return env["KCONSOLE_CLUSTER"], "KCONSOLE_CLUSTER"
    return data.get("cluster", ""), str(path)


def _apply_cluster(
    merge: _Merge,
    profiles: dict[str, dict[str, Any]],
    name: str,
    name_from: str,
    path: Path | None,
    *,
    readable: bool,
) -> None:
    """Apply the chosen [clusters.NAME] over the top level, or say no entry has that name."""
    if name and name in profiles:
        profile = _apply_table(
            merge.settings, profiles[name], f"[clusters.{name}.client] in {path}"
        )
        merge.settings = replace(profile, cluster_name=name)
        if profiles[name].get("read_only"):
            merge.reasons.append(f"cluster {name!r} is read_only in {path}")
        merge.sources.append(f"clusters.{name}")
    # A name from the file itself is the file check's to report; an unreadable file says enough.
    elif name and name_from != str(path) and readable:
        known = ", ".join(sorted(profiles)) or "none"
        where = f" in {path}" if path else " (no config file)"
        merge.found.add(name_from, name_from, f"no cluster named {name!r}{where}; known: {known}")


def _apply_variables(merge: _Merge, env: Mapping[str, str], *, compose_project_set: bool) -> None:
    """Apply the KCONSOLE_* variables that set a value, then COMPOSE_PROJECT_NAME, each checked."""
    for var, attr in _VARIABLES.items():
        if var in env and merge.good(var, attr, env[var]):
            merge.settings = replace(merge.settings, **{attr: env[var]})  # type: ignore[arg-type]
            merge.sources.append(var)
    # Compose's own variable, the project `docker compose` itself would use: under every
    # setting of kconsole's own, and only checked when it is the one used.
    var = "COMPOSE_PROJECT_NAME"
    if env.get(var) and not compose_project_set and merge.good(var, "compose_project", env[var]):
        merge.settings = replace(merge.settings, compose_project=env[var])
        merge.sources.insert(1, var)
    if env.get("KCONSOLE_CLUSTER_DIR"):
        merge.settings = replace(merge.settings, cluster_dir=Path(env["KCONSOLE_CLUSTER_DIR"]))
        merge.sources.append("KCONSOLE_CLUSTER_DIR")


def _apply_read_only_variable(merge: _Merge, env: Mapping[str, str]) -> None:
    """KCONSOLE_READ_ONLY: 1, true or yes switches read-only on; 0, false, no or empty do not."""
    ro = env.get("KCONSOLE_READ_ONLY", "").strip().lower()
    if ro in _READ_ONLY_ON:
        merge.settings = replace(merge.settings, read_only=True)
        merge.reasons.append("KCONSOLE_READ_ONLY")
    elif ro not in _READ_ONLY_OFF:
        what = f"must be 1, true or yes (or 0, false, no, empty), not {env['KCONSOLE_READ_ONLY']!r}"
        merge.found.add("KCONSOLE_READ_ONLY", "KCONSOLE_READ_ONLY", what)


def _apply_flags(
    merge: _Merge,
    *,
    bootstrap: str | None,
    zookeeper: str | None,
    bootstrap_controller: str | None,
    backend: str | None,
    compose_project: str | None,
    refresh: float | None,
    group_refresh: float | None,
    read_only: bool | None,
    cluster_dir: Path | None,
    client_props: tuple[str, ...],
) -> None:
    """Apply the flags given (each value checked) over everything else; the sources are final."""
    flags: dict[str, Any] = {}
    for flag, key, attr, value in (
        ("--bootstrap", "bootstrap", "bootstrap", bootstrap),
        ("--zookeeper", "zookeeper", "zookeeper", zookeeper),
        (
            "--bootstrap-controller",
            "bootstrap_controller",
            "bootstrap_controller",
            bootstrap_controller,
        ),
        ("--backend", "backend", "backend", backend),
        ("--compose-project", "compose_project", "compose_project", compose_project),
        ("--refresh", "refresh", "refresh_s", refresh),
        ("--group-refresh", "group_refresh", "group_refresh_s", group_refresh),
    ):
        if value is not None and merge.good(flag, key, value):
            flags[attr] = value
    if read_only:
        flags["read_only"] = True
        merge.reasons.append("--read-only")
    if cluster_dir is not None:
        flags["cluster_dir"] = cluster_dir
    if client_props:
        given = _client_props(client_props, merge.found)
        flags["client"] = {**merge.settings.client, **given}
        flags["client_origin"] = {**merge.settings.client_origin, **{k: "-X" for k in given}}
    if flags:
        merge.sources.append("flags")
    merge.settings = replace(merge.settings, source=" < ".join(merge.sources), **flags)


def _check_client(merge: _Merge, env: Mapping[str, str], check_client: ClientCheck | None) -> None:
    """Add the client properties' problems: secrets not there, then what `check_client` says."""
    # Secrets from the environment and from files: every one must be there (read now, and
    # again each time a client is made), said with the property and where it came from.
    client, origin = merge.settings.client, merge.settings.client_origin
    unresolved = secrets.resolve_problems(client, origin, env)
    merge.found.lines.extend(unresolved)
    if check_client is not None and client and not unresolved:
        try:
            check_client(client, origin)
        except ConfigError as exc:
            if not merge.found.lines:
                raise  # said as the check says it
            merge.found.lines.extend(exc.problems)


def _decide_read_only(
    merge: _Merge, profiles: dict[str, dict[str, Any]], name: str, path: Path | None
) -> Settings:
    """The merged settings, read-only with every reason when anyone asked for it."""
    # A cluster marked read-only stays read-only however it is reached (-b, a variable, ...).
    servers = _servers(merge.settings.bootstrap)
    for other, table in profiles.items():
        shared = servers & _servers(table.get("bootstrap", ""))
        if other != name and table.get("read_only") and shared:
            merge.reasons.append(f"cluster {other!r} (same servers) is read_only in {path}")
    if merge.reasons:
        return replace(merge.settings, read_only=True, read_only_reason="; ".join(merge.reasons))
    if merge.settings.read_only:
        return replace(merge.settings, read_only_reason="read_only setting")
    return merge.settings
