"""`kafpy dump-log`: Kafka DumpLogSegments' output for .log, .index, .timeindex and .txnindex."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from kafka.record.legacy_records import LegacyRecordBatch

from kafpy.cli.dump_log import command
from kafpy.common.scheduler import MockScheduler
from kafpy.common.time import MockTime
from kafpy.records import CompressionType, MemoryRecords, RecordBatch, build_batch
from kafpy.storage.log import Log
from kafpy.storage.log_config import LogConfig
from kafpy.storage.offset_index import OffsetIndex
from kafpy.storage.transaction_index import AbortedTxn, TransactionIndex

T0 = 1_600_000_000_000


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    time = MockTime(T0)
    log = Log(tmp_path / "t-0", LogConfig(index_interval_bytes=50), 0, 0, MockScheduler(time), time)
    log.append_as_leader(
        MemoryRecords(bytearray(build_batch([(b"k", b"v"), (None, b"w")], timestamp=T0))), 0
    )
    log.append_as_leader(
        MemoryRecords(
            bytearray(
                build_batch([(b"k2", b"v2")], timestamp=T0 + 1, compression=CompressionType.GZIP)
            )
        ),
        3,
    )
    log.append_as_leader(MemoryRecords(bytearray(build_batch([b"x"], timestamp=T0 + 2))), 3)
    log.close()
    return tmp_path / "t-0"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(command, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_dump_log_batches(log_dir: Path) -> None:
    path = log_dir / "00000000000000000000.log"
    code, out, err = run("--files", str(path))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"Dumping {path}"
    assert lines[1] == "Starting offset: 0"
    first = RecordBatch(path.read_bytes())
    assert lines[2] == (
        "baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false "
        f"position: 0 CreateTime: {T0} size: {first.size_in_bytes} magic: 2 compresscodec: NONE "
        f"crc: {first.crc} isvalid: true"
    )
    assert re.match(
        rf"baseOffset: 2 lastOffset: 2 count: 1 .* partitionLeaderEpoch: 3 .* position: {first.size_in_bytes} "
        rf"CreateTime: {T0 + 1} size: \d+ magic: 2 compresscodec: GZIP crc: \d+ isvalid: true$",
        lines[3],
    )
    assert len(lines) == 5 and not any(line.startswith("|") for line in lines)


def test_crc_is_the_one_kafka_python_reads(log_dir: Path) -> None:
    from kafka.record.default_records import DefaultRecordBatch

    raw = (log_dir / "00000000000000000000.log").read_bytes()
    first = RecordBatch(raw)
    ref = DefaultRecordBatch(raw[: first.size_in_bytes])
    code, out, _ = run("--files", str(log_dir / "00000000000000000000.log"))
    assert f"crc: {ref.crc} isvalid: true" in out.splitlines()[2]


def test_print_data_log_prints_records(log_dir: Path) -> None:
    code, out, err = run("--files", str(log_dir / "00000000000000000000.log"), "--print-data-log")
    assert code == 0, err
    records = [line for line in out.splitlines() if line.startswith("|")]
    assert records == [
        f"| offset: 0 CreateTime: {T0} keysize: 1 valuesize: 1 sequence: -1 headerKeys: [] key: k payload: v",
        f"| offset: 1 CreateTime: {T0} keysize: -1 valuesize: 1 sequence: -1 headerKeys: [] payload: w",
        f"| offset: 2 CreateTime: {T0 + 1} keysize: 2 valuesize: 2 sequence: -1 headerKeys: [] key: k2 payload: v2",
        f"| offset: 3 CreateTime: {T0 + 2} keysize: -1 valuesize: 1 sequence: -1 headerKeys: [] payload: x",
    ]


def test_deep_iteration_without_data(log_dir: Path) -> None:
    code, out, _ = run("--files", str(log_dir / "00000000000000000000.log"), "--deep-iteration")
    records = [line for line in out.splitlines() if line.startswith("|")]
    assert len(records) == 4 and not any("payload" in r for r in records)


def test_trailing_garbage_is_reported(log_dir: Path) -> None:
    path = log_dir / "00000000000000000000.log"
    with open(path, "ab") as f:
        f.write(b"\x00" * 7)
    code, out, _ = run("--files", str(path))
    assert code == 0
    assert out.splitlines()[-1] == "Found 7 invalid bytes at the end of 00000000000000000000.log"


def test_dump_index_and_time_index(log_dir: Path) -> None:
    index = log_dir / "00000000000000000000.index"
    timeindex = log_dir / "00000000000000000000.timeindex"
    code, out, err = run("--files", f"{index},{timeindex}")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"Dumping {index}"
    entries = [ln for ln in lines if ln.startswith("offset: ")]
    assert entries and all(re.fullmatch(r"offset: \d+ position: \d+", ln) for ln in entries)
    assert f"Dumping {timeindex}" in lines
    assert any(re.fullmatch(rf"timestamp: {T0 + 2} offset: 3", ln) for ln in lines)
    assert err == ""


def test_verify_index_only_reports_mismatches(log_dir: Path) -> None:
    index_path = log_dir / "00000000000000000000.index"
    index_path.unlink()
    index = OffsetIndex(index_path, 0, 80)
    index.append(1, 0)  # right: the batch at 0 ends at offset 1
    index.append(5, 0)  # wrong
    index.close()
    code, out, err = run("--files", str(index_path), "--verify-index-only")
    assert code == 0
    assert out.splitlines() == [f"Dumping {index_path}"]
    assert err.splitlines() == [
        f"Mismatches in :{index_path.resolve()}",
        "  Index offset: 5, log offset: 1",
    ]


def test_index_sanity_check(log_dir: Path) -> None:
    index_path = log_dir / "00000000000000000000.index"
    code, out, _ = run("--files", str(index_path), "--index-sanity-check")
    assert code == 0 and out.splitlines()[-1] == f"{index_path} passed sanity check."


def test_txn_index(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    idx = TransactionIndex(0, path)
    idx.append(AbortedTxn(7, 1, 5, 0))
    idx.close()
    code, out, _ = run("--files", str(path))
    assert (
        out.splitlines()[1]
        == "version: 0 producerId: 7 firstOffset: 1 lastOffset: 5 lastStableOffset: 0"
    )


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.log", None, "does not exist"),
        ("notes.log", b"hello", "is not a Kafka segment file"),
        ("00000000000000000000.txt", b"x", "is not a Kafka segment file"),
        (
            "00000000000000000000.log",
            b"hello world, this is text and not batches",
            "is not a Kafka log segment",
        ),
        ("00000000000000000005.index", b"", "does not exist"),
    ],
)
def test_bad_input_is_one_line_on_stderr_and_exit_1(
    tmp_path: Path, name: str, content: bytes | None, message: str
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    code, _, err = run("--files", str(path))
    assert code == 1
    assert len(err.splitlines()) == 1 and message in err


def test_main_group_dispatches_dump_log(log_dir: Path) -> None:
    from kafpy.cli.main import main

    result = CliRunner().invoke(
        main, ["dump-log", "--files", str(log_dir / "00000000000000000000.log")]
    )
    assert result.exit_code == 0 and "Starting offset: 0" in result.stdout


def test_dump_log_shows_the_offset_gaps_of_a_compacted_segment(tmp_path: Path) -> None:
    from kafpy.records.builder import RecordBatchBuilder

    time = MockTime(T0)
    log = Log(
        tmp_path / "c-0", LogConfig(cleanup_policy=["compact"]), 0, 0, MockScheduler(time), time
    )
    # what the cleaner leaves: batch boundaries kept, superseded records gone (offsets 1-3)
    b = RecordBatchBuilder(base_offset=0)
    b.append(T0, b"a", b"a-latest", offset=0)
    b.append(T0, b"b", b"b-latest", offset=4)
    log.append_as_follower(
        MemoryRecords(
            bytearray(b.build() + build_batch([(b"c", b"c1")], base_offset=7, timestamp=T0))
        )
    )
    log.close()
    code, out, err = run(
        "--files", str(tmp_path / "c-0" / "00000000000000000000.log"), "--print-data-log"
    )
    assert code == 0, err
    lines = out.splitlines()
    assert lines[2].startswith("baseOffset: 0 lastOffset: 4 count: 2 ")
    assert lines[3].startswith("| offset: 0 ") and "key: a payload: a-latest" in lines[3]
    assert lines[4].startswith("| offset: 4 ") and "key: b payload: b-latest" in lines[4]
    assert lines[5].startswith("baseOffset: 7 lastOffset: 7 count: 1 ")


def test_offsets_decoder_prints_consumer_offsets_records(tmp_path: Path) -> None:
    from kafpy.common.topic_partition import TopicPartition
    from kafpy.coordinator.group_metadata_records import (
        group_metadata_key,
        group_metadata_value,
        offset_commit_key,
        offset_commit_value,
    )
    from kafpy.coordinator.offset_and_metadata import OffsetAndMetadata
    from kafpy.protocol.consumer_protocol import encode_assignment, encode_subscription

    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    member = {
        "member_id": "m-1",
        "group_instance_id": None,
        "client_id": "c",
        "client_host": "/127.0.0.1",
        "rebalance_timeout": 300000,
        "session_timeout": 10000,
        "subscription": encode_subscription(["t"]),
        "assignment": encode_assignment([tp0, tp1]),
    }
    group = {
        "protocol_type": "consumer",
        "generation": 4,
        "protocol": "range",
        "leader": "m-1",
        "current_state_timestamp": T0,
        "members": [member],
    }
    other = {**group, "protocol_type": "connect", "protocol": None,
             "members": [{**member, "assignment": b"\x00\x0a\xff"}]}  # fmt: skip
    records = [
        (offset_commit_key("g", tp0), offset_commit_value(OffsetAndMetadata(42, commit_timestamp=T0))),
        (offset_commit_key("g", tp1), offset_commit_value(OffsetAndMetadata(7, metadata="m", commit_timestamp=T0))),
        (group_metadata_key("g"), group_metadata_value(group)),
        (group_metadata_key("w"), group_metadata_value(other)),
        (offset_commit_key("g", tp1), None),
    ]  # fmt: skip
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    path.parent.mkdir()
    path.write_bytes(build_batch(records, timestamp=T0))
    code, out, err = run("--files", str(path), "--offsets-decoder")
    assert code == 0, err
    decoded = [line.split(" headerKeys: [] ", 1)[1] for line in out.splitlines()[3:7]]
    assert decoded == [
        "key: offset::g:t:0 payload: 42",
        "key: offset::g:t:1 payload: 7:m",
        'key: {"metadata":"g"} payload: {"protocolType":"consumer","protocol":"range",'
        '"generationId":4,"assignment":"{m-1=[t-0, t-1]}"}',
        'key: {"metadata":"w"} payload: {"protocolType":"connect","protocol":null,'
        '"generationId":4,"assignment":"{m-1=AFF}"}',
    ]
    assert out.splitlines()[7].endswith("headerKeys: []")  # a tombstone: nothing decoded

    path.write_bytes(build_batch([(None, b"x")], timestamp=T0))
    code, _, err = run("--files", str(path), "--offsets-decoder")
    assert code == 1 and "message had a missing key" in err


def test_control_records_print_their_end_transaction_marker(tmp_path: Path) -> None:
    from kafpy.records.builder import RecordBatchBuilder  # noqa: PLC0415
    from kafpy.records.control_record import (  # noqa: PLC0415
        ControlRecordType,
        EndTransactionMarker,
        build_end_transaction_marker,
    )

    time = MockTime(T0)
    log = Log(tmp_path / "t-0", LogConfig(), 0, 0, MockScheduler(time), time)
    txn = build_batch([b"v"], timestamp=T0, producer_id=9, producer_epoch=1, base_sequence=0,
                      is_transactional=True)  # fmt: skip
    log.append_as_leader(MemoryRecords(bytearray(txn)), 0)
    for kind, epoch in ((ControlRecordType.ABORT, 4), (ControlRecordType.COMMIT, 5)):
        marker = build_end_transaction_marker(EndTransactionMarker(kind, epoch), producer_id=9,
                                              producer_epoch=1, timestamp=T0)  # fmt: skip
        log.append_as_leader(MemoryRecords(bytearray(marker)), 0, is_from_client=False)
    log.close()
    # a control type this tool does not know (a newer Kafka's), added to the file's end
    unknown = RecordBatchBuilder(base_offset=3, producer_id=9, producer_epoch=1,
                                 is_transactional=True, is_control=True)  # fmt: skip
    unknown.append(T0, b"\x00\x00\x00\x05", b"")
    path = tmp_path / "t-0" / "00000000000000000000.log"
    with path.open("ab") as f:
        f.write(unknown.build())
    code, out, err = run("--files", str(path), "--print-data-log")
    assert code == 0, err
    lines = [line for line in out.splitlines() if line.startswith("| offset:")]
    assert lines[0].endswith("headerKeys: [] payload: v")
    assert lines[1] == (
        f"| offset: 1 CreateTime: {T0} keysize: 4 valuesize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: ABORT coordinatorEpoch: 4"
    )
    assert lines[2].endswith("endTxnMarker: COMMIT coordinatorEpoch: 5")
    assert lines[3].endswith("headerKeys: [] controlType: UNKNOWN(5)")
    assert "isTransactional: true isControl: true" in out


def test_transaction_log_decoder_prints_transaction_state_records(tmp_path: Path) -> None:
    from kafpy.common.topic_partition import TopicPartition
    from kafpy.coordinator.transaction.transaction_log import key_to_bytes, value_to_bytes
    from kafpy.coordinator.transaction.transaction_metadata import (
        TransactionState,
        TxnTransitMetadata,
    )

    ongoing = TxnTransitMetadata(
        producer_id=5, last_producer_id=-1, producer_epoch=2, last_producer_epoch=-1,
        txn_timeout_ms=60000, txn_state=TransactionState.ONGOING,
        topic_partitions=frozenset({TopicPartition("out", 1), TopicPartition("out", 0)}),
        txn_start_timestamp=T0, txn_last_update_timestamp=T0 + 5,
    )  # fmt: skip
    records = [(key_to_bytes("tx-1"), value_to_bytes(ongoing)), (key_to_bytes("tx-2"), None)]
    path = tmp_path / "__transaction_state-0" / "00000000000000000000.log"
    path.parent.mkdir()
    path.write_bytes(build_batch(records, timestamp=T0))
    code, out, err = run("--files", str(path), "--transaction-log-decoder")
    assert code == 0, err
    decoded = [line.split(" headerKeys: [] ", 1)[1] for line in out.splitlines()[3:5]]
    assert decoded == [
        "key: transaction_metadata::transactionalId=tx-1 payload: producerId:5,producerEpoch:2,"
        f"state=Ongoing,partitions=[out-0,out-1],txnLastUpdateTimestamp={T0 + 5},txnTimeoutMs=60000",
        "key: transaction_metadata::transactionalId=tx-2 payload: <DELETE>",
    ]
    path.write_bytes(build_batch([(b"\x00\x07junk", b"x")], timestamp=T0))
    code, _, err = run("--files", str(path), "--transaction-log-decoder")
    assert code == 1 and "using transaction log decoder: Unknown version 7" in err


def test_messages_of_formats_v0_and_v1_print_as_kafkas_legacy_batches(tmp_path: Path) -> None:
    # a log written at 0.10.0 (v1, plain then gzip), then 0.9.0 (v0), then 2.8 (v2)
    time = MockTime(T0)
    props = {"message.format.version": "0.10.0"}
    log = Log(tmp_path / "t-0", LogConfig.from_props(None, props), 0, 0, MockScheduler(time), time)

    def append(values: list[bytes], ts: int) -> None:
        log.append_as_leader(MemoryRecords(bytearray(build_batch(values, timestamp=ts))), 0)

    append([b"a", b"bb"], T0)
    log.update_config(LogConfig.from_props(None, {**props, "compression.type": "gzip"}))
    append([b"c", b"d"], T0 + 1)
    log.update_config(LogConfig.from_props(None, {"message.format.version": "0.9.0"}))
    append([b"e"], T0 + 2)
    log.update_config(LogConfig())
    append([b"f"], T0 + 3)
    log.close()
    path = tmp_path / "t-0" / "00000000000000000000.log"
    code, out, err = run("--files", str(path), "--print-data-log")
    assert code == 0, err
    data = path.read_bytes()
    entries = list(MemoryRecords(data).batches())
    crcs = [b.crc for b in entries]
    inner = [LegacyRecordBatch(bytes(entries[2].buffer()), 1)]
    inner_crcs = [r.checksum for batch in inner for r in batch]  # kafka-python opens the wrapper
    lines = out.splitlines()[2:]
    sizes = [b.size_in_bytes for b in entries]
    pos = [sum(sizes[:i]) for i in range(len(sizes))]
    assert lines[:9] == [
        f"offset: 0 position: 0 CreateTime: {T0} size: {sizes[0]} magic: 1 compresscodec: NONE "
        f"crc: {crcs[0]} isvalid: true",
        f"| offset: 0 CreateTime: {T0} keysize: -1 valuesize: 1 crc: {crcs[0]} isvalid: true "
        "payload: a",
        f"offset: 1 position: {pos[1]} CreateTime: {T0} size: {sizes[1]} magic: 1 "
        f"compresscodec: NONE crc: {crcs[1]} isvalid: true",
        f"| offset: 1 CreateTime: {T0} keysize: -1 valuesize: 2 crc: {crcs[1]} isvalid: true "
        "payload: bb",
        f"offset: 3 position: {pos[2]} CreateTime: {T0 + 1} size: {sizes[2]} magic: 1 "
        f"compresscodec: GZIP crc: {crcs[2]} isvalid: true",
        f"| offset: 2 CreateTime: {T0 + 1} keysize: -1 valuesize: 1 crc: {inner_crcs[0]} "
        "isvalid: true payload: c",
        f"| offset: 3 CreateTime: {T0 + 1} keysize: -1 valuesize: 1 crc: {inner_crcs[1]} "
        "isvalid: true payload: d",
        f"offset: 4 position: {pos[3]} NoTimestampType: -1 size: {sizes[3]} magic: 0 "
        f"compresscodec: NONE crc: {crcs[3]} isvalid: true",
        f"| offset: 4 NoTimestampType: -1 keysize: -1 valuesize: 1 crc: {crcs[3]} isvalid: true "
        "payload: e",
    ]
    assert sizes[:2] == [35, 36] and sizes[3] == 27  # 12 + 22 (v1) / 14 (v0) + the value
    assert lines[9].startswith("baseOffset: 5 lastOffset: 5 count: 1 ")
    assert lines[9].endswith(f" magic: 2 compresscodec: NONE crc: {crcs[4]} isvalid: true")
