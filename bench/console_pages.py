"""Web console benchmark: how long the console's pages take against a live broker.

Run: `python bench/console_pages.py [--topics 50] [--partitions 4] [--records 2000] [--runs 20]`

One in-process kafpy broker (kafpy.testing) with `--topics` topics of `--partitions`
partitions, `--records` records of about 200 bytes of JSON in the first topic, and a
consumer group with offsets committed on every partition of it; the console serves it on
a thread. Each page is fetched `--runs` times over HTTP (after one warm-up fetch); the
figures are the median and the worst time per page in ms, and the page's size in KB.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kafpy.client.consumer_group_admin import ConsumerGroupAdmin  # noqa: E402
from kafpy.client.kafka_client import KafkaClient  # noqa: E402
from kafpy.common.topic_partition import TopicPartition  # noqa: E402
from kafpy.testing import KafkaBroker  # noqa: E402
from tests.fixtures.console import ConsoleServer  # noqa: E402


def fetch(url: str) -> tuple[float, int]:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as r:
        body = r.read()
        if r.status != 200:
            raise SystemExit(f"{url}: HTTP {r.status}")
    return time.perf_counter() - start, len(body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=50)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()

    with KafkaBroker() as broker:
        print(f"creating {args.topics} topics of {args.partitions} partitions", file=sys.stderr)
        for i in range(args.topics):
            broker.create_topic(f"bench-{i}", partitions=args.partitions)
        values = [
            json.dumps({"id": i, "user": f"user-{i % 97}", "items": list(range(i % 20)),
                        "note": "x" * 80}).encode()
            for i in range(args.records)
        ]  # fmt: skip
        broker.produce("bench-0", values, partition=0)

        async def commit() -> None:
            async with KafkaClient(broker.bootstrap_servers) as client:
                offsets = {TopicPartition("bench-0", p): 1 for p in range(args.partitions)}
                await ConsumerGroupAdmin(client).alter_group_offsets("bench-group", offsets)

        asyncio.run(commit())
        console = ConsoleServer(broker.bootstrap_servers).start()
        try:
            pages = {
                "brokers": "/brokers",
                "topics": "/topics",
                "topic": "/topics/bench-0",
                "groups": "/groups",
                "group": "/groups/bench-group",
                "messages (latest 20)": "/topics/bench-0/partitions/0/messages",
                "messages (500 from offset 0)": "/topics/bench-0/partitions/0/messages?offset=0&limit=500",
                "api/topics": "/api/topics",
            }
            print(f"{'page':<30} {'median ms':>10} {'max ms':>8} {'KB':>7}")
            for name, path in pages.items():
                fetch(console.url + path)
                times = []
                size = 0
                for _ in range(args.runs):
                    elapsed, size = fetch(console.url + path)
                    times.append(elapsed * 1000)
                print(
                    f"{name:<30} {statistics.median(times):>10.1f} {max(times):>8.1f} "
                    f"{size / 1024:>7.1f}"
                )
        finally:
            console.stop()


if __name__ == "__main__":
    main()
