"""ACLs through a real `kafpy server` with the AclAuthorizer: confluent-kafka's and
kafka-python's admin clients create, describe and delete ACLs; a principal (User:ANONYMOUS
on PLAINTEXT) without ACLs on a topic is refused it and does not see it in Metadata;
removing an ACL takes effect without a restart; denials reach the authorizer log.

The broker's own requests (controller to broker) come as User:ANONYMOUS too, so the ACLs
written before start-up give it ClusterAction (and Alter/Describe on the cluster, to manage
ACLs) and every operation on topics prefixed `mine-`; nothing else. super.users names
another principal and allow.everyone.if.no.acl.found is false.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaAdminClient
from kafka import errors as kafka_errors
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourcePatternFilter,
)
from kafka.admin import ResourceType as KpResourceType

from kafpy.common.kafka_uuid import uuid_from_string
from kafpy.metadata.embedded_store import EmbeddedStore
from kafpy.protocol.acl_operations import AclOperation as Op
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.security.authorizer import acl as kafpy_acl
from kafpy.security.authorizer.acl_authorizer import AclAuthorizer
from kafpy.testing.wait import wait_until
from tests.fixtures.broker import KafpyBroker
from tests.integration.test_forged_controller_requests import send

ANONYMOUS = "User:ANONYMOUS"


def initial_acls() -> list[kafpy_acl.AclBinding]:
    def binding(rtype: kafpy_acl.ResourceType, name: str, pattern: kafpy_acl.PatternType,
                op: Op) -> kafpy_acl.AclBinding:  # fmt: skip
        return kafpy_acl.AclBinding(
            kafpy_acl.ResourcePattern(rtype, name, pattern),
            kafpy_acl.AccessControlEntry(ANONYMOUS, "*", op, kafpy_acl.AclPermissionType.ALLOW),
        )

    cluster, topic = kafpy_acl.ResourceType.CLUSTER, kafpy_acl.ResourceType.TOPIC
    literal, prefixed = kafpy_acl.PatternType.LITERAL, kafpy_acl.PatternType.PREFIXED
    return [
        *(binding(cluster, "kafka-cluster", literal, op)
          for op in (Op.CLUSTER_ACTION, Op.ALTER, Op.DESCRIBE)),
        binding(topic, "mine-", prefixed, Op.ALL),
    ]  # fmt: skip


def write_acls(metadata_dir: Path, bindings: list[kafpy_acl.AclBinding]) -> None:
    """Store ACLs in a broker's embedded metadata store before it starts (as
    `kafpy acls --authorizer-properties` would)."""

    async def run() -> None:
        store = EmbeddedStore(metadata_dir)
        await store.start()
        authorizer = AclAuthorizer(store)
        await authorizer.start()
        assert await authorizer.create_acls(bindings) == [None] * len(bindings)
        await authorizer.close()
        await store.close()

    metadata_dir.mkdir(parents=True, exist_ok=True)
    asyncio.run(run())


def acl_filter(*args: Any) -> AclBindingFilter:
    """confluent-kafka's filter (its hints say str where None means any)."""
    return AclBindingFilter(*args)


@pytest.fixture(scope="module")
def secured_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafpyBroker]:
    broker = KafpyBroker(tmp_path_factory.mktemp("acl-broker"), {
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "allow.everyone.if.no.acl.found": "false",
        "super.users": "User:admin",
        "auto.create.topics.enable": "false",
    })  # fmt: skip
    write_acls(broker.log_dir, initial_acls())
    with pytest.MonkeyPatch.context() as env:
        env.setenv("LOG_DIR", str(broker.data_dir / "server-logs"))
        broker.start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def admin(secured_broker: KafpyBroker) -> AdminClient:
    return AdminClient({"bootstrap.servers": secured_broker.bootstrap})


def _produce(bootstrap: str, topic: str) -> KafkaError | None:
    errors: list[KafkaError | None] = []
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 10000})
    producer.produce(topic, b"v", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(15)
    assert errors, "no delivery report"
    return errors[0]


def test_create_describe_delete_acls_with_confluent_admin(admin: AdminClient) -> None:
    alice_read = AclBinding(ResourceType.TOPIC, "a", ResourcePatternType.LITERAL, "User:alice",
                            "*", AclOperation.READ, AclPermissionType.ALLOW)  # fmt: skip
    bob_prefixed = AclBinding(ResourceType.GROUP, "g-", ResourcePatternType.PREFIXED, "User:bob",
                              "10.0.0.1", AclOperation.READ, AclPermissionType.DENY)  # fmt: skip
    for future in admin.create_acls([alice_read, bob_prefixed]).values():
        assert future.result(30) is None
    described = admin.describe_acls(acl_filter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
        AclPermissionType.ANY)).result(30)  # fmt: skip
    assert alice_read in described and bob_prefixed in described
    matched = admin.describe_acls(acl_filter(
        ResourceType.GROUP, "g-1", ResourcePatternType.MATCH, None, None, AclOperation.ANY,
        AclPermissionType.ANY)).result(30)  # fmt: skip
    assert matched == [bob_prefixed]
    deleted = admin.delete_acls([acl_filter(
        ResourceType.ANY, None, ResourcePatternType.ANY, "User:alice", None, AclOperation.ANY,
        AclPermissionType.ANY)])  # fmt: skip
    assert [b for f in deleted.values() for b in f.result(30)] == [alice_read]
    remaining = admin.describe_acls(acl_filter(
        ResourceType.TOPIC, "a", ResourcePatternType.LITERAL, None, None, AclOperation.ANY,
        AclPermissionType.ANY)).result(30)  # fmt: skip
    assert remaining == []


def test_invalid_acl_is_refused_and_nothing_is_written(admin: AdminClient) -> None:
    write_on_group = AclBinding(ResourceType.GROUP, "g", ResourcePatternType.LITERAL,
                                "User:carol", "*", AclOperation.WRITE, AclPermissionType.ALLOW)  # fmt: skip
    [future] = admin.create_acls([write_on_group]).values()
    with pytest.raises(KafkaException) as raised:
        future.result(30)
    error = raised.value.args[0]
    assert error.code() == KafkaError.INVALID_REQUEST
    assert "Invalid operation Write for resource type Group" in error.str()
    found = admin.describe_acls(acl_filter(
        ResourceType.ANY, None, ResourcePatternType.ANY, "User:carol", None, AclOperation.ANY,
        AclPermissionType.ANY)).result(30)  # fmt: skip
    assert found == []


def test_kafka_python_admin_describes_and_creates_acls(secured_broker: KafpyBroker) -> None:

    client = KafkaAdminClient(bootstrap_servers=secured_broker.bootstrap)
    try:
        dave = ACL("User:dave", "*", ACLOperation.WRITE, ACLPermissionType.ALLOW,
                   ResourcePattern(KpResourceType.TOPIC, "kp", ACLResourcePatternType.LITERAL))  # fmt: skip
        result = client.create_acls([dave])
        assert result["failed"] == [] and len(result["succeeded"]) == 1
        acls, error = client.describe_acls(ACLFilter(
            "User:dave", None, ACLOperation.ANY, ACLPermissionType.ANY,
            ResourcePatternFilter(KpResourceType.ANY, None, ACLResourcePatternType.ANY)))  # fmt: skip
        assert error.errno == 0
        assert [(a.principal, a.operation, a.resource_pattern.resource_name) for a in acls] == [
            ("User:dave", ACLOperation.WRITE, "kp")
        ]
    finally:
        client.close()


def test_denied_topic_is_refused_hidden_and_logged(
    admin: AdminClient, secured_broker: KafpyBroker
) -> None:
    # CreateTopics: Create on the topic (no Create on the cluster)
    futures = admin.create_topics([NewTopic("mine-1", 1, 1), NewTopic("theirs-1", 1, 1)])
    futures["mine-1"].result(30)
    with pytest.raises(KafkaException) as raised:
        futures["theirs-1"].result(30)
    assert raised.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED

    # give Create on theirs-1 for a moment, create it, take the ACL away (no restart)
    create = AclBinding(ResourceType.TOPIC, "theirs-1", ResourcePatternType.LITERAL, ANONYMOUS,
                        "*", AclOperation.CREATE, AclPermissionType.ALLOW)  # fmt: skip
    for f in admin.create_acls([create]).values():
        f.result(30)
    admin.create_topics([NewTopic("theirs-1", 1, 1)])["theirs-1"].result(30)
    assert _produce(secured_broker.bootstrap, "theirs-1") is not None  # Create is not Write
    for f in admin.delete_acls([acl_filter(
        ResourceType.TOPIC, "theirs-1", ResourcePatternType.LITERAL, None, None,
        AclOperation.ANY, AclPermissionType.ANY)]).values():  # fmt: skip
        assert f.result(30) == [create]

    topics = admin.list_topics(timeout=30).topics
    assert "mine-1" in topics and "theirs-1" not in topics
    assert _produce(secured_broker.bootstrap, "mine-1") is None
    error = _produce(secured_broker.bootstrap, "theirs-1")
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED

    # the client learnt the refusal from Metadata; the broker logged it in kafka-authorizer.log
    authorizer_log = secured_broker.data_dir / "server-logs" / "kafka-authorizer.log"
    line = ("INFO Principal = User:ANONYMOUS is Denied Operation = Describe from host = 127.0.0.1 "
            "on resource = Topic:LITERAL:theirs-1 for request = Metadata with resourceRefCount = 1 "
            "(kafpy.authorizer.logger)")  # fmt: skip
    wait_until(lambda: line in _read(authorizer_log), 10, "the denial in the authorizer log")


def test_delete_topics_by_id_keeps_names_it_may_not_describe_hidden(
    admin: AdminClient, secured_broker: KafpyBroker
) -> None:
    """DeleteTopics v6 by topic id: the id is resolved, then the name authorized; a topic the
    principal may not describe is refused without its name (Kafka 2.8's answer)."""
    create = AclBinding(ResourceType.TOPIC, "theirs-del", ResourcePatternType.LITERAL, ANONYMOUS,
                        "*", AclOperation.CREATE, AclPermissionType.ALLOW)  # fmt: skip
    for f in admin.create_acls([create]).values():
        f.result(30)
    futures = admin.create_topics([NewTopic("theirs-del", 1, 1), NewTopic("mine-del", 1, 1)])
    for f in futures.values():
        f.result(30)
    for f in admin.delete_acls([acl_filter(
        ResourceType.TOPIC, "theirs-del", ResourcePatternType.LITERAL, None, None,
        AclOperation.ANY, AclPermissionType.ANY)]).values():  # fmt: skip
        assert f.result(30) == [create]

    def topic_id(topic: str) -> uuid.UUID:
        path = secured_broker.log_dir / f"{topic}-0" / "partition.metadata"
        wait_until(path.exists, 30, str(path))
        return uuid_from_string(path.read_text().split("topic_id: ")[1].strip())

    theirs, mine = topic_id("theirs-del"), topic_id("mine-del")
    answers = asyncio.run(send(secured_broker, ApiKey.DELETE_TOPICS, {
        "topics": [{"name": None, "topic_id": theirs}, {"name": None, "topic_id": mine}],
        "timeout_ms": 20000}, 6))["responses"]  # fmt: skip
    by_id = {a["topic_id"]: (a["name"], a["error_code"]) for a in answers}
    assert by_id == {theirs: (None, Errors.TOPIC_AUTHORIZATION_FAILED), mine: ("mine-del", 0)}
    assert (secured_broker.log_dir / "theirs-del-0").exists()


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def test_removing_an_acl_takes_effect_without_restart(
    admin: AdminClient, secured_broker: KafpyBroker
) -> None:
    admin.create_topics([NewTopic("mine-2", 1, 1)])["mine-2"].result(30)
    deny = AclBinding(ResourceType.TOPIC, "mine-2", ResourcePatternType.LITERAL, ANONYMOUS, "*",
                      AclOperation.WRITE, AclPermissionType.DENY)  # fmt: skip
    for f in admin.create_acls([deny]).values():
        f.result(30)
    error = _produce(secured_broker.bootstrap, "mine-2")
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    for f in admin.delete_acls([acl_filter(
        ResourceType.TOPIC, "mine-2", ResourcePatternType.LITERAL, ANONYMOUS, None,
        AclOperation.WRITE, AclPermissionType.DENY)]).values():  # fmt: skip
        assert f.result(30) == [deny]
    assert _produce(secured_broker.bootstrap, "mine-2") is None


def test_without_authorizer_acl_apis_answer_security_disabled(tmp_path: Path) -> None:
    broker = KafpyBroker(tmp_path / "open").start()
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        with pytest.raises(kafka_errors.SecurityDisabledError, match="No Authorizer is configured"):
            client.describe_acls(ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                ResourcePatternFilter(KpResourceType.ANY, None, ACLResourcePatternType.ANY)))  # fmt: skip
    finally:
        client.close()
        broker.stop()


def kafpy_acls(bootstrap: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "kafpy", "acls", "--bootstrap-server", bootstrap, *args],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_cli_producer_and_consumer_shortcuts(
    admin: AdminClient, secured_broker: KafpyBroker
) -> None:
    bootstrap = secured_broker.bootstrap
    out = kafpy_acls(bootstrap, "--add", "--producer", "--topic", "out-x",
                     "--allow-principal", ANONYMOUS)  # fmt: skip
    assert "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=out-x, " \
           "patternType=LITERAL)`: \n" in out  # fmt: skip
    assert "\t(principal=User:ANONYMOUS, host=*, operation=WRITE, permissionType=ALLOW)" in out
    admin.create_topics([NewTopic("out-x", 1, 1)])["out-x"].result(
        30
    )  # Create came with --producer
    assert _produce(bootstrap, "out-x") is None

    kafpy_acls(bootstrap, "--add", "--consumer", "--topic", "out-x", "--group", "cg",
               "--allow-principal", ANONYMOUS)  # fmt: skip
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "cg",
                         "auto.offset.reset": "earliest"})  # fmt: skip
    try:
        consumer.subscribe(["out-x"])

        def first_message() -> list[Any]:
            message = consumer.poll(0.5)
            if message is not None and message.error() is not None:
                pytest.fail(f"consumer error: {message.error()}")
            # in a list: a message is as false as its value is empty
            return [] if message is None else [message]

        (message,) = wait_until(first_message, 30, "a message from out-x", interval_s=0)
        assert message is not None and message.value() == b"v"
    finally:
        consumer.close()

    kafpy_acls(bootstrap, "--remove", "--force", "--topic", "out-x")
    listed = kafpy_acls(bootstrap, "--list", "--topic", "out-x")
    assert listed == ""
    error = _produce(bootstrap, "out-x")
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_bad_creations_through_kafpys_client_are_refused_with_a_sentence(
    secured_broker: KafpyBroker,
) -> None:
    from kafpy.client.kafka_client import KafkaClient
    from kafpy.protocol.api_keys import ApiKey

    def creation(principal: str, operation: int, pattern_type: int) -> dict[str, object]:
        return {"resource_type": 2, "resource_name": "bad", "resource_pattern_type": pattern_type,
                "principal": principal, "host": "*", "operation": operation, "permission_type": 3}  # fmt: skip

    async def go() -> tuple[dict[str, object], dict[str, object]]:
        client = KafkaClient(secured_broker.bootstrap)
        await client.start()
        try:
            created = await client.send_to_any(ApiKey.CREATE_ACLS, {"creations": [
                creation("alice", 3, 3),  # malformed principal
                creation("User:alice", 99, 3),  # unknown operation
                creation("User:alice", 3, 2),  # MATCH is a filter, not a pattern
                creation("User:alice", 9, 3),  # ClusterAction is not a topic operation
            ]})  # fmt: skip
            described = await client.send_to_any(ApiKey.DESCRIBE_ACLS, {
                "resource_type_filter": 2, "resource_name_filter": "bad", "pattern_type_filter": 1,
                "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1})  # fmt: skip
            return created, described
        finally:
            await client.close()

    created, described = asyncio.run(go())
    results = created["results"]
    assert isinstance(results, list)
    assert [r["error_code"] for r in results] == [42, 42, 42, 42]  # INVALID_REQUEST
    messages = [r["error_message"] for r in results]
    assert (
        messages[0]
        == "Invalid principal 'alice': expected the form 'User:name' (type, colon, name)"
    )
    assert messages[1] == "Unknown operation code 99."
    assert messages[2].startswith("Invalid pattern type MATCH")
    assert messages[3].startswith("Invalid operation ClusterAction for resource type Topic")
    assert described["resources"] == []
