"""Two brokers whose inter-broker listener is SASL_PLAINTEXT with GSSAPI
(`sasl.mechanism.inter.broker.protocol=GSSAPI`) against a real MIT KDC: each logs in from
its JAAS keyTab as kafka/127.0.0.1, the controller's requests and the replica fetcher
authenticate, and a topic with RF 2 replicates with acks=all."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kafpy.testing.wait import wait_until
from tests.fixtures.broker import KafpyBroker
from tests.fixtures.kerberos import BROKER_PRINCIPAL, KerberosRealm, gssapi_broker_overrides

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(180)]


def kafpy(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "kafpy", *args], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def brokers(
    kerberos_realm: KerberosRealm, zookeeper_connect: str, tmp_path: Path
) -> Iterator[list[KafpyBroker]]:
    keytab = kerberos_realm.add_principal(BROKER_PRINCIPAL)
    started: list[KafpyBroker] = []
    try:
        for broker_id in (0, 1):
            broker = KafpyBroker(tmp_path / f"broker-{broker_id}", {
                **gssapi_broker_overrides(keytab),
                "broker.id": str(broker_id),
                "zookeeper.connect": zookeeper_connect,
                "inter.broker.listener.name": "SASL_PLAINTEXT",
                "sasl.mechanism.inter.broker.protocol": "GSSAPI",
            })  # fmt: skip
            started.append(broker)
            broker.start()
        yield started
    finally:
        for broker in started:
            broker.stop()


def test_replication_over_gssapi(brokers: list[KafpyBroker]) -> None:
    bootstrap = brokers[0].bootstrap
    topic = f"krb-rf2-{uuid.uuid4().hex[:6]}"
    kafpy("topics", "--bootstrap-server", bootstrap, "--create", "--topic", topic,
          "--partitions", "2", "--replication-factor", "2")  # fmt: skip
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    errors: list[object] = []
    for i in range(20):
        producer.produce(topic, f"v{i}".encode(), on_delivery=lambda e, _m: errors.append(e))
    assert producer.flush(60) == 0
    assert errors == [None] * 20

    def both_in_sync() -> bool:
        out = kafpy("topics", "--bootstrap-server", bootstrap, "--describe", "--topic", topic)
        lines = [line for line in out.splitlines() if "Partition:" in line and "Isr:" in line]
        return len(lines) == 2 and all(
            sorted(line.split("Isr:")[1].split()[0].split(",")) == ["0", "1"] for line in lines
        )

    wait_until(both_in_sync, 60, interval_s=0.5)
    for broker in brokers:
        log = broker.log_path.read_text()
        assert "Successfully authenticated client: authenticationID=kafka/127.0.0.1@" in log
