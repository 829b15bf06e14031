"""Controller benchmark: create 1,000 partitions with RF 3 on 3 brokers, then delete them.

Run: `python bench/controller_bench.py [--partitions 1000] [--topics 1] [--rf 3]
[--brokers 3] [--dir DIR] [--no-fsync] [--keep]`

Starts a real ZooKeeper (in this process, through ZooKeeperServer) and the brokers as
`kafpy server` processes (kafpy.tools.local_cluster), then times:
- creation: from the CreateTopics request until every partition has a leader and its full
  ISR in the Metadata of every broker (the request returning is shown on the way);
- deletion: from the DeleteTopics request until the topics' znodes are gone, every broker
  answers UNKNOWN_TOPIC_OR_PARTITION, and every log directory (renamed `-delete`) is gone
  from disk. Logs are removed by kafka-delete-logs, which first runs 30 s after a broker
  starts (Kafka's InitialTaskDelayMs): the deletion starts only once the brokers are that
  old, so the figure measures deletion and not that constant. log.segment.delete.delay.ms
  is 0.
Progress goes to stderr, the figures to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kafpy.client.admin_client import AdminClient, NewTopic  # noqa: E402
from kafpy.client.connection import BrokerConnection  # noqa: E402
from kafpy.metadata.kafka_zk_client import KafkaZkClient  # noqa: E402
from kafpy.metadata.zookeeper_server import ZooKeeperServer  # noqa: E402
from kafpy.protocol.api_keys import ApiKey  # noqa: E402
from kafpy.storage.log_manager import INITIAL_TASK_DELAY_MS  # noqa: E402
from kafpy.tools.local_cluster import BrokerProcess, LocalCluster  # noqa: E402

UNKNOWN_TOPIC_OR_PARTITION = 3
POLL_S = 0.1
TIMEOUT_S = 600.0


def progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


async def fetch_metadata(broker: BrokerProcess, topics: list[str]) -> dict[str, Any]:
    conn = BrokerConnection(broker.host, broker.port, request_timeout_ms=60000)
    await conn.connect()
    try:
        return await conn.send(
            ApiKey.METADATA,
            {"topics": [{"name": t} for t in topics], "allow_auto_topic_creation": False},
        )
    finally:
        await conn.close()


def count_online(body: dict[str, Any], rf: int) -> int:
    """Partitions with a leader and a full ISR in one Metadata response."""
    return sum(
        1
        for t in body["topics"]
        if t["error_code"] == 0
        for p in t["partitions"]
        if p["leader_id"] >= 0 and len(p["isr_nodes"]) == rf
    )


def count_dirs(cluster: LocalCluster, topics: list[str]) -> tuple[int, int]:
    """(live log dirs, `-delete` dirs) of the topics, over all brokers."""
    live = renamed = 0
    prefixes = tuple(f"{t}-" for t in topics)
    for b in cluster.brokers.values():
        for d in b.data_dir.iterdir():
            if d.name.startswith(prefixes):
                if d.name.endswith("-delete"):
                    renamed += 1
                else:
                    live += 1
    return live, renamed


async def poll(
    what: str, check: Callable[[], Any], report: Callable[[Any], str], started: float
) -> float:
    """Poll the async `check` until it returns (done, state); report progress each second."""
    last_report = 0.0
    while True:
        done, state = await check()
        now = time.perf_counter()
        if done:
            progress(f"  {now - started:7.2f} s  {what}: {report(state)}")
            return now - started
        if now - last_report >= 1.0:
            progress(f"  {now - started:7.2f} s  {report(state)}")
            last_report = now
        if now - started > TIMEOUT_S:
            raise SystemExit(f"Gave up after {TIMEOUT_S:.0f} s waiting for {what}: {report(state)}")
        await asyncio.sleep(POLL_S)


async def bench_create(cluster: LocalCluster, topics: list[str], per_topic: int, rf: int) -> float:
    total = per_topic * len(topics)
    progress(f"Creating {len(topics)} topic(s), {total} partitions, RF {rf}")
    brokers = list(cluster.brokers.values())

    async def check() -> tuple[bool, list[int]]:
        counts = [count_online(await fetch_metadata(b, topics), rf) for b in brokers]
        return all(c == total for c in counts), counts

    async with AdminClient.connect(cluster.bootstrap_servers, request_timeout_ms=600000) as admin:
        started = time.perf_counter()
        await admin.create_topics(
            [NewTopic(t, per_topic, rf) for t in topics], timeout_ms=int(TIMEOUT_S * 1000)
        )
        progress(f"  {time.perf_counter() - started:7.2f} s  CreateTopics returned")
        return await poll(
            "every partition online in every broker's Metadata",
            check,
            lambda counts: "online per broker " + "/".join(map(str, counts)) + f" of {total}",
            started,
        )


async def bench_delete(cluster: LocalCluster, topics: list[str]) -> tuple[float, float]:
    progress(f"Deleting {len(topics)} topic(s)")
    brokers = list(cluster.brokers.values())
    store_zk = cluster.zookeeper.connect

    from kafpy.metadata.store_factory import create_store

    store = create_store(store_zk, None, 30000)
    await store.start()
    zk = KafkaZkClient(store)
    try:

        async def gone() -> tuple[bool, tuple[int, int, int]]:
            left_znodes = sum([await zk.topic_exists(t) for t in topics])
            known = 0
            for b in brokers:
                body = await fetch_metadata(b, topics)
                known += sum(
                    1 for t in body["topics"] if t["error_code"] != UNKNOWN_TOPIC_OR_PARTITION
                )
            live, renamed = count_dirs(cluster, topics)
            return left_znodes == 0 and known == 0, (left_znodes, known, live + renamed)

        async def files_gone() -> tuple[bool, tuple[int, int]]:
            live, renamed = count_dirs(cluster, topics)
            return live + renamed == 0, (live, renamed)

        async with AdminClient.connect(
            cluster.bootstrap_servers, request_timeout_ms=600000
        ) as admin:
            started = time.perf_counter()
            await admin.delete_topics(topics, timeout_ms=int(TIMEOUT_S * 1000))
            progress(f"  {time.perf_counter() - started:7.2f} s  DeleteTopics returned")
        deleted = await poll(
            "topics gone from ZooKeeper and every broker's Metadata",
            gone,
            lambda s: (
                f"{s[0]} topic znodes, {s[1]} broker answers still knowing a topic, "
                f"{s[2]} log dirs left"
            ),
            started,
        )
        files = await poll(
            "every log directory removed",
            files_gone,
            lambda s: f"{s[0]} live and {s[1]} -delete log dirs left",
            started,
        )
        return deleted, files
    finally:
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1000, help="partitions in all")
    parser.add_argument("--topics", type=int, default=1, help="topics to spread them over")
    parser.add_argument("--rf", type=int, default=3, help="replication factor")
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument(
        "--dir", type=Path, default=None, help="working directory (default: temporary)"
    )
    parser.add_argument("--no-fsync", action="store_true", help="ZooKeeper without fsync")
    parser.add_argument("--keep", action="store_true", help="keep the working directory")
    args = parser.parse_args()
    if args.partitions % args.topics:
        raise SystemExit("--partitions must be a multiple of --topics")

    base = args.dir or Path(tempfile.mkdtemp(prefix="kafpy-controller-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    zookeeper = ZooKeeperServer(base / "zookeeper", tick_time_ms=500, force_sync=not args.no_fsync)
    cluster: LocalCluster | None = None
    try:
        progress(f"Starting ZooKeeper and {args.brokers} brokers in {base}")
        zookeeper.start()
        cluster = LocalCluster(
            base / "cluster",
            args.brokers,
            zookeeper_connect=zookeeper.connect_string,
            overrides={"log.segment.delete.delay.ms": "0"},
        )
        cluster.start(lambda m: progress(f"  {m}"))
        brokers_started = time.monotonic()

        per_topic = args.partitions // args.topics
        topics = [f"bench-{i}" for i in range(args.topics)]
        create_s = asyncio.run(bench_create(cluster, topics, per_topic, args.rf))

        wait_s = INITIAL_TASK_DELAY_MS / 1000 + 1 - (time.monotonic() - brokers_started)
        if wait_s > 0:
            progress(f"Waiting {wait_s:.0f} s for kafka-delete-logs' first run on every broker")
            time.sleep(wait_s)
        deleted_s, files_s = asyncio.run(bench_delete(cluster, topics))

        print(
            f"create {args.partitions} partitions (RF {args.rf}, {args.topics} topic(s), "
            f"{args.brokers} brokers) until all online: {create_s:.2f} s"
        )
        print(f"delete them until gone from ZooKeeper and Metadata: {deleted_s:.2f} s")
        print(f"delete them until every file is gone: {files_s:.2f} s")
    finally:
        if cluster is not None:
            cluster.stop(timeout_s=60)
        zookeeper.stop()
        if args.dir is None and not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
