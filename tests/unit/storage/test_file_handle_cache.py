"""FileHandleCache: segments past the cache's capacity give up their descriptors and open
them again on their next read or append; the process's descriptors stay bounded."""

from __future__ import annotations

import os
import resource
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafpy.common.file_descriptors import TooManyOpenFilesError, open_file_count
from kafpy.storage.file_handle_cache import (
    FILE_HANDLE_CACHE,
    MIN_CAPACITY,
    FileHandleCache,
    capacity_for,
)
from kafpy.storage.file_records import FileRecords
from kafpy.storage.log import Log
from kafpy.storage.log_segment import LogSegment
from tests.fixtures.file_descriptors import open_paths

from .segment_fixtures import SMALL, Clock, batch, fill, open_log, read_all, records


@pytest.fixture
def small_cache() -> Iterator[FileHandleCache]:
    """The process's cache, emptied of earlier tests' files and shrunk to its minimum."""
    saved = FILE_HANDLE_CACHE.capacity
    FILE_HANDLE_CACHE.evict_all()
    FILE_HANDLE_CACHE.capacity = MIN_CAPACITY
    try:
        yield FILE_HANDLE_CACHE
    finally:
        FILE_HANDLE_CACHE.capacity = saved


def close_all(logs: list[Log]) -> None:
    for log in logs:
        log.close()


def test_capacity_is_half_the_limit_and_never_below_the_minimum() -> None:
    assert capacity_for(20_000) == 10_000
    assert capacity_for(1024) == 512
    assert capacity_for(10) == MIN_CAPACITY


def test_partitions_past_the_capacity_hold_no_descriptor_and_are_read_and_appended_to(
    tmp_path: Path, clock: Clock, small_cache: FileHandleCache
) -> None:
    evictions = small_cache.evictions
    logs = [open_log(tmp_path / f"t-{i}", clock) for i in range(5 * MIN_CAPACITY)]
    try:
        for log in logs:
            fill(log, 3)
        assert len(open_paths(tmp_path)) <= MIN_CAPACITY
        assert small_cache.evictions > evictions
        assert not logs[0].active_segment.log.is_open  # used longest ago: closed
        for log in logs:  # each read opens an evicted file again, and closes another
            assert read_all(log) == list(range(6))
        for log in logs:
            assert log.append_as_leader(records(batch([b"more"])), 0).first_offset == 6
        for log in logs:
            assert read_all(log, 5) == [5, 6]
        assert len(open_paths(tmp_path)) <= MIN_CAPACITY
    finally:
        close_all(logs)
    assert open_paths(tmp_path) == []  # closing a log closes its open file, if any


def test_a_log_with_more_segments_than_the_capacity_serves_every_offset(
    log_dir: Path, clock: Clock, small_cache: FileHandleCache
) -> None:
    log = open_log(log_dir, clock, SMALL)
    try:
        fill(log, 300)
        assert log.num_segments > 2 * MIN_CAPACITY
        assert len(open_paths(log_dir)) <= MIN_CAPACITY
        assert read_all(log) == list(range(600))
        # lookups through the offset index of evicted segments (their copies given up)
        for offset in (0, 123, 301, 598):
            got = log.read(offset, 1).records
            assert next(got.batches_allow_partial()).base_offset <= offset
        assert len(open_paths(log_dir)) <= MIN_CAPACITY
    finally:
        log.close()
    # a clean reopen reads the trimmed indexes back: nothing was lost on eviction
    log = open_log(log_dir, clock, SMALL)
    try:
        assert read_all(log) == list(range(600))
    finally:
        log.close()


def test_an_evicted_segment_gives_up_its_sealed_index_copies(
    log_dir: Path, clock: Clock, small_cache: FileHandleCache
) -> None:
    log = open_log(log_dir, clock, SMALL)
    try:
        fill(log, 30)
        first = log.log_segments()[0]
        assert read_all(log) == list(range(60))  # searches read every index into memory
        small_cache.evict_all()
        assert not first.log.is_open
        assert first.offset_index._buf is None and first.time_index._buf is None
        # the active segment's index takes more entries: its copy stays
        assert log.active_segment.offset_index._buf is not None
        assert first.offset_index.lookup(5).offset <= 5  # read back on the next search
    finally:
        log.close()


def test_a_segment_loaded_from_disk_opens_its_file_on_first_use(
    log_dir: Path, clock: Clock
) -> None:
    log = open_log(log_dir, clock)
    fill(log, 2)
    log.close()
    segment = LogSegment.open(log_dir, 0, SMALL, clock.time, file_already_exists=True)
    try:
        assert not segment.log.is_open
        assert segment.read_next_offset() == 4
        assert segment.log.is_open
    finally:
        segment.close()


def test_a_pinned_file_is_not_closed_under_its_user(tmp_path: Path) -> None:
    cache = FileHandleCache(MIN_CAPACITY)
    files = [FileRecords.open(tmp_path / f"{i}.log", cache=cache) for i in range(3 * MIN_CAPACITY)]
    try:
        for i, f in enumerate(files):
            f.append(b"%03d" % i)
        first = files[0]
        fd = first.acquire()
        try:
            cache.evict_all()
            assert first.is_open
            assert os.pread(fd, 3, 0) == b"000"
        finally:
            first.release()
        cache.evict_all()
        assert not first.is_open and cache.open_files == 0
        assert first.read(0, 3) == b"000"
        assert first.is_open
    finally:
        for f in files:
            f.close()


def test_files_evicted_by_another_thread_are_read_correctly(tmp_path: Path) -> None:
    """One thread reads one file while another keeps opening others: a descriptor closed
    and reused under the reader would give it another file's bytes or EBADF."""
    cache = FileHandleCache(MIN_CAPACITY)
    files = [FileRecords.open(tmp_path / f"{i}.log", cache=cache) for i in range(4 * MIN_CAPACITY)]
    for i, f in enumerate(files):
        f.append(b"%04d" % i * 256)
    errors: list[BaseException] = []

    def churn() -> None:
        try:
            for n in range(20_000):
                i = 1 + n % (len(files) - 1)
                assert files[i].read(4 * (n % 256), 4) == b"%04d" % i
        except BaseException as e:
            errors.append(e)

    other = threading.Thread(target=churn)
    other.start()
    try:
        while other.is_alive():
            assert files[0].read(0, 1024) == b"0000" * 256
            assert [h for _, h in files[0].batch_headers()] == []  # not a batch: no header
    finally:
        other.join()
        for f in files:
            f.close()
    assert not errors, errors
    assert cache.evictions > 0


def test_out_of_descriptors_the_cache_gives_up_files_then_names_the_limit(
    tmp_path: Path,
) -> None:
    cache = FileHandleCache(10_000)  # far more than the limit below allows
    files: list[FileRecords] = []
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # the limit bounds descriptor numbers: the free numbers below the highest open one
    # are taken first, so that 24 are left for the cache
    highest = max(int(fd) for fd in os.listdir("/proc/self/fd"))
    fillers = []
    while (fd := os.open(os.devnull, os.O_RDONLY)) < highest:
        fillers.append(fd)
    os.close(fd)
    limit = highest + 1 + 24
    room = limit - open_file_count()
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    try:
        for i in range(60):  # EMFILE on the way: the cache closes some of its files, retries
            files.append(FileRecords.open(tmp_path / f"{i}.log", cache=cache))
            files[-1].append(b"%02d" % i)
        assert cache.open_files <= room
        assert [f.read(0, 2) for f in files] == [b"%02d" % i for i in range(60)]
        pinned = [f for f in files if f.is_open]
        for f in pinned:  # nothing left to close: the next open has no descriptor
            f.acquire()
        held = []
        try:
            while True:
                held.append(os.open(os.devnull, os.O_RDONLY))
        except OSError:
            pass
        try:
            with pytest.raises(TooManyOpenFilesError, match=f"RLIMIT_NOFILE limit of {limit}"):
                next(f for f in files if not f.is_open).read(0, 2)
        finally:
            for fd in held:
                os.close(fd)
            for f in pinned:
                f.release()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        for f in files:
            f.close()
        for fd in fillers:
            os.close(fd)
