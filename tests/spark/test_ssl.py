"""The kafpy data source over TLS: `kafka.security.protocol=SSL` and `kafka.ssl.*` reach
kafpy's client on the driver and the workers; a write and a read through the SSL listener."""

from __future__ import annotations

from typing import Any

from kafpy.security.local_pki import TestPki
from tests.fixtures.tls import TlsBroker
from tests.spark.fixtures import create_topic, topic_name


def test_write_and_read_over_ssl(
    spark: Any, kafpy_tls_broker: TlsBroker, test_pki: TestPki
) -> None:
    topic = create_topic(kafpy_tls_broker.broker.bootstrap, topic_name("ssl"), 2)
    ssl = {
        "kafka.bootstrap.servers": kafpy_tls_broker.ssl_bootstrap,
        "kafka.security.protocol": "SSL",
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": str(test_pki.ca_certificate),
    }
    df = spark.createDataFrame([(f"k{i}", f"v{i}") for i in range(20)], "key string, value string")
    df.write.format("kafpy").mode("append").options(**ssl).option("topic", topic).save()
    rows = spark.read.format("kafpy").options(**ssl).option("subscribe", topic).load().collect()
    assert sorted(bytes(r.value).decode() for r in rows) == sorted(f"v{i}" for i in range(20))
