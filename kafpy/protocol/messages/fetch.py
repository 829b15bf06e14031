"""Fetch (key 1): read record batches from partitions (consumers and followers)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body, per_partition
from kafpy.protocol.errors import Errors
from kafpy.protocol.schema import Array, Field, Message, Struct

FETCH_REQUEST = Message(
    ApiKey.FETCH,
    "FetchRequest",
    "request",
    (0, 18),
    12,
    [
        Field("cluster_id", "string", "12+", nullable="12+", default=None, tag=0),
        Field("replica_id", "int32", "0-14", default=-1),
        Field(
            "replica_state",
            Struct(
                [
                    Field("replica_id", "int32", "15+", default=-1),
                    Field("replica_epoch", "int64", "15+", default=-1),
                ]
            ),
            "15+",
            tag=1,
        ),
        Field("max_wait_ms", "int32"),
        Field("min_bytes", "int32"),
        Field("max_bytes", "int32", "3+", default=0x7FFFFFFF),
        Field("isolation_level", "int8", "4+", default=0),
        Field("session_id", "int32", "7+", default=0),
        Field("session_epoch", "int32", "7+", default=-1),
        Field(
            "topics",
            Array(
                Struct(
                    [
                        Field("topic", "string", "0-12"),
                        Field("topic_id", "uuid", "13+"),
                        Field(
                            "partitions",
                            Array(
                                Struct(
                                    [
                                        Field("partition", "int32"),
                                        Field("current_leader_epoch", "int32", "9+", default=-1),
                                        Field("fetch_offset", "int64"),
                                        Field("last_fetched_epoch", "int32", "12+", default=-1),
                                        Field("log_start_offset", "int64", "5+", default=-1),
                                        Field("partition_max_bytes", "int32"),
                                        Field("replica_directory_id", "uuid", "17+", tag=0),
                                        Field(
                                            "high_watermark",
                                            "int64",
                                            "18+",
                                            default=0x7FFFFFFFFFFFFFFF,
                                            tag=1,
                                        ),
                                    ]
                                )
                            ),
                        ),
                    ]
                )
            ),
        ),
        Field(
            "forgotten_topics_data",
            Array(
                Struct(
                    [
                        Field("topic", "string", "7-12"),
                        Field("topic_id", "uuid", "13+"),
                        Field("partitions", Array("int32"), "7+"),
                    ]
                )
            ),
            "7+",
        ),
        Field("rack_id", "string", "11+", default=""),
    ],
)

FETCH_RESPONSE = Message(
    ApiKey.FETCH,
    "FetchResponse",
    "response",
    (0, 18),
    12,
    [
        Field("throttle_time_ms", "int32", "1+"),
        Field("error_code", "int16", "7+"),
        Field("session_id", "int32", "7+", default=0),
        Field(
            "responses",
            Array(
                Struct(
                    [
                        Field("topic", "string", "0-12"),
                        Field("topic_id", "uuid", "13+"),
                        Field(
                            "partitions",
                            Array(
                                Struct(
                                    [
                                        Field("partition_index", "int32"),
                                        Field("error_code", "int16"),
                                        Field("high_watermark", "int64"),
                                        Field("last_stable_offset", "int64", "4+", default=-1),
                                        Field("log_start_offset", "int64", "5+", default=-1),
                                        Field(
                                            "diverging_epoch",
                                            Struct(
                                                [
                                                    Field("epoch", "int32", "12+", default=-1),
                                                    Field("end_offset", "int64", "12+", default=-1),
                                                ]
                                            ),
                                            "12+",
                                            tag=0,
                                        ),
                                        Field(
                                            "current_leader",
                                            Struct(
                                                [
                                                    Field("leader_id", "int32", "12+", default=-1),
                                                    Field(
                                                        "leader_epoch", "int32", "12+", default=-1
                                                    ),
                                                ]
                                            ),
                                            "12+",
                                            tag=1,
                                        ),
                                        Field(
                                            "snapshot_id",
                                            Struct(
                                                [
                                                    Field("end_offset", "int64", default=-1),
                                                    Field("epoch", "int32", default=-1),
                                                ]
                                            ),
                                            "12+",
                                            tag=2,
                                        ),
                                        Field(
                                            "aborted_transactions",
                                            Array(
                                                Struct(
                                                    [
                                                        Field("producer_id", "int64", "4+"),
                                                        Field("first_offset", "int64", "4+"),
                                                    ]
                                                )
                                            ),
                                            "4+",
                                            nullable="4+",
                                        ),
                                        Field("preferred_read_replica", "int32", "11+", default=-1),
                                        Field("records", "records", nullable="0+"),
                                    ]
                                )
                            ),
                        ),
                    ]
                )
            ),
        ),
        Field(
            "node_endpoints",
            Array(
                Struct(
                    [
                        Field("node_id", "int32", "16+"),
                        Field("host", "string", "16+"),
                        Field("port", "int32", "16+"),
                        Field("rack", "string", "16+", nullable="16+", default=None),
                    ]
                )
            ),
            "16+",
            tag=0,
        ),
    ],
)


INVALID_SESSION_ID = 0
"""The session id of a fetch outside any session (requests and responses)."""
INITIAL_EPOCH = 0
"""The epoch of a full fetch that asks for a new session."""
FINAL_EPOCH = -1
"""The epoch of a full fetch that wants no session (and closes the one it names)."""


def next_epoch(prev_epoch: int) -> int:
    """The session epoch after `prev_epoch` (KIP-227: wraps to 1, FINAL_EPOCH stays)."""
    if prev_epoch < 0:
        return FINAL_EPOCH
    return 1 if prev_epoch == 0x7FFFFFFF else prev_epoch + 1


@dataclass(frozen=True, slots=True)
class FetchMetadata:
    """A Fetch request's session id and epoch (Kafka's FetchMetadata, KIP-227).

    Epoch 0 (INITIAL_EPOCH) or -1 (FINAL_EPOCH) makes a full fetch: it closes the session
    it names, and with epoch 0 asks for a new one. Any other epoch makes an incremental
    fetch within `session_id`. Requests before v7 carry (0, -1): sessionless.
    """

    session_id: int = INVALID_SESSION_ID
    epoch: int = INITIAL_EPOCH

    @property
    def is_full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)

    @staticmethod
    def new_incremental(session_id: int) -> FetchMetadata:
        """The first incremental fetch of a session the broker just created."""
        return FetchMetadata(session_id, next_epoch(INITIAL_EPOCH))

    def next_incremental(self) -> FetchMetadata:
        return FetchMetadata(self.session_id, next_epoch(self.epoch))

    def next_close_existing(self) -> FetchMetadata:
        """A full fetch that closes this session and asks for a new one."""
        return FetchMetadata(self.session_id, INITIAL_EPOCH)

    def __str__(self) -> str:
        names = {INITIAL_EPOCH: "INITIAL", FINAL_EPOCH: "FINAL"}
        sid = "INVALID" if self.session_id == INVALID_SESSION_ID else str(self.session_id)
        return f"(sessionId={sid}, epoch={names.get(self.epoch, str(self.epoch))})"


INITIAL_FETCH_METADATA = FetchMetadata(INVALID_SESSION_ID, INITIAL_EPOCH)
LEGACY_FETCH_METADATA = FetchMetadata(INVALID_SESSION_ID, FINAL_EPOCH)


def partition_error(index: int, code: int) -> Body:
    """One partition of a Fetch response failing with `code`."""
    return {"partition_index": index, "error_code": code, "high_watermark": -1,
            "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": None,
            "preferred_read_replica": -1, "records": b""}  # fmt: skip


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """Every partition of the request answered with `code` (the request itself succeeds)."""
    return {
        "throttle_time_ms": 0,
        "error_code": Errors.NONE,
        "session_id": 0,
        "responses": per_partition(
            body, "topics", "partitions", lambda i: partition_error(i, code),
            topic_name="topic", out_topic_name="topic", partition_index="partition",
        ),
    }  # fmt: skip


FETCH_API = ApiSchema(
    FETCH_REQUEST,
    FETCH_RESPONSE,
    versions=(0, 12),
    error_response=error_response,
)
