"""Fetching from the closest replica (KIP-392) across three broker processes in three racks.

Real ZooKeeper, three `kafpy server` processes, broker N in rack `rack-N`, with
`replica.selector.class` = Kafka's RackAwareReplicaSelector: a confluent-kafka consumer
whose `client.rack` is a follower's rack is told by the leader to read from that follower
and does (librdkafka's `debug=fetch` log names the broker each Fetch goes to); when that
follower dies the consumer goes back to another replica and still reads every record.
"""

from __future__ import annotations

import logging
import re
import uuid

import confluent_kafka
import pytest

from kafpy.client.admin_client import NewTopic
from kafpy.server.replica_selector import RACK_AWARE_REPLICA_SELECTOR
from kafpy.testing.wait import wait_until
from kafpy.tools.local_cluster import LocalCluster
from tests.cluster.support import ANY_ERROR, Zk, admin, live_bootstrap

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(170)]
WAIT_S = 45.0
OVERRIDES = {
    "replica.selector.class": RACK_AWARE_REPLICA_SELECTOR,
    "replica.fetch.wait.max.ms": "200",
    "replica.lag.time.max.ms": "3000",
}
BROKER_OVERRIDES = {b: {"broker.rack": f"rack-{b}"} for b in range(3)}
# librdkafka's debug line for a Fetch sent by broker thread `host:port/<id>`
FETCH_LINE = re.compile(r"/(\d+): Fetch topic (\S+) \[0\] at offset")


class _Lines(logging.Handler):
    """The consumer's librdkafka log lines, kept in order."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def fetched_from(self, topic: str, since: int = 0) -> list[int]:
        """The ids of the brokers the consumer sent Fetches for `topic` to, from line `since`."""
        found = (FETCH_LINE.search(line) for line in self.lines[since:])
        return [int(m.group(1)) for m in found if m is not None and m.group(2) == topic]


def _produce(cluster: LocalCluster, topic: str, values: range) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": live_bootstrap(cluster), "acks": "1"})
    for i in values:
        producer.produce(topic, str(i).encode(), partition=0)
    assert producer.flush(30) == 0


def test_a_consumer_reads_from_the_follower_in_its_rack_then_elsewhere_when_it_dies(
    cluster: LocalCluster, zk: Zk
) -> None:
    topic = "closest-replica"
    admin(cluster, lambda a: a.create_topics([NewTopic(topic, 1, 3)]))
    state = wait_until(
        lambda: (s := zk.partition_state(topic, 0)) is not None and len(s["isr"]) == 3 and s,
        WAIT_S, "the partition online with a full ISR", retry_on=ANY_ERROR,
    )  # fmt: skip
    leader = state["leader"]
    controller_id, _ = zk.controller()
    # the follower killed must not be the controller (its move would only slow the test)
    follower = next(b for b in cluster.brokers if b not in (leader, controller_id))
    _produce(cluster, topic, range(0, 20))

    log = logging.getLogger(f"test.rdkafka.{uuid.uuid4().hex}")
    log.setLevel(logging.DEBUG)
    lines = _Lines()
    log.addHandler(lines)
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": live_bootstrap(cluster), "group.id": f"g-{uuid.uuid4().hex}",
         "auto.offset.reset": "earliest", "enable.auto.commit": False,
         "client.rack": f"rack-{follower}", "debug": "fetch,topic", "fetch.wait.max.ms": 200,
         "socket.timeout.ms": 5000, "reconnect.backoff.max.ms": 1000},
        logger=log,
    )  # fmt: skip
    got: list[int] = []

    def read(n: int) -> bool:
        m = consumer.poll(0.5)
        if m is not None and m.error() is None:
            got.append(int(m.value()))
        return len(got) >= n

    try:
        consumer.subscribe([topic])
        wait_until(lambda: read(20), WAIT_S, "the first 20 records")
        _produce(cluster, topic, range(20, 30))
        wait_until(lambda: read(30), WAIT_S, "10 more records, from the follower")
        brokers = lines.fetched_from(topic)
        assert leader in brokers, brokers  # first the leader, which names the follower
        assert brokers[-1] == follower, brokers
        moved = (
            f"migrating from broker {leader} to {follower} (leader is {leader}): preferred replica"
        )
        assert any(moved in line for line in lines.lines), lines.lines[-40:]

        cluster.kill_broker(follower)
        mark = len(lines.lines)
        _produce(cluster, topic, range(30, 60))
        wait_until(lambda: read(60), WAIT_S, "the records produced after the follower died")
        after = lines.fetched_from(topic, mark)
        # the leader names the dead follower until the controller says it is gone; the
        # consumer, failing to reach it, goes back to the leader each time
        assert after and after[-1] != follower, after
    finally:
        consumer.close()
    assert sorted(got) == list(range(60)) and len(set(got)) == 60
