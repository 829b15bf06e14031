"""AddOffsetsToTxn (key 25): a transactional producer adds a group's offsets partition to its
transaction. Kafka 2.8 speaks versions 0-3 (flexible from 3; v2 adds PRODUCER_FENCED);
v4 (KIP-890) is declared for the codec only."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, top_level_error
from kafpy.protocol.schema import Field, Message

ADD_OFFSETS_TO_TXN_REQUEST = Message(
    ApiKey.ADD_OFFSETS_TO_TXN, "AddOffsetsToTxnRequest", "request", (0, 4), 3,
    [
        Field("transactional_id", "string"),
        Field("producer_id", "int64"),
        Field("producer_epoch", "int16"),
        Field("group_id", "string"),
    ],
)

ADD_OFFSETS_TO_TXN_RESPONSE = Message(
    ApiKey.ADD_OFFSETS_TO_TXN, "AddOffsetsToTxnResponse", "response", (0, 4), 3,
    [Field("throttle_time_ms", "int32"), Field("error_code", "int16")],
)


ADD_OFFSETS_TO_TXN_API = ApiSchema(
    ADD_OFFSETS_TO_TXN_REQUEST,
    ADD_OFFSETS_TO_TXN_RESPONSE,
    versions=(0, 3),
    error_response=top_level_error,
)
