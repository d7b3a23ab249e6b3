"""A secured local cluster is reached with no flags: its client settings join the settings'.

`kconsole cluster up --security sasl-scram|ssl` (ZooKeeper or KRaft mode) keeps what a client
needs in the state dir (kconsole.cluster.local_security). When the settings name no security of
their own and their bootstrap servers are that cluster's, the console, the CLI and the jobs use
its settings: the SCRAM user with its password *file* (read when a client is made, never copied
into the settings), or the CA and client certificate.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING

from kconsole.cluster.backends import serves
from kconsole.cluster.kraft_spec import KRaftSpec
from kconsole.cluster.local_security import PLAINTEXT, SecurityFiles, client_properties
from kconsole.cluster.local_spec import LocalClusterSpec

if TYPE_CHECKING:
    from kconsole.config import Settings

# Settings that mean the user chose how to connect: theirs win, whole.
_SECURITY_PREFIXES = ("security.protocol", "sasl.", "ssl.")


def with_local_security(settings: Settings) -> Settings:
    """`settings` with the local cluster's client settings added when they apply (above)."""
    if any(key.startswith(_SECURITY_PREFIXES) for key in settings.client):
        return settings
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
    where = f"the local cluster in {state_dir} ({spec.security})"
    return replace(
        settings,
        client={**props, **settings.client},
        client_origin={**dict.fromkeys(props, where), **settings.client_origin},
        source=f"{settings.source} < {where}",
    )
