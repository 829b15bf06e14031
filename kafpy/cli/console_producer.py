"""`kafpy console-producer`: lines from stdin become records, like kafka-console-producer.sh.

Each line is a record value (or `key<separator>value` with `--property parse.key=true`).
Lines are sent in batches: up to --batch-size lines, or whatever arrived within --timeout
ms of the first, go to the producer together (which cuts them by batch.size and
max.request.size). A line that cannot be delivered is named on stderr; the lines before
it are delivered, and the command stops there with exit status 1 (or, with
`--property ignore.error=true`, goes on and exits 1 at the end). Errors are one line on
stderr, exit 1.

Kafka 2.8's console producer has no transactions: given a `transactional.id`, its producer
is built (refusing settings that conflict with idempotence, as the acks of 1 that
--request-required-acks defaults to) and then refuses to send before initTransactions,
which the tool never calls. kafpy refuses the same way, with the same sentences, before
reading a line.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import threading
from collections.abc import Mapping, Sequence
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
from kafpy.cli.progress import Progress
from kafpy.cli.record_formats import FORMATS, registry_client, schema_format
from kafpy.client.client_config import ClientConfigError, Expected
from kafpy.client.kafka_client import KafkaClient, parse_bootstrap_servers
from kafpy.client.producer import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_DELIVERY_TIMEOUT_MS,
    DEFAULT_MAX_REQUEST_SIZE,
    BatchProducer,
    ProducerRecord,
    RecordsNotDeliveredError,
    parse_acks,
)
from kafpy.client.producer_config import ProducerConfig
from kafpy.common.errors import KafkaError, MessageTooLargeError
from kafpy.records.compression import CompressionType
from kafpy.security.ssl_configs import SSL_CONFIG_DEF

if TYPE_CHECKING:
    from kafpy.client.schema_serde import SchemaSerializer

HELP_HINT = "(see 'kafpy console-producer --help')"

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
    "batch.size",
    "max.request.size",
}


@dataclass
class LineMessageReader:
    """Kafka's LineMessageReader: a line is a value, or key + separator + value."""

    parse_key: bool = False
    key_separator: bytes = b"\t"
    ignore_error: bool = False

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> LineMessageReader:
        return cls(
            parse_key=property_flag(props, "parse.key", False),
            key_separator=unescape(props.get("key.separator", "\t")).encode(),
            ignore_error=property_flag(props, "ignore.error", False),
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


class LineNotSerializedError(Exception):
    """A line that --key-format/--value-format cannot encode (not JSON, or not matching
    the schema)."""


@dataclass
class SchemaMessageReader(LineMessageReader):
    """Confluent's AvroMessageReader and JsonSchemaMessageReader: the key (with
    parse.key=true) and the value of a line are JSON documents, written in Confluent's
    framing with the schema registered under `<topic>-key`/`<topic>-value` (Avro's JSON
    encoding for avro: a union's branch is named, `{"string": "x"}`)."""

    key_serializer: SchemaSerializer | None = None
    value_serializer: SchemaSerializer | None = None

    def read(self, line: bytes, line_number: int) -> ProducerRecord:
        from kafpy.client.schema_serde import SerializationError

        key, value = super().read(line, line_number)[:2]
        try:
            if self.key_serializer is not None and key is not None:
                key = self.key_serializer.from_json(key.decode())
            if self.value_serializer is not None and value is not None:
                value = self.value_serializer.from_json(value.decode())
        except (SerializationError, UnicodeDecodeError) as e:
            raise LineNotSerializedError(str(e)) from None
        return (key, value)


def schema_message_reader(
    topic: str, key_format: str | None, value_format: str | None, props: Mapping[str, str]
) -> SchemaMessageReader | None:
    """The reader --key-format/--value-format ask for, its schemas registered (or, without
    key.schema/value.schema, the subject's latest looked up); None when both are strings."""
    key, value = schema_format(key_format), schema_format(value_format)
    if key is None and value is None:
        return None
    from kafpy.client.schema_serde import SchemaSerializer, SerializationError

    client = registry_client(props, HELP_HINT)
    line_reader = LineMessageReader.from_properties(props)
    if key is not None and not line_reader.parse_key:
        raise OneLineError(f"--key-format {key_format} needs --property parse.key=true {HELP_HINT}")
    serializers = [
        None
        if f is None
        else SchemaSerializer(
            client, f, topic, is_key, props.get(f"{side}.schema"), schema_id(props, side)
        )
        for f, is_key, side in ((key, True, "key"), (value, False, "value"))
    ]
    for serializer in serializers:
        if serializer is not None:
            try:
                serializer.prepare()
            except SerializationError as e:
                raise OneLineError(str(e)) from None
    return SchemaMessageReader(
        line_reader.parse_key, line_reader.key_separator, line_reader.ignore_error, *serializers
    )


def schema_id(props: Mapping[str, str], side: str) -> int | None:
    """`key.schema.id`/`value.schema.id`: a registered schema to write with, by its id."""
    text = props.get(f"{side}.schema.id")
    if text is None:
        return None
    if f"{side}.schema" in props:
        raise OneLineError(f"Give either {side}.schema or {side}.schema.id, not both. {HELP_HINT}")
    try:
        return int(text)
    except ValueError:
        raise OneLineError(
            f"{side}.schema.id must be a number, not {text!r}. {HELP_HINT}"
        ) from None


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
    batch_bytes: int = DEFAULT_BATCH_SIZE
    max_request_size: int = DEFAULT_MAX_REQUEST_SIZE
    delivery_timeout_ms: int = DEFAULT_DELIVERY_TIMEOUT_MS


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
    config = ProducerConfig(producer_props)
    try:
        acks = parse_acks(acks_option if acks_option is not None else config.get_string("acks"))
        compression = CompressionType.from_name(
            codec_option or config.get_string("compression.type")
        )

        def number(option: int | None, key: str, default: int | None = None) -> int:
            if option is not None:
                return option
            return config.get_int(key, default)

        linger = number(linger_ms, "linger.ms", 1000)
        request_timeout = number(request_timeout_ms, "request.timeout.ms", 1500)
        return ProducerSettings(
            acks=acks,
            compression=compression,
            linger_ms=linger,
            batch_size=batch_size,
            request_timeout_ms=request_timeout,
            retries=number(retries, "retries", 3),
            retry_backoff_ms=number(retry_backoff_ms, "retry.backoff.ms"),
            client_id=config.get_string("client.id", "console-producer"),
            batch_bytes=number(None, "batch.size"),
            max_request_size=number(None, "max.request.size"),
            delivery_timeout_ms=config.delivery_timeout_ms(linger, request_timeout),
        )
    except ClientConfigError as e:
        if e.expected is Expected.VALID:
            raise OneLineError(str(e)) from None  # Kafka's sentence
        if e.expected is Expected.AT_LEAST:
            raise OneLineError(
                f"Invalid value {e.value} for configuration {e.key}: Value must be at least "
                f"{e.minimum}"
            ) from None
        raise OneLineError(
            f"Invalid value {e.value!r} for producer property {e.key}: expected a number."
        ) from None
    except ValueError as e:
        raise OneLineError(str(e)) from None


def refuse_transactional_id(
    props: Mapping[str, str], acks_option: str | None, retries_option: int | None
) -> None:
    """Refuse a `transactional.id` as Kafka 2.8's console producer does (see the module's
    docstring): the tool's acks and retries go into the producer's config as Kafka's tool
    merges them (the option, else the property, else the option's default)."""
    if "transactional.id" not in props:
        return
    merged = {
        **props,
        "acks": acks_option if acks_option is not None else props.get("acks", "1"),
        "retries": str(retries_option) if retries_option is not None else props.get("retries", "3"),
    }
    try:
        ProducerConfig(merged).idempotence_enabled()
    except ClientConfigError as e:
        raise OneLineError(str(e)) from None
    raise OneLineError(
        "Cannot perform a 'send' before completing a call to initTransactions when "
        "transactions are enabled. (kafpy console-producer, as Kafka 2.8's, does not run "
        "transactions: leave transactional.id out.)"
    )


def line_ranges(numbers: Sequence[int]) -> str:
    """Line numbers for a message: `line 4`, `lines 2, 5-7`."""
    spans: list[list[int]] = []
    for n in sorted(numbers):
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    text = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
    return f"line{'s' if len(numbers) > 1 else ''} {text}"


class LineReport:
    """Kafka's ErrorLoggingCallback for the console producer: each line not delivered is
    named on stderr with its error, and counted for the exit status."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.not_delivered: list[int] = []

    def failed(self, numbers: Sequence[int], error: Exception) -> None:
        if not numbers:
            return
        self.not_delivered.extend(numbers)
        click.echo(
            f"ERROR Error when sending message to topic {self.topic} from "
            f"{line_ranges(numbers)}: {error}",
            err=True,
        )

    def not_sent(self, numbers: Sequence[int]) -> None:
        if numbers:
            self.not_delivered.extend(numbers)
            click.echo(
                f"ERROR Not sent: {line_ranges(numbers)}, read after the failed line (set "
                "--property ignore.error=true to go on after a failure).",
                err=True,
            )


async def produce_lines(
    stream: IO[bytes],
    producer: BatchProducer,
    topic: str,
    reader: LineMessageReader,
    *,
    batch_size: int,
    linger_ms: int,
    progress: Progress | None = None,
) -> int:
    """Send the stream's lines in batches; returns how many records were delivered.

    A line that fails (no key with parse.key=true, a record too large) never takes the
    others with it: the lines before it are delivered, it is named on stderr and the
    command stops there with an error (as Kafka's console producer flushes what it sent
    before it exits), or, with ignore.error=true, goes on with the lines after it and
    reports at the end that some lines were not delivered."""
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
    report = LineReport(topic)
    sent = 0
    line_number = 0
    eof = False
    stop: OneLineError | None = None
    while not eof and stop is None:
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
        if progress is not None:
            progress.update(sum(len(raw) for raw in lines))
        records: list[ProducerRecord] = []
        numbers: list[int] = []
        first_number = line_number + 1
        for raw in lines:
            line_number += 1
            try:
                record = reader.read(raw.rstrip(b"\n").removesuffix(b"\r"), line_number)
                producer.ensure_valid_record_size(record)
            except OneLineError as e:  # a line the reader cannot take: Kafka stops here
                stop = e
                break
            except (MessageTooLargeError, LineNotSerializedError) as e:
                report.failed([line_number], e)
                if not reader.ignore_error:
                    stop = OneLineError(f"Line {line_number} was not delivered: {e}")
                    break
                continue
            records.append(record)
            numbers.append(line_number)
        if stop is not None:
            report.not_sent(range(line_number + 1, first_number + len(lines)))
        if not records:
            continue
        try:
            await producer.send(topic, records)
            sent += len(records)
            if progress is not None:
                progress.update(0, len(records))
        except RecordsNotDeliveredError as e:
            sent += len(records) - len(e.errors)
            by_message: dict[str, list[int]] = {}
            errors: dict[str, KafkaError] = {}
            for index, error in e.errors:
                by_message.setdefault(str(error), []).append(numbers[index])
                errors[str(error)] = error
            for message, failed in by_message.items():
                report.failed(failed, errors[message])
            if not reader.ignore_error and stop is None:
                first_failed = numbers[e.errors[0][0]]
                stop = OneLineError(f"Line {first_failed} was not delivered: {e.errors[0][1]}")
    if stop is not None:
        raise OneLineError(f"{stop} ({sent} line{'s' if sent != 1 else ''} delivered.)")
    if report.not_delivered:
        raise OneLineError(
            f"{len(report.not_delivered)} line{'s' if len(report.not_delivered) > 1 else ''} "
            f"not delivered ({line_ranges(report.not_delivered)}); {sent} delivered."
        )
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
    "key.separator=SEP (default tab), ignore.error=true|false; with --key-format/"
    "--value-format: schema.registry.url, key.schema, value.schema, key.schema.id, "
    "value.schema.id.",
)
@click.option(
    "--producer-property",
    "producer_properties",
    multiple=True,
    metavar="KEY=VALUE",
    help="A producer config (repeatable), e.g. acks=all, compression.type=lz4, linger.ms=5.",
)
@click.option(
    "--producer.config",
    "producer_config",
    metavar="FILE",
    help="A producer config properties file (--producer-property values win over it), e.g. "
    "security.protocol=SSL with ssl.truststore.*.",
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
@click.option(
    "--key-format",
    type=click.Choice(FORMATS),
    help="How keys are read (with parse.key=true): string (default, the bytes as they "
    "are), avro or json-schema (a JSON document per key, written in Confluent's framing "
    "with --property key.schema=SCHEMA, registered under <topic>-key at "
    "--property schema.registry.url=URL).",
)
@click.option(
    "--value-format",
    type=click.Choice(FORMATS),
    help="How values are read: string (default), avro or json-schema (as --key-format, "
    "with --property value.schema=SCHEMA registered under <topic>-value; without it, the "
    "subject's latest schema).",
)
def command(
    bootstrap_server: str | None,
    broker_list: str | None,
    topic: str | None,
    properties: tuple[str, ...],
    producer_properties: tuple[str, ...],
    producer_config: str | None,
    compression_codec: str | None,
    request_required_acks: str | None,
    batch_size: int,
    linger_ms: int | None,
    request_timeout_ms: int | None,
    retries: int | None,
    retry_backoff_ms: int | None,
    key_format: str | None,
    value_format: str | None,
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
    reader_props = parse_key_value_args(properties, "--property", "console-producer")
    reader = schema_message_reader(
        topic, key_format, value_format, reader_props
    ) or LineMessageReader.from_properties(reader_props)
    props = {
        **load_config_file(producer_config),
        **parse_key_value_args(producer_properties, "--producer-property", "console-producer"),
    }
    security = client_security(props, producer_config or "--producer-property")
    refuse_transactional_id(props, request_required_acks, retries)
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
    used = USED_PRODUCER_PROPERTIES | ({"security.protocol"} | set(SSL_CONFIG_DEF.names()))
    for key in sorted(set(props) - used):
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
            security=security,
        )
        try:
            producer = BatchProducer(
                client,
                acks=settings.acks,
                compression=settings.compression,
                timeout_ms=settings.request_timeout_ms,
                batch_size=settings.batch_bytes,
                max_request_size=settings.max_request_size,
                delivery_timeout_ms=settings.delivery_timeout_ms,
            )
            stdin = sys.stdin.buffer
            progress = _file_progress(stdin)
            try:
                await produce_lines(
                    stdin,
                    producer,
                    topic,
                    reader,
                    batch_size=settings.batch_size,
                    linger_ms=settings.linger_ms,
                    progress=progress,
                )
            finally:
                if progress is not None:
                    progress.close()
        finally:
            await client.close()

    run_command(main, f"Error when sending messages to topic {topic}: ", interrupt_is_error=False)


def _file_progress(stream: IO[bytes]) -> Progress | None:
    """Progress over stdin when it is a file (`< records.txt`): its size is the whole work.
    A pipe or a terminal has no known end, and shows none."""
    try:
        info = os.fstat(stream.fileno())
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return Progress("Sent", info.st_size)
