"""`kafpy console-consumer`: print a topic's records, like kafka-console-consumer.sh.

Reads with assign semantics (Fetch straight from the partition leaders, no consumer
group yet): all partitions of the topic, or one with --partition; from the end, from the
beginning (--from-beginning) or from --offset. Values (and keys with print.key=true)
are written as raw bytes, one record per line. At the end "Processed a total of N
messages" goes to stderr, as Kafka's tool does. Errors are one line on stderr, exit 1.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO

import click

from kafpy.cli.command_line_utils import AdminCommand, OneLineError, quiet_logging
from kafpy.cli.console_producer import parse_properties, unescape
from kafpy.client.fetcher import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ConsumerRecord,
    Fetcher,
    OffsetResetStrategy,
)
from kafpy.client.kafka_client import KafkaClient, parse_bootstrap_servers
from kafpy.common.errors import UnknownTopicOrPartitionError
from kafpy.common.topic_partition import TopicPartition
from kafpy.records.record_batch import TimestampType

HELP_HINT = "(see 'kafpy console-consumer --help')"


def _flag(props: Mapping[str, str], key: str, default: bool) -> bool:
    return props.get(key, str(default)).strip().lower() == "true"


@dataclass
class DefaultMessageFormatter:
    """Kafka's DefaultMessageFormatter: [timestamp] [partition] [offset] [key] value,
    joined by key.separator, each record ended by line.separator."""

    print_timestamp: bool = False
    print_partition: bool = False
    print_offset: bool = False
    print_key: bool = False
    print_value: bool = True
    key_separator: bytes = b"\t"
    line_separator: bytes = b"\n"
    null_literal: bytes = b"null"

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> DefaultMessageFormatter:
        return cls(
            print_timestamp=_flag(props, "print.timestamp", False),
            print_partition=_flag(props, "print.partition", False),
            print_offset=_flag(props, "print.offset", False),
            print_key=_flag(props, "print.key", False),
            print_value=_flag(props, "print.value", True),
            key_separator=unescape(props.get("key.separator", "\t")).encode(),
            line_separator=unescape(props.get("line.separator", "\n")).encode(),
            null_literal=props.get("null.literal", "null").encode(),
        )

    def format(self, record: ConsumerRecord) -> bytes:
        parts: list[bytes] = []
        if self.print_timestamp:
            if record.timestamp_type is TimestampType.NO_TIMESTAMP_TYPE:
                parts.append(b"NO_TIMESTAMP")
            else:
                parts.append(f"{record.timestamp_type.kafka_name}:{record.timestamp}".encode())
        if self.print_partition:
            parts.append(f"Partition:{record.partition}".encode())
        if self.print_offset:
            parts.append(f"Offset:{record.offset}".encode())
        if self.print_key:
            parts.append(self.null_literal if record.key is None else record.key)
        if self.print_value:
            parts.append(self.null_literal if record.value is None else record.value)
        return self.key_separator.join(parts) + self.line_separator


class RecordPrinter:
    """Writes formatted records to `out` and counts them (the count survives Ctrl-C)."""

    def __init__(self, formatter: DefaultMessageFormatter, out: IO[bytes]) -> None:
        self.formatter = formatter
        self.out = out
        self.count = 0

    def print(self, record: ConsumerRecord) -> None:
        self.out.write(self.formatter.format(record))
        self.count += 1

    def flush(self) -> None:
        self.out.flush()


@dataclass
class StartingPoint:
    """Where to start reading: 'earliest', 'latest' or an offset."""

    offset: int | None = None
    earliest: bool = False


def starting_point(
    offset: str | None, from_beginning: bool, partition: int | None
) -> StartingPoint:
    """Kafka's option checks for --offset, --partition and --from-beginning."""
    if offset is None:
        return StartingPoint(earliest=from_beginning)
    if partition is None:
        raise OneLineError(f"The partition is required when offset is specified. {HELP_HINT}")
    if from_beginning:
        raise OneLineError(
            f"Options from-beginning and offset cannot be specified together. {HELP_HINT}"
        )
    text = offset.strip().lower()
    if text == "earliest":
        return StartingPoint(earliest=True)
    if text == "latest":
        return StartingPoint()
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise OneLineError(
            f"The provided offset value '{offset}' is incorrect. Valid values are 'earliest', "
            f"'latest', or a non-negative long. {HELP_HINT}"
        )
    return StartingPoint(offset=value)


async def consume(
    client: KafkaClient,
    topic: str,
    partition: int | None,
    start: StartingPoint,
    printer: RecordPrinter,
    *,
    max_messages: int | None,
    timeout_ms: int | None,
    max_wait_ms: int = 500,
) -> int:
    """Print records until max_messages, or until none came for timeout_ms; returns how
    many were printed by this call."""
    await client.start()
    await client.refresh_metadata([topic])
    partitions = client.cluster.partitions_for(topic)
    if not partitions:
        raise UnknownTopicOrPartitionError(f"Topic {topic} does not exist.")
    if partition is not None:
        if partition not in partitions:
            raise UnknownTopicOrPartitionError(
                f"Partition {partition} does not exist in topic {topic} (it has "
                f"{len(partitions)} partitions)."
            )
        partitions = [partition]
    tps = [TopicPartition(topic, p) for p in partitions]
    reset = OffsetResetStrategy.EARLIEST if start.earliest else OffsetResetStrategy.LATEST
    fetcher = Fetcher(client, max_wait_ms=max_wait_ms, reset=reset)
    if start.offset is not None:
        fetcher.assign(dict.fromkeys(tps, start.offset))
    else:
        timestamp = EARLIEST_TIMESTAMP if start.earliest else LATEST_TIMESTAMP
        fetcher.assign(await fetcher.list_offsets(tps, timestamp))
    loop = asyncio.get_running_loop()
    count = 0
    last_record_at = loop.time()
    while max_messages is None or count < max_messages:
        if timeout_ms is not None:
            remaining_ms = int((last_record_at + timeout_ms / 1000 - loop.time()) * 1000)
            if remaining_ms <= 0:
                break
            fetcher.max_wait_ms = max(0, min(max_wait_ms, remaining_ms))
        records = await fetcher.fetch()
        if records:
            last_record_at = loop.time()
        for record in records:
            printer.print(record)
            count += 1
            if max_messages is not None and count >= max_messages:
                break
        printer.flush()
    return count


@click.command(
    "console-consumer",
    cls=AdminCommand,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--bootstrap-server",
    metavar="HOST:PORT[,HOST:PORT]",
    help="REQUIRED: The server(s) to connect to.",
)
@click.option("--topic", metavar="TOPIC", help="REQUIRED: The topic to consume from.")
@click.option(
    "--from-beginning",
    is_flag=True,
    help="Start with the earliest message present in the log rather than the latest.",
)
@click.option(
    "--max-messages",
    type=click.IntRange(min=0),
    help="The number of messages to consume before exiting (default: consume forever).",
)
@click.option(
    "--partition",
    type=click.IntRange(min=0),
    help="The partition to consume from (default: all partitions of the topic).",
)
@click.option(
    "--offset",
    metavar="OFFSET",
    help="The offset to start from: a non-negative number, 'earliest' or 'latest' "
    "(default latest); needs --partition.",
)
@click.option(
    "--property",
    "properties",
    multiple=True,
    metavar="KEY=VALUE",
    help="A property of the message formatter (repeatable): print.key, print.value, "
    "print.timestamp, print.partition, print.offset (true|false), key.separator, "
    "line.separator, null.literal.",
)
@click.option(
    "--consumer-property",
    "consumer_properties",
    multiple=True,
    metavar="KEY=VALUE",
    help="A consumer config (repeatable): fetch.max.wait.ms, request.timeout.ms, client.id.",
)
@click.option(
    "--timeout-ms",
    type=click.IntRange(min=0),
    help="Exit when no message has arrived for this long, in ms (default: wait forever).",
)
@click.option(
    "--group",
    metavar="GROUP",
    help="Not supported yet: kafpy has no group coordinator; partitions are read directly.",
)
def command(
    bootstrap_server: str | None,
    topic: str | None,
    from_beginning: bool,
    max_messages: int | None,
    partition: int | None,
    offset: str | None,
    properties: tuple[str, ...],
    consumer_properties: tuple[str, ...],
    timeout_ms: int | None,
    group: str | None,
) -> None:
    """Read records from a topic and print them to standard output."""
    if not bootstrap_server:
        raise OneLineError(f'Missing required argument "[bootstrap-server]" {HELP_HINT}')
    if not topic:
        raise OneLineError(f'Missing required argument "[topic]" {HELP_HINT}')
    if group is not None:
        raise OneLineError(
            "Consumer groups are not supported yet (kafpy has no group coordinator); "
            f"leave out --group to read the partitions directly. {HELP_HINT}"
        )
    try:
        parse_bootstrap_servers(bootstrap_server)
    except ValueError as e:
        raise OneLineError(str(e)) from None
    start = starting_point(offset, from_beginning, partition)
    formatter = DefaultMessageFormatter.from_properties(parse_properties(properties, "--property"))
    props = parse_properties(consumer_properties, "--consumer-property")
    try:
        max_wait_ms = int(props.get("fetch.max.wait.ms", "500"))
        request_timeout_ms = int(props.get("request.timeout.ms", "30000"))
    except ValueError as e:
        raise OneLineError(f"Invalid consumer property: {e}") from None
    client_id = props.get("client.id", "console-consumer")
    printer = RecordPrinter(formatter, sys.stdout.buffer)

    async def main() -> None:
        client = KafkaClient(
            bootstrap_server, client_id=client_id, request_timeout_ms=request_timeout_ms
        )
        try:
            await consume(
                client,
                topic,
                partition,
                start,
                printer,
                max_messages=max_messages,
                timeout_ms=timeout_ms,
                max_wait_ms=max_wait_ms,
            )
        finally:
            await client.close()

    quiet_logging()
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    except Exception as e:  # every failure is one line, never a traceback
        message = str(e) or type(e).__name__
        raise OneLineError(f"Error processing messages of topic {topic}: {message}") from None
    click.echo(f"Processed a total of {printer.count} messages", err=True)
