"""The API registry: one entry per API the broker serves (Kafka's ApiKeys joined to
KafkaApis' handle() cases and AuthHelper's checks).

An entry joins, by API key, the protocol half, the API's `ApiSchema` (request and response
schemas, advertised versions, error response; declared in kafpy/protocol/messages/<api>.py),
and the server half: its authorization guard (kafpy/server/authorization_guards.py), or
NO_AUTHORIZATION for an API that checks nothing or checks inside its handler.
KafkaApis answers an API only when it has an entry here; docs/adding_an_api.md says how to
add one.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Final

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema
from kafpy.protocol.messages import API_SCHEMAS
from kafpy.server import authorization_guards as g
from kafpy.server.authorization_guards import Guard, Op


class NoAuthorization(Enum):
    """The marker of an API the authorizer does not guard (ApiVersions, the SASL exchange)
    or whose handler checks itself (the ACL APIs)."""

    NO_AUTHORIZATION = "no authorization"


NO_AUTHORIZATION: Final = NoAuthorization.NO_AUTHORIZATION


@dataclass(frozen=True)
class ApiEntry:
    """One API: its wire declaration and its authorization guard."""

    schema: ApiSchema
    guard: Guard | NoAuthorization

    @property
    def api_key(self) -> ApiKey:
        return self.schema.api_key


_GUARDS: dict[ApiKey, Guard | NoAuthorization] = {
    ApiKey.API_VERSIONS: NO_AUTHORIZATION,
    ApiKey.SASL_HANDSHAKE: NO_AUTHORIZATION,
    ApiKey.SASL_AUTHENTICATE: NO_AUTHORIZATION,
    # the ACL APIs check Describe / Alter on the cluster in their handlers (acl_apis.py)
    ApiKey.DESCRIBE_ACLS: NO_AUTHORIZATION,
    ApiKey.CREATE_ACLS: NO_AUTHORIZATION,
    ApiKey.DELETE_ACLS: NO_AUTHORIZATION,
    ApiKey.PRODUCE: g.produce_guard,
    ApiKey.FETCH: g.fetch_guard,
    ApiKey.LIST_OFFSETS: g.list_offsets_guard,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: g.offset_for_leader_epoch_guard,
    ApiKey.DELETE_RECORDS: g.delete_records_guard,
    ApiKey.METADATA: g.metadata_guard,
    ApiKey.DESCRIBE_CLUSTER: g.describe_cluster_guard,
    ApiKey.CREATE_TOPICS: g.create_topics_guard,
    ApiKey.DELETE_TOPICS: g.delete_topics_guard,
    ApiKey.CREATE_PARTITIONS: g.create_partitions_guard,
    ApiKey.DESCRIBE_CONFIGS: g.configs_guard("describe_configs", Op.DESCRIBE_CONFIGS),
    ApiKey.ALTER_CONFIGS: g.configs_guard("alter_configs", Op.ALTER_CONFIGS),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: g.configs_guard(
        "incremental_alter_configs", Op.ALTER_CONFIGS
    ),
    ApiKey.JOIN_GROUP: g.group_guard,
    ApiKey.SYNC_GROUP: g.group_guard,
    ApiKey.HEARTBEAT: g.group_guard,
    ApiKey.LEAVE_GROUP: g.group_guard,
    ApiKey.OFFSET_COMMIT: g.offset_commit_guard,
    ApiKey.OFFSET_FETCH: g.offset_fetch_guard,
    ApiKey.OFFSET_DELETE: g.offset_delete_guard,
    ApiKey.LIST_GROUPS: g.list_groups_guard,
    ApiKey.DESCRIBE_GROUPS: g.describe_groups_guard,
    ApiKey.DELETE_GROUPS: g.delete_groups_guard,
    ApiKey.FIND_COORDINATOR: g.find_coordinator_guard,
    ApiKey.INIT_PRODUCER_ID: g.init_producer_id_guard,
    ApiKey.LEADER_AND_ISR: g.cluster_api(Op.CLUSTER_ACTION),
    ApiKey.UPDATE_METADATA: g.cluster_api(Op.CLUSTER_ACTION),
    ApiKey.STOP_REPLICA: g.cluster_api(Op.CLUSTER_ACTION),
    ApiKey.CONTROLLED_SHUTDOWN: g.cluster_api(Op.CLUSTER_ACTION),
    ApiKey.ELECT_LEADERS: g.cluster_api(Op.ALTER),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: g.cluster_api(
        Op.DESCRIBE, "Cluster authorization failed."
    ),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: g.cluster_api(Op.ALTER),
    ApiKey.WRITE_TXN_MARKERS: g.cluster_api(Op.CLUSTER_ACTION),
    ApiKey.ADD_PARTITIONS_TO_TXN: g.add_partitions_to_txn_guard,
    ApiKey.ADD_OFFSETS_TO_TXN: g.txn_id_api(group_read=True),
    ApiKey.END_TXN: g.txn_id_api(),
    ApiKey.TXN_OFFSET_COMMIT: g.txn_id_api(group_read=True),
    # Kafka 3.0's transaction tools' APIs: Describe on the cluster here (kafpy serves them
    # for `kafpy transactions`)
    ApiKey.DESCRIBE_TRANSACTIONS: g.cluster_api(Op.DESCRIBE),
    ApiKey.LIST_TRANSACTIONS: g.cluster_api(Op.DESCRIBE),
    ApiKey.DESCRIBE_PRODUCERS: g.cluster_api(Op.DESCRIBE),
    # Kafka 2.8 checks DescribeConfigs / AlterConfigs on the cluster for the quota APIs
    ApiKey.DESCRIBE_CLIENT_QUOTAS: g.cluster_api(Op.DESCRIBE_CONFIGS),
    ApiKey.ALTER_CLIENT_QUOTAS: g.cluster_api(Op.ALTER_CONFIGS),
    ApiKey.DESCRIBE_LOG_DIRS: g.cluster_api(Op.DESCRIBE),
    ApiKey.ALTER_REPLICA_LOG_DIRS: g.cluster_api(Op.ALTER),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: g.cluster_api(Op.ALTER),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: g.cluster_api(Op.DESCRIBE),
}

API_REGISTRY: dict[ApiKey, ApiEntry] = {
    key: ApiEntry(schema, _GUARDS[key]) for key, schema in API_SCHEMAS.items()
}
"""Every API the broker may serve, by API key."""
