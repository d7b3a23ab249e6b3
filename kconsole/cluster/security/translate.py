"""How kconsole's clients connect to a secured cluster: one translation, from one place.

The user's settings are librdkafka properties (the [client] table of a config file or profile,
and -X), plus `zookeeper.*` properties for ZooKeeper. Their values may come from the environment
or from files (kconsole.secrets). From them this module makes each client's own settings:

    librdkafka_config     confluent-kafka (librdkafka) properties: producers, consumers, admin
    kafka_python_args     kafka-python keyword arguments: groups, reassignment, elections,
                          configs, the quorum
    spark_kafka_options   Spark's Kafka source and sink options (`kafka.`-prefixed Java client
                          properties) and the JVM system properties they need
    kazoo_args            KazooClient keyword arguments (digest or SASL auth, TLS)

Supported: security.protocol PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL; sasl.mechanism PLAIN,
SCRAM-SHA-256, SCRAM-SHA-512 (sasl.username, sasl.password) and OAUTHBEARER with client
credentials (sasl.oauthbearer.method=oidc, sasl.oauthbearer.client.id/.client.secret,
sasl.oauthbearer.token.endpoint.url, sasl.oauthbearer.scope); TLS with a CA (ssl.ca.location),
a client certificate and key (ssl.certificate.location, ssl.key.location, ssl.key.password).
The broker's host name is verified unless ssl.endpoint.identification.algorithm=none says not;
its certificate is verified unless enable.ssl.certificate.verification=false says not.

ZooKeeper (KazooClient): zookeeper.auth=SCHEME:CREDENTIAL (e.g. digest:user:password),
zookeeper.sasl.mechanism/.username/.password, and TLS with zookeeper.ssl.enable,
zookeeper.ssl.ca.location, .certificate.location, .key.location, .key.password,
zookeeper.ssl.endpoint.identification.algorithm and zookeeper.enable.ssl.certificate.verification
(any zookeeper.ssl.* property turns TLS on unless zookeeper.ssl.enable=false).
"""

from __future__ import annotations

import base64
import importlib.util
import json
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kconsole import secrets
from kconsole.errors import ClusterError, ConfigError, config_error

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
ZOOKEEPER_PREFIX = "zookeeper."
ZOOKEEPER_KEYS = (
    "zookeeper.auth",
    "zookeeper.sasl.mechanism",
    "zookeeper.sasl.username",
    "zookeeper.sasl.password",
    "zookeeper.ssl.enable",
    "zookeeper.ssl.ca.location",
    "zookeeper.ssl.certificate.location",
    "zookeeper.ssl.key.location",
    "zookeeper.ssl.key.password",
    "zookeeper.ssl.endpoint.identification.algorithm",
    "zookeeper.enable.ssl.certificate.verification",
)
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")

# Java's login modules and the client-credentials login handler (Kafka 3.4+, still in 4.x).
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
OAUTH_LOGIN_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
# Java clients from 3.9.1 and 4.0 call only the token endpoints this system property allows.
OAUTH_ALLOWED_URLS = "org.apache.kafka.sasl.oauthbearer.allowed.urls"

# Properties the translations for kafka-python and Java consume (the rest are librdkafka's own).
TRANSLATED_KEYS = frozenset(
    {
        "bootstrap.servers",
        "client.id",
        "security.protocol",
        "sasl.mechanism",
        "sasl.mechanisms",
        "sasl.username",
        "sasl.password",
        "sasl.oauthbearer.method",
        "sasl.oauthbearer.client.id",
        "sasl.oauthbearer.client.secret",
        "sasl.oauthbearer.token.endpoint.url",
        "sasl.oauthbearer.scope",
        "ssl.ca.location",
        "ssl.certificate.location",
        "ssl.key.location",
        "ssl.key.password",
        "ssl.endpoint.identification.algorithm",
        "enable.ssl.certificate.verification",
    }
)


@dataclass(frozen=True)
class OAuthClientCredentials:
    """OAUTHBEARER with the OAuth 2 client-credentials grant (librdkafka's method=oidc)."""

    token_url: str
    client_id: str
    client_secret: str = field(repr=False)
    scope: str = ""


@dataclass(frozen=True)
class Security:
    """The security settings of one set of client properties, checked."""

    protocol: str = "PLAINTEXT"
    mechanism: str = ""
    username: str = ""
    password: str = field(default="", repr=False)
    oauth: OAuthClientCredentials | None = None
    ca: str = ""
    certificate: str = ""
    key: str = ""
    key_password: str = field(default="", repr=False)
    verify_hostname: bool = True
    verify_certificate: bool = True

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def security(
    config: Mapping[str, Any],
    origin: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
) -> Security:
    """The checked security settings of `config` (resolved first); ConfigError names every
    problem, with where each property came from."""
    return _parse(secrets.resolve(config, origin, env), origin or {})


# The names of a certificate subject's attributes as Java's X500Principal writes them (RFC 2253).
_DN_NAMES = {
    "commonName": "CN",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "countryName": "C",
    "stateOrProvinceName": "ST",
    "localityName": "L",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
    "emailAddress": "EMAILADDRESS",
}


def principal(config: Mapping[str, Any], origin: Mapping[str, str] | None = None) -> str:
    """Who the cluster sees these client settings as, in Kafka's own terms: `User:NAME
    (MECHANISM)` for SASL PLAIN and SCRAM (the SASL user is the principal), `User:SUBJECT (TLS
    certificate)` for a client certificate (its subject as Kafka's default mapping writes it:
    RFC 2253), the OAuth client for OAUTHBEARER (the principal is the token's subject, which
    the broker decides), `User:ANONYMOUS` with neither. Never raises: unreadable settings or
    certificates are said as such."""
    try:
        sec = security(config, origin)
    except ClusterError as exc:
        return f"unknown (the security settings do not parse: {exc.message.splitlines()[0]})"
    if sec.sasl and sec.mechanism == "OAUTHBEARER" and sec.oauth is not None:
        return f"OAuth client {sec.oauth.client_id} (OAUTHBEARER: the token's subject)"
    if sec.sasl:
        return f"User:{sec.username} ({sec.mechanism or 'GSSAPI'})"
    if sec.tls and sec.certificate:
        return f"User:{certificate_subject(sec.certificate)} (TLS certificate)"
    if sec.tls:
        return "User:ANONYMOUS (TLS, no client certificate)"
    return "User:ANONYMOUS (PLAINTEXT)"


def certificate_subject(path: str) -> str:
    """The subject of the PEM certificate at `path` (the first one), RFC 2253 order as Java's
    X500Principal.getName() gives it; where it cannot be read, a sentence saying so. Read with
    the ssl module's own decoder (no other library needed)."""
    try:
        decoded = ssl._ssl._test_decode_cert(path)  # type: ignore[attr-defined]
    except Exception as exc:
        return f"? (certificate {path} unreadable: {type(exc).__name__})"
    rdns = [
        "+".join(f"{_DN_NAMES.get(k, k)}={_dn_escape(v)}" for k, v in rdn)
        for rdn in decoded.get("subject", ())
    ]
    return ",".join(reversed(rdns)) or "?"


def _dn_escape(value: str) -> str:
    out = "".join(f"\\{ch}" if ch in ',+"\\<>;=' else ch for ch in value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    return out[:-1] + "\\ " if out.endswith(" ") else out


def _parse(c: Mapping[str, Any], origin: Mapping[str, str]) -> Security:
    problems: list[str] = []

    def problem(key: str, what: str) -> None:
        problems.append(f"{key} (from {origin.get(key, 'the settings')}): {what}")

    def text(key: str) -> str:
        value = c.get(key)
        return "" if value is None else str(value)

    protocol = text("security.protocol").upper() or "PLAINTEXT"
    if protocol not in PROTOCOLS:
        problem("security.protocol", f"{protocol!r} is not one of {', '.join(PROTOCOLS)}")
    mech_key = "sasl.mechanisms" if "sasl.mechanisms" in c else "sasl.mechanism"
    mechanism = text(mech_key).upper()
    if protocol in ("SASL_PLAINTEXT", "SASL_SSL") and not mechanism:
        mechanism = "GSSAPI"  # librdkafka's default: refused below
    if mechanism and mechanism not in MECHANISMS:
        problem(mech_key, f"{mechanism!r} is not one of {', '.join(MECHANISMS)}")
    oauth = None
    if mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        for key in ("sasl.username", "sasl.password"):
            if not text(key):
                alt = " (or sasl.password_file)" if key == "sasl.password" else ""
                problem(key, f"SASL {mechanism} needs {key}{alt}")
    elif mechanism == "OAUTHBEARER":
        if text("sasl.oauthbearer.method").lower() != "oidc":
            problem(
                "sasl.oauthbearer.method",
                "OAUTHBEARER needs sasl.oauthbearer.method=oidc (client credentials)",
            )
        for key in (
            "sasl.oauthbearer.client.id",
            "sasl.oauthbearer.client.secret",
            "sasl.oauthbearer.token.endpoint.url",
        ):
            if not text(key):
                problem(key, f"OAUTHBEARER (client credentials) needs {key}")
        oauth = OAuthClientCredentials(
            token_url=text("sasl.oauthbearer.token.endpoint.url"),
            client_id=text("sasl.oauthbearer.client.id"),
            client_secret=text("sasl.oauthbearer.client.secret"),
            scope=text("sasl.oauthbearer.scope"),
        )
    algorithm = text("ssl.endpoint.identification.algorithm").lower() or "https"
    if algorithm not in ("https", "none"):
        problem("ssl.endpoint.identification.algorithm", f"{algorithm!r} is not https or none")
    verification = text("enable.ssl.certificate.verification").lower() or "true"
    if verification not in _TRUE + _FALSE:
        problem("enable.ssl.certificate.verification", f"{verification!r} is not true or false")
    if text("ssl.key.location") and not text("ssl.certificate.location"):
        problem("ssl.key.location", "a client key needs its certificate: ssl.certificate.location")
    if text("ssl.certificate.location") and not text("ssl.key.location"):
        problem("ssl.certificate.location", "a client certificate needs ssl.key.location")
    for key in c:
        if key.startswith(ZOOKEEPER_PREFIX) and key not in ZOOKEEPER_KEYS:
            problem(key, f"unknown ZooKeeper property (known: {', '.join(ZOOKEEPER_KEYS)})")
    if problems:
        raise config_error(problems)
    return Security(
        protocol=protocol,
        mechanism=mechanism if protocol in ("SASL_PLAINTEXT", "SASL_SSL") else "",
        username=text("sasl.username"),
        password=text("sasl.password"),
        oauth=oauth if protocol in ("SASL_PLAINTEXT", "SASL_SSL") else None,
        ca=text("ssl.ca.location"),
        certificate=text("ssl.certificate.location"),
        key=text("ssl.key.location"),
        key_password=text("ssl.key.password"),
        verify_hostname=algorithm == "https",
        verify_certificate=verification in _TRUE,
    )


def check(config: Mapping[str, Any], origin: Mapping[str, str] | None = None) -> None:
    """Refuse settings some client of kconsole could not use: ConfigError names every problem
    (a secret that cannot be read, an unknown protocol or mechanism, a mechanism's missing
    property, an unknown ZooKeeper property), each with where it came from."""
    resolved = secrets.resolve(config, origin)
    _parse(resolved, origin or {})
    kazoo_args(resolved, origin)


# -- librdkafka (confluent-kafka) ------------------------------------------------------------
def librdkafka_config(
    config: Mapping[str, Any], origin: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """librdkafka properties: `config` resolved, checked, without the ZooKeeper properties, and
    with hostname verification set (https) for TLS unless the settings turn it off."""
    resolved = secrets.resolve(config, origin)
    sec = _parse(resolved, origin or {})
    out = secrets.Resolved(
        {k: v for k, v in resolved.items() if not k.startswith(ZOOKEEPER_PREFIX)}
    )
    if sec.tls:
        out.setdefault("ssl.endpoint.identification.algorithm", "https")
    return out


# -- kafka-python ----------------------------------------------------------------------------
def kafka_python_args(
    config: Mapping[str, Any],
    origin: Mapping[str, str] | None = None,
    *,
    token_provider: Callable[[OAuthClientCredentials], Any] | None = None,
) -> dict[str, Any]:
    """kafka-python keyword arguments (KafkaAdminClient, KafkaConsumer) for `config`'s servers,
    client id and security. OAUTHBEARER gets a client-credentials token provider
    (`token_provider`, by default kconsole.cluster.security.kafka_python.oauth_token_provider)."""
    resolved = secrets.resolve(config, origin)
    sec = _parse(resolved, origin or {})
    out: dict[str, Any] = {}
    if "bootstrap.servers" in resolved:
        out["bootstrap_servers"] = resolved["bootstrap.servers"]
    if resolved.get("client.id"):
        out["client_id"] = resolved["client.id"]
    out["security_protocol"] = sec.protocol
    if sec.sasl:
        out["sasl_mechanism"] = sec.mechanism
        if sec.oauth is not None:
            if token_provider is None:
                from kconsole.cluster.security.kafka_python import oauth_token_provider

                token_provider = oauth_token_provider
            out["sasl_oauth_token_provider"] = token_provider(sec.oauth)
        else:
            out["sasl_plain_username"] = sec.username
            out["sasl_plain_password"] = sec.password
    if sec.tls:
        if sec.ca:
            out["ssl_cafile"] = sec.ca
        if sec.certificate:
            out["ssl_certfile"] = sec.certificate
            out["ssl_keyfile"] = sec.key
        if sec.key_password:
            out["ssl_password"] = sec.key_password
        out["ssl_check_hostname"] = sec.verify_hostname and sec.verify_certificate
        if not sec.verify_certificate:
            out["ssl_context"] = _unverified_context(sec)
    return out


def _unverified_context(sec: Security) -> ssl.SSLContext:
    """What enable.ssl.certificate.verification=false asks for: TLS that trusts any broker."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if sec.certificate:
        ctx.load_cert_chain(sec.certificate, sec.key, sec.key_password or None)
    return ctx


class ClientCredentialsTokens:
    """OAuth 2 access tokens by the client-credentials grant (RFC 6749 4.4), from the token
    endpoint, with only the standard library; one token is reused until shortly before it
    expires. The client authenticates with HTTP Basic (RFC 6749 2.3.1), as librdkafka does."""

    def __init__(
        self,
        creds: OAuthClientCredentials,
        *,
        timeout_s: float = 10.0,
        urlopen: Callable[..., Any] = urllib.request.urlopen,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.creds = creds
        self.timeout_s = timeout_s
        self._urlopen = urlopen
        self._clock = clock
        self._lock = threading.Lock()
        self._token = ""
        self._renew_at = 0.0

    def __repr__(self) -> str:
        return f"ClientCredentialsTokens({self.creds.token_url!r}, {self.creds.client_id!r})"

    def token(self) -> str:
        with self._lock:
            if not self._token or self._clock() >= self._renew_at:
                self._token, expires_in = self._fetch()
                self._renew_at = self._clock() + max(1.0, expires_in * 0.8)
            return self._token

    def _fetch(self) -> tuple[str, float]:
        c = self.creds
        form = {"grant_type": "client_credentials"}
        if c.scope:
            form["scope"] = c.scope
        basic = base64.b64encode(
            f"{urllib.parse.quote(c.client_id, safe='')}:"
            f"{urllib.parse.quote(c.client_secret, safe='')}".encode()
        ).decode()
        request = urllib.request.Request(
            c.token_url,
            data=urllib.parse.urlencode(form).encode(),
            headers={
                "Authorization": f"Basic {basic}",
                "Content-Type": "application/x-www-form-urlencoded",
                "Accept": "application/json",
            },
            method="POST",
        )
        where = f"the OAuth token endpoint {c.token_url} (client {c.client_id})"
        try:
            with self._urlopen(request, timeout=self.timeout_s) as response:
                body = json.loads(response.read().decode())
        except urllib.error.HTTPError as exc:
            raise ClusterError(f"{where} refused the client credentials: HTTP {exc.code}") from None
        except (OSError, ValueError) as exc:
            why = secrets.scrub(str(getattr(exc, "reason", exc)))
            raise ClusterError(f"{where} gave no token: {why}") from None
        token = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise ClusterError(f"{where} answered without an access_token")
        secrets.remember(token)
        expires_in = body.get("expires_in", 300)
        return token, float(expires_in) if isinstance(expires_in, int | float) else 300.0


# -- Spark (Java clients) --------------------------------------------------------------------
@dataclass(frozen=True)
class SparkKafka:
    """Spark's Kafka source/sink options (`kafka.`-prefixed Java client properties), the JVM
    system properties they need, and the properties that have no Java translation."""

    options: dict[str, str]
    jvm_properties: dict[str, str]
    untranslated: list[str]

    def __repr__(self) -> str:
        return (
            f"SparkKafka(options={secrets.masked(self.options)!r}, "
            f"jvm_properties={self.jvm_properties!r}, untranslated={self.untranslated!r})"
        )


def spark_kafka_options(
    config: Mapping[str, Any], origin: Mapping[str, str] | None = None
) -> SparkKafka:
    """Spark's Kafka options for `config`: the Java client's own names, prefixed `kafka.`.
    TLS files are PEM (Java reads them with ssl.truststore.type / ssl.keystore.type PEM, KIP-651);
    the client certificate and key are passed as their content (Java needs the key as PKCS#8)."""
    resolved = secrets.resolve(config, origin)
    sec = _parse(resolved, origin or {})
    opts: dict[str, str] = {}
    jvm: dict[str, str] = {}
    if "bootstrap.servers" in resolved:
        opts["kafka.bootstrap.servers"] = str(resolved["bootstrap.servers"])
    if resolved.get("client.id"):
        opts["kafka.client.id"] = str(resolved["client.id"])
    opts["kafka.security.protocol"] = sec.protocol
    if sec.sasl:
        opts["kafka.sasl.mechanism"] = sec.mechanism
        if sec.oauth is not None:
            o = sec.oauth
            params = [("clientId", o.client_id), ("clientSecret", o.client_secret)]
            if o.scope:
                params.append(("scope", o.scope))
            opts["kafka.sasl.jaas.config"] = _jaas(OAUTH_MODULE, params)
            opts["kafka.sasl.oauthbearer.token.endpoint.url"] = o.token_url
            opts["kafka.sasl.login.callback.handler.class"] = OAUTH_LOGIN_HANDLER
            jvm[OAUTH_ALLOWED_URLS] = o.token_url
        else:
            module = PLAIN_MODULE if sec.mechanism == "PLAIN" else SCRAM_MODULE
            params = [("username", sec.username), ("password", sec.password)]
            opts["kafka.sasl.jaas.config"] = _jaas(module, params)
        secrets.remember(opts["kafka.sasl.jaas.config"])
    untranslated = sorted(
        k
        for k, v in resolved.items()
        if isinstance(v, str) and k not in TRANSLATED_KEYS and not k.startswith(ZOOKEEPER_PREFIX)
    )
    if sec.tls:
        if sec.ca:
            opts["kafka.ssl.truststore.type"] = "PEM"
            opts["kafka.ssl.truststore.location"] = sec.ca
        if sec.certificate:
            opts["kafka.ssl.keystore.type"] = "PEM"
            opts["kafka.ssl.keystore.certificate.chain"] = _read_pem(
                "ssl.certificate.location", sec.certificate, origin
            )
            opts["kafka.ssl.keystore.key"] = _read_pem("ssl.key.location", sec.key, origin)
            secrets.remember(opts["kafka.ssl.keystore.key"])
            if sec.key_password:
                opts["kafka.ssl.key.password"] = sec.key_password
        opts["kafka.ssl.endpoint.identification.algorithm"] = "https" if sec.verify_hostname else ""
        if not sec.verify_certificate:
            untranslated.append("enable.ssl.certificate.verification")
    return SparkKafka(opts, jvm, untranslated)


def _jaas(module: str, params: list[tuple[str, str]]) -> str:
    quoted = " ".join(f'{k}="{_jaas_quote(v)}"' for k, v in params)
    return f"{module} required {quoted};"


def _jaas_quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _read_pem(key: str, path: str, origin: Mapping[str, str] | None) -> str:
    try:
        return Path(path).expanduser().read_text()
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        where = (origin or {}).get(key, "the settings")
        raise config_error([f"{key} (from {where}): cannot read {path}: {why}"]) from None


# -- kazoo (ZooKeeper) -----------------------------------------------------------------------
def kazoo_args(
    config: Mapping[str, Any], origin: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """KazooClient keyword arguments from the `zookeeper.*` properties of `config` (empty when
    there are none): auth_data, sasl_options, and TLS (use_ssl, ca, certfile, keyfile,
    keyfile_password, verify_certs, check_hostname)."""
    resolved = secrets.resolve(config, origin)
    origin = origin or {}
    z = {k: str(v) for k, v in resolved.items() if k.startswith(ZOOKEEPER_PREFIX)}
    problems: list[str] = []

    def problem(key: str, what: str) -> None:
        problems.append(f"{key} (from {origin.get(key, 'the settings')}): {what}")

    for key in z:
        if key not in ZOOKEEPER_KEYS:
            problem(key, f"unknown ZooKeeper property (known: {', '.join(ZOOKEEPER_KEYS)})")
    out: dict[str, Any] = {}
    if z.get("zookeeper.auth"):
        scheme, sep, credential = z["zookeeper.auth"].partition(":")
        if not sep or not scheme or not credential:
            problem("zookeeper.auth", "must be SCHEME:CREDENTIAL, e.g. digest:USER:PASSWORD")
        out["auth_data"] = [(scheme, credential)]
    if any(k.startswith("zookeeper.sasl.") for k in z):
        mechanism = z.get("zookeeper.sasl.mechanism", "DIGEST-MD5").upper()
        sasl: dict[str, str] = {"mechanism": mechanism}
        if mechanism == "DIGEST-MD5":
            for key in ("zookeeper.sasl.username", "zookeeper.sasl.password"):
                if not z.get(key):
                    problem(key, f"ZooKeeper SASL {mechanism} needs {key}")
            sasl["username"] = z.get("zookeeper.sasl.username", "")
            sasl["password"] = z.get("zookeeper.sasl.password", "")
        elif mechanism != "GSSAPI":
            problem("zookeeper.sasl.mechanism", f"{mechanism!r} is not DIGEST-MD5 or GSSAPI")
        if importlib.util.find_spec("puresasl") is None:  # kazoo's SASL needs it
            key = next(k for k in z if k.startswith("zookeeper.sasl."))
            problem(
                key,
                "ZooKeeper SASL needs the pure-sasl package, which is not installed "
                "(pip install pure-sasl); zookeeper.auth=digest:USER:PASSWORD needs nothing",
            )
        out["sasl_options"] = sasl
    tls = {k: v for k, v in z.items() if k.startswith("zookeeper.ssl.") or "ssl" in k}
    enable = z.get("zookeeper.ssl.enable", "true" if tls else "false").lower()
    if enable not in _TRUE + _FALSE:
        problem("zookeeper.ssl.enable", f"{enable!r} is not true or false")
    if enable in _TRUE:
        algorithm = z.get("zookeeper.ssl.endpoint.identification.algorithm", "https").lower()
        if algorithm not in ("https", "none"):
            problem(
                "zookeeper.ssl.endpoint.identification.algorithm",
                f"{algorithm!r} is not https or none",
            )
        verification = z.get("zookeeper.enable.ssl.certificate.verification", "true").lower()
        if verification not in _TRUE + _FALSE:
            problem(
                "zookeeper.enable.ssl.certificate.verification",
                f"{verification!r} is not true or false",
            )
        out["use_ssl"] = True
        for key, arg in (
            ("zookeeper.ssl.ca.location", "ca"),
            ("zookeeper.ssl.certificate.location", "certfile"),
            ("zookeeper.ssl.key.location", "keyfile"),
            ("zookeeper.ssl.key.password", "keyfile_password"),
        ):
            if z.get(key):
                out[arg] = z[key]
        out["verify_certs"] = verification in _TRUE
        out["check_hostname"] = algorithm == "https" and verification in _TRUE
    if problems:
        raise config_error(problems)
    return out


def problems(config: Mapping[str, Any], origin: Mapping[str, str] | None = None) -> list[str]:
    """What `check` refuses, each problem on its own (empty when nothing)."""
    try:
        check(config, origin)
    except ConfigError as exc:
        return list(exc.problems)
    return []
