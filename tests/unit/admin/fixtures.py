"""Helpers for admin tests: an in-memory metadata store with registered brokers, and a
one-broker FakeBroker cluster answering the admin APIs."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from kafpy.client.admin_client import AdminClient
from kafpy.metadata.embedded_store import EmbeddedStore
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import Broker, BrokerInfo, EndPoint
from kafpy.protocol.api_keys import ApiKey
from tests.unit.client.fake_broker import FakeBroker, no_sleep


def broker_info(broker_id: int, rack: str | None = None) -> BrokerInfo:
    endpoint = EndPoint("localhost", 9092 + broker_id, "PLAINTEXT", "PLAINTEXT")
    return BrokerInfo(Broker(broker_id, (endpoint,), rack), 4, -1, 1600000000000)


async def register_brokers(
    zk: KafkaZkClient, ids: Iterable[int], racks: dict[int, str] | None = None
) -> None:
    for broker_id in ids:
        await zk.register_broker(broker_info(broker_id, (racks or {}).get(broker_id)))


def run_with_zk(body: Callable[[KafkaZkClient], Awaitable[None]]) -> None:
    """Run `body` on a fresh in-memory store (closed afterwards)."""

    async def main() -> None:
        store = EmbeddedStore(None)
        await store.start()
        try:
            zk = KafkaZkClient(store)
            await zk.make_sure_persistent_paths_exist()
            await body(zk)
        finally:
            await store.close()

    asyncio.run(main())


class AdminBroker:
    """A one-broker cluster (id 0, the controller) keeping topics in memory."""

    DEFAULT_CONFIGS = {"min.insync.replicas": "1", "segment.ms": "604800000"}

    def __init__(self) -> None:
        self.broker = FakeBroker(node_id=0)
        self.assignments: dict[str, dict[int, list[int]]] = {}
        self.isr: dict[tuple[str, int], list[int]] = {}
        self.configs: dict[str, dict[str, str]] = {}
        self.leaderless: set[tuple[str, int]] = set()
        self.create_requests: list[dict[str, Any]] = []

    async def __aenter__(self) -> AdminClient:
        await self.broker.start()
        h = self.broker.handlers
        h[ApiKey.METADATA] = self.metadata
        h[ApiKey.CREATE_TOPICS] = self.create_topics
        h[ApiKey.DELETE_TOPICS] = self.delete_topics
        h[ApiKey.CREATE_PARTITIONS] = self.create_partitions
        h[ApiKey.DESCRIBE_CONFIGS] = self.describe_configs
        h[ApiKey.INCREMENTAL_ALTER_CONFIGS] = self.alter_configs
        self.admin = AdminClient.connect(self.broker.address, sleep=no_sleep, retries=1)
        return await self.admin.__aenter__()

    async def __aexit__(self, *exc: object) -> None:
        await self.admin.close()
        await self.broker.stop()

    def metadata(self, header: Any, body: dict[str, Any]) -> dict[str, Any]:
        names = (
            sorted(self.assignments)
            if body["topics"] is None
            else [t["name"] for t in body["topics"]]
        )
        topics = []
        for name in names:
            if name not in self.assignments:
                topics.append({"error_code": 3, "name": name, "partitions": []})
                continue
            partitions = []
            for p, replicas in sorted(self.assignments[name].items()):
                partitions.append(
                    {
                        "error_code": 0,
                        "partition_index": p,
                        "leader_id": -1 if (name, p) in self.leaderless else replicas[0],
                        "replica_nodes": replicas,
                        "isr_nodes": self.isr.get((name, p), replicas),
                    }
                )
            topics.append(
                {
                    "error_code": 0,
                    "name": name,
                    "is_internal": name.startswith("__"),
                    "partitions": partitions,
                }
            )
        return {
            "brokers": [{"node_id": 0, "host": "127.0.0.1", "port": self.broker.port}],
            "controller_id": 0,
            "topics": topics,
        }

    def create_topics(self, header: Any, body: dict[str, Any]) -> dict[str, Any]:
        results = []
        for t in body["topics"]:
            name = t["name"]
            self.create_requests.append(t)
            if name in self.assignments:
                results.append(
                    {
                        "name": name,
                        "error_code": 36,
                        "error_message": f"Topic '{name}' already exists.",
                    }
                )
                continue
            if t["assignments"]:
                assignment = {a["partition_index"]: a["broker_ids"] for a in t["assignments"]}
            else:
                # -1: the broker's num.partitions (2 here) and default.replication.factor (1)
                count = 2 if t["num_partitions"] == -1 else t["num_partitions"]
                rf = 1 if t["replication_factor"] == -1 else t["replication_factor"]
                assignment = {p: [0] * rf for p in range(count)}
            self.assignments[name] = assignment
            self.configs[name] = {c["name"]: c["value"] for c in t["configs"]}
            results.append({"name": name, "error_code": 0, "error_message": None})
        return {"topics": results}

    def delete_topics(self, header: Any, body: dict[str, Any]) -> dict[str, Any]:
        # v6+ names the topics in `topics` (name and id), older versions in `topic_names`
        names = [t["name"] for t in body.get("topics") or ()] or body.get("topic_names") or []
        for name in names:
            self.assignments.pop(name, None)
        return {"responses": [{"name": n, "error_code": 0} for n in names]}

    def create_partitions(self, header: Any, body: dict[str, Any]) -> dict[str, Any]:
        t = body["topics"][0]
        current = self.assignments[t["name"]]
        added = t["assignments"] or [{"broker_ids": [0]}] * (t["count"] - len(current))
        for a in added:
            current[len(current)] = a["broker_ids"]
        return {"results": [{"name": t["name"], "error_code": 0, "error_message": None}]}

    def describe_configs(self, header: Any, body: dict[str, Any]) -> dict[str, Any]:
        results = []
        for r in body["resources"]:
            overrides = self.configs.get(r["resource_name"], {})
            configs = [
                {"name": k, "value": v, "read_only": False, "config_source": 1}
                for k, v in overrides.items()
            ] + [
                {"name": k, "value": v, "read_only": False, "config_source": 5}
                for k, v in self.DEFAULT_CONFIGS.items()
                if k not in overrides
            ]
            results.append(
                {
                    "error_code": 0,
                    "error_message": None,
                    "resource_type": 2,
                    "resource_name": r["resource_name"],
                    "configs": [{**c, "is_sensitive": False} for c in configs],
                }
            )
        return {"results": results}

    def alter_configs(self, header: Any, body: dict[str, Any]) -> dict[str, Any]:
        r = body["resources"][0]
        configs = self.configs.setdefault(r["resource_name"], {})
        for c in r["configs"]:
            if c["config_operation"] == 0:
                configs[c["name"]] = c["value"]
            else:
                configs.pop(c["name"], None)
        return {
            "responses": [
                {
                    "error_code": 0,
                    "error_message": None,
                    "resource_type": 2,
                    "resource_name": r["resource_name"],
                }
            ]
        }
