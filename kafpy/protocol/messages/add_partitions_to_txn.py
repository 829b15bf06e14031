"""AddPartitionsToTxn (key 24): a transactional producer adds partitions to its transaction
(Kafka 2.8: versions 0-3, flexible from 3; v2 adds PRODUCER_FENCED)."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.schema import Array, Field, Message, Struct

ADD_PARTITIONS_TO_TXN_REQUEST = Message(
    ApiKey.ADD_PARTITIONS_TO_TXN, "AddPartitionsToTxnRequest", "request", (0, 3), 3,
    [
        Field("transactional_id", "string"),
        Field("producer_id", "int64"),
        Field("producer_epoch", "int16"),
        Field("topics", Array(Struct([
            Field("name", "string"),
            Field("partitions", Array("int32")),
        ]))),
    ],
)

ADD_PARTITIONS_TO_TXN_RESPONSE = Message(
    ApiKey.ADD_PARTITIONS_TO_TXN, "AddPartitionsToTxnResponse", "response", (0, 3), 3,
    [
        Field("throttle_time_ms", "int32"),
        Field("results", Array(Struct([
            Field("name", "string"),
            Field("results", Array(Struct([
                Field("partition_index", "int32"),
                Field("error_code", "int16"),
            ]))),
        ]))),
    ],
)
