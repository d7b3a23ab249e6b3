"""Security of the local cluster: a SASL/SCRAM listener or a TLS one, instead of plaintext.

    plaintext    the default: no authentication, no encryption
    sasl-scram   SASL_PLAINTEXT listeners, SCRAM-SHA-512. Two users: `kconsole-broker`, which
                 the brokers use between themselves, and `kconsole`, the client user. Both are
                 created in ZooKeeper before any broker starts, as SCRAM credentials (salt,
                 stored key, server key: what Kafka's own kafka-configs writes); no password is
                 kept by the cluster and none is ever put on a command line.
    ssl          SSL listeners: a throwaway CA and a broker certificate for 127.0.0.1 /
                 localhost, made with openssl into the state dir's security/ directory (PEM
                 files, which Kafka reads as key and trust stores: KIP-651). With mTLS the
                 brokers require a client certificate; one is made for the client (CN kconsole).

Secrets live in the state dir's security/ directory, readable only by the user (0700, files
0600): the client user's password (unless --password-file names the user's own file, which is
then read, never copied), the brokers' own password, the CA key. `client_properties()` is what a
client of this cluster sets (librdkafka names), the password as a reference to its file.

This module holds what a security mode is and sets, data only (the command line reads it); the
passwords, SCRAM users and certificates are made by kconsole.cluster.local.credentials.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from pathlib import Path

from kconsole.cluster.errors import ClusterError

PLAINTEXT, SASL_SCRAM, SSL = "plaintext", "sasl-scram", "ssl"
SECURITY_MODES = (PLAINTEXT, SASL_SCRAM, SSL)
SCRAM_MECHANISM = "SCRAM-SHA-512"
SCRAM_ITERATIONS = 4096
BROKER_USER = "kconsole-broker"
CLIENT_USER = "kconsole"
SECURITY_DIR = "security"


def listener_protocol(security: str) -> str:
    """The listener's security protocol (and name) for a security mode."""
    return {PLAINTEXT: "PLAINTEXT", SASL_SCRAM: "SASL_PLAINTEXT", SSL: "SSL"}[security]


def check_security(security: str, mtls: bool) -> None:
    if security not in SECURITY_MODES:
        raise ClusterError(
            f"--security must be one of {', '.join(SECURITY_MODES)}, not {security!r}"
        )
    if mtls and security != SSL:
        raise ClusterError("--mtls needs --security ssl (client certificates are a TLS feature)")


@dataclass(frozen=True)
class SecurityFiles:
    """Where one local cluster keeps its secrets and certificates."""

    state_dir: Path
    password_file: str = ""  # the user's own file for the client password ("" = generated)

    @property
    def dir(self) -> Path:
        return self.state_dir / SECURITY_DIR

    @property
    def client_password(self) -> Path:
        if self.password_file:
            return Path(self.password_file).expanduser()
        return self.dir / "client-password"

    @property
    def broker_password(self) -> Path:
        return self.dir / "broker-password"

    @property
    def ca_cert(self) -> Path:
        return self.dir / "ca.pem"

    @property
    def ca_key(self) -> Path:
        return self.dir / "ca.key"

    @property
    def broker_keystore(self) -> Path:
        """The broker's private key and certificate chain, one PEM file (a PEM key store)."""
        return self.dir / "broker.pem"

    @property
    def client_cert(self) -> Path:
        return self.dir / "client.crt"

    @property
    def client_key(self) -> Path:
        return self.dir / "client.key"

    def ensure_dir(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.dir.chmod(0o700)


def read_secret(path: Path, what: str) -> str:
    """A password from its file (the first line, without its line end)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ClusterError(f"cannot read {what} from {path}: {exc.strerror or exc}") from exc
    value = text.splitlines()[0] if text else ""
    if not value:
        raise ClusterError(f"{what} file {path} is empty")
    return value


# ------------------------------------------------------------------------------------------
# SCRAM credentials (RFC 5802), in the form Kafka stores them
# ------------------------------------------------------------------------------------------


def scram_credential(
    password: str, *, salt: bytes | None = None, iterations: int = SCRAM_ITERATIONS
) -> dict[str, str | int]:
    """SCRAM-SHA-512 salt, stored key and server key (base64) for `password`."""
    salt = salt if salt is not None else secrets.token_bytes(32)
    salted = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha512).digest()
    stored_key = hashlib.sha512(client_key).digest()
    server_key = hmac.new(salted, b"Server Key", hashlib.sha512).digest()
    b64 = base64.b64encode
    return {
        "salt": b64(salt).decode(),
        "stored_key": b64(stored_key).decode(),
        "server_key": b64(server_key).decode(),
        "iterations": iterations,
        # what `kafka-storage format --add-scram` takes (a KRaft cluster's first users)
        "salted_password": b64(salted).decode(),
    }


def zk_credential_text(cred: dict[str, str | int]) -> str:
    """The value of the mechanism's key in /config/users/NAME (ScramCredentialUtils)."""
    return (
        f"salt={cred['salt']},stored_key={cred['stored_key']},"
        f"server_key={cred['server_key']},iterations={cred['iterations']}"
    )


# ------------------------------------------------------------------------------------------
# What brokers and clients set
# ------------------------------------------------------------------------------------------


def broker_security_properties(security: str, mtls: bool, files: SecurityFiles) -> dict[str, str]:
    """The broker settings for a security mode (the listener itself is set by the caller)."""
    if security == PLAINTEXT:
        return {}
    name = listener_protocol(security)
    props: dict[str, str] = {}  # between brokers: the same listener (inter.broker.listener.name)
    if security == SASL_SCRAM:
        password = read_secret(files.broker_password, "the brokers' password")
        props |= {
            "sasl.enabled.mechanisms": SCRAM_MECHANISM,
            "sasl.mechanism.inter.broker.protocol": SCRAM_MECHANISM,
            f"listener.name.{name.lower()}.{SCRAM_MECHANISM.lower()}.sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required "
                f'username="{BROKER_USER}" password="{password}";'
            ),
        }
    else:
        props |= {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(files.broker_keystore),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(files.ca_cert),
            "ssl.client.auth": "required" if mtls else "none",
            "ssl.endpoint.identification.algorithm": "https",
        }
    return props


def client_properties(security: str, mtls: bool, files: SecurityFiles) -> dict[str, str]:
    """What a client of the cluster sets, librdkafka names; the password by its file
    (`sasl.password_file`), never its value."""
    if security == PLAINTEXT:
        return {}
    if security == SASL_SCRAM:
        return {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": SCRAM_MECHANISM,
            "sasl.username": CLIENT_USER,
            "sasl.password_file": str(files.client_password),
        }
    props = {"security.protocol": "SSL", "ssl.ca.location": str(files.ca_cert)}
    if mtls:
        props |= {
            "ssl.certificate.location": str(files.client_cert),
            "ssl.key.location": str(files.client_key),
        }
    return props


def security_summary(security: str, mtls: bool, files: SecurityFiles) -> str:
    """One line: how the cluster is secured and where a client finds what it needs."""
    if security == SASL_SCRAM:
        return (
            f"sasl-scram (SASL_PLAINTEXT, {SCRAM_MECHANISM}): user {CLIENT_USER}, password in "
            f"{files.client_password}"
        )
    if security == SSL:
        line = f"ssl (TLS, hostname verified): CA {files.ca_cert}"
        if mtls:
            line += f"; client certificate required: {files.client_cert}, key {files.client_key}"
        return line
    return "plaintext"
