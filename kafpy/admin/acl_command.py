"""AclCommand: what `kafpy acls` does, as Kafka's kafka-acls.sh (kafka.admin.AclCommand).

The options become resource pattern filters and access control entries exactly as Kafka
builds them (`--producer`: Write, Describe, Create on each topic, Write and Describe on each
transactional id, IdempotentWrite on the cluster with `--idempotent`; `--consumer`: Read and
Describe on each topic, Read on each group), then `--add`, `--remove` or `--list` run against
an `AclService`: the brokers' CreateAcls/DescribeAcls/DeleteAcls (`--bootstrap-server`) or the
AclAuthorizer over the metadata store (`--authorizer-properties zookeeper.connect=...`).
The output lines are kafka-acls.sh's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kafpy.protocol.acl_operations import AclOperation
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.security.authorizer.acl import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    WILDCARD_HOST,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclError,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    operation_from_name,
    pattern_type_from_name,
)
from kafpy.security.kafka_principal import KafkaPrincipal

Op = AclOperation
NL = "\n"


class AclCommandError(ValueError):
    """A usage error of `kafpy acls`; the message is kafka-acls.sh's."""


class AclService(Protocol):
    """Where the ACLs are read and written."""

    async def describe(self, acl_filter: AclBindingFilter) -> list[AclBinding]: ...

    async def create(self, bindings: Sequence[AclBinding]) -> None: ...

    async def delete(self, filters: Sequence[AclBindingFilter]) -> None: ...


@dataclass
class AclCommandOptions:
    """kafka-acls.sh's options (the action, resources, principals, hosts, operations)."""

    add: bool = False
    remove: bool = False
    list_acls: bool = False
    topics: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    transactional_ids: list[str] = field(default_factory=list)
    cluster: bool = False
    resource_pattern_type: str = "literal"
    allow_principals: list[str] = field(default_factory=list)
    deny_principals: list[str] = field(default_factory=list)
    allow_hosts: list[str] = field(default_factory=list)
    deny_hosts: list[str] = field(default_factory=list)
    operations: list[str] = field(default_factory=list)
    principals: list[str] = field(default_factory=list)
    producer: bool = False
    consumer: bool = False
    idempotent: bool = False
    force: bool = False

    def check_args(self) -> None:
        if sum((self.add, self.remove, self.list_acls)) != 1:
            raise AclCommandError(
                "Command must include exactly one action: --list, --add, --remove. "
            )
        if self.principals and not self.list_acls:
            raise AclCommandError("The --principal option is only available if --list is set")
        if self.producer and not self.topics:
            raise AclCommandError("With --producer you must specify a --topic")
        if self.idempotent and not self.producer:
            raise AclCommandError("The --idempotent option is only available if --producer is set")
        if self.consumer and (
            not self.topics or not self.groups or self.cluster or self.transactional_ids
        ):
            raise AclCommandError(
                "With --consumer you must specify a --topic and a --group and no --cluster or "
                "--transactional-id option should be specified."
            )
        try:
            pattern_type_from_name(self.resource_pattern_type)
        except AclError:
            raise AclCommandError(
                f"Unknown resource-pattern-type: {self.resource_pattern_type}"
            ) from None
        if self.add:
            acls_to_add(self)
        elif self.remove:
            filters_to_entries(self)
        else:
            _principals(self.principals)

    @property
    def pattern_type(self) -> PatternType:
        return pattern_type_from_name(self.resource_pattern_type)


_Filters = dict[AclBindingFilter, set[AccessControlEntry]]


def _principals(texts: Sequence[str]) -> list[str]:
    out = []
    for text in texts:
        try:
            out.append(str(KafkaPrincipal.from_string(text.strip())))
        except ValueError as e:
            raise AclCommandError(str(e)) from None
    return out


def _entries(opts: AclCommandOptions, operations: set[AclOperation]) -> set[AccessControlEntry]:
    entries = set()
    for principals, hosts, permission in (
        (opts.allow_principals, opts.allow_hosts, AclPermissionType.ALLOW),
        (opts.deny_principals, opts.deny_hosts, AclPermissionType.DENY),
    ):
        names = _principals(principals)
        for principal in names:
            for host in [h.strip() for h in hosts] or [WILDCARD_HOST]:
                for op in operations:
                    entries.add(AccessControlEntry(principal, host, op, permission))
    return entries


def resource_filters(opts: AclCommandOptions, die_if_none: bool = True) -> list[AclBindingFilter]:
    """The resource pattern filters the options name (Kafka's getResourceFilter)."""
    pattern = opts.pattern_type
    filters = [AclBindingFilter(ResourceType.TOPIC, t.strip(), pattern) for t in opts.topics]
    if pattern == PatternType.LITERAL and (opts.cluster or opts.idempotent):
        filters.append(AclBindingFilter(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL))
    filters += [AclBindingFilter(ResourceType.GROUP, g.strip(), pattern) for g in opts.groups]
    filters += [AclBindingFilter(ResourceType.TRANSACTIONAL_ID, t, pattern)
                for t in opts.transactional_ids]  # fmt: skip
    if not filters and die_if_none:
        raise AclCommandError(
            "You must provide at least one resource: --topic <topic> or --cluster or --group "
            "<group> or --delegation-token <Delegation Token ID>"
        )
    return list(dict.fromkeys(filters))


def filters_to_entries(opts: AclCommandOptions) -> _Filters:
    """Each resource filter with the entries the options give it (getResourceFilterToAcls)."""
    out: _Filters = {}
    filters = resource_filters(opts)
    if not opts.producer and not opts.consumer:
        try:
            ops = {operation_from_name(o.strip()) for o in opts.operations} or {Op.ALL}
        except AclError as e:
            raise AclCommandError(str(e)) from None
        entries = _entries(opts, ops)
        out.update((f, set(entries)) for f in filters)
    if opts.producer:
        for f in filters:
            if f.resource_type == ResourceType.TOPIC:
                out[f] = _entries(opts, {Op.WRITE, Op.DESCRIBE, Op.CREATE})
            elif f.resource_type == ResourceType.TRANSACTIONAL_ID:
                out[f] = _entries(opts, {Op.WRITE, Op.DESCRIBE})
        if opts.idempotent:
            cluster = AclBindingFilter(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL)
            out[cluster] = _entries(opts, {Op.IDEMPOTENT_WRITE})
    if opts.consumer:
        for f in filters:
            if f.resource_type == ResourceType.TOPIC:
                out[f] = out.get(f, set()) | _entries(opts, {Op.READ, Op.DESCRIBE})
            elif f.resource_type == ResourceType.GROUP:
                out[f] = out.get(f, set()) | _entries(opts, {Op.READ})
    for f, entries in out.items():
        valid = SUPPORTED_OPERATIONS[f.resource_type] | {Op.ALL}
        if any(e.operation not in valid for e in entries):
            names = ",".join(op.name for op in sorted(valid))
            raise AclCommandError(
                f"ResourceType {f.resource_type.name} only supports operations {names}"
            )
    return out


def _pattern(f: AclBindingFilter) -> ResourcePattern:
    assert f.name is not None
    return ResourcePattern(f.resource_type, f.name, f.pattern_type)


def _filter_text(f: AclBindingFilter) -> str:
    return (f"ResourcePatternFilter(resourceType={f.resource_type.name}, name={f.name}, "
            f"patternType={f.pattern_type.name})")  # fmt: skip


def _acl_lines(entries: Sequence[AccessControlEntry]) -> str:
    return NL.join("\t" + str(e) for e in entries)


def _sorted(entries: set[AccessControlEntry]) -> list[AccessControlEntry]:
    return sorted(
        entries, key=lambda e: (e.principal, e.host, int(e.operation), int(e.permission_type))
    )


def acls_to_add(opts: AclCommandOptions) -> dict[ResourcePattern, set[AccessControlEntry]]:
    """The ACLs `--add` adds, by resource pattern (Kafka's getResourceToAcls)."""
    if opts.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise AclCommandError(
            f"A '--resource-pattern-type' value of '{opts.pattern_type.name}' is not valid "
            "when adding acls."
        )
    to_add = filters_to_entries(opts)
    if any(not entries for entries in to_add.values()):
        raise AclCommandError(
            "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."
        )
    return {_pattern(f): entries for f, entries in to_add.items()}


async def run_acl_command(
    service: AclService, opts: AclCommandOptions, out: Callable[[str], None],
    confirm: Callable[[str], bool] = lambda _: True,
) -> None:  # fmt: skip
    """Run the action the options name against `service`, printing kafka-acls.sh's lines."""
    if opts.add:
        for pattern, entries in acls_to_add(opts).items():
            out(f"Adding ACLs for resource `{pattern}`: {NL} {_acl_lines(_sorted(entries))} {NL}")
            await service.create([AclBinding(pattern, e) for e in _sorted(entries)])
        await _list(service, opts, out)
    elif opts.remove:
        for f, entries in filters_to_entries(opts).items():
            if not entries:
                if opts.force or confirm(
                    f"Are you sure you want to delete all ACLs for resource filter `{_filter_text(f)}`? (y/n)"
                ):
                    await service.delete([f])
            elif opts.force or confirm(
                f"Are you sure you want to remove ACLs: {NL} {_acl_lines(_sorted(entries))} {NL} "
                f"from resource filter `{_filter_text(f)}`? (y/n)"
            ):
                await service.delete([AclBindingFilter(f.resource_type, f.name, f.pattern_type,
                                                       e.principal, e.host, e.operation, e.permission_type)
                                      for e in _sorted(entries)])  # fmt: skip
        await _list(service, opts, out)
    else:
        await _list(service, opts, out)


async def _list(service: AclService, opts: AclCommandOptions, out: Callable[[str], None]) -> None:
    filters = resource_filters(opts, die_if_none=False) or [AclBindingFilter()]
    by_pattern: dict[ResourcePattern, set[AccessControlEntry]] = {}
    for f in filters:
        for b in await service.describe(f):
            by_pattern.setdefault(b.pattern, set()).add(b.entry)
    principals = _principals(opts.principals)
    if not principals:
        _print(by_pattern, out)
        return
    for principal in principals:
        out(f"ACLs for principal `{principal}`")
        _print(
            {p: {e for e in es if e.principal == principal} for p, es in by_pattern.items()}, out
        )


def _print(
    by_pattern: dict[ResourcePattern, set[AccessControlEntry]], out: Callable[[str], None]
) -> None:
    for pattern, entries in by_pattern.items():
        if entries:
            out(f"Current ACLs for resource `{pattern}`: {NL} {_acl_lines(_sorted(entries))} {NL}")


class AuthorizerAclService:
    """ACLs through the AclAuthorizer over the metadata store (`--authorizer-properties`)."""

    def __init__(self, authorizer: Any) -> None:
        self.authorizer = authorizer

    async def describe(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        result: list[AclBinding] = self.authorizer.acls(acl_filter)
        return result

    async def create(self, bindings: Sequence[AclBinding]) -> None:
        for error in await self.authorizer.create_acls(bindings):
            if error is not None:
                raise AclCommandError(f"Error while adding ACLs: {error}")

    async def delete(self, filters: Sequence[AclBindingFilter]) -> None:
        for result in await self.authorizer.delete_acls(filters):
            if result.error is not None:
                raise AclCommandError(f"Error while removing ACLs: {result.error}")


def _filter_body(f: AclBindingFilter) -> dict[str, Any]:
    return {"resource_type_filter": int(f.resource_type), "resource_name_filter": f.name,
            "pattern_type_filter": int(f.pattern_type), "principal_filter": f.principal,
            "host_filter": f.host, "operation": int(f.operation),
            "permission_type": int(f.permission_type)}  # fmt: skip


class BrokerAclService:
    """ACLs through a broker's CreateAcls / DescribeAcls / DeleteAcls (`--bootstrap-server`);
    `client` is a started kafpy KafkaClient."""

    def __init__(self, client: Any) -> None:
        self.client = client

    async def describe(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        response = await self.client.send_to_any(ApiKey.DESCRIBE_ACLS, _filter_body(acl_filter))
        _raise(response["error_code"], response.get("error_message"), "Error while listing ACLs")
        return [
            AclBinding(ResourcePattern(ResourceType(r["resource_type"]), r["resource_name"],
                                       PatternType(r.get("pattern_type", 3))),
                       AccessControlEntry(a["principal"], a["host"], AclOperation(a["operation"]),
                                          AclPermissionType(a["permission_type"])))
            for r in response["resources"] for a in r["acls"]
        ]  # fmt: skip

    async def create(self, bindings: Sequence[AclBinding]) -> None:
        body = {"creations": [
            {"resource_type": int(b.pattern.resource_type), "resource_name": b.pattern.name,
             "resource_pattern_type": int(b.pattern.pattern_type), "principal": b.entry.principal,
             "host": b.entry.host, "operation": int(b.entry.operation),
             "permission_type": int(b.entry.permission_type)} for b in bindings]}  # fmt: skip
        response = await self.client.send_to_any(ApiKey.CREATE_ACLS, body)
        for r in response["results"]:
            _raise(r["error_code"], r.get("error_message"), "Error while adding ACLs")

    async def delete(self, filters: Sequence[AclBindingFilter]) -> None:
        body = {"filters": [_filter_body(f) for f in filters]}
        response = await self.client.send_to_any(ApiKey.DELETE_ACLS, body)
        for r in response["filter_results"]:
            _raise(r["error_code"], r.get("error_message"), "Error while removing ACLs")


def _raise(code: int, message: str | None, what: str) -> None:
    if code != Errors.NONE:
        raise AclCommandError(f"{what}: {message or Errors(code).name}")
