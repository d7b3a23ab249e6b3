"""The secrets of a secured local cluster, made: the passwords, the SCRAM users in ZooKeeper,
and a CA with the brokers' (and with mTLS the client's) certificates, made with openssl. What
each security mode is and sets is kconsole.cluster.local.security (data only, which the command
line reads); this module acts, so it is behind the door with the rest of the local cluster.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
from pathlib import Path

from kconsole.cluster.errors import ClusterError
from kconsole.cluster.local.security import (
    BROKER_USER,
    CLIENT_USER,
    SCRAM_MECHANISM,
    SecurityFiles,
    read_secret,
    scram_credential,
    zk_credential_text,
)

CERT_DAYS = 365
OPENSSL_TIMEOUT_S = 60.0


# ------------------------------------------------------------------------------------------
# Passwords and SCRAM users
# ------------------------------------------------------------------------------------------


def _write_secret(path: Path, text: str) -> None:
    """A file only the user can read, created so (never world-readable, not even briefly)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    path.chmod(0o600)


def ensure_passwords(files: SecurityFiles) -> None:
    """The brokers' password, and the client's unless the user gave a file: generated once."""
    files.ensure_dir()
    if not files.broker_password.exists():
        _write_secret(files.broker_password, secrets.token_urlsafe(24) + "\n")
    if files.password_file:
        read_secret(files.client_password, "--password-file")  # readable and not empty
    elif not files.client_password.exists():
        _write_secret(files.client_password, secrets.token_urlsafe(24) + "\n")


def ensure_scram_users(zk: object, files: SecurityFiles, *, overwrite: bool) -> list[str]:
    """Write both users' SCRAM credentials to /config/users (what kafka-configs writes). A
    broker reads them when it starts, so this runs before the brokers do; a credential that
    exists is replaced only with `overwrite` (no broker running: a running one would need a
    /config/changes notice to see it). The users written."""
    users = {
        BROKER_USER: read_secret(files.broker_password, "the brokers' password"),
        CLIENT_USER: read_secret(files.client_password, "the client password"),
    }
    written: list[str] = []
    for user, password in sorted(users.items()):
        path = f"/config/users/{user}"
        credential = zk_credential_text(scram_credential(password))
        data = json.dumps({"version": 1, "config": {SCRAM_MECHANISM: credential}}).encode()
        if zk.exists(path) is None:  # type: ignore[attr-defined]
            zk.create(path, data, makepath=True)  # type: ignore[attr-defined]
        elif overwrite:
            zk.set(path, data)  # type: ignore[attr-defined]
        else:
            continue
        written.append(user)
    return written


# ------------------------------------------------------------------------------------------
# Certificates (openssl)
# ------------------------------------------------------------------------------------------


def _openssl(*args: str, cwd: Path) -> None:
    exe = shutil.which("openssl")
    if exe is None:
        raise ClusterError(
            "--security ssl needs openssl to make the cluster's certificates; install it "
            "(apt-get install openssl)"
        )
    run = subprocess.run(
        [exe, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=OPENSSL_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
        umask=0o077,  # what it writes is the user's only (0600), from the start
    )
    if run.returncode != 0:
        tail = " ".join(run.stderr.strip().splitlines()[-2:])
        raise ClusterError(f"openssl {args[0]} failed (exit {run.returncode}): {tail}")


def ensure_certificates(files: SecurityFiles, host: str, mtls: bool) -> list[str]:
    """A CA, the brokers' certificate (for `host`, 127.0.0.1 and localhost) and, with mTLS,
    the client's; each made once. The files made."""
    files.ensure_dir()
    d = files.dir
    made: list[str] = []
    if not files.ca_cert.exists() or not files.ca_key.exists():
        _openssl(
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256",
            "-keyout", files.ca_key.name, "-out", files.ca_cert.name,
            "-days", str(CERT_DAYS), "-subj", "/CN=kconsole local CA",
            cwd=d,
        )  # fmt: skip
        files.ca_key.chmod(0o600)
        made += [files.ca_cert.name, files.ca_key.name]
    if not files.broker_keystore.exists():
        names = {"127.0.0.1", "localhost", host}
        san = ",".join(
            sorted(f"IP:{n}" if n.replace(".", "").isdigit() else f"DNS:{n}" for n in names)
        )
        _sign(d, "broker", "/CN=kconsole-broker", san, files)
        key = (d / "broker.key").read_text()
        cert = (d / "broker.crt").read_text()
        _write_secret(files.broker_keystore, key + cert + files.ca_cert.read_text())
        (d / "broker.key").unlink()
        made.append(files.broker_keystore.name)
    if mtls and not (files.client_cert.exists() and files.client_key.exists()):
        _sign(d, "client", f"/CN={CLIENT_USER}", "", files)
        made += [files.client_cert.name, files.client_key.name]
    # Every file 0600, as the README says: the certificates too (a directory made by an
    # earlier kconsole has them 0644).
    for path in d.iterdir():
        if path.is_file():
            path.chmod(0o600)
    return made


def _sign(d: Path, name: str, subject: str, san: str, files: SecurityFiles) -> None:
    _openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-sha256",
        "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject,
        cwd=d,
    )  # fmt: skip
    (d / f"{name}.key").chmod(0o600)
    ext = d / f"{name}.ext"
    lines = ["basicConstraints=CA:FALSE", "keyUsage=digitalSignature,keyEncipherment"]
    lines.append(f"extendedKeyUsage={'serverAuth,clientAuth' if san else 'clientAuth'}")
    if san:
        lines.append(f"subjectAltName={san}")
    _write_secret(ext, "\n".join(lines) + "\n")
    _openssl(
        "x509", "-req", "-in", f"{name}.csr", "-CA", files.ca_cert.name,
        "-CAkey", files.ca_key.name, "-CAcreateserial", "-out", f"{name}.crt",
        "-days", str(CERT_DAYS), "-sha256", "-extfile", ext.name,
        cwd=d,
    )  # fmt: skip
    for leftover in (f"{name}.csr", f"{name}.ext", "ca.srl"):
        (d / leftover).unlink(missing_ok=True)
