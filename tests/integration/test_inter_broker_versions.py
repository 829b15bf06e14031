"""The inter-broker APIs at Kafka 2.8's newest versions, sent by hand to a real broker as a
Kafka 2.8 controller would: LeaderAndIsr v5 with a topic id (the response grouped by topic id,
partition.metadata written as Kafka writes it, a different id for the same log refused with
INCONSISTENT_TOPIC_ID, before and after a restart), StopReplica v3 (a stale leader epoch
fenced, the deletion epoch deleting), ControlledShutdown v0 (its header without a client id)
and v3."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from kafpy.common.kafka_uuid import uuid_to_string
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from tests.fixtures.broker import KafpyBroker
from tests.integration.test_forged_controller_requests import send

# above any epoch the broker's own controller reaches here, restarts included
CONTROLLER_EPOCH = 1000
TOPIC_ID = uuid.UUID("6f1f3b52-8a44-4c4e-9b5c-2d7c8f0e1a11")
OTHER_ID = uuid.UUID("0a9e0c6b-5d3e-4f59-8d0e-7c2b1a3f4e55")


def leader_and_isr(broker: KafpyBroker, topic_id: uuid.UUID, leader_epoch: int) -> Any:
    state = {
        "partition_index": 0, "controller_epoch": CONTROLLER_EPOCH, "leader": 0, "leader_epoch": leader_epoch,
        "isr": [0], "zk_version": 0, "replicas": [0], "adding_replicas": [],
        "removing_replicas": [], "is_new": True,
    }  # fmt: skip
    body = {
        "controller_id": 0, "controller_epoch": CONTROLLER_EPOCH, "broker_epoch": -1, "type": 0,
        "topic_states": [{"topic_name": "ids", "topic_id": topic_id, "partition_states": [state]}],
        "live_leaders": [{"broker_id": 0, "host_name": broker.host, "port": broker.port}],
    }  # fmt: skip
    return asyncio.run(send(broker, ApiKey.LEADER_AND_ISR, body, 5))


def stop_replica(broker: KafpyBroker, leader_epoch: int, delete: bool) -> Any:
    body = {
        "controller_id": 0, "controller_epoch": CONTROLLER_EPOCH, "broker_epoch": -1,
        "topic_states": [{"topic_name": "ids", "partition_states": [
            {"partition_index": 0, "leader_epoch": leader_epoch, "delete_partition": delete}]}],
    }  # fmt: skip
    return asyncio.run(send(broker, ApiKey.STOP_REPLICA, body, 3))


def errors_by_topic_id(response: Any) -> list[tuple[uuid.UUID, int, int]]:
    return [
        (t["topic_id"], e["partition_index"], e["error_code"])
        for t in response["topics"]
        for e in t["partition_errors"]
    ]


def test_leader_and_isr_v5_topic_ids_and_stop_replica_v3(kafpy_broker: KafpyBroker) -> None:
    response = leader_and_isr(kafpy_broker, TOPIC_ID, 7)
    assert response["error_code"] == Errors.NONE
    assert errors_by_topic_id(response) == [(TOPIC_ID, 0, Errors.NONE)]
    metadata_file = kafpy_broker.log_dir / "ids-0" / "partition.metadata"
    written = f"version: 0\ntopic_id: {uuid_to_string(TOPIC_ID)}".encode()
    assert metadata_file.read_bytes() == written

    # the same log under another topic id: a topic deleted and created again meanwhile
    response = leader_and_isr(kafpy_broker, OTHER_ID, 8)
    assert errors_by_topic_id(response) == [(OTHER_ID, 0, Errors.INCONSISTENT_TOPIC_ID)]
    assert metadata_file.read_bytes() == written
    kafpy_broker.restart()  # the id is read back from the file
    response = leader_and_isr(kafpy_broker, OTHER_ID, 9)
    assert errors_by_topic_id(response) == [(OTHER_ID, 0, Errors.INCONSISTENT_TOPIC_ID)]
    assert errors_by_topic_id(leader_and_isr(kafpy_broker, TOPIC_ID, 9)) == [
        (TOPIC_ID, 0, Errors.NONE)
    ]

    # a StopReplica older than the replica's leader epoch is fenced and changes nothing
    response = stop_replica(kafpy_broker, 5, delete=True)
    assert response["partition_errors"] == [
        {"topic_name": "ids", "partition_index": 0, "error_code": Errors.FENCED_LEADER_EPOCH}
    ]
    assert metadata_file.exists()
    # the deletion epoch (-2) deletes whatever the replica's epoch
    response = stop_replica(kafpy_broker, -2, delete=True)
    assert response["partition_errors"] == [
        {"topic_name": "ids", "partition_index": 0, "error_code": Errors.NONE}
    ]
    assert not (kafpy_broker.log_dir / "ids-0").exists()


def test_controlled_shutdown_v0_and_v3_are_answered(kafpy_broker: KafpyBroker) -> None:
    # broker 99 is not in the cluster: the controller says so, in either version
    for version in (0, 3):
        response = asyncio.run(
            send(kafpy_broker, ApiKey.CONTROLLED_SHUTDOWN, {"broker_id": 99}, version)
        )
        assert response["error_code"] == Errors.BROKER_NOT_AVAILABLE
        assert response["remaining_partitions"] == []
