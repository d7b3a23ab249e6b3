"""`kconsole produce`: keyed records from the command line, with the key -> partition trace."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kconsole.cli.common import commands, fail
from kconsole.cli.main import main
from kconsole.config import Settings
from kconsole.errors import ClusterError

if TYPE_CHECKING:
    from kconsole.cluster.produce.outcome import ProduceResult
    from kconsole.commands import Commands
    from kconsole.commands.produce import ProduceSession


@main.command()
@click.option("--topic", "-t", required=True, help="Topic to produce to (must exist).")
@click.option("--key", "-k", default=None, help="Key of every record (default: null).")
@click.option("--value", "-v", default=None, help="Value of every record.")
@click.option(
    "--file",
    "-f",
    "file_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Send the whole file, bytes as they are, as the value.",
)
@click.option("--count", "-n", type=int, default=1, show_default=True, help="Copies to send.")
@click.option("--rate", type=float, default=None, help="Messages per second (default: no limit).")
@click.option("--acks", type=click.Choice(["all", "1", "0"]), default="all", show_default=True)
@click.option(
    "--key-separator",
    "-K",
    default=None,
    metavar="SEP",
    help="stdin lines are KEY<SEP>VALUE (a line without SEP: null key, all value).",
)
@click.option("--partition", "-p", type=int, default=None, help="Send to this partition.")
@click.option(
    "--compression",
    type=click.Choice(["none", "gzip", "snappy", "lz4", "zstd"]),
    default="none",
    show_default=True,
)
@click.option("--header", "-H", "headers", multiple=True, metavar="K=V", help="Repeatable.")
@click.pass_context
def produce(
    ctx: click.Context,
    topic: str,
    key: str | None,
    value: str | None,
    file_path: Path | None,
    count: int,
    rate: float | None,
    acks: str,
    key_separator: str | None,
    partition: int | None,
    compression: str,
    headers: tuple[str, ...],
) -> None:
    """Produce keyed messages, printing key -> partition -> leader first.

    With neither --value nor --file, records are read from stdin, one per line (UTF-8). Keys
    go where the Java client's default partitioner (murmur2) puts them. Exits 1 when the input
    is refused (nothing sent) and 2 when some records failed or have an unknown outcome. A
    single record that takes long gets a note saying where its time went.
    """
    settings: Settings = ctx.obj["settings"]
    door = commands(ctx)
    session = door.produce_session()
    try:
        _produce(door, session, settings, topic, key, value, file_path, count, rate, acks,
                 key_separator, partition, compression, headers)  # fmt: skip
    finally:
        session.close()


# A single record slower than this gets a note on where its time went.
SLOW_RECORD_S = 0.2
# These stop a send early, with its summary (a background `produce --rate` stopped by kill).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _produce(
    door: Commands, session: ProduceSession, settings: Settings, topic: str,
    key: str | None, value: str | None, file_path: Path | None, count: int, rate: float | None,
    acks: str, key_separator: str | None, partition: int | None, compression: str,
    headers: tuple[str, ...],
) -> None:  # fmt: skip
    from kconsole.cluster.produce import api as pr
    from kconsole.observer import ClusterObserver

    codec = None if compression == "none" else compression
    try:
        door.refuse("produce", topic)  # before anything is read or sent
        # Made now, so that its producer id is acquired while the topic and the cluster are
        # read (a new idempotent producer waits 0.5-1 s for it): writes nothing.
        session.producer(acks, codec, pr.DEFAULT_MAX_MESSAGE_BYTES)
        if value is not None and file_path is not None:
            raise pr.ProduceError("give --value or --file, not both")
        if key is not None and key_separator is not None:
            raise pr.ProduceError("--key and --key-separator exclude each other")
        hdrs = [pr.parse_header(h) for h in headers]
        kbytes = pr.encode_text(key, "--key", hint="") if key is not None else None
        records: list[pr.Record]
        no_sep = 0
        if value is not None or file_path is not None:
            if key_separator is not None:
                raise pr.ProduceError("--key-separator applies to stdin input only")
            pr.validate(topic, limits=None, count=count, rate=rate, partition=partition)
            try:
                data = (
                    pr.encode_text(value, "--value", hint="--file sends a file's bytes as they are")
                    if value is not None
                    else file_path.read_bytes()  # type: ignore[union-attr]
                )
            except OSError as exc:
                raise pr.ProduceError(f"cannot read {file_path}: {exc}") from exc
            records = [(kbytes, data, hdrs)] * count
        else:
            if count != 1:
                raise pr.ProduceError("--count applies to --value / --file, not to stdin input")
            pr.validate(topic, limits=None, rate=rate, partition=partition)
            raw = sys.stdin.buffer.read()
            lines = raw.split(b"\n")
            if lines and lines[-1] == b"":
                lines.pop()
            records = []
            for no, line in enumerate(lines, 1):
                k, v = pr.parse_line(pr.decode_text(line, f"stdin line {no}"), key_separator)
                if key_separator is not None and k is None:
                    no_sep += 1
                records.append((k.encode() if k is not None else kbytes, v.encode(), hdrs))
            if not records:
                raise pr.ProduceError("no records on stdin")
        limits = pr.read_topic_limits(settings, topic)
        pr.validate(
            topic,
            limits=limits,
            records=records[:1] if value is not None or file_path is not None else records,
            count=count,
            rate=rate,
            partition=partition,
            acks=acks,
            compression=compression,
        )
    except ClusterError as exc:
        fail(exc)

    snap = ClusterObserver(settings).read_once()
    distinct = list(dict.fromkeys(r[0] for r in records))
    for rkey in distinct[:10]:
        click.echo(pr.trace(snap, topic, rkey, partition).describe())
    if len(distinct) > 10:
        click.echo(f"... and {len(distinct) - 10} more keys")
    if no_sep:
        click.echo(f"note: {no_sep} lines without {key_separator!r}: sent with a null key")

    small = len(records) <= 20

    def progress(d: pr.Delivery) -> None:
        if not small:
            return
        k = "null" if d.key is None else d.key.decode("utf-8", "backslashreplace")
        if d.error is None:
            off = "?" if d.offset is None else d.offset
            lat = f"{d.latency_s * 1000:.1f} ms" if d.latency_s is not None else "-"
            click.echo(f"  #{d.index + 1} key {k} -> {topic}/{d.partition}@{off}  {lat}")
        else:
            click.echo(f"  #{d.index + 1} key {k} FAILED {d.error}: {d.reason}")

    # The record goes out once the producer has its id (at most 10 s; without a
    # broker it is sent anyway and its outcome says what happened): the wait was overlapped
    # with the reads above, and what is left of it is not counted as the record's latency.
    warm = session.producer_ready(topic, acks, codec, limits.max_message_bytes)
    stop = pr.StopSending()
    # SIGTERM (a background send stopped) or ctrl+c: no further record, what was sent is
    # flushed and counted, and the summary and the audit line say so. A second one ends it.
    before = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}

    def stopped(signum: int, _frame: object) -> None:
        stop.set(signal.Signals(signum).name)
        signal.signal(signum, before[signal.Signals(signum)])

    for sig in STOP_SIGNALS:
        signal.signal(sig, stopped)
    try:
        result = door.produce(
            topic,
            records,
            acks=acks,
            rate=rate,
            compression=codec,
            partition=partition,
            on_progress=progress if small else None,  # no Python call per record in bulk
            max_message_bytes=limits.max_message_bytes,
            warm=warm,  # the one made above, unless the topic's size limit needed another
            stop=stop,
        )
    except ClusterError as exc:
        fail(exc)
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
    lat = result.latency()
    lat_s = (
        f", latency p50 {lat['p50']:.1f} ms p99 {lat['p99']:.1f} ms max {lat['max']:.1f} ms"
        if lat
        else ""
    )
    if result.stopped:
        click.echo(f"stopped by {result.stopped} after {result.sent:,} of {len(records):,} records")
    # acks=0: the producer reports a record delivered once it is written to the socket; no
    # broker confirms anything, so nothing is called acked.
    sent = (
        f"sent {result.sent} (acks=0: not confirmed)"
        if acks == "0"
        else f"sent {result.sent}, acked {result.acked_n}"
    )
    click.echo(
        f"{sent}, failed {result.failed_n}"
        f"{' ' + str(result.failed_by_code) if result.failed_n else ''}, unknown "
        f"{result.unknown_n}, {result.rate:.0f} msg/s{lat_s}"
    )
    for note in result.notes:
        click.echo(f"note: {note}")
    slow = where_the_time_went(result)
    if slow:
        click.echo(f"note: {slow}")
    if result.stopped:
        sys.exit(128 + signal.Signals[result.stopped].value)  # as if the signal had ended it
    if not result.ok:
        sys.exit(2)


def where_the_time_went(result: ProduceResult, slow_s: float = SLOW_RECORD_S) -> str:
    """For a single acknowledged record that took `slow_s` or more: how much of its time was
    the wait for a new producer's id, and how much the broker's acknowledgement ('' else)."""
    acked = result.acked
    if result.sent != 1 or len(acked) != 1 or acked[0].latency_s is None:
        return ""
    took = acked[0].latency_s
    if took < slow_s:
        return ""
    t = result.producer
    waited = t.waited_s if t is not None and t.idempotent and t.waited_s else 0.0
    waited = min(waited, took)
    ms = lambda s: f"{s * 1000:,.0f} ms"  # noqa: E731
    if waited >= slow_s / 2:
        made = f", made {ms(t.made_before_s)} before the send" if t is not None else ""
        return (
            f"the record took {ms(took)}: {ms(waited)} waiting for the new producer's id "
            f"(acks=all makes the producer idempotent; librdkafka asks a broker for the id on "
            f"a 500 ms timer, so a new producer's first record can wait 0.5-1 s{made}), then "
            f"{ms(took - waited)} to the broker's acknowledgement. The console's produce dialog "
            "keeps its producer open between sends; --acks 1 needs no producer id."
        )
    ready = " (the producer already had its id)" if t is not None and t.idempotent else ""
    return (
        f"the record took {ms(took)} from send to the broker's acknowledgement{ready}: the "
        "round trip to the partition's leader and, with acks=all, the copy to its in-sync "
        "replicas (a leader that just moved, a busy broker or retries make it long)"
    )
