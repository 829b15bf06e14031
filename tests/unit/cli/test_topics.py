"""`kafpy topics` as a user runs it: the real command in a subprocess against a real ZooKeeper,
and in process against a FakeBroker for --bootstrap-server.

Brokers are registered (ephemeral /brokers/ids/N with Kafka's JSON) by a session that the
test keeps open while the command runs, as live brokers would.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafpy.cli.topics import command
from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import (
    Broker,
    BrokerInfo,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
)
from kafpy.metadata.zookeeper_store import ZooKeeperStore
from tests.unit.admin.fixtures import AdminBroker


def kafpy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafpy", *args], capture_output=True, text=True, timeout=60
    )


async def akafpy(*args: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.get_running_loop().run_in_executor(None, lambda: kafpy(*args))


def with_brokers(
    connect: str, broker_ids: list[int], body: Callable[[KafkaZkClient], Awaitable[None]]
) -> None:
    """Register live brokers from a session held open while `body` runs commands."""

    async def main() -> None:
        store = ZooKeeperStore(connect)
        await store.start()
        try:
            zk = KafkaZkClient(store)
            for broker_id in broker_ids:
                endpoint = EndPoint("127.0.0.1", 9092 + broker_id, "PLAINTEXT", "PLAINTEXT")
                await zk.register_broker(BrokerInfo(Broker(broker_id, (endpoint,))))
            await body(zk)
        finally:
            await store.close()

    asyncio.run(main())


@pytest.mark.zookeeper
def test_create_describe_alter_list_delete(zookeeper_connect: str) -> None:
    zk_args = ("topics", "--zookeeper", zookeeper_connect)

    async def body(zk: KafkaZkClient) -> None:
        r = await akafpy(
            *zk_args, "--create", "--topic", "topic_a", "--replica-assignment", "1:2:0,2:0:1,0:1:2"
        )
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines()[-1] == "Created topic topic_a."
        assert (await zk.store.get("/brokers/topics/topic_a"))[0] == (
            b'{"removing_replicas":{},"partitions":{"2":[0,1,2],"1":[2,0,1],"0":[1,2,0]},'
            b'"adding_replicas":{},"version":3}'
        )
        assert (await zk.store.get("/config/topics/topic_a"))[0] == b'{"version":1,"config":{}}'

        r = await akafpy(
            *zk_args, "--create", "--topic", "topic-c", "--partitions", "2", "--replication-factor", "3",
            "--config", "retention.ms=1000",
        )  # fmt: skip
        assert (r.returncode, r.stdout, r.stderr) == (0, "Created topic topic-c.\n", "")

        await zk.create_topic_partition_state(
            TopicPartition("topic_a", 0),
            LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1, 2, 0)), 1),
        )
        r = await akafpy(*zk_args, "--describe", "--topic", "topic_a")
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines() == [
            "Topic: topic_a\tPartitionCount: 3\tReplicationFactor: 3\tConfigs: ",
            "\tTopic: topic_a\tPartition: 0\tLeader: 1\tReplicas: 1,2,0\tIsr: 1,2,0",
            "\tTopic: topic_a\tPartition: 1\tLeader: none\tReplicas: 2,0,1\tIsr: ",
            "\tTopic: topic_a\tPartition: 2\tLeader: none\tReplicas: 0,1,2\tIsr: ",
        ]

        r = await akafpy(*zk_args, "--alter", "--topic", "topic_a", "--partitions", "4")
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines()[-1] == "Adding partitions succeeded!"
        assignment, _ = await zk.get_topic_assignment_and_version("topic_a")
        assert assignment[3] == [1, 2, 0]  # the seed's grown partition

        r = await akafpy(*zk_args, "--delete", "--topic", "topic-c")
        assert r.stdout.splitlines() == [
            "Topic topic-c is marked for deletion.",
            "Note: This will have no impact if delete.topic.enable is not set to true.",
        ]
        r = await akafpy(*zk_args, "--list")
        assert (r.returncode, r.stdout) == (0, "topic-c - marked for deletion\ntopic_a\n")

    with_brokers(zookeeper_connect, [0, 1, 2], body)


@pytest.mark.zookeeper
def test_errors_are_one_line_on_stderr(zookeeper_connect: str) -> None:
    zk_args = ("topics", "--zookeeper", zookeeper_connect)
    # no live brokers: automatic assignment fails as Kafka's does
    r = kafpy(
        *zk_args, "--create", "--topic", "t", "--partitions", "1", "--replication-factor", "1"
    )
    assert r.returncode == 1
    assert r.stdout == ""
    assert r.stderr == (
        "Error while executing topic command : replication factor: 1 larger than available brokers: 0\n"
    )

    r = kafpy(
        *zk_args,
        "--create",
        "--topic",
        "t",
        "--replica-assignment",
        "0,0",
        "--config",
        "retention.ms=x",
    )
    assert r.returncode == 1
    assert len(r.stderr.splitlines()) == 1 and "retention.ms" in r.stderr
    assert "Traceback" not in r.stderr

    r = kafpy(*zk_args, "--create", "--topic", "t", "--replica-assignment", "0,0")
    assert r.returncode == 0
    r = kafpy(*zk_args, "--alter", "--topic", "t", "--partitions", "1")
    assert r.returncode == 1
    assert r.stderr.startswith(
        "Error while executing topic command : The number of partitions for a topic can only be increased"
    )
    assert len(r.stderr.splitlines()) == 1

    r = kafpy(*zk_args, "--list", "--create")
    assert r.returncode == 1
    assert r.stderr.startswith("Command must include exactly one action")
    assert len(r.stderr.splitlines()) == 1


def test_help_documents_every_flag() -> None:
    result = CliRunner().invoke(command, ["--help"], terminal_width=200)
    assert result.exit_code == 0
    for flag in (
        "--zookeeper", "--create", "--alter", "--delete", "--list", "--describe", "--topic",
        "--partitions", "--replication-factor", "--replica-assignment", "--config",
        "--delete-config", "--if-not-exists", "--if-exists", "--disable-rack-aware",
        "--under-replicated-partitions", "--unavailable-partitions", "--topics-with-overrides",
        "--exclude-internal",
    ):  # fmt: skip
        assert flag in result.output


def test_usage_errors_in_process() -> None:
    result = CliRunner().invoke(command, ["--zookeeper", "zk:2181", "--partitions", "x"])
    assert result.exit_code == 1
    assert "'x' is not a valid integer" in result.output
    assert len(result.output.splitlines()) == 1


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
    # --create takes the broker's defaults (KIP-464); --alter needs what to change
    missing = runner.invoke(command, ["--alter", "--topic", "t", "--bootstrap-server", "b:1"])
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


def test_help_lists_kafka_2_8_options_and_zookeeper_is_not_required() -> None:
    result = CliRunner().invoke(command, ["--help"], terminal_width=200)
    assert result.exit_code == 0
    for flag in (
        "--bootstrap-server", "--command-config", "--under-min-isr-partitions",
        "--at-min-isr-partitions", "--force",
    ):  # fmt: skip
        assert flag in result.output
    (zookeeper,) = [line for line in result.output.splitlines() if "--zookeeper HOSTS" in line]
    assert "REQUIRED" not in zookeeper and "DEPRECATED" in zookeeper


def test_command_config_refuses_security_it_cannot_honour(tmp_path: Path) -> None:
    config = tmp_path / "admin.properties"
    config.write_text("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n")
    runner = CliRunner()
    args = ["--list", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(config)]
    result = runner.invoke(command, args)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"SASL needs credentials in {config}: set sasl.jaas.config")
    config.write_text("security.protocol=SSL\nssl.truststore.location=/etc/kafka/truststore.jks\n")
    result = runner.invoke(command, args)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"ssl.truststore.type=JKS for {config} cannot be read")
    result = runner.invoke(
        command, ["--list", "--zookeeper", "127.0.0.1:2181", "--command-config", str(config)]
    )
    assert result.exit_code == 1
    assert result.stderr.startswith(
        'Option "[command-config]" can\'t be used with option "[zookeeper]"'
    )
