"""DeleteRecords with replication factor 3: the answer waits for every replica.

kafka-python's KafkaAdminClient sends DeleteRecords to the leader; the leader moves its
log start offset at once and answers when the low watermark (the smallest log start
offset over the live replicas, which the followers report in their fetches) reached the
requested offset, or REQUEST_TIMED_OUT at the request's timeout. Checked on disk
(log-start-offset-checkpoint on each broker) and through a new leader's ListOffsets.
"""

from __future__ import annotations

import os
import signal
from typing import Any

import confluent_kafka
import kafka
import pytest

from kafpy.client.admin_client import NewTopic
from kafpy.testing.wait import wait_until
from kafpy.tools.local_cluster import LocalCluster
from tests.cluster.support import ANY_ERROR, Zk, admin, live_bootstrap

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(150)]
WAIT_S = 45.0
OVERRIDES = {
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "200",
    "log.flush.start.offset.checkpoint.interval.ms": "500",
    # a stopped follower stays in the ISR while DeleteRecords times out
    "replica.lag.time.max.ms": "30000",
}


def _create_and_fill(cluster: LocalCluster, zk: Zk, topic: str, records: int) -> int:
    """An RF 3 topic with `records` records acknowledged by all three; its leader."""
    admin(cluster, lambda a: a.create_topics([NewTopic(topic, 1, 3)]))
    wait_until(lambda: (s := zk.partition_state(topic, 0)) is not None and len(s["isr"]) == 3,
               WAIT_S, f"{topic}-0 online with a full ISR", retry_on=ANY_ERROR)  # fmt: skip
    producer = confluent_kafka.Producer({"bootstrap.servers": live_bootstrap(cluster), "acks": "all",
                                         "linger.ms": 5, "topic.metadata.refresh.interval.ms": 1000})  # fmt: skip
    errors: list[Any] = []
    for i in range(records):
        producer.produce(
            topic, f"v{i}".encode(), on_delivery=lambda err, msg: err and errors.append(err)
        )
    assert producer.flush(30) == 0 and errors == []
    leader: int = zk.partition_state(topic, 0)["leader"]
    return leader


def _admin_client(cluster: LocalCluster) -> Any:
    return kafka.KafkaAdminClient(
        bootstrap_servers=live_bootstrap(cluster), request_timeout_ms=30000
    )


def _checkpointed_log_start(cluster: LocalCluster, broker_id: int, topic: str) -> int | None:
    path = cluster.brokers[broker_id].data_dir / "log-start-offset-checkpoint"
    if not path.exists():
        return None
    for line in path.read_text().splitlines()[2:]:
        name, partition, offset = line.split()
        if name == topic and partition == "0":
            return int(offset)
    return None


def _earliest(cluster: LocalCluster, topic: str) -> int:
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=live_bootstrap(cluster), request_timeout_ms=30000
    )
    try:
        tp = kafka.TopicPartition(topic, 0)
        return int(consumer.beginning_offsets([tp])[tp])
    finally:
        consumer.close()


def test_delete_records_answers_once_all_replicas_moved_their_log_start(
    cluster: LocalCluster, zk: Zk
) -> None:
    topic = "purged"
    leader = _create_and_fill(cluster, zk, topic, 100)
    client = _admin_client(cluster)
    try:
        result = client.delete_records({kafka.TopicPartition(topic, 0): 60}, timeout_ms=30000)
    finally:
        client.close()
    (answer,) = result.values()
    assert (answer["error_code"], answer["low_watermark"]) == (0, 60)
    # every copy dropped the records (each broker checkpoints its own log start offset)
    for b in cluster.brokers:
        wait_until(lambda b=b: _checkpointed_log_start(cluster, b, topic) == 60, WAIT_S,
                   f"broker {b}'s log-start-offset-checkpoint to say 60", retry_on=ANY_ERROR)  # fmt: skip
    assert _earliest(cluster, topic) == 60

    # a follower that becomes leader serves from the same start
    cluster.stop_broker(leader)
    try:
        new_leader = zk.partition_state(topic, 0)["leader"]
        assert new_leader != leader
        assert _earliest(cluster, topic) == 60
    finally:
        cluster.start_broker(leader)
    wait_until(
        lambda: len(zk.partition_state(topic, 0)["isr"]) == 3,
        WAIT_S,
        "a full ISR again",
        retry_on=ANY_ERROR,
    )


def test_delete_records_times_out_while_a_follower_does_not_fetch(
    cluster: LocalCluster, zk: Zk
) -> None:
    topic = "purge-stalled"
    leader = _create_and_fill(cluster, zk, topic, 50)
    follower = next(b for b in cluster.brokers if b != leader)
    pid = cluster.brokers[follower].pid
    assert pid is not None
    tp = kafka.TopicPartition(topic, 0)
    client = _admin_client(cluster)
    try:
        os.kill(pid, signal.SIGSTOP)  # alive for the cluster, but it fetches nothing
        try:
            # straight to the leader: a metadata lookup could pick the stopped broker, and the
            # client's own timeout would then raise the same error class without any deletion
            with pytest.raises(kafka.errors.RequestTimedOutError, match="Error deleting records"):
                client.delete_records({tp: 30}, timeout_ms=1500, partition_leader_id=leader)
        finally:
            os.kill(pid, signal.SIGCONT)
        # the leader moved its own start at once; the follower catches up when it resumes
        wait_until(lambda: _checkpointed_log_start(cluster, follower, topic) == 30, WAIT_S,
                   "the resumed follower to take the leader's log start offset", retry_on=ANY_ERROR)  # fmt: skip
        result = client.delete_records({tp: 30}, timeout_ms=30000, partition_leader_id=leader)
        assert (result[tp]["error_code"], result[tp]["low_watermark"]) == (0, 30)
    finally:
        client.close()
