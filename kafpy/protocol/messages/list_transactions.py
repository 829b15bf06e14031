"""ListTransactions (key 66, KIP-664, Kafka 3.0): the transactional ids a broker coordinates.
kafpy serves v0 (beyond Kafka 2.8) for `kafpy transactions --list`; v1-2 are declared for
the codec only."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, top_level_error
from kafpy.protocol.schema import Array, Field, Message, Struct

LIST_TRANSACTIONS_REQUEST = Message(
    ApiKey.LIST_TRANSACTIONS, "ListTransactionsRequest", "request", (0, 2), 0,
    [
        Field("state_filters", Array("string")),
        Field("producer_id_filters", Array("int64")),
        Field("duration_filter", "int64", "1+", default=-1),
        Field("transactional_id_pattern", "string", "2+", nullable="2+", default=None),
    ],
)

LIST_TRANSACTIONS_RESPONSE = Message(
    ApiKey.LIST_TRANSACTIONS, "ListTransactionsResponse", "response", (0, 2), 0,
    [
        Field("throttle_time_ms", "int32"),
        Field("error_code", "int16"),
        Field("unknown_state_filters", Array("string")),
        Field("transaction_states", Array(Struct([
            Field("transactional_id", "string"),
            Field("producer_id", "int64"),
            Field("transaction_state", "string"),
        ]))),
    ],
)  # fmt: skip


# Kafka 3.0's (KIP-664), served beyond 2.8 for `kafpy transactions`


LIST_TRANSACTIONS_API = ApiSchema(
    LIST_TRANSACTIONS_REQUEST,
    LIST_TRANSACTIONS_RESPONSE,
    versions=(0, 0),
    error_response=top_level_error,
)
