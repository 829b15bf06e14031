"""The log side of transactions through a real `kafpy server`: transactional batches
produced raw with a producer id, ended by WriteTxnMarkers sent with kafpy's own client
(as a transaction coordinator would), then read by real consumers: confluent-kafka and
kafka-python at read_committed see committed data only, up to the last stable offset,
also after the broker restarted (or was killed) between a write and its marker; and
TxnOffsetCommit's offsets become the group's only at the COMMIT marker."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition

from kafpy.coordinator.group_metadata_manager import partition_for
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.testing.wait import WaitTimeout, wait_until
from tests.fixtures.broker import KafpyBroker
from tests.fixtures.transactions import TxnDriver


@pytest.fixture(scope="module")
def driver(kafpy_module_broker: KafpyBroker) -> Iterator[TxnDriver]:
    d = TxnDriver(kafpy_module_broker)
    try:
        yield d
    finally:
        d.close()


def create_topic(broker: KafpyBroker, partitions: int = 1) -> str:
    topic = f"txn-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(30)
    return topic


def consume(broker: KafpyBroker, topic: str, isolation: str, expect: int) -> list[bytes]:
    """Every value a confluent-kafka consumer reads from the start of each partition up to
    its end (the LSO at read_committed), told by the partition EOF events; at least
    `expect` values are waited for (30 s at most), so none that should come is missed."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "isolation.level": isolation})  # fmt: skip
    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    consumer.assign([CkTopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    got: list[bytes] = []
    at_end: set[int] = set()

    def read_to_the_end() -> bool:
        msg = consumer.poll(0.5)
        if msg is None:
            return False
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                at_end.add(msg.partition())
                return len(at_end) == len(partitions) and len(got) >= expect
            return False
        at_end.discard(msg.partition())
        got.append(msg.value() or b"")
        return False

    try:
        # what came within 30 s: the test says what it should have been
        with contextlib.suppress(WaitTimeout):
            wait_until(read_to_the_end, 30, f"{expect} values and every partition's end",
                       interval_s=0)  # fmt: skip
    finally:
        consumer.close()
    return got


def test_markers_are_written_and_answered_per_partition(kafpy_module_broker: KafpyBroker,
                                                        driver: TxnDriver) -> None:  # fmt: skip
    topic = create_topic(kafpy_module_broker, partitions=2)
    pid, epoch = driver.producer_id()
    driver.produce(topic, [b"c1", b"c2"], pid, epoch, 0, partition=0)
    driver.produce(topic, [b"c3"], pid, epoch, 0, partition=1)
    answer = driver.end_txn(pid, epoch, True, {topic: [0, 1, 9], "no-such-topic": [0]}, version=0)
    assert answer == {(topic, 0): Errors.NONE, (topic, 1): Errors.NONE,
                      (topic, 9): Errors.UNKNOWN_TOPIC_OR_PARTITION,
                      ("no-such-topic", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION}  # fmt: skip
    driver.produce(topic, [b"a1"], pid, epoch, 2, partition=0)
    assert driver.end_txn(pid, epoch, False, {topic: [0]}) == {(topic, 0): Errors.NONE}
    # the abort is in the partition's transaction index (34 bytes per entry)
    txn_indexes = list((kafpy_module_broker.log_dir / f"{topic}-0").glob("*.txnindex"))
    assert sum(p.stat().st_size for p in txn_indexes) == 34
    # read_uncommitted sees every data record, never the markers
    got = consume(kafpy_module_broker, topic, "read_uncommitted", 4)
    assert sorted(got) == [b"a1", b"c1", b"c2", b"c3"]


def test_a_zombie_coordinator_is_fenced_and_nothing_is_written(kafpy_module_broker: KafpyBroker,
                                                               driver: TxnDriver) -> None:  # fmt: skip
    topic = create_topic(kafpy_module_broker)
    pid, epoch = driver.producer_id()
    driver.produce(topic, [b"x"], pid, epoch, 0)
    assert driver.end_txn(pid, epoch, True, {topic: [0]}, coordinator_epoch=7) == {(topic, 0): 0}
    next_offset = driver.produce(topic, [b"y"], pid, epoch, 1) + 1
    fenced = driver.end_txn(pid, epoch, False, {topic: [0]}, coordinator_epoch=6)
    assert fenced == {(topic, 0): Errors.TRANSACTION_COORDINATOR_FENCED}
    # nothing was appended for the zombie: the next write lands right after "y"
    assert driver.produce(topic, [b"z"], pid, epoch, 2) == next_offset
    assert driver.end_txn(pid, epoch, True, {topic: [0]}, coordinator_epoch=7) == {(topic, 0): 0}


def kafka_python_values(broker: KafpyBroker, topic: str, isolation: str) -> list[bytes]:
    """Every value kafka-python reads from partition 0 up to what ListOffsets calls the end
    at this isolation level (the LSO for read_committed)."""
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, isolation_level=isolation,
                             enable_auto_commit=False, consumer_timeout_ms=3000)  # fmt: skip
    try:
        tp = KafkaTopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        got = []
        for msg in consumer:
            got.append(msg.value)
            if consumer.position(tp) >= end:
                break
        return got
    finally:
        consumer.close()


def list_offsets_latest(driver: TxnDriver, topic: str, isolation: int) -> int:
    body = driver.send(ApiKey.LIST_OFFSETS, {"replica_id": -1, "isolation_level": isolation,
                       "topics": [{"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}]})  # fmt: skip
    answer = body["topics"][0]["partitions"][0]
    assert answer["error_code"] == Errors.NONE
    return int(answer["offset"])


def test_read_committed_consumers_see_only_committed_data(kafpy_module_broker: KafpyBroker,
                                                          driver: TxnDriver) -> None:  # fmt: skip
    topic = create_topic(kafpy_module_broker)
    (p1, e1), (p2, e2), (p3, e3) = driver.producer_id(), driver.producer_id(), driver.producer_id()
    driver.produce(topic, [b"c1", b"c2"], p1, e1, 0)
    driver.produce(topic, [b"a1"], p2, e2, 0)
    driver.produce(topic, [b"c3"], p1, e1, 2)
    driver.produce(topic, [b"a2"], p2, e2, 1)
    assert driver.end_txn(p1, e1, True, {topic: [0]}) == {(topic, 0): 0}
    assert driver.end_txn(p2, e2, False, {topic: [0]}) == {(topic, 0): 0}
    open_at = driver.produce(topic, [b"open"], p3, e3, 0)
    # the open transaction holds the LSO back; read_uncommitted reads to the high watermark
    assert list_offsets_latest(driver, topic, 1) == open_at
    assert list_offsets_latest(driver, topic, 0) == open_at + 1
    assert consume(kafpy_module_broker, topic, "read_committed", 3) == [b"c1", b"c2", b"c3"]
    assert kafka_python_values(kafpy_module_broker, topic, "read_committed") == [
        b"c1",
        b"c2",
        b"c3",
    ]
    every = [b"c1", b"c2", b"a1", b"c3", b"a2", b"open"]
    assert consume(kafpy_module_broker, topic, "read_uncommitted", 6) == every
    assert driver.end_txn(p3, e3, True, {topic: [0]}) == {(topic, 0): 0}
    assert list_offsets_latest(driver, topic, 1) == open_at + 2
    committed = [b"c1", b"c2", b"c3", b"open"]
    assert consume(kafpy_module_broker, topic, "read_committed", 4) == committed
    assert kafka_python_values(kafpy_module_broker, topic, "read_committed") == committed


@pytest.mark.parametrize("clean", [True, False], ids=["stop", "sigkill"])
def test_an_open_transaction_holds_the_lso_across_a_restart(kafpy_broker: KafpyBroker,
                                                            clean: bool) -> None:  # fmt: skip
    topic = create_topic(kafpy_broker)
    driver = TxnDriver(kafpy_broker)
    try:
        pid, epoch = driver.producer_id()
        other, other_epoch = driver.producer_id()
        driver.produce(topic, [b"before"], other, other_epoch, 0)
        assert driver.end_txn(other, other_epoch, True, {topic: [0]}) == {(topic, 0): 0}
        first = driver.produce(topic, [b"t1", b"t2"], pid, epoch, 0)
        driver.produce(topic, [b"after"], other, other_epoch, 1)
        assert driver.end_txn(other, other_epoch, True, {topic: [0]}) == {(topic, 0): 0}
    finally:
        driver.close()
    if clean:
        kafpy_broker.stop()
    else:
        kafpy_broker.kill()
    kafpy_broker.start()
    driver = TxnDriver(kafpy_broker)
    try:
        assert list_offsets_latest(driver, topic, 1) == first
        assert consume(kafpy_broker, topic, "read_committed", 1) == [b"before"]
        assert driver.end_txn(pid, epoch, False, {topic: [0]}) == {(topic, 0): 0}
        assert consume(kafpy_broker, topic, "read_committed", 2) == [b"before", b"after"]
    finally:
        driver.close()


# -- TxnOffsetCommit ---------------------------------------------------------------------------


def wait_for_group_coordinator(driver: TxnDriver, group: str) -> None:
    last: dict[str, Any] = {}

    def ready() -> bool:
        body = driver.send(ApiKey.FIND_COORDINATOR, {"key": group, "key_type": 0}, 2)
        last["find_coordinator"] = body
        if body["error_code"] != Errors.NONE:
            return False
        offset = driver.send(ApiKey.OFFSET_FETCH, {"group_id": group, "topics": None}, 7)
        return bool(offset["error_code"] == Errors.NONE)

    wait_until(
        ready,
        60,
        f"a coordinator for group {group}",
        interval_s=0.2,
        context=lambda: str(last.get("find_coordinator")),
    )


def txn_offset_commit(driver: TxnDriver, group: str, topic: str, offset: int, pid: int,
                      epoch: int, version: int = 3, **v3: Any) -> int:  # fmt: skip
    body = driver.send(ApiKey.TXN_OFFSET_COMMIT, {
        "transactional_id": "tx", "group_id": group, "producer_id": pid, "producer_epoch": epoch,
        **v3, "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "committed_offset": offset, "committed_metadata": "m"}]}]}, version)  # fmt: skip
    return int(body["topics"][0]["partitions"][0]["error_code"])


def committed(
    driver: TxnDriver, group: str, topic: str, require_stable: bool = False
) -> tuple[int, int]:
    """(error code, committed offset) of partition 0 for the group (OffsetFetch v7)."""
    body = driver.send(ApiKey.OFFSET_FETCH, {"group_id": group, "require_stable": require_stable,
                       "topics": [{"name": topic, "partition_indexes": [0]}]}, 7)  # fmt: skip
    p = body["topics"][0]["partitions"][0]
    return int(p["error_code"]), int(p["committed_offset"])


def end_offsets_txn(driver: TxnDriver, group: str, pid: int, epoch: int, commit: bool) -> None:
    offsets_tp = partition_for(group, 50)
    answer = driver.end_txn(pid, epoch, commit, {"__consumer_offsets": [offsets_tp]})
    assert answer == {("__consumer_offsets", offsets_tp): Errors.NONE}


def test_txn_offsets_are_visible_only_after_the_commit_marker(kafpy_module_broker: KafpyBroker,
                                                              driver: TxnDriver) -> None:  # fmt: skip
    topic, group = create_topic(kafpy_module_broker), f"g-{uuid.uuid4().hex[:8]}"
    wait_for_group_coordinator(driver, group)
    pid, epoch = driver.producer_id()
    assert txn_offset_commit(driver, group, topic, 10, pid, epoch, version=0) == Errors.NONE
    assert committed(driver, group, topic) == (Errors.NONE, -1)
    assert committed(driver, group, topic, require_stable=True) == (
        Errors.UNSTABLE_OFFSET_COMMIT,
        -1,
    )
    end_offsets_txn(driver, group, pid, epoch, commit=True)
    assert committed(driver, group, topic, require_stable=True) == (Errors.NONE, 10)
    assert txn_offset_commit(driver, group, topic, 20, pid, epoch) == Errors.NONE
    end_offsets_txn(driver, group, pid, epoch, commit=False)
    assert committed(driver, group, topic) == (Errors.NONE, 10)
    # v3 checks the member only when one is named
    unknown = txn_offset_commit(
        driver, group, topic, 30, pid, epoch, member_id="nobody", generation_id=1
    )
    assert unknown == Errors.UNKNOWN_MEMBER_ID
    assert (
        txn_offset_commit(driver, group, "no-such-topic", 1, pid, epoch)
        == Errors.UNKNOWN_TOPIC_OR_PARTITION
    )


def test_a_fenced_producer_cannot_commit_offsets(kafpy_module_broker: KafpyBroker,
                                                 driver: TxnDriver) -> None:  # fmt: skip
    topic, group = create_topic(kafpy_module_broker), f"g-{uuid.uuid4().hex[:8]}"
    wait_for_group_coordinator(driver, group)
    pid, _ = driver.producer_id()
    # the producer's epoch 1 (after a re-initialisation) committed through the offsets partition
    assert txn_offset_commit(driver, group, topic, 5, pid, 1) == Errors.NONE
    end_offsets_txn(driver, group, pid, 1, commit=True)
    # its zombie at epoch 0 is fenced and nothing changes
    assert txn_offset_commit(driver, group, topic, 99, pid, 0) == Errors.INVALID_PRODUCER_EPOCH
    assert committed(driver, group, topic, require_stable=True) == (Errors.NONE, 5)
    assert (
        txn_offset_commit(driver, group, topic, 6, pid, 1) == Errors.NONE
    )  # the broker still serves


def test_pending_txn_offsets_are_reloaded_after_a_restart(kafpy_broker: KafpyBroker) -> None:
    topic, group = create_topic(kafpy_broker), f"g-{uuid.uuid4().hex[:8]}"
    driver = TxnDriver(kafpy_broker)
    try:
        wait_for_group_coordinator(driver, group)
        (p1, e1), (p2, e2) = driver.producer_id(), driver.producer_id()
        assert txn_offset_commit(driver, group, topic, 7, p1, e1) == Errors.NONE
        end_offsets_txn(driver, group, p1, e1, commit=True)
        assert txn_offset_commit(driver, group, topic, 8, p2, e2) == Errors.NONE
        assert txn_offset_commit(driver, group, topic, 9, p1, e1) == Errors.NONE
        end_offsets_txn(driver, group, p1, e1, commit=False)
    finally:
        driver.close()
    kafpy_broker.restart()
    driver = TxnDriver(kafpy_broker)
    try:
        wait_for_group_coordinator(driver, group)
        assert committed(driver, group, topic) == (Errors.NONE, 7)
        assert committed(driver, group, topic, require_stable=True) == (
            Errors.UNSTABLE_OFFSET_COMMIT,
            -1,
        )
        end_offsets_txn(driver, group, p2, e2, commit=True)
        assert committed(driver, group, topic, require_stable=True) == (Errors.NONE, 8)
    finally:
        driver.close()


def console_consumer(broker: KafpyBroker, topic: str, *extra: str) -> list[str]:
    """The lines `kafpy console-consumer` prints from the start, until 3 s pass without one."""
    result = subprocess.run(
        [sys.executable, "-m", "kafpy", "console-consumer", "--bootstrap-server", broker.bootstrap,
         "--topic", topic, "--from-beginning", "--timeout-ms", "3000", *extra],
        capture_output=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode().splitlines()


def test_console_consumer_reads_committed_data_through_kafpys_client(
    kafpy_module_broker: KafpyBroker, driver: TxnDriver
) -> None:
    topic = create_topic(kafpy_module_broker)
    (p1, e1), (p2, e2), (p3, e3) = driver.producer_id(), driver.producer_id(), driver.producer_id()
    driver.produce(topic, [b"aborted-1"], p2, e2, 0)
    driver.produce(topic, [b"committed-1", b"committed-2"], p1, e1, 0)
    driver.produce(topic, [b"aborted-2"], p2, e2, 1)
    assert driver.end_txn(p2, e2, False, {topic: [0]}) == {(topic, 0): 0}
    assert driver.end_txn(p1, e1, True, {topic: [0]}) == {(topic, 0): 0}
    driver.produce(topic, [b"open"], p3, e3, 0)
    committed = console_consumer(kafpy_module_broker, topic, "--isolation-level", "read_committed")
    assert committed == ["committed-1", "committed-2"]
    everything = console_consumer(kafpy_module_broker, topic)
    assert everything == ["aborted-1", "committed-1", "committed-2", "aborted-2", "open"]
