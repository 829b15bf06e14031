"""EndTxn (key 26): a transactional producer commits or aborts its transaction. Kafka 2.8
speaks versions 0-3 (flexible from 3; v2 adds PRODUCER_FENCED); v4-5 (KIP-890) are
declared for the codec only."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, top_level_error
from kafpy.protocol.schema import Field, Message

END_TXN_REQUEST = Message(
    ApiKey.END_TXN, "EndTxnRequest", "request", (0, 5), 3,
    [
        Field("transactional_id", "string"),
        Field("producer_id", "int64"),
        Field("producer_epoch", "int16"),
        Field("committed", "bool"),
    ],
)

END_TXN_RESPONSE = Message(
    ApiKey.END_TXN, "EndTxnResponse", "response", (0, 5), 3,
    [
        Field("throttle_time_ms", "int32"),
        Field("error_code", "int16"),
        Field("producer_id", "int64", "5+", default=-1),
        Field("producer_epoch", "int16", "5+", default=-1),
    ],
)


END_TXN_API = ApiSchema(
    END_TXN_REQUEST,
    END_TXN_RESPONSE,
    versions=(0, 3),
    error_response=top_level_error,
)
