"""`kconsole audit`: what every modifying command did, was refused, or failed, and who asked."""

from __future__ import annotations

import json

import click

from kconsole.cli.common import fail
from kconsole.cli.main import main
from kconsole.commands import AuditLog
from kconsole.errors import ClusterError


@main.command()
@click.option("--json", "as_json", is_flag=True, help="JSON lines, as stored.")
@click.option("-n", "--limit", type=int, default=50, show_default=True, help="The newest N.")
@click.option("--path", "show_path", is_flag=True, help="Print where the audit log is, and exit.")
def audit(as_json: bool, limit: int, show_path: bool) -> None:
    """The audit log: time, user (the OS user, and the cluster's principal), command, target,
    outcome (done / refused / failed)."""
    log = AuditLog()
    if show_path:
        click.echo(str(log.path))
        return
    try:
        entries = list(log.entries())[-limit:] if limit > 0 else list(log.entries())
    except ClusterError as exc:
        fail(exc)
    if as_json:
        for entry in entries:
            click.echo(json.dumps(entry, ensure_ascii=False))
        return
    if not entries:
        click.echo(f"no entries yet ({log.path})")
        return
    click.echo(
        f"{'time':<23} {'user':<10} {'principal':<16} {'command':<14} {'target':<28} "
        f"{'outcome':<8} result / error"
    )
    for e in entries:
        when = str(e.get("time") or "?").replace("T", " ")[:23]
        result = e.get("result") or {}
        said = e.get("error") or ", ".join(f"{k} {v}" for k, v in result.items())
        click.echo(
            f"{when:<23} {e.get('user') or '?'!s:<10} {_who(e.get('principal'))!s:<16} "
            f"{e.get('command')!s:<14} "
            f"{e.get('target') or ''!s:<28} {e.get('outcome')!s:<8} {said}"
        )


def _who(principal: object) -> str:
    """The principal's name without its (how) part: 'User:kconsole (SCRAM-SHA-512)' ->
    'User:kconsole' (--json has it whole); '-' for entries written before it was logged."""
    if not principal:
        return "-"
    return str(principal).split(" (", 1)[0]
