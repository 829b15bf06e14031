"""Tests of KafkaConfig: Kafka's broker keys, defaults and validation."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any

import pytest

from kafpy.cluster.partition import Partition
from kafpy.common.config_def import ConfigKey, ConfigType, Importance
from kafpy.common.errors import InvalidConfigurationError
from kafpy.controller.controller_channel_manager import broker_connection_factory
from kafpy.network.connection_quotas import ConnectionQuotaConfig
from kafpy.network.socket_server import SocketServer
from kafpy.server.controlled_shutdown import controlled_shutdown
from kafpy.server.kafka_config import KAFKA_CONFIG_DEF, KafkaConfig, logged_value
from kafpy.server.replica_fetcher_thread import ReplicaFetcherConfig
from kafpy.server.replica_manager import ReplicaManager
from kafpy.server.zk_isr_manager import ZkIsrManager
from kafpy.storage.log_manager import LogManager


def test_defaults_are_kafkas() -> None:
    cfg = KafkaConfig({"broker.id": "0"})
    assert cfg.broker_id == 0
    assert cfg.log_dirs == [Path("/tmp/kafka-logs")]
    assert cfg.listeners == [("PLAINTEXT", "", 9092)]
    assert cfg.zookeeper_connect is None
    assert cfg.get("num.partitions") == 1
    assert cfg.get("auto.create.topics.enable") is True
    assert cfg.get("offsets.topic.num.partitions") == 50
    log = cfg.log_default_config()
    assert log.retention_ms == 7 * 24 * 3600 * 1000
    assert log.segment_bytes == 1024**3


def test_log_dirs_win_over_log_dir_and_broker_keys_map_to_topic_defaults(tmp_path: Path) -> None:
    cfg = KafkaConfig(
        {
            "broker.id": "3",
            "log.dir": "/ignored",
            "log.dirs": f"{tmp_path}/a, {tmp_path}/b",
            "log.retention.minutes": "5",
            "log.segment.bytes": "1048576",
            "listeners": "PLAINTEXT://127.0.0.1:9093,INTERNAL://localhost:9094",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
        }
    )
    assert cfg.log_dirs == [tmp_path / "a", tmp_path / "b"]
    assert cfg.listeners == [("PLAINTEXT", "127.0.0.1", 9093), ("INTERNAL", "localhost", 9094)]
    log = cfg.log_default_config()
    assert log.retention_ms == 5 * 60 * 1000
    assert log.segment_bytes == 1048576
    assert cfg.metadata_store_dir == tmp_path / "a"


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"broker.id": "x"}, "broker.id"),
        ({"broker.id": "-5"}, "broker.id must be -1"),
        ({"broker.id": "0", "num.partitions": "0"}, "num.partitions"),
        ({"broker.id": "0", "listeners": "localhost:9092"}, "Unable to parse localhost:9092"),
        ({"broker.id": "0", "listeners": "A://h:1,A://h:2"}, "different name"),
        ({"broker.id": "0", "log.segment.bytes": "10"}, "log.segment.bytes"),
    ],
)
def test_bad_values_name_the_key(props: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigurationError, match=message):
        KafkaConfig(props)


def test_from_file(tmp_path: Path) -> None:
    f = tmp_path / "server.properties"
    f.write_text("broker.id=7\nzookeeper.connect=127.0.0.1:2181/kafka\n")
    cfg = KafkaConfig.from_file(f, {"broker.rack": "r1"})
    assert cfg.broker_id == 7
    assert cfg.zookeeper_connect == "127.0.0.1:2181/kafka"
    assert cfg.broker_rack == "r1"


def test_isr_change_propagation_keys_are_kafpy_specific_with_kafkas_timings() -> None:
    cfg = KafkaConfig({"broker.id": "0"})
    assert cfg.replica_isr_change_propagation_blackout_ms == 5000
    assert cfg.replica_isr_change_propagation_max_interval_ms == 60000
    cfg = KafkaConfig({"broker.id": "0", "replica.isr.change.propagation.blackout.ms": "300",
                       "replica.isr.change.propagation.max.interval.ms": "3000"})  # fmt: skip
    assert (cfg.replica_isr_change_propagation_blackout_ms, cfg.replica_isr_change_propagation_max_interval_ms) == (
        300, 3000,
    )  # fmt: skip
    with pytest.raises(
        InvalidConfigurationError, match="replica.isr.change.propagation.blackout.ms"
    ):
        KafkaConfig({"broker.id": "0", "replica.isr.change.propagation.blackout.ms": "0"})


def test_the_shipped_server_properties_fit_one_broker() -> None:
    # `make run` starts one broker from this file: nothing in it may ask for more
    cfg = KafkaConfig.from_file(
        Path(__file__).resolve().parents[3] / "config" / "server.properties"
    )
    assert cfg.broker_id == 0
    assert cfg.zookeeper_connect is None
    assert cfg.get("default.replication.factor") == 1
    assert cfg.get("offsets.topic.replication.factor") == 1
    assert cfg.get("group.initial.rebalance.delay.ms") == 0
    assert cfg.metrics_listener is None  # needs the metrics extra: `make run` turns it on


def test_the_deploy_template_is_a_valid_three_host_broker() -> None:
    cfg = KafkaConfig.from_file(
        Path(__file__).resolve().parents[3] / "deploy" / "server.properties"
    )
    assert cfg.unknown_keys() == []
    assert cfg.broker_rack == "host1"
    assert cfg.zookeeper_connect == "10.0.0.1:2181,10.0.0.2:2181,10.0.0.3:2181/kafpy"
    assert cfg.get("default.replication.factor") == 3
    assert cfg.get("inter.broker.protocol.version") == "2.8"


@pytest.mark.parametrize("version", ["2.8", "2.8-IV1", "2.8.1"])
def test_inter_broker_protocol_version_accepts_what_kafpy_speaks(version: str) -> None:
    cfg = KafkaConfig({"broker.id": "0", "inter.broker.protocol.version": version})
    assert cfg.get("inter.broker.protocol.version") == version
    assert cfg.unknown_keys() == []


@pytest.mark.parametrize(
    "version, message",
    [
        ("2.7", "kafpy speaks only Kafka 2.8-IV1's inter-broker protocol and cannot pin 2.7-IV2"),
        ("2.8-IV0", "cannot pin 2.8-IV0"),
        ("3.0", "Version `3.0` is not a valid version"),
    ],
)
def test_inter_broker_protocol_version_refuses_what_kafpy_cannot_honour(
    version: str, message: str
) -> None:
    with pytest.raises(InvalidConfigurationError, match="inter.broker.protocol.version") as e:
        KafkaConfig({"broker.id": "0", "inter.broker.protocol.version": version})
    assert message in str(e.value)


def test_message_max_bytes_default_is_kafka_2x() -> None:
    # 1 MiB + the 12-byte log overhead (KAFKA-4203); before Kafka 1.1 it was 1000012
    cfg = KafkaConfig({"broker.id": "0"})
    assert cfg.get("message.max.bytes") == 1048588
    assert cfg.log_default_config().max_message_bytes == 1048588
    assert cfg.log_cleaner_config().max_message_size == 1048588
    # the topic default follows the broker's
    cfg = KafkaConfig({"broker.id": "0", "message.max.bytes": "2000000"})
    assert cfg.log_default_config().max_message_bytes == 2000000


def test_unknown_keys_are_kept_and_listed() -> None:
    cfg = KafkaConfig({"broker.id": "0", "num.partitons": "3", "num.partitions": "2"})
    assert cfg.unknown_keys() == ["num.partitons"]
    assert cfg.num_partitions == 2


def test_values_text_is_kafkas_block_sorted() -> None:
    text = KafkaConfig({"broker.id": "4", "log.dirs": "/a,/b"}).values_text()
    lines = text.split("\n")
    assert lines[0] == "KafkaConfig values: "
    entries = [line for line in lines[1:] if line]
    assert all(line.startswith("\t") and " = " in line for line in entries)
    keys = [line[1:].split(" = ")[0] for line in entries]
    assert keys == sorted(keys) and "broker.id" in keys and "log.retention.hours" in keys
    assert "\tbroker.id = 4\n" in text
    assert "\tlog.dirs = /a,/b\n" in text
    assert "\tbroker.rack = null\n" in text
    assert "\tauto.create.topics.enable = true\n" in text
    assert "\tlog.cleanup.policy = [delete]\n" in text


def test_typed_properties_replace_raw_gets() -> None:
    cfg = KafkaConfig({"broker.id": "0", "controlled.shutdown.max.retries": "7",
                       "replica.fetch.backoff.ms": "250", "log.initial.task.delay.ms": "10"})  # fmt: skip
    assert cfg.controlled_shutdown_max_retries == 7
    assert cfg.controlled_shutdown_enable is True
    assert cfg.replica_fetch_backoff_ms == 250
    assert cfg.log_initial_task_delay_ms == 10
    assert cfg.num_replica_fetchers == 1


def test_passwords_are_logged_hidden() -> None:
    key = ConfigKey("x.password", ConfigType.PASSWORD, None, None, Importance.HIGH, "")
    assert logged_value(key, "s3cret") == "[hidden]"
    assert logged_value(key, None) == "null"
    plain = ConfigKey("x.name", ConfigType.STRING, None, None, Importance.HIGH, "")
    assert logged_value(plain, "visible") == "visible"


def test_listener_ssl_overrides_win_key_by_key_and_are_known_keys() -> None:
    cfg = KafkaConfig(
        {
            "broker.id": "0",
            "listeners": "PLAINTEXT://:9092,SSL://:9093,INTERNAL://:9094",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,INTERNAL:SSL",
            "inter.broker.listener.name": "INTERNAL",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": "/etc/kafpy/broker.pem",
            "ssl.client.auth": "requested",
            "listener.name.internal.ssl.client.auth": "required",
            "listener.name.internal.ssl.keystore.location": "/etc/kafpy/internal.pem",
        }
    )
    internal, external = cfg.ssl_values("INTERNAL"), cfg.ssl_values("SSL")
    assert internal["ssl.client.auth"] == "required"
    assert internal["ssl.keystore.location"] == "/etc/kafpy/internal.pem"
    assert internal["ssl.keystore.type"] == "PEM"  # not overridden: the listener-less value
    assert external["ssl.client.auth"] == "requested"
    assert external["ssl.keystore.location"] == "/etc/kafpy/broker.pem"
    assert cfg.ssl_values("SSL")["ssl.endpoint.identification.algorithm"] == "https"
    assert cfg.unknown_keys() == []
    assert cfg.inter_broker_listener_name == "INTERNAL"


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"listener.name.ssl.ssl.client.auth": "maybe"}, "listener.name.ssl.ssl.client.auth"),
        ({"ssl.principal.mapping.rules": "RULE:x"}, "Invalid rule `RULE:x`"),
        ({"listeners": "SASL_SSL://:9093", "security.inter.broker.protocol": "SASL_SSL",
          "sasl.enabled.mechanisms": "NTLM"},
         r"sasl.enabled.mechanisms names SASL mechanism\(s\) NTLM, which kafpy does not support"),
        ({"advertised.listeners": "PLAINTEXT://h:9092,OTHER://h:9094",
          "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,OTHER:SSL"},
         "advertised.listeners listener names must be equal to or a subset"),
        ({"listeners": "PLAINTEXT://0.0.0.0:9092"}, "nonroutable meta-address 0.0.0.0"),
    ],
)  # fmt: skip
def test_bad_ssl_settings_fail_at_parse_time(props: dict[str, str], message: str) -> None:
    base = {"broker.id": "0", "listeners": "PLAINTEXT://:9092,SSL://:9093"}
    with pytest.raises(InvalidConfigurationError, match=message):
        KafkaConfig({**base, **props})


def test_the_metrics_endpoint_is_off_by_default_and_parsed_when_set() -> None:
    assert KafkaConfig({"broker.id": "0"}).metrics_listener is None
    assert KafkaConfig({"broker.id": "0", "kafpy.metrics.listener": ""}).metrics_listener is None
    cfg = KafkaConfig({"broker.id": "0", "kafpy.metrics.listener": "http://127.0.0.1:9404"})
    assert cfg.metrics_listener == ("127.0.0.1", 9404)
    assert KafkaConfig(
        {"broker.id": "0", "kafpy.metrics.listener": "http://:0"}
    ).metrics_listener == ("", 0)


@pytest.mark.parametrize(
    "value", ["127.0.0.1:9404", "https://127.0.0.1:9404", "http://127.0.0.1", "http://h:70000"]
)
def test_a_bad_metrics_listener_names_the_key_and_the_form(value: str) -> None:
    with pytest.raises(InvalidConfigurationError) as e:
        KafkaConfig({"broker.id": "0", "kafpy.metrics.listener": value})
    assert f"Invalid value {value} for configuration kafpy.metrics.listener" in str(e.value)
    assert "http://host:port" in str(e.value)


def test_delegation_token_keys_are_declared_with_kafkas_defaults() -> None:
    cfg = KafkaConfig({"log.dirs": "/tmp/x", "delegation.token.master.key": "k"})
    assert cfg.unknown_keys() == []
    assert cfg.get("delegation.token.master.key") == "k"
    assert cfg.get("delegation.token.max.lifetime.ms") == 7 * 24 * 3600 * 1000
    assert cfg.get("delegation.token.expiry.time.ms") == 24 * 3600 * 1000
    assert cfg.get("delegation.token.expiry.check.interval.ms") == 3600 * 1000
    assert "delegation.token.master.key = [hidden]" in cfg.values_text()
    with pytest.raises(InvalidConfigurationError, match="delegation.token.expiry.time.ms"):
        KafkaConfig({"log.dirs": "/tmp/x", "delegation.token.expiry.time.ms": "0"})


def test_replica_selector_class_is_unset_or_kafkas_rack_aware_selector() -> None:
    assert KafkaConfig({"broker.id": "0"}).replica_selector is None
    rack_aware = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
    selector = KafkaConfig({"broker.id": "0", "replica.selector.class": rack_aware})
    assert type(selector.replica_selector).__name__ == "RackAwareReplicaSelector"
    with pytest.raises(
        InvalidConfigurationError,
        match="Invalid value com.example.ClosestSelector for configuration replica.selector.class",
    ):
        KafkaConfig({"broker.id": "0", "replica.selector.class": "com.example.ClosestSelector"})


def _param_default(func: Any, name: str) -> Any:
    if dataclasses.is_dataclass(func):
        return {f.name: f.default for f in dataclasses.fields(func)}[name]
    return inspect.signature(func).parameters[name].default


# (constructor, its parameter, the key it stands for, Kafka 2.8's default)
_CONSTRUCTOR_DEFAULTS = [
    (ReplicaManager, "replica_lag_time_max_ms", "replica.lag.time.max.ms", 30000),
    (ReplicaManager, "high_watermark_checkpoint_interval_ms",
     "replica.high.watermark.checkpoint.interval.ms", 5000),
    (ReplicaManager, "fetch_purgatory_purge_interval", "fetch.purgatory.purge.interval.requests", 1000),
    (ReplicaManager, "producer_purgatory_purge_interval",
     "producer.purgatory.purge.interval.requests", 1000),
    (ReplicaManager, "isr_change_propagation_blackout_ms", "replica.isr.change.propagation.blackout.ms", 5000),
    (ReplicaManager, "isr_change_propagation_max_interval_ms",
     "replica.isr.change.propagation.max.interval.ms", 60000),
    (ZkIsrManager, "blackout_ms", "replica.isr.change.propagation.blackout.ms", 5000),
    (ZkIsrManager, "max_interval_ms", "replica.isr.change.propagation.max.interval.ms", 60000),
    (ReplicaFetcherConfig, "num_replica_fetchers", "num.replica.fetchers", 1),
    (ReplicaFetcherConfig, "fetch_max_bytes", "replica.fetch.max.bytes", 1048576),
    (ReplicaFetcherConfig, "fetch_response_max_bytes", "replica.fetch.response.max.bytes", 10485760),
    (ReplicaFetcherConfig, "fetch_wait_max_ms", "replica.fetch.wait.max.ms", 500),
    (ReplicaFetcherConfig, "fetch_min_bytes", "replica.fetch.min.bytes", 1),
    (ReplicaFetcherConfig, "fetch_backoff_ms", "replica.fetch.backoff.ms", 1000),
    (ReplicaFetcherConfig, "socket_timeout_ms", "replica.socket.timeout.ms", 30000),
    (SocketServer, "max_request_size", "socket.request.max.bytes", 104857600),
    (SocketServer, "ssl_handshake_timeout_ms", "connections.max.idle.ms", 600000),
    (SocketServer, "sasl_authentication_timeout_ms", "connections.max.idle.ms", 600000),
    (SocketServer, "failed_authentication_delay_ms", "connection.failed.authentication.delay.ms", 100),
    (LogManager, "recovery_threads_per_data_dir", "num.recovery.threads.per.data.dir", 1),
    (LogManager, "flush_check_ms", "log.flush.scheduler.interval.ms", 2**63 - 1),
    (LogManager, "flush_recovery_offset_checkpoint_ms", "log.flush.offset.checkpoint.interval.ms", 60000),
    (LogManager, "flush_start_offset_checkpoint_ms",
     "log.flush.start.offset.checkpoint.interval.ms", 60000),
    (LogManager, "retention_check_ms", "log.retention.check.interval.ms", 300000),
    (LogManager, "initial_task_delay_ms", "log.initial.task.delay.ms", 30000),
    (Partition, "replica_lag_time_max_ms", "replica.lag.time.max.ms", 30000),
    (broker_connection_factory, "request_timeout_ms", "controller.socket.timeout.ms", 30000),
    (controlled_shutdown, "request_timeout_ms", "controller.socket.timeout.ms", 30000),
    (ConnectionQuotaConfig, "max_connections_per_ip", "max.connections.per.ip", 2**31 - 1),
    (ConnectionQuotaConfig, "max_connections", "max.connections", 2**31 - 1),
    (ConnectionQuotaConfig, "max_connection_creation_rate", "max.connection.creation.rate", 2**31 - 1),
    (ConnectionQuotaConfig, "failed_authentication_delay_ms",
     "connection.failed.authentication.delay.ms", 100),
]  # fmt: skip


@pytest.mark.parametrize(("func", "param", "key", "kafkas"), _CONSTRUCTOR_DEFAULTS)
def test_constructor_defaults_are_the_declared_ones(
    func: Any, param: str, key: str, kafkas: int
) -> None:
    assert KAFKA_CONFIG_DEF.default(key) == kafkas
    assert _param_default(func, param) == kafkas


OAUTH_JAAS = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
    'unsecuredLoginStringClaim_sub="admin";'
)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class",
         "com.example.MyValidator", "names the Java class com.example.MyValidator, which kafpy "
         "cannot run"),
        ("listener.name.sasl_plaintext.plain.sasl.server.callback.handler.class",
         "com.example.LdapCallback", "kafpy has: org.apache.kafka.common.security.plain.internals."
         "PlainServerCallbackHandler"),
        ("sasl.login.callback.handler.class", "com.example.TokenFetcher",
         "sasl.login.callback.handler.class names the Java class com.example.TokenFetcher"),
        ("listener.name.sasl_plaintext.oauthbearer.sasl.login.class", "com.example.Login",
         "listener.name.sasl_plaintext.oauthbearer.sasl.login.class names the Java class"),
    ],
)  # fmt: skip
def test_sasl_callback_classes_kafpy_cannot_run_are_refused(
    key: str, value: str, message: str
) -> None:
    props = {"broker.id": "0", "listeners": "PLAINTEXT://:9092,SASL_PLAINTEXT://:9094",
             "sasl.enabled.mechanisms": "OAUTHBEARER,PLAIN", key: value}  # fmt: skip
    with pytest.raises(InvalidConfigurationError, match=message):
        KafkaConfig(props)


def test_oauthbearer_and_kafkas_default_classes_accepted() -> None:
    unsecured = "org.apache.kafka.common.security.oauthbearer.internals.unsecured."
    cfg = KafkaConfig({
        "broker.id": "0", "listeners": "PLAINTEXT://:9092,SASL_PLAINTEXT://:9094",
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "sasl.mechanism.inter.broker.protocol": "OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": OAUTH_JAAS,
        "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class":
            unsecured + "OAuthBearerUnsecuredValidatorCallbackHandler",
        "listener.name.sasl_plaintext.oauthbearer.sasl.login.callback.handler.class":
            unsecured + "OAuthBearerUnsecuredLoginCallbackHandler",
        "sasl.login.refresh.window.factor": "0.9",
    })  # fmt: skip
    assert cfg.unknown_keys() == []
    assert cfg.sasl_mechanism_inter_broker_protocol == "OAUTHBEARER"
