"""The admin APIs (Kafka's KafkaApis handlers of CreateTopics, DeleteTopics,
CreatePartitions, the config APIs, the SCRAM credential APIs and the client quota APIs),
answered by AdminManager, the metadata store and ClientQuotaAdmin.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kafpy.admin.scram_credentials import (
    alter_user_scram_credentials,
    describe_user_scram_credentials,
)
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.network.request_channel import Request
from kafpy.protocol.errors import Errors
from kafpy.server.admin_manager import AdminManager
from kafpy.server.api_context import ApiContext, body_of
from kafpy.server.client_quota_admin import ClientQuotaAdmin

AdminCall = Callable[[dict[str, Any], int], Awaitable[dict[str, Any]]]


class AdminApis:
    """Answers the admin APIs; the topic APIs only on the controller."""

    def __init__(self, ctx: ApiContext) -> None:
        self.ctx = ctx
        zk = ctx.admin_zk_client
        self.quota_admin = ClientQuotaAdmin(zk.zk_client) if zk is not None else None

    def _manager(self) -> AdminManager:
        assert self.ctx.admin_manager is not None
        return self.ctx.admin_manager

    def _zk(self) -> KafkaZkClient:
        assert self.ctx.admin_zk_client is not None
        return self.ctx.admin_zk_client.zk_client

    def _quota_admin(self) -> ClientQuotaAdmin:
        assert self.quota_admin is not None
        return self.quota_admin

    async def handle_create_topics(self, request: Request) -> dict[str, Any]:
        return await self._admin(request, "create_topics", self._manager().create_topics, True)

    async def handle_delete_topics(self, request: Request) -> dict[str, Any]:
        return await self._admin(request, "delete_topics", self._manager().delete_topics, True)

    async def handle_create_partitions(self, request: Request) -> dict[str, Any]:
        manager = self._manager()
        return await self._admin(request, "create_partitions", manager.create_partitions, True)

    async def handle_describe_configs(self, request: Request) -> dict[str, Any]:
        manager = self._manager()
        return await self._admin(request, "describe_configs", manager.describe_configs, False)

    async def handle_alter_configs(self, request: Request) -> dict[str, Any]:
        return await self._admin(request, "alter_configs", self._manager().alter_configs, False)

    async def handle_incremental_alter_configs(self, request: Request) -> dict[str, Any]:
        manager = self._manager()
        return await self._admin(
            request, "incremental_alter_configs", manager.incremental_alter_configs, False
        )

    async def handle_describe_user_scram_credentials(self, request: Request) -> dict[str, Any]:
        return await describe_user_scram_credentials(self._zk(), body_of(request))

    async def handle_alter_user_scram_credentials(self, request: Request) -> dict[str, Any]:
        return await alter_user_scram_credentials(self._zk(), body_of(request))

    async def handle_describe_client_quotas(self, request: Request) -> dict[str, Any]:
        return await self._quota_admin().describe_client_quotas(body_of(request))

    async def handle_alter_client_quotas(self, request: Request) -> dict[str, Any]:
        return await self._quota_admin().alter_client_quotas(body_of(request))

    async def _admin(
        self, request: Request, api: str, call: AdminCall, controller_only: bool
    ) -> dict[str, Any]:
        """Answer an admin API through AdminManager (`call`, its method `api`); a broker that
        is not the controller answers the controller-only ones NOT_CONTROLLER."""
        manager = self._manager()
        assert request.body is not None
        if controller_only and not (
            self.ctx.controller is not None and self.ctx.controller.is_active
        ):
            return manager.error_response(
                api, request.body, request.api_version, Errors.NOT_CONTROLLER,
                f"Broker {self.ctx.broker_id} is not the controller; send {api} requests to the "
                "controller (see the controller id in Metadata).",
            )  # fmt: skip
        body = request.body
        refused: list[dict[str, Any]] = []
        ids: dict[str, uuid.UUID] = {}
        if api == "delete_topics" and request.api_version >= 6:
            body, refused, ids = _delete_topics_by_name(body)
        result = await call(body, request.api_version)
        for r in result["responses"] if ids else ():
            r["topic_id"] = ids.get(r["name"])
        if refused:
            result["responses"].extend(refused)
        if api == "create_topics" and request.api_version >= 5:
            self._fill_created_topics(body, result)
        return result

    def _fill_created_topics(self, body: Mapping[str, Any], result: dict[str, Any]) -> None:
        """CreateTopics v5+ (KIP-525): each created (or, with validate_only, creatable) topic's
        partition count, replication factor and configs, as DescribeConfigs reports them."""
        manager = self.ctx.admin_manager
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
                entry["num_partitions"] = self.ctx.config.num_partitions if n == -1 else n
                entry["replication_factor"] = (
                    self.ctx.config.default_replication_factor if rf == -1 else rf
                )
            overrides = {c["name"]: c["value"] for c in topic.get("configs") or ()}
            entry["configs"] = [
                {"name": c["name"], "value": c["value"], "read_only": c["read_only"],
                 "config_source": c["config_source"], "is_sensitive": c["is_sensitive"]}
                for c in manager.topic_config_entries(overrides)
            ]  # fmt: skip


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
