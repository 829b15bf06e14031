"""ConfigCommand in-process on the embedded store: parsing, alter, describe, refusals."""

from __future__ import annotations

import pytest

from kafpy.admin.admin_zk_client import AdminZkClient
from kafpy.admin.config_command import (
    ConfigCommandError,
    ConfigCommandOptions,
    parse_configs_to_be_added,
    parse_configs_to_be_deleted,
    run_config_command,
)
from kafpy.common.errors import InvalidConfigurationError
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from tests.unit.admin.fixtures import run_with_zk


def opts(action: str, **kwargs: object) -> ConfigCommandOptions:
    o = ConfigCommandOptions(zookeeper="zk:2181", actions=[action], entity_type="topics", **kwargs)  # type: ignore[arg-type]
    o.check_args()
    return o


async def run(zk: KafkaZkClient, o: ConfigCommandOptions) -> list[str]:
    lines: list[str] = []
    await run_config_command(zk, o, lines.append)
    return lines


def test_parse_add_config_with_brackets() -> None:
    assert parse_configs_to_be_added("k1=v1,k2=[v1,v2,v2],k3 = v3") == {
        "k1": "v1",
        "k2": "v1,v2,v2",
        "k3": "v3",
    }
    with pytest.raises(ConfigCommandError, match='format "key=val"'):
        parse_configs_to_be_added("k1")
    assert parse_configs_to_be_deleted(["a,b", "c"]) == ["a", "b", "c"]


def test_alter_and_describe() -> None:
    async def body(zk: KafkaZkClient) -> None:
        await AdminZkClient(zk).create_or_update_topic_partition_assignment_path_in_zk(
            "t", {0: [0]}
        )
        out = await run(
            zk,
            opts(
                "alter",
                entity_name="t",
                add_config="retention.ms=1000,cleanup.policy=[compact,delete]",
            ),
        )
        assert out == ["Completed Updating config for entity: topic 't'."]
        assert (await zk.store.get("/config/topics/t"))[0] == (
            b'{"version":1,"config":{"retention.ms":"1000","cleanup.policy":"compact,delete"}}'
        )
        assert await run(zk, opts("describe", entity_name="t")) == [
            "Configs for topic 't' are retention.ms=1000,cleanup.policy=compact,delete"
        ]
        await run(zk, opts("alter", entity_name="t", delete_config=["retention.ms"]))
        assert await run(zk, opts("describe")) == [
            "Configs for topic 't' are cleanup.policy=compact,delete"
        ]
        changes = await zk.store.get_children("/config/changes")
        assert len(changes) == 2
        for change in changes:
            assert (await zk.store.get(f"/config/changes/{change}"))[0] == (
                b'{"version":2,"entity_path":"topics/t"}'
            )

    run_with_zk(body)


def test_alter_refusals() -> None:
    async def body(zk: KafkaZkClient) -> None:
        with pytest.raises(Exception, match='Topic "nope" does not exist.'):
            await run(zk, opts("alter", entity_name="nope", add_config="retention.ms=1"))
        await AdminZkClient(zk).create_or_update_topic_partition_assignment_path_in_zk(
            "t", {0: [0]}
        )
        with pytest.raises(InvalidConfigurationError, match="Invalid config\\(s\\): retention.ms"):
            await run(zk, opts("alter", entity_name="t", delete_config=["retention.ms"]))
        with pytest.raises(InvalidConfigurationError, match="Unknown topic config name: bogus"):
            await run(zk, opts("alter", entity_name="t", add_config="bogus=1"))
        assert await zk.store.get_children("/config/changes") == []

    run_with_zk(body)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"actions": []}, "exactly one action"),
        ({"actions": ["alter"], "entity_type": None}, 'Missing required argument "[entity-type]"'),
        ({"actions": ["alter"], "entity_type": "things"}, "--entity-type must be one of"),
        ({"actions": ["alter"], "entity_type": "brokers"}, "not supported by kafpy"),
        (
            {"actions": ["alter"], "entity_type": "topics", "add_config": "a=b"},
            "An entity name must be specified",
        ),
        (
            {"actions": ["alter"], "entity_type": "topics", "entity_name": "t"},
            "At least one of --add-config",
        ),
        ({"actions": ["describe"], "entity_type": "topics", "add_config": "a=b"}, "can't be used"),
    ],
)
def test_check_args(kwargs: dict[str, object], message: str) -> None:
    o = ConfigCommandOptions(**{"zookeeper": "zk:2181", **kwargs})  # type: ignore[arg-type]
    with pytest.raises(ConfigCommandError, match=message.replace("[", "\\[").replace("]", "\\]")):
        o.check_args()
