"""A local cluster's ports: a port inside the ephemeral range is said to be inside it, with the
range and what to pick instead, in both modes and in `cluster up --help` (issue 35 #12)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from kconsole.cli import main as cli
from kconsole.cluster.errors import ClusterError
from kconsole.cluster.kraft.spec import KRaftSpec
from kconsole.cluster.local import spec as local_spec
from kconsole.cluster.local.spec import LocalClusterSpec, check_port, usable_ports


@pytest.fixture
def linux_range(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ephemeral range of a stock Linux kernel, whatever this machine's is."""
    monkeypatch.setattr(local_spec, "ephemeral_port_range", lambda: (32768, 60999))


@pytest.mark.usefixtures("linux_range")
class TestPorts:
    def test_a_port_inside_the_range_is_said_to_be_inside_it(self) -> None:
        with pytest.raises(ClusterError) as err:
            check_port(39092)
        said = str(err.value)
        assert said.startswith(
            "port 39092 is inside this machine's ephemeral port range 32768-60999"
        )
        assert "below" not in said
        assert "where the kernel hands out the local ports of outgoing connections" in said
        assert said.endswith("Pick 1024..32767 or 61000..65535.")

    @pytest.mark.parametrize("port", [1024, 19092, 32767, 61000, 65535])
    def test_ports_outside_the_range_are_taken(self, port: int) -> None:
        check_port(port)

    @pytest.mark.parametrize("port", [80, 1023, 65536])
    def test_ports_no_node_can_have(self, port: int) -> None:
        with pytest.raises(ClusterError, match=rf"port {port} is outside 1024\.\.65535: pick 1024"):
            check_port(port)

    def test_both_modes_say_the_same(self) -> None:
        for make in (
            lambda: LocalClusterSpec(base_port=39092),
            lambda: KRaftSpec(base_port=39092),
            lambda: KRaftSpec(controller_base_port=39192),
        ):
            with pytest.raises(ClusterError, match="is inside this machine's ephemeral port"):
                make()
        # above the range is outside it, in both modes
        assert LocalClusterSpec(base_port=61000).base_port == 61000
        assert KRaftSpec(base_port=61000, controller_base_port=62000).base_port == 61000

    def test_usable_ports_when_the_range_reaches_the_top(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(local_spec, "ephemeral_port_range", lambda: (49152, 65535))
        assert usable_ports() == "1024..49151"


def test_cluster_up_help_says_the_limit() -> None:
    out = CliRunner().invoke(cli, ["cluster", "up", "--help"], terminal_width=200).output
    low, high = local_spec.ephemeral_port_range()
    assert f"Every port must be in {usable_ports()}" in " ".join(out.split())
    assert f"ephemeral port range {low}-{high}" in " ".join(out.split())


def test_cluster_up_refuses_before_it_starts_anything(tmp_path: object) -> None:
    low, _high = local_spec.ephemeral_port_range()
    env = {"KCONSOLE_STATE_DIR": f"{tmp_path}/state", "KCONSOLE_CONFIG": ""}
    for mode in ("zookeeper", "kraft"):
        res = CliRunner().invoke(
            cli, ["cluster", "up", "--mode", mode, "--base-port", str(low + 10)], env=env
        )
        assert res.exit_code == 1, res.output
        assert f"port {low + 10} is inside this machine's ephemeral port range" in res.output
