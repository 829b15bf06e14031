"""Cleaner: one compaction round over a real Log on disk (MockTime, no threads)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kafpy.records import CompressionType, MemoryRecords, RecordBatch, build_batch
from kafpy.storage.cleaner.cleaner import Cleaner, CleanerStats, create_new_cleaned_segment
from kafpy.storage.cleaner.log_cleaner_manager import LogCleaningAbortedError
from kafpy.storage.log import Log
from kafpy.storage.log_segment import SWAP_FILE_SUFFIX

from .fixtures import (
    T0,
    Clock,
    all_records,
    append,
    batches,
    compacted_config,
    key_map,
    make_cleaner,
    open_log,
    read_through_log,
    tmp_log,
    to_clean,
    write_each,
)


@pytest.fixture
def clock() -> Clock:
    return Clock()


def updates(keys: int, rounds: int, size: int = 20) -> list[tuple[bytes, bytes]]:
    return [
        (b"key-%d" % k, (b"r%d-" % r).ljust(size, b"x")) for r in range(rounds) for k in range(keys)
    ]


def test_keeps_only_the_latest_value_of_each_key_at_its_offset(
    tmp_path: Path, clock: Clock
) -> None:
    log = tmp_log(tmp_path, clock)
    pairs = updates(10, 8)
    offsets = write_each(log, pairs, per_batch=2)
    assert log.num_segments > 4
    before = key_map(all_records(log))
    active_base = log.active_segment.base_offset
    end, stats = make_cleaner().clean(to_clean(log))
    assert end == active_base
    after = all_records(log)
    got = [r.offset for r in after]
    assert got == sorted(got)
    assert key_map(after) == before
    assert key_map(read_through_log(log)) == before
    # the map covers the dirty section up to the active segment
    latest = {k: o for (k, _), o in zip(pairs, offsets, strict=True) if o < active_base}
    for r in after:
        if r.offset < active_base:
            assert latest[r.key] == r.offset  # no superseded value survives in the cleaned part
    cleaned_keys = [r.key for r in after if r.offset < active_base]
    assert len(cleaned_keys) == len(set(cleaned_keys))
    assert stats.messages_read > stats.messages_written
    assert log.size < sum(len(k) + len(v) for k, v in pairs) * 2


def test_active_segment_and_records_past_the_map_are_untouched(
    tmp_path: Path, clock: Clock
) -> None:
    log = tmp_log(tmp_path, clock)
    write_each(log, updates(5, 6), per_batch=1)
    active = log.active_segment
    raw_before = active.log.read(0, active.size)
    make_cleaner().clean(to_clean(log))
    assert log.active_segment is active
    assert active.log.read(0, active.size) == raw_before


def test_tombstones_kept_before_the_horizon_and_dropped_after(tmp_path: Path, clock: Clock) -> None:
    log = tmp_log(tmp_path, clock, delete_retention_ms=1000)
    write_each(log, updates(4, 3))
    tombstone = append(log, [(b"key-1", None)])
    write_each(log, updates(6, 6))  # push the tombstone out of the active segment
    assert tombstone < log.active_segment.base_offset
    cleaner = make_cleaner()
    # First round: no clean section yet, so the horizon is 0 - delete.retention.ms: kept.
    end, _ = cleaner.clean(to_clean(log))
    kept = [r for r in all_records(log) if r.key == b"key-1" and r.offset < end]
    # key-1 was rewritten after the tombstone by updates(6, 6), so check a key only deleted
    tomb2 = append(log, [(b"gone", b"v")])
    tomb3 = append(log, [(b"gone", None)])
    write_each(log, updates(6, 6))
    assert kept and kept[-1].value is not None
    log.roll()
    end2, _ = cleaner.do_clean(to_clean(log, first_dirty=end), delete_horizon_ms=0)
    gone = [r for r in all_records(log) if r.key == b"gone"]
    assert [(r.offset, r.value) for r in gone] == [(tomb3, None)]  # value dropped, tombstone kept
    # Once the horizon passes the segment's last modification, the tombstone goes too.
    for s in log.log_segments():
        s.last_modified = T0 // 1000 * 1000
    cleaner.do_clean(to_clean(log, first_dirty=end2), delete_horizon_ms=T0 + 10_000)
    assert [r for r in all_records(log) if r.key == b"gone"] == []
    assert tomb2 < tomb3


def test_keyless_records_are_dropped_and_counted(tmp_path: Path, clock: Clock) -> None:
    log = tmp_log(tmp_path, clock)
    # Producers cannot write keyless records to a compacted topic; records from before
    # the topic became compacted (or replicated ones) can still be there.
    data = build_batch([(None, b"no key"), (b"a", b"1"), (None, b"no key either")], timestamp=T0)
    log.append_as_leader(MemoryRecords(bytearray(data)), 0, is_from_client=False)
    write_each(log, updates(8, 6))
    _, stats = make_cleaner().clean(to_clean(log))
    cleaned = [r for r in all_records(log) if r.offset < log.active_segment.base_offset]
    assert all(r.key is not None for r in cleaned)
    assert stats.invalid_messages == 2
    assert [r.value for r in cleaned if r.key == b"a"] == [b"1"]


@pytest.mark.parametrize(
    "codec",
    [CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD],
)
def test_compressed_batches_are_rebuilt_with_their_own_codec(
    tmp_path: Path, clock: Clock, codec: CompressionType
) -> None:
    log = tmp_log(tmp_path, clock)
    pairs = updates(6, 10)
    write_each(log, pairs, per_batch=4, compression=codec)
    before = key_map(all_records(log))
    make_cleaner().clean(to_clean(log))
    cleaned = [b for b in batches(log) if b.base_offset < log.active_segment.base_offset]
    assert cleaned and all(b.compression_type is codec for b in cleaned)
    assert all(b.is_valid() for b in batches(log))
    assert key_map(all_records(log)) == before


def test_batch_boundaries_offsets_and_producer_fields_survive(tmp_path: Path, clock: Clock) -> None:
    log = tmp_log(tmp_path, clock, segment_bytes=4096)
    first = append(
        log,
        [(b"a", b"1"), (b"b", b"1"), (b"c", b"1")],
        producer_id=7,
        producer_epoch=2,
        base_sequence=0,
    )
    append(log, [(b"a", b"2"), (b"x", b"1")], producer_id=7, producer_epoch=2, base_sequence=3)
    untouched = append(log, [(b"d", b"1"), (b"e", b"1")])
    log.roll()
    append(log, [(b"z", b"1")])
    raw_untouched = [b for b in batches(log) if b.base_offset == untouched][0].buffer().tobytes()
    make_cleaner().clean(to_clean(log))
    out = {b.base_offset: b for b in batches(log)}
    b0 = out[first]
    assert (b0.producer_id, b0.producer_epoch, b0.base_sequence) == (7, 2, 0)
    assert b0.last_offset == first + 2 and b0.record_count == 2  # "a" dropped, last offset kept
    assert b0.last_sequence == 2
    assert [r.offset for r in b0.records()] == [first + 1, first + 2]
    assert b0.is_valid()
    # a batch with nothing to drop is copied byte for byte
    assert out[untouched].buffer().tobytes() == raw_untouched


def test_last_batch_of_a_producer_is_kept_empty(tmp_path: Path, clock: Clock) -> None:
    log = tmp_log(tmp_path, clock, segment_bytes=4096)
    first = append(log, [(b"a", b"1")], producer_id=9, producer_epoch=0, base_sequence=0)
    append(log, [(b"a", b"2")])  # a newer value from another producer
    log.roll()
    append(log, [(b"z", b"1")])
    make_cleaner().clean(to_clean(log))
    b0 = [b for b in batches(log) if b.base_offset == first][0]
    assert (
        b0.record_count == 0 and b0.producer_id == 9 and b0.last_offset == first and b0.is_valid()
    )
    # a reload rebuilds the producer's state from the empty batch
    log.close()
    reopened = open_log(log.dir, clock, compacted_config(segment_bytes=4096))
    assert reopened.producer_state_manager.last_entry(9) is not None


def test_control_batches_are_kept_as_they_are(tmp_path: Path, clock: Clock) -> None:
    from kafpy.records.control_record import (  # noqa: PLC0415
        ControlRecordType,
        EndTransactionMarker,
        build_end_transaction_marker,
    )

    log = tmp_log(tmp_path, clock, segment_bytes=4096)
    append(log, [(b"a", b"1")])
    ctrl = build_end_transaction_marker(
        EndTransactionMarker(ControlRecordType.COMMIT, 0),
        producer_id=5,
        producer_epoch=0,
        timestamp=T0,
    )
    log.append_as_leader(MemoryRecords(bytearray(ctrl)), 0, is_from_client=False)
    append(log, [(b"a", b"2")])
    log.roll()
    append(log, [(b"z", b"1")])
    make_cleaner().clean(to_clean(log))
    assert [b.is_control for b in batches(log)].count(True) == 1


def test_a_full_map_bounds_the_round_and_the_next_round_continues(
    tmp_path: Path, clock: Clock
) -> None:
    log = tmp_log(tmp_path, clock)
    write_each(log, [(b"key-%d" % i, b"v" * 20) for i in range(60)])  # 60 distinct keys
    write_each(log, updates(60, 1))
    before = key_map(all_records(log))
    cleaner = make_cleaner(memory=24 * 20, load_factor=1.0)  # 20 keys per round
    end, _ = cleaner.clean(to_clean(log))
    assert end == 20
    while end < log.active_segment.base_offset:
        new_end, _ = cleaner.clean(to_clean(log, first_dirty=end))
        assert new_end > end
        end = new_end
    assert key_map(all_records(log)) == before


def test_a_map_that_cannot_hold_one_batch_is_an_error(tmp_path: Path, clock: Clock) -> None:
    log = tmp_log(tmp_path, clock, segment_bytes=4096)
    append(log, [(b"k%d" % i, b"v") for i in range(10)])
    log.roll()
    with pytest.raises(ValueError, match="dedupe.buffer.size"):
        make_cleaner(memory=24 * 4, load_factor=1.0).clean(to_clean(log))


def test_grouping_respects_segment_bytes_and_index_size(tmp_path: Path, clock: Clock) -> None:
    log = tmp_log(tmp_path, clock, segment_bytes=1024)
    write_each(log, updates(30, 4, size=40))
    segs = log.log_segments()[:-1]
    sizes = [s.size for s in segs]
    groups = Cleaner.group_segments_by_size(segs, 1024, 1 << 20, log.active_segment.base_offset)
    assert [s for g in groups for s in g] == segs
    for g in groups:
        assert len(g) == 1 or sum(s.size for s in g) <= 1024
    assert len(groups) == len(segs)  # every segment is nearly full: none can share
    groups = Cleaner.group_segments_by_size(
        segs, 10 * 1024, 1 << 20, log.active_segment.base_offset
    )
    assert all(sum(s.size for s in g) <= 10 * 1024 for g in groups) and len(groups) < len(segs)
    assert sum(sizes) > 10 * 1024 or len(groups) == 1
    idx = segs[0].offset_index.size_in_bytes
    assert idx > 0
    by_index = Cleaner.group_segments_by_size(segs, 1 << 30, idx, log.active_segment.base_offset)
    assert all(len(g) == 1 for g in by_index if g[0].offset_index.size_in_bytes == idx)


def test_grouping_keeps_offsets_within_an_int32_of_the_group_base() -> None:
    def seg(base: int) -> Any:
        index = SimpleNamespace(size_in_bytes=8)
        return SimpleNamespace(base_offset=base, size=10, offset_index=index, time_index=index)

    segs = [seg(0), seg(100), seg(2**31 - 2), seg(2**31 + 50)]
    groups = Cleaner.group_segments_by_size(segs, 1 << 30, 1 << 20, 2**31 + 60)  # type: ignore[arg-type]
    # segment 100 ends at 2**31 - 3 (fits with base 0); the next one would end past int32
    assert [[s.base_offset for s in g] for g in groups] == [[0, 100], [2**31 - 2, 2**31 + 50]]


def test_an_aborted_round_leaves_the_log_as_it_was(tmp_path: Path, clock: Clock) -> None:
    log = tmp_log(tmp_path, clock)
    write_each(log, updates(5, 8))
    names_before = sorted(p.name for p in log.dir.iterdir())
    calls = 0

    def check_done(tp: object) -> None:
        nonlocal calls
        calls += 1
        if calls > 3:
            raise LogCleaningAbortedError("aborted")

    with pytest.raises(LogCleaningAbortedError):
        make_cleaner(check_done=check_done).clean(to_clean(log))
    assert sorted(p.name for p in log.dir.iterdir()) == names_before  # no .cleaned left


def test_crash_after_the_swap_rename_is_finished_at_load(tmp_path: Path, clock: Clock) -> None:
    config = compacted_config()
    log = open_log(tmp_path / "t-0", clock, config)
    write_each(log, updates(5, 8))
    expected = key_map(all_records(log))
    cleaner = make_cleaner()
    # do by hand what clean_segments does, then "crash" right after the .swap rename
    group = cleaner.group_segments_by_size(log.log_segments()[:-1], 1 << 20, 1 << 20, 10**9)[0]
    cleaner.build_offset_map(
        log, 0, log.active_segment.base_offset, cleaner.offset_map, CleanerStats()
    )
    cleaned = create_new_cleaned_segment(log, group[0].base_offset)
    for s in group:
        cleaner.clean_into(
            log.topic_partition, s, cleaned, cleaner.offset_map, True, {}, 128, CleanerStats()
        )
    cleaned.on_become_inactive_segment()
    group_end = group[-1].read_next_offset()
    cleaned.change_file_suffixes(".cleaned", SWAP_FILE_SUFFIX)
    cleaned.close()
    log.close_handlers()
    assert any(p.name.endswith(SWAP_FILE_SUFFIX) for p in log.dir.iterdir())
    reloaded = open_log(log.dir, clock, config, had_clean_shutdown=False)
    assert not any(p.name.endswith((SWAP_FILE_SUFFIX, ".cleaned")) for p in reloaded.dir.iterdir())
    assert key_map(all_records(reloaded)) == expected
    cleaned_part = [r.key for r in all_records(reloaded) if r.offset < group_end]
    assert len(cleaned_part) == len(set(cleaned_part))


def test_crash_with_only_cleaned_files_discards_them(tmp_path: Path, clock: Clock) -> None:
    config = compacted_config()
    log = open_log(tmp_path / "t-0", clock, config)
    write_each(log, updates(5, 8))
    expected = [(r.offset, r.key, r.value) for r in all_records(log)]
    cleaned = create_new_cleaned_segment(log, 0)
    cleaned.log.append(build_batch([(b"junk", b"junk")]))
    cleaned.close()
    log.close_handlers()
    reloaded = open_log(log.dir, clock, config, had_clean_shutdown=False)
    assert not any(p.name.endswith(".cleaned") for p in reloaded.dir.iterdir())
    assert [(r.offset, r.key, r.value) for r in all_records(reloaded)] == expected


def test_cleaned_segment_is_indexed_for_reads_from_any_offset(tmp_path: Path, clock: Clock) -> None:
    log = tmp_log(tmp_path, clock, segment_bytes=64 * 1024, index_interval_bytes=256)
    write_each(log, updates(300, 3))
    log.roll()
    append(log, [(b"z", b"1")])
    make_cleaner().clean(to_clean(log))
    cleaned = log.log_segments()[0]
    assert cleaned.offset_index.entries > 3
    for r in all_records(log)[::37]:
        got = log.read(r.offset, 1).records
        first = next(iter(got.batches_allow_partial()))
        assert first.base_offset <= r.offset <= first.last_offset


def test_cleaned_segment_keeps_the_last_modified_time(tmp_path: Path, clock: Clock) -> None:
    log = tmp_log(tmp_path, clock)
    write_each(log, updates(5, 8))
    stamp = (T0 - 50_000) // 1000 * 1000
    for s in log.log_segments()[:-1]:
        s.last_modified = stamp
    make_cleaner().clean(to_clean(log))
    assert all(s.last_modified == stamp for s in log.log_segments()[:-1])
    assert os.path.exists(log.log_segments()[0].log.file)


def _unused(log: Log) -> RecordBatch:  # keeps the imports honest for type checkers
    raise NotImplementedError


# -- transactions ------------------------------------------------------------------------------


def end_txn(log: Log, pid: int, commit: bool) -> int:
    from kafpy.records.control_record import (  # noqa: PLC0415
        ControlRecordType,
        EndTransactionMarker,
        build_end_transaction_marker,
    )

    marker = EndTransactionMarker(
        ControlRecordType.COMMIT if commit else ControlRecordType.ABORT, 0
    )
    ctrl = build_end_transaction_marker(marker, producer_id=pid, producer_epoch=0, timestamp=T0)
    return log.append_as_leader(
        MemoryRecords(bytearray(ctrl)), 0, is_from_client=False
    ).first_offset


def markers(log: Log) -> list[tuple[int, int]]:
    """(producer id, offset) of every control batch left."""
    return [(b.producer_id, b.base_offset) for b in batches(log) if b.is_control]


def aborted_index(log: Log) -> list[Any]:
    return [t for s in log.log_segments() for t in s.txn_index.all_aborted_txns()]


def test_aborted_data_goes_then_its_marker_once_past_the_horizon(
    tmp_path: Path, clock: Clock
) -> None:
    log = tmp_log(tmp_path, clock, segment_bytes=4096, delete_retention_ms=1000)
    committed, aborted = 1, 2
    append(log, [(b"k1", b"c1")], producer_id=committed, producer_epoch=0, base_sequence=0,
           is_transactional=True)  # fmt: skip
    commit_at = end_txn(log, committed, True)
    first = append(log, [(b"k1", b"a1"), (b"k2", b"a2")], producer_id=aborted, producer_epoch=0,
                   base_sequence=0, is_transactional=True)  # fmt: skip
    abort_at = end_txn(log, aborted, False)
    # the aborted producer's last batch is a plain idempotent one (that batch stays anyway)
    append(log, [(b"k3", b"p")], producer_id=aborted, producer_epoch=0, base_sequence=2)
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in aborted_index(log)] == [
        (aborted, first, abort_at)
    ]
    log.roll()
    append(log, [(b"z", b"1")])
    cleaner = make_cleaner()
    # within the delete horizon: the aborted records go (a1 must not shadow the committed
    # c1 of k1), both markers stay, the abort's .txnindex entry is kept in the cleaned segment
    end, _ = cleaner.clean(to_clean(log))
    assert key_map(all_records(log)) == {b"k1": b"c1", b"k3": b"p", b"z": b"1"}
    assert markers(log) == [(committed, commit_at), (aborted, abort_at)]
    assert [(t.producer_id, t.first_offset) for t in aborted_index(log)] == [(aborted, first)]
    # past the horizon, with no data of the aborted transaction left: its marker goes with
    # its entry; the commit marker stays while its transaction's record does
    for s in log.log_segments():
        s.last_modified = T0 // 1000 * 1000
    cleaner.do_clean(to_clean(log), delete_horizon_ms=T0 + 10_000)
    assert markers(log) == [(committed, commit_at)]
    assert aborted_index(log) == []
    assert key_map(all_records(log)) == {b"k1": b"c1", b"k3": b"p", b"z": b"1"}
    # the log reads back through its indexes (the commit marker's record included)
    read = key_map(read_through_log(log))
    assert read.pop(b"\x00\x00\x00\x01") is not None  # COMMIT's control key
    assert read == {b"k1": b"c1", b"k3": b"p", b"z": b"1"}
    assert end <= log.active_segment.base_offset


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.GZIP])
def test_messages_of_formats_v0_and_v1_are_rewritten_in_their_own_format(
    tmp_path: Path, clock: Clock, codec: CompressionType
) -> None:
    # a log written at 0.10.0 (v1), then 0.9.0 (v0), then 2.8 (v2): each part keeps its format
    log = tmp_log(tmp_path, clock, message_format_version="0.10.0")
    pairs = updates(6, 10)
    third = len(pairs) // 3
    write_each(log, pairs[:third], per_batch=4, compression=codec)
    log.update_config(compacted_config(message_format_version="0.9.0"))
    write_each(log, pairs[third : 2 * third], per_batch=4, compression=codec)
    log.update_config(compacted_config())
    write_each(log, pairs[2 * third :], per_batch=4, compression=codec)
    magics_before = [b.magic for b in batches(log)]
    assert {0, 1, 2} <= set(magics_before)
    before = key_map(all_records(log))
    ts_before = {r.offset: r.timestamp for r in all_records(log)}
    end, stats = make_cleaner().clean(to_clean(log))
    assert stats.messages_read > stats.messages_written
    after = batches(log)
    assert all(b.is_entry_valid() for b in after)
    assert all(b.compression_type is codec for b in after)
    # a magic never changes: the cleaned log is the old one with records left out
    magics = [b.magic for b in after]
    assert magics == sorted(magics, key=[1, 0, 2].index)
    assert key_map(all_records(log)) == before
    assert key_map(read_through_log(log)) == before
    assert all(ts_before[r.offset] == r.timestamp for r in all_records(log))
    offsets = [r.offset for r in all_records(log)]
    assert offsets == sorted(offsets)
    cleaned_keys = [r.key for r in all_records(log) if r.offset < end]
    assert len(cleaned_keys) == len(set(cleaned_keys))
