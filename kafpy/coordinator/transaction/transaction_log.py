"""TransactionLog: the keys and values the transaction coordinator writes to __transaction_state.

Byte for byte Kafka's version 0 of TransactionLogKey and TransactionLogValue: a key is an
int16 version (0) and the transactional id; a value is an int16 version (0), the producer
id and epoch, the transaction timeout, the state byte, the partitions of the transaction
by topic (null while Empty), the last update and the start timestamps. A null value is a
tombstone: the transactional id expired. A two-phase-commit transaction is one with the
timeout TWO_PHASE_COMMIT_TIMEOUT_MS, as in Kafka, so version 0 carries it.

One state needs more: a two-phase-commit transaction kept open by
InitProducerId(keepPreparedTxn) has two epochs, the one it was prepared at and its new
owner's. Its records are Kafka's flexible version 1 (Kafka 3.8+ reads it; Kafka 2.8 does
not): ProducerId/ProducerEpoch are the kept transaction's, as Kafka's own dual identity
has them, NextProducerId (Kafka's tag 1) the owner's producer id, and the owner's epoch
goes in tagged field `KAFPY_NEXT_PRODUCER_EPOCH_TAG`, a kafpy extension. Every other state
is still written as version 0. A version 1 value that Kafka's transaction version 2
wrote (ClientTransactionVersion 2+, epoch bumps kafpy does not make) is refused.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from kafpy.common.topic import TRANSACTION_STATE_TOPIC_NAME
from kafpy.common.topic_partition import TopicPartition
from kafpy.coordinator.transaction.transaction_metadata import (
    NO_PRODUCER_EPOCH,
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
)
from kafpy.protocol.schema import Array, Field, Message, Struct

__all__ = ["TRANSACTION_STATE_TOPIC_NAME"]

_INT16 = struct.Struct(">h")
KEY_VERSION = 0
VALUE_VERSION = 0
KEPT_PREPARED_VALUE_VERSION = 1
"""The value version of a kept two-phase-commit transaction (Kafka's first flexible one)."""
KAFPY_NEXT_PRODUCER_EPOCH_TAG = 1000
"""kafpy's tagged field in TransactionLogValue v1: the epoch of a kept transaction's new
owner. Far above Kafka's tags (0-2) so that a tag Kafka adds cannot collide with it."""

TRANSACTION_LOG_KEY = Message(
    -1, "TransactionLogKey", "request", (0, 0), None, [Field("transactional_id", "string")]
)

TRANSACTION_LOG_VALUE = Message(
    -1, "TransactionLogValue", "request", (0, 1), 1,
    [
        Field("producer_id", "int64"),
        Field("previous_producer_id", "int64", "1+", default=-1, tag=0),
        Field("next_producer_id", "int64", "1+", default=-1, tag=1),
        Field("producer_epoch", "int16"),
        Field("transaction_timeout_ms", "int32"),
        Field("transaction_status", "int8"),
        Field("transaction_partitions", Array(Struct([
            Field("topic", "string"),
            Field("partition_ids", Array("int32")),
        ])), nullable="0+"),
        Field("transaction_last_update_timestamp_ms", "int64"),
        Field("transaction_start_timestamp_ms", "int64"),
        Field("client_transaction_version", "int16", "1+", default=0, tag=2),
        Field("kafpy_next_producer_epoch", "int16", "1+", default=-1,
              tag=KAFPY_NEXT_PRODUCER_EPOCH_TAG),
    ],
)  # fmt: skip


def key_to_bytes(transactional_id: str) -> bytes:
    """The record key of a transactional id."""
    return _INT16.pack(KEY_VERSION) + TRANSACTION_LOG_KEY.encode(
        KEY_VERSION, {"transactional_id": transactional_id}
    )


def _partitions_by_topic(partitions: Iterable[TopicPartition]) -> list[dict[str, object]]:
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return [{"topic": t, "partition_ids": ps} for t, ps in by_topic.items()]


def value_to_bytes(transit: TxnTransitMetadata) -> bytes:
    """The record value of a state about to be written (Kafka's valueToBytes)."""
    if transit.txn_state is TransactionState.EMPTY and transit.topic_partitions:
        raise ValueError(
            f"Transaction is not expected to have any partitions since its state is Empty: {transit}"
        )
    partitions = (
        None
        if transit.txn_state is TransactionState.EMPTY
        else _partitions_by_topic(transit.topic_partitions)
    )
    version, epoch, extra = VALUE_VERSION, transit.producer_epoch, {}
    if transit.ongoing_txn_producer_epoch != NO_PRODUCER_EPOCH:
        version, epoch = KEPT_PREPARED_VALUE_VERSION, transit.ongoing_txn_producer_epoch
        extra = {
            "next_producer_id": transit.producer_id,
            "kafpy_next_producer_epoch": transit.producer_epoch,
        }
    return _INT16.pack(version) + TRANSACTION_LOG_VALUE.encode(
        version,
        {
            **extra,
            "producer_id": transit.producer_id,
            "producer_epoch": epoch,
            "transaction_timeout_ms": transit.txn_timeout_ms,
            "transaction_status": int(transit.txn_state),
            "transaction_partitions": partitions,
            "transaction_last_update_timestamp_ms": transit.txn_last_update_timestamp,
            "transaction_start_timestamp_ms": transit.txn_start_timestamp,
        },
    )


def read_key(key: bytes | memoryview) -> str:
    """The transactional id of a record key; ValueError for a key version other than 0."""
    (version,) = _INT16.unpack_from(key, 0)
    if version != KEY_VERSION:
        raise ValueError(
            f"Unknown version {version} from the transaction log message key; "
            f"this broker reads version {KEY_VERSION}."
        )
    return str(TRANSACTION_LOG_KEY.decode(version, key, 2)["transactional_id"])


def read_value(
    transactional_id: str, value: bytes | memoryview | None
) -> TransactionMetadata | None:
    """The metadata a record value holds (None for a tombstone); ValueError for an unknown
    value version or state byte."""
    if value is None:
        return None
    (version,) = _INT16.unpack_from(value, 0)
    if version not in (VALUE_VERSION, KEPT_PREPARED_VALUE_VERSION):
        raise ValueError(
            f"Unknown version {version} from the transaction log message value; "
            f"this broker reads versions {VALUE_VERSION} and {KEPT_PREPARED_VALUE_VERSION}."
        )
    v = TRANSACTION_LOG_VALUE.decode(version, value, 2)
    if version == KEPT_PREPARED_VALUE_VERSION and v["client_transaction_version"] >= 2:
        raise ValueError(
            f"The transaction log value of {transactional_id} was written with transaction "
            f"version {v['client_transaction_version']} (KIP-890); this broker speaks "
            "transaction version 0 and cannot take it over."
        )
    state = TransactionState.from_byte(v["transaction_status"])
    epoch, ongoing_epoch = v["producer_epoch"], NO_PRODUCER_EPOCH
    if version == KEPT_PREPARED_VALUE_VERSION and v["kafpy_next_producer_epoch"] >= 0:
        epoch, ongoing_epoch = v["kafpy_next_producer_epoch"], v["producer_epoch"]
    metadata = TransactionMetadata(
        transactional_id,
        producer_id=v["producer_id"],
        producer_epoch=epoch,
        ongoing_txn_producer_epoch=ongoing_epoch,
        txn_timeout_ms=v["transaction_timeout_ms"],
        state=state,
        txn_start_timestamp=v["transaction_start_timestamp_ms"],
        txn_last_update_timestamp=v["transaction_last_update_timestamp_ms"],
    )
    if state is not TransactionState.EMPTY:
        for entry in v["transaction_partitions"] or ():
            metadata.topic_partitions.update(
                TopicPartition(entry["topic"], p) for p in entry["partition_ids"]
            )
    return metadata


def format_record(
    key: bytes | memoryview | None, value: bytes | memoryview | None
) -> tuple[str, str]:
    """Kafka 2.8's TransactionLog.formatRecordKeyAndValue (dump-log --transaction-log-decoder)."""
    if key is None:
        raise ValueError("a __transaction_state record has no key")
    transactional_id = read_key(key)
    key_string = f"transaction_metadata::transactionalId={transactional_id}"
    metadata = read_value(transactional_id, value)
    if metadata is None:
        return key_string, "<DELETE>"
    partitions = ",".join(str(tp) for tp in sorted(metadata.topic_partitions))
    return key_string, (
        f"producerId:{metadata.producer_id},producerEpoch:{metadata.producer_epoch},"
        f"state={metadata.state.kafka_name},partitions=[{partitions}],"
        f"txnLastUpdateTimestamp={metadata.txn_last_update_timestamp},"
        f"txnTimeoutMs={metadata.txn_timeout_ms}"
    )
