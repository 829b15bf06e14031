"""Read throughput of the kafpy PySpark data source, against the API's ceiling.

    python bench/spark_read.py [--records 2000000] [--size 100] [--partitions 2]

Starts a `kafpy server` on a free port (data in a temporary directory), writes the
records (values of --size random bytes, or sizes around it with --vary; no key) in 5,000-record batches, then on a
`local[2]` SparkSession times `sum(length(value))` over (1) spark.read.format("kafpy")
and (2) a trivial Python data source that yields the same rows as Arrow batches already
in memory: the most any Python data source can deliver. Prints rows/s of both and the
ratio. The two run alternately --rounds times (default 3); the best time of each is kept.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyarrow as pa  # noqa: E402
from bench_support import best_times, exit_with, free_port, local_spark  # noqa: E402

from kafpy.client.admin_client import AdminClient, NewTopic  # noqa: E402
from kafpy.client.connection import BrokerConnection  # noqa: E402
from kafpy.client.kafka_client import KafkaClient  # noqa: E402
from kafpy.client.producer import BatchProducer  # noqa: E402
from kafpy.common.errors import KafkaError  # noqa: E402
from kafpy.common.topic_partition import TopicPartition  # noqa: E402
from kafpy.common.wait import wait_until  # noqa: E402
from kafpy.records.builder import RecordBatchBuilder  # noqa: E402
from kafpy.spark.arrow import ARROW_SCHEMA, SPARK_SCHEMA  # noqa: E402

BATCH = 5_000


def start_broker(data_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [
        sys.executable, "-m", "kafpy", "server",
        "--override", "broker.id=0",
        "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
        "--override", f"log.dirs={data_dir / 'logs'}",
        "--override", "log.segment.bytes=1073741824",
    ]  # fmt: skip
    log = (data_dir / "broker.out").open("wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)

    async def probe() -> bool:
        conn = BrokerConnection("127.0.0.1", port, request_timeout_ms=2000)
        try:
            await conn.connect()
            return True
        except KafkaError:
            return False
        finally:
            await conn.close()

    failed = f"kafpy server did not start; see {data_dir / 'broker.out'}"

    def started() -> bool:
        if asyncio.run(probe()):
            return True
        if proc.poll() is not None:
            raise SystemExit(failed)
        return False

    wait_until(started, 60, interval_s=0.2, on_timeout=exit_with(failed))
    return proc, f"127.0.0.1:{port}"


async def load(
    bootstrap: str, topic: str, records: int, size: int, partitions: int, vary: bool
) -> None:
    async with AdminClient.connect(bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, partitions, 1)])
    client = KafkaClient(bootstrap)
    await client.start()
    producer = BatchProducer(client, acks=1)
    value = os.urandom(size * 2)
    builder = RecordBatchBuilder()
    now = int(time.time() * 1000)
    rnd = random.Random(1)
    for _ in range(BATCH):
        n = rnd.randint(size // 2, size + size // 2) if vary else size
        builder.append(now, None, value[:n])
    batch = builder.build()
    sent = 0
    p = 0
    while sent < records:
        tp = TopicPartition(topic, p % partitions)
        await producer.send_batches({tp: (batch, BATCH)})
        sent += BATCH
        p += 1
    await client.close()


def memory_source(records: int, size: int, partitions: int) -> type:
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class MemoryReader(DataSourceReader):
        def partitions(self) -> list[InputPartition]:
            return [InputPartition(i) for i in range(partitions)]

        def read(self, partition: InputPartition):  # type: ignore[no-untyped-def]
            value = os.urandom(size)
            n = BATCH
            arrays = [
                pa.nulls(n, pa.binary()),
                pa.array([value] * n, pa.binary()),
                pa.array(["bench"] * n, pa.string()),
                pa.array([partition.value] * n, pa.int32()),
                pa.array(range(n), pa.int64()),
                pa.array([0] * n, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
                pa.array([0] * n, pa.int32()),
            ]
            batch = pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)
            for _ in range(records // partitions // n):
                yield batch

    class MemorySource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "kafpy_bench_memory"

        def schema(self) -> str:
            return SPARK_SCHEMA

        def reader(self, schema):  # type: ignore[no-untyped-def]
            return MemoryReader()

    return MemorySource


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--vary",
        action="store_true",
        help="value sizes uniform in [size/2, 3*size/2] (no run of equal-size records)",
    )
    args = parser.parse_args()
    records = args.records - args.records % (BATCH * args.partitions)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    with tempfile.TemporaryDirectory(prefix="kafpy-spark-bench-") as tmp:
        proc, bootstrap = start_broker(Path(tmp))
        try:
            t0 = time.perf_counter()
            asyncio.run(load(bootstrap, "bench", records, args.size, args.partitions, args.vary))
            print(f"loaded {records:,} records of {args.size} bytes "
                  f"in {time.perf_counter() - t0:.1f} s")  # fmt: skip
            spark = local_spark()
            spark.dataSource.register(memory_source(records, args.size, args.partitions))
            kafpy_df = (
                spark.read.format("kafpy")
                .option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", "bench")
                .load()
            )
            memory_df = spark.read.format("kafpy_bench_memory").load()
            best = best_times(
                {"kafpy": kafpy_df, "memory": memory_df},
                records,
                args.rounds,
                "sum(length(value)) AS bytes",
            )
            kafpy_s, memory_s = best["kafpy"], best["memory"]
            spark.stop()
        finally:
            proc.terminate()
            proc.wait(30)
    kafpy_rate = records / kafpy_s
    memory_rate = records / memory_s
    print(f"kafpy data source:        {kafpy_rate:>12,.0f} rows/s ({kafpy_s:.2f} s)")
    print(f"in-memory Arrow ceiling:  {memory_rate:>12,.0f} rows/s ({memory_s:.2f} s)")
    print(f"ratio:                    {kafpy_rate / memory_rate:>12.0%}")


if __name__ == "__main__":
    main()
