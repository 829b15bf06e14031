"""Produce (key 0): append record batches to partitions."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.schema import Array, Field, Message, Struct

PRODUCE_REQUEST = Message(
    ApiKey.PRODUCE, "ProduceRequest", "request", (0, 13), 9,
    [
        Field("transactional_id", "string", "3+", nullable="3+", default=None),
        Field("acks", "int16"),
        Field("timeout_ms", "int32"),
        Field("topic_data", Array(Struct([
            Field("name", "string", "0-12"),
            Field("topic_id", "uuid", "13+"),
            Field("partition_data", Array(Struct([
                Field("index", "int32"),
                Field("records", "records", nullable="0+"),
            ]))),
        ]))),
    ],
)

PRODUCE_RESPONSE = Message(
    ApiKey.PRODUCE, "ProduceResponse", "response", (0, 13), 9,
    [
        Field("responses", Array(Struct([
            Field("name", "string", "0-12"),
            Field("topic_id", "uuid", "13+"),
            Field("partition_responses", Array(Struct([
                Field("index", "int32"),
                Field("error_code", "int16"),
                Field("base_offset", "int64"),
                Field("log_append_time_ms", "int64", "2+", default=-1),
                Field("log_start_offset", "int64", "5+", default=-1),
                Field("record_errors", Array(Struct([
                    Field("batch_index", "int32", "8+"),
                    Field("batch_index_error_message", "string", "8+", nullable="8+",
                          default=None),
                ])), "8+"),
                Field("error_message", "string", "8+", nullable="8+", default=None),
                Field("current_leader", Struct([
                    Field("leader_id", "int32", "10+", default=-1),
                    Field("leader_epoch", "int32", "10+", default=-1),
                ]), "10+", tag=0),
            ]))),
        ]))),
        Field("throttle_time_ms", "int32", "1+", default=0),
        Field("node_endpoints", Array(Struct([
            Field("node_id", "int32", "10+"),
            Field("host", "string", "10+"),
            Field("port", "int32", "10+"),
            Field("rack", "string", "10+", nullable="10+", default=None),
        ])), "10+", tag=0),
    ],
)
