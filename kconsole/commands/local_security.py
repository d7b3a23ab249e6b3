"""A secured local cluster is reached with no flags: its client settings join the settings'.

`kconsole cluster up --security sasl-scram|ssl` (ZooKeeper or KRaft mode) keeps what a client
needs in the state dir (kconsole.cluster.local.security). When the settings' bootstrap servers
are that cluster's, the console, the CLI and the jobs use its settings: the SCRAM user with its
password *file* (read when a client is made, never copied into the settings), or the CA and
client certificate. A client property the user gives (-X, a [client] table) adds to them and
replaces the cluster's own of that name (`-X sasl.password=...` replaces its password file);
one that names another security.protocol means another way in: the user's settings then apply
alone.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING

from kconsole.cluster.backends import serves
from kconsole.cluster.kraft.spec import KRaftSpec
from kconsole.cluster.local.security import PLAINTEXT, SecurityFiles, client_properties
from kconsole.cluster.local.spec import LocalClusterSpec
from kconsole.secrets import FILE_SUFFIX  # `KEY_file`: KEY's value, read from a file

if TYPE_CHECKING:
    from kconsole.config import Settings

_ALIASES = {"sasl.mechanisms": "sasl.mechanism"}  # librdkafka's two names of one property


def with_local_security(settings: Settings) -> Settings:
    """`settings` with the local cluster's client settings added when they apply (above)."""
    state_dir = settings.cluster_dir
    try:
        data = json.loads((state_dir / "cluster.json").read_text())
    except (OSError, ValueError):
        return settings
    if not isinstance(data, dict):
        return settings
    spec: LocalClusterSpec | KRaftSpec
    try:
        if data.get("mode", "zookeeper") == "kraft":
            spec = KRaftSpec.from_json(json.dumps(data))
        else:
            spec = LocalClusterSpec.from_json(json.dumps(data))
    except Exception:  # a broken spec is `cluster status`'s to report, not this lookup's
        return settings
    if spec.security == PLAINTEXT or not serves(spec.bootstrap, settings.bootstrap):
        return settings
    props = client_properties(
        spec.security, spec.mtls, SecurityFiles(state_dir, spec.password_file)
    )
    mine = settings.client
    protocol = str(mine.get("security.protocol", props["security.protocol"]))
    if protocol.upper() != props["security.protocol"]:
        return settings  # another way in: the cluster's own settings do not go with it
    props = {k: v for k, v in props.items() if not _replaced(k, mine)}
    where = f"the local cluster in {state_dir} ({spec.security})"
    return replace(
        settings,
        client={**props, **settings.client},
        client_origin={**dict.fromkeys(props, where), **settings.client_origin},
        source=f"{settings.source} < {where}",
    )


def _replaced(key: str, mine: dict[str, str]) -> bool:
    """The user gave `key`, or the same value another way (a value for a `_file` key, a file
    for a value): theirs replaces the cluster's."""
    given = {_ALIASES.get(k, k) for k in mine}
    name = key.removesuffix(FILE_SUFFIX)
    return name in given or name + FILE_SUFFIX in given
