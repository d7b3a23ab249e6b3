"""Static checks that compose/docker-compose.yml agrees with the embedded local cluster.

No Docker engine is needed: the file's `${VAR:-default}` variables are filled in as Compose does
(defaults, or the values a test gives), it is parsed with PyYAML (whose safe_load resolves the
`<<: *anchor` merges) and compared with kconsole.cluster.settings and broker_properties(). The
image's entrypoint (compose/kafka-image/kafka-entrypoint, run by bash here) turns each broker's
environment into its server.properties, which must be the embedded broker's.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kconsole.cluster import settings
from kconsole.cluster.docker.images import kafka_image
from kconsole.cluster.local.cluster import LocalClusterSpec, broker_properties, zookeeper_properties

COMPOSE_FILE = Path(__file__).resolve().parents[2] / "compose" / "docker-compose.yml"

BROKER_IDS = list(range(1, settings.DEFAULT_BROKERS + 1))
INTERNAL_PORT = 29092
ZK_CONTAINER_PORT = 2181
ENTRYPOINT = COMPOSE_FILE.parent / "kafka-image" / "kafka-entrypoint"
# The first port of the kernel's default ephemeral range (net.ipv4.ip_local_port_range).
EPHEMERAL_LOW = 32768
_VARIABLE = re.compile(r"\$\{(?P<name>[A-Z0-9_]+)(?::-(?P<default>[^}]*))?\}")

# broker_properties() keys whose compose value differs by design (container hosts and ports,
# two listeners instead of one, the image's own data directory).
HOST_SPECIFIC = {
    "broker.id",
    "listeners",
    "advertised.listeners",
    "listener.security.protocol.map",
    "inter.broker.listener.name",
    "zookeeper.connect",
    "log.dirs",
}

# zoo.cfg keys of zookeeper_properties() and the entrypoint's variable for each (the names of
# the official zookeeper image).
ZK_ENV = {
    "tickTime": "ZOO_TICK_TIME",
    "maxClientCnxns": "ZOO_MAX_CLIENT_CNXNS",
    "admin.enableServer": "ZOO_ADMINSERVER_ENABLED",
    "4lw.commands.whitelist": "ZOO_4LW_COMMANDS_WHITELIST",
    "autopurge.snapRetainCount": "ZOO_AUTOPURGE_SNAPRETAINCOUNT",
    "autopurge.purgeInterval": "ZOO_AUTOPURGE_PURGEINTERVAL",
}


# ------------------------------------------------------------------------------------------
# Helpers
# ------------------------------------------------------------------------------------------


def env_var(key: str, prefix: str = "KAFKA_") -> str:
    """The image's environment variable for a server.properties key.

    The apache/kafka image's convention: upper case, '.' -> '_', '_' -> '__', '-' -> '___'.
    """
    return prefix + key.replace("_", "__").replace("-", "___").replace(".", "_").upper()


def parse_port(spec: str) -> tuple[str | None, int, int]:
    """A short-syntax port mapping ("[ip:]host:container") as (ip, host port, container port)."""
    parts = str(spec).split(":")
    if len(parts) == 3:
        return parts[0], int(parts[1]), int(parts[2])
    if len(parts) == 2:
        return None, int(parts[0]), int(parts[1])
    raise AssertionError(f"not a host:container port mapping: {spec!r}")


def parse_listeners(value: str) -> dict[str, tuple[str, int]]:
    """ "NAME://host:port,..." as {NAME: (host, port)}."""
    out: dict[str, tuple[str, int]] = {}
    for item in value.split(","):
        name, sep, rest = item.strip().partition("://")
        assert sep, f"listener without a name: {item!r}"
        host, _, port = rest.rpartition(":")
        out[name] = (host, int(port))
    return out


def command_text(service: dict[str, Any]) -> str:
    """The entrypoint and command of a service as one shell string."""
    words: list[str] = []
    for field in ("entrypoint", "command"):
        value = service.get(field)
        if isinstance(value, str):
            words.append(value)
        elif value:
            words.extend(str(v) for v in value)
    return " ".join(words)


def shell_commands(text: str) -> list[list[str]]:
    """Split a shell string on `&&` / `;` into argv lists."""
    commands: list[list[str]] = [[]]
    for token in shlex.split(text):
        if token in ("&&", ";", "||"):
            commands.append([])
        else:
            commands[-1].append(token)
    return [c for c in commands if c]


def option(argv: list[str], name: str) -> str:
    assert name in argv, f"{name} missing from {' '.join(argv)}"
    i = argv.index(name)
    assert i + 1 < len(argv), f"{name} has no value"
    return argv[i + 1]


def interpolate(text: str, env: dict[str, str] | None = None) -> str:
    """`${VAR:-default}` and `${VAR}` filled in as Compose does (values from `env`)."""
    env = env or {}

    def value(m: re.Match[str]) -> str:
        got = env.get(m["name"])
        if got:
            return got
        assert m["default"] is not None, f"${{{m['name']}}} has no default"
        return m["default"]

    return _VARIABLE.sub(value, text)


def load(env: dict[str, str] | None = None) -> dict[str, Any]:
    data = yaml.safe_load(interpolate(COMPOSE_FILE.read_text(), env))
    assert isinstance(data, dict)
    return data


def server_properties(env: dict[str, Any]) -> dict[str, str]:
    """What the image's entrypoint writes to server.properties for this environment."""
    run = subprocess.run(
        ["bash", str(ENTRYPOINT), "properties"],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return dict(line.split("=", 1) for line in run.stdout.splitlines() if line)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load()


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return compose["services"]


def broker(services: dict[str, dict[str, Any]], broker_id: int) -> dict[str, Any]:
    return services[f"kafka-{broker_id}"]


def broker_env(services: dict[str, dict[str, Any]], broker_id: int) -> dict[str, Any]:
    return broker(services, broker_id)["environment"]


# ------------------------------------------------------------------------------------------
# Tests
# ------------------------------------------------------------------------------------------


def test_env_var_helper_follows_the_image_convention() -> None:
    assert env_var("min.insync.replicas") == "KAFKA_MIN_INSYNC_REPLICAS"
    assert env_var("log.segment.bytes") == "KAFKA_LOG_SEGMENT_BYTES"
    assert env_var("some.odd_key") == "KAFKA_SOME_ODD__KEY"
    assert env_var("a-b.c") == "KAFKA_A___B_C"


def test_the_entrypoint_inverts_the_convention() -> None:
    """The image's entrypoint maps each variable back to its key, and leaves the JVM's
    options (KAFKA_HEAP_OPTS, KAFKA_OPTS) and the image's KAFKA_VERSION out."""
    keys = ["min.insync.replicas", "some.odd_key", "a-b.c", "log.dirs"]
    env = {env_var(k): f"v{i}" for i, k in enumerate(keys)}
    env |= {"KAFKA_HEAP_OPTS": "-Xmx1g", "KAFKA_OPTS": "-Dx=y", "KAFKA_VERSION": "3.9.2"}
    assert server_properties(env) == {k: f"v{i}" for i, k in enumerate(keys)}


def test_file_parses_to_a_compose_document(compose: dict[str, Any]) -> None:
    assert isinstance(compose.get("services"), dict)
    assert "version" not in compose, "the top-level `version` key is obsolete in Compose v2"
    # Compose v1 rejects a top-level `name:`; the project comes from -p / COMPOSE_PROJECT_NAME
    assert "name" not in compose


def test_every_published_port_is_on_loopback_below_the_ephemeral_range(
    services: dict[str, dict[str, Any]],
) -> None:
    for name, service in services.items():
        for spec in service.get("ports") or ():
            ip, host_port, _ = parse_port(spec)
            assert ip == "127.0.0.1", f"{name}: {spec} is published beyond this machine"
            assert host_port < EPHEMERAL_LOW, f"{name}: {spec} is in the ephemeral range"


def test_port_variables_move_the_mapping_and_the_listener_together() -> None:
    """The tests run the file on free ports: each broker then listens on, publishes and
    advertises its new port, and ZooKeeper is published on its own."""
    env = {"KCONSOLE_ZK_PORT": "25181"}
    env |= {f"KCONSOLE_BROKER_{b}_PORT": str(25091 + b) for b in BROKER_IDS}
    services = load(env)["services"]
    assert [parse_port(p) for p in services["zookeeper"]["ports"]] == [
        ("127.0.0.1", 25181, ZK_CONTAINER_PORT)
    ]
    for b in BROKER_IDS:
        port = 25091 + b
        service = services[f"kafka-{b}"]
        assert [parse_port(p) for p in service["ports"]] == [("127.0.0.1", port, port)]
        env_b = service["environment"]
        assert parse_listeners(env_b["KAFKA_LISTENERS"])["EXTERNAL"][1] == port
        assert parse_listeners(env_b["KAFKA_ADVERTISED_LISTENERS"])["EXTERNAL"] == (
            "127.0.0.1",
            port,
        )


def test_services_present(services: dict[str, dict[str, Any]]) -> None:
    expected = {"zookeeper", "init-topics", *(f"kafka-{i}" for i in BROKER_IDS)}
    assert set(services) == expected


def test_hostnames_match_service_names(services: dict[str, dict[str, Any]]) -> None:
    for name, service in services.items():
        assert service.get("hostname") == name, name


def test_zookeeper_port_and_settings(services: dict[str, dict[str, Any]]) -> None:
    zk = services["zookeeper"]
    mappings = [parse_port(p) for p in zk["ports"]]
    assert mappings == [(settings.HOST, settings.ZK_PORT, ZK_CONTAINER_PORT)]
    assert zk["command"] == ["zookeeper"]
    assert zk["environment"]["ZOO_TICK_TIME"] == str(settings.ZK_TICK_TIME_MS)
    # the entrypoint's zoo.cfg listens on the container port the mapping publishes
    assert "clientPort=2181" in ENTRYPOINT.read_text()


def test_zookeeper_env_matches_zookeeper_properties(services: dict[str, dict[str, Any]]) -> None:
    env = services["zookeeper"]["environment"]
    props = zookeeper_properties(LocalClusterSpec(), Path("/data"))
    for key, var in ZK_ENV.items():
        assert env.get(var) == props[key], f"{var} should be {props[key]!r} like {key} in zoo.cfg"
        assert f"{key}=${{{var}:-" in ENTRYPOINT.read_text(), f"the entrypoint ignores {var}"


def test_broker_ids_are_exactly_the_default_brokers(services: dict[str, dict[str, Any]]) -> None:
    brokers = {
        name: s
        for name, s in services.items()
        if s.get("labels", {}).get("dev.kconsole.role") == "broker"
    }
    ids = sorted(int(s["environment"]["KAFKA_BROKER_ID"]) for s in brokers.values())
    assert ids == BROKER_IDS
    for name, s in brokers.items():
        assert name == f"kafka-{s['environment']['KAFKA_BROKER_ID']}"


@pytest.mark.parametrize("broker_id", BROKER_IDS)
def test_broker_host_port_and_external_listener(
    services: dict[str, dict[str, Any]], broker_id: int
) -> None:
    port = settings.broker_port(broker_id)
    assert [parse_port(p) for p in broker(services, broker_id)["ports"]] == [
        (settings.HOST, port, port)
    ]
    env = broker_env(services, broker_id)
    advertised = parse_listeners(env["KAFKA_ADVERTISED_LISTENERS"])
    assert advertised["EXTERNAL"] == (settings.HOST, port)
    listeners = parse_listeners(env["KAFKA_LISTENERS"])
    assert listeners["EXTERNAL"][1] == port, "the broker must listen on the mapped port"


@pytest.mark.parametrize("broker_id", BROKER_IDS)
def test_broker_internal_listener_and_zookeeper(
    services: dict[str, dict[str, Any]], broker_id: int
) -> None:
    env = broker_env(services, broker_id)
    name = f"kafka-{broker_id}"
    advertised = parse_listeners(env["KAFKA_ADVERTISED_LISTENERS"])
    listeners = parse_listeners(env["KAFKA_LISTENERS"])
    assert set(advertised) == set(listeners) == {"INTERNAL", "EXTERNAL"}
    assert advertised["INTERNAL"] == (name, INTERNAL_PORT)
    assert listeners["INTERNAL"][1] == INTERNAL_PORT
    assert env["KAFKA_INTER_BROKER_LISTENER_NAME"] == "INTERNAL"
    protocol_map = dict(
        item.split(":") for item in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(",")
    )
    assert protocol_map == {"INTERNAL": "PLAINTEXT", "EXTERNAL": "PLAINTEXT"}
    assert env["KAFKA_ZOOKEEPER_CONNECT"] == f"zookeeper:{ZK_CONTAINER_PORT}"


@pytest.mark.parametrize("broker_id", BROKER_IDS)
def test_every_drill_setting_is_set_on_every_broker(
    services: dict[str, dict[str, Any]], broker_id: int
) -> None:
    env = broker_env(services, broker_id)
    drill = settings.drill_settings(settings.DEFAULT_BROKERS)
    assert drill, "drill_settings() is empty"
    wrong = {
        key: (value, env.get(env_var(key)))
        for key, value in drill.items()
        if env.get(env_var(key)) != value
    }
    assert not wrong, f"kafka-{broker_id}: setting -> (expected, in compose): {wrong}"


@pytest.mark.parametrize("broker_id", BROKER_IDS)
def test_broker_env_matches_broker_properties(
    services: dict[str, dict[str, Any]], broker_id: int
) -> None:
    """Every setting of the embedded broker that is not host-specific is in the container's
    server.properties (as the image's entrypoint writes it) with the same value."""
    env = broker_env(services, broker_id)
    props = broker_properties(LocalClusterSpec(), broker_id, Path("/data"))
    written = server_properties(env)
    assert written["broker.id"] == props["broker.id"]
    wrong = {
        key: (value, written.get(key))
        for key, value in props.items()
        if key not in HOST_SPECIFIC and written.get(key) != value
    }
    assert not wrong, f"kafka-{broker_id}: setting -> (expected, in the container): {wrong}"


@pytest.mark.parametrize("broker_id", BROKER_IDS)
def test_broker_env_has_no_unknown_kafka_vars(
    services: dict[str, dict[str, Any]], broker_id: int
) -> None:
    """A misspelt variable would silently be a no-op in the container."""
    env = broker_env(services, broker_id)
    props = broker_properties(LocalClusterSpec(), broker_id, Path("/data"))
    known = {env_var(key) for key in props} | {"KAFKA_HEAP_OPTS", "KAFKA_OPTS"}
    unknown = sorted(k for k in env if k.startswith("KAFKA_") and k not in known)
    assert not unknown, f"kafka-{broker_id}: not a setting of the embedded broker: {unknown}"


def test_shared_broker_environment_uses_the_anchor(compose: dict[str, Any]) -> None:
    common = compose["x-kafka-common"]
    assert isinstance(common, dict) and common
    for broker_id in BROKER_IDS:
        env = compose["services"][f"kafka-{broker_id}"]["environment"]
        assert {k: env.get(k) for k in common} == common
    text = COMPOSE_FILE.read_text()
    m = re.search(r"^x-kafka-common: &(\S+)", text, re.M)
    assert m, "x-kafka-common must define a YAML anchor"
    uses = re.findall(rf"<<: \*{re.escape(m[1])}\s*$", text, re.M)
    assert len(uses) == settings.DEFAULT_BROKERS, "each broker merges the shared environment"


def test_values_are_strings(services: dict[str, dict[str, Any]]) -> None:
    """Unquoted true/false/numbers become YAML booleans and ints; Compose wants strings."""
    for name, service in services.items():
        for key, value in (service.get("environment") or {}).items():
            assert isinstance(value, str), f"{name}: {key} is {type(value).__name__}"
        for key, value in (service.get("labels") or {}).items():
            assert isinstance(value, str), f"{name}: label {key} is {type(value).__name__}"


def test_heap_options(services: dict[str, dict[str, Any]]) -> None:
    assert services["zookeeper"]["environment"]["KAFKA_HEAP_OPTS"] == settings.ZOOKEEPER_HEAP
    for broker_id in BROKER_IDS:
        assert broker_env(services, broker_id)["KAFKA_HEAP_OPTS"] == settings.BROKER_HEAP


def test_images_are_kconsoles_kafka_of_the_local_clusters_version(
    services: dict[str, dict[str, Any]],
) -> None:
    """One image for every service: Apache Kafka from the jars the local cluster runs, the
    version a variable (KCONSOLE_KAFKA_VERSION) defaulting to the local cluster's."""
    for name, service in services.items():
        assert service["image"] == kafka_image(settings.KAFKA_VERSION), name
    other = load({"KCONSOLE_KAFKA_VERSION": "3.9.9"})["services"]
    assert {s["image"] for s in other.values()} == {kafka_image("3.9.9")}


def test_labels(services: dict[str, dict[str, Any]]) -> None:
    roles = {name: s.get("labels", {}).get("dev.kconsole.role") for name, s in services.items()}
    assert roles == {
        "zookeeper": "zookeeper",
        "init-topics": "init",
        **{f"kafka-{i}": "broker" for i in BROKER_IDS},
    }
    for broker_id in BROKER_IDS:
        labels = broker(services, broker_id)["labels"]
        assert labels.get("dev.kconsole.broker-id") == str(broker_id)
    for name in ("zookeeper", "init-topics"):
        assert "dev.kconsole.broker-id" not in services[name]["labels"]


def test_healthchecks_use_the_images_own_check(services: dict[str, dict[str, Any]]) -> None:
    """No vendor tooling and no JVM per check: the image's kafka-healthcheck (bash /dev/tcp,
    `ruok` for ZooKeeper, an ApiVersions request on the internal listener for a broker)."""
    assert services["zookeeper"]["healthcheck"]["test"] == ["CMD", "kafka-healthcheck", "zookeeper"]
    for broker_id in BROKER_IDS:
        test = broker(services, broker_id)["healthcheck"]["test"]
        assert test == ["CMD", "kafka-healthcheck", "kafka", str(INTERNAL_PORT)]
    assert (COMPOSE_FILE.parent / "kafka-image" / "kafka-healthcheck").exists()


def test_depends_on_waits_for_healthy_services(services: dict[str, dict[str, Any]]) -> None:
    healthy = {"condition": "service_healthy"}
    for broker_id in BROKER_IDS:
        assert broker(services, broker_id)["depends_on"] == {"zookeeper": healthy}
    assert services["init-topics"]["depends_on"] == {f"kafka-{i}": healthy for i in BROKER_IDS}


def test_init_topics_creates_the_test_topic(services: dict[str, dict[str, Any]]) -> None:
    init = services["init-topics"]
    assert init.get("restart") == "no"
    creates = [
        argv
        for argv in shell_commands(command_text(init))
        if argv[0] == "topics" and "--create" in argv
    ]
    assert len(creates) == 1, "init-topics must run the image's `topics --create` once"
    argv = creates[0]
    assert "--if-not-exists" in argv
    assert option(argv, "--topic") == settings.TEST_TOPIC
    assert option(argv, "--partitions") == str(settings.TEST_TOPIC_PARTITIONS)
    assert option(argv, "--replication-factor") == str(settings.TEST_TOPIC_RF)
    bootstrap = option(argv, "--bootstrap-server")
    assert bootstrap == ",".join(f"kafka-{i}:{INTERNAL_PORT}" for i in BROKER_IDS)
