"""The `kconsole` command line."""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

import click

from kconsole import __version__, paths
from kconsole.cluster import jars
from kconsole.cluster.control import BrokerAction, BrokerControl, LocalBrokerControl
from kconsole.cluster.errors import ClusterError
from kconsole.cluster.local import (
    ClusterStatus,
    LocalCluster,
    LocalClusterSpec,
    UpResult,
    parse_set_options,
)
from kconsole.cluster.procs import tail_lines
from kconsole.cluster.settings import KAFKA_VERSION, TEST_TOPIC, ZOOKEEPER_VERSION
from kconsole.commands import Commands, ReadOnlyError
from kconsole.config import BACKENDS, Settings, load_settings
from kconsole.jobs import JobManager, JobProgress, JobRun, available_jobs


def _quiet_libraries() -> None:
    # kazoo logs every dropped connection as a warning; a stopped ZooKeeper is reported by us.
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("kazoo").setLevel(logging.CRITICAL)
    # librdkafka's connection errors are expected while a drill has a broker down.
    logging.getLogger("kconsole.rdkafka").setLevel(logging.CRITICAL)


def _fail(exc: Exception) -> None:
    click.echo(f"error: {exc}", err=True)
    sys.exit(1)


@click.group(invoke_without_command=True)
@click.version_option(__version__, prog_name="kconsole")
@click.option(
    "--bootstrap",
    "-b",
    default=None,
    metavar="HOST:PORT,...",
    help="Bootstrap servers (default: the local cluster, 127.0.0.1:19092-19094).",
)
@click.option(
    "--zookeeper",
    "-z",
    default=None,
    metavar="HOST:PORT",
    help="ZooKeeper to watch (default 127.0.0.1:22181; '' for none).",
)
@click.option(
    "-X",
    "client_props",
    multiple=True,
    metavar="KEY=VALUE",
    help="librdkafka client property, e.g. -X security.protocol=SASL_SSL. Repeatable.",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="TOML config file (default: config.toml in the user config dir).",
)
@click.option(
    "--backend",
    type=click.Choice(BACKENDS),
    default=None,
    help="How brokers are controlled (default auto: the local cluster if kconsole started it).",
)
@click.option("--refresh", type=float, default=None, help="Seconds between cluster polls (1).")
@click.option(
    "--group-refresh", type=float, default=None, help="Seconds between consumer-group polls (2)."
)
@click.option(
    "--read-only",
    is_flag=True,
    default=None,
    help="Refuse every modifying action (brokers, partitions, produce).",
)
@click.pass_context
def main(
    ctx: click.Context,
    bootstrap: str | None,
    zookeeper: str | None,
    client_props: tuple[str, ...],
    config_path: Path | None,
    backend: str | None,
    refresh: float | None,
    group_refresh: float | None,
    read_only: bool | None,
) -> None:
    """A keyboard-driven console for operating and drilling Apache Kafka clusters.

    With no command it opens the console on the cluster (by default the embedded local one).
    """
    _quiet_libraries()
    ctx.ensure_object(dict)
    try:
        settings = load_settings(
            config_path=config_path,
            bootstrap=bootstrap,
            zookeeper=zookeeper,
            client_props=client_props,
            backend=backend,
            read_only=read_only,
            refresh=refresh,
            group_refresh=group_refresh,
        )
    except ClusterError as exc:
        _fail(exc)
        return
    ctx.obj["settings"] = settings
    ctx.obj["read_only"] = settings.read_only
    if ctx.invoked_subcommand is None:
        _run_console(settings)


def _backend(settings: Settings) -> tuple[BrokerControl | None, str]:
    """The broker control for these settings (local cluster, docker compose) or why none."""
    from kconsole.cluster.backends import choose_backend

    return choose_backend(settings)


def _run_console(settings: Settings) -> None:
    from kconsole.observer import ClusterObserver

    log_file = paths.state_dir() / "kconsole.log"
    log_file.parent.mkdir(parents=True, exist_ok=True)
    # The screen belongs to the console: every library's log goes to a file instead.
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.FileHandler(log_file)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.WARNING)

    control, reason = _backend(settings)
    observer = ClusterObserver(settings, proc_states=control.states if control else None)
    from kconsole.ui.app import make_app

    app = make_app(
        observer,
        commands=Commands(
            control, read_only=settings.read_only, control_reason="" if control else reason
        ),
        refresh_s=settings.refresh_s,
        group_refresh_s=settings.group_refresh_s,
        settings=settings,
        jobs=JobManager(settings=settings),
    )
    app.run()


@main.command()
@click.option("--json", "as_json", is_flag=True, help="The whole snapshot as JSON.")
@click.pass_context
def describe(ctx: click.Context, as_json: bool) -> None:
    """Print the cluster once: brokers, controller, partitions with flags, groups with lag."""
    from kconsole.describe import render_text
    from kconsole.observer import ClusterObserver

    settings: Settings = ctx.obj["settings"]
    control, _reason = _backend(settings)
    snap = ClusterObserver(settings, proc_states=control.states if control else None).read_once()
    if as_json:
        click.echo(snap.to_json(indent=2, default=str))
    else:
        click.echo(render_text(snap))
    if not any(s.ok for s in snap.sources):
        sys.exit(2)


@main.group()
def drill() -> None:
    """Failover drills: a workload, a fault, a timeline with durations, an acked-loss audit."""


@drill.command("run")
@click.option(
    "--fault",
    type=click.Choice(["stop", "kill", "pause"]),
    required=True,
    help="stop: SIGTERM (controlled shutdown); kill: SIGKILL; pause: SIGSTOP.",
)
@click.option(
    "--target",
    required=True,
    metavar="controller|broker:ID|leader:TOPIC/PARTITION",
    help="Which broker: the active controller, a broker id, or a partition's leader.",
)
@click.option("--acks", type=click.Choice(["all", "1", "0"]), default="all", show_default=True)
@click.option(
    "--duration",
    type=float,
    default=30.0,
    show_default=True,
    help="Seconds the workload runs (at least until the cluster settled).",
)
@click.option(
    "--restore-after",
    type=float,
    default=10.0,
    show_default=True,
    help="Seconds between the fault and the restore (start / resume).",
)
@click.option(
    "--settle-timeout",
    type=float,
    default=90.0,
    show_default=True,
    help="Seconds to wait for full ISRs (and preferred leaders) after the restore.",
)
@click.option(
    "--no-wait-preferred",
    is_flag=True,
    help="Do not wait for the preferred leaders to come back when settling.",
)
@click.option("--rate", type=float, default=200.0, show_default=True, help="Messages per second.")
@click.option("--topic", default="test-topic", show_default=True)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Where the JSON report goes (the Markdown summary beside it).",
)
@click.pass_context
def drill_run(
    ctx: click.Context,
    fault: str,
    target: str,
    acks: str,
    duration: float,
    restore_after: float,
    settle_timeout: float,
    no_wait_preferred: bool,
    rate: float,
    topic: str,
    report_path: Path,
) -> None:
    """Run a whole drill without the UI. Exits 3 when acknowledged messages were lost."""
    from kconsole.drills.runner import DrillRunner, DrillSpec

    settings: Settings = ctx.obj["settings"]
    try:
        spec = DrillSpec(
            fault=fault,
            target=target,
            acks=acks,  # type: ignore[arg-type]
            duration_s=duration,
            restore_after_s=restore_after,
            settle_timeout_s=settle_timeout,
            wait_preferred=not no_wait_preferred,
            rate=rate,
            topic=topic,
        )
        control, reason = _backend(settings)
        if control is None:
            raise ClusterError(f"a drill needs broker control: {reason}")
        report = DrillRunner(
            settings, control, spec, progress=click.echo, read_only=settings.read_only
        ).run()
    except ClusterError as exc:
        _fail(exc)
        return
    json_path, md_path = report.write(report_path)
    click.echo("")
    for m in report.measurements:
        took = f"{m.seconds:.2f} s" if m.seconds is not None else "did not happen"
        click.echo(f"  {m.name}: {took}   (predicted: {m.predicted})")
    a = report.audit.to_dict()
    click.echo(
        f"  acked {a.get('acked')}, lost {len(a.get('lost', []))}, duplicates "
        f"{len(a.get('duplicates', []))}, failed {a.get('failed_by_code')}"
    )
    click.echo(f"report: {json_path} and {md_path}")
    if not report.ok:
        click.echo("ACKNOWLEDGED MESSAGES WERE LOST", err=True)
        sys.exit(3)


@main.command()
@click.option("--topic", "-t", required=True, help="Topic to produce to (must exist).")
@click.option("--key", "-k", default=None, help="Key of every record (default: null).")
@click.option("--value", "-v", default=None, help="Value of every record.")
@click.option(
    "--file",
    "-f",
    "file_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Send the whole file, bytes as they are, as the value.",
)
@click.option("--count", "-n", type=int, default=1, show_default=True, help="Copies to send.")
@click.option("--rate", type=float, default=None, help="Messages per second (default: no limit).")
@click.option("--acks", type=click.Choice(["all", "1", "0"]), default="all", show_default=True)
@click.option(
    "--key-separator",
    "-K",
    default=None,
    metavar="SEP",
    help="stdin lines are KEY<SEP>VALUE (a line without SEP: null key, all value).",
)
@click.option("--partition", "-p", type=int, default=None, help="Send to this partition.")
@click.option(
    "--compression",
    type=click.Choice(["none", "gzip", "snappy", "lz4", "zstd"]),
    default="none",
    show_default=True,
)
@click.option("--header", "-H", "headers", multiple=True, metavar="K=V", help="Repeatable.")
@click.pass_context
def produce(
    ctx: click.Context,
    topic: str,
    key: str | None,
    value: str | None,
    file_path: Path | None,
    count: int,
    rate: float | None,
    acks: str,
    key_separator: str | None,
    partition: int | None,
    compression: str,
    headers: tuple[str, ...],
) -> None:
    """Produce keyed messages, printing key -> partition -> leader first.

    With neither --value nor --file, records are read from stdin, one per line (UTF-8). Keys
    go where the Java client's default partitioner (murmur2) puts them. Exits 1 when the input
    is refused (nothing sent) and 2 when some records failed or have an unknown outcome.
    """
    from kconsole.cluster import produce as pr
    from kconsole.observer import ClusterObserver

    settings: Settings = ctx.obj["settings"]
    try:
        if settings.read_only:
            raise ReadOnlyError(f"read-only mode: refusing to produce to {topic}")
        if value is not None and file_path is not None:
            raise pr.ProduceError("give --value or --file, not both")
        if key is not None and key_separator is not None:
            raise pr.ProduceError("--key and --key-separator exclude each other")
        hdrs = [pr.parse_header(h) for h in headers]
        kbytes = key.encode() if key is not None else None
        records: list[pr.Record]
        no_sep = 0
        if value is not None or file_path is not None:
            if key_separator is not None:
                raise pr.ProduceError("--key-separator applies to stdin input only")
            pr.validate(topic, limits=None, count=count, rate=rate, partition=partition)
            try:
                data = value.encode() if value is not None else file_path.read_bytes()  # type: ignore[union-attr]
            except OSError as exc:
                raise pr.ProduceError(f"cannot read {file_path}: {exc}") from exc
            records = [(kbytes, data, hdrs)] * count
        else:
            if count != 1:
                raise pr.ProduceError("--count applies to --value / --file, not to stdin input")
            pr.validate(topic, limits=None, rate=rate, partition=partition)
            raw = sys.stdin.buffer.read()
            lines = raw.split(b"\n")
            if lines and lines[-1] == b"":
                lines.pop()
            records = []
            for no, line in enumerate(lines, 1):
                k, v = pr.parse_line(pr.decode_text(line, f"stdin line {no}"), key_separator)
                if key_separator is not None and k is None:
                    no_sep += 1
                records.append((k.encode() if k is not None else kbytes, v.encode(), hdrs))
            if not records:
                raise pr.ProduceError("no records on stdin")
        limits = pr.read_topic_limits(settings, topic)
        pr.validate(
            topic,
            limits=limits,
            records=records[:1] if value is not None or file_path is not None else records,
            count=count,
            rate=rate,
            partition=partition,
            acks=acks,
            compression=compression,
        )
    except ClusterError as exc:
        _fail(exc)
        return

    snap = ClusterObserver(settings).read_once()
    distinct = list(dict.fromkeys(r[0] for r in records))
    for rkey in distinct[:10]:
        click.echo(pr.trace(snap, topic, rkey, partition).describe())
    if len(distinct) > 10:
        click.echo(f"... and {len(distinct) - 10} more keys")
    if no_sep:
        click.echo(f"note: {no_sep} lines without {key_separator!r}: sent with a null key")

    small = len(records) <= 20

    def progress(d: pr.Delivery) -> None:
        if not small:
            return
        k = "null" if d.key is None else d.key.decode("utf-8", "backslashreplace")
        if d.error is None:
            off = "?" if d.offset is None else d.offset
            lat = f"{d.latency_s * 1000:.1f} ms" if d.latency_s is not None else "-"
            click.echo(f"  #{d.index + 1} key {k} -> {topic}/{d.partition}@{off}  {lat}")
        else:
            click.echo(f"  #{d.index + 1} key {k} FAILED {d.error}: {d.reason}")

    try:
        result = Commands(None, read_only=settings.read_only).produce(
            settings,
            topic,
            records,
            acks=acks,
            rate=rate,
            compression=None if compression == "none" else compression,
            partition=partition,
            on_progress=progress,
            max_message_bytes=limits.max_message_bytes,
        )
    except ClusterError as exc:
        _fail(exc)
        return
    lat = result.latency()
    lat_s = (
        f", latency p50 {lat['p50']:.1f} ms p99 {lat['p99']:.1f} ms max {lat['max']:.1f} ms"
        if lat
        else ""
    )
    click.echo(
        f"sent {result.sent}, acked {len(result.acked)}, failed {len(result.failed)}"
        f"{' ' + str(result.failed_by_code) if result.failed else ''}, unknown "
        f"{len(result.unknown)}, {result.rate:.0f} msg/s{lat_s}"
    )
    for note in result.notes:
        click.echo(f"note: {note}")
    if not result.ok:
        sys.exit(2)


# ---------------------------------------------------------------------------------------------
# kconsole cluster ...
# ---------------------------------------------------------------------------------------------


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


def _local(ctx: click.Context) -> LocalCluster:
    try:
        return LocalCluster(ctx.obj["state_dir"])
    except ClusterError as exc:
        _fail(exc)
        raise  # unreachable


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
    try:
        current = LocalCluster(ctx.obj["state_dir"])
        base = current.spec
        overrides, zk_overrides = parse_set_options(sets)
        spec = LocalClusterSpec(
            brokers=brokers if brokers is not None else base.brokers,
            racks=racks if racks is not None else (base.racks if brokers is None else 0),
            zk_port=zk_port if zk_port is not None else base.zk_port,
            base_port=base_port if base_port is not None else base.base_port,
            overrides={**base.overrides, **overrides} if sets else base.overrides,
            zk_overrides={**base.zk_overrides, **zk_overrides} if sets else base.zk_overrides,
        )
        local = LocalCluster(ctx.obj["state_dir"], spec)
        if not jars.kafka_jars_ready(spec.kafka_version):
            click.echo(f"fetching Kafka {spec.kafka_version} jars with Maven (first run only)...")
        result = local.up(
            timeout=timeout, create_topic=not no_topic, progress=lambda m: click.echo(f"  {m}")
        )
    except ClusterError as exc:
        _fail(exc)
        return
    _print_up(local, result)


def _print_up(local: LocalCluster, result: UpResult) -> None:
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
@click.option("--purge", is_flag=True, help="Also delete the state dir (data, logs, configs).")
@click.pass_context
def down(ctx: click.Context, purge: bool) -> None:
    """Stop every broker, then ZooKeeper."""
    local = _local(ctx)
    t0 = time.monotonic()
    stopped = local.down(purge=purge)
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
            name = local.broker(int(target)).name
        except ValueError:
            _fail(ClusterError(f"TARGET is a broker id or 'zookeeper', not {target!r}"))
        except ClusterError as exc:
            _fail(exc)
    assert name is not None
    path = local.log_path(name)
    if not path.exists():
        _fail(ClusterError(f"no log yet at {path}"))
    for line in tail_lines(path, lines):
        click.echo(line)
    if follow:
        _follow(path)


def _follow(path: Path) -> None:
    """Print what is appended to `path` until Ctrl-C (tail -f)."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        fh.seek(0, 2)
        try:
            while True:
                line = fh.readline()
                if line:
                    click.echo(line, nl=False)
                else:
                    time.sleep(0.2)
        except KeyboardInterrupt:
            pass


def _confirm_on_terminal(prompt: str, expected: str) -> bool:
    if not sys.stdin.isatty():
        return False
    return click.prompt(prompt, default="", show_default=False).strip() == expected


def _broker_command(action: BrokerAction) -> click.Command:
    @click.argument("broker", type=int)
    @click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
    @click.pass_context
    def command(ctx: click.Context, broker: int, yes: bool) -> None:
        local = _local(ctx)
        commands = Commands(LocalBrokerControl(local), read_only=ctx.obj["read_only"])
        confirm = (lambda _p, _e: True) if yes else _confirm_on_terminal
        try:
            click.echo(commands.broker(action, broker, confirm))
        except ClusterError as exc:
            if not yes and not sys.stdin.isatty() and action.destructive:
                exc = ClusterError(f"{exc} (no terminal to ask; pass --yes)")
            _fail(exc)

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
        _fail(exc)
        return
    click.echo(f"Kafka {KAFKA_VERSION} jars: {lib} ({len(list(lib.glob('*.jar')))} jars)")


# ---------------------------------------------------------------------------------------------
# kconsole jobs ...
# ---------------------------------------------------------------------------------------------


@main.group()
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where runs and checkpoints live (default: the per-user state dir, KCONSOLE_STATE_DIR).",
)
@click.pass_context
def jobs(ctx: click.Context, state_dir: Path | None) -> None:
    """PySpark Structured Streaming jobs (jobs/*.py) as background processes.

    A job started here is detached: it keeps running after this command returns, until
    `kconsole jobs stop RUN_ID` (or `start --attach`, which stops it on Ctrl-C).
    """
    ctx.obj["jobs_state_dir"] = state_dir


def _jobs_manager(ctx: click.Context) -> JobManager:
    return JobManager(ctx.obj.get("jobs_state_dir"), ctx.obj["settings"])


@jobs.command("list")
@click.option("-v", "--verbose", is_flag=True, help="Also every option with its default.")
def jobs_list(verbose: bool) -> None:
    """The jobs there are, with their options."""
    try:
        specs = available_jobs()
    except ClusterError as exc:
        _fail(exc)
        return
    for spec in specs:
        click.echo(f"{spec.name:<18} {spec.description}")
        if verbose:
            for o in spec.options:
                default = "" if o.default in (None, [], "") else f" (default {o.default})"
                click.echo(f"    --opt {o.name}=...  {o.help}{default}")
    if not verbose:
        click.echo("(kconsole jobs list -v: every option; they are the scripts' own flags)")


@jobs.command("fetch")
def jobs_fetch() -> None:
    """Resolve Spark's Kafka connector for the installed pyspark into the cache (Maven, once)."""
    try:
        found = jars.ensure_spark_kafka_jars()
    except ClusterError as exc:
        _fail(exc)
        return
    click.echo(f"Spark Kafka connector ({jars.spark_kafka_coordinate()}): {found[0].parent}")
    for path in found:
        click.echo(f"  {path.name}")


def _parse_job_options(items: tuple[str, ...]) -> dict[str, str | list[str]]:
    out: dict[str, str | list[str]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ClusterError(f"--opt expects KEY=VALUE, got {item!r}")
        key = key.strip()
        if key in out:  # repeated: a list option such as conf or kafka-option
            prev = out[key]
            out[key] = [*(prev if isinstance(prev, list) else [prev]), value]
        else:
            out[key] = value
    return out


@jobs.command("start")
@click.argument("job")
@click.option(
    "--opt",
    "-o",
    "opts",
    multiple=True,
    metavar="KEY=VALUE",
    help="A job option, e.g. -o topic=test-topic -o trigger=1 (see jobs list -v). Repeatable.",
)
@click.option(
    "--detach/--attach",
    default=True,
    help="Detached (default): return at once, the job keeps running. Attached: print its "
    "progress here and stop it on Ctrl-C.",
)
@click.pass_context
def jobs_start(ctx: click.Context, job: str, opts: tuple[str, ...], detach: bool) -> None:
    """Start JOB in the background and print its run id."""
    settings: Settings = ctx.obj["settings"]
    manager = _jobs_manager(ctx)
    try:
        options = _parse_job_options(opts)
        run = Commands(None, read_only=settings.read_only).start_job(
            manager, job, options, detached=detach
        )
    except ClusterError as exc:
        _fail(exc)
        return
    click.echo(f"started {run.run_id} (pid {run.pid})")
    click.echo(f"  progress: {run.progress_path}")
    click.echo(f"  log:      {run.log_path}")
    if detach:
        click.echo(f"stop it with: kconsole jobs stop {run.run_id}")
        return
    try:
        _follow_run(manager, run.run_id)
    except KeyboardInterrupt:
        click.echo("stopping ...")
    finally:
        for final in manager.stop_attached():
            click.echo(_run_summary(final))
            if final.error:
                click.echo(f"  reason: {final.error}")


def _follow_run(manager: JobManager, run_id: str) -> None:
    shown = -1.0
    state = None
    while True:
        run = manager.get(run_id)
        if run.state != state:
            state = run.state
            click.echo(f"state: {state.value}")
        for p in run.history:
            if p.ts > shown:
                shown = p.ts
                click.echo(_progress_text(p))
        if not run.active:
            return
        time.sleep(0.5)


def _progress_text(p: JobProgress) -> str:
    rate = "-" if p.processed_rows_per_second is None else f"{p.processed_rows_per_second:.0f}"
    behind = "?" if p.offsets_behind is None else str(p.offsets_behind)
    took = "-" if p.batch_duration_ms is None else f"{p.batch_duration_ms} ms"
    return f"  batch {p.batch_id}: {p.input_rows} rows in {took}, {rate} rows/s, behind {behind}"


def _run_summary(run: JobRun) -> str:
    return f"{run.run_id}: {run.state.value}" + (
        f" (exit {run.exit_code})" if run.exit_code is not None else ""
    )


@jobs.command("stop")
@click.argument("run_id")
@click.option("--timeout", type=float, default=20.0, show_default=True, help="Then SIGKILL.")
@click.pass_context
def jobs_stop(ctx: click.Context, run_id: str, timeout: float) -> None:
    """Stop a run: SIGTERM (the query stops cleanly), SIGKILL after --timeout."""
    settings: Settings = ctx.obj["settings"]
    try:
        run = Commands(None, read_only=settings.read_only).stop_job(
            _jobs_manager(ctx), run_id, timeout_s=timeout
        )
    except ClusterError as exc:
        _fail(exc)
        return
    click.echo(_run_summary(run))


@jobs.command("status")
@click.argument("run_id", required=False)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--limit", type=int, default=20, show_default=True, help="The newest N runs.")
@click.pass_context
def jobs_status(ctx: click.Context, run_id: str | None, as_json: bool, limit: int) -> None:
    """Runs: state, pid, the newest batch, rows per second, offsets behind, and why it failed."""
    manager = _jobs_manager(ctx)
    try:
        runs = [manager.get(run_id)] if run_id else manager.runs()[-limit:]
    except ClusterError as exc:
        _fail(exc)
        return
    if as_json:
        click.echo(json.dumps([_run_json(r) for r in runs], indent=2, default=str))
        return
    if not runs:
        click.echo("no job runs yet (kconsole jobs start JOB)")
        return
    click.echo(
        f"{'run':<40} {'state':<9} {'pid':>7} {'batch':>6} {'rows/s':>8} {'behind':>8}  started"
    )
    for r in runs:
        p = r.latest
        rate = p.processed_rows_per_second if p else None
        click.echo(
            f"{r.run_id:<40} {r.state.value:<9} {r.pid or '-':>7} "
            f"{p.batch_id if p else '-':>6} {'-' if rate is None else f'{rate:.0f}':>8} "
            f"{'-' if r.offsets_behind is None else r.offsets_behind:>8}  "
            f"{time.strftime('%H:%M:%S', time.localtime(r.started_at))}"
        )
        if r.error:
            click.echo(f"    reason: {r.error}")
        for w in r.warnings:
            click.echo(f"    warning: {w}")
        if r.finding_counts:
            click.echo(f"    findings: {r.finding_counts}")


def _run_json(run: JobRun) -> dict[str, object]:
    p = run.latest
    return {
        "run_id": run.run_id,
        "job": run.job,
        "state": run.state.value,
        "pid": run.pid,
        "detached": run.detached,
        "started_at": run.started_at,
        "ended_at": run.ended_at,
        "exit_code": run.exit_code,
        "error": run.error,
        "options": run.options,
        "topic": run.topic,
        "group_id": run.group_id,
        "checkpoint": run.checkpoint,
        "output_dir": run.output_dir,
        "log": run.log_path,
        "progress": run.progress_path,
        "warnings": list(run.warnings),
        "findings": run.finding_counts,
        "latest": None
        if p is None
        else {
            "batch_id": p.batch_id,
            "input_rows": p.input_rows,
            "input_rows_per_second": p.input_rows_per_second,
            "processed_rows_per_second": p.processed_rows_per_second,
            "batch_duration_ms": p.batch_duration_ms,
            "offsets_behind": p.offsets_behind,
            "end_offsets": {f"{t}/{part}": off for (t, part), off in p.end_offsets.items()},
        },
    }


@jobs.command("logs")
@click.argument("run_id")
@click.option("-n", "--lines", type=int, default=50, show_default=True)
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines (Ctrl-C ends).")
@click.pass_context
def jobs_logs(ctx: click.Context, run_id: str, lines: int, follow: bool) -> None:
    """Print a run's log (Spark's and Kafka's stderr)."""
    manager = _jobs_manager(ctx)
    try:
        run = manager.get(run_id)
    except ClusterError as exc:
        _fail(exc)
        return
    for line in manager.log_tail(run.run_id, lines):
        click.echo(line)
    if follow:
        _follow(run.log_path)


if __name__ == "__main__":
    main()
