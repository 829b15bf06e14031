"""ProducerConfig: Kafka 2.8's producer defaults and validators, and the structured error."""

from __future__ import annotations

import pytest

from kafpy.client.client_config import ClientConfigError, Expected
from kafpy.client.producer import DEFAULT_BATCH_SIZE, DEFAULT_MAX_REQUEST_SIZE
from kafpy.client.producer_config import PRODUCER_CONFIG_DEF, ProducerConfig

KAFKA_DEFAULTS = {
    "acks": "1",
    "compression.type": "none",
    "batch.size": 16384,
    "linger.ms": 0,
    "max.request.size": 1048576,
    "request.timeout.ms": 30000,
    "delivery.timeout.ms": 120000,
    "retries": 2147483647,
    "retry.backoff.ms": 100,
    "enable.idempotence": False,
    "max.in.flight.requests.per.connection": 5,
    "client.id": "",
    "bootstrap.servers": [],
    "security.protocol": "PLAINTEXT",
    "max.block.ms": 60000,
    "transaction.timeout.ms": 60000,
    "transactional.id": None,
}


def test_defaults_are_kafkas() -> None:
    assert PRODUCER_CONFIG_DEF.default_values() == KAFKA_DEFAULTS
    assert DEFAULT_BATCH_SIZE == PRODUCER_CONFIG_DEF.default("batch.size")
    assert DEFAULT_MAX_REQUEST_SIZE == PRODUCER_CONFIG_DEF.default("max.request.size")


def test_getters_take_the_value_then_the_tools_default_then_kafkas() -> None:
    config = ProducerConfig({"linger.ms": " 5 ", "enable.idempotence": "TRUE"})
    assert config.get_int("linger.ms", 1000) == 5
    assert config.get_int("retries", 3) == 3
    assert config.get_int("retries") == 2147483647
    assert config.get_bool("enable.idempotence") is True
    assert config.get_string("acks") == "1" and config.get_string("acks", "all") == "all"


def test_not_a_number_is_a_structured_error() -> None:
    with pytest.raises(ClientConfigError) as e:
        ProducerConfig({"linger.ms": "soon"}).get_int("linger.ms")
    assert (e.value.key, e.value.value, e.value.expected) == ("linger.ms", "soon", Expected.NUMBER)


def test_below_the_minimum_is_a_structured_error() -> None:
    with pytest.raises(ClientConfigError) as e:
        ProducerConfig({"batch.size": "-3"}).get_int("batch.size", minimum=0)
    assert e.value.expected is Expected.AT_LEAST
    assert (e.value.minimum, e.value.parsed, e.value.value) == (0, -3, "-3")


def test_undeclared_keys_cannot_be_read_and_are_listed() -> None:
    config = ProducerConfig({"foo": "1", "acks": "all"})
    assert config.unknown() == ["foo"]
    with pytest.raises(KeyError):
        config.get_int("foo")


@pytest.mark.parametrize(
    ("props", "expected", "detail"),
    [
        ({"acks": "2"}, Expected.VALID, "Invalid value 2 for configuration acks: String must be"),
        ({"linger.ms": "-1"}, Expected.VALID, "Value must be at least 0"),
        ({"retries": "x"}, Expected.NUMBER, "Not a number of type INT"),
        ({"max.in.flight.requests.per.connection": "0"}, Expected.VALID, "at least 1"),
        ({"enable.idempotence": "yes"}, Expected.VALID, "either true or false"),
    ],
)
def test_validate_applies_kafkas_validators(
    props: dict[str, str], expected: Expected, detail: str
) -> None:
    with pytest.raises(ClientConfigError, match=detail) as e:
        ProducerConfig(props).validate()
    assert e.value.expected is expected and e.value.key == next(iter(props))


def test_validate_parses_good_values() -> None:
    assert ProducerConfig({"acks": "all", "linger.ms": "5", "foo": "x"}).validate() == {
        "acks": "all",
        "linger.ms": 5,
    }


def test_a_transactional_id_implies_idempotence() -> None:
    assert ProducerConfig({"transactional.id": "t"}).idempotence_enabled() is True
    assert ProducerConfig({"transactional.id": "t", "acks": "all"}).idempotence_enabled()
    assert ProducerConfig({}).idempotence_enabled() is False
    assert ProducerConfig({"enable.idempotence": "false"}).idempotence_enabled() is False


@pytest.mark.parametrize(
    ("props", "key", "sentence"),
    [
        ({"enable.idempotence": "false"}, "enable.idempotence",
         "Cannot set a transactional.id without also enabling idempotence."),
        ({"acks": "1"}, "acks", "Must set acks to all in order to use the idempotent producer. "
         "Otherwise we cannot guarantee idempotence."),
        ({"retries": "0"}, "retries",
         "Must set retries to non-zero when using the idempotent producer."),
        ({"max.in.flight.requests.per.connection": "6"}, "max.in.flight.requests.per.connection",
         "Must set max.in.flight.requests.per.connection to at most 5 to use the idempotent "
         "producer."),
    ],
)  # fmt: skip
def test_settings_conflicting_with_a_transactional_id_get_kafkas_sentence(
    props: dict[str, str], key: str, sentence: str
) -> None:
    with pytest.raises(ClientConfigError) as e:
        ProducerConfig({"transactional.id": "t", **props}).idempotence_enabled()
    assert (e.value.key, str(e.value)) == (key, sentence)


def test_an_empty_transactional_id_is_refused() -> None:
    with pytest.raises(ClientConfigError, match="String must be non-empty"):
        ProducerConfig({"transactional.id": ""}).transactional_id()
    with pytest.raises(ClientConfigError, match="String must be non-empty"):
        ProducerConfig({"transactional.id": ""}).validate()


def test_delivery_timeout_below_linger_plus_request_timeout_is_refused_as_kafka_does() -> None:
    config = ProducerConfig({"delivery.timeout.ms": "30999", "linger.ms": "1000"})
    with pytest.raises(ClientConfigError) as e:
        config.delivery_timeout_ms(linger_ms=1000, request_timeout_ms=30000)
    assert (e.value.key, e.value.value, e.value.expected) == (
        "delivery.timeout.ms",
        "30999",
        Expected.VALID,
    )
    assert str(e.value) == (
        "delivery.timeout.ms should be equal to or larger than linger.ms + request.timeout.ms"
    )
    assert config.delivery_timeout_ms(linger_ms=999, request_timeout_ms=30000) == 30999


def test_delivery_timeout_left_at_its_default_grows_to_linger_plus_request_timeout() -> None:
    config = ProducerConfig({})
    assert config.delivery_timeout_ms(linger_ms=0, request_timeout_ms=30000) == 120000
    assert config.delivery_timeout_ms(linger_ms=1000, request_timeout_ms=150000) == 151000
    with pytest.raises(ClientConfigError) as e:
        ProducerConfig({"delivery.timeout.ms": "x"}).delivery_timeout_ms(0, 30000)
    assert e.value.expected is Expected.NUMBER
