"""AuthHelper's guards with a real AclAuthorizer (embedded store): what reaches the API's
handler and what is answered for the refused part, as Kafka 2.8 answers it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from kafpy.metadata.embedded_store import EmbeddedStore
from kafpy.network.request_channel import CloseConnection, Request
from kafpy.protocol.acl_operations import AclOperation as Op
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.protocol.headers import RequestHeader
from kafpy.records.record_batch import PRODUCER_ID_OFFSET, RECORD_BATCH_OVERHEAD
from kafpy.security.authorizer.acl import (
    AccessControlEntry,
    AclBinding,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafpy.security.authorizer.acl_authorizer import AclAuthorizer
from kafpy.security.kafka_principal import KafkaPrincipal
from kafpy.server.auth_helper import AuthHelper

pytestmark = pytest.mark.asyncio
ALICE = KafkaPrincipal("User", "alice")


def allow(rtype: ResourceType, name: str, op: Op) -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, PatternType.LITERAL),
                      AccessControlEntry("User:alice", "*", op, AclPermissionType.ALLOW))  # fmt: skip


@pytest_asyncio.fixture
async def auth(tmp_path: Path) -> AsyncIterator[AuthHelper]:
    store = EmbeddedStore(tmp_path)
    await store.start()
    authorizer = AclAuthorizer(store)
    await authorizer.start()
    await authorizer.create_acls([
        allow(ResourceType.TOPIC, "a", Op.READ), allow(ResourceType.TOPIC, "a", Op.WRITE),
        allow(ResourceType.GROUP, "g", Op.DESCRIBE), allow(ResourceType.TOPIC, "a", Op.DESCRIBE_CONFIGS),
    ])  # fmt: skip
    yield AuthHelper(authorizer)
    await authorizer.close()
    await store.close()


def request(api_key: ApiKey, body: dict[str, Any], version: int = 1) -> Request:
    return Request(RequestHeader(api_key, version, 1, "test"), body, memoryview(b""), 0, 0,
                   "conn-0", ("127.0.0.1", 1), "PLAINTEXT", principal=ALICE)  # fmt: skip


class Recorder:
    """The API's handler: records the body it got, answers `answer(body)`."""

    def __init__(self, answer: Any) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.answer = answer

    async def __call__(self, r: Request) -> Any:
        assert r.body is not None
        self.bodies.append(r.body)
        return self.answer(r.body)


def fetch_body(replica_id: int) -> dict[str, Any]:
    return {"replica_id": replica_id, "topics": [
        {"topic": t, "partitions": [{"partition": 0}]} for t in ("a", "b")]}  # fmt: skip


async def test_consumer_fetch_is_filtered_by_read(auth: AuthHelper) -> None:
    inner = Recorder(
        lambda b: {"responses": [{"topic": t["topic"], "partitions": []} for t in b["topics"]]}
    )
    response = await auth.guard(ApiKey.FETCH, inner)(request(ApiKey.FETCH, fetch_body(-1)))
    assert [t["topic"] for t in inner.bodies[0]["topics"]] == ["a"]
    refused = response["responses"][1]
    assert refused["topic"] == "b"
    assert refused["partitions"][0]["error_code"] == Errors.TOPIC_AUTHORIZATION_FAILED


async def test_follower_fetch_needs_cluster_action(auth: AuthHelper) -> None:
    inner = Recorder(lambda b: {"responses": []})
    response = await auth.guard(ApiKey.FETCH, inner)(request(ApiKey.FETCH, fetch_body(1)))
    assert inner.bodies[0]["topics"] == []
    assert {p["error_code"] for t in response["responses"] for p in t["partitions"]} == {
        Errors.TOPIC_AUTHORIZATION_FAILED
    }


async def test_inter_broker_requests_need_cluster_action(auth: AuthHelper) -> None:
    inner = Recorder(lambda b: {"error_code": 0})
    body = {"controller_id": 0, "topic_states": [
        {"topic_name": "a", "partition_states": [{"partition_index": 0}]}]}  # fmt: skip
    response = await auth.guard(ApiKey.LEADER_AND_ISR, inner)(request(ApiKey.LEADER_AND_ISR, body))
    assert inner.bodies == []
    assert response["error_code"] == Errors.CLUSTER_AUTHORIZATION_FAILED
    assert response["partition_errors"] == [
        {"topic_name": "a", "partition_index": 0, "error_code": Errors.CLUSTER_AUTHORIZATION_FAILED}
    ]


def batch(producer_id: int) -> bytes:
    data = bytearray(RECORD_BATCH_OVERHEAD)
    data[PRODUCER_ID_OFFSET : PRODUCER_ID_OFFSET + 8] = producer_id.to_bytes(8, "big", signed=True)
    return bytes(data)


@pytest.mark.parametrize(
    ("transactional_id", "producer_id", "error"),
    [
        (None, 7, Errors.CLUSTER_AUTHORIZATION_FAILED),  # idempotent: IdempotentWrite on cluster
        ("tx", 7, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
        (None, -1, Errors.NONE),  # plain Write on a
    ],
)
async def test_produce(
    auth: AuthHelper, transactional_id: str | None, producer_id: int, error: int
) -> None:
    body = {"transactional_id": transactional_id, "acks": 1, "topic_data": [
        {"name": "a", "partition_data": [{"index": 0, "records": batch(producer_id)}]}]}  # fmt: skip
    inner = Recorder(lambda b: {"responses": [
        {"name": t["name"], "partition_responses": [{"index": 0, "error_code": 0}]}
        for t in b["topic_data"]]})  # fmt: skip
    response = await auth.guard(ApiKey.PRODUCE, inner)(request(ApiKey.PRODUCE, body, 8))
    assert response["responses"][0]["partition_responses"][0]["error_code"] == error


async def test_describe_groups_and_list_groups(auth: AuthHelper) -> None:
    inner = Recorder(lambda b: {"groups": [{"group_id": g, "error_code": 0} for g in b["groups"]]})
    response = await auth.guard(ApiKey.DESCRIBE_GROUPS, inner)(
        request(ApiKey.DESCRIBE_GROUPS, {"groups": ["g", "h"]}))  # fmt: skip
    assert inner.bodies[0]["groups"] == ["g"]
    assert [(g["group_id"], g["error_code"]) for g in response["groups"]] == [
        ("g", 0), ("h", Errors.GROUP_AUTHORIZATION_FAILED)]  # fmt: skip
    listing = Recorder(
        lambda b: {"error_code": 0, "groups": [{"group_id": "g"}, {"group_id": "h"}]}
    )
    response = await auth.guard(ApiKey.LIST_GROUPS, listing)(request(ApiKey.LIST_GROUPS, {}))
    assert [g["group_id"] for g in response["groups"]] == ["g"]


async def test_describe_configs_per_resource(auth: AuthHelper) -> None:
    body = {"resources": [{"resource_type": 2, "resource_name": "a"},
                          {"resource_type": 2, "resource_name": "b"},
                          {"resource_type": 4, "resource_name": "0"}]}  # fmt: skip
    inner = Recorder(lambda b: {"results": [{"resource_name": r["resource_name"], "error_code": 0}
                                            for r in b["resources"]]})  # fmt: skip
    response = await auth.guard(ApiKey.DESCRIBE_CONFIGS, inner)(
        request(ApiKey.DESCRIBE_CONFIGS, body)
    )
    assert [r["resource_name"] for r in inner.bodies[0]["resources"]] == ["a"]
    assert {r["resource_name"]: r["error_code"] for r in response["results"]} == {
        "a": 0, "b": Errors.TOPIC_AUTHORIZATION_FAILED, "0": Errors.CLUSTER_AUTHORIZATION_FAILED}  # fmt: skip


async def test_metadata_filters_and_reports_real_operations(auth: AuthHelper) -> None:
    def answer(b: dict[str, Any]) -> dict[str, Any]:
        names = ["a", "b"] if b.get("topics") is None else [t["name"] for t in b["topics"]]
        return {"topics": [{"name": n, "error_code": 0} for n in names],
                "cluster_authorized_operations": -2147483648}  # fmt: skip

    guard = auth.guard(ApiKey.METADATA, Recorder(answer))
    everything = await guard(request(ApiKey.METADATA, {"topics": None,
                                                       "include_topic_authorized_operations": True}, 8))  # fmt: skip
    [entry] = everything["topics"]
    assert entry["name"] == "a"
    assert entry["topic_authorized_operations"] == sum(
        1 << op for op in (Op.READ, Op.WRITE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS)
    )
    named = await guard(request(ApiKey.METADATA, {"topics": [{"name": "b"}],
                                                  "allow_auto_topic_creation": False}, 8))  # fmt: skip
    assert [(t["name"], t["error_code"]) for t in named["topics"]] == [
        ("b", Errors.TOPIC_AUTHORIZATION_FAILED)
    ]


async def test_without_authorizer_the_handler_is_unchanged() -> None:
    inner = Recorder(lambda b: {})
    assert AuthHelper(None).guard(ApiKey.PRODUCE, inner) is inner


async def test_refused_acks_0_produce_closes_the_connection(auth: AuthHelper) -> None:
    body = {"transactional_id": None, "acks": 0, "topic_data": [
        {"name": "b", "partition_data": [{"index": 0, "records": batch(-1)}]}]}  # fmt: skip
    inner = Recorder(lambda b: None)
    with pytest.raises(CloseConnection, match=r"TOPIC_AUTHORIZATION_FAILED for topics \['b'\]"):
        await auth.guard(ApiKey.PRODUCE, inner)(request(ApiKey.PRODUCE, body, 8))
    assert inner.bodies == []


async def test_transaction_apis_check_the_transactional_id_group_and_topics(
    auth: AuthHelper,
) -> None:
    inner = Recorder(lambda b: {"throttle_time_ms": 0, "error_code": 0})
    end = auth.guard(ApiKey.END_TXN, inner)
    body = {"transactional_id": "t1", "producer_id": 1, "producer_epoch": 0, "committed": True}
    assert (await end(request(ApiKey.END_TXN, body)))["error_code"] == (
        Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    )
    await auth.authorizer.create_acls([allow(ResourceType.TRANSACTIONAL_ID, "t1", Op.WRITE)])  # type: ignore[union-attr]
    assert (await end(request(ApiKey.END_TXN, body)))["error_code"] == 0 and inner.bodies
    add = auth.guard(ApiKey.ADD_PARTITIONS_TO_TXN, Recorder(lambda b: {}))
    answer = await add(request(ApiKey.ADD_PARTITIONS_TO_TXN, {
        "v3_and_below_transactional_id": "t1", "v3_and_below_producer_id": 1,
        "v3_and_below_producer_epoch": 0,
        "v3_and_below_topics": [{"name": "a", "partitions": [0]}, {"name": "b", "partitions": [1]}]}))  # fmt: skip
    codes = {t["name"]: t["results_by_partition"][0]["partition_error_code"]
             for t in answer["results_by_topic_v3_and_below"]}  # fmt: skip
    assert codes == {"a": Errors.OPERATION_NOT_ATTEMPTED, "b": Errors.TOPIC_AUTHORIZATION_FAILED}
    offsets = auth.guard(ApiKey.ADD_OFFSETS_TO_TXN, Recorder(lambda b: {}))
    answer = await offsets(request(ApiKey.ADD_OFFSETS_TO_TXN, {
        "transactional_id": "t1", "producer_id": 1, "producer_epoch": 0, "group_id": "other"}))  # fmt: skip
    assert answer["error_code"] == Errors.GROUP_AUTHORIZATION_FAILED


async def test_inter_broker_quota_and_unknown_apis_are_refused(auth: AuthHelper) -> None:
    markers = auth.guard(ApiKey.WRITE_TXN_MARKERS, Recorder(lambda b: {}))
    answer = await markers(request(ApiKey.WRITE_TXN_MARKERS, {"markers": [
        {"producer_id": 7, "producer_epoch": 0, "transaction_result": True, "coordinator_epoch": 0,
         "topics": [{"name": "a", "partition_indexes": [0, 1]}]}]}))  # fmt: skip
    assert [p["error_code"] for p in answer["markers"][0]["topics"][0]["partitions"]] == [
        Errors.CLUSTER_AUTHORIZATION_FAILED
    ] * 2
    quotas = auth.guard(ApiKey.ALTER_CLIENT_QUOTAS, Recorder(lambda b: {}))
    answer = await quotas(request(ApiKey.ALTER_CLIENT_QUOTAS, {"entries": [
        {"entity": [{"entity_type": "client-id", "entity_name": "c"}], "ops": []}],
        "validate_only": False}))  # fmt: skip
    assert answer["entries"][0]["error_code"] == Errors.CLUSTER_AUTHORIZATION_FAILED
    # an API without a rule is refused, never served unchecked
    unknown = auth.guard(ApiKey.VOTE, Recorder(lambda b: {}))
    with pytest.raises(CloseConnection, match="has no authorization rule"):
        await unknown(request(ApiKey.VOTE, {}))


async def test_log_dir_apis_need_the_cluster(auth: AuthHelper) -> None:
    from kafpy.protocol.headers import encode_response

    alter = auth.guard(ApiKey.ALTER_REPLICA_LOG_DIRS, Recorder(lambda b: {}))
    altered = await alter(request(ApiKey.ALTER_REPLICA_LOG_DIRS, {"dirs": [
        {"path": "/d", "topics": [{"name": "a", "partitions": [0, 1]}]}]}))  # fmt: skip
    assert [p["error_code"] for p in altered["results"][0]["partitions"]] == [
        Errors.CLUSTER_AUTHORIZATION_FAILED
    ] * 2
    describe = auth.guard(ApiKey.DESCRIBE_LOG_DIRS, Recorder(lambda b: {}))
    answer = await describe(request(ApiKey.DESCRIBE_LOG_DIRS, {"topics": None}))
    assert answer["results"] == []
    for key, body in ((ApiKey.ALTER_REPLICA_LOG_DIRS, altered), (ApiKey.DESCRIBE_LOG_DIRS, answer)):
        encode_response(key, 1, 1, body)  # the refusals are well-formed responses


async def test_every_cluster_level_refusal_is_a_well_formed_response(auth: AuthHelper) -> None:
    from kafpy.protocol.headers import encode_response
    from kafpy.protocol.messages import REQUESTS

    for key in (ApiKey.ALTER_PARTITION_REASSIGNMENTS, ApiKey.LIST_PARTITION_REASSIGNMENTS,
                ApiKey.DESCRIBE_CLIENT_QUOTAS, ApiKey.DESCRIBE_TRANSACTIONS,
                ApiKey.LIST_TRANSACTIONS, ApiKey.DESCRIBE_PRODUCERS):  # fmt: skip
        guarded = auth.guard(key, Recorder(lambda b: {}))
        answer = await guarded(request(key, {"topics": None, "transactional_ids": []}))
        assert answer["error_code"] == Errors.CLUSTER_AUTHORIZATION_FAILED
        for version in range(REQUESTS[key].valid_versions[0], 1):
            encode_response(key, version, 1, answer)


@pytest.mark.parametrize(
    ("operations", "enable_2pc", "error"),
    [
        ([Op.WRITE], False, Errors.NONE),
        ([Op.WRITE], True, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),  # KIP-939
        ([Op.TWO_PHASE_COMMIT], True, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
        ([Op.WRITE, Op.TWO_PHASE_COMMIT], True, Errors.NONE),
        ([Op.ALL], True, Errors.NONE),
    ],
)
async def test_init_producer_id_with_two_phase_commit_needs_its_acl_too(
    auth: AuthHelper, operations: list[Op], enable_2pc: bool, error: int
) -> None:
    assert auth.authorizer is not None
    await auth.authorizer.create_acls(
        [allow(ResourceType.TRANSACTIONAL_ID, "tx", op) for op in operations]
    )
    inner = Recorder(lambda b: {"error_code": 0, "producer_id": 5, "producer_epoch": 0})
    body = {"transactional_id": "tx", "transaction_timeout_ms": 1000, "enable2_pc": enable_2pc}
    response = await auth.guard(ApiKey.INIT_PRODUCER_ID, inner)(
        request(ApiKey.INIT_PRODUCER_ID, body, 6)
    )
    assert response["error_code"] == error
    assert len(inner.bodies) == (1 if error == Errors.NONE else 0)
