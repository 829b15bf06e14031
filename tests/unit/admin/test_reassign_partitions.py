"""The reassignment operation (kafpy.admin.reassign_partitions) over the ZooKeeper backend
on an in-memory metadata store: Kafka's JSON and lines for --generate, --execute,
--verify, and bad input refused with nothing written."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

import pytest

from kafpy.admin.reassign_partitions import (
    ZkCluster,
    execute_assignment,
    format_as_reassignment_json,
    generate_assignment,
    parse_partition_reassignment_data,
    parse_throttle,
    verify_assignment,
)
from kafpy.common.errors import KafkaError
from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.embedded_store import EmbeddedStore
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from tests.unit.controller.fixtures import broker_info

MOVE = {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [2, 1]},
                                     {"topic": "t", "partition": 1, "replicas": [1, 2]}]}  # fmt: skip


def run(body: Callable[[KafkaZkClient, list[str]], Awaitable[None]]) -> None:
    async def main() -> None:
        store = EmbeddedStore(None)
        await store.start()
        try:
            zk = KafkaZkClient(store)
            await zk.make_sure_persistent_paths_exist()
            for b in (0, 1, 2):
                await zk.register_broker(broker_info(b))
            await zk.create_topic_assignment("t", {0: [0, 1], 1: [1, 0]})
            await body(zk, [])
        finally:
            await store.close()

    asyncio.run(main())


def test_reassignment_json_is_kafkas() -> None:
    text = format_as_reassignment_json(
        {TopicPartition("t", 1): [1, 0], TopicPartition("a", 0): [2]}
    )
    assert text == (
        '{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[2],"log_dirs":["any"]},'
        '{"topic":"t","partition":1,"replicas":[1,0],"log_dirs":["any","any"]}]}'
    )
    assert parse_partition_reassignment_data(text) == [
        (TopicPartition("a", 0), [2]),
        (TopicPartition("t", 1), [1, 0]),
    ]


def test_generate_proposes_over_the_broker_list() -> None:
    async def body(zk: KafkaZkClient, out: list[str]) -> None:
        proposed, current = await generate_assignment(
            ZkCluster(zk), '{"topics":[{"topic":"t"}],"version":1}', "1,2", True, out.append
        )
        assert current == {TopicPartition("t", 0): [0, 1], TopicPartition("t", 1): [1, 0]}
        assert {tuple(sorted(r)) for r in proposed.values()} == {(1, 2)}
        assert out[0] == (
            "Current partition replica assignment\n" + format_as_reassignment_json(current) + "\n"
        )
        assert out[1] == (
            "Proposed partition reassignment configuration\n"
            + format_as_reassignment_json(proposed)
        )

    run(body)


def test_execute_then_verify_through_zookeeper() -> None:
    async def body(zk: KafkaZkClient, out: list[str]) -> None:
        cluster = ZkCluster(zk)
        await execute_assignment(cluster, json.dumps(MOVE), False, -1, -1, out.append)
        assert out == [
            "Current partition replica assignment\n\n"
            '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[0,1],'
            '"log_dirs":["any","any"]},{"topic":"t","partition":1,"replicas":[1,0],'
            '"log_dirs":["any","any"]}]}\n\n'
            "Save this to use as the --reassignment-json-file option during rollback",
            "Successfully started partition reassignments for t-0,t-1",
        ]
        assert await zk.get_partition_reassignment() == {
            TopicPartition("t", 0): [2, 1],
            TopicPartition("t", 1): [1, 2],
        }
        out.clear()
        assert await verify_assignment(cluster, json.dumps(MOVE), False, out.append)
        assert out == [
            "Status of partition reassignment:\n"
            "Reassignment of partition t-0 is still in progress.\n"
            "Reassignment of partition t-1 is still in progress.",
            "",
        ]
        # a second execute while one runs is refused
        with pytest.raises(KafkaError, match="existing partition assignment"):
            await execute_assignment(cluster, json.dumps(MOVE), False, -1, -1, out.append)

    run(body)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("{not json", "not a valid JSON"),
        ('{"version":2,"partitions":[]}', "Not supported version field value 2"),
        ('{"version":1,"partitions":[]}', "Partition reassignment list cannot be empty"),
        ('{"partitions":[{"topic":"t","partition":"x","replicas":[1]}]}', "not an integer"),
        ('{"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}',
         "t-0 contains multiple entries for 1"),
        ('{"partitions":[{"topic":"t","partition":0,"replicas":[1,7]}]}', "Unknown broker id 7"),
        ('{"partitions":[{"topic":"t","partition":9,"replicas":[1]}]}',
         "Unable to find partition: t-9"),
        ('{"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["/d"]}]}',
         "between brokers only"),
    ],
)  # fmt: skip
def test_bad_reassignment_files_are_refused_and_nothing_is_written(text: str, error: str) -> None:
    async def body(zk: KafkaZkClient, out: list[str]) -> None:
        before = await zk.store.get_data_or_none("/brokers/topics/t")
        with pytest.raises(KafkaError, match=error):
            await execute_assignment(ZkCluster(zk), text, False, 1000, -1, out.append)
        assert not await zk.reassign_partitions_in_progress()
        assert await zk.store.get_data_or_none("/brokers/topics/t") == before
        assert await zk.get_entity_configs("brokers", "0") == {}
        assert await zk.get_entity_configs("topics", "t") == {}

    run(body)


def test_throttles_must_be_numbers() -> None:
    assert parse_throttle(None, "--throttle") == -1
    assert parse_throttle("5000000", "--throttle") == 5000000
    with pytest.raises(KafkaError, match="--throttle must be a whole number .* not 'fast'"):
        parse_throttle("fast", "--throttle")
