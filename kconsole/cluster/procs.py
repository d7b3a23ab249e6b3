"""Processes kconsole started: pid files that also record the start time, so a recycled pid is
never mistaken for ours, and signals sent only to those exact processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import psutil

from kconsole.cluster.logs import tail_lines
from kconsole.cluster.values import ProcState


@dataclass(frozen=True)
class PidRecord:
    pid: int
    create_time: float

    def to_json(self) -> str:
        return json.dumps({"pid": self.pid, "create_time": self.create_time})


class ManagedProcess:
    """One JVM process (a broker or ZooKeeper) known by its pid file."""

    def __init__(self, name: str, pid_file: Path, log_file: Path):
        self.name = name
        self.pid_file = pid_file
        self.log_file = log_file
        self._popen: subprocess.Popen[bytes] | None = None

    # -- identity -------------------------------------------------------------------------
    def record(self) -> PidRecord | None:
        """The pid file's content, or None."""
        try:
            data = json.loads(self.pid_file.read_text())
            return PidRecord(int(data["pid"]), float(data["create_time"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def process(self) -> psutil.Process | None:
        """The live process named by the pid file, only if it is the one we started."""
        if self._popen is not None:
            self._popen.poll()  # reap our own child so a dead one is not a zombie
        rec = self.record()
        if rec is None:
            return None
        try:
            proc = psutil.Process(rec.pid)
            if abs(proc.create_time() - rec.create_time) > 0.5:
                return None  # the pid was recycled by an unrelated process
            if proc.status() == psutil.STATUS_ZOMBIE:
                return None
            return proc
        except psutil.Error:
            return None

    @property
    def pid(self) -> int | None:
        proc = self.process()
        return proc.pid if proc else None

    def state(self) -> ProcState:
        proc = self.process()
        if proc is None:
            return ProcState.STOPPED
        try:
            status = proc.status()
        except psutil.Error:
            return ProcState.STOPPED
        return ProcState.PAUSED if status == psutil.STATUS_STOPPED else ProcState.RUNNING

    # -- lifecycle ------------------------------------------------------------------------
    def spawn(
        self, argv: list[str], *, cwd: Path, env: dict[str, str], stdout_file: Path | None = None
    ) -> int:
        """Start the process detached (own session) with output appended to its log file
        (stdout to `stdout_file` instead, when given)."""
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_file, "ab") as log, open(stdout_file or os.devnull, "ab") as out:
            log.write(f"\n=== kconsole: starting {self.name} at {time.ctime()} ===\n".encode())
            log.flush()
            popen = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out if stdout_file is not None else log,
                stderr=log if stdout_file is not None else subprocess.STDOUT,
                start_new_session=True,
            )
        self._popen = popen
        # Its identity first, while it cannot be reaped: a process that exits at once (a job
        # that fails on its arguments) is reaped by the thread below the moment it does, and
        # its pid is then nobody's to read.
        rec = PidRecord(popen.pid, psutil.Process(popen.pid).create_time())
        # Reap it the moment it exits, whoever stops it (this object, another one, another
        # kconsole process): a child nobody waits for stays `[java] <defunct>` until its
        # parent next asks, which for a console started hours ago may be never.
        threading.Thread(target=popen.wait, name=f"reap-{self.name}", daemon=True).start()
        tmp = self.pid_file.with_suffix(".tmp")
        tmp.write_text(rec.to_json())
        tmp.replace(self.pid_file)
        return popen.pid

    def signal(self, sig: signal.Signals) -> bool:
        """Send `sig` to our process; False if it is not running."""
        proc = self.process()
        if proc is None:
            return False
        try:
            proc.send_signal(sig)
        except psutil.NoSuchProcess:
            return False
        return True

    def wait_exit(self, timeout: float) -> bool:
        """Wait until the process is gone; True if it exited within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process() is None and not self._threads_exiting():
                self._forget()
                return True
            time.sleep(0.02)
        return self.process() is None

    def _threads_exiting(self) -> bool:
        """Whether our process's main thread is a zombie while other threads are still exiting.

        psutil calls the process gone then, but the JVM still holds its files and listening
        sockets until its last thread is gone: a broker started again at once would find its
        port taken."""
        rec = self.record()
        if rec is None:
            return False
        try:
            proc = psutil.Process(rec.pid)
            if abs(proc.create_time() - rec.create_time) > 0.5:
                return False
            return len(os.listdir(f"/proc/{rec.pid}/task")) > 1
        except (OSError, psutil.Error):
            return False  # gone, or not Linux (nothing to wait for there)

    def terminate(self, timeout: float) -> bool:
        """SIGTERM (resuming it first if paused, or it could not act on the signal)."""
        if not self.signal(signal.SIGTERM):
            self._forget()
            return True
        self.signal(signal.SIGCONT)
        return self.wait_exit(timeout)

    def kill(self, timeout: float = 10.0) -> bool:
        """SIGKILL and wait for the exit."""
        if not self.signal(signal.SIGKILL):
            self._forget()
            return True
        return self.wait_exit(timeout)

    def _forget(self) -> None:
        if self._popen is not None:
            self._popen.poll()
        if self.process() is None:
            self.pid_file.unlink(missing_ok=True)

    def exit_code(self) -> int | None:
        """Exit status if we are its parent and it has exited (None until it is reaped)."""
        if self._popen is None:
            return None
        code = self._popen.poll()
        if code is None and _exited(self._popen.pid):
            # The reaper thread (see spawn) holds the Popen's wait lock while it waits, so
            # poll() says None until that thread has run again and stored the status: under
            # load that can be a while after the child died (seen: a zombie, and poll() None).
            # It has exited, so the status comes; wait for it rather than say "still running".
            with suppress(subprocess.TimeoutExpired):
                code = self._popen.wait(timeout=_REAP_WAIT)
        return code

    def log_tail(self, lines: int = 30) -> list[str]:
        """The last lines of the process log (empty if none)."""
        return tail_lines(self.log_file, lines)


_REAP_WAIT = 30.0  # seconds: a bound only; an exited child's status is stored at once


def _exited(pid: int) -> bool:
    """Whether our child `pid` has exited: a zombie, or reaped already."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
    except psutil.Error:
        return False


def wait_exited(proc: psutil.Process, timeout: float) -> bool:
    """Wait until `proc` has exited: gone, or a zombie whose threads have all exited (it then
    holds no file, socket or memory). True if so within `timeout` seconds.

    For a process that is not our child (a job's JVM, whose parent the driver has exited),
    psutil's wait() lasts until whoever inherited it reaps it: PID 1's own pace, seconds on
    some machines, while the process was long done."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if (
                proc.status() == psutil.STATUS_ZOMBIE
                and len(os.listdir(f"/proc/{proc.pid}/task")) <= 1
            ):
                return True
        except (OSError, psutil.NoSuchProcess):
            return True  # gone (and, if it was recycled, ours is gone too)
        except psutil.Error:
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def is_zombie(rec: PidRecord) -> bool:
    """Whether the process `rec` names has exited but its parent has not reaped it yet."""
    try:
        proc = psutil.Process(rec.pid)
        return (
            abs(proc.create_time() - rec.create_time) <= 0.5
            and proc.status() == psutil.STATUS_ZOMBIE
        )
    except psutil.Error:
        return False


def wait_reaped(records: list[PidRecord | None], timeout: float) -> list[PidRecord]:
    """Wait until none of the exited processes in `records` is a zombie any more; those still
    unreaped after `timeout` seconds.

    A JVM started by a `kconsole cluster up` that has since returned is the child of init (or
    of a subreaper), and only its parent can reap it: stopped from here, it stays
    `[java] <defunct>` until that parent gets to it (some inits reap orphans only every second
    or so). Our own children are reaped at once (see ManagedProcess.spawn)."""
    deadline = time.monotonic() + timeout
    left = [rec for rec in records if rec is not None]
    while True:
        left = [rec for rec in left if is_zombie(rec)]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.02)
