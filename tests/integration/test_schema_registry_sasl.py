"""kafpy schema-registry keeping `_schemas` on a SASL_PLAINTEXT listener: the
`kafkastore.security.protocol` and `kafkastore.sasl.*` keys reach its store client."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from tests.fixtures.sasl import SaslBroker
from tests.fixtures.schema_registry import SchemaRegistryProcess

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="alice" password="alice-secret";'
)


def test_the_store_authenticates_with_sasl(
    sasl_module_broker: SaslBroker, schema_registry_factory: Callable[..., SchemaRegistryProcess]
) -> None:
    registry = schema_registry_factory(
        sasl_module_broker.sasl_bootstrap,
        {
            "kafkastore.security.protocol": "SASL_PLAINTEXT",
            "kafkastore.sasl.mechanism": "PLAIN",
            "kafkastore.sasl.jaas.config": JAAS,
        },
    )
    sr = SchemaRegistryClient({"url": registry.url})
    schema_id = sr.register_schema("s-value", Schema(json.dumps({"type": "string"}), "AVRO"))
    assert sr.get_latest_version("s-value").schema_id == schema_id


def test_wrong_credentials_stop_the_registry_at_start(
    sasl_module_broker: SaslBroker, tmp_path: Path
) -> None:
    registry = SchemaRegistryProcess(
        sasl_module_broker.sasl_bootstrap,
        tmp_path,
        {
            "kafkastore.security.protocol": "SASL_PLAINTEXT",
            "kafkastore.sasl.mechanism": "PLAIN",
            "kafkastore.sasl.jaas.config": JAAS.replace("alice-secret", "wrong"),
            "kafkastore.init.timeout.ms": "10000",
        },
    )
    with pytest.raises(pytest.fail.Exception):
        registry.start()
    assert "Authentication failed: Invalid username or password" in registry.log()
