"""An ACL refusal is said as what it is: which operation on which resource, denied to whom.

The error names and texts here are the ones a real SASL/SCRAM cluster with an authorizer gave a
user with READ on one topic only (tests/integration/test_secured_local.py drives the same
refusals for real)."""

from __future__ import annotations

from typing import Any

import kafka.errors as kerrors
import pytest
from confluent_kafka import KafkaError, KafkaException

from kconsole.cluster.produce.send import WarmProducer
from kconsole.cluster.reassign.client import ReassignClient
from kconsole.cluster.security import denied
from kconsole.cluster.tail import TailError
from kconsole.cluster.tailer import Tailer
from kconsole.config import Settings
from kconsole.errors import AuthorizationDenied

READER = {
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "SCRAM-SHA-512",
    "sasl.username": "reader",
    "sasl.password": "not-shown",
}


def reader_settings() -> Settings:
    return Settings(bootstrap="127.0.0.1:1", zookeeper="", client=dict(READER))


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("CLUSTER_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED"),
        ("KafkaError{code=TOPIC_AUTHORIZATION_FAILED,val=29}", "TOPIC_AUTHORIZATION_FAILED"),
        ("[Error 30] GroupAuthorizationFailedError: g", "GROUP_AUTHORIZATION_FAILED"),
        ("Broker: Not leader for partition", None),
        ("SASL authentication error", None),
    ],
)
def test_the_authorization_errors_are_told_from_the_rest(text: str, name: str | None) -> None:
    assert denied.authorization_error(text) == name


def test_the_message_names_the_principal_the_operation_and_the_resource() -> None:
    topic = denied.denied(
        "TOPIC_AUTHORIZATION_FAILED", "Produce", "orders", principal="User:reader (SCRAM-SHA-512)"
    )
    assert topic.message == (
        "denied by the cluster's ACLs: User:reader may not WRITE topic orders "
        "(produce; TOPIC_AUTHORIZATION_FAILED)"
    )
    cluster = denied.denied("CLUSTER_AUTHORIZATION_FAILED", "ElectLeaders", "ignored")
    assert "this client may not ALTER the cluster (elect leaders;" in cluster.message
    # a request not in the table still says the error and the resource kind
    other = denied.denied("GROUP_AUTHORIZATION_FAILED", "Heartbeat", "g1")
    assert "may not ? group g1 (Heartbeat; GROUP_AUTHORIZATION_FAILED)" in other.message


class RefusingAdmin:
    """kafka-python's admin as the reader's refusals made it: list -> the error raised;
    elect -> a response whose top-level code is CLUSTER_AUTHORIZATION_FAILED (31)."""

    def list_partition_reassignments(self, **_: Any) -> Any:
        raise kerrors.ClusterAuthorizationFailedError()

    def elect_leaders(self, *_: Any, **__: Any) -> Any:
        class Response:
            error_code = kerrors.ClusterAuthorizationFailedError.errno
            replica_election_results: list[Any] = []

        return Response()

    def close(self) -> None:
        pass


def test_reassignment_and_election_refusals_say_what_was_denied_to_whom() -> None:
    client = ReassignClient(reader_settings(), timeout_s=0.5)
    client._admin = RefusingAdmin()
    with pytest.raises(AuthorizationDenied) as listed:
        client.ongoing()
    assert listed.value.message == (
        "denied by the cluster's ACLs: User:reader may not DESCRIBE the cluster "
        "(list partition reassignments; CLUSTER_AUTHORIZATION_FAILED)"
    )
    with pytest.raises(AuthorizationDenied, match="User:reader may not ALTER the cluster"):
        client.elect("preferred", None)
    assert "not-shown" not in listed.value.message


class ErrorMessage:
    def __init__(self, code: int) -> None:
        self._err = KafkaError(code)

    def error(self) -> KafkaError:
        return self._err


class DeniedConsumer:
    def __init__(self, code: int) -> None:
        self.code = code

    def consume(self, num_messages: int, timeout: float) -> list[ErrorMessage]:
        return [ErrorMessage(self.code)]


def test_a_tail_the_group_acl_refuses_says_so_and_a_groupless_one_reads_on() -> None:
    grouped = Tailer(reader_settings(), "test-topic", group_id="other-group")
    grouped._consumer = DeniedConsumer(KafkaError.GROUP_AUTHORIZATION_FAILED)  # type: ignore[assignment]
    with pytest.raises(TailError) as refused:
        grouped.poll(0.1)
    assert refused.value.message == (
        "denied by the cluster's ACLs: User:reader may not READ group other-group "
        "(join the consumer group; GROUP_AUTHORIZATION_FAILED)"
    )
    # A groupless tail's throw-away group id is looked up by librdkafka too, and refused; it
    # needs no group (explicit offsets, no commits), so that is not an error for it.
    groupless = Tailer(reader_settings(), "test-topic")
    groupless._consumer = DeniedConsumer(KafkaError.GROUP_AUTHORIZATION_FAILED)  # type: ignore[assignment]
    assert groupless.poll(0.1) == []
    groupless._consumer = DeniedConsumer(KafkaError.TOPIC_AUTHORIZATION_FAILED)  # type: ignore[assignment]
    with pytest.raises(TailError, match="User:reader may not READ topic test-topic"):
        groupless.poll(0.1)


class FatalProducer:
    """librdkafka's producer after the cluster refused the idempotent producer its id: every
    poll raises the fatal error (as it did on the real cluster)."""

    def poll(self, timeout: float) -> int:
        raise KafkaException(
            KafkaError(
                KafkaError.CLUSTER_AUTHORIZATION_FAILED,
                "Failed to acquire idempotence PID from broker sasl_plaintext://h:1/3: "
                "Broker: Cluster authorization failed",
                fatal=True,
            )
        )

    def list_topics(self, *_: Any, **__: Any) -> None:
        pass


def test_a_producer_refused_its_id_stops_at_once_and_says_why() -> None:
    warm = WarmProducer(reader_settings(), acks="all")
    warm.producer = FatalProducer()  # type: ignore[assignment]
    warm._note_auth = lambda err: None
    warm._keep()  # returns: a fatal error spends the producer (it used to die with a traceback)
    assert not warm.usable
    assert warm.denial is not None
    assert warm.denial.message == (
        "denied by the cluster's ACLs: User:reader may not IDEMPOTENT_WRITE the cluster "
        "(an idempotent producer's id; CLUSTER_AUTHORIZATION_FAILED)"
    )
    with pytest.raises(AuthorizationDenied):
        warm.warm("test-topic", timeout_s=5.0)


def test_the_error_callback_knows_the_denial_before_the_producer_is_spent() -> None:
    """librdkafka's error_cb hears of the fatal error first, as _FATAL with the cause in its
    text: the denial is set before `spent` (warm() stops waiting once the producer is spent,
    and the dialog then said a send would be accepted)."""
    warm = WarmProducer(reader_settings(), acks="all")
    warm._note_auth = lambda err: None
    warm._on_error(
        KafkaError(
            KafkaError._FATAL,
            "Fatal error: Broker: Cluster authorization failed: Failed to acquire idempotence "
            "PID from broker sasl_plaintext://h:1/3: Broker: Cluster authorization failed",
            fatal=True,
        )
    )
    assert warm.denial is not None and warm.spent == warm.denial.message
    assert "User:reader may not IDEMPOTENT_WRITE the cluster" in warm.spent
