"""AclAuthorizer: Kafka 2.x's ZooKeeper-backed authorizer (`kafka.security.authorizer.AclAuthorizer`).

Every ACL lives in the metadata store (`/kafka-acl/<Type>/<name>` for LITERAL patterns,
`/kafka-acl-extended/prefixed/<Type>/<name>` for PREFIXED ones) and, on every broker, in
an in-memory cache loaded at start-up. Whoever changes a resource's ACLs rewrites its node
and then creates a change notification (`/kafka-acl-changes/acl_changes_<n>` or
`/kafka-acl-extended-changes/acl_changes_<n>`); every broker watches both and reloads the
resource named, so a change takes effect everywhere without a restart.

A request is allowed when the principal is a super user, or when no ACL matches the
resource and `allow.everyone.if.no.acl.found` is true, or when no Deny ACL and at least one
Allow ACL matches (principal or `User:*`, host or `*`, the operation or `All`; an Allow of
Read, Write, Delete or Alter also allows Describe, one of AlterConfigs DescribeConfigs).
Each decision goes to the `kafka.authorizer.logger` (kafpy.authorizer.logger): denials at
INFO, grants at DEBUG, in Kafka's words.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from kafpy.common.logger import TRACE, component_logger
from kafpy.metadata.errors import BadVersionError, NodeExistsError, NoNodeError
from kafpy.metadata.store import MetadataStore
from kafpy.metadata.zk_data import (
    AclChangeNotificationZNode,
    AclEntryData,
    AclZNode,
    ResourceZNode,
    ZkDataError,
)
from kafpy.metadata.zk_node_change_notification_listener import ZkNodeChangeNotificationListener
from kafpy.protocol.acl_operations import AclOperation
from kafpy.security.authorizer.acl import (
    SUPPORTED_OPERATIONS,
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclError,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    implied_operations,
    operation_from_name,
    operation_name,
    permission_type_from_name,
    permission_type_name,
    resource_type_from_name,
    resource_type_name,
)
from kafpy.security.kafka_principal import KafkaPrincipal

AUTHORIZER_CLASS_NAMES = frozenset({
    "kafka.security.authorizer.AclAuthorizer",
    "kafka.security.auth.SimpleAclAuthorizer",
    "AclAuthorizer",
})  # fmt: skip
"""The `authorizer.class.name` values that mean this authorizer (Kafka's, its 1.x name,
and kafpy's short name)."""

authorizer_logger = logging.getLogger("kafpy.authorizer.logger")
"""Kafka's `kafka.authorizer.logger`: one line per decision."""

_PREFIX = AclChangeNotificationZNode.SEQUENCE_NUMBER_PREFIX
_CHANGE_ROOTS = (AclChangeNotificationZNode.LITERAL_PATH, AclChangeNotificationZNode.EXTENDED_PATH)
_STORES = ((PatternType.LITERAL, AclZNode.LITERAL_PATH),
           (PatternType.PREFIXED, AclZNode.store_path("PREFIXED")))  # fmt: skip
# a change of one resource's ACL set: the current entries -> the wanted ones
_Change = Callable[[set[AccessControlEntry]], set[AccessControlEntry]]


def parse_super_users(text: str | None) -> frozenset[KafkaPrincipal]:
    """`super.users`: principals separated by semicolons (`User:admin;User:broker`)."""
    users = set()
    for part in (text or "").split(";"):
        if part.strip():
            try:
                users.add(KafkaPrincipal.from_string(part.strip()))
            except ValueError as e:
                raise AclError(f"super.users: {e}") from None
    return frozenset(users)


@dataclass(frozen=True, slots=True)
class AclDeleteResult:
    """What one DeleteAcls filter removed, or the error that stopped it."""

    deleted: tuple[AclBinding, ...] = ()
    error: AclError | None = None


class AclAuthorizer:
    """Decides every authorization question from the ACLs of the metadata store.

    `store`: the metadata store the ACLs live in; `super_users`: principals allowed
    everything; `allow_everyone_if_no_acl_found`: the answer for a resource no ACL matches.
    `await start()` loads every ACL and watches for changes; `await close()` stops watching.
    `version` grows with every change of the cache (for callers caching answers).
    """

    def __init__(
        self,
        store: MetadataStore | None,
        super_users: Iterable[KafkaPrincipal] = (),
        allow_everyone_if_no_acl_found: bool = False,
    ) -> None:
        self.store = store
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self.version = 0
        self._acls: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}
        self._prefixed: dict[ResourceType, set[str]] = {}
        self._listeners = (
            [
                ZkNodeChangeNotificationListener(store, root, _PREFIX, self._process_notification)
                for root in _CHANGE_ROOTS
            ]
            if store is not None
            else []
        )
        self.log = component_logger("kafpy.security.authorizer.AclAuthorizer", "AclAuthorizer")

    # -- life cycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Watch the change notifications, then load every ACL (in that order, as Kafka,
        so that no change made meanwhile is missed)."""
        if self.store is None:
            return
        for listener in self._listeners:
            await listener.start(process_existing=False)
        for pattern_type, store_path in _STORES:
            for type_name in await self.store.get_children_or_empty(store_path):
                try:
                    resource_type = resource_type_from_name(type_name)
                except AclError:
                    self.log.warning("Ignoring unknown ResourceType: %s", type_name)
                    continue
                for name in await self.store.get_children_or_empty(f"{store_path}/{type_name}"):
                    await self._reload(ResourcePattern(resource_type, name, pattern_type))

    async def close(self) -> None:
        for listener in self._listeners:
            await listener.close()

    # -- authorization --------------------------------------------------------------------

    def authorize(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
        request_name: str = "",
        ref_count: int = 1,
        *,
        log_if_allowed: bool = True,
        log_if_denied: bool = True,
    ) -> bool:
        """Whether `principal`, connected from `host`, may do `operation` on the resource
        `resource_type`:`name` (a literal name). The decision is logged as Kafka's is."""
        allowed = principal in self.super_users or self._acls_allow(principal, host, operation,
                                                                    resource_type, name)  # fmt: skip
        level = (
            (logging.DEBUG if log_if_allowed else TRACE)
            if allowed
            else (logging.INFO if log_if_denied else TRACE)
        )
        if authorizer_logger.isEnabledFor(level):
            authorizer_logger.log(
                level,
                "Principal = %s is %s Operation = %s from host = %s on resource = %s:LITERAL:%s "
                "for request = %s with resourceRefCount = %d",
                principal, "Allowed" if allowed else "Denied", operation_name(operation), host,
                resource_type_name(resource_type), name, request_name, ref_count,
            )  # fmt: skip
        return allowed

    def authorized_operations(
        self,
        principal: KafkaPrincipal,
        host: str,
        resource_type: ResourceType,
        name: str,
        request_name: str = "",
    ) -> set[AclOperation]:
        """The operations of the resource type `principal` may do on the resource (the
        authorized-operations fields of Metadata, DescribeCluster and DescribeGroups)."""
        return {
            op
            for op in SUPPORTED_OPERATIONS[resource_type]
            if self.authorize(
                principal,
                host,
                op,
                resource_type,
                name,
                request_name,
                log_if_allowed=False,
                log_if_denied=False,
            )  # fmt: skip
        }

    def _matching_entries(self, resource_type: ResourceType, name: str) -> list[AccessControlEntry]:
        acls = self._acls
        found: list[AccessControlEntry] = []
        for literal in (name, WILDCARD_RESOURCE):
            found.extend(acls.get(ResourcePattern(resource_type, literal, PatternType.LITERAL), ()))
        prefixes = self._prefixed.get(resource_type)
        if prefixes:
            for end in range(1, len(name) + 1):
                if name[:end] in prefixes:
                    pattern = ResourcePattern(resource_type, name[:end], PatternType.PREFIXED)
                    found.extend(acls.get(pattern, ()))
        return found

    def _acls_allow(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        entries = self._matching_entries(resource_type, name)
        if not entries:
            return self.allow_everyone_if_no_acl_found
        who = (str(principal), WILDCARD_PRINCIPAL)
        hosts = (host, WILDCARD_HOST)
        allowed_by = implied_operations(operation)
        allowed = False
        for e in entries:
            if e.principal not in who or e.host not in hosts:
                continue
            if e.permission_type == AclPermissionType.DENY:
                if e.operation in (operation, AclOperation.ALL):
                    return False
            elif e.operation in allowed_by:
                allowed = True
        return allowed

    # -- ACL administration ---------------------------------------------------------------

    def acls(self, acl_filter: AclBindingFilter | None = None) -> list[AclBinding]:
        """The ACLs the filter selects (all without one), by resource pattern."""
        selected = acl_filter or AclBindingFilter()
        return [
            AclBinding(pattern, entry)
            for pattern, entries in sorted(self._acls.items(), key=lambda kv: _pattern_key(kv[0]))
            if selected.matches_pattern(pattern)
            for entry in sorted(entries, key=_entry_key)
            if selected.matches_entry(entry)
        ]

    async def create_acls(self, bindings: Sequence[AclBinding]) -> list[AclError | None]:
        """Store each binding (an error for each invalid one, the others stored)."""
        results: list[AclError | None] = [None] * len(bindings)
        by_pattern: dict[ResourcePattern, list[AccessControlEntry]] = {}
        for i, binding in enumerate(bindings):
            try:
                binding.validate()
            except AclError as e:
                results[i] = e
                continue
            by_pattern.setdefault(binding.pattern, []).append(binding.entry)
        for pattern, entries in by_pattern.items():
            await self._update(pattern, _adding(entries))
        return results

    async def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[AclDeleteResult]:
        """Remove the ACLs each filter selects; for each filter, what it removed."""
        results: list[AclDeleteResult] = []
        for acl_filter in filters:
            try:
                acl_filter.validate()
            except AclError as e:
                results.append(AclDeleteResult(error=e))
                continue
            deleted: list[AclBinding] = []
            patterns = [p for p in list(self._acls) if acl_filter.matches_pattern(p)]
            for pattern in patterns:
                removed: set[AccessControlEntry] = set()
                await self._update(pattern, _removing(acl_filter, removed))
                deleted.extend(AclBinding(pattern, e) for e in sorted(removed, key=_entry_key))
            results.append(AclDeleteResult(tuple(deleted)))
        return results

    async def _update(self, pattern: ResourcePattern, change: _Change) -> None:
        """Rewrite the pattern's node with `change` applied (optimistically, retried on a
        concurrent write), notify every broker, and update this cache."""
        store = self.store
        if store is None:
            raise AclError("ACLs cannot be changed: this authorizer has no metadata store.")
        path = _node_path(pattern)
        while True:
            try:
                data, stat = await store.get(path)
                current, version = set(_decode(pattern, data, path)), stat.version
            except NoNodeError:
                current, version = set(), -1
            wanted = change(set(current))
            if wanted == current:
                break
            try:
                if not wanted:
                    await store.delete(path, version)
                elif version < 0:
                    await store.create(path, _encode(wanted), make_parents=True)
                else:
                    await store.set(path, _encode(wanted), version)
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue  # someone else wrote meanwhile: apply the change to their result
            await store.create(
                AclChangeNotificationZNode.create_path(pattern.pattern_type.name),
                AclChangeNotificationZNode.encode(pattern.resource_type.name, pattern.name,
                                                  pattern.pattern_type.name),
                sequential=True, make_parents=True,
            )  # fmt: skip
            break
        self._set_cache(pattern, frozenset(wanted))

    # -- cache and change notifications ---------------------------------------------------

    def _set_cache(self, pattern: ResourcePattern, entries: frozenset[AccessControlEntry]) -> None:
        if self._acls.get(pattern, frozenset()) == entries:
            return
        if entries:
            self._acls[pattern] = entries
            if pattern.pattern_type == PatternType.PREFIXED:
                self._prefixed.setdefault(pattern.resource_type, set()).add(pattern.name)
        else:
            self._acls.pop(pattern, None)
            if pattern.pattern_type == PatternType.PREFIXED:
                self._prefixed.get(pattern.resource_type, set()).discard(pattern.name)
        self.version += 1
        self.log.info(
            "Processing Acl change notification for %s, versionedAcls : %s",
            pattern, ", ".join(str(e) for e in sorted(entries, key=_entry_key)) or "(none)",
        )  # fmt: skip

    async def _reload(self, pattern: ResourcePattern) -> None:
        assert self.store is not None
        path = _node_path(pattern)
        data = await self.store.get_data_or_none(path)
        try:
            entries = frozenset(_decode(pattern, data, path))
        except (ZkDataError, AclError) as e:
            self.log.error("Ignoring the ACLs of %s: %s", path, e)
            return
        self._set_cache(pattern, entries)

    async def _process_notification(self, path: str, data: bytes) -> None:
        root = path.rsplit("/", 1)[0]
        try:
            type_name, name, pattern_name = AclChangeNotificationZNode.decode(root, data)
            pattern = ResourcePattern(ResourceType[type_name], name, PatternType[pattern_name])
        except (ZkDataError, KeyError) as e:
            self.log.error("Ignoring the malformed ACL change notification %s: %s", path, e)
            return
        await self._reload(pattern)


def _adding(entries: Iterable[AccessControlEntry]) -> _Change:
    added = set(entries)
    return lambda current: current | added


def _removing(acl_filter: AclBindingFilter, removed: set[AccessControlEntry]) -> _Change:
    """Drops the entries the filter selects, leaving them in `removed`."""

    def change(current: set[AccessControlEntry]) -> set[AccessControlEntry]:
        removed.clear()
        removed.update(e for e in current if acl_filter.matches_entry(e))
        return current - removed

    return change


def _node_path(pattern: ResourcePattern) -> str:
    return AclZNode.path(pattern.pattern_type.name, resource_type_name(pattern.resource_type),
                         pattern.name)  # fmt: skip


def _encode(entries: Iterable[AccessControlEntry]) -> bytes:
    return ResourceZNode.encode(
        AclEntryData(e.principal, permission_type_name(e.permission_type),
                     operation_name(e.operation), e.host)
        for e in sorted(entries, key=_entry_key)
    )  # fmt: skip


def _decode(pattern: ResourcePattern, data: bytes | None, path: str) -> list[AccessControlEntry]:
    entries = []
    for a in ResourceZNode.decode(data, path):
        entry = AccessControlEntry(a.principal, a.host, operation_from_name(a.operation),
                                   permission_type_from_name(a.permission_type))  # fmt: skip
        entry.validate(pattern.resource_type)
        entries.append(entry)
    return entries


def _pattern_key(p: ResourcePattern) -> tuple[int, int, str]:
    return (int(p.resource_type), int(p.pattern_type), p.name)


def _entry_key(e: AccessControlEntry) -> tuple[str, str, int, int]:
    return (e.principal, e.host, int(e.operation), int(e.permission_type))
