"""Kafka's ConsumerConfig: the consumer config keys kafpy's consumer honours, with Kafka
2.8's types, defaults and validators.

Every tool that takes consumer properties (console-consumer, the Spark source's `kafka.*`
options) reads them through `ConsumerConfig`; each keeps its own defaults where they differ
from Kafka's (it passes them to the getters) and words errors itself.
"""

from __future__ import annotations

from kafpy.client.client_config import ClientConfig
from kafpy.common.config_def import (
    INT_MAX,
    ConfigDef,
    ConfigType,
    Importance,
    Range,
    ValidString,
)

CONSUMER_CONFIG_DEF = (
    ConfigDef()
    .define("bootstrap.servers", ConfigType.LIST, [], None, Importance.HIGH,
            "host:port pairs to make the first connection to the cluster")
    .define("client.id", ConfigType.STRING, "", None, Importance.MEDIUM,
            "an id sent with every request, for the brokers' logs and quotas")
    .define("group.id", ConfigType.STRING, None, None, Importance.HIGH,
            "the consumer group this consumer joins")
    .define("fetch.max.wait.ms", ConfigType.INT, 500, Range.at_least(0), Importance.LOW,
            "how long the broker may hold a fetch waiting for data")
    .define("fetch.max.bytes", ConfigType.INT, 52428800, Range.at_least(0), Importance.MEDIUM,
            "the bytes one fetch response holds at most")
    .define("max.partition.fetch.bytes", ConfigType.INT, 1048576, Range.at_least(0),
            Importance.HIGH, "the bytes of one partition a fetch response holds at most")
    .define("request.timeout.ms", ConfigType.INT, 30000, Range.at_least(0), Importance.MEDIUM,
            "how long to wait for a response")
    .define("retry.backoff.ms", ConfigType.LONG, 100, Range.at_least(0), Importance.LOW,
            "the wait before a retry")
    .define("isolation.level", ConfigType.STRING, "read_uncommitted",
            ValidString("read_committed", "read_uncommitted"), Importance.MEDIUM,
            "read_committed leaves out records of aborted and open transactions")
    .define("auto.offset.reset", ConfigType.STRING, "latest",
            ValidString("latest", "earliest", "none"), Importance.MEDIUM,
            "where to start when there is no committed offset")
    .define("enable.auto.commit", ConfigType.BOOLEAN, True, None, Importance.MEDIUM,
            "commit the consumed offsets periodically")
    .define("auto.commit.interval.ms", ConfigType.INT, 5000, Range.at_least(0), Importance.LOW,
            "how often consumed offsets are committed")
    .define("session.timeout.ms", ConfigType.INT, 10000, None, Importance.HIGH,
            "how long the group coordinator waits for a heartbeat")
    .define("heartbeat.interval.ms", ConfigType.INT, 3000, None, Importance.HIGH,
            "how often heartbeats are sent to the group coordinator")
    .define("socket.connection.setup.timeout.ms", ConfigType.LONG, 10000, None, Importance.MEDIUM,
            "how long the client waits for a connection to be established")
    .define("security.protocol", ConfigType.STRING, "PLAINTEXT", None, Importance.MEDIUM,
            "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")
    # not a Kafka consumer key (Kafka's consumer retries until its timeouts): kafpy's client
    # resends a request failing with a retriable error `retries` times, as its producer does
    .define("retries", ConfigType.INT, INT_MAX, Range.between(0, INT_MAX), Importance.LOW,
            "kafpy's client: how often a request failing with a retriable error is resent")
)  # fmt: skip


class ConsumerConfig(ClientConfig):
    """A consumer's properties, read through CONSUMER_CONFIG_DEF."""

    definition = CONSUMER_CONFIG_DEF
