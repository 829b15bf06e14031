"""`kafpy console-producer`: option handling, the line reader, batching against a FakeBroker."""

from __future__ import annotations

import asyncio
import io
import socket
from typing import Any

import pytest
from click.testing import CliRunner

from kafpy.cli.command_line_utils import OneLineError
from kafpy.cli.console_producer import (
    LineMessageReader,
    command,
    produce_lines,
    producer_settings,
)
from kafpy.client.kafka_client import KafkaClient
from kafpy.client.producer import BatchProducer
from kafpy.protocol.api_keys import ApiKey
from kafpy.records.compression import CompressionType
from kafpy.records.memory_records import MemoryRecords
from tests.unit.client.fake_broker import FakeBroker, metadata_body, no_sleep


def invoke(*args: str, stdin: bytes = b"") -> Any:
    return CliRunner().invoke(command, list(args), input=stdin)


def one_line_error(result: Any) -> str:
    assert result.exit_code == 1, result.output
    lines: list[str] = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_required_and_invalid_options_are_one_line_errors() -> None:
    assert "bootstrap-server" in one_line_error(invoke("--topic", "t"))
    assert "[topic]" in one_line_error(invoke("--bootstrap-server", "h:1"))
    assert "HOST:PORT" in one_line_error(invoke("--bootstrap-server", "nohost", "--topic", "t"))
    assert "KEY=VALUE" in one_line_error(
        invoke("--bootstrap-server", "h:1", "--topic", "t", "--property", "parse.key")
    )
    error = one_line_error(
        invoke("--bootstrap-server", "h:1", "--topic", "t", "--compression-codec", "brotli")
    )
    assert "brotli" in error and "kafpy console-producer --help" in error
    assert "acks" in one_line_error(
        invoke("--bootstrap-server", "h:1", "--topic", "t", "--request-required-acks", "2")
    )
    assert "Invalid value 'soon' for producer property linger.ms: expected a number." in (
        one_line_error(
            invoke(
                "--bootstrap-server", "h:1", "--topic", "t", "--producer-property", "linger.ms=soon"
            )
        )
    )


def test_unreachable_broker_is_one_line_error() -> None:
    port = free_port()
    result = invoke(
        "--bootstrap-server",
        f"127.0.0.1:{port}",
        "--topic",
        "t",
        "--message-send-max-retries",
        "0",
        stdin=b"hello\n",
    )
    error = one_line_error(result)
    assert error.startswith("Error when sending messages to topic t: Could not connect to")
    assert "Check that the broker is running" in error
    assert f"127.0.0.1:{port}" in error


def test_line_reader() -> None:
    plain = LineMessageReader()
    assert plain.read(b"a:b", 1) == (None, b"a:b")
    keyed = LineMessageReader.from_properties({"parse.key": "true", "key.separator": ":"})
    assert keyed.read(b"k:v:w", 1) == (b"k", b"v:w")
    assert keyed.read(b":v", 2) == (b"", b"v")
    with pytest.raises(OneLineError, match="No key found on line 3: novalue"):
        keyed.read(b"novalue", 3)
    lenient = LineMessageReader.from_properties({"parse.key": "true", "ignore.error": "true"})
    assert lenient.read(b"novalue", 1) == (None, b"novalue")
    tab = LineMessageReader.from_properties({"parse.key": "TRUE", "key.separator": "\\t"})
    assert tab.read(b"k\tv", 1) == (b"k", b"v")


def test_settings_precedence() -> None:
    props = {"acks": "all", "compression.type": "lz4", "linger.ms": "5", "retries": "7"}
    s = producer_settings(props, None, None, 10, None, None, None, None)
    assert (s.acks, s.compression, s.linger_ms, s.retries) == (-1, CompressionType.LZ4, 5, 7)
    s = producer_settings(props, "0", "zstd", 10, 0, None, 1, None)
    assert (s.acks, s.compression, s.linger_ms, s.retries) == (0, CompressionType.ZSTD, 0, 1)
    s = producer_settings({}, None, None, 10, None, None, None, None)
    assert (s.acks, s.compression, s.request_timeout_ms) == (1, CompressionType.NONE, 1500)
    with pytest.raises(OneLineError, match="linger.ms"):
        producer_settings({"linger.ms": "soon"}, None, None, 10, None, None, None, None)


def test_delivery_timeout_is_checked_against_linger_and_request_timeout() -> None:
    # the tool's own defaults (linger.ms 1000, request.timeout.ms 1500) count, as in Kafka's
    s = producer_settings({}, None, None, 10, None, None, None, None)
    assert s.delivery_timeout_ms == 120000
    s = producer_settings({"delivery.timeout.ms": "2500"}, None, None, 10, None, None, None, None)
    assert s.delivery_timeout_ms == 2500
    with pytest.raises(OneLineError) as e:
        producer_settings({"delivery.timeout.ms": "2500"}, None, None, 10, 1001, None, None, None)
    assert str(e.value) == (
        "delivery.timeout.ms should be equal to or larger than linger.ms + request.timeout.ms"
    )
    s = producer_settings({}, None, None, 10, None, 200000, None, None)
    assert s.delivery_timeout_ms == 201000  # the default grows to the sum
    with pytest.raises(OneLineError, match="delivery.timeout.ms: Value must be at least 0"):
        producer_settings({"delivery.timeout.ms": "-1"}, None, None, 10, None, None, None, None)


def test_lines_go_out_in_batches() -> None:
    async def scenario() -> None:
        async with FakeBroker() as broker:
            batches: list[list[tuple[bytes | None, bytes | None]]] = []

            def produce(header: Any, body: dict[str, Any]) -> dict[str, Any]:
                p = body["topic_data"][0]["partition_data"][0]
                batches.append([(r.key, r.value) for r in MemoryRecords(p["records"]).records()])
                answer = {"index": p["index"], "error_code": 0, "base_offset": 0}
                return {"responses": [{"name": "t", "partition_responses": [answer]}]}

            broker.handlers[ApiKey.METADATA] = lambda h, b: metadata_body(
                [broker], topics={"t": {0: 0}}
            )
            broker.handlers[ApiKey.PRODUCE] = produce
            stdin = io.BytesIO(b"k1:a\nk2:b\r\nk3:\nk4:d\nk5:e")
            reader = LineMessageReader(parse_key=True, key_separator=b":")
            async with KafkaClient(broker.address, sleep=no_sleep) as client:
                sent = await produce_lines(
                    stdin, BatchProducer(client), "t", reader, batch_size=2, linger_ms=5000
                )
            assert sent == 5
            assert batches == [
                [(b"k1", b"a"), (b"k2", b"b")],
                [(b"k3", b""), (b"k4", b"d")],
                [(b"k5", b"e")],
            ]

    asyncio.run(asyncio.wait_for(scenario(), 30))


def test_the_properties_it_uses_are_producer_configs() -> None:
    from kafpy.cli.console_producer import USED_PRODUCER_PROPERTIES
    from kafpy.client.producer_config import PRODUCER_CONFIG_DEF

    assert USED_PRODUCER_PROPERTIES <= set(PRODUCER_CONFIG_DEF.names())


def test_a_transactional_id_is_refused_as_kafkas_console_producer_refuses_it(
    tmp_path: Any,
) -> None:
    base = ("--bootstrap-server", "h:1", "--topic", "t", "--producer-property")
    # the tool's acks of 1 conflicts with the idempotence a transactional id implies
    assert one_line_error(invoke(*base, "transactional.id=tx", stdin=b"a\n")) == (
        "Must set acks to all in order to use the idempotent producer. Otherwise we cannot "
        "guarantee idempotence."
    )
    for acks in (("--request-required-acks", "all"), ("--producer-property", "acks=-1")):
        error = one_line_error(invoke(*base, "transactional.id=tx", *acks, stdin=b"a\n"))
        assert error.startswith(
            "Cannot perform a 'send' before completing a call to initTransactions when "
            "transactions are enabled."
        )
    config = tmp_path / "producer.properties"
    config.write_text("transactional.id=tx\nacks=all\n")
    error = one_line_error(
        invoke("--bootstrap-server", "h:1", "--topic", "t", "--producer.config", str(config))
    )
    assert "before completing a call to initTransactions" in error
    assert "String must be non-empty" in one_line_error(invoke(*base, "transactional.id="))
