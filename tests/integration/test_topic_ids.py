"""Topic ids (KIP-516) through a real broker on the embedded store, as Kafka 2.8 has them: a
topic created through the broker gets an id, the same one in its topic node, in each
partition's `partition.metadata`, in Metadata v10+ (confluent-kafka's describe_topics reads
it), in `kafpy topics --describe` and after a restart; DeleteTopics v6 deletes a topic given
by id and answers UNKNOWN_TOPIC_ID for an id nobody has."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import uuid
from typing import Any

from confluent_kafka import TopicCollection
from confluent_kafka.admin import AdminClient, NewTopic

from kafpy.common.kafka_uuid import random_uuid, uuid_from_string, uuid_to_string
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.testing.wait import WaitTimeout, wait_until
from tests.fixtures.broker import KafpyBroker
from tests.integration.test_forged_controller_requests import send

WAIT_S = 30.0


def metadata(broker: KafpyBroker, topics: list[str], version: int) -> Any:
    body = {
        "topics": [{"name": t, "topic_id": None} for t in topics],
        "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    }
    return asyncio.run(send(broker, ApiKey.METADATA, body, version))


def metadata_topic_id(broker: KafpyBroker, topic: str) -> uuid.UUID | None:
    """The id Metadata v11 gives the topic once its partitions have leaders."""
    last: dict[str, Any] = {}

    def led() -> bool:
        (entry,) = metadata(broker, [topic], 11)["topics"]
        last.update(entry)
        partitions = entry["partitions"]
        return (
            bool(partitions)
            and all(p["leader_id"] >= 0 for p in partitions)
            and (entry["error_code"] == 0)
        )

    # past WAIT_S the id is taken as it is, led or not
    with contextlib.suppress(WaitTimeout):
        wait_until(led, WAIT_S, f"{topic}'s partitions led")
    assert last["error_code"] == 0, last
    return last["topic_id"]  # type: ignore[no-any-return]


def delete_topics(broker: KafpyBroker, topics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    body = {"topics": topics, "timeout_ms": 20000}
    return asyncio.run(send(broker, ApiKey.DELETE_TOPICS, body, 6))["responses"]  # type: ignore[no-any-return]


def describe_line(broker: KafpyBroker, topic: str) -> str:
    r = subprocess.run(
        [sys.executable, "-m", "kafpy", "topics", "--bootstrap-server", broker.bootstrap,
         "--describe", "--topic", topic],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()[0]


def test_a_topic_has_one_id_everywhere(kafpy_broker: KafpyBroker) -> None:
    admin = AdminClient({"bootstrap.servers": kafpy_broker.bootstrap})
    admin.create_topics([NewTopic("ids", 2, 1)])["ids"].result(30)
    topic_id = metadata_topic_id(kafpy_broker, "ids")
    assert topic_id is not None and topic_id.int != 0
    text = uuid_to_string(topic_id)

    # the client sees it (Metadata v10+), and the tool prints it as Kafka 2.8's does
    described = admin.describe_topics(TopicCollection(["ids"]))["ids"].result(30)
    # (librdkafka prints ids in standard base64, Kafka in the URL-safe alphabet)
    assert str(described.topic_id).replace("+", "-").replace("/", "_") == text
    assert describe_line(kafpy_broker, "ids") == (
        f"Topic: ids\tTopicId: {text}\tPartitionCount: 2\tReplicationFactor: 1\tConfigs: "
    )
    # before v10 there is no such field; the answer is the same otherwise
    (old,) = metadata(kafpy_broker, ["ids"], 9)["topics"]
    assert "topic_id" not in old and old["error_code"] == 0

    # each partition's log knows it, in Kafka's partition.metadata
    for p in (0, 1):
        lines = (kafpy_broker.log_dir / f"ids-{p}" / "partition.metadata").read_text()
        assert lines == f"version: 0\ntopic_id: {text}"

    # a restart reads it back: the same id, nothing rewritten with another one
    kafpy_broker.restart()
    assert metadata_topic_id(kafpy_broker, "ids") == topic_id
    assert uuid_from_string(describe_line(kafpy_broker, "ids").split("\t")[1][9:]) == topic_id


def test_delete_topics_by_id(kafpy_broker: KafpyBroker) -> None:
    admin = AdminClient({"bootstrap.servers": kafpy_broker.bootstrap})
    admin.create_topics([NewTopic("by-id", 1, 1), NewTopic("by-name", 1, 1)])["by-id"].result(30)
    topic_id = metadata_topic_id(kafpy_broker, "by-id")
    assert topic_id is not None and metadata_topic_id(kafpy_broker, "by-name") is not None
    unknown = random_uuid()

    answers = delete_topics(kafpy_broker, [
        {"name": None, "topic_id": topic_id},
        {"name": None, "topic_id": unknown},
        {"name": "by-name", "topic_id": topic_id},  # both: refused
    ])  # fmt: skip
    by_key = {(a["name"], a["topic_id"]): (a["error_code"], a["error_message"]) for a in answers}
    assert by_key[("by-id", topic_id)] == (Errors.NONE, None)
    assert by_key[(None, unknown)][0] == Errors.UNKNOWN_TOPIC_ID
    assert by_key[("by-name", topic_id)][0] == Errors.INVALID_REQUEST
    assert len(answers) == 3
    (gone,) = metadata(kafpy_broker, ["by-id"], 11)["topics"]
    assert gone["error_code"] == Errors.UNKNOWN_TOPIC_OR_PARTITION
    (kept,) = metadata(kafpy_broker, ["by-name"], 11)["topics"]
    assert kept["error_code"] == Errors.NONE  # the refused entry deleted nothing

    # a topic created again under the same name is another topic, with another id
    admin.create_topics([NewTopic("by-id", 1, 1)])["by-id"].result(30)
    again = metadata_topic_id(kafpy_broker, "by-id")
    assert again is not None and again != topic_id
    answers = delete_topics(kafpy_broker, [{"name": None, "topic_id": topic_id}])
    assert [a["error_code"] for a in answers] == [Errors.UNKNOWN_TOPIC_ID]
