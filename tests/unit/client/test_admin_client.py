"""AdminClient against FakeBrokers: request bodies, typed results, errors with the broker's
message, NOT_CONTROLLER followed, config alteration with and without the incremental API."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kafpy.client.admin_client import (
    AdminClient,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)
from kafpy.common.errors import (
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    KafkaError,
    TopicDeletionDisabledError,
    TopicExistsError,
    UnknownTopicOrPartitionError,
)
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.config_resource import ConfigSource
from tests.unit.client.fake_broker import FakeBroker, metadata_body, no_sleep


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 30))


class Admin:
    """Brokers 0 and 1; broker 1 is the controller unless told otherwise."""

    def __init__(self) -> None:
        self.b0 = FakeBroker(node_id=0)
        self.b1 = FakeBroker(node_id=1)
        self.controller = 1
        self.topics: dict[str, dict[int, int]] = {"a": {0: 0}, "__consumer_offsets": {0: 1}}

    async def __aenter__(self) -> AdminClient:
        for b in (self.b0, self.b1):
            await b.start()
            b.handlers[ApiKey.METADATA] = self.metadata
        self.admin = AdminClient.connect(self.b0.address, sleep=no_sleep, retries=2)
        return await self.admin.__aenter__()

    async def __aexit__(self, *exc: object) -> None:
        await self.admin.close()
        for b in (self.b0, self.b1):
            await b.stop()

    def metadata(self, header: Any, body: dict[str, Any]) -> dict[str, Any]:
        wanted = None if body["topics"] is None else [t["name"] for t in body["topics"]]
        known = {n: ls for n, ls in self.topics.items() if wanted is None or n in wanted}
        missing = {n: 3 for n in wanted or () if n not in self.topics}
        answer = metadata_body(
            [self.b0, self.b1], controller_id=self.controller, topics=known, topic_errors=missing
        )
        for t in answer["topics"]:
            t["is_internal"] = t["name"].startswith("__")
        return answer


def test_list_and_describe_topics() -> None:
    async def scenario() -> None:
        env = Admin()
        async with env as admin:
            assert await admin.list_topics() == ["__consumer_offsets", "a"]
            assert await admin.list_topics(include_internal=False) == ["a"]
            described = await admin.describe_topics(["a"])
            assert described["a"].partitions[0].leader == 0
            with pytest.raises(UnknownTopicOrPartitionError, match="Topic 'zz' does not exist"):
                await admin.describe_topics(["zz"])
            brokers, controller = await admin.describe_cluster()
            assert [b.node_id for b in brokers] == [0, 1] and controller == 1

    run(scenario())


def test_create_topics_sends_kafkas_fields_and_raises_the_broker_message() -> None:
    async def scenario() -> None:
        env = Admin()
        async with env as admin:
            answers = iter(
                [
                    [{"name": "x", "error_code": 0, "error_message": None}],
                    [{"name": "x", "error_code": 36, "error_message": "Topic 'x' already exists."}],
                    [{"name": "y", "error_code": 38, "error_message": None}],
                ]
            )
            env.b1.handlers[ApiKey.CREATE_TOPICS] = lambda h, b: {"topics": next(answers)}
            await admin.create_topics(
                [NewTopic("x", 3, 1, configs={"retention.ms": "1000"})], timeout_ms=5000
            )
            body = env.b1.requests_of(ApiKey.CREATE_TOPICS)[0].body
            assert body["timeout_ms"] == 5000 and body["validate_only"] is False
            [topic] = body["topics"]
            assert (topic["name"], topic["num_partitions"], topic["replication_factor"]) == (
                "x",
                3,
                1,
            )
            assert topic["configs"] == [{"name": "retention.ms", "value": "1000"}]
            with pytest.raises(TopicExistsError) as info:
                await admin.create_topics([NewTopic("x", replica_assignment={0: [1, 0]})])
            assert str(info.value) == "Topic 'x' already exists."
            sent = env.b1.requests_of(ApiKey.CREATE_TOPICS)[1].body["topics"][0]
            assert (sent["num_partitions"], sent["replication_factor"]) == (-1, -1)
            assert sent["assignments"] == [{"partition_index": 0, "broker_ids": [1, 0]}]
            with pytest.raises(InvalidReplicationFactorError, match="Creating topic y: "):
                await admin.create_topics([NewTopic("y", 1, 5)])
            assert env.b0.requests_of(ApiKey.CREATE_TOPICS) == []  # broker 0 is no controller

    run(scenario())


def test_admin_requests_follow_the_controller() -> None:
    async def scenario() -> None:
        env = Admin()
        async with env as admin:

            def moved(header: Any, body: Any) -> dict[str, Any]:
                env.controller = 0
                return {"responses": [{"name": "a", "error_code": 41}]}

            env.b1.handlers[ApiKey.DELETE_TOPICS] = moved
            env.b0.handlers[ApiKey.DELETE_TOPICS] = lambda h, b: {
                "responses": [{"name": "a", "error_code": 0}]
            }
            await admin.delete_topics(["a"])
            sent = env.b0.requests_of(ApiKey.DELETE_TOPICS)[0].body
            assert [t["name"] for t in sent["topics"]] == ["a"]  # v6: by name in topics
            env.b0.handlers[ApiKey.DELETE_TOPICS] = lambda h, b: {
                "responses": [{"name": "a", "error_code": 73}]
            }
            with pytest.raises(TopicDeletionDisabledError, match="Deleting topic a"):
                await admin.delete_topics(["a"])

    run(scenario())


def test_create_partitions() -> None:
    async def scenario() -> None:
        env = Admin()
        async with env as admin:
            env.b1.handlers[ApiKey.CREATE_PARTITIONS] = lambda h, b: {
                "results": [
                    {
                        "name": t["name"],
                        "error_code": 0 if t["count"] > 1 else 37,
                        "error_message": None
                        if t["count"] > 1
                        else "Topic already has 1 partitions.",
                    }
                    for t in b["topics"]
                ]
            }
            await admin.create_partitions({"a": 3}, {"a": [[0], [1]]})
            sent = env.b1.requests_of(ApiKey.CREATE_PARTITIONS)[0].body["topics"][0]
            assert sent["count"] == 3
            assert sent["assignments"] == [{"broker_ids": [0]}, {"broker_ids": [1]}]
            await admin.create_partitions({"a": 2})
            assert (
                env.b1.requests_of(ApiKey.CREATE_PARTITIONS)[1].body["topics"][0]["assignments"]
                is None
            )
            with pytest.raises(InvalidPartitionsError, match="already has 1 partitions"):
                await admin.create_partitions({"a": 1})

    run(scenario())


def describe_answer(header: Any, body: dict[str, Any]) -> dict[str, Any]:
    results = []
    for r in body["resources"]:
        if r["resource_name"] == "missing":
            results.append(
                {
                    "error_code": 3,
                    "error_message": "Topic missing does not exist.",
                    "resource_type": 2,
                    "resource_name": "missing",
                    "configs": [],
                }
            )
            continue
        results.append(
            {
                "error_code": 0,
                "error_message": None,
                "resource_type": r["resource_type"],
                "resource_name": r["resource_name"],
                "configs": [
                    {
                        "name": "retention.ms",
                        "value": "1000",
                        "read_only": False,
                        "config_source": 1,
                        "is_default": False,
                        "is_sensitive": False,
                    },
                    {
                        "name": "segment.bytes",
                        "value": "1073741824",
                        "read_only": False,
                        "config_source": 5,
                        "is_default": True,
                        "is_sensitive": False,
                    },
                    {
                        "name": "cleanup.policy",
                        "value": "compact",
                        "read_only": False,
                        "config_source": 1,
                        "is_default": False,
                        "is_sensitive": False,
                    },
                ],
            }
        )
    return {"results": results}


def test_describe_configs() -> None:
    async def scenario() -> None:
        env = Admin()
        async with env as admin:
            env.b1.handlers[ApiKey.DESCRIBE_CONFIGS] = describe_answer
            env.b0.handlers[ApiKey.DESCRIBE_CONFIGS] = describe_answer
            topic = ConfigResource.topic("a")
            configs = await admin.describe_configs([topic])
            assert configs[topic][0] == ConfigEntry(
                "retention.ms", "1000", ConfigSource.DYNAMIC_TOPIC_CONFIG
            )
            assert configs[topic][1].is_default
            assert await admin.describe_topic_overrides("a") == {
                "retention.ms": "1000",
                "cleanup.policy": "compact",
            }
            sent = env.b1.requests_of(ApiKey.DESCRIBE_CONFIGS)[0].body["resources"]
            assert sent == [{"resource_type": 2, "resource_name": "a", "configuration_keys": None}]
            broker = ConfigResource.broker(0)
            await admin.describe_configs([broker], keys=["log.retention.hours"])
            sent = env.b0.requests_of(ApiKey.DESCRIBE_CONFIGS)[0].body["resources"]
            assert sent[0]["configuration_keys"] == ["log.retention.hours"]
            with pytest.raises(UnknownTopicOrPartitionError, match="Topic missing does not exist."):
                await admin.describe_configs([ConfigResource.topic("missing")])

    run(scenario())


def alter_answer(header: Any, body: dict[str, Any]) -> dict[str, Any]:
    r = body["resources"][0]
    bad = any(c["name"] == "bad.config" for c in r["configs"])
    return {
        "responses": [
            {
                "error_code": 40 if bad else 0,
                "error_message": "Unknown topic config name: bad.config" if bad else None,
                "resource_type": r["resource_type"],
                "resource_name": r["resource_name"],
            }
        ]
    }


def test_alter_configs_incrementally() -> None:
    async def scenario() -> None:
        env = Admin()
        async with env as admin:
            env.b1.handlers[ApiKey.INCREMENTAL_ALTER_CONFIGS] = alter_answer
            await admin.alter_configs(
                ConfigResource.topic("a"), {"retention.ms": "5"}, ["cleanup.policy"]
            )
            sent = env.b1.requests_of(ApiKey.INCREMENTAL_ALTER_CONFIGS)[0].body["resources"][0]
            assert sent["configs"] == [
                {"name": "retention.ms", "config_operation": 0, "value": "5"},
                {"name": "cleanup.policy", "config_operation": 1, "value": None},
            ]
            with pytest.raises(KafkaError, match="Unknown topic config name: bad.config") as info:
                await admin.alter_configs(ConfigResource.topic("a"), {"bad.config": "1"})
            assert info.value.code == 40

    run(scenario())


def test_alter_configs_without_the_incremental_api_merges_the_overrides() -> None:
    async def scenario() -> None:
        env = Admin()
        del env.b1.versions[int(ApiKey.INCREMENTAL_ALTER_CONFIGS)]
        async with env as admin:
            env.b1.handlers[ApiKey.DESCRIBE_CONFIGS] = describe_answer
            env.b1.handlers[ApiKey.ALTER_CONFIGS] = alter_answer
            await admin.alter_configs(
                ConfigResource.topic("a"),
                {"retention.ms": "5", "max.message.bytes": "9"},
                ["cleanup.policy"],
            )
            sent = env.b1.requests_of(ApiKey.ALTER_CONFIGS)[0].body["resources"][0]["configs"]
            assert sent == [
                {"name": "retention.ms", "value": "5"},
                {"name": "max.message.bytes", "value": "9"},
            ]

    run(scenario())


def log_dirs_answer(header: Any, body: dict[str, Any]) -> dict[str, Any]:
    assert body["topics"] is None
    return {
        "results": [
            {
                "error_code": 0,
                "log_dir": "/data/a",
                "topics": [
                    {
                        "name": "a",
                        "partitions": [
                            {
                                "partition_index": 0,
                                "partition_size": 1234,
                                "offset_lag": 0,
                                "is_future_key": False,
                            },
                            {
                                "partition_index": 1,
                                "partition_size": 10,
                                "offset_lag": 2,
                                "is_future_key": True,
                            },
                        ],
                    }
                ],
            },
            {"error_code": 56, "log_dir": "/data/b", "topics": []},
        ]
    }


def test_describe_log_dirs() -> None:
    from kafpy.client.admin_client import LogDirDescription, ReplicaInfo
    from kafpy.common.errors import KafkaStorageError, UnsupportedVersionError
    from kafpy.common.topic_partition import TopicPartition

    async def scenario() -> None:
        env = Admin()
        env.b0.versions[int(ApiKey.DESCRIBE_LOG_DIRS)] = (0, 2)  # as Kafka 2.8 serves it
        env.b1.versions.pop(int(ApiKey.DESCRIBE_LOG_DIRS), None)  # an older broker
        async with env as admin:
            env.b0.handlers[ApiKey.DESCRIBE_LOG_DIRS] = log_dirs_answer
            [healthy, offline] = (await admin.describe_log_dirs([0]))[0]
            assert healthy == LogDirDescription(
                "/data/a",
                None,
                {
                    TopicPartition("a", 0): ReplicaInfo(1234, 0, False),
                    TopicPartition("a", 1): ReplicaInfo(10, 2, True),
                },
            )
            assert env.b0.requests_of(ApiKey.DESCRIBE_LOG_DIRS)[0].header.api_version == 2
            assert offline.path == "/data/b"
            assert isinstance(offline.error, KafkaStorageError)
            with pytest.raises(
                UnsupportedVersionError, match="Broker 1 does not serve DescribeLogDirs"
            ):
                await admin.describe_log_dirs([1])

    run(scenario())
