"""AuthHelper: the authorization checks of every API (Kafka 2.8's `kafka.server.AuthHelper`
and the checks its KafkaApis makes).

KafkaApis hands each handler to `guard(api_key, handler)`, which puts the API's guard
(its registry entry, kafpy/server/api_registry.py; the guards are in
kafpy/server/authorization_guards.py) in front of it. With an authorizer the guard asks
what Kafka 2.8 asks before the API runs: resources the principal may not use are
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
from kafpy.security.authorizer.acl import CLUSTER_NAME, ResourceType
from kafpy.security.authorizer.acl_authorizer import AclAuthorizer
from kafpy.server.api_registry import API_REGISTRY, NO_AUTHORIZATION

TOPIC, CLUSTER = ResourceType.TOPIC, ResourceType.CLUSTER
Body = dict[str, Any]
Handler = Callable[[Request], Awaitable[Any]]


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
        entry = API_REGISTRY.get(api_key)
        if self.authorizer is None or (entry is not None and entry.guard is NO_AUTHORIZATION):
            return handler
        if (
            entry is None or entry.guard is NO_AUTHORIZATION
        ):  # an API nobody wrote Kafka's checks for: refused, never open

            async def refused(request: Request) -> Any:
                raise CloseConnection(
                    f"{api_name(api_key)} has no authorization rule in kafpy, and an "
                    "authorizer is configured: the request is refused"
                )

            return refused

        check = entry.guard

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
