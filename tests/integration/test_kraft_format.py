"""Formatting a KRaft cluster's storage (real StorageTool, no node started): every node in one
JVM, on both Kafka lines a KRaft cluster runs (3.9 and 4.x), and a JVM per node when the
one-JVM launcher cannot run."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

from kconsole.cluster import jars
from kconsole.cluster.kraft import cluster as kraft
from kconsole.cluster.kraft.cluster import KRaftCluster
from kconsole.cluster.kraft.spec import KRaftSpec
from kconsole.cluster.settings import KAFKA_VERSION, KRAFT_KAFKA_VERSION

pytestmark = pytest.mark.integration


def formatted(tmp_path: Path, version: str, combined: bool = False) -> KRaftCluster:
    cluster = KRaftCluster(tmp_path / "k", KRaftSpec(kafka_version=version, combined=combined))
    cluster.write_configs()
    cluster.format_storage(jars.ensure_kafka_jars(version), timeout=180)
    return cluster


def meta(cluster: KRaftCluster, name: str) -> dict[str, str]:
    text = (cluster.proc_dir(name) / "data" / "meta.properties").read_text()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


@pytest.mark.parametrize("version", [KRAFT_KAFKA_VERSION, KAFKA_VERSION])
def test_every_node_in_one_jvm(tmp_path: Path, version: str) -> None:
    """One JVM formats all six nodes with the cluster's id; each node's own format.log says
    what StorageTool printed for it, and no per-node JVM ran (the launcher's log has each)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cluster = formatted(tmp_path, version)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    print(f"\nformatting 6 nodes of Kafka {version} in one JVM: {cpu:.2f} s of CPU")
    for node in cluster.spec.nodes():
        assert meta(cluster, node.name)["cluster.id"] == cluster.spec.cluster_id
        assert meta(cluster, node.name)["node.id"] == str(node.node_id)
        assert "Formatting" in (cluster.proc_dir(node.name) / "format.log").read_text()
    said = (cluster.state_dir / "format.log").read_text().splitlines()
    assert [line for line in said if line.startswith("kconsole-format")] == [
        f"kconsole-format {i} 0" for i in range(6)
    ]
    # The controllers' directory ids are the ones the voters were formatted with.
    assert meta(cluster, "controller-1002")["directory.id"] == cluster.spec.directory_ids["1002"]


def test_a_jvm_per_node_when_the_launcher_cannot_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kraft, "FORMAT_LAUNCHER", "this is not Java\n")
    cluster = formatted(tmp_path, KRAFT_KAFKA_VERSION, combined=True)
    assert all(cluster.is_formatted(n) for n in cluster.spec.nodes())
    assert "kconsole-format" not in (cluster.state_dir / "format.log").read_text()
    assert "Formatting" in (cluster.proc_dir("node-2") / "format.log").read_text()


def test_a_node_that_fails_is_named_with_its_log(tmp_path: Path) -> None:
    """A bad setting in one node's server.properties: the error names that node and shows
    StorageTool's own words; the others are formatted."""
    cluster = KRaftCluster(tmp_path / "k", KRaftSpec())
    cluster.write_configs()
    props = cluster.proc_dir("broker-2") / "server.properties"
    props.write_text(props.read_text() + "node.id=not-a-number\n")
    with pytest.raises(kraft.ClusterError) as err:
        cluster.format_storage(jars.ensure_kafka_jars(KRAFT_KAFKA_VERSION), timeout=180)
    assert "formatting the storage of broker-2 failed (exit 1)" in err.value.message
    assert any("not-a-number" in line for line in err.value.log_lines)
    assert cluster.is_formatted(cluster.spec.node("broker-1"))
