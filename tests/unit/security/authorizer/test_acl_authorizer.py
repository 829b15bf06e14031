"""AclAuthorizer: matching (literal, prefixed, wildcard, deny precedence, implied
operations, hosts, super users), the ZooKeeper nodes it writes, change notifications
between two authorizers over one store, and the authorizer log lines."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from kafpy.metadata.embedded_store import EmbeddedStore
from kafpy.metadata.zookeeper_store import ZooKeeperStore
from kafpy.protocol.acl_operations import AclOperation
from kafpy.security.authorizer.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafpy.security.authorizer.acl_authorizer import AclAuthorizer, parse_super_users
from kafpy.security.kafka_principal import KafkaPrincipal
from kafpy.testing.wait import async_wait_until
from tests.fixtures.zookeeper import expire_session

Op = AclOperation
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALICE = KafkaPrincipal("User", "alice")
BOB = KafkaPrincipal("User", "bob")
HOST = "127.0.0.1"


def acl(
    name: str,
    principal: str = "User:alice",
    op: AclOperation = Op.READ,
    permission: AclPermissionType = ALLOW,
    rtype: ResourceType = TOPIC,
    pattern: PatternType = LITERAL,
    host: str = "*",
) -> AclBinding:
    return AclBinding(
        ResourcePattern(rtype, name, pattern), AccessControlEntry(principal, host, op, permission)
    )


@pytest_asyncio.fixture
async def store(tmp_path: Path) -> AsyncIterator[EmbeddedStore]:
    s = EmbeddedStore(tmp_path)
    await s.start()
    yield s
    await s.close()


@pytest_asyncio.fixture
async def authorizer(store: EmbeddedStore) -> AsyncIterator[AclAuthorizer]:
    a = AclAuthorizer(store)
    await a.start()
    yield a
    await a.close()


@pytest.mark.asyncio
async def test_literal_acl_allows_only_its_topic_operation_and_principal(
    authorizer: AclAuthorizer,
) -> None:
    assert await authorizer.create_acls([acl("a")]) == [None]
    assert authorizer.authorize(ALICE, HOST, Op.READ, TOPIC, "a")
    assert not authorizer.authorize(ALICE, HOST, Op.WRITE, TOPIC, "a")
    assert not authorizer.authorize(BOB, HOST, Op.READ, TOPIC, "a")
    # no ACL on b, allow.everyone.if.no.acl.found=false
    assert not authorizer.authorize(ALICE, HOST, Op.READ, TOPIC, "b")


@pytest.mark.asyncio
async def test_no_acl_found_follows_allow_everyone(store: EmbeddedStore) -> None:
    open_authorizer = AclAuthorizer(store, allow_everyone_if_no_acl_found=True)
    await open_authorizer.start()
    assert open_authorizer.authorize(BOB, HOST, Op.WRITE, TOPIC, "free")
    await open_authorizer.create_acls([acl("free")])
    # once an ACL names the resource, only ACLs decide
    assert not open_authorizer.authorize(BOB, HOST, Op.WRITE, TOPIC, "free")
    await open_authorizer.close()


@pytest.mark.asyncio
async def test_prefixed_and_wildcard_patterns(authorizer: AclAuthorizer) -> None:
    await authorizer.create_acls([
        acl("pay", pattern=PREFIXED), acl("*", principal="User:bob", op=Op.WRITE),
    ])  # fmt: skip
    assert authorizer.authorize(ALICE, HOST, Op.READ, TOPIC, "payments")
    assert authorizer.authorize(ALICE, HOST, Op.READ, TOPIC, "pay")
    assert not authorizer.authorize(ALICE, HOST, Op.READ, TOPIC, "pa")
    assert not authorizer.authorize(ALICE, HOST, Op.READ, TOPIC, "orders")
    assert authorizer.authorize(BOB, HOST, Op.WRITE, TOPIC, "orders")
    assert authorizer.authorize(BOB, HOST, Op.WRITE, TOPIC, "payments")
    assert not authorizer.authorize(BOB, HOST, Op.WRITE, GROUP, "orders")


@pytest.mark.asyncio
async def test_deny_wins_over_allow(authorizer: AclAuthorizer) -> None:
    await authorizer.create_acls([
        acl("*", principal="User:*", op=Op.ALL),
        acl("secret", pattern=PREFIXED, principal="User:bob", op=Op.READ, permission=DENY),
    ])  # fmt: skip
    assert authorizer.authorize(BOB, HOST, Op.READ, TOPIC, "public")
    assert not authorizer.authorize(BOB, HOST, Op.READ, TOPIC, "secret-plans")
    assert authorizer.authorize(BOB, HOST, Op.WRITE, TOPIC, "secret-plans")
    assert authorizer.authorize(ALICE, HOST, Op.READ, TOPIC, "secret-plans")


@pytest.mark.asyncio
async def test_implied_operations(authorizer: AclAuthorizer) -> None:
    await authorizer.create_acls([
        acl("r", op=Op.READ), acl("w", op=Op.WRITE), acl("d", op=Op.DELETE), acl("al", op=Op.ALTER),
        acl("ac", op=Op.ALTER_CONFIGS), acl("all", op=Op.ALL),
    ])  # fmt: skip
    for topic in ("r", "w", "d", "al", "all"):
        assert authorizer.authorize(ALICE, HOST, Op.DESCRIBE, TOPIC, topic), topic
    assert not authorizer.authorize(ALICE, HOST, Op.DESCRIBE, TOPIC, "ac")
    assert authorizer.authorize(ALICE, HOST, Op.DESCRIBE_CONFIGS, TOPIC, "ac")
    assert not authorizer.authorize(ALICE, HOST, Op.WRITE, TOPIC, "r")
    assert authorizer.authorize(ALICE, HOST, Op.DELETE, TOPIC, "all")
    assert authorizer.authorized_operations(ALICE, HOST, TOPIC, "r") == {Op.READ, Op.DESCRIBE}


@pytest.mark.asyncio
async def test_deny_describe_is_not_implied_by_deny_read(authorizer: AclAuthorizer) -> None:
    await authorizer.create_acls([
        acl("t", op=Op.ALL), acl("t", op=Op.READ, permission=DENY),
    ])  # fmt: skip
    assert not authorizer.authorize(ALICE, HOST, Op.READ, TOPIC, "t")
    assert authorizer.authorize(ALICE, HOST, Op.DESCRIBE, TOPIC, "t")


@pytest.mark.asyncio
async def test_host_matching(authorizer: AclAuthorizer) -> None:
    await authorizer.create_acls([acl("t", host="10.0.0.1")])
    assert authorizer.authorize(ALICE, "10.0.0.1", Op.READ, TOPIC, "t")
    assert not authorizer.authorize(ALICE, HOST, Op.READ, TOPIC, "t")


@pytest.mark.asyncio
async def test_super_users_are_allowed_everything(store: EmbeddedStore) -> None:
    supers = parse_super_users("User:admin; User:broker")
    assert supers == {KafkaPrincipal("User", "admin"), KafkaPrincipal("User", "broker")}
    authorizer = AclAuthorizer(store, supers)
    await authorizer.start()
    await authorizer.create_acls([acl("kafka-cluster", principal="User:admin",
                                      op=Op.ALTER, permission=DENY, rtype=CLUSTER)])  # fmt: skip
    admin = KafkaPrincipal("User", "admin")
    assert authorizer.authorize(admin, HOST, Op.ALTER, CLUSTER, "kafka-cluster")
    assert authorizer.authorize(admin, HOST, Op.CLUSTER_ACTION, CLUSTER, "kafka-cluster")
    assert not authorizer.authorize(ALICE, HOST, Op.CLUSTER_ACTION, CLUSTER, "kafka-cluster")
    await authorizer.close()


def test_malformed_super_users_are_refused() -> None:
    with pytest.raises(ValueError, match="super.users: Invalid principal 'alice'"):
        parse_super_users("User:admin;alice")


@pytest.mark.asyncio
async def test_acls_are_stored_as_kafka_stores_them(
    store: EmbeddedStore, authorizer: AclAuthorizer
) -> None:
    await authorizer.create_acls([acl("a"), acl("pay", pattern=PREFIXED, op=Op.WRITE)])
    data, _ = await store.get("/kafka-acl/Topic/a")
    assert data == (
        b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",'
        b'"operation":"Read","host":"*"}]}'
    )
    data, _ = await store.get("/kafka-acl-extended/prefixed/Topic/pay")
    assert b'"operation":"Write"' in data
    literal = await store.get_children("/kafka-acl-changes")
    assert literal == ["acl_changes_0000000000"]
    data, _ = await store.get("/kafka-acl-changes/acl_changes_0000000000")
    assert data == b"TOPIC:a"
    data, _ = await store.get("/kafka-acl-extended-changes/acl_changes_0000000000")
    assert data == b'{"version":1,"resourceType":"TOPIC","name":"pay","patternType":"PREFIXED"}'


@pytest.mark.asyncio
async def test_invalid_acls_are_refused_and_nothing_is_written(
    store: EmbeddedStore, authorizer: AclAuthorizer
) -> None:
    errors = await authorizer.create_acls([
        acl("g", op=Op.WRITE, rtype=GROUP),  # Write is not a group operation
        acl("t", principal="alice"),  # malformed principal
        acl("t", pattern=PatternType.MATCH),  # not a storable pattern type
        acl("other-cluster", rtype=CLUSTER, op=Op.ALTER),
    ])  # fmt: skip
    assert [str(e) for e in errors] == [
        "Invalid operation Write for resource type Group: it supports All, Delete, Describe, Read.",
        "Invalid principal 'alice': expected the form 'User:name' (type, colon, name)",
        "Invalid pattern type MATCH in ResourcePattern(resourceType=TOPIC, name=t, "
        "patternType=MATCH): an ACL's resource pattern is LITERAL or PREFIXED (ANY and MATCH only "
        "filter).",
        "Invalid resource pattern ResourcePattern(resourceType=CLUSTER, name=other-cluster, "
        "patternType=LITERAL): the cluster resource is named 'kafka-cluster'.",
    ]
    assert await store.get_children_or_empty("/kafka-acl") == []
    assert authorizer.acls() == []


@pytest.mark.asyncio
async def test_delete_and_describe_with_filters(authorizer: AclAuthorizer) -> None:
    await authorizer.create_acls([
        acl("a"), acl("a", principal="User:bob", op=Op.WRITE), acl("ab", pattern=PREFIXED),
    ])  # fmt: skip
    match = AclBindingFilter(TOPIC, "abc", PatternType.MATCH)
    assert {b.pattern.name for b in authorizer.acls(match)} == {"ab"}
    assert len(authorizer.acls(AclBindingFilter(TOPIC, "a", PatternType.ANY))) == 2
    [result] = await authorizer.delete_acls([AclBindingFilter(principal="User:bob")])
    assert [str(b.entry.principal) for b in result.deleted] == ["User:bob"]
    assert not authorizer.authorize(BOB, HOST, Op.WRITE, TOPIC, "a")
    [result] = await authorizer.delete_acls([AclBindingFilter(TOPIC, "a", LITERAL)])
    assert len(result.deleted) == 1
    assert authorizer.store is not None
    assert await authorizer.store.exists("/kafka-acl/Topic/a") is None


@pytest.mark.asyncio
async def test_a_change_reaches_another_authorizer_through_the_notification(
    store: EmbeddedStore, authorizer: AclAuthorizer
) -> None:
    other = AclAuthorizer(store)
    await other.start()
    try:
        await authorizer.create_acls([acl("a")])
        await async_wait_until(
            lambda: other.authorize(ALICE, HOST, Op.READ, TOPIC, "a"), 10.0, interval_s=0.01
        )
        await authorizer.delete_acls([AclBindingFilter(TOPIC, "a", LITERAL)])
        await async_wait_until(
            lambda: not other.authorize(ALICE, HOST, Op.READ, TOPIC, "a"), 10.0, interval_s=0.01
        )
        # and one started later loads what is stored
        await authorizer.create_acls([acl("p", pattern=PREFIXED)])
        late = AclAuthorizer(store)
        await late.start()
        assert late.authorize(ALICE, HOST, Op.READ, TOPIC, "p1")
        await late.close()
    finally:
        await other.close()


@pytest.mark.asyncio
async def test_acl_changes_still_arrive_after_a_zookeeper_session_expired(
    zookeeper_connect: str,
) -> None:
    admin_store = ZooKeeperStore(zookeeper_connect)
    broker_store = ZooKeeperStore(zookeeper_connect, session_timeout_ms=4000)
    await admin_store.start()
    await broker_store.start()
    admin, broker = AclAuthorizer(admin_store), AclAuthorizer(broker_store)
    await admin.start()
    await broker.start()
    new_session = asyncio.Event()
    broker_store.on_session_expired(new_session.set)
    try:
        await admin.create_acls([acl("a")])
        await async_wait_until(
            lambda: broker.authorize(ALICE, HOST, Op.READ, TOPIC, "a"), 10.0, interval_s=0.01
        )
        await expire_session(broker_store, zookeeper_connect)
        await asyncio.wait_for(new_session.wait(), 20)
        await admin.delete_acls([AclBindingFilter(TOPIC, "a", LITERAL)])
        await async_wait_until(
            lambda: not broker.authorize(ALICE, HOST, Op.READ, TOPIC, "a"), 20, interval_s=0.01
        )
    finally:
        await broker.close()
        await admin.close()
        await broker_store.close()
        await admin_store.close()


@pytest.mark.asyncio
async def test_decisions_are_logged_as_kafka_logs_them(
    authorizer: AclAuthorizer, caplog: pytest.LogCaptureFixture
) -> None:
    await authorizer.create_acls([acl("a")])
    with caplog.at_level(logging.DEBUG, logger="kafpy.authorizer.logger"):
        authorizer.authorize(ALICE, HOST, Op.WRITE, TOPIC, "a", "Produce")
        authorizer.authorize(ALICE, HOST, Op.READ, TOPIC, "a", "Fetch", 2)
    lines = [
        (r.levelname, r.getMessage()) for r in caplog.records if r.name == "kafpy.authorizer.logger"
    ]
    assert lines == [
        ("INFO", "Principal = User:alice is Denied Operation = Write from host = 127.0.0.1 on "
                 "resource = Topic:LITERAL:a for request = Produce with resourceRefCount = 1"),
        ("DEBUG", "Principal = User:alice is Allowed Operation = Read from host = 127.0.0.1 on "
                  "resource = Topic:LITERAL:a for request = Fetch with resourceRefCount = 2"),
    ]  # fmt: skip
