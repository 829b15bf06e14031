"""AlterPartitionReassignments / ListPartitionReassignments responses from a real
KafkaController (the unit harness: embedded store, recording channels): Kafka's shapes,
per-partition errors with their default messages, NOT_CONTROLLER on other brokers, and
encodable at v0."""

from __future__ import annotations

import asyncio
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.protocol.messages import RESPONSES
from kafpy.server.partition_reassignment_apis import (
    alter_partition_reassignments,
    list_partition_reassignments,
)
from tests.unit.controller.fixtures import ControllerCluster


def _encodable(api: ApiKey, body: dict[str, Any]) -> None:
    RESPONSES[api].encode(0, body)


def test_alter_and_list_through_the_controller() -> None:
    async def main() -> None:
        async with ControllerCluster() as cluster:
            await cluster.start(0, 1, 2)
            await cluster.admin.create_topic_with_config("t", {0: [0, 1]}, {})
            await cluster.settle()
            controller = cluster.controller()
            altered = await alter_partition_reassignments(controller, {"timeout_ms": 5000, "topics": [
                {"name": "t", "partitions": [{"partition_index": 0, "replicas": [1, 2]},
                                             {"partition_index": 7, "replicas": [1]}]}]})  # fmt: skip
            await cluster.settle()
            _encodable(ApiKey.ALTER_PARTITION_REASSIGNMENTS, altered)
            assert altered["error_code"] == Errors.NONE and altered["error_message"] is None
            assert altered["responses"] == [{"name": "t", "partitions": [
                {"partition_index": 0, "error_code": 0, "error_message": None},
                {"partition_index": 7, "error_code": Errors.UNKNOWN_TOPIC_OR_PARTITION,
                 "error_message": "The partition does not exist."}]}]  # fmt: skip
            listed = await list_partition_reassignments(controller, {"topics": None})
            _encodable(ApiKey.LIST_PARTITION_REASSIGNMENTS, listed)
            assert listed["topics"] == [{"name": "t", "partitions": [{"partition_index": 0,
                "replicas": [1, 2, 0], "adding_replicas": [2], "removing_replicas": [0]}]}]  # fmt: skip
            cancelled = await alter_partition_reassignments(controller, {"topics": [
                {"name": "t", "partitions": [{"partition_index": 0, "replicas": None}]}]})  # fmt: skip
            await cluster.settle()
            assert cancelled["responses"][0]["partitions"][0]["error_code"] == 0
            again = await alter_partition_reassignments(controller, {"topics": [
                {"name": "t", "partitions": [{"partition_index": 0, "replicas": None}]}]})  # fmt: skip
            [result] = again["responses"][0]["partitions"]
            assert result["error_code"] == Errors.NO_REASSIGNMENT_IN_PROGRESS
            assert result["error_message"] == "No partition reassignment is in progress."

            other = next(
                h.controller for h in cluster.brokers.values() if not h.controller.is_active
            )
            refused = await alter_partition_reassignments(other, {"topics": []})
            assert refused["error_code"] == Errors.NOT_CONTROLLER and refused["responses"] == []
            assert refused["error_message"]
            _encodable(ApiKey.ALTER_PARTITION_REASSIGNMENTS, refused)
            listed = await list_partition_reassignments(other, {"topics": None})
            assert listed["error_code"] == Errors.NOT_CONTROLLER

    asyncio.run(main())
