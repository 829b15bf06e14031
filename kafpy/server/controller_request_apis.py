"""The requests the controller sends brokers and the controller's own APIs (Kafka's KafkaApis
handlers of LeaderAndIsr, UpdateMetadata, StopReplica, ControlledShutdown, AlterIsr,
ElectLeaders, UpdateFeatures and the partition reassignment APIs).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.common.election_type import ElectionType
from kafpy.common.topic_partition import TopicPartition
from kafpy.controller.alter_isr import alter_isr_request_items, alter_isr_response
from kafpy.controller.feature_versioning import ApiError
from kafpy.coordinator.group_metadata_manager import GROUP_METADATA_TOPIC_NAME
from kafpy.coordinator.transaction.transaction_log import TRANSACTION_STATE_TOPIC_NAME
from kafpy.network.request_channel import Request
from kafpy.protocol.errors import Errors
from kafpy.protocol.messages import leader_and_isr
from kafpy.server import partition_reassignment_apis
from kafpy.server.api_context import ApiContext, body_of


class ControllerRequestApis:
    """Answers the controller's requests and the APIs the controller serves."""

    def __init__(self, ctx: ApiContext) -> None:
        self.ctx = ctx

    def _broker_epoch_is_stale(self, body: Mapping[str, Any], request_name: str) -> bool:
        """As Kafka's isBrokerEpochStale: a request meant for an earlier registration of
        this broker (its epoch older than the current one, which the controller holds) is
        stale and skipped. A request without an epoch (-1, from a controller before
        KIP-380) is not checked, and a newer epoch is taken: the controller may learn it
        before this broker does."""
        epoch: int = body.get("broker_epoch", -1)
        current: int = self.ctx.controller.broker_epoch if self.ctx.controller is not None else -1
        if epoch == -1 or epoch >= current:
            return False
        self.ctx.log.info(
            "Received %s request with broker epoch %d smaller than the current broker epoch %d",
            request_name,
            epoch,
            current,
        )
        return True

    async def handle_leader_and_isr(self, request: Request) -> dict[str, Any]:
        body = request.body
        assert body is not None
        if self._broker_epoch_is_stale(body, "LeaderAndIsr"):
            return leader_and_isr.error_response(
                body, request.api_version, Errors.STALE_BROKER_EPOCH
            )
        await self.ctx.replica_manager.load_topic_configs(body)
        response = await self.ctx.replica_manager.become_leader_or_follower_in_slices(
            body, request.api_version
        )
        self._on_leadership_change(body, response)
        self.ctx.log_dirs.resume_moves()
        # as Kafka's becomeLeaderOrFollower: fetchers left without partitions stop
        await self.ctx.replica_manager.replica_fetcher_manager.shutdown_idle_fetcher_threads()
        return leader_and_isr.versioned_response(body, response, request.api_version)

    def _on_leadership_change(self, body: Mapping[str, Any], response: Mapping[str, Any]) -> None:
        """The group and transaction coordinators take or give up the __consumer_offsets and
        __transaction_state partitions whose leadership this LeaderAndIsr request changed
        (Kafka's onLeadershipChange; the coordinator epoch is the leader epoch)."""
        applied = {(e["topic_name"], e["partition_index"]) for e in response.get("partition_errors", ())
                   if e["error_code"] == Errors.NONE}  # fmt: skip
        txn = self.ctx.transaction_coordinator
        for topic, state in leader_and_isr.partition_states(body):
            if (
                txn is not None
                and topic == TRANSACTION_STATE_TOPIC_NAME
                and (topic, state["partition_index"]) in applied
            ):
                if state["leader"] == self.ctx.broker_id:
                    txn.on_election(state["partition_index"], state["leader_epoch"])
                else:
                    txn.on_resignation(state["partition_index"], state["leader_epoch"])
            if self.ctx.group_coordinator is None:
                continue
            if topic == GROUP_METADATA_TOPIC_NAME and (topic, state["partition_index"]) in applied:
                if state["leader"] == self.ctx.broker_id:
                    self.ctx.group_coordinator.on_election(state["partition_index"])
                else:
                    self.ctx.group_coordinator.on_resignation(state["partition_index"])

    async def handle_update_metadata(self, request: Request) -> dict[str, Any]:
        body = request.body
        assert body is not None
        if self._broker_epoch_is_stale(body, "update metadata"):
            return {"error_code": Errors.STALE_BROKER_EPOCH}
        rm = self.ctx.replica_manager
        if body["controller_epoch"] < rm.controller_epoch:
            rm.state_change_log.warning(
                "Received UpdateMetadata request from controller %d with epoch %d, older than the latest "
                "known controller epoch %d; ignoring it",
                body["controller_id"],
                body["controller_epoch"],
                rm.controller_epoch,
            )
            return {"error_code": Errors.STALE_CONTROLLER_EPOCH}
        deleted = self.ctx.metadata_cache.update_metadata(body, request.api_version)
        rm.controller_epoch = body["controller_epoch"]
        for tp in deleted:
            # parked fetches on a deleted partition answer now
            rm.delayed_fetch_purgatory.check_and_complete(tp)
        if (
            self.ctx.admin_manager is not None
            and self.ctx.admin_manager.has_delayed_topic_operations
        ):
            self.ctx.admin_manager.try_complete_delayed_topic_operations()
        return {"error_code": Errors.NONE}

    async def handle_controlled_shutdown(self, request: Request) -> dict[str, Any]:
        body = request.body
        assert body is not None
        if not (self.ctx.controller is not None and self.ctx.controller.is_active):
            return {"error_code": Errors.NOT_CONTROLLER, "remaining_partitions": []}
        error, remaining = await self.ctx.controller.controlled_shutdown(
            body["broker_id"], body.get("broker_epoch", -1)
        )
        return {
            "error_code": error,
            "remaining_partitions": [
                {"topic_name": tp.topic, "partition_index": tp.partition} for tp in remaining
            ],
        }

    async def handle_alter_isr(self, request: Request) -> dict[str, Any]:
        """AlterIsr (KIP-497) from a partition leader, answered by the controller."""
        body = body_of(request)
        controller = self.ctx.controller
        if controller is None or not controller.is_active:
            return {"throttle_time_ms": 0, "error_code": Errors.NOT_CONTROLLER, "topics": []}
        result = await controller.alter_isr(
            body["broker_id"], body.get("broker_epoch", -1), alter_isr_request_items(body)
        )
        return alter_isr_response(result)

    async def handle_update_features(self, request: Request) -> dict[str, Any]:
        """UpdateFeatures (KIP-584), answered by the controller: a top-level error, or each
        feature's outcome."""
        body = body_of(request)
        controller = self.ctx.controller
        if controller is None or not controller.is_active:
            outcome: Any = None
        else:
            timeout_s = max(0, int(body.get("timeout_ms", 60000))) / 1000
            try:
                outcome = await controller.update_features(
                    list(body.get("feature_updates") or []), timeout_s
                )
            except TimeoutError:
                outcome = ApiError(
                    Errors.REQUEST_TIMED_OUT, "The controller did not answer in time."
                )
        if not isinstance(outcome, dict):
            code = Errors.NOT_CONTROLLER if outcome is None else outcome.code
            message = None if outcome is None else outcome.message
            return {
                "throttle_time_ms": 0,
                "error_code": code,
                "error_message": message,
                "results": [],
            }
        return {
            "throttle_time_ms": 0, "error_code": Errors.NONE, "error_message": None,
            "results": [
                {"feature": name, "error_code": e.code, "error_message": e.message}
                for name, e in outcome.items()
            ],
        }  # fmt: skip

    async def handle_elect_leaders(self, request: Request) -> dict[str, Any]:
        """ElectLeaders (KIP-183; election types from v1, KIP-460), answered by the
        controller; other brokers answer NOT_CONTROLLER per partition. A partition elected
        is answered once this broker's metadata shows its new leader, or REQUEST_TIMED_OUT
        after timeout_ms (Kafka's DelayedElectLeader). Asked for every partition (null
        topic_partitions), those that needed no election are left out, as Kafka does."""
        body = body_of(request)
        requested = body.get("topic_partitions")
        timeout_ms = max(0, int(body.get("timeout_ms", 60000)))
        if requested is None:
            partitions = [
                TopicPartition(topic, p)
                for topic in self.ctx.metadata_cache.get_all_topics()
                for p in sorted(self.ctx.metadata_cache.partitions_for(topic))
            ]
        else:
            partitions = [TopicPartition(t["topic"], p) for t in requested for p in t["partitions"]]
        code = int(body.get("election_type", ElectionType.PREFERRED))
        if code not in ElectionType.__members__.values():
            message = f"Unknown election type {code}: 0 (preferred) or 1 (unclean)."
            return _elect_leaders_response(
                {tp: (Errors.INVALID_REQUEST, message) for tp in partitions}
            )
        controller = self.ctx.controller
        assert controller is not None  # served only with a controller (its registry entry)
        if not controller.is_active:
            return _elect_leaders_response({tp: (Errors.NOT_CONTROLLER, None) for tp in partitions})
        try:
            elected = await controller.elect_leaders(
                None if requested is None else partitions, ElectionType(code), timeout_ms / 1000
            )
        except TimeoutError:
            return _elect_leaders_response(
                {tp: (Errors.REQUEST_TIMED_OUT, None) for tp in partitions}
            )
        results: dict[TopicPartition, tuple[int, str | None]] = {
            tp: (r.error_code, r.error_message)
            for tp, r in elected.items()
            if requested is not None or r.error_code != Errors.ELECTION_NOT_NEEDED
        }
        expected = {tp: r.leader for tp, r in elected.items() if r.error_code == Errors.NONE}

        async def leaders_known() -> bool:
            return all(
                (info := self.ctx.metadata_cache.get_partition_info(tp)) is not None
                and info.leader == leader
                for tp, leader in expected.items()
            )

        if expected and self.ctx.admin_manager is not None:
            if not await self.ctx.admin_manager.wait_for_metadata(leaders_known, timeout_ms):
                for tp, leader in expected.items():
                    info = self.ctx.metadata_cache.get_partition_info(tp)
                    if info is None or info.leader != leader:
                        results[tp] = (Errors.REQUEST_TIMED_OUT, None)
        return _elect_leaders_response(results)

    async def handle_stop_replica(self, request: Request) -> dict[str, Any]:
        body = request.body
        assert body is not None
        if self._broker_epoch_is_stale(body, "stop replica"):
            return {"error_code": Errors.STALE_BROKER_EPOCH, "partition_errors": []}
        async with self.ctx.replica_manager.state_change_lock:
            response = self.ctx.replica_manager.stop_replicas(body, request.api_version)
        if self.ctx.transaction_coordinator is not None:
            for e in response.get("partition_errors", ()):
                if (
                    e["topic_name"] == TRANSACTION_STATE_TOPIC_NAME
                    and e["error_code"] == Errors.NONE
                ):
                    self.ctx.transaction_coordinator.on_resignation(e["partition_index"])
        if self.ctx.group_coordinator is not None:
            for e in response.get("partition_errors", ()):
                if e["topic_name"] == GROUP_METADATA_TOPIC_NAME and e["error_code"] == Errors.NONE:
                    self.ctx.group_coordinator.on_resignation(e["partition_index"])
        return response

    async def handle_alter_partition_reassignments(self, request: Request) -> dict[str, Any]:
        assert self.ctx.controller is not None
        return await partition_reassignment_apis.alter_partition_reassignments(
            self.ctx.controller, body_of(request)
        )

    async def handle_list_partition_reassignments(self, request: Request) -> dict[str, Any]:
        assert self.ctx.controller is not None
        return await partition_reassignment_apis.list_partition_reassignments(
            self.ctx.controller, body_of(request)
        )


def _elect_leaders_response(
    results: Mapping[TopicPartition, tuple[int, str | None]],
) -> dict[str, Any]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for tp, (code, message) in results.items():
        by_topic.setdefault(tp.topic, []).append(
            {"partition_id": tp.partition, "error_code": code, "error_message": message}
        )
    return {
        "throttle_time_ms": 0,
        "error_code": Errors.NONE,
        "replica_election_results": [
            {"topic": topic, "partition_result": parts} for topic, parts in by_topic.items()
        ],
    }
