"""A broker's epoch after its ZooKeeper session expired (KIP-380).

The broker registers again, and the czxid of its new /brokers/ids/<id> is its new epoch.
From then on it refuses controller requests meant for its previous registration with
STALE_BROKER_EPOCH, and its controlled shutdown, sent with the new epoch, hands its
leaderships off.

Both brokers run in this process, on the test's event loop, so that the test can end broker
1's session as ZooKeeper ends the session of a client gone too long: another connection with
the same session id and password closes it (tests.fixtures.zookeeper.expire_session).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kafpy.client.admin_client import AdminClient, NewTopic
from kafpy.client.connection import BrokerConnection
from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import BrokerIdZNode
from kafpy.metadata.zookeeper_store import ZooKeeperStore
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.server.kafka_config import KafkaConfig
from kafpy.server.kafka_server import KafkaServer
from kafpy.testing.wait import async_wait_until
from tests.fixtures.cluster import CLUSTER_TEST_DEFAULTS
from tests.fixtures.zookeeper import expire_session

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(120)]
T = TypeVar("T")
WAIT_S = 30.0
TOPIC = TopicPartition("t", 0)
FORGED = TopicPartition("forged", 0)


async def start_broker(tmp_path: Path, broker_id: int, connect: str) -> KafkaServer:
    server = KafkaServer(KafkaConfig({
        **CLUSTER_TEST_DEFAULTS,
        "broker.id": str(broker_id),
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "log.dirs": str(tmp_path / f"broker-{broker_id}"),
        "zookeeper.connect": connect,
        "offsets.topic.replication.factor": "1",
    }))  # fmt: skip
    await server.startup()
    return server


def port(server: KafkaServer) -> int:
    assert server.socket_server is not None
    return server.socket_server.bound_port("PLAINTEXT")


async def send(server: KafkaServer, api_key: ApiKey, version: int, body: dict[str, Any]) -> Any:
    """Send one request to `server` as its controller would, on a connection of its own."""
    conn = BrokerConnection("127.0.0.1", port(server), request_timeout_ms=10000)
    try:
        await conn.connect()
        return await conn.send(api_key, body, version=version)
    finally:
        await conn.close()


async def registered_epoch(zk: KafkaZkClient, broker_id: int) -> int:
    """The broker's epoch as ZooKeeper has it: the czxid of its registration."""
    _, stat = await zk.store.get(BrokerIdZNode.path(broker_id))
    return stat.czxid


async def leader_and_isr(zk: KafkaZkClient, tp: TopicPartition) -> tuple[int, list[int]] | None:
    state = await zk.get_topic_partition_state(tp)
    if state is None:
        return None
    return state.leader_and_isr.leader, list(state.leader_and_isr.isr)


def test_after_a_session_expiry_old_requests_are_fenced_and_controlled_shutdown_works(
    zookeeper_connect: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario(zk: KafkaZkClient, servers: list[KafkaServer]) -> None:
        servers.append(await start_broker(tmp_path, 0, zookeeper_connect))

        async def broker_0_is_controller() -> bool:
            return await zk.get_controller_id() == 0

        await async_wait_until(
            broker_0_is_controller, WAIT_S, "broker 0 to be the controller", retry_on=(Exception,)
        )
        servers.append(b1 := await start_broker(tmp_path, 1, zookeeper_connect))
        old_epoch = await registered_epoch(zk, 1)
        assert b1.broker_epoch == old_epoch

        assert isinstance(b1.store, ZooKeeperStore)
        await expire_session(b1.store, zookeeper_connect, WAIT_S)

        async def new_epoch_held() -> int:
            epoch = await registered_epoch(zk, 1)
            return epoch if epoch > old_epoch and b1.broker_epoch == epoch else 0

        new_epoch = await async_wait_until(
            new_epoch_held,
            WAIT_S,
            "broker 1 to register again and hold its epoch",
            retry_on=(Exception,),
        )

        # broker 1 leads a partition that broker 0 follows in sync
        async with AdminClient.connect(f"127.0.0.1:{port(servers[0])}") as admin:
            await admin.create_topics([NewTopic(TOPIC.topic, replica_assignment={0: [1, 0]})])

        async def led_by_broker_1() -> bool:
            return await leader_and_isr(zk, TOPIC) == (1, [1, 0])

        await async_wait_until(
            led_by_broker_1,
            WAIT_S,
            f"broker 1 to lead {TOPIC} with broker 0 in sync",
            retry_on=(Exception,),
        )
        controller = await zk.get_controller_epoch()
        assert controller is not None
        header = {"controller_id": 0, "controller_epoch": controller[0]}

        # requests meant for broker 1's previous registration are refused, and do nothing
        forged_state = {
            "partition_index": FORGED.partition, "controller_epoch": controller[0], "leader": 1,
            "leader_epoch": 0, "isr": [1], "zk_version": 0, "replicas": [1], "is_new": True,
        }  # fmt: skip
        for api_key, version, body in [
            (ApiKey.LEADER_AND_ISR, 4, {**header, "live_leaders": [], "topic_states": [
                {"topic_name": FORGED.topic, "partition_states": [forged_state]}]}),
            (ApiKey.STOP_REPLICA, 2, {**header, "delete_partitions": True, "topics": [
                {"name": TOPIC.topic, "partition_indexes": [TOPIC.partition]}]}),
            (ApiKey.UPDATE_METADATA, 6, {**header, "topic_states": [], "live_brokers": []}),
        ]:  # fmt: skip
            response = await send(b1, api_key, version, {**body, "broker_epoch": old_epoch})
            assert response["error_code"] == Errors.STALE_BROKER_EPOCH, api_key.name
        assert b1.log_manager is not None
        assert b1.log_manager.get_log(FORGED) is None
        assert b1.log_manager.get_log(TOPIC) is not None
        # one meant for its current registration is taken
        response = await send(b1, ApiKey.LEADER_AND_ISR, 4, {
            **header, "broker_epoch": new_epoch, "live_leaders": [], "topic_states": [],
        })  # fmt: skip
        assert response["error_code"] == Errors.NONE

        # a controlled shutdown hands the partition to broker 0, accepted at the first try
        with caplog.at_level(logging.INFO, logger="kafpy.server.KafkaServer"):
            await b1.shutdown()
        server_log = [
            r.getMessage() for r in caplog.records if r.name == "kafpy.server.KafkaServer"
        ]
        assert "[KafkaServer id=1] Controlled shutdown succeeded" in server_log
        assert not [m for m in server_log if "Remaining partitions to move" in m]
        assert await leader_and_isr(zk, TOPIC) == (0, [0])

    async def main() -> None:
        zk = KafkaZkClient(ZooKeeperStore(zookeeper_connect))
        await zk.store.start()
        servers: list[KafkaServer] = []
        try:
            await scenario(zk, servers)
        finally:
            for server in reversed(servers):
                await server.shutdown()  # again for broker 1: does nothing
            await zk.store.close()

    asyncio.run(main())
