"""The door itself: refuse, confirm, run, log. Every Commands method goes through `Door._run`.

In this order, before any side effect: read-only refuses the command (with the reason: which
flag, variable or config entry), a missing backend refuses it, a destructive one needs its typed
confirmation; then it runs, and its outcome — done, refused, failed — is appended to the audit
log. A command whose effect is only known later (a group tail's join) logs it with `record`
once it is known, never before.

Kept apart from bus.py (which holds the backends) so the reassignment commands can build on it
without importing the module that imports them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kconsole.commands.auditlog import AuditLog
from kconsole.commands.registry import spec as command_spec
from kconsole.errors import ClusterError, NotConfirmed, ReadOnlyError, Refused

T = TypeVar("T")

# Asked with a prompt and the answer expected; True only when the user typed exactly that.
Confirm = Callable[[str, str], bool]


def yes(_prompt: str, _expected: str) -> bool:
    """The confirmation of `--yes`: already given."""
    return True


def never(_prompt: str, _expected: str) -> bool:
    """No confirmation can be had (no terminal, no dialog)."""
    return False


@dataclass(kw_only=True)
class Door:
    """Read-only, confirmation and the audit log; subclasses say which backend each command
    needs (`missing_backend`)."""

    read_only: bool = False
    read_only_reason: str = ""  # who asked for read-only, shown in every refusal
    audit: AuditLog | None = field(default_factory=AuditLog)
    bootstrap: str = ""
    cluster_id: Callable[[], str | None] | None = None  # asked lazily, for the audit log
    # Who the cluster knows kconsole as (SASL user, certificate subject), for the audit log.
    principal: Callable[[], str | None] | None = None
    origin: str = "cli"  # cli | console: who asked, for the audit log

    def missing_backend(self, name: str) -> str:
        """Why command `name` has no backend to run on ('' when it has one)."""
        return ""

    def refusal(self, name: str) -> str:
        """Why command `name` would be refused right now ('' when it would run)."""
        command_spec(name)
        if self.read_only:
            why = self.read_only_reason or "read-only mode"
            return f"read-only mode ({why})" if why != "read-only mode" else why
        return self.missing_backend(name)

    def refuse(self, name: str, target: str, args: Mapping[str, Any] | None = None) -> None:
        """Raise (and log) the refusal of `name` on `target`, if it would be refused."""
        why = self.refusal(name)
        if not why:
            return
        verb = command_spec(name).verb
        exc: ClusterError
        if self.read_only:
            exc = ReadOnlyError(f"{why}: refusing to {verb} {target}")
        else:
            exc = Refused(why)
        self.record(name, target, args or {}, "refused", exc.message)
        raise exc

    def _run(
        self,
        name: str,
        target: str,
        args: Mapping[str, Any],
        do: Callable[[], T],
        *,
        confirm: Confirm | None = None,
        expected: str | None = None,
        prompt: str = "",
        result: Callable[[T], Mapping[str, Any]] | None = None,
    ) -> T:
        """Refuse, confirm, run and log command `name`. A destructive command with
        `expected=None` asks for its confirmation inside `do` (it raises NotConfirmed).
        `result` turns what `do` returned into the counts the audit line carries."""
        spec = command_spec(name)
        self.refuse(name, target, args)
        question = prompt or f"{spec.summary}: {target}?"
        if (
            spec.destructive
            and expected is not None
            and (confirm is None or not confirm(question, expected))
        ):
            exc = NotConfirmed(f"{name} {target}: not confirmed")
            self.record(name, target, args, "refused", exc.message)
            raise exc
        try:
            out = do()
        except Refused as exc:  # e.g. a drill not confirmed, a plan that does not fit
            self.record(name, target, args, "refused", exc.message)
            raise
        except BaseException as exc:
            self.record(name, target, args, "failed", f"{type(exc).__name__}: {exc}")
            raise
        counts: Mapping[str, Any] | None = None
        if result is not None:
            try:
                counts = result(out)
            except Exception as exc:  # the effect happened: the log must still say so
                counts = {"unreadable": f"{type(exc).__name__}: {exc}"}
        self.record(name, target, args, "done", result=counts)
        return out

    def record(
        self,
        name: str,
        target: str,
        args: Mapping[str, Any],
        outcome: str,
        error: str = "",
        *,
        result: Mapping[str, Any] | None = None,
    ) -> None:
        """Append one outcome of command `name` to the audit log (no log: nothing)."""
        if self.audit is None:
            return
        cid = principal = None
        if self.cluster_id is not None:
            try:
                cid = self.cluster_id()
            except Exception:
                cid = None
        if self.principal is not None:
            try:
                principal = self.principal()
            except Exception as exc:
                principal = f"unknown ({type(exc).__name__})"
        self.audit.append(
            command=name,
            target=target,
            args=args,
            outcome=outcome,
            error=error,
            result=result,
            cluster_id=cid,
            bootstrap=self.bootstrap,
            origin=self.origin,
            principal=principal,
        )
