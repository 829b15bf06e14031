"""InitProducerId (key 22): a producer id and epoch for idempotent/transactional producers.

Versions 0-4 are Kafka 2.8's. Version 5 only lets the broker answer TRANSACTION_ABORTABLE
(KIP-890), which kafpy never does, so it is answered as version 4. Version 6 is KIP-939's
two-phase commit: `enable2_pc` and `keep_prepared_txn` in the request, the kept
transaction's `ongoing_txn_producer_id`/`_epoch` in the response (-1 when none). Kafka
marks version 6 unstable (advertised only with `unstable.api.versions.enable`); kafpy
advertises it, and refuses `enable2_pc` unless `transaction.two.phase.commit.enable` is on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Field, Message

INIT_PRODUCER_ID_REQUEST = Message(
    ApiKey.INIT_PRODUCER_ID, "InitProducerIdRequest", "request", (0, 6), 2,
    [
        Field("transactional_id", "string", nullable="0+"),
        Field("transaction_timeout_ms", "int32"),
        Field("producer_id", "int64", "3+", default=-1),
        Field("producer_epoch", "int16", "3+", default=-1),
        Field("enable2_pc", "bool", "6+", default=False),
        Field("keep_prepared_txn", "bool", "6+", default=False),
    ],
)

INIT_PRODUCER_ID_RESPONSE = Message(
    ApiKey.INIT_PRODUCER_ID, "InitProducerIdResponse", "response", (0, 6), 2,
    [
        Field("throttle_time_ms", "int32"),
        Field("error_code", "int16"),
        Field("producer_id", "int64", default=-1),
        Field("producer_epoch", "int16"),
        Field("ongoing_txn_producer_id", "int64", "6+", default=-1),
        Field("ongoing_txn_producer_epoch", "int16", "6+", default=-1),
    ],
)


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """No producer id and no ongoing transaction: `code`."""
    return {"throttle_time_ms": 0, "error_code": code, "producer_id": -1, "producer_epoch": -1,
            "ongoing_txn_producer_id": -1, "ongoing_txn_producer_epoch": -1}  # fmt: skip


INIT_PRODUCER_ID_API = ApiSchema(
    INIT_PRODUCER_ID_REQUEST,
    INIT_PRODUCER_ID_RESPONSE,
    versions=(0, 6),
    error_response=error_response,
)
