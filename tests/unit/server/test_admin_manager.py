"""AdminManager on the embedded store: request bodies in, response bodies out, for every
admin API and its error cases."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from kafpy.common import topic as topic_rules
from kafpy.common.errors import PolicyViolationError
from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import LeaderAndIsr, LeaderIsrAndControllerEpoch
from kafpy.server.admin_manager import AdminManager, CreateTopicRequestMetadata
from tests.unit.server.admin_fixtures import (
    INVALID_CONFIG,
    INVALID_PARTITIONS,
    INVALID_REPLICA_ASSIGNMENT,
    INVALID_REPLICATION_FACTOR,
    INVALID_REQUEST,
    INVALID_TOPIC_EXCEPTION,
    NONE,
    NOT_CONTROLLER,
    POLICY_VIOLATION,
    REQUEST_TIMED_OUT,
    TOPIC,
    TOPIC_ALREADY_EXISTS,
    TOPIC_DELETION_DISABLED,
    UNKNOWN_TOPIC_OR_PARTITION,
    Metadata,
    config,
    create_body,
    create_online,
    describe,
    errors,
    incremental,
    new_topic,
    run,
)

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
        (new_topic("t", 2**31 - 1, 1), INVALID_PARTITIONS, "would not fit in a ZooKeeper node"),
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


@pytest.mark.parametrize("validate_only", [False, True])
def test_create_topic_checks_existence_and_validates_the_name_once(
    validate_only: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []

    def counting_validate(topic: str, validate: Any = topic_rules.validate) -> None:
        calls.append(f"validate {topic}")
        validate(topic)

    monkeypatch.setattr(topic_rules, "validate", counting_validate)

    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        topic_exists = zk.topic_exists

        async def counting_topic_exists(topic: str) -> bool:
            calls.append(f"exists {topic}")
            return await topic_exists(topic)

        monkeypatch.setattr(zk, "topic_exists", counting_topic_exists)
        metadata.online["t"] = {0}
        response = await admin.create_topics(
            create_body(new_topic("t", 1, 1), validate_only=validate_only), 4
        )
        assert errors(response) == {"t": NONE}
        assert sorted(calls) == ["exists t", "validate t"]

    run(body)


@pytest.mark.parametrize("api", ["create_topics", "create_partitions"])
def test_an_empty_topic_name_is_an_invalid_topic_without_an_error_in_the_log(
    api: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        await create_online(admin, metadata, "t")
        if api == "create_topics":
            response = await admin.create_topics(create_body(new_topic("", 1, 1)), 4)
            [result] = response["topics"]
        else:
            request = {"name": "", "count": 2, "assignments": None}
            response = await admin.create_partitions(partitions_body(request), 1)
            [result] = response["results"]
        assert (result["name"], result["error_code"]) == ("", INVALID_TOPIC_EXCEPTION)
        assert result["error_message"] == "Topic name is illegal, it can't be empty"
        assert len((await zk.get_topic_assignment_and_version("t"))[0]) == 1

    with caplog.at_level(logging.INFO):
        run(body)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert any("it can't be empty" in r.getMessage() for r in caplog.records)


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
