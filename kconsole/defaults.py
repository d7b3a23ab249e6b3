"""Where the reference cluster listens: the defaults the config, the local cluster and the
compose file agree on (kconsole.cluster.settings re-exports them with the rest of the topology)."""

from __future__ import annotations

HOST = "127.0.0.1"
ZK_PORT = 22181
BROKER_BASE_PORT = 19092  # broker id N listens on BROKER_BASE_PORT + N - 1
DEFAULT_BROKERS = 3


def broker_port(broker_id: int, base_port: int = BROKER_BASE_PORT) -> int:
    """The host port of a broker."""
    return base_port + broker_id - 1


def default_bootstrap(brokers: int = DEFAULT_BROKERS, base_port: int = BROKER_BASE_PORT) -> str:
    """Bootstrap string for the reference cluster."""
    return ",".join(f"{HOST}:{broker_port(i, base_port)}" for i in range(1, brokers + 1))
