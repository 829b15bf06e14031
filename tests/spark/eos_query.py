"""A streaming query for the exactly-once sink tests, run as its own process (its own
driver JVM) so that a test can kill it, restart it from its checkpoint, and let Spark
retry tasks (`local[2,4]`: up to 4 attempts per task; the shared test session has 1).

    python -m tests.spark.eos_query '{"bootstrap": ..., "source": ..., "sink": ...,
        "checkpoint": ..., "prefix": ..., "markers": DIR, "mode": "plain" | "fail_once" |
        "hang" | "fail_once+hang"}'

It reads `source` (kafpy, read_committed, 20 records per micro-batch), appends "!" to each
value in a Python UDF, and writes `sink` with exactlyOnce and the transactionalIdPrefix
`prefix`, until the input is drained (availableNow). The UDF, per `mode` (one or both):
- fail_once: the first attempt of each task of each micro-batch raises (a marker file per
  micro-batch and partition in `markers` remembers that it did);
- hang: in micro-batch 1 the task of partition 1 writes `markers`/hanging and sleeps
  (its producer initialized, no row sent: Spark hands the rows over in batches), so the
  test can kill the driver once partition 0's task has prepared its transaction.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any


def main(config: dict[str, Any]) -> None:
    from pyspark.sql import SparkSession
    from pyspark.sql.functions import udf

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
    markers = Path(config["markers"])
    modes = set(config["mode"].split("+"))

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
        return value + "!"

    bang = udf(transform, "string")
    query = (
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
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
