"""Settings: where the cluster is, how to talk to it, and how kconsole behaves.

Precedence: command-line flags > environment (KCONSOLE_*) > config file > defaults. The config
file is TOML, by default `config.toml` in the per-user config dir (`kconsole --config PATH`):

    bootstrap = "broker1:9093,broker2:9093"
    zookeeper = "zk1:2181"          # "" to run without ZooKeeper
    read_only = true
    refresh = 1.0                   # seconds between cluster-data polls
    group_refresh = 2.0             # seconds between consumer-group polls
    backend = "auto"                # auto | local | docker | none

    [client]                        # librdkafka properties, e.g. SASL/SSL
    "security.protocol" = "SASL_SSL"
    "sasl.mechanism" = "SCRAM-SHA-512"
    "sasl.username" = "ops"
    "sasl.password" = "..."
    "ssl.ca.location" = "/etc/kafka/ca.pem"

    [clusters.prod]                 # a named cluster: `kconsole --cluster prod`
    bootstrap = "prod1:9093,prod2:9093"
    read_only = true                # also applies whenever the bootstrap names one of these

Read-only is decided once, here, with the reason (which flag, variable or file said so); the
command layer refuses every modifying action with that reason.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import platformdirs

from kconsole import paths
from kconsole.defaults import HOST, ZK_PORT, default_bootstrap
from kconsole.errors import ClusterError

BACKENDS = ("auto", "local", "docker", "none")
_PORT = re.compile(r"[0-9]{1,5}")  # ASCII digits only: int() also reads "٣" (and "²" breaks it)


class ConfigError(ClusterError):
    """The configuration is broken; the message says where and how."""


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

    def __post_init__(self) -> None:
        if not self.bootstrap.strip():
            raise ConfigError("bootstrap servers must not be empty")
        for hp in self.bootstrap.split(","):
            _check_host_port(hp.strip(), "bootstrap server")
        if self.zookeeper:
            for hp in self.zookeeper.split("/")[0].split(","):
                _check_host_port(hp.strip(), "ZooKeeper address")
        if self.backend not in BACKENDS:
            raise ConfigError(f"backend must be one of {', '.join(BACKENDS)}, not {self.backend!r}")
        if not 0.1 <= self.refresh_s <= 3600 or not 0.1 <= self.group_refresh_s <= 3600:
            raise ConfigError("refresh intervals must be between 0.1 and 3600 seconds")

    def kafka_config(self, **extra: Any) -> dict[str, Any]:
        """librdkafka configuration for an admin/producer/consumer of this cluster."""
        conf: dict[str, Any] = {"bootstrap.servers": self.bootstrap}
        conf.update(self.client)
        conf.update(extra)
        return conf

    @property
    def is_default_local(self) -> bool:
        """True when pointed at the embedded local cluster's addresses."""
        return self.bootstrap == default_bootstrap()


def _check_host_port(hp: str, what: str) -> None:
    host, sep, port = hp.rpartition(":")
    if not sep or not host or not _PORT.fullmatch(port) or not 0 < int(port) < 65536:
        raise ConfigError(f"{what} {hp!r} is not HOST:PORT")


def default_config_path() -> Path:
    return Path(platformdirs.user_config_dir(paths.APP)) / "config.toml"


def parse_client_props(items: list[str] | tuple[str, ...]) -> dict[str, str]:
    """`-X key=value` items (librdkafka properties) as a dict."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"-X expects key=value, got {item!r}")
        out[key.strip()] = value
    return out


_CLUSTER_KEYS: dict[str, Any] = {
    "bootstrap": str,
    "zookeeper": str,
    "read_only": bool,
    "refresh": (int, float),
    "group_refresh": (int, float),
    "backend": str,
    "cluster_dir": str,
    "client": dict,
}
_FILE_KEYS: dict[str, Any] = {**_CLUSTER_KEYS, "cluster": str, "clusters": dict}


def _check_table(path: Path, where: str, data: dict[str, Any], known: dict[str, Any]) -> None:
    for key, value in data.items():
        if key not in known:
            raise ConfigError(
                f"config file {path}: unknown key {where}{key!r} "
                f"(known: {', '.join(sorted(known))})"
            )
        if not isinstance(value, known[key]) or (
            isinstance(value, bool) and known[key] is not bool
        ):
            raise ConfigError(
                f"config file {path}: {where}{key} has the wrong type ({_shown(value)})"
            )
    client = data.get("client", {})
    if any(not isinstance(v, str | int | float | bool) for v in client.values()):
        raise ConfigError(f"config file {path}: [{where}client] values must be strings or numbers")


def _shown(value: Any) -> str:
    """A TOML value for a message: scalars as they are, the rest by their TOML kind."""
    if isinstance(value, str | int | float):
        return repr(value)
    if isinstance(value, list | dict):
        return "an array" if isinstance(value, list) else "a table"
    return f"the date/time {value.isoformat()}"


def load_file(path: Path) -> dict[str, Any]:
    """Read and check a TOML config file; unknown keys and wrong types are errors."""
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError as exc:
        raise ConfigError(f"config file {path} does not exist") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from exc
    except ValueError as exc:  # an integer of thousands of digits
        raise ConfigError(f"config file {path}: a number is too long to read") from exc
    except RecursionError as exc:
        raise ConfigError(f"config file {path}: arrays or tables are nested too deeply") from exc
    _check_table(path, "", data, _FILE_KEYS)
    for name, table in data.get("clusters", {}).items():
        if not isinstance(table, dict):
            raise ConfigError(f"config file {path}: clusters.{name} must be a table")
        _check_table(path, f"clusters.{name}.", table, _CLUSTER_KEYS)
    if "cluster" in data and data["cluster"] not in data.get("clusters", {}):
        raise ConfigError(
            f"config file {path}: cluster = {data['cluster']!r} names no [clusters.*] entry"
        )
    return data


def _apply_table(settings: Settings, data: dict[str, Any], origin: str = "") -> Settings:
    """`settings` with the keys of one config table (top level or a [clusters.NAME]); `origin`
    names the table for the client properties it sets."""
    return replace(
        settings,
        bootstrap=data.get("bootstrap", settings.bootstrap),
        zookeeper=data.get("zookeeper", settings.zookeeper),
        read_only=data.get("read_only", settings.read_only),
        refresh_s=_seconds(data.get("refresh", settings.refresh_s)),
        group_refresh_s=_seconds(data.get("group_refresh", settings.group_refresh_s)),
        backend=data.get("backend", settings.backend),
        cluster_dir=_expand(data["cluster_dir"]) if "cluster_dir" in data else settings.cluster_dir,
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
    """A config number as seconds; one too large for a float is infinite (Settings refuses it)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _expand(cluster_dir: str) -> Path:
    try:
        return Path(cluster_dir).expanduser()
    except RuntimeError:  # ~name of no user
        user = cluster_dir.split("/")[0]
        raise ConfigError(f"cluster_dir {cluster_dir!r}: no home directory for {user}") from None


def _servers(bootstrap: str) -> set[str]:
    return {hp.strip().lower() for hp in bootstrap.split(",") if hp.strip()}


def load_settings(
    *,
    config_path: Path | None = None,
    cluster: str | None = None,
    bootstrap: str | None = None,
    zookeeper: str | None = None,
    client_props: tuple[str, ...] = (),
    backend: str | None = None,
    read_only: bool | None = None,
    refresh: float | None = None,
    group_refresh: float | None = None,
    cluster_dir: Path | None = None,
    env: dict[str, str] | None = None,
) -> Settings:
    """Merge defaults, the config file (its top level, then the chosen [clusters.NAME]),
    KCONSOLE_* variables and flags, in that order. Read-only only ever gets switched on: by any
    of them, or by a [clusters.*] entry marked read_only whose servers the bootstrap names."""
    env = dict(os.environ) if env is None else env
    settings = Settings()
    sources = ["defaults"]
    reasons: list[str] = []
    path = config_path or (Path(env["KCONSOLE_CONFIG"]) if env.get("KCONSOLE_CONFIG") else None)
    if path is None and default_config_path().exists():
        path = default_config_path()
    data: dict[str, Any] = {}
    if path is not None:
        data = load_file(path)
        settings = _apply_table(settings, data, f"[client] in {path}")
        if data.get("read_only"):
            reasons.append(f"read_only in {path}")
        sources.append(str(path))
    name = cluster or env.get("KCONSOLE_CLUSTER") or data.get("cluster") or ""
    profiles: dict[str, dict[str, Any]] = data.get("clusters", {})
    if name:
        if name not in profiles:
            known = ", ".join(sorted(profiles)) or "none"
            where = f" in {path}" if path else " (no config file)"
            raise ConfigError(f"no cluster named {name!r}{where}; known: {known}")
        profile = _apply_table(settings, profiles[name], f"[clusters.{name}.client] in {path}")
        settings = replace(profile, cluster_name=name)
        if profiles[name].get("read_only"):
            reasons.append(f"cluster {name!r} is read_only in {path}")
        sources.append(f"clusters.{name}")
    env_map = {
        "KCONSOLE_BOOTSTRAP": "bootstrap",
        "KCONSOLE_ZOOKEEPER": "zookeeper",
        "KCONSOLE_BACKEND": "backend",
    }
    for var, attr in env_map.items():
        if var in env:
            settings = replace(settings, **{attr: env[var]})  # type: ignore[arg-type]
            sources.append(var)
    if env.get("KCONSOLE_CLUSTER_DIR"):
        settings = replace(settings, cluster_dir=Path(env["KCONSOLE_CLUSTER_DIR"]))
        sources.append("KCONSOLE_CLUSTER_DIR")
    if env.get("KCONSOLE_READ_ONLY", "").lower() in ("1", "true", "yes"):
        settings = replace(settings, read_only=True)
        reasons.append("KCONSOLE_READ_ONLY")
    flags: dict[str, Any] = {}
    if bootstrap is not None:
        flags["bootstrap"] = bootstrap
    if zookeeper is not None:
        flags["zookeeper"] = zookeeper
    if backend is not None:
        flags["backend"] = backend
    if read_only:
        flags["read_only"] = True
        reasons.append("--read-only")
    if refresh is not None:
        flags["refresh_s"] = refresh
    if group_refresh is not None:
        flags["group_refresh_s"] = group_refresh
    if cluster_dir is not None:
        flags["cluster_dir"] = cluster_dir
    if client_props:
        given = parse_client_props(client_props)
        flags["client"] = {**settings.client, **given}
        flags["client_origin"] = {**settings.client_origin, **{k: "-X" for k in given}}
    if flags:
        sources.append("flags")
    settings = replace(settings, source=" < ".join(sources), **flags)
    # A cluster marked read-only stays read-only however it is reached (-b, a variable, ...).
    servers = _servers(settings.bootstrap)
    for other, table in profiles.items():
        shared = servers & _servers(table.get("bootstrap", ""))
        if other != name and table.get("read_only") and shared:
            reasons.append(f"cluster {other!r} (same servers) is read_only in {path}")
    if reasons:
        settings = replace(settings, read_only=True, read_only_reason="; ".join(reasons))
    elif settings.read_only:
        settings = replace(settings, read_only_reason="read_only setting")
    return settings
