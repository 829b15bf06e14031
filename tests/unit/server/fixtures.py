"""Helpers for the server tests: controller request bodies and a ReplicaManager on MockTime."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from kafpy.common.scheduler import MockScheduler
from kafpy.common.time import MockTime
from kafpy.records.builder import build_batch
from kafpy.server.metadata_cache import MetadataCache
from kafpy.server.replica_manager import ReplicaManager
from kafpy.storage.log_config import LogConfig
from kafpy.storage.log_manager import LogManager


def partition_state(
    topic: str,
    partition: int,
    leader: int,
    *,
    leader_epoch: int = 0,
    isr: Sequence[int] | None = None,
    replicas: Sequence[int] | None = None,
    controller_epoch: int = 1,
    zk_version: int = 0,
    offline: Sequence[int] = (),
) -> dict[str, Any]:
    replicas = list(replicas if replicas is not None else [leader])
    return {
        "topic_name": topic,
        "partition_index": partition,
        "controller_epoch": controller_epoch,
        "leader": leader,
        "leader_epoch": leader_epoch,
        "isr": list(isr if isr is not None else replicas),
        "zk_version": zk_version,
        "replicas": replicas,
        "offline_replicas": list(offline),
        "is_new": True,
    }


def leader_and_isr(
    states: Sequence[dict[str, Any]], *, controller_id: int = 0, controller_epoch: int = 1
) -> dict[str, Any]:
    """A LeaderAndIsr v1 body (ungrouped partition states)."""
    return {
        "controller_id": controller_id,
        "controller_epoch": controller_epoch,
        "ungrouped_partition_states": list(states),
        "live_leaders": [],
    }


def update_metadata(
    states: Sequence[dict[str, Any]],
    brokers: Sequence[int] = (0,),
    *,
    controller_id: int = 0,
    controller_epoch: int = 1,
    host: str = "127.0.0.1",
    base_port: int = 9092,
    racks: Mapping[int, str] | None = None,
) -> dict[str, Any]:
    """An UpdateMetadata v4 body; broker N listens on base_port + N, in rack racks[N]."""
    return {
        "controller_id": controller_id,
        "controller_epoch": controller_epoch,
        "ungrouped_partition_states": list(states),
        "live_brokers": [
            {"id": b, "endpoints": [{"port": base_port + b, "host": host, "listener": "PLAINTEXT",
                                     "security_protocol": 0}], "rack": (racks or {}).get(b)}
            for b in brokers
        ],
    }  # fmt: skip


def txn_batch(*values: bytes, pid: int, epoch: int = 0, seq: int = 0) -> memoryview:
    """A transactional batch of producer `pid`, stamped with MockTime's clock (so that the
    markers, stamped with it too, do not roll the segment)."""
    data = build_batch(list(values), timestamp=MockTime().milliseconds(), producer_id=pid,
                       producer_epoch=epoch, base_sequence=seq, is_transactional=True)  # fmt: skip
    return memoryview(bytearray(data))


def txn_marker(
    pid: int, commit: bool, partitions: dict[str, list[int]], *, coordinator_epoch: int = 0,
    epoch: int = 0,
) -> dict[str, Any]:  # fmt: skip
    """One marker of a WriteTxnMarkers request body."""
    return {"producer_id": pid, "producer_epoch": epoch, "transaction_result": commit,
            "coordinator_epoch": coordinator_epoch,
            "topics": [{"name": t, "partition_indexes": ps} for t, ps in partitions.items()]}  # fmt: skip


class ManualTimer:
    """A TimerScheduler for purgatories whose timers fire only when the test says so."""

    def __init__(self) -> None:
        self.pending: list[Any] = []

    class Handle:
        def __init__(self, fun: Any, delay_ms: int) -> None:
            self.fun = fun
            self.delay_ms = delay_ms
            self.cancelled = False

        def cancel(self) -> None:
            self.cancelled = True

    def schedule(self, name: str, fun: Any, delay_ms: int) -> ManualTimer.Handle:
        h = ManualTimer.Handle(fun, delay_ms)
        self.pending.append(h)
        return h

    def fire_all(self) -> int:
        fired = 0
        for h in list(self.pending):
            self.pending.remove(h)
            if not h.cancelled:
                h.fun()
                fired += 1
        return fired


class Broker:
    """A LogManager + MetadataCache + ReplicaManager on MockTime in a tmp dir."""

    def __init__(self, tmp_path: Path, broker_id: int = 0, config: LogConfig | None = None) -> None:
        self.tmp_path = tmp_path
        self.broker_id = broker_id
        self.time = MockTime()
        self.scheduler = MockScheduler(self.time)
        self.timer = ManualTimer()
        self.config = config or LogConfig(segment_bytes=1024 * 1024)
        self.start()

    def start(self) -> None:
        self.log_manager = LogManager(
            [self.tmp_path / "d1", self.tmp_path / "d2"],
            initial_default_config=self.config,
            scheduler=self.scheduler,
            time=self.time,
        )
        self.metadata_cache = MetadataCache(self.broker_id)
        self.replica_manager = ReplicaManager(
            self.broker_id, self.log_manager, self.metadata_cache, self.scheduler, self.time,
            timer=self.timer,
        )  # fmt: skip
        self.replica_manager.startup()

    def stop(self) -> None:
        self.replica_manager.shutdown()
        self.log_manager.shutdown()

    def lead(self, topic: str, partitions: int = 1, **kw: Any) -> None:
        states = [partition_state(topic, p, self.broker_id, **kw) for p in range(partitions)]
        self.metadata_cache.update_metadata(update_metadata(states, [self.broker_id]))
        epoch = kw.get("controller_epoch", 1)
        resp = self.replica_manager.become_leader_or_follower(
            leader_and_isr(states, controller_epoch=epoch)
        )
        assert all(e["error_code"] == 0 for e in resp["partition_errors"]), resp


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    b = Broker(tmp_path)
    try:
        yield b
    finally:
        b.stop()
