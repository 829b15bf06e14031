"""Kafka's ProducerConfig: the producer config keys kafpy's producer honours, with Kafka
2.8's types, defaults and validators.

Every tool that takes producer properties (console-producer, producer-perf-test, the Spark
sink's `kafka.*` options) reads them through `ProducerConfig`; each keeps its own defaults
where they differ from Kafka's (it passes them to the getters) and words errors itself.
"""

from __future__ import annotations

from kafpy.client.client_config import ClientConfig
from kafpy.common.config_def import INT_MAX, ConfigDef, ConfigType, Importance, Range, ValidString

PRODUCER_CONFIG_DEF = (
    ConfigDef()
    .define("bootstrap.servers", ConfigType.LIST, [], None, Importance.HIGH,
            "host:port pairs to make the first connection to the cluster")
    .define("client.id", ConfigType.STRING, "", None, Importance.MEDIUM,
            "an id sent with every request, for the brokers' logs and quotas")
    .define("acks", ConfigType.STRING, "1", ValidString("all", "-1", "0", "1"), Importance.HIGH,
            "how many replicas must acknowledge a produce request")
    .define("compression.type", ConfigType.STRING, "none", None, Importance.HIGH,
            "the codec of produced batches: none, gzip, snappy, lz4 or zstd")
    .define("batch.size", ConfigType.INT, 16384, Range.at_least(0), Importance.MEDIUM,
            "the bytes of records one batch holds at most")
    .define("linger.ms", ConfigType.LONG, 0, Range.at_least(0), Importance.MEDIUM,
            "how long to wait for more records to fill a batch")
    .define("max.request.size", ConfigType.INT, 1048576, Range.at_least(0), Importance.MEDIUM,
            "the largest produce request, in bytes")
    .define("request.timeout.ms", ConfigType.INT, 30000, Range.at_least(0), Importance.MEDIUM,
            "how long to wait for a response")
    .define("delivery.timeout.ms", ConfigType.INT, 120000, Range.at_least(0), Importance.MEDIUM,
            "an upper bound on the time to report a send as delivered or failed")
    .define("retries", ConfigType.INT, INT_MAX, Range.between(0, INT_MAX), Importance.HIGH,
            "how often a request failing with a retriable error is resent")
    .define("retry.backoff.ms", ConfigType.LONG, 100, Range.at_least(0), Importance.LOW,
            "the wait before a retry")
    .define("enable.idempotence", ConfigType.BOOLEAN, False, None, Importance.LOW,
            "write each record exactly once per partition (producer ids and sequences)")
    .define("max.in.flight.requests.per.connection", ConfigType.INT, 5, Range.at_least(1),
            Importance.LOW, "unacknowledged requests on one connection at most")
    .define("security.protocol", ConfigType.STRING, "PLAINTEXT", None, Importance.MEDIUM,
            "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")
)  # fmt: skip


class ProducerConfig(ClientConfig):
    """A producer's properties, read through PRODUCER_CONFIG_DEF."""

    definition = PRODUCER_CONFIG_DEF
