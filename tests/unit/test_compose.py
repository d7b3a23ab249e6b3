"""Static checks that compose/docker-compose.yml agrees with the embedded local cluster.

No Docker engine is needed: the file is parsed with PyYAML (whose safe_load resolves the
`<<: *anchor` merges) and compared with kconsole.cluster.settings and broker_properties().
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from kconsole.cluster import settings
from kconsole.cluster.local import LocalClusterSpec, broker_properties, zookeeper_properties

COMPOSE_FILE = Path(__file__).resolve().parents[2] / "compose" / "docker-compose.yml"

BROKER_IDS = list(range(1, settings.DEFAULT_BROKERS + 1))
INTERNAL_PORT = 29092
ZK_CONTAINER_PORT = 2181
CP_IMAGE = re.compile(r"^confluentinc/cp-(?P<component>zookeeper|kafka):(?P<tag>7\.9\.\d+)$")

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

# zoo.cfg keys of zookeeper_properties() and the cp-zookeeper variable that sets each.
ZK_ENV = {
    "tickTime": "ZOOKEEPER_TICK_TIME",
    "maxClientCnxns": "ZOOKEEPER_MAX_CLIENT_CNXNS",
    "admin.enableServer": "ZOOKEEPER_ADMIN_ENABLE_SERVER",
    "autopurge.snapRetainCount": "ZOOKEEPER_AUTOPURGE_SNAP_RETAIN_COUNT",
    "autopurge.purgeInterval": "ZOOKEEPER_AUTOPURGE_PURGE_INTERVAL",
}


# ------------------------------------------------------------------------------------------
# Helpers
# ------------------------------------------------------------------------------------------


def env_var(key: str, prefix: str = "KAFKA_") -> str:
    """The cp-kafka environment variable for a server.properties key.

    The image's convention: upper case, '.' -> '_', '_' -> '__', '-' -> '___'.
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


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE_FILE.read_text())
    assert isinstance(data, dict)
    return data


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


def test_env_var_helper_follows_the_cp_kafka_convention() -> None:
    assert env_var("min.insync.replicas") == "KAFKA_MIN_INSYNC_REPLICAS"
    assert env_var("log.segment.bytes") == "KAFKA_LOG_SEGMENT_BYTES"
    assert env_var("confluent.some_key") == "KAFKA_CONFLUENT_SOME__KEY"
    assert env_var("a-b.c") == "KAFKA_A___B_C"


def test_file_parses_to_a_compose_document(compose: dict[str, Any]) -> None:
    assert isinstance(compose.get("services"), dict)
    assert "version" not in compose, "the top-level `version` key is obsolete in Compose v2"
    # a fixed project name, so the com.docker.compose.project label does not depend on the cwd
    assert compose.get("name") == "kconsole"


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
    env = zk["environment"]
    assert env["ZOOKEEPER_CLIENT_PORT"] == str(ZK_CONTAINER_PORT)
    assert env["ZOOKEEPER_TICK_TIME"] == str(settings.ZK_TICK_TIME_MS)


def test_zookeeper_env_matches_zookeeper_properties(services: dict[str, dict[str, Any]]) -> None:
    env = services["zookeeper"]["environment"]
    props = zookeeper_properties(LocalClusterSpec(), Path("/data"))
    for key, var in ZK_ENV.items():
        assert env.get(var) == props[key], f"{var} should be {props[key]!r} like {key} in zoo.cfg"
    whitelist = props["4lw.commands.whitelist"]
    assert f"-Dzookeeper.4lw.commands.whitelist={whitelist}" in env.get("KAFKA_OPTS", "")


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
    """Every setting of the embedded broker that is not host-specific is set the same way."""
    env = broker_env(services, broker_id)
    props = broker_properties(LocalClusterSpec(), broker_id, Path("/data"))
    assert env["KAFKA_BROKER_ID"] == props["broker.id"]
    wrong = {
        key: (value, env.get(env_var(key)))
        for key, value in props.items()
        if key not in HOST_SPECIFIC and env.get(env_var(key)) != value
    }
    assert not wrong, f"kafka-{broker_id}: setting -> (expected, in compose): {wrong}"


@pytest.mark.parametrize("broker_id", BROKER_IDS)
def test_broker_env_has_no_unknown_kafka_vars(
    services: dict[str, dict[str, Any]], broker_id: int
) -> None:
    """A misspelt variable would silently be a no-op in the container."""
    env = broker_env(services, broker_id)
    props = broker_properties(LocalClusterSpec(), broker_id, Path("/data"))
    known = {env_var(key) for key in props} | {"KAFKA_HEAP_OPTS"}
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


def test_images_are_cp_7_9(services: dict[str, dict[str, Any]]) -> None:
    tags = set()
    for name, service in services.items():
        m = CP_IMAGE.match(service.get("image", ""))
        assert m, f"{name}: {service.get('image')!r} is not a confluentinc cp 7.9.x image"
        expected = "zookeeper" if name == "zookeeper" else "kafka"
        assert m["component"] == expected, name
        tags.add(m["tag"])
    assert len(tags) == 1, f"all services should use the same CP release, got {sorted(tags)}"


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


def test_healthchecks(services: dict[str, dict[str, Any]]) -> None:
    zk_test = " ".join(services["zookeeper"]["healthcheck"]["test"])
    assert "zk-ready" in zk_test and f"zookeeper:{ZK_CONTAINER_PORT}" in zk_test
    for broker_id in BROKER_IDS:
        test = broker(services, broker_id)["healthcheck"]["test"]
        assert test[0] in ("CMD", "CMD-SHELL")
        assert f"kafka-{broker_id}:{INTERNAL_PORT}" in " ".join(test)


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
        if argv[0] == "kafka-topics" and "--create" in argv
    ]
    assert len(creates) == 1, "init-topics must run exactly one `kafka-topics --create`"
    argv = creates[0]
    assert "--if-not-exists" in argv
    assert option(argv, "--topic") == settings.TEST_TOPIC
    assert option(argv, "--partitions") == str(settings.TEST_TOPIC_PARTITIONS)
    assert option(argv, "--replication-factor") == str(settings.TEST_TOPIC_RF)
    bootstrap = option(argv, "--bootstrap-server")
    assert bootstrap in {f"kafka-{i}:{INTERNAL_PORT}" for i in BROKER_IDS}
