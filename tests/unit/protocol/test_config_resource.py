"""The config APIs' ids: Kafka 2.8's numbers and names."""

from __future__ import annotations

from kafpy.protocol.config_resource import AlterConfigOp, ConfigResourceType, ConfigSource


def test_ids_are_kafkas() -> None:
    assert {t.name: int(t) for t in ConfigResourceType} == {
        "UNKNOWN": 0, "TOPIC": 2, "BROKER": 4, "BROKER_LOGGER": 8,
    }  # fmt: skip
    assert [s.name for s in sorted(ConfigSource)] == [
        "UNKNOWN",
        "DYNAMIC_TOPIC_CONFIG",
        "DYNAMIC_BROKER_CONFIG",
        "DYNAMIC_DEFAULT_BROKER_CONFIG",
        "STATIC_BROKER_CONFIG",
        "DEFAULT_CONFIG",
        "DYNAMIC_BROKER_LOGGER_CONFIG",
    ]
    assert [int(s) for s in sorted(ConfigSource)] == list(range(7))
    assert {op.name: int(op) for op in AlterConfigOp} == {
        "SET": 0, "DELETE": 1, "APPEND": 2, "SUBTRACT": 3,
    }  # fmt: skip


def test_unknown_ids() -> None:
    assert ConfigResourceType.for_id(3) is ConfigResourceType.UNKNOWN  # ACLs' GROUP, not here
    assert ConfigResourceType.for_id(4) is ConfigResourceType.BROKER
    assert AlterConfigOp.name_of(2) == "APPEND"
    assert AlterConfigOp.name_of(9) == "9"
