"""The `kconsole` group (global options, the console itself) and `describe`."""

from __future__ import annotations

import io
import logging
import sys
from pathlib import Path

import click

from kconsole import __version__, paths, secrets
from kconsole.cli.common import commands, fail, fail_config
from kconsole.config import BACKENDS, ConfigError, Settings, load_settings
from kconsole.errors import ClusterError

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def _quiet_libraries() -> None:
    # kazoo logs every dropped connection as a warning; a stopped ZooKeeper is reported by us.
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    # No log line shows a secret kconsole has resolved (a password, a token, a key).
    for root_handler in logging.getLogger().handlers:
        if not any(isinstance(f, secrets.ScrubFilter) for f in root_handler.filters):
            root_handler.addFilter(secrets.ScrubFilter())
    logging.getLogger("kazoo").setLevel(logging.CRITICAL)
    # librdkafka's connection errors are expected while a drill has a broker down.
    logging.getLogger("kconsole.rdkafka").setLevel(logging.CRITICAL)
    # kafka-python (groups, configs, reassignment) logs every request a paused or stopped broker
    # does not answer as an ERROR; kconsole says what failed itself. Its lines go to the log
    # file the console keeps, not into a command's output.
    kafka_python = logging.getLogger("kafka")
    kafka_python.setLevel(logging.WARNING)
    kafka_python.propagate = False
    if not kafka_python.handlers:  # until _library_log: nowhere (not Python's stderr fallback)
        kafka_python.addHandler(logging.NullHandler())


def _library_log() -> None:
    """kafka-python's lines into the state dir's log file; only once the configuration is
    valid (a refused configuration touches nothing, not even where the log goes: a line logged
    later would make the state dir it named)."""
    kafka_python = logging.getLogger("kafka")
    for old in [h for h in kafka_python.handlers if isinstance(h, _LibraryLog)]:
        kafka_python.removeHandler(old)
        old.close()
    handler = _LibraryLog(paths.state_dir() / "kconsole.log", delay=True)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler.addFilter(secrets.ScrubFilter())
    kafka_python.addHandler(handler)


class _LibraryLog(logging.FileHandler):
    """The log file, made (with its directory) only when a first line is written."""

    def _open(self) -> io.TextIOWrapper:
        Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        return super()._open()


@click.group(invoke_without_command=True)
@click.version_option(__version__, prog_name="kconsole")
@click.option(
    "--cluster",
    "cluster_name",
    default=None,
    metavar="NAME",
    help="A [clusters.NAME] entry of the config file (KCONSOLE_CLUSTER).",
)
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
    "--bootstrap-controller",
    default=None,
    metavar="HOST:PORT,...",
    help="KRaft: read the metadata quorum from these controllers directly (KIP-919), so it is "
    "shown while every broker is down (KCONSOLE_BOOTSTRAP_CONTROLLER).",
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
    help="How brokers are controlled, by the console, drills and `cluster stop|kill|pause|resume|"
    "start` (default auto: the local cluster if kconsole started it and a process of it runs, "
    "else the compose project's containers if they publish the bootstrap ports; docker: the "
    "compose project's containers).",
)
@click.option(
    "--compose-project",
    default=None,
    metavar="NAME",
    help="The docker compose project whose broker containers the docker backend acts on "
    "(KCONSOLE_COMPOSE_PROJECT; default COMPOSE_PROJECT_NAME, else kconsole).",
)
@click.option("--refresh", type=float, default=None, help="Seconds between cluster polls (1).")
@click.option(
    "--group-refresh", type=float, default=None, help="Seconds between consumer-group polls (2)."
)
@click.option(
    "--read-only",
    is_flag=True,
    default=None,
    help="Refuse every modifying action (brokers, cluster, produce, group tails, jobs, drills); "
    "refusals exit 4.",
)
@click.pass_context
def main(
    ctx: click.Context,
    cluster_name: str | None,
    bootstrap: str | None,
    zookeeper: str | None,
    bootstrap_controller: str | None,
    client_props: tuple[str, ...],
    config_path: Path | None,
    backend: str | None,
    compose_project: str | None,
    refresh: float | None,
    group_refresh: float | None,
    read_only: bool | None,
) -> None:
    """A keyboard-driven console for operating and drilling Apache Kafka clusters.

    With no command it opens the console on the cluster (by default the embedded local one).
    """
    _quiet_libraries()
    ctx.ensure_object(dict)
    from kconsole.cluster.security.clients import check_client_properties

    try:  # every problem at once, each with where it came from; before anything starts
        settings = load_settings(
            config_path=config_path,
            cluster=cluster_name,
            bootstrap=bootstrap,
            zookeeper=zookeeper,
            bootstrap_controller=bootstrap_controller,
            client_props=client_props,
            backend=backend,
            compose_project=compose_project,
            read_only=read_only,
            refresh=refresh,
            group_refresh=group_refresh,
            # before any client exists: a refused property is named, with where it came from
            check_client=check_client_properties,
        )
    except ConfigError as exc:
        fail_config(exc)
    except ClusterError as exc:
        fail(exc)
    _library_log()
    from kconsole.commands.local_security import with_local_security

    settings = with_local_security(settings)  # a secured local cluster, reached with no flags
    ctx.obj["settings"] = settings
    ctx.obj["read_only"] = settings.read_only
    if ctx.invoked_subcommand is None:
        _run_console(ctx, settings)


def log_to_file(log_file: Path) -> logging.Handler:
    """The console's log: the screen belongs to the console, so every library's log (warnings
    and worse) goes to `log_file` instead, secrets scrubbed. Returns the handler."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.FileHandler(log_file)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler.addFilter(secrets.ScrubFilter())
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    return handler


def _run_console(ctx: click.Context, settings: Settings) -> None:
    from kconsole.observer import ClusterObserver

    log_to_file(paths.state_dir() / "kconsole.log")
    door = commands(ctx, origin="console")
    # Picks the broker control now, before the screen asks whether its keys are available.
    observer = ClusterObserver(
        settings,
        proc_states=door.broker_states(),
        controller_states=door.controller_states(),
        start_hint=door.start_hint,
        net_faults=door.network_faults(),
        resignations=door.controller_resignations(),
    )
    from kconsole.ui.app import make_app

    app = make_app(
        observer,
        commands=door,
        refresh_s=settings.refresh_s,
        group_refresh_s=settings.group_refresh_s,
        settings=settings,
        freeze_gc=True,
    )
    app.run()


EXIT_NOT_ASKED = 2  # describe: the cluster could not be asked (not reached, or login refused)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="The whole snapshot as JSON.")
@click.option(
    "--sample",
    "sample_s",
    type=click.FloatRange(min=0, max=3600),
    default=0.0,
    metavar="SECONDS",
    help="Read the offsets for this long and add the rates over it: records and bytes in per "
    "partition, topic and broker, each group's consumption, lag trend and status.",
)
@click.pass_context
def describe(ctx: click.Context, as_json: bool, sample_s: float) -> None:
    """Print the cluster once: brokers, controller, partitions with flags, groups with lag
    (with --sample, how fast each moves). Exits 2 when the cluster could not be asked: nothing
    answered, or it refused the login or the TLS handshake (said on stderr too, with how to
    start the local cluster if it is that)."""
    from kconsole.describe import not_asked, render_text
    from kconsole.observer import ClusterObserver

    settings: Settings = ctx.obj["settings"]
    door = commands(ctx)
    observer = ClusterObserver(
        settings,
        proc_states=door.broker_states(),
        controller_states=door.controller_states(),
        start_hint=door.start_hint,
        net_faults=door.network_faults(),
    )
    snap = observer.read_once(sample_s)
    if as_json:
        click.echo(secrets.scrub(snap.to_json(indent=2, default=str)))
    else:
        click.echo(secrets.scrub(render_text(snap)))
    why = not_asked(snap)
    if why or not any(s.ok for s in snap.sources):
        if why:
            click.echo(secrets.scrub(f"error: {why}"), err=True)
        sys.exit(EXIT_NOT_ASKED)
