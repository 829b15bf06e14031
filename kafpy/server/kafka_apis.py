"""KafkaApis: the broker's request dispatch, one handler per API (Kafka's KafkaApis).

`handle(request)` picks the handler for the request's API key and returns the encoded
response frame, or None when there is nothing to send (Produce with acks=0). An
ApiVersions request at a version the broker does not speak gets Kafka's fallback answer
(a v0 body with UNSUPPORTED_VERSION listing ApiVersions' own range); any other API or
version the broker does not serve closes the connection, as Kafka 2.8 does (its request
parsing fails before any handler, so it has no response to send).

Handlers translate between wire dicts and the broker's components: ReplicaManager for
produce, fetch, offsets and the controller's LeaderAndIsr/StopReplica, MetadataCache for
Metadata and UpdateMetadata, AdminZkClient for topic auto-creation.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kafpy.admin.admin_zk_client import AdminZkClient
from kafpy.admin.replica_assignment import RackAwareMode
from kafpy.admin.scram_credentials import (
    alter_user_scram_credentials,
    describe_user_scram_credentials,
)
from kafpy.common import topic as topic_names
from kafpy.common.election_type import ElectionType
from kafpy.common.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTopicError,
    KafkaError,
    TopicExistsError,
)
from kafpy.common.logger import component_logger
from kafpy.common.topic_partition import TopicPartition
from kafpy.coordinator.group_apis import GroupApis
from kafpy.coordinator.group_coordinator import GroupCoordinator
from kafpy.coordinator.group_metadata_manager import GROUP_METADATA_TOPIC_NAME
from kafpy.coordinator.transaction.transaction_apis import TransactionApis
from kafpy.coordinator.transaction.transaction_coordinator import TransactionCoordinator
from kafpy.coordinator.transaction.transaction_log import TRANSACTION_STATE_TOPIC_NAME
from kafpy.network.request_channel import CloseConnection, Request, ResponseParts
from kafpy.protocol.acl_operations import (
    CLUSTER_OPERATIONS,
    TOPIC_OPERATIONS,
    to_bit_field,
)
from kafpy.protocol.api_keys import ApiKey, api_name
from kafpy.protocol.api_versions import SUPPORTED_VERSIONS
from kafpy.protocol.errors import Errors, error_code_of
from kafpy.protocol.headers import encode_response, frame_response
from kafpy.protocol.messages import API_SCHEMAS, RESPONSES, leader_and_isr, produce
from kafpy.protocol.messages.metadata import AUTHORIZED_OPERATIONS_OMITTED
from kafpy.protocol.types import ZERO_UUID
from kafpy.records.legacy_record import first_magic
from kafpy.records.memory_records import MemoryRecords
from kafpy.records.record_batch import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_CODEC_MASK,
    H_LENGTH,
    H_MAGIC,
    LOG_OVERHEAD,
    MAGIC_V2,
    RECORD_BATCH_OVERHEAD,
    header_at,
)
from kafpy.security.authorizer.acl_authorizer import AclAuthorizer
from kafpy.security.sasl_requests import handle_sasl_authenticate, handle_sasl_handshake
from kafpy.server import partition_reassignment_apis
from kafpy.server.acl_apis import AclApis
from kafpy.server.admin_manager import AdminManager
from kafpy.server.api_registry import API_REGISTRY
from kafpy.server.auth_helper import AuthHelper
from kafpy.server.client_quota_admin import ClientQuotaAdmin
from kafpy.server.client_quota_manager import QuotaManagers
from kafpy.server.describe_producers import describe_producers
from kafpy.server.kafka_config import KafkaConfig
from kafpy.server.metadata_cache import MetadataCache
from kafpy.server.producer_id_manager import ProducerIdManager
from kafpy.server.record_conversion import down_convert_fetch, up_convert_produce
from kafpy.server.replica_alter_log_dirs_manager import ReplicaAlterLogDirsManager
from kafpy.server.replica_manager import (
    DEBUGGING_CONSUMER_ID,
    FetchParams,
    FetchPartitionData,
    PartitionFetchInfo,
    ReplicaManager,
)
from kafpy.server.write_txn_markers import TxnMarkerWriter
from kafpy.storage.log_config import LogConfig
from kafpy.storage.log_validator import LogValidator

CONSUMER_REPLICA_ID = -1
# (API key, AdminManager method, only the controller answers it)
_ADMIN_APIS = (
    (ApiKey.CREATE_TOPICS, "create_topics", True),
    (ApiKey.DELETE_TOPICS, "delete_topics", True),
    (ApiKey.CREATE_PARTITIONS, "create_partitions", True),
    (ApiKey.DESCRIBE_CONFIGS, "describe_configs", False),
    (ApiKey.ALTER_CONFIGS, "alter_configs", False),
    (ApiKey.INCREMENTAL_ALTER_CONFIGS, "incremental_alter_configs", False),
)
# (API key, GroupApis method) of the group APIs but JoinGroup and FindCoordinator
_GROUP_APIS = (
    (ApiKey.SYNC_GROUP, "sync_group"),
    (ApiKey.HEARTBEAT, "heartbeat"),
    (ApiKey.LEAVE_GROUP, "leave_group"),
    (ApiKey.OFFSET_COMMIT, "offset_commit"),
    (ApiKey.OFFSET_FETCH, "offset_fetch"),
    (ApiKey.LIST_GROUPS, "list_groups"),
    (ApiKey.DESCRIBE_GROUPS, "describe_groups"),
    (ApiKey.DELETE_GROUPS, "delete_groups"),
    (ApiKey.OFFSET_DELETE, "offset_delete"),
    (ApiKey.TXN_OFFSET_COMMIT, "txn_offset_commit"),
)
_INT32_MAX = 2**31 - 1
# KIP-511: what ApiVersions v3+ accepts as a client software name or version
_SOFTWARE_NAME_OR_VERSION = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")

# a handler answers with a body to encode, or one already encoded (bytes), or None (no answer)
Handler = Callable[[Request], Awaitable[dict[str, Any] | bytes | None]]
# Metadata answers encoded at the current MetadataCache generation, at most this many
_METADATA_RESPONSES_CACHED = 256


def validate_produce_records(records: memoryview | bytes | None) -> KafkaError | None:
    """Kafka's check of a v3+ produce payload: exactly one v2 batch (a partial trailing
    batch is dropped later, as Kafka does). Returns the error for the partition, or None.
    Reads the first header and the next batch's length only; the LogValidator walks the
    batch itself."""
    one_batch = "Produce requests with version 3 and above must have exactly one record batch"
    if records is None:
        return InvalidRecordError(one_batch)
    end = len(records)
    try:
        header = header_at(records, 0, end, " of the produce request")
        if header is None:
            return InvalidRecordError(one_batch)
        if header[H_MAGIC] != MAGIC_V2:
            return _wrong_magic(header[H_MAGIC])
        if header_at(records, header[H_LENGTH] + LOG_OVERHEAD, end) is not None:
            return InvalidRecordError(
                "Produce requests with version 3 and above are only allowed to contain exactly one record batch"
            )
    except CorruptRecordError as exc:
        return exc
    return None


def _wrong_magic(magic: int) -> InvalidRecordError:
    return InvalidRecordError(
        "Produce requests with version 3 and above are only allowed to contain record batches "
        f"with magic version 2, got {magic}"
    )


# Requests the client quotas do not hold: the controller's and replicas' own (Kafka exempts
# what needs ClusterAction), and the ones a client needs to learn how it is throttled.
_QUOTA_EXEMPT = frozenset({ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA,
                           ApiKey.CONTROLLED_SHUTDOWN, ApiKey.API_VERSIONS})  # fmt: skip


class KafkaApis:
    """Handles every request the broker serves.

    Parameters: the broker's `config`, `replica_manager`, `metadata_cache`,
    `admin_zk_client` (topic auto-creation), `cluster_id`; `controller` (its `is_active`
    decides who answers CreateTopics, DeleteTopics and CreatePartitions: other brokers
    answer NOT_CONTROLLER), `admin_manager` (the admin APIs) and `producer_id_manager`
    (InitProducerId). An API whose component is missing is not served or advertised.
    """

    def __init__(
        self,
        config: KafkaConfig,
        replica_manager: ReplicaManager,
        metadata_cache: MetadataCache,
        admin_zk_client: AdminZkClient | None,
        cluster_id: str | None,
        controller: Any = None,
        admin_manager: AdminManager | None = None,
        producer_id_manager: ProducerIdManager | None = None,
        group_coordinator: GroupCoordinator | None = None,
        quotas: QuotaManagers | None = None,
        transaction_coordinator: TransactionCoordinator | None = None,
        authorizer: AclAuthorizer | None = None,
    ) -> None:
        self.config = config
        self.broker_id = config.broker_id
        self.replica_manager = replica_manager
        self.log_dirs = ReplicaAlterLogDirsManager(replica_manager)
        self.metadata_cache = metadata_cache
        self.admin_zk_client = admin_zk_client
        self.cluster_id = cluster_id
        self.controller = controller
        self.admin_manager = admin_manager
        self.producer_id_manager = producer_id_manager
        self.group_coordinator = group_coordinator
        self.quotas = quotas
        self.transaction_coordinator = transaction_coordinator
        self.txn_apis: TransactionApis | None = None
        self.auth = AuthHelper(
            authorizer, metadata_cache.contains_topic, config.auto_create_topics_enable
        )
        self.log = component_logger("kafpy.server.KafkaApis", "KafkaApi", self.broker_id)
        self._metadata_responses: dict[tuple[Any, ...], bytes] = {}
        self._metadata_responses_generation = -1
        self.metadata_responses_reused = 0
        handlers: dict[ApiKey, Handler] = {
            ApiKey.API_VERSIONS: self.handle_api_versions,
            ApiKey.METADATA: self.handle_metadata,
            ApiKey.PRODUCE: self.handle_produce,
            ApiKey.FETCH: self.handle_fetch,
            ApiKey.LIST_OFFSETS: self.handle_list_offsets,
            ApiKey.LEADER_AND_ISR: self.handle_leader_and_isr,
            ApiKey.UPDATE_METADATA: self.handle_update_metadata,
            ApiKey.STOP_REPLICA: self.handle_stop_replica,
            ApiKey.DELETE_RECORDS: self.handle_delete_records,
            ApiKey.OFFSET_FOR_LEADER_EPOCH: self.handle_offset_for_leader_epoch,
            ApiKey.DESCRIBE_CLUSTER: self.handle_describe_cluster,
            ApiKey.DESCRIBE_PRODUCERS: self.handle_describe_producers,
            ApiKey.SASL_HANDSHAKE: handle_sasl_handshake,
            ApiKey.SASL_AUTHENTICATE: handle_sasl_authenticate,
            ApiKey.DESCRIBE_LOG_DIRS: self.handle_describe_log_dirs,
            ApiKey.ALTER_REPLICA_LOG_DIRS: self.handle_alter_replica_log_dirs,
        }
        if admin_manager is not None:
            for key, api, controller_only in _ADMIN_APIS:
                handlers[key] = self._admin_handler(api, controller_only)
        if admin_zk_client is not None:
            zk = admin_zk_client.zk_client
            handlers[ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS] = lambda r: (
                describe_user_scram_credentials(zk, _body(r))
            )
            handlers[ApiKey.ALTER_USER_SCRAM_CREDENTIALS] = lambda r: alter_user_scram_credentials(
                zk, _body(r)
            )
        if producer_id_manager is not None:
            handlers[ApiKey.INIT_PRODUCER_ID] = self.handle_init_producer_id
        # transactions, the partition leader's side (issue 15)
        self.txn_marker_writer = TxnMarkerWriter(
            replica_manager, group_coordinator, replica_manager.time
        )
        handlers[ApiKey.WRITE_TXN_MARKERS] = self.handle_write_txn_markers
        if controller is not None and hasattr(controller, "controlled_shutdown"):
            handlers[ApiKey.CONTROLLED_SHUTDOWN] = self.handle_controlled_shutdown
        if controller is not None and hasattr(controller, "elect_leaders"):
            handlers[ApiKey.ELECT_LEADERS] = self.handle_elect_leaders
        if controller is not None and hasattr(controller, "alter_partition_reassignments"):
            handlers[ApiKey.ALTER_PARTITION_REASSIGNMENTS] = lambda r: (
                partition_reassignment_apis.alter_partition_reassignments(controller, _body(r))
            )
            handlers[ApiKey.LIST_PARTITION_REASSIGNMENTS] = lambda r: (
                partition_reassignment_apis.list_partition_reassignments(controller, _body(r))
            )
        if quotas is not None and admin_zk_client is not None:
            quota_admin = ClientQuotaAdmin(admin_zk_client.zk_client)
            # Kafka 2.8 checks AlterConfigs / DescribeConfigs on the cluster for these
            handlers[ApiKey.ALTER_CLIENT_QUOTAS] = lambda r: quota_admin.alter_client_quotas(
                _body(r)
            )
            handlers[ApiKey.DESCRIBE_CLIENT_QUOTAS] = lambda r: quota_admin.describe_client_quotas(
                _body(r)
            )
        if group_coordinator is not None:
            group_apis = GroupApis(
                group_coordinator, lambda tp: metadata_cache.get_partition_info(tp) is not None
            )
            handlers[ApiKey.FIND_COORDINATOR] = self.handle_find_coordinator
            handlers[ApiKey.JOIN_GROUP] = lambda r: group_apis.join_group(
                _body(r), r.api_version, r.header.client_id or "", "/" + r.client_address[0]
            )
            for key, api in _GROUP_APIS:
                handlers[key] = _group_handler(getattr(group_apis, api))
        if transaction_coordinator is not None and group_coordinator is not None:
            self.txn_apis = TransactionApis(
                transaction_coordinator,
                lambda tp: metadata_cache.get_partition_info(tp) is not None,
                group_coordinator.partition_for,
            )
            handlers[ApiKey.ADD_PARTITIONS_TO_TXN] = _group_handler(
                self.txn_apis.add_partitions_to_txn
            )
            handlers[ApiKey.ADD_OFFSETS_TO_TXN] = _group_handler(self.txn_apis.add_offsets_to_txn)
            handlers[ApiKey.END_TXN] = _group_handler(self.txn_apis.end_txn)
            handlers[ApiKey.DESCRIBE_TRANSACTIONS] = _group_handler(
                self.txn_apis.describe_transactions
            )
            handlers[ApiKey.LIST_TRANSACTIONS] = _group_handler(self.txn_apis.list_transactions)
        acl_apis = AclApis(self.auth, authorizer)
        handlers[ApiKey.DESCRIBE_ACLS] = acl_apis.handle_describe_acls
        handlers[ApiKey.CREATE_ACLS] = acl_apis.handle_create_acls
        handlers[ApiKey.DELETE_ACLS] = acl_apis.handle_delete_acls
        if self.auth.enabled:
            handlers[ApiKey.METADATA] = self._answer_metadata  # answers differ per principal
        # Serve only what both the codec declares and the broker advertises.
        self.handlers: dict[ApiKey, Handler] = {
            k: self._guarded(k, h) for k, h in handlers.items() if k in API_REGISTRY
        }

    def register(self, api_key: ApiKey, handler: Handler) -> None:
        """Serve one more API (the admin and producer-id APIs plug in here)."""
        if api_key in API_REGISTRY:
            self.handlers[api_key] = self._guarded(api_key, handler)

    def _guarded(self, api_key: ApiKey, handler: Handler) -> Handler:
        """The handler behind the authorizer's checks of its API."""
        guarded = self.auth.guard(api_key, handler)
        if api_key == ApiKey.DELETE_TOPICS:
            guarded = self._naming_topics_given_by_id(guarded)
        return guarded

    def _naming_topics_given_by_id(self, handler: Handler) -> Handler:
        """DeleteTopics v6+ may give topics by id (KIP-516): each id is looked up first (the
        controller's metadata cache knows them all), so that the authorizer checks names."""

        async def handle(request: Request) -> Any:
            body = request.body
            if request.api_version >= 6 and body is not None:
                topics = list(body.get("topics") or ())
                if any(t.get("topic_id") is not None and t.get("name") is None for t in topics):
                    named = [
                        {**t, "name": self.metadata_cache.topic_name(t["topic_id"]),
                         "named_by_id": True}
                        if t.get("topic_id") is not None and t.get("name") is None else t
                        for t in topics
                    ]  # fmt: skip
                    request = dataclasses.replace(request, body={**body, "topics": named})
            return await handler(request)

        return handle

    def supported_versions(self) -> dict[ApiKey, tuple[int, int]]:
        """What ApiVersions advertises: the advertised ranges of the APIs with a handler."""
        return {k: v for k, v in sorted(SUPPORTED_VERSIONS.items()) if k in self.handlers}

    # -- dispatch -------------------------------------------------------------------------

    async def handle(self, request: Request) -> ResponseParts | None:
        header = request.header
        if request.body is None or header.api_key not in self.handlers:
            if header.api_key == ApiKey.API_VERSIONS:
                schema = API_SCHEMAS[ApiKey.API_VERSIONS]
                answer = schema.error_response({}, 0, Errors.UNSUPPORTED_VERSION)
                lo, hi = schema.versions
                answer["api_keys"] = [{"api_key": int(ApiKey.API_VERSIONS), "min_version": lo,
                                     "max_version": hi}]  # fmt: skip
                return encode_response(ApiKey.API_VERSIONS, 0, header.correlation_id, answer)
            supported = SUPPORTED_VERSIONS.get(header.api_key)  # type: ignore[call-overload]
            if supported is None or header.api_key not in self.handlers:
                why = "this broker does not serve that API"
            else:
                why = f"this broker serves versions {supported[0]} to {supported[1]}"
            raise CloseConnection(
                f"unsupported request {api_name(header.api_key)} v{header.api_version} "
                f"(correlation id {header.correlation_id}, client id {header.client_id}): {why}"
            )
        quotas = self.quotas
        if (
            quotas is not None
            and header.api_key not in _QUOTA_EXEMPT
            and not (
                header.api_key == ApiKey.FETCH and (request.body or {}).get("replica_id", -1) >= 0
            )
        ):
            started = time.perf_counter()
            body = await self.handlers[ApiKey(header.api_key)](request)
            return self._throttle(quotas, request, body, time.perf_counter() - started)
        body = await self.handlers[ApiKey(header.api_key)](request)
        return self._encode(request, body)

    def _encode(
        self, request: Request, body: dict[str, Any] | bytes | None
    ) -> ResponseParts | None:
        header = request.header
        if body is None:
            return None
        if isinstance(body, bytes):
            return frame_response(header.api_key, header.api_version, header.correlation_id, [body])
        return encode_response(header.api_key, header.api_version, header.correlation_id, body)

    def _throttle(
        self,
        quotas: QuotaManagers,
        request: Request,
        body: dict[str, Any] | bytes | None,
        elapsed_s: float,
    ) -> ResponseParts | None:
        """Record the request against the client's quotas (Kafka's ClientQuotaManager and
        ClientRequestQuotaManager) and answer with the throttle time it earned; the socket
        server then leaves the connection unread for that long (request.context)."""
        user, client_id = request.principal.name, request.header.client_id or ""
        api_key = request.header.api_key
        throttle = 0
        if api_key == ApiKey.PRODUCE and quotas.produce.enabled:
            throttle = quotas.produce.record_and_get_throttle_time_ms(user, client_id, request.size)
        if quotas.request.enabled:
            # request_percentage: percent of one thread's time, as Kafka measures it
            throttle = max(throttle, quotas.request.record_and_get_throttle_time_ms(
                user, client_id, elapsed_s * 100))  # fmt: skip
        parts = self._encode(request, body)
        if (
            api_key == ApiKey.FETCH
            and quotas.fetch.enabled
            and parts is not None
            and isinstance(body, dict)
            and request.body is not None
            and request.body.get("replica_id", -1) < 0
        ):
            size = sum(len(p) for p in parts)
            fetch_throttle = quotas.fetch.record_and_get_throttle_time_ms(user, client_id, size)
            if fetch_throttle > 0:  # Kafka answers a throttled fetch without its records
                quotas.fetch.unrecord(user, client_id, size)
                for t in body.get("responses", ()):
                    for p in t.get("partitions", ()):
                        p["records"] = b""
                throttle = max(throttle, fetch_throttle)
        if throttle <= 0:
            return parts
        request.context["throttle_ms"] = throttle
        if isinstance(body, dict):
            body["throttle_time_ms"] = throttle
            return self._encode(request, body)
        return parts

    # -- ApiVersions ----------------------------------------------------------------------

    async def handle_api_versions(self, request: Request) -> dict[str, Any]:
        body = _body(request)
        if request.api_version >= 3 and not all(
            _SOFTWARE_NAME_OR_VERSION.fullmatch(body.get(f) or "")
            for f in ("client_software_name", "client_software_version")
        ):
            self.log.info(
                "Refusing ApiVersions v%d from client id %s: client software name %r and version %r "
                "must be letters, digits, '-' and '.', starting and ending with a letter or digit",
                request.api_version, request.header.client_id,
                body.get("client_software_name"), body.get("client_software_version"),
            )  # fmt: skip
            return {"error_code": Errors.INVALID_REQUEST, "api_keys": [], "throttle_time_ms": 0}
        return {
            "error_code": Errors.NONE,
            "api_keys": [
                {"api_key": int(k), "min_version": lo, "max_version": hi}
                for k, (lo, hi) in self.supported_versions().items()
            ],
            "throttle_time_ms": 0,
        }

    # -- Metadata -------------------------------------------------------------------------

    async def handle_metadata(self, request: Request) -> dict[str, Any] | bytes:
        """Metadata, answered from the MetadataCache. Encoding 1,000 partitions takes
        milliseconds of the event loop, and clients ask the same questions again and again:
        an answer naming only known topics is kept, encoded, until the next UpdateMetadata."""
        body = _body(request)
        version = request.api_version
        requested = body.get("topics")
        if requested is None or (version == 0 and not requested):
            names: tuple[Any, ...] = (None, *self.metadata_cache.get_all_topics())
        else:
            names = tuple((t.get("name"), t.get("topic_id")) for t in requested)
        if self._metadata_responses_generation != self.metadata_cache.generation:
            self._metadata_responses.clear()
            self._metadata_responses_generation = self.metadata_cache.generation
        key = (version, request.listener_name, names,
               body.get("include_cluster_authorized_operations"),
               body.get("include_topic_authorized_operations"))  # fmt: skip
        encoded = self._metadata_responses.get(key)
        if encoded is not None:
            self.metadata_responses_reused += 1
            return encoded
        generation = self.metadata_cache.generation
        response = await self._answer_metadata(request)
        if generation == self.metadata_cache.generation and all(
            t["error_code"] == Errors.NONE for t in response["topics"]
        ):
            if len(self._metadata_responses) >= _METADATA_RESPONSES_CACHED:
                self._metadata_responses.clear()
            encoded = b"".join(RESPONSES[ApiKey.METADATA].encode_parts(version, response))
            self._metadata_responses[key] = encoded
            return encoded
        return response

    async def _answer_metadata(self, request: Request) -> dict[str, Any]:
        body = request.body
        assert body is not None
        version = request.api_version
        requested = body.get("topics")
        all_topics = requested is None or (version == 0 and not requested)
        if any(t.get("name") is None or t.get("topic_id") not in (None, ZERO_UUID)
               for t in requested or ()):  # fmt: skip
            # Kafka 2.8 refuses topic ids and null names in Metadata requests: INVALID_REQUEST
            # for each topic, a null name answered as "" (the response has no null names)
            return self._metadata_response(request, [
                {"error_code": Errors.INVALID_REQUEST, "name": t.get("name") or "",
                 "topic_id": t.get("topic_id"), "is_internal": False, "partitions": []}
                for t in requested or ()
            ])  # fmt: skip
        if all_topics:
            names = self.metadata_cache.get_all_topics()
        else:
            names = list(dict.fromkeys(t["name"] for t in requested or ()))
        allow_auto = bool(body.get("allow_auto_topic_creation", True)) if version >= 4 else True
        listener = request.listener_name
        known = {
            t["name"]: t
            for t in self.metadata_cache.get_topic_metadata(
                names, listener, error_unavailable_endpoints=version == 0,
                error_unavailable_listeners=version >= 6,
            )
        }  # fmt: skip
        topics = []
        for name in names:
            entry = known.get(name)
            if entry is None:
                entry = await self._unknown_topic(name, allow_auto and not all_topics)
            topics.append(entry)
        if version >= 8 and body.get("include_topic_authorized_operations"):
            for entry in topics:
                if entry["error_code"] == Errors.NONE:
                    entry["topic_authorized_operations"] = to_bit_field(TOPIC_OPERATIONS)
        return self._metadata_response(request, topics)

    def _metadata_response(self, request: Request, topics: list[dict[str, Any]]) -> dict[str, Any]:
        body = _body(request)
        controller_id = self.metadata_cache.controller_id
        cluster_ops = AUTHORIZED_OPERATIONS_OMITTED
        if 8 <= request.api_version <= 10 and body.get("include_cluster_authorized_operations"):
            cluster_ops = to_bit_field(CLUSTER_OPERATIONS)
        return {
            "throttle_time_ms": 0,
            "brokers": self._brokers(request.listener_name),
            "cluster_id": self.cluster_id,
            "controller_id": -1 if controller_id is None else controller_id,
            "topics": topics,
            "cluster_authorized_operations": cluster_ops,
        }

    def _brokers(self, listener: str) -> list[dict[str, Any]]:
        return [
            {"node_id": b, "host": ep.host, "port": ep.port, "rack": rack}
            for b, ep, rack in self.metadata_cache.alive_endpoints(listener)
        ]

    # -- DescribeCluster ------------------------------------------------------------------

    async def handle_describe_cluster(self, request: Request) -> dict[str, Any]:
        """DescribeCluster (KIP-700): the brokers, controller and cluster id, as Metadata
        gives them, and the cluster's authorized operations when asked."""
        body = _body(request)
        controller_id = self.metadata_cache.controller_id
        return {
            "throttle_time_ms": 0,
            "error_code": Errors.NONE,
            "error_message": None,
            "cluster_id": self.cluster_id or "",
            "controller_id": -1 if controller_id is None else controller_id,
            "brokers": [
                {"broker_id": b["node_id"], "host": b["host"], "port": b["port"], "rack": b["rack"]}
                for b in self._brokers(request.listener_name)
            ],
            "cluster_authorized_operations": to_bit_field(CLUSTER_OPERATIONS)
            if body.get("include_cluster_authorized_operations")
            else AUTHORIZED_OPERATIONS_OMITTED,
        }

    async def _unknown_topic(self, name: str | None, allow_auto: bool) -> dict[str, Any]:
        def entry(error: int) -> dict[str, Any]:
            return {"error_code": error, "name": name, "is_internal": topic_names.is_internal(name or ""),
                    "partitions": []}  # fmt: skip

        try:
            topic_names.validate(name or "")
        except InvalidTopicError:
            return entry(Errors.INVALID_TOPIC_EXCEPTION)
        assert name is not None
        if (
            not (allow_auto and self.config.auto_create_topics_enable)
            or self.admin_zk_client is None
        ):
            return entry(Errors.UNKNOWN_TOPIC_OR_PARTITION)
        if topic_names.is_internal(name):
            return entry(Errors.UNKNOWN_TOPIC_OR_PARTITION)  # created by their coordinators
        partitions = self.config.num_partitions
        rf = self.config.default_replication_factor
        try:
            await self.admin_zk_client.create_topic(name, partitions, rf, {}, RackAwareMode.SAFE)
            self.log.info(
                "Auto creation of topic %s with %d partitions and replication factor %d is successful",
                name,
                partitions,
                rf,
            )
        except TopicExistsError:
            pass
        except KafkaError as e:
            self.log.error("Error while auto-creating topic %s: %s", name, e)
            return entry(error_code_of(e))
        return entry(Errors.LEADER_NOT_AVAILABLE)

    # -- Produce --------------------------------------------------------------------------

    async def handle_produce(self, request: Request) -> dict[str, Any] | None:
        body = request.body
        assert body is not None
        acks = body["acks"]
        entries: dict[TopicPartition, MemoryRecords | memoryview | bytes | None] = {}
        answers: dict[TopicPartition, dict[str, Any]] = {}
        order: list[TopicPartition] = []
        legacy: dict[TopicPartition, memoryview | bytes] = {}
        for topic in body["topic_data"]:
            for p in topic["partition_data"]:
                tp = TopicPartition(topic["name"], p["index"])
                order.append(tp)
                records = p["records"]
                if request.api_version < 3 and records and first_magic(records) in (0, 1):
                    legacy[tp] = records
                    continue
                error = validate_produce_records(records)
                if error is not None:
                    answers[tp] = produce.partition_error(
                        tp.partition, error_code_of(error), str(error)
                    )
                else:
                    entries[tp] = records
        for tp, records in legacy.items():
            try:
                entries[tp] = await up_convert_produce(records, self._log_config(tp))
            except KafkaError as e:
                answers[tp] = produce.partition_error(tp.partition, error_code_of(e), str(e))
        if acks not in (0, 1, -1):
            for tp in order:
                answers[tp] = produce.partition_error(
                    tp.partition, Errors.INVALID_REQUIRED_ACKS, None
                )
        elif entries:
            await self._validate_compressed_records(entries)
            answers.update(
                await self.replica_manager.append_records(
                    body["timeout_ms"],
                    acks,
                    entries,
                    # lets the socket server start the connection's next request
                    on_appended=request.context.get("release"),
                )  # fmt: skip
            )
        if acks == 0:
            failed = {
                str(tp): Errors(r["error_code"]).name
                for tp, r in answers.items()
                if r["error_code"]
            }
            if failed:
                raise CloseConnection(
                    f"error during produce request with correlation id {request.header.correlation_id} "
                    f"from client id {request.header.client_id} with ack=0; partitions and errors: {failed}"
                )
            return None
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp in dict.fromkeys(order):
            by_topic.setdefault(tp.topic, []).append(answers[tp])
        return {
            "responses": [{"name": t, "partition_responses": ps} for t, ps in by_topic.items()],
            "throttle_time_ms": 0,
        }

    async def _validate_compressed_records(
        self, entries: dict[TopicPartition, MemoryRecords | memoryview | bytes | None]
    ) -> None:
        """Run the LogValidator's record checks of compressed batches in a thread.

        Decompressing and walking a batch can take a while (up to decompressed_limit
        bytes), so it happens off the event loop and the other connections are served
        meanwhile. A batch that passes is handed on marked `records_validated`, and the
        append checks only its header; one that fails is handed on as it came, and the
        append's own validation (bounded as well) answers its error.
        """
        for tp, data in entries.items():
            if data is None or isinstance(data, MemoryRecords) or len(data) < RECORD_BATCH_OVERHEAD:
                continue
            if not data[ATTRIBUTES_OFFSET + 1] & COMPRESSION_CODEC_MASK:
                continue  # uncompressed: one pass over the record lengths, on the loop
            partition = self.replica_manager.get_partition(tp)
            log = partition.log if partition is not None and partition.is_leader else None
            if log is None:
                continue  # the append answers NOT_LEADER_OR_FOLLOWER
            view = memoryview(data)
            validator = LogValidator(log.config, tp)
            try:
                await asyncio.to_thread(validator.validate_records, view, log.time.milliseconds())
            except Exception:  # the append validates again, bounded, and answers the error
                continue
            entries[tp] = MemoryRecords(view, records_validated=True)

    # -- Fetch ----------------------------------------------------------------------------

    async def handle_fetch(self, request: Request) -> dict[str, Any]:
        body = request.body
        assert body is not None
        version = request.api_version
        session_id = body.get("session_id", 0)
        session_epoch = body.get("session_epoch", -1)
        if version >= 7 and (session_id != 0 or session_epoch not in (-1, 0)):
            # kafpy keeps no fetch sessions: every fetch is a full one (session id 0)
            error = (
                Errors.FETCH_SESSION_ID_NOT_FOUND
                if session_id != 0
                else Errors.INVALID_FETCH_SESSION_EPOCH
            )
            return {"throttle_time_ms": 0, "error_code": error, "session_id": 0, "responses": []}
        infos: list[tuple[TopicPartition, PartitionFetchInfo]] = []
        diverged: dict[TopicPartition, dict[str, Any]] = {}
        order: list[TopicPartition] = []
        for topic in body["topics"]:
            for p in topic["partitions"]:
                tp = TopicPartition(topic["topic"], p["partition"])
                order.append(tp)
                info = PartitionFetchInfo(p["fetch_offset"], p["partition_max_bytes"],
                                          p.get("current_leader_epoch", -1), p.get("log_start_offset", -1))  # fmt: skip
                answer = None
                if version >= 12 and p.get("last_fetched_epoch", -1) >= 0:
                    answer = self._check_last_fetched_epoch(tp, info, p["last_fetched_epoch"],
                                                            body["replica_id"])  # fmt: skip
                if answer is None:
                    infos.append((tp, info))
                else:
                    diverged[tp] = answer
        params = FetchParams(
            replica_id=body["replica_id"],
            # an answer about a diverging epoch goes out at once, as Kafka's does
            max_wait_ms=0 if diverged else body["max_wait_ms"],
            min_bytes=body["min_bytes"],
            max_bytes=body.get("max_bytes", _INT32_MAX),
            isolation_level=body.get("isolation_level", 0),
        )
        results = await self.replica_manager.fetch_messages(params, infos) if infos else []
        if version < 4:
            results = await self._down_convert(version, dict(infos), results)
        answers = dict(diverged)
        for tp, r in results:
            answers[tp] = {
                "partition_index": tp.partition,
                "error_code": r.error_code,
                "high_watermark": r.high_watermark,
                "last_stable_offset": r.last_stable_offset,
                "log_start_offset": r.log_start_offset,
                "aborted_transactions": r.aborted_transactions,
                "preferred_read_replica": -1,
                "records": r.records if r.records is not None else b"",
            }  # fmt: skip
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp in dict.fromkeys(order):
            if tp in answers:
                by_topic.setdefault(tp.topic, []).append(answers[tp])
        return {
            "throttle_time_ms": 0,
            "error_code": Errors.NONE,
            "session_id": 0,
            "responses": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
        }

    def _log_config(self, tp: TopicPartition) -> LogConfig:
        """The topic's log config where this broker holds the partition, else the
        broker's defaults (the append then answers why it cannot take the data)."""
        partition = self.replica_manager.get_partition(tp)
        log = partition.log if partition is not None else None
        return log.config if log is not None else LogConfig()

    async def _down_convert(
        self,
        version: int,
        infos: Mapping[TopicPartition, PartitionFetchInfo],
        results: list[tuple[TopicPartition, FetchPartitionData]],
    ) -> list[tuple[TopicPartition, FetchPartitionData]]:
        """Fetch v0-3: the stored batches as the message format the version carries."""
        for tp, r in results:
            if r.records is None or len(r.records) == 0:
                continue
            try:
                converted = await down_convert_fetch(
                    r.records, version, infos[tp].fetch_offset, self._log_config(tp)
                )
            except KafkaError as e:
                r.error_code, r.records = error_code_of(e), None
            else:
                r.records = memoryview(converted)
        return results

    def _check_last_fetched_epoch(
        self, tp: TopicPartition, info: PartitionFetchInfo, last_fetched_epoch: int, replica_id: int
    ) -> dict[str, Any] | None:
        """Fetch v12+ (KIP-595's truncation detection, Kafka's Partition.readRecords): the
        partition's answer when the fetcher's last fetched epoch diverges from this log
        (or cannot be checked), else None (read as usual)."""

        def answer(
            error: int, hw: int = -1, log_start: int = -1, epoch: int = -1, end: int = -1,
            lso: int | None = None,
        ) -> dict[str, Any]:  # fmt: skip
            return {"partition_index": tp.partition, "error_code": error, "high_watermark": hw,
                    "last_stable_offset": hw if lso is None else lso, "log_start_offset": log_start,
                    "diverging_epoch": None if epoch < 0 and end < 0 else {"epoch": epoch, "end_offset": end},
                    "aborted_transactions": None, "preferred_read_replica": -1, "records": b""}  # fmt: skip

        from_leader = replica_id != DEBUGGING_CONSUMER_ID
        try:
            partition = self.replica_manager.get_partition_or_error(tp)
            log = partition.local_log_or_error(info.current_leader_epoch, from_leader)
            epoch, end = partition.last_offset_for_leader_epoch(
                info.current_leader_epoch, last_fetched_epoch, from_leader
            )
        except KafkaError as e:
            return answer(error_code_of(e))
        hw, log_start = partition.high_watermark, log.log_start_offset
        lso = partition.last_stable_offset
        if epoch < 0 or end < 0 or info.fetch_offset < log_start:
            return answer(Errors.OFFSET_OUT_OF_RANGE, hw, log_start, lso=lso)
        if epoch < last_fetched_epoch or end < info.fetch_offset:
            return answer(Errors.NONE, hw, log_start, epoch, end, lso)
        return None

    # -- ListOffsets ----------------------------------------------------------------------

    async def handle_list_offsets(self, request: Request) -> dict[str, Any]:
        body = request.body
        assert body is not None
        replica_id = body["replica_id"]
        isolation = body.get("isolation_level", 0) if replica_id == CONSUMER_REPLICA_ID else None
        topics = []
        for topic in body["topics"]:
            parts = []
            for p in topic["partitions"]:
                tp = TopicPartition(topic["name"], p["partition_index"])
                if request.api_version == 0:
                    parts.append(self._legacy_list_offsets(tp, p, replica_id))
                    continue
                answer = {"partition_index": tp.partition, "error_code": Errors.NONE,
                          "timestamp": -1, "offset": -1, "leader_epoch": -1}  # fmt: skip
                try:
                    found = self.replica_manager.fetch_offset_for_timestamp(
                        tp, p["timestamp"], isolation, p.get("current_leader_epoch", -1),
                        replica_id != DEBUGGING_CONSUMER_ID,
                    )  # fmt: skip
                    if found is not None:
                        answer.update(timestamp=found.timestamp, offset=found.offset,
                                      leader_epoch=found.leader_epoch)  # fmt: skip
                except KafkaError as e:
                    answer["error_code"] = error_code_of(e)
                parts.append(answer)
            topics.append({"name": topic["name"], "partitions": parts})
        return {"throttle_time_ms": 0, "topics": topics}

    def _legacy_list_offsets(
        self, tp: TopicPartition, p: Mapping[str, Any], replica_id: int
    ) -> dict[str, Any]:
        """ListOffsets v0 (Kafka's legacyFetchOffsetsForTimestamp): up to
        max_num_offsets offsets, newest first, a consumer seeing none above the high
        watermark."""
        answer: dict[str, Any] = {"partition_index": tp.partition, "error_code": Errors.NONE,
                                  "old_style_offsets": []}  # fmt: skip
        try:
            partition = self.replica_manager.get_partition_or_error(tp)
            log = partition.local_log_or_error(-1, replica_id != DEBUGGING_CONSUMER_ID)
            offsets = log.legacy_fetch_offsets_before(p["timestamp"], p["max_num_offsets"])
        except KafkaError as e:
            answer["error_code"] = error_code_of(e)
            return answer
        if replica_id == CONSUMER_REPLICA_ID:
            hw = partition.high_watermark
            if any(o > hw for o in offsets):
                offsets = [hw, *(o for o in offsets if o <= hw)][: p["max_num_offsets"]]
        answer["old_style_offsets"] = offsets
        return answer

    # -- DeleteRecords / OffsetForLeaderEpoch ---------------------------------------------

    async def handle_delete_records(self, request: Request) -> dict[str, Any]:
        body = request.body
        assert body is not None
        offsets = {
            TopicPartition(t["name"], p["partition_index"]): p["offset"]
            for t in body["topics"] for p in t["partitions"]
        }  # fmt: skip
        results = await self.replica_manager.delete_records(body["timeout_ms"], offsets)
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp, (low, error) in results.items():
            by_topic.setdefault(tp.topic, []).append(
                {"partition_index": tp.partition, "low_watermark": low, "error_code": error}
            )
        return {
            "throttle_time_ms": 0,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        }

    async def handle_describe_log_dirs(self, request: Request) -> dict[str, Any]:
        topics = _body(request).get("topics")
        wanted = None if topics is None else {t["topic"]: t["partitions"] for t in topics}
        return {"throttle_time_ms": 0, "results": self.log_dirs.describe_log_dirs(wanted)}

    async def handle_alter_replica_log_dirs(self, request: Request) -> dict[str, Any]:
        moves = {
            TopicPartition(t["name"], p): d["path"]
            for d in _body(request)["dirs"] for t in d["topics"] for p in t["partitions"]
        }  # fmt: skip
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp, error in self.log_dirs.alter_replica_log_dirs(moves).items():
            by_topic.setdefault(tp.topic, []).append(
                {"partition_index": tp.partition, "error_code": error}
            )
        return {
            "throttle_time_ms": 0,
            "results": [{"topic_name": t, "partitions": ps} for t, ps in by_topic.items()],
        }

    async def handle_offset_for_leader_epoch(self, request: Request) -> dict[str, Any]:
        body = request.body
        assert body is not None
        replica_id = body.get("replica_id", -2)
        topics = []
        for t in body["topics"]:
            parts = []
            for p in t["partitions"]:
                tp = TopicPartition(t["topic"], p["partition"])
                answer = {
                    "error_code": Errors.NONE,
                    "partition": tp.partition,
                    "leader_epoch": -1,
                    "end_offset": -1,
                }
                try:
                    epoch, end = self.replica_manager.last_offset_for_leader_epoch(
                        tp,
                        p.get("current_leader_epoch", -1),
                        p["leader_epoch"],
                        replica_id != DEBUGGING_CONSUMER_ID,
                    )
                    answer.update(leader_epoch=epoch, end_offset=end)
                except KafkaError as e:
                    answer["error_code"] = error_code_of(e)
                parts.append(answer)
            topics.append({"topic": t["topic"], "partitions": parts})
        return {"throttle_time_ms": 0, "topics": topics}

    # -- admin APIs and InitProducerId ----------------------------------------------------

    def _admin_handler(self, api: str, controller_only: bool) -> Handler:
        async def handle(request: Request) -> dict[str, Any]:
            manager = self.admin_manager
            assert manager is not None and request.body is not None
            if controller_only and not (self.controller is not None and self.controller.is_active):
                return manager.error_response(
                    api, request.body, request.api_version, Errors.NOT_CONTROLLER,
                    f"Broker {self.broker_id} is not the controller; send {api} requests to the "
                    "controller (see the controller id in Metadata).",
                )  # fmt: skip
            body = request.body
            refused: list[dict[str, Any]] = []
            ids: dict[str, uuid.UUID] = {}
            if api == "delete_topics" and request.api_version >= 6:
                body, refused, ids = _delete_topics_by_name(body)
            result: dict[str, Any] = await getattr(manager, api)(body, request.api_version)
            for r in result["responses"] if ids else ():
                r["topic_id"] = ids.get(r["name"])
            if refused:
                result["responses"].extend(refused)
            if api == "create_topics" and request.api_version >= 5:
                self._fill_created_topics(body, result)
            return result

        return handle

    def _fill_created_topics(self, body: Mapping[str, Any], result: dict[str, Any]) -> None:
        """CreateTopics v5+ (KIP-525): each created (or, with validate_only, creatable) topic's
        partition count, replication factor and configs, as DescribeConfigs reports them."""
        manager = self.admin_manager
        assert manager is not None
        asked = {t["name"]: t for t in body.get("topics") or ()}
        for entry in result["topics"]:
            topic = asked.get(entry["name"])
            if entry["error_code"] != Errors.NONE or topic is None:
                continue
            assignments = topic.get("assignments") or []
            if assignments:
                entry["num_partitions"] = len(assignments)
                entry["replication_factor"] = len(assignments[0]["broker_ids"])
            else:
                n, rf = topic.get("num_partitions", -1), topic.get("replication_factor", -1)
                entry["num_partitions"] = self.config.num_partitions if n == -1 else n
                entry["replication_factor"] = (
                    self.config.default_replication_factor if rf == -1 else rf
                )
            overrides = {c["name"]: c["value"] for c in topic.get("configs") or ()}
            entry["configs"] = [
                {"name": c["name"], "value": c["value"], "read_only": c["read_only"],
                 "config_source": c["config_source"], "is_sensitive": c["is_sensitive"]}
                for c in manager.topic_config_entries(overrides)
            ]  # fmt: skip

    async def handle_write_txn_markers(self, request: Request) -> dict[str, Any]:
        # authorize ClusterAction: Kafka answers CLUSTER_AUTHORIZATION_FAILED for every
        # partition of every marker when the principal may not act for the cluster
        return await self.txn_marker_writer.write_txn_markers(_body(request))

    async def handle_describe_producers(self, request: Request) -> dict[str, Any]:
        return describe_producers(self.replica_manager, _body(request))

    async def handle_init_producer_id(self, request: Request) -> dict[str, Any]:
        assert self.producer_id_manager is not None and request.body is not None
        pid, epoch = request.body.get("producer_id", -1), request.body.get("producer_epoch", -1)
        if (pid == -1) != (epoch == -1):
            # KIP-360 (v3+): an existing producer id comes with its epoch, or neither is given
            return {"throttle_time_ms": 0, "error_code": Errors.INVALID_REQUEST,
                    "producer_id": -1, "producer_epoch": -1}  # fmt: skip
        if request.body.get("transactional_id") is not None and self.txn_apis is not None:
            return await self.txn_apis.init_producer_id(request.body, request.api_version)
        # Without a transactional id Kafka hands out a new producer id, given one or not.
        return await self.producer_id_manager.handle_init_producer_id(
            request.body, request.api_version
        )

    # -- controller requests --------------------------------------------------------------

    def _broker_epoch_is_stale(self, body: Mapping[str, Any], request_name: str) -> bool:
        """As Kafka's isBrokerEpochStale: a request meant for an earlier registration of
        this broker (its epoch older than the current one, which the controller holds) is
        stale and skipped. A request without an epoch (-1, from a controller before
        KIP-380) is not checked, and a newer epoch is taken: the controller may learn it
        before this broker does."""
        epoch: int = body.get("broker_epoch", -1)
        current: int = self.controller.broker_epoch if self.controller is not None else -1
        if epoch == -1 or epoch >= current:
            return False
        self.log.info(
            "Received %s request with broker epoch %d smaller than the current broker epoch %d",
            request_name,
            epoch,
            current,
        )
        return True

    async def handle_leader_and_isr(self, request: Request) -> dict[str, Any]:
        body = request.body
        assert body is not None
        if self._broker_epoch_is_stale(body, "LeaderAndIsr"):
            return leader_and_isr.error_response(
                body, request.api_version, Errors.STALE_BROKER_EPOCH
            )
        await self.replica_manager.load_topic_configs(body)
        response = await self.replica_manager.become_leader_or_follower_in_slices(
            body, request.api_version
        )
        self._on_leadership_change(body, response)
        self.log_dirs.resume_moves()
        # as Kafka's becomeLeaderOrFollower: fetchers left without partitions stop
        await self.replica_manager.replica_fetcher_manager.shutdown_idle_fetcher_threads()
        return leader_and_isr.versioned_response(body, response, request.api_version)

    def _on_leadership_change(self, body: Mapping[str, Any], response: Mapping[str, Any]) -> None:
        """The group and transaction coordinators take or give up the __consumer_offsets and
        __transaction_state partitions whose leadership this LeaderAndIsr request changed
        (Kafka's onLeadershipChange; the coordinator epoch is the leader epoch)."""
        applied = {(e["topic_name"], e["partition_index"]) for e in response.get("partition_errors", ())
                   if e["error_code"] == Errors.NONE}  # fmt: skip
        txn = self.transaction_coordinator
        for topic, state in leader_and_isr.partition_states(body):
            if (
                txn is not None
                and topic == TRANSACTION_STATE_TOPIC_NAME
                and (topic, state["partition_index"]) in applied
            ):
                if state["leader"] == self.broker_id:
                    txn.on_election(state["partition_index"], state["leader_epoch"])
                else:
                    txn.on_resignation(state["partition_index"], state["leader_epoch"])
            if self.group_coordinator is None:
                continue
            if topic == GROUP_METADATA_TOPIC_NAME and (topic, state["partition_index"]) in applied:
                if state["leader"] == self.broker_id:
                    self.group_coordinator.on_election(state["partition_index"])
                else:
                    self.group_coordinator.on_resignation(state["partition_index"])

    async def handle_update_metadata(self, request: Request) -> dict[str, Any]:
        body = request.body
        assert body is not None
        if self._broker_epoch_is_stale(body, "update metadata"):
            return {"error_code": Errors.STALE_BROKER_EPOCH}
        rm = self.replica_manager
        if body["controller_epoch"] < rm.controller_epoch:
            rm.state_change_log.warning(
                "Received UpdateMetadata request from controller %d with epoch %d, older than the latest "
                "known controller epoch %d; ignoring it",
                body["controller_id"],
                body["controller_epoch"],
                rm.controller_epoch,
            )
            return {"error_code": Errors.STALE_CONTROLLER_EPOCH}
        deleted = self.metadata_cache.update_metadata(body, request.api_version)
        rm.controller_epoch = body["controller_epoch"]
        for tp in deleted:
            # parked fetches on a deleted partition answer now
            rm.delayed_fetch_purgatory.check_and_complete(tp)
        if self.admin_manager is not None and self.admin_manager.has_delayed_topic_operations:
            self.admin_manager.try_complete_delayed_topic_operations()
        return {"error_code": Errors.NONE}

    async def handle_controlled_shutdown(self, request: Request) -> dict[str, Any]:
        body = request.body
        assert body is not None
        if not (self.controller is not None and self.controller.is_active):
            return {"error_code": Errors.NOT_CONTROLLER, "remaining_partitions": []}
        error, remaining = await self.controller.controlled_shutdown(
            body["broker_id"], body.get("broker_epoch", -1)
        )
        return {
            "error_code": error,
            "remaining_partitions": [
                {"topic_name": tp.topic, "partition_index": tp.partition} for tp in remaining
            ],
        }

    async def handle_elect_leaders(self, request: Request) -> dict[str, Any]:
        """ElectLeaders (KIP-183; election types from v1, KIP-460), answered by the
        controller; other brokers answer NOT_CONTROLLER per partition. A partition elected
        is answered once this broker's metadata shows its new leader, or REQUEST_TIMED_OUT
        after timeout_ms (Kafka's DelayedElectLeader). Asked for every partition (null
        topic_partitions), those that needed no election are left out, as Kafka does."""
        body = _body(request)
        requested = body.get("topic_partitions")
        timeout_ms = max(0, int(body.get("timeout_ms", 60000)))
        if requested is None:
            partitions = [
                TopicPartition(topic, p)
                for topic in self.metadata_cache.get_all_topics()
                for p in sorted(self.metadata_cache.partitions_for(topic))
            ]
        else:
            partitions = [TopicPartition(t["topic"], p) for t in requested for p in t["partitions"]]
        code = int(body.get("election_type", ElectionType.PREFERRED))
        if code not in ElectionType.__members__.values():
            message = f"Unknown election type {code}: 0 (preferred) or 1 (unclean)."
            return _elect_leaders_response(
                {tp: (Errors.INVALID_REQUEST, message) for tp in partitions}
            )
        if not self.controller.is_active:
            return _elect_leaders_response({tp: (Errors.NOT_CONTROLLER, None) for tp in partitions})
        try:
            elected = await self.controller.elect_leaders(
                None if requested is None else partitions, ElectionType(code), timeout_ms / 1000
            )
        except TimeoutError:
            return _elect_leaders_response(
                {tp: (Errors.REQUEST_TIMED_OUT, None) for tp in partitions}
            )
        results: dict[TopicPartition, tuple[int, str | None]] = {
            tp: (r.error_code, r.error_message)
            for tp, r in elected.items()
            if requested is not None or r.error_code != Errors.ELECTION_NOT_NEEDED
        }
        expected = {tp: r.leader for tp, r in elected.items() if r.error_code == Errors.NONE}

        async def leaders_known() -> bool:
            return all(
                (info := self.metadata_cache.get_partition_info(tp)) is not None
                and info.leader == leader
                for tp, leader in expected.items()
            )

        if expected and self.admin_manager is not None:
            if not await self.admin_manager.wait_for_metadata(leaders_known, timeout_ms):
                for tp, leader in expected.items():
                    info = self.metadata_cache.get_partition_info(tp)
                    if info is None or info.leader != leader:
                        results[tp] = (Errors.REQUEST_TIMED_OUT, None)
        return _elect_leaders_response(results)

    async def handle_stop_replica(self, request: Request) -> dict[str, Any]:
        body = request.body
        assert body is not None
        if self._broker_epoch_is_stale(body, "stop replica"):
            return {"error_code": Errors.STALE_BROKER_EPOCH, "partition_errors": []}
        async with self.replica_manager.state_change_lock:
            response = self.replica_manager.stop_replicas(body, request.api_version)
        if self.transaction_coordinator is not None:
            for e in response.get("partition_errors", ()):
                if (
                    e["topic_name"] == TRANSACTION_STATE_TOPIC_NAME
                    and e["error_code"] == Errors.NONE
                ):
                    self.transaction_coordinator.on_resignation(e["partition_index"])
        if self.group_coordinator is not None:
            for e in response.get("partition_errors", ()):
                if e["topic_name"] == GROUP_METADATA_TOPIC_NAME and e["error_code"] == Errors.NONE:
                    self.group_coordinator.on_resignation(e["partition_index"])
        return response

    # -- FindCoordinator ------------------------------------------------------------------

    async def handle_find_coordinator(self, request: Request) -> dict[str, Any]:
        body = _body(request)
        coordinator = self.group_coordinator
        assert coordinator is not None

        def answer(error: int, node: int = -1, host: str = "", port: int = -1) -> dict[str, Any]:
            return {"throttle_time_ms": 0, "error_code": error, "error_message": None if error == Errors.NONE
                    else Errors(error).name, "node_id": node, "host": host, "port": port}  # fmt: skip

        key_type = body.get("key_type", 0)
        if key_type == 1 and self.transaction_coordinator is not None:
            topic = TRANSACTION_STATE_TOPIC_NAME
            partition = self.transaction_coordinator.partition_for(body["key"])
            if not self.metadata_cache.contains_topic(topic):
                await self._create_transaction_state_topic()
                return answer(Errors.COORDINATOR_NOT_AVAILABLE)
        elif key_type != 0:
            return answer(
                Errors.COORDINATOR_NOT_AVAILABLE if key_type == 1 else Errors.INVALID_REQUEST
            )
        else:
            topic = GROUP_METADATA_TOPIC_NAME
            partition = coordinator.partition_for(body["key"])
            if not self.metadata_cache.contains_topic(topic):
                await self._create_offsets_topic()
                return answer(Errors.COORDINATOR_NOT_AVAILABLE)
        info = self.metadata_cache.get_partition_info(TopicPartition(topic, partition))
        if info is None or info.leader < 0:
            return answer(Errors.COORDINATOR_NOT_AVAILABLE)
        for node, endpoint, _ in self.metadata_cache.alive_endpoints(request.listener_name):
            if node == info.leader:
                return answer(Errors.NONE, node, endpoint.host, endpoint.port)
        return answer(Errors.COORDINATOR_NOT_AVAILABLE)

    async def _create_offsets_topic(self) -> None:
        """Create __consumer_offsets on first use. The replication factor is
        offsets.topic.replication.factor, lowered to the live brokers when fewer are up
        (Kafka 2.x refuses instead; kafpy lets a single broker serve groups)."""
        if self.admin_zk_client is None:
            return
        cfg = self.group_coordinator.offset_config if self.group_coordinator else None
        assert cfg is not None
        alive = len(self.metadata_cache.alive_brokers())
        rf = min(cfg.offsets_topic_replication_factor, max(alive, 1))
        if rf < cfg.offsets_topic_replication_factor:
            self.log.warning(
                "Creating %s with replication factor %d: only %d brokers are alive, fewer than "
                "offsets.topic.replication.factor=%d.",
                GROUP_METADATA_TOPIC_NAME, rf, alive, cfg.offsets_topic_replication_factor,
            )  # fmt: skip
        topic_config = {
            "cleanup.policy": "compact",
            "compression.type": "producer",
            "segment.bytes": str(cfg.offsets_topic_segment_bytes),
        }
        try:
            await self.admin_zk_client.create_topic(
                GROUP_METADATA_TOPIC_NAME,
                cfg.offsets_topic_num_partitions,
                rf,
                topic_config,
                RackAwareMode.SAFE,
            )
            self.log.info("Created %s with %d partitions and replication factor %d",
                          GROUP_METADATA_TOPIC_NAME, cfg.offsets_topic_num_partitions, rf)  # fmt: skip
        except TopicExistsError:
            pass
        except KafkaError as e:
            self.log.error("Error while creating %s: %s", GROUP_METADATA_TOPIC_NAME, e)

    async def _create_transaction_state_topic(self) -> None:
        """Create __transaction_state on the first FindCoordinator for a transactional id;
        as Kafka, not while fewer brokers are alive than its replication factor."""
        assert self.transaction_coordinator is not None
        cfg = self.transaction_coordinator.config
        alive = len(self.metadata_cache.alive_brokers())
        rf = cfg.transaction_log_replication_factor
        if self.admin_zk_client is None:
            return
        if alive < rf:
            self.log.error(
                "Number of alive brokers '%d' does not meet the required replication factor '%d' for "
                "the transactions state topic (configured via 'transaction.state.log.replication.factor'). "
                "This error can be ignored if the cluster is starting up and not all brokers are up yet.",
                alive, rf,
            )  # fmt: skip
            return
        try:
            await self.admin_zk_client.create_topic(
                TRANSACTION_STATE_TOPIC_NAME, cfg.transaction_log_num_partitions, rf,
                cfg.topic_configs(), RackAwareMode.SAFE,
            )  # fmt: skip
            self.log.info("Created %s with %d partitions and replication factor %d",
                          TRANSACTION_STATE_TOPIC_NAME, cfg.transaction_log_num_partitions, rf)  # fmt: skip
        except TopicExistsError:
            pass
        except KafkaError as e:
            self.log.error("Error while creating %s: %s", TRANSACTION_STATE_TOPIC_NAME, e)


def _body(request: Request) -> dict[str, Any]:
    assert request.body is not None
    return request.body


def _group_handler(api: Callable[[dict[str, Any], int], Awaitable[dict[str, Any]]]) -> Handler:
    async def handle(request: Request) -> dict[str, Any]:
        return await api(_body(request), request.api_version)

    return handle


def _elect_leaders_response(
    results: Mapping[TopicPartition, tuple[int, str | None]],
) -> dict[str, Any]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for tp, (code, message) in results.items():
        by_topic.setdefault(tp.topic, []).append(
            {"partition_id": tp.partition, "error_code": code, "error_message": message}
        )
    return {
        "throttle_time_ms": 0,
        "error_code": Errors.NONE,
        "replica_election_results": [
            {"topic": topic, "partition_result": parts} for topic, parts in by_topic.items()
        ],
    }


def _delete_topics_by_name(
    body: Mapping[str, Any],
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, uuid.UUID]]:
    """DeleteTopics v6+: the body with `topic_names` (what AdminManager reads), the answers
    for topics that cannot be deleted as given, and the ids of the topics given by id
    (`named_by_id`, their names looked up already), for their answers."""
    names: list[str] = []
    refused: list[dict[str, Any]] = []
    ids: dict[str, uuid.UUID] = {}
    for t in body.get("topics") or ():
        name, topic_id = t.get("name"), t.get("topic_id")
        if t.get("named_by_id"):
            if name is None:
                refused.append({"name": None, "topic_id": topic_id, "error_code": Errors.UNKNOWN_TOPIC_ID,
                                "error_message": None})  # fmt: skip
            else:
                names.append(name)
                ids[name] = topic_id
        elif name is not None and topic_id is not None:
            refused.append({"name": name, "topic_id": topic_id, "error_code": Errors.INVALID_REQUEST,
                            "error_message": "Topic name and topic ID can not both be specified."})  # fmt: skip
        elif name is None:
            refused.append({"name": None, "topic_id": None, "error_code": Errors.INVALID_REQUEST,
                            "error_message": "Neither a topic name nor a topic ID was given."})  # fmt: skip
        else:
            names.append(name)
    return {**body, "topic_names": names}, refused, ids
