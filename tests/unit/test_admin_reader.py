"""The Admin poll asks librdkafka for metadata only: its admin requests (DescribeCluster,
DescribeConfigs) aborted the process when a broker went away mid-request (seen stopping the
controller under the console: `rd_kafka_admin_response_parse: Assertion rko_result failed`).
Racks and configs come from kafka-python, and a failure there keeps the last values."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from kconsole.cluster import admin as admin_mod
from kconsole.cluster.admin import AdminReader
from kconsole.errors import ClusterError


class MetadataOnly:
    """librdkafka's AdminClient, allowing only list_topics (a Metadata request)."""

    def __init__(self, conf: dict[str, Any]) -> None:
        self.calls: list[str] = []
        self.conf = conf
        self.pending: list[Any] = []  # errors librdkafka would hand error_cb at the next poll

    def poll(self, timeout: float) -> int:
        """Serves callbacks (as librdkafka's: no request is sent)."""
        served, self.pending = self.pending, []
        for err in served:
            self.conf["error_cb"](err)
        return len(served)

    def list_topics(self, timeout: float) -> Any:
        self.calls.append("list_topics")
        part = SimpleNamespace(id=0, leader=1, replicas=[1, 2, 3], isrs=[1, 2, 3])
        return SimpleNamespace(
            cluster_id="cid",
            controller_id=2,
            brokers={i: SimpleNamespace(id=i, host="127.0.0.1", port=19091 + i) for i in (1, 2, 3)},
            topics={"t": SimpleNamespace(error=None, partitions={0: part})},
        )

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"librdkafka admin request {name} must not be used")


class KafkaPython:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls = 0

    def describe_cluster(self) -> dict[str, Any]:
        self.calls += 1
        if self.fail:
            raise OSError("broker gone")
        # The shape kafka-python 3.0 returns (recorded from the local cluster).
        return {
            "cluster_id": "cid",
            "controller_id": 2,
            "authorized_operations": ["DESCRIBE"],
            "brokers": [
                {"broker_id": i, "host": "127.0.0.1", "port": 19091 + i, "rack": f"r{i}"}
                for i in (1, 2, 3)
            ],
        }

    def describe_configs(self, resources: list[Any], config_filter: str) -> dict[str, Any]:
        self.calls += 1
        if self.fail:
            raise OSError("broker gone")
        out: dict[str, Any] = {}
        for r in resources:
            kind = "topic" if r.resource_type.name == "TOPIC" else "broker"
            value = {"min.insync.replicas": {"value": "2"}} if kind == "topic" else {
                "zookeeper.session.timeout.ms": {"value": "6000"},
                "replica.lag.time.max.ms": {"value": "10000"},
            }  # fmt: skip
            out.setdefault(kind, {})[r.name] = value
        return out

    def close(self) -> None:
        pass


@pytest.fixture
def reader(monkeypatch: pytest.MonkeyPatch) -> AdminReader:
    monkeypatch.setattr(admin_mod, "AdminClient", MetadataOnly)
    r = AdminReader({"bootstrap.servers": "127.0.0.1:1"})
    r._kp = KafkaPython()
    return r


def test_metadata_from_librdkafka_the_rest_from_kafka_python(reader: AdminReader) -> None:
    state = reader.read_cluster()
    assert reader.admin.calls == ["list_topics"]
    assert (state.cluster_id, state.controller) == ("cid", 2)
    assert state.nodes[3] == ("127.0.0.1", 19094, "r3")
    assert state.min_isr == {"t": 2}
    assert reader.read_broker_config(1)["zookeeper.session.timeout.ms"] == "6000"


def test_a_failing_config_read_keeps_the_last_values(reader: AdminReader) -> None:
    reader.read_cluster()
    failing = KafkaPython(fail=True)
    reader._kp = failing
    state = reader.read_cluster(config_refresh_s=0.0)  # due again, and the broker is gone
    assert state.min_isr == {"t": 2} and state.nodes[1][2] == "r1"
    # One failure, then not asked again for a while: a gone broker costs one timeout.
    with pytest.raises(ClusterError, match=r"not asked .*broker gone"):
        reader.read_broker_config(1)
    assert failing.calls == 1
    reader._kp_backoff_until = 0.0
    with pytest.raises(ClusterError, match="broker gone"):
        reader.read_broker_config(1)
    reader._kp_backoff_until = 0.0
    with pytest.raises(ClusterError, match="broker gone"):
        reader.read_broker_config(1)
    assert reader._kp is None  # three in a row: replaced by the next call


def test_a_new_client_bootstraps_from_every_broker_the_metadata_named(
    reader: AdminReader, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[dict[str, Any]] = []
    from kconsole.cluster.security import kafka_python

    monkeypatch.setattr(kafka_python, "admin_client", lambda kw: made.append(kw) or KafkaPython())
    reader.read_cluster()
    reader._kp = None
    reader.read_broker_config(2)
    servers = made[0]["bootstrap_servers"].split(",")
    assert servers[:3] == ["127.0.0.1:19092", "127.0.0.1:19093", "127.0.0.1:19094"]
    assert "127.0.0.1:1" in servers


def test_with_zookeeper_serving_the_partitions_only_the_brokers_are_read(
    reader: AdminReader,
) -> None:
    """ZooKeeper names the topics: no Metadata request (its cost grows with the partitions),
    one DescribeCluster; the partitions are "not read" (None), never an empty cluster."""
    state = reader.read_cluster(topic_names=["t"])
    assert reader.admin.calls == []
    assert state.topics is None
    assert (state.cluster_id, state.controller) == ("cid", 2)
    assert state.nodes == {i: ("127.0.0.1", 19091 + i, f"r{i}") for i in (1, 2, 3)}
    assert state.min_isr == {"t": 2}


def test_when_describe_cluster_fails_the_whole_metadata_is_read(reader: AdminReader) -> None:
    reader._kp = KafkaPython(fail=True)
    state = reader.read_cluster(topic_names=["t"])
    assert reader.admin.calls == ["list_topics"]
    assert state.topics is not None and [p.leader for p in state.topics["t"]] == [1]
    assert (state.cluster_id, state.controller) == ("cid", 2)


class PausedFirst(MetadataOnly):
    """A metadata read whose first `stuck` attempts went to a paused broker (open connection,
    no answer: librdkafka times out); then it picked another."""

    def __init__(self, conf: dict[str, Any], stuck: int = 1, error: Any = None) -> None:
        super().__init__(conf)
        self.stuck = stuck
        self.error = error
        self.timeouts: list[float] = []
        self.clock: list[float] | None = None

    def list_topics(self, timeout: float) -> Any:
        from confluent_kafka import KafkaError, KafkaException

        self.timeouts.append(timeout)
        if len(self.timeouts) <= self.stuck:
            if self.clock is not None:
                self.clock[0] += timeout  # what a timed-out attempt costs
            raise KafkaException(KafkaError(self.error or KafkaError._TIMED_OUT))
        return super().list_topics(timeout)


def test_a_metadata_read_stuck_on_a_paused_broker_is_asked_again_on_a_new_client(
    reader: AdminReader,
) -> None:
    """The first attempt gets a second, not the whole 5 s timeout; the next one goes to a new
    client (the old one keeps sending to the broker that does not answer), which answers."""
    stuck = PausedFirst({})
    reader.admin = stuck
    state = reader.read_cluster()
    assert stuck.timeouts == pytest.approx([admin_mod.METADATA_ATTEMPTS_S[0]], abs=0.01)
    assert reader.admin is not stuck and reader.admin.calls == ["list_topics"]
    assert state.topics is not None and "t" in state.topics


def test_the_attempts_stay_within_the_timeout_then_it_fails(
    reader: AdminReader, monkeypatch: pytest.MonkeyPatch
) -> None:
    from confluent_kafka import KafkaException

    clock = [100.0]
    monkeypatch.setattr(admin_mod, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    made: list[PausedFirst] = []

    def client(conf: dict[str, Any]) -> PausedFirst:
        c = PausedFirst(conf, stuck=99)
        c.clock = clock
        made.append(c)
        return c

    monkeypatch.setattr(admin_mod, "AdminClient", client)
    reader.admin = client({})
    with pytest.raises(KafkaException):
        reader.read_cluster()
    timeouts = [t for c in made for t in c.timeouts]
    assert timeouts == pytest.approx([1.0, 1.5, reader.timeout_s - 2.5])
    assert [len(c.timeouts) for c in made[:3]] == [1, 1, 1]  # each attempt on a new client
    assert clock[0] - 100.0 == pytest.approx(reader.timeout_s)  # no longer than before


def test_an_error_that_is_not_a_timeout_is_not_asked_again(reader: AdminReader) -> None:
    from confluent_kafka import KafkaError, KafkaException

    failing = PausedFirst({}, error=KafkaError._TRANSPORT)
    reader.admin = failing
    with pytest.raises(KafkaException):
        reader.read_cluster()
    assert len(failing.timeouts) == 1 and reader.admin is failing


def test_stale_configs_are_left_to_refresh_configs_when_asked(reader: AdminReader) -> None:
    """The observer reads the metadata without the periodic config refresh (kafka-python, any
    broker: a paused one holds it for the timeout) and refreshes after it has published."""
    reader.read_cluster()
    kp = reader._kp
    assert isinstance(kp, KafkaPython)
    asked = kp.calls
    reader.configs.read_at -= 3600  # long stale
    state = reader.read_cluster(refresh_stale=False)
    assert kp.calls == asked and state.min_isr == {"t": 2}  # the values read before
    reader.refresh_configs(["t"])
    assert kp.calls == asked + 2  # racks (DescribeCluster) and min.insync.replicas
    reader.refresh_configs(["t"])
    assert kp.calls == asked + 2  # fresh now: not asked again


def test_a_refused_login_ends_the_read_at_once_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A broker that refuses the SASL login: librdkafka's metadata request fails as a transport
    failure and its error_cb says why. The read stops after the first attempt (not at the 5 s
    timeout) with AuthenticationFailed naming the broker and the mechanism, no secret in it."""
    from confluent_kafka import KafkaError

    from kconsole.errors import AuthenticationFailed

    made: list[PausedFirst] = []

    def refusing(conf: dict[str, Any]) -> PausedFirst:
        client = PausedFirst(conf, stuck=99, error=KafkaError._TRANSPORT)
        client.pending.append(
            KafkaError(
                KafkaError._AUTHENTICATION,
                "sasl_plaintext://127.0.0.1:31093/bootstrap: SASL authentication error: "
                "Authentication failed during authentication due to invalid credentials with "
                "SASL mechanism SCRAM-SHA-512 (after 357ms in state AUTH_REQ)",
            )
        )
        made.append(client)
        return client

    monkeypatch.setattr(admin_mod, "AdminClient", refusing)
    reader = AdminReader({"bootstrap.servers": "127.0.0.1:31093"}, timeout_s=5.0)
    with pytest.raises(AuthenticationFailed) as caught:
        reader.read_cluster()
    assert str(caught.value) == (
        "authentication failed at broker 127.0.0.1:31093: invalid credentials (SASL mechanism "
        "SCRAM-SHA-512)"
    )
    assert made[0].timeouts == [1.0]  # one attempt: a refused login is not retried
