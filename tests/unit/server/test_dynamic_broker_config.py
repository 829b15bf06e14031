"""DynamicBrokerConfig: the effective config over static, default and per-broker dynamic
configs, and the log defaults it hands to the LogManager without a restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafpy.admin.admin_zk_client import AdminZkClient
from kafpy.common.errors import InvalidRequestError
from kafpy.controller.controller_config import ControllerConfig
from kafpy.metadata.embedded_store import EmbeddedStore
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.server.dynamic_broker_config import (
    ALL_DYNAMIC_CONFIGS,
    RECONFIGURABLE_LOG_CONFIGS,
    DynamicBrokerConfig,
    DynamicControllerConfig,
    DynamicLogConfig,
)
from kafpy.server.kafka_config import KafkaConfig
from kafpy.storage.log_config import LogConfig


def dynamic(**props: str) -> DynamicBrokerConfig:
    return DynamicBrokerConfig(KafkaConfig({"broker.id": "0", "log.dirs": "/tmp/x", **props}))


class LogManagerState:
    """The LogManager's config state DynamicLogConfig changes (defaults and topic configs)."""

    def __init__(self, default: LogConfig, topic_configs: dict[str, LogConfig]) -> None:
        self.current_default_config = default
        self.topic_configs = topic_configs

    def update_topic_config(self, topic: str, config: LogConfig) -> None:
        self.topic_configs[topic] = config

    def reconfigure_default_log_config(self, config: LogConfig) -> None:
        self.current_default_config = config


def test_log_keys_are_kafkas_dynamic_log_configs() -> None:
    assert {"log.retention.ms", "log.segment.bytes", "message.max.bytes",
            "unclean.leader.election.enable", "min.insync.replicas"} <= RECONFIGURABLE_LOG_CONFIGS  # fmt: skip
    # Kafka makes only the ms forms dynamic, and never the message format version
    assert (
        not {"log.retention.hours", "log.roll.hours", "log.message.format.version"}
        & ALL_DYNAMIC_CONFIGS
    )


def test_precedence_broker_over_default_over_static() -> None:
    d = dynamic(**{"log.retention.hours": "5"})
    assert d.current.log_default_config().retention_ms == 5 * 3600 * 1000
    d.update_default_config({"log.retention.ms": "2000"})
    assert d.current.log_default_config().retention_ms == 2000
    d.update_broker_config({"log.retention.ms": "1000"})
    assert d.current.log_default_config().retention_ms == 1000
    d.update_broker_config({})
    assert d.current.log_default_config().retention_ms == 2000


def test_stored_values_that_cannot_apply_are_ignored() -> None:
    d = dynamic()
    d.update_broker_config(
        {"log.retention.ms": "soon", "num.io.threads": "2", "message.max.bytes": "5000"}
    )
    assert d.dynamic_broker_configs == {"message.max.bytes": "5000"}
    assert d.current.log_default_config().max_message_bytes == 5000


def test_validate_refuses_by_name() -> None:
    d = dynamic()
    with pytest.raises(
        InvalidRequestError,
        match=r"Cannot update these configs dynamically: Set\(broker.id, zookeeper.connect\)",
    ):
        d.validate({"zookeeper.connect": "x", "broker.id": "2"}, per_broker=True)
    with pytest.raises(InvalidRequestError, match=r"without a restart yet: Set\(listeners\)"):
        d.validate({"listeners": "PLAINTEXT://:1"}, per_broker=True)
    with pytest.raises(InvalidRequestError, match="log.retention.ms"):
        d.validate({"log.retention.ms": "soon"}, per_broker=False)
    d.validate({"log.retention.ms": "1000"}, per_broker=False)


def test_log_defaults_reach_topics_with_and_without_overrides() -> None:
    d = dynamic()
    base = d.current.log_default_config()
    state = LogManagerState(
        base, {"t": LogConfig.from_props(base.values(), {"segment.bytes": "2048"})}
    )
    d.add_reconfigurable(DynamicLogConfig(state))
    d.update_default_config({"log.retention.ms": "1234"})
    assert state.current_default_config.retention_ms == 1234
    assert state.topic_configs["t"].retention_ms == 1234
    assert state.topic_configs["t"].segment_bytes == 2048  # the topic's own override stays


class ControllerState:
    """The controller's part DynamicControllerConfig changes: its config and the
    UncleanLeaderElectionEnable event."""

    def __init__(self) -> None:
        self.config = ControllerConfig(broker_id=0)
        self.unclean_elections_triggered = 0

    def enable_default_unclean_leader_election(self) -> None:
        self.unclean_elections_triggered += 1


def test_unclean_leader_election_default_reaches_the_controller() -> None:
    d = dynamic()
    controller = ControllerState()
    d.add_reconfigurable(DynamicControllerConfig(controller))
    d.update_default_config({"unclean.leader.election.enable": "true"})
    assert controller.config.unclean_leader_election_enable is True
    assert controller.unclean_elections_triggered == 1
    d.update_default_config({"unclean.leader.election.enable": "true", "log.retention.ms": "5"})
    assert controller.unclean_elections_triggered == 1  # no change, no new election
    d.update_default_config({})
    assert controller.config.unclean_leader_election_enable is False
    assert controller.unclean_elections_triggered == 1


def test_listener_security_keys_follow_kafkas_rules() -> None:
    d = dynamic()
    with pytest.raises(InvalidRequestError, match="only per-listener using the listener prefix"):
        d.validate({"ssl.keystore.location": "/x.pem"}, per_broker=True)
    with pytest.raises(InvalidRequestError, match="broker id must be specified"):
        d.validate({"sasl.kerberos.min.time.before.relogin": "58000"}, per_broker=False)
    with pytest.raises(InvalidRequestError, match="Password encoder secret not configured"):
        d.validate({"listener.name.ssl.ssl.keystore.password": "p"}, per_broker=True)
    with pytest.raises(InvalidRequestError, match="sasl.mechanism.inter.broker.protocol"):
        d.validate({"sasl.mechanism.inter.broker.protocol": "PLAIN"}, per_broker=True)
    with pytest.raises(InvalidRequestError, match="Invalid value"):
        d.validate({"sasl.kerberos.min.time.before.relogin": "soon"}, per_broker=True)
    d.validate({"sasl.kerberos.min.time.before.relogin": "58000"}, per_broker=True)
    # cluster-level listener keys stay settable at the default, as in Kafka
    d.validate({"listener.name.plaintext.max.connections": "10"}, per_broker=False)


def test_sasl_mechanisms_of_a_listener_change_for_new_connections() -> None:
    from kafpy.network.channel_builders import listener_sasl_configs
    from kafpy.network.socket_server import SocketServer
    from kafpy.security.credential_cache import CredentialCache
    from kafpy.server.dynamic_broker_config import DynamicListenerSecurityConfig

    static = KafkaConfig({
        "broker.id": "0", "log.dirs": "/tmp/x",
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_admin="admin-secret";',
    })  # fmt: skip
    cache = CredentialCache()
    server = SocketServer(static.listeners, sasl_configs=listener_sasl_configs(static, cache))
    d = DynamicBrokerConfig(static)
    listener_security = DynamicListenerSecurityConfig(server, cache)
    d.add_validator(listener_security.validate)
    d.add_reconfigurable(listener_security)
    key = "listener.name.sasl_plaintext.sasl.enabled.mechanisms"
    with pytest.raises(InvalidRequestError, match="GSSAPI"):
        d.validate({key: "GSSAPI"}, per_broker=True)
    d.validate({key: "SCRAM-SHA-256"}, per_broker=True)
    before = server.sasl_configs["SASL_PLAINTEXT"]
    d.update_broker_config({key: "SCRAM-SHA-256"})
    assert server.sasl_configs["SASL_PLAINTEXT"].enabled_mechanisms == ["SCRAM-SHA-256"]
    assert before.enabled_mechanisms == ["PLAIN", "SCRAM-SHA-256"]


KEY_PASSWORD = "listener.name.ssl.ssl.key.password"
ENCODER = {"password.encoder.secret": "s3cret", "password.encoder.iterations": "1024"}


def test_passwords_are_stored_encrypted_and_read_back_decoded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    d = dynamic(**ENCODER)
    with pytest.raises(InvalidRequestError, match="broker id must be specified"):
        d.validate({KEY_PASSWORD: "p"}, per_broker=False)
    d.validate({KEY_PASSWORD: "key-pass"}, per_broker=True)
    stored = d.to_persistent({KEY_PASSWORD: "key-pass", "log.retention.ms": "5000"})
    assert stored["log.retention.ms"] == "5000"
    assert "key-pass" not in stored[KEY_PASSWORD]
    assert stored[KEY_PASSWORD].startswith("keyFactoryAlgorithm:PBKDF2WithHmacSHA512,")
    d.update_broker_config(stored)
    assert d.dynamic_broker_configs == {KEY_PASSWORD: "key-pass", "log.retention.ms": "5000"}
    assert d.current.get("ssl.key.password") is None  # the static key; the listener's is set
    assert "key-pass" not in caplog.text  # logged as [hidden]
    # another broker's secret: the password is left out, the rest applies
    other = dynamic(**{**ENCODER, "password.encoder.secret": "other"})
    other.update_broker_config(stored)
    assert other.dynamic_broker_configs == {"log.retention.ms": "5000"}
    assert f"Dynamic password config {KEY_PASSWORD} of broker 0 could not be decoded" in caplog.text


@pytest.mark.asyncio
async def test_passwords_of_the_old_secret_are_encrypted_again_at_start_up(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path)
    await store.start()
    try:
        zk = KafkaZkClient(store)
        await zk.make_sure_persistent_paths_exist()
        old = dynamic(**ENCODER)
        await AdminZkClient(zk).change_broker_config(
            0, old.to_persistent({KEY_PASSWORD: "key-pass"})
        )
        renewed = dynamic(**{**ENCODER, "password.encoder.secret": "new",
                             "password.encoder.old.secret": "s3cret"})  # fmt: skip
        await renewed.initialize(zk)
        assert renewed.dynamic_broker_configs == {KEY_PASSWORD: "key-pass"}
        stored = await zk.get_entity_configs("brokers", "0")
        # the stored value now decodes with the new secret alone
        later = dynamic(**{**ENCODER, "password.encoder.secret": "new"})
        assert later.from_persistent(stored, "broker 0") == {KEY_PASSWORD: "key-pass"}
    finally:
        await store.close()
