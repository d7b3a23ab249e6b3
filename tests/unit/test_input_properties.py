"""Property tests of what a person types (issue 13, "Bad input"): topic names, produce fields
and headers, `-X` pairs, config files and addresses, `--set` items, tail start positions.
Drill targets, job options, reassignment JSON and replica lists are in
test_input_properties_ops.py.

Each parser gets valid input, checked against a simple model of what it means (so the
property can fail), and garbage: every outcome is a result or the parser's own error with a
clear message (tests/unit/inputs.py), never an unhandled exception.

Generated examples per run (max_examples; derandomized, so CI is deterministic), as counted
by `pytest --hypothesis-show-statistics`:
    topic names               300 + 600       = 900
    -X pairs                  300 + 300       = 600
    addresses and intervals   250 + 450       = 700
    config files              250 + 400 + 250 = 900
    produce: stdin lines      250 + 250       = 500
    produce: UTF-8 input                        250
    produce: --header         250 + 250       = 500
    produce: form headers     250 + 300       = 550
    produce: the form         350 + 800       = 1150
    produce: validation                         400
    --set and cluster sizes   250 + 300 + 300 = 850
    tail start positions      500 + 700       = 1200
    this file                                   8500
    test_input_properties_ops.py                3386
    test_reassign_plan.py (6 x 200)             1200
    total                                      13086
"""

from __future__ import annotations

import json
import math
import string
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import assume, given
from hypothesis import strategies as st

from kconsole import secrets
from kconsole.cli import main
from kconsole.cluster.errors import ClusterError
from kconsole.cluster.local.spec import LocalClusterSpec, parse_set_options
from kconsole.cluster.produce.api import (
    ACKS_CHOICES,
    COMPRESSIONS,
    MAX_COUNT,
    MAX_RATE,
    ProduceError,
    TopicLimits,
    build_request,
    check_topic_name,
    decode_text,
    parse_header,
    parse_headers,
    parse_line,
    record_size,
    validate,
)
from kconsole.cluster.tail import MAX_INT64, START_KINDS, StartAt, TailError, parse_start
from kconsole.config import BACKENDS, ConfigError, Settings, load_settings, parse_client_props
from tests.unit.inputs import (
    TOPIC_CHARS,
    assert_clear,
    chars,
    junk,
    junk_after,
    mixed,
    outcome,
    passes,
    props,
    topic_names,
)

# -- topic names --------------------------------------------------------------------------------
topics = topic_names(249)


def kafka_accepts(topic: str) -> bool:
    """Kafka's rule, said differently: 1..249 of [a-zA-Z0-9._-], not "." or ".."."""
    return 0 < len(topic) < 250 and set(topic) <= set(TOPIC_CHARS) and topic not in (".", "..")


@props(300)
@given(topics)
def test_valid_topic_names_pass(topic: str) -> None:
    check_topic_name(topic)


@props(600)
@given(
    st.one_of(
        junk,
        st.text(chars, max_size=300),
        st.text(TOPIC_CHARS + " /:ü", max_size=260),
        st.integers(245, 255).map(lambda n: "t" * n),
    )
)
def test_any_topic_name_is_accepted_exactly_when_kafka_would(topic: str) -> None:
    accepted = outcome(passes(check_topic_name, topic), ProduceError, topic)
    assert bool(accepted) == kafka_accepts(topic)


# -- -X key=value -------------------------------------------------------------------------------
no_surrogates = st.characters(exclude_categories=["Cs"])
prop_keys = st.text(st.characters(exclude_characters="="), min_size=1, max_size=20).filter(
    lambda k: k.strip() == k and k != ""
)
text_values = st.text(no_surrogates, max_size=20)


@props(300)
@given(st.lists(st.tuples(prop_keys, text_values), max_size=6))
def test_x_pairs_round_trip(pairs: list[tuple[str, str]]) -> None:
    items = [f"{k}={v}" for k, v in pairs]
    assert parse_client_props(items) == dict(pairs)  # the last of a repeated key wins


@props(300)
@given(st.lists(junk_after("a=", "=", " ="), max_size=5))
def test_x_pairs_garbage(items: list[str]) -> None:
    props_ = outcome(lambda: parse_client_props(items), ConfigError, *items)
    if props_ is not None:
        for item in items:
            assert item.partition("=")[0].strip() in props_
        assert all(k and k == k.strip() for k in props_)


# -- addresses and intervals (flags, variables, the config file) ------------------------------
hosts = st.from_regex(r"[a-z][a-z0-9-]{0,12}(\.[a-z][a-z0-9-]{0,12}){0,2}", fullmatch=True)
addresses = st.lists(st.tuples(hosts, st.integers(1, 65535)), min_size=1, max_size=3).map(
    lambda hps: ",".join(f"{h}:{p}" for h, p in hps)
)
seconds = st.one_of(st.floats(0.1, 3600), st.integers(1, 3600))
any_float = st.one_of(st.floats(), st.sampled_from([0.0, 0.1, 3600.0, 3600.5, -1.0, 1e300]))


@props(250)
@given(addresses, st.one_of(st.just(""), addresses), st.sampled_from(BACKENDS), seconds, seconds)
def test_valid_addresses_and_intervals(
    bootstrap: str, zookeeper: str, backend: str, refresh: float, group_refresh: float
) -> None:
    zk = zookeeper + "/kafka" if zookeeper else ""  # a chroot
    s = Settings(bootstrap, zk, backend=backend, refresh_s=refresh, group_refresh_s=group_refresh)
    assert (s.bootstrap, s.zookeeper, s.backend) == (bootstrap, zk, backend)
    assert (s.refresh_s, s.group_refresh_s) == (refresh, group_refresh)
    assert s.kafka_config()["bootstrap.servers"] == bootstrap


@props(450)
@given(mixed(addresses), mixed(addresses), mixed(st.sampled_from(BACKENDS)), any_float, any_float)
def test_any_addresses_and_intervals(
    bootstrap: str, zookeeper: str, backend: str, refresh: float, group_refresh: float
) -> None:
    made = outcome(
        lambda: Settings(
            bootstrap, zookeeper, backend=backend, refresh_s=refresh, group_refresh_s=group_refresh
        ),
        ConfigError,
        bootstrap,
        zookeeper,
        backend,
    )
    if made is not None:
        assert made.backend in BACKENDS and 0.1 <= made.refresh_s <= 3600
        for hp in made.bootstrap.split(","):
            port = hp.strip().rpartition(":")[2]
            assert port.isascii() and 0 < int(port) < 65536


# -- config files (TOML) ------------------------------------------------------------------------
def toml(value: Any) -> str:
    """`value` as a TOML value (inline tables and arrays for nested ones)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(value)  # inf, -inf and 1e+16 are TOML too
    if isinstance(value, str):  # a basic string; TOML also forbids a raw DEL
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml(str(k))} = {toml(v)}" for k, v in value.items()) + "}"
    return value.isoformat()  # dates and times


def toml_document(data: Mapping[str, Any]) -> str:
    """Top-level keys, then a [clusters.NAME] table per profile (when `clusters` is a table of
    tables)."""
    clusters = data.get("clusters")
    if not (isinstance(clusters, dict) and all(isinstance(t, dict) for t in clusters.values())):
        clusters = None
    lines = [
        f"{toml(k)} = {toml(v)}" for k, v in data.items() if not (clusters and k == "clusters")
    ]
    if clusters:
        for name, table in clusters.items():
            lines.append(f"[clusters.{toml(name)}]")
            lines += [f"{toml(k)} = {toml(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def config_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("config") / "config.toml"


# A valid profile's client table: no `<secret>_file` key (it names a file to read) and no
# `${...}` (the environment is empty here). Hypothesis draws the code's own string constants
# too, so both do come up when not excluded.
valid_client_keys = prop_keys.filter(
    lambda k: not (k.endswith(secrets.FILE_SUFFIX) and k.removesuffix(secrets.FILE_SUFFIX)
                   in secrets.SECRET_KEYS)
)  # fmt: skip
valid_client_values = st.one_of(
    text_values.filter(lambda v: "${" not in v),
    st.integers(-(2**63), 2**63 - 1),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False),
)
profile = st.fixed_dictionaries(
    {},
    optional={
        "bootstrap": addresses,
        "zookeeper": st.one_of(st.just(""), addresses),
        "read_only": st.booleans(),
        "refresh": seconds,
        "group_refresh": seconds,
        "backend": st.sampled_from(BACKENDS),
        "client": st.dictionaries(valid_client_keys, valid_client_values, max_size=3),
    },
)
names = st.text(string.ascii_lowercase + "-", min_size=1, max_size=8)


def client_text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


@props(250)
@given(top=profile, clusters=st.dictionaries(names, profile, max_size=3), data=st.data())
def test_valid_config_files(
    top: dict[str, Any], clusters: dict[str, dict[str, Any]], data: st.DataObject, config_file: Path
) -> None:
    chosen = data.draw(st.sampled_from([None, *sorted(clusters)]))
    doc = {**top, "clusters": clusters} if clusters else dict(top)
    if chosen is not None:
        doc["cluster"] = chosen
    config_file.write_text(toml_document(doc))
    s = load_settings(config_path=config_file, env={})
    want = Settings()
    for table in (top, clusters.get(chosen or "", {})):  # the profile's keys win
        want = Settings(
            table.get("bootstrap", want.bootstrap),
            table.get("zookeeper", want.zookeeper),
            {**want.client, **{k: client_text(v) for k, v in table.get("client", {}).items()}},
            table.get("backend", want.backend),
            refresh_s=float(table.get("refresh", want.refresh_s)),
            group_refresh_s=float(table.get("group_refresh", want.group_refresh_s)),
        )
    assert (s.bootstrap, s.zookeeper, s.client, s.backend) == (
        want.bootstrap,
        want.zookeeper,
        want.client,
        want.backend,
    )
    assert (s.refresh_s, s.group_refresh_s, s.cluster_name) == (
        want.refresh_s,
        want.group_refresh_s,
        chosen or "",
    )
    asked = top.get("read_only") or clusters.get(chosen or "", {}).get("read_only")
    anyone = top.get("read_only") or any(t.get("read_only") for t in clusters.values())
    assert s.read_only if asked else (s.read_only <= bool(anyone))
    assert bool(s.read_only_reason) == s.read_only


KEYS = [
    "bootstrap",
    "zookeeper",
    "read_only",
    "refresh",
    "group_refresh",
    "backend",
    "cluster_dir",
    "client",
    "cluster",
    "clusters",
]
toml_keys = st.one_of(st.sampled_from(KEYS), st.text(no_surrogates, max_size=8))
toml_scalars = st.one_of(
    st.booleans(),
    st.integers(),
    st.integers(2**64, 10**40),
    st.floats(),
    st.text(no_surrogates, max_size=12),
    addresses,
    st.sampled_from(["auto", "none", "~", "~nosuchuser/x", "", "127.0.0.1:0", "h:99999"]),
    st.dates(),
    st.datetimes(),
    st.datetimes(timezones=st.just(UTC)),
)
toml_values = st.recursive(
    toml_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(toml_keys, inner, max_size=3)
    ),
    max_leaves=6,
)
env_values = st.fixed_dictionaries(
    {},
    optional={
        "KCONSOLE_BOOTSTRAP": mixed(addresses),
        "KCONSOLE_ZOOKEEPER": mixed(addresses),
        "KCONSOLE_BACKEND": mixed(st.sampled_from(BACKENDS)),
        "KCONSOLE_CLUSTER": mixed(names),
        "KCONSOLE_READ_ONLY": junk,
        "KCONSOLE_CLUSTER_DIR": junk.filter(lambda d: "\x00" not in d),
    },
)


@props(400)
@given(
    top=st.dictionaries(toml_keys, toml_values, max_size=6),
    clusters=st.dictionaries(
        names,
        st.one_of(st.dictionaries(toml_keys, toml_values, max_size=4), toml_values),
        max_size=3,
    ),
    env=env_values,
    cluster=st.one_of(st.none(), mixed(names)),
    client_props=st.lists(junk_after("a="), max_size=2),
)
def test_any_config_file_loads_or_says_what_is_wrong(
    top: dict[str, Any],
    clusters: dict[str, Any],
    env: dict[str, str],
    cluster: str | None,
    client_props: list[str],
    config_file: Path,
) -> None:
    doc = {**top, "clusters": clusters} if clusters and "clusters" not in top else top
    config_file.write_text(toml_document(doc))
    typed = [*env.values(), cluster, *client_props]
    s = outcome(
        lambda: load_settings(
            config_path=config_file, env=env, cluster=cluster, client_props=tuple(client_props)
        ),
        ConfigError,
        *typed,
    )
    if s is not None:
        assert s.backend in BACKENDS and 0.1 <= s.refresh_s <= 3600
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in s.client.items())


@props(250)
@given(raw=st.one_of(junk.map(lambda t: t.encode("utf-8", "surrogatepass")), st.binary()))
def test_any_bytes_as_a_config_file(raw: bytes, config_file: Path) -> None:
    config_file.write_bytes(raw)
    outcome(lambda: load_settings(config_path=config_file, env={}), ConfigError)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("refresh = " + "9" * 5000, "a number in the config file is too long to read"),
        ("a = " + "[" * 3000 + "]" * 3000, "nested too deeply"),
        ("refresh = " + "9" * 400, "refresh .*: must be between 0.1 and 3600 seconds"),
        ('cluster_dir = "~nosuchuser-kconsole/x"', "no home directory for ~nosuchuser-kconsole"),
    ],
)
def test_config_file_bugs_found(text: str, message: str, tmp_path: Path) -> None:
    """Found by the properties: a ValueError, a RecursionError, an OverflowError and a
    RuntimeError escaped from load_settings."""
    cfg = tmp_path / "c.toml"
    cfg.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_settings(config_path=cfg, env={})


@pytest.mark.parametrize("port", ["²", "١٢٣", "9" * 5000, "", "0", "65536", "-1"])
def test_port_must_be_ascii_digits(port: str) -> None:
    """ "h:²" raised a bare ValueError (isdigit passes it, int refuses it); "h:١٢٣" was accepted;
    a 5000-digit port raised a ValueError about Python's integer limits."""
    with pytest.raises(ConfigError, match="is not HOST:PORT"):
        Settings(bootstrap=f"h:{port}")


# -- produce: stdin lines, UTF-8, headers -------------------------------------------------------
separators = st.text(no_surrogates.filter(lambda c: c not in "\r\n"), min_size=1, max_size=3)


@props(250)
@given(text_values, separators, text_values, st.sampled_from(["", "\n", "\r\n"]))
def test_stdin_lines_round_trip(key: str, sep: str, value: str, end: str) -> None:
    line = key + sep + value
    assume(line.find(sep) == len(key) and not value.endswith("\r") and "\n" not in line)
    assert parse_line(line + end, sep) == (key, value)
    assert parse_line(line + end, None) == (None, line)


@props(250)
@given(junk, st.one_of(st.none(), junk))
def test_any_stdin_line_splits_into_key_and_value(line: str, sep: str | None) -> None:
    key, value = parse_line(line, sep)
    whole = line.removesuffix("\n").removesuffix("\r")
    assert (value if key is None else key + (sep or "") + value) == whole
    if key is None and sep:
        assert sep not in whole


@props(250)
@given(st.one_of(st.binary(max_size=40), text_values.map(str.encode)))
def test_stdin_bytes_decode_or_say_where(data: bytes) -> None:
    text = outcome(lambda: decode_text(data, "stdin line 1"), ProduceError)
    try:
        expected: str | None = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        expected = None
        with pytest.raises(
            ProduceError, match=rf"stdin line 1 is not valid UTF-8 \(byte {exc.start}"
        ):
            decode_text(data, "stdin line 1")
    assert text == expected


header_names = st.text(
    st.characters(exclude_characters="=", exclude_categories=["Cs"]), min_size=1, max_size=10
)


@props(250)
@given(header_names, text_values)
def test_cli_header_round_trip(name: str, value: str) -> None:
    assert parse_header(f"{name}={value}") == (name, value.encode())


@props(250)
@given(junk_after("h=", "=", "\udcff="))
def test_any_cli_header(item: str) -> None:
    header = outcome(lambda: parse_header(item), ProduceError, item)
    if header is not None:
        name, value = header
        assert f"{name}={value.decode() if value is not None else ''}" == item


form_names = st.text(
    st.characters(exclude_characters="=,\n", exclude_categories=["Cs"]), min_size=1, max_size=10
).filter(lambda n: n.strip() == n)
form_values = st.text(
    st.characters(exclude_characters=",\n", exclude_categories=["Cs"]), max_size=10
).filter(lambda v: v.rstrip() == v)


@props(250)
@given(st.lists(st.tuples(form_names, form_values), max_size=5), st.sampled_from([",", ", ", "\n"]))
def test_form_headers_round_trip(headers: list[tuple[str, str]], sep: str) -> None:
    text = sep.join(f"{k}={v}" for k, v in headers)
    assert parse_headers(text) == tuple((k, v.encode()) for k, v in headers)


@props(300)
@given(st.lists(junk_after("a=", "=", "\udcff=", "b=\udcff"), max_size=4).map(",".join))
def test_any_form_headers(text: str) -> None:
    headers = outcome(lambda: parse_headers(text), ProduceError, text)
    for name, value in headers or ():
        assert name and name == name.strip() and "," not in name and "=" not in name
        assert value is not None and record_size(None, None, [(name, value)]) > 0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: parse_header("h=\udcff"), "header 'h' is not valid UTF-8 text"),
        (lambda: parse_header("\udcff=v"), "header name '\\\\udcff' is not valid UTF-8 text"),
        (lambda: parse_headers("\ud800=v"), "header name '\\\\ud800' is not valid UTF-8 text"),
        (lambda: parse_header("h=\ud800"), "character 1 is U\\+D800, half of a surrogate pair"),
        (lambda: build_request(topic="t", key="\ud800", value=""), "the key is not valid UTF-8"),
    ],
)
def test_header_bugs_found(call: Any, message: str) -> None:
    """`-H h=<an undecodable byte>` raised UnicodeEncodeError; a header name that is no UTF-8
    got through the form and broke record_size() later; a lone high surrogate (not an escaped
    byte) made the error message itself raise UnicodeEncodeError."""
    with pytest.raises(ProduceError, match=message):
        call()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-k", "\udcff", "-v", "x"], "error: --key is not valid UTF-8 text"),
        (["-H", "h=\udcff", "-v", "x"], "error: header 'h' is not valid UTF-8 text"),
        (["-v", "caf\udce9"], "(character 4 is the undecodable byte b'\\xe9'); --file sends"),
    ],
)
def test_cli_produce_arguments_that_are_no_utf8(
    args: list[str], message: str, tmp_path: Path
) -> None:
    """An argument with an undecodable byte (Python hands it over as a lone surrogate) raised
    UnicodeEncodeError out of `kconsole produce`; now nothing is sent and it exits 1."""
    env = {"KCONSOLE_STATE_DIR": str(tmp_path), "KCONSOLE_CONFIG": ""}
    cli = ["--bootstrap", "127.0.0.1:9", "--zookeeper", "", "produce", "-t", "t", *args]
    res = CliRunner().invoke(main, cli, env=env)
    assert res.exit_code == 1 and message in res.output, res.output


# -- produce: the form --------------------------------------------------------------------------
def spelled(n: int) -> st.SearchStrategy[str]:
    """How a person may type `n`: plain, with _ or , separators, with blanks around."""
    return st.sampled_from([str(n), f"{n:_}", f"{n:,}", f" {n} "])


@st.composite
def forms(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """A valid form's fields, and what the request must hold."""
    topic = draw(topics.filter(lambda t: len(t) < 40))
    key = draw(text_values)
    mode = draw(st.sampled_from(["text", "json"]))
    if mode == "json":
        doc = draw(
            st.recursive(
                st.none() | st.booleans() | st.integers() | text_values,
                lambda c: st.lists(c, max_size=3) | st.dictionaries(text_values, c, max_size=3),
                max_leaves=6,
            )
        )
        value = json.dumps(doc, ensure_ascii=draw(st.booleans()))
    else:
        value = draw(text_values)
    headers = draw(st.lists(st.tuples(form_names, form_values), max_size=3))
    count = draw(st.integers(1, MAX_COUNT))
    rate = draw(st.one_of(st.none(), st.floats(min_value=1e-6, max_value=MAX_RATE)))
    partition = draw(st.one_of(st.none(), st.integers(0, 10**6)))
    acks = draw(st.sampled_from(ACKS_CHOICES))
    compression = draw(st.sampled_from(COMPRESSIONS))
    fields = {
        "topic": draw(st.sampled_from([topic, f" {topic}", f"{topic}\t"])),
        "key": key,
        "value": value,
        "value_mode": mode,
        "headers": ", ".join(f"{k}={v}" for k, v in headers),
        "count": draw(st.one_of(spelled(count), st.just("") if count == 1 else spelled(count))),
        "rate": "" if rate is None else repr(rate),
        "acks": acks,
        "compression": compression,
        "partition": "" if partition is None else draw(spelled(partition)),
    }
    expected = {
        "topic": topic,
        "key": key.encode() if key else None,
        "value": value.encode(),
        "headers": tuple((k, v.encode()) for k, v in headers),
        "count": count,
        "rate": rate,
        "acks": acks,
        "compression": None if compression == "none" else compression,
        "partition": partition,
    }
    return fields, expected


@props(350)
@given(forms())
def test_valid_forms_build_the_request_typed(form: tuple[dict[str, Any], dict[str, Any]]) -> None:
    fields, expected = form
    req = build_request(**fields)
    assert {k: getattr(req, k) for k in expected} == expected


@props(800)
@given(
    st.fixed_dictionaries(
        {
            "topic": mixed(topics),
            "key": junk,
            "value": junk,
            "value_mode": mixed(st.sampled_from(["text", "json", "file"])),
            "headers": junk_after("a=b,", "=", "a="),
            "count": mixed(st.integers(-5, MAX_COUNT + 5).map(str)),
            "rate": mixed(any_float.map(repr)),
            "acks": mixed(st.sampled_from(ACKS_CHOICES)),
            "compression": mixed(st.sampled_from(COMPRESSIONS)),
            "partition": mixed(st.integers(-5, 10**12).map(str)),
        }
    )
)
def test_any_form_builds_a_request_or_says_what_is_wrong(fields: dict[str, Any]) -> None:
    if fields["value_mode"] == "file":  # never a real file: a directory that does not exist
        fields["value"] = "/nonexistent-kconsole-dir/" + fields["value"].strip()
    req = outcome(lambda: build_request(**fields), ProduceError, *fields.values())
    if req is not None:
        assert kafka_accepts(req.topic) and 1 <= req.count <= MAX_COUNT
        assert req.rate is None or 0 < req.rate <= MAX_RATE
        assert req.partition is None or req.partition >= 0
        assert req.acks in ACKS_CHOICES and req.compression in (None, *COMPRESSIONS[1:])
        assert record_size(req.key, req.value, req.headers) > 0


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"value": "[" * 100_000, "value_mode": "json"}, "nested too deeply to check as JSON"),
        ({"value": "/tmp/a\x00b", "value_mode": "file"}, "not a possible file name"),
        ({"value": "/tmp/\ud800", "value_mode": "file"}, "not a possible file name"),
    ],
)
def test_form_bugs_found(fields: dict[str, Any], message: str) -> None:
    """A deeply nested JSON value raised RecursionError; a file name with a NUL (or a lone
    surrogate) raised ValueError from open()."""
    with pytest.raises(ProduceError, match=message):
        build_request(topic="t", key="", **fields)


records = st.lists(
    st.tuples(
        st.one_of(st.none(), st.binary(max_size=300)),
        st.one_of(st.none(), st.binary(max_size=1500)),
        st.lists(st.tuples(header_names, st.one_of(st.none(), st.binary(max_size=50))), max_size=2),
    ),
    max_size=3,
)


@props(400)
@given(
    st.builds(
        TopicLimits,
        st.just("t"),
        st.booleans(),
        st.integers(0, 8),
        st.integers(0, 2000),
    ),
    records,
    st.one_of(st.integers(-3, 3), st.integers(), st.just(MAX_COUNT), st.just(MAX_COUNT + 1)),
    st.one_of(st.none(), any_float),
    st.one_of(st.none(), st.integers(-2, 10)),
    mixed(st.sampled_from(ACKS_CHOICES)),
    st.one_of(st.none(), mixed(st.sampled_from(COMPRESSIONS))),
)
def test_validation_refuses_exactly_what_breaks_a_rule(
    limits: TopicLimits,
    records: list[Any],
    count: int,
    rate: float | None,
    partition: int | None,
    acks: str,
    compression: str | None,
) -> None:
    passed = outcome(
        passes(
            validate,
            "t",
            limits=limits,
            records=records,
            count=count,
            rate=rate,
            partition=partition,
            acks=acks,
            compression=compression,
        ),
        ProduceError,
        acks,
        compression,
    )
    sizes = [record_size(k, v, h) for k, v, h in records]
    fine = (
        1 <= count <= MAX_COUNT
        and (rate is None or 0 < rate <= MAX_RATE)
        and acks in ACKS_CHOICES
        and compression in (None, *COMPRESSIONS)
        and limits.exists
        and (partition is None or 0 <= partition < limits.partitions)
        and all(size <= limits.max_message_bytes for size in sizes)
    )
    assert bool(passed) == fine


# -- --set items and the local cluster's numbers ------------------------------------------------
set_keys = st.from_regex(r"(zk:)?[a-zA-Z][a-zA-Z0-9._-]{0,20}", fullmatch=True)
set_values = st.text(
    st.characters(exclude_characters="\r\n", exclude_categories=["Cs"]), max_size=20
)


@props(250)
@given(st.lists(st.tuples(set_keys, set_values), max_size=5))
def test_set_items_round_trip(pairs: list[tuple[str, str]]) -> None:
    broker, zk = parse_set_options([f"{k}={v}" for k, v in pairs])
    assert broker == {k: v for k, v in pairs if not k.startswith("zk:")}
    assert zk == {k[3:]: v for k, v in pairs if k.startswith("zk:")}


@props(300)
@given(st.lists(junk_after("zk:", "a=", "zk:a=", "log.dirs="), max_size=4))
def test_any_set_items(items: list[str]) -> None:
    parsed = outcome(lambda: parse_set_options(items), ClusterError, *items)
    if parsed is not None:
        for table in parsed:
            for key, value in table.items():
                assert key and not any(c.isspace() for c in key)
                assert "\n" not in value and "\r" not in value


@pytest.mark.parametrize("item", ["zk:=1", "a=1\r2", "zk:a=\r"])
def test_set_bugs_found(item: str) -> None:
    """ "zk:=1" made an empty ZooKeeper key; a "\\r" in a value split the properties line."""
    with pytest.raises(ClusterError, match="--set"):
        parse_set_options([item])


@props(300)
@given(
    st.one_of(st.integers(-2, 40), st.integers()),
    st.one_of(st.integers(-2, 40), st.integers()),
    st.one_of(st.integers(1000, 70000), st.integers()),
    st.one_of(st.integers(1000, 70000), st.integers()),
)
def test_any_local_cluster_numbers(brokers: int, racks: int, zk_port: int, base: int) -> None:
    spec = outcome(
        lambda: LocalClusterSpec(brokers, racks, zk_port=zk_port, base_port=base), ClusterError
    )
    if spec is not None:
        ports = [spec.zk_port, *spec.broker_ports().values()]
        assert 1 <= spec.brokers <= 32 and 0 <= spec.racks <= spec.brokers
        assert all(1024 <= p <= 65535 for p in ports) and len(set(ports)) == len(ports)


# -- tail start positions -----------------------------------------------------------------------
NOW_MS = 1_763_712_000_000
UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def cases() -> Iterator[st.SearchStrategy[tuple[str, StartAt]]]:
    """(typed, meant) for every form parse_start documents."""
    yield st.tuples(
        st.sampled_from(["", " ", "end", "END", "latest", " Latest "]), st.just(StartAt("end"))
    )
    yield st.tuples(
        st.sampled_from(["beginning", "begin", "earliest", "start", "Earliest"]),
        st.just(StartAt("beginning")),
    )
    offsets = st.integers(0, MAX_INT64)
    yield st.tuples(st.sampled_from(["@", "offset:", "OFFSET: "]), offsets).map(
        lambda po: (f"{po[0]}{po[1]}", StartAt("offset", po[1]))
    )
    yield st.tuples(st.sampled_from(["-", "last:", "Last: "]), st.integers(1, MAX_INT64)).map(
        lambda pn: (f"{pn[0]}{pn[1]}", StartAt("last", pn[1]))
    )
    yield st.tuples(st.integers(0, 10_000), st.sampled_from(list(UNIT_MS)), st.booleans()).map(
        lambda nub: (
            f"ago:{nub[0]}{' ' if nub[2] else ''}{nub[1]}",
            StartAt("timestamp", NOW_MS - nub[0] * UNIT_MS[nub[1]]),
        )
    )
    yield st.integers(0, MAX_INT64).map(lambda ms: (f"ts:{ms}", StartAt("timestamp", ms)))
    times = st.datetimes(datetime(1970, 1, 2), datetime(9999, 12, 30), timezones=st.just(UTC))
    yield times.map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000)).map(
        lambda t: (
            f"ts:{t.isoformat()}",
            StartAt(
                "timestamp", (t - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
            ),
        )
    )
    yield times.map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000)).map(
        lambda t: (
            f"ts:{t.isoformat()}",
            StartAt(
                "timestamp", (t - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
            ),
        )
    )


@props(500)
@given(st.one_of(*cases()))
def test_start_positions_as_documented(case: tuple[str, StartAt]) -> None:
    typed, meant = case
    assert parse_start(typed, now_ms=lambda: NOW_MS) == meant
    assert meant.describe()


@props(700)
@given(junk_after("@", "offset:", "-", "last:", "ago:", "ago:5", "ts:", "ts:2025-", "ts:1"))
def test_any_start_position(text: str) -> None:
    start = outcome(lambda: parse_start(text, now_ms=lambda: NOW_MS), TailError, text)
    if start is not None:
        assert start.kind in START_KINDS and 0 <= start.value <= MAX_INT64
        assert start.kind != "last" or start.value >= 1
        assert start.describe()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ago:" + "9" * 400 + "d", "is before 1970"),
        ("ago:100000d", "is before 1970"),
        ("ts:1969-12-31T23:59:59.999+00:00", "is before 1970"),
        ("ts:" + "9" * 30, "the number is too large"),
        ("@" + "9" * 20, "the number is too large"),
        ("@x", "'x' is not a whole number"),
        ("-²", "'²' is not a whole number"),
        ("ts:²", "'²' is not a whole number"),
    ],
)
def test_start_position_bugs_found(text: str, message: str) -> None:
    """An ago: of hundreds of digits raised OverflowError; a time before 1970 became -1 (which
    Kafka reads as "latest"); offsets past 2^63-1 were accepted; "invalid literal for int()"
    was the message for "@x"."""
    with pytest.raises(TailError, match=message):
        parse_start(text, now_ms=lambda: NOW_MS)


def test_start_times_to_the_millisecond() -> None:
    """ts:ISO went through a float (timestamp() * 1000) and lost a millisecond in about one
    time of 150; a timestamp past the year 9999 could not be described (ValueError)."""
    at = parse_start("ts:2521-06-02T04:15:12.753+00:00")
    assert at == StartAt("timestamp", 17_401_061_712_753)
    assert at.describe() == "time 2521-06-02T04:15:12.753+00:00"
    assert parse_start(f"ts:{MAX_INT64}").describe() == f"time {MAX_INT64} ms after 1970"


def test_assert_clear_catches_python_internals() -> None:
    """The message check itself can fail (else every property above is vacuous there)."""
    for leaked in ("KeyError('x')", "invalid literal for int() with base 10: 'x'", "Traceback"):
        with pytest.raises(AssertionError):
            assert_clear(ValueError(leaked))
    with pytest.raises(AssertionError):
        assert_clear(ValueError(""))
    assert_clear(ValueError("broker 'KeyError(' does not exist"), ["KeyError("])
