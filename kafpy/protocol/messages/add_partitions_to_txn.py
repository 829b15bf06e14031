"""AddPartitionsToTxn (key 24): a transactional producer adds partitions to its transaction.

Kafka 2.8 speaks versions 0-3 (flexible from 3; v2 adds PRODUCER_FENCED), which is what
kafpy advertises; versions 4-5 (KIP-890's broker-to-broker batches) are declared for the
codec only, with the schema's current field names (v3_and_below_* for 0-3).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body
from kafpy.protocol.schema import Array, Field, Message, Struct


def _topics(versions: str) -> Field:
    return Field("topics" if versions == "4+" else "v3_and_below_topics", Array(Struct([
        Field("name", "string"),
        Field("partitions", Array("int32")),
    ])), versions)  # fmt: skip


ADD_PARTITIONS_TO_TXN_REQUEST = Message(
    ApiKey.ADD_PARTITIONS_TO_TXN, "AddPartitionsToTxnRequest", "request", (0, 5), 3,
    [
        Field("transactions", Array(Struct([
            Field("transactional_id", "string", "4+"),
            Field("producer_id", "int64", "4+"),
            Field("producer_epoch", "int16", "4+"),
            Field("verify_only", "bool", "4+", default=False),
            _topics("4+"),
        ])), "4+"),
        Field("v3_and_below_transactional_id", "string", "0-3"),
        Field("v3_and_below_producer_id", "int64", "0-3"),
        Field("v3_and_below_producer_epoch", "int16", "0-3"),
        _topics("0-3"),
    ],
)  # fmt: skip


def _topic_results(name: str, versions: str) -> Field:
    return Field(name, Array(Struct([
        Field("name", "string"),
        Field("results_by_partition", Array(Struct([
            Field("partition_index", "int32"),
            Field("partition_error_code", "int16"),
        ]))),
    ])), versions)  # fmt: skip


ADD_PARTITIONS_TO_TXN_RESPONSE = Message(
    ApiKey.ADD_PARTITIONS_TO_TXN, "AddPartitionsToTxnResponse", "response", (0, 5), 3,
    [
        Field("throttle_time_ms", "int32"),
        Field("error_code", "int16", "4+", default=0),
        Field("results_by_transaction", Array(Struct([
            Field("transactional_id", "string", "4+"),
            _topic_results("topic_results", "4+"),
        ])), "4+"),
        _topic_results("results_by_topic_v3_and_below", "0-3"),
    ],
)  # fmt: skip


def topic_results(body: Mapping[str, Any], code_of: Callable[[str], int]) -> Body:
    """A v0-3 response answering each partition of the request with its topic's code."""
    return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": [
        {"name": t["name"], "results_by_partition": [
            {"partition_index": p, "partition_error_code": code_of(t["name"])} for p in t["partitions"]]}
        for t in body.get("v3_and_below_topics") or ()]}  # fmt: skip


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """Every partition of the request answered with `code`."""
    return topic_results(body, lambda _topic: code)


ADD_PARTITIONS_TO_TXN_API = ApiSchema(
    ADD_PARTITIONS_TO_TXN_REQUEST,
    ADD_PARTITIONS_TO_TXN_RESPONSE,
    versions=(0, 3),
    error_response=error_response,
)
