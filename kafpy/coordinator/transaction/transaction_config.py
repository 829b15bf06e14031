"""TransactionConfig: the broker settings the transaction coordinator reads (transaction.* and
transactional.id.expiration.ms), with Kafka 2.8's defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


class _ConfigSource(Protocol):
    def get(self, key: str) -> Any: ...


@dataclass(frozen=True)
class TransactionConfig:
    """How __transaction_state is laid out, and the coordinator's timeouts."""

    transactional_id_expiration_ms: int = 7 * 24 * 60 * 60 * 1000
    transaction_max_timeout_ms: int = 15 * 60 * 1000
    transaction_log_num_partitions: int = 50
    transaction_log_replication_factor: int = 3
    transaction_log_segment_bytes: int = 100 * 1024 * 1024
    transaction_log_load_buffer_size: int = 5 * 1024 * 1024
    transaction_log_min_isr: int = 2
    abort_timed_out_transactions_interval_ms: int = 10000
    remove_expired_transactional_ids_interval_ms: int = 3600000
    request_timeout_ms: int = 30000

    @classmethod
    def from_config(cls, config: _ConfigSource) -> TransactionConfig:
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
