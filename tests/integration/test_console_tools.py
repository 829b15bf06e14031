"""console-producer and console-consumer against a real `kafpy server` subprocess."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.fixtures.broker import KafpyBroker

TIMEOUT_S = 120


def kafpy(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "kafpy", *args],
        input=stdin,
        capture_output=True,
        timeout=TIMEOUT_S,
    )


def ok(result: subprocess.CompletedProcess[bytes]) -> bytes:
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout


def create_topic(broker: KafpyBroker, topic: str, partitions: int = 1) -> None:
    ok(
        kafpy(
            "topics",
            "--bootstrap-server",
            broker.bootstrap,
            "--create",
            "--topic",
            topic,
            "--partitions",
            str(partitions),
            "--replication-factor",
            "1",
        )
    )


def produce(broker: KafpyBroker, topic: str, data: bytes, *extra: str) -> None:
    ok(
        kafpy(
            "console-producer",
            "--bootstrap-server",
            broker.bootstrap,
            "--topic",
            topic,
            *extra,
            stdin=data,
        )
    )


def consume(broker: KafpyBroker, topic: str, *extra: str) -> subprocess.CompletedProcess[bytes]:
    return kafpy(
        "console-consumer",
        "--bootstrap-server",
        broker.bootstrap,
        "--topic",
        topic,
        "--timeout-ms",
        "10000",
        *extra,
    )


def test_keyed_lines_round_trip_in_order(kafpy_broker: KafpyBroker) -> None:
    create_topic(kafpy_broker, "lines")
    lines = [f"key{i}:value {i}" for i in range(250)]  # more than one batch of 200
    produce(
        kafpy_broker,
        "lines",
        ("\n".join(lines) + "\n").encode(),
        "--property",
        "parse.key=true",
        "--property",
        "key.separator=:",
    )
    result = consume(
        kafpy_broker,
        "lines",
        "--from-beginning",
        "--max-messages",
        "250",
        "--property",
        "print.key=true",
        "--property",
        "key.separator=:",
    )
    assert ok(result).decode().splitlines() == lines
    assert b"Processed a total of 250 messages" in result.stderr


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_every_codec_round_trips(kafpy_broker: KafpyBroker, codec: str) -> None:
    create_topic(kafpy_broker, f"codec-{codec}")
    values = [f"{codec} record {i} " + "x" * i for i in range(50)]
    produce(
        kafpy_broker, f"codec-{codec}", "\n".join(values).encode(), "--compression-codec", codec
    )
    out = ok(consume(kafpy_broker, f"codec-{codec}", "--from-beginning", "--max-messages", "50"))
    assert out.decode().splitlines() == values


def test_partition_and_offset(kafpy_broker: KafpyBroker) -> None:
    create_topic(kafpy_broker, "offsets", partitions=2)
    produce(kafpy_broker, "offsets", b"a\nb\nc\nd\n", "--producer-property", "acks=all")
    # records without a key all went to one partition, offsets 0..3
    first = ok(
        consume(
            kafpy_broker,
            "offsets",
            "--from-beginning",
            "--max-messages",
            "4",
            "--property",
            "print.partition=true",
            "--property",
            "print.offset=true",
        )
    )
    rows = [line.split("\t") for line in first.decode().splitlines()]
    assert [r[2] for r in rows] == ["a", "b", "c", "d"]
    assert [r[1] for r in rows] == ["Offset:0", "Offset:1", "Offset:2", "Offset:3"]
    partition = rows[0][0].removeprefix("Partition:")
    out = ok(
        consume(
            kafpy_broker,
            "offsets",
            "--partition",
            partition,
            "--offset",
            "2",
            "--max-messages",
            "2",
        )
    )
    assert out == b"c\nd\n"
    other = str(1 - int(partition))
    result = consume(
        kafpy_broker, "offsets", "--partition", other, "--offset", "earliest", "--timeout-ms", "500"
    )
    assert ok(result) == b"" and b"Processed a total of 0 messages" in result.stderr


def test_latest_only_sees_new_records(kafpy_broker: KafpyBroker) -> None:
    create_topic(kafpy_broker, "latest")
    produce(kafpy_broker, "latest", b"old\n")
    consumer = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kafpy",
            "console-consumer",
            "--bootstrap-server",
            kafpy_broker.bootstrap,
            "--topic",
            "latest",
            "--max-messages",
            "1",
            "--timeout-ms",
            "60000",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        # keep producing until the consumer (which starts at the end) has seen one
        for _ in range(100):
            produce(kafpy_broker, "latest", b"new\n")
            try:
                out, _ = consumer.communicate(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            pytest.fail("the consumer never received a new record")
    finally:
        consumer.kill()
    assert out == b"new\n"


def test_acks_zero_and_auto_created_topic(kafpy_broker: KafpyBroker) -> None:
    produce(kafpy_broker, "auto-created", b"one\ntwo\n", "--request-required-acks", "1")
    produce(kafpy_broker, "auto-created", b"three\n", "--producer-property", "acks=0")
    out = ok(consume(kafpy_broker, "auto-created", "--from-beginning", "--max-messages", "3"))
    assert sorted(out.decode().splitlines()) == ["one", "three", "two"]


def test_errors_are_one_line(kafpy_broker: KafpyBroker) -> None:
    result = consume(kafpy_broker, "no-such-topic", "--from-beginning")
    assert result.returncode == 1
    assert result.stderr.decode().strip().splitlines() == [
        "Error processing messages of topic no-such-topic: Topic no-such-topic does not exist."
    ]


def test_broker_api_versions(kafpy_broker: KafpyBroker) -> None:
    lines = ok(kafpy("broker-api-versions", "--bootstrap-server", kafpy_broker.bootstrap))
    text = lines.decode().split("\n")
    host, port = kafpy_broker.bootstrap.rsplit(":", 1)
    assert text[0] == f"{host}:{port} (id: 0 rack: null) -> ("
    assert text[1] == "\tProduce(0): 3 to 9 [usable: 9],"
    assert "\tFetch(1): 4 to 12 [usable: 12]," in text
    assert "\tApiVersions(18): 0 to 3 [usable: 3]," in text
    assert "\tOffsetDelete(47): 0 [usable: 0]," in text
    assert text[-3:] == ["\tDescribeCluster(60): 0 [usable: 0]", ")", ""]
    bad = kafpy("broker-api-versions", "--bootstrap-server", "127.0.0.1:1")
    assert bad.returncode != 0 and len(bad.stderr.decode().strip().splitlines()) == 1
