"""A cluster kconsole could not ask is said as such, never as a dead one: a refused login or TLS
handshake (named, with the broker) and nothing answering leave every broker unknown -- not
down -- and the controller unknown, not "none"; `describe` says why on its first lines."""

from __future__ import annotations

import time
from dataclasses import replace

from confluent_kafka import KafkaError

from kconsole.cluster.security import clients
from kconsole.cluster.values import ProcState
from kconsole.describe import not_asked, render_text
from kconsole.models import BrokerState, SourceHealth, SourceName
from kconsole.observer import SnapshotBuilder
from tests.unit.test_observer_builder import zk_state

SASL = (
    "sasl_plaintext://127.0.0.1:30301/bootstrap: SASL authentication error: Authentication "
    "failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512 "
    "(after 150ms in state AUTH_REQ)"
)
# librdkafka's words when a TLS 1.3 broker refuses the client's certificate: a transport error.
TLS_ALERT = (
    "ssl://127.0.0.1:30323/bootstrap: Receive failed: error:0A000412:SSL routines::ssl/tls "
    "alert bad certificate: SSL alert number 42 (after 13ms in state APIVERSION_QUERY)"
)


def test_a_refusal_names_the_broker_and_the_mechanism_or_the_tls_alert() -> None:
    assert clients.auth_text(SASL) == (
        "authentication failed at broker 127.0.0.1:30301: invalid credentials (SASL mechanism "
        "SCRAM-SHA-512)"
    )
    assert clients.auth_text(TLS_ALERT) == (
        "TLS handshake with broker 127.0.0.1:30323 failed: ssl/tls alert bad certificate (SSL "
        "alert number 42): the broker requires a client certificate it accepts "
        "(ssl.certificate.location, ssl.key.location)"
    )


def test_a_tls_alert_reported_as_a_transport_error_is_remembered_as_a_refusal() -> None:
    servers = "127.0.0.1:30323"
    since = time.monotonic()
    on_error = clients.rdkafka_error_cb(servers)
    on_error(KafkaError(KafkaError._TRANSPORT, "ssl://127.0.0.1:30323/1: Connect failed"))
    assert clients.auth_failure(servers, since) is None  # a broker that is down is no refusal
    on_error(
        KafkaError(KafkaError._TRANSPORT, TLS_ALERT.replace("bad certificate", "decode error"))
    )
    assert clients.auth_failure(servers, since) is None  # an alert that refuses nobody
    on_error(KafkaError(KafkaError._TRANSPORT, TLS_ALERT))
    assert (clients.auth_failure(servers, since) or "").startswith(
        "TLS handshake with broker 127.0.0.1:30323 failed"
    )


def refused_builder(states: dict[int, ProcState]) -> SnapshotBuilder:
    """No ZooKeeper; the Admin API and the groups refused (SASL), the quorum failed."""
    b = SnapshotBuilder(use_zookeeper=False)
    b.proc_states = states
    why = clients.auth_text(SASL)
    b.quorum_failed(why, refused=True)
    b.health[SourceName.ADMIN].failure(why, refused=True)
    b.health[SourceName.GROUPS].failure(why, refused=True)
    return b


def test_running_brokers_that_refused_the_login_are_unknown_not_down() -> None:
    snap = refused_builder(dict.fromkeys((1, 2, 3), ProcState.RUNNING)).build(100.0)
    assert [b.state for b in snap.brokers] == [BrokerState.UNKNOWN] * 3
    assert snap.refused.startswith("authentication failed at broker 127.0.0.1:30301")
    assert snap.unreached == snap.refused
    assert snap.controller.id is None
    text = render_text(snap, now=100.0)
    assert text.splitlines()[2] == f"the brokers could not be asked: {snap.refused}"
    assert "controller: unknown (the brokers could not be asked)" in text
    assert "NONE" not in text and " down" not in text
    assert "1       -        -     unknown  ?      ?         ?" in text  # no count is 0


def test_a_broker_whose_process_is_stopped_is_down_even_then() -> None:
    snap = refused_builder({1: ProcState.STOPPED, 2: ProcState.RUNNING}).build(100.0)
    assert [(b.id, b.state) for b in snap.brokers] == [
        (1, BrokerState.DOWN),
        (2, BrokerState.UNKNOWN),
    ]


def test_nothing_answering_is_unreached_with_its_age_and_the_hint() -> None:
    b = SnapshotBuilder(use_zookeeper=True)
    b.health[SourceName.ZOOKEEPER].failure("ZooKeeper 127.0.0.1:1: nothing listens")
    b.health[SourceName.ADMIN].failure("nothing listens at 127.0.0.1:2 (connection refused)")
    b.health[SourceName.GROUPS].failure("nothing listens at 127.0.0.1:2 (connection refused)")
    b.start_hint = "the local cluster is not running: start it with `kconsole cluster up`"
    snap = b.build(100.0)
    assert snap.refused == ""
    assert (
        snap.unreached == "nothing listens at 127.0.0.1:2 (connection refused)"
    )  # the Admin API's
    assert not_asked(snap, now=100.0) == (
        "cannot reach the cluster (never answered): nothing listens at 127.0.0.1:2 (connection "
        "refused); the local cluster is not running: start it with `kconsole cluster up`"
    )
    # once answered, then silent: how long since
    answered = [SourceHealth(SourceName.ADMIN, False, 58.0, "nothing listens")]
    later = replace(snap, sources=(*snap.sources[:1], *answered, *snap.sources[2:]))
    assert not_asked(later, now=100.0).startswith("cannot reach the cluster (last answered 42.0s")
    assert "controller: unknown (cannot reach the cluster)" in render_text(snap, now=100.0)


def test_one_source_answering_or_one_not_tried_yet_is_not_unreached() -> None:
    b = SnapshotBuilder(use_zookeeper=True)
    b.health[SourceName.ADMIN].failure("nothing listens at 127.0.0.1:2 (connection refused)")
    assert b.build(1.0).unreached == ""  # ZooKeeper has not answered or failed yet
    b.zk = zk_state()
    b.health[SourceName.ZOOKEEPER].success(1.0)
    snap = b.build(1.0)
    assert snap.unreached == "" and snap.refused == ""
    assert {br.state for br in snap.brokers} == {BrokerState.UP}  # ZooKeeper's registrations
    b.health[SourceName.ADMIN].failure(clients.auth_text(TLS_ALERT), refused=True)
    snap = b.build(2.0)
    assert snap.unreached == ""  # ZooKeeper answers: the brokers it lists are shown
    assert snap.refused.startswith("TLS handshake with broker")
    assert not_asked(snap).startswith("the brokers could not be asked: TLS handshake")
