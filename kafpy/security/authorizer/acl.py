"""Kafka's ACL model: resource types, pattern types, permission types, resource patterns,
access control entries, ACL bindings and the filters DescribeAcls / DeleteAcls take.

Codes are Kafka's (`org.apache.kafka.common.resource.ResourceType`, `PatternType`,
`acl.AclPermissionType`); names are those Kafka prints and stores in ZooKeeper
(`Topic`, `TransactionalId`, `Read`, `IdempotentWrite`, `Allow`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import TypeVar

from kafpy.protocol.acl_operations import (
    CLUSTER_OPERATIONS,
    GROUP_OPERATIONS,
    TOPIC_OPERATIONS,
    TRANSACTIONAL_ID_OPERATIONS,
    AclOperation,
)
from kafpy.security.kafka_principal import KafkaPrincipal

WILDCARD_RESOURCE = "*"
WILDCARD_HOST = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"


class ResourceType(IntEnum):
    """Kafka's ResourceType codes."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6


class PatternType(IntEnum):
    """Kafka's PatternType codes (ANY and MATCH only in filters)."""

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclPermissionType(IntEnum):
    """Kafka's AclPermissionType codes."""

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


_RESOURCE_TYPE_NAMES = {
    ResourceType.TOPIC: "Topic",
    ResourceType.GROUP: "Group",
    ResourceType.CLUSTER: "Cluster",
    ResourceType.TRANSACTIONAL_ID: "TransactionalId",
    ResourceType.DELEGATION_TOKEN: "DelegationToken",
    ResourceType.ANY: "Any",
    ResourceType.UNKNOWN: "Unknown",
}
_OPERATION_NAMES = {
    AclOperation.UNKNOWN: "Unknown",
    AclOperation.ANY: "Any",
    AclOperation.ALL: "All",
    AclOperation.READ: "Read",
    AclOperation.WRITE: "Write",
    AclOperation.CREATE: "Create",
    AclOperation.DELETE: "Delete",
    AclOperation.ALTER: "Alter",
    AclOperation.DESCRIBE: "Describe",
    AclOperation.CLUSTER_ACTION: "ClusterAction",
    AclOperation.DESCRIBE_CONFIGS: "DescribeConfigs",
    AclOperation.ALTER_CONFIGS: "AlterConfigs",
    AclOperation.IDEMPOTENT_WRITE: "IdempotentWrite",
    AclOperation.TWO_PHASE_COMMIT: "TwoPhaseCommit",
}
_PERMISSION_NAMES = {
    AclPermissionType.ALLOW: "Allow",
    AclPermissionType.DENY: "Deny",
    AclPermissionType.ANY: "Any",
    AclPermissionType.UNKNOWN: "Unknown",
}

SUPPORTED_OPERATIONS: dict[ResourceType, frozenset[AclOperation]] = {
    ResourceType.TOPIC: TOPIC_OPERATIONS,
    ResourceType.GROUP: GROUP_OPERATIONS,
    ResourceType.CLUSTER: CLUSTER_OPERATIONS,
    ResourceType.TRANSACTIONAL_ID: TRANSACTIONAL_ID_OPERATIONS,
    ResourceType.DELEGATION_TOKEN: frozenset({AclOperation.DESCRIBE}),
}
"""The operations an ACL on each resource type may name (All always may)."""


_E = TypeVar("_E", bound=IntEnum)


class AclError(ValueError):
    """An ACL, pattern or filter that cannot be used; the message names it and the fix."""


def _by_name(table: Mapping[_E, str], text: str, what: str, choices: str) -> _E:
    wanted = text.replace("_", "").replace("-", "").lower()
    for value, name in table.items():
        if name.lower() == wanted:
            return value
    raise AclError(f"Unknown {what} '{text}': expected one of {choices}.")


def resource_type_name(resource_type: ResourceType) -> str:
    """The name Kafka prints and stores (`TransactionalId`)."""
    return _RESOURCE_TYPE_NAMES[resource_type]


def resource_type_from_name(text: str) -> ResourceType:
    """`Topic`, `topic`, `TRANSACTIONAL_ID`, `transactional-id` -> the resource type."""
    choices = ", ".join(_RESOURCE_TYPE_NAMES[t] for t in SUPPORTED_OPERATIONS)
    return _by_name(_RESOURCE_TYPE_NAMES, text, "resource type", choices)


def operation_name(operation: AclOperation) -> str:
    """The name Kafka prints and stores (`IdempotentWrite`)."""
    return _OPERATION_NAMES[operation]


def operation_from_name(text: str) -> AclOperation:
    """`Read`, `read`, `IDEMPOTENT_WRITE`, `IdempotentWrite` -> the operation."""
    choices = ", ".join(n for op, n in _OPERATION_NAMES.items() if op > AclOperation.ANY)
    return _by_name(_OPERATION_NAMES, text, "operation", choices)


def permission_type_name(permission: AclPermissionType) -> str:
    """`Allow` or `Deny`."""
    return _PERMISSION_NAMES[permission]


def permission_type_from_name(text: str) -> AclPermissionType:
    """`Allow`/`ALLOW`/`Deny`/`DENY` -> the permission type."""
    return _by_name(_PERMISSION_NAMES, text, "permission type", "Allow, Deny")


def pattern_type_from_name(text: str) -> PatternType:
    """`literal`, `PREFIXED`, `any`, `match` -> the pattern type."""
    try:
        return PatternType[text.upper()]
    except KeyError:
        raise AclError(
            f"Unknown resource pattern type '{text}': expected LITERAL, PREFIXED, ANY or MATCH."
        ) from None


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    """A pattern naming resources: literal (one name, or `*` for all), or prefixed."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def __str__(self) -> str:
        return (
            f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, "
            f"patternType={self.pattern_type.name})"
        )

    def validate(self) -> None:
        """Refuse what cannot be stored as an ACL's resource."""
        if self.resource_type not in SUPPORTED_OPERATIONS:
            raise AclError(
                f"Invalid resource type {self.resource_type.name} in {self}: an ACL names a "
                "Topic, Group, Cluster, TransactionalId or DelegationToken."
            )
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise AclError(
                f"Invalid pattern type {self.pattern_type.name} in {self}: an ACL's resource "
                "pattern is LITERAL or PREFIXED (ANY and MATCH only filter)."
            )
        if not self.name:
            raise AclError(f"Invalid resource pattern {self}: the resource name is empty.")
        if self.resource_type == ResourceType.CLUSTER and self.name != CLUSTER_NAME:
            raise AclError(
                f"Invalid resource pattern {self}: the cluster resource is named '{CLUSTER_NAME}'."
            )
        if self.pattern_type == PatternType.PREFIXED and self.resource_type == ResourceType.CLUSTER:
            raise AclError(
                f"Invalid resource pattern {self}: the cluster resource is LITERAL only."
            )

    def matches(self, resource_type: ResourceType, name: str) -> bool:
        """Whether this pattern names the resource `resource_type`:`name`."""
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == PatternType.LITERAL:
            return self.name == name or self.name == WILDCARD_RESOURCE
        return self.pattern_type == PatternType.PREFIXED and name.startswith(self.name)


@dataclass(frozen=True, slots=True)
class AccessControlEntry:
    """Who (`User:alice`, `User:*`) may or may not do what, from which host (`*` for any)."""

    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def __str__(self) -> str:
        return (
            f"(principal={self.principal}, host={self.host}, "
            f"operation={self.operation.name}, permissionType={self.permission_type.name})"
        )

    def validate(self, resource_type: ResourceType) -> None:
        """Refuse an entry Kafka would not store for a resource of `resource_type`."""
        try:
            KafkaPrincipal.from_string(self.principal)
        except ValueError as e:
            raise AclError(str(e)) from None
        if not self.host:
            raise AclError(f"Invalid ACL {self}: the host is empty; use '*' for any host.")
        if self.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
            raise AclError(f"Invalid ACL {self}: the permission type is Allow or Deny.")
        supported = SUPPORTED_OPERATIONS.get(resource_type, frozenset())
        if self.operation != AclOperation.ALL and self.operation not in supported:
            names = ", ".join(sorted(operation_name(op) for op in supported))
            raise AclError(
                f"Invalid operation {operation_name(self.operation)} for resource type "
                f"{resource_type_name(resource_type)}: it supports All, {names}."
            )


@dataclass(frozen=True, slots=True)
class AclBinding:
    """An ACL: an entry bound to a resource pattern."""

    pattern: ResourcePattern
    entry: AccessControlEntry

    def validate(self) -> None:
        """Refuse a binding that cannot be stored (the message names the fix)."""
        self.pattern.validate()
        self.entry.validate(self.pattern.resource_type)


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """What DescribeAcls and DeleteAcls select. None matches anything; pattern type ANY
    matches every pattern of the name, MATCH every pattern that would apply to the
    resource named (literal, wildcard and prefixes of it)."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def validate(self) -> None:
        """Refuse filters with unknown values."""
        if self.resource_type == ResourceType.UNKNOWN:
            raise AclError("Invalid ACL filter: the resource type is unknown.")
        if self.pattern_type == PatternType.UNKNOWN:
            raise AclError("Invalid ACL filter: the resource pattern type is unknown.")
        if self.operation == AclOperation.UNKNOWN:
            raise AclError("Invalid ACL filter: the operation is unknown.")
        if self.permission_type == AclPermissionType.UNKNOWN:
            raise AclError("Invalid ACL filter: the permission type is unknown.")

    def matches_pattern(self, pattern: ResourcePattern) -> bool:
        if self.resource_type != ResourceType.ANY and pattern.resource_type != self.resource_type:
            return False
        if self.pattern_type == PatternType.MATCH:
            if self.name is None:
                return True
            if pattern.pattern_type == PatternType.LITERAL:
                return pattern.name in (self.name, WILDCARD_RESOURCE)
            return self.name.startswith(pattern.name)
        if self.pattern_type != PatternType.ANY and pattern.pattern_type != self.pattern_type:
            return False
        return self.name is None or pattern.name == self.name

    def matches_entry(self, entry: AccessControlEntry) -> bool:
        return (
            (self.principal is None or entry.principal == self.principal)
            and (self.host is None or entry.host == self.host)
            and (self.operation == AclOperation.ANY or entry.operation == self.operation)
            and (
                self.permission_type == AclPermissionType.ANY
                or entry.permission_type == self.permission_type
            )
        )

    def matches(self, binding: AclBinding) -> bool:
        return self.matches_pattern(binding.pattern) and self.matches_entry(binding.entry)


def implied_operations(operation: AclOperation) -> frozenset[AclOperation]:
    """The operations whose Allow ACL grants `operation` (Kafka: Describe is granted by
    Read, Write, Delete and Alter; DescribeConfigs by AlterConfigs; All grants every one)."""
    if operation == AclOperation.DESCRIBE:
        ops = {AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE,
               AclOperation.DELETE, AclOperation.ALTER}  # fmt: skip
    elif operation == AclOperation.DESCRIBE_CONFIGS:
        ops = {AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
    else:
        ops = {operation}
    return frozenset(ops | {AclOperation.ALL})
