"""KafkaZkClient: Kafka's typed operations on the metadata store.

After Kafka's `kafka.zk.KafkaZkClient`: every read and write of the Kafka layout goes
through here, so callers (admin tools now, the controller and brokers later) deal in
topics, partitions, brokers and configs, never in paths and JSON. All methods are
coroutines on the store's loop; store errors (`kafpy.metadata.errors`) pass through
unless a method says otherwise.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from kafpy.common.errors import ControllerMovedError
from kafpy.common.kafka_uuid import random_uuid
from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.errors import BadVersionError, NodeExistsError, NoNodeError, NotEmptyError
from kafpy.metadata.store import (
    MULTI_OPS_PER_REQUEST,
    CheckOp,
    CreateOp,
    DeleteOp,
    MetadataStore,
    Op,
    SetDataOp,
    Stat,
    WatchCallback,
)
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
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReassignPartitionsZNode,
    ReplicaAssignment,
    TopicPartitionStateZNode,
    TopicPartitionsZNode,
    TopicPartitionZNode,
    TopicsZNode,
    TopicZNode,
    ZkVersion,
)


@dataclass
class UpdateLeaderAndIsrResult:
    """The outcome of `KafkaZkClient.update_leader_and_isr`, as Kafka's.

    `finished`: partition → the written LeaderAndIsr (with its new znode version) or the
    exception that stopped it; `partitions_to_retry`: partitions whose state node had moved
    on (another writer), to be read again and retried.
    """

    finished: dict[TopicPartition, LeaderAndIsr | Exception] = field(default_factory=dict)
    partitions_to_retry: list[TopicPartition] = field(default_factory=list)


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
        """Create the broker's ephemeral registration; returns its broker epoch (KIP-380),
        the czxid of the node.

        As Kafka's checked ephemeral create: the node is created and given its data in one
        transaction, whose stat carries the czxid. A node already there that this session
        owns is the registration; one owned by another live session raises NodeExistsError.
        """
        await self.store.ensure_path(BrokerIdsZNode.path)
        while True:
            try:
                _, stat = await self.store.multi(
                    [
                        CreateOp(info.path, b"", ephemeral=True),
                        SetDataOp(info.path, info.to_json_bytes(), 0),
                    ]
                )
            except NodeExistsError:
                try:
                    _, stat = await self.store.get(info.path)
                except NoNodeError:
                    continue  # its session ended meanwhile: create it again
                if stat.ephemeral_owner != self.store.session_id:
                    raise
            assert isinstance(stat, Stat)
            return stat.czxid

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

    async def get_all_broker_and_epochs_in_cluster(
        self, watch: WatchCallback | None = None
    ) -> dict[int, tuple[Broker, int]]:
        """Registered brokers with their broker epoch (the czxid of their registration).

        `watch` is a child watch on /brokers/ids. Brokers vanishing meanwhile are skipped.
        """
        result: dict[int, tuple[Broker, int]] = {}
        for broker_id in await self.get_all_broker_ids(watch):
            try:
                data, stat = await self.store.get(BrokerIdZNode.path(broker_id))
            except NoNodeError:
                continue
            result[broker_id] = (BrokerIdZNode.decode(broker_id, data).broker, stat.czxid)
        return result

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
        self,
        topic: str,
        assignment: Mapping[int, Sequence[int]],
        topic_id: uuid.UUID | None = None,
    ) -> None:
        """Create /brokers/topics/<topic>; raises NodeExistsError if it exists."""
        await self.store.create(
            TopicZNode.path(topic),
            TopicZNode.encode(topic, assignment, topic_id),
            make_parents=True,
        )

    async def set_topic_assignment(
        self,
        topic: str,
        assignment: Mapping[int, Sequence[int] | ReplicaAssignment],
        expected_version: int = ZkVersion.MATCH_ANY,
        *,
        topic_id: uuid.UUID | None,
    ) -> Stat:
        """Replace a topic's assignment (keeping `topic_id`, which the caller read) if the
        node is at `expected_version`."""
        return await self.store.set(
            TopicZNode.path(topic), TopicZNode.encode(topic, assignment, topic_id), expected_version
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

    async def get_full_topic_assignment(
        self, topic: str, watch: WatchCallback | None = None
    ) -> dict[int, ReplicaAssignment]:
        """A topic's assignment with the adding/removing replicas of partitions being
        reassigned ({} when the topic does not exist)."""
        return (await self.get_full_topic_assignment_and_id(topic, watch))[0]

    async def get_full_topic_assignment_and_id(
        self, topic: str, watch: WatchCallback | None = None
    ) -> tuple[dict[int, ReplicaAssignment], uuid.UUID | None]:
        """A topic's full assignment and its topic id (({}, None) when it does not exist)."""
        try:
            data, _ = await self.store.get(TopicZNode.path(topic), watch)
        except NoNodeError:
            return {}, None
        return TopicZNode.decode_full(data), TopicZNode.decode_topic_id(data)

    async def set_full_topic_assignment(
        self,
        topic: str,
        assignment: Mapping[int, ReplicaAssignment],
        *,
        topic_id: uuid.UUID | None,
    ) -> Stat:
        """Write a topic's assignment with its adding/removing replicas (raises NoNodeError
        without the topic)."""
        return await self.store.set(
            TopicZNode.path(topic),
            TopicZNode.encode(topic, assignment, topic_id),
            ZkVersion.MATCH_ANY,
        )

    async def get_topic_ids_for_topics(self, topics: Iterable[str]) -> dict[str, uuid.UUID]:
        """The ids of the topics that exist and have one (Kafka's getTopicIdsForTopics)."""
        result: dict[str, uuid.UUID] = {}
        for topic in topics:
            topic_id = TopicZNode.decode_topic_id(
                await self.store.get_data_or_none(TopicZNode.path(topic))
            )
            if topic_id is not None:
                result[topic] = topic_id
        return result

    async def set_topic_ids(
        self, assignments: Mapping[str, Mapping[int, ReplicaAssignment]]
    ) -> dict[str, uuid.UUID]:
        """Give each topic (which has no id yet) a new random id, rewriting its node with the
        assignment given (Kafka's setTopicIds); returns the ids."""
        ids: dict[str, uuid.UUID] = {}
        for topic, assignment in assignments.items():
            topic_id = random_uuid()
            await self.set_full_topic_assignment(topic, assignment, topic_id=topic_id)
            ids[topic] = topic_id
        return ids

    # -- /admin/reassign_partitions ---------------------------------------------------------

    async def reassign_partitions_in_progress(self) -> bool:
        return await self.store.exists(ReassignPartitionsZNode.path) is not None

    async def get_partition_reassignment(
        self, watch: WatchCallback | None = None
    ) -> dict[TopicPartition, list[int]]:
        """The reassignment requested through ZooKeeper ({} without the node)."""
        try:
            data, _ = await self.store.get(ReassignPartitionsZNode.path, watch)
        except NoNodeError:
            return {}
        return ReassignPartitionsZNode.decode(data)

    async def create_partition_reassignment(
        self, reassignment: Mapping[TopicPartition, Sequence[int]]
    ) -> None:
        """Create /admin/reassign_partitions; raises NodeExistsError while one runs."""
        await self.store.create(
            ReassignPartitionsZNode.path,
            ReassignPartitionsZNode.encode(reassignment),
            make_parents=True,
        )

    async def set_or_create_partition_reassignment(
        self, reassignment: Mapping[TopicPartition, Sequence[int]]
    ) -> None:
        data = ReassignPartitionsZNode.encode(reassignment)
        try:
            await self.store.set(ReassignPartitionsZNode.path, data, ZkVersion.MATCH_ANY)
        except NoNodeError:
            await self.store.create(ReassignPartitionsZNode.path, data, make_parents=True)

    async def delete_partition_reassignment(self) -> None:
        try:
            await self.store.delete(ReassignPartitionsZNode.path)
        except NoNodeError:
            pass

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
        """Delete /brokers/topics/<topic> and its partition states (end of a deletion).

        The layout is known, so each partition's state and partition nodes go in
        transactions of MULTI_OPS_PER_REQUEST deletes, all sent together; whatever else
        is left (or a transaction that met an unexpected node) goes by the recursive
        delete."""
        try:
            children = await self.store.get_children(TopicPartitionsZNode.path(topic))
        except NoNodeError:
            children = []
        partitions = [TopicPartition(topic, int(c)) for c in children if c.isdigit()]

        async def delete_partitions(chunk: list[TopicPartition]) -> None:
            ops: list[Op] = []
            for tp in chunk:
                ops += [
                    DeleteOp(TopicPartitionStateZNode.path(tp)),
                    DeleteOp(TopicPartitionZNode.path(tp)),
                ]
            try:
                await self.store.multi(ops)
            except (NoNodeError, NotEmptyError):
                pass  # left to the recursive delete

        per_request = MULTI_OPS_PER_REQUEST // 2
        await asyncio.gather(
            *(
                delete_partitions(partitions[i : i + per_request])
                for i in range(0, len(partitions), per_request)
            )
        )
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
        """States of the given partitions that have one. The reads are sent together
        (pipelined on the store's connection, as Kafka's getTopicPartitionStatesRaw), not
        one round trip after another."""
        tps = list(partitions)
        states = await asyncio.gather(*(self.get_topic_partition_state(tp) for tp in tps))
        return {tp: state for tp, state in zip(tps, states, strict=True) if state is not None}

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

    async def create_topic_partition_states(
        self,
        states: Mapping[TopicPartition, LeaderIsrAndControllerEpoch],
        expected_controller_epoch_zk_version: int,
    ) -> dict[TopicPartition, Exception | None]:
        """Create the state nodes of new partitions, each fenced by the controller epoch.

        Each creation is a transaction checking /controller_epoch at
        `expected_controller_epoch_zk_version`, so a controller that lost its election
        cannot write. Returns partition → None (created) or the error (NodeExistsError,
        ControllerMovedError, ...).
        """
        for topic in {tp.topic for tp in states}:
            await self.store.ensure_path(TopicPartitionsZNode.path(topic))

        async def create_one(tp: TopicPartition) -> Exception | None:
            try:
                await self.store.create(TopicPartitionZNode.path(tp))
            except NodeExistsError:
                pass
            except Exception as e:  # reported per partition
                return e
            try:
                await self.store.multi(
                    [
                        CheckOp(ControllerEpochZNode.path, expected_controller_epoch_zk_version),
                        CreateOp(
                            TopicPartitionStateZNode.path(tp),
                            TopicPartitionStateZNode.encode(states[tp]),
                        ),
                    ]
                )
            except BadVersionError:
                return ControllerMovedError(
                    f"Controller epoch zkVersion {expected_controller_epoch_zk_version} check "
                    f"failed while creating the state of partition {tp}: another controller "
                    "was elected."
                )
            except Exception as e:  # reported per partition
                return e
            return None

        partitions = list(states)
        results = await asyncio.gather(*(create_one(tp) for tp in partitions))
        return dict(zip(partitions, results, strict=True))

    async def update_leader_and_isr(
        self,
        leader_and_isrs: Mapping[TopicPartition, LeaderAndIsr],
        controller_epoch: int,
        expected_controller_epoch_zk_version: int,
    ) -> UpdateLeaderAndIsrResult:
        """Write new leaders/ISRs to existing state nodes, each at the LeaderAndIsr's
        `zk_version` and fenced by the controller epoch's znode version. The writes go
        MULTI_OPS_PER_REQUEST to a transaction, the transactions all sent together.

        Raises ControllerMovedError when /controller_epoch is no longer at
        `expected_controller_epoch_zk_version`.
        """
        result = UpdateLeaderAndIsrResult()

        async def update_chunk(chunk: list[TopicPartition]) -> None:
            """One transaction for the chunk; if any write in it fails (a version moved),
            each partition again on its own, so the outcome is per partition."""
            ops: list[Op] = [
                CheckOp(ControllerEpochZNode.path, expected_controller_epoch_zk_version)
            ]
            for tp in chunk:
                lai = leader_and_isrs[tp]
                data = TopicPartitionStateZNode.encode(
                    LeaderIsrAndControllerEpoch(lai, controller_epoch)
                )
                ops.append(SetDataOp(TopicPartitionStateZNode.path(tp), data, lai.zk_version))
            try:
                stats = await self.store.multi(ops)
            except Exception:
                await asyncio.gather(*(update_one(tp) for tp in chunk))
                return
            for tp, stat in zip(chunk, stats[1:], strict=True):
                assert isinstance(stat, Stat)
                result.finished[tp] = replace(leader_and_isrs[tp], zk_version=stat.version)

        async def update_one(tp: TopicPartition) -> None:
            lai = leader_and_isrs[tp]
            data = TopicPartitionStateZNode.encode(
                LeaderIsrAndControllerEpoch(lai, controller_epoch)
            )
            try:
                results = await self.store.multi(
                    [
                        CheckOp(ControllerEpochZNode.path, expected_controller_epoch_zk_version),
                        SetDataOp(TopicPartitionStateZNode.path(tp), data, lai.zk_version),
                    ]
                )
            except BadVersionError:
                result.partitions_to_retry.append(tp)
                return
            except Exception as e:  # reported per partition
                result.finished[tp] = e
                return
            stat = results[1]
            assert isinstance(stat, Stat)
            result.finished[tp] = replace(lai, zk_version=stat.version)

        partitions = list(leader_and_isrs)
        await asyncio.gather(
            *(
                update_chunk(partitions[i : i + MULTI_OPS_PER_REQUEST])
                for i in range(0, len(partitions), MULTI_OPS_PER_REQUEST)
            )
        )
        if result.partitions_to_retry:
            current = await self.get_controller_epoch()
            if current is None or current[1].version != expected_controller_epoch_zk_version:
                raise ControllerMovedError(
                    f"Controller epoch zkVersion check failed (expected "
                    f"{expected_controller_epoch_zk_version}) while updating leader and ISR: "
                    "another controller was elected."
                )
        return result

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

    async def register_controller_and_increment_controller_epoch(
        self, broker_id: int, timestamp_ms: int
    ) -> tuple[int, int]:
        """Become the controller: create the ephemeral /controller and increment
        /controller_epoch in one transaction (the epoch at the version just read).

        Returns (new epoch, the epoch znode's new version). Raises ControllerMovedError when
        another broker won (the node exists or the epoch moved meanwhile).
        """
        current = await self.get_controller_epoch()
        if current is None:
            try:
                await self.create_controller_epoch(0)
            except NodeExistsError:
                pass
            current = await self.get_controller_epoch()
            if current is None:
                raise ControllerMovedError("/controller_epoch vanished during the election.")
        epoch, stat = current
        new_epoch = epoch + 1
        try:
            results = await self.store.multi(
                [
                    CreateOp(
                        ControllerZNode.path,
                        ControllerZNode.encode(broker_id, timestamp_ms),
                        ephemeral=True,
                    ),
                    SetDataOp(
                        ControllerEpochZNode.path,
                        ControllerEpochZNode.encode(new_epoch),
                        stat.version,
                    ),
                ]
            )
        except NodeExistsError as e:
            raise ControllerMovedError(
                f"Broker {broker_id} lost the controller election: /controller exists."
            ) from e
        except BadVersionError as e:
            raise ControllerMovedError(
                f"Broker {broker_id} lost the controller election: /controller_epoch moved "
                f"past {epoch}."
            ) from e
        epoch_stat = results[1]
        assert isinstance(epoch_stat, Stat)
        return new_epoch, epoch_stat.version

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
