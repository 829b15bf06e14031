"""The group and transaction coordinators' APIs (Kafka's KafkaApis handlers of
FindCoordinator, the group APIs, the transaction APIs and InitProducerId), answered by
GroupApis, TransactionApis and the ProducerIdManager; FindCoordinator creates the
internal topics on first use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.admin.replica_assignment import RackAwareMode
from kafpy.common.errors import KafkaError, TopicExistsError
from kafpy.common.topic_partition import TopicPartition
from kafpy.coordinator.group_apis import GroupApis
from kafpy.coordinator.group_metadata_manager import GROUP_METADATA_TOPIC_NAME
from kafpy.coordinator.transaction.transaction_apis import TransactionApis
from kafpy.coordinator.transaction.transaction_log import TRANSACTION_STATE_TOPIC_NAME
from kafpy.network.request_channel import Request
from kafpy.protocol.errors import Errors
from kafpy.server.api_context import ApiContext, body_of


class CoordinatorApis:
    """Answers the coordinators' APIs."""

    def __init__(self, ctx: ApiContext) -> None:
        self.ctx = ctx
        self.group_apis: GroupApis | None = None
        self.txn_apis: TransactionApis | None = None
        coordinator = ctx.group_coordinator
        if coordinator is not None:
            self.group_apis = GroupApis(coordinator, self._known)
            if ctx.transaction_coordinator is not None:
                self.txn_apis = TransactionApis(
                    ctx.transaction_coordinator, self._known, coordinator.partition_for
                )

    def _known(self, tp: TopicPartition) -> bool:
        return self.ctx.metadata_cache.get_partition_info(tp) is not None

    def _groups(self) -> GroupApis:
        assert self.group_apis is not None
        return self.group_apis

    def _txns(self) -> TransactionApis:
        assert self.txn_apis is not None
        return self.txn_apis

    async def handle_join_group(self, request: Request) -> dict[str, Any]:
        return await self._groups().join_group(
            body_of(request), request.api_version, request.header.client_id or "",
            "/" + request.client_address[0],
        )  # fmt: skip

    async def handle_sync_group(self, request: Request) -> dict[str, Any]:
        return await self._groups().sync_group(body_of(request), request.api_version)

    async def handle_heartbeat(self, request: Request) -> dict[str, Any]:
        return await self._groups().heartbeat(body_of(request), request.api_version)

    async def handle_leave_group(self, request: Request) -> dict[str, Any]:
        return await self._groups().leave_group(body_of(request), request.api_version)

    async def handle_offset_commit(self, request: Request) -> dict[str, Any]:
        return await self._groups().offset_commit(body_of(request), request.api_version)

    async def handle_offset_fetch(self, request: Request) -> dict[str, Any]:
        return await self._groups().offset_fetch(body_of(request), request.api_version)

    async def handle_list_groups(self, request: Request) -> dict[str, Any]:
        return await self._groups().list_groups(body_of(request), request.api_version)

    async def handle_describe_groups(self, request: Request) -> dict[str, Any]:
        return await self._groups().describe_groups(body_of(request), request.api_version)

    async def handle_delete_groups(self, request: Request) -> dict[str, Any]:
        return await self._groups().delete_groups(body_of(request), request.api_version)

    async def handle_offset_delete(self, request: Request) -> dict[str, Any]:
        return await self._groups().offset_delete(body_of(request), request.api_version)

    async def handle_txn_offset_commit(self, request: Request) -> dict[str, Any]:
        return await self._groups().txn_offset_commit(body_of(request), request.api_version)

    async def handle_add_partitions_to_txn(self, request: Request) -> dict[str, Any]:
        return await self._txns().add_partitions_to_txn(body_of(request), request.api_version)

    async def handle_add_offsets_to_txn(self, request: Request) -> dict[str, Any]:
        return await self._txns().add_offsets_to_txn(body_of(request), request.api_version)

    async def handle_end_txn(self, request: Request) -> dict[str, Any]:
        return await self._txns().end_txn(body_of(request), request.api_version)

    async def handle_describe_transactions(self, request: Request) -> dict[str, Any]:
        return await self._txns().describe_transactions(body_of(request), request.api_version)

    async def handle_list_transactions(self, request: Request) -> dict[str, Any]:
        return await self._txns().list_transactions(body_of(request), request.api_version)

    async def handle_init_producer_id(self, request: Request) -> dict[str, Any]:
        assert self.ctx.producer_id_manager is not None and request.body is not None
        pid, epoch = request.body.get("producer_id", -1), request.body.get("producer_epoch", -1)
        if (pid == -1) != (epoch == -1):
            # KIP-360 (v3+): an existing producer id comes with its epoch, or neither is given
            return {"throttle_time_ms": 0, "error_code": Errors.INVALID_REQUEST,
                    "producer_id": -1, "producer_epoch": -1}  # fmt: skip
        if request.body.get("transactional_id") is None and (
            request.body.get("enable2_pc") or request.body.get("keep_prepared_txn")
        ):
            # KIP-939's flags belong to a transactional producer
            return {"throttle_time_ms": 0, "error_code": Errors.INVALID_REQUEST,
                    "producer_id": -1, "producer_epoch": -1}  # fmt: skip
        if request.body.get("transactional_id") is not None and self.txn_apis is not None:
            return await self.txn_apis.init_producer_id(request.body, request.api_version)
        # Without a transactional id Kafka hands out a new producer id, given one or not.
        return await self.ctx.producer_id_manager.handle_init_producer_id(
            request.body, request.api_version
        )

    async def handle_find_coordinator(self, request: Request) -> dict[str, Any]:
        body = body_of(request)
        coordinator = self.ctx.group_coordinator
        assert coordinator is not None

        def answer(error: int, node: int = -1, host: str = "", port: int = -1) -> dict[str, Any]:
            return {"throttle_time_ms": 0, "error_code": error, "error_message": None if error == Errors.NONE
                    else Errors(error).name, "node_id": node, "host": host, "port": port}  # fmt: skip

        key_type = body.get("key_type", 0)
        if key_type == 1 and self.ctx.transaction_coordinator is not None:
            topic = TRANSACTION_STATE_TOPIC_NAME
            partition = self.ctx.transaction_coordinator.partition_for(body["key"])
            if not self.ctx.metadata_cache.contains_topic(topic):
                await self._create_transaction_state_topic()
                return answer(Errors.COORDINATOR_NOT_AVAILABLE)
        elif key_type != 0:
            return answer(
                Errors.COORDINATOR_NOT_AVAILABLE if key_type == 1 else Errors.INVALID_REQUEST
            )
        else:
            topic = GROUP_METADATA_TOPIC_NAME
            partition = coordinator.partition_for(body["key"])
            if not self.ctx.metadata_cache.contains_topic(topic):
                await self._create_offsets_topic()
                return answer(Errors.COORDINATOR_NOT_AVAILABLE)
        info = self.ctx.metadata_cache.get_partition_info(TopicPartition(topic, partition))
        if info is None or info.leader < 0:
            return answer(Errors.COORDINATOR_NOT_AVAILABLE)
        for node, endpoint, _ in self.ctx.metadata_cache.alive_endpoints(request.listener_name):
            if node == info.leader:
                return answer(Errors.NONE, node, endpoint.host, endpoint.port)
        return answer(Errors.COORDINATOR_NOT_AVAILABLE)

    async def _create_offsets_topic(self) -> None:
        """Create __consumer_offsets on first use. The replication factor is
        offsets.topic.replication.factor, lowered to the live brokers when fewer are up
        (Kafka 2.x refuses instead; kafpy lets a single broker serve groups)."""
        if self.ctx.admin_zk_client is None:
            return
        cfg = self.ctx.group_coordinator.offset_config if self.ctx.group_coordinator else None
        assert cfg is not None
        alive = len(self.ctx.metadata_cache.alive_brokers())
        rf = min(cfg.offsets_topic_replication_factor, max(alive, 1))
        if rf < cfg.offsets_topic_replication_factor:
            self.ctx.log.warning(
                "Creating %s with replication factor %d: only %d brokers are alive, fewer than "
                "offsets.topic.replication.factor=%d.",
                GROUP_METADATA_TOPIC_NAME, rf, alive, cfg.offsets_topic_replication_factor,
            )  # fmt: skip
        topic_config = {
            "cleanup.policy": "compact",
            "compression.type": "producer",
            "segment.bytes": str(cfg.offsets_topic_segment_bytes),
        }
        await self._create_internal_topic(
            GROUP_METADATA_TOPIC_NAME, cfg.offsets_topic_num_partitions, rf, topic_config
        )

    async def _create_transaction_state_topic(self) -> None:
        """Create __transaction_state on the first FindCoordinator for a transactional id;
        as Kafka, not while fewer brokers are alive than its replication factor."""
        assert self.ctx.transaction_coordinator is not None
        cfg = self.ctx.transaction_coordinator.config
        alive = len(self.ctx.metadata_cache.alive_brokers())
        rf = cfg.transaction_log_replication_factor
        if self.ctx.admin_zk_client is None:
            return
        if alive < rf:
            self.ctx.log.error(
                "Number of alive brokers '%d' does not meet the required replication factor '%d' for "
                "the transactions state topic (configured via 'transaction.state.log.replication.factor'). "
                "This error can be ignored if the cluster is starting up and not all brokers are up yet.",
                alive, rf,
            )  # fmt: skip
            return
        await self._create_internal_topic(
            TRANSACTION_STATE_TOPIC_NAME,
            cfg.transaction_log_num_partitions,
            rf,
            cfg.topic_configs(),
        )

    async def _create_internal_topic(
        self, name: str, partitions: int, rf: int, config: Mapping[str, str]
    ) -> None:
        """Create an internal topic (rack-safe assignment), logging the outcome; one that
        exists already is no error (another request created it meanwhile)."""
        assert self.ctx.admin_zk_client is not None
        try:
            await self.ctx.admin_zk_client.create_topic(
                name, partitions, rf, config, RackAwareMode.SAFE
            )
            self.ctx.log.info(
                "Created %s with %d partitions and replication factor %d", name, partitions, rf
            )
        except TopicExistsError:
            pass
        except KafkaError as e:
            self.ctx.log.error("Error while creating %s: %s", name, e)
