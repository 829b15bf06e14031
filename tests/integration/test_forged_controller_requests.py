"""Controller requests with names no topic may have, sent by hand to a real broker: each
partition is refused with INVALID_TOPIC_EXCEPTION, nothing reaches the disk, and the
broker restarts as before."""

from __future__ import annotations

import asyncio
from typing import Any

from confluent_kafka import Producer

from kafpy.client.connection import BrokerConnection
from kafpy.protocol.api_keys import ApiKey
from tests.fixtures.broker import KafpyBroker
from tests.integration.test_restart import consume_all

INVALID_TOPIC_EXCEPTION = 17
FORGED = [("", -5), ("", 0), ("t", -1), ("..", 0), ("a/b", 0), ("x" * 300, 0)]


def state(topic: str, partition: int) -> dict[str, Any]:
    return {
        "topic_name": topic, "partition_index": partition, "controller_epoch": 1, "leader": 0,
        "leader_epoch": 7, "isr": [0], "zk_version": 0, "replicas": [0], "offline_replicas": [],
        "is_new": True,
    }  # fmt: skip


async def send(broker: KafpyBroker, api_key: ApiKey, body: dict[str, Any], version: int) -> Any:
    conn = BrokerConnection(broker.host, broker.port, request_timeout_ms=10000)
    try:
        await conn.connect()
        return await conn.send(api_key, body, version=version)
    finally:
        await conn.close()


def test_forged_leader_and_isr_and_update_metadata_touch_nothing(
    kafpy_broker: KafpyBroker,
) -> None:
    producer = Producer({"bootstrap.servers": kafpy_broker.bootstrap, "acks": "all"})
    producer.produce("good", value=b"before")
    assert producer.flush(30) == 0
    dirs_before = sorted(p.name for p in kafpy_broker.log_dir.iterdir() if p.is_dir())

    states = [state(t, p) for t, p in FORGED]
    response = asyncio.run(send(kafpy_broker, ApiKey.LEADER_AND_ISR, {
        "controller_id": 0, "controller_epoch": 1, "ungrouped_partition_states": states,
        "live_leaders": [],
    }, 1))  # fmt: skip
    assert response["error_code"] == 0
    assert sorted(
        (e["topic_name"], e["partition_index"], e["error_code"])
        for e in response["partition_errors"]
    ) == sorted((t, p, INVALID_TOPIC_EXCEPTION) for t, p in FORGED)
    response = asyncio.run(send(kafpy_broker, ApiKey.UPDATE_METADATA, {
        "controller_id": 0, "controller_epoch": 1, "ungrouped_partition_states": states,
        "live_brokers": [{"id": 0, "endpoints": [{"port": kafpy_broker.port,
                          "host": kafpy_broker.host, "listener": "PLAINTEXT",
                          "security_protocol": 0}], "rack": None}],
    }, 5))  # fmt: skip
    assert response["error_code"] == 0
    metadata = asyncio.run(send(kafpy_broker, ApiKey.METADATA, {"topics": None}, 1))
    assert sorted(t["name"] for t in metadata["topics"]) == ["good"]

    assert sorted(p.name for p in kafpy_broker.log_dir.iterdir() if p.is_dir()) == dirs_before
    assert "Traceback" not in kafpy_broker.log_path.read_text(errors="replace")
    assert kafpy_broker.stop() == 0
    kafpy_broker.start()  # the forged partitions left nothing that breaks the load
    assert consume_all(kafpy_broker.bootstrap, "good") == [(0, b"before")]
