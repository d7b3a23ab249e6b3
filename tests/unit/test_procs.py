"""Process identity and signals, on real (harmless) child processes."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

import pytest

from kconsole.cluster import jars
from kconsole.cluster.errors import PortInUse, ToolMissing
from kconsole.cluster.local import check_port_free
from kconsole.cluster.procs import ManagedProcess, ProcState, tail_lines

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
