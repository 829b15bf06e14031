"""What valueFormat=confluent-avro costs the kafpy Spark source: rows/s of Confluent-framed
Avro values decoded into a struct column, against the same records read as plain bytes.

    python bench/spark_confluent_avro.py [--records 1000000] [--partitions 2] [--rounds 3]

Starts one broker and one `kafpy schema-registry` (separate processes), registers a
7-field AVRO record schema (long, string, double, boolean, nullable string,
timestamp-millis, int) under `events-value`, and writes --records distinct records twice
(5,000-record batches, no key): Confluent-framed to `events`, and the same Avro binary
without the 5-byte framing to `events-plain`. Then, on a `local[2]` SparkSession, reads
both with spark.read.format("kafpy"), `events` with valueFormat=confluent-avro, and
times `count(*)` and `sum(hash(value))`: hashing a struct reads every field of every
row, so no value's decode can be skipped (the source decodes whole batches anyway). The
two reads run alternately --rounds times; the best time of each is kept. Prints rows/s
of both, the ratio, the decode's extra cost per record in CPU µs (both cores), and the
host's load average (the figures mean little on a busy host).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench_support import best_times, free_port, local_spark, start_broker, wait_port  # noqa: E402

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent.parent))

from kafpy.client.admin_client import AdminClient, NewTopic  # noqa: E402
from kafpy.client.kafka_client import KafkaClient  # noqa: E402
from kafpy.client.producer import BatchProducer  # noqa: E402
from kafpy.client.schema_registry_client import SchemaRegistryClient  # noqa: E402
from kafpy.client.schema_serde import SchemaFormat, SchemaSerializer  # noqa: E402
from kafpy.common.topic_partition import TopicPartition  # noqa: E402
from kafpy.records.builder import RecordBatchBuilder  # noqa: E402

sys.path.insert(0, str(HERE.parent))
from schema_registry import start_registry, stop  # noqa: E402

BATCH = 5_000
FRAMED, PLAIN = "events", "events-plain"
AVRO = {
    "type": "record",
    "name": "Event",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "user", "type": "string"},
        {"name": "amount", "type": "double"},
        {"name": "active", "type": "boolean"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "quantity", "type": "int"},
    ],
}
T0_MS = 1_780_000_000_000


def datum(i: int) -> dict[str, Any]:
    return {
        "id": i,
        "user": f"user-{i % 9973}",
        "amount": i * 0.25,
        "active": i % 3 != 0,
        "note": None if i % 2 else f"note {i % 101}",
        "ts": T0_MS + i,
        "quantity": i % 1000,
    }


async def load(bootstrap: str, serializer: SchemaSerializer, records: int, partitions: int) -> None:
    """Every record framed to FRAMED and unframed to PLAIN, batch i to partition i % n."""
    async with AdminClient.connect(bootstrap) as admin:
        await admin.create_topics([NewTopic(t, partitions, 1) for t in (FRAMED, PLAIN)])
    client = KafkaClient(bootstrap)
    await client.start()
    try:
        producer = BatchProducer(client, acks=1)
        for b, first in enumerate(range(0, records, BATCH)):
            framed, plain = RecordBatchBuilder(), RecordBatchBuilder()
            now = int(time.time() * 1000)
            for i in range(first, min(first + BATCH, records)):
                value = serializer.encode(datum(i))
                framed.append(now, None, value)
                plain.append(now, None, value[5:])
            p = b % partitions
            await producer.send_batches(
                {
                    TopicPartition(FRAMED, p): (framed.build(), framed.record_count),
                    TopicPartition(PLAIN, p): (plain.build(), plain.record_count),
                }
            )
    finally:
        await client.close()


def check_decoded(df: Any, records: int) -> None:
    """The decoded column holds the records written (not nulls, not a pruned column)."""
    row = df.selectExpr(
        "sum(value.id) AS ids", "count(value.note) AS notes", "max(value.ts) AS ts",
        "sum(value.quantity) AS q", "count_if(value.active) AS active",
    ).collect()[0]  # fmt: skip
    expected_ts = datetime.fromtimestamp((T0_MS + records - 1) / 1000, UTC)
    assert row.ids == records * (records - 1) // 2, row
    assert row.notes == (records + 1) // 2, row
    assert row.ts.astimezone(UTC) == expected_ts, (row.ts, expected_ts)
    assert row.q == sum(i % 1000 for i in range(records)), row
    assert row.active == records - (records + 2) // 3, row


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    records = args.records
    os.environ["PYSPARK_PYTHON"] = sys.executable
    workdir = Path(tempfile.mkdtemp(prefix="kafpy-spark-avro-bench-"))
    broker_port, registry_port = free_port(), free_port()
    broker = start_broker(workdir, broker_port, open(workdir / "broker.log", "ab"))  # noqa: SIM115
    registry: subprocess.Popen[bytes] | None = None
    try:
        wait_port(broker_port)
        registry = start_registry(workdir, broker_port, registry_port)
        wait_port(registry_port, timeout=120)
        url = f"http://127.0.0.1:{registry_port}"
        bootstrap = f"127.0.0.1:{broker_port}"
        serializer = SchemaSerializer(
            SchemaRegistryClient(url), SchemaFormat.AVRO, FRAMED, schema=json.dumps(AVRO)
        )
        schema_id = serializer.prepare()
        t0 = time.perf_counter()
        asyncio.run(load(bootstrap, serializer, records, args.partitions))
        print(
            f"loaded {records:,} records (schema id {schema_id}, "
            f"{len(serializer.encode(datum(records // 2)))} bytes framed) to each of "
            f"{FRAMED} and {PLAIN} in {time.perf_counter() - t0:.1f} s"
        )
        spark = local_spark()
        try:

            def read(topic: str, **options: str) -> Any:
                reader = (
                    spark.read.format("kafpy")
                    .option("kafka.bootstrap.servers", bootstrap)
                    .option("subscribe", topic)
                )
                for key, value in options.items():
                    reader = reader.option(key, value)
                return reader.load()

            plain_df = read(PLAIN)
            avro_df = read(FRAMED, valueFormat="confluent-avro", **{"schemaRegistry.url": url})
            check_decoded(avro_df, records)
            load_before = os.getloadavg()[0]
            best = best_times(
                {"plain": plain_df, "avro": avro_df}, records, args.rounds, "sum(hash(value)) AS h"
            )
            load_after = os.getloadavg()[0]
        finally:
            spark.stop()
    finally:
        if registry is not None:
            stop(registry)
        stop(broker)
        shutil.rmtree(workdir, ignore_errors=True)
    plain_s, avro_s = best["plain"], best["avro"]
    print(f"plain bytes (value binary):       {records / plain_s:>10,.0f} rows/s ({plain_s:.2f} s)")
    print(f"confluent-avro (value struct<7>): {records / avro_s:>10,.0f} rows/s ({avro_s:.2f} s)")
    print(f"ratio:                            {plain_s / avro_s:>10.0%}")
    print(
        f"decode cost: {(avro_s - plain_s) * 2 / records * 1e6:.1f} µs of CPU per record "
        f"(2 cores); load average {load_before:.1f} before, {load_after:.1f} after the timed reads"
    )


if __name__ == "__main__":
    main()
