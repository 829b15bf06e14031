"""AdminManager on the embedded store: request bodies in, response bodies out, for every
admin API and its error cases."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Collection
from typing import Any

import pytest

from kafpy.common.errors import PolicyViolationError
from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import LeaderAndIsr, LeaderIsrAndControllerEpoch
from kafpy.server.admin_manager import AdminManager, ConfigSource, CreateTopicRequestMetadata
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
TOPIC, BROKER, BROKER_LOGGER, GROUP = 2, 4, 8, 3


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


# -- CreateTopics -------------------------------------------------------------------------------


def test_create_topic_with_broker_defaults() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        metadata.online["t"] = {0, 1, 2}
        response = await admin.create_topics(
            create_body(new_topic("t", configs={"retention.ms": "1000"})), 4
        )
        assert response == {
            "throttle_time_ms": 0,
            "topics": [{"name": "t", "error_code": NONE, "error_message": None}],
        }
        assignment, _ = await zk.get_topic_assignment_and_version("t")
        assert assignment == {
            0: [0],
            1: [0],
            2: [0],
        }  # num.partitions=3, default.replication.factor=1
        assert await zk.get_entity_configs("topics", "t") == {"retention.ms": "1000"}

    run(body, **{"num.partitions": "3"})


def test_create_topic_with_an_explicit_assignment() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        metadata.online["t"] = {0, 1}
        assignments = [
            {"partition_index": 0, "broker_ids": [1, 0]},
            {"partition_index": 1, "broker_ids": [0, 1]},
        ]
        response = await admin.create_topics(
            create_body(new_topic("t", assignments=assignments)), 3
        )
        assert errors(response) == {"t": NONE}
        assert (await zk.get_topic_assignment_and_version("t"))[0] == {0: [1, 0], 1: [0, 1]}

    run(body, brokers=(0, 1))


def test_validate_only_writes_nothing() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        response = await admin.create_topics(
            create_body(new_topic("t", 2, 1), validate_only=True), 1
        )
        assert errors(response) == {"t": NONE}
        assert not await zk.topic_exists("t")
        # v0 has no validate_only: the flag is ignored and the topic created
        metadata.online["u"] = {0}
        response = await admin.create_topics(
            create_body(new_topic("u", 1, 1), validate_only=True), 0
        )
        assert await zk.topic_exists("u")

    run(body)


@pytest.mark.parametrize(
    ("topic", "code", "message"),
    [
        (new_topic("t", 0, 1), INVALID_PARTITIONS, "partitions must be larger than 0"),
        (
            new_topic("t", 1, 0),
            INVALID_REPLICATION_FACTOR,
            "replication factor must be larger than 0",
        ),
        (
            new_topic("t", 1, 3),
            INVALID_REPLICATION_FACTOR,
            "replication factor: 3 larger than available brokers: 1",
        ),
        (
            new_topic("t", assignments=[{"partition_index": 0, "broker_ids": [0, 0]}]),
            INVALID_REPLICA_ASSIGNMENT,
            "Duplicate replica",
        ),
        (
            new_topic("t", assignments=[{"partition_index": 1, "broker_ids": [0]}]),
            INVALID_REPLICA_ASSIGNMENT,
            "consecutive 0-based",
        ),
        (
            new_topic(
                "t",
                assignments=[
                    {"partition_index": 0, "broker_ids": [0]},
                    {"partition_index": 1, "broker_ids": [0, 1]},
                ],
            ),
            INVALID_REPLICA_ASSIGNMENT,
            "same number of replicas",
        ),
        (
            new_topic("t", 2, -1, assignments=[{"partition_index": 0, "broker_ids": [0]}]),
            INVALID_REQUEST,
            "Both numPartitions or replicationFactor and replicasAssignments were set",
        ),
        (
            new_topic("t", configs={"no.such.config": "1"}),
            INVALID_CONFIG,
            "Unknown topic config name: no.such.config",
        ),
        (new_topic("t", configs={"retention.ms": "soon"}), INVALID_CONFIG, "retention.ms"),
        (
            new_topic("t", configs={"retention.ms": None}),
            INVALID_REQUEST,
            "Null value not supported for topic configs : retention.ms",
        ),
        (new_topic("bad name!"), INVALID_TOPIC_EXCEPTION, "illegal"),
        (new_topic("a_b"), INVALID_TOPIC_EXCEPTION, "collides with existing topics: a.b"),
        (new_topic("a.b"), TOPIC_ALREADY_EXISTS, "Topic 'a.b' already exists."),
    ],
)
def test_create_topic_errors(topic: dict[str, Any], code: int, message: str) -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        await create_online(admin, metadata, "a.b")
        response = await admin.create_topics(create_body(topic), 4)
        [result] = response["topics"]
        assert result["error_code"] == code, result
        assert message in result["error_message"]
        if topic["name"] != "a.b":
            assert not await zk.topic_exists(topic["name"])

    run(body)


def test_duplicate_topics_in_one_request_are_invalid() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        metadata.online["ok"] = {0}
        response = await admin.create_topics(
            create_body(new_topic("d", 1, 1), new_topic("ok", 1, 1), new_topic("d", 2, 1)), 4
        )
        assert [(r["name"], r["error_code"]) for r in response["topics"]] == [
            ("d", INVALID_REQUEST), ("ok", NONE), ("d", INVALID_REQUEST),
        ]  # fmt: skip
        assert not await zk.topic_exists("d")

    run(body)


def test_create_topic_policy_can_refuse() -> None:
    seen: list[CreateTopicRequestMetadata] = []

    def policy(request: CreateTopicRequestMetadata) -> None:
        seen.append(request)
        if request.num_partitions and request.num_partitions > 2:
            raise PolicyViolationError(f"Topic {request.topic} may have at most 2 partitions.")

    async def body(_admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        admin = AdminManager(
            config(), zk, partitions_online=metadata.partitions_online, create_topic_policy=policy
        )
        response = await admin.create_topics(create_body(new_topic("big", 3, 1)), 4)
        assert errors(response) == {"big": POLICY_VIOLATION}
        assert response["topics"][0]["error_message"] == "Topic big may have at most 2 partitions."
        assert seen == [CreateTopicRequestMetadata("big", 3, 1, None, {})]

    run(body)


def test_create_times_out_when_the_partitions_get_no_leaders() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        response = await admin.create_topics(create_body(new_topic("t", 1, 1), timeout_ms=20), 4)
        assert errors(response) == {"t": REQUEST_TIMED_OUT}
        assert "get leaders" in response["topics"][0]["error_message"]
        assert await zk.topic_exists("t")  # created all the same
        response = await admin.create_topics(create_body(new_topic("u", 1, 1), timeout_ms=0), 4)
        assert errors(response) == {"u": REQUEST_TIMED_OUT}
        assert await zk.topic_exists("u")

    run(body)


def test_a_metadata_update_completes_a_waiting_create() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        request = asyncio.ensure_future(
            admin.create_topics(create_body(new_topic("t", 2, 1), timeout_ms=60000), 4)
        )
        while not admin.has_delayed_topic_operations:
            await asyncio.sleep(0)
        metadata.online["t"] = {0, 1}  # the controller elected the leaders; UpdateMetadata arrived
        admin.try_complete_delayed_topic_operations("t")
        response = await asyncio.wait_for(request, 5)
        assert errors(response) == {"t": NONE}

    run(body)


def test_without_a_metadata_cache_the_partition_states_in_the_store_are_awaited() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, _: Metadata) -> None:
        request = asyncio.ensure_future(
            admin.create_topics(create_body(new_topic("t", 2, 1), timeout_ms=60000), 4)
        )
        while not await zk.topic_exists("t"):
            await asyncio.sleep(0)
        for p in (0, 1):
            state = LeaderIsrAndControllerEpoch(LeaderAndIsr(0, 0, (0,)), 1)
            await zk.create_topic_partition_state(TopicPartition("t", p), state)
        admin.try_complete_delayed_topic_operations("t")
        assert errors(await asyncio.wait_for(request, 5)) == {"t": NONE}

    run(body, with_metadata=False)


# -- DeleteTopics ---------------------------------------------------------------------------------


def test_delete_topics_marks_and_waits_for_the_deletion() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        await create_online(admin, metadata, "t")
        request = asyncio.ensure_future(
            admin.delete_topics({"topic_names": ["t", "nope"], "timeout_ms": 60000}, 3)
        )
        while not await zk.is_topic_marked_for_deletion("t"):
            await asyncio.sleep(0)
        del metadata.online["t"]  # the controller deleted it
        admin.try_complete_delayed_topic_operations("t")
        response = await asyncio.wait_for(request, 5)
        assert errors(response, "responses") == {"t": NONE, "nope": UNKNOWN_TOPIC_OR_PARTITION}

    run(body)


def test_delete_of_a_topic_already_marked_waits_too_and_times_out() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        await create_online(admin, metadata, "t")
        await zk.create_delete_topic_path("t")
        response = await admin.delete_topics({"topic_names": ["t"], "timeout_ms": 20}, 1)
        assert errors(response, "responses") == {"t": REQUEST_TIMED_OUT}
        assert "marked for deletion" in response["responses"][0]["error_message"]

    run(body)


@pytest.mark.parametrize(
    ("version", "code"), [(0, INVALID_REQUEST), (2, INVALID_REQUEST), (3, TOPIC_DELETION_DISABLED)]
)
def test_delete_when_deletion_is_disabled(version: int, code: int) -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        await create_online(admin, metadata, "t")
        response = await admin.delete_topics({"topic_names": ["t"], "timeout_ms": 1000}, version)
        assert errors(response, "responses") == {"t": code}
        assert "delete.topic.enable=true" in response["responses"][0]["error_message"]
        assert not await zk.is_topic_marked_for_deletion("t")

    run(body, **{"delete.topic.enable": "false"})


# -- CreatePartitions -------------------------------------------------------------------------------


def partitions_body(
    *topics: dict[str, Any], timeout_ms: int = 1000, validate_only: bool = False
) -> dict[str, Any]:
    return {"topics": list(topics), "timeout_ms": timeout_ms, "validate_only": validate_only}


def test_create_partitions_grows_the_topic() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        await create_online(admin, metadata, "t", 1)
        [first] = (await zk.get_topic_assignment_and_version("t"))[0].values()  # random broker
        metadata.online["t"] = {0, 1, 2}
        response = await admin.create_partitions(
            partitions_body(
                {"name": "t", "count": 3, "assignments": [{"broker_ids": [1]}, {"broker_ids": [0]}]}
            ),
            1,
        )
        assert response == {
            "throttle_time_ms": 0,
            "results": [{"name": "t", "error_code": NONE, "error_message": None}],
        }
        assert (await zk.get_topic_assignment_and_version("t"))[0] == {0: first, 1: [1], 2: [0]}
        # validate_only: checked, not written
        response = await admin.create_partitions(
            partitions_body({"name": "t", "count": 5, "assignments": None}, validate_only=True), 1
        )
        assert errors(response, "results") == {"t": NONE}
        assert len((await zk.get_topic_assignment_and_version("t"))[0]) == 3

    run(body, brokers=(0, 1))


@pytest.mark.parametrize(
    ("request_topic", "code", "message"),
    [
        (
            {"name": "t", "count": 1, "assignments": None},
            INVALID_PARTITIONS,
            "Topic currently has 2 partitions, which is higher than the requested 1.",
        ),
        (
            {"name": "t", "count": 2, "assignments": None},
            INVALID_PARTITIONS,
            "Topic already has 2 partitions.",
        ),
        (
            {"name": "nope", "count": 4, "assignments": None},
            UNKNOWN_TOPIC_OR_PARTITION,
            "The topic 'nope' does not exist.",
        ),
        (
            {"name": "t", "count": 3, "assignments": [{"broker_ids": [7]}]},
            INVALID_REPLICA_ASSIGNMENT,
            "Unknown broker(s) in replica assignment: 7.",
        ),
        (
            {"name": "t", "count": 4, "assignments": [{"broker_ids": [0]}]},
            INVALID_REPLICA_ASSIGNMENT,
            "Increasing the number of partitions by 2 but 1 assignments provided.",
        ),
    ],
)
def test_create_partitions_errors(request_topic: dict[str, Any], code: int, message: str) -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        await create_online(admin, metadata, "t", 2)
        response = await admin.create_partitions(partitions_body(request_topic), 1)
        [result] = response["results"]
        assert (result["error_code"], result["error_message"]) == (code, message)
        assert len((await zk.get_topic_assignment_and_version("t"))[0]) == 2

    run(body)


def test_create_partitions_of_duplicated_or_deleted_topics() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        await create_online(admin, metadata, "t")
        await create_online(admin, metadata, "gone")
        await zk.create_delete_topic_path("gone")
        response = await admin.create_partitions(
            partitions_body(
                {"name": "t", "count": 2, "assignments": None},
                {"name": "t", "count": 3, "assignments": None},
                {"name": "gone", "count": 2, "assignments": None},
            ),
            0,
        )
        assert [(r["name"], r["error_code"]) for r in response["results"]] == [
            ("t", INVALID_REQUEST), ("t", INVALID_REQUEST), ("gone", INVALID_TOPIC_EXCEPTION),
        ]  # fmt: skip
        assert response["results"][2]["error_message"] == "The topic 'gone' is queued for deletion."

    run(body)


# -- DescribeConfigs ---------------------------------------------------------------------------------


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


def by_name(response: dict[str, Any]) -> dict[str, dict[str, Any]]:
    [result] = response["results"]
    assert result["error_code"] == NONE, result
    return {c["name"]: c for c in result["configs"]}


def test_describe_topic_configs_sources_and_synonyms() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        await create_online(admin, metadata, "t", configs={"retention.ms": "1000"})
        configs = by_name(await admin.describe_configs(describe(TOPIC, "t", synonyms=True), 1))
        assert configs["retention.ms"] == {
            "name": "retention.ms",
            "value": "1000",
            "read_only": False,
            "is_default": False,
            "config_source": ConfigSource.DYNAMIC_TOPIC_CONFIG,
            "is_sensitive": False,
            "synonyms": [
                {
                    "name": "retention.ms",
                    "value": "1000",
                    "source": ConfigSource.DYNAMIC_TOPIC_CONFIG,
                },
                # Kafka's configSynonyms keeps the broker synonyms from log.retention.ms on:
                # the log.retention.hours default alone is dropped
            ],
            "config_type": 5,  # LONG
            "documentation": None,
        }
        # segment.bytes comes from server.properties (log.segment.bytes)
        segment = configs["segment.bytes"]
        assert (segment["value"], segment["config_source"], segment["is_default"]) == (
            "2048",
            ConfigSource.STATIC_BROKER_CONFIG,
            False,
        )
        assert segment["synonyms"][0] == {
            "name": "log.segment.bytes",
            "value": "2048",
            "source": ConfigSource.STATIC_BROKER_CONFIG,
        }
        cleanup = configs["cleanup.policy"]
        assert (cleanup["value"], cleanup["config_source"], cleanup["is_default"]) == (
            "delete",
            ConfigSource.DEFAULT_CONFIG,
            True,
        )
        assert configs["segment.ms"]["value"] == str(7 * 24 * 3600 * 1000)
        throttled = configs["leader.replication.throttled.replicas"]
        assert (throttled["value"], throttled["synonyms"]) == ("", [])  # no broker synonym
        assert len(configs) == 26  # every topic-level key

    run(body, **{"log.segment.bytes": "2048"})


def test_describe_selected_keys_without_synonyms() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        await create_online(admin, metadata, "t")
        response = await admin.describe_configs(
            describe(TOPIC, "t", ["min.insync.replicas", "not.a.key"], synonyms=True), 0
        )
        configs = by_name(response)
        assert list(configs) == ["min.insync.replicas"]
        assert configs["min.insync.replicas"]["synonyms"] == []  # v0 has none
        assert configs["min.insync.replicas"]["is_default"] is True
        # an empty key list means all keys, as null does
        assert len(by_name(await admin.describe_configs(describe(TOPIC, "t", []), 2))) == 26

    run(body)


def test_describe_broker_static_configs() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        configs = by_name(await admin.describe_configs(describe(BROKER, "0", synonyms=True), 2))
        assert configs["num.partitions"]["value"] == "4"
        assert configs["num.partitions"]["config_source"] == ConfigSource.STATIC_BROKER_CONFIG
        assert configs["num.partitions"]["read_only"] is True
        assert configs["default.replication.factor"]["config_source"] == ConfigSource.DEFAULT_CONFIG
        retention = configs["log.retention.ms"]
        assert retention["value"] is None
        # Kafka's configSynonyms drops the synonyms before the described key itself
        assert retention["synonyms"] == []
        minutes = configs["log.retention.minutes"]
        assert [(s["name"], s["source"]) for s in minutes["synonyms"]] == [
            ("log.retention.minutes", ConfigSource.STATIC_BROKER_CONFIG),
            ("log.retention.hours", ConfigSource.DEFAULT_CONFIG),
        ]
        secret = configs["some.plugin.secret"]  # unknown keys are reported, valueless
        assert (secret["value"], secret["is_sensitive"]) == (None, True)
        # the cluster-wide defaults: no dynamic configs set
        assert by_name(await admin.describe_configs(describe(BROKER, ""), 2)) == {}

    run(body, **{"num.partitions": "4", "log.retention.minutes": "30", "some.plugin.secret": "x"})


@pytest.mark.parametrize(
    ("resource_type", "name", "code", "message"),
    [
        (TOPIC, "nope", UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nope' does not exist."),
        (TOPIC, "bad name", INVALID_TOPIC_EXCEPTION, "illegal"),
        (
            BROKER,
            "5",
            INVALID_REQUEST,
            "Unexpected broker id, expected 0 or empty string, but received 5",
        ),
        (BROKER, "x", INVALID_REQUEST, "Broker id must be an integer, but it is: x"),
        (BROKER_LOGGER, "0", INVALID_REQUEST, "not supported by kafpy"),
        (GROUP, "g", INVALID_REQUEST, "Unsupported resource type: GROUP"),
    ],
)
def test_describe_config_errors(resource_type: int, name: str, code: int, message: str) -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        response = await admin.describe_configs(describe(resource_type, name), 1)
        [result] = response["results"]
        assert (result["error_code"], result["configs"], result["resource_name"]) == (
            code,
            [],
            name,
        )
        assert message in result["error_message"]

    run(body)


# -- AlterConfigs -------------------------------------------------------------------------------------


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


def test_alter_configs_replaces_the_topic_overrides_and_notifies() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        await create_online(admin, metadata, "t", configs={"retention.ms": "1000"})
        response = await admin.alter_configs(
            alter(TOPIC, "t", {"cleanup.policy": "compact"}, validate_only=True), 1
        )
        assert response["responses"] == [
            {
                "error_code": NONE,
                "error_message": None,
                "resource_type": TOPIC,
                "resource_name": "t",
            }
        ]
        assert await zk.get_entity_configs("topics", "t") == {"retention.ms": "1000"}
        assert await notifications(zk) == []
        response = await admin.alter_configs(alter(TOPIC, "t", {"cleanup.policy": "compact"}), 1)
        assert response["responses"][0]["error_code"] == NONE
        assert await zk.get_entity_configs("topics", "t") == {"cleanup.policy": "compact"}
        assert await notifications(zk) == ["topics/t"]

    run(body)


@pytest.mark.parametrize(
    ("resource_type", "name", "configs", "code", "message"),
    [
        (
            TOPIC,
            "nope",
            {"retention.ms": "1"},
            UNKNOWN_TOPIC_OR_PARTITION,
            "The topic 'nope' does not exist.",
        ),
        (
            TOPIC,
            "t",
            {"retention.mss": "1"},
            INVALID_CONFIG,
            "Unknown topic config name: retention.mss",
        ),
        (
            TOPIC,
            "t",
            {"retention.ms": "x"},
            INVALID_REQUEST,
            "Invalid config value for resource ConfigResource(type=TOPIC, name='t')",
        ),
        (
            TOPIC,
            "t",
            {"retention.ms": None},
            INVALID_REQUEST,
            "Null value not supported for : retention.ms",
        ),
        (
            BROKER,
            "0",
            {"num.partitions": "3"},
            INVALID_REQUEST,
            "Cannot update these configs dynamically: Set(num.partitions)",
        ),
        (BROKER, "1", {"num.partitions": "3"}, INVALID_REQUEST, "Unexpected broker id"),
        (
            GROUP,
            "g",
            {"a": "b"},
            INVALID_REQUEST,
            "only supported for topics and brokers, but resource type is GROUP",
        ),
    ],
)
def test_alter_config_errors(
    resource_type: int, name: str, configs: dict[str, str | None], code: int, message: str
) -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        await create_online(admin, metadata, "t", configs={"retention.ms": "1000"})
        [result] = (await admin.alter_configs(alter(resource_type, name, configs), 0))["responses"]
        assert result["error_code"] == code and message in result["error_message"], result
        assert await zk.get_entity_configs("topics", "t") == {"retention.ms": "1000"}
        assert await notifications(zk) == []

    run(body)


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


def test_incremental_alter_configs_operations() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        await create_online(
            admin, metadata, "t", configs={"retention.ms": "1000", "segment.ms": "5000"}
        )
        response = await admin.incremental_alter_configs(
            incremental(
                "t",
                ("retention.ms", 0, "2000"),  # SET
                ("segment.ms", 1, None),  # DELETE
                ("cleanup.policy", 2, "compact"),  # APPEND to the default "delete"
                ("leader.replication.throttled.replicas", 2, "0:1,1:1"),
            ),
            1,
        )
        assert response["responses"][0]["error_code"] == NONE, response
        assert await zk.get_entity_configs("topics", "t") == {
            "retention.ms": "2000",
            "cleanup.policy": "delete,compact",
            "leader.replication.throttled.replicas": "0:1,1:1",
        }
        response = await admin.incremental_alter_configs(
            incremental("t", ("cleanup.policy", 3, "delete")), 0
        )
        assert response["responses"][0]["error_code"] == NONE
        assert (await zk.get_entity_configs("topics", "t"))["cleanup.policy"] == "compact"
        assert await notifications(zk) == ["topics/t", "topics/t"]

    run(body)


@pytest.mark.parametrize(
    ("ops", "code", "message"),
    [
        (
            (("retention.ms", 0, "1"), ("retention.ms", 1, None)),
            INVALID_REQUEST,
            "Error due to duplicate config keys : retention.ms",
        ),
        (
            (("retention.ms", 0, None),),
            INVALID_REQUEST,
            "Null value not supported for : SET:retention.ms",
        ),
        (
            (("retention.ms", 2, "5"),),
            INVALID_REQUEST,
            "Config value append is not allowed for config key: retention.ms",
        ),
        (
            (("retention.ms", 3, "5"),),
            INVALID_REQUEST,
            "Config value subtract is not allowed for config key: retention.ms",
        ),
        ((("no.such", 2, "5"),), INVALID_CONFIG, "Unknown topic config name: no.such"),
        ((("retention.ms", 9, "5"),), INVALID_REQUEST, "Unknown config operation 9"),
        ((("segment.bytes", 0, "1"),), INVALID_REQUEST, "segment.bytes"),
    ],
)
def test_incremental_alter_config_errors(
    ops: tuple[tuple[str, int, str | None], ...], code: int, message: str
) -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        await create_online(admin, metadata, "t")
        [result] = (await admin.incremental_alter_configs(incremental("t", *ops), 1))["responses"]
        assert result["error_code"] == code and message in result["error_message"], result
        assert await zk.get_entity_configs("topics", "t") == {}

    run(body)


def test_incremental_alter_of_broker_configs_is_refused() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        for rtype, message in ((BROKER, "Unknown broker config name(s): x"),
                               (BROKER_LOGGER, "not supported by kafpy")):  # fmt: skip
            [result] = (
                await admin.incremental_alter_configs(
                    incremental("0", ("x", 0, "1"), resource_type=rtype), 1
                )
            )["responses"]
            assert result["error_code"] == INVALID_REQUEST and message in result["error_message"]

    run(body)


# -- refused requests --------------------------------------------------------------------------------


def test_error_response_for_every_admin_api() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        assert admin.error_response(
            "create_topics", create_body(new_topic("a"), new_topic("b")), 4, NOT_CONTROLLER
        ) == {
            "throttle_time_ms": 0,
            "topics": [
                {"name": "a", "error_code": NOT_CONTROLLER, "error_message": None},
                {"name": "b", "error_code": NOT_CONTROLLER, "error_message": None},
            ],
        }
        assert errors(
            admin.error_response("delete_topics", {"topic_names": ["a"]}, 3, NOT_CONTROLLER),
            "responses",
        ) == {"a": NOT_CONTROLLER}
        assert errors(
            admin.error_response(
                "create_partitions", partitions_body({"name": "a", "count": 2}), 1, NOT_CONTROLLER
            ),
            "results",
        ) == {"a": NOT_CONTROLLER}
        described = admin.error_response(
            "describe_configs", describe(TOPIC, "a"), 1, NOT_CONTROLLER, "not here"
        )
        assert described["results"] == [
            {
                "error_code": NOT_CONTROLLER,
                "error_message": "not here",
                "resource_type": TOPIC,
                "resource_name": "a",
                "configs": [],
            }
        ]
        altered = admin.error_response(
            "incremental_alter_configs", incremental("a", ("x", 0, "1")), 1, NOT_CONTROLLER
        )
        assert altered["responses"][0]["error_code"] == NOT_CONTROLLER
        with pytest.raises(ValueError, match="not an admin API"):
            admin.error_response("produce", {}, 0, NOT_CONTROLLER)

    run(body)


def test_dynamic_broker_configs_stored_and_described() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        [ok] = (await admin.incremental_alter_configs(
            incremental("0", ("log.retention.ms", 0, "1000"), resource_type=BROKER), 1))["responses"]  # fmt: skip
        assert ok["error_code"] == NONE, ok
        assert await zk.get_entity_configs("brokers", "0") == {"log.retention.ms": "1000"}
        [ok] = (await admin.incremental_alter_configs(
            incremental("", ("log.retention.ms", 0, "2000"), resource_type=BROKER), 1))["responses"]  # fmt: skip
        assert ok["error_code"] == NONE, ok
        assert await zk.get_entity_configs("brokers", "<default>") == {"log.retention.ms": "2000"}
        # what the broker's DynamicConfigManager does on the notifications
        admin.dynamic_config.update_broker_config({"log.retention.ms": "1000"})
        admin.dynamic_config.update_default_config({"log.retention.ms": "2000"})

        retention = by_name(await admin.describe_configs(describe(BROKER, "0", synonyms=True), 2))[
            "log.retention.ms"
        ]
        assert (retention["value"], retention["config_source"], retention["read_only"]) == (
            "1000",
            ConfigSource.DYNAMIC_BROKER_CONFIG,
            False,
        )
        assert [(s["name"], s["value"], s["source"]) for s in retention["synonyms"]] == [
            ("log.retention.ms", "1000", ConfigSource.DYNAMIC_BROKER_CONFIG),
            ("log.retention.ms", "2000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
            ("log.retention.hours", "5", ConfigSource.STATIC_BROKER_CONFIG),
            ("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG),
        ]
        default = by_name(await admin.describe_configs(describe(BROKER, "", synonyms=True), 2))
        assert list(default) == ["log.retention.ms"]
        assert default["log.retention.ms"]["synonyms"] == [
            {
                "name": "log.retention.ms",
                "value": "2000",
                "source": ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
            }
        ]
        await create_online(admin, metadata, "t")
        topic = by_name(await admin.describe_configs(describe(TOPIC, "t", synonyms=True), 1))
        assert (topic["retention.ms"]["value"], topic["retention.ms"]["config_source"]) == (
            "1000",
            ConfigSource.DYNAMIC_BROKER_CONFIG,
        )

    run(body, **{"log.retention.hours": "5"})


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"broker.id": "3"}, "Cannot update these configs dynamically: Set(broker.id)"),
        ({"num.io.threads": "3"}, "kafpy cannot apply these configs without a restart yet"),
        ({"log.segment.bytes": "1"}, "log.segment.bytes"),
        ({"no.such.key": "1"}, "Unknown broker config name(s): no.such.key"),
    ],
)
def test_dynamic_broker_config_refusals(props: dict[str, str], message: str) -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        ops = [(k, 0, v) for k, v in props.items()]
        [result] = (
            await admin.incremental_alter_configs(incremental("0", *ops, resource_type=BROKER), 1)
        )["responses"]
        assert result["error_code"] == INVALID_REQUEST and message in result["error_message"]
        assert await zk.get_entity_configs("brokers", "0") == {}

    run(body)
