"""KafkaZkClient: Kafka's typed operations on the metadata store.

After Kafka's `kafka.zk.KafkaZkClient`: every read and write of the Kafka layout goes
through here, so callers (admin tools now, the controller and brokers later) deal in
topics, partitions, brokers and configs, never in paths and JSON. All methods are
coroutines on the store's loop; store errors (`kafpy.metadata.errors`) pass through
unless a method says otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.errors import NodeExistsError, NoNodeError
from kafpy.metadata.store import MetadataStore, SetDataOp, Stat, WatchCallback
from kafpy.metadata.zk_data import (
    PERSISTENT_ZK_PATHS,
    Broker,
    BrokerIdsZNode,
    BrokerIdZNode,
    BrokerInfo,
    ClusterIdZNode,
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityTypeZNode,
    ConfigEntityZNode,
    ControllerEpochZNode,
    ControllerZNode,
    DeleteTopicsTopicZNode,
    DeleteTopicsZNode,
    LeaderIsrAndControllerEpoch,
    TopicPartitionStateZNode,
    TopicPartitionsZNode,
    TopicPartitionZNode,
    TopicsZNode,
    TopicZNode,
    ZkVersion,
)


class KafkaZkClient:
    """Typed access to Kafka's ZooKeeper layout on a started MetadataStore."""

    def __init__(self, store: MetadataStore) -> None:
        self.store = store

    # -- set-up ---------------------------------------------------------------------------

    async def make_sure_persistent_paths_exist(self) -> None:
        """Create the persistent parents Kafka expects (/brokers/ids, /config/topics, ...)."""
        for path in PERSISTENT_ZK_PATHS:
            await self.store.ensure_path(path)

    # -- brokers ----------------------------------------------------------------------------

    async def register_broker(self, info: BrokerInfo) -> int:
        """Create the broker's ephemeral registration; returns its creation zxid.

        Raises NodeExistsError when a live session already registered this broker id.
        """
        await self.store.ensure_path(BrokerIdsZNode.path)
        await self.store.create(info.path, info.to_json_bytes(), ephemeral=True)
        stat = await self.store.exists(info.path)
        return stat.czxid if stat is not None else -1

    async def get_all_broker_ids(self, watch: WatchCallback | None = None) -> list[int]:
        """Ids of the registered brokers, sorted."""
        try:
            children = await self.store.get_children(BrokerIdsZNode.path, watch)
        except NoNodeError:
            return []
        return sorted(int(c) for c in children)

    async def get_broker(self, broker_id: int) -> Broker | None:
        data = await self.store.get_data_or_none(BrokerIdZNode.path(broker_id))
        if data is None:
            return None
        return BrokerIdZNode.decode(broker_id, data).broker

    async def get_all_brokers_in_cluster(self) -> list[Broker]:
        """The registered brokers, sorted by id (brokers vanishing meanwhile are skipped)."""
        brokers = []
        for broker_id in await self.get_all_broker_ids():
            broker = await self.get_broker(broker_id)
            if broker is not None:
                brokers.append(broker)
        return brokers

    # -- topics -----------------------------------------------------------------------------

    async def get_all_topics_in_cluster(self, watch: WatchCallback | None = None) -> list[str]:
        """Names of all topics (children of /brokers/topics), sorted."""
        try:
            return await self.store.get_children(TopicsZNode.path, watch)
        except NoNodeError:
            return []

    async def topic_exists(self, topic: str) -> bool:
        return await self.store.exists(TopicZNode.path(topic)) is not None

    async def create_topic_assignment(
        self, topic: str, assignment: Mapping[int, Sequence[int]]
    ) -> None:
        """Create /brokers/topics/<topic>; raises NodeExistsError if it exists."""
        await self.store.create(
            TopicZNode.path(topic), TopicZNode.encode(assignment), make_parents=True
        )

    async def set_topic_assignment(
        self,
        topic: str,
        assignment: Mapping[int, Sequence[int]],
        expected_version: int = ZkVersion.MATCH_ANY,
    ) -> Stat:
        """Replace a topic's assignment if the node is at `expected_version`."""
        return await self.store.set(
            TopicZNode.path(topic), TopicZNode.encode(assignment), expected_version
        )

    async def get_topic_assignment_and_version(
        self, topic: str, watch: WatchCallback | None = None
    ) -> tuple[dict[int, list[int]], int]:
        """A topic's assignment (partition → replicas) and its znode version.

        ({}, ZkVersion.UNKNOWN) when the topic does not exist.
        """
        try:
            data, stat = await self.store.get(TopicZNode.path(topic), watch)
        except NoNodeError:
            return {}, ZkVersion.UNKNOWN
        return TopicZNode.decode(data), stat.version

    async def get_partition_assignment_for_topics(
        self, topics: Iterable[str]
    ) -> dict[str, dict[int, list[int]]]:
        """Assignments of the topics that exist (missing topics are left out)."""
        result: dict[str, dict[int, list[int]]] = {}
        for topic in topics:
            data = await self.store.get_data_or_none(TopicZNode.path(topic))
            if data is not None:
                result[topic] = TopicZNode.decode(data)
        return result

    async def get_replica_assignment_for_topics(
        self, topics: Iterable[str]
    ) -> dict[TopicPartition, list[int]]:
        by_topic = await self.get_partition_assignment_for_topics(topics)
        return {
            TopicPartition(topic, p): replicas
            for topic, assignment in by_topic.items()
            for p, replicas in assignment.items()
        }

    async def get_partitions_for_topics(self, topics: Iterable[str]) -> dict[str, list[int]]:
        by_topic = await self.get_partition_assignment_for_topics(topics)
        return {topic: sorted(assignment) for topic, assignment in by_topic.items()}

    async def delete_topic_znode(self, topic: str) -> None:
        """Delete /brokers/topics/<topic> and its partition states (end of a deletion)."""
        try:
            await self.store.delete(TopicZNode.path(topic), recursive=True)
        except NoNodeError:
            pass

    # -- partition states --------------------------------------------------------------------

    async def get_topic_partition_state(
        self, tp: TopicPartition, watch: WatchCallback | None = None
    ) -> LeaderIsrAndControllerEpoch | None:
        """The partition's leader, ISR and epochs, or None without a state node."""
        try:
            data, stat = await self.store.get(TopicPartitionStateZNode.path(tp), watch)
        except NoNodeError:
            return None
        return TopicPartitionStateZNode.decode(data, stat)

    async def get_topic_partition_states(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        """States of the given partitions that have one."""
        result: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        for tp in partitions:
            state = await self.get_topic_partition_state(tp)
            if state is not None:
                result[tp] = state
        return result

    async def create_topic_partition_state(
        self, tp: TopicPartition, state: LeaderIsrAndControllerEpoch
    ) -> None:
        """Create the partition's state node (and its parents /partitions, /<p>).

        Raises NodeExistsError if the state exists.
        """
        await self.store.ensure_path(TopicPartitionsZNode.path(tp.topic))
        try:
            await self.store.create(TopicPartitionZNode.path(tp))
        except NodeExistsError:
            pass
        await self.store.create(
            TopicPartitionStateZNode.path(tp), TopicPartitionStateZNode.encode(state)
        )

    async def set_topic_partition_state(
        self,
        tp: TopicPartition,
        state: LeaderIsrAndControllerEpoch,
        expected_version: int = ZkVersion.MATCH_ANY,
    ) -> Stat:
        return await self.store.set(
            TopicPartitionStateZNode.path(tp),
            TopicPartitionStateZNode.encode(state),
            expected_version,
        )

    # -- deletion markers --------------------------------------------------------------------

    async def create_delete_topic_path(self, topic: str) -> None:
        """Mark a topic for deletion; raises NodeExistsError if it already is."""
        await self.store.create(DeleteTopicsTopicZNode.path(topic), make_parents=True)

    async def is_topic_marked_for_deletion(self, topic: str) -> bool:
        return await self.store.exists(DeleteTopicsTopicZNode.path(topic)) is not None

    async def get_topic_deletions(self, watch: WatchCallback | None = None) -> list[str]:
        try:
            return await self.store.get_children(DeleteTopicsZNode.path, watch)
        except NoNodeError:
            return []

    async def delete_topic_deletions(self, topics: Iterable[str]) -> None:
        for topic in topics:
            try:
                await self.store.delete(DeleteTopicsTopicZNode.path(topic))
            except NoNodeError:
                pass

    # -- configs -----------------------------------------------------------------------------

    async def get_entity_configs(self, entity_type: str, entity_name: str) -> dict[str, str]:
        """An entity's overrides ({} when it has none)."""
        data = await self.store.get_data_or_none(ConfigEntityZNode.path(entity_type, entity_name))
        return ConfigEntityZNode.decode(data)

    async def set_or_create_entity_configs(
        self, entity_type: str, entity_name: str, config: Mapping[str, str]
    ) -> None:
        """Write an entity's overrides, creating the node (and parents) if needed."""
        path = ConfigEntityZNode.path(entity_type, entity_name)
        data = ConfigEntityZNode.encode(config)
        try:
            await self.store.set(path, data)
        except NoNodeError:
            try:
                await self.store.create(path, data, make_parents=True)
            except NodeExistsError:  # created meanwhile: overwrite as Kafka does
                await self.store.set(path, data)

    async def get_all_entities_with_config(self, entity_type: str) -> list[str]:
        try:
            return await self.store.get_children(ConfigEntityTypeZNode.path(entity_type))
        except NoNodeError:
            return []

    async def delete_topic_configs(self, topics: Iterable[str]) -> None:
        for topic in topics:
            try:
                await self.store.delete(ConfigEntityZNode.path("topics", topic), recursive=True)
            except NoNodeError:
                pass

    async def create_config_change_notification(self, sanitized_entity_path: str) -> str:
        """Record `/config/changes/config_change_<seq>` for an entity ("topics/t"); returns
        the created path."""
        return await self.store.create(
            ConfigEntityChangeNotificationSequenceZNode.create_path,
            ConfigEntityChangeNotificationSequenceZNode.encode(sanitized_entity_path),
            sequential=True,
            make_parents=True,
        )

    # -- create a topic in one transaction ---------------------------------------------------

    async def create_topic_with_config(
        self, topic: str, assignment: Mapping[int, Sequence[int]], config: Mapping[str, str]
    ) -> None:
        """Write /config/topics/<t> then /brokers/topics/<t>, as Kafka does (two writes; a
        crash between them leaves an unused config node, which a later create overwrites).

        Raises NodeExistsError if the topic exists.
        """
        await self.set_or_create_entity_configs("topics", topic, config)
        await self.create_topic_assignment(topic, assignment)

    async def multi_set_topic_assignments(
        self, assignments: Mapping[str, tuple[Mapping[int, Sequence[int]], int]]
    ) -> None:
        """Set several topics' assignments atomically, each at its expected version."""
        await self.store.multi(
            [
                SetDataOp(TopicZNode.path(t), TopicZNode.encode(a), v)
                for t, (a, v) in assignments.items()
            ]
        )

    # -- controller --------------------------------------------------------------------------

    async def get_controller_id(self, watch: WatchCallback | None = None) -> int | None:
        """The active controller's broker id, or None when there is none.

        `watch` is set with `exists`, so it also fires when a controller appears.
        """
        if watch is not None and await self.store.exists(ControllerZNode.path, watch) is None:
            return None
        try:
            data, _ = await self.store.get(ControllerZNode.path)
        except NoNodeError:
            return None
        return ControllerZNode.decode(data)

    async def register_controller(self, broker_id: int, timestamp_ms: int) -> None:
        """Create the ephemeral /controller node; raises NodeExistsError if one exists."""
        await self.store.create(
            ControllerZNode.path, ControllerZNode.encode(broker_id, timestamp_ms), ephemeral=True
        )

    async def get_controller_epoch(self) -> tuple[int, Stat] | None:
        """The controller epoch and its znode stat, or None before the first election."""
        try:
            data, stat = await self.store.get(ControllerEpochZNode.path)
        except NoNodeError:
            return None
        return ControllerEpochZNode.decode(data), stat

    async def create_controller_epoch(self, epoch: int) -> None:
        await self.store.create(ControllerEpochZNode.path, ControllerEpochZNode.encode(epoch))

    async def set_controller_epoch(self, epoch: int, expected_version: int) -> Stat:
        return await self.store.set(
            ControllerEpochZNode.path, ControllerEpochZNode.encode(epoch), expected_version
        )

    # -- cluster id --------------------------------------------------------------------------

    async def get_cluster_id(self) -> str | None:
        data = await self.store.get_data_or_none(ClusterIdZNode.path)
        return ClusterIdZNode.from_json(data) if data is not None else None

    async def create_or_get_cluster_id(self, proposed: str) -> str:
        """The cluster id, creating /cluster/id with `proposed` if there is none yet."""
        try:
            await self.store.create(
                ClusterIdZNode.path, ClusterIdZNode.to_json(proposed), make_parents=True
            )
            return proposed
        except NodeExistsError:
            existing = await self.get_cluster_id()
            return existing if existing is not None else proposed

    # -- the end of a topic deletion -------------------------------------------------------

    async def delete_topic_nodes(self, topic: str) -> None:
        """Remove the topic's assignment (with partition states), its configs and, last, its
        deletion marker, in the order Kafka's TopicDeletionManager does."""
        await self.delete_topic_znode(topic)
        await self.delete_topic_configs([topic])
        await self.delete_topic_deletions([topic])
