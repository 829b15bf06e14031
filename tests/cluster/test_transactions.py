"""Transactions on a 3-broker ZooKeeper cluster: markers go to partition leaders on other
brokers, and when the coordinator's broker is SIGKILLed a new coordinator (the new leader
of the __transaction_state partition) loads the state, fences the old producer and aborts
its open transaction, sending the markers to the partitions' current leaders; and an
exactly-once copy survives the coordinator's broker being SIGKILLed.

__transaction_state keeps Kafka's defaults here (replication factor 3, min.isr 2)."""

from __future__ import annotations

import asyncio
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as CTopicPartition

from kafpy.client.admin_client import NewTopic
from kafpy.client.connection import BrokerConnection
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.testing.wait import wait_until
from kafpy.tools.local_cluster import LocalCluster
from tests.cluster.support import ANY_ERROR, admin, live_bootstrap
from tests.fixtures.cluster import CLUSTER_TEST_DEFAULTS
from tests.fixtures.transactions import ExactlyOnceCopier, produce_numbered

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(180)]
WAIT_S = 60.0
SESSION_TIMEOUT_S = int(CLUSTER_TEST_DEFAULTS["zookeeper.session.timeout.ms"]) / 1000
OVERRIDES = {
    "transaction.state.log.num.partitions": "3",
    "offsets.topic.num.partitions": "3",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
}


def _coordinator(cluster: LocalCluster, tid: str) -> int:
    async def ask() -> int:
        broker = next(b for b in cluster.brokers.values() if b.alive)
        conn = BrokerConnection(broker.host, broker.port)
        try:
            await conn.connect()
            r = await conn.send(ApiKey.FIND_COORDINATOR, {"key": tid, "key_type": 1}, 1)
            return int(r["node_id"]) if r["error_code"] == Errors.NONE else -1
        finally:
            await conn.close()

    return (
        wait_until(
            lambda: (n := asyncio.run(ask())) >= 0 and n + 1,
            WAIT_S,
            "a coordinator",
            retry_on=ANY_ERROR,
        )
        - 1
    )


def _read_committed(bootstrap: str, topic: str, partitions: int) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"r-{time.monotonic_ns()}",
                  "isolation.level": "read_committed", "enable.partition.eof": True})  # fmt: skip
    try:
        c.assign([CTopicPartition(topic, p, 0) for p in range(partitions)])
        values, at_end = [], set()

        def read_to_the_end() -> bool:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                at_end.discard(m.partition())
                values.append(m.value())
            elif m is not None and m.error().code() == -191:
                at_end.add(m.partition())
            elif m is not None:
                raise KafkaException(m.error())
            return len(at_end) >= partitions

        # no retry_on: an error while reading fails the test at once
        wait_until(read_to_the_end, WAIT_S, "the end of the topic", interval_s=0)
        return sorted(values)
    finally:
        c.close()


def test_coordinator_sigkill_new_coordinator_aborts_and_fences(cluster: LocalCluster) -> None:
    topic, tid = "txn-failover", "failover-tx"
    assignment = {0: [0, 1], 1: [1, 2], 2: [2, 0]}
    admin(cluster, lambda a: a.create_topics([NewTopic(topic, replica_assignment=assignment)]))
    bootstrap = cluster.bootstrap_servers
    first = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid})
    first.init_transactions(WAIT_S)
    first.begin_transaction()
    for p in range(3):
        first.produce(topic, f"c{p}".encode(), partition=p)
    first.commit_transaction(WAIT_S)  # markers to three leaders on three brokers
    assert _read_committed(bootstrap, topic, 3) == [b"c0", b"c1", b"c2"]

    first.begin_transaction()
    for p in range(3):
        first.produce(topic, f"open{p}".encode(), partition=p)
    first.flush(WAIT_S)
    coordinator = _coordinator(cluster, tid)
    cluster.kill_broker(coordinator)

    second = Producer({"bootstrap.servers": live_bootstrap(cluster), "transactional.id": tid})
    second.init_transactions(WAIT_S + SESSION_TIMEOUT_S)  # waits for the new coordinator
    assert _coordinator(cluster, tid) != coordinator
    second.begin_transaction()
    for p in range(3):
        second.produce(topic, f"n{p}".encode(), partition=p)
    second.commit_transaction(WAIT_S)
    with pytest.raises(KafkaException):
        first.commit_transaction(10)
    assert _read_committed(live_bootstrap(cluster), topic, 3) == [
        b"c0",
        b"c1",
        b"c2",
        b"n0",
        b"n1",
        b"n2",
    ]


def test_exactly_once_copy_survives_a_coordinator_sigkill(cluster: LocalCluster) -> None:
    """100,000 numbered records copied by a transactional consume-transform-produce loop
    while the broker coordinating its transactions is SIGKILLed (and later restarted): the
    copy, read with read_committed, holds every record exactly once."""
    total = 100_000
    source, sink = "eos-cluster-in", "eos-cluster-out"
    for broker_id, broker in cluster.brokers.items():
        if not broker.alive:  # the test before killed one
            cluster.start_broker(broker_id)
    admin(cluster, lambda a: a.create_topics([NewTopic(source, 1, 3), NewTopic(sink, 1, 3)]))
    produce_numbered(cluster.bootstrap_servers, source, total, WAIT_S)
    copier = ExactlyOnceCopier(cluster.bootstrap_servers, source, sink, total, "eos-cluster")
    thread = copier.start()
    try:
        copier.wait_copied(0.3)
        coordinator = _coordinator(cluster, ExactlyOnceCopier.TRANSACTIONAL_ID)
        assert copier.copied_offset < total  # the kill lands mid-run
        cluster.kill_broker(coordinator)
        copier.wait_copied(0.6)  # on, with another broker coordinating
        assert _coordinator(cluster, ExactlyOnceCopier.TRANSACTIONAL_ID) != coordinator
        cluster.start_broker(coordinator)
        thread.join(180)
        assert not thread.is_alive(), f"the copier did not finish: at {copier.copied_offset}"
    finally:
        copier.stop = True
    values = _read_committed(cluster.bootstrap_servers, sink, 1)
    assert len(values) == total, f"{len(values) - len(set(values))} duplicates"
    assert sorted(int(v) for v in values) == list(range(total))
