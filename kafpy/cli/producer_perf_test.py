"""`kafpy producer-perf-test`: produce records as fast as asked and report throughput and
latency (kafka-producer-perf-test.sh).

Kafka 2.8's ProducerPerformance flags: `--topic`, `--num-records`, `--record-size` or
`--payload-file` (with `--payload-delimiter`), `--throughput` (records/s; -1 for no
limit), `--producer-props k=v ...` and/or `--producer.config F`. Every 5 seconds it
prints `N records sent, R records/sec (M MB/sec), A ms avg latency, X ms max latency.`
and at the end the totals with the 50th, 95th, 99th and 99.9th latency percentiles,
in Kafka's format (MB = 2^20 bytes). Latency is taken per record from the moment it is
handed to the producer to its acknowledgement.

The producer is kafpy's own BatchProducer: records are handed over in chunks of
`batch.size` bytes with up to `max.in.flight.requests.per.connection` chunks in flight.

Transactions as Kafka 2.8's: only with `--transaction-duration-ms` above 0 (default 0, off),
and then with `--transactional-id` (default `performance-producer-default-transactional-id`,
over any transactional.id of the properties); a transaction is begun before the first
record, committed once a record is handed over `--transaction-duration-ms` or more after it
began, and the last one committed at the end. A transactional.id in the properties without
a duration is refused, as Kafka's tool fails its first send.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import click

from kafpy.cli.command_line_utils import (
    AdminCommand,
    OneLineError,
    load_config_file,
    parse_key_value_args,
    run_command,
)
from kafpy.client.client_config import ClientConfigError, Expected
from kafpy.client.kafka_client import KafkaClient
from kafpy.client.producer import (
    BatchProducer,
    parse_acks,
)
from kafpy.client.producer_config import ProducerConfig
from kafpy.records.compression import CompressionType

REPORTING_INTERVAL_S = 5.0
MB = 1024.0 * 1024.0
DEFAULT_TRANSACTIONAL_ID = "performance-producer-default-transactional-id"
# the producer configs kafpy's producer honours here; security ones are refused
_KNOWN = {
    "bootstrap.servers", "client.id", "acks", "compression.type", "batch.size",
    "max.request.size", "request.timeout.ms", "enable.idempotence",
    "max.in.flight.requests.per.connection", "retries", "retry.backoff.ms",
    "transactional.id", "transaction.timeout.ms", "max.block.ms", "delivery.timeout.ms",
}  # fmt: skip
# accepted and without effect on kafpy's producer (it has no client-side buffer or linger;
# linger.ms only counts in the check of delivery.timeout.ms, as in Kafka's producer)
_IGNORED = {
    "linger.ms",
    "buffer.memory",
    "key.serializer",
    "value.serializer",
}


class Stats:
    """Kafka's ProducerPerformance.Stats: per-window and total counts and latencies."""

    def __init__(
        self, echo: Callable[[str], None], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.echo = echo
        self.clock = clock
        self.start = self.window_start = clock()
        self.count = self.bytes = 0
        self.total_latency = 0
        self.max_latency = 0
        self.latencies: list[int] = []
        self._new_window()

    def _new_window(self) -> None:
        self.window_start = self.clock()
        self.window_count = self.window_bytes = self.window_total = self.window_max = 0

    def record(self, latency_ms: int, size: int) -> None:
        self.count += 1
        self.bytes += size
        self.total_latency += latency_ms
        self.max_latency = max(self.max_latency, latency_ms)
        self.latencies.append(latency_ms)
        self.window_count += 1
        self.window_bytes += size
        self.window_total += latency_ms
        self.window_max = max(self.window_max, latency_ms)
        if self.clock() - self.window_start >= REPORTING_INTERVAL_S:
            self.print_window()
            self._new_window()

    def print_window(self) -> None:
        elapsed = max(self.clock() - self.window_start, 1e-9)
        self.echo(
            f"{self.window_count} records sent, {self.window_count / elapsed:.1f} records/sec "
            f"({self.window_bytes / elapsed / MB:.2f} MB/sec), "
            f"{self.window_total / max(self.window_count, 1):.1f} ms avg latency, "
            f"{float(self.window_max):.1f} ms max latency."
        )

    def percentiles(self, *ps: float) -> list[int]:
        ordered = sorted(self.latencies)
        if not ordered:
            return [0 for _ in ps]
        return [ordered[min(int(p * len(ordered)), len(ordered) - 1)] for p in ps]

    def total_line(self) -> str:
        elapsed = max(self.clock() - self.start, 1e-9)
        p50, p95, p99, p999 = self.percentiles(0.5, 0.95, 0.99, 0.999)
        return (
            f"{self.count} records sent, {self.count / elapsed:f} records/sec "
            f"({self.bytes / elapsed / MB:.2f} MB/sec), "
            f"{self.total_latency / max(self.count, 1):.2f} ms avg latency, "
            f"{float(self.max_latency):.2f} ms max latency, {p50} ms 50th, {p95} ms 95th, "
            f"{p99} ms 99th, {p999} ms 99.9th."
        )


def producer_settings(props: Mapping[str, str], warn: Callable[[str], None]) -> dict[str, Any]:
    """KafkaClient and BatchProducer arguments from producer configs, or a OneLineError."""
    if "bootstrap.servers" not in props:
        raise OneLineError(
            "bootstrap.servers must be given in --producer-props or --producer.config"
        )
    protocol = props.get("security.protocol", "PLAINTEXT").upper()
    security = sorted(k for k in props if k.startswith(("ssl.", "sasl.")))
    if protocol != "PLAINTEXT" or security:
        raise OneLineError(
            f"{', '.join(security) or 'security.protocol=' + protocol} cannot be honoured by "
            "kafpy's producer yet: use a PLAINTEXT listener"
        )

    config = ProducerConfig(props)

    def integer(key: str, default: int | None, least: int) -> int:
        try:
            return config.get_int(key, default, minimum=least)
        except ClientConfigError as e:
            problem = (
                "not a number" if e.expected is Expected.NUMBER else f"must be at least {least}"
            )
            raise OneLineError(
                f"Invalid value {e.value} for configuration {key}: {problem}"
            ) from None

    request_timeout_ms = integer("request.timeout.ms", None, 1)
    integer("delivery.timeout.ms", None, 0)  # a number at least 0, said as the others
    try:
        delivery_timeout_ms = config.delivery_timeout_ms(
            integer("linger.ms", None, 0), request_timeout_ms
        )
        idempotent = config.idempotence_enabled()
        transactional_id = config.transactional_id()
        acks = parse_acks(config.get_string("acks", "all"))
        compression = CompressionType.from_name(config.get_string("compression.type"))
    except ValueError as e:  # ClientConfigError is one: Kafka's sentence
        raise OneLineError(str(e)) from None
    for key in props:
        if key not in _KNOWN and key not in _IGNORED and key != "security.protocol":
            warn(f"WARNING: The configuration '{key}' was supplied but isn't a known config.")
    return {
        "client": {
            "bootstrap_servers": props["bootstrap.servers"],
            "client_id": config.get_string("client.id", "producer-performance"),
            "request_timeout_ms": request_timeout_ms,
            "retries": integer("retries", 5, 0),
            "retry_backoff_ms": integer("retry.backoff.ms", None, 0),
        },
        "producer": {
            "acks": -1 if transactional_id is not None else acks,
            "compression": compression,
            "batch_size": integer("batch.size", None, 0),
            "max_request_size": integer("max.request.size", None, 1),
            "transactional_id": transactional_id,
            "transaction_timeout_ms": integer("transaction.timeout.ms", None, 1),
            "max_block_ms": integer("max.block.ms", None, 0),
            "delivery_timeout_ms": delivery_timeout_ms,
        },
        "in_flight": integer("max.in.flight.requests.per.connection", None, 1),
        "idempotent": idempotent,
    }


def with_transactions(
    props: Mapping[str, str], transactional_id: str, transaction_duration_ms: int
) -> dict[str, str]:
    """The producer properties as Kafka 2.8's ProducerPerformance builds them: with a
    positive duration, `transactional_id` replaces any transactional.id; without one, a
    transactional.id is refused (Kafka's producer would refuse the first send)."""
    if transaction_duration_ms > 0:
        return {**props, "transactional.id": transactional_id}
    if "transactional.id" in props:
        raise OneLineError(
            "Cannot perform a 'send' before completing a call to initTransactions when "
            "transactions are enabled. (producer-perf-test runs transactions only with "
            "--transaction-duration-ms above 0, as Kafka 2.8's.)"
        )
    return dict(props)


def load_payloads(path: str, delimiter: str) -> list[bytes]:
    """The payloads of --payload-file, split by --payload-delimiter (empty ones dropped)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise OneLineError(f"Cannot read the payload file {path}: {e.strerror}") from None
    payloads = [p.encode() for p in text.split(delimiter) if p]
    if not payloads:
        raise OneLineError(f"File {path} contains no payloads")
    return payloads


async def run_perf(
    topic: str,
    num_records: int,
    payloads: list[bytes],
    throughput: float,
    settings: Mapping[str, Any],
    echo: Callable[[str], None],
    transaction_duration_ms: int = 0,
) -> Stats:
    """Produce `num_records` records of `payloads` (picked at random) at about
    `throughput` records/s (no limit when <= 0) and return the statistics; with a
    transactional producer, in transactions of `transaction_duration_ms` each."""
    client = KafkaClient(**settings["client"])
    producer = BatchProducer(client, **settings["producer"])
    stats = Stats(echo)
    rng = random.Random(0)
    try:
        await client.start()
        transactional = producer.transaction_manager is not None
        if transactional:
            await producer.init_transactions()
        elif settings["idempotent"]:
            await producer.init_producer_id()
        await producer.partitions_for(topic)
        chunk = max(1, settings["producer"]["batch_size"] // max(1, len(payloads[0])))
        slots = asyncio.Semaphore(settings["in_flight"])
        pending: set[asyncio.Task[None]] = set()
        failures: list[BaseException] = []
        start = time.monotonic()

        async def send(records: list[tuple[bytes | None, bytes | None]]) -> None:
            sent_at = time.monotonic()
            try:
                await producer.send(topic, records)
            except Exception as e:  # reported after the run, as Kafka prints each failure
                failures.append(e)
                return
            finally:
                slots.release()
            latency = int((time.monotonic() - sent_at) * 1000)
            for _key, value in records:
                stats.record(latency, len(value or b""))

        async def commit() -> None:
            if pending:  # every send of the transaction has begun (and counts for flush)
                await asyncio.gather(*pending)
            await producer.commit_transaction()

        sent = 0
        transaction_start: float | None = None
        while sent < num_records:
            if transactional and transaction_start is None:
                producer.begin_transaction()
                transaction_start = time.monotonic()
            n = min(chunk, num_records - sent)
            if throughput > 0:
                ahead = (sent + n) / throughput - (time.monotonic() - start)
                if ahead > 0:
                    await asyncio.sleep(ahead)
            records: list[tuple[bytes | None, bytes | None]] = [
                (None, payloads[0] if len(payloads) == 1 else rng.choice(payloads))
                for _ in range(n)
            ]
            await slots.acquire()
            task = asyncio.create_task(send(records))
            pending.add(task)
            task.add_done_callback(pending.discard)
            sent += n
            if (
                transaction_start is not None
                and (time.monotonic() - transaction_start) * 1000 >= transaction_duration_ms
            ):
                await commit()
                transaction_start = None
        if transaction_start is not None:
            await commit()
        if pending:
            await asyncio.gather(*pending)
        if failures:
            raise OneLineError(f"{len(failures)} sends failed; the first: {failures[0]}")
        return stats
    finally:
        await client.close()


@click.command(
    "producer-perf-test",
    cls=AdminCommand,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option("--topic", metavar="TOPIC", help="produce messages to this topic")
@click.option(
    "--num-records", type=int, metavar="NUM-RECORDS", help="number of messages to produce"
)
@click.option(
    "--payload-delimiter",
    default="\\n",
    show_default=True,
    help="provides delimiter to be used when --payload-file is provided. This parameter "
    "will be ignored if --payload-file is not provided.",
)
@click.option(
    "--throughput",
    type=float,
    metavar="THROUGHPUT",
    help="throttle maximum message throughput to *approximately* THROUGHPUT messages/sec. "
    "Set this to -1 to disable throttling.",
)
@click.option(
    "--producer-props",
    multiple=True,
    metavar="PROP-NAME=PROP-VALUE",
    help="kafka producer related configuration properties like bootstrap.servers,client.id "
    "etc. These configs take precedence over those passed via --producer.config.",
)
@click.option("--producer.config", "producer_config", metavar="CONFIG-FILE",
              help="producer config properties file.")  # fmt: skip
@click.option("--record-size", type=int, metavar="RECORD-SIZE",
              help="message size in bytes. Note that you must provide exactly one of "
                   "--record-size or --payload-file.")  # fmt: skip
@click.option("--payload-file", metavar="PAYLOAD-FILE",
              help="file to read the message payloads from. This works only for UTF-8 encoded "
                   "text files. Payloads will be read from this file and a payload will be "
                   "randomly selected when sending messages. Note that you must provide "
                   "exactly one of --record-size or --payload-file.")  # fmt: skip
@click.option("--transactional-id", default=DEFAULT_TRANSACTIONAL_ID, show_default=True,
              metavar="TRANSACTIONAL-ID",
              help="The transactionalId to use if transaction-duration-ms is > 0. Useful when "
                   "testing the performance of concurrent transactions.")  # fmt: skip
@click.option("--transaction-duration-ms", type=int, default=0, show_default=True,
              metavar="TRANSACTION-DURATION",
              help="The max age of each transaction. The commitTransaction will be called after "
                   "this time has elapsed. Transactions are only enabled if this value is "
                   "positive.")  # fmt: skip
@click.argument("more_props", nargs=-1, metavar="")
def command(
    topic: str | None,
    num_records: int | None,
    payload_delimiter: str,
    throughput: float | None,
    producer_props: tuple[str, ...],
    producer_config: str | None,
    record_size: int | None,
    payload_file: str | None,
    transactional_id: str,
    transaction_duration_ms: int,
    more_props: tuple[str, ...],
) -> None:
    """This tool is used to verify the producer performance."""
    if more_props and not producer_props:
        raise OneLineError(f"Unrecognized arguments: {' '.join(more_props)}")
    producer_props = producer_props + more_props  # --producer-props a=b c=d, as Kafka's nargs +
    missing = [n for n, v in (("topic", topic), ("num-records", num_records),
                              ("throughput", throughput)) if v is None]  # fmt: skip
    if missing:
        raise OneLineError(
            f"Missing required option(s): {', '.join(missing)} (see 'kafpy producer-perf-test --help')"
        )
    if (record_size is None) == (payload_file is None):
        raise OneLineError("Exactly one of --record-size or --payload-file must be given")
    if not producer_props and producer_config is None:
        raise OneLineError("Either --producer-props or --producer.config must be specified.")
    assert topic is not None and num_records is not None and throughput is not None
    if num_records < 1:
        raise OneLineError(f"--num-records {num_records}: it must be 1 or more")
    props = load_config_file(producer_config)
    props.update(parse_key_value_args(producer_props, "--producer-props", "producer-perf-test"))
    props = with_transactions(props, transactional_id, transaction_duration_ms)
    settings = producer_settings(props, lambda m: click.echo(m, err=True))
    if record_size is not None:
        if record_size < 1:
            raise OneLineError(f"--record-size {record_size}: it must be 1 or more")
        rng = random.Random(0)
        payloads = [bytes(rng.randrange(65, 91) for _ in range(record_size))]
    else:
        assert payload_file is not None
        delimiter = payload_delimiter.encode().decode("unicode_escape")
        payloads = load_payloads(payload_file, delimiter)
        click.echo(f"Reading payloads from: {Path(payload_file).resolve()}")
        click.echo(f"Number of messages read: {len(payloads)}")

    async def main() -> None:
        stats = await run_perf(
            topic, num_records, payloads, throughput, settings, click.echo, transaction_duration_ms
        )
        click.echo(stats.total_line())

    run_command(main, "Error while running the producer performance test: ")
