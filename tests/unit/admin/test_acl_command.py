"""AclCommand: kafka-acls.sh's options turned into ACLs (--producer, --consumer,
--idempotent, hosts, pattern types), its usage errors, and its output lines, run against
the AclAuthorizer over a real embedded store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from kafpy.admin.acl_command import (
    AclCommandError,
    AclCommandOptions,
    AuthorizerAclService,
    run_acl_command,
)
from kafpy.metadata.embedded_store import EmbeddedStore
from kafpy.protocol.acl_operations import AclOperation as Op
from kafpy.security.authorizer.acl import ResourceType
from kafpy.security.authorizer.acl_authorizer import AclAuthorizer
from kafpy.security.kafka_principal import KafkaPrincipal

ALICE = KafkaPrincipal("User", "alice")


@pytest_asyncio.fixture
async def authorizer(tmp_path: Path) -> AsyncIterator[AclAuthorizer]:
    store = EmbeddedStore(tmp_path)
    await store.start()
    a = AclAuthorizer(store)
    await a.start()
    yield a
    await a.close()
    await store.close()


async def run(authorizer: AclAuthorizer, **options: object) -> list[str]:
    opts = AclCommandOptions(**options)  # type: ignore[arg-type]
    opts.check_args()
    lines: list[str] = []
    await run_acl_command(AuthorizerAclService(authorizer), opts, lines.append)
    return lines


@pytest.mark.asyncio
async def test_add_prints_kafkas_lines(authorizer: AclAuthorizer) -> None:
    lines = await run(authorizer, add=True, topics=["t"], allow_principals=["User:alice"],
                      operations=["Read", "Describe"])  # fmt: skip
    pattern = "ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)"
    entries = (
        " \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n"
        "\t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW) \n"
    )
    assert lines == [
        f"Adding ACLs for resource `{pattern}`: \n{entries}",
        f"Current ACLs for resource `{pattern}`: \n{entries}",
    ]
    assert authorizer.authorize(ALICE, "1.2.3.4", Op.READ, ResourceType.TOPIC, "t")


@pytest.mark.asyncio
async def test_producer_shortcut(authorizer: AclAuthorizer) -> None:
    await run(authorizer, add=True, producer=True, idempotent=True, topics=["out-"],
              transactional_ids=["tx"], resource_pattern_type="prefixed",
              allow_principals=["User:alice"])  # fmt: skip
    for op in (Op.WRITE, Op.DESCRIBE, Op.CREATE):
        assert authorizer.authorize(ALICE, "h", op, ResourceType.TOPIC, "out-1")
    assert not authorizer.authorize(ALICE, "h", Op.READ, ResourceType.TOPIC, "out-1")
    assert authorizer.authorize(ALICE, "h", Op.WRITE, ResourceType.TRANSACTIONAL_ID, "tx-9")
    assert authorizer.authorize(
        ALICE, "h", Op.IDEMPOTENT_WRITE, ResourceType.CLUSTER, "kafka-cluster"
    )


@pytest.mark.asyncio
async def test_consumer_shortcut_and_remove(authorizer: AclAuthorizer) -> None:
    await run(authorizer, add=True, consumer=True, topics=["in"], groups=["g"],
              allow_principals=["User:alice"], allow_hosts=["10.0.0.1"])  # fmt: skip
    assert authorizer.authorize(ALICE, "10.0.0.1", Op.READ, ResourceType.TOPIC, "in")
    assert authorizer.authorize(ALICE, "10.0.0.1", Op.READ, ResourceType.GROUP, "g")
    assert not authorizer.authorize(ALICE, "10.0.0.2", Op.READ, ResourceType.TOPIC, "in")
    assert not authorizer.authorize(ALICE, "10.0.0.1", Op.WRITE, ResourceType.TOPIC, "in")
    await run(authorizer, remove=True, force=True, topics=["in"])
    assert not authorizer.authorize(ALICE, "10.0.0.1", Op.READ, ResourceType.TOPIC, "in")
    assert authorizer.authorize(ALICE, "10.0.0.1", Op.READ, ResourceType.GROUP, "g")


@pytest.mark.asyncio
async def test_list_by_principal(authorizer: AclAuthorizer) -> None:
    await run(authorizer, add=True, topics=["t"], allow_principals=["User:alice", "User:bob"],
              operations=["Write"])  # fmt: skip
    lines = await run(authorizer, list_acls=True, principals=["User:bob"])
    assert lines == [
        "ACLs for principal `User:bob`",
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`:"
        " \n \t(principal=User:bob, host=*, operation=WRITE, permissionType=ALLOW) \n",
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"add": True, "list_acls": True}, "Command must include exactly one action: --list, --add, --remove. "),
        ({"add": True, "producer": True}, "With --producer you must specify a --topic"),
        ({"add": True, "topics": ["t"], "idempotent": True}, "The --idempotent option is only available if --producer is set"),
        ({"add": True, "consumer": True, "topics": ["t"]}, "With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id option should be specified."),
        ({"add": True, "topics": ["t"]}, "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."),
        ({"add": True, "allow_principals": ["User:a"]}, "You must provide at least one resource: --topic <topic> or --cluster or --group <group> or --delegation-token <Delegation Token ID>"),
        ({"add": True, "topics": ["t"], "allow_principals": ["alice"]}, "Invalid principal 'alice': expected the form 'User:name' (type, colon, name)"),
        ({"add": True, "topics": ["t"], "allow_principals": ["User:a"], "operations": ["Fly"]}, "Unknown operation 'Fly': expected one of All, Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, TwoPhaseCommit."),
        ({"add": True, "groups": ["g"], "allow_principals": ["User:a"], "operations": ["Write"]}, "ResourceType GROUP only supports operations ALL,READ,DELETE,DESCRIBE"),
        ({"add": True, "topics": ["t"], "allow_principals": ["User:a"], "resource_pattern_type": "match"}, "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls."),
        ({"list_acls": True, "resource_pattern_type": "fuzzy"}, "Unknown resource-pattern-type: fuzzy"),
    ],
)  # fmt: skip
def test_usage_errors_are_kafkas(options: dict[str, object], message: str) -> None:
    with pytest.raises(AclCommandError) as raised:
        AclCommandOptions(**options).check_args()  # type: ignore[arg-type]
    assert str(raised.value) == message


@pytest.mark.asyncio
async def test_two_phase_commit_is_named_on_a_transactional_id(authorizer: AclAuthorizer) -> None:
    lines = await run(authorizer, add=True, transactional_ids=["sink"], allow_principals=["User:alice"],
                      operations=["TwoPhaseCommit"])  # fmt: skip
    assert "operation=TWO_PHASE_COMMIT, permissionType=ALLOW" in lines[0]
    assert authorizer.authorize(
        ALICE, "h", Op.TWO_PHASE_COMMIT, ResourceType.TRANSACTIONAL_ID, "sink"
    )
    assert not authorizer.authorize(ALICE, "h", Op.WRITE, ResourceType.TRANSACTIONAL_ID, "sink")
    with pytest.raises(AclCommandError, match="ResourceType TOPIC only supports operations"):
        await run(authorizer, add=True, topics=["t"], allow_principals=["User:alice"],
                  operations=["two-phase-commit"])  # fmt: skip
