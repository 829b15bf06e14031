"""Serving clients of message format v0/v1: produce up-conversion and fetch down-conversion.

A Produce v0–v2 request carrying a v0/v1 message set is converted into one v2 batch
before the append (the LogValidator then converts it once more when the log's
message.format.version is below 0.11.0); a Fetch v0–v3 response is converted from the
stored v2 batches (and v1 messages, for magic 0) to the message format the fetch version
can carry (magic 0 for v0–v1, magic 1 for v2–v3), as Kafka's down-conversion does. Both cost per record, so
they cost only the old clients that need them; large sets are converted off the event
loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from kafpy.common.errors import UnsupportedCompressionTypeError, UnsupportedVersionError
from kafpy.common.topic_partition import TopicPartition
from kafpy.records.compression import CompressionType, decompressed_limit
from kafpy.records.legacy_record import (
    MAGIC_V0,
    MAGIC_V1,
    down_convert,
    to_message_set,
    up_convert,
)
from kafpy.records.memory_records import MemoryRecords
from kafpy.records.record_batch import (
    H_BASE_OFFSET,
    H_LAST_OFFSET_DELTA,
    H_MAGIC,
    MAGIC_V2,
    iter_headers,
)
from kafpy.storage.log_config import LogConfig
from kafpy.storage.log_validator import target_codec

# Sets larger than this are converted in a thread so that other connections are served.
_OFF_LOOP_BYTES = 64 * 1024


def _target_codec(config: LogConfig) -> CompressionType | None:
    """The codec the converted batch gets; None keeps the producer's (compression.type=producer)."""
    if config.compression_type == "producer":
        return None
    return CompressionType(target_codec(config, CompressionType.NONE))


async def up_convert_produce(data: memoryview | bytes, config: LogConfig) -> bytes:
    """A Produce v0–v2 message set as one v2 batch (offsets from 0), or the KafkaError
    (CORRUPT_MESSAGE, INVALID_RECORD, MESSAGE_TOO_LARGE) the partition is answered with."""
    limit = decompressed_limit(len(data), config.max_message_bytes)
    codec = _target_codec(config)
    if len(data) > _OFF_LOOP_BYTES:
        return await asyncio.to_thread(up_convert, data, limit, codec)
    return up_convert(data, limit, codec)


def fetch_magic(fetch_version: int) -> int:
    """The message format a Fetch version below 4 carries."""
    return MAGIC_V0 if fetch_version <= 1 else MAGIC_V1


async def down_convert_fetch(
    data: memoryview, fetch_version: int, fetch_offset: int, config: LogConfig
) -> bytes:
    """The stored batches `data` as the message set Fetch `fetch_version` (0–3) carries.

    Raises UnsupportedVersionError when the topic disables down-conversion
    (message.downconversion.enable=false) and UnsupportedCompressionTypeError for zstd
    data, which message format v0/v1 cannot carry (Kafka answers both per partition).
    Stored messages of the version's format or older (a log of format v0/v1) need no
    conversion and are sent as they are.
    """
    magic = fetch_magic(fetch_version)
    if all(h[H_MAGIC] <= magic for _pos, h in iter_headers(data)):
        # Only messages the version can carry as they are (a log of format v0/v1).
        return bytes(data)
    if not config.message_downconversion_enable:
        raise UnsupportedVersionError(
            f"Fetch v{fetch_version} needs down-conversion, which this topic disables "
            "(message.downconversion.enable=false)"
        )
    if len(data) > _OFF_LOOP_BYTES:
        converted, zstd = await asyncio.to_thread(down_convert, data, magic, fetch_offset)
    else:
        converted, zstd = down_convert(data, magic, fetch_offset)
    if zstd and not converted:
        raise UnsupportedCompressionTypeError(
            f"The data at offset {fetch_offset} is compressed with zstd, which Fetch "
            f"v{fetch_version} (message format v{magic}) cannot carry"
        )
    return converted


async def convert_for_old_message_formats(
    logs: Mapping[TopicPartition, LogConfig],
    entries: dict[TopicPartition, MemoryRecords | memoryview | bytes | None],
) -> None:
    """Write the large appends to logs of format v0/v1 (`logs`: the leader logs' configs)
    as their message sets in a thread, ahead of the append.

    Converting costs per record, and the append runs under the log's lock on the event
    loop; done here, the append only moves the messages to their offsets. Only sets that
    can be moved that way are kept (not LogAppendTime, not v0 wrappers); anything that
    fails is left to the append, which converts (or refuses) it itself.
    """
    for tp, config in logs.items():
        data = entries.get(tp)
        if data is None or len(data) <= _OFF_LOOP_BYTES:
            continue
        if config.record_version >= MAGIC_V2 or config.message_timestamp_type != "CreateTime":
            continue
        records = data if isinstance(data, MemoryRecords) else MemoryRecords(data)
        view = records.buffer()
        if not _contiguous(view):
            continue  # the append gives batches offsets one after another: moving won't do
        codec = _target_codec(config)
        try:
            converted = await asyncio.to_thread(
                to_message_set, view, config.record_version, codec, None
            )
        except Exception:  # the append converts again and answers the error
            continue
        if converted.can_move():
            entries[tp] = MemoryRecords(view, records.records_validated, converted)


def _contiguous(data: memoryview) -> bool:
    """True when each batch starts right after the one before it (a producer's usual
    request), so one shift moves every record to the offset the append gives it."""
    expected = None
    for _pos, h in iter_headers(data):
        if expected is not None and h[H_BASE_OFFSET] != expected:
            return False
        expected = h[H_BASE_OFFSET] + h[H_LAST_OFFSET_DELTA] + 1
    return expected is not None
