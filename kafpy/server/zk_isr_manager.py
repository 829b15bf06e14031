"""ZkIsrManager: a leader's ISR changes, written to ZooKeeper and announced to the controller.

The leader (ReplicaManager: isr-expiration shrinks, a follower that caught up expands)
submits a new ISR; it is written to the partition's state znode at the version the leader
knows, in a task, and the partition takes it once ZooKeeper accepted it. Each accepted
change is remembered and announced under /isr_change_notification
(`isr-change-propagation`, Kafka's rule: once no change came for 5 s, or at least every
60 s while changes keep coming) so that the controller sends UpdateMetadata. Kafka 2.8's
ZkIsrManager (`submit`, `maybePropagateIsrChanges`).

Kafka 2.8 uses it below inter.broker.protocol.version 2.7-IV2 and AlterIsrManager from
there on (`alter_isr_manager.is_alter_isr_supported`). kafpy refuses any IBP but 2.8 at
start-up (it speaks no older inter-broker protocol), so a KafkaServer always sends
AlterIsr; this path serves a ReplicaManager built without a controller channel (tests,
tools), and the controller still reads /isr_change_notification as Kafka 2.8's does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from kafpy.cluster.partition import Partition
from kafpy.common.logger import PrefixAdapter
from kafpy.common.time import Time
from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.errors import BadVersionError, NoNodeError
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import (
    IsrChangeNotificationSequenceZNode,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
)
from kafpy.server.kafka_config import KAFKA_CONFIG_DEF

# Kafka 2.x's ReplicaManager.IsrChangePropagationBlackOut / IsrChangePropagationInterval;
# the isr-change-propagation task runs every half blackout (2500 ms)
# (kafpy takes them as replica.isr.change.propagation.*; their defaults are declared there)
ISR_CHANGE_PROPAGATION_BLACKOUT_MS: int = KAFKA_CONFIG_DEF.default(
    "replica.isr.change.propagation.blackout.ms"
)
ISR_CHANGE_PROPAGATION_MAX_INTERVAL_MS: int = KAFKA_CONFIG_DEF.default(
    "replica.isr.change.propagation.max.interval.ms"
)

# (partition, leader epoch the change was made at, new ISR, its znode version)
IsrWritten = Callable[[Partition, int, list[int], int], None]


class ZkIsrManager:
    """Writes the ISR changes of the partitions this broker leads and announces them.

    `on_isr_written(partition, epoch, new_isr, zk_version)` is called once ZooKeeper took a
    change (at once without ZooKeeper); the caller applies it to the partition if it still
    leads it at that epoch, and calls `record_isr_change`.
    """

    def __init__(
        self,
        broker_id: int,
        zk_client: KafkaZkClient | None,
        time: Time,
        on_isr_written: IsrWritten,
        log: PrefixAdapter,
        *,
        blackout_ms: int = ISR_CHANGE_PROPAGATION_BLACKOUT_MS,
        max_interval_ms: int = ISR_CHANGE_PROPAGATION_MAX_INTERVAL_MS,
    ) -> None:
        self.broker_id = broker_id
        self.zk_client = zk_client
        self.time = time
        self.on_isr_written = on_isr_written
        self.log = log
        self.blackout_ms = blackout_ms
        self.max_interval_ms = max_interval_ms
        # partitions whose ISR changed since the last /isr_change_notification write
        self.isr_change_set: set[TopicPartition] = set()
        self.last_isr_change_ms = time.milliseconds()
        self.last_isr_propagation_ms = time.milliseconds()
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def check_ms(self) -> int:
        """How often isr-change-propagation looks at the change set (2500 ms by default)."""
        return max(1, min(self.blackout_ms, self.max_interval_ms) // 2)

    def submit(self, partition: Partition, new_isr: list[int]) -> None:
        """Write `new_isr` to the partition's state znode at its known version (in a task);
        the partition takes it once ZooKeeper accepted it."""
        partition.pending_isr = new_isr
        if self.zk_client is None:
            self.on_isr_written(
                partition, partition.leader_epoch, new_isr, partition.zk_version + 1
            )
            return
        task = asyncio.get_running_loop().create_task(self._write_isr(partition, new_isr))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _write_isr(self, partition: Partition, new_isr: list[int]) -> None:
        assert self.zk_client is not None
        tp = partition.topic_partition
        epoch, zk_version = partition.leader_epoch, partition.zk_version
        state = LeaderIsrAndControllerEpoch(
            LeaderAndIsr(self.broker_id, epoch, tuple(new_isr), zk_version),
            partition.controller_epoch,
        )
        try:
            stat = await self.zk_client.set_topic_partition_state(tp, state, zk_version)
        except BadVersionError:
            current = await self.zk_client.get_topic_partition_state(tp)
            if (
                current is not None
                and partition.pending_isr is new_isr
                and current.leader_and_isr.leader == self.broker_id
                and current.leader_and_isr.leader_epoch == epoch
            ):
                # our own earlier write (or an equivalent one): take its version and retry later
                partition.zk_version = current.leader_and_isr.zk_version
                partition.isr = list(current.leader_and_isr.isr)
                partition.pending_isr = None
            self.log.info(
                "Cached zkVersion %d not equal to that in zookeeper, skip updating ISR for %s",
                zk_version,
                tp,
            )
            return
        except NoNodeError:
            self.log.info("Partition %s has no state node any more; not updating its ISR", tp)
            return
        except Exception:
            self.log.exception("Error while writing the ISR of %s", tp)
            if partition.pending_isr is new_isr:
                partition.pending_isr = None
            return
        self.on_isr_written(partition, epoch, new_isr, stat.version)

    def record_isr_change(self, tp: TopicPartition) -> None:
        """Remember that `tp`'s ISR changed, for the next /isr_change_notification."""
        self.isr_change_set.add(tp)
        self.last_isr_change_ms = self.time.milliseconds()

    def should_propagate_isr_changes(self, now_ms: int) -> bool:
        """Kafka's rule: there are changes, and either none came in the last blackout
        (5 s) or the last announcement is older than the max interval (60 s). A lone change
        goes out within seconds; a storm of changes is batched instead of flooding the
        controller and, through it, every broker with UpdateMetadata."""
        return bool(self.isr_change_set) and (
            self.last_isr_change_ms + self.blackout_ms < now_ms
            or self.last_isr_propagation_ms + self.max_interval_ms < now_ms
        )

    async def maybe_propagate_isr_changes(self) -> None:
        """isr-change-propagation: when `should_propagate_isr_changes`, announce every
        partition whose ISR changed in one sequential /isr_change_notification node."""
        now = self.time.milliseconds()
        if self.zk_client is None or not self.should_propagate_isr_changes(now):
            return
        changed, self.isr_change_set = self.isr_change_set, set()
        try:
            await self.zk_client.store.create(
                IsrChangeNotificationSequenceZNode.path(),
                IsrChangeNotificationSequenceZNode.encode(sorted(changed)),
                sequential=True,
            )
        except Exception:
            self.isr_change_set |= changed
            raise
        self.last_isr_propagation_ms = now

    async def shutdown(self) -> None:
        """Cancel the ISR writes still in flight."""
        for task in list(self._tasks):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
