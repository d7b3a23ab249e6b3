"""The one translation of the security settings (kconsole.cluster.security.translate) into each
client's own, as exact dicts written against the libraries' own names: librdkafka's CONFIGURATION.md
properties (checked by creating a librdkafka client with them), kafka-python's KafkaAdminClient
and KafkaConsumer arguments, Spark's `kafka.`-prefixed Java client properties, and kazoo's
KazooClient arguments. And the secrets they carry: from the environment or a file."""

from __future__ import annotations

import base64
import importlib.util
import inspect
import io
import json
import ssl
import urllib.error
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from kafka import KafkaConsumer
from kafka.admin import KafkaAdminClient
from kazoo.client import KazooClient

from kconsole import secrets
from kconsole.cluster.security import translate as security
from kconsole.cluster.security.translate import (
    ClientCredentialsTokens,
    OAuthClientCredentials,
    kafka_python_args,
    kazoo_args,
    librdkafka_config,
    spark_kafka_options,
)
from kconsole.errors import ConfigError

SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
OAUTH_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"

SASL = {
    "bootstrap.servers": "b1:9093,b2:9093",
    "security.protocol": "sasl_ssl",
    "sasl.username": "ops",
    "sasl.password": "pw",
    "ssl.ca.location": "/etc/kafka/ca.pem",
}
OAUTH = {
    "bootstrap.servers": "b1:9093",
    "security.protocol": "SASL_SSL",
    "sasl.mechanism": "OAUTHBEARER",
    "sasl.oauthbearer.method": "oidc",
    "sasl.oauthbearer.client.id": "kconsole",
    "sasl.oauthbearer.client.secret": "s3cret",
    "sasl.oauthbearer.token.endpoint.url": "https://idp.example/token",
    "sasl.oauthbearer.scope": "kafka",
}


def librdkafka_accepts(conf: Mapping[str, Any]) -> None:
    """librdkafka takes every property (no bootstrap: it checks and connects nowhere; the
    files named are not there, so they are left out)."""
    Producer(
        {k: v for k, v in conf.items() if not k.endswith(".location")} | {"bootstrap.servers": ""}
    )


def kafka_python_accepts(args: Mapping[str, Any]) -> None:
    """Every argument is one KafkaAdminClient and KafkaConsumer take."""
    assert set(args) <= set(KafkaAdminClient.DEFAULT_CONFIG)
    assert set(args) <= set(KafkaConsumer.DEFAULT_CONFIG)


def kazoo_accepts(args: Mapping[str, Any]) -> None:
    params = inspect.signature(KazooClient.__init__).parameters
    assert set(args) <= set(params) - {"self", "kwargs"}
    KazooClient(hosts="127.0.0.1:1", **args)  # builds without connecting


# -- librdkafka ---------------------------------------------------------------------------------
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_librdkafka_sasl(mechanism: str) -> None:
    conf = librdkafka_config({**SASL, "sasl.mechanism": mechanism})
    assert conf == {
        **SASL,
        "sasl.mechanism": mechanism,
        "ssl.endpoint.identification.algorithm": "https",  # hostname verification on
    }
    librdkafka_accepts(conf)


def test_librdkafka_mtls_with_hostname_verification_turned_off_explicitly() -> None:
    given = {
        "security.protocol": "SSL",
        "ssl.ca.location": "/ca.pem",
        "ssl.certificate.location": "/client.pem",
        "ssl.key.location": "/client.key",
        "ssl.key.password": "kp",
        "ssl.endpoint.identification.algorithm": "none",
    }
    assert librdkafka_config(given) == given


def test_librdkafka_oauthbearer_client_credentials_and_zookeeper_left_out() -> None:
    conf = librdkafka_config({**OAUTH, "zookeeper.auth": "digest:u:p"})
    assert conf == {**OAUTH, "ssl.endpoint.identification.algorithm": "https"}


def test_plaintext_is_left_as_it_is() -> None:
    given = {"bootstrap.servers": "h:9092", "client.id": "me", "linger.ms": "5"}
    assert librdkafka_config(given) == given


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ({"security.protocol": "TLS"}, "security.protocol (from -X): 'TLS' is not one of"),
        (
            {"security.protocol": "SASL_SSL", "sasl.mechanism": "KERBEROS"},
            "sasl.mechanism (from -X): 'KERBEROS' is not one of PLAIN, SCRAM-SHA-256, "
            "SCRAM-SHA-512, OAUTHBEARER",
        ),
        (
            {"security.protocol": "SASL_SSL"},  # librdkafka's default mechanism, GSSAPI
            "sasl.mechanism (from the settings): 'GSSAPI' is not one of",
        ),
        (
            {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"},
            "OAUTHBEARER needs sasl.oauthbearer.method=oidc",
        ),
        (
            {"ssl.endpoint.identification.algorithm": "maybe"},
            "ssl.endpoint.identification.algorithm (from -X): 'maybe' is not https or none",
        ),
        ({"ssl.key.location": "/k"}, "a client key needs its certificate"),
        ({"zookeeper.sasl.user": "u"}, "zookeeper.sasl.user (from -X): unknown ZooKeeper"),
    ],
)
def test_refused_settings_are_named_with_their_origin(given: dict[str, str], problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        security.check(given, dict.fromkeys(given, "-X"))
    assert any(problem in p for p in caught.value.problems), caught.value.problems


# -- kafka-python -------------------------------------------------------------------------------
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kafka_python_sasl(mechanism: str) -> None:
    args = kafka_python_args({**SASL, "sasl.mechanism": mechanism, "client.id": "kc"})
    assert args == {
        "bootstrap_servers": "b1:9093,b2:9093",
        "client_id": "kc",
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": "ops",
        "sasl_plain_password": "pw",
        "ssl_cafile": "/etc/kafka/ca.pem",
        "ssl_check_hostname": True,
    }
    kafka_python_accepts(args)


def test_kafka_python_mtls() -> None:
    args = kafka_python_args(
        {
            "security.protocol": "SSL",
            "ssl.ca.location": "/ca.pem",
            "ssl.certificate.location": "/client.pem",
            "ssl.key.location": "/client.key",
            "ssl.key.password": "kp",
            "ssl.endpoint.identification.algorithm": "none",
        }
    )
    assert args == {
        "security_protocol": "SSL",
        "ssl_cafile": "/ca.pem",
        "ssl_certfile": "/client.pem",
        "ssl_keyfile": "/client.key",
        "ssl_password": "kp",
        "ssl_check_hostname": False,
    }
    kafka_python_accepts(args)


def test_kafka_python_without_certificate_verification_gets_a_context_that_trusts_any() -> None:
    args = kafka_python_args(
        {"security.protocol": "SSL", "enable.ssl.certificate.verification": "false"}
    )
    ctx = args.pop("ssl_context")
    assert args == {"security_protocol": "SSL", "ssl_check_hostname": False}
    assert isinstance(ctx, ssl.SSLContext) and ctx.verify_mode is ssl.CERT_NONE
    assert not ctx.check_hostname


def test_kafka_python_oauthbearer_gets_a_client_credentials_token_provider() -> None:
    from kafka.net.sasl.oauth import AbstractTokenProvider

    args = kafka_python_args(OAUTH)
    provider = args.pop("sasl_oauth_token_provider")
    assert args == {
        "bootstrap_servers": "b1:9093",
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "OAUTHBEARER",
        "ssl_check_hostname": True,
    }
    assert isinstance(provider, AbstractTokenProvider)  # what kafka-python insists on
    assert provider.tokens.creds == OAuthClientCredentials(
        "https://idp.example/token", "kconsole", "s3cret", "kafka"
    )
    assert "s3cret" not in repr(provider)
    kafka_python_accepts({**args, "sasl_oauth_token_provider": provider})


class _Response(io.BytesIO):
    def __enter__(self) -> _Response:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def test_client_credentials_tokens_are_fetched_reused_and_renewed() -> None:
    sent: list[Any] = []
    now = [0.0]

    def urlopen(request: Any, timeout: float) -> _Response:
        sent.append(request)
        body = {"access_token": f"tok{len(sent)}", "expires_in": 100}
        return _Response(json.dumps(body).encode())

    tokens = ClientCredentialsTokens(
        OAuthClientCredentials("https://idp/t", "id:1", "s3cret", "kafka"),
        urlopen=urlopen,
        clock=lambda: now[0],
    )
    assert tokens.token() == "tok1"
    now[0] = 79.0
    assert tokens.token() == "tok1"  # reused while fresh
    now[0] = 80.0
    assert tokens.token() == "tok2"  # renewed at 80% of its life
    req = sent[0]
    assert req.full_url == "https://idp/t" and req.get_method() == "POST"
    assert urllib.parse.parse_qs(req.data.decode()) == {
        "grant_type": ["client_credentials"],
        "scope": ["kafka"],
    }
    basic = base64.b64decode(req.get_header("Authorization").removeprefix("Basic ")).decode()
    assert basic == "id%3A1:s3cret"  # RFC 6749 2.3.1: form-encoded, then Basic


def test_a_refused_token_request_says_so_without_the_secret() -> None:
    def urlopen(request: Any, timeout: float) -> _Response:
        raise urllib.error.HTTPError(request.full_url, 401, "Unauthorized", {}, None)  # type: ignore[arg-type]

    tokens = ClientCredentialsTokens(
        OAuthClientCredentials("https://idp/t", "kc", "s3cret-value"), urlopen=urlopen
    )
    with pytest.raises(Exception, match="refused the client credentials: HTTP 401") as caught:
        tokens.token()
    assert "s3cret-value" not in str(caught.value)


# -- Spark (Java clients) -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("mechanism", "module"),
    [("PLAIN", PLAIN_MODULE), ("SCRAM-SHA-256", SCRAM_MODULE), ("SCRAM-SHA-512", SCRAM_MODULE)],
)
def test_spark_sasl(mechanism: str, module: str) -> None:
    spark = spark_kafka_options({**SASL, "sasl.mechanism": mechanism, "sasl.password": 'p"w\\'})
    assert spark.options == {
        "kafka.bootstrap.servers": "b1:9093,b2:9093",
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": mechanism,
        "kafka.sasl.jaas.config": f'{module} required username="ops" password="p\\"w\\\\";',
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": "/etc/kafka/ca.pem",
        "kafka.ssl.endpoint.identification.algorithm": "https",
    }
    assert spark.jvm_properties == {} and spark.untranslated == []
    assert 'p\\"w' not in repr(spark)


def test_spark_oauthbearer_client_credentials() -> None:
    spark = spark_kafka_options(OAUTH)
    assert spark.options == {
        "kafka.bootstrap.servers": "b1:9093",
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "OAUTHBEARER",
        "kafka.sasl.jaas.config": (
            f'{OAUTH_MODULE} required clientId="kconsole" clientSecret="s3cret" scope="kafka";'
        ),
        "kafka.sasl.oauthbearer.token.endpoint.url": "https://idp.example/token",
        "kafka.sasl.login.callback.handler.class": OAUTH_HANDLER,
        "kafka.ssl.endpoint.identification.algorithm": "https",
    }
    # Java clients from 3.9.1/4.0 call only the token endpoints this property allows.
    assert spark.jvm_properties == {
        "org.apache.kafka.sasl.oauthbearer.allowed.urls": "https://idp.example/token"
    }


def test_spark_mtls_passes_the_pem_certificate_and_key(tmp_path: Path) -> None:
    (tmp_path / "client.pem").write_text("-----BEGIN CERTIFICATE-----\nC\n")
    (tmp_path / "client.key").write_text("-----BEGIN ENCRYPTED PRIVATE KEY-----\nK\n")
    spark = spark_kafka_options(
        {
            "security.protocol": "SSL",
            "ssl.ca.location": "/ca.pem",
            "ssl.certificate.location": str(tmp_path / "client.pem"),
            "ssl.key.location": str(tmp_path / "client.key"),
            "ssl.key.password": "kp",
            "ssl.endpoint.identification.algorithm": "none",
            "enable.ssl.certificate.verification": "false",
            "statistics.interval.ms": "100",
        }
    )
    assert spark.options == {
        "kafka.security.protocol": "SSL",
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": "/ca.pem",
        "kafka.ssl.keystore.type": "PEM",
        "kafka.ssl.keystore.certificate.chain": "-----BEGIN CERTIFICATE-----\nC\n",
        "kafka.ssl.keystore.key": "-----BEGIN ENCRYPTED PRIVATE KEY-----\nK\n",
        "kafka.ssl.key.password": "kp",
        "kafka.ssl.endpoint.identification.algorithm": "",  # off: only when asked
    }
    # No Java equivalent: said, not silently dropped.
    assert spark.untranslated == ["statistics.interval.ms", "enable.ssl.certificate.verification"]
    assert "ENCRYPTED PRIVATE KEY-----\nK" not in repr(spark) and "'kp'" not in repr(spark)


def test_spark_unreadable_certificate_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"ssl.certificate.location \(from -X\): cannot read"):
        spark_kafka_options(
            {
                "security.protocol": "SSL",
                "ssl.certificate.location": "/nonexistent/c.pem",
                "ssl.key.location": "/nonexistent/c.key",
            },
            {"ssl.certificate.location": "-X"},
        )


# -- kazoo --------------------------------------------------------------------------------------
def test_kazoo_digest_auth() -> None:
    args = kazoo_args({**SASL, "zookeeper.auth": "digest:ops:zpw"})
    assert args == {"auth_data": [("digest", "ops:zpw")]}
    kazoo_accepts(args)


def test_kazoo_sasl_digest_md5(monkeypatch: pytest.MonkeyPatch) -> None:
    given = {"zookeeper.sasl.username": "ops", "zookeeper.sasl.password": "zpw"}
    if importlib.util.find_spec("puresasl") is None:
        with pytest.raises(ConfigError, match="needs the pure-sasl package"):
            kazoo_args(given)
        monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    args = kazoo_args(given)
    assert args == {
        "sasl_options": {"mechanism": "DIGEST-MD5", "username": "ops", "password": "zpw"}
    }
    kazoo_accepts(args)


def test_kazoo_tls_with_a_client_certificate() -> None:
    args = kazoo_args(
        {
            "zookeeper.ssl.ca.location": "/zk-ca.pem",
            "zookeeper.ssl.certificate.location": "/zk-client.pem",
            "zookeeper.ssl.key.location": "/zk-client.key",
            "zookeeper.ssl.key.password": "kp",
        }
    )
    assert args == {
        "use_ssl": True,
        "ca": "/zk-ca.pem",
        "certfile": "/zk-client.pem",
        "keyfile": "/zk-client.key",
        "keyfile_password": "kp",
        "verify_certs": True,
        "check_hostname": True,  # on by default (kazoo's own default is off)
    }
    kazoo_accepts(args)
    off = kazoo_args(
        {"zookeeper.ssl.enable": "true", "zookeeper.ssl.endpoint.identification.algorithm": "none"}
    )
    assert off == {"use_ssl": True, "verify_certs": True, "check_hostname": False}


def test_kazoo_without_zookeeper_properties_gets_nothing() -> None:
    assert kazoo_args(SASL) == {}


def test_kazoo_bad_auth_is_named() -> None:
    with pytest.raises(ConfigError, match=r"zookeeper.auth \(from -X\): must be SCHEME:CRED"):
        kazoo_args({"zookeeper.auth": "digest"}, {"zookeeper.auth": "-X"})


# -- secrets: from the environment, from a file ------------------------------------------------
def test_a_value_from_the_environment() -> None:
    got = secrets.resolve(
        {"sasl.password": "${KC_PW}", "sasl.username": "u-${KC_USER}", "x": "$${LITERAL}"},
        env={"KC_PW": "from-env", "KC_USER": "ops"},
    )
    assert got == {"sasl.password": "from-env", "sasl.username": "u-ops", "x": "${LITERAL}"}


def test_a_secret_from_a_file_read_at_use(tmp_path: Path) -> None:
    f = tmp_path / "pw"
    f.write_text("first\n")
    props = {"sasl.password_file": str(f), "sasl.oauthbearer.client.secret_file": str(f)}
    assert secrets.resolve(props) == {
        "sasl.password": "first",
        "sasl.oauthbearer.client.secret": "first",
    }
    f.write_text("second\r\n")  # rotated: the next client reads the new one
    assert secrets.resolve(props)["sasl.password"] == "second"


def test_resolved_properties_are_not_resolved_twice(tmp_path: Path) -> None:
    (tmp_path / "pw").write_text("a${B}c\n")
    once = secrets.resolve({"sasl.password_file": str(tmp_path / "pw")}, env={})
    assert secrets.resolve(once, env={}) == {"sasl.password": "a${B}c"}


def test_missing_secrets_are_named_never_shown(tmp_path: Path) -> None:
    origin = {"sasl.password": "-X", "ssl.key.password_file": "[client] in c.toml"}
    with pytest.raises(ConfigError) as caught:
        secrets.resolve(
            {
                "sasl.password": "${KC_NOT_SET}",
                "ssl.key.password_file": str(tmp_path / "missing"),
                "sasl.oauthbearer.client.secret_file": str(tmp_path),  # a directory
            },
            origin,
            env={},
        )
    assert caught.value.problems == (
        "sasl.password (from -X): the environment variable KC_NOT_SET is not set",
        f"ssl.key.password_file (from [client] in c.toml): cannot read the secret file "
        f"{tmp_path / 'missing'}: No such file or directory",
        "sasl.oauthbearer.client.secret_file (from the settings): cannot read the secret file "
        f"{tmp_path}: Is a directory",
    )


def test_both_a_secret_and_its_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pw").write_text("x")
    with pytest.raises(ConfigError, match=r"both sasl\.password and sasl\.password_file"):
        secrets.resolve({"sasl.password": "a", "sasl.password_file": str(tmp_path / "pw")})


def test_masked_shows_paths_but_not_secrets() -> None:
    assert secrets.masked(
        {
            "sasl.username": "ops",
            "sasl.password": "pw",
            "sasl.password_file": "/p",
            "sasl.jaas.config": "x",
            "ssl.key.location": "/k",
            "ssl.keystore.key": "K",
            "sasl.oauthbearer.token.endpoint.url": "https://idp",
            "zookeeper.auth": "digest:u:p",
        }
    ) == {
        "sasl.username": "ops",
        "sasl.password": "***",
        "sasl.password_file": "/p",
        "sasl.jaas.config": "***",
        "ssl.key.location": "/k",
        "ssl.keystore.key": "***",
        "sasl.oauthbearer.token.endpoint.url": "https://idp",
        "zookeeper.auth": "***",
    }


def test_the_principal_is_said_as_kafka_names_it(tmp_path: Path) -> None:
    """SASL: the user; TLS: the client certificate's subject in RFC 2253 order (as Java's
    X500Principal writes it, Kafka's default principal); neither: ANONYMOUS."""
    import subprocess

    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/O=kconsole local/CN=kconsole, jr", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    tls = {"security.protocol": "SSL", "ssl.ca.location": str(cert)}
    assert (
        security.principal(
            {**tls, "ssl.certificate.location": str(cert), "ssl.key.location": str(key)}
        )
        == "User:CN=kconsole\\, jr,O=kconsole local (TLS certificate)"
    )
    assert security.principal(tls) == "User:ANONYMOUS (TLS, no client certificate)"
    sasl = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": "bob", "sasl.password": "pw"}  # fmt: skip
    assert security.principal(sasl) == "User:bob (PLAIN)"
    assert security.principal({}) == "User:ANONYMOUS (PLAINTEXT)"
    assert security.principal({"security.protocol": "bogus"}).startswith("unknown (")
