"""The authorization guards of the APIs: what Kafka 2.8 checks before each API runs.

A guard takes the AuthHelper, the request and the handler: it answers a refused request
with the API's error response (built by its message module) or runs the handler on the
authorized part of the request and adds the refused entries to the answer. Each API's
guard is named in its registry entry (kafpy/server/api_registry.py); AuthHelper.guard puts
it in front of the handler.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from kafpy.network.request_channel import CloseConnection, Request
from kafpy.protocol.acl_operations import AclOperation
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.config_resource import ConfigResourceType
from kafpy.protocol.errors import Errors
from kafpy.protocol.messages import (
    API_SCHEMAS,
    add_partitions_to_txn,
    delete_records,
    describe_groups,
    fetch,
    list_offsets,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
)
from kafpy.protocol.messages.metadata import AUTHORIZED_OPERATIONS_OMITTED
from kafpy.records.record_batch import PRODUCER_ID_OFFSET, RECORD_BATCH_OVERHEAD
from kafpy.security.authorizer.acl import CLUSTER_NAME, ResourceType
from kafpy.server.admin_results import error_response

if TYPE_CHECKING:
    from kafpy.server.auth_helper import AuthHelper

Op = AclOperation
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
TRANSACTIONAL_ID = ResourceType.TRANSACTIONAL_ID
Body = dict[str, Any]
Handler = Callable[[Request], Awaitable[Any]]
Guard = Callable[["AuthHelper", Request, Handler], Awaitable[Any]]
"""An API's authorization check in front of its handler."""
CONSUMER_REPLICA_ID = -1

AUTHORIZATION_ERRORS = {
    TOPIC: Errors.TOPIC_AUTHORIZATION_FAILED,
    GROUP: Errors.GROUP_AUTHORIZATION_FAILED,
    CLUSTER: Errors.CLUSTER_AUTHORIZATION_FAILED,
    TRANSACTIONAL_ID: Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ResourceType.DELEGATION_TOKEN: Errors.DELEGATION_TOKEN_AUTHORIZATION_FAILED,
}
"""The error Kafka answers when an operation on a resource of the type is denied."""


def _refused(request: Request, code: int, message: str | None = None) -> Body:
    """The request refused whole: its API's error response (Kafka's getErrorResponse)."""
    schema = API_SCHEMAS[ApiKey(request.api_key)]
    return schema.error_response(request.body or {}, request.api_version, code, message)


def _with_body(request: Request, body: Body) -> Request:
    """The request with another body (the authorized part of the original)."""
    return replace(request, body=body)


@dataclass(frozen=True)
class TopicLayout:
    """Where a request keeps its topics and their partitions, and where its response
    answers them (the field names differ from API to API)."""

    topics: str
    name: str
    parts: str
    part_index: str
    response_topics: str
    response_name: str
    response_parts: str


# topics[].name, partitions[].partition_index, answered in topics[].partitions[]
BY_NAME = TopicLayout(
    "topics", "name", "partitions", "partition_index", "topics", "name", "partitions"
)
PRODUCE_LAYOUT = TopicLayout(
    "topic_data", "name", "partition_data", "index", "responses", "name", "partition_responses"
)
FETCH_LAYOUT = TopicLayout(
    "topics", "topic", "partitions", "partition", "responses", "topic", "partitions"
)
OFFSET_FOR_LEADER_EPOCH_LAYOUT = TopicLayout(
    "topics", "topic", "partitions", "partition", "topics", "topic", "partitions"
)


async def _per_topic(
    auth: AuthHelper, request: Request, handler: Handler, op: AclOperation | None,
    layout: TopicLayout, error_entry: Callable[[int, int], Body],
    error: int = Errors.TOPIC_AUTHORIZATION_FAILED,
) -> Any:  # fmt: skip
    """Run `handler` on the topics allowed `op`, answering the others `error` per partition
    (every topic when `op` is None)."""
    body = request.body or {}
    lo = layout
    topics = list(body.get(lo.topics) or ())
    allowed, denied = ([], topics) if op is None else auth.split(request, topics, lo.name, op)
    if not denied:
        return await handler(request)
    response = await handler(_with_body(request, {**body, lo.topics: allowed}))
    if response is None:
        return None
    response.setdefault(lo.response_topics, [])
    response[lo.response_topics].extend(
        {lo.response_name: t[lo.name],
         lo.response_parts: [error_entry(p[lo.part_index], error) for p in t[lo.parts]]}
        for t in denied
    )  # fmt: skip
    return response


# -- Produce, Fetch and the offset APIs -------------------------------------------------------


def _has_idempotent_records(body: Body) -> bool:
    for t in body.get("topic_data") or ():
        for p in t.get("partition_data") or ():
            records = p.get("records")
            if records is not None and len(records) >= RECORD_BATCH_OVERHEAD:
                pid = int.from_bytes(records[PRODUCER_ID_OFFSET : PRODUCER_ID_OFFSET + 8], "big",
                                     signed=True)  # fmt: skip
                if pid >= 0:
                    return True
    return False


async def produce_guard(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    body = request.body or {}
    transactional_id = body.get("transactional_id")
    whole_error = None
    if transactional_id is not None:
        if not auth.authorize(request, Op.WRITE, TRANSACTIONAL_ID, transactional_id):
            whole_error = Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif _has_idempotent_records(body) and not auth.cluster(request, Op.IDEMPOTENT_WRITE):
        whole_error = Errors.CLUSTER_AUTHORIZATION_FAILED
    if whole_error is not None:
        if body.get("acks") == 0:
            raise CloseConnection(
                f"error during produce request with correlation id {request.header.correlation_id} "
                f"from client id {request.header.client_id} with ack=0: {whole_error.name}"
            )
        body = {**body, "topic_data": []}
        response = await handler(_with_body(request, body))
        if response is None:
            return None
        response["responses"] = [
            {"name": t["name"], "partition_responses": [produce.partition_error(p["index"], whole_error)
                                                         for p in t["partition_data"]]}
            for t in request.body["topic_data"]  # type: ignore[index]
        ]  # fmt: skip
        return response
    if body.get("acks") == 0:
        denied = {t["name"] for t in body.get("topic_data") or ()} - auth.authorized_names(
            request, Op.WRITE, TOPIC, (t["name"] for t in body.get("topic_data") or ())
        )
        if denied:
            # no answer to carry the error: close, as Kafka does for a failed acks=0 produce
            raise CloseConnection(
                f"error during produce request with correlation id {request.header.correlation_id} "
                f"from client id {request.header.client_id} with ack=0: "
                f"TOPIC_AUTHORIZATION_FAILED for topics {sorted(denied)}"
            )
    return await _per_topic(
        auth, request, handler, Op.WRITE, PRODUCE_LAYOUT, produce.partition_error
    )


async def fetch_guard(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    body = request.body or {}
    if body.get("replica_id", CONSUMER_REPLICA_ID) >= 0:
        # a follower's fetch needs ClusterAction; without it every partition is refused
        if auth.cluster(request, Op.CLUSTER_ACTION):
            return await handler(request)
        return await _per_topic(auth, request, handler, None, FETCH_LAYOUT, fetch.partition_error)
    return await _per_topic(auth, request, handler, Op.READ, FETCH_LAYOUT, fetch.partition_error)


async def list_offsets_guard(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    return await _per_topic(
        auth, request, handler, Op.DESCRIBE, BY_NAME, list_offsets.partition_error
    )


async def offset_for_leader_epoch_guard(
    auth: AuthHelper, request: Request, handler: Handler
) -> Any:
    # inter-broker with ClusterAction; consumers since KIP-320 with Describe on the topic
    if auth.cluster(request, Op.CLUSTER_ACTION, log_if_denied=False):
        return await handler(request)
    return await _per_topic(
        auth,
        request,
        handler,
        Op.DESCRIBE,
        OFFSET_FOR_LEADER_EPOCH_LAYOUT,
        offset_for_leader_epoch.partition_error,
    )


async def delete_records_guard(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    return await _per_topic(
        auth, request, handler, Op.DELETE, BY_NAME, delete_records.partition_error
    )


# -- Metadata and DescribeCluster ---------------------------------------------------------------


async def metadata_guard(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    """Metadata: topics named without Describe answer TOPIC_AUTHORIZATION_FAILED, all-topics
    requests leave them out; a topic to auto-create needs Create on the cluster or topic."""
    body = request.body or {}
    requested = body.get("topics")
    all_topics = requested is None or (request.api_version == 0 and not requested)
    denied: list[Body] = []
    if not all_topics:
        named = [t for t in requested or () if t.get("name") is not None]
        allowed, denied_describe = auth.split(request, named, "name", Op.DESCRIBE)
        denied = [{"name": t["name"]} for t in denied_describe]
        if (
            auth.auto_create_topics_enable
            and body.get("allow_auto_topic_creation", True)
            and not auth.cluster(request, Op.CREATE, log_if_denied=False)
        ):
            unknown = [t for t in allowed if not auth.topic_exists(t["name"])]
            may_create = auth.authorized_names(
                request, Op.CREATE, TOPIC, (t["name"] for t in unknown)
            )
            refused = [t for t in unknown if t["name"] not in may_create]
            allowed = [t for t in allowed if t not in refused]
            denied += [{"name": t["name"]} for t in refused]
        others = [t for t in requested or () if t.get("name") is None]
        request = _with_body(request, {**body, "topics": allowed + others})
    response = await handler(request)
    topics = response["topics"]
    if not all_topics and not (request.body or {}).get("topics"):
        topics = []  # every named topic refused (v0 would read an empty list as "all")
    if all_topics:
        visible = auth.authorized_names(request, Op.DESCRIBE, TOPIC,
                                        (t["name"] for t in topics), log_if_denied=False)  # fmt: skip
        topics = [t for t in topics if t["name"] in visible]
    topics += [metadata.topic_error(d["name"], Errors.TOPIC_AUTHORIZATION_FAILED) for d in denied]
    if request.api_version >= 8 and body.get("include_topic_authorized_operations"):
        for t in topics:
            if t["error_code"] == Errors.NONE:
                t["topic_authorized_operations"] = auth.authorized_operations(
                    request, TOPIC, t["name"]
                )
    response["topics"] = topics
    if 8 <= request.api_version <= 10 and body.get("include_cluster_authorized_operations"):
        response["cluster_authorized_operations"] = _cluster_operations(auth, request)
    return response


def _cluster_operations(auth: AuthHelper, request: Request) -> int:
    if auth.cluster(request, Op.DESCRIBE):
        return auth.authorized_operations(request, CLUSTER, CLUSTER_NAME)
    return 0


async def describe_cluster_guard(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    response = await handler(request)
    if (request.body or {}).get("include_cluster_authorized_operations"):
        response["cluster_authorized_operations"] = _cluster_operations(auth, request)
    return response


# -- admin APIs --------------------------------------------------------------------------------


async def _admin(
    auth: AuthHelper, request: Request, handler: Handler, api: str, items_key: str,
    response_key: str, op: AclOperation,
) -> Any:  # fmt: skip
    body = request.body or {}
    allowed, denied = auth.split(request, list(body.get(items_key) or ()), "name", op)
    if not denied:
        return await handler(request)
    response = await handler(_with_body(request, {**body, items_key: allowed}))
    refused = error_response(
        api,
        {items_key: denied},
        Errors.TOPIC_AUTHORIZATION_FAILED,
        Errors.TOPIC_AUTHORIZATION_FAILED.name.replace("_", " ").capitalize(),
    )
    response[response_key].extend(refused[response_key])
    return response


async def create_topics_guard(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    if auth.cluster(request, Op.CREATE, log_if_denied=False):
        return await handler(request)
    return await _admin(auth, request, handler, "create_topics", "topics", "topics", Op.CREATE)


async def delete_topics_guard(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    body = request.body or {}
    if request.api_version < 6:
        names = [{"name": n} for n in body.get("topic_names") or ()]
        allowed, denied = auth.split(request, names, "name", Op.DELETE)
        if not denied:
            return await handler(request)
        response = await handler(
            _with_body(request, {**body, "topic_names": [t["name"] for t in allowed]})
        )
        refused = error_response("delete_topics", {"topic_names": [t["name"] for t in denied]},
                                 Errors.TOPIC_AUTHORIZATION_FAILED)  # fmt: skip
        response["responses"].extend(refused["responses"])
        return response
    allowed, denied = auth.split(request, list(body.get("topics") or ()), "name", Op.DELETE)
    response = await handler(_with_body(request, {**body, "topics": allowed}))
    # a topic given by id keeps its name hidden from who may not describe it (as Kafka 2.8)
    described = auth.authorized_names(
        request, Op.DESCRIBE, TOPIC, (t["name"] for t in denied if t.get("named_by_id"))
    )
    response["responses"].extend(
        {"name": t["name"] if not t.get("named_by_id") or t["name"] in described else None,
         "topic_id": t.get("topic_id"), "error_code": Errors.TOPIC_AUTHORIZATION_FAILED,
         "error_message": None} for t in denied
    )  # fmt: skip
    return response


async def create_partitions_guard(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    return await _admin(auth, request, handler, "create_partitions", "topics", "results", Op.ALTER)


def configs_guard(
    api: str, op: AclOperation
) -> Callable[[AuthHelper, Request, Handler], Awaitable[Any]]:
    response_key = "results" if api == "describe_configs" else "responses"

    async def check(auth: AuthHelper, request: Request, handler: Handler) -> Any:
        body = request.body or {}
        allowed: list[Body] = []
        denied: dict[int, list[Body]] = {}
        for r in body.get("resources") or ():
            kind = int(r["resource_type"])
            if kind == ConfigResourceType.TOPIC:
                ok = auth.authorize(request, op, TOPIC, r["resource_name"])
                error = Errors.TOPIC_AUTHORIZATION_FAILED
            elif kind in (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER):
                ok = auth.cluster(request, op)
                error = Errors.CLUSTER_AUTHORIZATION_FAILED
            else:
                ok, error = True, Errors.NONE
            if ok:
                allowed.append(r)
            else:
                denied.setdefault(error, []).append(r)
        if not denied:
            return await handler(request)
        response = await handler(_with_body(request, {**body, "resources": allowed}))
        for code, resources in denied.items():
            refused = error_response(api, {"resources": resources}, code)
            response[response_key].extend(refused[response_key])
        return response

    return check


# -- group and coordinator APIs ------------------------------------------------------------


async def group_guard(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    """Read on the request's group, or the API's error response."""
    if auth.authorize(request, Op.READ, GROUP, (request.body or {}).get("group_id", "")):
        return await handler(request)
    return _refused(request, Errors.GROUP_AUTHORIZATION_FAILED)


async def offset_commit_guard(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    body = request.body or {}
    group_ok = auth.authorize(request, Op.READ, GROUP, body.get("group_id", ""))
    if not group_ok:
        return _refused(request, Errors.GROUP_AUTHORIZATION_FAILED)
    return await _per_topic(auth, request, handler, Op.READ, BY_NAME, offset_commit.partition_error)


async def offset_fetch_guard(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    body = request.body or {}
    if not auth.authorize(request, Op.DESCRIBE, GROUP, body.get("group_id", "")):
        return _refused(request, Errors.GROUP_AUTHORIZATION_FAILED)
    if body.get("topics") is None:
        response = await handler(request)
        visible = auth.authorized_names(request, Op.DESCRIBE, TOPIC,
                                        (t["name"] for t in response.get("topics") or ()),
                                        log_if_denied=False)  # fmt: skip
        response["topics"] = [t for t in response.get("topics") or () if t["name"] in visible]
        return response
    return await _offset_fetch_topics(auth, request, handler)


async def _offset_fetch_topics(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    body = request.body or {}
    allowed, denied = auth.split(request, list(body["topics"]), "name", Op.DESCRIBE)
    if not denied:
        return await handler(request)
    response = await handler(_with_body(request, {**body, "topics": allowed}))
    if response.get("error_code", Errors.NONE) != Errors.NONE and request.api_version >= 2:
        return response
    response.setdefault("topics", []).extend(
        {"name": t["name"], "partitions": [offset_fetch.partition_error(p, Errors.TOPIC_AUTHORIZATION_FAILED)
                                           for p in t["partition_indexes"]]} for t in denied
    )  # fmt: skip
    return response


async def offset_delete_guard(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    body = request.body or {}
    if not auth.authorize(request, Op.DELETE, GROUP, body.get("group_id", "")):
        return _refused(request, Errors.GROUP_AUTHORIZATION_FAILED)
    return await _per_topic(auth, request, handler, Op.READ, BY_NAME, offset_delete.partition_error)


async def list_groups_guard(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    response = await handler(request)
    if not auth.cluster(request, Op.DESCRIBE, log_if_denied=False):
        visible = auth.authorized_names(request, Op.DESCRIBE, GROUP,
                                        (g["group_id"] for g in response["groups"]), log_if_denied=False)  # fmt: skip
        response["groups"] = [g for g in response["groups"] if g["group_id"] in visible]
    return response


async def describe_groups_guard(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    body = request.body or {}
    groups = list(body.get("groups") or ())
    allowed = auth.authorized_names(request, Op.DESCRIBE, GROUP, groups)
    response = await handler(
        _with_body(request, {**body, "groups": [g for g in groups if g in allowed]})
    )
    by_id = {g["group_id"]: g for g in response["groups"]}
    out = []
    for g in groups:
        if g in by_id:
            entry = by_id[g]
            if (
                entry.get("authorized_operations", AUTHORIZED_OPERATIONS_OMITTED)
                != AUTHORIZED_OPERATIONS_OMITTED
            ):
                entry["authorized_operations"] = auth.authorized_operations(request, GROUP, g)
        else:
            entry = describe_groups.group_error(g, Errors.GROUP_AUTHORIZATION_FAILED)
        out.append(entry)
    response["groups"] = out
    return response


async def delete_groups_guard(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    body = request.body or {}
    names = list(dict.fromkeys(body.get("groups_names") or ()))
    allowed = auth.authorized_names(request, Op.DELETE, GROUP, names)
    response = await handler(
        _with_body(request, {**body, "groups_names": [n for n in names if n in allowed]})
    )
    response["results"].extend({"group_id": n, "error_code": Errors.GROUP_AUTHORIZATION_FAILED}
                               for n in names if n not in allowed)  # fmt: skip
    return response


async def find_coordinator_guard(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    body = request.body or {}
    key_type = body.get("key_type", 0)
    resource_type = GROUP if key_type == 0 else TRANSACTIONAL_ID
    if auth.authorize(request, Op.DESCRIBE, resource_type, body.get("key") or ""):
        return await handler(request)
    error = AUTHORIZATION_ERRORS[resource_type]
    return _refused(request, error, Errors(error).name)


async def init_producer_id_guard(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    body = request.body or {}
    transactional_id = body.get("transactional_id")
    if transactional_id is not None:
        ok = auth.authorize(request, Op.WRITE, TRANSACTIONAL_ID, transactional_id)
        if ok and body.get("enable2_pc"):  # KIP-939: two-phase commit needs its own ACL too
            ok = auth.authorize(request, Op.TWO_PHASE_COMMIT, TRANSACTIONAL_ID, transactional_id)
        error = Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    else:
        ok = auth.cluster(request, Op.IDEMPOTENT_WRITE)
        error = Errors.CLUSTER_AUTHORIZATION_FAILED
    if ok:
        return await handler(request)
    return _refused(request, error)


# -- cluster APIs ------------------------------------------------------------------------------


def cluster_api(
    op: AclOperation, message: str | None = None
) -> Callable[[AuthHelper, Request, Handler], Awaitable[Any]]:
    """`op` on the cluster, or the API's error response (with `message`)."""

    async def check(auth: AuthHelper, request: Request, handler: Handler) -> Any:
        if auth.cluster(request, op):
            return await handler(request)
        return _refused(request, Errors.CLUSTER_AUTHORIZATION_FAILED, message)

    return check


# -- transactions, quotas, log dirs (Kafka 2.8's checks of the APIs built beside the ACLs) -----


def txn_id_api(
    group_read: bool = False,
) -> Callable[[AuthHelper, Request, Handler], Awaitable[Any]]:
    """Write on the request's transactional id (and Read on its group when `group_read`),
    as Kafka checks EndTxn, AddOffsetsToTxn and TxnOffsetCommit."""

    async def check(auth: AuthHelper, request: Request, handler: Handler) -> Any:
        body = request.body or {}
        if not auth.authorize(request, Op.WRITE, TRANSACTIONAL_ID, body["transactional_id"]):
            return _refused(request, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if group_read and not auth.authorize(request, Op.READ, GROUP, body["group_id"]):
            return _refused(request, Errors.GROUP_AUTHORIZATION_FAILED)
        return await handler(request)

    return check


async def add_partitions_to_txn_guard(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    """Write on the transactional id, then on each topic: a denied topic fails with
    TOPIC_AUTHORIZATION_FAILED and the others with OPERATION_NOT_ATTEMPTED (Kafka 2.8)."""
    body = request.body or {}
    topics = body.get("v3_and_below_topics") or ()
    txn_id = body.get("v3_and_below_transactional_id", "")

    if not auth.authorize(request, Op.WRITE, TRANSACTIONAL_ID, txn_id):
        return _refused(request, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    denied = {t["name"] for t in topics if not auth.authorize(request, Op.WRITE, TOPIC, t["name"])}
    if denied:
        return add_partitions_to_txn.topic_results(
            body,
            lambda t: (
                Errors.TOPIC_AUTHORIZATION_FAILED if t in denied else Errors.OPERATION_NOT_ATTEMPTED
            ),
        )
    return await handler(request)
