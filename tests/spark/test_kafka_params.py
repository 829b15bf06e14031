"""The `kafka.*` options: used, refused as Spark refuses them, refused because kafpy's
client cannot honour them, or ignored with a warning (no Spark, no broker)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from kafpy.security.local_pki import TestPki
from kafpy.spark.kafka_params import check_kafka_params
from kafpy.spark.offset_reader import new_client
from kafpy.spark.options import OptionError, ReadOptions, WriteOptions

BOOT = {"kafka.bootstrap.servers": "localhost:9092"}
LOGGER = "kafpy.spark.kafka_params"


def read(**kafka: str) -> ReadOptions:
    opts = {**BOOT, "subscribe": "t", **{f"kafka.{k}": v for k, v in kafka.items()}}
    return ReadOptions.parse(opts, streaming=False)


def write(**kafka: str) -> WriteOptions:
    return WriteOptions.parse({**BOOT, "topic": "t", **{f"kafka.{k}": v for k, v in kafka.items()}})


@pytest.mark.parametrize(
    ("key", "fix"),
    [
        ("auto.offset.reset", "set the source option 'startingOffsets'"),
        ("key.deserializer", r"col\('key'\).cast\('string'\)"),
        ("value.deserializer", r"col\('value'\).cast\('string'\)"),
        ("enable.auto.commit", "use the option 'commitOffsetsToGroup'"),
        ("interceptor.classes", "interceptors could change the records"),
    ],
)
def test_reads_refuse_what_spark_refuses(key: str, fix: str) -> None:
    with pytest.raises(OptionError, match=rf"Option 'kafka\.{key}' is not supported: .*{fix}"):
        ReadOptions.parse({**BOOT, "subscribe": "t", f"kafka.{key}": "x"}, streaming=False)
    with pytest.raises(OptionError, match=rf"Option 'kafka\.{key}' is not supported"):
        ReadOptions.parse({**BOOT, "subscribe": "t", f"kafka.{key}": "x"}, streaming=True)


@pytest.mark.parametrize(
    ("key", "fix"),
    [
        ("key.serializer", "keys are written as the bytes of the 'key' column"),
        ("value.serializer", "values are written as the bytes of the 'value' column"),
        ("interceptor.classes", "cannot run Java interceptor classes"),
        ("transactional.id", "needs a transactional id of its own; for transactions set"),
    ],
)
def test_writes_refuse_serializers_interceptors_and_transactions(key: str, fix: str) -> None:
    with pytest.raises(OptionError, match=rf"Option 'kafka\.{key}' is not supported: .*{fix}"):
        WriteOptions.parse({**BOOT, "topic": "t", f"kafka.{key}": "x"})


@pytest.mark.parametrize("role", ["read", "write"])
@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "sasl_ssl"])
def test_sasl_without_credentials_is_refused(role: str, protocol: str) -> None:
    parse = read if role == "read" else write
    with pytest.raises(
        OptionError,
        match=r"kafka.sasl.mechanism in the kafka.\* options is GSSAPI, which needs a Kerberos "
        "login",
    ):
        parse(**{"security.protocol": protocol})
    with pytest.raises(OptionError, match="SASL needs credentials in the kafka.\\* options"):
        parse(**{"security.protocol": protocol, "sasl.mechanism": "PLAIN"})


@pytest.mark.parametrize("role", ["read", "write"])
def test_sasl_settings_pass_through_to_kafpys_client(
    role: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    parse = read if role == "read" else write
    sasl_opts = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
                 "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
                 'required username="alice" password="alice-secret";'}  # fmt: skip
    settings = parse(**sasl_opts).client
    assert dict(settings.security) == sasl_opts
    assert caplog.records == []


@pytest.mark.parametrize("role", ["read", "write"])
def test_gssapi_settings_pass_through_to_kafpys_client(
    role: str, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    parse = read if role == "read" else write
    keytab = tmp_path / "alice.keytab"
    keytab.write_bytes(b"\x05\x02")
    gssapi_opts = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI",
                   "sasl.kerberos.service.name": "kafka", "sasl.kerberos.keytab": str(keytab),
                   "sasl.kerberos.principal": "alice@EXAMPLE.COM"}  # fmt: skip
    assert dict(parse(**gssapi_opts).client.security) == gssapi_opts
    assert caplog.records == []


@pytest.mark.parametrize("role", ["read", "write"])
def test_sasl_settings_are_refused(role: str) -> None:
    parse = read if role == "read" else write
    with pytest.raises(
        OptionError,
        match=r"Option 'kafka.sasl.mechanism' is not supported: kafpy's client reads kafka.sasl",
    ):
        parse(**{"sasl.mechanism": "PLAIN"})
    with pytest.raises(
        OptionError,
        match=r"Options 'kafka.sasl.jaas.config', 'kafka.sasl.mechanism' are not supported",
    ):
        parse(**{"sasl.mechanism": "PLAIN", "sasl.jaas.config": "y", "security.protocol": "SSL"})  # fmt: skip


@pytest.mark.parametrize("role", ["read", "write"])
def test_ssl_settings_pass_through_to_kafpys_client(
    role: str, test_pki: TestPki, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    parse = read if role == "read" else write
    ssl_opts = {"security.protocol": "SSL", "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(test_pki.ca_certificate),
                "ssl.endpoint.identification.algorithm": ""}  # fmt: skip
    settings = parse(**ssl_opts).client
    assert dict(settings.security) == ssl_opts
    assert caplog.records == []
    client = new_client(settings)
    assert client.security is not None and client.security.ssl is not None
    assert client.security.ssl.check_hostname is False
    missing = parse(**{**ssl_opts, "ssl.truststore.location": "/nonexistent/ca.pem"}).client
    with pytest.raises(
        OptionError, match="ssl.truststore.location /nonexistent/ca.pem for the kafka"
    ):
        new_client(missing)


def test_plaintext_and_used_settings_pass_without_warnings(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    r = read(**{"security.protocol": "plaintext", "client.id": "me", "fetch.max.bytes": "1000",
                "isolation.level": "read_committed", "retries": "2"})  # fmt: skip
    assert r.client.client_id == "me" and r.client.fetch_max_bytes == 1000
    assert r.client.isolation_level == 1 and r.client.retries == 2
    w = write(**{"security.protocol": "PLAINTEXT", "acks": "all", "enable.idempotence": "true",
                 "compression.type": "zstd", "request.timeout.ms": "5000"})  # fmt: skip
    assert w.compression == "zstd" and w.client.request_timeout_ms == 5000
    assert caplog.records == []


def test_unused_settings_are_ignored_with_a_warning_naming_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    read(**{"session.timeout.ms": "100", "compression.type": "lz4"})
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2
    assert messages[0].startswith(
        "Option 'kafka.compression.type' was supplied but is not used: kafpy's client does not "
        "know the Kafka setting 'compression.type' for reads and ignores it."
    )
    assert "'kafka.session.timeout.ms' was supplied but is not used" in messages[1]
    assert "fetch.max.bytes" in messages[1]  # it lists what reads do honour

    caplog.clear()
    # consumer settings on a write: ignored, as Kafka's producer ignores them (with a warning)
    w = write(**{"fetch.max.bytes": "oops", "auto.offset.reset": "earliest", "linger.ms": "5"})
    assert w.client.fetch_max_bytes == 52428800
    messages = [r.getMessage() for r in caplog.records]
    assert [m.split("'")[1] for m in messages] == [
        "kafka.auto.offset.reset",
        "kafka.fetch.max.bytes",
        "kafka.linger.ms",
    ]
    assert all("for writes and ignores it" in m for m in messages)


def test_group_id_is_accepted_with_a_warning_on_reads(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    read(**{"group.id": "g"})
    (message,) = [r.getMessage() for r in caplog.records]
    assert message.startswith("Option 'kafka.group.id' is set but not used")
    assert "commitOffsetsToGroup" in message


def test_check_ignores_options_without_the_kafka_prefix(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    check_kafka_params({"subscribe": "t", "auto.offset.reset": "x", "ssl.key": "y"}, "read")
    assert caplog.records == []
