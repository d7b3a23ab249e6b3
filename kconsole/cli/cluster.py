"""`kconsole cluster ...`: the embedded local cluster (ZooKeeper + brokers as JVM processes)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kconsole.cli.common import commands, confirmation, fail
from kconsole.cli.common import follow as follow_file
from kconsole.cli.main import main
from kconsole.cluster import jars
from kconsole.cluster.control import BrokerAction
from kconsole.cluster.local_spec import LocalClusterSpec, parse_set_options
from kconsole.cluster.local_status import ClusterStatus
from kconsole.cluster.procs import tail_lines
from kconsole.cluster.settings import KAFKA_VERSION, TEST_TOPIC, ZOOKEEPER_VERSION
from kconsole.commands.views import LocalView
from kconsole.errors import ClusterError

if TYPE_CHECKING:
    from kconsole.cluster.local import UpResult


@main.group()
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="KCONSOLE_CLUSTER_DIR",
    default=None,
    help="State directory of the local cluster (default: per-user state dir).",
)
@click.pass_context
def cluster(ctx: click.Context, state_dir: Path | None) -> None:
    """The embedded local cluster: ZooKeeper + Kafka brokers as local JVM processes."""
    ctx.obj["state_dir"] = state_dir or ctx.obj["settings"].cluster_dir


def _local(ctx: click.Context) -> LocalView:
    """The local cluster in --state-dir, read-only (acting on it is the command layer's)."""
    try:
        return commands(ctx).local_view()
    except ClusterError as exc:
        fail(exc)


@cluster.command()
@click.option("--brokers", type=int, default=None, help="Number of brokers (default 3).")
@click.option("--racks", type=int, default=None, help="Spread brokers over R racks (rack-1..R).")
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a broker setting; zk:KEY=VALUE overrides a ZooKeeper one. Repeatable.",
)
@click.option("--zk-port", type=int, default=None, help="ZooKeeper port (default 22181).")
@click.option(
    "--base-port",
    type=int,
    default=None,
    help="Port of broker 1; broker N gets BASE+N-1 (default 19092).",
)
@click.option(
    "--timeout",
    type=float,
    default=120.0,
    show_default=True,
    help="Seconds to wait for the cluster to be ready.",
)
@click.option("--no-topic", is_flag=True, help=f"Do not create {TEST_TOPIC}.")
@click.pass_context
def up(
    ctx: click.Context,
    brokers: int | None,
    racks: int | None,
    sets: tuple[str, ...],
    zk_port: int | None,
    base_port: int | None,
    timeout: float,
    no_topic: bool,
) -> None:
    """Start ZooKeeper and the brokers (only what is not running), wait until ready."""
    door = commands(ctx)
    try:
        door.refuse("cluster.up", str(ctx.obj["state_dir"]))
        base = door.local_view().spec
        overrides, zk_overrides = parse_set_options(sets)
        spec = LocalClusterSpec(
            brokers=brokers if brokers is not None else base.brokers,
            racks=racks if racks is not None else (base.racks if brokers is None else 0),
            zk_port=zk_port if zk_port is not None else base.zk_port,
            base_port=base_port if base_port is not None else base.base_port,
            overrides={**base.overrides, **overrides} if sets else base.overrides,
            zk_overrides={**base.zk_overrides, **zk_overrides} if sets else base.zk_overrides,
        )
        if not jars.kafka_jars_ready(spec.kafka_version):
            click.echo(f"fetching Kafka {spec.kafka_version} jars with Maven (first run only)...")
        result = door.cluster_up(
            spec,
            timeout=timeout,
            create_topic=not no_topic,
            progress=lambda m: click.echo(f"  {m}"),
        )
    except ClusterError as exc:
        fail(exc)
    _print_up(door.local_view(), result)


def _print_up(local: LocalView, result: UpResult) -> None:
    if result.already_running and not result.started and not result.resumed:
        click.echo("already running: " + ", ".join(result.already_running))
    else:
        if result.already_running:
            click.echo("already running: " + ", ".join(result.already_running))
        if result.resumed:
            click.echo("resumed (was paused): " + ", ".join(result.resumed))
    click.echo(f"ready in {result.elapsed_s:.1f} s")
    _print_status(local.status())


def _print_status(st: ClusterStatus) -> None:
    spec = st.spec
    click.echo(f"Kafka {spec.kafka_version} (ZooKeeper mode), ZooKeeper {ZOOKEEPER_VERSION}")
    click.echo(f"state dir:  {st.state_dir}")
    click.echo(f"zookeeper:  {spec.zk_connect}")
    click.echo(f"bootstrap:  {spec.bootstrap}")
    ctl = str(st.controller) if st.controller is not None else "none"
    click.echo(f"controller: {ctl}" + (f"   ({st.zk_error})" if st.zk_error else ""))
    click.echo("")
    click.echo(f"{'process':<11} {'state':<8} {'pid':>7} {'port':>6}  {'in ZK':<6} log")
    for p in st.processes:
        reg = "-" if p.broker_id is None else {None: "?", True: "yes", False: "no"}[p.registered]
        rack = spec.rack_of(p.broker_id) if p.broker_id else None
        name = p.name + (" *" if p.broker_id is not None and p.broker_id == st.controller else "")
        pid = str(p.pid) if p.pid else "-"
        click.echo(
            f"{name:<11} {p.state.value:<8} {pid:>7} {p.port:>6}  {reg:<6} {p.log}"
            + (f"  [{rack}]" if rack else "")
        )
    click.echo("(* = active controller)")


@cluster.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Each process: running / paused / stopped, pid, port, registered in ZooKeeper."""
    st = _local(ctx).status()
    if as_json:
        click.echo(
            json.dumps(
                {
                    "state_dir": str(st.state_dir),
                    "bootstrap": st.spec.bootstrap,
                    "zookeeper": st.spec.zk_connect,
                    "controller": st.controller,
                    "zookeeper_error": st.zk_error or None,
                    "processes": [
                        {
                            "name": p.name,
                            "broker_id": p.broker_id,
                            "state": p.state.value,
                            "pid": p.pid,
                            "port": p.port,
                            "registered": p.registered,
                            "log": str(p.log),
                        }
                        for p in st.processes
                    ],
                },
                indent=2,
            )
        )
    else:
        _print_status(st)


@cluster.command()
@click.option(
    "--purge",
    is_flag=True,
    help="Also delete the state dir (data, logs, configs): asks you to type its name.",
)
@click.option("--yes", "assume_yes", is_flag=True, help="Do not ask (needed without a terminal).")
@click.pass_context
def down(ctx: click.Context, purge: bool, assume_yes: bool) -> None:
    """Stop every broker (controller last), then ZooKeeper."""
    local = _local(ctx)
    t0 = time.monotonic()
    try:
        stopped = commands(ctx).cluster_down(purge=purge, confirm=confirmation(assume_yes))
    except ClusterError as exc:
        fail(exc)
    took = time.monotonic() - t0
    click.echo(("stopped " + ", ".join(stopped)) if stopped else "nothing was running")
    click.echo(f"in {took:.1f} s" + (f"; removed {local.state_dir}" if purge else ""))


@cluster.command()
@click.argument("target")
@click.option("-n", "--lines", type=int, default=50, show_default=True)
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines (Ctrl-C ends).")
@click.pass_context
def logs(ctx: click.Context, target: str, lines: int, follow: bool) -> None:
    """Print the log of a broker (its id) or of zookeeper."""
    local = _local(ctx)
    name = "zookeeper" if target.lower() in ("zk", "zookeeper") else None
    if name is None:
        try:
            name = local.broker_process_name(int(target))
        except ValueError:
            fail(ClusterError(f"TARGET is a broker id or 'zookeeper', not {target!r}"))
        except ClusterError as exc:
            fail(exc)
    assert name is not None
    path = local.log_path(name)
    if not path.exists():
        fail(ClusterError(f"no log yet at {path}"))
    for line in tail_lines(path, lines):
        click.echo(line)
    if follow:
        follow_file(path)


def _broker_command(action: BrokerAction) -> click.Command:
    @click.argument("broker", type=int)
    @click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
    @click.pass_context
    def command(ctx: click.Context, broker: int, yes: bool) -> None:
        # The local cluster in --state-dir, whatever --backend says (see `kconsole --help`).
        door = commands(ctx, backend="local")
        try:
            said = door.broker(
                action, broker, confirmation(yes), progress=lambda m: click.echo(f"  {m}")
            )
            click.echo(said)
        except ClusterError as exc:
            fail(exc)

    doc = {
        BrokerAction.STOP: "Stop a broker gracefully (SIGTERM: controlled shutdown).",
        BrokerAction.KILL: "Kill a broker (SIGKILL: no controlled shutdown).",
        BrokerAction.PAUSE: "Pause a broker (SIGSTOP: frozen with its connections open).",
        BrokerAction.RESUME: "Resume a paused broker (SIGCONT).",
        BrokerAction.START: "Start a stopped broker (same config and data); wait until registered.",
    }[action]
    command.__doc__ = doc
    return click.command(action.value, help=doc)(command)


for _action in BrokerAction:
    cluster.add_command(_broker_command(_action))


@cluster.command()
def fetch() -> None:
    """Resolve the Kafka jars into the per-user cache (needs Maven once)."""
    try:
        lib = jars.ensure_kafka_jars(KAFKA_VERSION)
    except ClusterError as exc:
        fail(exc)
    click.echo(f"Kafka {KAFKA_VERSION} jars: {lib} ({len(list(lib.glob('*.jar')))} jars)")
