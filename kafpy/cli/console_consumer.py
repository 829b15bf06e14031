"""`kafpy console-consumer`: print a topic's records, like kafka-console-consumer.sh.

Reads the topic (--topic) or the topics matching a regex (--whitelist). Without --group
it reads with assign semantics (Fetch straight from the partition leaders): all
partitions, or one with --partition; from the end, from the beginning (--from-beginning)
or from --offset. With --group it is a member of that consumer group (kafpy's
ConsumerCoordinator: join, sync, heartbeats): it reads the partitions the group assigns
it from the group's committed offsets (auto.offset.reset, or --from-beginning, for those
without one) and commits the offsets after the records it printed, as Kafka's consumer
auto-commits. Records are written by kafka.tools.DefaultMessageFormatter (--property
print.key=true etc.) as raw bytes. At the end "Processed a total of N messages" goes to
stderr, as Kafka's tool does. Errors are one line on stderr, exit 1.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

import click

from kafpy.cli.command_line_utils import (
    AdminCommand,
    OneLineError,
    client_security,
    load_config_file,
    parse_key_value_args,
    property_flag,
    run_command,
    unescape,
)
from kafpy.cli.record_formats import FORMATS, registry_client, schema_format
from kafpy.client.client_config import ClientConfigError
from kafpy.client.consumer_config import ConsumerConfig
from kafpy.client.consumer_coordinator import ConsumerCoordinator
from kafpy.client.fetcher import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ConsumerRecord,
    Fetcher,
    OffsetResetStrategy,
)
from kafpy.client.kafka_client import KafkaClient, parse_bootstrap_servers
from kafpy.common.errors import KafkaError, UnknownTopicOrPartitionError
from kafpy.common.topic_partition import TopicPartition
from kafpy.records.record_batch import TimestampType

if TYPE_CHECKING:
    from kafpy.client.schema_serde import SchemaDeserializer

HELP_HINT = "(see 'kafpy console-consumer --help')"
_log = logging.getLogger("kafpy.cli.console_consumer")


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
            print_timestamp=property_flag(props, "print.timestamp", False),
            print_partition=property_flag(props, "print.partition", False),
            print_offset=property_flag(props, "print.offset", False),
            print_key=property_flag(props, "print.key", False),
            print_value=property_flag(props, "print.value", True),
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


class NoOpMessageFormatter:
    """Kafka's NoOpMessageFormatter: prints nothing (records are only counted)."""

    def format(self, record: ConsumerRecord) -> bytes:
        return b""


MessageFormatter = DefaultMessageFormatter | NoOpMessageFormatter
ISOLATION_LEVELS = {"read_uncommitted": 0, "read_committed": 1}


def message_formatter(name: str | None, props: Mapping[str, str]) -> MessageFormatter:
    """The --formatter class by Kafka's name (the package may be left out)."""
    short = (name or "kafka.tools.DefaultMessageFormatter").strip().removeprefix("kafka.tools.")
    if short == "DefaultMessageFormatter":
        return DefaultMessageFormatter.from_properties(props)
    if short == "NoOpMessageFormatter":
        return NoOpMessageFormatter()
    raise OneLineError(
        f"The formatter '{name}' is not supported: use kafka.tools.DefaultMessageFormatter "
        f"(with --property print.key=true etc.) or kafka.tools.NoOpMessageFormatter. {HELP_HINT}"
    )


class SchemaDecoding:
    """--key-format/--value-format avro|json-schema: Confluent-framed keys and values
    printed as JSON (as Confluent's AvroMessageFormatter prints them; a key only with
    print.key=true, the only case it reads one), and with
    print.schema.ids=true each one's schema id after it (schema.id.separator, default a
    tab). A record that cannot be decoded is named in an error line on stderr and
    skipped; the consumer goes on (Confluent's console consumer stops at it unless given
    --skip-message-on-error)."""

    def __init__(
        self,
        key: SchemaDeserializer | None,
        value: SchemaDeserializer | None,
        props: Mapping[str, str],
        err: IO[str],
    ) -> None:
        self.key = key if property_flag(props, "print.key", False) else None
        self.value = value
        self.print_schema_ids = property_flag(props, "print.schema.ids", False)
        self.id_separator = unescape(props.get("schema.id.separator", "\t"))
        self.err = err
        self.failed = 0

    async def prefetch(self, records: list[ConsumerRecord]) -> None:
        """Fetch the schemas these records name and were not fetched yet, on a thread
        (the registry client blocks)."""
        for decoder, field in ((self.key, "key"), (self.value, "value")):
            if decoder is not None:
                ids = decoder.unknown_ids(getattr(r, field) for r in records)
                if ids:
                    await asyncio.to_thread(decoder.fetch, ids)

    def decode(self, record: ConsumerRecord) -> ConsumerRecord | None:
        """The record with its key and value as JSON text; None (and an error line) when
        one of them cannot be decoded."""
        from kafpy.client.schema_serde import SerializationError

        try:
            return dataclasses.replace(
                record,
                key=self._decode(self.key, record.key),
                value=self._decode(self.value, record.value),
            )
        except SerializationError as e:
            self.failed += 1
            self.err.write(
                f"ERROR Error deserializing the record of {record.topic}-{record.partition} "
                f"at offset {record.offset}, skipping it: {e}\n"
            )
            self.err.flush()
            return None

    def _decode(self, decoder: SchemaDeserializer | None, data: bytes | None) -> bytes | None:
        if decoder is None or data is None:
            return data
        from kafpy.client.schema_serde import schema_id_of

        text = decoder.to_json(data)
        if self.print_schema_ids:
            text += f"{self.id_separator}{schema_id_of(data)}"
        return text.encode()


def schema_decoding(
    key_format: str | None, value_format: str | None, props: Mapping[str, str]
) -> SchemaDecoding | None:
    """The decoding --key-format/--value-format ask for; None when both are strings."""
    key, value = schema_format(key_format), schema_format(value_format)
    if key is None and value is None:
        return None
    from kafpy.client.schema_serde import SchemaDeserializer

    client = registry_client(props, HELP_HINT)
    return SchemaDecoding(
        None if key is None else SchemaDeserializer(client, key),
        None if value is None else SchemaDeserializer(client, value),
        props,
        sys.stderr,
    )


class RecordPrinter:
    """Writes formatted records to `out` and counts them (the count survives Ctrl-C); with
    `decoding`, keys and values are decoded first."""

    def __init__(
        self,
        formatter: MessageFormatter,
        out: IO[bytes],
        decoding: SchemaDecoding | None = None,
    ) -> None:
        self.formatter = formatter
        self.out = out
        self.decoding = decoding
        self.count = 0

    async def prepare(self, records: list[ConsumerRecord]) -> None:
        """Whatever printing these records needs from the network (their schemas)."""
        if self.decoding is not None and records:
            await self.decoding.prefetch(records)

    def print(self, record: ConsumerRecord) -> None:
        self.count += 1
        if self.decoding is not None:
            decoded = self.decoding.decode(record)
            if decoded is None:
                return
            record = decoded
        self.out.write(self.formatter.format(record))

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


@dataclass
class GroupSettings:
    """The consumer group part of the consumer's configuration."""

    group_id: str
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = 5000
    session_timeout_ms: int = 10000
    heartbeat_interval_ms: int = 3000
    auto_offset_reset: OffsetResetStrategy | None = None


def group_settings(
    group: str | None, file_props: Mapping[str, str], extra_props: Mapping[str, str]
) -> GroupSettings | None:
    """The group id (the same from --group, --consumer.config and --consumer-property, as
    Kafka insists) and the group settings."""
    ids = [
        g for g in (group, file_props.get("group.id"), extra_props.get("group.id")) if g is not None
    ]
    if len(set(ids)) > 1:
        shown = "', '".join(dict.fromkeys(ids))
        raise OneLineError(
            "The group ids provided in different places (directly using '--group', via "
            "'--consumer-property', or via '--consumer.config') do not match. Detected group "
            f"ids: '{shown}' {HELP_HINT}"
        )
    if not ids:
        return None
    config = ConsumerConfig({**file_props, **extra_props})
    reset = config.props.get("auto.offset.reset")
    strategy = None
    if reset is not None:
        try:
            strategy = OffsetResetStrategy(reset.strip().lower())
        except ValueError:
            raise OneLineError(
                f"Invalid value {reset!r} for consumer property auto.offset.reset: expected "
                "earliest, latest or none."
            ) from None
    return GroupSettings(
        group_id=ids[0],
        enable_auto_commit=config.get_bool("enable.auto.commit"),
        auto_commit_interval_ms=consumer_int(config, "auto.commit.interval.ms"),
        session_timeout_ms=consumer_int(config, "session.timeout.ms"),
        heartbeat_interval_ms=consumer_int(config, "heartbeat.interval.ms"),
        auto_offset_reset=strategy,
    )


def consumer_int(config: ConsumerConfig, key: str) -> int:
    """The integer consumer property `key` (Kafka's default when not given); a value that is
    not a number is a OneLineError naming the key."""
    try:
        return config.get_int(key)
    except ClientConfigError as e:
        raise OneLineError(
            f"Invalid value {e.value!r} for consumer property {e.key}: expected a number."
        ) from None


async def resolve_topics(
    client: KafkaClient, topic: str | None, whitelist: str | None
) -> list[str]:
    """The topic named, or every non-internal topic matching the whitelist regex (a whole
    match, as Java's Pattern.matches)."""
    if topic is not None:
        await client.refresh_metadata([topic])
        if not client.cluster.partitions_for(topic):
            raise UnknownTopicOrPartitionError(f"Topic {topic} does not exist.")
        return [topic]
    assert whitelist is not None
    pattern = re.compile(whitelist)
    await client.refresh_metadata(None)
    topics = sorted(
        name
        for name, info in client.cluster.topics.items()
        if not info.is_internal and pattern.fullmatch(name) and info.partitions
    )
    if not topics:
        raise UnknownTopicOrPartitionError(f"No topic matches the whitelist '{whitelist}'.")
    return topics


async def consume(
    client: KafkaClient,
    topic: str | None,
    partition: int | None,
    start: StartingPoint,
    printer: RecordPrinter,
    *,
    max_messages: int | None,
    timeout_ms: int | None,
    max_wait_ms: int = 500,
    whitelist: str | None = None,
    group: GroupSettings | None = None,
    isolation_level: int = 0,
) -> int:
    """Print records until max_messages, or until none came for timeout_ms; returns how
    many were printed by this call. With a group, the partitions are those the group
    assigns, read from the group's committed offsets, and the offsets after the records
    printed are committed (every auto.commit.interval.ms, before a rebalance and at the
    end)."""
    await client.start()
    topics = await resolve_topics(client, topic, whitelist)
    reset = OffsetResetStrategy.EARLIEST if start.earliest else OffsetResetStrategy.LATEST
    if group is not None and group.auto_offset_reset is not None:
        reset = group.auto_offset_reset
    fetcher = Fetcher(client, max_wait_ms=max_wait_ms, reset=reset, isolation_level=isolation_level)
    coordinator: ConsumerCoordinator | None = None
    to_commit: dict[TopicPartition, int] = {}

    async def start_positions(
        tps: list[TopicPartition], committed: dict[TopicPartition, int]
    ) -> None:
        positions = dict(committed)
        missing = [tp for tp in tps if tp not in positions]
        if missing:
            if reset is OffsetResetStrategy.NONE:
                raise KafkaError(
                    f"No committed offset for {', '.join(map(str, missing))} and "
                    "auto.offset.reset=none: commit offsets for the group first or set "
                    "auto.offset.reset to earliest or latest."
                )
            timestamp = (
                EARLIEST_TIMESTAMP if reset is OffsetResetStrategy.EARLIEST else LATEST_TIMESTAMP
            )
            positions.update(await fetcher.list_offsets(missing, timestamp))
        fetcher.assign({tp: positions[tp] for tp in tps})
        to_commit.clear()
        if coordinator is not None:  # Kafka commits the position of every assigned partition
            to_commit.update(
                {tp: positions[tp] for tp in tps if committed.get(tp) != positions[tp]}
            )

    async def join() -> None:
        assert coordinator is not None
        assignment = await coordinator.ensure_active_group()
        await start_positions(assignment, await coordinator.committed(assignment))

    async def commit() -> None:
        if coordinator is not None and group is not None and group.enable_auto_commit and to_commit:
            try:
                await coordinator.commit(to_commit)
                to_commit.clear()
            except KafkaError as e:
                if not coordinator.rejoin_needed:
                    raise
                # the group moved on: the partitions' new owners read from the last commit
                _log.warning("Offset commit failed (group is rebalancing): %s", e)

    if group is not None:
        coordinator = ConsumerCoordinator(
            client,
            group.group_id,
            topics,
            session_timeout_ms=group.session_timeout_ms,
            heartbeat_interval_ms=group.heartbeat_interval_ms,
        )
    loop = asyncio.get_running_loop()
    count = 0
    try:
        if coordinator is not None:
            await join()
        else:
            tps = [
                TopicPartition(t, p) for t in topics for p in client.cluster.partitions_for(t) or []
            ]
            if partition is not None:
                assert topic is not None
                if TopicPartition(topic, partition) not in tps:
                    raise UnknownTopicOrPartitionError(
                        f"Partition {partition} does not exist in topic {topic} (it has "
                        f"{len(tps)} partitions)."
                    )
                tps = [TopicPartition(topic, partition)]
            if start.offset is not None:
                fetcher.assign(dict.fromkeys(tps, start.offset))
            else:
                await start_positions(tps, {})
        last_record_at = loop.time()
        last_commit_at = loop.time()
        while max_messages is None or count < max_messages:
            if coordinator is not None:
                if coordinator.rejoin_needed:
                    await commit()
                    await join()
                if group is not None and (
                    loop.time() - last_commit_at >= group.auto_commit_interval_ms / 1000
                ):
                    await commit()
                    last_commit_at = loop.time()
            if timeout_ms is not None:
                remaining_ms = int((last_record_at + timeout_ms / 1000 - loop.time()) * 1000)
                if remaining_ms <= 0:
                    break
                fetcher.max_wait_ms = max(0, min(max_wait_ms, remaining_ms))
            records = await fetcher.fetch()
            if records:
                last_record_at = loop.time()
                await printer.prepare(records)
            for record in records:
                printer.print(record)
                count += 1
                to_commit[TopicPartition(record.topic, record.partition)] = record.offset + 1
                if max_messages is not None and count >= max_messages:
                    break
            printer.flush()
    finally:
        if coordinator is not None:
            try:
                await commit()
            finally:
                await coordinator.close()
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
@click.option("--topic", metavar="TOPIC", help="The topic to consume from (or --whitelist).")
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
    "line.separator, null.literal; with --key-format/--value-format: schema.registry.url, "
    "print.schema.ids, schema.id.separator.",
)
@click.option(
    "--consumer-property",
    "consumer_properties",
    multiple=True,
    metavar="KEY=VALUE",
    help="A consumer config (repeatable): fetch.max.wait.ms, request.timeout.ms, client.id, "
    "isolation.level, group.id, auto.offset.reset, enable.auto.commit, "
    "auto.commit.interval.ms, session.timeout.ms, heartbeat.interval.ms.",
)
@click.option(
    "--timeout-ms",
    type=click.IntRange(min=0),
    help="Exit when no message has arrived for this long, in ms (default: wait forever).",
)
@click.option(
    "--whitelist",
    metavar="REGEX",
    help="A regular expression: consume every topic whose whole name matches it (instead "
    "of --topic).",
)
@click.option(
    "--group",
    metavar="GROUP",
    help="The consumer group id: the group's coordinator assigns the partitions, reading "
    "starts at the group's committed offsets, and offsets are committed as records are "
    "printed.",
)
@click.option(
    "--consumer.config",
    "consumer_config",
    type=click.Path(dir_okay=False),
    help="A consumer config properties file (--consumer-property values win over it).",
)
@click.option(
    "--isolation-level",
    type=click.Choice(["read_committed", "read_uncommitted"]),
    help="read_committed leaves out the records of aborted and open transactions; "
    "read_uncommitted (default) reads them all.",
)
@click.option(
    "--formatter",
    metavar="CLASS",
    help="The message formatter: kafka.tools.DefaultMessageFormatter (default, with the "
    "--property settings) or kafka.tools.NoOpMessageFormatter.",
)
@click.option(
    "--key-format",
    type=click.Choice(FORMATS),
    help="How keys are printed: string (default, the bytes as they are), avro or "
    "json-schema (Confluent-framed, decoded to JSON with their schema from "
    "--property schema.registry.url=URL).",
)
@click.option(
    "--value-format",
    type=click.Choice(FORMATS),
    help="How values are printed: string (default), avro or json-schema (as --key-format).",
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
    whitelist: str | None,
    group: str | None,
    consumer_config: str | None,
    isolation_level: str | None,
    formatter: str | None,
    key_format: str | None,
    value_format: str | None,
) -> None:
    """Read records from a topic and print them to standard output."""
    if not bootstrap_server:
        raise OneLineError(f'Missing required argument "[bootstrap-server]" {HELP_HINT}')
    if (topic is None) == (whitelist is None):
        raise OneLineError(f"Exactly one of whitelist/topic is required. {HELP_HINT}")
    if whitelist is not None:
        if partition is not None:
            raise OneLineError(f"The topic is required when partition is specified. {HELP_HINT}")
        try:
            re.compile(whitelist)
        except re.error as e:
            raise OneLineError(f"Invalid whitelist '{whitelist}': {e} {HELP_HINT}") from None
    try:
        parse_bootstrap_servers(bootstrap_server)
    except ValueError as e:
        raise OneLineError(str(e)) from None
    start = starting_point(offset, from_beginning, partition)
    formatter_props = parse_key_value_args(properties, "--property", "console-consumer")
    printer_formatter = message_formatter(formatter, formatter_props)
    decoding = schema_decoding(key_format, value_format, formatter_props)
    file_props = load_config_file(consumer_config, HELP_HINT)
    extra_props = parse_key_value_args(
        consumer_properties, "--consumer-property", "console-consumer"
    )
    props = {**file_props, **extra_props}
    group_conf = group_settings(group, file_props, extra_props)
    if group_conf is not None and partition is not None:
        raise OneLineError(
            "Options group and partition cannot be specified together: a group member reads "
            f"the partitions the group assigns it. {HELP_HINT}"
        )
    if (
        from_beginning
        and group_conf is not None
        and group_conf.auto_offset_reset not in (None, OffsetResetStrategy.EARLIEST)
    ):
        raise OneLineError(
            "Can't simultaneously specify --from-beginning and 'auto.offset.reset="
            f"{props['auto.offset.reset']}' {HELP_HINT}"
        )
    config = ConsumerConfig(props)
    level = isolation_level or config.get_string("isolation.level").strip().lower()
    if level not in ISOLATION_LEVELS:
        raise OneLineError(
            f"Invalid value {level!r} for isolation.level: expected read_committed or "
            f"read_uncommitted. {HELP_HINT}"
        )
    max_wait_ms = consumer_int(config, "fetch.max.wait.ms")
    request_timeout_ms = consumer_int(config, "request.timeout.ms")
    client_id = config.get_string("client.id", "console-consumer")
    security = client_security(props, consumer_config or "--consumer-property")
    printer = RecordPrinter(printer_formatter, sys.stdout.buffer, decoding)
    what = f"topic {topic}" if topic is not None else f"the topics matching '{whitelist}'"

    async def main() -> None:
        client = KafkaClient(
            bootstrap_server, client_id=client_id, request_timeout_ms=request_timeout_ms,
            security=security,
        )  # fmt: skip
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
                whitelist=whitelist,
                group=group_conf,
                isolation_level=ISOLATION_LEVELS[level],
            )
        finally:
            await client.close()

    run_command(main, f"Error processing messages of {what}: ", interrupt_is_error=False)
    click.echo(f"Processed a total of {printer.count} messages", err=True)
    if decoding is not None and decoding.failed:
        raise OneLineError(
            f"{decoding.failed} of the {printer.count} messages could not be deserialized "
            "(see the ERROR lines above)"
        )
