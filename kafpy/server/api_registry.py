"""The API registry: one entry per API the broker serves (Kafka's ApiKeys joined to
KafkaApis' handle() cases and AuthHelper's checks).

An entry joins, by API key, the protocol half, the API's `ApiSchema` (request and response
schemas, advertised versions, error response; declared in kafpy/protocol/messages/<api>.py),
and the server half: the handler-group method that answers it, the broker component it
needs (none: always served), and its authorization guard (kafpy/server/authorization_guards.py)
or NO_AUTHORIZATION for an API that checks nothing or checks inside its handler.
KafkaApis dispatches from here; docs/architecture.md ("How to add an API") says how to add one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final, Generic, TypeVar

from kafpy.network.request_channel import Request
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema
from kafpy.protocol.messages import API_SCHEMAS
from kafpy.server import authorization_guards as g
from kafpy.server.acl_apis import AclApis
from kafpy.server.admin_apis import AdminApis
from kafpy.server.api_context import Needs
from kafpy.server.authorization_guards import Guard, Op
from kafpy.server.connection_apis import ConnectionApis
from kafpy.server.controller_request_apis import ControllerRequestApis
from kafpy.server.coordinator_apis import CoordinatorApis
from kafpy.server.delegation_token_apis import DelegationTokenApis
from kafpy.server.metadata_apis import MetadataApis
from kafpy.server.replica_apis import ReplicaApis

Response = dict[str, Any] | bytes | None
"""A handler's answer: a body to encode, one already encoded, or None (nothing to send)."""
G = TypeVar("G")


class NoAuthorization(Enum):
    """The marker of an API the authorizer does not guard (ApiVersions, the SASL exchange)
    or whose handler checks itself (the ACL APIs)."""

    NO_AUTHORIZATION = "no authorization"


NO_AUTHORIZATION: Final = NoAuthorization.NO_AUTHORIZATION


@dataclass(frozen=True)
class ApiEntry(Generic[G]):
    """One API: its wire declaration, the handler group and method answering it, the
    component it needs, and its authorization guard."""

    schema: ApiSchema
    group: type[G]
    handler: Callable[[G, Request], Awaitable[Response]]
    guard: Guard | NoAuthorization
    needs: Needs | None = None

    @property
    def api_key(self) -> ApiKey:
        return self.schema.api_key


def _entry(
    key: ApiKey,
    group: type[G],
    handler: Callable[[G, Request], Awaitable[Response]],
    guard: Guard | NoAuthorization,
    needs: Needs | None = None,
) -> ApiEntry[G]:
    return ApiEntry(API_SCHEMAS[key], group, handler, guard, needs)


# fmt: off
_ENTRIES: list[ApiEntry[Any]] = [
    _entry(ApiKey.API_VERSIONS, ConnectionApis, ConnectionApis.handle_api_versions, NO_AUTHORIZATION),
    _entry(ApiKey.SASL_HANDSHAKE, ConnectionApis, ConnectionApis.handle_sasl_handshake, NO_AUTHORIZATION),
    _entry(ApiKey.SASL_AUTHENTICATE, ConnectionApis, ConnectionApis.handle_sasl_authenticate, NO_AUTHORIZATION),
    # the ACL APIs check Describe / Alter on the cluster in their handlers (acl_apis.py)
    _entry(ApiKey.DESCRIBE_ACLS, AclApis, AclApis.handle_describe_acls, NO_AUTHORIZATION),
    _entry(ApiKey.CREATE_ACLS, AclApis, AclApis.handle_create_acls, NO_AUTHORIZATION),
    _entry(ApiKey.DELETE_ACLS, AclApis, AclApis.handle_delete_acls, NO_AUTHORIZATION),
    _entry(ApiKey.PRODUCE, ReplicaApis, ReplicaApis.handle_produce, g.produce_guard),
    _entry(ApiKey.FETCH, ReplicaApis, ReplicaApis.handle_fetch, g.fetch_guard),
    _entry(ApiKey.LIST_OFFSETS, ReplicaApis, ReplicaApis.handle_list_offsets, g.list_offsets_guard),
    _entry(ApiKey.OFFSET_FOR_LEADER_EPOCH, ReplicaApis, ReplicaApis.handle_offset_for_leader_epoch, g.offset_for_leader_epoch_guard),
    _entry(ApiKey.DELETE_RECORDS, ReplicaApis, ReplicaApis.handle_delete_records, g.delete_records_guard),
    _entry(ApiKey.METADATA, MetadataApis, MetadataApis.handle_metadata, g.metadata_guard),
    _entry(ApiKey.DESCRIBE_CLUSTER, MetadataApis, MetadataApis.handle_describe_cluster, g.describe_cluster_guard),
    _entry(ApiKey.CREATE_TOPICS, AdminApis, AdminApis.handle_create_topics, g.create_topics_guard, Needs.ADMIN_MANAGER),
    _entry(ApiKey.DELETE_TOPICS, AdminApis, AdminApis.handle_delete_topics, g.delete_topics_guard, Needs.ADMIN_MANAGER),
    _entry(ApiKey.CREATE_PARTITIONS, AdminApis, AdminApis.handle_create_partitions, g.create_partitions_guard, Needs.ADMIN_MANAGER),
    _entry(ApiKey.DESCRIBE_CONFIGS, AdminApis, AdminApis.handle_describe_configs, g.configs_guard("describe_configs", Op.DESCRIBE_CONFIGS), Needs.ADMIN_MANAGER),
    _entry(ApiKey.ALTER_CONFIGS, AdminApis, AdminApis.handle_alter_configs, g.configs_guard("alter_configs", Op.ALTER_CONFIGS), Needs.ADMIN_MANAGER),
    _entry(ApiKey.INCREMENTAL_ALTER_CONFIGS, AdminApis, AdminApis.handle_incremental_alter_configs, g.configs_guard("incremental_alter_configs", Op.ALTER_CONFIGS), Needs.ADMIN_MANAGER),
    _entry(ApiKey.JOIN_GROUP, CoordinatorApis, CoordinatorApis.handle_join_group, g.group_guard, Needs.GROUP_COORDINATOR),
    _entry(ApiKey.SYNC_GROUP, CoordinatorApis, CoordinatorApis.handle_sync_group, g.group_guard, Needs.GROUP_COORDINATOR),
    _entry(ApiKey.HEARTBEAT, CoordinatorApis, CoordinatorApis.handle_heartbeat, g.group_guard, Needs.GROUP_COORDINATOR),
    _entry(ApiKey.LEAVE_GROUP, CoordinatorApis, CoordinatorApis.handle_leave_group, g.group_guard, Needs.GROUP_COORDINATOR),
    _entry(ApiKey.OFFSET_COMMIT, CoordinatorApis, CoordinatorApis.handle_offset_commit, g.offset_commit_guard, Needs.GROUP_COORDINATOR),
    _entry(ApiKey.OFFSET_FETCH, CoordinatorApis, CoordinatorApis.handle_offset_fetch, g.offset_fetch_guard, Needs.GROUP_COORDINATOR),
    _entry(ApiKey.OFFSET_DELETE, CoordinatorApis, CoordinatorApis.handle_offset_delete, g.offset_delete_guard, Needs.GROUP_COORDINATOR),
    _entry(ApiKey.LIST_GROUPS, CoordinatorApis, CoordinatorApis.handle_list_groups, g.list_groups_guard, Needs.GROUP_COORDINATOR),
    _entry(ApiKey.DESCRIBE_GROUPS, CoordinatorApis, CoordinatorApis.handle_describe_groups, g.describe_groups_guard, Needs.GROUP_COORDINATOR),
    _entry(ApiKey.DELETE_GROUPS, CoordinatorApis, CoordinatorApis.handle_delete_groups, g.delete_groups_guard, Needs.GROUP_COORDINATOR),
    _entry(ApiKey.FIND_COORDINATOR, CoordinatorApis, CoordinatorApis.handle_find_coordinator, g.find_coordinator_guard, Needs.GROUP_COORDINATOR),
    _entry(ApiKey.INIT_PRODUCER_ID, CoordinatorApis, CoordinatorApis.handle_init_producer_id, g.init_producer_id_guard, Needs.PRODUCER_ID_MANAGER),
    _entry(ApiKey.LEADER_AND_ISR, ControllerRequestApis, ControllerRequestApis.handle_leader_and_isr, g.cluster_api(Op.CLUSTER_ACTION)),
    _entry(ApiKey.UPDATE_METADATA, ControllerRequestApis, ControllerRequestApis.handle_update_metadata, g.cluster_api(Op.CLUSTER_ACTION)),
    _entry(ApiKey.STOP_REPLICA, ControllerRequestApis, ControllerRequestApis.handle_stop_replica, g.cluster_api(Op.CLUSTER_ACTION)),
    _entry(ApiKey.CONTROLLED_SHUTDOWN, ControllerRequestApis, ControllerRequestApis.handle_controlled_shutdown, g.cluster_api(Op.CLUSTER_ACTION), Needs.CONTROLLER),
    _entry(ApiKey.ELECT_LEADERS, ControllerRequestApis, ControllerRequestApis.handle_elect_leaders, g.cluster_api(Op.ALTER), Needs.CONTROLLER),
    _entry(ApiKey.ALTER_ISR, ControllerRequestApis, ControllerRequestApis.handle_alter_isr, g.cluster_api(Op.CLUSTER_ACTION), Needs.CONTROLLER),
    _entry(ApiKey.UPDATE_FEATURES, ControllerRequestApis, ControllerRequestApis.handle_update_features, g.cluster_api(Op.ALTER), Needs.CONTROLLER),
    _entry(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, AdminApis, AdminApis.handle_describe_user_scram_credentials, g.cluster_api(
        Op.DESCRIBE, "Cluster authorization failed."
        ), Needs.ADMIN_ZK_CLIENT,
    ),
    _entry(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, AdminApis, AdminApis.handle_alter_user_scram_credentials, g.cluster_api(Op.ALTER), Needs.ADMIN_ZK_CLIENT),
    _entry(ApiKey.WRITE_TXN_MARKERS, ReplicaApis, ReplicaApis.handle_write_txn_markers, g.cluster_api(Op.CLUSTER_ACTION)),
    _entry(ApiKey.ADD_PARTITIONS_TO_TXN, CoordinatorApis, CoordinatorApis.handle_add_partitions_to_txn, g.add_partitions_to_txn_guard, Needs.TRANSACTION_COORDINATOR),
    _entry(ApiKey.ADD_OFFSETS_TO_TXN, CoordinatorApis, CoordinatorApis.handle_add_offsets_to_txn, g.txn_id_api(group_read=True), Needs.TRANSACTION_COORDINATOR),
    _entry(ApiKey.END_TXN, CoordinatorApis, CoordinatorApis.handle_end_txn, g.txn_id_api(), Needs.TRANSACTION_COORDINATOR),
    _entry(ApiKey.TXN_OFFSET_COMMIT, CoordinatorApis, CoordinatorApis.handle_txn_offset_commit, g.txn_id_api(group_read=True), Needs.GROUP_COORDINATOR),
    # Kafka 3.0's transaction tools' APIs: Describe on the cluster here (kafpy serves them
    # for `kafpy transactions`)
    _entry(ApiKey.DESCRIBE_TRANSACTIONS, CoordinatorApis, CoordinatorApis.handle_describe_transactions, g.cluster_api(Op.DESCRIBE), Needs.TRANSACTION_COORDINATOR),
    _entry(ApiKey.LIST_TRANSACTIONS, CoordinatorApis, CoordinatorApis.handle_list_transactions, g.cluster_api(Op.DESCRIBE), Needs.TRANSACTION_COORDINATOR),
    _entry(ApiKey.DESCRIBE_PRODUCERS, ReplicaApis, ReplicaApis.handle_describe_producers, g.cluster_api(Op.DESCRIBE)),
    # Kafka 2.8 checks DescribeConfigs / AlterConfigs on the cluster for the quota APIs
    _entry(ApiKey.DESCRIBE_CLIENT_QUOTAS, AdminApis, AdminApis.handle_describe_client_quotas, g.cluster_api(Op.DESCRIBE_CONFIGS), Needs.CLIENT_QUOTAS),
    _entry(ApiKey.ALTER_CLIENT_QUOTAS, AdminApis, AdminApis.handle_alter_client_quotas, g.cluster_api(Op.ALTER_CONFIGS), Needs.CLIENT_QUOTAS),
    _entry(ApiKey.DESCRIBE_LOG_DIRS, ReplicaApis, ReplicaApis.handle_describe_log_dirs, g.cluster_api(Op.DESCRIBE)),
    _entry(ApiKey.ALTER_REPLICA_LOG_DIRS, ReplicaApis, ReplicaApis.handle_alter_replica_log_dirs, g.cluster_api(Op.ALTER)),
    _entry(ApiKey.ALTER_PARTITION_REASSIGNMENTS, ControllerRequestApis, ControllerRequestApis.handle_alter_partition_reassignments, g.cluster_api(Op.ALTER), Needs.CONTROLLER),
    # the token APIs check the channel and the owner in their handlers, Describe on each
    # DelegationToken in describe (delegation_token_apis.py)
    _entry(ApiKey.CREATE_DELEGATION_TOKEN, DelegationTokenApis, DelegationTokenApis.handle_create_delegation_token, NO_AUTHORIZATION, Needs.TOKEN_MANAGER),
    _entry(ApiKey.RENEW_DELEGATION_TOKEN, DelegationTokenApis, DelegationTokenApis.handle_renew_delegation_token, NO_AUTHORIZATION, Needs.TOKEN_MANAGER),
    _entry(ApiKey.EXPIRE_DELEGATION_TOKEN, DelegationTokenApis, DelegationTokenApis.handle_expire_delegation_token, NO_AUTHORIZATION, Needs.TOKEN_MANAGER),
    _entry(ApiKey.DESCRIBE_DELEGATION_TOKEN, DelegationTokenApis, DelegationTokenApis.handle_describe_delegation_token, NO_AUTHORIZATION, Needs.TOKEN_MANAGER),
    _entry(ApiKey.LIST_PARTITION_REASSIGNMENTS, ControllerRequestApis, ControllerRequestApis.handle_list_partition_reassignments, g.cluster_api(Op.DESCRIBE), Needs.CONTROLLER),
]
# fmt: on

API_REGISTRY: dict[ApiKey, ApiEntry[Any]] = {e.api_key: e for e in _ENTRIES}
"""Every API the broker may serve, by API key."""
if len(API_REGISTRY) != len(_ENTRIES) or set(API_REGISTRY) != set(API_SCHEMAS):
    raise RuntimeError("every API schema needs exactly one registry entry")
