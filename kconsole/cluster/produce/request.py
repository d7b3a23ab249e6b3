"""A produce request before anything is sent: parsing what the user typed, and validation.

Validation runs before anything is sent: a bad topic name, a missing topic, an oversized record,
a silly count or rate, or undecodable text input are errors with nothing written.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from kconsole.cluster.errors import ClusterError
from kconsole.cluster.security import clients, kafka_python
from kconsole.cluster.security.clients import admin_config, kafka_python_config
from kconsole.config import Settings
from kconsole.errors import AuthenticationFailed

ACKS_CHOICES = ("all", "1", "0")
COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")
# The broker's default message.max.bytes (and so a topic's default max.message.bytes).
DEFAULT_MAX_MESSAGE_BYTES = 1048588
MAX_COUNT = 1_000_000  # more than this from one command line is a typo, not a plan
MAX_RATE = 1_000_000.0
# A record batch of one record: the v2 batch header (61 bytes) plus the record's own framing
# (length, attributes, timestamp/offset deltas, key/value lengths, header count: at most ~21).
RECORD_OVERHEAD = 61 + 21
_TOPIC_RE = re.compile(r"[a-zA-Z0-9._-]{1,249}")

Header = tuple[str, bytes | None]
Record = tuple[bytes | None, bytes | None, Sequence[Header]]


class ProduceError(ClusterError):
    """A produce request was refused before anything was sent; the message says why."""


# -- input --------------------------------------------------------------------------------------
def parse_line(line: str, key_separator: str | None) -> tuple[str | None, str]:
    """One kcat-like input line as (key, value); the trailing newline is dropped.

    With a separator, the line splits at its first occurrence: "k:v:w" -> ("k", "v:w"), and
    ":v" -> ("", "v") (an empty, not a null, key). A line without the separator is all value
    with a null key, as kcat -K does (Java's console producer refuses such a line instead).
    Without a separator, every line is a value with a null key.
    """
    line = line.removesuffix("\n").removesuffix("\r")
    if not key_separator:
        return None, line
    key, sep, value = line.partition(key_separator)
    if not sep:
        return None, line
    return key, value


def decode_text(data: bytes, what: str) -> str:
    """`data` as UTF-8 text, or a ProduceError naming `what` and the bad byte's position."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProduceError(
            f"{what} is not valid UTF-8 (byte {exc.start}: {data[exc.start : exc.start + 1]!r})"
        ) from exc


def parse_header(item: str) -> Header:
    name, sep, value = item.partition("=")
    if not sep or not name:
        raise ProduceError(f"--header expects key=value, got {item!r}")
    _check_header_name(name)
    return name, encode_text(value, f"header {name!r}", hint="")


def _check_header_name(name: str) -> None:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise ProduceError(f"header name {name!r} is not valid UTF-8 text") from None


# -- validation (nothing is sent before it passed) -------------------------------------------
def check_topic_name(topic: str) -> None:
    """Kafka's rules: 1..249 characters of [a-zA-Z0-9._-], and not "." or ".."."""
    if topic in (".", ".."):
        raise ProduceError(f'invalid topic name {topic!r}: "." and ".." are not allowed')
    if not topic:
        raise ProduceError("invalid topic name: it is empty")
    if len(topic) > 249:
        raise ProduceError(f"invalid topic name: {len(topic)} characters, at most 249 allowed")
    if not _TOPIC_RE.fullmatch(topic):
        bad = sorted({c for c in topic if not _TOPIC_RE.fullmatch(c)})
        raise ProduceError(
            f"invalid topic name {topic!r}: {''.join(bad)!r} not allowed "
            "(only ASCII letters, digits, '.', '_' and '-')"
        )


def record_size(key: bytes | None, value: bytes | None, headers: Sequence[Header] = ()) -> int:
    """Upper estimate of one record's size in its own (uncompressed) batch."""
    size = RECORD_OVERHEAD + len(key or b"") + len(value or b"")
    return size + sum(len(h.encode()) + len(v or b"") + 10 for h, v in headers)


@dataclass(frozen=True)
class TopicLimits:
    """What validation needs to know about a topic, read from the cluster."""

    topic: str
    exists: bool
    partitions: int = 0
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    # "topic" when read from DescribeConfigs; else "default", and why the topic's was not read.
    max_message_bytes_source: str = "default"


def read_topic_limits(settings: Settings, topic: str, timeout_s: float = 10.0) -> TopicLimits:
    """Does `topic` exist (metadata), how many partitions, and its max.message.bytes.

    max.message.bytes is the topic's effective value (it inherits the broker's
    message.max.bytes), read with kafka-python like every config kconsole reads: librdkafka's
    DescribeConfigs aborted the whole process when a broker went away mid-request (see
    kconsole.cluster.admin). When it cannot be read, Kafka's default 1048588 is assumed and
    the source says why.
    """
    admin = AdminClient(admin_config(settings, timeout_s))
    try:
        md = clients.metadata(admin, settings.bootstrap, topic, timeout_s)
    except AuthenticationFailed as exc:
        raise ProduceError(exc.message) from exc
    except KafkaException as exc:
        raise ProduceError(f"cannot read metadata from {settings.bootstrap}: {exc}") from exc
    t = md.topics.get(topic)
    if t is None or (t.error is not None and not t.partitions):
        return TopicLimits(topic, False)
    limit, source = _max_message_bytes(settings, topic, timeout_s)
    return TopicLimits(topic, True, len(t.partitions), limit, source)


def _max_message_bytes(settings: Settings, topic: str, timeout_s: float) -> tuple[int, str]:
    """(`topic`'s max.message.bytes, "topic"), or (the default, "default, ..." and why)."""
    import kafka.errors
    from kafka.admin import ConfigResource, ConfigResourceType

    conf = kafka_python_config(settings.kafka_config(), timeout_s, client_id="kconsole-produce")
    conf["bootstrap_timeout_ms"] = int(timeout_s * 1000)
    res = ConfigResource(ConfigResourceType.TOPIC, topic, ["max.message.bytes"])
    kp = None
    try:
        kp = kafka_python.admin_client(conf)
        answer = kp.describe_configs([res], config_filter="all")
        return int(answer["topic"][topic]["max.message.bytes"]["value"]), "topic"
    except (kafka.errors.KafkaError, OSError, RuntimeError, KeyError, ValueError, TypeError) as e:
        why = f"no {e} in the answer" if isinstance(e, KeyError) else str(e) or type(e).__name__
        why = why if len(why) <= 160 else why[:157] + "..."
        return DEFAULT_MAX_MESSAGE_BYTES, f"default, as the topic's could not be read: {why}"
    finally:
        if kp is not None:
            with contextlib.suppress(Exception):
                kp.close()


# What the user typed each value into: the command line's flags, or the dialog's fields.
CLI_NAMES = {k: f"--{k}" for k in ("count", "rate", "acks", "compression", "partition")}
FORM_NAMES = {k: k for k in CLI_NAMES}  # the dialog's fields, as their labels read


def validate(
    topic: str,
    *,
    limits: TopicLimits | None,
    records: Sequence[Record] = (),
    count: int = 1,
    rate: float | None = None,
    partition: int | None = None,
    acks: str = "all",
    compression: str | None = None,
    names: Mapping[str, str] = CLI_NAMES,
) -> None:
    """Raise ProduceError for the first rule `topic` and the records break, naming each value
    as the user gave it (`names`: CLI_NAMES, or FORM_NAMES in the dialog).

    `limits` None checks only what needs no cluster (name, count, rate, acks, compression).
    The size check is on the uncompressed record: conservative with compression.
    """
    n = names.__getitem__
    check_topic_name(topic)
    if count < 1:
        raise ProduceError(f"{n('count')} must be at least 1, not {count}")
    if count > MAX_COUNT:
        raise ProduceError(f"{n('count')} {count} is too many (at most {MAX_COUNT} per send)")
    if rate is not None and not 0 < rate <= MAX_RATE:
        raise ProduceError(f"{n('rate')} must be in (0, {MAX_RATE:.0f}] messages/s, not {rate}")
    if acks not in ACKS_CHOICES:
        raise ProduceError(f"{n('acks')} must be one of {', '.join(ACKS_CHOICES)}, not {acks!r}")
    if compression is not None and compression not in COMPRESSIONS:
        raise ProduceError(f"{n('compression')} must be one of {', '.join(COMPRESSIONS)}")
    if partition is not None and partition < 0:
        raise ProduceError(f"{n('partition')} must be >= 0, not {partition}")
    if limits is None:
        return
    if not limits.exists:
        raise ProduceError(
            f"topic {topic!r} does not exist (kconsole does not create topics by producing)"
        )
    if partition is not None and partition >= limits.partitions:
        raise ProduceError(
            f"{n('partition')} {partition} does not exist: {topic} has partitions "
            f"0..{limits.partitions - 1}"
        )
    for i, (key, value, headers) in enumerate(records):
        size = record_size(key, value, headers)
        if size > limits.max_message_bytes:
            which = f"record {i + 1}" if len(records) > 1 else "the record"
            raise ProduceError(
                f"{which} is too large: about {size:,} bytes with overhead, but {topic} accepts "
                f"at most {limits.max_message_bytes:,} (max.message.bytes, "
                f"{limits.max_message_bytes_source}); nothing was sent"
            )


# -- a produce request as typed into a form -----------------------------------------------------
VALUE_MODES = ("text", "json", "file")
SMALL_SEND = 20  # up to this many records, each delivery is shown on its own


@dataclass(frozen=True)
class ProduceRequest:
    """Everything one send needs, checked (but not yet against the cluster)."""

    topic: str
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    count: int = 1
    rate: float | None = None
    acks: str = "all"
    compression: str | None = None
    partition: int | None = None

    @property
    def record(self) -> Record:
        return (self.key, self.value, self.headers)

    def records(self, stop: Callable[[], bool] = lambda: False) -> Iterable[Record]:
        """`count` copies of the record, ending early once `stop()` is true."""
        record = self.record
        for i in range(self.count):
            if not i & 63 and stop():  # every 64 records: cheap enough, soon enough
                return
            yield record


def encode_text(
    text: str, what: str, hint: str = "use the file value mode to send raw bytes"
) -> bytes:
    """`text` as UTF-8, or a ProduceError naming `what` (a lone surrogate cannot be encoded:
    that is what undecodable bytes pasted into a terminal become) and ending with `hint`."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        ch = text[exc.start]
        if "\udc80" <= ch <= "\udcff":  # an undecodable byte, as Python decodes it
            bad = f"the undecodable byte {ch.encode('utf-8', 'surrogateescape')!r}"
        else:  # half of a UTF-16 surrogate pair: no byte stands behind it
            bad = f"U+{ord(ch):04X}, half of a surrogate pair"
        raise ProduceError(
            f"{what} is not valid UTF-8 text (character {exc.start + 1} is {bad})"
            + (f"; {hint}" if hint else "")
        ) from exc


def _int_field(text: str, what: str, default: int | None) -> int | None:
    t = text.strip().replace("_", "").replace(",", "")
    if not t:
        return default
    try:
        return int(t)
    except ValueError:
        raise ProduceError(f"{what} must be a whole number, not {text.strip()!r}") from None


def parse_headers(text: str) -> tuple[Header, ...]:
    """`k=v, k2=v2` (comma or newline separated) as headers; an empty text is none."""
    items = [i.strip() for i in re.split(r"[,\n]", text) if i.strip()]
    out = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ProduceError(f"headers are key=value, separated by commas; got {item!r}")
        _check_header_name(name.strip())
        out.append((name.strip(), encode_text(value, f"header {name.strip()!r}", hint="")))
    return tuple(out)


def build_request(
    *,
    topic: str,
    key: str,
    value: str,
    value_mode: str = "text",
    headers: str = "",
    count: str = "1",
    rate: str = "",
    acks: str = "all",
    compression: str = "none",
    partition: str = "",
    read_file: Callable[[str], bytes] | None = None,
) -> ProduceRequest:
    """A ProduceRequest from a form's text fields, or a ProduceError saying what is wrong.

    An empty key is a null key; `value_mode` json checks the value parses (and sends it as
    typed); file reads the file named by `value` and sends its bytes as they are.
    """
    topic = topic.strip()
    n = _int_field(count, "count", 1) or 0  # an empty field is the default, 1
    part = _int_field(partition, "partition", None)
    codec = None if compression == "none" else compression
    rate_t = rate.strip()
    try:
        r = float(rate_t) if rate_t else None
    except ValueError:
        raise ProduceError(f"rate must be a number (messages per second), not {rate_t!r}") from None
    validate(
        topic,
        limits=None,
        count=n,
        rate=r,
        partition=part,
        acks=acks,
        compression=codec,
        names=FORM_NAMES,
    )
    if value_mode not in VALUE_MODES:
        raise ProduceError(f"value mode must be one of {', '.join(VALUE_MODES)}")
    kbytes = encode_text(key, "the key") if key else None
    if value_mode == "file":
        path = value.strip()
        if not path:
            raise ProduceError("file mode: give the path of the file to send")
        try:
            data = (read_file or _read_bytes)(path)
        except OSError as exc:
            raise ProduceError(f"cannot read {path}: {exc.strerror or exc}") from exc
        except ValueError:  # a NUL byte, or a character no file name can hold
            raise ProduceError(f"cannot read {path!r}: that is not a possible file name") from None
    else:
        data = encode_text(value, "the value")
        if value_mode == "json":
            try:
                json.loads(value)
            except ValueError as exc:
                raise ProduceError(f"the value is not valid JSON: {exc}") from None
            except RecursionError:
                raise ProduceError("the value is nested too deeply to check as JSON") from None
    return ProduceRequest(
        topic=topic,
        key=kbytes,
        value=data,
        headers=parse_headers(headers),
        count=n,
        rate=r,
        acks=acks,
        compression=codec,
        partition=part,
    )


def _read_bytes(path: str) -> bytes:
    with open(os.path.expanduser(path), "rb") as fh:
        return fh.read()
