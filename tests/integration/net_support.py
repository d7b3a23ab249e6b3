"""What a network fault test needs: the machine's kconsole rules as iptables-save lists them,
a skip where the machine cannot make network faults, and the check that nothing is left."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kconsole.cluster.net import host
from kconsole.cluster.net.rules import cgroup_path, cluster_tag


def kconsole_rules(state_dir: Path) -> list[str]:
    """Every line of iptables-save that is the cluster in `state_dir`'s: a rule with its
    kconsole:TAG comment, or one of its KCONSOLE-TAG chains ([] where iptables cannot be read:
    not root, or no iptables). Another cluster's (another test run on the machine) is not
    counted: kconsole removes by tag, and so does this."""
    if not (host.is_root() and host.iptables_found()):
        return []
    tag = cluster_tag(state_dir)
    out = subprocess.run(
        ["iptables-save"], capture_output=True, text=True, timeout=20, check=True
    ).stdout
    return [ln for ln in out.splitlines() if f"kconsole:{tag}" in ln or f"KCONSOLE-{tag}" in ln]


def skip_without_network_faults() -> None:
    """Skip (saying what is missing) where this machine cannot make network faults."""
    lacking = host.missing()
    if lacking:
        pytest.skip("network faults need " + "; ".join(lacking))


def left_behind(state_dir: Path) -> list[str]:
    """What of the cluster in `state_dir`'s network faults is still on the machine."""
    left = kconsole_rules(state_dir)
    root = host.cgroup2_mount()
    ours = root / cgroup_path(cluster_tag(state_dir)) if root is not None else None
    if ours is not None and ours.exists():
        left.append(f"cgroup {ours}")
    return left
