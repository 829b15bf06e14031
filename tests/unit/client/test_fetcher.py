"""Fetcher against a FakeBroker: ListOffsets, positions, partial batches, resets."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kafpy.client.fetcher import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    Fetcher,
    OffsetResetStrategy,
)
from kafpy.common.errors import KafkaError, OffsetOutOfRangeError
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.api_keys import ApiKey
from kafpy.records.compression import CompressionType
from kafpy.records.record_batch import TimestampType
from tests.unit.client.fake_broker import FakeLog as Log

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 30))


def values(records: list[Any]) -> list[tuple[int, int, bytes]]:
    return [(r.partition, r.offset, r.value) for r in records]


def test_list_offsets_and_fetch_from_positions() -> None:
    async def scenario() -> None:
        async with Log() as log, log.client() as client:
            log.append(0, [b"a", b"b", b"c"], compression=CompressionType.GZIP)
            log.append(1, [b"x"])
            fetcher = Fetcher(client)
            assert await fetcher.list_offsets([TP0, TP1], EARLIEST_TIMESTAMP) == {TP0: 0, TP1: 0}
            assert await fetcher.list_offsets([TP0, TP1], LATEST_TIMESTAMP) == {TP0: 3, TP1: 1}
            fetcher.assign({TP0: 1, TP1: 0})
            got = await fetcher.fetch()
            # the compressed batch starts before the position: its first record is skipped
            assert values(got) == [(0, 1, b"b"), (0, 2, b"c"), (1, 0, b"x")]
            assert got[0].topic == "t" and got[0].timestamp == 1000
            assert got[0].timestamp_type is TimestampType.CREATE_TIME
            assert fetcher.positions == {TP0: 3, TP1: 1}
            assert fetcher.high_watermarks == {TP0: 3, TP1: 1}
            log.append(0, [b"d"])
            assert values(await fetcher.fetch()) == [(0, 3, b"d")]
            request = log.broker.requests_of(ApiKey.FETCH)[-1]
            offsets = {
                p["partition"]: p["fetch_offset"] for p in request.body["topics"][0]["partitions"]
            }
            assert offsets == {0: 3, 1: 1}

    run(scenario())


def test_partial_trailing_batch_waits_for_the_next_fetch() -> None:
    async def scenario() -> None:
        async with Log() as log, log.client() as client:
            log.append(0, [b"a"])
            whole = log.data[0]
            log.append(0, [b"b"])
            log.data[0] = log.data[0][: len(whole) + 20]  # the second batch cut short
            fetcher = Fetcher(client)
            fetcher.assign({TP0: 0})
            assert values(await fetcher.fetch()) == [(0, 0, b"a")]
            assert fetcher.positions[TP0] == 1

    run(scenario())


def test_control_batches_are_skipped() -> None:
    async def scenario() -> None:
        async with Log() as log, log.client() as client:
            log.append(
                0,
                [(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00")],
                is_control=True,
                is_transactional=True,
                producer_id=1,
                producer_epoch=0,
            )
            log.append(0, [b"after"])
            fetcher = Fetcher(client)
            fetcher.assign({TP0: 0})
            assert values(await fetcher.fetch()) == [(0, 1, b"after")]

    run(scenario())


def test_out_of_range_resets_by_policy() -> None:
    async def scenario() -> None:
        async with Log() as log, log.client() as client:
            log.append(0, [b"a", b"b"])
            log.start[0] = 1
            fetcher = Fetcher(client, reset=OffsetResetStrategy.EARLIEST)
            fetcher.assign({TP0: 0})
            assert await fetcher.fetch() == []
            assert fetcher.positions[TP0] == 1
            assert values(await fetcher.fetch()) == [(0, 1, b"b")]
            latest = Fetcher(client, reset=OffsetResetStrategy.LATEST)
            latest.assign({TP0: 99})
            await latest.fetch()
            assert latest.positions[TP0] == 2
            strict = Fetcher(client, reset=OffsetResetStrategy.NONE)
            strict.assign({TP0: 99})
            with pytest.raises(OffsetOutOfRangeError, match="99 is out of range for partition t-0"):
                await strict.fetch()

    run(scenario())


def test_partition_errors() -> None:
    async def scenario() -> None:
        async with Log() as log, log.client() as client:
            log.append(0, [b"a"])
            fetcher = Fetcher(client)
            fetcher.assign({TP0: 0})
            log.error[0] = 6  # retriable: nothing this round, metadata refreshed
            metadata_before = len(log.broker.requests_of(ApiKey.METADATA))
            assert await fetcher.fetch() == []
            assert len(log.broker.requests_of(ApiKey.METADATA)) == metadata_before + 1
            assert values(await fetcher.fetch()) == [(0, 0, b"a")]
            log.error[0] = 87  # not retriable: raised with the partition named
            with pytest.raises(KafkaError, match="Fetching t-0 at offset 1"):
                await fetcher.fetch()

    run(scenario())


def test_read_committed_drops_the_batches_of_aborted_transactions() -> None:
    from kafpy.client.fetcher import AbortedTransactions  # noqa: PLC0415
    from kafpy.records.builder import build_batch  # noqa: PLC0415
    from kafpy.records.control_record import (  # noqa: PLC0415
        ControlRecordType,
        EndTransactionMarker,
        build_end_transaction_marker,
    )

    def txn(pid: int, base: int, *vals: bytes) -> bytes:
        return build_batch(list(vals), base_offset=base, producer_id=pid, producer_epoch=0,
                           base_sequence=0, is_transactional=True, timestamp=1000)  # fmt: skip

    def marker(pid: int, base: int, kind: ControlRecordType) -> bytes:
        return build_end_transaction_marker(EndTransactionMarker(kind, 0), producer_id=pid,
                                            producer_epoch=0, timestamp=1000, base_offset=base)  # fmt: skip

    data = (
        txn(7, 0, b"a0", b"a1")  # producer 7: aborted
        + txn(8, 2, b"c0")  # producer 8: committed, interleaved
        + marker(7, 3, ControlRecordType.ABORT)
        + txn(7, 4, b"c1")  # producer 7's next transaction: committed
        + marker(8, 5, ControlRecordType.COMMIT)
        + marker(7, 6, ControlRecordType.COMMIT)
        + build_batch([b"plain"], base_offset=7, timestamp=1000)
    )
    fetcher = Fetcher(None, isolation_level=1)  # type: ignore[arg-type]  # no request is sent
    fetcher.assign({TP0: 0})
    aborted = AbortedTransactions.from_response([{"producer_id": 7, "first_offset": 0}])
    got = fetcher._take_records(TP0, data, aborted)
    assert values(got) == [(0, 2, b"c0"), (0, 4, b"c1"), (0, 7, b"plain")]
    assert fetcher.positions == {TP0: 8}
    # read_uncommitted: everything but the markers
    fetcher.assign({TP0: 0})
    assert [r.value for r in fetcher._take_records(TP0, data)] == [
        b"a0",
        b"a1",
        b"c0",
        b"c1",
        b"plain",
    ]
