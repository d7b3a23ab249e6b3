"""What a local KRaft cluster is (KRaftSpec) and the configuration files it renders.

Two topologies: 3 dedicated controllers (node ids 1001-1003, ports of their own) + 3 brokers
(ids 1-3 on the usual broker ports), or 3 combined nodes (`process.roles=broker,controller`,
ids 1-3, a broker and a controller port each). The quorum is dynamic (KIP-853): every node
finds the controllers through `controller.quorum.bootstrap.servers`, and the voters are fixed
when the storage is formatted (`--initial-controllers` on controllers,
`--no-initial-controllers` on brokers), so controllers can be added and removed later.

Secured (`security` sasl-scram or ssl, as in the ZooKeeper mode: kconsole.cluster.local.security)
only the brokers' listener changes: clients and brokers between themselves use it. The
controller listener stays PLAINTEXT on the cluster's host (127.0.0.1): a controller cannot
check a SCRAM login before it has read the metadata log that holds the credentials, so SCRAM
is not possible there, and PLAIN would put every password in each node's JAAS settings. The
controllers are not a client entry point (like ZooKeeper in the ZooKeeper mode, which has no
login either); what reaches them is User:ANONYMOUS, a super user on the controllers only. With
sasl-scram the SCRAM users are created when the storage is formatted (`--add-scram`, given to
the controllers, which write them into the metadata log on the first start), and every node
runs the StandardAuthorizer: super users kconsole-broker and kconsole, no ACL = denied.

Pure functions, unit-tested, like kconsole.cluster.local.spec for the ZooKeeper mode.
"""

from __future__ import annotations

import base64
import json
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kconsole.cluster.errors import ClusterError
from kconsole.cluster.jars import kafka_major
from kconsole.cluster.local.security import (
    BROKER_USER,
    CLIENT_USER,
    PLAINTEXT,
    SASL_SCRAM,
    SCRAM_MECHANISM,
    SecurityFiles,
    broker_security_properties,
    check_security,
    listener_protocol,
    read_secret,
    scram_credential,
)
from kconsole.cluster.local.spec import LOG4J_PROPERTIES, check_port
from kconsole.cluster.settings import (
    BROKER_BASE_PORT,
    HOST,
    KRAFT_KAFKA_VERSION,
    broker_port,
    drill_settings,
)

MODE = "kraft"
CONTROLLER_BASE_PORT = 19192  # controllers 1001-1003 on 19192-19194
CONTROLLER_ID_BASE = 1001
CONTROLLER_LISTENER = "CONTROLLER"
BROKER_HEARTBEAT_MS = "500"  # broker.heartbeat.interval.ms (Kafka's default 2000): see below
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
# Who a node sees on the PLAINTEXT controller listener: the other controllers and the brokers.
CONTROLLER_PRINCIPAL = "User:ANONYMOUS"

# ZooKeeper-only settings, and ones Kafka 4 removed, that drill_settings() carries for the
# ZooKeeper mode: a KRaft node would only warn about them.
_NOT_IN_KRAFT = ("zookeeper.session.timeout.ms", "controlled.shutdown.retry.backoff.ms")
# Topic defaults the controllers apply; a broker-only node given them warns on every start
# that they belong to the controller role (and 5.0 will ignore them there).
_CONTROLLER_ROLE_ONLY = ("num.partitions", "default.replication.factor")

LOG4J2_XML = """\
<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by kconsole. One rolling server.log per process; JVM output goes to stdout.log. -->
<Configuration status="warn">
  <Appenders>
    <RollingFile name="file" fileName="${sys:kafka.logs.dir}/server.log"
                 filePattern="${sys:kafka.logs.dir}/server.log.%i">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
      <Policies><SizeBasedTriggeringPolicy size="20MB"/></Policies>
      <DefaultRolloverStrategy max="3"/>
    </RollingFile>
  </Appenders>
  <Loggers>
    <Logger name="kafka.request.logger" level="warn"/>
    <Logger name="kafka.network.RequestChannel$" level="warn"/>
    <Logger name="state.change.logger" level="info"/>
    <Logger name="kafka.authorizer.logger" level="warn"/>
    <Root level="info"><AppenderRef ref="file"/></Root>
  </Loggers>
</Configuration>
"""


def kafka_uuid() -> str:
    """A random id as Kafka writes one (Uuid.randomUuid: 16 bytes, URL-safe base64 without
    padding, never starting with '-' so a command line cannot take it for an option)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


@dataclass(frozen=True)
class KRaftNode:
    """One JVM of the cluster: its name (its directory), node id and roles."""

    name: str
    node_id: int
    roles: tuple[str, ...]  # ("controller",), ("broker",) or ("broker", "controller")

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles


@dataclass(frozen=True)
class KRaftSpec:
    """A local KRaft cluster: topology, ports, version, setting overrides and, once formatted,
    its cluster id and the controllers' directory ids."""

    combined: bool = False
    brokers: int = 3
    controllers: int = 3
    base_port: int = BROKER_BASE_PORT
    controller_base_port: int = CONTROLLER_BASE_PORT
    host: str = HOST
    kafka_version: str = KRAFT_KAFKA_VERSION
    overrides: dict[str, str] = field(default_factory=dict)
    cluster_id: str = ""
    directory_ids: dict[str, str] = field(default_factory=dict)  # str(node id) -> dir id
    mode: str = MODE
    # plaintext | sasl-scram | ssl (kconsole.cluster.local.security); mTLS with ssl only
    security: str = PLAINTEXT
    mtls: bool = False
    # the user's own file holding the client user's password ("" = one generated in the
    # state dir); kept as a path, never read into this spec
    password_file: str = ""

    def __post_init__(self) -> None:
        if self.mode != MODE:
            raise ClusterError(f"not a KRaft cluster spec (mode {self.mode!r})")
        check_security(self.security, self.mtls)
        if self.combined and self.brokers != self.controllers:
            raise ClusterError("a combined cluster has as many controllers as brokers")
        if not 1 <= self.brokers <= 32 or not 1 <= self.controllers <= 9:
            raise ClusterError("1..32 brokers and 1..9 controllers")
        ports = [*self.broker_ports().values(), *self.controller_ports().values()]
        if len(set(ports)) != len(ports):
            raise ClusterError(f"broker and controller ports collide: {sorted(ports)}")
        for port in ports:
            check_port(port)

    # -- topology -------------------------------------------------------------------------
    @property
    def broker_ids(self) -> list[int]:
        return list(range(1, self.brokers + 1))

    @property
    def controller_ids(self) -> list[int]:
        if self.combined:
            return self.broker_ids
        return list(range(CONTROLLER_ID_BASE, CONTROLLER_ID_BASE + self.controllers))

    def nodes(self) -> list[KRaftNode]:
        """Controllers first (the order they start in), then brokers."""
        if self.combined:
            return [KRaftNode(f"node-{i}", i, ("broker", "controller")) for i in self.broker_ids]
        return [
            *(KRaftNode(f"controller-{i}", i, ("controller",)) for i in self.controller_ids),
            *(KRaftNode(f"broker-{i}", i, ("broker",)) for i in self.broker_ids),
        ]

    def node(self, name: str) -> KRaftNode:
        for n in self.nodes():
            if n.name == name:
                return n
        raise ClusterError(f"{name} is not a node of this cluster")

    def resolve_node(self, text: str) -> KRaftNode:
        """The node a user names: a broker (or combined node) by its id (`2`, `broker:2`), a
        controller as `controller:1001` (a combined node's id is its controller's too), or by
        its directory name (`broker-2`, `controller-1001`, `node-1`). ClusterError listing
        the names that work when `text` is none of them."""
        raw = text.strip().lower()
        kind, sep, num = raw.partition(":")
        if not sep:
            kind, num = "", raw
        by_name = {n.name: n for n in self.nodes()}
        if not kind and raw in by_name:
            return by_name[raw]
        node: KRaftNode | None = None
        if num.isdigit() and kind in ("", "broker", "controller"):
            nid = int(num)
            for n in self.nodes():
                if n.node_id != nid:
                    continue
                wanted = n.is_controller if kind == "controller" else n.is_broker
                if wanted:
                    node = n
            if node is None and not kind and nid in self.controller_ids:
                raise ClusterError(
                    f"{nid} is a controller: name it controller:{nid} (brokers are named by "
                    "their id alone)"
                )
        if node is None:
            raise ClusterError(f"no node {text!r} in this cluster; nodes: {self.node_names()}")
        return node

    def node_names(self) -> str:
        """How each node is named on the command line, for error messages and help."""
        if self.combined:
            return ", ".join(f"{i} (= controller:{i})" for i in self.broker_ids)
        ctl = ", ".join(f"controller:{i}" for i in self.controller_ids)
        return f"brokers {', '.join(map(str, self.broker_ids))}; {ctl}"

    def broker_ports(self) -> dict[int, int]:
        return {i: broker_port(i, self.base_port) for i in self.broker_ids}

    def controller_ports(self) -> dict[int, int]:
        return {nid: self.controller_base_port + k for k, nid in enumerate(self.controller_ids)}

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{self.host}:{p}" for p in self.broker_ports().values())

    @property
    def quorum_bootstrap(self) -> str:
        """controller.quorum.bootstrap.servers (and what --bootstrap-controller takes)."""
        return ",".join(f"{self.host}:{p}" for p in self.controller_ports().values())

    def initial_controllers(self) -> str:
        """`--initial-controllers`: id@host:port:directory-id of every voter."""
        missing = [i for i in self.controller_ids if str(i) not in self.directory_ids]
        if missing:
            raise ClusterError(f"no directory id for controllers {missing}: not formatted yet")
        return ",".join(
            f"{nid}@{self.host}:{port}:{self.directory_ids[str(nid)]}"
            for nid, port in self.controller_ports().items()
        )

    def with_ids(self) -> KRaftSpec:
        """This spec with a generated cluster id and controller directory ids (kept if set)."""
        data = asdict(self)
        data["cluster_id"] = self.cluster_id or kafka_uuid()
        data["directory_ids"] = {
            str(i): self.directory_ids.get(str(i)) or kafka_uuid() for i in self.controller_ids
        }
        return KRaftSpec(**data)

    # -- persistence ----------------------------------------------------------------------
    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> KRaftSpec:
        data = json.loads(text)
        if data.get("mode") != MODE:
            raise ClusterError(
                "this state dir holds a ZooKeeper-mode local cluster, not a KRaft one: use it "
                "in its own mode, or remove it first with `kconsole cluster down --purge`"
            )
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})


def node_properties(
    spec: KRaftSpec, node: KRaftNode, data_dir: Path, security: SecurityFiles | None = None
) -> dict[str, str]:
    """The server.properties of one node, as a dict (overrides applied last). A secured
    spec needs its `security` files (a broker's properties hold the brokers' password)."""
    name = listener_protocol(spec.security)
    listeners: list[str] = []
    if node.is_broker:
        listeners.append(f"{name}://{spec.host}:{spec.broker_ports()[node.node_id]}")
    if node.is_controller:
        port = spec.controller_ports()[node.node_id]
        listeners.append(f"{CONTROLLER_LISTENER}://{spec.host}:{port}")
    props = {
        "process.roles": ",".join(node.roles),
        "node.id": str(node.node_id),
        "listeners": ",".join(listeners),
        # Controllers advertise their own endpoint too: with a dynamic quorum that is how the
        # other nodes learn where each voter is.
        "advertised.listeners": ",".join(listeners),
        "listener.security.protocol.map": f"{CONTROLLER_LISTENER}:PLAINTEXT,{name}:{name}",
        "controller.listener.names": CONTROLLER_LISTENER,
        "controller.quorum.bootstrap.servers": spec.quorum_bootstrap,
        "log.dirs": str(data_dir),
        "num.network.threads": "2",
        "num.io.threads": "4",
        "num.recovery.threads.per.data.dir": "1",
        "background.threads": "4",
    }
    if node.is_broker:
        props["inter.broker.listener.name"] = name
        # A broker hears the controller's answers (unfenced at start, "you may exit" during a
        # controlled shutdown) only in heartbeat responses: at Kafka's 2 s interval a start or
        # a stop waits up to 2 s per step for the next one. 500 ms, still well inside
        # broker.session.timeout.ms (9 s), costs a local cluster nothing.
        props["broker.heartbeat.interval.ms"] = BROKER_HEARTBEAT_MS
    if spec.security != PLAINTEXT:
        if security is None:
            raise ClusterError(f"a {spec.security} cluster's node settings need its secrets")
        if node.is_broker:
            props.update(broker_security_properties(spec.security, spec.mtls, security))
        if spec.security == SASL_SCRAM:
            props.update(authorizer_properties(node))
    # The drill settings apply to both roles: in KRaft the controllers decide the topic
    # defaults, unclean elections and leader rebalancing, the brokers the rest.
    settings = drill_settings(spec.brokers)
    for key in (*_NOT_IN_KRAFT, *(() if node.is_controller else _CONTROLLER_ROLE_ONLY)):
        settings.pop(key, None)
    props.update(settings)
    props.update(spec.overrides)
    return props


def authorizer_properties(node: KRaftNode) -> dict[str, str]:
    """The StandardAuthorizer of a sasl-scram cluster's node: the two SCRAM users are super
    users; a controller also trusts what reaches its PLAINTEXT listener (the other
    controllers and the brokers, as User:ANONYMOUS: their registrations, heartbeats and
    metadata fetches need CLUSTER_ACTION). Requests a broker forwards to the controllers are
    authorized there as the client that sent them, not as ANONYMOUS."""
    supers = [f"User:{BROKER_USER}", f"User:{CLIENT_USER}"]
    if node.is_controller:
        supers.append(CONTROLLER_PRINCIPAL)
    return {
        "authorizer.class.name": STANDARD_AUTHORIZER,
        "super.users": ";".join(supers),
        "allow.everyone.if.no.acl.found": "false",
    }


def scram_arguments(files: SecurityFiles) -> list[str]:
    """StorageTool's `--add-scram` values for both users: salt and salted password (what the
    controllers turn into stored and server keys), never the password itself. Secrets: they
    go into a 0600 argument file, never onto a command line."""
    users = {
        BROKER_USER: read_secret(files.broker_password, "the brokers' password"),
        CLIENT_USER: read_secret(files.client_password, "the client password"),
    }
    out = []
    for user, password in sorted(users.items()):
        cred = scram_credential(password)
        out.append(
            f"{SCRAM_MECHANISM}=[name={user},salt={cred['salt']},"
            f"saltedpassword={cred['salted_password']},iterations={cred['iterations']}]"
        )
    return out


def format_args(
    spec: KRaftSpec, node: KRaftNode, config: Path, scram: list[str] | None = None
) -> list[str]:
    """The arguments of `kafka.tools.StorageTool` that format one node's storage; a
    controller's create the SCRAM users in `scram` (scram_arguments) in the first metadata."""
    args = [
        "format",
        "--cluster-id",
        spec.cluster_id,
        "--config",
        str(config),
        "--ignore-formatted",
    ]
    if node.is_controller:
        args += ["--initial-controllers", spec.initial_controllers()]
        for value in scram or ():
            args += ["--add-scram", value]
    else:
        args += ["--no-initial-controllers"]
    return args


def java_argfile(args: list[str]) -> str:
    """`args` as a java launcher argument file (`java @FILE`): one per line, quoted, with
    backslashes, quotes and line ends escaped, so the launcher reads each back exactly."""
    quoted = (
        '"'
        + a.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
        + '"'
        for a in args
    )
    return "\n".join(quoted) + "\n"


def log_config_flag(spec: KRaftSpec, state_dir: Path) -> tuple[str, str, str]:
    """(file name, its content, the JVM flag naming it): log4j2 on Kafka 4, reload4j before."""
    if kafka_major(spec.kafka_version) >= 4:
        path = state_dir / "log4j2.xml"
        return path.name, LOG4J2_XML, f"-Dlog4j2.configurationFile={path}"
    path = state_dir / "log4j.properties"
    return path.name, LOG4J_PROPERTIES, f"-Dlog4j.configuration=file:{path}"
