"""Process identity and signals, on real (harmless) child processes."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from kconsole.cluster import jars
from kconsole.cluster.errors import PortInUse, ToolMissing
from kconsole.cluster.local.cluster import (
    REAP_WAIT_S,
    LocalCluster,
    LocalClusterSpec,
    check_port_free,
)
from kconsole.cluster.logs import tail_lines
from kconsole.cluster.procs import ManagedProcess, wait_reaped
from kconsole.cluster.values import ProcState
from tests.processes import zombie_children
from tests.waiting import wait_until

SLEEPER = [sys.executable, "-c", "import signal; signal.pause()"]  # waits to be signalled


@pytest.fixture
def proc(tmp_path: Path):
    p = ManagedProcess("sleeper", tmp_path / "x.pid", tmp_path / "x.log")
    yield p
    p.kill()


def test_spawn_pause_resume_kill(proc: ManagedProcess, tmp_path: Path) -> None:
    pid = proc.spawn(SLEEPER, cwd=tmp_path, env=dict(os.environ))
    assert proc.pid == pid and proc.state() is ProcState.RUNNING
    assert proc.signal(__import__("signal").SIGSTOP)
    from tests.waiting import wait_until

    wait_until(lambda: proc.state() is ProcState.PAUSED, 5, "paused")
    proc.signal(__import__("signal").SIGCONT)
    wait_until(lambda: proc.state() is ProcState.RUNNING, 5, "running")
    assert proc.kill()
    assert proc.state() is ProcState.STOPPED
    assert not proc.pid_file.exists()


def test_terminate_a_paused_process(proc: ManagedProcess, tmp_path: Path) -> None:
    """SIGTERM to a frozen process would wait forever; terminate resumes it first."""
    import signal

    proc.spawn(SLEEPER, cwd=tmp_path, env=dict(os.environ))
    proc.signal(signal.SIGSTOP)
    assert proc.terminate(timeout=10)
    assert proc.state() is ProcState.STOPPED


def test_recycled_pid_is_not_ours(tmp_path: Path) -> None:
    """A pid file whose start time does not match the live process is ignored (never signalled)."""
    pid_file = tmp_path / "x.pid"
    pid_file.write_text(json.dumps({"pid": os.getpid(), "create_time": 12345.0}))
    p = ManagedProcess("stale", pid_file, tmp_path / "x.log")
    assert p.process() is None
    assert p.state() is ProcState.STOPPED
    assert p.signal(__import__("signal").SIGTERM) is False  # and this test is still alive


def test_garbage_pid_file(tmp_path: Path) -> None:
    (tmp_path / "x.pid").write_text("garbage")
    assert ManagedProcess("g", tmp_path / "x.pid", tmp_path / "x.log").state() is ProcState.STOPPED


def test_log_is_appended_and_tailed(proc: ManagedProcess, tmp_path: Path) -> None:
    argv = [sys.executable, "-c", "print('hello from child')"]
    proc.spawn(argv, cwd=tmp_path, env=dict(os.environ))
    assert proc.wait_exit(10)
    assert proc.exit_code() == 0
    assert "hello from child" in tail_lines(proc.log_file, 5)


def test_exit_code_waits_for_the_status_of_an_exited_child_the_reaper_has_not_stored(
    proc: ManagedProcess, tmp_path: Path
) -> None:
    """The reaper thread holds the Popen's wait lock while it waits: a child that has died but
    whose status that thread has not stored yet (it was not scheduled, under load) is a zombie
    and poll() says None. exit_code() must wait for the status, not report None (seen once in
    a fresh-clone run with a busy core: `assert proc.exit_code() == 0` got None)."""
    import threading

    popen = subprocess.Popen([sys.executable, "-c", "pass"], cwd=tmp_path)
    proc._popen = popen
    held, release = threading.Event(), threading.Event()

    def reaper_not_scheduled() -> None:
        with popen._waitpid_lock:  # type: ignore[attr-defined]
            held.set()
            release.wait(10)

    holder = threading.Thread(target=reaper_not_scheduled)
    holder.start()
    try:
        assert held.wait(5)
        wait_until(
            lambda: psutil.Process(popen.pid).status() == psutil.STATUS_ZOMBIE,
            timeout=10,
            what="the child exited (a zombie nobody has reaped yet)",
        )
        assert popen.poll() is None  # what the racing reaper makes poll() say
        threading.Timer(0.3, release.set).start()
        assert proc.exit_code() == 0
    finally:
        release.set()
        holder.join(5)


def test_a_process_that_exits_at_once_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child that exits before spawn returns (a job failing on its arguments, on a busy
    machine) may be reaped by its reaper thread before spawn has read its identity: spawn reads
    it first. Here the reaper runs to the end inside start(), the worst order there is."""
    import threading

    class ReapsAtOnce(threading.Thread):
        def start(self) -> None:
            self.run()

    monkeypatch.setattr("kconsole.cluster.procs.threading.Thread", ReapsAtOnce)
    proc = ManagedProcess("quick", tmp_path / "q.pid", tmp_path / "q.log")
    pid = proc.spawn(
        [sys.executable, "-c", "raise SystemExit(3)"], cwd=tmp_path, env=dict(os.environ)
    )
    recorded = json.loads(proc.pid_file.read_text())
    assert recorded["pid"] == pid and recorded["create_time"] > 0
    assert proc.exit_code() == 3 and proc.state() is ProcState.STOPPED


def test_check_port_free() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(PortInUse, match=f"port {port} .* needed by broker-9"):
            check_port_free("127.0.0.1", port, "broker-9")
    check_port_free("127.0.0.1", port, "broker-9")  # free again once closed


def test_missing_java_and_maven(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("KCONSOLE_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(ToolMissing, match="Java is needed"):
        jars.java_executable()
    with pytest.raises(ToolMissing, match="Maven"):
        jars.ensure_kafka_jars("3.9.2")


def test_cached_jars_need_no_maven(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Once the cache is complete, no Maven (and no network) is needed."""
    monkeypatch.setenv("KCONSOLE_CACHE_DIR", str(tmp_path))
    lib = jars.kafka_lib_dir("9.9.9")
    lib.mkdir(parents=True)
    (lib / ".complete").write_text("9.9.9")
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    assert jars.ensure_kafka_jars("9.9.9") == lib


# -- reaping (issue 26 item 22: no `[java] <defunct>` left after a stop) ------------------------


def test_our_child_is_reaped_when_another_object_stops_it(tmp_path: Path) -> None:
    """A broker started by one LocalCluster (the console's, a test fixture's) and stopped
    through another (the door's, the CLI's) was a zombie until its starter next asked."""
    starter = ManagedProcess("sleeper", tmp_path / "x.pid", tmp_path / "x.log")
    pid = starter.spawn(SLEEPER, cwd=tmp_path, env=dict(os.environ))
    try:
        other = ManagedProcess("sleeper", tmp_path / "x.pid", tmp_path / "x.log")
        assert other.terminate(timeout=10)
        wait_until(lambda: pid not in zombie_children(), 5, f"pid {pid} to be reaped")
        assert not psutil.pid_exists(pid) or psutil.Process(pid).ppid() != os.getpid()
        assert starter.exit_code() == -signal.SIGTERM  # reaping kept its exit status
    finally:
        starter.kill()


# Starts one sleeper per pid file given, records each as ManagedProcess.spawn would, and reaps
# them only every 2 s, as some inits reap orphans (the parent of a JVM whose `cluster up` is gone).
LAZY_PARENT = """
import json, signal, subprocess, sys, time
from pathlib import Path
import psutil
children = []
for pid_file in map(Path, sys.argv[1:]):
    p = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    created = psutil.Process(p.pid).create_time()
    pid_file.write_text(json.dumps({"pid": p.pid, "create_time": created}))
    children.append(p)
print("ready", flush=True)
while any(c.poll() is None for c in children):
    time.sleep(2.0)
"""


def test_a_stop_returns_once_another_parent_has_reaped(tmp_path: Path) -> None:
    """`kconsole cluster down` after a `cluster up` that has returned: the JVMs belong to init,
    which reaps when it gets to it. Down, stop and kill return only once it has, so no
    `[java] <defunct>` is left behind them."""
    cluster = LocalCluster(tmp_path / "c", LocalClusterSpec(brokers=3))
    pid_files = [cluster.process(f"broker-{b}").pid_file for b in (1, 2, 3)]
    parent = subprocess.Popen(
        [sys.executable, "-c", LAZY_PARENT, *map(str, pid_files)], stdout=subprocess.PIPE
    )
    try:
        assert parent.stdout is not None and parent.stdout.readline() == b"ready\n"
        records = [cluster.process(f"broker-{b}").record() for b in (1, 2, 3)]
        assert all(rec is not None for rec in records)
        pids = [rec.pid for rec in records if rec is not None]
        assert all(psutil.Process(pid).ppid() == parent.pid for pid in pids)  # not ours

        cluster.kill_broker(1)
        assert not is_zombie_pid(pids[0])
        t0 = time.monotonic()
        assert cluster.down() == ["broker-2", "broker-3"]
        took = time.monotonic() - t0
        assert not any(is_zombie_pid(pid) for pid in pids)
        assert took < REAP_WAIT_S  # waited for the reaping, not for the time-out
        assert cluster.process("broker-2").state() is ProcState.STOPPED
        assert parent.wait(10) == 0
    finally:
        for b in (1, 2, 3):
            cluster.process(f"broker-{b}").kill()
        parent.kill()
        parent.wait(10)


def is_zombie_pid(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


# Starts one sleeper, records it in the pid file given, and never reaps it.
NEVER_REAPS = """
import json, signal, subprocess, sys
from pathlib import Path
import psutil
p = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])
created = psutil.Process(p.pid).create_time()
Path(sys.argv[1]).write_text(json.dumps({"pid": p.pid, "create_time": created}))
print("ready", flush=True)
while True:  # alive until the test kills it
    signal.pause()
"""


def test_a_parent_that_never_reaps_does_not_hold_a_stop_for_ever(tmp_path: Path) -> None:
    """wait_reaped returns the unreaped after its time-out (the process is gone all the same)."""
    proc = ManagedProcess("sleeper", tmp_path / "x.pid", tmp_path / "x.log")
    parent = subprocess.Popen(
        [sys.executable, "-c", NEVER_REAPS, str(proc.pid_file)], stdout=subprocess.PIPE
    )
    try:
        assert parent.stdout is not None and parent.stdout.readline() == b"ready\n"
        rec = proc.record()
        assert rec is not None and wait_reaped([rec, None], 0.2) == []  # alive: none to wait for
        assert proc.kill()
        t0 = time.monotonic()
        assert wait_reaped([rec], 0.5) == [rec] and is_zombie_pid(rec.pid)
        assert 0.5 <= time.monotonic() - t0 < 5
    finally:
        proc.kill()
        parent.kill()  # its zombie child goes to init, which reaps it
        parent.wait(10)


class TestTailLines:
    """`cluster logs -n`: the last whole lines, never half of one."""

    def test_a_line_still_being_written_is_left_out(self, tmp_path: Path) -> None:
        log = tmp_path / "server.log"
        log.write_bytes(b"one\ntwo\nthree\nfour (half of it")
        assert tail_lines(log, 2) == ["two", "three"]
        with log.open("ab") as fh:
            fh.write(b" and the rest)\n")
        assert tail_lines(log, 2) == ["three", "four (half of it and the rest)"]

    def test_a_read_from_inside_the_file_starts_at_a_whole_line(self, tmp_path: Path) -> None:
        log = tmp_path / "server.log"
        body = [f"line {i} " + "x" * 90 for i in range(400)]  # ~40 KB: read from the end only
        log.write_text("\n".join(body) + "\n")
        shown = tail_lines(log, 200)
        assert len(shown) == 200
        assert shown == body[-200:]
        everything = tail_lines(log, 10_000)
        assert everything and everything == body[-len(everything) :]
        assert everything[0].startswith("line ")

    def test_small_and_empty_files(self, tmp_path: Path) -> None:
        log = tmp_path / "server.log"
        log.write_bytes(b"")
        assert tail_lines(log, 5) == []
        log.write_bytes(b"only\n")
        assert tail_lines(log, 5) == ["only"]
        assert tail_lines(tmp_path / "missing.log", 5) == []
