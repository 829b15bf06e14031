"""Log dir move benchmark: a replica moved between two log dirs of one broker.

Run: `python bench/log_dir_move_bench.py [--dir DIR] [--mb N]`

Fills one partition with N MiB (1 MiB batches), then moves it to the other log dir with
AlterReplicaLogDirs' move (ReplicaAlterLogDirsManager: the `-future` log filled in 1 MiB
chunks off the loop, then swapped in), and prints its MiB/s against `shutil.copytree` of
the same partition dir in the same run (the file-copy ceiling).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kafpy.common.errors import Errors  # noqa: E402
from kafpy.common.scheduler import MockScheduler  # noqa: E402
from kafpy.common.time import MockTime  # noqa: E402
from kafpy.common.topic_partition import TopicPartition  # noqa: E402
from kafpy.records import MemoryRecords, RecordBatchBuilder  # noqa: E402
from kafpy.server.metadata_cache import MetadataCache  # noqa: E402
from kafpy.server.replica_alter_log_dirs_manager import ReplicaAlterLogDirsManager  # noqa: E402
from kafpy.server.replica_manager import ReplicaManager  # noqa: E402
from kafpy.storage.log_config import LogConfig  # noqa: E402
from kafpy.storage.log_manager import LogManager  # noqa: E402

TP = TopicPartition("bench", 0)
MIB = 1024 * 1024


def one_mib_batch() -> bytes:
    builder = RecordBatchBuilder()
    value = b"x" * 1000
    while builder.uncompressed_size_in_bytes + 1020 <= MIB:
        builder.append(0, b"key", value)
    return bytes(builder.build())


async def run(root: Path, mib: int) -> tuple[float, float]:
    time_ = MockTime()
    scheduler = MockScheduler(time_)
    lm = LogManager([root / "d1", root / "d2"], scheduler=scheduler, time=time_,
                    initial_default_config=LogConfig(segment_bytes=256 * MIB))  # fmt: skip
    cache = MetadataCache(0)
    state = {"topic_name": TP.topic, "partition_index": 0, "controller_epoch": 1, "leader": 0,
             "leader_epoch": 0, "isr": [0], "zk_version": 0, "replicas": [0],
             "offline_replicas": [], "is_new": True}  # fmt: skip
    cache.update_metadata({"controller_id": 0, "controller_epoch": 1,
                           "ungrouped_partition_states": [state], "live_brokers": [
                               {"id": 0, "endpoints": [{"port": 9092, "host": "127.0.0.1",
                                "listener": "PLAINTEXT", "security_protocol": 0}], "rack": None}]})  # fmt: skip
    rm = ReplicaManager(0, lm, cache, scheduler, time_)
    rm.become_leader_or_follower({"controller_id": 0, "controller_epoch": 1,
                                  "ungrouped_partition_states": [state], "live_leaders": []})  # fmt: skip
    partition = rm.partitions[TP]
    batch = one_mib_batch()
    for _ in range(mib):
        partition.append_records_to_leader(MemoryRecords(bytearray(batch)), required_acks=1)
    log = lm.get_log(TP)
    assert log is not None
    log.flush()
    source, target = log.dir.parent, next(d for d in lm.live_log_dirs if d != log.dir.parent)
    size = log.size

    t0 = time.perf_counter()
    shutil.copytree(log.dir, root / "copy")
    copy_s = time.perf_counter() - t0

    manager = ReplicaAlterLogDirsManager(rm)
    t0 = time.perf_counter()
    assert manager.alter_replica_log_dirs({TP: str(target)}) == {TP: Errors.NONE}
    while manager.moves_in_progress:
        await asyncio.sleep(0.001)
    move_s = time.perf_counter() - t0
    moved = lm.get_log(TP)
    assert moved is not None and moved.dir.parent == target and moved.size == size, source
    rm.shutdown()
    lm.shutdown()
    return size / MIB / move_s, size / MIB / copy_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=None, help="where the two log dirs go")
    parser.add_argument("--mb", type=int, default=256, help="MiB in the partition")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="log-dir-move-", dir=args.dir))
    try:
        move, copy = asyncio.run(run(root, args.mb))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"partition of {args.mb} MiB moved between log dirs")
    print(f"move (ReplicaAlterLogDirsManager): {move:8.1f} MiB/s")
    print(f"shutil.copytree ceiling:           {copy:8.1f} MiB/s")
    print(f"move / ceiling:                    {move / copy:8.2f}")


if __name__ == "__main__":
    main()
