"""SchemaRegistryConfig: Confluent's keys, defaults, and what kafpy refuses."""

from __future__ import annotations

import pytest

from kafpy.common.errors import InvalidConfigurationError
from kafpy.schema_registry.compatibility import CompatibilityLevel
from kafpy.schema_registry.schema_registry_config import SchemaRegistryConfig

BASE = {"kafkastore.bootstrap.servers": "PLAINTEXT://localhost:9092,SSL://other:9093"}


def test_defaults_are_confluents() -> None:
    config = SchemaRegistryConfig.from_props(BASE)
    assert config.listeners == (("0.0.0.0", 8081),)
    assert config.bootstrap_servers == "localhost:9092,other:9093"
    assert config.topic == "_schemas"
    assert config.replication_factor == 3
    assert (config.timeout_ms, config.init_timeout_ms) == (500, 60000)
    assert config.compatibility_level is CompatibilityLevel.BACKWARD
    assert config.security.security_protocol == "PLAINTEXT"


def test_keys_are_read() -> None:
    config = SchemaRegistryConfig.from_props(
        {
            **BASE,
            "listeners": "http://127.0.0.1:18081,http://localhost:18082",
            "kafkastore.topic": "_other",
            "schema.compatibility.level": "full_transitive",
            "kafkastore.security.protocol": "SASL_PLAINTEXT",
            "kafkastore.sasl.mechanism": "SCRAM-SHA-256",
            "kafkastore.sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required username="sr" password="pw";',
        }
    )
    assert config.listeners == (("127.0.0.1", 18081), ("localhost", 18082))
    assert config.topic == "_other"
    assert config.compatibility_level is CompatibilityLevel.FULL_TRANSITIVE
    assert config.security.sasl is not None
    assert (config.security.sasl.mechanism, config.security.sasl.username) == (
        "SCRAM-SHA-256",
        "sr",
    )


def test_the_old_avro_key_still_sets_the_level() -> None:
    config = SchemaRegistryConfig.from_props({**BASE, "avro.compatibility.level": "none"})
    assert config.compatibility_level is CompatibilityLevel.NONE


def test_unknown_keys_are_warned_about_as_kafka_does() -> None:
    warnings: list[str] = []
    SchemaRegistryConfig.from_props({**BASE, "no.such.key": "1"}, warn=warnings.append)
    assert warnings == ["The configuration 'no.such.key' was supplied but isn't a known config."]


@pytest.mark.parametrize(
    ("props", "names"),
    [
        ({}, "kafkastore.bootstrap.servers"),
        ({**BASE, "kafkastore.connection.url": "localhost:2181"}, "kafkastore.connection.url"),
        ({**BASE, "listeners": "https://0.0.0.0:8081"}, "https://"),
        ({**BASE, "schema.compatibility.level": "sideways"}, "schema.compatibility.level"),
        ({**BASE, "kafkastore.timeout.ms": "soon"}, "kafkastore.timeout.ms"),
        ({**BASE, "kafkastore.security.protocol": "KERBEROS"}, "security.protocol"),
        ({**BASE, "authentication.method": "BASIC"}, "authentication.method"),
        ({**BASE, "schema.providers": "x.ProtobufSchemaProvider"}, "schema.providers"),
    ],
)
def test_what_kafpy_cannot_honour_is_refused(props: dict[str, str], names: str) -> None:
    with pytest.raises(InvalidConfigurationError, match=names.replace(".", r"\.")):
        SchemaRegistryConfig.from_props(props)
