"""Log: append/read/roll/truncate/flush/retention with MockTime (loading: test_log_loader)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kafpy.common.errors import (
    CorruptRecordError,
    KafkaStorageError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
    UnsupportedForMessageFormatError,
)
from kafpy.common.topic_partition import TopicPartition
from kafpy.records import CompressionType, MemoryRecords, TimestampType
from kafpy.records.legacy_record import build_message_set, to_message_set
from kafpy.storage.log import (
    Log,
    UnexpectedAppendOffsetError,
    log_delete_dir_name,
    log_file_name,
    offset_index_file_name,
    parse_topic_partition_name,
)
from kafpy.storage.log_config import LogConfig

from .segment_fixtures import (
    SMALL,
    T0,
    Clock,
    batch,
    files,
    fill,
    offsets_in,
    open_log,
    read_all,
    records,
)

# -- names -------------------------------------------------------------------------------------


def test_parse_topic_partition_name(tmp_path: Path) -> None:
    assert parse_topic_partition_name(tmp_path / "my-topic-3") == TopicPartition("my-topic", 3)
    name = log_delete_dir_name(TopicPartition("my-topic", 3))
    assert (
        name.startswith("my-topic-3.")
        and name.endswith("-delete")
        and len(name) == len("my-topic-3.") + 32 + 7
    )
    assert parse_topic_partition_name(tmp_path / name) == TopicPartition("my-topic", 3)
    for bad in ("topic", "topic-", "-1", "topic-x", "t-0.-delete", "t-0-delete"):
        with pytest.raises(KafkaStorageError, match="topic-partition"):
            parse_topic_partition_name(tmp_path / bad)


@pytest.mark.parametrize("partition", [0, 2147483647])
def test_delete_dir_name_of_a_249_character_topic_fits_in_255_bytes(
    tmp_path: Path, partition: int
) -> None:
    topic = "t" * 241 + ".x_y-z.9"
    assert len(topic) == 249
    name = log_delete_dir_name(TopicPartition(topic, partition))
    assert len(name.encode()) == 255 and name.endswith("-delete")
    # the topic part is cut; the partition and the unique id stay whole
    cut = parse_topic_partition_name(tmp_path / name)
    assert cut.partition == partition and topic.startswith(cut.topic)
    (tmp_path / name).mkdir()  # the file system takes it


# -- append and read ----------------------------------------------------------------------------


def test_new_log_has_one_empty_segment(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock)
    assert (log.log_start_offset, log.log_end_offset, log.num_segments, log.size) == (0, 0, 1, 0)
    assert log.name == "t-0" and log.topic_partition == TopicPartition("t", 0)
    assert files(log_dir) == [
        "00000000000000000000.index",
        "00000000000000000000.log",
        "00000000000000000000.timeindex",
    ]


def test_append_assigns_offsets_and_read_returns_stored_bytes(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock)
    raw = records(batch([b"a", b"b", b"c"]))
    info = log.append_as_leader(raw, leader_epoch=3)
    assert (info.first_offset, info.last_offset, info.num_messages) == (0, 2, 3)
    info = log.append_as_leader(records(batch([b"d"])), leader_epoch=3)
    assert (info.first_offset, info.last_offset) == (3, 3)
    assert log.log_end_offset == 4
    data = log.read(0, 1 << 20).records
    assert bytes(data.buffer()) == log_file_name(log_dir, 0).read_bytes()
    assert [(r.offset, r.value) for r in data.records()] == [
        (0, b"a"),
        (1, b"b"),
        (2, b"c"),
        (3, b"d"),
    ]
    assert all(b.partition_leader_epoch == 3 and b.is_valid() for b in data.batches())


def test_read_at_log_end_is_empty_and_out_of_range_raises(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock)
    fill(log, 3)
    end = log.read(6, 1000)
    assert end.records.size_in_bytes == 0 and end.fetch_offset_metadata.message_offset == 6
    with pytest.raises(OffsetOutOfRangeError, match="range 0 to 6"):
        log.read(7, 1000)
    log.maybe_increment_log_start_offset(2)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(1, 1000)
    assert offsets_in(log.read(2, 1000).records)[0] == 2


def test_read_with_max_offset_and_max_length(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock)
    fill(log, 5)
    assert offsets_in(log.read(0, 1 << 20, max_offset=4).records) == [0, 1, 2, 3]
    one = log.read(0, 1, min_one_message=True).records
    assert offsets_in(one) == [0, 1]
    none = log.read(0, 1, min_one_message=False)
    assert none.records.size_in_bytes == 1 and none.first_entry_incomplete


def test_read_spans_to_the_next_segment(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock, SMALL)
    fill(log, 30)
    assert log.num_segments > 2
    assert read_all(log) == list(range(60))
    second = log.log_segments()[1].base_offset
    assert offsets_in(log.read(second, 1 << 20).records)[0] == second


def test_batch_too_large_and_append_over_segment_size(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock, LogConfig(max_message_bytes=200, segment_bytes=300))
    with pytest.raises(MessageTooLargeError):
        log.append_as_leader(records(batch([b"x" * 300])), 0)
    small = batch([b"x" * 50])
    with pytest.raises(RecordListTooLargeError, match="segment.bytes"):
        log.append_as_leader(records(small, small, small, small), 0)
    assert log.log_end_offset == 0


def test_append_as_follower_keeps_offsets(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock)
    info = log.append_as_follower(
        records(batch([b"a", b"b"], base_offset=0), batch([b"c"], base_offset=5))
    )
    assert (info.first_offset, info.last_offset, log.log_end_offset) == (0, 5, 6)
    with pytest.raises(UnexpectedAppendOffsetError):
        log.append_as_follower(records(batch([b"z"], base_offset=5)))
    log.append_as_follower(records(batch([b"d"], base_offset=6)))
    assert read_all(log) == [0, 1, 5, 6]


# -- rolling -------------------------------------------------------------------------------------


def test_roll_by_size(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock, SMALL)
    fill(log, 30)
    segments = log.log_segments()
    assert all(s.size <= 1000 for s in segments)
    assert [s.base_offset for s in segments] == sorted(s.base_offset for s in segments)
    for prev, nxt in zip(segments, segments[1:], strict=False):
        assert prev.read_next_offset() == nxt.base_offset
    # rolled segments are trimmed and flushed (the flush-log task ran at once on the MockScheduler)
    assert offset_index_file_name(log_dir, 0).stat().st_size == 8 * segments[0].offset_index.entries
    assert log.recovery_point == segments[-1].base_offset


def test_roll_logs_kafkas_debug_line(
    log_dir: Path, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    log = open_log(log_dir, clock, SMALL)
    with caplog.at_level(logging.DEBUG, "kafpy.log.Log"):
        fill(log, 30)
    rolling = [m for m in caplog.messages if "Rolling new log segment" in m]
    assert rolling
    first = rolling[0]
    assert "(log_size = " in first and "/1000, offset_index_size = " in first
    assert "}" not in first


def test_roll_by_time_against_first_batch_timestamp(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock, LogConfig(segment_ms=1000, segment_jitter_ms=0))
    fill(log, 1, ts=T0)
    fill(log, 1, ts=T0 + 1000)
    assert log.num_segments == 1
    fill(log, 1, ts=T0 + 1001)
    assert [s.base_offset for s in log.log_segments()] == [0, 4]


def test_roll_when_index_is_full(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock, LogConfig(segment_index_bytes=32, index_interval_bytes=1))
    fill(log, 12)
    assert log.num_segments > 2
    assert read_all(log) == list(range(24))


def test_explicit_roll_and_roll_of_empty_active_segment(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock)
    fill(log, 2)
    seg = log.roll()
    assert seg.base_offset == 4 and log.num_segments == 2
    again = log.roll()  # the active segment is empty at the same offset: replaced
    assert again.base_offset == 4 and log.num_segments == 2
    fill(log, 1)
    assert read_all(log) == list(range(6))


# -- truncation ----------------------------------------------------------------------------------


def test_truncate_to_across_segments(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock, SMALL)
    fill(log, 30)
    log.flush()
    assert log.truncate_to(25)
    assert log.log_end_offset == 24  # offset 25 is in the batch [24, 25]: the batch goes whole
    assert log.recovery_point == 24
    assert read_all(log) == list(range(24))
    assert not log.truncate_to(100)
    info = log.append_as_leader(records(batch([b"new"])), 1)
    assert info.first_offset == 24
    assert read_all(log) == list(range(25))


def test_truncate_fully_and_start_at(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock, SMALL)
    fill(log, 10)
    log.truncate_fully_and_start_at(500)
    assert (log.log_start_offset, log.log_end_offset, log.num_segments) == (500, 500, 1)
    assert fill(log, 1) == [500]
    clock.time.advance(1000)  # file.delete.delay.ms
    assert files(log_dir) == [
        "00000000000000000500.index",
        "00000000000000000500.log",
        "00000000000000000500.timeindex",
    ]


# -- flushing ------------------------------------------------------------------------------------


def test_flush_moves_recovery_point(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock)
    fill(log, 3)
    assert (log.recovery_point, log.unflushed_messages) == (0, 6)
    clock.time.advance(5)
    log.flush(4)
    assert (log.recovery_point, log.last_flush_time) == (4, T0 + 5)
    log.flush(2)  # never backwards
    assert log.recovery_point == 4
    log.flush()
    assert log.recovery_point == 6


def test_flush_messages_flushes_on_append(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock, LogConfig(flush_messages=5))
    fill(log, 2)
    assert log.recovery_point == 0
    fill(log, 1)
    assert log.recovery_point == 6


# -- retention -----------------------------------------------------------------------------------


def test_retention_by_time(log_dir: Path, clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    log = open_log(log_dir, clock, SMALL.with_overrides({"retention.ms": 1000}))
    fill(log, 25, ts=T0)
    fill(log, 25, ts=T0 + 5000)
    clock.time.advance(5500)
    now = clock.time.milliseconds()
    expected = []
    for seg in log.log_segments():
        if now - seg.largest_timestamp <= 1000:
            break
        expected.append(seg.base_offset)
    assert len(expected) >= 2
    with caplog.at_level(logging.INFO, logger="kafpy.log.Log"):
        assert log.delete_old_segments() == len(expected)
    assert log.log_start_offset == log.log_segments()[0].base_offset
    assert all(now - seg.largest_timestamp <= 1000 for seg in log.log_segments())
    messages = [r.getMessage() for r in caplog.records]
    listed = ",".join(map(str, expected))
    assert any(
        m.endswith(
            f"Found deletable segments with base offsets [{listed}] due to retention time 1000ms breach"
        )
        for m in messages
    )
    assert any(m.startswith("[Log partition=t-0, dir=") for m in messages)


def test_retention_by_time_keeps_segments_with_recent_timestamps(
    log_dir: Path, clock: Clock
) -> None:
    log = open_log(log_dir, clock, SMALL.with_overrides({"retention.ms": 1000}))
    fill(log, 10, ts=T0)
    n_old = log.num_segments - 1
    log.roll()
    fill(log, 10, ts=T0 + 5000)
    clock.time.advance(5500)
    assert log.delete_old_segments() == n_old + 1
    assert log.log_start_offset == 20
    assert read_all(log) == list(range(20, 40))
    assert any(name.endswith(".deleted") for name in files(log_dir))
    clock.time.advance(1000)
    assert not any(name.endswith(".deleted") for name in files(log_dir))


def test_retention_by_time_rolls_when_every_segment_goes(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock, SMALL.with_overrides({"retention.ms": 1000}))
    fill(log, 10)
    n = log.num_segments
    clock.time.advance(2000)
    assert log.delete_old_segments() == n
    assert log.num_segments == 1 and log.active_segment.size == 0
    assert (log.log_start_offset, log.log_end_offset) == (20, 20)
    assert log.delete_old_segments() == 0  # an empty active segment is never deleted


def test_retention_by_size(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock, SMALL)
    fill(log, 40)
    sizes = [s.size for s in log.log_segments()]
    retention = sum(sizes) - sizes[0] - sizes[1] // 2
    log.update_config(SMALL.with_overrides({"retention.bytes": retention}))
    assert log.delete_old_segments() == 1  # diff = size0 + size1/2: only the oldest fits in it
    assert log.size == sum(sizes[1:])
    log.update_config(SMALL.with_overrides({"retention.bytes": log.size}))
    assert log.delete_old_segments() == 0


def test_retention_respects_cleanup_policy_but_log_start_offset_always_applies(
    log_dir: Path, clock: Clock
) -> None:
    log = open_log(
        log_dir, clock, SMALL.with_overrides({"retention.ms": 1, "cleanup.policy": "compact"})
    )
    fill(log, 30)
    clock.time.advance(10_000)
    assert log.delete_old_segments() == 0
    third = log.log_segments()[2].base_offset
    log.maybe_increment_log_start_offset(third + 1)
    assert log.delete_old_segments() == 2
    assert log.log_segments()[0].base_offset == third
    with pytest.raises(OffsetOutOfRangeError):
        log.maybe_increment_log_start_offset(10_000)


def test_delete_old_segments_with_a_predicate(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock, SMALL)
    fill(log, 30)
    n = log.num_segments
    assert (
        log.delete_old_segments(lambda seg, nxt: nxt is not None and seg.base_offset < 20, "test")
        >= 1
    )
    assert log.num_segments < n


def test_fetch_offset_by_timestamp(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock, SMALL)
    for i in range(30):
        log.append_as_leader(records(batch([b"a", b"b"], timestamp=T0 + 10 * i)), 0)
    assert log.fetch_offset_by_timestamp(T0 + 95).offset == 20  # type: ignore[union-attr]
    assert log.fetch_offset_by_timestamp(-2).offset == 0  # type: ignore[union-attr]
    assert log.fetch_offset_by_timestamp(-1).offset == 60  # type: ignore[union-attr]
    assert log.fetch_offset_by_timestamp(T0 + 10_000) is None


# -- lifecycle -------------------------------------------------------------------------------------


def test_close_and_reopen_cleanly(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock, SMALL)
    fill(log, 30)
    n, end = log.num_segments, log.log_end_offset
    log.close()
    with pytest.raises(KafkaStorageError, match="closed"):
        log.read(0, 100)
    log = open_log(log_dir, clock, SMALL)
    assert (log.num_segments, log.log_end_offset, log.recovery_point) == (n, end, end)
    fill(log, 1)
    assert read_all(log) == list(range(end + 2))
    assert not log.active_segment.offset_index.is_full()


def test_rename_dir_and_delete(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock, SMALL)
    fill(log, 20)
    name = log_delete_dir_name(log.topic_partition)
    log.rename_dir(name)
    assert log.dir == log_dir.parent / name and not log_dir.exists()
    assert read_all(log) == list(range(40))
    log.delete()
    assert not (log_dir.parent / name).exists()


def test_records_are_memory_records(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock)
    fill(log, 1)
    assert isinstance(log.read(0, 100).records, MemoryRecords)


# -- preallocate -----------------------------------------------------------------------------------

PREALLOCATED = SMALL.with_overrides({"preallocate": "true"})


def disk_sizes(log: Log) -> list[tuple[int, int]]:
    """(file length on disk, data size) of each segment's .log file."""
    return [(s.log.file.stat().st_size, s.size) for s in log.log_segments()]


def test_preallocate_makes_the_active_segment_segment_bytes_long(
    log_dir: Path, clock: Clock
) -> None:
    log = open_log(log_dir, clock, PREALLOCATED)
    assert disk_sizes(log) == [(1000, 0)]  # the first segment of a new log too
    fill(log, 12)  # rolls at 1000 bytes
    sizes = disk_sizes(log)
    assert len(sizes) > 1
    assert all(length == size for length, size in sizes[:-1])  # trimmed on roll
    assert sizes[-1] == (1000, log.active_segment.size)
    assert read_all(log) == list(range(24))
    log.close()
    assert [length for length, _ in disk_sizes(log)] == [size for _, size in sizes]


def test_preallocate_off_keeps_files_at_their_data(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock, SMALL)
    fill(log, 12)
    assert all(length == size for length, size in disk_sizes(log))
    assert read_all(log) == list(range(24))
    log.close()


def test_preallocate_is_dynamic_new_segments_follow_it(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock, SMALL)
    fill(log, 1)
    log.update_config(PREALLOCATED)
    assert disk_sizes(log)[-1][0] == disk_sizes(log)[-1][1]  # the active segment stays
    log.roll()
    assert disk_sizes(log)[-1] == (1000, 0)
    log.update_config(SMALL)
    fill(log, 1)
    log.roll()
    assert all(length == size for length, size in disk_sizes(log))
    log.truncate_fully_and_start_at(100)
    assert disk_sizes(log) == [(0, 0)]
    log.update_config(PREALLOCATED)
    log.truncate_fully_and_start_at(200)
    assert disk_sizes(log) == [(1000, 0)]
    log.close()


# -- message formats v0 and v1 (message.format.version below 0.11.0) ------------------------------


def legacy_config(version: str, **overrides: str) -> LogConfig:
    return LogConfig.from_props(
        None,
        {"message.format.version": version, "segment.bytes": "1000",
         "index.interval.bytes": "100", **overrides},
    )  # fmt: skip


def kafka_python_message_set(magic: int, base: int, values: list[bytes], ts: int) -> bytes:
    builder = LegacyRecordBatchBuilder(magic, 0, 1 << 20)
    for i, v in enumerate(values):
        builder.append(base + i, ts if magic else None, b"k%d" % i, v)
    return bytes(builder.build())


@pytest.mark.parametrize(("version", "magic"), [("0.9.0", 0), ("0.10.2", 1)])
def test_a_log_of_format_v0_v1_stores_what_kafka_python_builds(
    log_dir: Path, clock: Clock, version: str, magic: int
) -> None:
    log = open_log(log_dir, clock, legacy_config(version))
    info = log.append_as_leader(records(batch([b"a", b"b", b"c"])), leader_epoch=3)
    assert (info.first_offset, info.last_offset) == (0, 2)
    info = log.append_as_leader(records(batch([b"d"], timestamp=T0 + 5)), leader_epoch=3)
    assert (info.first_offset, info.last_offset, log.log_end_offset) == (3, 3, 4)
    expected = kafka_python_message_set(magic, 0, [b"a", b"b", b"c"], T0)
    expected += kafka_python_message_set(magic, 3, [b"d"], T0 + 5)
    assert log_file_name(log_dir, 0).read_bytes() == expected
    data = log.read(0, 1 << 20).records
    assert [b.magic for b in data.batches()] == [magic] * 4
    assert [(r.offset, r.value, r.timestamp) for r in data.records()] == [
        (0, b"a", T0 if magic else -1), (1, b"b", T0 if magic else -1),
        (2, b"c", T0 if magic else -1), (3, b"d", T0 + 5 if magic else -1),
    ]  # fmt: skip


def record_offsets(log: Log) -> list[int]:
    """Every record offset, read from the log start as a consumer reads (compressed v0/v1
    wrappers are opened: their header gives only their last offset)."""
    offset, out = log.log_start_offset, []
    while offset < log.log_end_offset:
        got = [r.offset for r in log.read(offset, 1 << 20).records.records() if r.offset >= offset]
        if not got:
            break
        out += got
        offset = got[-1] + 1
    return out


def test_a_mixed_log_reads_truncates_and_searches_by_timestamp(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock, legacy_config("0.10.0"))
    for i in range(10):
        log.append_as_leader(records(batch([b"v1-%d" % i, b"x"], timestamp=T0 + i)), 0)
    log.update_config(legacy_config("0.10.0", **{"compression.type": "gzip"}))
    for i in range(10, 20):
        log.append_as_leader(records(batch([b"gz-%d" % i, b"x"], timestamp=T0 + i)), 0)
    log.update_config(legacy_config("2.8"))
    for i in range(20, 25):
        log.append_as_leader(records(batch([b"v2-%d" % i, b"x"], timestamp=T0 + i)), 0)
    assert log.num_segments > 1
    assert record_offsets(log) == list(range(50))
    # v1 messages have timestamps, so the time index and the search work on them
    assert log.fetch_offset_by_timestamp(T0 + 3).offset == 6  # type: ignore[union-attr]
    assert log.fetch_offset_by_timestamp(T0 + 15).offset == 30  # type: ignore[union-attr]
    assert log.fetch_offset_by_timestamp(T0 + 22).offset == 44  # type: ignore[union-attr]
    assert any(s.time_index.entries > 0 for s in log.log_segments())
    # truncating inside a compressed wrapper [30, 31] takes the wrapper whole
    assert log.truncate_to(31)
    assert log.log_end_offset == 30 and record_offsets(log) == list(range(30))
    info = log.append_as_leader(records(batch([b"after"])), 0)
    assert info.first_offset == 30


def test_a_log_of_format_v0_has_no_timestamps_to_search(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock, legacy_config("0.9.0"))
    log.append_as_leader(records(batch([b"a", b"b"])), 0)
    assert all(s.time_index.entries == 0 for s in log.log_segments())
    assert log.fetch_offset_by_timestamp(-2).offset == 0  # type: ignore[union-attr]
    assert log.fetch_offset_by_timestamp(-1).offset == 2  # type: ignore[union-attr]
    with pytest.raises(
        UnsupportedForMessageFormatError,
        match="^Cannot search offsets based on timestamp because message format version for "
        "partition t-0 is 0.9.0 which is earlier than the minimum required version 0.10.0-IV0$",
    ):
        log.fetch_offset_by_timestamp(T0)


def test_log_append_time_on_a_v1_log(log_dir: Path, clock: Clock) -> None:
    log = open_log(
        log_dir, clock, legacy_config("0.10.0", **{"message.timestamp.type": "LogAppendTime"})
    )
    info = log.append_as_leader(records(batch([b"a", b"b"], timestamp=5)), 0)
    now = clock.time.milliseconds()
    assert (info.log_append_time, info.max_timestamp) == (now, now)
    data = log.read(0, 1 << 20).records
    assert [(b.timestamp_type, b.max_timestamp) for b in data.batches()] == [
        (TimestampType.LOG_APPEND_TIME, now)
    ] * 2


def test_a_follower_appends_the_leaders_v0_v1_messages(log_dir: Path, clock: Clock) -> None:
    log = open_log(log_dir, clock, legacy_config("0.10.0"))
    leader_bytes = build_message_set(1, [(0, T0, b"k", b"a"), (1, T0, b"k", b"b")])
    leader_bytes += build_message_set(1, [(2, T0, b"k", b"c"), (3, T0, b"k", b"d")],
                                      CompressionType.GZIP)  # fmt: skip
    info = log.append_as_follower(MemoryRecords(leader_bytes))
    assert (info.last_offset, log.log_end_offset) == (3, 4)
    assert log_file_name(log_dir, 0).read_bytes() == leader_bytes
    damaged = bytearray(build_message_set(1, [(4, T0, b"k", b"e")]))
    damaged[-1] ^= 1
    with pytest.raises(CorruptRecordError, match="CRC-32"):
        log.append_as_follower(MemoryRecords(damaged))


def test_recovery_of_a_v1_segment_cut_mid_message(log_dir: Path, clock: Clock) -> None:
    # what kill -9 leaves: the last message only partly written, indexes not flushed
    log = open_log(log_dir, clock, legacy_config("0.10.0"))
    for i in range(12):
        log.append_as_leader(records(batch([b"value-%d" % i], timestamp=T0 + i)), 0)
    active = log.active_segment.base_offset
    log.close()
    segment_file = log_file_name(log_dir, active)
    whole = segment_file.read_bytes()
    segment_file.write_bytes(whole + whole[:30])  # a torn message after the last whole one
    for index in log_dir.glob("*index"):
        index.unlink()
    log = open_log(log_dir, clock, legacy_config("0.10.0"), had_clean_shutdown=False)
    assert log.log_end_offset == 12
    assert segment_file.read_bytes() == whole
    assert read_all(log) == list(range(12))
    assert log.fetch_offset_by_timestamp(T0 + 11).offset == 11  # type: ignore[union-attr]
    info = log.append_as_leader(records(batch([b"next"])), 0)
    assert info.first_offset == 12


@pytest.mark.parametrize(
    ("version", "codec"),
    [("0.10.0", "uncompressed"), ("0.10.0", "gzip"), ("0.10.0", "producer"),
     ("0.9.0", "uncompressed")],
)  # fmt: skip
def test_a_conversion_made_ahead_is_moved_to_the_appends_offsets(
    tmp_path: Path, clock: Clock, version: str, codec: str
) -> None:
    # the broker converts large appends off its event loop; the log only moves them
    config = legacy_config(version, **{"compression.type": codec})
    logs = [open_log(tmp_path / name / "t-0", clock, config) for name in ("ahead", "inline")]
    for log in logs:
        log.append_as_leader(records(batch([b"first"])), 0)
    data = batch([b"a", b"b", b"c"], compression=CompressionType.SNAPPY)
    target = {"producer": None, "uncompressed": CompressionType.NONE}.get(
        codec, CompressionType.GZIP
    )
    ahead = to_message_set(data, config.record_version, target, None)
    assert ahead.can_move()
    logs[0].append_as_leader(MemoryRecords(bytearray(data), converted=ahead), 0)
    logs[1].append_as_leader(records(data), 0)
    files = [log_file_name(tmp_path / name / "t-0", 0).read_bytes() for name in ("ahead", "inline")]
    assert files[0] == files[1]
    assert record_offsets(logs[0]) == [0, 1, 2, 3]
    # the log trusts what was made ahead (it is made from the same bytes): only moved
    other = to_message_set(batch([b"x", b"y"]), config.record_version, target, None)
    logs[0].append_as_leader(MemoryRecords(bytearray(batch([b"p", b"q"])), converted=other), 0)
    values = [r.value for r in logs[0].read(4, 1 << 20).records.records() if r.offset >= 4]
    assert values == [b"x", b"y"]
    # one made for another format is not used
    wrong = to_message_set(data, 1 - config.record_version, target, None)
    logs[0].append_as_leader(MemoryRecords(bytearray(data), converted=wrong), 0)
    assert {b.magic for b in logs[0].read(0, 1 << 20).records.batches()} == {config.record_version}
    assert record_offsets(logs[0]) == list(range(9))


def test_v0_wrappers_and_log_append_time_cannot_be_moved() -> None:
    data = batch([b"a", b"b"])
    assert not to_message_set(data, 0, CompressionType.GZIP, None).can_move()
    assert to_message_set(data, 0, CompressionType.NONE, None).can_move()
    assert not to_message_set(data, 1, CompressionType.NONE, 5).can_move()
    moved = to_message_set(data, 1, CompressionType.GZIP, None).moved_to(40)
    assert [r.offset for r in MemoryRecords(moved.data).records()] == [40, 41]
    assert (moved.first_offset, moved.offset_of_max_timestamp) == (40, 41)
