"""ProducerIdManager: hands out producer ids for InitProducerId, in blocks claimed from the
metadata store (Kafka's `kafka.coordinator.transaction.ProducerIdManager`).

Every broker claims blocks of 1000 ids from `/latest_producer_id_block`
(`{"version":1,"broker":0,"block_start":"0","block_end":"999"}`): it reads the node,
writes the next block with a version-checked set (or creates the node when there is
none) and retries when another broker got there first. Ids are then handed out from the
block without touching the store until it is used up, so no two brokers ever give out
the same id, even across restarts (an unused rest of a block is simply skipped).

`handle_init_producer_id` answers InitProducerId for idempotent producers: a new producer
id with epoch 0. A request with a transactional id goes to the transaction coordinator
(kafpy.coordinator.transaction), which takes its ids from `generate_producer_id`; only a
broker built without one answers it here, with an error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from kafpy.common.errors import KafkaError
from kafpy.common.logger import component_logger
from kafpy.metadata.errors import BadVersionError, NodeExistsError, NoNodeError
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import ProducerIdBlock, ProducerIdBlockZNode, ZkDataError

PRODUCER_ID_BLOCK_SIZE = 1000
_LONG_MAX = 2**63 - 1

# Wire error codes used in the InitProducerId answer.
_NONE = 0
_INVALID_REQUEST = 42


class ProducerIdsExhaustedError(KafkaError):
    """The next block would pass the largest int64; no producer id can be handed out."""


class ProducerIdManager:
    """Generates unique producer ids for one broker from blocks claimed in the metadata store.

    `await startup()` claims the first block (optional: the first `generate_producer_id`
    does it too). `generate_producer_id()` is safe to call from concurrent tasks on the
    store's event loop. Store errors other than version conflicts propagate.
    """

    def __init__(
        self, broker_id: int, zk_client: KafkaZkClient, block_size: int = PRODUCER_ID_BLOCK_SIZE
    ) -> None:
        self.broker_id = broker_id
        self.zk_client = zk_client
        self.block_size = block_size
        self.current_block = ProducerIdBlock(broker_id, -1, -1)
        self._next_producer_id = 0  # > block_end until a block is claimed
        self._lock = asyncio.Lock()
        self.log = component_logger(
            "kafpy.coordinator.transaction.ProducerIdManager", "ProducerId Manager", broker_id
        )

    async def startup(self) -> None:
        async with self._lock:
            if self._next_producer_id > self.current_block.block_end:
                await self._claim_new_block()

    async def generate_producer_id(self) -> int:
        """The next unused producer id (claims a new block when this one is used up)."""
        async with self._lock:
            if self._next_producer_id > self.current_block.block_end:
                await self._claim_new_block()
            producer_id = self._next_producer_id
            self._next_producer_id += 1
            return producer_id

    async def _claim_new_block(self) -> None:
        store = self.zk_client.store
        path = ProducerIdBlockZNode.path
        while True:
            try:
                data, stat = await store.get(path)
                version: int | None = stat.version
            except NoNodeError:
                data, version = b"", None
            try:
                current = ProducerIdBlockZNode.decode(data)
            except ZkDataError as e:
                raise KafkaError(
                    f"Cannot claim a block of producer ids: {e}. Fix or delete the node {path}."
                ) from e
            if current is None:
                self.log.debug("There is no producerId block yet, creating the first block")
                block = ProducerIdBlock(self.broker_id, 0, self.block_size - 1)
            else:
                self.log.debug(
                    "Read current producerId block %s, Zk path version %s", current, version
                )
                if current.block_end > _LONG_MAX - self.block_size:
                    self.log.error(
                        "Exhausted all producerIds as the next block's end producerId would "
                        "exceed the long type limit (current block end producerId is %d)",
                        current.block_end,
                    )
                    raise ProducerIdsExhaustedError(
                        "Have exhausted all producerIds: the next block would pass 2^63-1."
                    )
                block = ProducerIdBlock(
                    self.broker_id, current.block_end + 1, current.block_end + self.block_size
                )
            encoded = ProducerIdBlockZNode.encode(block)
            try:
                if version is None:
                    await store.create(path, encoded, make_parents=True)
                    new_version = 0
                else:
                    new_version = (await store.set(path, encoded, version)).version
            except (BadVersionError, NodeExistsError, NoNodeError):
                self.log.debug("Another broker claimed the producerId block first; retrying")
                continue
            self.current_block = block
            self._next_producer_id = block.block_start
            self.log.info(
                "Acquired new producerId block %s by writing to Zk with path version %d",
                block,
                new_version,
            )
            return

    async def handle_init_producer_id(
        self, body: Mapping[str, Any], version: int
    ) -> dict[str, Any]:
        """The InitProducerId response body for a request body (v0–1).

        Without a transactional id: a new producer id and epoch 0. With one: INVALID_REQUEST,
        as kafpy has no transaction coordinator.
        """
        transactional_id = body.get("transactional_id")
        if transactional_id is not None:
            self.log.info(
                "Refusing InitProducerId for transactional id %r: transactions are not supported "
                "by kafpy; use an idempotent producer without transactional.id",
                transactional_id,
            )
            return {
                "throttle_time_ms": 0,
                "error_code": _INVALID_REQUEST,
                "producer_id": -1,
                "producer_epoch": -1,
            }
        producer_id = await self.generate_producer_id()
        self.log.debug(
            "Returning producerId %d with epoch 0 for a non-transactional producer", producer_id
        )
        return {
            "throttle_time_ms": 0,
            "error_code": _NONE,
            "producer_id": producer_id,
            "producer_epoch": 0,
        }
