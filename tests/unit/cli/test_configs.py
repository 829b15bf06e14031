"""`kafpy configs` as a user runs it: the real command in a subprocess against a real ZooKeeper."""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner
from kazoo.client import KazooClient

from kafpy.cli.configs import command

pytestmark = pytest.mark.zookeeper


def kafpy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafpy", *args], capture_output=True, text=True, timeout=60
    )


def test_alter_describe_and_change_notification(zookeeper_connect: str) -> None:
    topics = ("topics", "--zookeeper", zookeeper_connect)
    configs = ("configs", "--zookeeper", zookeeper_connect, "--entity-type", "topics")
    assert kafpy(*topics, "--create", "--topic", "t", "--replica-assignment", "0").returncode == 0

    r = kafpy(
        *configs,
        "--entity-name",
        "t",
        "--alter",
        "--add-config",
        "retention.ms=1000,segment.ms=2000",
    )
    assert (r.returncode, r.stdout, r.stderr) == (
        0,
        "Completed Updating config for entity: topic 't'.\n",
        "",
    )
    r = kafpy(*configs, "--entity-name", "t", "--alter", "--delete-config", "segment.ms")
    assert r.returncode == 0, r.stderr
    r = kafpy(*configs, "--entity-name", "t", "--describe")
    assert (r.returncode, r.stdout) == (0, "Configs for topic 't' are retention.ms=1000\n")

    client = KazooClient(hosts=zookeeper_connect)
    client.start(timeout=30)
    try:
        assert (
            client.get("/config/topics/t")[0] == b'{"version":1,"config":{"retention.ms":"1000"}}'
        )
        changes = sorted(client.get_children("/config/changes"))
        assert changes == ["config_change_0000000000", "config_change_0000000001"]
        assert client.get(f"/config/changes/{changes[0]}")[0] == (
            b'{"version":2,"entity_path":"topics/t"}'
        )
    finally:
        client.stop()
        client.close()

    r = kafpy(*configs, "--entity-name", "t", "--alter", "--add-config", "retention.ms=soon")
    assert r.returncode == 1
    assert r.stdout == ""
    assert r.stderr.startswith("Error while executing config command : Invalid value soon")
    assert len(r.stderr.splitlines()) == 1


def test_help_documents_every_flag() -> None:
    result = CliRunner().invoke(command, ["--help"], terminal_width=200)
    assert result.exit_code == 0
    for flag in (
        "--zookeeper",
        "--alter",
        "--describe",
        "--entity-type",
        "--entity-name",
        "--add-config",
        "--delete-config",
    ):
        assert flag in result.output


def test_usage_error_is_one_line() -> None:
    result = CliRunner().invoke(
        command, ["--zookeeper", "zk:2181", "--alter", "--entity-type", "topics"]
    )
    assert result.exit_code == 1
    assert result.output == (
        "An entity name must be specified with --alter of topics (see 'kafpy configs --help')\n"
    )


def test_compacted_topics_through_topics_and_configs(zookeeper_connect: str) -> None:
    topics = ("topics", "--zookeeper", zookeeper_connect)
    configs = ("configs", "--zookeeper", zookeeper_connect, "--entity-type", "topics")
    r = kafpy(*topics, "--create", "--topic", "c", "--replica-assignment", "0",
              "--config", "cleanup.policy=compact")  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = kafpy(*configs, "--entity-name", "c", "--alter", "--add-config",
              "cleanup.policy=[compact,delete],min.cleanable.dirty.ratio=0.1")  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = kafpy(*configs, "--entity-name", "c", "--describe")
    assert r.stdout == (
        "Configs for topic 'c' are cleanup.policy=compact,delete,min.cleanable.dirty.ratio=0.1\n"
    )
    r = kafpy(*topics, "--describe", "--topics-with-overrides")
    assert r.returncode == 0, r.stderr
    assert (
        "Topic: c\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: cleanup.policy=compact,delete,"
        in r.stdout
    )
    r = kafpy(
        *configs,
        "--entity-name",
        "c",
        "--alter",
        "--add-config",
        "cleanup.policy=[compact,forever]",
    )
    assert r.returncode == 1 and "cleanup.policy" in r.stderr
