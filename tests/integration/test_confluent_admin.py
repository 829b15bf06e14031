"""confluent-kafka's AdminClient against a real `kafpy server`, for what Kafka 2.4-2.8 added:
ListGroups v4 with a states filter (KIP-518), authorized operations in Metadata and
DescribeCluster (KIP-430, KIP-700) and OffsetDelete (KIP-496)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import AclOperation, AdminClient, NewTopic
from kafka import KafkaAdminClient
from kafka import TopicPartition as KpTopicPartition
from kafka import errors as kafka_errors

from kafpy.testing.wait import wait_until
from tests.fixtures.broker import KafpyBroker

TOPIC_OPERATIONS = {
    AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE,
    AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
}  # fmt: skip
CLUSTER_OPERATIONS = {
    AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
    AclOperation.DESCRIBE,
}  # fmt: skip


@pytest.fixture
def admin(kafpy_module_broker: KafpyBroker) -> AdminClient:
    return AdminClient({"bootstrap.servers": kafpy_module_broker.bootstrap})


def create_topics(admin: AdminClient, *names: str) -> None:
    for future in admin.create_topics([NewTopic(n, 1, 1) for n in names]).values():
        future.result(30)


def commit(bootstrap: str, group: str, *topics: str) -> None:
    """Commit offset 1 on partition 0 of each topic for `group`, then leave (group Empty)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        consumer.commit(offsets=[TopicPartition(t, 0, 1) for t in topics], asynchronous=False)
    finally:
        consumer.close()


@pytest.fixture
def stable_consumer(kafpy_module_broker: KafpyBroker) -> Iterator[Any]:
    """A consumer of a group, subscribed to a topic, polled until the group is Stable."""
    consumers: list[Consumer] = []

    def start(group: str, topic: str) -> Consumer:
        consumer = Consumer({"bootstrap.servers": kafpy_module_broker.bootstrap, "group.id": group,
                             "enable.auto.commit": False})  # fmt: skip
        consumers.append(consumer)
        consumer.subscribe([topic])

        def assigned() -> list[Any]:
            if not consumer.assignment():
                consumer.poll(0.5)
            return list(consumer.assignment())

        wait_until(assigned, 60, "the consumer's partitions", interval_s=0)
        assert consumer.assignment(), "the consumer never got its partitions"
        return consumer

    yield start
    for c in consumers:
        c.close()


def test_list_consumer_groups_with_states(
    admin: AdminClient, kafpy_module_broker: KafpyBroker, stable_consumer: Any
) -> None:
    topic = f"lg-{uuid.uuid4().hex[:8]}"
    create_topics(admin, topic)
    empty, stable = f"empty-{uuid.uuid4().hex[:6]}", f"stable-{uuid.uuid4().hex[:6]}"
    commit(kafpy_module_broker.bootstrap, empty, topic)
    stable_consumer(stable, topic)

    def listed(**kwargs: Any) -> dict[str, Any]:
        result = admin.list_consumer_groups(**kwargs).result(30)
        assert result.errors == []
        return {g.group_id: g.state for g in result.valid if g.group_id in (empty, stable)}

    assert listed() == {empty: ConsumerGroupState.EMPTY, stable: ConsumerGroupState.STABLE}
    assert listed(states={ConsumerGroupState.STABLE}) == {stable: ConsumerGroupState.STABLE}
    assert listed(states={ConsumerGroupState.EMPTY}) == {empty: ConsumerGroupState.EMPTY}
    # DescribeGroups v3+ with include_authorized_operations: every operation a group supports
    described = admin.describe_consumer_groups([stable], include_authorized_operations=True)
    group = described[stable].result(30)
    assert set(group.authorized_operations) == {
        AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE,
    }  # fmt: skip
    assert not admin.describe_consumer_groups([stable])[stable].result(30).authorized_operations


def test_describe_topics_and_cluster_with_authorized_operations(admin: AdminClient) -> None:
    topic = f"ops-{uuid.uuid4().hex[:8]}"
    create_topics(admin, topic)
    described = admin.describe_topics(TopicCollection([topic]), include_authorized_operations=True)[
        topic
    ].result(30)
    assert set(described.authorized_operations) == TOPIC_OPERATIONS
    without = admin.describe_topics(TopicCollection([topic]))[topic].result(30)
    assert not without.authorized_operations
    cluster = admin.describe_cluster(include_authorized_operations=True).result(30)
    assert set(cluster.authorized_operations) == CLUSTER_OPERATIONS
    assert [n.id for n in cluster.nodes] == [0] and cluster.controller.id == 0
    assert not admin.describe_cluster().result(30).authorized_operations


def test_delete_consumer_group_offsets(
    admin: AdminClient, kafpy_module_broker: KafpyBroker, stable_consumer: Any
) -> None:
    """confluent-kafka's Python AdminClient has no delete_consumer_group_offsets (librdkafka's
    DeleteConsumerGroupOffsets is not bound), so kafka-python's KafkaAdminClient sends it."""
    consumed, other = f"od-a-{uuid.uuid4().hex[:6]}", f"od-b-{uuid.uuid4().hex[:6]}"
    create_topics(admin, consumed, other)
    group = f"od-{uuid.uuid4().hex[:6]}"
    commit(kafpy_module_broker.bootstrap, group, consumed, other)
    consumer = stable_consumer(group, consumed)
    kp_admin = KafkaAdminClient(bootstrap_servers=kafpy_module_broker.bootstrap)
    try:
        # the running group still consumes `consumed`: refused; `other` it no longer reads
        result = kp_admin.delete_group_offsets(
            group, [KpTopicPartition(consumed, 0), KpTopicPartition(other, 0)]
        )
        assert result == {
            KpTopicPartition(consumed, 0): kafka_errors.GroupSubscribedToTopicError,
            KpTopicPartition(other, 0): kafka_errors.NoError,
        }
        committed = consumer.committed([TopicPartition(consumed, 0), TopicPartition(other, 0)], 30)
        assert [tp.offset for tp in committed] == [1, -1001]  # -1001: no committed offset
        consumer.close()
        # once the group is empty its last offsets can go too, and then the group is gone
        assert kp_admin.delete_group_offsets(group, [KpTopicPartition(consumed, 0)]) == {
            KpTopicPartition(consumed, 0): kafka_errors.NoError
        }
        with pytest.raises(kafka_errors.GroupIdNotFoundError):
            kp_admin.delete_group_offsets(group, [KpTopicPartition(consumed, 0)])
    finally:
        kp_admin.close()
