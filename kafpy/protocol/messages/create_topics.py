"""CreateTopics (key 19): create topics with partitions, replication and configs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

CREATE_TOPICS_REQUEST = Message(
    ApiKey.CREATE_TOPICS, "CreateTopicsRequest", "request", (0, 7), 5,
    [
        Field("topics", Array(Struct([
            Field("name", "string"),
            Field("num_partitions", "int32"),
            Field("replication_factor", "int16"),
            Field("assignments", Array(Struct([
                Field("partition_index", "int32"),
                Field("broker_ids", Array("int32")),
            ]))),
            Field("configs", Array(Struct([
                Field("name", "string"),
                Field("value", "string", nullable="0+"),
            ]))),
        ]))),
        Field("timeout_ms", "int32", default=60000),
        Field("validate_only", "bool", "1+", default=False),
    ],
)

CREATE_TOPICS_RESPONSE = Message(
    ApiKey.CREATE_TOPICS, "CreateTopicsResponse", "response", (0, 7), 5,
    [
        Field("throttle_time_ms", "int32", "2+"),
        Field("topics", Array(Struct([
            Field("name", "string"),
            Field("topic_id", "uuid", "7+"),
            Field("error_code", "int16"),
            Field("error_message", "string", "1+", nullable="0+"),
            Field("topic_config_error_code", "int16", "5+", tag=0),
            Field("num_partitions", "int32", "5+", default=-1),
            Field("replication_factor", "int16", "5+", default=-1),
            Field("configs", Array(Struct([
                Field("name", "string", "5+"),
                Field("value", "string", "5+", nullable="5+"),
                Field("read_only", "bool", "5+"),
                Field("config_source", "int8", "5+", default=-1),
                Field("is_sensitive", "bool", "5+"),
            ])), "5+", nullable="5+"),
        ]))),
    ],
)


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """Every topic of the request answered with `code` and `message`."""
    items = [
        {"name": t["name"], "error_code": code, "error_message": message}
        for t in body.get("topics") or ()
    ]
    return {"throttle_time_ms": 0, "topics": items}


CREATE_TOPICS_API = ApiSchema(
    CREATE_TOPICS_REQUEST,
    CREATE_TOPICS_RESPONSE,
    versions=(0, 7),
    error_response=error_response,
)
