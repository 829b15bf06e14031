"""AdminManager: the broker side of the admin APIs (Kafka's `kafka.server.AdminManager`).

CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs, AlterConfigs and
IncrementalAlterConfigs arrive at the controller's broker; `KafkaApis` hands each request
body here and sends back the response body each method returns. The topic operations are
here: they are writes to the metadata store through `AdminZkClient` (the controller reacts
to them), after which the create and delete requests wait in `DelayedTopicOperations` until
the new partitions have leaders or the topic is gone, or the request's timeout passes
(REQUEST_TIMED_OUT). The config APIs are answered by `ConfigHelper`.

Errors are per topic or per resource (`admin_results`), with Kafka's codes and a message
that names the topic and what to change.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafpy.admin.admin_zk_client import AdminZkClient, check_assignment_fits_a_znode
from kafpy.admin.replica_assignment import RackAwareMode, assign_replicas_to_brokers
from kafpy.common import topic as topic_rules
from kafpy.common.errors import (
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidRequestError,
    InvalidTopicError,
    TopicAlreadyMarkedForDeletionError,
    UnknownTopicOrPartitionError,
)
from kafpy.common.logger import component_logger
from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.protocol.errors import Errors
from kafpy.server.admin_results import duplicates, error_response, set_error
from kafpy.server.config_helper import ConfigHelper
from kafpy.server.delayed_topic_operations import (
    DelayedTopicOperations,
    Predicate,
    call_predicate,
)
from kafpy.server.dynamic_broker_config import DynamicBrokerConfig
from kafpy.server.kafka_config import KafkaConfig

__all__ = [
    "AdminManager",
    "CreateTopicRequestMetadata",
]

NO_NUM_PARTITIONS = -1
NO_REPLICATION_FACTOR = -1


@dataclass(frozen=True)
class CreateTopicRequestMetadata:
    """What a create-topic policy sees (Kafka's CreateTopicPolicy.RequestMetadata):
    partitions and replication factor when no assignment was given, else the assignment."""

    topic: str
    num_partitions: int | None
    replication_factor: int | None
    replica_assignments: dict[int, list[int]] | None
    configs: dict[str, str]


class AdminManager:
    """Carries out the admin requests that reach the controller broker.

    Parameters:
        config: the broker's KafkaConfig (defaults for partitions, replication factor,
            delete.topic.enable, and the static configs DescribeConfigs reports).
        zk_client: the broker's KafkaZkClient.
        admin_zk_client: defaults to one over `zk_client`.
        partitions_online: `(topic, partitions) -> bool` (or an awaitable of it): whether
            every listed partition has a leader in this broker's metadata cache. Defaults
            to reading the partitions' state nodes in the metadata store.
        topic_exists_in_metadata: `(topic) -> bool` (or awaitable): whether the metadata
            cache still knows the topic (a deletion waits until it does not). Defaults to
            whether `/brokers/topics/<topic>` exists.
        create_topic_policy: called with a CreateTopicRequestMetadata for each topic to
            create; raise PolicyViolationError to refuse it (Kafka's
            create.topic.policy.class.name).
        dynamic_config: the broker's DynamicBrokerConfig (dynamic broker configs over
            `config`); defaults to one without dynamic configs.
        partitions_refused: `(topic, partitions) -> str | None`: why this broker refused
            to create the log of one of them (see DelayedTopicOperations); None: never.

    Call `try_complete_delayed_topic_operations(topic)` after each UpdateMetadata so that
    waiting creates and deletes finish at once instead of at their next periodic check.
    """

    def __init__(
        self,
        config: KafkaConfig,
        zk_client: KafkaZkClient,
        admin_zk_client: AdminZkClient | None = None,
        *,
        partitions_online: Predicate | None = None,
        topic_exists_in_metadata: Predicate | None = None,
        create_topic_policy: Callable[[CreateTopicRequestMetadata], None] | None = None,
        dynamic_config: DynamicBrokerConfig | None = None,
        partitions_refused: Callable[[str, Collection[int]], str | None] | None = None,
    ) -> None:
        self.config = config
        self.dynamic_config = dynamic_config or DynamicBrokerConfig(config)
        self.zk_client = zk_client
        self.admin_zk_client = admin_zk_client or AdminZkClient(zk_client)
        self._partitions_online = partitions_online or self._partitions_have_leaders_in_store
        self._topic_exists_in_metadata = topic_exists_in_metadata or zk_client.topic_exists
        self.create_topic_policy = create_topic_policy
        self.log = component_logger(
            "kafpy.server.AdminManager", f"Admin Manager on Broker {config.broker_id}"
        )
        self.delayed_topic_operations = DelayedTopicOperations(
            self._partitions_online, self._topic_exists_in_metadata, partitions_refused
        )
        self.config_helper = ConfigHelper(
            self.dynamic_config, zk_client, self.admin_zk_client, self.log
        )

    # -- waiting for the controller's work -------------------------------------------------------

    @property
    def has_delayed_topic_operations(self) -> bool:
        return self.delayed_topic_operations.has_delayed_operations

    def try_complete_delayed_topic_operations(self, topic: str | None = None) -> None:
        """Wake the creates and deletes waiting on metadata (call after UpdateMetadata)."""
        self.delayed_topic_operations.try_complete()

    async def _partitions_have_leaders_in_store(
        self, topic: str, partitions: Collection[int]
    ) -> bool:
        states = await self.zk_client.get_topic_partition_states(
            TopicPartition(topic, p) for p in partitions
        )
        return len(states) == len(partitions) and all(
            s.leader_and_isr.leader >= 0 for s in states.values()
        )

    async def wait_for_metadata(self, done: Callable[[], Awaitable[bool]], timeout_ms: int) -> bool:
        """Wait, as creates and deletes do, until `done()` (ElectLeaders waits for leaders)."""
        return await self.delayed_topic_operations.wait_until(done, timeout_ms)

    async def _apply_per_topic(
        self,
        topics: list[Mapping[str, Any]],
        apply: Callable[[Mapping[str, Any]], Awaitable[Collection[int]]],
        validate_only: bool,
        timeout_ms: int,
        *,
        duplicate_message: str,
        error_context: str,
        no_wait_message: str,
    ) -> list[dict[str, Any]]:
        """CreateTopics' and CreatePartitions' shared shape: one result per topic in request
        order, duplicates refused, then a wait (up to `timeout_ms`) for the new partitions
        to get leaders."""
        results: dict[str, dict[str, Any]] = {}
        order: list[dict[str, Any]] = []
        dupes = duplicates([t["name"] for t in topics])
        changed: dict[str, Collection[int]] = {}
        for topic in topics:
            name = topic["name"]
            result = {"name": name, "error_code": Errors.NONE, "error_message": None}
            order.append(result)
            if name in dupes:
                result["error_code"] = Errors.INVALID_REQUEST
                result["error_message"] = duplicate_message
                continue
            results[name] = result
            try:
                partitions = await apply(topic)
                if not validate_only:
                    changed[name] = partitions
            except Exception as e:
                set_error(self.log, result, e, error_context.format(name), controller_only=True)
        if changed:
            if timeout_ms <= 0:
                for name in changed:
                    results[name]["error_code"] = Errors.REQUEST_TIMED_OUT
                    results[name]["error_message"] = no_wait_message.format(
                        name=name, timeout_ms=timeout_ms
                    )
            else:
                await self.delayed_topic_operations.await_partitions(changed, results, timeout_ms)
        return order

    # -- CreateTopics -----------------------------------------------------------------------------

    async def create_topics(self, body: Mapping[str, Any], version: int) -> dict[str, Any]:
        """The CreateTopics response body (v0–4) for a request body."""
        topics = list(body.get("topics") or [])
        timeout_ms = int(body.get("timeout_ms", 60000))
        validate_only = bool(body.get("validate_only", False)) if version >= 1 else False
        order = await self._apply_per_topic(
            topics,
            lambda topic: self._create_topic(topic, validate_only),
            validate_only,
            timeout_ms,
            duplicate_message="Found multiple entries for this topic.",
            error_context="Error processing create topic request {}",
            no_wait_message=(
                "Topic '{name}' was created but the request's timeout ({timeout_ms} ms) "
                "did not allow waiting for its partitions to get leaders."
            ),
        )
        return {"throttle_time_ms": 0, "topics": order}

    async def _create_topic(self, topic: Mapping[str, Any], validate_only: bool) -> Collection[int]:
        name: str = topic["name"]
        configs_in = list(topic.get("configs") or [])
        null_configs = [c["name"] for c in configs_in if c.get("value") is None]
        if null_configs:
            raise InvalidRequestError(
                f"Null value not supported for topic configs : {','.join(null_configs)}"
            )
        configs = {c["name"]: c["value"] for c in configs_in}
        num_partitions = int(topic.get("num_partitions", NO_NUM_PARTITIONS))
        replication_factor = int(topic.get("replication_factor", NO_REPLICATION_FACTOR))
        assignments_in = list(topic.get("assignments") or [])
        if assignments_in and (
            num_partitions != NO_NUM_PARTITIONS or replication_factor != NO_REPLICATION_FACTOR
        ):
            raise InvalidRequestError(
                "Both numPartitions or replicationFactor and replicasAssignments were set. "
                "Both cannot be used at the same time."
            )
        resolved_partitions = (
            self.config.get("num.partitions")
            if num_partitions == NO_NUM_PARTITIONS
            else num_partitions
        )
        resolved_rf = (
            self.config.get("default.replication.factor")
            if replication_factor == NO_REPLICATION_FACTOR
            else replication_factor
        )
        if assignments_in:
            # As in Kafka, unknown brokers are not refused here (TopicCommand does not either).
            assignment = {
                int(a["partition_index"]): [int(b) for b in a["broker_ids"]] for a in assignments_in
            }
            _check_consecutive_partitions(assignment)
        else:
            check_assignment_fits_a_znode(name, resolved_partitions, resolved_rf)
            brokers = await self.admin_zk_client.get_broker_metadatas(RackAwareMode.ENFORCED)
            assignment = assign_replicas_to_brokers(brokers, resolved_partitions, resolved_rf)
        # the one check of the name, of existence (the write still fails on a topic created
        # meanwhile), of the assignment and of the configs
        await self.admin_zk_client.validate_create_or_update_topic(
            name, assignment, configs, update=False
        )
        if self.create_topic_policy is not None:
            self.create_topic_policy(
                CreateTopicRequestMetadata(
                    name,
                    None if assignments_in else resolved_partitions,
                    None if assignments_in else resolved_rf,
                    assignment if assignments_in else None,
                    dict(configs),
                )
            )
        if not validate_only:
            await self.admin_zk_client.create_or_update_topic_partition_assignment_path_in_zk(
                name, assignment, configs, validate=False
            )
        return list(assignment)

    # -- DeleteTopics ------------------------------------------------------------------------------

    async def delete_topics(self, body: Mapping[str, Any], version: int) -> dict[str, Any]:
        """The DeleteTopics response body (v0–3): marks the topics for deletion and waits
        until they are gone from the metadata or the timeout passes."""
        names: list[str] = list(dict.fromkeys(body.get("topic_names") or []))
        timeout_ms = int(body.get("timeout_ms", 0))
        order: list[dict[str, Any]] = [
            {"name": n, "error_code": Errors.NONE, "error_message": None} for n in names
        ]
        results: dict[str, dict[str, Any]] = {r["name"]: r for r in order}
        if not self.config.get("delete.topic.enable"):
            # Kafka answers INVALID_REQUEST before v3, which had no dedicated error
            code = Errors.INVALID_REQUEST if version < 3 else Errors.TOPIC_DELETION_DISABLED
            for r in order:
                r["error_code"] = code
                r["error_message"] = (
                    f"Topic deletion is disabled on broker {self.config.broker_id}; set "
                    "delete.topic.enable=true to delete topics."
                )
            return {"throttle_time_ms": 0, "responses": order}
        marked: list[str] = []
        for name in names:
            r = results[name]
            try:
                if not await call_predicate(self._topic_exists_in_metadata, name):
                    raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
                try:
                    await self.admin_zk_client.delete_topic(name)
                except TopicAlreadyMarkedForDeletionError:
                    pass  # still wait for it, so that repeated calls all see the deletion
                marked.append(name)
            except Exception as e:
                set_error(
                    self.log,
                    r,
                    e,
                    f"Error processing delete topic request for topic {name}",
                    controller_only=True,
                )
        if marked:
            if timeout_ms <= 0:
                for name in marked:
                    results[name]["error_code"] = Errors.REQUEST_TIMED_OUT
                    results[name]["error_message"] = (
                        f"Topic '{name}' was marked for deletion but the request's timeout "
                        f"({timeout_ms} ms) did not allow waiting for the deletion."
                    )
            else:
                await self.delayed_topic_operations.await_deletions(marked, results, timeout_ms)
        return {"throttle_time_ms": 0, "responses": order}

    # -- CreatePartitions ----------------------------------------------------------------------------

    async def create_partitions(self, body: Mapping[str, Any], version: int) -> dict[str, Any]:
        """The CreatePartitions response body (v0–1)."""
        topics = list(body.get("topics") or [])
        timeout_ms = int(body.get("timeout_ms", 0))
        validate_only = bool(body.get("validate_only", False))
        order = await self._apply_per_topic(
            topics,
            lambda topic: self._create_partitions(topic, validate_only),
            validate_only,
            timeout_ms,
            duplicate_message="Duplicate topic in request.",
            error_context="Error processing create partitions request for {}",
            no_wait_message=(
                "The partitions of topic '{name}' were created but the request's "
                "timeout ({timeout_ms} ms) did not allow waiting for their leaders."
            ),
        )
        return {"throttle_time_ms": 0, "results": order}

    async def _create_partitions(
        self, topic: Mapping[str, Any], validate_only: bool
    ) -> Collection[int]:
        name: str = topic["name"]
        topic_rules.validate(name)
        count = int(topic["count"])
        existing, _version = await self.zk_client.get_topic_assignment_and_version(name)
        if not existing:
            raise UnknownTopicOrPartitionError(f"The topic '{name}' does not exist.")
        if await self.zk_client.is_topic_marked_for_deletion(name):
            raise InvalidTopicError(f"The topic '{name}' is queued for deletion.")
        old = len(existing)
        increment = count - old
        if increment < 0:
            raise InvalidPartitionsError(
                f"Topic currently has {old} partitions, which is higher than the requested {count}."
            )
        if increment == 0:
            raise InvalidPartitionsError(f"Topic already has {old} partitions.")
        brokers = await self.admin_zk_client.get_broker_metadatas(RackAwareMode.ENFORCED)
        new_assignment: dict[int, list[int]] | None = None
        assignments_in = topic.get("assignments")
        if assignments_in is not None:
            replicas = [[int(b) for b in a["broker_ids"]] for a in assignments_in]
            known = {b.id for b in brokers}
            unknown = sorted({b for r in replicas for b in r} - known)
            if unknown:
                raise InvalidReplicaAssignmentError(
                    f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}."
                )
            if len(replicas) != increment:
                raise InvalidReplicaAssignmentError(
                    f"Increasing the number of partitions by {increment} but {len(replicas)} "
                    "assignments provided."
                )
            new_assignment = {old + i: r for i, r in enumerate(replicas)}
        proposed = await self.admin_zk_client.add_partitions(
            name, existing, brokers, count, new_assignment, validate_only=validate_only
        )
        return list(proposed)

    # -- responses for refused requests -----------------------------------------------------------------

    def error_response(
        self,
        api: str,
        body: Mapping[str, Any],
        version: int,
        error_code: int,
        message: str | None = None,
    ) -> dict[str, Any]:
        """A response body giving every topic or resource of the request `error_code`
        (e.g. NOT_CONTROLLER); `api` is the name of the method that would have answered."""
        return error_response(api, body, error_code, message, version)

    # -- config APIs, answered by the ConfigHelper ------------------------------------------------

    def topic_config_entries(self, overrides: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The DescribeConfigs entries of a topic with these overrides (CreateTopics v5+)."""
        return self.config_helper.topic_config_entries(overrides)

    async def describe_configs(self, body: Mapping[str, Any], version: int) -> dict[str, Any]:
        """The DescribeConfigs response body (v0–3)."""
        return await self.config_helper.describe_configs(body, version)

    async def alter_configs(self, body: Mapping[str, Any], version: int) -> dict[str, Any]:
        """The AlterConfigs response body (v0–1)."""
        return await self.config_helper.alter_configs(body, version)

    async def incremental_alter_configs(
        self, body: Mapping[str, Any], version: int
    ) -> dict[str, Any]:
        """The IncrementalAlterConfigs response body (v0–1)."""
        return await self.config_helper.incremental_alter_configs(body, version)


def _check_consecutive_partitions(assignment: Mapping[int, Sequence[int]]) -> None:
    if sorted(assignment) != list(range(len(assignment))):
        raise InvalidReplicaAssignmentError(
            "partitions should be a consecutive 0-based integer sequence, but the assignment "
            f"gives partitions {sorted(assignment)}"
        )
