"""What a network fault needs from the machine, and the few things it does to it: run
iptables, move a process between cgroup v2 directories, list a process's TCP connections.
Every probe is a function of its own, so that a refusal can be tested without the machine."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import psutil

from kconsole.cluster.errors import ClusterError
from kconsole.cluster.net.rules import Conn

MOUNTS = Path("/proc/mounts")
IPTABLES_TIMEOUT_S = 20.0


def cgroup2_mount(mounts: str | None = None) -> Path | None:
    """Where the cgroup v2 hierarchy is mounted read-write (the unified layout's
    /sys/fs/cgroup, the hybrid one's /sys/fs/cgroup/unified), from /proc/mounts; None: none."""
    if mounts is None:
        try:
            mounts = MOUNTS.read_text()
        except OSError:
            return None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[2] == "cgroup2" and "rw" in fields[3].split(","):
            return Path(fields[1])
    return None


def is_root() -> bool:
    """iptables and cgroup.procs need root."""
    return os.geteuid() == 0


def iptables_found() -> bool:
    return shutil.which("iptables") is not None


def _lacking(why_root: str) -> list[str]:
    """Root and iptables, what every network fault needs, where this machine lacks them."""
    out = []
    if not is_root():
        out.append(f"root ({why_root} need it: run kconsole as root)")
    if not iptables_found():
        out.append("the iptables command (scripts/setup.sh installs it: apt-get install iptables)")
    return out


def missing() -> list[str]:
    """What a network fault needs and this machine lacks, each said with how to get it."""
    out = _lacking("iptables and moving a process to a cgroup")
    if cgroup2_mount() is None:
        out.append(
            "a cgroup v2 hierarchy mounted read-write (none in /proc/mounts: mount -t cgroup2 "
            "none /sys/fs/cgroup/unified)"
        )
    return out


def missing_ns() -> list[str]:
    """What a fault in a container's own namespace needs and this machine lacks."""
    out = _lacking("nsenter and iptables")
    if shutil.which("nsenter") is None:
        out.append("the nsenter command (util-linux: apt-get install util-linux)")
    return out


def refuse_if_missing(what: str, *, in_container: bool = False) -> None:
    """ClusterError saying what is needed, before any effect, when something is missing (in a
    container's own namespace: missing_ns)."""
    lacking = missing_ns() if in_container else missing()
    if lacking:
        where = " in a container" if in_container else ""
        raise ClusterError(f"cannot {what}: network faults{where} need " + "; ".join(lacking))


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run `argv` (an iptables command line), its outcome whatever it is."""
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=IPTABLES_TIMEOUT_S, check=False
    )


def must(argv: list[str]) -> str:
    """Run `argv`; its output, or ClusterError with what iptables said."""
    done = run(argv)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise ClusterError(f"`{' '.join(argv)}` failed: {said[-1] if said else done.returncode}")
    return done.stdout


def holds(argv: list[str]) -> bool:
    """Whether `argv` (an `iptables -C` or `-S`) succeeds: the rule or chain is there."""
    return run(argv).returncode == 0


def cgroup_of(pid: int) -> str | None:
    """The process's cgroup v2 path ('/' the root; the '0::' line of /proc/PID/cgroup)."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("0::"):
            return line[3:] or "/"
    return None


def move(pid: int, cgroup_dir: Path) -> None:
    """Move the process (every thread of it) into `cgroup_dir`."""
    (cgroup_dir / "cgroup.procs").write_text(f"{pid}\n")


def members(cgroup_dir: Path) -> list[int]:
    """The processes in `cgroup_dir` ([] when it is not there)."""
    try:
        return [int(p) for p in (cgroup_dir / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _ipv4(address: str) -> str | None:
    """An IPv4 address as iptables matches it (a dual-stack JVM's sockets show IPv4 peers as
    ::ffff:a.b.c.d, and send IPv4 packets); None for a real IPv6 address."""
    if address.startswith("::ffff:"):
        address = address[7:]
    return address if address.count(".") == 3 else None


def tcp_conns(pid: int, listening: tuple[int, ...]) -> list[Conn]:
    """The IPv4 TCP connections the process has open, apart from the ones accepted on its
    `listening` ports (those are cut by their port)."""
    try:
        conns = psutil.Process(pid).net_connections(kind="tcp")
    except psutil.Error as exc:
        raise ClusterError(f"cannot list the connections of pid {pid}: {exc}") from exc
    out = []
    for c in conns:
        if not c.raddr or c.status == psutil.CONN_LISTEN or c.laddr.port in listening:
            continue
        local, remote = _ipv4(c.laddr.ip), _ipv4(c.raddr.ip)
        if local is not None and remote is not None:
            out.append(Conn(local, c.laddr.port, remote, c.raddr.port))
    return sorted(set(out), key=lambda c: (c.remote_port, c.local_port))


def tcp_ends(pid: int) -> list[Conn]:
    """Every IPv4 TCP connection the process has open, accepted ones included."""
    try:
        conns = psutil.Process(pid).net_connections(kind="tcp")
    except psutil.Error as exc:
        raise ClusterError(f"cannot list the connections of pid {pid}: {exc}") from exc
    out = []
    for c in conns:
        if not c.raddr or c.status == psutil.CONN_LISTEN:
            continue
        local, remote = _ipv4(c.laddr.ip), _ipv4(c.raddr.ip)
        if local is not None and remote is not None:
            out.append(Conn(local, c.laddr.port, remote, c.raddr.port))
    return sorted(set(out), key=lambda c: (c.remote_port, c.local_port))


def local_ends(pid: int) -> set[tuple[str, int]]:
    """The (IPv4 address, port) of every TCP socket the process holds (set() once it is gone)."""
    try:
        conns = psutil.Process(pid).net_connections(kind="tcp")
    except psutil.Error:
        return set()
    return {(ip, c.laddr.port) for c in conns if (ip := _ipv4(c.laddr.ip)) is not None}
