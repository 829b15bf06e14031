"""KafkaApis: the broker's request dispatch, one handler per API (Kafka's KafkaApis).

`handle(request)` picks the handler for the request's API key and returns the encoded
response frame, or None when there is nothing to send (Produce with acks=0). An
ApiVersions request at a version the broker does not speak gets Kafka's fallback answer
(a v0 body with UNSUPPORTED_VERSION listing ApiVersions' own range); any other API or
version the broker does not serve closes the connection, as Kafka 2.8 does (its request
parsing fails before any handler, so it has no response to send).

The handlers live in handler groups named after what answers them (replica_apis,
metadata_apis, controller_request_apis, admin_apis, coordinator_apis, connection_apis,
acl_apis); the API registry (api_registry.py) names each API's handler, the component it
needs and its authorization guard. KafkaApis builds the groups over the broker's
components (ApiContext), serves each registered API whose component is there, and throttles
answers by the client quotas (request_handler_helper.py).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Awaitable, Callable
from typing import Any

from kafpy.admin.admin_zk_client import AdminZkClient
from kafpy.common.logger import component_logger
from kafpy.controller.kafka_controller import KafkaController
from kafpy.coordinator.group_coordinator import GroupCoordinator
from kafpy.coordinator.transaction.transaction_coordinator import TransactionCoordinator
from kafpy.network.request_channel import CloseConnection, Request, ResponseParts
from kafpy.protocol.api_keys import ApiKey, api_name
from kafpy.protocol.api_versions import SUPPORTED_VERSIONS
from kafpy.protocol.errors import Errors
from kafpy.protocol.headers import encode_response
from kafpy.protocol.messages import API_SCHEMAS
from kafpy.security.authorizer.acl_authorizer import AclAuthorizer
from kafpy.server import request_handler_helper
from kafpy.server.acl_apis import AclApis
from kafpy.server.admin_apis import AdminApis
from kafpy.server.admin_manager import AdminManager
from kafpy.server.api_context import ApiContext
from kafpy.server.api_registry import API_REGISTRY, Response
from kafpy.server.auth_helper import AuthHelper
from kafpy.server.client_quota_manager import QuotaManagers
from kafpy.server.connection_apis import ConnectionApis
from kafpy.server.controller_request_apis import ControllerRequestApis
from kafpy.server.coordinator_apis import CoordinatorApis
from kafpy.server.delegation_token_apis import DelegationTokenApis
from kafpy.server.delegation_token_manager import DelegationTokenManager
from kafpy.server.finalized_feature_cache import FinalizedFeatureCache
from kafpy.server.kafka_config import KafkaConfig
from kafpy.server.metadata_apis import MetadataApis
from kafpy.server.metadata_cache import MetadataCache
from kafpy.server.producer_id_manager import ProducerIdManager
from kafpy.server.replica_alter_log_dirs_manager import ReplicaAlterLogDirsManager
from kafpy.server.replica_apis import ReplicaApis
from kafpy.server.replica_manager import ReplicaManager

Handler = Callable[[Request], Awaitable[Response]]


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
        controller: KafkaController | None = None,
        admin_manager: AdminManager | None = None,
        producer_id_manager: ProducerIdManager | None = None,
        group_coordinator: GroupCoordinator | None = None,
        quotas: QuotaManagers | None = None,
        transaction_coordinator: TransactionCoordinator | None = None,
        authorizer: AclAuthorizer | None = None,
        finalized_feature_cache: FinalizedFeatureCache | None = None,
        token_manager: DelegationTokenManager | None = None,
    ) -> None:
        auth = AuthHelper(
            authorizer, metadata_cache.contains_topic, config.auto_create_topics_enable
        )
        self.ctx = ApiContext(
            config, replica_manager, metadata_cache, admin_zk_client, cluster_id,
            component_logger("kafpy.server.KafkaApis", "KafkaApi", config.broker_id), auth,
            ReplicaAlterLogDirsManager(replica_manager), authorizer, controller, admin_manager,
            producer_id_manager, group_coordinator, quotas, transaction_coordinator,
            finalized_feature_cache, token_manager,
        )  # fmt: skip
        self.metadata_apis = MetadataApis(self.ctx)
        groups: dict[type[Any], Any] = {
            ConnectionApis: ConnectionApis(self.ctx, self.supported_versions),
            MetadataApis: self.metadata_apis,
            ReplicaApis: ReplicaApis(self.ctx),
            ControllerRequestApis: ControllerRequestApis(self.ctx),
            AdminApis: AdminApis(self.ctx),
            CoordinatorApis: CoordinatorApis(self.ctx),
            AclApis: AclApis(auth, authorizer),
            DelegationTokenApis: DelegationTokenApis(self.ctx),
        }
        available = self.ctx.available()
        self.handlers: dict[ApiKey, Handler] = {
            key: self._guarded(key, functools.partial(entry.handler, groups[entry.group]))
            for key, entry in API_REGISTRY.items()
            if entry.needs is None or entry.needs in available
        }

    @property
    def config(self) -> KafkaConfig:
        return self.ctx.config

    @property
    def controller(self) -> KafkaController | None:
        return self.ctx.controller

    @controller.setter
    def controller(self, controller: KafkaController | None) -> None:
        self.ctx.controller = controller

    @property
    def log_dirs(self) -> ReplicaAlterLogDirsManager:
        """The moves of replicas between this broker's log dirs (AlterReplicaLogDirs)."""
        return self.ctx.log_dirs

    @property
    def metadata_responses_reused(self) -> int:
        """How many Metadata answers were sent from the encoded-answer cache."""
        return self.metadata_apis.metadata_responses_reused

    def register(self, api_key: ApiKey, handler: Handler) -> None:
        """Serve a registered API with another handler (tests plug in here); an API without
        a registry entry is not served."""
        if api_key in API_REGISTRY:
            self.handlers[api_key] = self._guarded(api_key, handler)

    def _guarded(self, api_key: ApiKey, handler: Handler) -> Handler:
        """The handler behind the authorizer's checks of its API."""
        guarded = self.ctx.auth.guard(api_key, handler)
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
                        {**t, "name": self.ctx.metadata_cache.topic_name(t["topic_id"]),
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
        handler = self.handlers[ApiKey(header.api_key)]
        quotas = self.ctx.quotas
        if quotas is not None and not request_handler_helper.is_quota_exempt(request):
            started = time.perf_counter()
            body = await handler(request)
            elapsed_s = time.perf_counter() - started
            return request_handler_helper.throttle(quotas, request, body, elapsed_s)
        return request_handler_helper.encode(request, await handler(request))
