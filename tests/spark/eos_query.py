"""The streaming query of the exactly-once sink tests. `start_query(spark, config)` starts
it on a session; run as a module it runs to the end in a process of its own (its own
driver JVM, `local[2,4]`: up to 4 attempts per task, where the shared test session has 1),
so that a test can SIGKILL it and restart it from its checkpoint:

    python -m tests.spark.eos_query '{"bootstrap": ..., "source": ..., "sink": ...,
        "checkpoint": ..., "prefix": ..., "markers": DIR, "mode": "plain" | "fail_once" |
        "hang" | "pause" | "fail_once+hang"}'

It reads `source` (kafpy, read_committed, 20 records per micro-batch), appends "!" to each
value in a Python UDF, and writes `sink` with exactlyOnce and the transactionalIdPrefix
`prefix`, until the input is drained (availableNow). The UDF, per `mode` (one or more):
- fail_once: the first attempt of each task of each micro-batch raises (a marker file per
  micro-batch and partition in `markers` remembers that it did);
- hang: in micro-batch 1 the task of partition 1 writes `markers`/hanging and sleeps
  (its producer initialized, no row sent: Spark hands the rows over in batches), so the
  test can kill the driver once partition 0's task has prepared its transaction;
- pause: in micro-batch 2 the task of partition 0 writes `markers`/paused and waits for
  `markers`/resume, so the test can kill and restart the broker while partition 1's task
  has prepared its transaction.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def transform_for(markers: Path, modes: set[str]) -> Callable[[str], str]:
    """The UDF's function: value + "!", with the failures and waits of `modes`."""

    def transform(value: str) -> str:
        from pyspark import TaskContext

        tc = TaskContext.get()
        assert tc is not None
        partition, batch = tc.partitionId(), tc.getLocalProperty("streaming.sql.batchId")
        if "fail_once" in modes:
            marker = markers / f"failed-{batch}-{partition}"
            if not marker.exists():
                marker.touch()
                raise RuntimeError(f"failing the first attempt of batch {batch} task {partition}")
        if "hang" in modes and batch == "1" and partition == 1:
            (markers / "hanging").touch()
            time.sleep(600)
        if "pause" in modes and batch == "2" and partition == 0:
            (markers / "paused").touch()
            deadline = time.monotonic() + 300
            while not (markers / "resume").exists() and time.monotonic() < deadline:
                time.sleep(0.1)
        return value + "!"

    return transform


def start_query(spark: Any, config: dict[str, Any]) -> Any:
    """Start the query on `spark`; returns the StreamingQuery."""
    from pyspark.sql.functions import udf

    bang = udf(transform_for(Path(config["markers"]), set(config["mode"].split("+"))), "string")
    return (
        spark.readStream.format("kafpy")
        .option("kafka.bootstrap.servers", config["bootstrap"])
        .option("subscribe", config["source"])
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "20")
        .option("kafka.isolation.level", "read_committed")
        .load()
        .selectExpr("key", "CAST(value AS STRING) AS value")
        .select("key", bang("value").alias("value"))
        .writeStream.format("kafpy")
        .option("kafka.bootstrap.servers", config["bootstrap"])
        .option("topic", config["sink"])
        .option("exactlyOnce", "true")
        .option("transactionalIdPrefix", config["prefix"])
        .option("checkpointLocation", config["checkpoint"])
        .trigger(availableNow=True)
        .start()
    )


def main(config: dict[str, Any]) -> None:
    from pyspark.sql import SparkSession

    from tests.spark.fixtures import module_root

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [module_root(), os.environ.get("PYTHONPATH")])
    )
    spark = (
        SparkSession.builder.master("local[2,4]")
        .appName("kafpy-eos-query")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.python.worker.reuse", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    start_query(spark, config).awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
