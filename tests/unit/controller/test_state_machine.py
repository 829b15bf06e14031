"""ControllerStateMachine: one request batch per state change call; a failure drops the
batch, and only a ControllerMovedError goes up."""

from __future__ import annotations

import asyncio

import pytest

from kafpy.common.errors import ControllerMovedError
from kafpy.common.topic_partition import TopicPartition
from tests.unit.controller.fixtures import ControllerCluster


def test_a_failed_change_drops_its_batch_and_only_a_moved_controller_goes_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def main() -> None:
        async with ControllerCluster() as cluster:
            await cluster.start(0)
            psm = cluster.controller().partition_state_machine
            batch = psm.batch

            async def queue_then_fail() -> str:
                batch.add_stop_replica_request_for_brokers(
                    [0], TopicPartition("t", 0), delete_partition=False
                )
                raise RuntimeError("boom")

            result = await psm._in_request_batch(
                "partitions", "OnlinePartition", queue_then_fail, lambda e: f"failed: {e}"
            )
            assert result == "failed: boom"
            assert not batch.stop_replica_request_map  # dropped, so the next batch can open
            assert "Error while moving some partitions to OnlinePartition state" in caplog.text

            async def moved() -> str:
                raise ControllerMovedError("another controller")

            with pytest.raises(ControllerMovedError):
                await psm._in_request_batch("replicas", "OfflineReplica", moved, str)
            assert (
                "Controller moved to another broker when moving some replicas to OfflineReplica"
                in caplog.text
            )

    asyncio.run(main())
