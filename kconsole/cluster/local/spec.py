"""What a local cluster is (LocalClusterSpec) and the configuration files it renders.

Pure functions, unit-tested: the spec, `--set` parsing, server.properties, zoo.cfg and the
shared log4j.properties.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from kconsole.cluster.errors import ClusterError
from kconsole.cluster.local.security import (
    BROKER_USER,
    CLIENT_USER,
    PLAINTEXT,
    SASL_SCRAM,
    SecurityFiles,
    broker_security_properties,
    check_security,
    listener_protocol,
)
from kconsole.cluster.settings import (
    BROKER_BASE_PORT,
    DEFAULT_BROKERS,
    HOST,
    KAFKA_VERSION,
    ZK_PORT,
    ZK_TICK_TIME_MS,
    broker_port,
    drill_settings,
)

ZK_PREFIX = "zk:"
# The ACL authorizer of a ZooKeeper-mode broker (ACLs kept in ZooKeeper).
ZK_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"

LOG4J_PROPERTIES = """\
# Written by kconsole. One rolling server.log per process; JVM output goes to stdout.log.
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.RollingFileAppender
log4j.appender.file.File=${kafka.logs.dir}/server.log
log4j.appender.file.MaxFileSize=20MB
log4j.appender.file.MaxBackupIndex=3
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.kafka.network.RequestChannel$=WARN
log4j.logger.state.change.logger=INFO
log4j.logger.kafka.controller=INFO
log4j.logger.kafka.authorizer.logger=WARN
"""


@dataclass(frozen=True)
class LocalClusterSpec:
    """What a local cluster is: broker count, racks, ports, version and setting overrides."""

    brokers: int = DEFAULT_BROKERS
    racks: int = 0
    zk_port: int = ZK_PORT
    base_port: int = BROKER_BASE_PORT
    host: str = HOST
    kafka_version: str = KAFKA_VERSION
    overrides: dict[str, str] = field(default_factory=dict)
    zk_overrides: dict[str, str] = field(default_factory=dict)
    # plaintext | sasl-scram | ssl (kconsole.cluster.local.security); mTLS with ssl only
    security: str = PLAINTEXT
    mtls: bool = False
    # the user's own file holding the client user's password ("" = one generated in the
    # state dir); kept as a path, never read into this spec
    password_file: str = ""

    def __post_init__(self) -> None:
        check_security(self.security, self.mtls)
        if not 1 <= self.brokers <= 32:
            raise ClusterError(f"--brokers must be between 1 and 32, not {self.brokers}")
        if not 0 <= self.racks <= self.brokers:
            raise ClusterError(f"--racks must be between 0 and the broker count, not {self.racks}")
        for port in (self.zk_port, self.base_port, self.base_port + self.brokers - 1):
            if not 1024 <= port <= 65535:
                raise ClusterError(f"port {port} is outside 1024..65535")
        if self.zk_port in self.broker_ports().values():
            raise ClusterError(f"ZooKeeper port {self.zk_port} collides with a broker port")
        for port in (self.zk_port, *self.broker_ports().values()):
            check_port(port)

    @property
    def broker_ids(self) -> list[int]:
        return list(range(1, self.brokers + 1))

    def broker_ports(self) -> dict[int, int]:
        return {i: broker_port(i, self.base_port) for i in self.broker_ids}

    @property
    def zk_connect(self) -> str:
        return f"{self.host}:{self.zk_port}"

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{self.host}:{p}" for p in self.broker_ports().values())

    def rack_of(self, broker_id: int) -> str | None:
        return f"rack-{(broker_id - 1) % self.racks + 1}" if self.racks else None

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> LocalClusterSpec:
        data = json.loads(text)
        if data.get("mode", "zookeeper") != "zookeeper":
            raise ClusterError(
                f"this state dir holds a local cluster in {data['mode']} mode, not the "
                "ZooKeeper one: use it in its own mode, or remove it first with "
                "`kconsole cluster down --purge`"
            )
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


def parse_set_options(items: list[str] | tuple[str, ...]) -> tuple[dict[str, str], dict[str, str]]:
    """Split `--set key=value` items into broker and ZooKeeper (`zk:key=value`) overrides."""
    broker: dict[str, str] = {}
    zk: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key in ("", ZK_PREFIX) or any(c.isspace() for c in key):
            raise ClusterError(f"--set expects key=value (or zk:key=value), got {item!r}")
        if "\n" in value or "\r" in value:
            raise ClusterError(f"--set value for {key} must be a single line")
        if key.startswith(ZK_PREFIX):
            zk[key[len(ZK_PREFIX) :]] = value
        else:
            broker[key] = value
    return broker, zk


def broker_properties(
    spec: LocalClusterSpec, broker_id: int, data_dir: Path, security: SecurityFiles | None = None
) -> dict[str, str]:
    """The server.properties of one broker, as a dict (overrides applied last). A secured
    spec needs its `security` files (the brokers' password goes into the properties)."""
    port = spec.broker_ports()[broker_id]
    name = listener_protocol(spec.security)
    props = {
        "broker.id": str(broker_id),
        "listeners": f"{name}://{spec.host}:{port}",
        "advertised.listeners": f"{name}://{spec.host}:{port}",
        "listener.security.protocol.map": f"{name}:{name}",
        "inter.broker.listener.name": name,
        "zookeeper.connect": spec.zk_connect,
        "zookeeper.connection.timeout.ms": "18000",
        "log.dirs": str(data_dir),
        "num.network.threads": "2",
        "num.io.threads": "4",
        "num.recovery.threads.per.data.dir": "1",
        "background.threads": "4",
    }
    rack = spec.rack_of(broker_id)
    if rack:
        props["broker.rack"] = rack
    if spec.security != PLAINTEXT:
        if security is None:
            raise ClusterError(f"a {spec.security} cluster's broker settings need its secrets")
        props.update(broker_security_properties(spec.security, spec.mtls, security))
    if spec.security == SASL_SCRAM:
        # ACLs, as on a real secured cluster: the brokers' user and kconsole's may do anything
        # (super users); any other user only what an ACL allows (kafka-acls / the Admin API).
        props |= {
            "authorizer.class.name": ZK_AUTHORIZER,
            "super.users": f"User:{BROKER_USER};User:{CLIENT_USER}",
            "allow.everyone.if.no.acl.found": "false",
        }
    props.update(drill_settings(spec.brokers))
    props.update(spec.overrides)
    return props


def zookeeper_properties(spec: LocalClusterSpec, data_dir: Path) -> dict[str, str]:
    """zoo.cfg as a dict. maxSessionTimeout is 20 x tickTime, so 6 s broker sessions fit."""
    props = {
        "tickTime": str(ZK_TICK_TIME_MS),
        "dataDir": str(data_dir),
        "clientPort": str(spec.zk_port),
        "clientPortAddress": spec.host,
        "maxClientCnxns": "0",
        "admin.enableServer": "false",
        "4lw.commands.whitelist": "ruok,srvr,stat,mntr",
        "autopurge.snapRetainCount": "3",
        "autopurge.purgeInterval": "1",
    }
    props.update(spec.zk_overrides)
    return props


def render_properties(props: dict[str, str]) -> str:
    """A Java properties file, keys in insertion order."""
    lines = ["# Written by kconsole; regenerated on every `kconsole cluster up`."]
    lines += [f"{k}={v}" for k, v in props.items()]
    return "\n".join(lines) + "\n"


def usable_ports() -> str:
    """The ports a local cluster may use on this machine, in words (for --help and refusals)."""
    low, high = ephemeral_port_range()
    above = f" or {high + 1}..65535" if high < 65535 else ""
    return f"1024..{low - 1}{above}"


def check_port(port: int) -> None:
    """Refuse a port a local node must not listen on: outside 1024..65535, or inside this
    machine's ephemeral port range (while a node is stopped, a client retrying it can be given
    that very port as its own local port and connect to itself; the node then cannot start)."""
    if not 1024 <= port <= 65535:
        raise ClusterError(f"port {port} is outside 1024..65535: pick {usable_ports()}")
    low, high = ephemeral_port_range()
    if low <= port <= high:
        raise ClusterError(
            f"port {port} is inside this machine's ephemeral port range {low}-{high} "
            "(net.ipv4.ip_local_port_range), where the kernel hands out the local ports of "
            "outgoing connections: while a node is stopped, a client retrying it can be given "
            f"that very port and connect to itself, and the node cannot start again. Pick "
            f"{usable_ports()}."
        )


def ephemeral_port_range() -> tuple[int, int]:
    """The OS range for outgoing connections' local ports (Linux; IANA's range elsewhere)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 49152, 65535


# Kafka's default when server.properties does not set zookeeper.session.timeout.ms.
KAFKA_DEFAULT_SESSION_TIMEOUT_MS = 18000


def broker_session_timeout_ms(spec: LocalClusterSpec, broker_id: int) -> int:
    """The ZooKeeper session timeout a broker gets: the broker's zookeeper.session.timeout.ms
    clamped to ZooKeeper's minSessionTimeout..maxSessionTimeout (2 and 20 x tickTime unless
    zoo.cfg sets them), as ZooKeeper negotiates it."""
    # the settings asked about do not depend on the listener's security
    props = broker_properties(replace(spec, security=PLAINTEXT, mtls=False), broker_id, Path("/"))
    zk = zookeeper_properties(spec, Path("/"))
    try:
        wanted = int(props.get("zookeeper.session.timeout.ms", KAFKA_DEFAULT_SESSION_TIMEOUT_MS))
        tick = int(zk["tickTime"])
        low = int(zk.get("minSessionTimeout", 2 * tick))
        high = int(zk.get("maxSessionTimeout", 20 * tick))
    except ValueError as exc:
        raise ClusterError(f"a session timeout or tickTime setting is not a number: {exc}") from exc
    return max(low, min(wanted, high))


def session_expiry_bound_s(spec: LocalClusterSpec, broker_id: int) -> float:
    """At most this many seconds from now, ZooKeeper expires the session of a broker that
    died now or earlier: the session timeout after its last heartbeat, rounded up to the next
    tick (ZooKeeper checks expiry once a tick)."""
    tick = int(zookeeper_properties(spec, Path("/"))["tickTime"])
    return (broker_session_timeout_ms(spec, broker_id) + tick) / 1000.0
