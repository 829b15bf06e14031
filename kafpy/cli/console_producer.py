"""`kafpy console-producer`: lines from stdin become records, like kafka-console-producer.sh.

Each line is a record value (or `key<separator>value` with `--property parse.key=true`).
Lines are sent in batches: up to --batch-size lines, or whatever arrived within --timeout
ms of the first, go out as one Produce request. Errors are one line on stderr, exit 1.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import IO

import click

from kafpy.cli.command_line_utils import AdminCommand, OneLineError, quiet_logging
from kafpy.client.kafka_client import KafkaClient, parse_bootstrap_servers
from kafpy.client.producer import BatchProducer, ProducerRecord, parse_acks
from kafpy.records.compression import CompressionType

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
# producer properties this tool acts on; others are accepted and ignored, as Kafka warns
USED_PRODUCER_PROPERTIES = {
    "acks",
    "compression.type",
    "linger.ms",
    "request.timeout.ms",
    "retries",
    "retry.backoff.ms",
    "client.id",
    "delivery.timeout.ms",
}


def parse_properties(pairs: Iterable[str], option: str) -> dict[str, str]:
    """`key=value` pairs (the value may contain '=')."""
    props: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise OneLineError(
                f"Invalid {option} '{pair}': expected KEY=VALUE (see 'kafpy console-producer --help')"
            )
        props[key.strip()] = value
    return props


def unescape(text: str) -> str:
    """Separators given on the command line may be written as \\t, \\n, \\r."""
    return text.replace("\\t", "\t").replace("\\n", "\n").replace("\\r", "\r")


@dataclass
class LineMessageReader:
    """Kafka's LineMessageReader: a line is a value, or key + separator + value."""

    parse_key: bool = False
    key_separator: bytes = b"\t"
    ignore_error: bool = False

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> LineMessageReader:
        return cls(
            parse_key=props.get("parse.key", "false").strip().lower() == "true",
            key_separator=unescape(props.get("key.separator", "\t")).encode(),
            ignore_error=props.get("ignore.error", "false").strip().lower() == "true",
        )

    def read(self, line: bytes, line_number: int) -> ProducerRecord:
        if not self.parse_key:
            return (None, line)
        key, sep, value = line.partition(self.key_separator)
        if not sep:
            if self.ignore_error:
                return (None, line)
            shown = line.decode("utf-8", "replace")
            raise OneLineError(
                f"No key found on line {line_number}: {shown} (expected a key and "
                f"{self.key_separator.decode()!r} before the value, since parse.key=true)"
            )
        return (key, value)


@dataclass
class ProducerSettings:
    """What the command line asks of the producer."""

    acks: int = 1
    compression: CompressionType = CompressionType.NONE
    linger_ms: int = 1000
    batch_size: int = 200
    request_timeout_ms: int = 1500
    retries: int = 3
    retry_backoff_ms: int = 100
    client_id: str = "console-producer"


def producer_settings(
    producer_props: Mapping[str, str],
    acks_option: str | None,
    codec_option: str | None,
    batch_size: int,
    linger_ms: int | None,
    request_timeout_ms: int | None,
    retries: int | None,
    retry_backoff_ms: int | None,
) -> ProducerSettings:
    """Options win over --producer-property values, which win over the defaults (Kafka's
    console producer order)."""
    try:
        acks = parse_acks(
            acks_option if acks_option is not None else producer_props.get("acks", "1")
        )
        codec = codec_option or producer_props.get("compression.type", "none")
        compression = CompressionType.from_name(codec)

        def number(option: int | None, key: str, default: int) -> int:
            if option is not None:
                return option
            raw = producer_props.get(key)
            if raw is None:
                return default
            try:
                return int(raw)
            except ValueError:
                raise ValueError(f"Invalid value {raw!r} for {key}: expected a number") from None

        return ProducerSettings(
            acks=acks,
            compression=compression,
            linger_ms=number(linger_ms, "linger.ms", 1000),
            batch_size=batch_size,
            request_timeout_ms=number(request_timeout_ms, "request.timeout.ms", 1500),
            retries=number(retries, "retries", 3),
            retry_backoff_ms=number(retry_backoff_ms, "retry.backoff.ms", 100),
            client_id=producer_props.get("client.id", "console-producer"),
        )
    except ValueError as e:
        raise OneLineError(str(e)) from None


async def produce_lines(
    stream: IO[bytes],
    producer: BatchProducer,
    topic: str,
    reader: LineMessageReader,
    *,
    batch_size: int,
    linger_ms: int,
) -> int:
    """Send the stream's lines in batches; returns how many records were sent."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()

    def put(item: bytes | None) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # the loop has closed: the command is ending anyway
            pass

    def pump() -> None:  # stdin blocks, so it is read on a thread
        try:
            for raw in stream:
                put(raw)
        finally:
            put(None)

    threading.Thread(target=pump, name="console-producer-stdin", daemon=True).start()
    sent = 0
    line_number = 0
    eof = False
    while not eof:
        first = await queue.get()
        if first is None:
            break
        lines = [first]
        deadline = loop.time() + linger_ms / 1000
        while len(lines) < batch_size:
            if queue.empty():
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                try:
                    item = await asyncio.wait_for(queue.get(), remaining)
                except TimeoutError:
                    break
            else:
                item = queue.get_nowait()
            if item is None:
                eof = True
                break
            lines.append(item)
        records = []
        for raw in lines:
            line_number += 1
            records.append(reader.read(raw.rstrip(b"\n").removesuffix(b"\r"), line_number))
        await producer.send(topic, records)
        sent += len(records)
    return sent


@click.command(
    "console-producer",
    cls=AdminCommand,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--bootstrap-server",
    metavar="HOST:PORT[,HOST:PORT]",
    help="REQUIRED: The server(s) to connect to.",
)
@click.option(
    "--broker-list",
    metavar="HOST:PORT[,HOST:PORT]",
    help="DEPRECATED, use --bootstrap-server instead.",
)
@click.option("--topic", metavar="TOPIC", help="REQUIRED: The topic to produce messages to.")
@click.option(
    "--property",
    "properties",
    multiple=True,
    metavar="KEY=VALUE",
    help="A property of the line reader (repeatable): parse.key=true|false, "
    "key.separator=SEP (default tab), ignore.error=true|false.",
)
@click.option(
    "--producer-property",
    "producer_properties",
    multiple=True,
    metavar="KEY=VALUE",
    help="A producer config (repeatable), e.g. acks=all, compression.type=lz4, linger.ms=5.",
)
@click.option(
    "--compression-codec",
    type=click.Choice(CODECS),
    help="The compression codec: none, gzip, snappy, lz4 or zstd (default none).",
)
@click.option(
    "--request-required-acks",
    metavar="ACKS",
    help="The acks of the produce requests: all, -1, 0 or 1 (default 1).",
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    help="Lines sent in one request at most.",
)
@click.option(
    "--timeout",
    "linger_ms",
    type=click.IntRange(min=0),
    help="How long to wait for more lines to fill a batch, in ms (linger.ms; default 1000).",
)
@click.option(
    "--request-timeout-ms",
    type=click.IntRange(min=1),
    help="How long the broker may take to acknowledge, in ms (default 1500).",
)
@click.option(
    "--message-send-max-retries",
    "retries",
    type=click.IntRange(min=0),
    help="Retries of a batch failing with a retriable error (default 3).",
)
@click.option(
    "--retry-backoff-ms",
    type=click.IntRange(min=0),
    help="The wait before a retry, in ms (default 100).",
)
def command(
    bootstrap_server: str | None,
    broker_list: str | None,
    topic: str | None,
    properties: tuple[str, ...],
    producer_properties: tuple[str, ...],
    compression_codec: str | None,
    request_required_acks: str | None,
    batch_size: int,
    linger_ms: int | None,
    request_timeout_ms: int | None,
    retries: int | None,
    retry_backoff_ms: int | None,
) -> None:
    """Read lines from standard input and publish them to a topic."""
    servers = bootstrap_server or broker_list
    if not servers:
        raise OneLineError(
            "Missing required argument \"[bootstrap-server]\" (see 'kafpy console-producer --help')"
        )
    if not topic:
        raise OneLineError(
            "Missing required argument \"[topic]\" (see 'kafpy console-producer --help')"
        )
    try:
        parse_bootstrap_servers(servers)
    except ValueError as e:
        raise OneLineError(str(e)) from None
    reader = LineMessageReader.from_properties(parse_properties(properties, "--property"))
    props = parse_properties(producer_properties, "--producer-property")
    settings = producer_settings(
        props,
        request_required_acks,
        compression_codec,
        batch_size,
        linger_ms,
        request_timeout_ms,
        retries,
        retry_backoff_ms,
    )
    for key in sorted(set(props) - USED_PRODUCER_PROPERTIES):
        click.echo(
            f"WARN The configuration '{key}' was supplied but isn't used by kafpy console-producer.",
            err=True,
        )

    async def main() -> None:
        client = KafkaClient(
            servers,
            client_id=settings.client_id,
            retries=settings.retries,
            retry_backoff_ms=settings.retry_backoff_ms,
        )
        try:
            producer = BatchProducer(
                client,
                acks=settings.acks,
                compression=settings.compression,
                timeout_ms=settings.request_timeout_ms,
            )
            stdin = sys.stdin.buffer
            await produce_lines(
                stdin,
                producer,
                topic,
                reader,
                batch_size=settings.batch_size,
                linger_ms=settings.linger_ms,
            )
        finally:
            await client.close()

    quiet_logging()
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        return
    except OneLineError:
        raise
    except Exception as e:  # every failure is one line, never a traceback
        message = str(e) or type(e).__name__
        raise OneLineError(f"Error when sending messages to topic {topic}: {message}") from None
