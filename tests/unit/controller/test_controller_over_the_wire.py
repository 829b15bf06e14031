"""The controller's default channel (kafpy's BrokerConnection) against the client tests'
FakeBroker on loopback: LeaderAndIsr, UpdateMetadata and StopReplica go over the real wire
format, and a topic deletion completes from the broker's StopReplica answers."""

from __future__ import annotations

import asyncio
from typing import Any

from kafpy.controller.controller_config import ControllerConfig
from kafpy.controller.kafka_controller import KafkaController
from kafpy.metadata.embedded_store import EmbeddedStore
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import Broker, BrokerInfo, EndPoint
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.headers import RequestHeader
from kafpy.testing.wait import async_wait_until
from tests.unit.client.fake_broker import FakeBroker


def _partition_errors(body: dict[str, Any]) -> dict[str, Any]:
    names = [
        (t["topic_name"], s["partition_index"])
        for t in body["topic_states"]
        for s in t["partition_states"]
    ]
    return {
        "error_code": 0,
        "partition_errors": [
            {"topic_name": t, "partition_index": p, "error_code": 0} for t, p in names
        ],
    }


def test_requests_reach_a_broker_over_tcp() -> None:
    async def main() -> None:
        broker = FakeBroker(node_id=0)
        broker.handlers[ApiKey.LEADER_AND_ISR] = lambda h, b: {
            "error_code": 0,
            "partition_errors": [],
        }
        broker.handlers[ApiKey.UPDATE_METADATA] = lambda h, b: {"error_code": 0}

        def stop_replica(header: RequestHeader, body: dict[str, Any]) -> dict[str, Any]:
            return _partition_errors(body)

        broker.handlers[ApiKey.STOP_REPLICA] = stop_replica
        async with broker:
            store = EmbeddedStore(None)
            await store.start()
            zk = KafkaZkClient(store)
            await zk.make_sure_persistent_paths_exist()
            info = BrokerInfo(
                Broker(0, (EndPoint("127.0.0.1", broker.port, "PLAINTEXT", "PLAINTEXT"),)), 4
            )
            await zk.register_broker(info)
            controller = KafkaController(ControllerConfig(broker_id=0), zk, broker_info=info)
            await controller.startup()
            try:
                await async_wait_until(
                    lambda: controller.is_active, 5.0, "election", interval_s=0.001
                )
                await zk.create_topic_with_config("t", {0: [0]}, {})
                await async_wait_until(
                    lambda: bool(broker.requests_of(ApiKey.LEADER_AND_ISR)),
                    5.0,
                    "LeaderAndIsr",
                    interval_s=0.001,
                )
                lai = broker.requests_of(ApiKey.LEADER_AND_ISR)[0]
                assert lai.header.api_version == 5 and lai.header.client_id == "0"
                assert lai.body["topic_states"][0]["topic_id"] is not None
                state = lai.body["topic_states"][0]["partition_states"][0]
                assert (state["leader"], state["isr"], state["is_new"]) == (0, [0], True)
                await async_wait_until(
                    lambda: any(
                        r.body["topic_states"] for r in broker.requests_of(ApiKey.UPDATE_METADATA)
                    ),
                    5.0,
                    "UpdateMetadata with the topic",
                    interval_s=0.001,
                )
                await zk.create_delete_topic_path("t")

                async def deleted() -> bool:
                    return await store.exists("/brokers/topics/t") is None

                for _ in range(500):
                    if await deleted():
                        break
                    await asyncio.sleep(0.01)
                assert await deleted()
                stops = broker.requests_of(ApiKey.STOP_REPLICA)
                assert [r.header.api_version for r in stops] == [3, 3]
                assert [
                    {
                        s["delete_partition"]
                        for t in r.body["topic_states"]
                        for s in t["partition_states"]
                    }
                    for r in stops
                ] == [{False}, {True}]
            finally:
                await controller.shutdown()
                await store.close()

    asyncio.run(main())
