"""The statistics and formats of `kafpy producer-perf-test` and `kafpy consumer-perf-test`."""

from datetime import datetime
from pathlib import Path

import pytest

from kafpy.cli.command_line_utils import OneLineError
from kafpy.cli.consumer_perf_test import ConsumerStats, consumer_options, date_formatter
from kafpy.cli.producer_perf_test import (
    DEFAULT_TRANSACTIONAL_ID,
    Stats,
    producer_settings,
    with_transactions,
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_producer_stats_windows_and_total() -> None:
    lines: list[str] = []
    clock = Clock()
    stats = Stats(lines.append, clock)
    for i in range(1000):
        clock.now = i * 0.006  # 6 s in all: one window line after 5 s
        stats.record(latency_ms=i % 100, size=1024)
    assert len(lines) == 1
    assert lines[0].startswith("835 records sent, 166.9 records/sec") and lines[0].endswith(
        " ms max latency."
    )
    assert stats.percentiles(0.5, 0.95, 0.99, 0.999) == [50, 95, 99, 99]
    clock.now = 10.0
    assert stats.total_line() == (
        "1000 records sent, 100.000000 records/sec (0.10 MB/sec), 49.50 ms avg latency, "
        "99.00 ms max latency, 50 ms 50th, 95 ms 95th, 99 ms 99th, 99 ms 99.9th."
    )


def test_producer_settings() -> None:
    s = producer_settings({"bootstrap.servers": "h:1", "acks": "all", "compression.type": "lz4",
                           "batch.size": "100", "linger.ms": "5"}, print)  # fmt: skip
    assert s["producer"]["acks"] == -1 and s["producer"]["batch_size"] == 100
    warned: list[str] = []
    producer_settings({"bootstrap.servers": "h:1", "foo": "1"}, warned.append)
    assert warned == ["WARNING: The configuration 'foo' was supplied but isn't a known config."]
    for props, message in [({}, "bootstrap.servers must be given"),
                           ({"bootstrap.servers": "h:1", "batch.size": "x"}, "not a number"),
                           ({"bootstrap.servers": "h:1", "security.protocol": "SSL"}, "cannot be honoured")]:  # fmt: skip
        with pytest.raises(OneLineError, match=message):
            producer_settings(props, print)


def test_transactions_only_with_a_positive_duration_as_kafkas_tool() -> None:
    props = {"bootstrap.servers": "h:1"}
    assert with_transactions(props, DEFAULT_TRANSACTIONAL_ID, 0) == props
    assert with_transactions({**props, "transactional.id": "mine"}, "tool", 100) == {
        **props, "transactional.id": "tool"}  # fmt: skip
    with pytest.raises(OneLineError, match="before completing a call to initTransactions"):
        with_transactions({**props, "transactional.id": "mine"}, DEFAULT_TRANSACTIONAL_ID, 0)
    s = producer_settings(
        {**props, "transactional.id": "t", "transaction.timeout.ms": "9000"}, print
    )
    assert s["idempotent"] and s["producer"]["acks"] == -1
    assert (s["producer"]["transactional_id"], s["producer"]["transaction_timeout_ms"]) == (
        "t",
        9000,
    )
    with pytest.raises(OneLineError, match="Must set acks to all"):
        producer_settings({**props, "transactional.id": "t", "acks": "1"}, print)


def test_java_date_format() -> None:
    epoch = datetime(2026, 11, 23, 9, 5, 7).timestamp() + 0.042
    assert date_formatter("yyyy-MM-dd HH:mm:ss:SSS")(epoch) == "2026-11-23 09:05:07:042"
    with pytest.raises(OneLineError, match="'EEE' is not supported"):
        date_formatter("EEE")


def test_consumer_stats_line() -> None:
    stats = ConsumerStats()
    stats.start, stats.end = 0.0, 2.0
    stats.messages, stats.bytes, stats.join_ms = 1000, 2 * 1024 * 1024, 500
    fields = stats.line(lambda _t: "T").split(", ")
    assert fields == [
        "T",
        "T",
        "2.0000",
        "1.0000",
        "1000",
        "500.0000",
        "500",
        "1500",
        "1.3333",
        "666.6667",
    ]


def test_consumer_config_is_read_as_consumer_properties(tmp_path: Path) -> None:
    path = tmp_path / "consumer.properties"
    path.write_text(
        "client.id=perf\nrequest.timeout.ms=1500\nretries= 3\nretry.backoff.ms=20\n"
        "socket.connection.setup.timeout.ms=700\nfetch.min.bytes=1\n"
    )
    warnings: list[str] = []
    options = consumer_options(str(path), warnings.append)
    assert options == {"client_id": "perf", "request_timeout_ms": 1500, "retries": 3,
                       "retry_backoff_ms": 20, "connect_timeout_ms": 700}  # fmt: skip
    assert warnings == [
        f"WARNING: The configuration 'fetch.min.bytes' in {path} isn't used by kafpy's admin client."
    ]
    assert consumer_options(None, warnings.append) == {}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("request.timeout.ms=soon", "Invalid value soon for configuration request.timeout.ms in {}: not a number of type int"),
        ("retries=-1", "Invalid value -1 for configuration retries in {}: the value must be at least 0"),
    ],
)  # fmt: skip
def test_a_bad_consumer_config_number_names_the_key_and_file(
    tmp_path: Path, line: str, message: str
) -> None:
    path = tmp_path / "consumer.properties"
    path.write_text(line + "\n")
    with pytest.raises(OneLineError) as e:
        consumer_options(str(path), lambda m: None)
    assert str(e.value) == message.format(path)


def test_producer_perf_delivery_timeout_is_kafkas() -> None:
    props = {"bootstrap.servers": "h:1"}
    assert producer_settings(props, print)["producer"]["delivery_timeout_ms"] == 120000
    warned: list[str] = []
    s = producer_settings({**props, "delivery.timeout.ms": "40000"}, warned.append)
    assert s["producer"]["delivery_timeout_ms"] == 40000 and warned == []
    grown = {**props, "linger.ms": "5", "request.timeout.ms": "200000"}
    assert producer_settings(grown, print)["producer"]["delivery_timeout_ms"] == 200005
    with pytest.raises(OneLineError) as e:
        producer_settings({**grown, "delivery.timeout.ms": "200004"}, print)
    assert str(e.value) == (
        "delivery.timeout.ms should be equal to or larger than linger.ms + request.timeout.ms"
    )
    with pytest.raises(OneLineError, match="delivery.timeout.ms: must be at least 0"):
        producer_settings({**props, "delivery.timeout.ms": "-1"}, print)
