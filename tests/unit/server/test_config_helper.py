"""ConfigHelper through AdminManager on the embedded store: DescribeConfigs, AlterConfigs
and IncrementalAlterConfigs request bodies in, response bodies out, with their errors."""

from __future__ import annotations

from typing import Any

import pytest

from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.protocol.config_resource import ConfigSource
from kafpy.server.admin_manager import AdminManager
from tests.unit.server.admin_fixtures import (
    BROKER,
    BROKER_LOGGER,
    INVALID_CONFIG,
    INVALID_REQUEST,
    INVALID_TOPIC_EXCEPTION,
    NO_CONFIG_RESOURCE_TYPE,
    NONE,
    TOPIC,
    UNKNOWN_TOPIC_OR_PARTITION,
    Metadata,
    alter,
    create_online,
    describe,
    incremental,
    notifications,
    run,
)

# -- DescribeConfigs ---------------------------------------------------------------------------------


def by_name(response: dict[str, Any]) -> dict[str, dict[str, Any]]:
    [result] = response["results"]
    assert result["error_code"] == NONE, result
    return {c["name"]: c for c in result["configs"]}


def test_describe_topic_configs_sources_and_synonyms() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        await create_online(admin, metadata, "t", configs={"retention.ms": "1000"})
        configs = by_name(await admin.describe_configs(describe(TOPIC, "t", synonyms=True), 1))
        assert configs["retention.ms"] == {
            "name": "retention.ms",
            "value": "1000",
            "read_only": False,
            "is_default": False,
            "config_source": ConfigSource.DYNAMIC_TOPIC_CONFIG,
            "is_sensitive": False,
            "synonyms": [
                {
                    "name": "retention.ms",
                    "value": "1000",
                    "source": ConfigSource.DYNAMIC_TOPIC_CONFIG,
                },
                # Kafka's configSynonyms keeps the broker synonyms from log.retention.ms on:
                # the log.retention.hours default alone is dropped
            ],
            "config_type": 5,  # LONG
            "documentation": None,
        }
        # segment.bytes comes from server.properties (log.segment.bytes)
        segment = configs["segment.bytes"]
        assert (segment["value"], segment["config_source"], segment["is_default"]) == (
            "2048",
            ConfigSource.STATIC_BROKER_CONFIG,
            False,
        )
        assert segment["synonyms"][0] == {
            "name": "log.segment.bytes",
            "value": "2048",
            "source": ConfigSource.STATIC_BROKER_CONFIG,
        }
        cleanup = configs["cleanup.policy"]
        assert (cleanup["value"], cleanup["config_source"], cleanup["is_default"]) == (
            "delete",
            ConfigSource.DEFAULT_CONFIG,
            True,
        )
        assert configs["segment.ms"]["value"] == str(7 * 24 * 3600 * 1000)
        throttled = configs["leader.replication.throttled.replicas"]
        assert (throttled["value"], throttled["synonyms"]) == ("", [])  # no broker synonym
        assert len(configs) == 26  # every topic-level key

    run(body, **{"log.segment.bytes": "2048"})


def test_describe_selected_keys_without_synonyms() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        await create_online(admin, metadata, "t")
        response = await admin.describe_configs(
            describe(TOPIC, "t", ["min.insync.replicas", "not.a.key"], synonyms=True), 0
        )
        configs = by_name(response)
        assert list(configs) == ["min.insync.replicas"]
        assert configs["min.insync.replicas"]["synonyms"] == []  # v0 has none
        assert configs["min.insync.replicas"]["is_default"] is True
        # an empty key list means all keys, as null does
        assert len(by_name(await admin.describe_configs(describe(TOPIC, "t", []), 2))) == 26

    run(body)


def test_describe_broker_static_configs() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        configs = by_name(await admin.describe_configs(describe(BROKER, "0", synonyms=True), 2))
        assert configs["num.partitions"]["value"] == "4"
        assert configs["num.partitions"]["config_source"] == ConfigSource.STATIC_BROKER_CONFIG
        assert configs["num.partitions"]["read_only"] is True
        assert configs["default.replication.factor"]["config_source"] == ConfigSource.DEFAULT_CONFIG
        retention = configs["log.retention.ms"]
        assert retention["value"] is None
        # Kafka's configSynonyms drops the synonyms before the described key itself
        assert retention["synonyms"] == []
        minutes = configs["log.retention.minutes"]
        assert [(s["name"], s["source"]) for s in minutes["synonyms"]] == [
            ("log.retention.minutes", ConfigSource.STATIC_BROKER_CONFIG),
            ("log.retention.hours", ConfigSource.DEFAULT_CONFIG),
        ]
        secret = configs["some.plugin.secret"]  # unknown keys are reported, valueless
        assert (secret["value"], secret["is_sensitive"]) == (None, True)
        # the cluster-wide defaults: no dynamic configs set
        assert by_name(await admin.describe_configs(describe(BROKER, ""), 2)) == {}

    run(body, **{"num.partitions": "4", "log.retention.minutes": "30", "some.plugin.secret": "x"})


@pytest.mark.parametrize(
    ("resource_type", "name", "code", "message"),
    [
        (TOPIC, "nope", UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nope' does not exist."),
        (TOPIC, "bad name", INVALID_TOPIC_EXCEPTION, "illegal"),
        (
            BROKER,
            "5",
            INVALID_REQUEST,
            "Unexpected broker id, expected 0 or empty string, but received 5",
        ),
        (BROKER, "x", INVALID_REQUEST, "Broker id must be an integer, but it is: x"),
        (BROKER_LOGGER, "0", INVALID_REQUEST, "not supported by kafpy"),
        (NO_CONFIG_RESOURCE_TYPE, "g", INVALID_REQUEST, "Unsupported resource type: UNKNOWN"),
    ],
)
def test_describe_config_errors(resource_type: int, name: str, code: int, message: str) -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        response = await admin.describe_configs(describe(resource_type, name), 1)
        [result] = response["results"]
        assert (result["error_code"], result["configs"], result["resource_name"]) == (
            code,
            [],
            name,
        )
        assert message in result["error_message"]

    run(body)


# -- AlterConfigs -------------------------------------------------------------------------------------


def test_alter_configs_replaces_the_topic_overrides_and_notifies() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        await create_online(admin, metadata, "t", configs={"retention.ms": "1000"})
        response = await admin.alter_configs(
            alter(TOPIC, "t", {"cleanup.policy": "compact"}, validate_only=True), 1
        )
        assert response["responses"] == [
            {
                "error_code": NONE,
                "error_message": None,
                "resource_type": TOPIC,
                "resource_name": "t",
            }
        ]
        assert await zk.get_entity_configs("topics", "t") == {"retention.ms": "1000"}
        assert await notifications(zk) == []
        response = await admin.alter_configs(alter(TOPIC, "t", {"cleanup.policy": "compact"}), 1)
        assert response["responses"][0]["error_code"] == NONE
        assert await zk.get_entity_configs("topics", "t") == {"cleanup.policy": "compact"}
        assert await notifications(zk) == ["topics/t"]

    run(body)


@pytest.mark.parametrize(
    ("resource_type", "name", "configs", "code", "message"),
    [
        (
            TOPIC,
            "nope",
            {"retention.ms": "1"},
            UNKNOWN_TOPIC_OR_PARTITION,
            "The topic 'nope' does not exist.",
        ),
        (
            TOPIC,
            "t",
            {"retention.mss": "1"},
            INVALID_CONFIG,
            "Unknown topic config name: retention.mss",
        ),
        (
            TOPIC,
            "t",
            {"retention.ms": "x"},
            INVALID_REQUEST,
            "Invalid config value for resource ConfigResource(type=TOPIC, name='t')",
        ),
        (
            TOPIC,
            "t",
            {"retention.ms": None},
            INVALID_REQUEST,
            "Null value not supported for : retention.ms",
        ),
        (
            BROKER,
            "0",
            {"num.partitions": "3"},
            INVALID_REQUEST,
            "Cannot update these configs dynamically: Set(num.partitions)",
        ),
        (BROKER, "1", {"num.partitions": "3"}, INVALID_REQUEST, "Unexpected broker id"),
        (
            NO_CONFIG_RESOURCE_TYPE,
            "g",
            {"a": "b"},
            INVALID_REQUEST,
            "only supported for topics and brokers, but resource type is UNKNOWN",
        ),
    ],
)
def test_alter_config_errors(
    resource_type: int, name: str, configs: dict[str, str | None], code: int, message: str
) -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        await create_online(admin, metadata, "t", configs={"retention.ms": "1000"})
        [result] = (await admin.alter_configs(alter(resource_type, name, configs), 0))["responses"]
        assert result["error_code"] == code and message in result["error_message"], result
        assert await zk.get_entity_configs("topics", "t") == {"retention.ms": "1000"}
        assert await notifications(zk) == []

    run(body)


def test_incremental_alter_configs_operations() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        await create_online(
            admin, metadata, "t", configs={"retention.ms": "1000", "segment.ms": "5000"}
        )
        response = await admin.incremental_alter_configs(
            incremental(
                "t",
                ("retention.ms", 0, "2000"),  # SET
                ("segment.ms", 1, None),  # DELETE
                ("cleanup.policy", 2, "compact"),  # APPEND to the default "delete"
                ("leader.replication.throttled.replicas", 2, "0:1,1:1"),
            ),
            1,
        )
        assert response["responses"][0]["error_code"] == NONE, response
        assert await zk.get_entity_configs("topics", "t") == {
            "retention.ms": "2000",
            "cleanup.policy": "delete,compact",
            "leader.replication.throttled.replicas": "0:1,1:1",
        }
        response = await admin.incremental_alter_configs(
            incremental("t", ("cleanup.policy", 3, "delete")), 0
        )
        assert response["responses"][0]["error_code"] == NONE
        assert (await zk.get_entity_configs("topics", "t"))["cleanup.policy"] == "compact"
        assert await notifications(zk) == ["topics/t", "topics/t"]

    run(body)


@pytest.mark.parametrize(
    ("ops", "code", "message"),
    [
        (
            (("retention.ms", 0, "1"), ("retention.ms", 1, None)),
            INVALID_REQUEST,
            "Error due to duplicate config keys : retention.ms",
        ),
        (
            (("retention.ms", 0, None),),
            INVALID_REQUEST,
            "Null value not supported for : SET:retention.ms",
        ),
        (
            (("retention.ms", 2, "5"),),
            INVALID_REQUEST,
            "Config value append is not allowed for config key: retention.ms",
        ),
        (
            (("retention.ms", 3, "5"),),
            INVALID_REQUEST,
            "Config value subtract is not allowed for config key: retention.ms",
        ),
        ((("no.such", 2, "5"),), INVALID_CONFIG, "Unknown topic config name: no.such"),
        ((("retention.ms", 9, "5"),), INVALID_REQUEST, "Unknown config operation 9"),
        ((("segment.bytes", 0, "1"),), INVALID_REQUEST, "segment.bytes"),
    ],
)
def test_incremental_alter_config_errors(
    ops: tuple[tuple[str, int, str | None], ...], code: int, message: str
) -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        await create_online(admin, metadata, "t")
        [result] = (await admin.incremental_alter_configs(incremental("t", *ops), 1))["responses"]
        assert result["error_code"] == code and message in result["error_message"], result
        assert await zk.get_entity_configs("topics", "t") == {}

    run(body)


def test_incremental_alter_of_broker_configs_is_refused() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        for rtype, message in ((BROKER, "Unknown broker config name(s): x"),
                               (BROKER_LOGGER, "not supported by kafpy")):  # fmt: skip
            [result] = (
                await admin.incremental_alter_configs(
                    incremental("0", ("x", 0, "1"), resource_type=rtype), 1
                )
            )["responses"]
            assert result["error_code"] == INVALID_REQUEST and message in result["error_message"]

    run(body)


def test_dynamic_broker_configs_stored_and_described() -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        [ok] = (await admin.incremental_alter_configs(
            incremental("0", ("log.retention.ms", 0, "1000"), resource_type=BROKER), 1))["responses"]  # fmt: skip
        assert ok["error_code"] == NONE, ok
        assert await zk.get_entity_configs("brokers", "0") == {"log.retention.ms": "1000"}
        [ok] = (await admin.incremental_alter_configs(
            incremental("", ("log.retention.ms", 0, "2000"), resource_type=BROKER), 1))["responses"]  # fmt: skip
        assert ok["error_code"] == NONE, ok
        assert await zk.get_entity_configs("brokers", "<default>") == {"log.retention.ms": "2000"}
        # what the broker's DynamicConfigManager does on the notifications
        admin.dynamic_config.update_broker_config({"log.retention.ms": "1000"})
        admin.dynamic_config.update_default_config({"log.retention.ms": "2000"})

        retention = by_name(await admin.describe_configs(describe(BROKER, "0", synonyms=True), 2))[
            "log.retention.ms"
        ]
        assert (retention["value"], retention["config_source"], retention["read_only"]) == (
            "1000",
            ConfigSource.DYNAMIC_BROKER_CONFIG,
            False,
        )
        assert [(s["name"], s["value"], s["source"]) for s in retention["synonyms"]] == [
            ("log.retention.ms", "1000", ConfigSource.DYNAMIC_BROKER_CONFIG),
            ("log.retention.ms", "2000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
            ("log.retention.hours", "5", ConfigSource.STATIC_BROKER_CONFIG),
            ("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG),
        ]
        default = by_name(await admin.describe_configs(describe(BROKER, "", synonyms=True), 2))
        assert list(default) == ["log.retention.ms"]
        assert default["log.retention.ms"]["synonyms"] == [
            {
                "name": "log.retention.ms",
                "value": "2000",
                "source": ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
            }
        ]
        await create_online(admin, metadata, "t")
        topic = by_name(await admin.describe_configs(describe(TOPIC, "t", synonyms=True), 1))
        assert (topic["retention.ms"]["value"], topic["retention.ms"]["config_source"]) == (
            "1000",
            ConfigSource.DYNAMIC_BROKER_CONFIG,
        )

    run(body, **{"log.retention.hours": "5"})


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"broker.id": "3"}, "Cannot update these configs dynamically: Set(broker.id)"),
        ({"num.io.threads": "3"}, "kafpy cannot apply these configs without a restart yet"),
        ({"log.segment.bytes": "1"}, "log.segment.bytes"),
        ({"no.such.key": "1"}, "Unknown broker config name(s): no.such.key"),
    ],
)
def test_dynamic_broker_config_refusals(props: dict[str, str], message: str) -> None:
    async def body(admin: AdminManager, zk: KafkaZkClient, metadata: Metadata) -> None:
        ops = [(k, 0, v) for k, v in props.items()]
        [result] = (
            await admin.incremental_alter_configs(incremental("0", *ops, resource_type=BROKER), 1)
        )["responses"]
        assert result["error_code"] == INVALID_REQUEST and message in result["error_message"]
        assert await zk.get_entity_configs("brokers", "0") == {}

    run(body)
