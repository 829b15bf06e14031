"""`kafpy dump-log`: print the contents of segment files as Kafka's DumpLogSegments does.

`.log` files are listed batch by batch (and record by record with --deep-iteration or
--print-data-log); `.index` and `.timeindex` files entry by entry, checked against the
`.log` beside them; `.txnindex` files as their aborted transactions. With
--offsets-decoder the records of a `__consumer_offsets` segment are decoded as Kafka's
OffsetsMessageParser prints them; with --transaction-log-decoder those of a
`__transaction_state` segment as Kafka's TransactionLogMessageParser. The output lines
match Kafka 2.x's `kafka-run-class kafka.tools.DumpLogSegments`, so scripts written for
one work with the other.
"""

from __future__ import annotations

import json
import mmap
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from kafpy.common.errors import CorruptRecordError, KafkaError
from kafpy.common.topic_partition import TopicPartition
from kafpy.coordinator.group_metadata_records import (
    OffsetKey,
    read_group_value,
    read_key,
    read_offset_value,
)
from kafpy.coordinator.transaction import transaction_log
from kafpy.protocol.consumer_protocol import read_assignment
from kafpy.records.compression import MAX_DECOMPRESSED_BATCH_BYTES
from kafpy.records.control_record import ControlRecordType, EndTransactionMarker
from kafpy.records.legacy_record import iter_legacy_records
from kafpy.records.record import Record
from kafpy.records.record_batch import (
    COMPRESSION_CODEC_MASK,
    LEGACY_MIN_LENGTH,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MIN_BATCH_LENGTH,
    RecordBatch,
    iter_headers,
)
from kafpy.storage.log_segment import (
    INDEX_FILE_SUFFIX,
    LOG_FILE_SUFFIX,
    TIME_INDEX_FILE_SUFFIX,
    TXN_INDEX_FILE_SUFFIX,
)
from kafpy.storage.offset_index import OffsetIndex
from kafpy.storage.time_index import TimeIndex
from kafpy.storage.transaction_index import TransactionIndex

_INT32 = struct.Struct(">i")
# The smallest length field of a message v0, v1 and a batch v2.
_MIN_LENGTH = (*LEGACY_MIN_LENGTH, MIN_BATCH_LENGTH)


class DumpError(Exception):
    """Input the tool cannot dump; the message is printed as is."""


def _start_offset(path: Path) -> int:
    prefix = path.name.split(".", 1)[0]
    if not prefix.isdigit():
        raise DumpError(
            f"{path} is not a Kafka segment file: its name must start with the segment's base "
            "offset (20 digits, e.g. 00000000000000000000.log)"
        )
    return int(prefix)


class _SegmentBytes:
    """A read-only view of a `.log` file (mapped, so large segments are not read whole)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.size = path.stat().st_size
        self._file = open(path, "rb")  # noqa: SIM115 - closed in close()
        self._map = (
            mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ) if self.size else None
        )
        self.view = memoryview(self._map) if self._map is not None else memoryview(b"")

    def batches(self, start: int = 0) -> Iterator[RecordBatch]:
        """Complete batches from `start`; stops at a torn or malformed one."""
        try:
            for pos, _ in iter_headers(self.view, start):
                yield RecordBatch(self.view, pos)
        except CorruptRecordError:
            return  # a length too small for a batch: the rest counts as invalid bytes

    def close(self) -> None:
        self.view.release()
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:
                pass  # a batch view is still referenced; the mapping goes with it
        self._file.close()


def _bool(b: bool) -> str:
    return "true" if b else "false"


def _batch_line(batch: RecordBatch, position: int) -> str:
    if batch.is_legacy:
        # a message of format v0/v1 (Kafka's printBatchLevel: its offset is its last one)
        return (
            f"offset: {batch.last_offset} position: {position} "
            f"{batch.timestamp_type.kafka_name}: {batch.max_timestamp} "
            f"size: {batch.size_in_bytes} magic: {batch.magic} "
            f"compresscodec: {_codec_name(batch)} crc: {batch.crc} "
            f"isvalid: {_bool(batch.is_entry_valid())}"
        )
    return (
        f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} count: {batch.record_count} "
        f"baseSequence: {batch.base_sequence} lastSequence: {batch.last_sequence} "
        f"producerId: {batch.producer_id} producerEpoch: {batch.producer_epoch} "
        f"partitionLeaderEpoch: {batch.partition_leader_epoch} "
        f"isTransactional: {_bool(batch.is_transactional)} isControl: {_bool(batch.is_control)} "
        f"position: {position} {batch.timestamp_type.kafka_name}: {batch.max_timestamp} "
        f"size: {batch.size_in_bytes} magic: {batch.magic} "
        f"compresscodec: {_codec_name(batch)} crc: {batch.crc} isvalid: {_bool(batch.is_valid())}"
    )


def _codec_name(batch: RecordBatch) -> str:
    try:
        return batch.compression_type.name
    except KafkaError:
        return f"UNKNOWN({batch.attributes & COMPRESSION_CODEC_MASK})"


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


MessageParser = Callable[[Record], tuple[str | None, str | None]]


def text_message_parser(record: Record) -> tuple[str | None, str | None]:
    """Kafka's default: key and value as (UTF-8) strings."""
    key = None if record.key is None else _text(record.key)
    return key, None if record.value is None else _text(record.value)


def _hex(data: bytes | None) -> str:
    # Kafka prints BigInt(1, bytes) as %X: upper case, leading zeros dropped
    return f"{int.from_bytes(data, 'big'):X}" if data else ""


def _java_list(tps: list[TopicPartition]) -> str:
    return "[" + ", ".join(str(tp) for tp in tps) + "]"


def transaction_log_message_parser(record: Record) -> tuple[str | None, str | None]:
    """Kafka 2.8's TransactionLogMessageParser (--transaction-log-decoder) for
    __transaction_state: `transaction_metadata::transactionalId=X` and the state, or
    `<DELETE>` for a tombstone."""
    try:
        return transaction_log.format_record(record.key, record.value)
    except (ValueError, KafkaError) as e:
        raise DumpError(
            f"Failed to decode message at offset {record.offset} using transaction log decoder: {e}"
        ) from None


def offsets_message_parser(record: Record) -> tuple[str | None, str | None]:
    """Kafka 2.x's OffsetsMessageParser (--offsets-decoder) for __consumer_offsets:
    an offset commit as `offset::group:topic:partition` and `offset[:metadata]`; a group's
    metadata as {"metadata":group} and its protocol, generation and assignment in JSON.
    A tombstone prints neither."""
    if record.value is None:
        return None, None
    if record.key is None:
        raise DumpError(
            f"Failed to decode message at offset {record.offset} using offset topic decoder "
            "(message had a missing key)"
        )
    try:
        key = read_key(record.key)
        if isinstance(key, OffsetKey):
            offset = read_offset_value(record.value)
            tp = key.topic_partition
            value = str(offset.offset)
            if offset.metadata:
                value += f":{offset.metadata}"
            return f"offset::{key.group}:{tp.topic}:{tp.partition}", value
        group = read_group_value(record.value)
    except (ValueError, KafkaError) as e:
        raise DumpError(
            f"Failed to decode message at offset {record.offset} using offset topic decoder: {e}"
        ) from None
    protocol_type = group["protocol_type"] or ""
    members = []
    for m in group["members"]:
        if protocol_type == "consumer":
            tps, user_data = read_assignment(m["assignment"])
            text = f"{m['member_id']}={_java_list(tps)}"
            if _hex(user_data):
                text += f":{_hex(user_data)}"
        else:
            text = f"{m['member_id']}={_hex(m['assignment'])}"
        members.append(text)
    value_json = {
        "protocolType": protocol_type,
        "protocol": group["protocol"],
        "generationId": group["generation"],
        "assignment": "{" + ",".join(members) + "}",
    }
    return _json({"metadata": key.group}), _json(value_json)


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _control_record(r: Record) -> str:
    """What DumpLogSegments prints for a control record: the end-transaction marker, or
    the control type (with its id) of one it does not know."""
    try:
        control_type = ControlRecordType.parse(r.key)
        if control_type in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            marker = EndTransactionMarker.from_record(r)
            return f" endTxnMarker: {marker.control_type.name} coordinatorEpoch: {marker.coordinator_epoch}"
    except KafkaError as e:
        return f" controlRecord: {e}"
    assert r.key is not None  # parse refused a missing key
    type_id = ControlRecordType.type_id(r.key)
    return f" controlType: {control_type.name}({type_id})"


def _legacy_crcs(batch: RecordBatch) -> list[int] | None:
    """The CRC-32 of each message of a v0/v1 entry (inner ones for a wrapper); None for v2."""
    if not batch.is_legacy:
        return None
    return [r.crc for r in iter_legacy_records(batch.buffer(), MAX_DECOMPRESSED_BATCH_BYTES)]


def _record_lines(
    batch: RecordBatch, print_data: bool, parser: MessageParser = text_message_parser
) -> Iterator[str]:
    ts_name = batch.timestamp_type.kafka_name
    legacy = _legacy_crcs(batch)
    for i, r in enumerate(batch.records()):
        line = (
            f"| offset: {r.offset} {ts_name}: {r.timestamp} "
            f"keysize: {-1 if r.key is None else len(r.key)} "
            f"valuesize: {-1 if r.value is None else len(r.value)}"
        )
        if legacy is None:
            line += f" sequence: {r.sequence} headerKeys: [{','.join(k for k, _ in r.headers)}]"
        else:
            # a v0/v1 message has a CRC of its own, checked when it was read
            line += f" crc: {legacy[i]} isvalid: true"
        if batch.is_control:
            line += _control_record(r)
        elif print_data:
            key, payload = parser(r)
            if key is not None:
                line += f" key: {key}"
            if payload is not None:
                line += f" payload: {payload}"
        yield line


def dump_log(
    path: Path, deep: bool, print_data: bool, parser: MessageParser = text_message_parser
) -> None:
    start = _start_offset(path)
    segment = _SegmentBytes(path)
    try:
        if segment.size >= LOG_OVERHEAD:
            (length,) = _INT32.unpack_from(segment.view, LENGTH_OFFSET)
            magic = segment.view[MAGIC_OFFSET] if segment.size > MAGIC_OFFSET else -1
            if magic not in (0, 1, 2) or length < _MIN_LENGTH[magic]:
                raise DumpError(
                    f"{path} is not a Kafka log segment: its first batch has length {length} and "
                    f"magic byte {magic}"
                )
        click.echo(f"Starting offset: {start}")
        valid_bytes = 0
        for batch in segment.batches():
            click.echo(_batch_line(batch, valid_bytes))
            if deep or print_data:
                try:
                    for line in _record_lines(batch, print_data, parser):
                        click.echo(line)
                except KafkaError as e:
                    click.echo(
                        f"Could not read the records of the batch at position {valid_bytes}: {e}",
                        err=True,
                    )
            valid_bytes += batch.size_in_bytes
            del batch
        trailing = segment.size - valid_bytes
        if trailing > 0:
            click.echo(f"Found {trailing} invalid bytes at the end of {path.name}")
    finally:
        segment.close()


def _log_beside(path: Path) -> Path:
    log_path = path.with_name(path.name.split(".", 1)[0] + LOG_FILE_SUFFIX)
    if not log_path.exists():
        raise DumpError(f"Cannot check {path}: the log segment {log_path} beside it does not exist")
    return log_path


def dump_index(
    path: Path, sanity_only: bool, verify_only: bool, mismatches: dict[str, list[tuple[int, int]]]
) -> None:
    start = _start_offset(path)
    log_path = _log_beside(path)
    index = OffsetIndex(path, start, writable=False)
    try:
        if sanity_only:
            index.sanity_check()
            click.echo(f"{path} passed sanity check.")
            return
        segment = _SegmentBytes(log_path)
        try:
            for i in range(index.entries):
                entry = index.entry(i)
                # a preallocated index left by a crash ends in zero entries
                if entry.offset == index.base_offset and i > 0:
                    return
                first = next(segment.batches(entry.position), None)
                found = first.last_offset if first is not None else -1
                del first
                if found != entry.offset:
                    mismatches.setdefault(str(path.resolve()), []).append((entry.offset, found))
                if not verify_only:
                    click.echo(f"offset: {entry.offset} position: {entry.position}")
        finally:
            segment.close()
    finally:
        index.close_handler()


def dump_time_index(path: Path, verify_only: bool, errors: list[str]) -> None:
    start = _start_offset(path)
    log_path = _log_beside(path)
    index_path = path.with_name(path.name.split(".", 1)[0] + INDEX_FILE_SUFFIX)
    time_index = TimeIndex(path, start, writable=False)
    offset_index = OffsetIndex(index_path, start, writable=False) if index_path.exists() else None
    segment = _SegmentBytes(log_path)
    try:
        prev = -1
        for i in range(time_index.entries):
            entry = time_index.entry(i)
            position = offset_index.lookup(entry.offset).position if offset_index else 0
            found = next(
                (b for b in segment.batches(position) if b.last_offset >= entry.offset), None
            )
            if found is None or found.last_offset != entry.offset:
                errors.append(
                    f"Found timestamp index entry for offset {entry.offset} in {path} but the log "
                    f"has no batch ending at it ({-1 if found is None else found.last_offset})"
                )
            elif found.max_timestamp != entry.timestamp:
                errors.append(
                    f"Index timestamp {entry.timestamp} in {path} does not match the max timestamp "
                    f"{found.max_timestamp} of the batch ending at offset {entry.offset}"
                )
            if prev >= entry.timestamp:
                errors.append(
                    f"Index timestamp {entry.timestamp} in {path} is not larger than {prev}"
                )
            del found
            if not verify_only:
                click.echo(f"timestamp: {entry.timestamp} offset: {entry.offset}")
            prev = entry.timestamp
    finally:
        segment.close()
        time_index.close_handler()
        if offset_index is not None:
            offset_index.close_handler()


def dump_txn_index(path: Path) -> None:
    index = TransactionIndex(_start_offset(path), path)
    for t in index.all_aborted_txns():
        click.echo(
            f"version: {t.version} producerId: {t.producer_id} firstOffset: {t.first_offset} "
            f"lastOffset: {t.last_offset} lastStableOffset: {t.last_stable_offset}"
        )


@click.command(name="dump-log")
@click.option(
    "--files",
    "files",
    required=True,
    help="Comma-separated segment files to dump (.log, .index, .timeindex, .txnindex).",
)
@click.option(
    "--print-data-log",
    is_flag=True,
    help="Print each record's key and payload (implies --deep-iteration).",
)
@click.option(
    "--deep-iteration", is_flag=True, help="Print every record, not only the batch headers."
)
@click.option(
    "--offsets-decoder",
    is_flag=True,
    help="Decode the records as __consumer_offsets data: offset commits and group "
    "metadata (implies --print-data-log).",
)
@click.option(
    "--transaction-log-decoder",
    is_flag=True,
    help="Decode the records as __transaction_state data: transaction metadata "
    "(implies --print-data-log).",
)
@click.option(
    "--verify-index-only",
    is_flag=True,
    help="Only check index entries against the log; print mismatches.",
)
@click.option(
    "--index-sanity-check",
    is_flag=True,
    help="Only run the sanity check Kafka runs on an index at start-up.",
)
def command(
    files: str,
    print_data_log: bool,
    deep_iteration: bool,
    offsets_decoder: bool,
    transaction_log_decoder: bool,
    verify_index_only: bool,
    index_sanity_check: bool,
) -> None:
    """Print the batches, records or index entries of Kafka segment files."""
    mismatches: dict[str, list[tuple[int, int]]] = {}
    time_errors: list[str] = []
    try:
        for name in [f for f in files.split(",") if f.strip()]:
            path = Path(name.strip())
            if not path.is_file():
                raise DumpError(f"{path} does not exist or is not a file")
            click.echo(f"Dumping {path}")
            suffix = path.name[path.name.rfind(".") :] if "." in path.name else ""
            if suffix == LOG_FILE_SUFFIX:
                parser = text_message_parser
                if transaction_log_decoder:
                    parser = transaction_log_message_parser
                elif offsets_decoder:
                    parser = offsets_message_parser
                dump_log(
                    path,
                    deep_iteration,
                    print_data_log or offsets_decoder or transaction_log_decoder,
                    parser,
                )
            elif suffix == INDEX_FILE_SUFFIX:
                dump_index(path, index_sanity_check, verify_index_only, mismatches)
            elif suffix == TIME_INDEX_FILE_SUFFIX:
                dump_time_index(path, verify_index_only, time_errors)
            elif suffix == TXN_INDEX_FILE_SUFFIX:
                dump_txn_index(path)
            else:
                raise DumpError(
                    f"{path} is not a Kafka segment file: expected a .log, .index, .timeindex or "
                    ".txnindex file"
                )
    except (DumpError, KafkaError, OSError) as e:
        click.echo(str(e), err=True)
        raise SystemExit(1) from None
    for file_name, pairs in mismatches.items():
        click.echo(f"Mismatches in :{file_name}", err=True)
        for index_offset, log_offset in reversed(pairs):
            click.echo(f"  Index offset: {index_offset}, log offset: {log_offset}", err=True)
    for line in time_errors:
        click.echo(line, err=True)


__all__ = ["command", "dump_index", "dump_log", "dump_time_index", "dump_txn_index"]
