"""DescribeTransactions (key 65, KIP-664, Kafka 3.0): the state of transactional ids, answered
by their coordinator. kafpy serves it (beyond Kafka 2.8) for `kafpy transactions --describe`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct

DESCRIBE_TRANSACTIONS_REQUEST = Message(
    ApiKey.DESCRIBE_TRANSACTIONS, "DescribeTransactionsRequest", "request", (0, 0), 0,
    [Field("transactional_ids", Array("string"))],
)

DESCRIBE_TRANSACTIONS_RESPONSE = Message(
    ApiKey.DESCRIBE_TRANSACTIONS, "DescribeTransactionsResponse", "response", (0, 0), 0,
    [
        Field("throttle_time_ms", "int32"),
        Field("transaction_states", Array(Struct([
            Field("error_code", "int16"),
            Field("transactional_id", "string"),
            Field("transaction_state", "string"),
            Field("transaction_timeout_ms", "int32"),
            Field("transaction_start_time_ms", "int64"),
            Field("producer_id", "int64"),
            Field("producer_epoch", "int16"),
            Field("topics", Array(Struct([
                Field("topic", "string"),
                Field("partitions", Array("int32")),
            ]))),
        ]))),
    ],
)  # fmt: skip


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """The request failing whole: no transaction states (the response has no top-level
    error code; `error_code` is for the broker's callers)."""
    return {"throttle_time_ms": 0, "error_code": code, "transaction_states": []}


# Kafka 3.0's (KIP-664), served beyond 2.8 for `kafpy transactions`


DESCRIBE_TRANSACTIONS_API = ApiSchema(
    DESCRIBE_TRANSACTIONS_REQUEST,
    DESCRIBE_TRANSACTIONS_RESPONSE,
    versions=(0, 0),
    error_response=error_response,
)
