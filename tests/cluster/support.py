"""What the cluster tests share: ZooKeeper reads, Metadata queries, log dirs on disk, waits.

Tests are synchronous; the async kafpy client runs under asyncio.run per call. Waiting is
polling with a deadline (these tests watch real processes, so MockTime cannot help); a
deadline passing fails the test with what was last seen.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from kafpy.client.admin_client import AdminClient
from kafpy.client.connection import BrokerConnection
from kafpy.protocol.api_keys import ApiKey
from kafpy.tools.local_cluster import LocalCluster
from kafpy.tools.process_records import BrokerProcess

T = TypeVar("T")
# retry_on for the cluster tests' wait_until: any exception of the condition (a broker
# restarting, a node vanishing) means "not yet"
ANY_ERROR: tuple[type[BaseException], ...] = (Exception,)
UNKNOWN_TOPIC_OR_PARTITION = 3


def live_bootstrap(cluster: LocalCluster) -> str:
    return ",".join(b.address for b in cluster.brokers.values() if b.alive)


def admin(cluster: LocalCluster, op: Callable[[AdminClient], Awaitable[T]]) -> T:
    """Run `op` on an AdminClient connected to the cluster's live brokers."""

    async def go() -> T:
        async with AdminClient.connect(live_bootstrap(cluster), request_timeout_ms=30000) as a:
            return await op(a)

    return asyncio.run(go())


def metadata(broker: BrokerProcess, topics: list[str] | None) -> dict[str, Any]:
    """The Metadata response body of one broker (None: all topics)."""

    async def go() -> dict[str, Any]:
        conn = BrokerConnection(broker.host, broker.port, request_timeout_ms=10000)
        await conn.connect()
        try:
            request_topics = None if topics is None else [{"name": t} for t in topics]
            return await conn.send(
                ApiKey.METADATA, {"topics": request_topics, "allow_auto_topic_creation": False}
            )
        finally:
            await conn.close()

    return asyncio.run(go())


def topic_metadata(broker: BrokerProcess, topic: str) -> dict[str, Any]:
    """The topic's entry in the broker's Metadata response."""
    (entry,) = [t for t in metadata(broker, [topic])["topics"] if t["name"] == topic]
    return entry


def leaders_in_metadata(
    broker: BrokerProcess, topic: str
) -> dict[int, tuple[int, list[int], list[int]]]:
    """partition → (leader, replicas, isr) as the broker's Metadata tells it."""
    entry = topic_metadata(broker, topic)
    return {
        p["partition_index"]: (p["leader_id"], list(p["replica_nodes"]), list(p["isr_nodes"]))
        for p in entry["partitions"]
    }


# --- ZooKeeper ------------------------------------------------------------------------------


class Zk:
    """Reads of the cluster's ZooKeeper nodes (JSON decoded)."""

    def __init__(self, client: KazooClient) -> None:
        self.client = client

    def get_json(self, path: str) -> Any:
        try:
            data, _ = self.client.get(path)
        except NoNodeError:
            return None
        return json.loads(data) if data else None

    def exists(self, path: str) -> bool:
        return self.client.exists(path) is not None

    def children(self, path: str) -> list[str]:
        try:
            return sorted(self.client.get_children(path))
        except NoNodeError:
            return []

    def assignment(self, topic: str) -> dict[int, list[int]] | None:
        value = self.get_json(f"/brokers/topics/{topic}")
        return None if value is None else {int(p): r for p, r in value["partitions"].items()}

    def partition_state(self, topic: str, partition: int) -> dict[str, Any] | None:
        state: dict[str, Any] | None = self.get_json(
            f"/brokers/topics/{topic}/partitions/{partition}/state"
        )
        return state

    def controller(self) -> tuple[int | None, int | None]:
        """(controller broker id, controller epoch)."""
        controller = self.get_json("/controller")
        epoch = self.get_json("/controller_epoch")
        return (None if controller is None else controller["brokerid"], epoch)

    def create_json(self, path: str, value: Any) -> None:
        self.client.create(path, json.dumps(value).encode(), makepath=True)


@contextmanager
def zookeeper(cluster: LocalCluster) -> Iterator[Zk]:
    client = KazooClient(hosts=cluster.zookeeper.connect, timeout=10.0)
    client.start(timeout=30)
    try:
        yield Zk(client)
    finally:
        client.stop()
        client.close()


# --- logs on disk ---------------------------------------------------------------------------


def live_log_partitions(cluster: LocalCluster, topic: str) -> dict[int, set[int]]:
    """broker id → the partitions of `topic` with a (not deleted) log dir on that broker."""
    pattern = re.compile(rf"^{re.escape(topic)}-(\d+)$")
    result: dict[int, set[int]] = {}
    for b in cluster.brokers.values():
        found = {
            int(m.group(1))
            for d in b.data_dir.iterdir()
            if d.is_dir() and (m := pattern.match(d.name))
        }
        if found:
            result[b.broker_id] = found
    return result


def deleted_log_dirs(cluster: LocalCluster, topic: str) -> dict[int, list[str]]:
    """broker id → the `<topic>-<p>.<uuid>-delete` dirs still on that broker."""
    pattern = re.compile(rf"^{re.escape(topic)}-\d+\.[0-9a-f]+-delete$")
    result: dict[int, list[str]] = {}
    for b in cluster.brokers.values():
        found = sorted(d.name for d in b.data_dir.iterdir() if pattern.match(d.name))
        if found:
            result[b.broker_id] = found
    return result


def expected_placement(assignment: dict[int, list[int]]) -> dict[int, set[int]]:
    """broker id → partitions, from a partition → replicas assignment."""
    placement: dict[int, set[int]] = {}
    for partition, replicas in assignment.items():
        for r in replicas:
            placement.setdefault(r, set()).add(partition)
    return placement
