"""`kafpy consumer-perf-test`: consume records as fast as possible and report throughput
(kafka-consumer-perf-test.sh).

Kafka 2.8's ConsumerPerformance flags: `--bootstrap-server` (or the deprecated
`--broker-list`), `--topic`, `--messages`, `--group` (default perf-consumer-N),
`--fetch-size`, `--from-latest`, `--consumer.config`, `--timeout` (the longest wait for a
record, ms), `--show-detailed-stats` with `--reporting-interval`, `--date-format` (Java's
SimpleDateFormat letters), `--hide-header`. It joins the group, reads from the committed
offsets (or the earliest, or with --from-latest the latest) and prints Kafka's CSV line:

    start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
    rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec

where MB = 2^20 bytes of keys and values, rebalance.time.ms is the time to join the
group and fetch.time.ms the rest. The consumer is kafpy's own (Fetcher and
ConsumerCoordinator).
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import click

from kafpy.cli.command_line_utils import (
    AdminCommand,
    OneLineError,
    admin_client_options,
    load_config_file,
    run_command,
)
from kafpy.client.consumer_config import ConsumerConfig
from kafpy.client.consumer_coordinator import ConsumerCoordinator
from kafpy.client.fetcher import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, Fetcher, OffsetResetStrategy
from kafpy.client.kafka_client import KafkaClient
from kafpy.common.errors import UnknownTopicOrPartitionError
from kafpy.common.topic_partition import TopicPartition

MB = 1024.0 * 1024.0
HEADER = "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec"
DETAILED_HEADER = "time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec"
NEW_FIELDS = ", rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
_JAVA_DATE_TOKENS = {"yyyy": "%Y", "MM": "%m", "dd": "%d", "HH": "%H", "mm": "%M", "ss": "%S"}


def consumer_options(path: str | None, warn: Callable[[str], None]) -> dict[str, Any]:
    """The KafkaClient keyword arguments for the --consumer.config file at `path` (none when
    it is None): its properties read as a consumer's (ConsumerConfig), in the words of the
    other tools' client config files; a bad or refused setting is a OneLineError."""
    if path is None:
        return {}
    props = load_config_file(path)
    return admin_client_options(props, path, warn, ConsumerConfig(props))


def date_formatter(pattern: str) -> Callable[[float], str]:
    """A formatter of epoch seconds for a Java SimpleDateFormat pattern made of yyyy, MM,
    dd, HH, mm, ss, SSS and literal characters (a OneLineError for other letters)."""
    parts = re.findall(r"yyyy|MM|dd|HH|mm|ss|SSS|[A-Za-z]+|[^A-Za-z]+", pattern)
    for part in parts:
        if part[0].isalpha() and part not in _JAVA_DATE_TOKENS and part != "SSS":
            raise OneLineError(
                f"--date-format {pattern!r}: '{part}' is not supported; use yyyy, MM, dd, HH, "
                "mm, ss and SSS"
            )

    def fmt(epoch_s: float) -> str:
        when = datetime.fromtimestamp(epoch_s)
        out = []
        for part in parts:
            if part == "SSS":
                out.append(f"{int(epoch_s * 1000) % 1000:03d}")
            elif part in _JAVA_DATE_TOKENS:
                out.append(when.strftime(_JAVA_DATE_TOKENS[part]))
            else:
                out.append(part)
        return "".join(out)

    return fmt


class ConsumerStats:
    """What ConsumerPerformance counts: messages, bytes, join time, fetch time."""

    def __init__(self) -> None:
        self.messages = 0
        self.bytes = 0
        self.join_ms = 0
        self.start = time.time()
        self.end = self.start

    def line(self, fmt: Callable[[float], str]) -> str:
        elapsed = max(self.end - self.start, 1e-9)
        fetch_ms = max(int((self.end - self.start) * 1000) - self.join_ms, 0)
        fetch_s = max(fetch_ms / 1000, 1e-9)
        mb = self.bytes / MB
        return (
            f"{fmt(self.start)}, {fmt(self.end)}, {mb:.4f}, {mb / elapsed:.4f}, {self.messages}, "
            f"{self.messages / elapsed:.4f}, {self.join_ms}, {fetch_ms}, {mb / fetch_s:.4f}, "
            f"{self.messages / fetch_s:.4f}"
        )


async def consume(
    client: KafkaClient,
    topic: str,
    group: str,
    messages: int,
    timeout_ms: int,
    fetch_size: int,
    from_latest: bool,
    progress: Callable[[ConsumerStats, float, int, int], None] | None,
    reporting_interval_ms: int,
) -> tuple[ConsumerStats, bool]:
    """Read up to `messages` records of `topic` as a member of `group`; returns the
    statistics and whether the timeout ended the run early."""
    stats = ConsumerStats()
    await client.start()
    await client.refresh_metadata([topic])
    if not client.cluster.partitions_for(topic):
        raise UnknownTopicOrPartitionError(f"Topic {topic} does not exist")
    reset = OffsetResetStrategy.LATEST if from_latest else OffsetResetStrategy.EARLIEST
    fetcher = Fetcher(client, max_partition_bytes=fetch_size, reset=reset)
    coordinator = ConsumerCoordinator(client, group, [topic])
    timed_out = False
    try:
        joined_at = time.time()
        assignment = await coordinator.ensure_active_group()
        committed = await coordinator.committed(assignment)
        positions = dict(committed)
        missing = [tp for tp in assignment if tp not in positions]
        if missing:
            ts = LATEST_TIMESTAMP if from_latest else EARLIEST_TIMESTAMP
            positions.update(await fetcher.list_offsets(missing, ts))
        fetcher.assign({tp: positions[tp] for tp in assignment})
        stats.join_ms = int((time.time() - joined_at) * 1000)
        last_record = time.monotonic()
        last_report = time.time()
        last_count, last_bytes = 0, 0
        consumed: dict[TopicPartition, int] = {}
        while stats.messages < messages:
            if coordinator.rejoin_needed:
                assignment = await coordinator.ensure_active_group()
                committed = await coordinator.committed(assignment)
                fetcher.assign(
                    {tp: committed.get(tp, fetcher.positions.get(tp, 0)) for tp in assignment}
                )
            remaining = timeout_ms / 1000 - (time.monotonic() - last_record)
            if remaining <= 0:
                timed_out = True
                break
            fetcher.max_wait_ms = max(0, min(500, int(remaining * 1000)))
            records = await fetcher.fetch()
            if records:
                last_record = time.monotonic()
            for record in records:
                stats.messages += 1
                stats.bytes += len(record.key or b"") + len(record.value or b"")
                consumed[TopicPartition(record.topic, record.partition)] = record.offset + 1
                if stats.messages >= messages:
                    break
            stats.end = time.time()
            if progress is not None and (stats.end - last_report) * 1000 >= reporting_interval_ms:
                progress(stats, stats.end - last_report, stats.messages - last_count,
                         stats.bytes - last_bytes)  # fmt: skip
                last_report, last_count, last_bytes = stats.end, stats.messages, stats.bytes
        stats.end = time.time()
        if consumed:
            await coordinator.commit(consumed)
    finally:
        await coordinator.close()
    return stats, timed_out


@click.command(
    "consumer-perf-test",
    cls=AdminCommand,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option("--bootstrap-server", metavar="server to connect to",
              help="REQUIRED unless --broker-list(deprecated) is specified. The server(s) to connect to.")  # fmt: skip
@click.option("--broker-list", metavar="HOST", help="DEPRECATED, use --bootstrap-server instead.")
@click.option("--topic", metavar="topic", help="REQUIRED: The topic to consume from.")
@click.option("--messages", type=int, metavar="count",
              help="REQUIRED: The number of messages to send or consume")  # fmt: skip
@click.option(
    "--group", metavar="gid", help="The group id to consume on. (default: perf-consumer-N)"
)
@click.option("--fetch-size", type=int, default=1048576, show_default=True, metavar="size",
              help="The amount of data to fetch in a single request.")  # fmt: skip
@click.option("--from-latest", is_flag=True,
              help="If the consumer does not already have an established offset to consume "
                   "from, start with the latest message present in the log rather than the "
                   "earliest message.")  # fmt: skip
@click.option("--consumer.config", "consumer_config", metavar="config file",
              help="Consumer config properties file.")  # fmt: skip
@click.option("--timeout", type=int, default=10000, show_default=True, metavar="milliseconds",
              help="The maximum allowed time in milliseconds between returned records.")  # fmt: skip
@click.option("--show-detailed-stats", is_flag=True,
              help="If set, stats are reported for each reporting interval as configured by "
                   "reporting-interval")  # fmt: skip
@click.option("--reporting-interval", type=int, default=5000, show_default=True,
              metavar="interval_ms", help="Interval in milliseconds at which to print progress info.")  # fmt: skip
@click.option("--date-format", default="yyyy-MM-dd HH:mm:ss:SSS", show_default=True,
              metavar="date format",
              help="The date format to use for formatting the time field. See "
                   "java.text.SimpleDateFormat for options.")  # fmt: skip
@click.option("--hide-header", is_flag=True, help="If set, skips printing the header for the stats")
def command(
    bootstrap_server: str | None,
    broker_list: str | None,
    topic: str | None,
    messages: int | None,
    group: str | None,
    fetch_size: int,
    from_latest: bool,
    consumer_config: str | None,
    timeout: int,
    show_detailed_stats: bool,
    reporting_interval: int,
    date_format: str,
    hide_header: bool,
) -> None:
    """This tool helps in performance test for the full zookeeper consumer"""
    bootstrap = bootstrap_server or broker_list
    missing = [n for n, v in (("bootstrap-server", bootstrap), ("topic", topic),
                              ("messages", messages)) if v is None]  # fmt: skip
    if missing:
        raise OneLineError(
            f"Missing required option(s): {', '.join(missing)} (see 'kafpy consumer-perf-test --help')"
        )
    assert bootstrap is not None and topic is not None and messages is not None
    for name, value, least in (("messages", messages, 1), ("fetch-size", fetch_size, 1),
                               ("timeout", timeout, 1), ("reporting-interval", reporting_interval, 1)):  # fmt: skip
        if value < least:
            raise OneLineError(f"--{name} {value}: it must be {least} or more")
    fmt = date_formatter(date_format)
    options = consumer_options(consumer_config, lambda m: click.echo(m, err=True))
    group_id = group or f"perf-consumer-{random.randrange(100000)}"
    if not hide_header:
        click.echo((DETAILED_HEADER if show_detailed_stats else HEADER) + NEW_FIELDS)

    def progress(stats: ConsumerStats, interval_s: float, n: int, nbytes: int) -> None:
        interval_s = max(interval_s, 1e-9)
        click.echo(
            f"{fmt(stats.end)}, 0, {stats.bytes / MB:.4f}, {nbytes / MB / interval_s:.4f}, "
            f"{stats.messages}, {n / interval_s:.4f}, {stats.join_ms}, "
            f"{max(int((stats.end - stats.start) * 1000) - stats.join_ms, 0)}, "
            f"{nbytes / MB / interval_s:.4f}, {n / interval_s:.4f}"
        )

    async def main() -> None:
        client = KafkaClient(bootstrap, client_id=options.pop("client_id", "perf-consumer-client"),
                             **options)  # fmt: skip
        try:
            stats, timed_out = await consume(
                client, topic, group_id, messages, timeout, fetch_size, from_latest,
                progress if show_detailed_stats else None, reporting_interval,
            )  # fmt: skip
        finally:
            await client.close()
        if timed_out:
            click.echo(
                f"WARNING: Exiting before consuming the expected number of messages: timeout "
                f"({timeout} ms) exceeded. You can use the --timeout option to increase the "
                "timeout.",
                err=True,
            )
        if not show_detailed_stats:
            click.echo(stats.line(fmt))

    run_command(main, "Error while running the consumer performance test: ")
