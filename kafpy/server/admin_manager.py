"""AdminManager: the broker side of the admin APIs (Kafka's `kafka.server.AdminManager`).

CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs, AlterConfigs and
IncrementalAlterConfigs arrive at the controller's broker; `KafkaApis` hands each request
body here and sends back the response body each method returns. Topic changes are writes
to the metadata store through `AdminZkClient` (the controller reacts to them); the create
and delete requests then wait, as Kafka's DelayedCreatePartitions / DelayedDeleteTopics
do, until the new partitions have leaders or the topic is gone, or the request's timeout
passes (REQUEST_TIMED_OUT). Config changes write `/config/topics/<topic>` and a change
notification under `/config/changes`, which every broker's DynamicConfigManager applies to
its logs.

Errors are per topic or per resource, with Kafka's codes and a message that names the
topic and what to change. Dynamic broker configs and broker-logger configs are not built:
altering them gets INVALID_REQUEST saying so.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafpy.admin import topic as topic_rules
from kafpy.admin.admin_zk_client import AdminZkClient
from kafpy.admin.replica_assignment import RackAwareMode, assign_replicas_to_brokers
from kafpy.common.config_def import ConfigKey, ConfigType
from kafpy.common.errors import (
    InvalidConfigurationError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidRequestError,
    InvalidTopicError,
    KafkaError,
    TopicAlreadyMarkedForDeletionError,
    TopicExistsError,
    UnknownTopicOrPartitionError,
)
from kafpy.common.logger import component_logger
from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import ConfigType as ZkConfigType
from kafpy.server.kafka_config import KAFKA_CONFIG_DEF, KafkaConfig
from kafpy.storage.log_config import (
    LOG_CONFIG_DEF,
    LogConfig,
    broker_config_synonym,
    validate_names,
    validate_topic_config,
)

__all__ = [
    "AdminManager",
    "ConfigResourceType",
    "ConfigSource",
    "CreateTopicRequestMetadata",
]

# Wire error codes (Kafka's Errors).
NONE = 0
UNKNOWN_SERVER_ERROR = -1
UNKNOWN_TOPIC_OR_PARTITION = 3
REQUEST_TIMED_OUT = 7
INVALID_REQUEST = 42
TOPIC_DELETION_DISABLED = 73

NO_NUM_PARTITIONS = -1
NO_REPLICATION_FACTOR = -1
_POLL_S = 0.1  # re-check of a wait's condition when no metadata change was signalled


class ConfigResourceType:
    """ConfigResource.Type ids on the wire."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    BROKER = 4
    BROKER_LOGGER = 8

    NAMES = {0: "UNKNOWN", 1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "BROKER", 8: "BROKER_LOGGER"}


class ConfigSource:
    """DescribeConfigsResponse.ConfigSource ids."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6


class AlterConfigOp:
    """IncrementalAlterConfigs operation ids."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3
    NAMES = {0: "SET", 1: "DELETE", 2: "APPEND", 3: "SUBTRACT"}


_CONFIG_TYPE_IDS = {
    ConfigType.BOOLEAN: 1,
    ConfigType.STRING: 2,
    ConfigType.INT: 3,
    ConfigType.SHORT: 4,
    ConfigType.LONG: 5,
    ConfigType.DOUBLE: 6,
    ConfigType.LIST: 7,
    ConfigType.CLASS: 8,
    ConfigType.PASSWORD: 9,
}

# Kafka's DynamicBrokerConfig.brokerConfigSynonyms: keys that stand for one setting, most
# specific first.
_BROKER_SYNONYM_GROUPS = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
)


def broker_synonyms(name: str) -> list[str]:
    for group in _BROKER_SYNONYM_GROUPS:
        if name in group:
            # log.flush.scheduler.interval.ms alone is not a synonym of the interval
            return list(group) if name != "log.flush.scheduler.interval.ms" else [name]
    return [name]


@dataclass(frozen=True)
class CreateTopicRequestMetadata:
    """What a create-topic policy sees (Kafka's CreateTopicPolicy.RequestMetadata):
    partitions and replication factor when no assignment was given, else the assignment."""

    topic: str
    num_partitions: int | None
    replication_factor: int | None
    replica_assignments: dict[int, list[int]] | None
    configs: dict[str, str]


Predicate = Callable[..., bool | Awaitable[bool]]


def _config_string(type_: ConfigType | None, value: object) -> str | None:
    """A typed config value as Kafka's ConfigDef.convertToString writes it."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def _error_code(e: BaseException) -> int:
    return e.code if isinstance(e, KafkaError) else UNKNOWN_SERVER_ERROR


def _duplicates(names: Sequence[str]) -> set[str]:
    return {name for name, n in Counter(names).items() if n > 1}


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
    ) -> None:
        self.config = config
        self.zk_client = zk_client
        self.admin_zk_client = admin_zk_client or AdminZkClient(zk_client)
        self._partitions_online = partitions_online or self._partitions_have_leaders_in_store
        self._topic_exists_in_metadata = topic_exists_in_metadata or zk_client.topic_exists
        self.create_topic_policy = create_topic_policy
        self._metadata_changed = asyncio.Event()
        self._waiters = 0
        self.log = component_logger(
            "kafpy.server.AdminManager", f"Admin Manager on Broker {config.broker_id}"
        )

    # -- waiting for the controller's work -------------------------------------------------------

    @property
    def has_delayed_topic_operations(self) -> bool:
        return self._waiters > 0

    def try_complete_delayed_topic_operations(self, topic: str | None = None) -> None:
        """Wake the creates and deletes waiting on metadata (call after UpdateMetadata)."""
        event, self._metadata_changed = self._metadata_changed, asyncio.Event()
        event.set()

    async def _partitions_have_leaders_in_store(
        self, topic: str, partitions: Collection[int]
    ) -> bool:
        states = await self.zk_client.get_topic_partition_states(
            TopicPartition(topic, p) for p in partitions
        )
        return len(states) == len(partitions) and all(
            s.leader_and_isr.leader >= 0 for s in states.values()
        )

    @staticmethod
    async def _call(predicate: Predicate, *args: object) -> bool:
        result = predicate(*args)
        if inspect.isawaitable(result):
            result = await result
        return bool(result)

    async def _wait_until(self, done: Callable[[], Awaitable[bool]], timeout_ms: int) -> bool:
        """Wait until `done()` is true (checked on every metadata change and every 100 ms)
        or `timeout_ms` passed; returns the last answer of `done()`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        self._waiters += 1
        try:
            while True:
                event = self._metadata_changed
                if await done():
                    return True
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return False
                try:
                    await asyncio.wait_for(event.wait(), min(remaining, _POLL_S))
                except TimeoutError:
                    pass
        finally:
            self._waiters -= 1

    async def _await_partitions(
        self,
        created: dict[str, Collection[int]],
        results: dict[str, dict[str, Any]],
        timeout_ms: int,
    ) -> None:
        """Wait for the partitions of `created` to come online; REQUEST_TIMED_OUT for those
        still without leaders when the timeout passes."""
        pending = dict(created)

        async def all_online() -> bool:
            for topic, partitions in list(pending.items()):
                if await self._call(self._partitions_online, topic, partitions):
                    del pending[topic]
            return not pending

        if not await self._wait_until(all_online, timeout_ms):
            for topic in pending:
                results[topic]["error_code"] = REQUEST_TIMED_OUT
                results[topic]["error_message"] = (
                    f"Timed out after {timeout_ms} ms waiting for the partitions of topic "
                    f"'{topic}' to get leaders; the request was accepted and the partitions "
                    "will come online when the controller has elected their leaders."
                )

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
        dupes = _duplicates([t["name"] for t in topics])
        changed: dict[str, Collection[int]] = {}
        for topic in topics:
            name = topic["name"]
            result = {"name": name, "error_code": NONE, "error_message": None}
            order.append(result)
            if name in dupes:
                result["error_code"] = INVALID_REQUEST
                result["error_message"] = duplicate_message
                continue
            results[name] = result
            try:
                partitions = await apply(topic)
                if not validate_only:
                    changed[name] = partitions
            except Exception as e:
                self._set_error(result, e, error_context.format(name))
        if changed:
            if timeout_ms <= 0:
                for name in changed:
                    results[name]["error_code"] = REQUEST_TIMED_OUT
                    results[name]["error_message"] = no_wait_message.format(
                        name=name, timeout_ms=timeout_ms
                    )
            else:
                await self._await_partitions(changed, results, timeout_ms)
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
        if await self.zk_client.topic_exists(name):
            raise TopicExistsError(f"Topic '{name}' already exists.")
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
        topic_rules.validate(name)
        if assignments_in:
            # As in Kafka, unknown brokers are not refused here (TopicCommand does not either).
            assignment = {
                int(a["partition_index"]): [int(b) for b in a["broker_ids"]] for a in assignments_in
            }
            _check_consecutive_partitions(assignment)
        else:
            brokers = await self.admin_zk_client.get_broker_metadatas(RackAwareMode.ENFORCED)
            assignment = assign_replicas_to_brokers(brokers, resolved_partitions, resolved_rf)
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
                name, assignment, configs
            )
        return list(assignment)

    # -- DeleteTopics ------------------------------------------------------------------------------

    async def delete_topics(self, body: Mapping[str, Any], version: int) -> dict[str, Any]:
        """The DeleteTopics response body (v0–3): marks the topics for deletion and waits
        until they are gone from the metadata or the timeout passes."""
        names: list[str] = list(dict.fromkeys(body.get("topic_names") or []))
        timeout_ms = int(body.get("timeout_ms", 0))
        order: list[dict[str, Any]] = [
            {"name": n, "error_code": NONE, "error_message": None} for n in names
        ]
        results: dict[str, dict[str, Any]] = {r["name"]: r for r in order}
        if not self.config.get("delete.topic.enable"):
            # Kafka answers INVALID_REQUEST before v3, which had no dedicated error
            code = INVALID_REQUEST if version < 3 else TOPIC_DELETION_DISABLED
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
                if not await self._call(self._topic_exists_in_metadata, name):
                    raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
                try:
                    await self.admin_zk_client.delete_topic(name)
                except TopicAlreadyMarkedForDeletionError:
                    pass  # still wait for it, so that repeated calls all see the deletion
                marked.append(name)
            except Exception as e:
                self._set_error(r, e, f"Error processing delete topic request for topic {name}")
        if marked:
            if timeout_ms <= 0:
                for name in marked:
                    results[name]["error_code"] = REQUEST_TIMED_OUT
                    results[name]["error_message"] = (
                        f"Topic '{name}' was marked for deletion but the request's timeout "
                        f"({timeout_ms} ms) did not allow waiting for the deletion."
                    )
            else:
                await self._await_deletions(marked, results, timeout_ms)
        return {"throttle_time_ms": 0, "responses": order}

    async def _await_deletions(
        self, marked: list[str], results: dict[str, dict[str, Any]], timeout_ms: int
    ) -> None:
        pending = set(marked)

        async def all_gone() -> bool:
            for name in list(pending):
                if not await self._call(self._topic_exists_in_metadata, name):
                    pending.discard(name)
            return not pending

        if not await self._wait_until(all_gone, timeout_ms):
            for name in pending:
                results[name]["error_code"] = REQUEST_TIMED_OUT
                results[name]["error_message"] = (
                    f"Timed out after {timeout_ms} ms waiting for topic '{name}' to be deleted; "
                    "it is marked for deletion and the controller will delete it."
                )

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

    # -- DescribeConfigs -------------------------------------------------------------------------------

    async def describe_configs(self, body: Mapping[str, Any], version: int) -> dict[str, Any]:
        """The DescribeConfigs response body (v0–3); a null or empty key list means all keys."""
        include_synonyms = bool(body.get("include_synonyms", False)) if version >= 1 else False
        include_docs = bool(body.get("include_documentation", False)) if version >= 3 else False
        results = []
        for resource in body.get("resources") or []:
            rtype = int(resource["resource_type"])
            rname = resource["resource_name"]
            keys = resource.get("configuration_keys")
            result: dict[str, Any] = {
                "error_code": NONE,
                "error_message": None,
                "resource_type": rtype,
                "resource_name": rname,
                "configs": [],
            }
            try:
                if rtype == ConfigResourceType.TOPIC:
                    entries = await self._describe_topic(rname, include_synonyms, include_docs)
                elif rtype == ConfigResourceType.BROKER:
                    entries = self._describe_broker(rname, include_synonyms, include_docs)
                elif rtype == ConfigResourceType.BROKER_LOGGER:
                    self._check_broker_id(rname, allow_empty=False)
                    raise InvalidRequestError(
                        "Broker logger configs (BROKER_LOGGER) are not supported by kafpy; "
                        "set log levels with the broker's logging configuration."
                    )
                else:
                    raise InvalidRequestError(
                        f"Unsupported resource type: {ConfigResourceType.NAMES.get(rtype, rtype)}"
                    )
                if keys:
                    wanted = set(keys)
                    entries = [e for e in entries if e["name"] in wanted]
                result["configs"] = entries
            except Exception as e:
                self._set_error(
                    result, e, f"Error processing describe configs request for resource {rname}"
                )
            results.append(result)
        return {"throttle_time_ms": 0, "results": results}

    async def _describe_topic(
        self, topic: str, include_synonyms: bool, include_docs: bool
    ) -> list[dict[str, Any]]:
        topic_rules.validate(topic)
        if not await self.zk_client.topic_exists(topic):
            raise UnknownTopicOrPartitionError(f"The topic '{topic}' does not exist.")
        overrides = await self.admin_zk_client.fetch_entity_config(ZkConfigType.TOPIC, topic)
        return self.topic_config_entries(overrides, include_synonyms, include_docs)

    def topic_config_entries(
        self,
        overrides: Mapping[str, Any],
        include_synonyms: bool = False,
        include_docs: bool = False,
    ) -> list[dict[str, Any]]:
        """DescribeConfigs entries of a topic with these overrides of the broker's defaults
        (CreateTopics v5+ reports them for the topics it creates, validate_only too)."""
        log_config = LogConfig.from_props(self.config.log_default_config().values(), overrides)
        entries = []
        for key in sorted(LOG_CONFIG_DEF, key=lambda k: k.name):
            value = _config_string(key.type, log_config.get(key.name))
            synonyms: list[dict[str, Any]] = []
            if key.name in overrides:
                synonyms.append(
                    {"name": key.name, "value": value, "source": ConfigSource.DYNAMIC_TOPIC_CONFIG}
                )
            broker_key = broker_config_synonym(key.name)
            if broker_key is not None:
                synonyms.extend(self._broker_synonyms(broker_key))
            entries.append(self._entry(key, value, synonyms, False, include_synonyms, include_docs))
        return entries

    def _check_broker_id(self, name: str | None, allow_empty: bool = True) -> int | None:
        if not name:
            if allow_empty:
                return None
            raise InvalidRequestError("Broker id must not be empty")
        try:
            broker_id = int(name)
        except ValueError:
            raise InvalidRequestError(f"Broker id must be an integer, but it is: {name}") from None
        if broker_id != self.config.broker_id:
            raise InvalidRequestError(
                f"Unexpected broker id, expected {self.config.broker_id} or empty string, but "
                f"received {name}"
            )
        return broker_id

    def _broker_synonyms(self, name: str) -> list[dict[str, Any]]:
        """The static (server.properties) then default values of `name` and its synonyms."""
        originals = self.config.originals
        found = []
        names = broker_synonyms(name)
        for synonym in names:
            if synonym in originals and originals[synonym] is not None:
                key = KAFKA_CONFIG_DEF.key(synonym) if synonym in KAFKA_CONFIG_DEF else None
                found.append(
                    {
                        "name": synonym,
                        "value": _config_string(key.type if key else None, originals[synonym]),
                        "source": ConfigSource.STATIC_BROKER_CONFIG,
                    }
                )
        for synonym in names:
            if synonym in KAFKA_CONFIG_DEF:
                key = KAFKA_CONFIG_DEF.key(synonym)
                if key.has_default and key.default is not None:
                    found.append(
                        {
                            "name": synonym,
                            "value": _config_string(key.type, key.default),
                            "source": ConfigSource.DEFAULT_CONFIG,
                        }
                    )
        return found

    def _describe_broker(
        self, name: str | None, include_synonyms: bool, include_docs: bool
    ) -> list[dict[str, Any]]:
        if self._check_broker_id(name) is None:
            return []  # the cluster-wide dynamic defaults: kafpy has none
        values: dict[str, Any] = {
            k: v
            for k, v in self.config.originals.items()
            if v is not None and k not in KAFKA_CONFIG_DEF
        }
        values.update({key.name: self.config.get(key.name) for key in KAFKA_CONFIG_DEF})
        entries = []
        for config_name in sorted(values):
            key = KAFKA_CONFIG_DEF.key(config_name) if config_name in KAFKA_CONFIG_DEF else None
            synonyms = self._broker_synonyms(config_name)
            value = _config_string(key.type if key else None, values[config_name])
            entries.append(
                self._entry(key, value, synonyms, True, include_synonyms, include_docs, config_name)
            )
        return entries

    @staticmethod
    def _entry(
        key: ConfigKey | None,
        value: str | None,
        synonyms: list[dict[str, Any]],
        read_only: bool,
        include_synonyms: bool,
        include_docs: bool,
        name: str | None = None,
    ) -> dict[str, Any]:
        # A key of unknown type may hold a secret: Kafka reports it as sensitive, valueless.
        sensitive = key is None or key.type is ConfigType.PASSWORD
        if sensitive:
            value = None
            synonyms = [{**s, "value": None} for s in synonyms]
        source = synonyms[0]["source"] if synonyms else ConfigSource.DEFAULT_CONFIG
        return {
            "name": key.name if key is not None else name,
            "value": value,
            "read_only": read_only,
            "is_default": source == ConfigSource.DEFAULT_CONFIG,
            "config_source": source,
            "is_sensitive": sensitive,
            "synonyms": synonyms if include_synonyms else [],
            "config_type": _CONFIG_TYPE_IDS.get(key.type, 0) if key is not None else 0,
            "documentation": (key.doc or None) if include_docs and key is not None else None,
        }

    # -- AlterConfigs / IncrementalAlterConfigs ------------------------------------------------------

    async def alter_configs(self, body: Mapping[str, Any], version: int) -> dict[str, Any]:
        """The AlterConfigs response body (v0–1): a topic's overrides are replaced by the
        given set."""
        validate_only = bool(body.get("validate_only", False))
        responses = []
        for resource in body.get("resources") or []:
            rtype = int(resource["resource_type"])
            rname = resource["resource_name"]
            response = self._config_response(rtype, rname)
            try:
                entries = list(resource.get("configs") or [])
                null_updates = [c["name"] for c in entries if c.get("value") is None]
                if null_updates:
                    raise InvalidRequestError(
                        f"Null value not supported for : {','.join(null_updates)}"
                    )
                props = {c["name"]: c["value"] for c in entries}
                if rtype == ConfigResourceType.TOPIC:
                    await self._alter_topic_configs(rname, props, validate_only)
                elif rtype == ConfigResourceType.BROKER:
                    self._alter_broker_configs(rname)
                else:
                    raise InvalidRequestError(
                        "AlterConfigs is only supported for topics and brokers, but resource type "
                        f"is {ConfigResourceType.NAMES.get(rtype, rtype)}"
                    )
            except Exception as e:
                self._set_error(
                    response, e, f"Error processing alter configs request for resource {rname}"
                )
            responses.append(response)
        return {"throttle_time_ms": 0, "responses": responses}

    async def incremental_alter_configs(
        self, body: Mapping[str, Any], version: int
    ) -> dict[str, Any]:
        """The IncrementalAlterConfigs response body (v0–1): SET, DELETE, APPEND and SUBTRACT
        applied to a topic's current overrides."""
        validate_only = bool(body.get("validate_only", False))
        responses = []
        for resource in body.get("resources") or []:
            rtype = int(resource["resource_type"])
            rname = resource["resource_name"]
            response = self._config_response(rtype, rname)
            try:
                ops = list(resource.get("configs") or [])
                dupes = _duplicates([op["name"] for op in ops])
                if dupes:
                    raise InvalidRequestError(
                        f"Error due to duplicate config keys : {','.join(sorted(dupes))}"
                    )
                null_updates = [
                    f"{AlterConfigOp.NAMES.get(op['config_operation'], op['config_operation'])}:{op['name']}"
                    for op in ops
                    if op.get("value") is None and op["config_operation"] != AlterConfigOp.DELETE
                ]
                if null_updates:
                    raise InvalidRequestError(
                        f"Null value not supported for : {','.join(null_updates)}"
                    )
                if rtype == ConfigResourceType.TOPIC:
                    props = await self.admin_zk_client.fetch_entity_config(
                        ZkConfigType.TOPIC, rname
                    )
                    _apply_incremental(ops, props)
                    await self._alter_topic_configs(rname, props, validate_only)
                elif rtype == ConfigResourceType.BROKER:
                    self._alter_broker_configs(rname)
                elif rtype == ConfigResourceType.BROKER_LOGGER:
                    self._check_broker_id(rname)
                    raise InvalidRequestError(
                        "Broker logger configs (BROKER_LOGGER) are not supported by kafpy; "
                        "set log levels with the broker's logging configuration."
                    )
                else:
                    raise InvalidRequestError(
                        "AlterConfigs is only supported for topics and brokers, but resource type "
                        f"is {ConfigResourceType.NAMES.get(rtype, rtype)}"
                    )
            except Exception as e:
                self._set_error(
                    response,
                    e,
                    f"Error processing incremental alter configs request for resource {rname}",
                )
            responses.append(response)
        return {"throttle_time_ms": 0, "responses": responses}

    @staticmethod
    def _config_response(rtype: int, rname: str) -> dict[str, Any]:
        return {
            "error_code": NONE,
            "error_message": None,
            "resource_type": rtype,
            "resource_name": rname,
        }

    async def _alter_topic_configs(
        self, topic: str, props: Mapping[str, str], validate_only: bool
    ) -> None:
        topic_rules.validate(topic)
        if not await self.zk_client.topic_exists(topic):
            raise UnknownTopicOrPartitionError(f"The topic '{topic}' does not exist.")
        validate_names(props)  # an unknown name is INVALID_CONFIG
        try:
            validate_topic_config(props)
        except InvalidConfigurationError as e:
            # as Kafka: a bad value in AlterConfigs is INVALID_REQUEST
            raise InvalidRequestError(
                f"Invalid config value for resource ConfigResource(type=TOPIC, name='{topic}'): {e}"
            ) from e
        if not validate_only:
            self.log.info("Updating topic %s with new configuration %s", topic, dict(props))
            await self.admin_zk_client.change_topic_config(topic, props)

    def _alter_broker_configs(self, name: str | None) -> None:
        self._check_broker_id(name)
        raise InvalidRequestError(
            "Dynamic broker configs are not supported by kafpy: change server.properties (or "
            f"--override) and restart broker {self.config.broker_id} instead."
        )

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
        (e.g. NOT_CONTROLLER). `api` is the method name: "create_topics", "delete_topics",
        "create_partitions", "describe_configs", "alter_configs" or
        "incremental_alter_configs"."""
        if api == "create_topics":
            items = [
                {"name": t["name"], "error_code": error_code, "error_message": message}
                for t in body.get("topics") or []
            ]
            return {"throttle_time_ms": 0, "topics": items}
        if api == "delete_topics":
            items = [
                {"name": n, "error_code": error_code, "error_message": message}
                for n in body.get("topic_names") or []
            ]
            return {"throttle_time_ms": 0, "responses": items}
        if api == "create_partitions":
            items = [
                {"name": t["name"], "error_code": error_code, "error_message": message}
                for t in body.get("topics") or []
            ]
            return {"throttle_time_ms": 0, "results": items}
        if api in ("describe_configs", "alter_configs", "incremental_alter_configs"):
            items = []
            for r in body.get("resources") or []:
                item = self._config_response(int(r["resource_type"]), r["resource_name"])
                item["error_code"] = error_code
                item["error_message"] = message
                if api == "describe_configs":
                    item["configs"] = []
                items.append(item)
            key = "results" if api == "describe_configs" else "responses"
            return {"throttle_time_ms": 0, key: items}
        raise ValueError(f"{api!r} is not an admin API of AdminManager")

    def _set_error(self, result: dict[str, Any], e: Exception, what: str) -> None:
        result["error_code"] = _error_code(e)
        result["error_message"] = str(e) or None
        if isinstance(e, KafkaError):
            self.log.info("%s: %s", what, e)
        else:
            self.log.exception("%s", what)


def _check_consecutive_partitions(assignment: Mapping[int, Sequence[int]]) -> None:
    if sorted(assignment) != list(range(len(assignment))):
        raise InvalidReplicaAssignmentError(
            "partitions should be a consecutive 0-based integer sequence, but the assignment "
            f"gives partitions {sorted(assignment)}"
        )


def _apply_incremental(ops: Sequence[Mapping[str, Any]], props: dict[str, str]) -> None:
    """Apply IncrementalAlterConfigs operations to a topic's overrides, in place."""
    for op in ops:
        name = op["name"]
        kind = op["config_operation"]
        value = op.get("value")
        if kind == AlterConfigOp.SET:
            props[name] = str(value)
        elif kind == AlterConfigOp.DELETE:
            props.pop(name, None)
        elif kind in (AlterConfigOp.APPEND, AlterConfigOp.SUBTRACT):
            if name not in LOG_CONFIG_DEF:
                raise InvalidConfigurationError(f"Unknown topic config name: {name}")
            key = LOG_CONFIG_DEF.key(name)
            verb = "append" if kind == AlterConfigOp.APPEND else "subtract"
            if key.type is not ConfigType.LIST:
                raise InvalidRequestError(
                    f"Config value {verb} is not allowed for config key: {name}"
                )
            current = props.get(name)
            if current is None:
                current = _config_string(key.type, key.default) or ""
            old = [v for v in current.split(",") if v]
            given = [v for v in str(value).split(",") if v]
            new = (
                old + given if kind == AlterConfigOp.APPEND else [v for v in old if v not in given]
            )
            props[name] = ",".join(new)
        else:
            raise InvalidRequestError(
                f"Unknown config operation {kind} for config {name}: expected 0 (SET), 1 (DELETE), "
                "2 (APPEND) or 3 (SUBTRACT)"
            )
