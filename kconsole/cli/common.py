"""What every subcommand shares: failing with the right exit code (the error never shows a
secret: kconsole.secrets.scrub), asking for a typed
confirmation on the terminal, the command layer for these settings, following a file."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import NoReturn

import click

from kconsole import secrets
from kconsole.commands import Commands, Confirm, yes
from kconsole.errors import NotConfirmed, ReadOnlyError

EXIT_ERROR = 1
EXIT_CONFIG = 2  # the settings themselves (a bad client property): nothing was started
EXIT_READ_ONLY = 4  # refused by read-only mode: distinct from every other failure


def fail(exc: Exception) -> NoReturn:
    """Print `exc` and exit: 4 when read-only refused it, 1 otherwise."""
    if isinstance(exc, NotConfirmed) and not sys.stdin.isatty():
        click.echo(secrets.scrub(f"error: {exc} (no terminal to ask; pass --yes)"), err=True)
    else:
        click.echo(secrets.scrub(f"error: {exc}"), err=True)
    sys.exit(EXIT_READ_ONLY if isinstance(exc, ReadOnlyError) else EXIT_ERROR)


def fail_config(exc: Exception) -> NoReturn:
    """Print a settings error and exit 2 (nothing was started)."""
    click.echo(secrets.scrub(f"error: {exc}"), err=True)
    sys.exit(EXIT_CONFIG)


def confirm_on_terminal(prompt: str, expected: str) -> bool:
    """Ask on the terminal for `expected` to be typed; False without a terminal."""
    if not sys.stdin.isatty():
        return False
    *context, question = prompt.split("\n")
    for line in context:  # e.g. the blast radius
        click.echo(line)
    return click.prompt(question, default="", show_default=False).strip() == expected


def confirmation(assume_yes: bool) -> Confirm:
    """--yes confirms; otherwise the user types the answer on the terminal."""
    return yes if assume_yes else confirm_on_terminal


def commands(ctx: click.Context, *, backend: str | None = None, origin: str = "cli") -> Commands:
    """The command layer for this invocation's settings (read-only decided there), holding
    every backend: broker control (`backend`, default the settings' choice), jobs (in
    `--state-dir` of `kconsole jobs`), reassignment, tails, and the local cluster (in
    `--state-dir` of `kconsole cluster`). Subcommands pass data to it and read through its
    views. Made once per invocation (a `--wait` reads through it every two seconds)."""
    made: dict[tuple[str | None, str], Commands] = ctx.obj.setdefault("commands", {})
    if (backend, origin) not in made:
        made[(backend, origin)] = Commands.for_settings(
            ctx.obj["settings"],
            backend=backend,
            cluster_dir=ctx.obj.get("state_dir"),
            jobs_state_dir=ctx.obj.get("jobs_state_dir"),
            origin=origin,
        )
    return made[(backend, origin)]


def follow(path: Path) -> None:
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
