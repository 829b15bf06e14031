"""The broker's Prometheus endpoint (`kafpy.metrics.listener`) against a real `kafpy server`
and real clients: scraped with prometheus_client's own text parser before and after
producing and consuming known records, the BrokerTopicMetrics counters move by exactly
what the broker appended and sent; request counters move per API; a group's lag is its
high watermark minus its committed offset; a bad listener value stops start-up."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata
from prometheus_client.parser import text_string_to_metric_families

from kafpy.client.connection import BrokerConnection
from kafpy.protocol.api_keys import ApiKey
from kafpy.testing.wait import wait_until
from tests.fixtures.broker import KafpyBroker, free_port

Labels = tuple[tuple[str, str], ...]


def scrape(url: str) -> dict[tuple[str, Labels], float]:
    """Every sample of the endpoint, keyed by sample name and sorted labels."""
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def moved(
    before: dict[tuple[str, Labels], float],
    after: dict[tuple[str, Labels], float],
    name: str,
    **labels: str,
) -> float:
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


class MetricsBroker(KafpyBroker):
    """A `kafpy server` serving metrics on a free loopback port."""

    def __init__(self, data_dir: Path) -> None:
        self.metrics_port = free_port()
        super().__init__(
            data_dir,
            {
                "kafpy.metrics.listener": f"http://127.0.0.1:{self.metrics_port}",
                "offsets.topic.num.partitions": "1",
                "group.initial.rebalance.delay.ms": "0",
            },
        )

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}/metrics"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MetricsBroker]:
    b = MetricsBroker(tmp_path_factory.mktemp("metrics-broker"))
    b.start()
    try:
        yield b
    finally:
        b.stop()


def new_topic(bootstrap: str) -> str:
    topic = f"metrics-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    return topic


def produce(bootstrap: str, topic: str, count: int, value_size: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    for i in range(count):
        producer.produce(topic, key=b"k%d" % i, value=bytes(value_size), partition=0)
    assert producer.flush(30) == 0


def segment_bytes(broker: MetricsBroker, topic: str) -> int:
    return sum(f.stat().st_size for f in (broker.log_dir / f"{topic}-0").glob("*.log"))


def test_produce_and_consume_move_the_topic_counters_by_exactly_what_was_appended_and_sent(
    broker: MetricsBroker,
) -> None:
    topic = new_topic(broker.bootstrap)
    before = scrape(broker.metrics_url)
    produce(broker.bootstrap, topic, 200, 100)
    after_produce = scrape(broker.metrics_url)
    # bytes in, as Kafka counts them: the produced record batches the leader appended, which
    # are the bytes of the partition's log (batches are stored as they came)
    appended = segment_bytes(broker, topic)
    assert appended > 200 * 100
    for labels in ({"topic": topic}, {}):
        assert (
            moved(
                before, after_produce, "kafka_server_brokertopicmetrics_messagesin_total", **labels
            )
            == 200
        )
        assert (
            moved(before, after_produce, "kafka_server_brokertopicmetrics_bytesin_total", **labels)
            == appended
        )
        assert (
            moved(
                before,
                after_produce,
                "kafka_server_brokertopicmetrics_totalproducerequests_total",
                **labels,
            )
            >= 1
        )
        assert (
            moved(
                before,
                after_produce,
                "kafka_server_brokertopicmetrics_failedproducerequests_total",
                **labels,
            )
            == 0
        )
    assert after_produce[("kafka_log_log_size", (("partition", "0"), ("topic", topic)))] == appended
    assert (
        after_produce[("kafka_log_log_logendoffset", (("partition", "0"), ("topic", topic)))] == 200
    )
    assert (
        after_produce[("kafka_log_log_logstartoffset", (("partition", "0"), ("topic", topic)))] == 0
    )

    # a consumer of no group reading the partition once: bytes out = the stored batches
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        seen = 0

        def all_consumed() -> bool:
            nonlocal seen
            seen += sum(len(rs) for rs in consumer.poll(timeout_ms=500).values())
            return seen >= 200

        wait_until(
            all_consumed, 30, "200 records", interval_s=0,
            context=lambda: f"consumed {seen} of 200 records",
        )  # fmt: skip
        assert seen == 200
    finally:
        consumer.close()
    after_consume = scrape(broker.metrics_url)
    for labels in ({"topic": topic}, {}):
        assert (
            moved(
                after_produce,
                after_consume,
                "kafka_server_brokertopicmetrics_bytesout_total",
                **labels,
            )
            == appended
        )
        assert (
            moved(
                after_produce,
                after_consume,
                "kafka_server_brokertopicmetrics_totalfetchrequests_total",
                **labels,
            )
            >= 1
        )
        assert (
            moved(
                after_produce,
                after_consume,
                "kafka_server_brokertopicmetrics_failedfetchrequests_total",
                **labels,
            )
            == 0
        )
        assert (
            moved(
                after_produce,
                after_consume,
                "kafka_server_brokertopicmetrics_messagesin_total",
                **labels,
            )
            == 0
        )


def test_request_counters_and_time_histograms_move_per_api(broker: MetricsBroker) -> None:
    async def send() -> None:
        conn = BrokerConnection(broker.host, broker.port)
        await conn.connect()
        try:
            before = scrape(broker.metrics_url)
            for _ in range(3):
                await conn.send(ApiKey.API_VERSIONS, {}, version=0)
            for _ in range(2):
                await conn.send(ApiKey.METADATA, {"topics": []}, version=1)
            after = scrape(broker.metrics_url)
        finally:
            await conn.close()
        assert (
            moved(
                before, after, "kafka_network_requestmetrics_requests_total", request="ApiVersions"
            )
            == 3
        )
        assert (
            moved(before, after, "kafka_network_requestmetrics_requests_total", request="Metadata")
            == 2
        )
        assert (
            moved(before, after, "kafka_network_requestmetrics_requests_total", request="Produce")
            == 0
        )
        assert (
            moved(
                before, after, "kafka_network_requestmetrics_totaltimems_count", request="Metadata"
            )
            == 2
        )
        assert (
            moved(
                before,
                after,
                "kafka_network_requestmetrics_totaltimems_bucket",
                request="Metadata",
                le="+Inf",
            )
            == 2
        )
        assert (
            moved(before, after, "kafka_network_requestmetrics_totaltimems_sum", request="Metadata")
            > 0
        )

    asyncio.run(send())


def test_state_gauges_of_a_single_broker(broker: MetricsBroker) -> None:
    topic = new_topic(broker.bootstrap)
    samples = scrape(broker.metrics_url)
    assert samples[("kafka_controller_kafkacontroller_activecontrollercount", ())] == 1
    assert samples[("kafka_controller_kafkacontroller_offlinepartitionscount", ())] == 0
    assert samples[("kafka_controller_kafkacontroller_globaltopiccount", ())] >= 1
    assert samples[("kafka_controller_controllerstats_topicchangerateandtimems_count", ())] >= 1
    assert samples[("kafka_server_replicamanager_underreplicatedpartitions", ())] == 0
    assert samples[("kafka_server_replicamanager_partitioncount", ())] >= 1
    assert (
        samples[("kafka_server_replicamanager_leadercount", ())]
        == samples[("kafka_server_replicamanager_partitioncount", ())]
    )
    assert samples[("kafka_server_replicamanager_offlinereplicacount", ())] == 0
    assert (
        samples[
            (
                "kafka_server_delayedoperationpurgatory_purgatorysize",
                (("delayedOperation", "Produce"),),
            )
        ]
        == 0
    )
    assert (
        "kafka_server_delayedoperationpurgatory_purgatorysize",
        (("delayedOperation", "Fetch"),),
    ) in samples
    assert ("kafka_log_log_size", (("partition", "0"), ("topic", topic))) in samples
    assert ("kafka_log_logcleaner_max_clean_time_secs", ()) in samples
    assert samples[("kafpy_server_eventloop_lag_seconds_count", ())] > 0


def test_group_lag_is_the_high_watermark_minus_the_committed_offset(broker: MetricsBroker) -> None:
    topic = new_topic(broker.bootstrap)
    produce(broker.bootstrap, topic, 50, 10)
    group = f"lag-{uuid.uuid4().hex[:8]}"
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False
    )
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.commit({tp: OffsetAndMetadata(20, "", -1)})
    finally:
        consumer.close()
    samples = scrape(broker.metrics_url)
    labels = (("group", group), ("partition", "0"), ("topic", topic))
    assert samples[("kafka_consumergroup_group_offset", labels)] == 20
    assert samples[("kafka_consumergroup_group_lag", labels)] == 30
    assert samples[("kafka_consumergroup_group_max_lag", (("group", group),))] == 30
    assert samples[("kafka_consumergroup_group_sum_lag", (("group", group),))] == 30


def test_a_bad_metrics_listener_stops_start_up_with_a_message_naming_the_key(
    tmp_path: Path,
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kafpy", "server",
         "--override", "listeners=PLAINTEXT://127.0.0.1:0",
         "--override", f"log.dirs={tmp_path / 'logs'}",
         "--override", "broker.id=0",
         "--override", "kafpy.metrics.listener=127.0.0.1:9404"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "Invalid value 127.0.0.1:9404 for configuration kafpy.metrics.listener" in output
    assert "http://host:port" in output
    assert "Traceback" not in output


def test_a_metrics_port_in_use_stops_start_up_with_a_message(
    broker: MetricsBroker, tmp_path: Path
) -> None:
    taken = broker.metrics_url.removesuffix("/metrics")
    result = subprocess.run(
        [sys.executable, "-m", "kafpy", "server",
         "--override", "listeners=PLAINTEXT://127.0.0.1:0",
         "--override", f"log.dirs={tmp_path / 'logs'}",
         "--override", "broker.id=0",
         "--override", f"kafpy.metrics.listener={taken}"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "Cannot serve metrics on 127.0.0.1:" in output
    assert "kafpy.metrics.listener" in output


def test_a_deleted_topic_leaves_the_per_topic_metrics(broker: MetricsBroker) -> None:
    topic = new_topic(broker.bootstrap)
    produce(broker.bootstrap, topic, 5, 10)
    labels = (("topic", topic),)
    assert ("kafka_server_brokertopicmetrics_messagesin_total", labels) in scrape(
        broker.metrics_url
    )
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.delete_topics([topic])[topic].result(30)
    wait_until(
        lambda: (
            ("kafka_server_brokertopicmetrics_messagesin_total", labels)
            not in scrape(broker.metrics_url)
        ),
        30,
        "the deleted topic's metrics to go",
        interval_s=0.05,
    )
    samples = scrape(broker.metrics_url)
    assert not any(("topic", topic) in key[1] for key in samples)
