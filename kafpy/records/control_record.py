"""Control records: the transaction markers (commit / abort) a broker writes into a log.

A control batch has the control bit (and the transactional bit) set and holds one record
whose key is `version int16, type int16` and, for an end-transaction marker, whose value
is `version int16, coordinatorEpoch int32`. Consumers in read_committed mode and the
log's transaction index read them; producers never write them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

from kafpy.common.errors import InvalidRecordError
from kafpy.records.builder import RecordBatchBuilder
from kafpy.records.record import Record
from kafpy.records.record_batch import NO_PARTITION_LEADER_EPOCH, RecordBatch

_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")
CURRENT_CONTROL_RECORD_KEY_VERSION = 0
CURRENT_END_TXN_MARKER_VALUE_VERSION = 0


class ControlRecordType(IntEnum):
    """What a control record marks. UNKNOWN stands for types newer than this broker."""

    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1

    def record_key(self) -> bytes:
        if self is ControlRecordType.UNKNOWN:
            raise ValueError("UNKNOWN is not a control record type that can be written")
        return _KEY.pack(CURRENT_CONTROL_RECORD_KEY_VERSION, self.value)

    @classmethod
    def parse(cls, key: bytes | None) -> ControlRecordType:
        """The type in a control record's key; InvalidRecordError if the key is too short."""
        if key is None or len(key) < _KEY.size:
            raise InvalidRecordError(
                f"Control record key must hold at least {_KEY.size} bytes (version and "
                f"type), but has {0 if key is None else len(key)}"
            )
        version, type_id = _KEY.unpack_from(key)
        if version < 0:
            raise InvalidRecordError(f"Control record key has a negative version ({version})")
        try:
            return cls(type_id)
        except ValueError:
            return cls.UNKNOWN

    @staticmethod
    def type_id(key: bytes) -> int:
        """The raw type in a control record's key (what UNKNOWN stands for); the key must
        hold its version and type (`parse` checks that)."""
        return int(_KEY.unpack_from(key)[1])


@dataclass(frozen=True)
class EndTransactionMarker:
    """A commit or abort marker and the epoch of the coordinator that wrote it."""

    control_type: ControlRecordType
    coordinator_epoch: int

    def record_value(self) -> bytes:
        return _VALUE.pack(CURRENT_END_TXN_MARKER_VALUE_VERSION, self.coordinator_epoch)

    @classmethod
    def from_record(cls, record: Record) -> EndTransactionMarker:
        """The marker held by the record of a control batch."""
        control_type = ControlRecordType.parse(record.key)
        if control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            raise InvalidRecordError(
                f"Control record at offset {record.offset} is not a commit or abort marker"
            )
        value = record.value
        if value is None or len(value) < _VALUE.size:
            raise InvalidRecordError(
                f"End transaction marker at offset {record.offset} must hold at least "
                f"{_VALUE.size} bytes (version and coordinator epoch), but has "
                f"{0 if value is None else len(value)}"
            )
        _version, coordinator_epoch = _VALUE.unpack_from(value)
        return cls(control_type, coordinator_epoch)


def control_record_type(batch: RecordBatch) -> ControlRecordType:
    """The type of a control batch's (first) record; InvalidRecordError if it has none."""
    if not batch.is_control:
        raise InvalidRecordError(
            f"Record batch at base offset {batch.base_offset} is not a control batch"
        )
    for record in batch.records():
        return ControlRecordType.parse(record.key)
    raise InvalidRecordError(
        f"Control batch at base offset {batch.base_offset} holds no control record"
    )


def build_end_transaction_marker(
    marker: EndTransactionMarker,
    *,
    producer_id: int,
    producer_epoch: int,
    timestamp: int,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """A control batch holding one end-transaction marker, as the broker appends it."""
    builder = RecordBatchBuilder(
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
    )
    builder.append(timestamp, marker.control_type.record_key(), marker.record_value())
    return builder.build()
