"""LeaderAndIsr (key 4): the controller tells a broker which partitions it leads or follows.

Removed from Kafka in 4.0 (KRaft); declared from Kafka 3.x's definitions (versions 0-6).
"""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.schema import Array, Field, Message, Struct

# The per-partition state; v0-1 carry the topic name in it, v2+ group partitions by topic.
PARTITION_STATE = Struct([
    Field("topic_name", "string", "0-1"),
    Field("partition_index", "int32"),
    Field("controller_epoch", "int32"),
    Field("leader", "int32"),
    Field("leader_epoch", "int32"),
    Field("isr", Array("int32")),
    Field("zk_version", "int32"),
    Field("replicas", Array("int32")),
    Field("adding_replicas", Array("int32"), "3+"),
    Field("removing_replicas", Array("int32"), "3+"),
    Field("is_new", "bool", "1+", default=False),
    Field("leader_recovery_state", "int8", "6+", default=0),
])

LEADER_AND_ISR_REQUEST = Message(
    ApiKey.LEADER_AND_ISR, "LeaderAndIsrRequest", "request", (0, 6), 4,
    [
        Field("controller_id", "int32"),
        Field("controller_epoch", "int32"),
        Field("broker_epoch", "int64", "2+", default=-1),
        Field("type", "int8", "5+"),
        Field("ungrouped_partition_states", Array(PARTITION_STATE), "0-1"),
        Field("topic_states", Array(Struct([
            Field("topic_name", "string", "2+"),
            Field("topic_id", "uuid", "5+"),
            Field("partition_states", Array(PARTITION_STATE), "2+"),
        ])), "2+"),
        Field("live_leaders", Array(Struct([
            Field("broker_id", "int32"),
            Field("host_name", "string"),
            Field("port", "int32"),
        ]))),
    ],
)

PARTITION_ERROR = Struct([
    Field("topic_name", "string", "0-4"),
    Field("partition_index", "int32"),
    Field("error_code", "int16"),
])

LEADER_AND_ISR_RESPONSE = Message(
    ApiKey.LEADER_AND_ISR, "LeaderAndIsrResponse", "response", (0, 6), 4,
    [
        Field("error_code", "int16"),
        Field("partition_errors", Array(PARTITION_ERROR), "0-4"),
        Field("topics", Array(Struct([
            Field("topic_id", "uuid", "5+"),
            Field("partition_errors", Array(PARTITION_ERROR), "5+"),
        ])), "5+"),
    ],
)
