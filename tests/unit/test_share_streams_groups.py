"""Share-group offsets (DescribeShareGroupOffsets, KIP-932 / KIP-1226), streams groups
(StreamsGroupDescribe, KIP-1071) and the finalized feature levels, from the bytes a real Kafka
4.4 KRaft cluster sent (tests/fixtures/kraft/share_streams.json, recorded by
tests/fixtures/record_share_streams.py) with the output of Kafka's own tools beside them."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kafka import TopicPartition as KafkaTP

from kconsole.cluster.groups import messages as gm
from kconsole.cluster.groups.reader import (
    SHARE_LAG_UNREPORTED,
    STREAMS_API,
    GroupReader,
    _Desc,
    _group,
    _parse_answers,
    _parse_share_offsets,
    _share_offsets_request,
)
from kconsole.cluster.kraft.quorum import features_of
from kconsole.cluster.security import kafka_python
from kconsole.describe import render_text
from kconsole.models import Group
from kconsole.ui import format as fmt
from kconsole.ui.rows import (
    SHARE_PARTITION_COLUMNS,
    group_lag,
    group_partition_columns,
    group_partition_rows,
)
from tests.unit.test_group_describe import list_groups_by_fake

REC = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "kraft" / "share_streams.json").read_text()
)
SHARE, STREAMS, TOPIC = "orders-share", "orders-streams", "test-topic"


def answer(cls: Any, exchange: list[str], version: int) -> dict[str, Any]:
    """A recorded answer's bytes (framed) decoded as kafka-python decodes them."""
    raw = bytes.fromhex(exchange[1])
    return dict(cls.decode(raw[4:], version=version, header=True).to_dict())


def tool_rows(out: str, group: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines() if line.startswith(f"{group} ")]


def share_tool() -> dict[tuple[str, int], tuple[int | None, int | None]]:
    """kafka-share-groups --describe: (topic, partition) -> (START-OFFSET, LAG), None for '-'."""
    num = lambda s: None if s == "-" else int(s)  # noqa: E731
    return {
        (t, int(p)): (num(start), num(lag))
        for _g, t, p, start, lag in tool_rows(REC["share"]["tool_describe"], SHARE)
    }


# -- DescribeShareGroupOffsets --------------------------------------------------------------
def test_the_request_is_encoded_as_recorded() -> None:
    """kconsole's request (every partition: topics null) is byte for byte what was sent."""
    for version in (1, 0):
        request = _share_offsets_request([SHARE])
        request.with_header(correlation_id=7, client_id="kconsole-recorder")
        sent = request.encode(version=version, header=True, framed=True)
        assert sent.hex() == REC["share"]["offsets"][f"v{version}"][0]
    assert gm.DescribeShareGroupOffsetsRequest.API_KEY == 90


def test_start_offsets_and_lag_are_kafkas() -> None:
    """The recorded v1 answer, decoded and read: each partition's start offset and lag are
    what kafka-share-groups --describe printed from the same cluster."""
    got = _parse_share_offsets(
        [SHARE],
        answer(gm.DescribeShareGroupOffsetsResponse, REC["share"]["offsets"]["v1"], 1)["groups"],
    )[SHARE]
    assert not isinstance(got, BaseException)
    assert {tp: (o.start, o.lag) for tp, o in got.items()} == share_tool()
    assert any(o.lag for o in got.values())  # the 6 records produced after the consumers left


def test_a_v0_answer_has_no_lag_so_it_is_unknown() -> None:
    """Kafka before 4.4 answers v0 (no Lag field): the start offsets are still Kafka's, the lag
    is not reported, never made up from them."""
    got = _parse_share_offsets(
        [SHARE],
        answer(gm.DescribeShareGroupOffsetsResponse, REC["share"]["offsets"]["v0"], 0)["groups"],
    )[SHARE]
    assert not isinstance(got, BaseException)
    assert {tp: o.start for tp, o in got.items()} == {tp: s for tp, (s, _l) in share_tool().items()}
    assert all(o.lag is None for o in got.values())


def test_not_the_coordinator_is_the_groups_error() -> None:
    raw = answer(gm.DescribeShareGroupOffsetsResponse, REC["share"]["offsets_elsewhere"], 1)
    got = _parse_share_offsets([SHARE], raw["groups"])[SHARE]
    assert isinstance(got, BaseException) and "NotCoordinator" in type(got).__name__


def test_partition_errors_and_missing_groups() -> None:
    raw = answer(gm.DescribeShareGroupOffsetsResponse, REC["share"]["offsets"]["v1"], 1)
    group = raw["groups"][0]
    group["topics"][0]["partitions"][0].update(error_code=15, error_message="coordinator gone")
    group["topics"][0]["partitions"][1].update(start_offset=-1, lag=-1)
    got = _parse_share_offsets([SHARE, "other"], raw["groups"])
    parts = got[SHARE]
    assert not isinstance(parts, BaseException)
    assert "coordinator gone" in parts[(TOPIC, 0)].error
    assert (parts[(TOPIC, 1)].start, parts[(TOPIC, 1)].lag) == (None, None)  # Kafka's "-"
    assert str(got["other"]).startswith("no answer")


# -- the reader, end to end on the recorded answers -----------------------------------------
class FakeKp:
    """kafka-python's admin client as the reader uses it, answering what the cluster did."""

    def list_groups(self, broker_ids: list[int]) -> list[dict[str, Any]]:
        (bid,) = broker_ids
        return [g for g in REC["list_groups"] if coordinator(g["group_id"]) == bid]

    def describe_groups(self, ids: list[str], group_coordinator_id: int) -> dict[str, Any]:
        raise AssertionError(f"DescribeGroups asked for {ids}: neither is a classic group")

    def list_group_offsets(self, groups: Any) -> dict[str, Any]:
        ids = list(groups)
        assert ids == [STREAMS], ids  # a share group commits no consumer offsets
        return {
            STREAMS: {
                KafkaTP(TOPIC, int(p)): SimpleNamespace(offset=o)
                for p, o in REC["streams"]["offsets"].items()
            }
        }


def coordinator(gid: str) -> int:
    return int(REC["share" if gid == SHARE else "streams"]["coordinator"])


def streams_tool() -> dict[int, tuple[int, int, int]]:
    """kafka-streams-groups --describe --offsets --verbose: partition -> (CURRENT-OFFSET,
    LOG-END-OFFSET, OFFSET-LAG)."""
    return {
        int(p): (int(cur), int(end), int(lag))
        for _g, _t, p, cur, _epoch, end, lag in tool_rows(REC["streams"]["tool_offsets"], STREAMS)
    }


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


@pytest.fixture
def read(monkeypatch: pytest.MonkeyPatch) -> dict[str, Group]:
    def describe_at(_kp: Any, request: Any, node: int, _t: int, _g: Any = None) -> list[Any]:
        kind = type(request).__name__
        if kind == "DescribeShareGroupOffsetsRequest":
            assert node == coordinator(SHARE)
            exchange, cls = REC["share"]["offsets"]["v1"], gm.DescribeShareGroupOffsetsResponse
        elif kind == "StreamsGroupDescribeRequest":
            assert node == coordinator(STREAMS)
            exchange, cls = REC["streams"]["describe"]["v1"], gm.StreamsGroupDescribeResponse
        elif kind == "ShareGroupDescribeRequest":  # not recorded here: a described share group
            return [{"group_id": SHARE, "error_code": 0, "group_state": "Empty", "members": [],
                     "assignor_name": "simple"}]  # fmt: skip
        else:
            raise AssertionError(kind)
        return list(answer(cls, exchange, 1)["groups"])

    ends = {int(p): end for p, (_c, end, _l) in streams_tool().items()}

    def log_ends(
        _kp: Any, by_leader: dict[int, list[Any]], _t: int, _give_up: Any = None
    ) -> dict[int, Any]:
        return {b: {tp: (0, ends[tp[1]]) for tp in tps} for b, tps in by_leader.items()}

    monkeypatch.setattr(
        kafka_python, "group_coordinators", lambda _k, ids: {g: coordinator(g) for g in ids}
    )
    monkeypatch.setattr(kafka_python, "describe_at", describe_at)
    monkeypatch.setattr(kafka_python, "describe_each_at", each_by_describe_at)
    monkeypatch.setattr(kafka_python, "log_ends_by_leader", log_ends)
    monkeypatch.setattr(kafka_python, "list_groups_at", list_groups_by_fake)
    reader = GroupReader({}, timeout_s=5)
    reader._kp = FakeKp()
    res = reader.read(brokers=[1, 2, 3], leaders={(TOPIC, p): 1 for p in range(4)})
    return {g.group_id: g for g in res.groups}


def test_a_share_groups_lag_is_read_like_a_consumer_groups(read: dict[str, Group]) -> None:
    g = read[SHARE]
    assert g.group_type == "share" and g.error == "" and g.lag_na == ""
    assert {(p.topic, p.partition): (p.committed, p.lag) for p in g.partitions} == share_tool()
    assert g.lag == sum(lag or 0 for _s, lag in share_tool().values()) and not g.lag_partial
    assert group_lag(g, 0.0).plain == str(g.lag)
    assert group_partition_columns(g) is SHARE_PARTITION_COLUMNS
    assert dict(SHARE_PARTITION_COLUMNS)["committed"] == "start offset"
    rows = group_partition_rows(g)
    assert [c.plain for c in rows[f"{TOPIC}/0"]][2:5] == ["0", "16", "6"]


def test_a_streams_group_is_described_and_its_lag_read(read: dict[str, Group]) -> None:
    """Type, state, members and assignor as kafka-streams-groups --describe --state says; each
    partition's committed offset, log end and lag as its --offsets says."""
    g = read[STREAMS]
    state = tool_rows(REC["streams"]["tool_state"], STREAMS)[0]
    assert (g.group_type, g.state, g.assignor, g.members) == (
        "streams", state[4].upper(), state[3], int(state[5]),
    )  # fmt: skip
    assert g.coordinator == int(state[2].strip("()")) and g.error == ""
    assert {p.partition: (p.committed, p.log_end, p.lag) for p in g.partitions} == streams_tool()
    owner = tool_rows(REC["streams"]["tool_members"], STREAMS)[0][3]
    assert {p.owner for p in g.partitions} == {f"{owner}@127.0.0.1"}


def test_describe_prints_each_groups_type(read: dict[str, Group]) -> None:
    from tests.ui import kraft_fakes as K

    snap = K.healthy()
    text = render_text(dataclasses.replace(snap, groups=tuple(read.values())), snap.taken_at)
    assert re.search(rf"^{SHARE}\s+share\s+EMPTY\s+0\s+simple\s+6$", text, re.M), text
    assert re.search(rf"^{STREAMS}\s+streams\s+STABLE\s+1\s+sticky\s+40$", text, re.M), text


def test_a_share_group_without_reported_lag_says_why(
    read: dict[str, Group], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A v0 answer (Kafka 4.1-4.3): start offsets shown, the lag unknown with the reason."""
    v0 = answer(gm.DescribeShareGroupOffsetsResponse, REC["share"]["offsets"]["v0"], 0)
    parts = _parse_share_offsets([SHARE], v0["groups"])[SHARE]
    assert not isinstance(parts, BaseException)
    g = _group(
        SHARE,
        None,
        {tp: o.start for tp, o in parts.items()},
        {},
        {},
        [SHARE_LAG_UNREPORTED],
        {},
        parts,
    )
    assert g.lag is None and g.lag_unknown and all(p.lag_unknown for p in g.partitions)
    assert group_lag(g, 0.0).plain == "?" and "KIP-1226" in g.error


# -- StreamsGroupDescribe ---------------------------------------------------------------------
@pytest.mark.parametrize("version", [1, 0])
def test_parse_a_recorded_streams_group_describe(version: int) -> None:
    raw = answer(
        gm.StreamsGroupDescribeResponse, REC["streams"]["describe"][f"v{version}"], version
    )
    node = REC["streams"]["coordinator"]
    desc = _parse_answers(STREAMS_API, [STREAMS], raw["groups"], node)[STREAMS]
    assert isinstance(desc, _Desc)
    assert desc.state == "STABLE" and desc.coordinator == node
    assert desc.assignor == ("sticky" if version else "")  # AssignorName: v1 (KIP-1357)
    ((owner, tps),) = desc.members
    assert owner == "kconsole-groups@127.0.0.1" and tps == tuple((TOPIC, p) for p in range(4))
    assert gm.StreamsGroupDescribeRequest.API_KEY == 89


def test_streams_states_are_named_as_kafkas_tools_name_them() -> None:
    raw = answer(gm.StreamsGroupDescribeResponse, REC["streams"]["describe"]["v1"], 1)
    for state, shown in (("NotReady", "NOT_READY"), ("Assigning", "ASSIGNING"),
                         ("Reconciling", "RECONCILING"), ("Empty", "EMPTY")):  # fmt: skip
        group = dict(raw["groups"][0], group_state=state)
        desc = _parse_answers(STREAMS_API, [STREAMS], [group], 1)[STREAMS]
        assert isinstance(desc, _Desc) and desc.state == shown
        # Not ready, assigning, reconciling: amber like a rebalancing consumer group.
        assert fmt.group_state_style(shown) == (fmt.DIM if shown == "EMPTY" else fmt.WARN)


# -- feature levels ---------------------------------------------------------------------------
def test_feature_levels_are_kafka_features_describes() -> None:
    f = features_of(REC["features"]["describe_features"], 1.0)
    pattern = (
        r"Feature: (\S+)\s+SupportedMinVersion: \S+\s+SupportedMaxVersion: \S+\s+"
        r"FinalizedVersionLevel: (\S+)"
    )
    tool = dict(re.findall(pattern, REC["features"]["tool_describe"]))
    mine = {o.name: str(o.level) for o in f.others}
    mine |= {"metadata.version": str(f.metadata_version), "kraft.version": str(f.kraft_version)}
    assert mine == tool and len(tool) == 7
    assert f.level("share.version") == 2 and f.level("nope") is None


def test_a_supported_feature_not_finalized_is_level_0() -> None:
    answer_ = {"metadata.version": {"finalized": [33, 33]}, "share.version": {"supported": [0, 2]}}
    assert [(o.name, o.level) for o in features_of(answer_, 1.0).others] == [("share.version", 0)]


def test_share_offsets_one_group_a_request_all_in_flight(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two share groups at one coordinator: one request each (a request naming two groups took
    about 2 s on Kafka 4.4), sent together in one describe_each_at; the one whose request
    timed out is unknown with the reason, the other read."""
    import kafka.errors

    other = "orders-share-2"
    node = coordinator(SHARE)
    calls: list[list[tuple[tuple[str, ...], int]]] = []
    recorded = answer(gm.DescribeShareGroupOffsetsResponse, REC["share"]["offsets"]["v1"], 1)

    def each(_kp: Any, requests: list[tuple[Any, int]], _t: int) -> list[Any]:
        calls.append([(tuple(g.group_id for g in r.groups), n) for r, n in requests])
        return [
            recorded["groups"] if r.groups[0].group_id == SHARE
            else kafka.errors.KafkaTimeoutError("Request timed out after 5000 ms")
            for r, _n in requests
        ]  # fmt: skip

    monkeypatch.setattr(kafka_python, "describe_each_at", each)
    reader = GroupReader({}, timeout_s=5)
    reader._types = {SHARE: "share", other: "share", STREAMS: "streams"}
    descs = {gid: _Desc("EMPTY", (), "simple", node) for gid in (SHARE, other, STREAMS)}
    out, errors = reader._share_offsets(object(), [other, SHARE, STREAMS], descs)
    assert calls == [[((other,), node), ((SHARE,), node)]]
    assert set(out) == {SHARE} and {tp: (o.start, o.lag) for tp, o in out[SHARE].items()} == (
        share_tool()
    )
    assert set(errors) == {other} and f"(coordinator {node})" in errors[other]
    assert "timed out" in errors[other]
    g = _group(other, descs[other], None, {(TOPIC, 0): "a@h"}, {}, [errors[other]], {}, {})
    assert group_lag(g, 0.0).plain == "?" and g.partitions[0].lag_unknown


def test_share_offsets_of_an_undescribed_group_are_not_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its coordinator did not answer ShareGroupDescribe: not asked again (one timeout per dead
    coordinator), its start offsets unknown with the reason."""
    monkeypatch.setattr(
        kafka_python, "describe_each_at", lambda *_a: pytest.fail("asked a dead coordinator")
    )
    reader = GroupReader({}, timeout_s=5)
    reader._types = {SHARE: "share"}
    dead = {SHARE: _Desc("UNKNOWN", (), "", 2, described=False)}
    out, errors = reader._share_offsets(object(), [SHARE], dead)
    assert out == {} and "not described" in errors[SHARE]
