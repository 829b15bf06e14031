"""ReplicaAlterLogDirsManager on a real ReplicaManager and LogManager with two log dirs:
DescribeLogDirs results, AlterReplicaLogDirs errors, and a move with appends during it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kafpy.common.errors import Errors
from kafpy.common.topic_partition import TopicPartition
from kafpy.records.builder import build_batch
from kafpy.records.memory_records import MemoryRecords
from kafpy.server.replica_alter_log_dirs_manager import ReplicaAlterLogDirsManager
from tests.unit.server.fixtures import Broker, broker  # noqa: F401  (fixture)

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


def produce(b: Broker, tp: TopicPartition, n: int) -> None:
    partition = b.replica_manager.partitions[tp]
    batch = build_batch([(None, b"v%d" % i) for i in range(n)])
    partition.append_records_to_leader(MemoryRecords(batch), required_acks=1)


def dir_of(b: Broker, tp: TopicPartition) -> Path:
    log = b.log_manager.get_log(tp)
    assert log is not None
    return log.dir.parent


def other_dir(b: Broker, tp: TopicPartition) -> Path:
    return next(d for d in b.log_manager.live_log_dirs if d != dir_of(b, tp))


def test_describe_log_dirs_lists_every_dir_and_replica(broker: Broker) -> None:  # noqa: F811
    broker.lead("t", 2)
    produce(broker, TP0, 3)
    m = ReplicaAlterLogDirsManager(broker.replica_manager)
    results = m.describe_log_dirs(None)
    assert sorted(r["log_dir"] for r in results) == sorted(
        str(d) for d in broker.log_manager.live_log_dirs
    )
    found = {
        (t["name"], p["partition_index"]): (r["log_dir"], p)
        for r in results
        for t in r["topics"]
        for p in t["partitions"]
    }
    assert set(found) == {("t", 0), ("t", 1)}
    d0, p0 = found[("t", 0)]
    assert d0 == str(dir_of(broker, TP0))
    assert p0["partition_size"] > 0 and p0["offset_lag"] == 0 and p0["is_future_key"] is False
    assert found[("t", 1)][1]["partition_size"] == 0
    # a topic filter keeps only the partitions asked for
    only = m.describe_log_dirs({"t": [1]})
    assert [(t["name"], p["partition_index"]) for r in only for t in r["topics"]
            for p in t["partitions"]] == [("t", 1)]  # fmt: skip
    # a future log shows with the LEO lag behind the current log
    broker.log_manager.get_or_create_future_log(TP0, other_dir(broker, TP0))
    futures = [
        p for r in m.describe_log_dirs({"t": [0]}) for t in r["topics"] for p in t["partitions"]
        if p["is_future_key"]
    ]  # fmt: skip
    assert [(p["offset_lag"], p["partition_size"]) for p in futures] == [(3, 0)]


def test_alter_replica_log_dirs_errors(broker: Broker, tmp_path: Path) -> None:  # noqa: F811
    broker.lead("t", 1)
    m = ReplicaAlterLogDirsManager(broker.replica_manager)

    async def run() -> dict[TopicPartition, int]:
        return m.alter_replica_log_dirs({
            TP0: str(tmp_path / "nowhere"),
            TopicPartition("unknown", 0): str(broker.log_manager.live_log_dirs[0]),
        })  # fmt: skip

    assert asyncio.run(_alter(m, {TP1: "bad\0path"})) == {TP1: Errors.LOG_DIR_NOT_FOUND}
    assert asyncio.run(run()) == {
        TP0: Errors.LOG_DIR_NOT_FOUND,
        TopicPartition("unknown", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION,
    }
    # the dir it is already in: nothing to do
    same = asyncio.run(_alter(m, {TP0: str(dir_of(broker, TP0))}))
    assert same == {TP0: Errors.NONE} and broker.log_manager.get_log(TP0, is_future=True) is None


async def _alter(
    m: ReplicaAlterLogDirsManager, moves: dict[TopicPartition, str]
) -> dict[TopicPartition, int]:
    return m.alter_replica_log_dirs(moves)


def test_offline_dir_is_described_with_storage_error_and_refused(broker: Broker) -> None:  # noqa: F811
    broker.lead("t", 2)
    m = ReplicaAlterLogDirsManager(broker.replica_manager)
    failed = dir_of(broker, TP0)
    asyncio.run(broker.replica_manager.handle_log_dir_failure(failed))
    by_dir = {r["log_dir"]: r for r in m.describe_log_dirs(None)}
    assert by_dir[str(failed)]["error_code"] == Errors.KAFKA_STORAGE_ERROR
    assert by_dir[str(failed)]["topics"] == []
    answers = asyncio.run(_alter(m, {TP1: str(failed), TP0: str(dir_of(broker, TP1))}))
    assert answers == {TP1: Errors.KAFKA_STORAGE_ERROR, TP0: Errors.KAFKA_STORAGE_ERROR}


def test_move_copies_everything_and_swaps_the_log(broker: Broker) -> None:  # noqa: F811
    broker.lead("t", 1)
    for _ in range(20):
        produce(broker, TP0, 50)
    source, target = dir_of(broker, TP0), other_dir(broker, TP0)
    m = ReplicaAlterLogDirsManager(broker.replica_manager, chunk_bytes=2048)

    async def run() -> None:
        assert m.alter_replica_log_dirs({TP0: str(target)}) == {TP0: Errors.NONE}
        assert m.moves_in_progress == [TP0]
        for _ in range(500):
            produce(broker, TP0, 5)  # appends while the copy runs
            await asyncio.sleep(0.005)
            if not m.moves_in_progress:
                break
        assert not m.moves_in_progress

    asyncio.run(run())
    partition = broker.replica_manager.partitions[TP0]
    log = broker.log_manager.get_log(TP0)
    assert log is not None and partition.log is log and log.dir == target / "t-0"
    assert broker.log_manager.get_log(TP0, is_future=True) is None
    values = [v for batch in MemoryRecords(log.read(0, 1 << 24).records.buffer()).batches()
              for v in (r.value for r in batch.records())]  # fmt: skip
    assert len(values) == log.log_end_offset >= 1000
    assert [d for d in source.iterdir() if d.name.startswith("t-0")][0].name.endswith("-delete")
    # appends go to the new log
    produce(broker, TP0, 1)
    assert log.log_end_offset == len(values) + 1


def test_future_log_found_on_disk_is_resumed(broker: Broker) -> None:  # noqa: F811
    broker.lead("t", 1)
    produce(broker, TP0, 30)
    target = other_dir(broker, TP0)
    broker.log_manager.get_or_create_future_log(TP0, target)  # as a restart mid-move leaves it
    m = ReplicaAlterLogDirsManager(broker.replica_manager)

    async def run() -> None:
        m.resume_moves()
        assert m.moves_in_progress == [TP0]
        for _ in range(500):
            if not m.moves_in_progress:
                break
            await asyncio.sleep(0.01)

    asyncio.run(run())
    assert dir_of(broker, TP0) == target
    log = broker.log_manager.get_log(TP0)
    assert log is not None and log.log_end_offset == 30


def test_a_current_log_rewritten_under_the_copy_is_copied_again(broker: Broker) -> None:  # noqa: F811
    from kafpy.server.replica_alter_log_dirs_manager import _diverged

    broker.lead("t", 1)
    produce(broker, TP0, 5)
    produce(broker, TP0, 5)
    current = broker.log_manager.get_log(TP0)
    assert current is not None
    future = broker.log_manager.get_or_create_future_log(TP0, other_dir(broker, TP0))
    m = ReplicaAlterLogDirsManager(broker.replica_manager, chunk_bytes=1)
    while future.log_end_offset < current.log_end_offset:
        m._copy_chunk(current, future)
    assert not _diverged(current, future)
    # as a follower after a leader change: truncated, then written again at a new epoch
    current.truncate_to(5)
    batch = build_batch([(None, b"new%d" % i) for i in range(5)])
    current.append_as_leader(MemoryRecords(batch), leader_epoch=1)
    assert current.log_end_offset == future.log_end_offset == 10
    assert _diverged(current, future)
    m._copy_chunk(current, future)
    assert future.log_end_offset == 0
    while future.log_end_offset < current.log_end_offset:
        m._copy_chunk(current, future)
    assert not _diverged(current, future)
