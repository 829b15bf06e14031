"""record_conversion: fetches of old clients, and large appends to logs of format v0/v1
converted ahead, off the event loop."""

from __future__ import annotations

import asyncio

from kafpy.common.topic_partition import TopicPartition
from kafpy.records import CompressionType, MemoryRecords, build_batch
from kafpy.records.legacy_record import build_message_set
from kafpy.server.record_conversion import convert_for_old_message_formats, down_convert_fetch
from kafpy.storage.log_config import LogConfig

T0 = 1_700_000_000_000
BIG = [(b"k%d" % i, b"v" * 100) for i in range(1000)]  # well over the off-loop threshold


def config(version: str, **props: str) -> LogConfig:
    return LogConfig.from_props(None, {"message.format.version": version, **props})


def run(logs: dict[TopicPartition, LogConfig], entries: dict) -> dict:  # type: ignore[type-arg]
    asyncio.run(convert_for_old_message_formats(logs, entries))
    return entries


def test_large_appends_to_v0_v1_logs_are_converted_ahead() -> None:
    v1, v0, lat, v0_gzip = (TopicPartition(t, 0) for t in ("v1", "v0", "lat", "v0-gzip"))
    logs = {
        v1: config("0.10.0", **{"compression.type": "gzip"}),
        v0: config("0.9.0"),
        lat: config("0.10.0", **{"message.timestamp.type": "LogAppendTime"}),
        v0_gzip: config("0.9.0", **{"compression.type": "gzip"}),
    }
    data = build_batch(BIG, timestamp=T0)
    small = TopicPartition("small", 0)
    few = build_batch([(b"k", b"v")], timestamp=T0)
    entries = run({**logs, small: config("0.10.0")}, {**dict.fromkeys(logs, data), small: few})
    done = {tp: e.converted for tp, e in entries.items() if isinstance(e, MemoryRecords)}
    assert set(done) == {v1, v0}  # not LogAppendTime, not v0 wrappers
    assert done[v1] is not None and done[v1].magic == 1
    assert done[v1].compression is CompressionType.GZIP
    assert done[v0] is not None and done[v0].magic == 0
    assert entries[small] is few  # converted by the append: cheap enough on the loop


def test_batches_that_do_not_follow_each_other_are_left_to_the_append() -> None:
    tp = TopicPartition("t", 0)
    two = build_batch(BIG, timestamp=T0) + build_batch(BIG, timestamp=T0)  # both at base 0
    entries = run({tp: config("0.10.0")}, {tp: two})
    assert entries[tp] is two


def test_idempotent_batches_are_left_to_the_append_which_refuses_them() -> None:
    tp = TopicPartition("t", 0)
    data = build_batch(BIG, timestamp=T0, producer_id=3, producer_epoch=0, base_sequence=0)
    entries = run({tp: config("0.10.0")}, {tp: data})
    assert entries[tp] is data


def test_old_fetches_of_a_v1_log_get_the_stored_bytes_even_without_down_conversion() -> None:
    stored = build_message_set(1, [(0, T0, b"k", b"v"), (1, T0, None, b"w")])
    cfg = config("0.10.0", **{"message.downconversion.enable": "false"})
    got = asyncio.run(down_convert_fetch(memoryview(stored), 2, 0, cfg))
    assert got == stored
