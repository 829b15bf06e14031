"""The Metadata and DescribeCluster answers (Kafka's KafkaApis.handleTopicMetadataRequest and
handleDescribeCluster), from the MetadataCache, with topic auto-creation.
"""

from __future__ import annotations

from typing import Any

from kafpy.admin.replica_assignment import RackAwareMode
from kafpy.common import topic as topic_names
from kafpy.common.errors import InvalidTopicError, KafkaError, TopicExistsError
from kafpy.network.request_channel import Request
from kafpy.protocol.acl_operations import CLUSTER_OPERATIONS, TOPIC_OPERATIONS, to_bit_field
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors, error_code_of
from kafpy.protocol.messages import RESPONSES
from kafpy.protocol.messages.metadata import AUTHORIZED_OPERATIONS_OMITTED
from kafpy.protocol.types import ZERO_UUID
from kafpy.server.api_context import ApiContext, body_of

# Metadata answers encoded at the current MetadataCache generation, at most this many
_METADATA_RESPONSES_CACHED = 256


class MetadataApis:
    """Answers Metadata and DescribeCluster."""

    def __init__(self, ctx: ApiContext) -> None:
        self.ctx = ctx
        self._metadata_responses: dict[tuple[Any, ...], bytes] = {}
        self._metadata_responses_generation = -1
        self.metadata_responses_reused = 0

    async def handle_metadata(self, request: Request) -> dict[str, Any] | bytes:
        """Metadata, answered from the MetadataCache. Encoding 1,000 partitions takes
        milliseconds of the event loop, and clients ask the same questions again and again:
        an answer naming only known topics is kept, encoded, until the next UpdateMetadata."""
        if self.ctx.auth.enabled:
            return await self._answer_metadata(request)  # answers differ per principal
        body = body_of(request)
        version = request.api_version
        requested = body.get("topics")
        if requested is None or (version == 0 and not requested):
            names: tuple[Any, ...] = (None, *self.ctx.metadata_cache.get_all_topics())
        else:
            names = tuple((t.get("name"), t.get("topic_id")) for t in requested)
        if self._metadata_responses_generation != self.ctx.metadata_cache.generation:
            self._metadata_responses.clear()
            self._metadata_responses_generation = self.ctx.metadata_cache.generation
        key = (version, request.listener_name, names,
               body.get("include_cluster_authorized_operations"),
               body.get("include_topic_authorized_operations"))  # fmt: skip
        encoded = self._metadata_responses.get(key)
        if encoded is not None:
            self.metadata_responses_reused += 1
            return encoded
        generation = self.ctx.metadata_cache.generation
        response = await self._answer_metadata(request)
        if generation == self.ctx.metadata_cache.generation and all(
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
            names = self.ctx.metadata_cache.get_all_topics()
        else:
            names = list(dict.fromkeys(t["name"] for t in requested or ()))
        allow_auto = bool(body.get("allow_auto_topic_creation", True)) if version >= 4 else True
        listener = request.listener_name
        known = {
            t["name"]: t
            for t in self.ctx.metadata_cache.get_topic_metadata(
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
        body = body_of(request)
        controller_id = self.ctx.metadata_cache.controller_id
        cluster_ops = AUTHORIZED_OPERATIONS_OMITTED
        if 8 <= request.api_version <= 10 and body.get("include_cluster_authorized_operations"):
            cluster_ops = to_bit_field(CLUSTER_OPERATIONS)
        return {
            "throttle_time_ms": 0,
            "brokers": self._brokers(request.listener_name),
            "cluster_id": self.ctx.cluster_id,
            "controller_id": -1 if controller_id is None else controller_id,
            "topics": topics,
            "cluster_authorized_operations": cluster_ops,
        }

    def _brokers(self, listener: str) -> list[dict[str, Any]]:
        return [
            {"node_id": b, "host": ep.host, "port": ep.port, "rack": rack}
            for b, ep, rack in self.ctx.metadata_cache.alive_endpoints(listener)
        ]

    async def handle_describe_cluster(self, request: Request) -> dict[str, Any]:
        """DescribeCluster (KIP-700): the brokers, controller and cluster id, as Metadata
        gives them, and the cluster's authorized operations when asked."""
        body = body_of(request)
        controller_id = self.ctx.metadata_cache.controller_id
        return {
            "throttle_time_ms": 0,
            "error_code": Errors.NONE,
            "error_message": None,
            "cluster_id": self.ctx.cluster_id or "",
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
            not (allow_auto and self.ctx.config.auto_create_topics_enable)
            or self.ctx.admin_zk_client is None
        ):
            return entry(Errors.UNKNOWN_TOPIC_OR_PARTITION)
        if topic_names.is_internal(name):
            return entry(Errors.UNKNOWN_TOPIC_OR_PARTITION)  # created by their coordinators
        partitions = self.ctx.config.num_partitions
        rf = self.ctx.config.default_replication_factor
        try:
            await self.ctx.admin_zk_client.create_topic(
                name, partitions, rf, {}, RackAwareMode.SAFE
            )
            self.ctx.log.info(
                "Auto creation of topic %s with %d partitions and replication factor %d is successful",
                name,
                partitions,
                rf,
            )
        except TopicExistsError:
            pass
        except KafkaError as e:
            self.ctx.log.error("Error while auto-creating topic %s: %s", name, e)
            return entry(error_code_of(e))
        return entry(Errors.LEADER_NOT_AVAILABLE)
