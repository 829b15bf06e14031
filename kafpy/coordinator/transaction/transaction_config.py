"""TransactionConfig: the broker settings the transaction coordinator reads (transaction.* and
transactional.id.expiration.ms), with Kafka 2.8's defaults, and KIP-939's
`transaction.two.phase.commit.enable` (Kafka 4's key, off by default; read at start-up).

The keys are declared here (`TRANSACTION_CONFIG_DEF`, which KafkaConfig takes in), and the
dataclass defaults are those declarations' defaults, so a default is written once.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafpy.common.config_def import ConfigDef, ConfigSource, ConfigType, Importance, Range


def _transaction_config_def() -> ConfigDef:
    h, low = Importance.HIGH, Importance.LOW
    t = ConfigType
    return (
        ConfigDef()
        .define("transactional.id.expiration.ms", t.INT, 604800000, Range.at_least(1), h)
        .define("transaction.max.timeout.ms", t.INT, 900000, Range.at_least(1), h)
        .define("transaction.state.log.num.partitions", t.INT, 50, Range.at_least(1), h)
        .define("transaction.state.log.replication.factor", t.SHORT, 3, Range.at_least(1), h)
        .define("transaction.state.log.segment.bytes", t.INT, 104857600, Range.at_least(1), h)
        .define("transaction.state.log.load.buffer.size", t.INT, 5242880, Range.at_least(1), low)
        .define("transaction.state.log.min.isr", t.INT, 2, Range.at_least(1), h)
        .define("transaction.abort.timed.out.transaction.cleanup.interval.ms", t.INT, 10000,
                Range.at_least(1), low)
        .define("transaction.remove.expired.transaction.cleanup.interval.ms", t.INT, 3600000,
                Range.at_least(1), low)
        .define("transaction.two.phase.commit.enable", t.BOOLEAN, False, None, low,
                "Allow transactional producers to take part in two-phase commit (KIP-939): "
                "InitProducerId with enable2Pc, whose transactions never time out. Off: such "
                "requests are refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED.")
    )  # fmt: skip


TRANSACTION_CONFIG_DEF: ConfigDef = _transaction_config_def()
"""The server.properties keys of the transaction coordinator (a subset of KafkaConfig)."""

DEFAULT_REQUEST_TIMEOUT_MS = 30000
"""Kafka's request.timeout.ms default: how long the coordinator waits for its log appends and
markers (kafpy's broker does not read the key)."""

_D = TRANSACTION_CONFIG_DEF.default


@dataclass(frozen=True)
class TransactionConfig:
    """How __transaction_state is laid out, and the coordinator's timeouts."""

    transactional_id_expiration_ms: int = _D("transactional.id.expiration.ms")
    transaction_max_timeout_ms: int = _D("transaction.max.timeout.ms")
    transaction_log_num_partitions: int = _D("transaction.state.log.num.partitions")
    transaction_log_replication_factor: int = _D("transaction.state.log.replication.factor")
    transaction_log_segment_bytes: int = _D("transaction.state.log.segment.bytes")
    transaction_log_load_buffer_size: int = _D("transaction.state.log.load.buffer.size")
    transaction_log_min_isr: int = _D("transaction.state.log.min.isr")
    abort_timed_out_transactions_interval_ms: int = _D(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms"
    )
    remove_expired_transactional_ids_interval_ms: int = _D(
        "transaction.remove.expired.transaction.cleanup.interval.ms"
    )
    request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS
    transaction_two_phase_commit_enable: bool = _D("transaction.two.phase.commit.enable")

    @classmethod
    def from_config(cls, config: ConfigSource) -> TransactionConfig:
        return cls(
            config.get("transactional.id.expiration.ms"),
            config.get("transaction.max.timeout.ms"),
            config.get("transaction.state.log.num.partitions"),
            config.get("transaction.state.log.replication.factor"),
            config.get("transaction.state.log.segment.bytes"),
            config.get("transaction.state.log.load.buffer.size"),
            config.get("transaction.state.log.min.isr"),
            config.get("transaction.abort.timed.out.transaction.cleanup.interval.ms"),
            config.get("transaction.remove.expired.transaction.cleanup.interval.ms"),
            transaction_two_phase_commit_enable=config.get("transaction.two.phase.commit.enable"),
        )

    def topic_configs(self) -> dict[str, str]:
        """The topic configs __transaction_state is created with (Kafka's transactionTopicConfigs)."""
        return {
            "cleanup.policy": "compact",
            "compression.type": "uncompressed",
            "min.insync.replicas": str(self.transaction_log_min_isr),
            "segment.bytes": str(self.transaction_log_segment_bytes),
            "unclean.leader.election.enable": "false",
        }
