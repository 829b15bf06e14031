"""The delegation token APIs (Kafka's KafkaApis handlers of CreateDelegationToken,
RenewDelegationToken, ExpireDelegationToken and DescribeDelegationToken), answered by the
DelegationTokenManager.

Token requests are refused (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED) on a PLAINTEXT
connection, on an SSL connection without a client certificate and on a connection that
authenticated with a token: tokens are made by principals who proved who they are by other
means. Renew and expire are for the owner and the renewers; describe shows a principal
the tokens it owns or renews and those it may Describe as DelegationToken resources.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafpy.network.request_channel import Request
from kafpy.protocol.errors import Errors
from kafpy.protocol.messages.delegation_token import ERROR_TIMESTAMP
from kafpy.security.authorizer.acl import ResourceType
from kafpy.security.delegation_token_cache import DelegationToken, TokenInformation
from kafpy.security.kafka_principal import ANONYMOUS, USER_TYPE, KafkaPrincipal
from kafpy.server.api_context import ApiContext, body_of
from kafpy.server.authorization_guards import Op
from kafpy.server.delegation_token_manager import DelegationTokenManager


def allow_token_requests(request: Request) -> bool:
    """Kafka's KafkaApis.allowTokenRequests."""
    protocol = request.security_protocol
    return not (
        request.principal.token_authenticated
        or protocol == "PLAINTEXT"
        or (protocol == "SSL" and request.principal == ANONYMOUS)
    )


def _principals(entries: Any) -> list[KafkaPrincipal]:
    return [KafkaPrincipal(e["principal_type"], e["principal_name"]) for e in entries or ()]


def _principal_entry(principal: KafkaPrincipal) -> dict[str, str]:
    return {"principal_type": principal.principal_type, "principal_name": principal.name}


def filter_token(
    requester: KafkaPrincipal,
    owners: list[KafkaPrincipal] | None,
    token: TokenInformation,
    authorize_token: Callable[[str], bool],
) -> bool:
    """Kafka's DelegationTokenManager.filterToken: among the owners asked for (all when
    None), the tokens the requester owns or renews, or may Describe."""
    if owners is not None and not any(token.owner_or_renewer(o) for o in owners):
        return False
    return token.owner_or_renewer(requester) or authorize_token(token.token_id)


def described(token: DelegationToken) -> dict[str, Any]:
    """One token of a DescribeDelegationToken response."""
    info = token.token_info
    return {
        **_principal_entry(info.owner),
        "issue_timestamp": info.issue_timestamp,
        "expiry_timestamp": info.expiry_timestamp,
        "max_timestamp": info.max_timestamp,
        "token_id": info.token_id,
        "hmac": token.hmac,
        "renewers": [_principal_entry(r) for r in info.renewers],
    }


class DelegationTokenApis:
    """Answers the four delegation token APIs."""

    def __init__(self, ctx: ApiContext) -> None:
        self.ctx = ctx

    def _manager(self) -> DelegationTokenManager:
        assert self.ctx.token_manager is not None
        return self.ctx.token_manager

    async def handle_create_delegation_token(self, request: Request) -> dict[str, Any]:
        body = body_of(request)
        owner = request.principal
        refused = {"throttle_time_ms": 0, **_principal_entry(owner)}
        if not allow_token_requests(request):
            return {**refused, "error_code": Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED}
        renewers = _principals(body["renewers"])
        if any(r.principal_type != USER_TYPE for r in renewers):
            return {**refused, "error_code": Errors.INVALID_PRINCIPAL_TYPE}
        result = await self._manager().create_token(owner, renewers, body["max_lifetime_ms"])
        return {
            "throttle_time_ms": 0,
            "error_code": result.error,
            **_principal_entry(result.owner),
            "issue_timestamp_ms": result.issue_timestamp,
            "expiry_timestamp_ms": result.expiry_timestamp,
            "max_timestamp_ms": result.max_timestamp,
            "token_id": result.token_id,
            "hmac": result.hmac,
        }

    async def handle_renew_delegation_token(self, request: Request) -> dict[str, Any]:
        body = body_of(request)
        error: int
        if not allow_token_requests(request):
            error, expiry = Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, ERROR_TIMESTAMP
        else:
            error, expiry = await self._manager().renew_token(
                request.principal, bytes(body["hmac"]), body["renew_period_ms"]
            )
        return {"throttle_time_ms": 0, "error_code": error, "expiry_timestamp_ms": expiry}

    async def handle_expire_delegation_token(self, request: Request) -> dict[str, Any]:
        body = body_of(request)
        error: int
        if not allow_token_requests(request):
            error, expiry = Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, ERROR_TIMESTAMP
        else:
            error, expiry = await self._manager().expire_token(
                request.principal, bytes(body["hmac"]), body["expiry_time_period_ms"]
            )
        return {"throttle_time_ms": 0, "error_code": error, "expiry_timestamp_ms": expiry}

    async def handle_describe_delegation_token(self, request: Request) -> dict[str, Any]:
        body = body_of(request)
        answer: dict[str, Any] = {"throttle_time_ms": 0, "tokens": []}
        manager = self._manager()
        if not allow_token_requests(request):
            return {**answer, "error_code": Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED}
        if not manager.enabled:
            return {**answer, "error_code": Errors.DELEGATION_TOKEN_AUTH_DISABLED}
        owners = None if body["owners"] is None else _principals(body["owners"])
        if owners == []:
            return {**answer, "error_code": Errors.NONE}
        auth = self.ctx.auth

        def authorize_token(token_id: str) -> bool:
            return auth.authorize(request, Op.DESCRIBE, ResourceType.DELEGATION_TOKEN, token_id)

        tokens = manager.get_tokens(
            lambda t: filter_token(request.principal, owners, t, authorize_token)
        )
        return {**answer, "error_code": Errors.NONE, "tokens": [described(t) for t in tokens]}
