"""DeleteTopics (key 20): delete topics by name (or id from v6)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
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


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """Every topic of the request answered with `code` and `message`: those of
    `topic_names` (v0-5, and AdminManager's form of any version), else those of `topics`
    (v6+, by name or id)."""
    if body.get("topic_names") is not None or version < 6:
        items = [
            {"name": n, "error_code": code, "error_message": message}
            for n in body.get("topic_names") or ()
        ]
    else:
        items = [
            {"name": t.get("name"), "topic_id": t.get("topic_id"), "error_code": code,
             "error_message": message}
            for t in body.get("topics") or ()
        ]  # fmt: skip
    return {"throttle_time_ms": 0, "responses": items}


DELETE_TOPICS_API = ApiSchema(
    DELETE_TOPICS_REQUEST,
    DELETE_TOPICS_RESPONSE,
    versions=(0, 6),
    error_response=error_response,
)
