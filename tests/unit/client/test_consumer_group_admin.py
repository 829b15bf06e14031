"""ConsumerGroupAdmin against FakeBrokers: the coordinator found again when it moves,
members' assignments decoded, committed offsets, and refusals naming the group."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kafpy.client.consumer_group_admin import ConsumerGroupAdmin, GroupListing
from kafpy.client.consumer_group_metadata import OffsetAndMetadata
from kafpy.common.errors import Errors, KafkaError
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.consumer_protocol import encode_assignment
from tests.unit.client.fake_broker import TwoBrokers


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 30))


class Groups(TwoBrokers):
    """Brokers 0 and 1 (FindCoordinator names broker 1) and a ConsumerGroupAdmin on them."""

    async def __aenter__(self) -> ConsumerGroupAdmin:
        return ConsumerGroupAdmin(await self.start())


def described(state: str, members: list[dict[str, Any]], code: int = 0) -> dict[str, Any]:
    return {
        "groups": [
            {
                "error_code": code,
                "group_id": "g",
                "group_state": state,
                "protocol_type": "consumer",
                "protocol_data": "range",
                "members": members,
            }
        ]
    }


def test_describe_follows_a_moving_coordinator_and_decodes_assignments() -> None:
    async def scenario() -> None:
        env = Groups()
        async with env as admin:
            member = {
                "member_id": "m-1",
                "group_instance_id": None,
                "client_id": "reader",
                "client_host": "/127.0.0.1",
                "member_metadata": b"",
                "member_assignment": encode_assignment(
                    [TopicPartition("t", 0), TopicPartition("t", 2)]
                ),
            }

            def moved(header: Any, body: dict[str, Any]) -> dict[str, Any]:
                env.coordinator = 0  # the group moved to broker 0
                return described("", [], code=16)  # NOT_COORDINATOR

            env.b1.handlers[ApiKey.DESCRIBE_GROUPS] = moved
            env.b0.handlers[ApiKey.DESCRIBE_GROUPS] = lambda h, b: described("Stable", [member])
            group = await admin.describe_group("g")
            assert (group.state, group.assignor, group.coordinator) == ("Stable", "range", 0)
            [m] = group.members
            assert (m.client_id, m.assignment) == (
                "reader",
                (TopicPartition("t", 0), TopicPartition("t", 2)),
            )
            assert len(env.b1.requests_of(ApiKey.DESCRIBE_GROUPS)) == 1

            env.b0.handlers[ApiKey.DESCRIBE_GROUPS] = lambda h, b: described("", [], code=30)
            with pytest.raises(KafkaError, match="Describing group 'g'") as e:
                await admin.describe_group("g")
            assert e.value.code == Errors.GROUP_AUTHORIZATION_FAILED

    run(scenario())


def test_list_groups_of_every_broker() -> None:
    async def scenario() -> None:
        env = Groups()
        async with env as admin:

            def listing(names: list[str]) -> Any:
                def answer(header: Any, body: dict[str, Any]) -> dict[str, Any]:
                    return {
                        "error_code": 0,
                        "groups": [
                            {"group_id": n, "protocol_type": "consumer", "group_state": "Empty"}
                            for n in names
                        ],
                    }

                return answer

            env.b0.handlers[ApiKey.LIST_GROUPS] = listing(["b", "a"])
            env.b1.handlers[ApiKey.LIST_GROUPS] = listing(["c"])
            groups = await admin.list_groups()
            assert [g.group_id for g in groups] == ["a", "b", "c"]
            assert groups[0] == GroupListing("a", "consumer", "Empty")

    run(scenario())


def test_offsets_fetched_and_altered() -> None:
    async def scenario() -> None:
        env = Groups()
        async with env as admin:
            env.b1.handlers[ApiKey.OFFSET_FETCH] = lambda h, b: {
                "error_code": 0,
                "topics": [
                    {
                        "name": "t",
                        "partitions": [
                            {
                                "partition_index": 0,
                                "committed_offset": 7,
                                "committed_leader_epoch": 2,
                                "metadata": "note",
                                "error_code": 0,
                            },
                            {
                                "partition_index": 1,
                                "committed_offset": -1,
                                "metadata": "",
                                "error_code": 0,
                            },
                        ],
                    }
                ],
            }
            assert await admin.list_group_offsets("g") == {TopicPartition("t", 0): 7}
            assert await admin.list_group_offsets_and_metadata("g") == {
                TopicPartition("t", 0): OffsetAndMetadata(7, "note", 2)
            }

            def commit(header: Any, body: dict[str, Any]) -> dict[str, Any]:
                code = 25 if body["topics"][0]["partitions"][0]["committed_offset"] == 99 else 0
                return {
                    "topics": [
                        {"name": t["name"], "partitions": [
                            {"partition_index": p["partition_index"], "error_code": code}
                            for p in t["partitions"]
                        ]}
                        for t in body["topics"]
                    ]
                }  # fmt: skip

            env.b1.handlers[ApiKey.OFFSET_COMMIT] = commit
            await admin.alter_group_offsets("g", {TopicPartition("t", 0): 3})
            sent = env.b1.requests_of(ApiKey.OFFSET_COMMIT)[0].body
            assert (sent["group_id"], sent["generation_id_or_member_epoch"], sent["member_id"]) == (
                "g",
                -1,
                "",
            )
            assert sent["topics"][0]["partitions"][0]["committed_offset"] == 3
            with pytest.raises(KafkaError, match="Group 'g' has active members") as e:
                await admin.alter_group_offsets("g", {TopicPartition("t", 0): 99})
            assert e.value.code == Errors.UNKNOWN_MEMBER_ID

    run(scenario())
