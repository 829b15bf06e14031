"""TopicCommand in-process: Kafka's checks, writes and printed lines through both backends,
the embedded store (ZookeeperTopicService) and a FakeBroker (AdminClientTopicService)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kafpy.admin import topic_command
from kafpy.admin.topic_command import (
    AdminClientTopicService,
    TopicCommandError,
    TopicCommandOptions,
    ZookeeperTopicService,
)
from kafpy.client.admin_client import AdminClient
from kafpy.common.errors import (
    AdminOperationError,
    InvalidConfigurationError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    TopicExistsError,
)
from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import LeaderAndIsr, LeaderIsrAndControllerEpoch
from tests.unit.admin.fixtures import AdminBroker, register_brokers, run_with_zk

ZK = "127.0.0.1:2181"


def opts(action: str, **kwargs: object) -> TopicCommandOptions:
    o = TopicCommandOptions(zookeeper=ZK, actions=[action], **kwargs)  # type: ignore[arg-type]
    o.check_args()
    return o


async def run(zk: KafkaZkClient, o: TopicCommandOptions) -> list[str]:
    lines: list[str] = []
    await topic_command.run_topic_command(ZookeeperTopicService(zk), o, lines.append)
    return lines


async def run_topic_command(admin: AdminClient, o: TopicCommandOptions, out: Any) -> None:
    """The command through the admin APIs (as --bootstrap-server runs it)."""
    await topic_command.run_topic_command(AdminClientTopicService(admin), o, out)


async def state(zk: KafkaZkClient, topic: str, partition: int, leader: int, isr: list[int]) -> None:
    lai = LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, 0, tuple(isr)), 1)
    await zk.create_topic_partition_state(TopicPartition(topic, partition), lai)


def test_create_with_explicit_assignment_writes_kafkas_nodes() -> None:
    async def body(zk: KafkaZkClient) -> None:
        await register_brokers(zk, [0, 1, 2])
        out = await run(zk, opts("create", topic="topic_a", replica_assignment="1:2:0,2:0:1,0:1:2"))
        assert out == [
            "WARNING: Due to limitations in metric names, topics with a period ('.') or "
            "underscore ('_') could collide. To avoid issues it is best to use either, but not both.",
            "Created topic topic_a.",
        ]
        assert (await zk.store.get("/brokers/topics/topic_a"))[0] == (
            b'{"removing_replicas":{},"partitions":{"2":[0,1,2],"1":[2,0,1],"0":[1,2,0]},'
            b'"adding_replicas":{},"version":3}'
        )
        assert (await zk.store.get("/config/topics/topic_a"))[0] == b'{"version":1,"config":{}}'

    run_with_zk(body)


def test_create_automatic_then_grow_continues_the_assignment() -> None:
    async def body(zk: KafkaZkClient) -> None:
        await register_brokers(zk, [0, 1, 2])
        out = await run(zk, opts("create", topic="t", partitions=3, replication_factor=3))
        assert out == ["Created topic t."]
        # make the existing assignment the seed's, then grow it to 4 like the seed
        await zk.set_topic_assignment(
            "t", {2: [0, 1, 2], 1: [2, 0, 1], 0: [1, 2, 0]}, topic_id=None
        )
        out = await run(zk, opts("alter", topic="t", partitions=4))
        assert out[-1] == "Adding partitions succeeded!"
        assert out[0].startswith("WARNING: If partitions are increased")
        assignment, _ = await zk.get_topic_assignment_and_version("t")
        assert assignment[3] == [1, 2, 0]
        assert (await zk.store.get("/brokers/topics/t"))[0] == (
            b'{"removing_replicas":{},"partitions":{"2":[0,1,2],"1":[2,0,1],"0":[1,2,0],'
            b'"3":[1,2,0]},"adding_replicas":{},"version":3}'
        )

    run_with_zk(body)


def test_create_without_brokers_fails_like_kafka() -> None:
    async def body(zk: KafkaZkClient) -> None:
        with pytest.raises(InvalidReplicationFactorError) as info:
            await run(zk, opts("create", topic="t", partitions=1, replication_factor=1))
        assert str(info.value) == "replication factor: 1 larger than available brokers: 0"
        assert await zk.get_all_topics_in_cluster() == []

    run_with_zk(body)


def test_create_existing_topic() -> None:
    async def body(zk: KafkaZkClient) -> None:
        await register_brokers(zk, [0])
        await run(zk, opts("create", topic="t", partitions=1, replication_factor=1))
        with pytest.raises(TopicExistsError, match="Topic 't' already exists."):
            await run(zk, opts("create", topic="t", partitions=1, replication_factor=1))
        out = await run(
            zk, opts("create", topic="t", partitions=1, replication_factor=1, if_not_exists=True)
        )
        assert out == []

    run_with_zk(body)


def test_create_refuses_colliding_and_illegal_names() -> None:
    async def body(zk: KafkaZkClient) -> None:
        await register_brokers(zk, [0])
        await run(zk, opts("create", topic="a.b", partitions=1, replication_factor=1))
        with pytest.raises(
            InvalidTopicError, match="Topic 'a_b' collides with existing topics: a.b"
        ):
            await run(zk, opts("create", topic="a_b", partitions=1, replication_factor=1))
        with pytest.raises(InvalidTopicError, match="illegal"):
            await run(zk, opts("create", topic="bad name", partitions=1, replication_factor=1))
        with pytest.raises(InvalidTopicError, match="longer than 249"):
            await run(zk, opts("create", topic="x" * 250, partitions=1, replication_factor=1))

    run_with_zk(body)


def test_create_validates_configs_and_stores_them() -> None:
    async def body(zk: KafkaZkClient) -> None:
        await register_brokers(zk, [0])
        with pytest.raises(InvalidConfigurationError, match="retention.ms"):
            await run(
                zk,
                opts(
                    "create",
                    topic="t",
                    partitions=1,
                    replication_factor=1,
                    configs=["retention.ms=abc"],
                ),
            )
        with pytest.raises(InvalidConfigurationError, match="Unknown topic config name: nope"):
            await run(
                zk,
                opts("create", topic="t", partitions=1, replication_factor=1, configs=["nope=1"]),
            )
        with pytest.raises(TopicCommandError, match='format "key=val"'):
            await run(
                zk,
                opts("create", topic="t", partitions=1, replication_factor=1, configs=["novalue"]),
            )
        assert await zk.get_all_topics_in_cluster() == []
        await run(
            zk,
            opts(
                "create",
                topic="t",
                partitions=1,
                replication_factor=1,
                configs=["retention.ms = 1000", "cleanup.policy=compact"],
            ),
        )
        assert (await zk.store.get("/config/topics/t"))[0] == (
            b'{"version":1,"config":{"retention.ms":"1000","cleanup.policy":"compact"}}'
        )

    run_with_zk(body)


def test_create_explicit_assignment_errors() -> None:
    async def body(zk: KafkaZkClient) -> None:
        with pytest.raises(
            Exception, match="Partition replica lists may not contain duplicate entries: 1"
        ):
            await run(zk, opts("create", topic="t", replica_assignment="1:1,0:1"))
        with pytest.raises(
            AdminOperationError, match="Partition 1 has different replication factor"
        ):
            await run(zk, opts("create", topic="t", replica_assignment="1:2,0"))

    run_with_zk(body)


def test_racks() -> None:
    async def body(zk: KafkaZkClient) -> None:
        await register_brokers(zk, [0, 1, 2, 3], racks={0: "a", 1: "a", 2: "b"})
        with pytest.raises(AdminOperationError, match="Not all brokers have rack information"):
            await run(zk, opts("create", topic="t", partitions=2, replication_factor=2))
        out = await run(
            zk,
            opts("create", topic="t", partitions=2, replication_factor=2, disable_rack_aware=True),
        )
        assert out == ["Created topic t."]

    run_with_zk(body)


def test_rack_aware_create_puts_replicas_on_distinct_racks() -> None:
    async def body(zk: KafkaZkClient) -> None:
        racks = {0: "a", 1: "a", 2: "b", 3: "b", 4: "c", 5: "c"}
        await register_brokers(zk, racks, racks=racks)
        await run(zk, opts("create", topic="t", partitions=12, replication_factor=3))
        assignment, _ = await zk.get_topic_assignment_and_version("t")
        assert all(len({racks[b] for b in replicas}) == 3 for replicas in assignment.values())

    run_with_zk(body)


def test_alter_refusals() -> None:
    async def body(zk: KafkaZkClient) -> None:
        await register_brokers(zk, [0, 1])
        await run(zk, opts("create", topic="t", partitions=2, replication_factor=1))
        with pytest.raises(InvalidPartitionsError) as info:
            await run(zk, opts("alter", topic="t", partitions=1))
        assert str(info.value).startswith(
            "The number of partitions for a topic can only be increased"
        )
        with pytest.raises(TopicCommandError, match="Topic 'nope' does not exist as expected"):
            await run(zk, opts("alter", topic="nope", partitions=3))
        assert await run(zk, opts("alter", topic="nope", partitions=3, if_exists=True)) == []
        await run(zk, opts("create", topic="__transaction_state", replica_assignment="0"))
        with pytest.raises(
            TopicCommandError,
            match="The number of partitions for the internal topic __transaction_state cannot "
            "be changed.",
        ):
            await run(zk, opts("alter", topic="__transaction_state", partitions=3))
        await run(zk, opts("delete", topic="t"))
        with pytest.raises(InvalidTopicError, match="marked for deletion"):
            await run(zk, opts("alter", topic="t", partitions=3))

    run_with_zk(body)


def test_alter_with_explicit_assignment_for_new_partitions() -> None:
    async def body(zk: KafkaZkClient) -> None:
        await register_brokers(zk, [0, 1, 2])
        await run(zk, opts("create", topic="t", replica_assignment="0:1,1:2"))
        await run(zk, opts("alter", topic="t", partitions=3, replica_assignment="0:1,1:2,2:0"))
        assignment, _ = await zk.get_topic_assignment_and_version("t")
        assert assignment == {0: [0, 1], 1: [1, 2], 2: [2, 0]}
        with pytest.raises(Exception, match="not available"):
            await run(
                zk, opts("alter", topic="t", partitions=4, replica_assignment="0:1,1:2,2:0,7:0")
            )
        with pytest.raises(Exception, match="replication factor"):
            await run(
                zk, opts("alter", topic="t", partitions=4, replica_assignment="0:1,1:2,2:0,1")
            )

    run_with_zk(body)


def test_alter_config_through_topics_records_a_change_notification() -> None:
    async def body(zk: KafkaZkClient) -> None:
        await register_brokers(zk, [0])
        await run(
            zk,
            opts(
                "create", topic="t", partitions=1, replication_factor=1, configs=["retention.ms=1"]
            ),
        )
        out = await run(
            zk,
            opts("alter", topic="t", configs=["segment.ms=1000"], delete_configs=["retention.ms"]),
        )
        assert out[-1] == "Updated config for topic t."
        assert await zk.get_entity_configs("topics", "t") == {"segment.ms": "1000"}
        changes = await zk.store.get_children("/config/changes")
        assert len(changes) == 1
        data, _ = await zk.store.get(f"/config/changes/{changes[0]}")
        assert data == b'{"version":2,"entity_path":"topics/t"}'

    run_with_zk(body)


def test_delete() -> None:
    async def body(zk: KafkaZkClient) -> None:
        await register_brokers(zk, [0])
        for name in ("topic_c", "__consumer_offsets"):
            await run(zk, opts("create", topic=name, partitions=1, replication_factor=1))
        out = await run(zk, opts("delete", topic="topic_c"))
        assert out == [
            "Topic topic_c is marked for deletion.",
            "Note: This will have no impact if delete.topic.enable is not set to true.",
        ]
        assert await zk.store.exists("/admin/delete_topics/topic_c") is not None
        assert await run(zk, opts("delete", topic="topic_c")) == [
            "Topic topic_c is already marked for deletion."
        ]
        with pytest.raises(AdminOperationError) as info:
            await run(zk, opts("delete", topic="__consumer_offsets"))
        assert str(info.value) == (
            "Topic __consumer_offsets is a kafka internal topic and is not allowed to be marked "
            "for deletion."
        )
        with pytest.raises(TopicCommandError, match="Topic 'nope' does not exist as expected"):
            await run(zk, opts("delete", topic="nope"))
        assert await run(zk, opts("delete", topic="nope", if_exists=True)) == []

    run_with_zk(body)


def test_list() -> None:
    async def body(zk: KafkaZkClient) -> None:
        await register_brokers(zk, [0])
        for name in ("b", "a", "__consumer_offsets"):
            await run(zk, opts("create", topic=name, partitions=1, replication_factor=1))
        await zk.create_delete_topic_path("b")
        assert await run(zk, opts("list")) == ["__consumer_offsets", "a", "b - marked for deletion"]
        assert await run(zk, opts("list", exclude_internal=True)) == [
            "a",
            "b - marked for deletion",
        ]
        assert await run(zk, opts("list", topic="a|__.*")) == ["__consumer_offsets", "a"]

    run_with_zk(body)


def test_describe_format() -> None:
    async def body(zk: KafkaZkClient) -> None:
        await register_brokers(zk, [0])
        await run(zk, opts("create", topic="topic_a", replica_assignment="0,0"))
        await state(zk, "topic_a", 0, 0, [0])
        out = await run(zk, opts("describe", topic="topic_a"))
        assert out == [
            "Topic: topic_a\tPartitionCount: 2\tReplicationFactor: 1\tConfigs: ",
            "\tTopic: topic_a\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0",
            "\tTopic: topic_a\tPartition: 1\tLeader: none\tReplicas: 0\tIsr: ",
        ]

    run_with_zk(body)


def test_describe_filters_and_regex() -> None:
    async def body(zk: KafkaZkClient) -> None:
        await register_brokers(zk, [0, 1, 2])
        await run(zk, opts("create", topic="ok", replica_assignment="0:1"))
        await run(zk, opts("create", topic="under", replica_assignment="1:2"))
        await run(
            zk,
            opts("create", topic="down", replica_assignment="2:0,0:1", configs=["retention.ms=5"]),
        )
        await state(zk, "ok", 0, 0, [0, 1])
        await state(zk, "under", 0, 1, [1])
        await state(zk, "down", 0, 5, [5])  # leader 5 is not a live broker
        # down-1 has no state: no leader
        assert await run(zk, opts("describe", under_replicated_partitions=True)) == [
            "\tTopic: down\tPartition: 0\tLeader: 5\tReplicas: 2,0\tIsr: 5",
            "\tTopic: down\tPartition: 1\tLeader: none\tReplicas: 0,1\tIsr: ",
            "\tTopic: under\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1",
        ]
        assert await run(zk, opts("describe", unavailable_partitions=True)) == [
            "\tTopic: down\tPartition: 0\tLeader: 5\tReplicas: 2,0\tIsr: 5",
            "\tTopic: down\tPartition: 1\tLeader: none\tReplicas: 0,1\tIsr: ",
        ]
        assert await run(zk, opts("describe", topics_with_overrides=True)) == [
            "Topic: down\tPartitionCount: 2\tReplicationFactor: 2\tConfigs: retention.ms=5"
        ]
        out = await run(zk, opts("describe", topic="o.*"))
        assert out[0] == "Topic: ok\tPartitionCount: 1\tReplicationFactor: 2\tConfigs: "
        assert len(out) == 2
        with pytest.raises(TopicCommandError, match="does not exist"):
            await run(zk, opts("describe", topic="zzz"))
        await zk.create_delete_topic_path("ok")
        out = await run(zk, opts("describe", topic="ok"))
        assert out[0].endswith("\tMarkedForDeletion: true")
        # Kafka 2.8 marks the partition lines too
        assert out == [
            "Topic: ok\tPartitionCount: 1\tReplicationFactor: 2\tConfigs: "
            "\tMarkedForDeletion: true",
            "\tTopic: ok\tPartition: 0\tLeader: 0\tReplicas: 0,1\tIsr: 0,1"
            "\tMarkedForDeletion: true",
        ]

    run_with_zk(body)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"actions": []}, "Command must include exactly one action"),
        ({"actions": ["list", "create"]}, "Command must include exactly one action"),
        (
            {"actions": ["list"], "zookeeper": None},
            "Only one of --bootstrap-server or --zookeeper must be specified",
        ),
        (
            {"actions": ["list"], "bootstrap_server": "127.0.0.1:9092"},
            "Only one of --bootstrap-server or --zookeeper must be specified",
        ),
        ({"actions": ["describe"], "if_exists": True}, 'Missing required argument "[topic]"'),
        (
            {"actions": ["describe"], "under_min_isr_partitions": True},
            'Option "[under-min-isr-partitions]" can\'t be used with option "[zookeeper]"',
        ),
        (
            {"actions": ["describe"], "at_min_isr_partitions": True},
            'Option "[at-min-isr-partitions]" can\'t be used with option "[zookeeper]"',
        ),
        (
            {"actions": ["list"], "command_config": "admin.properties"},
            'Option "[command-config]" can\'t be used with option "[zookeeper]"',
        ),
        ({"actions": ["create"], "partitions": 1}, 'Missing required argument "[topic]"'),
        (
            {"actions": ["create"], "topic": "t", "partitions": 1},
            'Missing required argument "[replication-factor]"',
        ),
        (
            {"actions": ["alter"], "topic": "t", "replication_factor": 1},
            'Option "[replication-factor]" can\'t be used with option "[alter]"',
        ),
        (
            {"actions": ["create"], "topic": "t", "replica_assignment": "0", "partitions": 1},
            'Option "[replica-assignment]" can\'t be used with option "[partitions]"',
        ),
        (
            {"actions": ["list"], "under_replicated_partitions": True},
            'can\'t be used with option "[list]"',
        ),
        (
            {
                "actions": ["describe"],
                "under_replicated_partitions": True,
                "unavailable_partitions": True,
            },
            "can't be used with option",
        ),
        (
            {"actions": ["delete"], "topic": "t", "if_not_exists": True},
            'Option "[if-not-exists]" can\'t be used with option "[delete]"',
        ),
    ],
)
def test_check_args(kwargs: dict[str, object], message: str) -> None:
    o = TopicCommandOptions(**{"zookeeper": ZK, **kwargs})  # type: ignore[arg-type]
    with pytest.raises(TopicCommandError) as info:
        o.check_args()
    assert message in str(info.value)


def admin_opts(action: str, **kwargs: Any) -> TopicCommandOptions:
    return TopicCommandOptions(actions=[action], **kwargs)


def test_admin_client_service_create_list_describe_alter_delete() -> None:
    async def scenario() -> None:
        env = AdminBroker()
        async with env as admin:
            lines: list[str] = []
            out = lines.append
            await run_topic_command(
                admin,
                admin_opts(
                    "create",
                    topic="orders",
                    partitions=2,
                    replication_factor=1,
                    configs=["retention.ms=1000"],
                ),
                out,
            )
            await run_topic_command(
                admin, admin_opts("create", topic="a.b", replica_assignment="0,0"), out
            )
            await run_topic_command(
                admin,
                admin_opts(
                    "create", topic="orders", partitions=1, replication_factor=1, if_not_exists=True
                ),
                out,
            )
            assert lines == [
                "Created topic orders.",
                "WARNING: Due to limitations in metric names, topics with a period ('.') or "
                "underscore ('_') could collide. To avoid issues it is best to use either, but "
                "not both.",
                "Created topic a.b.",
            ]
            with pytest.raises(TopicExistsError, match="Topic 'orders' already exists."):
                await run_topic_command(
                    admin,
                    admin_opts("create", topic="orders", partitions=1, replication_factor=1),
                    out,
                )
            lines.clear()
            await run_topic_command(admin, admin_opts("list"), out)
            assert lines == ["a.b", "orders"]
            lines.clear()
            await run_topic_command(admin, admin_opts("describe", topic="orders"), out)
            assert lines == [
                "Topic: orders\tPartitionCount: 2\tReplicationFactor: 1\tConfigs: retention.ms=1000",
                "\tTopic: orders\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0",
                "\tTopic: orders\tPartition: 1\tLeader: 0\tReplicas: 0\tIsr: 0",
            ]
            lines.clear()
            await run_topic_command(
                admin,
                admin_opts(
                    "alter",
                    topic="orders",
                    partitions=3,
                    configs=["cleanup.policy=compact"],
                    delete_configs=["retention.ms"],
                ),
                out,
            )
            assert lines == [
                "WARNING: Altering topic configuration from this script has been deprecated and "
                "may be removed in future releases.",
                "         Going forward, please use kafpy configs for this functionality",
                "Updated config for topic orders.",
                "WARNING: If partitions are increased for a topic that has a key, the partition "
                "logic or ordering of the messages will be affected",
                "Adding partitions succeeded!",
            ]
            assert env.configs["orders"] == {"cleanup.policy": "compact"}
            assert len(env.assignments["orders"]) == 3
            lines.clear()
            env.leaderless.add(("orders", 1))
            await run_topic_command(
                admin, admin_opts("describe", topic="orders", unavailable_partitions=True), out
            )
            assert lines == ["\tTopic: orders\tPartition: 1\tLeader: none\tReplicas: 0\tIsr: 0"]
            lines.clear()
            await run_topic_command(admin, admin_opts("describe", topics_with_overrides=True), out)
            assert lines == [
                "Topic: orders\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: cleanup.policy=compact"
            ]
            lines.clear()
            await run_topic_command(admin, admin_opts("delete", topic="a.*"), out)
            assert lines == [
                "Topic a.b is marked for deletion.",
                "Note: This will have no impact if delete.topic.enable is not set to true.",
            ]
            with pytest.raises(TopicCommandError, match="Topic 'a.b' does not exist as expected"):
                await run_topic_command(admin, admin_opts("delete", topic="a.b"), out)
            await run_topic_command(admin, admin_opts("delete", topic="a.b", if_exists=True), out)
            env.assignments["__consumer_offsets"] = {0: [0]}
            with pytest.raises(AdminOperationError, match="internal topic"):
                await run_topic_command(
                    admin, admin_opts("delete", topic="__consumer_offsets"), out
                )
            lines.clear()
            await run_topic_command(admin, admin_opts("list", exclude_internal=True), out)
            assert lines == ["orders"]

    asyncio.run(asyncio.wait_for(scenario(), 30))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"actions": ["create"], "topic": "t"}, None),  # KIP-464: the broker's defaults
        ({"actions": ["create"], "topic": "t", "replication_factor": 1}, None),
        ({"actions": ["describe"], "under_min_isr_partitions": True}, None),
        ({"actions": ["describe"], "at_min_isr_partitions": True}, None),
        ({"actions": ["list"], "command_config": "admin.properties"}, None),
        ({"actions": ["alter"], "topic": "t"}, 'Missing required argument "[partitions]"'),
        (
            {"actions": ["describe"], "at_min_isr_partitions": True, "topics_with_overrides": True},
            'Option "[at-min-isr-partitions]" can\'t be used with option "[topics-with-overrides]"',
        ),
        ({"actions": ["list"], "bootstrap_server": "nohost"}, "expected HOST:PORT"),
    ],
)
def test_check_args_with_bootstrap_server(kwargs: dict[str, object], message: str | None) -> None:
    o = TopicCommandOptions(**{"bootstrap_server": "127.0.0.1:9092", **kwargs})  # type: ignore[arg-type]
    if message is None:
        o.check_args()
    else:
        with pytest.raises(TopicCommandError) as info:
            o.check_args()
        assert message in str(info.value)


def test_admin_client_service_create_with_the_brokers_defaults() -> None:
    async def scenario() -> None:
        env = AdminBroker()
        async with env as admin:
            lines: list[str] = []
            await run_topic_command(admin, admin_opts("create", topic="d"), lines.append)
            assert lines == ["Created topic d."]
            request = env.create_requests[-1]
            assert (request["num_partitions"], request["replication_factor"]) == (-1, -1)
            assert request["assignments"] == []
            lines.clear()
            await run_topic_command(admin, admin_opts("describe", topic="d"), lines.append)
            assert lines == [
                "Topic: d\tPartitionCount: 2\tReplicationFactor: 1\tConfigs: ",
                "\tTopic: d\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0",
                "\tTopic: d\tPartition: 1\tLeader: 0\tReplicas: 0\tIsr: 0",
            ]
            with pytest.raises(
                TopicCommandError,
                match="The replication factor must be between 1 and 32767 inclusive",
            ):
                await run_topic_command(
                    admin, admin_opts("create", topic="e", replication_factor=0), lines.append
                )
            with pytest.raises(TopicCommandError, match="The partitions must be greater than 0"):
                await run_topic_command(
                    admin, admin_opts("create", topic="e", partitions=0), lines.append
                )
            assert "e" not in env.assignments

    asyncio.run(asyncio.wait_for(scenario(), 30))


def test_admin_client_service_min_isr_filters() -> None:
    async def scenario() -> None:
        env = AdminBroker()
        async with env as admin:
            env.assignments["strict"] = {p: [0, 1, 2] for p in range(4)}
            env.configs["strict"] = {"min.insync.replicas": "2"}
            env.isr.update({("strict", 1): [0, 1], ("strict", 2): [0], ("strict", 3): [0, 1]})
            env.leaderless.add(("strict", 3))
            env.assignments["loose"] = {0: [0]}  # min.insync.replicas 1, the default
            lines: list[str] = []
            await run_topic_command(
                admin, admin_opts("describe", under_min_isr_partitions=True), lines.append
            )
            assert lines == [
                "\tTopic: strict\tPartition: 2\tLeader: 0\tReplicas: 0,1,2\tIsr: 0",
                "\tTopic: strict\tPartition: 3\tLeader: none\tReplicas: 0,1,2\tIsr: 0,1",
            ]
            lines.clear()
            await run_topic_command(
                admin, admin_opts("describe", at_min_isr_partitions=True), lines.append
            )
            assert lines == [
                "\tTopic: loose\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0",
                "\tTopic: strict\tPartition: 1\tLeader: 0\tReplicas: 0,1,2\tIsr: 0,1",
                "\tTopic: strict\tPartition: 3\tLeader: none\tReplicas: 0,1,2\tIsr: 0,1",
            ]
            lines.clear()
            await run_topic_command(
                admin, admin_opts("describe", under_replicated_partitions=True), lines.append
            )
            assert [line.split("\t")[2] for line in lines] == [
                "Partition: 1",
                "Partition: 2",
                "Partition: 3",
            ]

    asyncio.run(asyncio.wait_for(scenario(), 30))
