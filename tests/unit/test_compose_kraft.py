"""Static checks that compose/docker-compose.kraft.yml agrees with the embedded KRaft cluster.

No Docker engine is needed: the file is parsed with PyYAML (whose safe_load resolves the
`<<: *anchor` merges), its `${VAR:-default}` values are read with their defaults, and every
node's KAFKA_* variables, turned into server.properties keys the way the image's entrypoint
does (compose/kafka/kafka-entrypoint), are compared with kraft/spec.py node_properties() of the
local KRaft cluster with dedicated controllers (KRaftSpec()).
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from kconsole.cluster import settings
from kconsole.cluster.kraft.cluster import CONTROLLER_HEAP
from kconsole.cluster.kraft.spec import KRaftNode, KRaftSpec, node_properties

COMPOSE_FILE = Path(__file__).resolve().parents[2] / "compose" / "docker-compose.kraft.yml"
SPEC = KRaftSpec()
BROKER_INTERNAL_PORT = 29092
CONTROLLER_INTERNAL_PORT = 29093
IMAGE = "kconsole-kafka:${KCONSOLE_KRAFT_KAFKA_VERSION:-" + settings.KRAFT_KAFKA_VERSION + "}"

# node_properties() keys whose compose value differs by design: container hosts and ports, two
# listeners (one inside the compose network, one for the host), a static quorum
# (controller.quorum.voters) where the local cluster's is dynamic, the image's data directory.
HOST_SPECIFIC = {
    "listeners",
    "advertised.listeners",
    "listener.security.protocol.map",
    "controller.listener.names",
    "controller.quorum.bootstrap.servers",
    "controller.quorum.voters",
    "inter.broker.listener.name",
    "log.dirs",
}
# KAFKA_* variables that are JVM options, not properties (the entrypoint skips them).
NOT_PROPERTIES = {"KAFKA_HEAP_OPTS", "KAFKA_OPTS"}

_DEFAULT = re.compile(r"\$\{(\w+):-([^}]*)\}")


def resolved(value: str) -> str:
    """A value as Compose gives it with no variable set: ${VAR:-default} -> default."""
    return _DEFAULT.sub(lambda m: m[2], value)


def variables(value: str) -> set[str]:
    return {m[1] for m in _DEFAULT.finditer(value)}


def property_of(var: str) -> str:
    """KAFKA_FOO_BAR -> foo.bar, as the entrypoint does ('___' -> '-', '__' -> '_')."""
    key = var.removeprefix("KAFKA_").lower()
    return key.replace("___", "-").replace("__", "@").replace("_", ".").replace("@", "_")


def parse_port(spec: str) -> tuple[str, int, int]:
    ip, host, container = resolved(str(spec)).split(":")
    return ip, int(host), int(container)


def parse_listeners(value: str) -> dict[str, tuple[str, int]]:
    out: dict[str, tuple[str, int]] = {}
    for item in resolved(value).split(","):
        name, sep, rest = item.strip().partition("://")
        assert sep, f"listener without a name: {item!r}"
        host, _, port = rest.rpartition(":")
        out[name] = (host, int(port))
    return out


def service_name(node: KRaftNode) -> str:
    """controller-1001 -> controller-1 (the N-th controller); broker-2 -> kafka-2."""
    if node.is_controller:
        return f"controller-{SPEC.controller_ids.index(node.node_id) + 1}"
    return f"kafka-{node.node_id}"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE_FILE.read_text())
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return compose["services"]


def env_of(services: dict[str, dict[str, Any]], node: KRaftNode) -> dict[str, str]:
    return services[service_name(node)]["environment"]


def properties(env: dict[str, str]) -> dict[str, str]:
    """The server.properties the entrypoint writes from a service's environment."""
    return {
        property_of(k): resolved(v)
        for k, v in env.items()
        if k.startswith("KAFKA_") and k not in NOT_PROPERTIES
    }


NODES = SPEC.nodes()
NODE_IDS = [n.name for n in NODES]


def test_file_parses_and_runs_on_compose_v1(compose: dict[str, Any]) -> None:
    assert isinstance(compose.get("services"), dict)
    assert "version" not in compose, "the top-level `version` key is obsolete in Compose v2"
    assert "name" not in compose, "Compose v1 rejects a top-level `name:` (use -p)"


def test_services_and_hostnames(services: dict[str, dict[str, Any]]) -> None:
    assert set(services) == {*(service_name(n) for n in NODES), "init-topics"}
    for name, service in services.items():
        assert service.get("hostname") == name, name


def test_images_are_the_kraft_version(services: dict[str, dict[str, Any]]) -> None:
    for name, service in services.items():
        assert service["image"] == IMAGE, name


@pytest.mark.parametrize("node", NODES, ids=NODE_IDS)
def test_node_id_roles_and_labels(services: dict[str, dict[str, Any]], node: KRaftNode) -> None:
    service = services[service_name(node)]
    env = service["environment"]
    assert env["KAFKA_NODE_ID"] == str(node.node_id)
    assert env["KAFKA_PROCESS_ROLES"] == ",".join(node.roles)
    labels = service["labels"]
    assert labels["dev.kconsole.role"] == ("controller" if node.is_controller else "broker")
    assert labels["dev.kconsole.node-id"] == str(node.node_id)
    if node.is_broker:
        assert labels["dev.kconsole.broker-id"] == str(node.node_id)
    else:
        assert "dev.kconsole.broker-id" not in labels
    assert service.get("command") == ["kafka"] and "restart" not in service


@pytest.mark.parametrize("node", NODES, ids=NODE_IDS)
def test_node_settings_match_node_properties(
    services: dict[str, dict[str, Any]], node: KRaftNode
) -> None:
    """Every setting of the embedded KRaft node that is not host-specific is set the same way,
    and nothing else (a misspelt variable would silently be a no-op in the container)."""
    props = properties(env_of(services, node))
    expected = node_properties(SPEC, node, Path("/data"))
    want = {k: v for k, v in expected.items() if k not in HOST_SPECIFIC}
    have = {k: v for k, v in props.items() if k not in HOST_SPECIFIC}
    assert have == want
    assert set(props) - set(expected) <= {"controller.quorum.voters"}


def test_drill_settings_minus_the_zookeeper_ones_are_on_every_node(
    services: dict[str, dict[str, Any]],
) -> None:
    drill = settings.drill_settings(SPEC.brokers)
    for node in NODES:
        props = properties(env_of(services, node))
        for key, value in drill.items():
            if key in ("zookeeper.session.timeout.ms", "controlled.shutdown.retry.backoff.ms"):
                assert key not in props, f"{node.name}: {key} is not a KRaft setting"
            elif key in ("num.partitions", "default.replication.factor") and node.is_broker:
                assert key not in props, f"{node.name}: {key} belongs to the controllers"
            else:
                assert props.get(key) == value, f"{node.name}: {key}"


@pytest.mark.parametrize("node", NODES, ids=NODE_IDS)
def test_host_ports(services: dict[str, dict[str, Any]], node: KRaftNode) -> None:
    """One port per node on 127.0.0.1, the local cluster's, overridable by a variable; the node
    listens on the same number inside, advertised as 127.0.0.1:<port>."""
    service = services[service_name(node)]
    k = service_name(node).rsplit("-", 1)[1]
    if node.is_controller:
        port, var, listener = (
            SPEC.controller_ports()[node.node_id],
            f"KCONSOLE_CONTROLLER_{k}_PORT",
            "HOST",
        )
    else:
        port, var, listener = (
            SPEC.broker_ports()[node.node_id],
            f"KCONSOLE_BROKER_{k}_PORT",
            "EXTERNAL",
        )
    assert [parse_port(p) for p in service["ports"]] == [(settings.HOST, port, port)]
    assert all(variables(str(p)) == {var} for p in service["ports"])
    env = service["environment"]
    assert parse_listeners(env["KAFKA_LISTENERS"])[listener] == ("0.0.0.0", port)
    assert parse_listeners(env["KAFKA_ADVERTISED_LISTENERS"])[listener] == (settings.HOST, port)
    assert (
        variables(env["KAFKA_LISTENERS"]) == variables(env["KAFKA_ADVERTISED_LISTENERS"]) == {var}
    )


@pytest.mark.parametrize("node", NODES, ids=NODE_IDS)
def test_internal_listeners(services: dict[str, dict[str, Any]], node: KRaftNode) -> None:
    """Inside the compose network: brokers on INTERNAL://kafka-N:29092, controllers on
    CONTROLLER://controller-N:29093, the first of a controller's controller.listener.names (the
    one the nodes reach each other on); HOST, the host's, is a controller listener too, so a
    controller answers DescribeCluster there with the other controllers' host addresses."""
    env = env_of(services, node)
    name = service_name(node)
    listeners = parse_listeners(env["KAFKA_LISTENERS"])
    advertised = parse_listeners(env["KAFKA_ADVERTISED_LISTENERS"])
    protocols = dict(i.split(":") for i in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
    assert set(listeners) == set(advertised) <= set(protocols)
    assert set(protocols.values()) == {"PLAINTEXT"}
    if node.is_controller:
        assert set(listeners) == {"CONTROLLER", "HOST"}
        assert advertised["CONTROLLER"] == (name, CONTROLLER_INTERNAL_PORT)
        assert listeners["CONTROLLER"] == ("0.0.0.0", CONTROLLER_INTERNAL_PORT)
        assert env["KAFKA_CONTROLLER_LISTENER_NAMES"] == "CONTROLLER,HOST"
    else:
        assert set(listeners) == {"INTERNAL", "EXTERNAL"}
        assert advertised["INTERNAL"] == (name, BROKER_INTERNAL_PORT)
        assert listeners["INTERNAL"] == ("0.0.0.0", BROKER_INTERNAL_PORT)
        assert env["KAFKA_INTER_BROKER_LISTENER_NAME"] == "INTERNAL"
        assert env["KAFKA_CONTROLLER_LISTENER_NAMES"] == "CONTROLLER"
        assert "CONTROLLER" in protocols


def test_static_quorum_and_one_cluster_id(services: dict[str, dict[str, Any]]) -> None:
    voters = ",".join(
        f"{nid}@controller-{k}:{CONTROLLER_INTERNAL_PORT}"
        for k, nid in enumerate(SPEC.controller_ids, start=1)
    )
    ids = set()
    for node in NODES:
        env = env_of(services, node)
        assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == voters, node.name
        ids.add(env["CLUSTER_ID"])
    assert len(ids) == 1
    (cluster_id,) = ids
    # Kafka's Uuid text: 16 bytes, URL-safe base64 without padding
    assert len(cluster_id) == 22
    assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16


def test_heap_options(services: dict[str, dict[str, Any]]) -> None:
    for node in NODES:
        heap = CONTROLLER_HEAP if not node.is_broker else settings.BROKER_HEAP
        assert env_of(services, node)["KAFKA_HEAP_OPTS"] == heap, node.name


def test_healthchecks_and_start_order(services: dict[str, dict[str, Any]]) -> None:
    healthy = {"condition": "service_healthy"}
    # brokers start with the controllers (they ask the quorum until it answers)
    started = {"condition": "service_started"}
    controllers = {service_name(n): started for n in NODES if n.is_controller}
    for node in NODES:
        service = services[service_name(node)]
        port = CONTROLLER_INTERNAL_PORT if node.is_controller else BROKER_INTERNAL_PORT
        assert service["healthcheck"]["test"] == ["CMD", "kafka-healthcheck", "kafka", str(port)]
        if node.is_broker:
            assert service["depends_on"] == controllers
        else:
            assert "depends_on" not in service
    brokers = {service_name(n): healthy for n in NODES if n.is_broker}
    assert services["init-topics"]["depends_on"] == brokers


def test_init_topics_creates_the_test_topic(services: dict[str, dict[str, Any]]) -> None:
    init = services["init-topics"]
    assert init.get("restart") == "no"
    assert init["labels"] == {"dev.kconsole.role": "init"}
    argv = [str(a) for a in init["command"]]
    assert argv[0] == "topics" and "--create" in argv and "--if-not-exists" in argv

    def option(name: str) -> str:
        return argv[argv.index(name) + 1]

    assert option("--topic") == settings.TEST_TOPIC
    assert option("--partitions") == str(settings.TEST_TOPIC_PARTITIONS)
    assert option("--replication-factor") == str(settings.TEST_TOPIC_RF)
    assert option("--bootstrap-server") == ",".join(
        f"kafka-{b}:{BROKER_INTERNAL_PORT}" for b in SPEC.broker_ids
    )


def test_values_are_strings(services: dict[str, dict[str, Any]]) -> None:
    """Unquoted true/false/numbers become YAML booleans and ints; Compose wants strings."""
    for name, service in services.items():
        for key, value in (service.get("environment") or {}).items():
            assert isinstance(value, str), f"{name}: {key} is {type(value).__name__}"
        for key, value in (service.get("labels") or {}).items():
            assert isinstance(value, str), f"{name}: label {key} is {type(value).__name__}"


def test_property_of_follows_the_entrypoint() -> None:
    assert property_of("KAFKA_MIN_INSYNC_REPLICAS") == "min.insync.replicas"
    assert property_of("KAFKA_SOME__KEY") == "some_key"
    assert property_of("KAFKA_A___B_C") == "a-b.c"
