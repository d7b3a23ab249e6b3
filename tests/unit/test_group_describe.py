"""Groups on the new protocols read the way Kafka's Admin client reads them: consumer-protocol
groups (KIP-848) with ConsumerGroupDescribe, share groups (KIP-932) with ShareGroupDescribe,
classic ones with DescribeGroups. The fake client serves the answers a real Kafka 4.4 KRaft
cluster gave (tests/fixtures/kraft/new_groups.json, recorded by
tests/fixtures/record_new_groups.py)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import kafka.errors
import pytest
from kafka import TopicPartition as KafkaTP

from kconsole.cluster.groups import reader as groups_mod
from kconsole.cluster.groups.reader import CONSUMER_API, SHARE_API, GroupReader, _parse_answers
from kconsole.cluster.security import kafka_python
from kconsole.models import Group
from kconsole.ui.format import count as fmt_count
from kconsole.ui.rows import group_lag, group_row

REC = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "kraft" / "new_groups.json").read_text()
)
# orders-share's start offsets and lag (DescribeShareGroupOffsets): the same group and topic
# recorded by tests/fixtures/record_share_streams.py on a cluster of its own.
SHARE_REC = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "kraft" / "share_streams.json").read_text()
)["share"]


def share_offsets_answer() -> list[dict[str, Any]]:
    """The recorded DescribeShareGroupOffsets v1 answer's groups, decoded from its bytes."""
    from kconsole.cluster.groups.messages import DescribeShareGroupOffsetsResponse

    raw = bytes.fromhex(SHARE_REC["offsets"]["v1"][1])[4:]
    decoded = DescribeShareGroupOffsetsResponse.decode(raw, version=1, header=True)
    return list(decoded.to_dict()["groups"])


CLASSIC, NEXT, SHARE, ABSENT = "orders-classic", "orders-next", "orders-share", "orders-absent"
TOPIC = "test-topic"
OWNER = "rdkafka@127.0.0.1"


class FakeKp:
    """kafka-python's admin client as the reader uses it, answering what the cluster did."""

    def __init__(self, coordinators: dict[str, int]) -> None:
        self.coordinators = coordinators
        self.calls: list[tuple[str, int | None, tuple[str, ...]]] = []
        self.unlisting: set[int] = set()  # brokers whose ListGroups fails

    def list_groups(self, broker_ids: list[int]) -> list[dict[str, Any]]:
        (bid,) = broker_ids
        if bid in self.unlisting:
            raise kafka.errors.KafkaTimeoutError("ListGroups timed out")
        return [g for g in REC["list_groups"] if REC["coordinators"][g["group_id"]] == bid]

    def describe_groups(self, ids: list[str], group_coordinator_id: int) -> dict[str, Any]:
        self.calls.append(("DescribeGroups", group_coordinator_id, tuple(ids)))
        out = {}
        for gid in ids:
            recorded = REC["describe_groups"].get(gid)
            out[gid] = recorded or {
                "error": f"[Error 69] GroupIdNotFoundError: Group {gid} not found."
            }
        return out

    def list_group_offsets(self, groups: Any) -> dict[str, Any]:
        ids = list(groups)
        self.calls.append(("OffsetFetch", None, tuple(ids)))
        return {
            gid: {
                KafkaTP(TOPIC, int(p)): SimpleNamespace(
                    offset=-1 if committed is None else committed
                )
                for p, (committed, _end) in REC["group_offsets"].get(gid, {}).items()
            }
            for gid in ids
        }


def log_ends(
    _kp: Any, by_leader: dict[int, list[tuple[str, int]]], _timeout_ms: int, _give_up: Any = None
) -> dict[int, Any]:
    ends = {int(p): end for p, (_c, end) in REC["group_offsets"][CLASSIC].items()}
    return {leader: {tp: (0, ends[tp[1]]) for tp in tps} for leader, tps in by_leader.items()}


def recorded_describe(elsewhere: dict[str, str] | None = None) -> Any:
    """kafka_python.describe_at answering as the cluster did: a share group asked of a broker
    that is not its coordinator gets the recorded NOT_COORDINATOR."""
    answers = {
        "ConsumerGroupDescribeRequest": REC["consumer_group_describe"]
        + REC["consumer_group_describe_share"],
        "ShareGroupDescribeRequest": REC["share_group_describe"],
    }

    def describe_at(
        kp: FakeKp, request: Any, node: int, _timeout_ms: int, _g: Any = None
    ) -> list[Any]:
        kind = type(request).__name__
        if kind == "DescribeShareGroupOffsetsRequest":
            ids = tuple(g.group_id for g in request.groups)
            kp.calls.append(("DescribeShareGroupOffsets", node, ids))
            return [a for a in share_offsets_answer() if a["group_id"] in ids]
        kp.calls.append((kind.removesuffix("Request"), node, tuple(request.group_ids)))
        if (
            kind == "ShareGroupDescribeRequest"
            and node == REC["share_group_describe_elsewhere_broker"]
        ):
            return list(REC["share_group_describe_elsewhere"])
        return [a for a in answers[kind] if a["group_id"] in request.group_ids]

    return describe_at


def each_by_describe_at(kp: Any, requests: list[tuple[Any, int]], timeout_ms: int) -> list[Any]:
    """kafka_python.describe_each_at as the fakes' describe_at answers each request (patched
    in its place, so the test's own describe_at is the one asked): a failure is its answer."""
    out: list[Any] = []
    for request, node in requests:
        try:
            out.append(kafka_python.describe_at(kp, request, node, timeout_ms))
        except Exception as exc:
            out.append(exc)
    return out


def list_groups_by_fake(
    kp: Any, brokers: list[int], _timeout_ms: int, _give_up: Any = None
) -> dict[int, Any]:
    """kafka_python.list_groups_at as a fake client's list_groups answers each broker (a
    failure is that broker's answer), as the real one hands them on."""
    out: dict[int, Any] = {}
    for bid in brokers:
        try:
            out[bid] = list(kp.list_groups(broker_ids=[bid]))
        except Exception as exc:
            out[bid] = exc
    return out


@pytest.fixture(autouse=True)
def _groups_listed_by_the_fake(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kafka_python, "list_groups_at", list_groups_by_fake)


@pytest.fixture
def kp(monkeypatch: pytest.MonkeyPatch) -> FakeKp:
    fake = FakeKp(dict(REC["coordinators"]))
    monkeypatch.setattr(
        kafka_python, "group_coordinators", lambda k, ids: {g: k.coordinators[g] for g in ids}
    )
    monkeypatch.setattr(kafka_python, "log_ends_by_leader", log_ends)
    monkeypatch.setattr(kafka_python, "describe_at", recorded_describe())
    monkeypatch.setattr(kafka_python, "describe_each_at", each_by_describe_at)
    return fake


def read(kp: FakeKp, known: tuple[str, ...] = ()) -> dict[str, Group]:
    reader = GroupReader({}, timeout_s=5)
    reader._kp = kp
    leaders = {(TOPIC, p): 1 for p in range(4)}
    res = reader.read(known=known, brokers=[1, 2, 3], leaders=leaders)
    return {g.group_id: g for g in res.groups}


def test_each_group_is_described_with_the_api_of_its_type(kp: FakeKp) -> None:
    groups = read(kp)
    asked = {(api, ids) for api, _node, ids in kp.calls}
    assert ("ConsumerGroupDescribe", (NEXT,)) in asked
    assert ("ShareGroupDescribe", (SHARE,)) in asked
    assert ("DescribeGroups", (CLASSIC,)) in asked
    assert not any(api == "DescribeGroups" and NEXT in ids for api, ids in asked)
    # A share group commits no consumer offsets: it is not asked for them.
    assert not any(api == "OffsetFetch" and SHARE in ids for api, ids in asked)
    assert {
        g: (x.group_type, x.state, x.members, x.assignor, x.error) for g, x in groups.items()
    } == {
        CLASSIC: ("classic", "STABLE", 1, "range", ""),
        NEXT: ("consumer", "STABLE", 1, "uniform", ""),
        SHARE: ("share", "STABLE", 2, "simple", ""),
    }


def test_a_consumer_protocol_groups_lag_is_read_like_a_classic_ones(kp: FakeKp) -> None:
    g = read(kp)[NEXT]
    committed = {int(p): c for p, (c, _e) in REC["group_offsets"][NEXT].items()}
    assert {p.partition: (p.committed, p.owner) for p in g.partitions} == {
        p: (committed[p], OWNER) for p in range(4)
    }
    # Recorded: 10 committed on partition 3 at its log end 10; nothing on 0-2 (not lag).
    assert {p.partition: p.lag for p in g.partitions} == {0: None, 1: None, 2: None, 3: 0}
    assert g.lag == 0 and not g.lag_unknown and g.lag_na == ""


def test_a_share_groups_lag_is_its_coordinators(kp: FakeKp) -> None:
    """Start offsets and lag from DescribeShareGroupOffsets at its coordinator, as
    kafka-share-groups --describe printed them, never made up from consumer offsets."""
    g = read(kp)[SHARE]
    assert ("DescribeShareGroupOffsets", REC["coordinators"][SHARE], (SHARE,)) in kp.calls
    # The two members' assignments as recorded: partitions 0-3 between them.
    assert sorted(p.partition for p in g.partitions) == [0, 1, 2, 3]
    tool = {
        int(p): (int(start), int(lag))
        for _g, _t, p, start, lag in (
            line.split() for line in SHARE_REC["tool_describe"].splitlines()
            if line.startswith(f"{SHARE} ")
        )
    }  # fmt: skip
    assert {p.partition: (p.committed, p.lag) for p in g.partitions} == tool
    assert all(p.owner == OWNER and p.share for p in g.partitions)
    assert g.lag == sum(lag for _s, lag in tool.values()) and g.lag_na == "" and g.error == ""
    assert group_lag(g, 0.0).plain == fmt_count(g.lag)
    cells = [c.plain for c in group_row(g, 0.0, typed=True)]
    assert cells[2:4] == [fmt_count(g.lag), "share"] and cells[-1] == ""


def test_a_group_of_unknown_type_is_asked_as_kafkas_admin_does(kp: FakeKp) -> None:
    """Its broker did not answer ListGroups, so the groups known from before are read without
    their type: ConsumerGroupDescribe first, DescribeGroups only for those it does not know
    (GROUP_ID_NOT_FOUND)."""
    kp.unlisting = {REC["coordinators"][NEXT]}
    kp.coordinators[ABSENT] = REC["coordinators"][NEXT]
    groups = read(kp, known=(ABSENT, NEXT))
    order = {g: [api for api, _node, ids in kp.calls if g in ids] for g in (ABSENT, NEXT)}
    assert order[ABSENT][:2] == ["ConsumerGroupDescribe", "DescribeGroups"]
    assert order[NEXT] == ["ConsumerGroupDescribe", "OffsetFetch"]
    g = groups[ABSENT]
    assert g.state == "UNKNOWN" and "GroupIdNotFound" in g.error and g.lag is None
    assert groups[NEXT].group_type == "" and groups[NEXT].state == "STABLE"
    assert groups[NEXT].error == "" and groups[NEXT].lag == 0


def test_parse_a_recorded_consumer_group_describe_answer() -> None:
    out = _parse_answers(CONSUMER_API, [NEXT, ABSENT], REC["consumer_group_describe"], 3)
    desc = out[NEXT]
    assert not isinstance(desc, str) and desc is not None
    assert (desc.state, desc.assignor, desc.coordinator) == ("STABLE", "uniform", 3)
    assert desc.members == ((OWNER, tuple((TOPIC, p) for p in range(4))),)
    assert out[ABSENT] is None  # GROUP_ID_NOT_FOUND: not a consumer-protocol group


def test_parse_a_recorded_error_answer() -> None:
    """ShareGroupDescribe asked of a broker that is not the group's coordinator."""
    broker = REC["share_group_describe_elsewhere_broker"]
    out = _parse_answers(SHARE_API, [SHARE], REC["share_group_describe_elsewhere"], broker)
    assert str(out[SHARE]) == (
        "[Error 16] NotCoordinatorError: This is not the correct coordinator."
    )
    # A share group ConsumerGroupDescribe does not know is an error, not a fallback, for
    # ShareGroupDescribe's GROUP_ID_NOT_FOUND; for ConsumerGroupDescribe it means "ask classic".
    cgd = _parse_answers(CONSUMER_API, [SHARE], REC["consumer_group_describe_share"], 1)
    assert cgd[SHARE] is None
    gone = dict(REC["share_group_describe"][0], error_code=69, error_message="gone")
    assert str(_parse_answers(SHARE_API, [SHARE], [gone], 1)[SHARE]) == (
        "[Error 69] GroupIdNotFoundError: gone"
    )
    assert str(_parse_answers(SHARE_API, ["other"], [], 1)["other"]).startswith("no answer")


def test_a_share_group_at_a_moved_coordinator_says_so(kp: FakeKp) -> None:
    kp.coordinators[SHARE] = REC["share_group_describe_elsewhere_broker"]
    g = read(kp)[SHARE]
    assert g.state == "UNKNOWN" and g.error.startswith("coordinator moving")
    assert "NotCoordinator" in g.error and g.lag is None


def test_a_coordinator_without_the_new_apis(kp: FakeKp, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Kafka before 3.7 (or a share group on one before 4.1): the client finds no version
    both sides support. Consumer-protocol groups fall back to DescribeGroups, with the reason."""

    def unsupported(kp_: FakeKp, request: Any, node: int, _t: int, _g: Any = None) -> list[Any]:
        kp_.calls.append((type(request).__name__, node, tuple(request.group_ids)))
        raise kafka.errors.IncompatibleBrokerVersion("no version of it supported by both")

    monkeypatch.setattr(kafka_python, "describe_at", unsupported)
    groups = read(kp)
    assert ("DescribeGroups", REC["coordinators"][NEXT], (NEXT,)) in kp.calls
    assert "not a classic group" in groups[NEXT].error
    assert CONSUMER_API.unsupported in groups[NEXT].error
    assert groups[SHARE].state == "UNKNOWN" and SHARE_API.unsupported in groups[SHARE].error
    assert groups[CLASSIC].error == "" and groups[CLASSIC].state == "STABLE"


def test_a_dead_coordinator_fails_only_its_groups(
    kp: FakeKp, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead = REC["coordinators"][NEXT]
    recorded = recorded_describe()

    def describe_at(kp_: FakeKp, request: Any, node: int, t: int, _g: Any = None) -> list[Any]:
        if node == dead:
            kp_.calls.append(("timed out", node, tuple(request.group_ids)))
            raise kafka.errors.KafkaTimeoutError("Request timed out after 5000 ms")
        return list(recorded(kp_, request, node, t))

    monkeypatch.setattr(kafka_python, "describe_at", describe_at)
    groups = read(kp)
    assert groups[NEXT].state == "UNKNOWN" and f"coordinator {dead}" in groups[NEXT].error
    assert "timed out" in groups[NEXT].error
    # Its committed offsets are not asked either (one timeout per dead broker), none invented.
    assert all(not p.committed_known for p in groups[NEXT].partitions)
    assert groups[NEXT].lag is None and groups[NEXT].lag_unknown
    assert groups[SHARE].error == "" and groups[CLASSIC].error == ""
    assert not [c for c in kp.calls if c[0] == "DescribeGroups" and c[1] == dead]


def test_module_constants_match_the_shipped_schemas() -> None:
    from kconsole.cluster.groups import messages as gm

    assert gm.ConsumerGroupDescribeRequest.API_KEY == 69
    assert gm.ShareGroupDescribeRequest.API_KEY == 77
    assert gm.ShareGroupDescribeRequest.valid_versions == (SHARE_API.min_version, 1)
    assert gm.ConsumerGroupDescribeResponse.__license__.startswith("// Licensed to the Apache")
    assert kafka.errors.GroupIdNotFoundError.errno == groups_mod.GROUP_ID_NOT_FOUND


def test_a_partition_shared_by_share_group_members_names_each_owner() -> None:
    """The recorded share group with its second member on another host and also given one of
    the first member's partitions (the simple assignor shares partitions once members
    outnumber them)."""
    from kconsole.cluster.groups.reader import _owners

    answer = json.loads(json.dumps(REC["share_group_describe"]))
    first, second = answer[0]["members"]
    second["client_host"] = "/10.0.0.2"
    first_parts = first["assignment"]["topic_partitions"][0]["partitions"]
    second_parts = second["assignment"]["topic_partitions"][0]["partitions"]
    shared = first_parts[0]
    second_parts.append(shared)
    desc = _parse_answers(SHARE_API, [SHARE], answer, 1)[SHARE]
    assert desc is not None and not isinstance(desc, BaseException)
    owners = _owners(desc)
    assert owners[(TOPIC, shared)] == f"{OWNER}, rdkafka@10.0.0.2"
    assert {owners[(TOPIC, p)] for p in first_parts if p != shared} == {OWNER}
    assert {owners[(TOPIC, p)] for p in second_parts if p != shared} == {"rdkafka@10.0.0.2"}


ZK39 = json.loads(
    (
        Path(__file__).resolve().parents[1] / "fixtures" / "zk_consumer_group_describe.json"
    ).read_text()
)["answer"][0]


def test_a_coordinator_answering_unsupported_version(
    kp: FakeKp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kafka 3.9 (ZooKeeper mode) offers ConsumerGroupDescribe but answers each group
    UNSUPPORTED_VERSION (the recorded answer): a consumer-protocol or untyped group is asked
    with DescribeGroups instead, a share group says the coordinator cannot describe it."""

    def answers_35(kp_: FakeKp, request: Any, node: int, _t: int, _g: Any = None) -> list[Any]:
        kp_.calls.append((type(request).__name__, node, tuple(request.group_ids)))
        return [dict(ZK39, group_id=gid) for gid in request.group_ids]

    monkeypatch.setattr(kafka_python, "describe_at", answers_35)
    groups = read(kp)
    assert ("DescribeGroups", REC["coordinators"][NEXT], (NEXT,)) in kp.calls
    assert CONSUMER_API.unsupported in groups[NEXT].error  # and what DescribeGroups said
    assert groups[SHARE].state == "UNKNOWN" and SHARE_API.unsupported in groups[SHARE].error
    assert groups[SHARE].lag is None


def test_a_coordinator_failing_its_second_request_keeps_what_it_answered(
    kp: FakeKp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The consumer-protocol and the share group at one coordinator: ConsumerGroupDescribe
    answered, then ShareGroupDescribe timed out. The consumer group keeps its description;
    the share group and the classic one there (not asked after the timeout) are unread."""
    coordinator = REC["coordinators"][NEXT]
    kp.coordinators[SHARE] = kp.coordinators[CLASSIC] = coordinator
    recorded = recorded_describe()

    def describe_at(kp_: FakeKp, request: Any, node: int, t: int, _g: Any = None) -> list[Any]:
        if type(request).__name__ == "ShareGroupDescribeRequest":
            raise kafka.errors.KafkaTimeoutError("Request timed out after 5000 ms")
        return list(recorded(kp_, request, node, t))

    monkeypatch.setattr(kafka_python, "describe_at", describe_at)
    groups = read(kp)
    assert groups[NEXT].state == "STABLE" and groups[NEXT].error == ""
    for gid in (SHARE, CLASSIC):
        assert groups[gid].state == "UNKNOWN", groups[gid]
        assert f"not described (coordinator {coordinator})" in groups[gid].error
    assert not [c for c in kp.calls if c[0] == "DescribeGroups"]


class NoGroupsKp(FakeKp):
    """The cluster with no group at all: every broker asked lists none."""

    def list_groups(self, broker_ids: list[int]) -> list[dict[str, Any]]:
        (bid,) = broker_ids
        if bid in self.unlisting:
            raise kafka.errors.KafkaTimeoutError("ListGroups timed out")
        return []


def test_no_group_and_a_broker_down_is_an_answer_not_a_failure(kp: FakeKp) -> None:
    """Broker 2 down (registered, not up: not asked) and no group anywhere: the live brokers'
    answer is the read, degraded by what was not asked (issue 35 item 9: the pane went STALE)."""
    reader = GroupReader({}, timeout_s=5)
    reader._kp = NoGroupsKp({})
    res = reader.read(known=(), brokers=[1, 3], leaders={}, unasked=[2])
    assert res.groups == () and not res.listed_by_all
    assert res.notes == ("broker 2 not asked for its groups (not up)",)


def test_a_leader_not_up_is_not_asked_for_its_log_ends(
    kp: FakeKp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Broker 2 paused (registered, not up): the partitions it leads are unknown at once, said
    why, and the others' log ends do not wait out its timeout; the client is kept (a leader
    not asked is no sign of stale metadata)."""
    asked: list[int] = []

    def ends(_kp: Any, by_leader: dict[int, list[Any]], _t: int, _g: Any = None) -> dict[int, Any]:
        asked.extend(by_leader)
        return {b: {tp: (0, 42) for tp in tps} for b, tps in by_leader.items()}

    monkeypatch.setattr(kafka_python, "log_ends_by_leader", ends)
    reader = GroupReader({}, timeout_s=5)
    client = reader._kp = NoGroupsKp({})
    leaders = {("t", 0): 1, ("t", 1): 2, ("t", 2): 3}
    res = reader.read(known=(), brokers=[1, 3], leaders=leaders, unasked=[2], sample=leaders)
    assert sorted(asked) == [1, 3]
    assert res.ends == {("t", 0): 42, ("t", 2): 42}
    assert res.end_errors == {("t", 1): "leader 2 not asked (not up)"}
    assert reader._kp is client


def test_no_group_and_no_broker_answering_is_unreadable(kp: FakeKp) -> None:
    """Not one broker answered ListGroups: nothing was read, the source fails this round."""
    fake = NoGroupsKp({})
    fake.unlisting = {1, 3}
    reader = GroupReader({}, timeout_s=5)
    reader._kp = fake
    with pytest.raises(groups_mod.GroupsUnreadable, match="broker 1 did not list"):
        reader.read(known=(), brokers=[1, 3], leaders={}, unasked=[2])


def test_the_groups_source_is_degraded_not_stale_with_a_broker_down(kp: FakeKp) -> None:
    """Through the observer: a broker registered but stopped, no group. The groups source is
    fresh (its age is this poll's) and says what it did not ask."""
    from kconsole.cluster.values import ProcState
    from kconsole.config import Settings
    from kconsole.models import SourceName
    from kconsole.observer import ClusterObserver
    from tests.unit.test_observer_builder import admin_state, zk_state

    clock = [100.0]
    obs = ClusterObserver(Settings(), clock=lambda: clock[0])
    obs.builder.zk, obs.builder.admin = zk_state(), admin_state()
    obs.builder.proc_states = {2: ProcState.STOPPED}
    obs.builder.health[SourceName.ZOOKEEPER].success(100.0)
    obs.snapshot = obs._publish(publish=False)
    reader = SimpleNamespace(groups=GroupReader({}, timeout_s=5))
    reader.groups._kp = NoGroupsKp({})
    clock[0] = 141.0
    obs._poll_groups(reader, publish=False)  # type: ignore[arg-type]
    health = obs._publish(publish=False).source(SourceName.GROUPS)
    assert health is not None and health.ok and health.degraded
    assert health.updated_at == 141.0
    assert health.error == "broker 2 not asked for its groups (not up)"


def test_a_leader_paused_during_the_reading_is_said_so_and_the_rest_is_read(
    kp: FakeKp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reader hands the brokers known to be paused now to the log-end read (its IO
    thread asks while it waits): the answer it gave up on is that leader's partitions' reason;
    the others are read."""
    seen: list[Any] = []

    def ends(_kp: Any, by_leader: dict[int, list[Any]], _t: int, give_up: Any) -> dict[int, Any]:
        seen.append(give_up)
        paused = give_up()
        return {
            b: kafka_python.NotAwaited(f"broker {b} paused: its answer not awaited")
            if b in paused
            else {tp: (0, 7) for tp in tps}
            for b, tps in by_leader.items()
        }

    monkeypatch.setattr(kafka_python, "log_ends_by_leader", ends)
    reader = GroupReader({}, timeout_s=5)
    reader._kp = NoGroupsKp({})
    reader.paused = lambda: {2}
    leaders = {("t", 0): 1, ("t", 1): 2}
    res = reader.read(known=(), brokers=[1, 2, 3], leaders=leaders, sample=leaders)
    assert seen == [reader.paused]
    assert res.ends == {("t", 0): 7}
    assert res.end_errors == {("t", 1): "leader 2: broker 2 paused: its answer not awaited"}


def test_a_coordinator_known_paused_is_not_asked(kp: FakeKp) -> None:
    """A coordinator the backend says is paused: its groups are not described nor their
    offsets fetched this poll (each would only wait out its timeout, and the rates' log ends
    behind it), and say why; the other coordinators' groups are read as usual."""
    paused = REC["coordinators"][NEXT]
    reader = GroupReader({}, timeout_s=5)
    reader._kp = kp
    reader.paused = lambda: {paused}
    res = reader.read(known=(), brokers=[1, 2, 3], leaders={(TOPIC, p): 1 for p in range(4)})
    groups = {g.group_id: g for g in res.groups}
    at_paused = [gid for gid, node in REC["coordinators"].items() if node == paused]
    others = [gid for gid, node in REC["coordinators"].items() if node != paused]
    assert at_paused and others
    assert not [c for c in kp.calls if c[1] == paused]  # not asked
    for gid in at_paused:
        assert f"not described (coordinator {paused} paused)" in groups[gid].error, groups[gid]
        assert f"committed offsets not read (coordinator {paused} not described)" in (
            groups[gid].error
        )
        assert not any(gid in c[2] for c in kp.calls if c[0] == "OffsetFetch")
    assert any(groups[gid].state not in ("", "UNKNOWN") for gid in others)
