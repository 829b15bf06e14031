"""DeleteTopics (key 20): delete topics by name (or id from v6)."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.schema import Array, Field, Message, Struct

DELETE_TOPICS_REQUEST = Message(
    ApiKey.DELETE_TOPICS, "DeleteTopicsRequest", "request", (0, 6), 4,
    [
        Field("topics", Array(Struct([
            Field("name", "string", "6+", nullable="6+", default=None),
            Field("topic_id", "uuid", "6+"),
        ])), "6+"),
        Field("topic_names", Array("string"), "0-5"),
        Field("timeout_ms", "int32"),
    ],
)

DELETE_TOPICS_RESPONSE = Message(
    ApiKey.DELETE_TOPICS, "DeleteTopicsResponse", "response", (0, 6), 4,
    [
        Field("throttle_time_ms", "int32", "1+"),
        Field("responses", Array(Struct([
            Field("name", "string", nullable="6+"),
            Field("topic_id", "uuid", "6+"),
            Field("error_code", "int16"),
            Field("error_message", "string", "5+", nullable="5+", default=None),
        ]))),
    ],
)
