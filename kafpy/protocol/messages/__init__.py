"""Every API's request and response schema, by API key.

`REQUESTS[ApiKey.X]` and `RESPONSES[ApiKey.X]` are the `Message`s for API X.
"""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.messages import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_client_quotas,
    alter_configs,
    alter_partition_reassignments,
    alter_replica_log_dirs,
    api_versions,
    controlled_shutdown,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_topics,
    describe_acls,
    describe_client_quotas,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_transactions,
    elect_leaders,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leader_and_isr,
    leave_group,
    list_groups,
    list_offsets,
    list_partition_reassignments,
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sasl_authenticate,
    sasl_handshake,
    stop_replica,
    sync_group,
    txn_offset_commit,
    update_metadata,
    user_scram_credentials,
    write_txn_markers,
)
from kafpy.protocol.schema import Message

_MODULES = [
    alter_client_quotas,
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_configs,
    alter_replica_log_dirs,
    alter_partition_reassignments,
    api_versions,
    controlled_shutdown,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_topics,
    describe_client_quotas,
    describe_acls,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_transactions,
    elect_leaders,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leader_and_isr,
    leave_group,
    list_groups,
    list_offsets,
    list_transactions,
    list_partition_reassignments,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sasl_authenticate,
    sasl_handshake,
    stop_replica,
    sync_group,
    txn_offset_commit,
    update_metadata,
    write_txn_markers,
    user_scram_credentials,
]


def _collect(kind: str) -> dict[ApiKey, Message]:
    found: dict[ApiKey, Message] = {}
    for module in _MODULES:
        for value in vars(module).values():
            if isinstance(value, Message) and value.kind == kind:
                found[ApiKey(value.api_key)] = value
    return dict(sorted(found.items()))


REQUESTS: dict[ApiKey, Message] = _collect("request")
RESPONSES: dict[ApiKey, Message] = _collect("response")
