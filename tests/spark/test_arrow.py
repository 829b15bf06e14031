"""Bulk decoding of record batches into Arrow, checked against kafpy's per-record decoder."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from kafpy.common.errors import CorruptRecordError, MessageTooLargeError
from kafpy.records.builder import RecordBatchBuilder, build_batch
from kafpy.records.compression import CompressionType
from kafpy.records.legacy_record import build_message_set
from kafpy.records.memory_records import MemoryRecords
from kafpy.records.record_batch import TimestampType
from kafpy.spark.arrow import arrow_schema, decode_batches, spark_schema
from tests.fixtures.forged_batches import zstd_bomb

TS = 1_700_000_000_000


def mixed_batches(seed: int = 7) -> bytes:
    rnd = random.Random(seed)
    out = []
    base = 0
    for codec in CompressionType:
        builder = RecordBatchBuilder(compression=codec, base_offset=base)
        for i in range(150):  # crosses the 64-offset point where record sizes change
            key = None if i % 7 == 0 else b"k%d" % i
            value = None if i % 11 == 0 else rnd.randbytes(rnd.choice([0, 1, 12, 13, 100, 300]))
            headers = [("h", b"v"), ("n\u00e9", None)] if i % 5 == 0 else []
            builder.append(TS + rnd.randrange(-1000, 1000), key, value, headers)
        out.append(builder.build())
        base += 150
    return b"".join(out)


def expected(data: bytes, start: int, end: int) -> list[dict]:
    return [
        {
            "key": r.key,
            "value": r.value,
            "offset": r.offset,
            "timestamp_ms": r.timestamp,
            "headers": [{"key": k, "value": v} for k, v in r.headers],
        }
        for r in MemoryRecords(data).records()
        if start <= r.offset < end
    ]


def rows(batch: pa.RecordBatch) -> list[dict]:
    out = []
    for row in batch.to_pylist():
        ts = batch.schema.field("timestamp")
        assert ts.type == pa.timestamp("us", tz="UTC")
        out.append(
            {
                "key": row["key"],
                "value": row["value"],
                "offset": row["offset"],
                "timestamp_ms": None,
                "headers": row.get("headers"),
            }
        )
    micros = batch.column("timestamp").cast(pa.int64()).to_pylist()
    for r, us in zip(out, micros, strict=True):
        r["timestamp_ms"] = us // 1000
    return out


def test_every_codec_nulls_headers_match_the_record_decoder() -> None:
    data = mixed_batches()
    chunk = decode_batches(data, "t", 3, 0, 10**9, include_headers=True)
    assert chunk.batch is not None
    assert chunk.batch.schema == arrow_schema(True)
    assert rows(chunk.batch) == expected(data, 0, 10**9)
    assert chunk.batch.column("topic").to_pylist() == ["t"] * chunk.batch.num_rows
    assert set(chunk.batch.column("partition").to_pylist()) == {3}
    assert chunk.next_offset == 150 * len(CompressionType)


def test_range_is_exact_and_mid_batch() -> None:
    data = mixed_batches()
    chunk = decode_batches(data, "t", 0, 170, 460)
    assert chunk.batch is not None and "headers" not in chunk.batch.schema.names
    got = [(r["offset"], r["key"], r["value"]) for r in rows(chunk.batch)]
    assert got == [(r["offset"], r["key"], r["value"]) for r in expected(data, 170, 460)]
    assert got[0][0] == 170 and got[-1][0] == 459


def test_uniform_records_take_the_run_path_and_still_match() -> None:
    value = bytes(range(100))
    data = build_batch([(None, value)] * 20_000, timestamp=TS, base_offset=42)
    chunk = decode_batches(data, "t", 0, 0, 10**9)
    assert chunk.batch is not None and chunk.batch.num_rows == 20_000
    assert chunk.batch.column("offset").to_pylist() == list(range(42, 20_042))
    assert set(chunk.batch.column("value").to_pylist()) == {value}
    assert chunk.batch.column("key").null_count == 20_000


def test_varied_sizes_walk_every_length_varint_width() -> None:
    # record lengths with 1-, 2- and 3-byte varints (8 KiB and more), values from empty to
    # 20 KB, all keys null in one batch and all present in the next
    rnd = random.Random(3)
    sizes = [0, 1, 50, 63, 64, 150, 8100, 8200, 20_000]
    no_keys = build_batch(
        [(None, rnd.randbytes(rnd.choice(sizes))) for _ in range(300)], timestamp=TS
    )
    keys = build_batch(
        [(b"k%d" % i, rnd.randbytes(rnd.choice(sizes))) for i in range(300)],
        timestamp=TS,
        base_offset=300,
    )
    data = no_keys + keys
    chunk = decode_batches(data, "t", 0, 0, 600)
    assert chunk.batch is not None and chunk.batch.num_rows == 600
    assert rows(chunk.batch) == [{**r, "headers": None} for r in expected(data, 0, 600)]
    assert chunk.batch.column("key").null_count == 300


def test_a_negative_record_length_is_corruption() -> None:
    data = bytearray(build_batch([b"x" * 50, b"y" * 50], timestamp=TS))
    data[61] = 0x01  # zigzag -1
    with pytest.raises(CorruptRecordError):
        decode_batches(bytes(data), "t", 0, 0, 10, check_crcs=False)


def test_log_append_time_control_batches_and_a_partial_tail() -> None:
    lat = build_batch([b"a", b"b"], timestamp=1, timestamp_type=TimestampType.LOG_APPEND_TIME,
                      log_append_time=TS)  # fmt: skip
    control = build_batch([(b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00")], base_offset=2,
                          is_control=True, is_transactional=True)  # fmt: skip
    tail = build_batch([b"c"], base_offset=3)
    data = lat + control + tail[:-5]
    chunk = decode_batches(data, "t", 0, 0, 100)
    assert chunk.batch is not None
    assert chunk.batch.column("offset").to_pylist() == [0, 1]
    assert chunk.batch.column("timestampType").to_pylist() == [1, 1]
    assert chunk.batch.column("timestamp").cast(pa.int64()).to_pylist() == [TS * 1000] * 2
    assert chunk.next_offset == 3  # past the control batch, before the torn one
    only_control = decode_batches(control, "t", 0, 2, 100)
    assert only_control.batch is None and only_control.next_offset == 3


def test_corruption_is_detected() -> None:
    data = bytearray(build_batch([b"x" * 50, b"y" * 50], timestamp=TS))
    data[-10] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="CRC"):
        decode_batches(bytes(data), "t", 0, 0, 10)
    wrong_length = bytearray(build_batch([b"x" * 50, b"y" * 50], timestamp=TS))
    wrong_length[61] += 2  # the first record's length varint: one byte more than it holds
    with pytest.raises(CorruptRecordError):
        decode_batches(bytes(wrong_length), "t", 0, 0, 10, check_crcs=False)


def test_arrow_schema_is_what_spark_expects(spark: object) -> None:
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import _parse_datatype_string

    for headers in (False, True):
        struct = _parse_datatype_string(spark_schema(headers))
        assert to_arrow_schema(struct, timezone="UTC").equals(arrow_schema(headers))


def test_read_committed_drops_aborted_transactions() -> None:
    from kafpy.records.control_record import (
        ControlRecordType,
        EndTransactionMarker,
        build_end_transaction_marker,
    )

    def txn(pid: int, base: int, values: list[bytes]) -> bytes:
        return build_batch(values, base_offset=base, producer_id=pid, producer_epoch=0,
                           base_sequence=0, is_transactional=True, timestamp=TS)  # fmt: skip

    def marker(pid: int, base: int, kind: ControlRecordType) -> bytes:
        return build_end_transaction_marker(
            EndTransactionMarker(kind, 0), producer_id=pid, producer_epoch=0, timestamp=TS,
            base_offset=base,
        )  # fmt: skip

    data = (
        txn(7, 0, [b"a0", b"a1"])  # producer 7: aborted
        + txn(8, 2, [b"c0"])  # producer 8: committed
        + marker(7, 3, ControlRecordType.ABORT)
        + build_batch([b"plain"], base_offset=4, timestamp=TS)
        + txn(7, 5, [b"a2"])  # producer 7's next transaction: committed
        + marker(8, 6, ControlRecordType.COMMIT)
        + marker(7, 7, ControlRecordType.COMMIT)
    )
    everything = decode_batches(data, "t", 0, 0, 100)
    assert everything.batch is not None
    assert everything.batch.column("value").to_pylist() == [b"a0", b"a1", b"c0", b"plain", b"a2"]
    committed = decode_batches(data, "t", 0, 0, 100, aborted=[(7, 0)])
    assert committed.batch is not None
    assert committed.batch.column("offset").to_pylist() == [2, 4, 5]
    assert committed.next_offset == 8


def test_offset_gaps_are_skipped_up_to_the_end_of_the_range() -> None:
    # compaction removed offsets 2-4 and 6: batches at 0-1, 5 and 7
    data = (
        build_batch([b"a", b"b"], base_offset=0, timestamp=TS)
        + build_batch([b"c"], base_offset=5, timestamp=TS)
        + build_batch([b"d"], base_offset=7, timestamp=TS)
    )
    chunk = decode_batches(data, "t", 0, 1, 7)
    assert chunk.batch is not None and chunk.batch.column("offset").to_pylist() == [1, 5]
    assert chunk.next_offset == 7  # the range is done, though offset 6 never came
    ahead = decode_batches(build_batch([b"d"], base_offset=7, timestamp=TS), "t", 0, 6, 7)
    assert ahead.batch is None and ahead.next_offset == 7


def test_a_decompression_bomb_is_refused_within_the_batch_cap() -> None:
    with pytest.raises(MessageTooLargeError, match="decompresses to more than"):
        decode_batches(zstd_bomb(TS), "t", 0, 0, 10**9)  # a 1 GiB record in ~32 KB


def test_messages_of_formats_v0_and_v1_decode_as_any_batch() -> None:
    # a topic whose message.format.version was below 0.11.0 for a while: v1 messages (one
    # plain, one gzip wrapper), a v0 message, then a v2 batch
    data = build_message_set(1, [(0, TS, b"a", b"1")])
    data += build_message_set(1, [(1, TS + 1, b"b", b"2"), (2, TS + 2, None, b"3")],
                              CompressionType.GZIP)  # fmt: skip
    data += build_message_set(0, [(3, -1, b"d", None)])
    data += build_batch([(b"e", b"5")], base_offset=4, timestamp=TS + 4)
    chunk = decode_batches(data, "t", 0, 0, 10**9)
    assert chunk.batch is not None and chunk.next_offset == 5
    assert rows(chunk.batch) == [{**r, "headers": None} for r in expected(data, 0, 10**9)]
    # a range that starts inside the wrapper [1, 2]
    chunk = decode_batches(data, "t", 0, 2, 4)
    assert chunk.batch is not None
    assert [r["offset"] for r in rows(chunk.batch)] == [2, 3]
    damaged = bytearray(data)
    damaged[30] ^= 1  # inside the first v1 message
    with pytest.raises(CorruptRecordError, match="CRC-32"):
        decode_batches(bytes(damaged), "t", 0, 0, 10**9)
