"""Property tests of what a person types to operate the cluster (issue 13, "Bad input"): drill
targets and settings, job options, reassignment plans in JSON and replica lists typed by hand.
The conventions and the total count are in test_input_properties.py.

Generated examples per run (max_examples; derandomized):
    drill settings             250
    drill targets               36 + 350       = 386   (36: every target, both snapshots)
    job options (--opt)        150 + 150       = 300
    job options (argparse)     200 + 250       = 450
    reassignment JSON          150 + 200 + 300 + 150 = 800
    topics and partitions      100 + 150       = 250
    broker ids                 100 + 150       = 250
    replica lists              100 + 200       = 300
    throttles                  100 + 150       = 250
    replication factors         50 + 100       = 150
    this file                                   3386
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconsole.cli.jobs import _parse_job_options
from kconsole.cli.reassign import _read_plan
from kconsole.config import Settings
from kconsole.drills.spec import DrillError, DrillSpec, resolve_target
from kconsole.errors import ClusterError
from kconsole.faults import fault_names
from kconsole.jobs.manager import JobManager
from kconsole.jobs.specs import INTERNAL_OPTIONS, JobError, JobSpec, get_job
from kconsole.models import ClusterSnapshot, Controller
from kconsole.reassign import Move, Plan, PlanError
from kconsole.reassign.fields import (
    MAX_ID,
    MAX_THROTTLE,
    parse_ids,
    parse_replicas,
    parse_rf,
    parse_targets,
    parse_throttle,
)
from tests.ui.builders import healthy
from tests.unit.inputs import (
    TOPIC_CHARS,
    chars,
    junk,
    junk_after,
    mixed,
    outcome,
    props,
    topic_names,
)

topics = topic_names(30)
any_float = st.one_of(st.floats(), st.sampled_from([0.0, -0.0, 1e-9, 100_000.0, 100_000.5]))
no_nul_text = st.text(
    st.characters(exclude_characters="\x00", exclude_categories=["Cs"]), max_size=15
)


# -- drills -------------------------------------------------------------------------------------
@props(250)
@given(
    fault=mixed(st.sampled_from(list(fault_names()))),
    target=junk,
    acks=mixed(st.sampled_from(["all", "1", "0"])),
    duration=any_float,
    restore_after=any_float,
    settle_timeout=any_float,
    rate=any_float,
    topic=mixed(topics),
)
def test_any_drill_settings(
    fault: str,
    target: str,
    acks: Any,
    duration: float,
    restore_after: float,
    settle_timeout: float,
    rate: float,
    topic: str,
) -> None:
    spec = outcome(
        lambda: DrillSpec(
            fault, target, acks, duration, restore_after, settle_timeout, rate=rate, topic=topic
        ),
        DrillError,
        fault,
        acks,
        topic,
    )
    fine = (
        fault in fault_names()
        and acks in ("all", "1", "0")
        and 0 < duration < math.inf
        and 0 <= restore_after < math.inf
        and 2.0 + restore_after < duration  # the restore comes while the workload runs
        and 0 <= settle_timeout < math.inf
        and 0 < rate <= 100_000
        and 0 < len(topic) < 250
        and set(topic) <= set(TOPIC_CHARS)
        and topic not in (".", "..")
    )
    assert (spec is not None) == fine


def snapshots() -> list[ClusterSnapshot]:
    """The seed cluster, and one without a controller whose test-topic/1 is offline."""
    snap = healthy()
    down = tuple(
        dataclasses.replace(p, leader=-1, isr=()) if p.key == "test-topic/1" else p
        for p in snap.partitions
    )
    return [snap, dataclasses.replace(snap, controller=Controller(None), partitions=down)]


def meant(snap: ClusterSnapshot, target: str) -> int | None:
    """What a target names, worked out the long way (None: nothing, an error)."""
    if target == "controller":
        return snap.controller.id
    if target.startswith("broker:"):
        ids = {str(b.id): b.id for b in snap.brokers}
        return ids.get(target.removeprefix("broker:").strip())
    for p in snap.partitions:
        if target == f"leader:{p.topic}/{p.partition}":
            return None if snap.is_offline(p) else p.leader
    return None


@props(100)  # runs out after the 36 there are
@given(st.sampled_from(snapshots()), st.data())
def test_valid_drill_targets(snap: ClusterSnapshot, data: st.DataObject) -> None:
    targets = ["controller", *(f"broker:{b.id}" for b in snap.brokers)]
    targets += [f"leader:{p.topic}/{p.partition}" for p in snap.partitions]
    target = data.draw(st.sampled_from(targets))
    broker = outcome(lambda: resolve_target(snap, target), DrillError)
    assert broker == meant(snap, target)


@props(350)
@given(
    st.sampled_from(snapshots()),
    junk_after("controller", "broker:", "broker:1", "leader:", "leader:test-topic/", "leader:/"),
)
def test_any_drill_target(snap: ClusterSnapshot, target: str) -> None:
    broker = outcome(lambda: resolve_target(snap, target), DrillError, target)
    if broker is not None:
        assert snap.broker(broker) is not None


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("leader:test-topic/²", "leader:TOPIC/PARTITION expected"),
        ("leader:test-topic/" + "9" * 5000, "leader:TOPIC/PARTITION expected"),
        ("broker:" + "9" * 5000, "broker:ID needs a number"),
        ("broker:-1", "broker:ID needs a number"),
    ],
)
def test_drill_target_bugs_found(target: str, message: str) -> None:
    """ "leader:t/²" raised ValueError (isdigit passes "²", int refuses it)."""
    with pytest.raises(DrillError, match=message):
        resolve_target(healthy(), target)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"rate": math.nan}, "--rate must be between"),
        ({"duration_s": math.nan}, "--duration must be positive"),
        ({"duration_s": math.inf}, "--duration must be positive"),
        ({"restore_after_s": math.nan}, "--restore-after not negative"),
        ({"settle_timeout_s": -1.0}, "--settle-timeout must be"),
        (
            {"duration_s": 5.0, "restore_after_s": 10.0},
            r"--restore-after 10 s does not fit in --duration 5 s: the fault comes 2 s after "
            r"the workload starts, so the workload would end before the restore\. Give "
            r"--duration more than 12 s",
        ),
        ({"topic": "bad topic"}, "--topic: invalid topic name 'bad topic'"),
        ({"message_bytes": -1}, "--message-bytes must be between 0 and 900,000"),
        ({"message_bytes": 2_000_000}, r"under the brokers' default message\.max\.bytes"),
    ],
)
def test_drill_settings_bugs_found(kw: dict[str, Any], message: str) -> None:
    """NaN and infinite durations and rates were accepted (every comparison with NaN is false),
    and so was any topic name; a restore after the workload's end was accepted without a word
    (issue 26)."""
    with pytest.raises(DrillError, match=message):
        DrillSpec("stop", "controller", **kw)


# -- job options --------------------------------------------------------------------------------
opt_keys = st.from_regex(r"[a-z][a-z0-9_-]{0,12}", fullmatch=True)


@props(150)
@given(st.lists(st.tuples(opt_keys, st.text(max_size=12)), max_size=6))
def test_opt_items_round_trip(pairs: list[tuple[str, str]]) -> None:
    want: dict[str, Any] = {}
    for key, value in pairs:  # a repeated key is a list option: every value, in order
        want[key] = (
            [*want[key], value]
            if isinstance(want.get(key), list)
            else ([want[key], value] if key in want else value)
        )
    assert _parse_job_options(tuple(f"{k}={v}" for k, v in pairs)) == want


@props(150)
@given(st.lists(junk_after("k=", "=", " ="), max_size=4))
def test_any_opt_items(items: list[str]) -> None:
    options = outcome(lambda: _parse_job_options(tuple(items)), ClusterError, *items)
    if options is not None:
        assert all(k and k == k.strip() for k in options)


JOBS = ["keyed-counts", "sequence-checker"]
MASTERS = ["local", "local[*]", "local[2]", "local[2,3]", "spark://h:7077", "yarn", "k8s://h"]


@pytest.fixture(scope="module")
def manager(tmp_path_factory: pytest.TempPathFactory) -> JobManager:
    return JobManager(tmp_path_factory.mktemp("jobs"), Settings())


def value_for(spec: JobSpec, name: str) -> st.SearchStrategy[tuple[Any, Any]]:
    """(what is given, what argparse must make of it) for a valid value of option `name`."""
    opt = spec.option(name)
    assert opt is not None
    if name == "starting-offsets":
        offsets = st.dictionaries(
            topics, st.dictionaries(st.integers(0, 9).map(str), st.integers(-2, 10**6)), max_size=2
        )
        text = st.one_of(st.sampled_from(["earliest", "latest"]), offsets.map(json.dumps))
        return text.map(lambda t: (t, t))
    if name == "master":
        return st.sampled_from(MASTERS).map(lambda m: (m, m))
    if opt.kind == "int":
        return st.integers(-(10**12), 10**12).map(lambda n: (str(n), n))
    if opt.kind == "float":
        low = 0.0 if name == "trigger" else None
        floats = st.floats(min_value=low, allow_nan=False, allow_infinity=False)
        return floats.map(lambda f: (repr(f), f))
    if opt.kind == "choice":
        return st.sampled_from(opt.choices).map(lambda c: (c, c))
    if opt.kind == "flag":
        truthy = st.sampled_from([True, False, "true", "yes", "1", "on", "no", "0", ""])
        return truthy.map(lambda v: (v, v is True or str(v).lower() in ("1", "true", "yes", "on")))
    if opt.kind == "list":
        pair = st.tuples(st.from_regex(r"[a-z][a-z.]{0,12}", fullmatch=True), no_nul_text)
        return st.lists(pair, min_size=1, max_size=3).map(
            lambda kvs: ([f"{k}={v}" for k, v in kvs], list(kvs))
        )
    return no_nul_text.map(lambda t: (t, t))  # text as typed, "-x" and "" included


@props(200)
@given(job=st.sampled_from(JOBS), data=st.data())
def test_valid_job_options_reach_the_script_as_typed(
    job: str, data: st.DataObject, manager: JobManager
) -> None:
    spec = get_job(job)
    names = data.draw(
        st.lists(st.sampled_from([o.name for o in spec.options]), max_size=5, unique=True)
    )
    given_, want = {}, {}
    for name in names:
        given_[name], want[name] = data.draw(value_for(spec, name))
    # The manager's own two steps before it starts anything: argv, then the script's parser.
    ns = manager._validate(spec, manager._flags(spec, given_))
    for name, value in want.items():
        got = getattr(ns, name.replace("-", "_"))
        if spec.option(name).kind == "flag":  # type: ignore[union-attr]
            assert got is value
        else:
            assert got == value


@props(250)
@given(
    job=st.sampled_from(JOBS),
    options=st.dictionaries(
        st.one_of(
            st.sampled_from(
                [
                    "topic",
                    "trigger",
                    "show",
                    "master",
                    "starting-offsets",
                    "conf",
                    "available-now",
                    "run",
                    "window",
                    "output-mode",
                    *INTERNAL_OPTIONS,
                ]
            ),
            opt_keys,
            junk,
        ),
        st.one_of(junk, st.lists(junk, max_size=2), st.booleans(), st.none(), st.integers()),
        max_size=4,
    ),
)
def test_any_job_options(job: str, options: dict[str, Any], manager: JobManager) -> None:
    spec = get_job(job)
    typed = [*options, *(v for v in options.values() if isinstance(v, str))]
    outcome(lambda: manager._validate(spec, manager._flags(spec, options)), JobError, *typed)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"topic": "a\x00b"}, "option topic: 'a\\\\x00b' cannot go on a command line"),
        ({"conf": ["a=\ud800"]}, "option conf: 'a=\\\\ud800' cannot go on a command line"),
        ({"starting-offsets": "[" * 100_000}, "starting-offsets must be earliest, latest or JSON"),
        ({"trigger": "nan"}, "argument --trigger: must be >= 0, not nan"),
        ({"conf": False}, "argument --conf: expected KEY=VALUE, got 'False'"),
    ],
)
def test_job_option_bugs_found(options: dict[str, Any], message: str, manager: JobManager) -> None:
    """A NUL or a lone surrogate in a value made Popen fail after the run's directory was made;
    deeply nested starting-offsets JSON raised RecursionError; a trigger of NaN was accepted; a
    list option given a bool (not a list) raised TypeError."""
    spec = get_job("keyed-counts")
    with pytest.raises(JobError, match=message):
        manager._validate(spec, manager._flags(spec, options))


def test_a_value_that_starts_with_a_dash(manager: JobManager) -> None:
    """ "-orders" is a valid topic; as two arguments argparse took it for an option ("expected
    one argument")."""
    spec = get_job("keyed-counts")
    flags = manager._flags(spec, {"topic": "-orders", "show": "-1"})
    assert "--topic=-orders" in flags
    ns = manager._validate(spec, flags)
    assert (ns.topic, ns.show) == ("-orders", -1)


# -- reassignment plans (JSON) ------------------------------------------------------------------
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(chars, max_size=8)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
broker_ids = st.one_of(st.integers(0, 9), st.integers(), st.sampled_from([-1, True, 1.0, "1"]))
entries = st.fixed_dictionaries(
    {},
    optional={
        "topic": st.one_of(topics, st.just(""), json_values),
        "partition": st.one_of(st.integers(0, 50), st.integers(), json_values),
        "replicas": st.one_of(st.lists(broker_ids, max_size=4), json_values),
        "log_dirs": st.one_of(
            st.lists(st.sampled_from(["any", "/d1", "/d2"]), max_size=4), json_values
        ),
        "extra": json_values,
    },
)
documents = st.fixed_dictionaries(
    {},
    optional={
        "version": st.one_of(st.just(1), st.sampled_from([1.0, 2, 0, True, "1", None])),
        "partitions": st.one_of(st.lists(entries, max_size=4), json_values),
    },
)


def check_plan(plan: Plan) -> None:
    keys = [m.key for m in plan.moves]
    assert keys == sorted(set(keys))
    for m in plan.moves:
        assert isinstance(m.topic, str) and m.topic
        assert type(m.partition) is int and m.partition >= 0
        assert all(type(r) is int and r >= 0 for r in m.replicas)
        assert not m.log_dirs or len(m.log_dirs) == len(m.replicas)


@props(150)
@given(
    st.lists(
        st.tuples(
            topics,
            st.integers(0, 10**6),
            st.lists(st.integers(0, MAX_ID), max_size=4),
            st.booleans(),
        ),
        max_size=6,
        unique_by=lambda e: (e[0], e[1]),
    )
)
def test_kafka_tool_plans_are_read_as_written(
    parts: list[tuple[str, int, list[int], bool]],
) -> None:
    """As kafka-reassign-partitions writes them: any order, log_dirs "any" or missing."""
    doc = {
        "version": 1,
        "partitions": [
            {
                "topic": t,
                "partition": p,
                "replicas": r,
                **({"log_dirs": ["any"] * len(r)} if d else {}),
            }
            for t, p, r, d in parts
        ],
    }
    plan = Plan.from_json(json.dumps(doc, indent=2))
    assert plan == Plan(
        tuple(sorted((Move(t, p, tuple(r)) for t, p, r, _ in parts), key=lambda m: m.key))
    )


@props(200)
@given(json_values)
def test_any_json_document_as_a_plan(doc: Any) -> None:
    plan = outcome(lambda: Plan.from_json(json.dumps(doc)), PlanError)
    if plan is not None:
        check_plan(plan)


@props(300)
@given(documents)
def test_plans_with_broken_entries(doc: dict[str, Any]) -> None:
    plan = outcome(lambda: Plan.from_json(json.dumps(doc)), PlanError)
    if plan is not None:
        check_plan(plan)
        assert Plan.from_json(plan.to_json()) == plan


@props(150)
@given(junk_after('{"version": 1, "partitions": [', "[", "{", '{"version": 1,'))
def test_any_text_as_a_plan(text: str) -> None:
    plan = outcome(lambda: Plan.from_json(text), PlanError)
    if plan is not None:
        check_plan(plan)


@pytest.mark.parametrize(
    "text", ["[" * 100_000, '{"a":' * 100_000, '{"version": 1, "partitions": ' + "[" * 5000]
)
def test_plan_nested_too_deeply(text: str) -> None:
    """Found by the properties: json.loads raised RecursionError."""
    with pytest.raises(PlanError, match="nested too deeply"):
        Plan.from_json(text)


def test_plan_file_that_is_not_text(tmp_path: Path) -> None:
    """`reassign execute --plan a.bin` raised UnicodeDecodeError."""
    path = tmp_path / "plan.bin"
    path.write_bytes(b'{"version": 1, "partitions": []}\xff')
    with pytest.raises(ClusterError, match="is not UTF-8 text"):
        _read_plan(path)


# -- what is typed on the reassignment screen (and after --brokers) -----------------------------
def separated(items: list[str]) -> st.SearchStrategy[str]:
    return st.lists(
        st.sampled_from([",", ", ", " ", "\t", " ,\n"]), min_size=len(items), max_size=len(items)
    ).map(lambda seps: "".join(i + s for i, s in zip(items, seps, strict=True)))


ids = st.one_of(st.integers(0, 10), st.integers(0, MAX_ID))


@props(100)
@given(st.lists(st.one_of(topics, st.tuples(topics, ids)), max_size=5), st.data())
def test_targets_round_trip(targets: list[str | tuple[str, int]], data: st.DataObject) -> None:
    typed = [t if isinstance(t, str) else f"{t[0]}/{t[1]}" for t in targets]
    assert parse_targets(data.draw(separated(typed))) == targets


@props(150)
@given(junk_after("t/", "a,b/", "/"))
def test_any_targets(text: str) -> None:
    targets = outcome(lambda: parse_targets(text), PlanError, text)
    for t in targets or ():
        assert isinstance(t, str) or (t[0] and 0 <= t[1] <= MAX_ID)


@props(100)
@given(st.lists(ids, max_size=6), st.data())
def test_broker_ids_round_trip(numbers: list[int], data: st.DataObject) -> None:
    padded = [data.draw(st.sampled_from(["", "0", "00"])) + str(n) for n in numbers]
    assert parse_ids(data.draw(separated(padded))) == tuple(numbers)


@props(150)
@given(junk_after("1,", "1 2 ", "-"))
def test_any_broker_ids(text: str) -> None:
    numbers = outcome(lambda: parse_ids(text, "--brokers"), PlanError, text)
    assert numbers is None or all(0 <= n <= MAX_ID for n in numbers)


@props(100)
@given(st.lists(ids, min_size=1, max_size=6), st.data())
def test_replica_lists_round_trip(replicas: list[int], data: st.DataObject) -> None:
    text = data.draw(separated([str(r) for r in replicas]))
    twice = sorted({r for r in replicas if replicas.count(r) > 1})
    if twice:
        with pytest.raises(PlanError, match=f"listed twice: {', '.join(map(str, twice))}"):
            parse_replicas(text)
    else:
        assert parse_replicas(text) == tuple(replicas)


@props(200)
@given(junk_after("1,", "1 1", "3, 1 2 ", "2,", ","))
def test_any_replica_list(text: str) -> None:
    replicas = outcome(lambda: parse_replicas(text), PlanError, text)
    if replicas is not None:
        assert replicas and len(set(replicas)) == len(replicas)
        assert all(0 <= r <= MAX_ID for r in replicas)


UNITS = {"": 1, "k": 1000, "K": 1000, "m": 1000**2, "M": 1000**2, "g": 1000**3, "G": 1000**3}


@props(100)
@given(
    st.integers(0, 10**9),
    st.sampled_from(sorted(UNITS)),
    st.sampled_from(["", "B", "iB/s", "b/s"]),
    st.sampled_from(["", " "]),
)
def test_throttles_round_trip(n: int, unit: str, suffix: str, blank: str) -> None:
    assert parse_throttle(f"{n:_}{blank}{unit}{suffix}") == n * UNITS[unit]
    assert parse_throttle(f" {n}.5{unit} ") == int((n + 0.5) * UNITS[unit])


@props(150)
@given(junk_after("5", "5.", "1e", "50M", "9" * 19))
def test_any_throttle(text: str) -> None:
    rate = outcome(lambda: parse_throttle(text), PlanError, text)
    assert rate is None or 0 <= rate <= MAX_THROTTLE


@props(50)
@given(st.integers(1, MAX_ID), st.sampled_from(["", " ", "0"]))
def test_replication_factors_round_trip(rf: int, pad: str) -> None:
    assert parse_rf(f"{pad}{rf}") == rf
    assert parse_rf(pad.strip() if pad != "0" else "") is None


@props(100)
@given(junk_after("0", "1", "-"))
def test_any_replication_factor(text: str) -> None:
    rf = outcome(lambda: parse_rf(text), PlanError, text)
    assert rf is None or 1 <= rf <= MAX_ID


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: parse_ids("1, ²"), "whole numbers separated by commas, not '²'"),
        (lambda: parse_ids("9" * 5000), "whole numbers separated by commas"),
        (lambda: parse_replicas("\u0661, 2"), "not broker ids: '\u0661'"),
        (lambda: parse_targets("t/²"), "write a topic, or topic/partition"),
        (lambda: parse_rf("²"), "replication factor must be a whole number"),
        (lambda: parse_throttle("9" * 400), "is too large"),
    ],
)
def test_screen_field_bugs_found(call: Any, message: str) -> None:
    """In kconsole/ui/screens/reassign_rows.py these raised ValueError ("²" passes isdigit)
    and OverflowError (a throttle of hundreds of digits is an infinite float)."""
    with pytest.raises(PlanError, match=message):
        call()


class TestWhatTheReassignmentBarTakes:
    """The smaller ones a user met in the reassignment screen's bar and replica editor."""

    def test_a_comma_list_is_not_a_throttle(self) -> None:
        with pytest.raises(PlanError, match="one number of bytes/s"):
            parse_throttle("1,2,4")
        assert parse_throttle("50,000,000") == 50_000_000
        assert parse_throttle("1,500 k") == 1_500_000

    def test_the_replica_editor_names_every_problem(self) -> None:
        with pytest.raises(PlanError) as caught:
            parse_replicas("9,9,x", brokers={1, 2, 3})
        said = caught.value.message
        assert "not broker ids: 'x'" in said
        assert "listed twice: 9" in said
        assert "no such broker: 9 (brokers: 1, 2, 3)" in said
        assert parse_replicas("3, 1 2", brokers={1, 2, 3}) == (3, 1, 2)
