"""Consumer groups with lag, read so that one failing broker costs only what it serves.

Measured on the local cluster with the coordinator of a consuming group killed: librdkafka's
admin ListConsumerGroups and ListOffsets keep waiting on the dead broker for the whole outage
(every poll timed out after 5 s, long after the coordinator had moved), ListOffsets answered
-1001 for a partition whose leader had moved (which a lag sum turned into "0"), and its
DescribeConsumerGroups aborted the whole process once (rd_kafka_enq_once_del_source_return:
assertion `eonce->refcnt > 0`, found by tests/integration/test_chaos.py); its OffsetFetch had
already been seen to crash it. So every group read here is kafka-python's: groups listed broker
by broker, each group described and its offsets fetched at its own coordinator, log-end offsets
asked of each partition leader, each failure confined to what that request covers.

Nothing here invents a figure: what could not be read is marked unknown (`committed_known`,
`log_end=None`) with the reason in `Group.error`; `carry_forward` then keeps the last known
value from an earlier poll, stamped with when it was read.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kconsole.cluster.security import kafka_python
from kconsole.cluster.security.clients import kafka_python_config
from kconsole.errors import AuthenticationFailed
from kconsole.models import Group, GroupPartition

log = logging.getLogger(__name__)
TP = tuple[str, int]


@dataclass(frozen=True)
class GroupsRead:
    """One poll of the consumer groups."""

    groups: tuple[Group, ...]
    listed_by_all: bool  # every broker asked answered ListGroups
    notes: tuple[str, ...] = ()  # what could not be read, for the source's health line
    # The log-end offsets read (the groups' partitions and every one asked to `sample`), what
    # could not be, and when the answers were in (None: none asked).
    ends: Mapping[TP, int] = field(default_factory=dict)
    end_errors: Mapping[TP, str] = field(default_factory=dict)
    ends_at: float | None = None


class GroupsUnreadable(Exception):
    """Not one group could be listed or is known: the source fails this round."""


class GroupReader:
    """Blocking reads of every consumer group (one instance per poller thread)."""

    def __init__(self, config: dict[str, Any], timeout_s: float):
        self.config = dict(config)
        self.timeout_s = timeout_s
        self._kp: Any = None
        # The brokers known to be paused now (read on the client's IO thread while it waits:
        # an answer still due from one of them is not waited for). None: wait for all.
        self.paused: Callable[[], Collection[int]] | None = None
        self._types: dict[str, str] = {}  # group id -> its type, as ListGroups last said

    # -- the kafka-python client ----------------------------------------------------------
    def client(self) -> Any:
        if self._kp is None:
            self._kp = kafka_python.admin_client(kafka_python_config(self.config, self.timeout_s))
        return self._kp

    def close(self) -> None:
        client, self._kp = self._kp, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()

    # -- one poll ---------------------------------------------------------------------------
    def read(
        self,
        known: Iterable[str] = (),
        brokers: Iterable[int] | None = None,
        leaders: Mapping[TP, int] | None = None,
        unasked: Sequence[int] = (),
        sample: Iterable[TP] = (),
        clock: Callable[[], float] = time.time,
    ) -> GroupsRead:
        """Every group: listed by each broker in `brokers` (default: the client's metadata),
        plus the `known` ones when a broker did not answer; log-end offsets asked of the
        partition leaders in `leaders` (default: the client's metadata), in the same requests
        those of every partition in `sample` (the rates: one request per leader in all)."""
        try:
            kp = self.client()
        except AuthenticationFailed as exc:
            self.close()
            raise GroupsUnreadable(exc.message) from exc
        except Exception as exc:
            self.close()
            raise GroupsUnreadable(f"no broker answered: {_text(exc)}") from exc
        failed = False
        try:
            ids, listed, answered, notes = self._list(kp, brokers)
            # A broker that failed to answer: this client's metadata may be stale (also when
            # GroupsUnreadable is raised just below). One not asked needs no new client.
            failed = not listed
            notes += [f"broker {b} not asked for its groups (not up)" for b in unasked]
            listed_by_all = listed and not unasked  # else its groups may be missing
            if not listed_by_all:
                ids |= set(known)
            sample = set(sample)
            if not ids:
                # No group at all, as the brokers that answered say. A broker that is down
                # coordinates nothing (its groups move with the __consumer_offsets leaders),
                # so listing the live ones is Kafka's Admin's normal case: a fresh answer that
                # says what was not asked (degraded), not a failure. Only when no broker
                # answered is there nothing to show.
                if answered:
                    ends, end_errors = self._log_ends(kp, sample, leaders or {}, unasked)
                    failed = failed or _failed(end_errors, leaders or {}, unasked)
                    at = clock() if sample else None
                    return GroupsRead((), listed_by_all, tuple(notes), ends, end_errors, at)
                raise GroupsUnreadable("; ".join(notes) or "no broker listed its groups")
            order = sorted(ids)
            descs, errors = self._describe(kp, order)
            committed, cerrors = self._committed(kp, order, descs)
            shares, serrors = self._share_offsets(kp, order, descs)
            committed.update(
                {gid: {tp: s.start for tp, s in o.items()} for gid, o in shares.items()}
            )
            cerrors.update(serrors)
            owners = {gid: _owners(descs.get(gid)) for gid in order}
            tps = {tp for gid in order for tp in (*committed.get(gid, {}), *owners[gid])}
            ends, end_errors = self._log_ends(kp, tps | sample, leaders or {}, unasked)
            ends_at = clock()
            failed = bool(cerrors or not listed) or _failed(end_errors, leaders or {}, unasked)
            groups = tuple(
                _group(
                    gid,
                    descs.get(gid),
                    committed.get(gid),
                    owners[gid],
                    ends,
                    [e for e in (errors.get(gid), cerrors.get(gid)) if e],
                    end_errors,
                    shares.get(gid, {}) if self._types.get(gid) == "share" else None,
                )
                for gid in order
            )
            # ListGroups v5 (Kafka 3.8+) says each group's type: classic, consumer, share or
            # streams.
            groups = tuple(
                replace(g, group_type=t) if (t := self._types.get(g.group_id)) else g
                for g in groups
            )
            return GroupsRead(groups, listed_by_all, tuple(notes), ends, end_errors, ends_at)
        finally:
            if failed:
                # A client that met a dead broker refreshes its metadata from scratch next time.
                self.close()

    def _list(
        self, kp: Any, brokers: Iterable[int] | None
    ) -> tuple[set[str], bool, bool, list[str]]:
        """The group ids the brokers list, whether every broker asked answered, whether any
        did, and what each one that did not answer said."""
        if brokers is None:
            try:
                brokers = sorted(int(b["broker_id"]) for b in kp.describe_cluster()["brokers"])
            except Exception as exc:
                raise GroupsUnreadable(f"no broker described the cluster: {_text(exc)}") from exc
        ids: set[str] = set()
        notes: list[str] = []
        asked = list(brokers)
        answered = 0
        try:  # every broker at once; one paused meanwhile is not waited for
            lists = kafka_python.list_groups_at(kp, asked, int(self.timeout_s * 1000), self.paused)
        except Exception as exc:  # the IO thread itself failed: no broker listed
            lists = dict.fromkeys(asked, exc)
        for bid in asked:
            entries = lists.get(bid, RuntimeError("no answer"))
            if isinstance(entries, BaseException):
                notes.append(f"broker {bid} did not list its groups ({_text(entries)})")
                continue
            answered += 1
            for entry in entries:
                gid = entry.get("group_id") if isinstance(entry, dict) else entry[0]
                if gid:
                    ids.add(str(gid))
                    kind = entry.get("group_type") if isinstance(entry, dict) else None
                    if kind:
                        self._types[str(gid)] = str(kind).lower()
        return ids, bool(asked) and not notes, answered > 0, notes

    def _coordinators(self, kp: Any, ids: list[str]) -> tuple[dict[str, int], dict[str, str]]:
        """Each group's coordinator: kafka-python keeps them once found, so a steady poll asks
        no broker; the unknown ones are found in one batched FindCoordinator. That batch fails
        as a whole on one group's error, so then they are asked one by one: a coordinator that
        is moving fails only its own groups."""
        try:
            return kafka_python.group_coordinators(kp, ids), {}
        except Exception:
            log.debug("batched FindCoordinator failed; group by group", exc_info=True)
        out: dict[str, int] = {}
        errors: dict[str, str] = {}
        for gid in ids:
            try:
                out[gid] = kafka_python.group_coordinator(kp, gid)
            except Exception as exc:
                errors[gid] = _coordinator_text(exc, None, "not described")
        return out, errors

    def _describe(self, kp: Any, ids: list[str]) -> tuple[dict[str, _Desc], dict[str, str]]:
        """Each group's coordinator, state and members, asked of its coordinator (one that does
        not answer fails only the groups it coordinates) with the API of the group's type, as
        Kafka's Admin client does: ConsumerGroupDescribe (KIP-848) first for consumer-protocol
        groups and for those whose type is not known, the classic DescribeGroups for classic
        groups and for those ConsumerGroupDescribe does not know (GROUP_ID_NOT_FOUND) or a
        coordinator that does not support it (Kafka 3.9 in ZooKeeper mode answers it
        UNSUPPORTED_VERSION), ShareGroupDescribe for share groups (KIP-932), StreamsGroupDescribe
        for streams groups (KIP-1071)."""
        coordinators, errors = self._coordinators(kp, ids)
        descs: dict[str, _Desc] = {}
        for coordinator, batch in _by_coordinator(coordinators).items():
            self._describe_at(kp, coordinator, batch, descs, errors)
        return descs, errors

    def _describe_at(
        self,
        kp: Any,
        coordinator: int,
        batch: list[str],
        descs: dict[str, _Desc],
        errors: dict[str, str],
    ) -> None:
        kinds = {gid: self._types.get(gid, "") for gid in batch}
        share = [gid for gid in batch if kinds[gid] == "share"]
        streams = [gid for gid in batch if kinds[gid] == "streams"]
        classic = [gid for gid in batch if kinds[gid] == "classic"]
        new = [gid for gid in batch if kinds[gid] not in ("share", "streams", "classic")]
        why_classic: dict[str, str] = {}  # a consumer group asked with DescribeGroups: why

        def unread(gids: Iterable[str], text: str) -> None:
            for gid in gids:
                errors[gid] = text
                descs[gid] = _Desc("UNKNOWN", (), "", coordinator, described=False)

        if self.paused is not None and coordinator in self.paused():
            # Known paused: not asked (its answer would only wait out the timeout, and the
            # rest of the poll, the log ends of the rates with it, behind it).
            unread(batch, f"not described (coordinator {coordinator} paused)")
            return
        timeout_ms = int(self.timeout_s * 1000)
        for gids, api in ((new, CONSUMER_API), (share, SHARE_API), (streams, STREAMS_API)):
            if not gids:
                continue
            try:
                answers = kafka_python.describe_at(
                    kp, api.request(gids), coordinator, timeout_ms, self.paused
                )
            except Exception as exc:
                if not kafka_python.is_unsupported(exc):
                    # The coordinator did not answer: the rest of its groups are not asked.
                    text = _coordinator_text(exc, coordinator, "not described")
                    unread([gid for gid in batch if gid not in descs], text)
                    return
                if api is not CONSUMER_API:
                    unread(gids, f"not described (coordinator {coordinator}): {api.unsupported}")
                    continue
                why_classic.update(dict.fromkeys(gids, api.unsupported))
                classic += gids
                continue
            for gid, result in _parse_answers(api, gids, answers, coordinator).items():
                if result is None:  # not a consumer-protocol group: a classic one, or gone
                    classic.append(gid)
                elif isinstance(result, BaseException) and kafka_python.is_unsupported(result):
                    # Kafka 3.9 in ZooKeeper mode offers API 69 but answers each group so.
                    if api is not CONSUMER_API:
                        unread(
                            [gid], f"not described (coordinator {coordinator}): {api.unsupported}"
                        )
                    else:
                        why_classic[gid] = api.unsupported
                        classic.append(gid)
                elif isinstance(result, BaseException):
                    unread([gid], _coordinator_text(result, coordinator, "not described"))
                else:
                    descs[gid] = result
        if not classic:
            return
        try:
            answers = kp.describe_groups(classic, group_coordinator_id=coordinator)
        except Exception as exc:
            unread(classic, _coordinator_text(exc, coordinator, "not described"))
            return
        for gid in classic:
            raw = answers.get(gid)
            if raw is None or raw.get("error"):
                why = RuntimeError(str(raw["error"])) if raw else RuntimeError("no answer")
                text = _coordinator_text(why, coordinator, "not described")
                unread([gid], f"{text} ({why_classic[gid]})" if gid in why_classic else text)
            else:
                descs[gid] = _Desc.parse(raw, coordinator)

    def _committed(
        self, kp: Any, ids: list[str], descs: Mapping[str, _Desc]
    ) -> tuple[dict[str, dict[TP, int | None]], dict[str, str]]:
        """Committed offsets per group: one OffsetFetch per coordinator (Kafka 3.0+ takes many
        groups in one). A coordinator that failed DescribeGroups this round is not asked; a
        batch that fails (kafka-python raises on any one group's error) is asked again group by
        group, so one group's error stays its own, and the first group that fails for its
        coordinator then stands for the rest of them: one timeout per dead broker."""
        out: dict[str, dict[TP, int | None]] = {}
        errors: dict[str, str] = {}
        batches: dict[int | None, list[str]] = {}
        for gid in ids:
            desc = descs.get(gid)
            coordinator = desc.coordinator if desc is not None else None
            if self._types.get(gid) == "share":
                continue  # no consumer offsets: its start offsets come from _share_offsets
            if desc is not None and not desc.described and coordinator is not None:
                errors[gid] = (
                    f"committed offsets not read (coordinator {coordinator} not described)"
                )
                continue
            batches.setdefault(coordinator, []).append(gid)
        for coordinator, batch in batches.items():
            try:
                res = kp.list_group_offsets({gid: None for gid in batch})
                for gid in batch:
                    out[gid] = _offsets(res.get(gid, {}))
                continue
            except Exception:
                log.debug("OffsetFetch of %d groups failed; group by group", len(batch))
            dead = ""
            for gid in batch:
                if dead:
                    errors[gid] = dead
                    continue
                try:
                    out[gid] = _offsets(kp.list_group_offsets([gid]).get(gid, {}))
                except Exception as exc:
                    errors[gid] = _coordinator_text(
                        exc, coordinator, "committed offsets not readable"
                    )
                    if coordinator is not None and not _is_group_error(exc):
                        dead = errors[gid]
        return out, errors

    def _share_offsets(
        self, kp: Any, ids: list[str], descs: Mapping[str, _Desc]
    ) -> tuple[dict[str, dict[TP, _ShareOffset]], dict[str, str]]:
        """Each share group's start offset and lag per partition, as Kafka's
        kafka-share-groups --describe reads them: DescribeShareGroupOffsets (all partitions) at
        the group's coordinator. One request per group, all in flight at once: on Kafka 4.4 a
        request naming two groups took about 2 s in 8 of 15 calls (one group: 2-15 ms). The
        lag is the coordinator's own figure (KIP-1226, Kafka 4.4+), never worked out here:
        records past the start offset already delivered for good are not lag, and only the
        coordinator knows them. A partition the answer gives an error for is unknown, with the
        error."""
        out: dict[str, dict[TP, _ShareOffset]] = {}
        errors: dict[str, str] = {}
        asked: list[tuple[str, int]] = []
        for gid in ids:
            if self._types.get(gid) != "share":
                continue
            desc = descs.get(gid)
            if desc is None or desc.coordinator is None or not desc.described:
                errors[gid] = "start offsets not read: the group was not described"
                continue
            asked.append((gid, desc.coordinator))
        if not asked:
            return out, errors
        requests = [(_share_offsets_request([gid]), node) for gid, node in asked]
        try:
            answers = kafka_python.describe_each_at(kp, requests, int(self.timeout_s * 1000))
        except Exception as exc:
            answers = [exc] * len(asked)
        for (gid, coordinator), answer in zip(asked, answers, strict=True):
            if isinstance(answer, BaseException):
                if kafka_python.is_unsupported(answer):
                    errors[gid] = f"start offsets not read (coordinator {coordinator}): " + (
                        SHARE_OFFSETS_UNSUPPORTED
                    )
                else:
                    errors[gid] = _coordinator_text(
                        answer, coordinator, "start offsets not readable"
                    )
                continue
            result = _parse_share_offsets([gid], answer)[gid]
            if isinstance(result, BaseException):
                errors[gid] = _coordinator_text(result, coordinator, "start offsets not readable")
                continue
            out[gid] = result
            bad = sorted({o.error for o in result.values() if o.error})
            if bad:
                n = sum(1 for o in result.values() if o.error)
                errors[gid] = f"start offset unknown for {n} partition(s): {bad[0]}"
            elif any(o.start is not None and o.lag is None for o in result.values()):
                errors[gid] = SHARE_LAG_UNREPORTED
        return out, errors

    def _log_ends(
        self, kp: Any, tps: set[TP], leaders: Mapping[TP, int], unasked: Collection[int] = ()
    ) -> tuple[dict[TP, int], dict[TP, str]]:
        """Log-end offsets: one ListOffsets per leader, sent straight to the leader the latest
        snapshot names (ZooKeeper's view), all in flight at once, so a dead leader costs only
        its own partitions. kafka-python's own list_partition_offsets first reads the metadata
        of every topic asked about, in pure Python: on 2,000 partitions that was most of the
        console's idle CPU. Partitions with no known leader, or whose leader just moved (the
        answer says not leader), are asked through it. A leader in `unasked` (registered, not
        up: paused, say) is not asked: its partitions' log ends are unknown at once, and the
        others' do not wait out its timeout (10 s during a paused leader's failover, every
        partition's rate unknown meanwhile)."""
        by_leader: dict[int, list[TP]] = {}
        errors: dict[TP, str] = {}
        ends: dict[TP, int] = {}
        routed: list[TP] = []
        skip = set(unasked)
        for tp in sorted(tps):
            leader = leaders.get(tp)
            if leader is not None and leader < 0:
                errors[tp] = "partition offline"
            elif leader in skip:
                errors[tp] = f"leader {leader} not asked (not up)"
            elif leader is None:
                routed.append(tp)
            else:
                by_leader.setdefault(leader, []).append(tp)
        if by_leader:
            try:
                answers = kafka_python.log_ends_by_leader(
                    kp, by_leader, int(self.timeout_s * 1000), self.paused
                )
            except Exception as exc:
                answers = {leader: exc for leader in by_leader}
            for leader, answer in answers.items():
                if isinstance(answer, BaseException):
                    if type(answer).__name__ in _NOT_KNOWN_YET:  # the client's metadata lags
                        routed.extend(by_leader[leader])
                        continue
                    for tp in by_leader[leader]:
                        errors[tp] = f"leader {leader}: {_text(answer)}"
                    continue
                for tp, (code, offset) in answer.items():
                    if code == 0 and offset >= 0:
                        ends[tp] = offset
                    elif code in _NOT_LEADER:
                        routed.append(tp)
                    else:
                        errors[tp] = f"leader {leader}: {_error_name(code)}"
        if routed:
            ends.update(self._routed_ends(kp, routed, errors))
        for tp in tps:
            if tp not in ends and tp not in errors:
                errors[tp] = "no log-end offset in the answer"
        return ends, errors

    def log_sizes(
        self, brokers: Sequence[int], leaders: Mapping[TP, int]
    ) -> tuple[dict[TP, tuple[int, int]], dict[TP, str], str]:
        """Each partition's log size on its leader (broker, bytes): one DescribeLogDirs per
        broker in `brokers`, all in flight at once; what could not be read; and why no size
        is given at all ("" when some is: a cluster that refuses the request, say)."""
        try:
            kp = self.client()
        except Exception as exc:
            self.close()
            return {}, dict.fromkeys(leaders, f"no broker answered: {_text(exc)}"), ""
        answers = kafka_python.log_sizes_at(kp, brokers, int(self.timeout_s * 1000))
        sizes: dict[TP, tuple[int, int]] = {}
        errors: dict[TP, str] = {}
        refusals = []
        for broker, answer in answers.items():
            if isinstance(answer, BaseException):
                if kafka_python.is_unsupported(answer) or _is_refused(answer):
                    refusals.append(f"broker {broker}: {_text(answer)}")
                for tp, leader in leaders.items():
                    if leader == broker:
                        errors[tp] = f"broker {broker}: {_text(answer)}"
                continue
            for tp, size in answer.items():
                if leaders.get(tp) == broker:
                    sizes[tp] = (broker, size)
        if refusals and len(refusals) == len(answers):
            return {}, {}, "; ".join(refusals)
        for tp, leader in leaders.items():
            if tp not in sizes and tp not in errors:
                errors[tp] = "partition offline" if leader < 0 else f"broker {leader}: no size"
        return sizes, errors, ""

    def _routed_ends(self, kp: Any, tps: list[TP], errors: dict[TP, str]) -> dict[TP, int]:
        """Log-end offsets through kafka-python's own leader lookup (its metadata)."""
        from kafka import TopicPartition
        from kafka.admin import OffsetSpec

        spec = {TopicPartition(t, p): OffsetSpec.LATEST for t, p in tps}
        try:
            res = kp.list_partition_offsets(spec, timeout_ms=int(self.timeout_s * 1000))
        except Exception as exc:
            for tp in tps:
                errors[tp] = f"partition leaders: {_text(exc)}"
            return {}
        return {(tp.topic, tp.partition): ot.offset for tp, ot in res.items() if ot.offset >= 0}


# ListOffsets partition errors that mean "ask the new leader": NOT_LEADER_OR_FOLLOWER (6),
# LEADER_NOT_AVAILABLE (5), FENCED_LEADER_EPOCH (74), UNKNOWN_LEADER_EPOCH (75).
_NOT_LEADER = frozenset({5, 6, 74, 75})
# A leader kafka-python's metadata does not know yet (a broker that just joined): asked through
# its own lookup instead, which refreshes that metadata.
_NOT_KNOWN_YET = frozenset({"UnknownBrokerIdError"})


def _is_refused(exc: BaseException) -> bool:
    """An authorization refusal (DescribeLogDirs needs DESCRIBE on the cluster)."""
    return "AUTHORIZATION" in type(exc).__name__.upper() or "Authorization" in str(exc)


def _error_name(code: int) -> str:
    import kafka.errors

    return str(kafka.errors.for_code(code).__name__)


def _error(code: int, message: str | None) -> BaseException:
    """kafka-python's exception for an error code: '[Error 16] NotCoordinatorError: ...'."""
    import kafka.errors

    cls = kafka.errors.for_code(code)
    return cls(message) if message else cls()


def _by_coordinator(coordinators: Mapping[str, int]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for gid, coordinator in coordinators.items():
        out.setdefault(coordinator, []).append(gid)
    return out


def _offsets(res: Mapping[Any, Any]) -> dict[TP, int | None]:
    return {
        (tp.topic, tp.partition): None if om.offset < 0 else om.offset for tp, om in res.items()
    }


def _is_group_error(exc: BaseException) -> bool:
    """An error about the group itself (its coordinator answered): not a dead coordinator."""
    name = type(exc).__name__
    return any(m in name for m in ("GroupAuthorization", "GroupIdNotFound", "InvalidGroupId"))


def _group(
    gid: str,
    desc: _Desc | None,
    committed: dict[TP, int | None] | None,
    owners: dict[TP, str],
    ends: Mapping[TP, int],
    errors: list[str],
    end_errors: Mapping[TP, str],
    shares: Mapping[TP, _ShareOffset] | None = None,
) -> Group:
    """A group from what was read of it; `shares` (a share group's, read or not) makes each
    partition a share partition with the start offset and lag its coordinator gave."""
    tps = sorted(set(committed or {}) | set(owners))
    share = shares is not None
    if share:
        # A share partition's lag does not depend on the log end: an unknown one is no gap.
        end_errors = {}
    unknown_ends = [tp for tp in tps if tp in end_errors]
    if unknown_ends:
        reasons = sorted({end_errors[tp] for tp in unknown_ends})
        errors = [*errors, f"log end unknown for {len(unknown_ends)} partition(s): {reasons[0]}"]
    return Group(
        group_id=gid,
        state=desc.state if desc is not None else "UNKNOWN",
        members=len(desc.members) if desc is not None else 0,
        assignor=desc.assignor if desc is not None else "",
        coordinator=desc.coordinator if desc is not None else None,
        partitions=tuple(
            GroupPartition(
                t,
                p,
                (committed or {}).get((t, p)),
                ends.get((t, p)),
                owners.get((t, p)),
                committed_known=committed is not None
                and not (share and (shares or {}).get((t, p), _READ).error),
                share=share,
                share_lag=(shares or {}).get((t, p), _READ).lag,
            )
            for t, p in tps
        ),
        error="; ".join(errors),
        as_of=None,
    )


def carry_forward(
    previous: Sequence[Group], previous_at: float | None, fresh: Sequence[Group]
) -> tuple[Group, ...]:
    """`fresh` with every figure it could not read taken from `previous` (read at
    `previous_at`, or earlier when it was carried itself), stamped with when it was read."""
    if previous_at is None:
        return tuple(fresh)
    before = {g.group_id: g for g in previous}
    return tuple(_carry(before.get(g.group_id), previous_at, g) for g in fresh)


def _carry(prev: Group | None, prev_at: float, g: Group) -> Group:
    if prev is None or not g.error:
        return g
    described = not (g.state == "UNKNOWN" and prev.state != "UNKNOWN")
    if not described:
        g = replace(
            g,
            state=prev.state,
            members=prev.members,
            assignor=prev.assignor,
            coordinator=g.coordinator if g.coordinator is not None else prev.coordinator,
            as_of=prev.as_of if prev.as_of is not None else prev_at,
        )
    old = {(p.topic, p.partition): p for p in prev.partitions}
    now = {(p.topic, p.partition): p for p in g.partitions}
    # Committed offsets not read this time: every partition known before stays on screen.
    keep_old = not g.partitions or any(not p.committed_known for p in g.partitions)
    keys = sorted(set(now) | set(old)) if keep_old else sorted(now)
    parts = []
    for key in keys:
        cur = now.get(key) or GroupPartition(*key, None, None, committed_known=False)
        was = old.get(key)
        if was is not None:
            cur = _carry_partition(was, was.as_of if was.as_of is not None else prev_at, cur)
            if cur.owner is None and not described:
                cur = replace(cur, owner=was.owner)
        parts.append(cur)
    return replace(g, partitions=tuple(parts))


def _carry_partition(was: GroupPartition, stamp: float, cur: GroupPartition) -> GroupPartition:
    carried = False
    if not cur.committed_known and was.committed_known:
        cur = replace(cur, committed=was.committed, committed_known=True, share_lag=was.share_lag)
        carried = True
    if cur.log_end is None and was.log_end is not None:
        cur = replace(cur, log_end=was.log_end)
        carried = True
    return replace(cur, as_of=stamp) if carried else cur


@dataclass(frozen=True)
class _Desc:
    """A group's DescribeGroups (or ConsumerGroupDescribe / ShareGroupDescribe) answer, as far
    as the panes use it."""

    state: str
    members: tuple[tuple[str, tuple[TP, ...]], ...]  # (client@host, assigned partitions)
    assignor: str
    coordinator: int | None
    described: bool = True

    @classmethod
    def parse(cls, raw: Mapping[str, Any], coordinator: int | None) -> _Desc:
        members = []
        for m in raw.get("members") or ():
            owner = _owner(m)
            assignment = m.get("member_assignment")
            tps: list[TP] = []
            if isinstance(assignment, Mapping):  # a consumer's (other protocols: opaque bytes)
                for entry in assignment.get("assigned_partitions") or ():
                    tps.extend((str(entry["topic"]), int(p)) for p in entry["partitions"])
            members.append((owner, tuple(tps)))
        return cls(
            _state_name(str(raw.get("group_state", ""))),
            tuple(members),
            str(raw.get("protocol_data") or ""),
            coordinator,
        )

    @classmethod
    def parse_described(cls, raw: Mapping[str, Any], coordinator: int | None) -> _Desc:
        """A ConsumerGroupDescribe or ShareGroupDescribe group (its to_dict()): members with
        their current assignment (topic names, partitions), the assignor the group uses."""
        members = []
        for m in raw.get("members") or ():
            owner = _owner(m)
            assignment = m.get("assignment") or {}
            tps = [
                (str(entry["topic_name"]), int(p))
                for entry in assignment.get("topic_partitions") or ()
                for p in entry.get("partitions") or ()
            ]
            members.append((owner, tuple(sorted(tps))))
        return cls(
            _state_name(str(raw.get("group_state", ""))),
            tuple(members),
            str(raw.get("assignor_name") or ""),
            coordinator,
        )

    @classmethod
    def parse_streams(cls, raw: Mapping[str, Any], coordinator: int | None) -> _Desc:
        """A StreamsGroupDescribe group (its to_dict()): members with the partitions of their
        active tasks. A task is (subtopology, partition): it reads that partition of each of
        the subtopology's source topics (and repartition topics), as the topology says."""
        sources: dict[str, list[str]] = {}
        for sub in (raw.get("topology") or {}).get("subtopologies") or ():
            names = [str(t) for t in sub.get("source_topics") or ()]
            names += [str(t["name"]) for t in sub.get("repartition_source_topics") or ()]
            sources[str(sub["subtopology_id"])] = names
        members = []
        for m in raw.get("members") or ():
            owner = _owner(m)
            tasks = (m.get("assignment") or {}).get("active_tasks") or ()
            tps = {
                (topic, int(p))
                for task in tasks
                for topic in sources.get(str(task["subtopology_id"]), ())
                for p in task.get("partitions") or ()
            }
            members.append((owner, tuple(sorted(tps))))
        return cls(
            _state_name(str(raw.get("group_state", ""))),
            tuple(members),
            str(raw.get("assignor_name") or ""),
            coordinator,
        )


@dataclass(frozen=True)
class _Api:
    """A group-describe API of the new group protocols, as this reader uses it."""

    name: str
    min_version: int
    unsupported: str  # why a coordinator without it cannot be asked

    def request(self, group_ids: list[str]) -> Any:
        # kafka-python, loaded when first used
        from kconsole.cluster.groups import messages as group_messages

        return getattr(group_messages, f"{self.name}Request")(
            group_ids=list(group_ids),
            include_authorized_operations=False,
            min_version=self.min_version,
        )


CONSUMER_API = _Api(
    "ConsumerGroupDescribe",
    0,
    "ConsumerGroupDescribe not supported by the coordinator (KIP-848: Kafka 4.0+, KRaft)",
)
# v0 was Kafka 4.0's early access, with another schema: a broker offering only v0 is not asked.
SHARE_API = _Api(
    "ShareGroupDescribe",
    1,
    "ShareGroupDescribe v1 not supported by the coordinator (share groups: Kafka 4.1+)",
)
STREAMS_API = _Api(
    "StreamsGroupDescribe",
    0,
    "StreamsGroupDescribe not supported by the coordinator (streams groups: Kafka 4.1+)",
)
GROUP_ID_NOT_FOUND = 69
SHARE_OFFSETS_UNSUPPORTED = (
    "DescribeShareGroupOffsets not supported by the coordinator (share groups: Kafka 4.1+)"
)
SHARE_LAG_UNREPORTED = (
    "share lag not reported by the coordinator (KIP-1226: Kafka 4.4+, or a partition whose"
    " share state has no delivered count yet)"
)


@dataclass(frozen=True)
class _ShareOffset:
    """One share partition as DescribeShareGroupOffsets gave it: its start offset (None: not
    initialised yet, Kafka's tool prints "-"), the coordinator's lag (None: not reported) or
    the partition's error."""

    start: int | None
    lag: int | None
    error: str = ""


_READ = _ShareOffset(None, None)  # a partition the answer did not list: nothing to say


def _share_offsets_request(group_ids: Sequence[str]) -> Any:
    """DescribeShareGroupOffsets of every partition (topics null) of each group."""
    from kconsole.cluster.groups import messages as group_messages

    req = group_messages.DescribeShareGroupOffsetsRequest
    return req(
        groups=[
            req.DescribeShareGroupOffsetsRequestGroup(group_id=gid, topics=None)
            for gid in group_ids
        ]
    )


def _parse_share_offsets(
    asked: Sequence[str], answers: Sequence[Mapping[str, Any]]
) -> dict[str, dict[TP, _ShareOffset] | BaseException]:
    """Each asked group's share partitions from a DescribeShareGroupOffsets answer (its
    to_dict()["groups"]), or the group's error. As Kafka's Admin reads it: a start offset
    below 0 is none yet, a lag below 0 (or absent: v0) is not reported."""
    out: dict[str, dict[TP, _ShareOffset] | BaseException] = {
        gid: RuntimeError("no answer to DescribeShareGroupOffsets") for gid in asked
    }
    for raw in answers:
        gid = str(raw.get("group_id", ""))
        if gid not in out:
            continue
        code = int(raw.get("error_code") or 0)
        if code:
            out[gid] = _error(code, raw.get("error_message"))
            continue
        parts: dict[TP, _ShareOffset] = {}
        for topic in raw.get("topics") or ():
            for p in topic.get("partitions") or ():
                tp = (str(topic["topic_name"]), int(p["partition_index"]))
                pcode = int(p.get("error_code") or 0)
                if pcode:
                    parts[tp] = _ShareOffset(None, None, str(_error(pcode, p.get("error_message"))))
                    continue
                start = int(p.get("start_offset", -1))
                lag = int(p.get("lag", -1) if p.get("lag") is not None else -1)
                parts[tp] = _ShareOffset(
                    start if start >= 0 else None, lag if lag >= 0 and start >= 0 else None
                )
        out[gid] = parts
    return out


def _parse_answers(
    api: _Api, asked: Sequence[str], answers: Sequence[Mapping[str, Any]], coordinator: int
) -> dict[str, _Desc | BaseException | None]:
    """Each asked group's answer: its description, the error it was answered with (kafka-python's
    exception for the code, with the answer's message), or None when
    ConsumerGroupDescribe does not know it (GROUP_ID_NOT_FOUND: not a consumer-protocol group,
    so Kafka's Admin asks DescribeGroups next). A group missing from the answer says so."""
    out: dict[str, _Desc | BaseException | None] = {
        gid: RuntimeError(f"no answer to {api.name}") for gid in asked
    }
    for raw in answers:
        gid = str(raw.get("group_id", ""))
        if gid not in out:
            continue
        code = int(raw.get("error_code") or 0)
        if code == GROUP_ID_NOT_FOUND and api is CONSUMER_API:
            out[gid] = None
        elif code:
            out[gid] = _error(code, raw.get("error_message"))
        elif api is STREAMS_API:
            out[gid] = _Desc.parse_streams(raw, coordinator)
        else:
            out[gid] = _Desc.parse_described(raw, coordinator)
    return out


def _owner(member: Mapping[str, Any]) -> str:
    """A member as the groups pane names it: client id @ host (as Kafka's tools print it)."""
    return f"{member.get('client_id', '')}@{str(member.get('client_host', '')).lstrip('/')}"


def _owners(desc: _Desc | None) -> dict[TP, str]:
    """Each assigned partition's owner. A share group may give one partition to several
    members (KIP-932): then all of them, each once."""
    owners: dict[TP, list[str]] = {}
    for owner, tps in desc.members if desc is not None else ():
        for tp in tps:
            if owner not in owners.setdefault(tp, []):
                owners[tp].append(owner)
    return {tp: ", ".join(names) for tp, names in owners.items()}


def _state_name(state: str) -> str:
    """'PreparingRebalance' -> 'PREPARING_REBALANCE' (the names Kafka's tools print)."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", "_", state).upper() or "UNKNOWN"


_MOVING = ("NotCoordinator", "CoordinatorNotAvailable", "CoordinatorLoadInProgress")


def _coordinator_text(exc: BaseException, coordinator: int | None, what: str) -> str:
    name = type(exc).__name__
    where = f" (coordinator {coordinator})" if coordinator is not None else ""
    if any(m in name or m in str(exc) for m in _MOVING):
        return f"coordinator moving{where}: {what} yet ({name})"
    return f"{what}{where}: {_text(exc)}"


def _failed(errors: Mapping[TP, str], leaders: Mapping[TP, int], unasked: Collection[int]) -> bool:
    """Whether a log end was asked and not read (a leader not asked is no failure of the
    client's: its metadata needs no refresh for it)."""
    return any(leaders.get(tp) not in unasked for tp in errors)


def _text(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if "KafkaError" in text and "str=" in text:  # KafkaError{code=..,str="..."} -> the str
        text = text.split('str="', 1)[-1].rstrip('"})')
    if len(text) > 160:
        text = text[:157] + "..."
    return text
