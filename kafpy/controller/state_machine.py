"""What the controller's two state machines share: PartitionStateMachine and ReplicaStateMachine.

Each moves its items (partitions, replicas) between states on the controller's context,
queuing the requests a move implies on the shared ControllerBrokerRequestBatch and logging
every transition to state-change.log. A `handle_state_changes` call is one batch: opened,
filled, sent to the brokers; when it fails the batch is dropped, a ControllerMovedError
goes up (this broker is no longer the controller) and any other error is logged, as
Kafka's handleStateChanges does in both machines.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from kafpy.common.errors import ControllerMovedError
from kafpy.common.logger import component_logger
from kafpy.controller.controller_channel_manager import ControllerBrokerRequestBatch
from kafpy.controller.controller_context import ControllerContext
from kafpy.controller.state_change_logger import StateChangeLogger
from kafpy.metadata.kafka_zk_client import KafkaZkClient

T = TypeVar("T")

# Rounds of one state update in ZooKeeper (an election, an ISR shrink): a round retries
# only the partitions whose state node changed under it (zkVersion conflict), so this
# bounds a conflict that never resolves.
MAX_ZK_UPDATE_ATTEMPTS = 10


class StateChangeFailedError(Exception):
    """A partition or replica could not be moved to the requested state."""


class ControllerStateMachine:
    """The base of the partition and replica state machines: the controller's context, the
    ZooKeeper client, the request batch, the state-change log, and one batch per call."""

    def __init__(
        self,
        name: str,
        controller_id: int,
        context: ControllerContext,
        zk_client: KafkaZkClient,
        batch: ControllerBrokerRequestBatch,
        state_change_logger: StateChangeLogger,
        is_topic_queued_for_deletion: Callable[[str], bool],
    ) -> None:
        self.controller_id = controller_id
        self.context = context
        self.zk_client = zk_client
        self.batch = batch
        self.state_change_logger = state_change_logger
        self.is_topic_queued_for_deletion = is_topic_queued_for_deletion
        self.log = component_logger(
            f"kafpy.controller.{name}", f"{name} controllerId", controller_id
        )

    def _scl(self) -> StateChangeLogger:
        return self.state_change_logger.with_controller_epoch(self.context.epoch)

    async def _in_request_batch(
        self,
        items: str,
        target_state: object,
        work: Callable[[], Awaitable[T]],
        on_error: Callable[[Exception], T],
    ) -> T:
        """Run `work` in a new batch and send the batch; on an error the batch is dropped
        and the error logged (naming the `items` moved), then a ControllerMovedError is
        raised again and any other becomes `on_error(e)`."""
        try:
            self.batch.new_batch()
            result = await work()
            self.batch.send_requests_to_brokers(self.context.epoch)
            return result
        except ControllerMovedError:
            self.batch.clear()
            self.log.error(
                "Controller moved to another broker when moving some %s to %s state",
                items,
                target_state,
            )
            raise
        except Exception as e:
            self.batch.clear()
            self.log.exception("Error while moving some %s to %s state", items, target_state)
            return on_error(e)
