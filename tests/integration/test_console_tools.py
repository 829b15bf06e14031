"""console-producer and console-consumer against a real `kafpy server` subprocess."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

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


def stored(broker: KafpyBroker, topic: str) -> list[str]:
    """Every record of the topic as key:value lines (reads until none came for 3 s)."""
    result = kafpy(
        "console-consumer",
        "--bootstrap-server",
        broker.bootstrap,
        "--topic",
        topic,
        "--from-beginning",
        "--timeout-ms",
        "3000",
        "--property",
        "print.key=true",
        "--property",
        "key.separator=:",
    )
    return ok(result).decode().splitlines()


KEYED = ("--property", "parse.key=true", "--property", "key.separator=:")


def test_a_line_without_key_stops_after_delivering_the_lines_before(
    kafpy_broker: KafpyBroker,
) -> None:
    create_topic(kafpy_broker, "nokey")
    result = kafpy(
        "console-producer",
        "--bootstrap-server",
        kafpy_broker.bootstrap,
        "--topic",
        "nokey",
        *KEYED,
        stdin=b"k1:v1\nk2:v2\nk1:v3\nnokey\n",
    )
    assert sorted(stored(kafpy_broker, "nokey")) == ["k1:v1", "k1:v3", "k2:v2"]
    assert result.returncode == 1
    assert "No key found on line 4: nokey" in result.stderr.decode()
    assert "3 lines delivered" in result.stderr.decode()


def test_ignore_error_delivers_the_lines_after_a_line_without_key(
    kafpy_broker: KafpyBroker,
) -> None:
    create_topic(kafpy_broker, "nokey-ignored")
    produce(
        kafpy_broker,
        "nokey-ignored",
        b"k1:v1\nnokey\nk2:v2\n",
        *KEYED,
        "--property",
        "ignore.error=true",
    )
    assert sorted(stored(kafpy_broker, "nokey-ignored")) == ["k1:v1", "k2:v2", "null:nokey"]


@pytest.mark.parametrize("where", ["producer", "broker"])
def test_an_oversized_line_fails_alone(kafpy_broker_factory: Any, where: str) -> None:
    """Too large for max.request.size (refused by the producer) or for the broker's
    message.max.bytes (refused by the broker): the line is named, the others delivered."""
    broker = kafpy_broker_factory({"message.max.bytes": "100000"})
    size = 2_000_000 if where == "producer" else 200_000
    lines = b"k1:good1\nk2:good2\nk3:" + b"x" * size + b"\nk4:good3\n"
    create_topic(broker, "big")
    result = kafpy(
        "console-producer",
        "--bootstrap-server",
        broker.bootstrap,
        "--topic",
        "big",
        *KEYED,
        stdin=lines,
    )
    assert result.returncode == 1
    errors = result.stderr.decode()
    assert "Line 3 was not delivered" in errors and "from line 3:" in errors
    delivered = sorted(stored(broker, "big"))
    assert delivered[:2] == ["k1:good1", "k2:good2"] and "k3" not in "".join(delivered)
    if where == "producer":  # refused before sending: what came after was not sent
        assert delivered == ["k1:good1", "k2:good2"]
        assert "Not sent: line 4" in errors

    create_topic(broker, "big-ignored")
    result = kafpy(
        "console-producer",
        "--bootstrap-server",
        broker.bootstrap,
        "--topic",
        "big-ignored",
        *KEYED,
        "--property",
        "ignore.error=true",
        stdin=lines,
    )
    assert result.returncode == 1
    assert "1 line not delivered (line 3); 3 delivered." in result.stderr.decode()
    assert sorted(stored(broker, "big-ignored")) == ["k1:good1", "k2:good2", "k4:good3"]


GROUP_OVERRIDES = {"offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0"}


def test_group_runs_resume_where_the_last_one_committed(kafpy_broker_factory: Any) -> None:
    broker = kafpy_broker_factory(GROUP_OVERRIDES)
    create_topic(broker, "grouped", partitions=2)
    produce(broker, "grouped", b"a\nb\nc\n")
    group = ("--group", "readers", "--from-beginning")
    first = ok(consume(broker, "grouped", *group, "--max-messages", "3"))
    assert first.decode().splitlines() == ["a", "b", "c"]
    produce(broker, "grouped", b"d\ne\n")
    # --from-beginning only applies to partitions without a committed offset
    second = ok(consume(broker, "grouped", *group, "--max-messages", "2"))
    assert sorted(second.decode().splitlines()) == ["d", "e"]
    third = consume(broker, "grouped", *group, "--timeout-ms", "2000")
    assert ok(third) == b"" and b"Processed a total of 0 messages" in third.stderr

    result = kafpy("consumer-groups", "--bootstrap-server", broker.bootstrap, "--describe",
                   "--group", "readers")  # fmt: skip
    described = ok(result).decode()
    # as kafka-consumer-groups.sh, the note about an empty group goes to stderr
    assert b"Consumer group 'readers' has no active members." in result.stderr
    rows = [line.split() for line in described.splitlines() if line.startswith("readers ")]
    assert sorted(r[2] for r in rows) == ["0", "1"] and all(r[1] == "grouped" for r in rows)
    assert sum(int(r[3]) for r in rows) == 5 and [r[5] for r in rows] == ["0", "0"]


def test_whitelist_and_formatter(kafpy_broker: KafpyBroker) -> None:
    for topic in ("wl-one", "wl-two", "other"):
        create_topic(kafpy_broker, topic)
        produce(kafpy_broker, topic, topic.encode() + b"\n")
    result = kafpy(
        "console-consumer", "--bootstrap-server", kafpy_broker.bootstrap, "--whitelist", "wl-.*",
        "--from-beginning", "--max-messages", "2", "--timeout-ms", "10000",
        "--formatter", "kafka.tools.DefaultMessageFormatter", "--property", "print.offset=true",
        "--isolation-level", "read_committed",
    )  # fmt: skip
    assert sorted(ok(result).decode().splitlines()) == ["Offset:0\twl-one", "Offset:0\twl-two"]


def test_broker_api_versions(kafpy_broker: KafpyBroker) -> None:
    lines = ok(kafpy("broker-api-versions", "--bootstrap-server", kafpy_broker.bootstrap))
    text = lines.decode().split("\n")
    host, port = kafpy_broker.bootstrap.rsplit(":", 1)
    assert text[0] == f"{host}:{port} (id: 0 rack: null) -> ("
    assert text[1] == "\tProduce(0): 0 to 9 [usable: 9],"
    assert "\tFetch(1): 0 to 12 [usable: 12]," in text
    assert "\tApiVersions(18): 0 to 3 [usable: 3]," in text
    assert "\tOffsetDelete(47): 0 [usable: 0]," in text
    # the Kafka 3.0 APIs served for `kafpy transactions` are unknown to a 2.8 tool, as in Kafka
    assert "\tDescribeCluster(60): 0 [usable: 0]," in text
    assert text[-3:] == ["\tUNKNOWN(66): 0", ")", ""]
    bad = kafpy("broker-api-versions", "--bootstrap-server", "127.0.0.1:1")
    assert bad.returncode != 0 and len(bad.stderr.decode().strip().splitlines()) == 1


def test_a_file_on_stdin_gets_progress_lines_on_stderr(
    kafpy_broker: KafpyBroker, tmp_path: Any
) -> None:
    create_topic(kafpy_broker, "from-file")
    data = "".join(f"value {i}\n" for i in range(300)).encode()
    path = tmp_path / "records.txt"
    path.write_bytes(data)
    with path.open("rb") as f:
        result = subprocess.run(
            [sys.executable, "-m", "kafpy", "console-producer", "--bootstrap-server",
             kafpy_broker.bootstrap, "--topic", "from-file"],
            stdin=f, capture_output=True, timeout=TIMEOUT_S,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    # stderr is a pipe here: plain lines, the last one at the end of the file
    last = result.stderr.decode().splitlines()[-1]
    assert last == f"Sent: 300 records, {len(data)} B of {len(data)} B (100%)"
    out = ok(consume(kafpy_broker, "from-file", "--from-beginning", "--max-messages", "300"))
    assert out.decode().splitlines()[-1] == "value 299"


def test_piped_stdin_shows_no_progress(kafpy_broker: KafpyBroker) -> None:
    create_topic(kafpy_broker, "from-pipe")
    result = kafpy(
        "console-producer", "--bootstrap-server", kafpy_broker.bootstrap, "--topic", "from-pipe",
        stdin=b"a\nb\n",
    )  # fmt: skip
    assert result.returncode == 0
    assert b"Sent" not in result.stderr
