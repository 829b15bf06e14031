"""Helpers for the tests of the admin APIs (AdminManager, ConfigHelper) on the embedded
store: a stand-in metadata cache, request bodies, error codes as Kafka numbers them."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.server.admin_manager import AdminManager
from kafpy.server.kafka_config import KafkaConfig
from tests.unit.admin.fixtures import register_brokers, run_with_zk

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
REQUEST_TIMED_OUT = 7
INVALID_TOPIC_EXCEPTION = 17
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_REPLICA_ASSIGNMENT = 39
INVALID_CONFIG = 40
NOT_CONTROLLER = 41
INVALID_REQUEST = 42
POLICY_VIOLATION = 44
TOPIC_DELETION_DISABLED = 73
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
NO_CONFIG_RESOURCE_TYPE = 3  # ResourceType GROUP for ACLs; ConfigResource.Type has no 3


class Metadata:
    """A stand-in metadata cache: which partitions have leaders, which topics are known."""

    def __init__(self) -> None:
        self.online: dict[str, set[int]] = {}

    def partitions_online(self, topic: str, partitions: Collection[int]) -> bool:
        return set(partitions) <= self.online.get(topic, set())

    def contains(self, topic: str) -> bool:
        return topic in self.online


def config(**overrides: object) -> KafkaConfig:
    props: dict[str, object] = {"broker.id": "0", "log.dirs": "/tmp/kafpy-unused"}
    props.update(overrides)
    return KafkaConfig(props)


def run(
    body: Callable[[AdminManager, KafkaZkClient, Metadata], Awaitable[None]],
    brokers: Collection[int] = (0,),
    with_metadata: bool = True,
    **overrides: object,
) -> None:
    async def main(zk: KafkaZkClient) -> None:
        await register_brokers(zk, brokers)
        metadata = Metadata()
        hooks: dict[str, Any] = (
            {
                "partitions_online": metadata.partitions_online,
                "topic_exists_in_metadata": metadata.contains,
            }
            if with_metadata
            else {}
        )
        await body(AdminManager(config(**overrides), zk, **hooks), zk, metadata)

    run_with_zk(main)


def create_body(
    *topics: dict[str, Any], timeout_ms: int = 1000, validate_only: bool = False
) -> dict[str, Any]:
    return {"topics": list(topics), "timeout_ms": timeout_ms, "validate_only": validate_only}


def new_topic(
    name: str,
    partitions: int = -1,
    rf: int = -1,
    assignments: list[dict[str, Any]] | None = None,
    configs: dict[str, str | None] | None = None,
) -> dict[str, Any]:
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": rf,
        "assignments": assignments or [],
        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
    }


def errors(response: dict[str, Any], key: str = "topics") -> dict[str, int]:
    return {r["name"]: r["error_code"] for r in response[key]}


async def create_online(
    admin: AdminManager, metadata: Metadata, name: str, partitions: int = 1, **kw: Any
) -> None:
    metadata.online[name] = set(range(partitions))
    response = await admin.create_topics(create_body(new_topic(name, partitions, 1, **kw)), 4)
    assert errors(response) == {name: NONE}, response


def describe(
    resource_type: int, name: str, keys: list[str] | None = None, synonyms: bool = False
) -> dict[str, Any]:
    return {
        "resources": [
            {"resource_type": resource_type, "resource_name": name, "configuration_keys": keys}
        ],
        "include_synonyms": synonyms,
        "include_documentation": False,
    }


def alter(
    resource_type: int, name: str, configs: dict[str, str | None], validate_only: bool = False
) -> dict[str, Any]:
    return {
        "resources": [
            {
                "resource_type": resource_type,
                "resource_name": name,
                "configs": [{"name": k, "value": v} for k, v in configs.items()],
            }
        ],
        "validate_only": validate_only,
    }


async def notifications(zk: KafkaZkClient) -> list[str]:
    out = []
    for child in await zk.store.get_children_or_empty("/config/changes"):
        data, _ = await zk.store.get(f"/config/changes/{child}")
        out.append(json.loads(data)["entity_path"])
    return out


def incremental(
    name: str, *ops: tuple[str, int, str | None], resource_type: int = TOPIC
) -> dict[str, Any]:
    return {
        "resources": [
            {
                "resource_type": resource_type,
                "resource_name": name,
                "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in ops],
            }
        ],
        "validate_only": False,
    }
