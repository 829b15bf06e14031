"""kafpy's own client (BrokerConnection, KafkaClient, BatchProducer, Fetcher, AdminClient)
against a real `kafpy server` subprocess."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from kafpy.client.admin_client import AdminClient, ConfigResource, NewTopic
from kafpy.client.connection import BrokerConnection
from kafpy.client.consumer_coordinator import ConsumerCoordinator
from kafpy.client.fetcher import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, Fetcher
from kafpy.client.kafka_client import KafkaClient
from kafpy.client.producer import BatchProducer, RecordsNotDeliveredError
from kafpy.common.errors import (
    MessageTooLargeError,
    TopicExistsError,
    UnknownTopicOrPartitionError,
)
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_versions import SUPPORTED_VERSIONS
from kafpy.protocol.errors import Errors
from kafpy.records.compression import CompressionType
from tests.fixtures.broker import KafpyBroker


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 120))


def test_connection_negotiates_and_pipelines(kafpy_broker: KafpyBroker) -> None:
    async def scenario() -> None:
        async with BrokerConnection("127.0.0.1", kafpy_broker.port) as conn:
            # our ApiVersions is above the broker's: it answered UNSUPPORTED_VERSION and
            # the connection retried at the broker's highest version
            assert conn.api_versions == {int(k): v for k, v in SUPPORTED_VERSIONS.items()}
            bodies = await asyncio.gather(
                *(conn.send(ApiKey.METADATA, {"topics": []}) for _ in range(20))
            )
            assert {b["brokers"][0]["port"] for b in bodies} == {kafpy_broker.port}
            assert all(b["controller_id"] == kafpy_broker.broker_id for b in bodies)

    run(scenario())


def test_produce_and_fetch_through_the_client(kafpy_broker: KafpyBroker) -> None:
    async def scenario() -> None:
        async with KafkaClient(kafpy_broker.bootstrap) as client:
            admin = AdminClient(client)
            await admin.create_topics([NewTopic("data", 2, 1)])
            with pytest.raises(TopicExistsError):
                await admin.create_topics([NewTopic("data", 2, 1)])
            producer = BatchProducer(client, acks=-1, compression=CompressionType.LZ4)
            keys = [f"k{i}".encode() for i in range(100)]
            results = await producer.send("data", [(k, k * 3) for k in keys])
            assert sum(r.record_count for r in results) == 100
            tps = [TopicPartition("data", 0), TopicPartition("data", 1)]
            fetcher = Fetcher(client, max_wait_ms=100)
            assert await fetcher.list_offsets(tps, EARLIEST_TIMESTAMP) == dict.fromkeys(tps, 0)
            latest = await fetcher.list_offsets(tps, LATEST_TIMESTAMP)
            assert sum(latest.values()) == 100
            fetcher.assign(dict.fromkeys(tps, 0))
            seen: dict[bytes | None, bytes | None] = {}
            while len(seen) < 100:
                for record in await fetcher.fetch():
                    seen[record.key] = record.value
            assert seen == {k: k * 3 for k in keys}
            assert fetcher.positions == latest

    run(scenario())


def test_admin_configs_and_partitions(kafpy_broker: KafpyBroker) -> None:
    async def scenario() -> None:
        async with AdminClient.connect(kafpy_broker.bootstrap) as admin:
            await admin.create_topics([NewTopic("conf", 1, 1, configs={"retention.ms": "1000"})])
            assert await admin.describe_topic_overrides("conf") == {"retention.ms": "1000"}
            await admin.alter_configs(
                ConfigResource.topic("conf"), {"cleanup.policy": "compact"}, ["retention.ms"]
            )
            assert await admin.describe_topic_overrides("conf") == {"cleanup.policy": "compact"}
            await admin.create_partitions({"conf": 3})
            for _ in range(100):
                described = (await admin.describe_topics(["conf"]))["conf"]
                if len(described.partitions) == 3:
                    break
                await asyncio.sleep(0.1)
            assert sorted(described.partitions) == [0, 1, 2]
            assert "conf" in await admin.list_topics()
            await admin.delete_topics(["conf"])
            for _ in range(100):
                if "conf" not in await admin.list_topics():
                    break
                await asyncio.sleep(0.1)
            with pytest.raises(UnknownTopicOrPartitionError):
                await admin.describe_topics(["conf"])

    run(scenario())


def test_an_empty_topic_name_is_refused_as_an_invalid_topic(kafpy_broker: KafpyBroker) -> None:
    async def scenario() -> None:
        async with BrokerConnection("127.0.0.1", kafpy_broker.port) as conn:
            create = await conn.send(
                ApiKey.CREATE_TOPICS,
                {
                    "topics": [
                        {
                            "name": "",
                            "num_partitions": 1,
                            "replication_factor": 1,
                            "assignments": [],
                            "configs": [],
                        }
                    ],
                    "timeout_ms": 5000,
                    "validate_only": False,
                },
                4,
            )
            partitions = await conn.send(
                ApiKey.CREATE_PARTITIONS,
                {
                    "topics": [{"name": "", "count": 2, "assignments": None}],
                    "timeout_ms": 5000,
                    "validate_only": False,
                },
                1,
            )
        for result in (create["topics"][0], partitions["results"][0]):
            assert (result["error_code"], result["error_message"]) == (
                Errors.INVALID_TOPIC_EXCEPTION,
                "Topic name is illegal, it can't be empty",
            )
        async with AdminClient.connect(kafpy_broker.bootstrap) as admin:
            await admin.create_topics([NewTopic("after-empty", 1, 1)])
            assert "after-empty" in await admin.list_topics()

    run(scenario())
    log = kafpy_broker.log_path.read_text(errors="replace")
    assert " ERROR " not in log, kafpy_broker.log_tail()
    assert "Traceback" not in log, kafpy_broker.log_tail()


def test_producer_cuts_batches_the_broker_accepts(kafpy_broker_factory: Any) -> None:
    """50,000 short records (more than a broker takes in one batch) all land, in order,
    and the one record the broker refuses as too large fails alone."""
    broker = kafpy_broker_factory({"message.max.bytes": "20000"})

    async def scenario() -> None:
        async with KafkaClient(broker.bootstrap) as client:
            await AdminClient(client).create_topics([NewTopic("many", 1, 1)])
            tp = TopicPartition("many", 0)
            producer = BatchProducer(client, acks=-1)
            await producer.init_producer_id()  # as the Spark writer does
            values = [b"row %d" % i for i in range(50_000)]
            results = await producer.send_records({tp: [(None, v) for v in values]})
            assert sum(r.record_count for r in results) == 50_000
            fetcher = Fetcher(client, max_wait_ms=100)
            assert await fetcher.list_offsets([tp], LATEST_TIMESTAMP) == {tp: 50_000}
            fetcher.assign({tp: 0})
            seen: list[bytes | None] = []
            while len(seen) < 50_000:
                seen.extend(r.value for r in await fetcher.fetch())
            assert seen == values

            records = [(None, b"before"), (None, b"x" * 30_000), (None, b"after")]
            with pytest.raises(RecordsNotDeliveredError) as e:
                await producer.send("many", records)
            assert [(i, type(err)) for i, err in e.value.errors] == [(1, MessageTooLargeError)]
            fetcher.assign({tp: 50_000})
            tail: list[bytes | None] = []
            while len(tail) < 2:
                tail.extend(r.value for r in await fetcher.fetch())
            assert tail == [b"before", b"after"]

    run(scenario())


def test_consumer_coordinators_share_partitions_and_commit(kafpy_broker_factory: Any) -> None:
    broker = kafpy_broker_factory(
        {"offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0"}
    )

    async def scenario() -> None:
        async with KafkaClient(broker.bootstrap) as c1, KafkaClient(broker.bootstrap) as c2:
            await AdminClient(c1).create_topics([NewTopic("shared", 4, 1)])
            fast = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 200}
            first = ConsumerCoordinator(c1, "sharers", ["shared"], **fast)
            second = ConsumerCoordinator(c2, "sharers", ["shared"], **fast)
            try:
                all_tps = [TopicPartition("shared", p) for p in range(4)]
                assert await first.ensure_active_group() == all_tps

                async def first_rejoins() -> None:
                    while not first.rejoin_needed:  # learnt from a heartbeat
                        await asyncio.sleep(0.05)
                    await first.ensure_active_group()

                await asyncio.gather(second.ensure_active_group(), first_rejoins())
                assert first.generation_id == second.generation_id
                assert sorted(first.assignment + second.assignment) == all_tps
                assert first.assignment and second.assignment
                await first.commit({tp: 7 for tp in first.assignment})
                assert await second.committed(all_tps) == {tp: 7 for tp in first.assignment}
            finally:
                await second.close()
                await first.close()


def test_kafka_2_8_admin_versions(kafpy_broker: KafpyBroker) -> None:
    """CreateTopics v7 reports what it created (KIP-525), DeleteTopics v6 by name works and an
    id no topic has is UNKNOWN_TOPIC_ID, InitProducerId v4 checks its producer id/epoch."""

    async def scenario() -> None:
        async with BrokerConnection("127.0.0.1", kafpy_broker.port) as conn:
            created = await conn.send(ApiKey.CREATE_TOPICS, {"timeout_ms": 30000, "topics": [
                {"name": "v7", "num_partitions": 2, "replication_factor": 1, "assignments": [],
                 "configs": [{"name": "retention.ms", "value": "1234"}]}]}, 7)  # fmt: skip
            [t] = created["topics"]
            assert (t["error_code"], t["num_partitions"], t["replication_factor"]) == (0, 2, 1)
            configs = {c["name"]: c for c in t["configs"]}
            assert configs["retention.ms"]["value"] == "1234"
            assert configs["retention.ms"]["config_source"] == 1  # DYNAMIC_TOPIC_CONFIG
            assert configs["cleanup.policy"]["value"] == "delete"
            checked = await conn.send(ApiKey.CREATE_TOPICS, {"timeout_ms": 30000, "validate_only": True,
                "topics": [{"name": "dry", "num_partitions": -1, "replication_factor": -1, "assignments": [],
                            "configs": [{"name": "cleanup.policy", "value": "compact"}]}]}, 7)  # fmt: skip
            [d] = checked["topics"]
            assert (d["error_code"], d["num_partitions"], d["replication_factor"]) == (0, 1, 1)
            assert {c["name"]: c["value"] for c in d["configs"]}["cleanup.policy"] == "compact"
            deleted = await conn.send(ApiKey.DELETE_TOPICS, {"timeout_ms": 30000, "topics": [
                {"name": "v7"}, {"name": None, "topic_id": uuid.uuid4()}]}, 6)  # fmt: skip
            by_name, by_id = deleted["responses"]
            assert (by_name["name"], by_name["error_code"]) == ("v7", 0)
            assert by_id["error_code"] == Errors.UNKNOWN_TOPIC_ID
            pid = await conn.send(ApiKey.INIT_PRODUCER_ID, {"transaction_timeout_ms": 1000,
                                                            "producer_id": 5, "producer_epoch": -1}, 4)  # fmt: skip
            assert pid["error_code"] == 42
            fresh = await conn.send(ApiKey.INIT_PRODUCER_ID, {"transaction_timeout_ms": 1000,
                                                              "producer_id": 5, "producer_epoch": 3}, 4)  # fmt: skip
            assert fresh["error_code"] == 0 and fresh["producer_id"] >= 0

    run(scenario())
