from __future__ import annotations

import asyncio

from kafpy.common.java_hash import java_string_hash
from kafpy.common.time import MockTime
from kafpy.common.topic_partition import TopicPartition
from kafpy.coordinator.group_config import OffsetConfig
from kafpy.coordinator.group_metadata import GroupMetadata, GroupState
from kafpy.coordinator.group_metadata_manager import GroupMetadataManager, partition_for
from kafpy.coordinator.offset_and_metadata import OffsetAndMetadata
from kafpy.protocol.errors import Errors
from kafpy.records.control_record import (
    ControlRecordType,
    EndTransactionMarker,
    build_end_transaction_marker,
)
from kafpy.records.memory_records import MemoryRecords
from tests.unit.coordinator.fakes import FakeOffsetsLog

TP = TopicPartition("t", 0)


def test_java_string_hash_and_placement() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert partition_for("polygenelubricants", 50) == 0  # Kafka's Utils.abs(MIN_VALUE) is 0
    assert partition_for("hello", 50) == 99162322 % 50
    assert java_string_hash("\u00e9t\u00e9") == ((0xE9 * 31 + ord("t")) * 31 + 0xE9)


def manager(
    time: MockTime, log: FakeOffsetsLog, retention_ms: int = 60_000
) -> GroupMetadataManager:
    m = GroupMetadataManager(
        0,
        OffsetConfig(offsets_topic_num_partitions=3, offsets_retention_ms=retention_ms),
        log,
        time,
    )
    m.owned_partitions.update({0, 1, 2})
    return m


def test_loading_reads_to_the_log_end_not_the_high_watermark() -> None:
    # a commit appended by the old leader but not yet replicated when this broker took over
    # is the group's latest commit, as Kafka 2.8 loads it (FetchLogEnd)
    async def run() -> None:
        time, log = MockTime(), FakeOffsetsLog()
        m = manager(time, log)
        g = m.add_group(GroupMetadata("g", GroupState.EMPTY, time.milliseconds()))
        assert await m.store_offsets(g, {TP: OffsetAndMetadata(5, -1, "", 1)}) == {TP: Errors.NONE}
        offsets_tp = TopicPartition("__consumer_offsets", m.partition_for("g"))
        partition = log.get_partition(offsets_tp)
        assert partition is not None
        partition.replicated_up_to = partition.log.next_offset
        assert await m.store_offsets(g, {TP: OffsetAndMetadata(9, -1, "", 2)}) == {TP: Errors.NONE}
        [loaded] = await manager(time, log).load_partition(m.partition_for("g"))
        assert loaded.offsets == {TP: OffsetAndMetadata(9, -1, "", 2)}

    asyncio.run(run())


def test_offsets_are_stored_and_reloaded_from_the_log() -> None:
    async def run() -> None:
        time, log = MockTime(), FakeOffsetsLog()
        m = manager(time, log)
        g = m.add_group(GroupMetadata("g", GroupState.EMPTY, time.milliseconds()))
        assert await m.store_offsets(g, {TP: OffsetAndMetadata(5, -1, "x", 1)}) == {TP: Errors.NONE}
        assert await m.store_offsets(g, {TP: OffsetAndMetadata(9, -1, "y", 2)}) == {TP: Errors.NONE}
        assert await m.store_offsets(
            g, {TopicPartition("t", 1): OffsetAndMetadata(1, -1, "z" * 5000)}
        ) == {TopicPartition("t", 1): Errors.OFFSET_METADATA_TOO_LARGE}
        await m.store_group(g, {})
        fresh = manager(time, log)
        [loaded] = await fresh.load_partition(m.partition_for("g"))
        assert loaded.group_id == "g" and loaded.is_in(GroupState.EMPTY)
        assert loaded.offsets == {TP: OffsetAndMetadata(9, -1, "y", 2)}
        # deleting the group writes tombstones: a reload finds nothing
        g.transition_to(GroupState.DEAD)
        await m.delete_groups([g])
        assert await manager(time, log).load_partition(m.partition_for("g")) == []

    asyncio.run(run())


def test_append_errors_map_to_coordinator_errors() -> None:
    async def run() -> None:
        time, log = MockTime(), FakeOffsetsLog()
        m = manager(time, log)
        g = m.add_group(GroupMetadata("g"))
        log.fail_with = Errors.NOT_LEADER_OR_FOLLOWER
        assert await m.store_offsets(g, {TP: OffsetAndMetadata(1)}) == {TP: Errors.NOT_COORDINATOR}
        log.fail_with = Errors.MESSAGE_TOO_LARGE
        assert await m.store_offsets(g, {TP: OffsetAndMetadata(1)}) == {
            TP: Errors.INVALID_COMMIT_OFFSET_SIZE
        }
        assert g.offsets == {}

    asyncio.run(run())


def test_offsets_of_an_empty_group_expire_after_retention_then_the_group_goes() -> None:
    async def run() -> None:
        time, log = MockTime(), FakeOffsetsLog()
        m = manager(time, log, retention_ms=60_000)
        g = m.add_group(GroupMetadata("g", GroupState.EMPTY, time.milliseconds()))
        await m.store_offsets(g, {TP: OffsetAndMetadata(3, -1, "", time.milliseconds())})
        time.advance(59_999)
        assert await m.cleanup_group_metadata() == 0 and m.get_group("g") is g
        time.advance(1)
        assert await m.cleanup_group_metadata() == 1
        assert m.get_group("g") is None and g.is_in(GroupState.DEAD)
        assert await manager(time, log).load_partition(m.partition_for("g")) == []

    asyncio.run(run())


# -- transactional offset commits (TxnOffsetCommit) ----------------------------------------

PID = 42


def write_marker(
    log: FakeOffsetsLog, m: GroupMetadataManager, commit: bool, pid: int = PID
) -> None:
    """A transaction marker in the group's offsets partition, then Kafka's handleTxnCompletion."""
    marker = build_end_transaction_marker(
        EndTransactionMarker(ControlRecordType.COMMIT if commit else ControlRecordType.ABORT, 0),
        producer_id=pid, producer_epoch=0, timestamp=1,
    )  # fmt: skip
    tp = m.topic_partition_for("g")
    log.partitions[tp].log.append(marker)
    m.handle_txn_completion(pid, {tp.partition}, commit)


def test_txn_offsets_stay_pending_until_the_commit_marker_and_go_at_an_abort() -> None:
    async def run() -> None:
        time, log = MockTime(), FakeOffsetsLog()
        m = manager(time, log)
        g = m.add_group(GroupMetadata("g", GroupState.EMPTY, time.milliseconds()))
        await m.store_offsets(g, {TP: OffsetAndMetadata(3)})
        one = {TP: OffsetAndMetadata(10, -1, "txn", 5)}
        assert await m.store_offsets(g, one, PID, 0) == {TP: Errors.NONE}
        # written as a transactional batch of the producer
        tp = m.topic_partition_for("g")
        batch = list(MemoryRecords(bytes(log.partitions[tp].log.data)).batches())[-1]
        assert (batch.is_transactional, batch.producer_id, batch.producer_epoch) == (True, PID, 0)
        assert m.get_offsets("g", [TP]) == {TP: OffsetAndMetadata(3)}
        assert g.pending_txn_offset_commits == {PID: one}
        m.handle_txn_completion(PID, {tp.partition + 1}, True)  # another partition's marker
        assert m.get_offsets("g", [TP])[TP] == OffsetAndMetadata(3)
        write_marker(log, m, commit=True)
        assert m.get_offsets("g", [TP]) == one and g.pending_txn_offset_commits == {}
        await m.store_offsets(g, {TP: OffsetAndMetadata(20)}, PID, 0)
        write_marker(log, m, commit=False)
        assert m.get_offsets("g", [TP]) == one and g.pending_txn_offset_commits == {}

    asyncio.run(run())


def test_loading_replays_transactional_commits_and_their_markers() -> None:
    async def run() -> None:
        time, log = MockTime(), FakeOffsetsLog()
        m = manager(time, log)
        g = m.add_group(GroupMetadata("g", GroupState.EMPTY, time.milliseconds()))
        tp1, tp2 = TopicPartition("t", 1), TopicPartition("t", 2)
        await m.store_offsets(g, {TP: OffsetAndMetadata(1)}, PID, 0)
        write_marker(log, m, commit=True)
        await m.store_offsets(g, {tp1: OffsetAndMetadata(2)}, PID, 0)
        write_marker(log, m, commit=False)
        await m.store_offsets(g, {tp2: OffsetAndMetadata(3)}, PID + 1, 0)  # still open
        [loaded] = await manager(time, log).load_partition(m.partition_for("g"))
        assert loaded.offsets == {TP: OffsetAndMetadata(1)}
        assert loaded.pending_txn_offset_commits == {PID + 1: {tp2: OffsetAndMetadata(3)}}
        write_marker(log, m, commit=True, pid=PID + 1)
        [loaded] = await manager(time, log).load_partition(m.partition_for("g"))
        assert loaded.offsets == {TP: OffsetAndMetadata(1), tp2: OffsetAndMetadata(3)}
        assert loaded.pending_txn_offset_commits == {}

    asyncio.run(run())


def test_a_later_plain_commit_wins_over_an_earlier_transactional_one() -> None:
    async def run() -> None:
        time, log = MockTime(), FakeOffsetsLog()
        m = manager(time, log)
        g = m.add_group(GroupMetadata("g", GroupState.EMPTY, time.milliseconds()))
        tp1 = TopicPartition("t", 1)
        # the transaction writes TP and tp1; a plain commit of TP comes after it
        await m.store_offsets(g, {TP: OffsetAndMetadata(10), tp1: OffsetAndMetadata(11)}, PID, 0)
        await m.store_offsets(g, {TP: OffsetAndMetadata(20)})
        write_marker(log, m, commit=True)
        assert m.get_offsets("g", [TP, tp1]) == {
            TP: OffsetAndMetadata(20),
            tp1: OffsetAndMetadata(11),
        }
        [loaded] = await manager(time, log).load_partition(m.partition_for("g"))
        assert loaded.offsets == {TP: OffsetAndMetadata(20), tp1: OffsetAndMetadata(11)}
        # a transaction written after the plain commit wins at its marker
        await m.store_offsets(g, {TP: OffsetAndMetadata(30)}, PID, 0)
        write_marker(log, m, commit=True)
        assert m.get_offsets("g", [TP])[TP] == OffsetAndMetadata(30)
        [loaded] = await manager(time, log).load_partition(m.partition_for("g"))
        assert loaded.offsets[TP] == OffsetAndMetadata(30)

    asyncio.run(run())
