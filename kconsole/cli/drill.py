"""`kconsole drill run`: a whole failover drill, headless, through the command layer."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kconsole.cli.cluster import broker_command
from kconsole.cli.common import EXIT_ERROR, commands, confirmation, fail
from kconsole.cli.main import main
from kconsole.cluster.values import BrokerAction
from kconsole.errors import ClusterError
from kconsole.faults import FAULT_KINDS, fault_names


@main.group()
def drill() -> None:
    """Failover drills: a workload, a fault, a timeline with durations, an acked-loss audit."""


@drill.command("run")
@click.option(
    "--fault",
    type=click.Choice(fault_names()),
    required=True,
    help="; ".join(f"{k.name}: {k.signal}" for k in FAULT_KINDS) + ".",
)
@click.option(
    "--target",
    required=True,
    metavar="TARGET",
    help="controller (or active-controller: on KRaft the quorum leader), controller:ID (a "
    "KRaft voter), quorum-majority (KRaft: the quorum leader and enough voters for a "
    "majority), broker:ID, or leader:TOPIC/PARTITION.",
)
@click.option(
    "--from",
    "cut_from",
    metavar="SIDES",
    help="--fault partition: what the target is cut from, comma-separated: zookeeper, quorum, "
    "brokers, clients, or nodes (2, broker:2, controller:1001).",
)
@click.option(
    "--one-way",
    is_flag=True,
    help="--fault partition: drop only what the target sends on those links.",
)
@click.option(
    "--slow-rate",
    type=int,
    metavar="BYTES",
    help="--fault slow: bytes per second each way on the target's links to --from (default: "
    "the brokers); what exceeds it is dropped. At least 65,536 (64 KiB/s: a lower cap would "
    "not hold).",
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
    help="Seconds between the fault and the restore (start / resume), counted from the moment "
    "the fault is applied; the report gives the time it really took.",
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
@click.option(
    "--message-bytes",
    type=int,
    default=0,
    metavar="BYTES",
    help="Pad each message's value to BYTES (0: as it comes, about 80 B): a load in bytes per "
    "second, which is what a slow link falls behind on.",
)
@click.option(
    "--yes",
    "assume_yes",
    is_flag=True,
    help="Do not ask (the drill applies its fault to a node): needed without a terminal.",
)
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
    cut_from: str | None,
    one_way: bool,
    slow_rate: int | None,
    acks: str,
    duration: float,
    restore_after: float,
    settle_timeout: float,
    no_wait_preferred: bool,
    rate: float,
    message_bytes: int,
    assume_yes: bool,
    topic: str,
    report_path: Path,
) -> None:
    """Run a whole drill without the UI. Exits 3 when acknowledged messages were lost, 1 when
    it could not run or a node could not be restored (the report says which, and what to run).

    It shows the blast radius and asks for the target node ids before anything is written
    (--yes skips that); read-only mode refuses it before anything starts.
    """
    from kconsole.cluster.values import NetLinks
    from kconsole.drills.spec import DrillSpec

    try:
        if one_way and cut_from is None:
            raise ClusterError("--one-way is a partition's: give --from too")
        if (slow_rate is not None) is not (fault == "slow"):
            raise ClusterError("--fault slow takes --slow-rate BYTES (and only it does)")
        if fault == "slow" and cut_from is None:
            cut_from = "brokers"
        try:
            links = NetLinks.parse(cut_from, one_way, slow_rate) if cut_from is not None else None
        except ValueError as exc:
            raise ClusterError(str(exc)) from None
        spec = DrillSpec(
            fault=fault,
            target=target,
            acks=acks,  # type: ignore[arg-type]
            duration_s=duration,
            restore_after_s=restore_after,
            settle_timeout_s=settle_timeout,
            wait_preferred=not no_wait_preferred,
            rate=rate,
            message_bytes=message_bytes,
            topic=topic,
            links=links,
        )
        report = commands(ctx).drill_run(spec, confirmation(assume_yes), progress=click.echo)
    except ClusterError as exc:
        fail(exc)
    json_path, md_path = report.write(report_path)
    click.echo("")
    for m in report.measurements:
        took = f"{m.seconds:.2f} s" if m.seconds is not None else (m.note or "did not happen")
        click.echo(f"  {m.name}: {took}   (predicted: {m.predicted})")
    a = report.audit.to_dict()
    click.echo(
        f"  acked {a.get('acked')}, lost {len(a.get('lost', []))}, duplicates "
        f"{len(a.get('duplicates', []))}, failed {a.get('failed_by_code')}"
    )
    for line in report.explained:
        click.echo(f"  why: {line}")
    click.echo(f"report: {json_path} and {md_path}")
    for line in report.not_restored:
        click.echo(f"RESTORE FAILED: {line}", err=True)
    if not report.ok:
        click.echo("ACKNOWLEDGED MESSAGES WERE LOST", err=True)
        sys.exit(3)
    if not report.restored:
        sys.exit(EXIT_ERROR)


# `kconsole drill heal [NODE | --all]`: a drill's fault that outlived it (the watchdog heals one
# whose process was killed; this is for the rest), the same command as `kconsole cluster heal`
# on the local cluster of the configured state dir.
drill.add_command(broker_command(BrokerAction.HEAL))
