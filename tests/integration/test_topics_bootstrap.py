"""`kafpy topics --bootstrap-server` against a real broker: on a real ZooKeeper the same
lines as the `--zookeeper` form reading the same cluster; on the embedded store (no
ZooKeeper, as `make run` starts it) Kafka 2.8's kafka-topics.sh lines and options."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from kafpy.testing.wait import WaitTimeout, wait_until
from tests.fixtures.broker import KafpyBroker

WAIT_S = 60.0
TOPIC_ID = re.compile(r"\tTopicId: [A-Za-z0-9_-]{22}")


def topic_ids_removed(text: str) -> str:
    """Describe output without its TopicId fields; every topic line must have one (Kafka 2.8
    prints it for a topic that has an id, and every topic gets one from the controller)."""
    for line in text.splitlines():
        if line.startswith("Topic: "):
            assert TOPIC_ID.search(line), line
    return TOPIC_ID.sub("", text)


def kafpy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafpy", *args], capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def cluster(
    zookeeper_connect: str, kafpy_broker_factory: Callable[..., KafpyBroker]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    broker = kafpy_broker_factory({"zookeeper.connect": zookeeper_connect})
    return (
        ("topics", "--bootstrap-server", broker.bootstrap),
        ("topics", "--zookeeper", zookeeper_connect),
    )


def both(cluster: tuple[tuple[str, ...], tuple[str, ...]], *args: str) -> tuple[str, str]:
    """The output of the same topic command in both forms (each must succeed)."""
    outputs = []
    for form in cluster:
        r = kafpy(*form, *args)
        assert r.returncode == 0, f"{form[1]}: {r.stderr}"
        outputs.append(r.stdout)
    return outputs[0], outputs[1]


def eventually_same(cluster: tuple[tuple[str, ...], tuple[str, ...]], *args: str) -> str:
    """Wait until both forms print the same (the controller acts asynchronously)."""
    last: list[str] = []

    def same() -> list[str]:
        last[:] = both(cluster, *args)
        via_broker, via_zk = last
        # in a list: an empty output is an answer too
        return [via_broker] if via_broker == via_zk and "Leader: none" not in via_broker else []

    (output,) = wait_until(
        same, WAIT_S, "both forms to print the same, every partition led", interval_s=0.2,
        context=lambda: "\n".join(last),
    )  # fmt: skip
    return output


@pytest.mark.zookeeper
def test_same_output_as_the_zookeeper_form(
    cluster: tuple[tuple[str, ...], tuple[str, ...]],
) -> None:
    bootstrap, zookeeper = cluster
    r = kafpy(
        *bootstrap,
        "--create",
        "--topic",
        "orders",
        "--partitions",
        "3",
        "--replication-factor",
        "1",
        "--config",
        "retention.ms=1000",
    )
    assert (r.returncode, r.stdout, r.stderr) == (0, "Created topic orders.\n", "")
    r = kafpy(*zookeeper, "--create", "--topic", "payments", "--replica-assignment", "0,0")
    assert r.returncode == 0, r.stderr

    described = topic_ids_removed(eventually_same(cluster, "--describe"))
    assert (
        "Topic: orders\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: retention.ms=1000\n"
        in described
    )
    assert "\tTopic: payments\tPartition: 1\tLeader: 0\tReplicas: 0\tIsr: 0\n" in described
    assert both(cluster, "--list") == ("orders\npayments\n",) * 2

    r = kafpy(*bootstrap, "--alter", "--topic", "orders", "--partitions", "4")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "Adding partitions succeeded!"
    r = kafpy(
        *bootstrap,
        "--alter",
        "--topic",
        "orders",
        "--config",
        "cleanup.policy=compact",
        "--delete-config",
        "retention.ms",
    )
    assert r.returncode == 0, r.stderr
    assert "Updated config for topic orders." in r.stdout
    with_id = eventually_same(cluster, "--describe", "--topic", "orders")
    described = topic_ids_removed(with_id)
    assert described.splitlines()[0] == (
        "Topic: orders\tPartitionCount: 4\tReplicationFactor: 1\tConfigs: cleanup.policy=compact"
    )
    assert (
        eventually_same(cluster, "--describe", "--topics-with-overrides")
        == with_id.splitlines(True)[0]
    )

    r = kafpy(
        *bootstrap,
        "--create",
        "--topic",
        "orders",
        "--partitions",
        "1",
        "--replication-factor",
        "1",
    )
    assert r.returncode == 1
    assert r.stderr == "Error while executing topic command : Topic 'orders' already exists.\n"
    r = kafpy(
        *bootstrap,
        "--create",
        "--topic",
        "orders",
        "--partitions",
        "1",
        "--replication-factor",
        "1",
        "--if-not-exists",
    )
    assert (r.returncode, r.stdout) == (0, "")

    r = kafpy(*bootstrap, "--delete", "--topic", "payments")
    assert r.returncode == 0, r.stderr
    assert r.stdout == (
        "Topic payments is marked for deletion.\n"
        "Note: This will have no impact if delete.topic.enable is not set to true.\n"
    )
    wait_until(
        lambda: both(cluster, "--list") == ("orders\n", "orders\n"),
        WAIT_S,
        "payments gone from both lists",
        interval_s=0.2,
        context=lambda: str(both(cluster, "--list")),
    )


def describe_when_led(*args: str) -> list[str]:
    """The describe lines once every partition has a leader."""
    output: list[str] = []

    def led() -> bool:
        r = kafpy(*args, "--describe")
        assert r.returncode == 0, r.stderr
        output[:] = [r.stdout]
        return "Leader: none" not in r.stdout

    # past WAIT_S the lines are taken as they are (the test says what they should be)
    with contextlib.suppress(WaitTimeout):
        wait_until(led, WAIT_S, "every partition led", interval_s=0.2)
    return topic_ids_removed(output[0]).splitlines()


def test_kafka_2_8_create_and_describe_without_zookeeper(
    kafpy_broker_factory: Callable[..., KafpyBroker], tmp_path: Path
) -> None:
    broker = kafpy_broker_factory(
        {
            "num.partitions": "3",
            "default.replication.factor": "1",
            "log.segment.bytes": "1073741824",
        }
    )
    bootstrap = ("topics", "--bootstrap-server", broker.bootstrap)
    admin_config = tmp_path / "admin.properties"
    admin_config.write_text("client.id=ops-tool\nrequest.timeout.ms=20000\n")
    # KIP-464: no --partitions, no --replication-factor: the broker's defaults
    r = kafpy(*bootstrap, "--command-config", str(admin_config), "--create", "--topic", "t")
    assert (r.returncode, r.stdout, r.stderr) == (0, "Created topic t.\n", "")
    r = kafpy(
        *bootstrap, "--create", "--topic", "strict", "--partitions", "2",
        "--config", "min.insync.replicas=2",
    )  # fmt: skip
    assert (r.returncode, r.stderr) == (0, "")

    # Kafka 2.8's lines; Configs holds what is not a default, the broker's static
    # log.segment.bytes (as segment.bytes) too
    assert describe_when_led(*bootstrap) == [
        "Topic: strict\tPartitionCount: 2\tReplicationFactor: 1\t"
        "Configs: min.insync.replicas=2,segment.bytes=1073741824",
        "\tTopic: strict\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0",
        "\tTopic: strict\tPartition: 1\tLeader: 0\tReplicas: 0\tIsr: 0",
        "Topic: t\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: segment.bytes=1073741824",
        "\tTopic: t\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0",
        "\tTopic: t\tPartition: 1\tLeader: 0\tReplicas: 0\tIsr: 0",
        "\tTopic: t\tPartition: 2\tLeader: 0\tReplicas: 0\tIsr: 0",
    ]
    r = kafpy(*bootstrap, "--describe", "--under-min-isr-partitions")
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == (
        "\tTopic: strict\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0\n"
        "\tTopic: strict\tPartition: 1\tLeader: 0\tReplicas: 0\tIsr: 0\n"
    )
    r = kafpy(*bootstrap, "--describe", "--at-min-isr-partitions", "--topic", "t|strict")
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout.splitlines() == [
        f"\tTopic: t\tPartition: {p}\tLeader: 0\tReplicas: 0\tIsr: 0" for p in range(3)
    ]
    for flag in ("--under-replicated-partitions", "--unavailable-partitions"):
        r = kafpy(*bootstrap, "--describe", flag)
        assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    r = kafpy(*bootstrap, "--describe", "--topic", "gone", "--if-exists")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    r = kafpy(*bootstrap, "--create", "--topic", "t", "--if-not-exists")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    r = kafpy(*bootstrap, "--list", "--exclude-internal")
    assert (r.returncode, r.stdout) == (0, "strict\nt\n")
