"""TransactionLog's key and value bytes against bytes encoded by hand from Kafka's version 0
schemas of TransactionLogKey and TransactionLogValue."""

from __future__ import annotations

import struct

import pytest

from kafpy.common.topic_partition import TopicPartition
from kafpy.coordinator.transaction import transaction_log as txn_log
from kafpy.coordinator.transaction.transaction_metadata import TransactionState, TxnTransitMetadata


def _string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def _transit(state: TransactionState, partitions: frozenset[TopicPartition]) -> TxnTransitMetadata:
    return TxnTransitMetadata(
        producer_id=1234, last_producer_id=-1, producer_epoch=7, last_producer_epoch=-1,
        txn_timeout_ms=60000, txn_state=state, topic_partitions=partitions,
        txn_start_timestamp=1_700_000_000_000, txn_last_update_timestamp=1_700_000_000_500,
    )  # fmt: skip


def test_key_is_version_0_then_the_transactional_id() -> None:
    assert txn_log.key_to_bytes("my-txn") == b"\x00\x00" + _string("my-txn")
    assert txn_log.read_key(b"\x00\x00" + _string("my-txn")) == "my-txn"


def test_ongoing_value_matches_hand_encoded_bytes() -> None:
    partitions = frozenset(
        {TopicPartition("out", 1), TopicPartition("out", 0), TopicPartition("a", 3)}
    )
    expected = (
        struct.pack(">h", 0)  # value version
        + struct.pack(">q", 1234)  # producer id
        + struct.pack(">h", 7)  # producer epoch
        + struct.pack(">i", 60000)  # timeout
        + struct.pack(">b", 1)  # Ongoing
        + struct.pack(">i", 2)  # two topics
        + _string("a") + struct.pack(">i", 1) + struct.pack(">i", 3)
        + _string("out") + struct.pack(">i", 2) + struct.pack(">ii", 0, 1)
        + struct.pack(">q", 1_700_000_000_500)  # last update
        + struct.pack(">q", 1_700_000_000_000)  # start
    )  # fmt: skip
    assert txn_log.value_to_bytes(_transit(TransactionState.ONGOING, partitions)) == expected
    read = txn_log.read_value("t", expected)
    assert read is not None
    assert (read.producer_id, read.producer_epoch, read.txn_timeout_ms) == (1234, 7, 60000)
    assert read.state is TransactionState.ONGOING
    assert read.topic_partitions == set(partitions)
    assert (read.txn_start_timestamp, read.txn_last_update_timestamp) == (
        1_700_000_000_000, 1_700_000_000_500,
    )  # fmt: skip


def test_empty_value_has_null_partitions() -> None:
    encoded = txn_log.value_to_bytes(_transit(TransactionState.EMPTY, frozenset()))
    # version, pid, epoch, timeout, status 0, then a null array (-1)
    assert encoded[: 2 + 8 + 2 + 4 + 1 + 4] == (
        b"\x00\x00" + struct.pack(">qhib", 1234, 7, 60000, 0) + struct.pack(">i", -1)
    )
    read = txn_log.read_value("t", encoded)
    assert read is not None and read.state is TransactionState.EMPTY and not read.topic_partitions


def test_empty_state_with_partitions_is_refused() -> None:
    with pytest.raises(ValueError, match="Empty"):
        txn_log.value_to_bytes(
            _transit(TransactionState.EMPTY, frozenset({TopicPartition("t", 0)}))
        )


def test_tombstone_and_unknown_versions() -> None:
    assert txn_log.read_value("t", None) is None
    with pytest.raises(ValueError, match="Unknown version 1"):
        txn_log.read_key(b"\x00\x01" + _string("x"))
    with pytest.raises(ValueError, match="Unknown version 3"):
        txn_log.read_value("x", b"\x00\x03" + bytes(40))
    bad_state = (
        b"\x00\x00" + struct.pack(">qhib", 1, 0, 1000, 9) + struct.pack(">i", -1) + bytes(16)
    )
    with pytest.raises(ValueError, match="state byte 9"):
        txn_log.read_value("x", bad_state)


def test_format_record_is_kafkas_decoder_line() -> None:
    partitions = frozenset({TopicPartition("out", 0)})
    key, value = txn_log.format_record(
        txn_log.key_to_bytes("tx"),
        txn_log.value_to_bytes(_transit(TransactionState.PREPARE_COMMIT, partitions)),
    )
    assert key == "transaction_metadata::transactionalId=tx"
    assert value == (
        "producerId:1234,producerEpoch:7,state=PrepareCommit,partitions=[out-0],"
        "txnLastUpdateTimestamp=1700000000500,txnTimeoutMs=60000"
    )
    assert txn_log.format_record(txn_log.key_to_bytes("tx"), None)[1] == "<DELETE>"


def _compact_string(s: str) -> bytes:
    raw = s.encode()
    return bytes([len(raw) + 1]) + raw


def test_a_kept_two_phase_commit_transaction_is_version_1_with_both_epochs() -> None:
    from dataclasses import replace

    kept = replace(
        _transit(TransactionState.ONGOING, frozenset({TopicPartition("out", 0)})),
        producer_epoch=8, txn_timeout_ms=2**31 - 1, ongoing_txn_producer_epoch=7,
    )  # fmt: skip
    expected = (
        struct.pack(">h", 1)  # value version 1 (flexible)
        + struct.pack(">q", 1234)  # producer id: the kept transaction's
        + struct.pack(">h", 7)  # producer epoch: the one it was prepared at
        + struct.pack(">i", 2**31 - 1)  # the two-phase-commit timeout
        + struct.pack(">b", 1)  # Ongoing
        + b"\x02"  # one topic (compact array)
        + _compact_string("out") + b"\x02" + struct.pack(">i", 0) + b"\x00"
        + struct.pack(">q", 1_700_000_000_500)
        + struct.pack(">q", 1_700_000_000_000)
        + b"\x02"  # two tagged fields
        + b"\x01\x08" + struct.pack(">q", 1234)  # tag 1, NextProducerId
        + b"\xe8\x07\x02" + struct.pack(">h", 8)  # tag 1000, kafpy's next producer epoch
    )  # fmt: skip
    assert txn_log.value_to_bytes(kept) == expected
    read = txn_log.read_value("t", expected)
    assert read is not None
    assert (read.producer_id, read.producer_epoch, read.ongoing_txn_producer_epoch) == (1234, 8, 7)
    assert read.is_distributed_two_phase_commit_txn and read.is_kept_prepared_txn
    # an ordinary two-phase-commit transaction stays version 0
    plain = replace(kept, ongoing_txn_producer_epoch=-1)
    assert txn_log.value_to_bytes(plain)[:2] == b"\x00\x00"


def test_a_version_1_value_of_transaction_version_2_is_refused() -> None:
    value = (
        struct.pack(">h", 1) + struct.pack(">q", 1) + struct.pack(">h", 0)
        + struct.pack(">i", 1000) + struct.pack(">b", 0) + b"\x00"  # null partitions
        + struct.pack(">q", 0) + struct.pack(">q", -1)
        + b"\x01" + b"\x02\x02" + struct.pack(">h", 2)  # tag 2, ClientTransactionVersion 2
    )  # fmt: skip
    with pytest.raises(ValueError, match="transaction version 2"):
        txn_log.read_value("t", value)
