"""Kafka's ProducerConfig: the producer config keys kafpy's producer honours, with Kafka
2.8's types, defaults and validators.

Every tool that takes producer properties (console-producer, producer-perf-test, the Spark
sink's `kafka.*` options) reads them through `ProducerConfig`; each keeps its own defaults
where they differ from Kafka's (it passes them to the getters) and words errors itself.
"""

from __future__ import annotations

from kafpy.client.client_config import ClientConfig, ClientConfigError, Expected
from kafpy.common.config_def import (
    INT_MAX,
    ConfigDef,
    ConfigType,
    Importance,
    NonEmptyString,
    Range,
    ValidString,
)

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
    .define("max.block.ms", ConfigType.LONG, 60000, Range.at_least(0), Importance.MEDIUM,
            "how long init, commit and abort of transactions and sending offsets may block")
    .define("transaction.timeout.ms", ConfigType.INT, 60000, None, Importance.LOW,
            "how long the transaction coordinator waits for a transaction to end before it "
            "aborts it (at most the broker's transaction.max.timeout.ms)")
    .define("transactional.id", ConfigType.STRING, None, NonEmptyString(), Importance.LOW,
            "the id that lets transactions span producer sessions; implies enable.idempotence")
)  # fmt: skip


class ProducerConfig(ClientConfig):
    """A producer's properties, read through PRODUCER_CONFIG_DEF."""

    definition = PRODUCER_CONFIG_DEF

    def transactional_id(self) -> str | None:
        """`transactional.id`, None when not set; ClientConfigError when empty."""
        raw = self.props.get("transactional.id")
        if raw is not None and not raw:
            raise ClientConfigError(
                "transactional.id", raw, Expected.VALID,
                detail="Invalid value  for configuration transactional.id: String must be non-empty",
            )  # fmt: skip
        return raw

    def idempotence_enabled(self) -> bool:
        """Kafka's idempotenceEnabled with the checks KafkaProducer makes of it: idempotence
        is on when `enable.idempotence=true` or a `transactional.id` is set, and then
        retries must not be 0, a configured `acks` must be all, and at most 5 requests may
        be in flight; each conflict raises ClientConfigError with Kafka's sentence."""
        transactional = self.transactional_id() is not None
        configured = "enable.idempotence" in self.props
        if configured and not self.get_bool("enable.idempotence"):
            if transactional:
                self._conflict(
                    "enable.idempotence",
                    "Cannot set a transactional.id without also enabling idempotence.",
                )
            return False
        if not (configured or transactional):
            return False
        if self.get_int("retries") == 0:
            self._conflict(
                "retries", "Must set retries to non-zero when using the idempotent producer."
            )
        acks = self.props.get("acks")
        if acks is not None and acks.strip().lower() not in ("all", "-1"):
            self._conflict(
                "acks",
                "Must set acks to all in order to use the idempotent producer. Otherwise we "
                "cannot guarantee idempotence.",
            )
        if self.get_int("max.in.flight.requests.per.connection") > 5:
            self._conflict(
                "max.in.flight.requests.per.connection",
                "Must set max.in.flight.requests.per.connection to at most 5 to use the "
                "idempotent producer.",
            )
        return True

    def delivery_timeout_ms(self, linger_ms: int, request_timeout_ms: int) -> int:
        """`delivery.timeout.ms` as KafkaProducer configures it, given the linger.ms and
        request.timeout.ms the tool runs with: set below their sum, ClientConfigError with
        Kafka's sentence; left at its default below their sum, it becomes their sum."""
        delivery_timeout_ms = self.get_int("delivery.timeout.ms", minimum=0)
        at_least = min(linger_ms + request_timeout_ms, INT_MAX)
        if delivery_timeout_ms >= at_least:
            return delivery_timeout_ms
        if "delivery.timeout.ms" in self.props:
            self._conflict(
                "delivery.timeout.ms",
                "delivery.timeout.ms should be equal to or larger than linger.ms + "
                "request.timeout.ms",
            )
        return at_least

    def _conflict(self, key: str, sentence: str) -> None:
        raise ClientConfigError(key, self.props.get(key, ""), Expected.VALID, detail=sentence)
