"""`kconsole cluster ...`: the embedded local cluster (ZooKeeper + brokers, or KRaft controllers +
brokers, as JVM processes)."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kconsole.cli.common import commands, confirmation, fail
from kconsole.cli.common import follow as follow_file
from kconsole.cli.main import main
from kconsole.cluster import jars
from kconsole.cluster.jars import kafka_major
from kconsole.cluster.kraft.spec import CONTROLLER_BASE_PORT, KRaftSpec
from kconsole.cluster.local.security import SECURITY_MODES, SecurityFiles, security_summary
from kconsole.cluster.local.spec import (
    LocalClusterSpec,
    ephemeral_port_range,
    parse_set_options,
    usable_ports,
)
from kconsole.cluster.local.status import ClusterStatus
from kconsole.cluster.logs import tail_lines
from kconsole.cluster.settings import (
    KAFKA_VERSION,
    KRAFT_KAFKA_VERSION,
    TEST_TOPIC,
    ZOOKEEPER_VERSION,
)
from kconsole.cluster.values import BrokerAction, NetLinks
from kconsole.commands.views import KRaftView, LocalView
from kconsole.config import DEFAULT_COMPOSE_PROJECT
from kconsole.errors import ClusterError
from kconsole.faults import PRIMITIVES, primitive
from kconsole.paths import bundled

if TYPE_CHECKING:
    from kconsole.cluster.kraft.cluster import KRaftStatus, KRaftUpTimes
    from kconsole.cluster.local.cluster import UpResult
    from kconsole.commands import Commands

MODES = ("zookeeper", "kraft")


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
    """The embedded local cluster as local JVM processes: ZooKeeper + Kafka brokers, or in
    KRaft mode controllers + brokers (or combined nodes). With --backend docker, the broker
    commands (each fault's and each heal's) act on the docker compose project's broker
    containers instead; up, down, status and logs are the local cluster's only."""
    ctx.obj["state_dir"] = state_dir or ctx.obj["settings"].cluster_dir
    sub = ctx.invoked_subcommand
    settings = ctx.obj["settings"]
    if settings.backend == "docker" and sub in LOCAL_ONLY:
        fail(ClusterError(local_only(sub, settings.compose_project)))


_DOCKER_VERBS = "|".join(p.name for p in PRIMITIVES if p.docker or p.docker_net)
_DOCKER_BROKERS = f"; its brokers: `kconsole --backend docker cluster {_DOCKER_VERBS} ID`"
# The commands of the local cluster only, refused when the backend is docker.
LOCAL_ONLY = ("up", "down", "status", "logs")


def compose_file() -> str:
    """The ZooKeeper-mode compose file, as a user would type it: compose/docker-compose.yml in a
    checkout (from its top folder), else the one installed with kconsole."""
    here = Path("compose/docker-compose.yml")
    shipped = bundled("compose") / "docker-compose.yml"
    if here.is_file() and here.resolve() == shipped.resolve():
        return str(here)
    return str(shipped)


def local_only(sub: str, project: str) -> str:
    """What to run instead of `cluster SUB`, a command of the local cluster only, when the
    backend is docker (acting on the compose `project`)."""
    compose = f"docker compose -p {project} -f {compose_file()}"

    def run(args: str, target: str) -> str:
        # the Makefile's compose targets act on the project kconsole
        if project == DEFAULT_COMPOSE_PROJECT:
            return f"`make {target}` ({compose} {args})"
        return f"`{compose} {args}`"

    return {
        "up": "`cluster up` starts the local cluster only, and the backend is docker: start the "
        f"compose cluster with {run('up -d', 'compose-up')}, or pass --backend local to "
        "start the local one" + _DOCKER_BROKERS,
        "down": "`cluster down` stops the local cluster only, and the backend is docker: stop "
        f"the compose cluster with {run('down -v', 'compose-down')}, or pass --backend "
        "local to stop the local one" + _DOCKER_BROKERS,
        "status": "`cluster status` shows the local cluster only, and the backend is docker: "
        f"run `{compose} ps`, or `kconsole --backend docker describe` for the brokers as Kafka "
        "sees them (--backend local: the local cluster's status)",
        "logs": "`cluster logs` prints the local cluster's logs only, and the backend is docker: "
        f"run `{compose} logs kafka-N` (or zookeeper), or pass --backend local for the local "
        "cluster's",
    }[sub]


def _local(ctx: click.Context) -> LocalView | KRaftView:
    """The local cluster in --state-dir, read-only (acting on it is the command layer's)."""
    try:
        return commands(ctx).local_view()
    except ClusterError as exc:
        fail(exc)


# Said in --help: every port of a local cluster must be outside this machine's ephemeral range.
_PORTS = (
    f"Every port must be in {usable_ports()} (outside this machine's ephemeral port range "
    "{}-{}).".format(*ephemeral_port_range())
)


@cluster.command()
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default=None,
    help="zookeeper (1 ZooKeeper + brokers, Kafka 3.9) or kraft (3 controllers + 3 brokers, "
    "Kafka 4.x). Default: the mode of the cluster already in --state-dir, else zookeeper.",
)
@click.option(
    "--combined",
    is_flag=True,
    help="KRaft with combined broker+controller nodes (3 by default); implies --mode kraft.",
)
@click.option(
    "--kafka-version",
    default=None,
    metavar="X.Y.Z",
    help=f"Kafka release to run (default {KAFKA_VERSION} in ZooKeeper mode, "
    f"{KRAFT_KAFKA_VERSION} in KRaft mode).",
)
@click.option("--brokers", type=int, default=None, help="Number of brokers (default 3).")
@click.option("--racks", type=int, default=None, help="Spread brokers over R racks (rack-1..R).")
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a broker setting; zk:KEY=VALUE overrides a ZooKeeper one. Repeatable.",
)
@click.option(
    "--zk-port",
    type=int,
    default=None,
    help=f"ZooKeeper port (default 22181; {usable_ports()} here).",
)
@click.option(
    "--base-port",
    type=int,
    default=None,
    help=f"Port of broker 1; broker N gets BASE+N-1 (default 19092). {_PORTS}",
)
@click.option(
    "--controller-port",
    type=int,
    default=None,
    help=f"KRaft: port of the first controller, the next ones follow (default "
    f"{CONTROLLER_BASE_PORT}; {usable_ports()} here).",
)
@click.option(
    "--timeout",
    type=float,
    default=None,
    help="Seconds to wait for the cluster to be ready (default 120; 240 in KRaft mode).",
)
@click.option("--no-topic", is_flag=True, help=f"Do not create {TEST_TOPIC}.")
@click.option(
    "--security",
    type=click.Choice(SECURITY_MODES),
    default=None,
    help="plaintext (the default), sasl-scram (SASL_PLAINTEXT listeners, SCRAM-SHA-512 users "
    "kconsole and kconsole-broker) or ssl (TLS listeners, a throwaway CA in the state dir). "
    "Both modes (KRaft: the controllers' own listener stays plaintext on 127.0.0.1). Default: "
    "the cluster's own, else plaintext.",
)
@click.option(
    "--mtls", is_flag=True, help="With --security ssl: brokers require a client certificate."
)
@click.option(
    "--password-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="With --security sasl-scram: the client user's password, from this file (its first "
    "line; read when needed, never copied). Default: one generated into the state dir, "
    "readable only by you.",
)
@click.pass_context
def up(
    ctx: click.Context,
    mode: str | None,
    combined: bool,
    kafka_version: str | None,
    brokers: int | None,
    racks: int | None,
    sets: tuple[str, ...],
    zk_port: int | None,
    base_port: int | None,
    controller_port: int | None,
    timeout: float | None,
    no_topic: bool,
    security: str | None,
    mtls: bool,
    password_file: Path | None,
) -> None:
    """Start the local cluster (only what is not running) and wait until ready.

    One local cluster at a time, in the mode it was created in: asking for the other mode
    while one exists is an error (`kconsole cluster down --purge` removes it)."""
    door = commands(ctx)
    try:
        door.refuse("cluster.up", str(ctx.obj["state_dir"]))
        if combined and mode == "zookeeper":
            raise ClusterError("--combined is a KRaft topology: use it with --mode kraft")
        view = door.local_view()
        asked = "kraft" if combined else mode
        kraft = (asked or view.mode) == "kraft"
        overrides, zk_overrides = parse_set_options(sets)
        spec: LocalClusterSpec | KRaftSpec
        if kraft:
            unsupported = [
                name
                for name, value in (("--racks", racks), ("--zk-port", zk_port))
                if value is not None
            ]
            if zk_overrides:
                unsupported.append("--set zk:...")
            if unsupported:
                raise ClusterError(
                    f"{', '.join(unsupported)}: ZooKeeper-mode options, not for a KRaft cluster"
                )
            spec = _kraft_spec(
                view, combined, kafka_version, brokers, base_port, controller_port, overrides
            )
            spec = replace(spec, **_security_fields(spec, security, mtls, password_file))
        else:
            if controller_port is not None:
                raise ClusterError("--controller-port is for a KRaft cluster (--mode kraft)")
            base = view.spec if isinstance(view, LocalView) else LocalClusterSpec()
            version = kafka_version or base.kafka_version
            if kafka_major(version) >= 4:
                raise ClusterError(
                    f"Kafka {version} has no ZooKeeper mode (3.9 is the last line that has): "
                    "use --mode kraft, or a 3.x --kafka-version"
                )
            spec = LocalClusterSpec(
                brokers=brokers if brokers is not None else base.brokers,
                racks=racks if racks is not None else (base.racks if brokers is None else 0),
                zk_port=zk_port if zk_port is not None else base.zk_port,
                base_port=base_port if base_port is not None else base.base_port,
                kafka_version=version,
                overrides={**base.overrides, **overrides} if sets else base.overrides,
                zk_overrides={**base.zk_overrides, **zk_overrides} if sets else base.zk_overrides,
                **_security_fields(base, security, mtls, password_file),
            )
        if not jars.kafka_jars_ready(spec.kafka_version):
            click.echo(f"fetching Kafka {spec.kafka_version} jars with Maven (first run only)...")
        result = door.cluster_up(
            spec,
            timeout=timeout if timeout is not None else (240.0 if kraft else 120.0),
            create_topic=not no_topic,
            progress=lambda m: click.echo(f"  {m}"),
        )
    except ClusterError as exc:
        fail(exc)
    _print_up(door.local_view(), result)


def _security_fields(
    base: LocalClusterSpec | KRaftSpec, security: str | None, mtls: bool, password_file: Path | None
) -> dict[str, Any]:
    """The security of the spec asked for: the options given, else the saved spec's."""
    return {
        "security": security if security is not None else base.security,
        "mtls": mtls or (base.mtls if security is None else False),
        "password_file": (
            str(password_file.expanduser().resolve())
            if password_file is not None
            else (base.password_file if security in (None, base.security) else "")
        ),
    }


def _kraft_spec(
    view: LocalView | KRaftView,
    combined: bool,
    kafka_version: str | None,
    brokers: int | None,
    base_port: int | None,
    controller_port: int | None,
    overrides: dict[str, str],
) -> KRaftSpec:
    """The KRaft spec asked for: the saved one's (when the state dir holds a KRaft cluster)
    with the options given on top, else the defaults with them."""
    base = view.spec if isinstance(view, KRaftView) else KRaftSpec()
    version = kafka_version or base.kafka_version
    if kafka_major(version) < 3 or version.startswith(("3.0", "3.1", "3.2")):
        raise ClusterError(f"Kafka {version} is too old for a local KRaft cluster (3.9 or later)")
    is_combined = combined or base.combined
    count = brokers if brokers is not None else base.brokers
    return KRaftSpec(
        combined=is_combined,
        brokers=count,
        controllers=count if is_combined else base.controllers,
        base_port=base_port if base_port is not None else base.base_port,
        controller_base_port=(
            controller_port if controller_port is not None else base.controller_base_port
        ),
        kafka_version=version,
        overrides={**base.overrides, **overrides},
        cluster_id=base.cluster_id,
        directory_ids=dict(base.directory_ids),
        security=base.security,
        mtls=base.mtls,
        password_file=base.password_file,
    )


def _print_up(local: LocalView | KRaftView, result: UpResult | KRaftUpTimes) -> None:
    started, running, resumed = result.started, result.already_running, result.resumed
    if running and not started and not resumed:
        click.echo("already running: " + ", ".join(running))
    else:
        if running:
            click.echo("already running: " + ", ".join(running))
        if resumed:
            click.echo("resumed (was paused): " + ", ".join(resumed))
    if isinstance(local, KRaftView):
        times: KRaftUpTimes = result  # type: ignore[assignment]
        if not times.started:
            click.echo(f"ready in {times.total_s:.1f} s (nothing to start)")
            _print_kraft_status(local.state_dir, local.status())
            return
        click.echo(
            f"ready in {times.total_s:.1f} s (storage formatted in {times.format_s:.1f} s; "
            f"quorum leader {times.quorum_leader_s:.1f} s and every broker unfenced "
            f"{times.brokers_unfenced_s:.1f} s after the controllers' launch)"
        )
        _print_kraft_status(local.state_dir, local.status())
        return
    up_result: UpResult = result  # type: ignore[assignment]
    click.echo(f"ready in {up_result.elapsed_s:.1f} s")
    _print_status(local.status())


def _cli_name(node_id: int, roles: tuple[str, ...]) -> str:
    return str(node_id) if "broker" in roles else f"controller:{node_id}"


def _kraft_rows(st: KRaftStatus) -> list[dict[str, object]]:
    """One row per node: its name on the command line, roles, state, pid, ports, and what
    the quorum leader says of it."""
    spec_ports = st.spec.broker_ports(), st.spec.controller_ports()
    rows = []
    q = st.quorum
    for n in st.nodes:
        ports = []
        if "broker" in n.roles:
            ports.append(spec_ports[0][n.node_id])
        if "controller" in n.roles:
            ports.append(spec_ports[1][n.node_id])
        quorum: str | None = None
        lag: int | None = None
        if q is not None:
            if n.node_id == q.leader_id:
                quorum = "leader"
            elif n.node_id in q.voter_ids:
                quorum = "voter"
            elif n.node_id in q.observer_ids:
                quorum = "observer"
            lag = q.lag(n.node_id) if quorum else None
        rows.append(
            {
                "name": n.name,
                "cli_name": _cli_name(n.node_id, n.roles),
                "node_id": n.node_id,
                "roles": list(n.roles),
                "state": n.state.value,
                "pid": n.pid,
                "ports": ports,
                "quorum": quorum,
                "lag": lag,
            }
        )
    return rows


def _print_kraft_status(state_dir: Path, st: KRaftStatus) -> None:
    spec = st.spec
    topology = (
        f"{spec.brokers} combined broker+controller nodes"
        if spec.combined
        else f"{spec.controllers} controllers + {spec.brokers} brokers"
    )
    click.echo(f"Kafka {spec.kafka_version} (KRaft mode, {topology})")
    click.echo(f"state dir:   {state_dir}")
    click.echo(f"bootstrap:   {spec.bootstrap}")
    click.echo(f"controllers: {spec.quorum_bootstrap}")
    if spec.security != "plaintext":
        files = SecurityFiles(state_dir, spec.password_file)
        click.echo(f"security:    {security_summary(spec.security, spec.mtls, files)}")
    q = st.quorum
    if q is None:
        why = "no controller is running" if st.quorum_error is None else st.quorum_error
        click.echo(f"quorum:      unknown ({why})")
    else:
        click.echo(
            f"quorum:      leader {q.leader_id}, epoch {q.leader_epoch}, "
            f"high watermark {q.high_watermark}, voters {', '.join(map(str, q.voter_ids))}"
        )
    click.echo("")
    click.echo(
        f"{'node':<16} {'name':<16} {'roles':<18} {'state':<8} {'pid':>7} {'ports':<12} quorum"
    )
    for row in _kraft_rows(st):
        pid = str(row["pid"]) if row["pid"] else "-"
        ports = ",".join(str(p) for p in row["ports"])  # type: ignore[attr-defined]
        quorum = "-"
        if row["quorum"]:
            quorum = str(row["quorum"])
            if row["lag"] is not None and row["quorum"] != "leader":
                quorum += f" (lag {row['lag']})"
        roles = "+".join(str(r) for r in row["roles"])  # type: ignore[attr-defined]
        click.echo(
            f"{row['name']!s:<16} {row['cli_name']!s:<16} {roles:<18} {row['state']!s:<8} "
            f"{pid:>7} {ports:<12} {quorum}"
        )
    click.echo("(name: how `kconsole cluster stop|kill|pause|resume|start|logs` names the node)")


def _print_status(st: ClusterStatus) -> None:
    spec = st.spec
    click.echo(f"Kafka {spec.kafka_version} (ZooKeeper mode), ZooKeeper {ZOOKEEPER_VERSION}")
    click.echo(f"state dir:  {st.state_dir}")
    click.echo(f"zookeeper:  {spec.zk_connect}")
    click.echo(f"bootstrap:  {spec.bootstrap}")
    if spec.security != "plaintext":
        files = SecurityFiles(st.state_dir, spec.password_file)
        click.echo(f"security:   {security_summary(spec.security, spec.mtls, files)}")
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
    """Each process: running / paused / stopped, pid, port, registered in ZooKeeper (KRaft:
    each node's roles and the quorum leader, epoch and every node's place in the quorum)."""
    view = _local(ctx)
    if not as_json:
        _say_network_faults(view)
    if isinstance(view, KRaftView):
        _kraft_status(view, as_json)
        return
    st = view.status()
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


def _say_network_faults(view: LocalView | KRaftView) -> None:
    """The network faults in force, first: what `cluster heal` ends."""
    try:
        in_force = view.network_faults()
    except ClusterError as exc:
        click.echo(f"network faults: unknown ({exc.message})")
        return
    for node_id, what in in_force.items():
        click.echo(
            f"NETWORK FAULT in force on node {node_id}: {what}; "
            f"`kconsole cluster heal {node_id}` ends it"
        )


def _kraft_status(view: KRaftView, as_json: bool) -> None:
    st = view.status()
    if not as_json:
        _print_kraft_status(view.state_dir, st)
        return
    q = st.quorum
    click.echo(
        json.dumps(
            {
                "mode": "kraft",
                "state_dir": str(view.state_dir),
                "kafka_version": st.spec.kafka_version,
                "combined": st.spec.combined,
                "bootstrap": st.spec.bootstrap,
                "bootstrap_controller": st.spec.quorum_bootstrap,
                "quorum": None
                if q is None
                else {
                    "leader": q.leader_id,
                    "epoch": q.leader_epoch,
                    "high_watermark": q.high_watermark,
                    "voters": q.voter_ids,
                    "observers": q.observer_ids,
                },
                "quorum_error": st.quorum_error,
                "nodes": [
                    {**row, "log": str(view.log_path(str(row["name"])))} for row in _kraft_rows(st)
                ],
            },
            indent=2,
        )
    )


@cluster.command()
@click.option(
    "--purge",
    is_flag=True,
    help="Also delete the state dir (data, logs, configs): asks you to type its name.",
)
@click.option("--yes", "assume_yes", is_flag=True, help="Do not ask (needed without a terminal).")
@click.pass_context
def down(ctx: click.Context, purge: bool, assume_yes: bool) -> None:
    """Stop every broker (controller last), then ZooKeeper; KRaft: the brokers one at a time,
    then every controller at once."""
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
    """Print the log of a broker (its id), of zookeeper, or of a KRaft controller
    (controller:ID)."""
    local = _local(ctx)
    try:
        if isinstance(local, KRaftView):
            name = local.spec.resolve_node(target).name
        elif target.lower() in ("zk", "zookeeper"):
            name = "zookeeper"
        else:
            name = local.broker_process_name(_zk_mode_broker(target, "TARGET", "or 'zookeeper'"))
    except ClusterError as exc:
        fail(exc)
    path = local.log_path(name)
    if not path.exists():
        fail(ClusterError(f"no log yet at {path}"))
    for line in tail_lines(path, lines):
        click.echo(line)
    if follow:
        follow_file(path)


def _zk_mode_broker(text: str, what: str, extra: str = "", *, docker: bool = False) -> int:
    """A broker id as a ZooKeeper-mode command takes it (`2` or `broker:2`)."""
    kind, sep, num = text.strip().lower().partition(":")
    if not sep:
        kind, num = "broker", kind
    if kind == "broker" and num.isdigit():
        return int(num)
    if kind == "controller":
        raise ClusterError(
            "this docker compose cluster runs in ZooKeeper mode: it has no controller nodes (its "
            "controller is one of the brokers, `kconsole --backend docker describe` names it)"
            if docker
            else "this local cluster runs in ZooKeeper mode: it has no controller nodes (its "
            "controller is one of the brokers, starred in `kconsole cluster status`)"
        )
    raise ClusterError(f"{what} is a broker id{(' ' + extra) if extra else ''}, not {text!r}")


def broker_command(action: BrokerAction) -> click.Command:
    heal = action is BrokerAction.HEAL
    slow = action is BrokerAction.SLOW
    partition = action is BrokerAction.PARTITION or slow

    @click.argument("node", required=not heal)
    @click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
    @click.pass_context
    def command(
        ctx: click.Context,
        node: str | None,
        yes: bool,
        every: bool = False,
        cut_from: str | None = None,
        one_way: bool = False,
        rate: int | None = None,
    ) -> None:
        # The backend chosen (--backend, KCONSOLE_BACKEND or the config): docker acts on the
        # compose project's broker containers, none refuses; local and auto on the local
        # cluster in --state-dir.
        chosen = ctx.obj["settings"].backend
        door = commands(ctx, backend=None if chosen in ("docker", "none") else "local")
        if every or node is None:
            _heal_every(door, node, yes, chosen)
            return
        try:
            links = None
            if partition:
                try:
                    sides = cut_from or ("brokers" if slow else "")
                    links = NetLinks.parse(sides, one_way, rate if slow else None)
                except ValueError as exc:
                    raise ClusterError(str(exc)) from None
            if chosen in ("docker", "none"):
                # a KRaft compose project names its controllers (controller:1001); a
                # ZooKeeper-mode one has brokers only
                found = door.resolve_node(node) if chosen == "docker" else None
                node_id = (
                    found
                    if found is not None
                    else _zk_mode_broker(node, "NODE", docker=chosen == "docker")
                )
            else:
                view = door.local_view()
                if isinstance(view, KRaftView):
                    node_id = view.spec.resolve_node(node).node_id
                else:
                    node_id = _zk_mode_broker(node, "NODE")
            said = door.broker(
                action,
                node_id,
                confirmation(yes),
                progress=lambda m: click.echo(f"  {m}"),
                links=links,
            )
            click.echo(said)
        except ClusterError as exc:
            fail(exc)

    docker = (
        " --backend docker: the node's container in the compose project (docker "
        + ", ".join(p.docker for p in PRIMITIVES if p.docker)
        + "; a start waits until the broker registers in ZooKeeper, in"
        " KRaft until it is unfenced, a controller until it is back in the quorum)."
        if primitive(action).docker
        else f" --backend docker: {primitive(action).docker_net}."
        if primitive(action).docker_net
        else " The local cluster only: the docker backend refuses it (not yet)."
    )
    doc = (
        primitive(action).cli_help
        + " NODE: a broker id (2); in KRaft mode a controller is controller:ID (controller:1001)."
        + docker
    )
    command.__doc__ = doc
    if heal:
        every = click.option(
            "--all",
            "every",
            is_flag=True,
            help="Heal every node with a network fault recorded in force (one heal each).",
        )
        return click.command(action.value, help=doc)(every(command))
    if slow:
        sides = click.option(
            "--from",
            "cut_from",
            metavar="SIDES",
            help="Whose links to slow, comma-separated: zookeeper, quorum, brokers, clients, "
            "or nodes (2, broker:2, controller:1001). Default: brokers.",
        )
        rate = click.option(
            "--rate",
            type=int,
            required=True,
            metavar="BYTES",
            help="Bytes per second each way on those links; what exceeds it is dropped. At "
            "least 65,536 (64 KiB/s: a lower cap would not hold).",
        )
        return click.command(action.value, help=doc)(sides(rate(command)))
    if partition:
        sides = click.option(
            "--from",
            "cut_from",
            required=True,
            metavar="SIDES",
            help="What to cut the node from, comma-separated: zookeeper, quorum, brokers, "
            "clients, or nodes (2, broker:2, controller:1001).",
        )
        one = click.option(
            "--one-way", is_flag=True, help="Drop only what the node sends on those links."
        )
        return click.command(action.value, help=doc)(sides(one(command)))
    return click.command(action.value, help=doc)(command)


def _heal_every(door: Commands, node: str | None, yes: bool, chosen: str) -> None:
    """`cluster heal --all`: each node with a network fault in force (the local cluster's
    record; on the docker backend, the containers' namespaces), healed through the door one by
    one."""
    try:
        if node is not None:
            raise ClusterError("give a NODE or --all, not both")
        if chosen == "none":
            raise ClusterError("no cluster backend: nothing holds a network fault")
        if chosen == "docker":
            read = door.network_faults()
            in_force = read() if read is not None else {}
        else:
            in_force = door.local_view().network_faults()
        if not in_force:
            click.echo("no network fault in force")
            return
        for node_id, what in in_force.items():
            click.echo(f"{node_id}: {what}")
            click.echo(door.broker(BrokerAction.HEAL, node_id, confirmation(yes)))
    except ClusterError as exc:
        fail(exc)


for _primitive in PRIMITIVES:  # each fault's and each heal's (kconsole.faults)
    cluster.add_command(broker_command(_primitive.action))


@cluster.command()
@click.option(
    "--kafka-version",
    default=KAFKA_VERSION,
    show_default=True,
    metavar="X.Y.Z",
    help=f"Which release ({KRAFT_KAFKA_VERSION} is the KRaft mode's default).",
)
def fetch(kafka_version: str) -> None:
    """Resolve the Kafka jars into the per-user cache (needs Maven once)."""
    try:
        lib = jars.ensure_kafka_jars(kafka_version)
    except ClusterError as exc:
        fail(exc)
    click.echo(f"Kafka {kafka_version} jars: {lib} ({len(list(lib.glob('*.jar')))} jars)")
