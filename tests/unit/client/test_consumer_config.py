"""ConsumerConfig: Kafka 2.8's consumer defaults and validators, and the structured error."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from kafpy.client.client_config import ClientConfigError, Expected
from kafpy.client.consumer_config import CONSUMER_CONFIG_DEF, ConsumerConfig
from kafpy.client.consumer_coordinator import ConsumerCoordinator
from kafpy.client.fetcher import Fetcher

KAFKA_DEFAULTS = {
    "bootstrap.servers": [],
    "client.id": "",
    "group.id": None,
    "fetch.max.wait.ms": 500,
    "fetch.max.bytes": 52428800,
    "max.partition.fetch.bytes": 1048576,
    "request.timeout.ms": 30000,
    "retry.backoff.ms": 100,
    "isolation.level": "read_uncommitted",
    "auto.offset.reset": "latest",
    "enable.auto.commit": True,
    "auto.commit.interval.ms": 5000,
    "session.timeout.ms": 10000,
    "heartbeat.interval.ms": 3000,
    "socket.connection.setup.timeout.ms": 10000,
    "security.protocol": "PLAINTEXT",
    "retries": 2147483647,  # kafpy's client only; not a Kafka consumer key
}


def test_defaults_are_kafkas() -> None:
    assert CONSUMER_CONFIG_DEF.default_values() == KAFKA_DEFAULTS


def test_getters() -> None:
    config = ConsumerConfig({"fetch.max.wait.ms": "100", "enable.auto.commit": "false"})
    assert config.get_int("fetch.max.wait.ms") == 100
    assert config.get_int("session.timeout.ms") == 10000
    assert config.get_bool("enable.auto.commit") is False
    assert config.get_bool("enable.auto.commit", False) is False
    assert ConsumerConfig({}).get_bool("enable.auto.commit") is True
    with pytest.raises(ValueError, match="group.id has no default"):
        config.get_string("group.id")


def test_not_a_number_is_a_structured_error() -> None:
    with pytest.raises(ClientConfigError) as e:
        ConsumerConfig({"session.timeout.ms": "10s"}).get_int("session.timeout.ms")
    assert (e.value.key, e.value.value, e.value.expected) == (
        "session.timeout.ms",
        "10s",
        Expected.NUMBER,
    )


@pytest.mark.parametrize(
    ("props", "expected", "detail"),
    [
        ({"isolation.level": "READ_COMMITTED"}, Expected.VALID, "String must be one of"),
        ({"auto.offset.reset": "smallest"}, Expected.VALID, "String must be one of"),
        ({"fetch.max.bytes": "-1"}, Expected.VALID, "Value must be at least 0"),
        ({"auto.commit.interval.ms": "5s"}, Expected.NUMBER, "Not a number of type INT"),
    ],
)
def test_validate_applies_kafkas_validators(
    props: dict[str, str], expected: Expected, detail: str
) -> None:
    with pytest.raises(ClientConfigError, match=detail) as e:
        ConsumerConfig(props).validate()
    assert e.value.expected is expected and e.value.key == next(iter(props))


@pytest.mark.parametrize(
    ("func", "param", "key"),
    [
        (Fetcher, "max_wait_ms", "fetch.max.wait.ms"),
        (Fetcher, "max_bytes", "fetch.max.bytes"),
        (Fetcher, "max_partition_bytes", "max.partition.fetch.bytes"),
        (ConsumerCoordinator, "session_timeout_ms", "session.timeout.ms"),
        (ConsumerCoordinator, "heartbeat_interval_ms", "heartbeat.interval.ms"),
    ],
)
def test_the_consumers_parts_default_to_the_declared_values(
    func: Any, param: str, key: str
) -> None:
    assert inspect.signature(func).parameters[param].default == KAFKA_DEFAULTS[key]
