"""The kafpy data source over SASL: `kafka.security.protocol=SASL_PLAINTEXT` with
`kafka.sasl.mechanism` and `kafka.sasl.jaas.config` reach kafpy's client on the driver and
the workers; a write and a read through the SASL listener."""

from __future__ import annotations

from typing import Any

from tests.fixtures.sasl import SaslBroker
from tests.spark.fixtures import create_topic, topic_name


def test_write_and_read_over_sasl_plain(spark: Any, sasl_module_broker: SaslBroker) -> None:
    topic = create_topic(sasl_module_broker.broker.bootstrap, topic_name("sasl"), 2)
    sasl = {
        "kafka.bootstrap.servers": sasl_module_broker.sasl_bootstrap,
        "kafka.security.protocol": "SASL_PLAINTEXT",
        "kafka.sasl.mechanism": "PLAIN",
        "kafka.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
        'required username="alice" password="alice-secret";',
    }
    df = spark.createDataFrame([(f"k{i}", f"v{i}") for i in range(20)], "key string, value string")
    df.write.format("kafpy").mode("append").options(**sasl).option("topic", topic).save()
    rows = spark.read.format("kafpy").options(**sasl).option("subscribe", topic).load().collect()
    assert sorted(bytes(r.value).decode() for r in rows) == sorted(f"v{i}" for i in range(20))
