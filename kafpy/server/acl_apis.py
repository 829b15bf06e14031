"""AclApis: DescribeAcls, CreateAcls and DeleteAcls (Kafka 2.8's `kafka.server.AclApis`).

Describing needs Describe on the cluster, creating and deleting Alter on it
(CLUSTER_AUTHORIZATION_FAILED otherwise). Without an authorizer each answers
SECURITY_DISABLED. A binding or filter that cannot be used (an unknown operation, a
malformed principal, a pattern type an ACL cannot have) answers INVALID_REQUEST with a
sentence naming it, and nothing of it is written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafpy.network.request_channel import Request
from kafpy.protocol.acl_operations import AclOperation
from kafpy.protocol.errors import Errors
from kafpy.security.authorizer.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclError,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafpy.security.authorizer.acl_authorizer import AclAuthorizer

if TYPE_CHECKING:
    from kafpy.server.auth_helper import AuthHelper

_NO_AUTHORIZER = "No Authorizer is configured on the broker"


def _enum(kind: type[Any], code: int, what: str) -> Any:
    try:
        return kind(code)
    except ValueError:
        raise AclError(f"Unknown {what} code {code}.") from None


def _binding(c: dict[str, Any]) -> AclBinding:
    return AclBinding(
        ResourcePattern(_enum(ResourceType, c["resource_type"], "resource type"), c["resource_name"],
                        _enum(PatternType, c.get("resource_pattern_type", 3), "pattern type")),
        AccessControlEntry(c["principal"], c["host"], _enum(AclOperation, c["operation"], "operation"),
                           _enum(AclPermissionType, c["permission_type"], "permission type")),
    )  # fmt: skip


def _filter(f: dict[str, Any], pattern_key: str) -> AclBindingFilter:
    acl_filter = AclBindingFilter(
        _enum(ResourceType, f["resource_type_filter"], "resource type"), f.get("resource_name_filter"),
        _enum(PatternType, f.get(pattern_key, 3), "pattern type"), f.get("principal_filter"),
        f.get("host_filter"), _enum(AclOperation, f["operation"], "operation"),
        _enum(AclPermissionType, f["permission_type"], "permission type"),
    )  # fmt: skip
    acl_filter.validate()
    return acl_filter


class AclApis:
    """Answers the three ACL APIs from `authorizer` (None: SECURITY_DISABLED)."""

    def __init__(self, auth: AuthHelper, authorizer: AclAuthorizer | None) -> None:
        self.auth = auth
        self.authorizer = authorizer

    def _refusal(self, request: Request, operation: AclOperation) -> tuple[int, str] | None:
        if self.authorizer is None:
            return Errors.SECURITY_DISABLED, _NO_AUTHORIZER
        if not self.auth.cluster(request, operation):
            return Errors.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
        return None

    async def handle_describe_acls(self, request: Request) -> dict[str, Any]:
        body = request.body or {}
        refusal = self._refusal(request, AclOperation.DESCRIBE)
        response: dict[str, Any] = {"throttle_time_ms": 0, "error_code": Errors.NONE,
                                    "error_message": None, "resources": []}  # fmt: skip
        if refusal is not None:
            response.update(error_code=refusal[0], error_message=refusal[1])
            return response
        assert self.authorizer is not None
        try:
            acl_filter = _filter(body, "pattern_type_filter")
        except AclError as e:
            response.update(error_code=Errors.INVALID_REQUEST, error_message=str(e))
            return response
        by_pattern: dict[ResourcePattern, list[dict[str, Any]]] = {}
        for b in self.authorizer.acls(acl_filter):
            by_pattern.setdefault(b.pattern, []).append({
                "principal": b.entry.principal, "host": b.entry.host,
                "operation": int(b.entry.operation), "permission_type": int(b.entry.permission_type),
            })  # fmt: skip
        response["resources"] = [
            {"resource_type": int(p.resource_type), "resource_name": p.name,
             "pattern_type": int(p.pattern_type), "acls": acls}
            for p, acls in by_pattern.items()
        ]  # fmt: skip
        return response

    async def handle_create_acls(self, request: Request) -> dict[str, Any]:
        creations = (request.body or {}).get("creations") or []
        refusal = self._refusal(request, AclOperation.ALTER)
        if refusal is not None:
            return {"throttle_time_ms": 0, "results": [
                {"error_code": refusal[0], "error_message": refusal[1]} for _ in creations]}  # fmt: skip
        assert self.authorizer is not None
        results: list[dict[str, Any]] = [{"error_code": Errors.NONE, "error_message": None}
                                         for _ in creations]  # fmt: skip
        valid: list[tuple[int, AclBinding]] = []
        for i, c in enumerate(creations):
            try:
                binding = _binding(c)
                binding.validate()
                valid.append((i, binding))
            except AclError as e:
                results[i] = {"error_code": Errors.INVALID_REQUEST, "error_message": str(e)}
        errors = await self.authorizer.create_acls([b for _, b in valid])
        for (i, _), error in zip(valid, errors, strict=True):
            if error is not None:
                results[i] = {"error_code": Errors.INVALID_REQUEST, "error_message": str(error)}
        return {"throttle_time_ms": 0, "results": results}

    async def handle_delete_acls(self, request: Request) -> dict[str, Any]:
        filters = (request.body or {}).get("filters") or []
        refusal = self._refusal(request, AclOperation.ALTER)
        if refusal is not None:
            return {"throttle_time_ms": 0, "filter_results": [
                {"error_code": refusal[0], "error_message": refusal[1], "matching_acls": []}
                for _ in filters]}  # fmt: skip
        assert self.authorizer is not None
        out: list[dict[str, Any]] = []
        for f in filters:
            try:
                acl_filter = _filter(f, "pattern_type_filter")
            except AclError as e:
                out.append({"error_code": Errors.INVALID_REQUEST, "error_message": str(e),
                            "matching_acls": []})  # fmt: skip
                continue
            [result] = await self.authorizer.delete_acls([acl_filter])
            out.append({"error_code": Errors.NONE, "error_message": None, "matching_acls": [
                {"error_code": Errors.NONE, "error_message": None,
                 "resource_type": int(b.pattern.resource_type), "resource_name": b.pattern.name,
                 "pattern_type": int(b.pattern.pattern_type), "principal": b.entry.principal,
                 "host": b.entry.host, "operation": int(b.entry.operation),
                 "permission_type": int(b.entry.permission_type)} for b in result.deleted]})  # fmt: skip
        return {"throttle_time_ms": 0, "filter_results": out}
