"""AuthHelper: the authorization checks of every API (Kafka 2.8's `kafka.server.AuthHelper`
and the checks its KafkaApis makes).

KafkaApis hands each handler to `guard(api_key, handler)`; with an authorizer the guard
asks it what Kafka 2.8 asks before the API runs: resources the principal may not use are
taken out of the request and answered with TOPIC_AUTHORIZATION_FAILED,
GROUP_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED or
TRANSACTIONAL_ID_AUTHORIZATION_FAILED (each entry where Kafka answers per entry, the whole
request where Kafka refuses it whole); the rest is handled as usual and the answers are
merged. Lists that are filtered in Kafka (Metadata of all topics, ListGroups, OffsetFetch
of all partitions) are filtered here too, and the authorized-operations fields carry the
principal's real operations. Without an authorizer every guard is the handler itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from kafpy.network.request_channel import CloseConnection, Request
from kafpy.protocol.acl_operations import AclOperation, to_bit_field
from kafpy.protocol.api_keys import ApiKey, api_name
from kafpy.protocol.config_resource import ConfigResourceType
from kafpy.protocol.errors import Errors
from kafpy.protocol.messages.metadata import AUTHORIZED_OPERATIONS_OMITTED
from kafpy.records.record_batch import PRODUCER_ID_OFFSET, RECORD_BATCH_OVERHEAD
from kafpy.security.authorizer.acl import CLUSTER_NAME, ResourceType
from kafpy.security.authorizer.acl_authorizer import AclAuthorizer
from kafpy.server.admin_results import error_response

Op = AclOperation
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
TRANSACTIONAL_ID = ResourceType.TRANSACTIONAL_ID
Body = dict[str, Any]
Handler = Callable[[Request], Awaitable[Any]]
CONSUMER_REPLICA_ID = -1

AUTHORIZATION_ERRORS = {
    TOPIC: Errors.TOPIC_AUTHORIZATION_FAILED,
    GROUP: Errors.GROUP_AUTHORIZATION_FAILED,
    CLUSTER: Errors.CLUSTER_AUTHORIZATION_FAILED,
    TRANSACTIONAL_ID: Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ResourceType.DELEGATION_TOKEN: Errors.DELEGATION_TOKEN_AUTHORIZATION_FAILED,
}
"""The error Kafka answers when an operation on a resource of the type is denied."""


class AuthHelper:
    """The broker's authorization checks, over `authorizer` (None: everything allowed)."""

    def __init__(
        self,
        authorizer: AclAuthorizer | None,
        topic_exists: Callable[[str], bool] | None = None,
        auto_create_topics_enable: bool = False,
    ) -> None:
        self.authorizer = authorizer
        self.topic_exists = topic_exists or (lambda _: True)
        self.auto_create_topics_enable = auto_create_topics_enable

    @property
    def enabled(self) -> bool:
        return self.authorizer is not None

    def authorize(
        self,
        request: Request,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
        *,
        log_if_denied: bool = True,
        ref_count: int = 1,
    ) -> bool:
        """Whether the request's principal may do `operation` on the resource (Kafka's
        AuthHelper.authorize); the helper the APIs built elsewhere call, as
        `authorize(request, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, txn_id)`."""
        if self.authorizer is None:
            return True
        return self.authorizer.authorize(
            request.principal, request.client_address[0], operation, resource_type, name,
            api_name(request.api_key), ref_count, log_if_denied=log_if_denied,
        )  # fmt: skip

    def authorized_names(
        self, request: Request, operation: AclOperation, resource_type: ResourceType,
        names: Iterable[str], *, log_if_denied: bool = True,
    ) -> set[str]:  # fmt: skip
        """The names the principal may use (each asked once, with its reference count)."""
        counts: dict[str, int] = {}
        for n in names:
            counts[n] = counts.get(n, 0) + 1
        return {n for n, c in counts.items() if self.authorize(request, operation, resource_type,
                n, log_if_denied=log_if_denied, ref_count=c)}  # fmt: skip

    def authorized_operations(
        self, request: Request, resource_type: ResourceType, name: str
    ) -> int:
        """The 32-bit set of the operations the principal may do on the resource."""
        if self.authorizer is None:
            from kafpy.security.authorizer.acl import SUPPORTED_OPERATIONS

            return to_bit_field(SUPPORTED_OPERATIONS[resource_type])
        return to_bit_field(self.authorizer.authorized_operations(
            request.principal, request.client_address[0], resource_type, name,
            api_name(request.api_key),
        ))  # fmt: skip

    def guard(self, api_key: ApiKey, handler: Handler) -> Handler:
        """`handler` with Kafka's checks of the API in front (itself without an authorizer
        or for an API that checks nothing, as ApiVersions)."""
        check = _GUARDS.get(api_key)
        if self.authorizer is None or api_key in _SELF_CHECKED:
            return handler
        if check is None:  # an API nobody wrote Kafka's checks for: refused, never open

            async def refused(request: Request) -> Any:
                raise CloseConnection(
                    f"{api_name(api_key)} has no authorization rule in kafpy, and an "
                    "authorizer is configured: the request is refused"
                )

            return refused

        async def guarded(request: Request) -> Any:
            return await check(self, request, handler)

        return guarded

    # -- helpers of the guards --------------------------------------------------------------

    def split(
        self, request: Request, items: list[Body], key: str, op: AclOperation,
        resource_type: ResourceType = TOPIC,
    ) -> tuple[list[Body], list[Body]]:  # fmt: skip
        """(allowed, denied) entries of a request list, by the resource named at `key`."""
        allowed_names = self.authorized_names(request, op, resource_type,
                                              (i[key] for i in items if i.get(key) is not None))  # fmt: skip
        allowed = [i for i in items if i.get(key) is None or i[key] in allowed_names]
        denied = [i for i in items if i.get(key) is not None and i[key] not in allowed_names]
        return allowed, denied

    def cluster(self, request: Request, op: AclOperation, *, log_if_denied: bool = True) -> bool:
        return self.authorize(request, op, CLUSTER, CLUSTER_NAME, log_if_denied=log_if_denied)


def _with_body(request: Request, body: Body) -> Request:
    """The request with another body (the authorized part of the original)."""
    from dataclasses import replace

    return replace(request, body=body)


async def _per_topic(
    auth: AuthHelper, request: Request, handler: Handler, op: AclOperation | None, *,
    topics_key: str, name_key: str, parts_key: str, part_index_key: str,
    response_topics_key: str, response_name_key: str, response_parts_key: str,
    error_entry: Callable[[int, int], Body], error: int = Errors.TOPIC_AUTHORIZATION_FAILED,
) -> Any:  # fmt: skip
    """Run `handler` on the topics allowed `op`, answering the others `error` per partition
    (every topic when `op` is None)."""
    body = request.body or {}
    topics = list(body.get(topics_key) or ())
    allowed, denied = ([], topics) if op is None else auth.split(request, topics, name_key, op)
    if not denied:
        return await handler(request)
    response = await handler(_with_body(request, {**body, topics_key: allowed}))
    if response is None:
        return None
    response.setdefault(response_topics_key, [])
    response[response_topics_key].extend(
        {response_name_key: t[name_key],
         response_parts_key: [error_entry(p[part_index_key], error) for p in t[parts_key]]}
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


def _produce_entry(index: int, error: int) -> Body:
    return {"index": index, "error_code": error, "base_offset": -1, "log_append_time_ms": -1,
            "log_start_offset": -1, "record_errors": [], "error_message": None}  # fmt: skip


async def _produce(auth: AuthHelper, request: Request, handler: Handler) -> Any:
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
            {"name": t["name"], "partition_responses": [_produce_entry(p["index"], whole_error)
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
        auth, request, handler, Op.WRITE, topics_key="topic_data", name_key="name",
        parts_key="partition_data", part_index_key="index", response_topics_key="responses",
        response_name_key="name", response_parts_key="partition_responses",
        error_entry=_produce_entry,
    )  # fmt: skip


def _fetch_entry(index: int, error: int) -> Body:
    return {"partition_index": index, "error_code": error, "high_watermark": -1,
            "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": None,
            "preferred_read_replica": -1, "records": b""}  # fmt: skip


async def _fetch(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    body = request.body or {}
    args = dict(topics_key="topics", name_key="topic", parts_key="partitions",
                part_index_key="partition", response_topics_key="responses",
                response_name_key="topic", response_parts_key="partitions",
                error_entry=_fetch_entry)  # fmt: skip
    if body.get("replica_id", CONSUMER_REPLICA_ID) >= 0:
        # a follower's fetch needs ClusterAction; without it every partition is refused
        if auth.cluster(request, Op.CLUSTER_ACTION):
            return await handler(request)
        return await _per_topic(auth, request, handler, None, **args)  # type: ignore[arg-type]
    return await _per_topic(auth, request, handler, Op.READ, **args)  # type: ignore[arg-type]


async def _list_offsets(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    return await _per_topic(
        auth, request, handler, Op.DESCRIBE, topics_key="topics", name_key="name",
        parts_key="partitions", part_index_key="partition_index", response_topics_key="topics",
        response_name_key="name", response_parts_key="partitions",
        error_entry=lambda i, e: {"partition_index": i, "error_code": e, "timestamp": -1,
                                  "offset": -1, "leader_epoch": -1, "old_style_offsets": []},
    )  # fmt: skip


async def _offset_for_leader_epoch(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    # inter-broker with ClusterAction; consumers since KIP-320 with Describe on the topic
    if auth.cluster(request, Op.CLUSTER_ACTION, log_if_denied=False):
        return await handler(request)
    return await _per_topic(
        auth, request, handler, Op.DESCRIBE, topics_key="topics", name_key="topic",
        parts_key="partitions", part_index_key="partition", response_topics_key="topics",
        response_name_key="topic", response_parts_key="partitions",
        error_entry=lambda i, e: {"error_code": e, "partition": i, "leader_epoch": -1,
                                  "end_offset": -1},
    )  # fmt: skip


async def _delete_records(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    return await _per_topic(
        auth, request, handler, Op.DELETE, topics_key="topics", name_key="name",
        parts_key="partitions", part_index_key="partition_index", response_topics_key="topics",
        response_name_key="name", response_parts_key="partitions",
        error_entry=lambda i, e: {"partition_index": i, "low_watermark": -1, "error_code": e},
    )  # fmt: skip


# -- Metadata and DescribeCluster ---------------------------------------------------------------


async def _metadata(auth: AuthHelper, request: Request, handler: Handler) -> Any:
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
    topics += [{"error_code": Errors.TOPIC_AUTHORIZATION_FAILED, "name": d["name"],
                "is_internal": False, "partitions": []} for d in denied]  # fmt: skip
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


async def _describe_cluster(auth: AuthHelper, request: Request, handler: Handler) -> Any:
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


async def _create_topics(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    if auth.cluster(request, Op.CREATE, log_if_denied=False):
        return await handler(request)
    return await _admin(auth, request, handler, "create_topics", "topics", "topics", Op.CREATE)


async def _delete_topics(auth: AuthHelper, request: Request, handler: Handler) -> Any:
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


async def _create_partitions(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    return await _admin(auth, request, handler, "create_partitions", "topics", "results", Op.ALTER)


def _configs_guard(
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


def _group_api(
    denied_response: Callable[[Request], Body],
) -> Callable[[AuthHelper, Request, Handler], Awaitable[Any]]:
    async def check(auth: AuthHelper, request: Request, handler: Handler) -> Any:
        if auth.authorize(request, Op.READ, GROUP, (request.body or {}).get("group_id", "")):
            return await handler(request)
        return denied_response(request)

    return check


def _join_denied(request: Request) -> Body:
    return {"throttle_time_ms": 0, "error_code": Errors.GROUP_AUTHORIZATION_FAILED, "generation_id": -1,
            "protocol_type": None, "protocol_name": None if request.api_version >= 7 else "",
            "leader": "", "member_id": (request.body or {}).get("member_id", ""), "members": []}  # fmt: skip


async def _offset_commit(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    body = request.body or {}
    group_ok = auth.authorize(request, Op.READ, GROUP, body.get("group_id", ""))
    args = dict(topics_key="topics", name_key="name", parts_key="partitions",
                part_index_key="partition_index", response_topics_key="topics",
                response_name_key="name", response_parts_key="partitions",
                error_entry=lambda i, e: {"partition_index": i, "error_code": e})  # fmt: skip
    if not group_ok:
        return {"throttle_time_ms": 0, "topics": [
            {"name": t["name"], "partitions": [{"partition_index": p["partition_index"],
                                                "error_code": Errors.GROUP_AUTHORIZATION_FAILED}
                                               for p in t["partitions"]]}
            for t in body.get("topics") or ()]}  # fmt: skip
    return await _per_topic(auth, request, handler, Op.READ, **args)  # type: ignore[arg-type]


async def _offset_fetch(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    body = request.body or {}
    if not auth.authorize(request, Op.DESCRIBE, GROUP, body.get("group_id", "")):
        error = Errors.GROUP_AUTHORIZATION_FAILED
        if request.api_version >= 2:
            return {"throttle_time_ms": 0, "topics": [], "error_code": error}
        return {"throttle_time_ms": 0, "error_code": Errors.NONE, "topics": [
            {"name": t["name"], "partitions": [_offset_fetch_entry(p, error) for p in t["partition_indexes"]]}
            for t in body.get("topics") or ()]}  # fmt: skip
    if body.get("topics") is None:
        response = await handler(request)
        visible = auth.authorized_names(request, Op.DESCRIBE, TOPIC,
                                        (t["name"] for t in response.get("topics") or ()),
                                        log_if_denied=False)  # fmt: skip
        response["topics"] = [t for t in response.get("topics") or () if t["name"] in visible]
        return response
    return await _offset_fetch_topics(auth, request, handler)


def _offset_fetch_entry(partition: int, error: int) -> Body:
    return {"partition_index": partition, "committed_offset": -1, "committed_leader_epoch": -1,
            "metadata": "", "error_code": error}  # fmt: skip


async def _offset_fetch_topics(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    body = request.body or {}
    allowed, denied = auth.split(request, list(body["topics"]), "name", Op.DESCRIBE)
    if not denied:
        return await handler(request)
    response = await handler(_with_body(request, {**body, "topics": allowed}))
    if response.get("error_code", Errors.NONE) != Errors.NONE and request.api_version >= 2:
        return response
    response.setdefault("topics", []).extend(
        {"name": t["name"], "partitions": [_offset_fetch_entry(p, Errors.TOPIC_AUTHORIZATION_FAILED)
                                           for p in t["partition_indexes"]]} for t in denied
    )  # fmt: skip
    return response


async def _offset_delete(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    body = request.body or {}
    if not auth.authorize(request, Op.DELETE, GROUP, body.get("group_id", "")):
        return {
            "error_code": Errors.GROUP_AUTHORIZATION_FAILED,
            "throttle_time_ms": 0,
            "topics": [],
        }
    return await _per_topic(
        auth, request, handler, Op.READ, topics_key="topics", name_key="name",
        parts_key="partitions", part_index_key="partition_index", response_topics_key="topics",
        response_name_key="name", response_parts_key="partitions",
        error_entry=lambda i, e: {"partition_index": i, "error_code": e},
    )  # fmt: skip


async def _list_groups(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    response = await handler(request)
    if not auth.cluster(request, Op.DESCRIBE, log_if_denied=False):
        visible = auth.authorized_names(request, Op.DESCRIBE, GROUP,
                                        (g["group_id"] for g in response["groups"]), log_if_denied=False)  # fmt: skip
        response["groups"] = [g for g in response["groups"] if g["group_id"] in visible]
    return response


async def _describe_groups(auth: AuthHelper, request: Request, handler: Handler) -> Any:
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
            entry = {"error_code": Errors.GROUP_AUTHORIZATION_FAILED, "group_id": g, "group_state": "",
                     "protocol_type": "", "protocol_data": "", "members": []}  # fmt: skip
        out.append(entry)
    response["groups"] = out
    return response


async def _delete_groups(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    body = request.body or {}
    names = list(dict.fromkeys(body.get("groups_names") or ()))
    allowed = auth.authorized_names(request, Op.DELETE, GROUP, names)
    response = await handler(
        _with_body(request, {**body, "groups_names": [n for n in names if n in allowed]})
    )
    response["results"].extend({"group_id": n, "error_code": Errors.GROUP_AUTHORIZATION_FAILED}
                               for n in names if n not in allowed)  # fmt: skip
    return response


async def _find_coordinator(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    body = request.body or {}
    key_type = body.get("key_type", 0)
    resource_type = GROUP if key_type == 0 else TRANSACTIONAL_ID
    if auth.authorize(request, Op.DESCRIBE, resource_type, body.get("key") or ""):
        return await handler(request)
    error = AUTHORIZATION_ERRORS[resource_type]
    return {"throttle_time_ms": 0, "error_code": error, "error_message": Errors(error).name,
            "node_id": -1, "host": "", "port": -1}  # fmt: skip


async def _init_producer_id(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    transactional_id = (request.body or {}).get("transactional_id")
    if transactional_id is not None:
        ok = auth.authorize(request, Op.WRITE, TRANSACTIONAL_ID, transactional_id)
        error = Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    else:
        ok = auth.cluster(request, Op.IDEMPOTENT_WRITE)
        error = Errors.CLUSTER_AUTHORIZATION_FAILED
    if ok:
        return await handler(request)
    return {"throttle_time_ms": 0, "error_code": error, "producer_id": -1, "producer_epoch": -1}


# -- cluster APIs ------------------------------------------------------------------------------


def _cluster_api(
    op: AclOperation, denied: Callable[[Request], Body]
) -> Callable[[AuthHelper, Request, Handler], Awaitable[Any]]:
    async def check(auth: AuthHelper, request: Request, handler: Handler) -> Any:
        if auth.cluster(request, op):
            return await handler(request)
        return denied(request)

    return check


def _controller_denied(request: Request) -> Body:
    error = Errors.CLUSTER_AUTHORIZATION_FAILED
    body = request.body or {}
    if request.api_key == ApiKey.UPDATE_METADATA:
        return {"error_code": error}
    if request.api_key == ApiKey.CONTROLLED_SHUTDOWN:
        return {"error_code": error, "remaining_partitions": []}
    errors = [{"topic_name": s["topic_name"], "partition_index": s["partition_index"], "error_code": error}
              for s in body.get("ungrouped_partition_states") or ()]  # fmt: skip
    for t in body.get("topic_states") or ():
        errors += [{"topic_name": t["topic_name"], "partition_index": s["partition_index"], "error_code": error}
                   for s in t.get("partition_states") or ()]  # fmt: skip
    for p in body.get("ungrouped_partitions") or ():
        errors.append(
            {
                "topic_name": p["topic_name"],
                "partition_index": p["partition_index"],
                "error_code": error,
            }
        )
    for t in body.get("topics") or ():
        for p in t.get("partition_indexes") or ():
            errors.append({"topic_name": t["name"], "partition_index": p, "error_code": error})
    return {"error_code": error, "partition_errors": errors}


def _elect_denied(request: Request) -> Body:
    error = Errors.CLUSTER_AUTHORIZATION_FAILED
    return {"throttle_time_ms": 0, "error_code": error, "replica_election_results": [
        {"topic": t["topic"], "partition_result": [{"partition_id": p, "error_code": error,
                                                    "error_message": None} for p in t["partitions"]]}
        for t in (request.body or {}).get("topic_partitions") or ()]}  # fmt: skip


def _alter_scram_denied(request: Request) -> Body:
    body = request.body or {}
    users = dict.fromkeys(
        u["name"] for key in ("deletions", "upsertions") for u in body.get(key) or ()
    )
    return {"throttle_time_ms": 0, "results": [
        {"user": u, "error_code": Errors.CLUSTER_AUTHORIZATION_FAILED, "error_message": None}
        for u in users]}  # fmt: skip


# -- transactions, quotas, log dirs (Kafka 2.8's checks of the APIs built beside the ACLs) -----


def _txn_id_api(
    denied: Callable[[Request, int], Body], group_read: bool = False
) -> Callable[[AuthHelper, Request, Handler], Awaitable[Any]]:
    """Write on the request's transactional id (and Read on its group when `group_read`),
    as Kafka checks EndTxn, AddOffsetsToTxn and TxnOffsetCommit."""

    async def check(auth: AuthHelper, request: Request, handler: Handler) -> Any:
        body = request.body or {}
        if not auth.authorize(request, Op.WRITE, TRANSACTIONAL_ID, body["transactional_id"]):
            return denied(request, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if group_read and not auth.authorize(request, Op.READ, GROUP, body["group_id"]):
            return denied(request, Errors.GROUP_AUTHORIZATION_FAILED)
        return await handler(request)

    return check


def _txn_offset_commit_denied(request: Request, error: int) -> Body:
    return {"throttle_time_ms": 0, "topics": [
        {"name": t["name"], "partitions": [{"partition_index": p["partition_index"], "error_code": error}
                                           for p in t["partitions"]]}
        for t in (request.body or {}).get("topics") or ()]}  # fmt: skip


async def _add_partitions_to_txn(auth: AuthHelper, request: Request, handler: Handler) -> Any:
    """Write on the transactional id, then on each topic: a denied topic fails with
    TOPIC_AUTHORIZATION_FAILED and the others with OPERATION_NOT_ATTEMPTED (Kafka 2.8)."""
    body = request.body or {}
    topics = body.get("v3_and_below_topics") or ()
    txn_id = body.get("v3_and_below_transactional_id", "")

    def answer(codes: Callable[[str], int]) -> Body:
        return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": [
            {"name": t["name"], "results_by_partition": [
                {"partition_index": p, "partition_error_code": codes(t["name"])} for p in t["partitions"]]}
            for t in topics]}  # fmt: skip

    if not auth.authorize(request, Op.WRITE, TRANSACTIONAL_ID, txn_id):
        return answer(lambda _t: Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    denied = {t["name"] for t in topics if not auth.authorize(request, Op.WRITE, TOPIC, t["name"])}
    if denied:
        return answer(
            lambda t: (
                Errors.TOPIC_AUTHORIZATION_FAILED if t in denied else Errors.OPERATION_NOT_ATTEMPTED
            )
        )
    return await handler(request)


def _write_txn_markers_denied(request: Request) -> Body:
    error = Errors.CLUSTER_AUTHORIZATION_FAILED
    return {"markers": [
        {"producer_id": m["producer_id"], "topics": [
            {"name": t["name"], "partitions": [{"partition_index": p, "error_code": error}
                                               for p in t["partition_indexes"]]}
            for t in m["topics"]]}
        for m in (request.body or {}).get("markers") or ()]}  # fmt: skip


def _alter_client_quotas_denied(request: Request) -> Body:
    return {"throttle_time_ms": 0, "entries": [
        {"error_code": Errors.CLUSTER_AUTHORIZATION_FAILED, "error_message": None, "entity": e["entity"]}
        for e in (request.body or {}).get("entries") or ()]}  # fmt: skip


def _alter_replica_log_dirs_denied(request: Request) -> Body:
    return {"throttle_time_ms": 0, "results": [
        {"topic_name": t["name"], "partitions": [
            {"partition_index": p, "error_code": Errors.CLUSTER_AUTHORIZATION_FAILED}
            for p in t["partitions"]]}
        for d in (request.body or {}).get("dirs") or () for t in d.get("topics") or ()]}  # fmt: skip


def _top_level_error(request: Request) -> Body:
    return {"throttle_time_ms": 0, "error_code": Errors.CLUSTER_AUTHORIZATION_FAILED,
            "error_message": None, "entries": None, "results": [], "transaction_states": [],
            "topics": [], "responses": []}  # fmt: skip


# APIs that need no check (ApiVersions, the SASL exchange) or check inside their handler
_SELF_CHECKED = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE,
                           ApiKey.DESCRIBE_ACLS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS})  # fmt: skip
_Guard = Callable[[AuthHelper, Request, Handler], Awaitable[Any]]
_GUARDS: dict[ApiKey, _Guard] = {
    ApiKey.PRODUCE: _produce,
    ApiKey.FETCH: _fetch,
    ApiKey.LIST_OFFSETS: _list_offsets,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: _offset_for_leader_epoch,
    ApiKey.DELETE_RECORDS: _delete_records,
    ApiKey.METADATA: _metadata,
    ApiKey.DESCRIBE_CLUSTER: _describe_cluster,
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.DELETE_TOPICS: _delete_topics,
    ApiKey.CREATE_PARTITIONS: _create_partitions,
    ApiKey.DESCRIBE_CONFIGS: _configs_guard("describe_configs", Op.DESCRIBE_CONFIGS),
    ApiKey.ALTER_CONFIGS: _configs_guard("alter_configs", Op.ALTER_CONFIGS),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _configs_guard("incremental_alter_configs", Op.ALTER_CONFIGS),
    ApiKey.JOIN_GROUP: _group_api(_join_denied),
    ApiKey.SYNC_GROUP: _group_api(lambda r: {
        "throttle_time_ms": 0, "error_code": Errors.GROUP_AUTHORIZATION_FAILED,
        "protocol_type": None, "protocol_name": None, "assignment": b""}),
    ApiKey.HEARTBEAT: _group_api(lambda r: {"throttle_time_ms": 0,
                                            "error_code": Errors.GROUP_AUTHORIZATION_FAILED}),
    ApiKey.LEAVE_GROUP: _group_api(lambda r: {"throttle_time_ms": 0, "members": [],
                                              "error_code": Errors.GROUP_AUTHORIZATION_FAILED}),
    ApiKey.OFFSET_COMMIT: _offset_commit,
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.OFFSET_DELETE: _offset_delete,
    ApiKey.LIST_GROUPS: _list_groups,
    ApiKey.DESCRIBE_GROUPS: _describe_groups,
    ApiKey.DELETE_GROUPS: _delete_groups,
    ApiKey.FIND_COORDINATOR: _find_coordinator,
    ApiKey.INIT_PRODUCER_ID: _init_producer_id,
    ApiKey.LEADER_AND_ISR: _cluster_api(Op.CLUSTER_ACTION, _controller_denied),
    ApiKey.UPDATE_METADATA: _cluster_api(Op.CLUSTER_ACTION, _controller_denied),
    ApiKey.STOP_REPLICA: _cluster_api(Op.CLUSTER_ACTION, _controller_denied),
    ApiKey.CONTROLLED_SHUTDOWN: _cluster_api(Op.CLUSTER_ACTION, _controller_denied),
    ApiKey.ELECT_LEADERS: _cluster_api(Op.ALTER, _elect_denied),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: _cluster_api(Op.DESCRIBE, lambda r: {
        "throttle_time_ms": 0, "error_code": Errors.CLUSTER_AUTHORIZATION_FAILED,
        "error_message": "Cluster authorization failed.", "results": []}),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _cluster_api(Op.ALTER, _alter_scram_denied),
    ApiKey.WRITE_TXN_MARKERS: _cluster_api(Op.CLUSTER_ACTION, _write_txn_markers_denied),
    ApiKey.ADD_PARTITIONS_TO_TXN: _add_partitions_to_txn,
    ApiKey.ADD_OFFSETS_TO_TXN: _txn_id_api(
        lambda r, e: {"throttle_time_ms": 0, "error_code": e}, group_read=True),
    ApiKey.END_TXN: _txn_id_api(lambda r, e: {"throttle_time_ms": 0, "error_code": e}),
    ApiKey.TXN_OFFSET_COMMIT: _txn_id_api(_txn_offset_commit_denied, group_read=True),
    # Kafka 3.0's transaction tools' APIs: Describe on the cluster here (kafpy serves them
    # for `kafpy transactions`)
    ApiKey.DESCRIBE_TRANSACTIONS: _cluster_api(Op.DESCRIBE, _top_level_error),
    ApiKey.LIST_TRANSACTIONS: _cluster_api(Op.DESCRIBE, _top_level_error),
    ApiKey.DESCRIBE_PRODUCERS: _cluster_api(Op.DESCRIBE, _top_level_error),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: _cluster_api(Op.DESCRIBE_CONFIGS, _top_level_error),
    ApiKey.ALTER_CLIENT_QUOTAS: _cluster_api(Op.ALTER_CONFIGS, _alter_client_quotas_denied),
    ApiKey.DESCRIBE_LOG_DIRS: _cluster_api(Op.DESCRIBE, _top_level_error),
    ApiKey.ALTER_REPLICA_LOG_DIRS: _cluster_api(Op.ALTER, _alter_replica_log_dirs_denied),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: _cluster_api(Op.ALTER, _top_level_error),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: _cluster_api(Op.DESCRIBE, _top_level_error),
}  # fmt: skip
