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
