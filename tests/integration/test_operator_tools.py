"""The operator kit against a real `kafpy server`: delete-records, producer-perf-test and
consumer-perf-test, with Kafka 2.8's flags and output lines."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from tests.fixtures.broker import KafpyBroker

TIMEOUT_S = 120


def kafpy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafpy", *args], capture_output=True,
                          text=True, timeout=TIMEOUT_S)  # fmt: skip


def fill(bootstrap: str, topic: str, n: int, partitions: int = 1) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        producer.produce(topic, b"v%d" % i, partition=i % partitions)
    assert producer.flush(30) == 0


def create(broker: KafpyBroker, topic: str, partitions: int = 1) -> None:
    r = kafpy("topics", "--bootstrap-server", broker.bootstrap, "--create", "--topic", topic,
              "--partitions", str(partitions), "--replication-factor", "1")  # fmt: skip
    assert r.returncode == 0, r.stderr


def low_watermark(bootstrap: str, topic: str, partition: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "lw"})
    try:
        low, _high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
        return int(low)
    finally:
        consumer.close()


def test_delete_records(kafpy_module_broker: KafpyBroker, tmp_path: Path) -> None:
    bootstrap = kafpy_module_broker.bootstrap
    topic = f"dr-{uuid.uuid4().hex[:8]}"
    create(kafpy_module_broker, topic, 2)
    fill(bootstrap, topic, 20, partitions=2)
    spec = tmp_path / "offsets.json"
    spec.write_text(json.dumps({"partitions": [
        {"topic": topic, "partition": 0, "offset": 4},
        {"topic": topic, "partition": 1, "offset": -1},
        {"topic": topic, "partition": 7, "offset": 1}], "version": 1}))  # fmt: skip
    r = kafpy("delete-records", "--bootstrap-server", bootstrap, "--offset-json-file", str(spec))
    assert r.returncode == 1, r.stderr  # the partition that does not exist fails
    lines = r.stdout.splitlines()
    assert lines[:4] == [
        "Executing records delete operation",
        "Records delete operation completed:",
        f"partition: {topic}-0\tlow_watermark: 4",
        f"partition: {topic}-1\tlow_watermark: 10",
    ]
    assert lines[4].startswith(f"partition: {topic}-7\terror: Partition {topic}-7 does not exist")
    assert low_watermark(bootstrap, topic, 0) == 4
    assert low_watermark(bootstrap, topic, 1) == 10


def test_delete_records_bad_input_changes_nothing(
    kafpy_module_broker: KafpyBroker, tmp_path: Path
) -> None:
    bootstrap = kafpy_module_broker.bootstrap
    topic = f"drbad-{uuid.uuid4().hex[:8]}"
    create(kafpy_module_broker, topic)
    fill(bootstrap, topic, 5)
    spec = tmp_path / "offsets.json"
    cases = {
        "{not json": "is not a valid JSON",
        json.dumps({"version": 2, "partitions": []}): "not supported version field value 2",
        json.dumps({"partitions": [{"topic": topic, "partition": 0, "offset": "x"}]}):
            "partitions[0].offset is not an integer",
        json.dumps({"partitions": [{"topic": topic, "partition": 0, "offset": 1},
                                   {"topic": topic, "partition": 0, "offset": 2}]}):
            f"duplicate topic partitions: {topic}-0",
    }  # fmt: skip
    for text, message in cases.items():
        spec.write_text(text)
        r = kafpy(
            "delete-records", "--bootstrap-server", bootstrap, "--offset-json-file", str(spec)
        )
        assert r.returncode == 1 and message in r.stderr, (text, r.stderr)
        assert r.stdout == "" and "Traceback" not in r.stderr
    r = kafpy("delete-records", "--bootstrap-server", bootstrap)
    assert r.returncode == 1 and "Missing required option(s): offset-json-file" in r.stderr
    assert low_watermark(bootstrap, topic, 0) == 0


WINDOW = re.compile(
    r"^\d+ records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, "
    r"[\d.]+ ms max latency\.$"
)
TOTAL = re.compile(
    r"^(\d+) records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, "
    r"[\d.]+ ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99\.9th\.$"
)
CSV = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}, \d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}, "
    r"([\d.]+), [\d.]+, (\d+), [\d.]+, \d+, \d+, [\d.]+, [\d.]+$"
)


def test_producer_then_consumer_perf_test(kafpy_module_broker: KafpyBroker, tmp_path: Path) -> None:
    bootstrap = kafpy_module_broker.bootstrap
    topic = f"perf-{uuid.uuid4().hex[:8]}"
    create(kafpy_module_broker, topic, 2)
    r = kafpy("producer-perf-test", "--topic", topic, "--num-records", "3000", "--record-size",
              "100", "--throughput", "-1", "--producer-props", f"bootstrap.servers={bootstrap}",
              "acks=1", "batch.size=8192")  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert all(WINDOW.match(line) for line in lines[:-1]), lines
    total = TOTAL.match(lines[-1])
    assert total is not None and int(total.group(1)) == 3000, lines[-1]
    # the records really are there: 3000 of 100 bytes over two partitions
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "check"})
    try:
        ends = [
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in (0, 1)
        ]
    finally:
        consumer.close()
    assert sum(ends) == 3000

    r = kafpy("consumer-perf-test", "--bootstrap-server", bootstrap, "--topic", topic,
              "--messages", "3000", "--timeout", "20000")  # fmt: skip
    assert r.returncode == 0, r.stderr
    header, line = r.stdout.splitlines()
    assert header == (
        "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
        "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
    )
    row = CSV.match(line)
    assert row is not None, line
    assert int(row.group(2)) == 3000 and row.group(1) == f"{3000 * 100 / 1024 / 1024:.4f}"

    # asking for more than there is ends at the timeout, with Kafka's warning
    r = kafpy("consumer-perf-test", "--bootstrap-server", bootstrap, "--topic", topic,
              "--messages", "5000", "--timeout", "1500", "--hide-header")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "Exiting before consuming the expected number of messages" in r.stderr
    row = CSV.match(r.stdout.strip())
    assert row is not None and int(row.group(2)) == 3000


def test_perf_tests_bad_input(kafpy_module_broker: KafpyBroker, tmp_path: Path) -> None:
    bootstrap = kafpy_module_broker.bootstrap
    base = ["producer-perf-test", "--topic", "t", "--num-records", "10"]
    cases = [
        ([*base, "--record-size", "10", "--producer-props", f"bootstrap.servers={bootstrap}"],
         "Missing required option(s): throughput"),
        ([*base, "--throughput", "-1", "--producer-props", f"bootstrap.servers={bootstrap}"],
         "Exactly one of --record-size or --payload-file"),
        ([*base, "--throughput", "x", "--record-size", "10"], "not a valid float"),
        ([*base, "--throughput", "-1", "--record-size", "10", "--producer-props", "acks=1"],
         "bootstrap.servers must be given"),
        ([*base, "--throughput", "-1", "--record-size", "10", "--producer-props",
          f"bootstrap.servers={bootstrap}", "acks=7"], "Invalid value '7' for acks"),
        ([*base, "--throughput", "-1", "--payload-file", str(tmp_path / "none.txt"),
          "--producer-props", f"bootstrap.servers={bootstrap}"], "Cannot read the payload file"),
        (["consumer-perf-test", "--bootstrap-server", bootstrap, "--topic", "t"],
         "Missing required option(s): messages"),
        (["consumer-perf-test", "--bootstrap-server", bootstrap, "--topic", "no-such-topic",
          "--messages", "1"], "Topic no-such-topic does not exist"),
        (["consumer-perf-test", "--bootstrap-server", bootstrap, "--topic", "t", "--messages",
          "1", "--date-format", "EEE yyyy"], "'EEE' is not supported"),
    ]  # fmt: skip
    for args, message in cases:
        r = kafpy(*args)
        assert r.returncode != 0 and message in r.stderr, (args, r.stderr)
        assert "Traceback" not in r.stderr
