"""Property: for random keyed writes and tombstones over several segments, cleaning keeps
every key's latest value at its offset, drops superseded values, keeps offsets increasing,
and leaves the same final key -> value map."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafpy.records import CompressionType

from .fixtures import (
    Clock,
    all_records,
    append,
    compacted_config,
    key_map,
    make_cleaner,
    open_log,
    read_through_log,
    to_clean,
)

keys = st.sampled_from([b"k%d" % i for i in range(12)])
values = st.one_of(st.none(), st.binary(min_size=1, max_size=40))
write = st.tuples(keys, values)
batches = st.lists(st.lists(write, min_size=1, max_size=6), min_size=1, max_size=60)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    batches=batches,
    codec=st.sampled_from([CompressionType.NONE, CompressionType.GZIP, CompressionType.LZ4]),
    rounds=st.integers(1, 3),
    map_entries=st.sampled_from([6, 40, 1000]),
    drop_tombstones=st.booleans(),
)
def test_cleaning_preserves_the_latest_value_of_every_key(
    batches: list[list[tuple[bytes, bytes | None]]],
    codec: CompressionType,
    rounds: int,
    map_entries: int,
    drop_tombstones: bool,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        clock = Clock()
        log = open_log(Path(tmp) / "t-0", clock, compacted_config(segment_bytes=512))
        written: list[tuple[int, bytes, bytes | None]] = []
        for b in batches:
            first = append(log, b, compression=codec)
            written.extend((first + i, k, v) for i, (k, v) in enumerate(b))
        before = key_map(all_records(log))
        cleaner = make_cleaner(memory=24 * map_entries, load_factor=1.0)
        first_dirty = 0
        horizon = 2**62 if drop_tombstones else -(2**62)
        for _ in range(rounds):
            if first_dirty >= log.active_segment.base_offset:
                break
            first_dirty, _ = cleaner.do_clean(to_clean(log, first_dirty=first_dirty), horizon)
        after = all_records(log)
        offsets = [r.offset for r in after]
        assert offsets == sorted(set(offsets))
        # the same final map, read from disk and through Log.read
        assert key_map(after) == before
        assert key_map(read_through_log(log)) == before
        # every surviving record is one that was written, at its own offset
        by_offset = {o: (k, v) for o, k, v in written}
        assert all(by_offset[r.offset] == (r.key, r.value) for r in after)
        # the latest write of every key is still there at its offset (unless a dropped tombstone)
        latest: dict[bytes, int] = {}
        for o, k, _ in written:
            latest[k] = o
        survivors = set(offsets)
        for o in latest.values():
            if by_offset[o][1] is not None or not drop_tombstones or o >= first_dirty:
                assert o in survivors
        # in the cleaned section no value of a key survives below the key's latest offset
        # (within the section the map covered)
        for r in after:
            if r.offset < first_dirty:
                newer = [o for o, k, _ in written if k == r.key and r.offset < o < first_dirty]
                assert not newer, (r, newer)
