"""`kafpy topics --bootstrap-server`: the topic command through admin APIs, against a
FakeBroker that keeps topics and configs, printing the --zookeeper form's lines."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from click.testing import CliRunner

from kafpy.admin.topic_command import TopicCommandError, TopicCommandOptions
from kafpy.cli.topics import command
from kafpy.cli.topics_bootstrap import run_topic_command
from kafpy.client.admin_client import AdminClient
from kafpy.common.errors import AdminOperationError, TopicExistsError
from kafpy.protocol.api_keys import ApiKey
from tests.unit.client.fake_broker import FakeBroker, no_sleep


class AdminBroker:
    """A one-broker cluster (id 0, the controller) keeping topics in memory."""

    def __init__(self) -> None:
        self.broker = FakeBroker(node_id=0)
        self.assignments: dict[str, dict[int, list[int]]] = {}
        self.isr: dict[tuple[str, int], list[int]] = {}
        self.configs: dict[str, dict[str, str]] = {}
        self.leaderless: set[tuple[str, int]] = set()

    async def __aenter__(self) -> AdminClient:
        await self.broker.start()
        h = self.broker.handlers
        h[ApiKey.METADATA] = self.metadata
        h[ApiKey.CREATE_TOPICS] = self.create_topics
        h[ApiKey.DELETE_TOPICS] = self.delete_topics
        h[ApiKey.CREATE_PARTITIONS] = self.create_partitions
        h[ApiKey.DESCRIBE_CONFIGS] = self.describe_configs
        h[ApiKey.INCREMENTAL_ALTER_CONFIGS] = self.alter_configs
        self.admin = AdminClient.connect(self.broker.address, sleep=no_sleep, retries=1)
        return await self.admin.__aenter__()

    async def __aexit__(self, *exc: object) -> None:
        await self.admin.close()
        await self.broker.stop()

    def metadata(self, header: Any, body: dict[str, Any]) -> dict[str, Any]:
        names = (
            sorted(self.assignments)
            if body["topics"] is None
            else [t["name"] for t in body["topics"]]
        )
        topics = []
        for name in names:
            if name not in self.assignments:
                topics.append({"error_code": 3, "name": name, "partitions": []})
                continue
            partitions = []
            for p, replicas in sorted(self.assignments[name].items()):
                partitions.append(
                    {
                        "error_code": 0,
                        "partition_index": p,
                        "leader_id": -1 if (name, p) in self.leaderless else replicas[0],
                        "replica_nodes": replicas,
                        "isr_nodes": self.isr.get((name, p), replicas),
                    }
                )
            topics.append(
                {
                    "error_code": 0,
                    "name": name,
                    "is_internal": name.startswith("__"),
                    "partitions": partitions,
                }
            )
        return {
            "brokers": [{"node_id": 0, "host": "127.0.0.1", "port": self.broker.port}],
            "controller_id": 0,
            "topics": topics,
        }

    def create_topics(self, header: Any, body: dict[str, Any]) -> dict[str, Any]:
        results = []
        for t in body["topics"]:
            name = t["name"]
            if name in self.assignments:
                results.append(
                    {
                        "name": name,
                        "error_code": 36,
                        "error_message": f"Topic '{name}' already exists.",
                    }
                )
                continue
            if t["assignments"]:
                assignment = {a["partition_index"]: a["broker_ids"] for a in t["assignments"]}
            else:
                assignment = {p: [0] * t["replication_factor"] for p in range(t["num_partitions"])}
            self.assignments[name] = assignment
            self.configs[name] = {c["name"]: c["value"] for c in t["configs"]}
            results.append({"name": name, "error_code": 0, "error_message": None})
        return {"topics": results}

    def delete_topics(self, header: Any, body: dict[str, Any]) -> dict[str, Any]:
        for name in body["topic_names"]:
            self.assignments.pop(name, None)
        return {"responses": [{"name": n, "error_code": 0} for n in body["topic_names"]]}

    def create_partitions(self, header: Any, body: dict[str, Any]) -> dict[str, Any]:
        t = body["topics"][0]
        current = self.assignments[t["name"]]
        added = t["assignments"] or [{"broker_ids": [0]}] * (t["count"] - len(current))
        for a in added:
            current[len(current)] = a["broker_ids"]
        return {"results": [{"name": t["name"], "error_code": 0, "error_message": None}]}

    def describe_configs(self, header: Any, body: dict[str, Any]) -> dict[str, Any]:
        r = body["resources"][0]
        overrides = self.configs.get(r["resource_name"], {})
        configs = [
            {"name": k, "value": v, "read_only": False, "config_source": 1, "is_sensitive": False}
            for k, v in overrides.items()
        ] + [
            {
                "name": "segment.ms",
                "value": "604800000",
                "read_only": False,
                "config_source": 5,
                "is_sensitive": False,
            }
        ]
        return {
            "results": [
                {
                    "error_code": 0,
                    "error_message": None,
                    "resource_type": 2,
                    "resource_name": r["resource_name"],
                    "configs": configs,
                }
            ]
        }

    def alter_configs(self, header: Any, body: dict[str, Any]) -> dict[str, Any]:
        r = body["resources"][0]
        configs = self.configs.setdefault(r["resource_name"], {})
        for c in r["configs"]:
            if c["config_operation"] == 0:
                configs[c["name"]] = c["value"]
            else:
                configs.pop(c["name"], None)
        return {
            "responses": [
                {
                    "error_code": 0,
                    "error_message": None,
                    "resource_type": 2,
                    "resource_name": r["resource_name"],
                }
            ]
        }


def opts(action: str, **kwargs: Any) -> TopicCommandOptions:
    return TopicCommandOptions(actions=[action], **kwargs)


def test_create_list_describe_alter_delete() -> None:
    async def scenario() -> None:
        env = AdminBroker()
        async with env as admin:
            lines: list[str] = []
            out = lines.append
            await run_topic_command(
                admin,
                opts(
                    "create",
                    topic="orders",
                    partitions=2,
                    replication_factor=1,
                    configs=["retention.ms=1000"],
                ),
                out,
            )
            await run_topic_command(
                admin, opts("create", topic="a.b", replica_assignment="0,0"), out
            )
            await run_topic_command(
                admin,
                opts(
                    "create", topic="orders", partitions=1, replication_factor=1, if_not_exists=True
                ),
                out,
            )
            assert lines == [
                'Created topic "orders".',
                "WARNING: Due to limitations in metric names, topics with a period ('.') or "
                "underscore ('_') could collide. To avoid issues it is best to use either, but "
                "not both.",
                'Created topic "a.b".',
            ]
            with pytest.raises(TopicExistsError, match="Topic 'orders' already exists."):
                await run_topic_command(
                    admin, opts("create", topic="orders", partitions=1, replication_factor=1), out
                )
            lines.clear()
            await run_topic_command(admin, opts("list"), out)
            assert lines == ["a.b", "orders"]
            lines.clear()
            await run_topic_command(admin, opts("describe", topic="orders"), out)
            assert lines == [
                "Topic:orders\tPartitionCount:2\tReplicationFactor:1\tConfigs:retention.ms=1000",
                "\tTopic: orders\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0",
                "\tTopic: orders\tPartition: 1\tLeader: 0\tReplicas: 0\tIsr: 0",
            ]
            lines.clear()
            await run_topic_command(
                admin,
                opts(
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
                'Updated config for topic "orders".',
                "WARNING: If partitions are increased for a topic that has a key, the partition "
                "logic or ordering of the messages will be affected",
                "Adding partitions succeeded!",
            ]
            assert env.configs["orders"] == {"cleanup.policy": "compact"}
            assert len(env.assignments["orders"]) == 3
            lines.clear()
            env.leaderless.add(("orders", 1))
            await run_topic_command(
                admin, opts("describe", topic="orders", unavailable_partitions=True), out
            )
            assert lines == ["\tTopic: orders\tPartition: 1\tLeader: none\tReplicas: 0\tIsr: 0"]
            lines.clear()
            await run_topic_command(admin, opts("describe", topics_with_overrides=True), out)
            assert lines == [
                "Topic:orders\tPartitionCount:3\tReplicationFactor:1\tConfigs:cleanup.policy=compact"
            ]
            lines.clear()
            await run_topic_command(admin, opts("delete", topic="a.*"), out)
            assert lines == [
                "Topic a.b is marked for deletion.",
                "Note: This will have no impact if delete.topic.enable is not set to true.",
            ]
            with pytest.raises(TopicCommandError, match="Topic 'a.b' does not exist as expected"):
                await run_topic_command(admin, opts("delete", topic="a.b"), out)
            await run_topic_command(admin, opts("delete", topic="a.b", if_exists=True), out)
            env.assignments["__consumer_offsets"] = {0: [0]}
            with pytest.raises(AdminOperationError, match="internal topic"):
                await run_topic_command(admin, opts("delete", topic="__consumer_offsets"), out)
            lines.clear()
            await run_topic_command(admin, opts("list", exclude_internal=True), out)
            assert lines == ["orders"]

    asyncio.run(asyncio.wait_for(scenario(), 30))


def test_command_line_routing_and_errors() -> None:
    runner = CliRunner()
    both = runner.invoke(
        command, ["--list", "--zookeeper", "z:2181", "--bootstrap-server", "b:9092"]
    )
    assert both.exit_code == 1 and "Only one of --bootstrap-server or --zookeeper" in both.stderr
    no_action = runner.invoke(command, ["--bootstrap-server", "b:9092"])
    assert no_action.exit_code == 1 and "exactly one action" in no_action.stderr
    bad = runner.invoke(command, ["--list", "--bootstrap-server", "nohost"])
    assert bad.exit_code == 1 and "HOST:PORT" in bad.stderr
    missing = runner.invoke(command, ["--create", "--topic", "t", "--bootstrap-server", "b:1"])
    assert missing.exit_code == 1 and '"[partitions]"' in missing.stderr

    async def serve_and_run() -> None:
        env = AdminBroker()
        async with env:
            env.assignments["t"] = {0: [0]}
            result = await asyncio.to_thread(
                runner.invoke, command, ["--list", "--bootstrap-server", env.broker.address]
            )
            assert result.exit_code == 0, result.stderr
            assert result.stdout == "t\n"
            result = await asyncio.to_thread(
                runner.invoke,
                command,
                ["--describe", "--topic", "zz", "--bootstrap-server", env.broker.address],
            )
            assert result.exit_code == 1
            assert result.stderr == (
                "Error while executing topic command : Topic 'zz' does not exist as expected\n"
            )

    asyncio.run(asyncio.wait_for(serve_and_run(), 30))
