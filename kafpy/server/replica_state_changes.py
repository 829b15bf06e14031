"""ReplicaStateChanges: the controller's LeaderAndIsr and StopReplica applied to this broker's replicas.

LeaderAndIsr makes each named partition leader or follower (creating its log through
LogManager, with the topic's configs read from ZooKeeper first, and its high watermark
from the dir's checkpoint), starts and stops the replica fetchers accordingly, and
refuses stale controller and leader epochs, forged names and partitions in offline dirs;
StopReplica stops serving partitions and deletes their logs. Each change is written to
the state-change log (`kafpy.state.change.logger`). Kafka's ReplicaManager
becomeLeaderOrFollower (makeLeaders, makeFollowers) and stopReplicas; ReplicaManager
keeps those names and holds `state_change_lock` around them.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafpy.cluster.partition import Partition
from kafpy.common.errors import InvalidTopicError, KafkaError, KafkaStorageError
from kafpy.common.kafka_uuid import uuid_to_string
from kafpy.common.topic import validate_topic_partition
from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.zk_data import LeaderAndIsr
from kafpy.protocol.errors import Errors, error_code_of
from kafpy.server.replica_fetcher_thread import BrokerEndPoint
from kafpy.storage.log import Log
from kafpy.storage.log_config import LogConfig

if TYPE_CHECKING:
    from kafpy.server.replica_manager import ReplicaManager


class ReplicaStateChanges:
    """Applies LeaderAndIsr and StopReplica to the partitions `replica_manager` hosts."""

    def __init__(self, replica_manager: ReplicaManager) -> None:
        self.replica_manager = replica_manager

    async def load_topic_configs(self, request: Mapping[str, Any]) -> None:
        """Before a LeaderAndIsr creates logs: read the topic-level overrides of topics
        with no local log yet from ZooKeeper (Kafka fetches them in createLogIfNotExists),
        so that a new log starts with, e.g., its min.insync.replicas."""
        rm = self.replica_manager
        if rm.zk_client is None:
            return
        topics = {
            topic for topic, state in _leader_and_isr_states(request)
            if rm.log_manager.get_log(TopicPartition(topic, state["partition_index"])) is None
        }  # fmt: skip
        for topic in sorted(topics):
            try:
                overrides = await rm.zk_client.get_entity_configs("topics", topic)
            except Exception as e:
                rm.log.warning("Could not read the configs of topic %s: %s", topic, e)
                continue
            if overrides:
                default = rm.log_manager.current_default_config
                rm.log_manager.update_topic_config(
                    topic, LogConfig.from_props(default.values(), overrides)
                )

    def apply_leader_and_isr(
        self, request: Mapping[str, Any], version: int
    ) -> Generator[None, None, dict[str, Any]]:
        """LeaderAndIsr's work, yielding after each partition made leader or follower (the
        slices become_leader_or_follower_in_slices cuts it in); returns the response body."""
        rm = self.replica_manager
        states = list(_leader_and_isr_states(request))
        controller_id = request["controller_id"]
        controller_epoch = request["controller_epoch"]
        if controller_epoch < rm.controller_epoch:
            rm.state_change_log.warning(
                "Ignoring LeaderAndIsr request from controller %d with correlation id epoch %d since "
                "its controller epoch %d is old. Latest known controller epoch is %d",
                controller_id,
                controller_epoch,
                controller_epoch,
                rm.controller_epoch,
            )
            return _error_response(states, Errors.STALE_CONTROLLER_EPOCH)
        rm.controller_epoch = controller_epoch
        rm.high_watermark_checkpoints.clear()  # read each dir's checkpoint once per request
        # KIP-516: v5+ names each topic's id (None: zero, or an older version)
        topic_ids = {t["topic_name"]: t.get("topic_id") for t in request.get("topic_states") or ()}
        errors: dict[TopicPartition, int] = {}
        to_apply: list[tuple[Partition, Mapping[str, Any]]] = []
        for topic, state in states:
            tp = TopicPartition(topic, state["partition_index"])
            try:
                validate_topic_partition(topic, tp.partition)
            except InvalidTopicError as e:
                # nothing is created for it: a forged name must not become a directory
                rm.state_change_log.error(
                    "Ignoring LeaderAndIsr request from controller %d epoch %d for partition "
                    "%s: %s",
                    controller_id,
                    controller_epoch,
                    tp,
                    e,
                )
                errors[tp] = e.code
                continue
            if tp in rm.offline_partitions:
                rm.state_change_log.warning(
                    "Ignoring LeaderAndIsr request from controller %d with correlation id epoch %d "
                    "for partition %s as the local replica for the partition is in an offline "
                    "log directory",
                    controller_id,
                    controller_epoch,
                    tp,
                )
                errors[tp] = Errors.KAFKA_STORAGE_ERROR
                continue
            partition = rm.partitions.get(tp)
            if partition is None:
                partition = self._new_partition(tp)
                rm.partitions[tp] = partition
            try:
                consistent = partition.check_or_set_topic_id(topic_ids.get(topic))
            except KafkaError as e:
                errors[tp] = error_code_of(e)
                continue
            if not consistent:
                log = partition.log or rm.log_manager.get_log(tp)
                rm.state_change_log.error(
                    "Topic Id in memory: %s does not match the topic Id for partition %s "
                    "provided in the request: %s.",
                    uuid_to_string(log.topic_id) if log and log.topic_id else None,
                    tp,
                    uuid_to_string(topic_ids[topic]),
                )
                errors[tp] = Errors.INCONSISTENT_TOPIC_ID
            elif state["leader_epoch"] > partition.leader_epoch:
                if rm.broker_id in state["replicas"]:
                    to_apply.append((partition, state))
                else:
                    rm.state_change_log.warning(
                        "Ignoring LeaderAndIsr request from controller %d with correlation id epoch %d "
                        "for partition %s as itself is not in assigned replica list %s",
                        controller_id,
                        controller_epoch,
                        tp,
                        state["replicas"],
                    )
                    errors[tp] = Errors.UNKNOWN_TOPIC_OR_PARTITION
            else:
                rm.state_change_log.info(
                    "Ignoring LeaderAndIsr request from controller %d with correlation id epoch %d for "
                    "partition %s since its associated leader epoch %d is not higher than the current "
                    "leader epoch %d",
                    controller_id,
                    controller_epoch,
                    tp,
                    state["leader_epoch"],
                    partition.leader_epoch,
                )
                errors[tp] = Errors.STALE_CONTROLLER_EPOCH
        live_leaders = {
            b["broker_id"]: BrokerEndPoint(b["broker_id"], b["host_name"], b["port"])
            for b in request.get("live_leaders") or ()
        }
        new_followers: dict[TopicPartition, tuple[BrokerEndPoint, int, int]] = {}
        for partition, state in to_apply:
            tp = partition.topic_partition
            try:
                if state["leader"] == rm.broker_id:
                    rm.replica_fetcher_manager.remove_fetcher_for_partitions([tp])
                    _, hw_moved = partition.make_leader(state)
                    rm.state_change_log.info(
                        "Leader %s starts at leader epoch %d with ISR %s (controller %d epoch %d)",
                        tp,
                        state["leader_epoch"],
                        state["isr"],
                        controller_id,
                        controller_epoch,
                    )
                else:
                    if rm.metadata_cache.get_alive_broker(state["leader"]) is None:
                        rm.state_change_log.error(
                            "Received LeaderAndIsr request from controller %d epoch %d with "
                            "correlation id for partition %s but cannot become follower since the new "
                            "leader %d is unavailable.",
                            controller_id,
                            controller_epoch,
                            tp,
                            state["leader"],
                        )
                    rm.replica_fetcher_manager.remove_fetcher_for_partitions([tp])
                    partition.make_follower(state)
                    leader = live_leaders.get(state["leader"])
                    if leader is None:
                        broker = rm.metadata_cache.get_alive_broker(state["leader"])
                        endpoint = (
                            None if broker is None else next(iter(broker.endpoints.values()), None)
                        )
                        if endpoint is not None:
                            leader = BrokerEndPoint(state["leader"], endpoint.host, endpoint.port)
                    if leader is not None and partition.log is not None:
                        new_followers[tp] = (
                            leader,
                            partition.log.log_end_offset,
                            state["leader_epoch"],
                        )
                    rm.state_change_log.info(
                        "Follower %s of leader %d at leader epoch %d (controller %d epoch %d)",
                        tp,
                        state["leader"],
                        state["leader_epoch"],
                        controller_id,
                        controller_epoch,
                    )
                partition.check_or_set_topic_id(topic_ids.get(tp.topic))  # a log just created
                errors[tp] = Errors.NONE
            except KafkaError as e:
                rm.state_change_log.error("Error while making %s leader or follower: %s", tp, e)
                errors[tp] = error_code_of(e)
            rm.complete_delayed_requests(tp)
            yield
        rm.high_watermark_checkpoints.clear()
        if new_followers:
            rm.replica_fetcher_manager.add_fetcher_for_partitions(new_followers)
        return {
            "error_code": Errors.NONE,
            "partition_errors": [
                {"topic_name": topic, "partition_index": state["partition_index"],
                 "error_code": errors[TopicPartition(topic, state["partition_index"])]}
                for topic, state in states
            ],
        }  # fmt: skip

    def stop_replicas(self, request: Mapping[str, Any], version: int = 0) -> dict[str, Any]:
        """Apply a StopReplica request (delete: delete the logs); returns the response.

        From v3 on each partition carries its own delete flag and the leader epoch the
        controller knows (KIP-570): a replica whose leader epoch is as new or newer is left
        alone with FENCED_LEADER_EPOCH (the request is a stale one), except for the epochs
        that mean "deleting" (-2) and "no epoch" (-1), as Kafka 2.8 does."""
        rm = self.replica_manager
        states = list(_stop_replica_states(request))
        if request["controller_epoch"] < rm.controller_epoch:
            rm.state_change_log.warning(
                "Ignoring StopReplica request from controller %d since its controller epoch %d is old. "
                "Latest known controller epoch is %d",
                request["controller_id"],
                request["controller_epoch"],
                rm.controller_epoch,
            )
            return _error_response(((tp.topic, {"partition_index": tp.partition}) for tp, _, _ in states),
                                   Errors.STALE_CONTROLLER_EPOCH)  # fmt: skip
        rm.controller_epoch = request["controller_epoch"]
        out = []
        dirs: set[Path] = set()
        for tp, delete, leader_epoch in states:
            error = Errors.NONE
            partition = rm.partitions.get(tp)
            current = partition.leader_epoch if partition is not None else None
            if (
                current is not None
                and leader_epoch not in (LeaderAndIsr.EPOCH_DURING_DELETE, LeaderAndIsr.NO_EPOCH)
                and leader_epoch <= current
            ):
                rm.state_change_log.info(
                    "Ignoring StopReplica request (delete=%s) from controller %d epoch %d for "
                    "partition %s since its associated leader epoch %d is %s the current leader "
                    "epoch %d",
                    delete,
                    request["controller_id"],
                    request["controller_epoch"],
                    tp,
                    leader_epoch,
                    "smaller than" if leader_epoch < current else "the same as",
                    current,
                )
                error = Errors.FENCED_LEADER_EPOCH
            else:
                try:
                    dir_ = self.stop_replica(tp, delete, checkpoint=False)
                    if dir_ is not None:
                        dirs.add(dir_)
                except KafkaStorageError as e:
                    rm.state_change_log.error(
                        "Ignoring stop replica (delete=%s) for partition %s: %s", delete, tp, e
                    )
                    error = Errors.KAFKA_STORAGE_ERROR
            out.append(
                {"topic_name": tp.topic, "partition_index": tp.partition, "error_code": error}
            )
        # one checkpoint write per log dir for the whole request, not one per deleted log
        rm.log_manager.checkpoint_dirs(dirs)
        return {"error_code": Errors.NONE, "partition_errors": out}

    def stop_replica(
        self, tp: TopicPartition, delete: bool, checkpoint: bool = True
    ) -> Path | None:
        """Stop serving `tp`; with `delete`, delete its log. Returns the log dir whose
        checkpoints are left to the caller when `checkpoint` is False."""
        rm = self.replica_manager
        rm.state_change_log.info("Stopping replica %s (delete=%s)", tp, delete)
        rm.replica_fetcher_manager.remove_fetcher_for_partitions([tp])
        removed_from: Path | None = None
        if delete:
            partition = rm.partitions.pop(tp, None)
            if partition is not None:
                partition.forget()
            log = rm.log_manager.async_delete(tp, checkpoint=checkpoint)
            if log is not None:
                removed_from = Path(log.dir).parent
            stats = rm.broker_topic_stats
            if stats is not None and not any(p.topic == tp.topic for p in rm.partitions):
                stats.remove_metrics(tp.topic)  # the topic's last partition here went
        rm.complete_delayed_requests(tp)
        return removed_from

    def _new_partition(self, tp: TopicPartition) -> Partition:
        rm = self.replica_manager
        return Partition(
            tp,
            rm.broker_id,
            rm.log_manager,
            rm.time,
            self._checkpointed_hw,
            rm.replica_lag_time_max_ms,
            rm.partition_changed,
        )

    def _checkpointed_hw(self, tp: TopicPartition, log: Log) -> int | None:
        return self.replica_manager.high_watermark_checkpoints.fetch(Path(log.dir).parent, tp)


def _leader_and_isr_states(request: Mapping[str, Any]) -> Iterable[tuple[str, Mapping[str, Any]]]:
    for state in request.get("ungrouped_partition_states") or ():
        yield state["topic_name"], state
    for topic in request.get("topic_states") or ():
        for state in topic["partition_states"]:
            yield topic["topic_name"], state


def _stop_replica_states(
    request: Mapping[str, Any],
) -> Iterable[tuple[TopicPartition, bool, int]]:
    """(partition, delete, leader epoch) of each partition a StopReplica request names; before
    v3 the delete flag is the request's and there is no epoch."""
    delete = bool(request.get("delete_partitions"))
    for p in request.get("ungrouped_partitions") or ():
        yield TopicPartition(p["topic_name"], p["partition_index"]), delete, LeaderAndIsr.NO_EPOCH
    for t in request.get("topics") or ():
        for index in t["partition_indexes"]:
            yield TopicPartition(t["name"], index), delete, LeaderAndIsr.NO_EPOCH
    for t in request.get("topic_states") or ():
        for ps in t["partition_states"]:
            yield (
                TopicPartition(t["topic_name"], ps["partition_index"]),
                bool(ps["delete_partition"]),
                ps["leader_epoch"],
            )


def _error_response(states: Iterable[tuple[str, Mapping[str, Any]]], error: int) -> dict[str, Any]:
    return {
        "error_code": error,
        "partition_errors": [
            {"topic_name": topic, "partition_index": s["partition_index"], "error_code": error}
            for topic, s in states
        ],
    }
