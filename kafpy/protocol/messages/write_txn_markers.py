"""WriteTxnMarkers (key 27): a transaction coordinator asks partition leaders to write
COMMIT or ABORT markers (Kafka 2.8: versions 0-1, flexible from 1; v2 is declared for
the codec, not advertised)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body, per_partition
from kafpy.protocol.schema import Array, Field, Message, Struct

WRITE_TXN_MARKERS_REQUEST = Message(
    ApiKey.WRITE_TXN_MARKERS, "WriteTxnMarkersRequest", "request", (0, 2), 1,
    [
        Field("markers", Array(Struct([
            Field("producer_id", "int64"),
            Field("producer_epoch", "int16"),
            Field("transaction_result", "bool"),
            Field("topics", Array(Struct([
                Field("name", "string"),
                Field("partition_indexes", Array("int32")),
            ]))),
            Field("coordinator_epoch", "int32"),
            Field("transaction_version", "int8", "2+", default=0),
        ]))),
    ],
)

WRITE_TXN_MARKERS_RESPONSE = Message(
    ApiKey.WRITE_TXN_MARKERS, "WriteTxnMarkersResponse", "response", (0, 2), 1,
    [
        Field("markers", Array(Struct([
            Field("producer_id", "int64"),
            Field("topics", Array(Struct([
                Field("name", "string"),
                Field("partitions", Array(Struct([
                    Field("partition_index", "int32"),
                    Field("error_code", "int16"),
                ]))),
            ]))),
        ]))),
    ],
)


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """Every partition of every marker of the request answered with `code`."""
    return {"markers": [
        {"producer_id": m["producer_id"], "topics": per_partition(
            m, "topics", "partition_indexes",
            lambda p: {"partition_index": p, "error_code": code}, partition_index=None)}
        for m in body.get("markers") or ()]}  # fmt: skip


WRITE_TXN_MARKERS_API = ApiSchema(
    WRITE_TXN_MARKERS_REQUEST,
    WRITE_TXN_MARKERS_RESPONSE,
    versions=(0, 1),
    error_response=error_response,
)
