"""AdminZkClient: topic administration as writes to the metadata store.

After Kafka's `kafka.zk.AdminZkClient`. Creating a topic writes its config node and its
replica assignment; adding partitions rewrites the assignment; deleting a topic creates
its deletion marker; changing configs rewrites the config node and records a change
notification. The controller and the brokers react to those writes; nothing here talks
to a broker.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping, Sequence

from kafpy.admin.replica_assignment import (
    Assignment,
    BrokerMetadata,
    RackAwareMode,
    assign_replicas_to_brokers,
    validate_replica_assignment,
)
from kafpy.common import topic as topic_rules
from kafpy.common.client_quota_config import (
    QUOTA_CONFIG_NAMES,
    is_valid_ip_entity,
    validate_ip_quota_configs,
    validate_quota_configs,
)
from kafpy.common.errors import (
    AdminOperationError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidTopicError,
    TopicAlreadyMarkedForDeletionError,
    TopicExistsError,
    UnknownTopicOrPartitionError,
)
from kafpy.common.kafka_uuid import random_uuid
from kafpy.metadata.errors import NodeExistsError
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import ConfigEntityName, ConfigType
from kafpy.security.scram import ScramMechanism
from kafpy.storage.log_config import validate_topic_config

log = logging.getLogger(__name__)


# ZooKeeper's largest node (jute.maxbuffer's default, 0xfffff bytes)
ZNODE_MAX_BYTES = 0xFFFFF


def check_assignment_fits_a_znode(topic: str, partitions: int, replication_factor: int) -> None:
    """Refuse, before computing it, an assignment whose topic node could not be written:
    each partition takes at least `"p":[r,r,...],` in it. (Without this, a request for 2^31
    partitions would hold the event loop for as long as the assignment takes.)"""
    least = partitions * (6 + 2 * max(replication_factor, 1))
    if least > ZNODE_MAX_BYTES:
        raise InvalidPartitionsError(
            f"Topic {topic} cannot have {partitions} partitions with replication factor "
            f"{replication_factor}: its assignment would not fit in a ZooKeeper node "
            f"(at least {least} bytes, the limit being {ZNODE_MAX_BYTES}, jute.maxbuffer)."
        )


class AdminZkClient:
    """Admin operations (topics and configs) on Kafka's layout through a KafkaZkClient."""

    def __init__(
        self,
        zk_client: KafkaZkClient,
        rng: random.Random | None = None,
        uses_topic_id: bool = False,
    ) -> None:
        self.zk_client = zk_client
        self._rng = rng
        # a broker writes a new topic's id with it (Kafka 2.8's usesTopicId); the tools leave
        # it to the controller, which gives every topic without an id one
        self.uses_topic_id = uses_topic_id

    # -- brokers ----------------------------------------------------------------------------

    async def get_broker_metadatas(
        self,
        rack_aware_mode: RackAwareMode = RackAwareMode.ENFORCED,
        broker_list: Sequence[int] | None = None,
    ) -> list[BrokerMetadata]:
        """The live brokers (optionally only `broker_list`), sorted by id, with racks as the
        mode allows. Enforced mode refuses a cluster where only some brokers have a rack."""
        brokers = await self.zk_client.get_all_brokers_in_cluster()
        if broker_list is not None:
            wanted = set(broker_list)
            brokers = [b for b in brokers if b.id in wanted]
        with_rack = [b for b in brokers if b.rack is not None]
        partial = 0 < len(with_rack) < len(brokers)
        if rack_aware_mode is RackAwareMode.ENFORCED and partial:
            raise AdminOperationError(
                "Not all brokers have rack information for replica rack aware assignment. "
                "Add --disable-rack-aware in command line to make replica assignment without "
                "rack information."
            )
        if rack_aware_mode is RackAwareMode.DISABLED or (
            rack_aware_mode is RackAwareMode.SAFE and partial
        ):
            metadatas = [BrokerMetadata(b.id) for b in brokers]
        else:
            metadatas = [BrokerMetadata(b.id, b.rack) for b in brokers]
        return sorted(metadatas, key=lambda b: b.id)

    # -- topics -----------------------------------------------------------------------------

    async def create_topic(
        self,
        topic: str,
        partitions: int,
        replication_factor: int,
        topic_config: Mapping[str, str] | None = None,
        rack_aware_mode: RackAwareMode = RackAwareMode.ENFORCED,
    ) -> Assignment:
        """Create a topic with an automatic assignment over the live brokers; returns it."""
        check_assignment_fits_a_znode(topic, partitions, replication_factor)
        brokers = await self.get_broker_metadatas(rack_aware_mode)
        assignment = assign_replicas_to_brokers(
            brokers, partitions, replication_factor, rng=self._rng
        )
        await self.create_or_update_topic_partition_assignment_path_in_zk(
            topic, assignment, topic_config or {}
        )
        return assignment

    async def create_or_update_topic_partition_assignment_path_in_zk(
        self,
        topic: str,
        assignment: Mapping[int, Sequence[int]],
        config: Mapping[str, str] | None = None,
        update: bool = False,
        validate: bool = True,
    ) -> None:
        """Validate (unless the caller just did: `validate=False`), then write the config
        node (on create) and the assignment."""
        config = dict(config or {})
        if validate:
            await self.validate_create_or_update_topic(topic, assignment, config, update)
        try:
            if not update:
                log.info(
                    "Creating topic %s with configuration %s and initial partition assignment %s",
                    topic,
                    config,
                    dict(assignment),
                )
                # not atomic with the assignment, as in Kafka: a leftover config node is
                # overwritten by the next create
                await self.zk_client.set_or_create_entity_configs(ConfigType.TOPIC, topic, config)
                await self.zk_client.create_topic_assignment(
                    topic, assignment, random_uuid() if self.uses_topic_id else None
                )
            else:
                log.info("Updating topic %s with new partition assignment %s", topic, assignment)
                topic_ids = await self.zk_client.get_topic_ids_for_topics([topic])
                await self.zk_client.set_topic_assignment(
                    topic, assignment, topic_id=topic_ids.get(topic)
                )
        except NodeExistsError:
            raise TopicExistsError(f"Topic '{topic}' already exists.") from None

    async def validate_create_or_update_topic(
        self,
        topic: str,
        assignment: Mapping[int, Sequence[int]],
        config: Mapping[str, str],
        update: bool,
    ) -> None:
        topic_rules.validate(topic)
        if not update:
            if await self.zk_client.topic_exists(topic):
                raise TopicExistsError(f"Topic '{topic}' already exists.")
            if topic_rules.has_collision_chars(topic):
                all_topics = await self.zk_client.get_all_topics_in_cluster()
                if topic in all_topics:
                    raise TopicExistsError(f"Topic '{topic}' already exists.")
                colliding = [t for t in all_topics if topic_rules.has_collision(topic, t)]
                if colliding:
                    raise InvalidTopicError(
                        f"Topic '{topic}' collides with existing topics: {', '.join(colliding)}"
                    )
        if len({len(replicas) for replicas in assignment.values()}) != 1:
            raise InvalidReplicaAssignmentError(
                "All partitions should have the same number of replicas"
            )
        for partition, replicas in sorted(assignment.items()):
            if len(set(replicas)) != len(replicas):
                raise InvalidReplicaAssignmentError(
                    f"Duplicate replica assignment found for partition {partition}: "
                    f"{', '.join(map(str, replicas))}"
                )
        if not update:
            validate_topic_config(config)

    async def delete_topic(self, topic: str) -> None:
        """Mark a topic for deletion (the controller deletes it if delete.topic.enable)."""
        if not await self.zk_client.topic_exists(topic):
            raise UnknownTopicOrPartitionError(f"Topic `{topic}` to delete does not exist")
        try:
            await self.zk_client.create_delete_topic_path(topic)
        except NodeExistsError:
            raise TopicAlreadyMarkedForDeletionError(
                f"Topic {topic} is already marked for deletion."
            ) from None

    async def add_partitions(
        self,
        topic: str,
        existing_assignment: Mapping[int, Sequence[int]],
        all_brokers: Sequence[BrokerMetadata],
        num_partitions: int = 1,
        replica_assignment: Mapping[int, Sequence[int]] | None = None,
        validate_only: bool = False,
    ) -> Assignment:
        """Grow a topic to `num_partitions`; returns the whole new assignment.

        New partitions get `replica_assignment` (validated against the live brokers) or an
        automatic assignment continuing the existing one: start index = position of
        partition 0's first replica in the broker list, first new id = current count.
        """
        if 0 not in existing_assignment:
            raise AdminOperationError(
                f"Unexpected existing replica assignment for topic '{topic}', partition id 0 "
                f"is missing. Assignment: {dict(existing_assignment)}"
            )
        if await self.zk_client.is_topic_marked_for_deletion(topic):
            raise InvalidTopicError(
                f"Topic {topic} is marked for deletion; its partitions cannot be changed."
            )
        partition0 = list(existing_assignment[0])
        partitions_to_add = num_partitions - len(existing_assignment)
        if partitions_to_add <= 0:
            raise InvalidPartitionsError(
                "The number of partitions for a topic can only be increased. "
                f"Topic {topic} currently has {len(existing_assignment)} partitions, "
                f"{num_partitions} would not be an increase."
            )
        check_assignment_fits_a_znode(topic, num_partitions, len(partition0))
        if replica_assignment is not None:
            expected = set(range(len(existing_assignment), num_partitions))
            if set(replica_assignment) != expected:
                raise InvalidReplicaAssignmentError(
                    f"The replica assignment gives partitions {sorted(replica_assignment)} but "
                    f"growing {topic} from {len(existing_assignment)} to {num_partitions} "
                    f"partitions needs exactly partitions {sorted(expected)}."
                )
            validate_replica_assignment(
                replica_assignment, len(partition0), {b.id for b in all_brokers}
            )
            new_partitions = {p: list(r) for p, r in replica_assignment.items()}
        else:
            start_index = next((i for i, b in enumerate(all_brokers) if b.id >= partition0[0]), -1)
            new_partitions = assign_replicas_to_brokers(
                all_brokers,
                partitions_to_add,
                len(partition0),
                max(0, start_index),
                len(existing_assignment),
                rng=self._rng,
            )
        proposed = {p: list(r) for p, r in existing_assignment.items()}
        proposed.update((p, list(r)) for p, r in new_partitions.items())
        if not validate_only:
            log.info(
                "Creating %d partitions for '%s' with the following replica assignment: %s.",
                partitions_to_add,
                topic,
                new_partitions,
            )
            await self.create_or_update_topic_partition_assignment_path_in_zk(
                topic, proposed, update=True
            )
        return proposed

    # -- configs ----------------------------------------------------------------------------

    async def fetch_entity_config(self, entity_type: str, entity_name: str) -> dict[str, str]:
        return await self.zk_client.get_entity_configs(entity_type, entity_name)

    async def change_configs(
        self, entity_type: str, entity_name: str, configs: Mapping[str, str]
    ) -> None:
        """Replace an entity's overrides with `configs` (the final set, not a delta)."""
        if entity_type == ConfigType.TOPIC:
            await self.change_topic_config(entity_name, configs)
        elif entity_type in (ConfigType.CLIENT, ConfigType.USER):
            await self.change_quota_config(entity_type, entity_name, configs)
        elif entity_type == ConfigType.IP:
            await self.change_ip_config(entity_name, configs)
        else:
            raise AdminOperationError(
                f"Entity type '{entity_type}' is not supported by kafpy; only "
                f"'{ConfigType.TOPIC}', '{ConfigType.CLIENT}', '{ConfigType.USER}' and "
                f"'{ConfigType.IP}' configs can be changed here."
            )

    async def change_ip_config(self, ip: str, configs: Mapping[str, str]) -> None:
        """Write the connection-rate quota of an IP (`<default>`: of every IP without one)
        and notify the brokers (Kafka's changeIpConfig with its validateIpConfig)."""
        if not is_valid_ip_entity(ip):
            raise AdminOperationError(f"{ip} is not a valid IP or resolvable host.")
        try:
            validate_ip_quota_configs(configs)
        except ValueError as e:
            raise AdminOperationError(str(e)) from None
        await self._change_entity_config(ConfigType.IP, ip, configs)

    async def change_quota_config(
        self, entity_type: str, entity_name: str, configs: Mapping[str, str]
    ) -> None:
        """Write the quotas of a client id or user (`users/<u>/clients/<c>` for both) and
        notify the brokers (Kafka's changeClientIdConfig / changeUserOrUserClientIdConfig)."""
        # a user's node holds its SCRAM credentials beside its quotas
        credentials = ScramMechanism.names() if entity_type == ConfigType.USER else ()
        unknown = sorted(k for k in configs if k not in QUOTA_CONFIG_NAMES and k not in credentials)
        if unknown:
            raise AdminOperationError(
                f"Unknown {entity_type} config(s) {', '.join(unknown)}: kafpy knows the quotas "
                f"{', '.join(QUOTA_CONFIG_NAMES)}"
            )
        try:
            validate_quota_configs(configs)
        except ValueError as e:
            raise AdminOperationError(str(e)) from None
        await self._change_entity_config(entity_type, entity_name, configs)

    async def change_broker_config(self, broker_id: int | None, configs: Mapping[str, str]) -> None:
        """Write the dynamic configs of broker `broker_id` (None: the cluster-wide defaults
        at /config/brokers/<default>) and notify the brokers through /config/changes."""
        name = ConfigEntityName.DEFAULT if broker_id is None else str(broker_id)
        await self._change_entity_config(ConfigType.BROKER, name, configs)

    async def validate_topic_config(self, topic: str, configs: Mapping[str, str]) -> None:
        topic_rules.validate(topic)
        if not await self.zk_client.topic_exists(topic):
            raise AdminOperationError(f'Topic "{topic}" does not exist.')
        validate_topic_config(configs)

    async def change_topic_config(self, topic: str, configs: Mapping[str, str]) -> None:
        """Write a topic's overrides and notify the brokers through /config/changes."""
        await self.validate_topic_config(topic, configs)
        await self._change_entity_config(ConfigType.TOPIC, topic, configs)

    async def _change_entity_config(
        self, entity_type: str, entity_name: str, configs: Mapping[str, str]
    ) -> None:
        await self.zk_client.set_or_create_entity_configs(entity_type, entity_name, configs)
        await self.zk_client.create_config_change_notification(f"{entity_type}/{entity_name}")
