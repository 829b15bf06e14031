"""A Structured Streaming pipeline on kafpy: JSON events in, windowed counts per key out.

    kafpy server config/server.properties                 # in one terminal (or: make run)
    python examples/spark_pipeline.py --bootstrap 127.0.0.1:9092

What it does, end to end:

1. creates the topics `events` (3 partitions) and `event-counts` (1 partition);
2. produces --events JSON events ({"user": ..., "action": ..., "ts": ms}) keyed by user,
   with event times spread over the last few minutes and a few arriving out of order;
3. runs a streaming query on a local SparkSession: read `events` with the kafpy data
   source, parse the JSON, count events per user in 1-minute event-time windows with a
   2-minute watermark, and write each window's final count as JSON to `event-counts`
   (key = user) once the watermark has passed the window (append mode: Python data
   source sinks take appends only, so the windows of the last two minutes are written
   by a later run, when newer events have moved the watermark on); the query commits
   its progress to the consumer group `spark-pipeline`;
4. reads `event-counts` back with a batch query and prints the counts per window.

By default the query runs with Trigger.AvailableNow (process what is there, then stop);
--follow keeps it running every 5 seconds until Ctrl-C. Run it again: it resumes from
its checkpoint (--checkpoint) and counts only the new events.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kafpy.client.admin_client import AdminClient, NewTopic  # noqa: E402
from kafpy.client.kafka_client import KafkaClient  # noqa: E402
from kafpy.client.producer import BatchProducer  # noqa: E402
from kafpy.common.errors import TopicExistsError  # noqa: E402

EVENTS = "events"
COUNTS = "event-counts"
USERS = ["alice", "bob", "carol", "dave", "erin"]
ACTIONS = ["view", "click", "buy"]


async def produce_events(bootstrap: str, count: int) -> None:
    async with AdminClient.connect(bootstrap) as admin:
        for topic, partitions in ((EVENTS, 3), (COUNTS, 1)):
            try:
                await admin.create_topics([NewTopic(topic, partitions, 1)])
            except TopicExistsError:
                pass
    now = int(time.time() * 1000)
    records = []
    for i in range(count):
        user = random.choice(USERS)
        # mostly in order over the last 5 minutes; every 10th event is a minute late
        ts = now - 300_000 + i * 300_000 // max(count, 1) - (60_000 if i % 10 == 9 else 0)
        event = {"user": user, "action": random.choice(ACTIONS), "ts": ts}
        records.append((user.encode(), json.dumps(event).encode()))
    async with KafkaClient(bootstrap) as client:
        await BatchProducer(client, acks=-1).send(EVENTS, records)
    print(f"produced {count} events to '{EVENTS}'")


def run_pipeline(bootstrap: str, checkpoint: str, follow: bool, stop_spark: bool = True) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from kafpy.spark.data_source import KafpyDataSource

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("kafpy-spark-pipeline")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    spark.dataSource.register(KafpyDataSource)  # not needed once kafpy is pip-installed

    schema = "user string, action string, ts long"
    events = (
        spark.readStream.format("kafpy")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", EVENTS)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "5000")
        .option("commitOffsetsToGroup", "spark-pipeline")
        .load()
        .select(F.from_json(F.col("value").cast("string"), schema).alias("e"))
        .select("e.user", "e.action", F.timestamp_millis("e.ts").alias("event_time"))
    )
    counts = (
        events.withWatermark("event_time", "2 minutes")
        .groupBy(F.window("event_time", "1 minute"), "user")
        .count()
        .select(
            F.col("user").alias("key"),
            F.to_json(
                F.struct(
                    F.col("window.start").alias("window_start"),
                    F.col("window.end").alias("window_end"),
                    "user",
                    "count",
                )
            ).alias("value"),
        )
    )
    writer = (
        counts.writeStream.format("kafpy")
        .outputMode("append")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", COUNTS)
        .option("checkpointLocation", checkpoint)
    )
    if follow:
        query = writer.trigger(processingTime="5 seconds").start()
        print("streaming; Ctrl-C to stop")
        try:
            query.awaitTermination()
        except KeyboardInterrupt:
            query.stop()
    else:
        query = writer.trigger(availableNow=True).start()
        query.awaitTermination()
        if query.exception() is not None:
            raise SystemExit(f"the streaming query failed: {query.exception()}")

    results = (
        spark.read.format("kafpy")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", COUNTS)
        .load()
        .select(
            "offset",
            F.from_json(
                F.col("value").cast("string"),
                "window_start timestamp, window_end timestamp, user string, count long",
            ).alias("c"),
        )
        .select("offset", "c.*")
    )
    print(f"count per user and 1-minute window, from '{COUNTS}':")
    results.orderBy("window_start", "user").show(100, truncate=False)
    if stop_spark:
        spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument(
        "--checkpoint", default=os.path.join(tempfile.gettempdir(), "kafpy-spark-pipeline")
    )
    parser.add_argument("--follow", action="store_true", help="keep the query running")
    args = parser.parse_args()
    asyncio.run(produce_events(args.bootstrap, args.events))
    run_pipeline(args.bootstrap, args.checkpoint, args.follow)


if __name__ == "__main__":
    main()
