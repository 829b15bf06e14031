"""Fixtures of the Spark tests: ONE shared `local[2]` SparkSession for the whole run (Spark
start-up is slow), with Python workers running this interpreter, plus helpers that make
topics and produce records with kafka-python.

The session does not register the kafpy data source: Spark finds `pyspark_kafpy` by itself
on its Python workers' path, as it does for users. Its workers get the directory holding
`pyspark_kafpy` on PYTHONPATH because an editable install (`pip install -e`, as `make
install` does) reaches it through an import hook that Spark's lookup cannot see.

The session's time zone (Asia/Kolkata) and the Python workers' TZ (America/Los_Angeles)
are deliberately not UTC, so a test can show timestamps come out in UTC regardless.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from kafpy.client.admin_client import AdminClient, NewTopic

SESSION_TZ = "Asia/Kolkata"
WORKER_TZ = "America/Los_Angeles"


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    saved_path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [module_root(), saved_path]))
    session = (
        SparkSession.builder.master("local[2]")
        .appName("kafpy-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", SESSION_TZ)
        .config("spark.executorEnv.TZ", WORKER_TZ)
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
        .getOrCreate()
    )
    # the JVM (and so every Python worker it starts) has taken the environment with it
    if saved_path is None:
        del os.environ["PYTHONPATH"]
    else:
        os.environ["PYTHONPATH"] = saved_path
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


def module_root() -> str:
    """The directory that holds `pyspark_kafpy`: site-packages for a regular install, the
    project root for an editable one."""
    import pyspark_kafpy

    return str(Path(pyspark_kafpy.__file__).resolve().parent.parent)


def topic_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(
    bootstrap: str, name: str, partitions: int = 1, configs: dict[str, str] | None = None
) -> str:
    async def run() -> None:
        async with AdminClient.connect(bootstrap) as admin:
            await admin.create_topics([NewTopic(name, partitions, 1, configs=configs or {})])

    asyncio.run(run())
    return name


def produce(
    bootstrap: str,
    topic: str,
    records: Sequence[dict[str, Any]],
    **producer_config: Any,
) -> list[Any]:
    """Send records (dicts of kafka-python send() arguments) and wait for every ack."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, **producer_config)
    try:
        futures = [producer.send(topic, **r) for r in records]
        producer.flush(30)
        return [f.get(timeout=30) for f in futures]
    finally:
        producer.close()


def send_with_kafpy(bootstrap: str, topic: str, records: Sequence[tuple[Any, ...]]) -> None:
    """Send (key, value, headers) records in one batch with kafpy's own producer."""
    from kafpy.client.kafka_client import KafkaClient
    from kafpy.client.producer import BatchProducer

    async def run() -> None:
        async with KafkaClient(bootstrap) as client:
            await BatchProducer(client, acks=-1).send(topic, records, partition=0)

    asyncio.run(run())


def consume_all(bootstrap: str, topic: str, partitions: int) -> list[Any]:
    """Every record of the topic, read with kafka-python."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=3000
    )
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        out: list[Any] = []
        for msg in consumer:
            out.append(msg)
            if all(consumer.position(tp) >= ends[tp] for tp in tps):
                break
        return out
    finally:
        consumer.close()
