"""ControllerChannelManager and ControllerBrokerRequestBatch: Kafka's request bodies at each
version, one queue per broker, retries while the broker is alive, drops when it is removed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kafpy.common.topic_partition import TopicPartition
from kafpy.controller.controller_channel_manager import (
    ControllerBrokerRequestBatch,
    ControllerChannelManager,
)
from kafpy.controller.controller_context import ControllerContext
from kafpy.controller.state_change_logger import StateChangeLogger
from kafpy.metadata.zk_data import Broker, EndPoint, LeaderAndIsr, LeaderIsrAndControllerEpoch
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.messages import REQUESTS


def _broker(broker_id: int, rack: str | None = None) -> Broker:
    return Broker(broker_id, (EndPoint("h", 9000 + broker_id, "PLAINTEXT", "PLAINTEXT"),), rack)


class FlakyChannel:
    """Fails the first `failures` sends, then records and answers."""

    def __init__(self, failures: int = 0, version: int = 1) -> None:
        self.failures = failures
        self.version = version
        self.sent: list[tuple[int, int, dict[str, Any]]] = []
        self.connects = 0
        self._connected = False
        self.gate: asyncio.Event | None = None

    @property
    def connected(self) -> bool:
        return self._connected

    async def connect(self) -> None:
        self.connects += 1
        self._connected = True

    def pick_version(self, api_key: int) -> int:
        return self.version

    async def send(
        self, api_key: int, body: dict[str, Any], version: int | None = None
    ) -> dict[str, Any]:
        if self.gate is not None:
            await self.gate.wait()
        if self.failures:
            self.failures -= 1
            raise ConnectionError("connection reset")
        assert version is not None
        self.sent.append((api_key, version, body))
        return {"error_code": 0, "partition_errors": []}

    def close(self) -> None:
        self._connected = False


def _setup(
    channels: dict[int, FlakyChannel],
) -> tuple[ControllerContext, ControllerChannelManager, ControllerBrokerRequestBatch]:
    ctx = ControllerContext()
    ctx.epoch = 3
    ctx.set_live_brokers_and_epochs(
        {b: (_broker(b, "r1" if b == 1 else None), 100 + b) for b in channels}
    )
    manager = ControllerChannelManager(
        0, ctx, lambda broker_id, host, port: channels[broker_id], "PLAINTEXT", retry_backoff_s=0
    )
    batch = ControllerBrokerRequestBatch(0, ctx, manager, StateChangeLogger(0, True))
    return ctx, manager, batch


async def _drain(manager: ControllerChannelManager) -> None:
    for _ in range(1000):
        await asyncio.sleep(0)
        if manager.pending_requests() == 0:
            return
    raise AssertionError("requests still pending")


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_leader_and_isr_body_at_each_version(version: int) -> None:
    async def main() -> None:
        channels = {0: FlakyChannel(version=version), 1: FlakyChannel(version=version)}
        ctx, manager, batch = _setup(channels)
        manager.startup()
        tp = TopicPartition("t", 0)
        state = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 4, (1, 0), 7), 2)
        ctx.update_partition_replica_assignment(tp, [1, 0])
        ctx.partition_leadership_info[tp] = state
        batch.new_batch()
        batch.add_leader_and_isr_request_for_brokers([0], tp, state, [1, 0], is_new=True)
        batch.send_requests_to_brokers(ctx.epoch)
        await _drain(manager)
        api_key, sent_version, body = channels[0].sent[0]
        assert (api_key, sent_version) == (ApiKey.LEADER_AND_ISR, version)
        message = REQUESTS[ApiKey.LEADER_AND_ISR]
        decoded = message.decode(version, message.encode(version, body))
        assert decoded["controller_id"] == 0 and decoded["controller_epoch"] == 3
        partition_states = (
            decoded["ungrouped_partition_states"]
            if version < 2
            else decoded["topic_states"][0]["partition_states"]
        )
        s = partition_states[0]
        assert (
            s["partition_index"],
            s["leader"],
            s["leader_epoch"],
            s["isr"],
            s["zk_version"],
        ) == (
            0,
            1,
            4,
            [1, 0],
            7,
        )
        assert s["controller_epoch"] == 2 and s["replicas"] == [1, 0]
        if version >= 1:
            assert s["is_new"] is True
        if version >= 2:
            assert decoded["broker_epoch"] == 100
        assert decoded["live_leaders"] == [{"broker_id": 1, "host_name": "h", "port": 9001}]
        # LeaderAndIsr brings UpdateMetadata to every live broker
        assert [a for a, _, _ in channels[1].sent] == [ApiKey.UPDATE_METADATA]
        assert [a for a, _, _ in channels[0].sent] == [
            ApiKey.LEADER_AND_ISR,
            ApiKey.UPDATE_METADATA,
        ]
        await manager.shutdown()

    asyncio.run(main())


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4, 5])
def test_update_metadata_body_at_each_version(version: int) -> None:
    async def main() -> None:
        channels = {0: FlakyChannel(version=version), 1: FlakyChannel(version=version)}
        ctx, manager, batch = _setup(channels)
        manager.startup()
        tp = TopicPartition("t", 0)
        ctx.update_partition_replica_assignment(tp, [1, 5])
        ctx.partition_leadership_info[tp] = LeaderIsrAndControllerEpoch(
            LeaderAndIsr(1, 0, (1,), 0), 3
        )
        batch.new_batch()
        batch.add_update_metadata_request_for_brokers([1], [tp])
        batch.send_requests_to_brokers(ctx.epoch)
        await _drain(manager)
        assert channels[0].sent == []
        _, _, body = channels[1].sent[0]
        message = REQUESTS[ApiKey.UPDATE_METADATA]
        decoded = message.decode(version, message.encode(version, body))
        states = (
            decoded["ungrouped_partition_states"]
            if version < 5
            else decoded["topic_states"][0]["partition_states"]
        )
        assert states[0]["leader"] == 1 and states[0]["replicas"] == [1, 5]
        if version >= 4:
            assert states[0]["offline_replicas"] == [5]
        brokers = {b["id"]: b for b in decoded["live_brokers"]}
        assert set(brokers) == {0, 1}
        if version == 0:
            assert (brokers[1]["v0_host"], brokers[1]["v0_port"]) == ("h", 9001)
        else:
            assert brokers[1]["endpoints"][0]["port"] == 9001
        if version >= 2:
            assert brokers[1]["rack"] == "r1" and brokers[0]["rack"] is None
        if version >= 3:
            assert brokers[1]["endpoints"][0]["listener"] == "PLAINTEXT"
        await manager.shutdown()

    asyncio.run(main())


@pytest.mark.parametrize("version", [0, 1])
def test_stop_replica_bodies_split_by_delete_flag(version: int) -> None:
    async def main() -> None:
        channels = {0: FlakyChannel(version=version)}
        ctx, manager, batch = _setup(channels)
        manager.startup()
        responses: list[tuple[int, dict[str, Any]]] = []
        batch.new_batch()
        batch.add_stop_replica_request_for_brokers([0], TopicPartition("t", 0), False)
        batch.add_stop_replica_request_for_brokers(
            [0], TopicPartition("t", 1), True, lambda b, r: responses.append((b, r))
        )
        batch.send_requests_to_brokers(ctx.epoch)
        await _drain(manager)
        message = REQUESTS[ApiKey.STOP_REPLICA]
        decoded = [
            message.decode(version, message.encode(version, body))
            for _, _, body in channels[0].sent
        ]
        assert [d["delete_partitions"] for d in decoded] == [True, False]
        if version == 0:
            assert decoded[0]["ungrouped_partitions"] == [{"topic_name": "t", "partition_index": 1}]
        else:
            assert decoded[0]["topics"] == [{"name": "t", "partition_indexes": [1]}]
            assert decoded[0]["broker_epoch"] == 100
        assert [b for b, _ in responses] == [0]  # only the delete=true request had a callback
        await manager.shutdown()

    asyncio.run(main())


def test_requests_are_retried_while_the_broker_is_alive() -> None:
    async def main() -> None:
        channels = {0: FlakyChannel(failures=3)}
        ctx, manager, batch = _setup(channels)
        manager.startup()
        batch.new_batch()
        batch.add_update_metadata_request_for_brokers([0])
        batch.send_requests_to_brokers(ctx.epoch)
        await _drain(manager)
        assert len(channels[0].sent) == 1 and channels[0].connects == 4
        await manager.shutdown()

    asyncio.run(main())


def test_requests_for_a_removed_broker_are_dropped_and_later_ones_not_queued() -> None:
    async def main() -> None:
        channels = {0: FlakyChannel()}
        channels[0].gate = asyncio.Event()  # the broker never answers
        ctx, manager, batch = _setup(channels)
        manager.startup()
        for _ in range(3):
            batch.new_batch()
            batch.add_update_metadata_request_for_brokers([0])
            batch.send_requests_to_brokers(ctx.epoch)
        await asyncio.sleep(0)
        assert manager.pending_requests() == 3
        manager.remove_broker(0)
        assert manager.pending_requests() == 0
        manager.send_request(0, ApiKey.UPDATE_METADATA, lambda v: {})
        assert manager.pending_requests() == 0
        channels[0].gate.set()
        await asyncio.sleep(0)
        assert channels[0].sent == []
        await manager.shutdown()

    asyncio.run(main())


def test_new_batch_refuses_to_drop_unsent_requests() -> None:
    async def main() -> None:
        ctx, manager, batch = _setup({0: FlakyChannel()})
        batch.add_update_metadata_request_for_brokers([0])
        with pytest.raises(RuntimeError, match="not empty"):
            batch.new_batch()

    asyncio.run(main())
